#include "agent/telemetry.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

namespace cellscope::agent {

using Json = nlohmann::json;

namespace {

constexpr std::chrono::seconds kWindow{10};

// utime + stime of this process, in seconds (/proc/self/stat fields 14 and 15).
double cpu_seconds() {
  std::ifstream in("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto paren = text.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream rest(text.substr(paren + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

std::optional<double> rss_mb() {
  std::ifstream in("/proc/self/statm");
  uint64_t size = 0;
  uint64_t resident = 0;
  if (!(in >> size >> resident)) return std::nullopt;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / 1048576.0;
}

std::optional<uint64_t> read_u64(const std::string& file) {
  std::ifstream in(file);
  uint64_t v = 0;
  if (in >> v) return v;
  return std::nullopt;
}

double percentile(std::vector<double> v, double p) {
  std::ranges::sort(v);
  const auto k = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, k == 0 ? 0 : k - 1)];
}

}  // namespace

Telemetry::Telemetry() : last_(Clock::now()), last_cpu_s_(cpu_seconds()) {
  const std::string f = "/sys/class/powercap/intel-rapl:0/energy_uj";
  if (read_u64(f)) {
    rapl_file_ = f;
    last_energy_uj_ = read_u64(f);
  }
}

void Telemetry::record(double latency_ms) {
  const std::lock_guard lock(mu_);
  const auto now = Clock::now();
  runs_.emplace_back(now, latency_ms);
  ++total_;
  while (!runs_.empty() && now - runs_.front().first > kWindow) runs_.pop_front();
}

Json Telemetry::sample() {
  const std::lock_guard lock(mu_);
  const auto now = Clock::now();
  while (!runs_.empty() && now - runs_.front().first > kWindow) runs_.pop_front();
  const double dt = std::chrono::duration<double>(now - last_).count();
  Json j = {{"type", "telemetry"}, {"inferences", total_}};
  std::vector<double> lat;
  size_t last_second = 0;
  for (const auto& [t, ms] : runs_) {
    lat.push_back(ms);
    if (now - t <= std::chrono::seconds(1)) ++last_second;
  }
  j["fps"] = static_cast<double>(last_second);
  j["latency_ms"] =
      lat.empty()
          ? Json(nullptr)
          : Json{{"p50", percentile(lat, 50)}, {"p99", percentile(lat, 99)}, {"runs", lat.size()}};
  if (auto r = rss_mb()) {
    j["rss_mb"] = *r;
  } else {
    j["rss_mb"] = "n/a";
  }
  const double cpu = cpu_seconds();
  j["cpu_percent"] = dt > 0 ? 100.0 * (cpu - last_cpu_s_) / dt : 0.0;
  last_cpu_s_ = cpu;
  j["power_w"] = "n/a";
  if (!rapl_file_.empty()) {
    const auto e = read_u64(rapl_file_);
    if (e && last_energy_uj_ && *e >= *last_energy_uj_ && dt > 0) {
      j["power_w"] = static_cast<double>(*e - *last_energy_uj_) / 1e6 / dt;
      j["power_source"] = "rapl package 0 (whole package, not only the agent)";
    }
    last_energy_uj_ = e;
  }
  last_ = now;
  return j;
}

}  // namespace cellscope::agent
