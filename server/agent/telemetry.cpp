#include "agent/telemetry.h"

#include <unistd.h>

#include "git.h"  // run_process

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>
#include <system_error>
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

std::optional<uint64_t> read_u64(const std::filesystem::path& file) {
  std::ifstream in(file);
  uint64_t v = 0;
  if (in >> v) return v;
  return std::nullopt;
}

std::string read_line(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string s;
  std::getline(in, s);
  return s;
}

// N of PREFIX<N>SUFFIX, or nullopt when `name` is not of that form.
std::optional<uint64_t> numbered(const std::string& name, const std::string& prefix,
                                 const std::string& suffix) {
  if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) ||
      !name.ends_with(suffix)) {
    return std::nullopt;
  }
  const std::string digits =
      name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() > 9 ||
      !std::ranges::all_of(digits, [](unsigned char c) { return std::isdigit(c) != 0; })) {
    return std::nullopt;
  }
  return std::stoull(digits);
}

// The entries of `dir` named PREFIX<N>SUFFIX, by N.
std::vector<std::pair<uint64_t, std::filesystem::path>> numbered_entries(
    const std::filesystem::path& dir, const std::string& prefix, const std::string& suffix) {
  std::vector<std::pair<uint64_t, std::filesystem::path>> found;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (auto n = numbered(it->path().filename().string(), prefix, suffix))
      found.emplace_back(*n, it->path());
  }
  std::ranges::sort(found);
  return found;
}

double percentile(std::vector<double> v, double p) {
  std::ranges::sort(v);
  const auto k = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, k == 0 ? 0 : k - 1)];
}

}  // namespace

std::optional<double> parse_npu_smi_power(const std::string& text, std::string* field) {
  std::optional<double> card;
  std::optional<double> chip;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back())) != 0)
      key.pop_back();
    key.erase(0, key.find_first_not_of(" \t"));
    std::istringstream value(line.substr(colon + 1));
    double w = -1;
    if (!(value >> w) || !std::isfinite(w) || w < 0) continue;
    if (key == "Power Dissipation(W)" && !card) card = w;
    if (key == "NPU Real-time Power(W)" && !chip) chip = w;
  }
  if (field != nullptr) {
    *field = card ? "Power Dissipation(W), the whole card" : chip ? "NPU Real-time Power(W)" : "";
  }
  return card ? card : chip;
}

namespace {

// `npu-smi info -t power -i 0`'s reading, within two seconds; nothing when it does not run,
// fails or prints no reading.
std::optional<double> read_npu_smi(const std::string& npu_smi, std::string* field = nullptr) {
  const auto r = cellscope::server::run_process({npu_smi, "info", "-t", "power", "-i", "0"}, {},
                                                std::chrono::seconds(2), 1U << 16U);
  if (r.exit_code != 0) return std::nullopt;
  return parse_npu_smi_power(r.out, field);
}

}  // namespace

PowerSensor find_power_sensor(const std::filesystem::path& sysfs, const std::string& npu_smi) {
  PowerSensor s;
  std::string field;
  if (!npu_smi.empty() && read_npu_smi(npu_smi, &field)) {
    s.kind = PowerSensor::Kind::NpuSmi;
    s.npu_smi = npu_smi;
    s.source = "npu-smi NPU 0 " + field;
    return s;
  }
  const auto rapl = sysfs / "class" / "powercap" / "intel-rapl:0" / "energy_uj";
  if (read_u64(rapl)) {
    s.kind = PowerSensor::Kind::Rapl;
    s.file = rapl;
    s.source = "rapl package 0 (whole package, not only the agent)";
    return s;
  }
  for (const auto& [n, dir] : numbered_entries(sysfs / "class" / "hwmon", "hwmon", "")) {
    for (const char* suffix : {"_input", "_average"}) {
      for (const auto& [k, file] : numbered_entries(dir, "power", suffix)) {
        if (!read_u64(file)) continue;
        const std::string chip = read_line(dir / "name");
        const std::string label = read_line(dir / ("power" + std::to_string(k) + "_label"));
        s.kind = PowerSensor::Kind::Hwmon;
        s.file = file;
        s.source = "hwmon " + dir.filename().string() + (chip.empty() ? "" : " " + chip) + " " +
                   file.filename().string() + (label.empty() ? "" : " (" + label + ")") +
                   " (what that sensor measures, not only the agent)";
        return s;
      }
    }
  }
  return s;
}

Telemetry::Telemetry(const std::filesystem::path& sysfs, const std::string& npu_smi)
    : last_(Clock::now()), last_cpu_s_(cpu_seconds()), power_(find_power_sensor(sysfs, npu_smi)) {
  if (power_.kind == PowerSensor::Kind::Rapl) last_energy_uj_ = read_u64(power_.file);
}

void Telemetry::record(double latency_ms) {
  const std::lock_guard lock(mu_);
  const auto now = Clock::now();
  runs_.emplace_back(now, latency_ms);
  ++total_;
  while (!runs_.empty() && now - runs_.front().first > kWindow) runs_.pop_front();
}

Json Telemetry::sample() {
  // npu-smi runs outside the lock: record() (on the inference path) never waits for it.
  // power_ is set once, at construction.
  std::optional<double> npu_w;
  if (power_.kind == PowerSensor::Kind::NpuSmi) npu_w = read_npu_smi(power_.npu_smi);
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
  if (power_.kind == PowerSensor::Kind::Rapl) {
    const auto e = read_u64(power_.file);
    if (e && last_energy_uj_ && *e >= *last_energy_uj_ && dt > 0) {
      j["power_w"] = static_cast<double>(*e - *last_energy_uj_) / 1e6 / dt;
      j["power_source"] = power_.source;
    }
    last_energy_uj_ = e;
  } else if (power_.kind == PowerSensor::Kind::NpuSmi) {
    // The card's own reading, as npu-smi prints it (watts).
    if (npu_w) {
      j["power_w"] = *npu_w;
      j["power_source"] = power_.source;
    }
  } else if (power_.kind == PowerSensor::Kind::Hwmon) {
    // Microwatts, the sensor's own reading (instantaneous or its averaging window).
    if (const auto uw = read_u64(power_.file)) {
      j["power_w"] = static_cast<double>(*uw) / 1e6;
      j["power_source"] = power_.source;
    }
  }
  last_ = now;
  return j;
}

}  // namespace cellscope::agent
