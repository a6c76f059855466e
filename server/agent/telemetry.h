// The agent's once-a-second measurements (docs/deploy.md, "Stream"): inferences per second and
// their latency percentiles (the last 10 s), resident memory and CPU use of the agent process
// from /proc, and the power from RAPL (/sys/class/powercap: the package's energy counter) or else
// hwmon (/sys/class/hwmon: a sensor's power*_input, e.g. an INA3221 on a Jetson-style board) when
// readable; on an Ascend device the NPU's own reading from `npu-smi info -t power -i 0` comes
// first. Else the string "n/a": nothing here is estimated.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace cellscope::agent {

// The power sensor the agent reports, found once at start under `sysfs` (normally /sys).
struct PowerSensor {
  enum class Kind : uint8_t { None, Rapl, Hwmon, NpuSmi };
  Kind kind = Kind::None;
  std::filesystem::path file;  // energy_uj (microjoules, a counter) or power*_input (microwatts)
  std::string npu_smi;         // Kind::NpuSmi: the program run each second
  std::string source;          // what power_source says
};

// One reading from `npu-smi info -t power -i <id>`'s output ("key : value" lines, Huawei's
// npu-smi reference, hiascend.com .../re/npu/npusmi_023.html): "Power Dissipation(W)" (the whole
// card) when the card reports it, else "NPU Real-time Power(W)" (the NPU chip). `field` gets the
// key used. Nothing when neither is a finite number >= 0.
std::optional<double> parse_npu_smi_power(const std::string& text, std::string* field = nullptr);

// `npu-smi info -t power -i 0` when `npu_smi` ("" to skip; a name is looked up in PATH) runs and
// gives a reading, else RAPL package 0 when its energy counter is readable, else the first
// readable hwmon power file (hwmonN in number order; power<K>_input by K, then
// power<K>_average), else Kind::None.
PowerSensor find_power_sensor(const std::filesystem::path& sysfs,
                              const std::string& npu_smi = "npu-smi");

class Telemetry {
 public:
  // `sysfs`: where the power sensors are looked for (/sys; the agent's tests give a fake tree
  // with $CELLSCOPE_AGENT_SYSFS_ROOT, docs/deploy.md).
  explicit Telemetry(const std::filesystem::path& sysfs = "/sys",
                     const std::string& npu_smi = "npu-smi");
  void record(double latency_ms);
  nlohmann::json sample();

 private:
  using Clock = std::chrono::steady_clock;
  std::mutex mu_;
  std::deque<std::pair<Clock::time_point, double>> runs_;
  uint64_t total_ = 0;
  Clock::time_point last_{};
  double last_cpu_s_ = 0;
  std::optional<uint64_t> last_energy_uj_;
  PowerSensor power_;
};

}  // namespace cellscope::agent
