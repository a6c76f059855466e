// The agent's once-a-second measurements (docs/deploy.md, "Stream"): inferences per second and
// their latency percentiles (the last 10 s), resident memory and CPU use of the agent process
// from /proc, and the package power from RAPL (/sys/class/powercap) when readable, else the
// string "n/a": nothing here is estimated.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace cellscope::agent {

class Telemetry {
 public:
  Telemetry();
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
  std::string rapl_file_;  // "" when there is none readable
};

}  // namespace cellscope::agent
