// The agent's once-a-second measurements (docs/deploy.md, "Stream"): inferences per second and
// their latency percentiles (the last 10 s), resident memory and CPU use of the agent process
// from /proc, and the power from RAPL (/sys/class/powercap: the package's energy counter) or else
// hwmon (/sys/class/hwmon: a sensor's power*_input, e.g. an INA3221 on a Jetson-style board) when
// readable, else the string "n/a": nothing here is estimated.
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
  enum class Kind : uint8_t { None, Rapl, Hwmon };
  Kind kind = Kind::None;
  std::filesystem::path file;  // energy_uj (microjoules, a counter) or power*_input (microwatts)
  std::string source;          // what power_source says
};
// RAPL package 0 when its energy counter is readable, else the first readable hwmon power file
// (hwmonN in number order; power<K>_input by K, then power<K>_average), else Kind::None.
PowerSensor find_power_sensor(const std::filesystem::path& sysfs);

class Telemetry {
 public:
  // `sysfs`: where the power sensors are looked for (/sys; the agent's tests give a fake tree
  // with $CELLSCOPE_AGENT_SYSFS_ROOT, docs/deploy.md).
  explicit Telemetry(const std::filesystem::path& sysfs = "/sys");
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
