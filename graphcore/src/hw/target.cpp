// Target files: parsing, validation and the embedded built-in targets.
#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "graphcore/checked.h"
#include "graphcore/hardware.h"
#include "hw/embedded_targets.h"

namespace graphcore {

namespace {

using json = nlohmann::json;

constexpr std::array<std::string_view, 5> kNames = {"cpu", "ascend910", "ascend910b", "ascend310",
                                                    "ascend310p"};

constexpr std::array<std::string_view, 6> kConfidence = {"O", "T", "3P", "D", "?", "A"};

bool valid_confidence(std::string_view c) {
  // One label or several joined by '/': "T", "T/3P", "D/?".
  if (c.empty()) return false;
  size_t start = 0;
  while (start <= c.size()) {
    const size_t slash = c.find('/', start);
    const auto part = c.substr(start, slash == std::string_view::npos ? c.npos : slash - start);
    if (std::find(kConfidence.begin(), kConfidence.end(), part) == kConfidence.end()) return false;
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return true;
}

class Reader {
 public:
  Reader(const json& doc, std::string_view origin, HardwareTarget* out)
      : doc_(doc), origin_(origin), out_(out) {}

  [[noreturn]] void fail(std::string_view field, std::string_view what) const {
    throw TargetError(std::string(origin_) + ": field '" + std::string(field) +
                      "': " + std::string(what));
  }

  // The documented field {"value", "confidence", "source"}; records its source.
  const json& field(std::string_view name) {
    const auto it = doc_.find(std::string(name));
    if (it == doc_.end()) fail(name, "missing");
    if (!it->is_object() || !it->contains("value")) {
      fail(name, R"(expected {"value": ..., "confidence": ..., "source": ...})");
    }
    const auto conf = it->find("confidence");
    if (conf == it->end() || !conf->is_string() ||
        !valid_confidence(conf->get_ref<const std::string&>())) {
      fail(name, "confidence must be O, T, 3P, D, ? or A (or several joined by '/')");
    }
    const auto src = it->find("source");
    if (src == it->end() || !src->is_string() || src->get_ref<const std::string&>().empty()) {
      fail(name, "every number needs a non-empty \"source\"");
    }
    out_->sources.push_back({std::string(name), conf->get<std::string>(), src->get<std::string>()});
    return it->at("value");
  }

  double positive(std::string_view name) {
    const json& v = field(name);
    if (!v.is_number() || !(v.get<double>() > 0)) fail(name, "expected a positive number");
    return v.get<double>();
  }
  double non_negative(std::string_view name) {
    const json& v = field(name);
    if (!v.is_number() || !(v.get<double>() >= 0)) fail(name, "expected a number >= 0");
    return v.get<double>();
  }
  uint32_t count(std::string_view name) {
    const auto v = checked_whole<uint32_t>(positive(name));
    if (!v) fail(name, "expected a whole number below 2^32");
    return *v;
  }
  uint64_t bytes(std::string_view name) {
    const auto v = checked_whole<uint64_t>(positive(name));
    if (!v) fail(name, "expected whole bytes below 2^64");
    return *v;
  }
  bool boolean(std::string_view name) {
    const json& v = field(name);
    if (!v.is_boolean()) fail(name, "expected true or false");
    return v.get<bool>();
  }
  std::string text(std::string_view name) {
    const json& v = field(name);
    if (!v.is_string()) fail(name, "expected a string");
    return v.get<std::string>();
  }
  std::vector<std::string> strings(std::string_view name) {
    const json& v = field(name);
    if (!v.is_array() || v.empty()) fail(name, "expected a non-empty list of strings");
    std::vector<std::string> out;
    for (const auto& s : v) {
      if (!s.is_string()) fail(name, "expected a non-empty list of strings");
      out.push_back(s.get<std::string>());
    }
    return out;
  }
  std::string plain(std::string_view name, bool required) {
    const auto it = doc_.find(std::string(name));
    if (it == doc_.end()) {
      if (required) fail(name, "missing");
      return {};
    }
    if (!it->is_string()) fail(name, "expected a string");
    return it->get<std::string>();
  }

 private:
  const json& doc_;
  std::string_view origin_;
  HardwareTarget* out_;
};

}  // namespace

std::span<const std::string_view> hardware_target_names() { return kNames; }

std::string_view unit_name(Unit u) {
  switch (u) {
    case Unit::Cube:
      return "cube";
    case Unit::Vector:
      return "vector";
    case Unit::AiCpu:
      return "aicpu";
    case Unit::Host:
      return "host";
    case Unit::Cpu:
      return "cpu";
  }
  return "host";
}

HardwareTarget parse_hardware_target(std::string_view text, std::string_view origin) {
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e400
    throw TargetError(std::string(origin) + ": invalid JSON: " + e.what());
  }
  if (!doc.is_object()) throw TargetError(std::string(origin) + ": expected a JSON object");
  HardwareTarget t;
  Reader r(doc, origin, &t);
  t.name = r.plain("name", true);
  t.display_name = r.plain("display_name", true);
  t.notes = r.plain("notes", false);
  const std::string kind = r.plain("kind", true);
  if (kind != "ascend" && kind != "cpu") r.fail("kind", "expected \"ascend\" or \"cpu\"");
  t.ascend = kind == "ascend";
  t.frequency_mhz = r.positive("frequency_mhz");
  t.launch_overhead_us = r.positive("launch_overhead_us");
  if (!t.ascend) {
    t.cores = r.count("cores");
    t.flops_per_cycle_fp32 = r.positive("flops_per_cycle_fp32");
    t.cache_bytes = r.bytes("cache_bytes");
    t.dram_bandwidth_gbps = r.positive("dram_bandwidth_gbps");
    t.matmul_efficiency = r.positive("matmul_efficiency");
    if (t.matmul_efficiency > 1) r.fail("matmul_efficiency", "expected a fraction in (0, 1]");
    return t;
  }
  const std::string org = r.text("organisation");
  if (org != "coupled" && org != "separated") {
    r.fail("organisation", "expected \"coupled\" or \"separated\"");
  }
  t.separated = org == "separated";
  t.ai_cores = r.count("ai_cores");
  t.vector_cores = r.count("vector_cores");
  t.cube_macs_fp16 = r.positive("cube_macs_fp16");
  t.cube_macs_int8 = r.positive("cube_macs_int8");
  t.cube_fp32 = r.boolean("cube_fp32");
  t.mmad_issue_cycles = r.non_negative("mmad_issue_cycles");
  t.vector_bytes_per_cycle = r.positive("vector_bytes_per_cycle");
  t.l1_bytes = r.bytes("l1_bytes");
  t.l0a_bytes = r.bytes("l0a_bytes");
  t.l0b_bytes = r.bytes("l0b_bytes");
  t.l0c_bytes = r.bytes("l0c_bytes");
  t.ub_bytes = r.bytes("ub_bytes");
  t.l2_bytes = r.bytes("l2_bytes");
  t.gm_bandwidth_gbps = r.positive("gm_bandwidth_gbps");
  t.gm_read_bytes_per_cycle = r.positive("gm_read_bytes_per_cycle");
  t.l2_read_bytes_per_cycle = r.positive("l2_read_bytes_per_cycle");
  t.gm_write_bytes_per_cycle = r.positive("gm_write_bytes_per_cycle");
  t.l1_to_l0a_bytes_per_cycle = r.positive("l1_to_l0a_bytes_per_cycle");
  t.l1_to_l0b_bytes_per_cycle = r.positive("l1_to_l0b_bytes_per_cycle");
  t.l0c_to_ub_bytes_per_cycle = r.positive("l0c_to_ub_bytes_per_cycle");
  t.dma_channels = r.strings("dma_channels");
  for (const auto& c : t.dma_channels) {
    if (c != "MTE1" && c != "MTE2" && c != "MTE3" && c != "FixPipe") {
      r.fail("dma_channels", "unknown channel '" + c + "' (expected MTE1, MTE2, MTE3, FixPipe)");
    }
  }
  const bool fixpipe =
      std::find(t.dma_channels.begin(), t.dma_channels.end(), "FixPipe") != t.dma_channels.end();
  if (fixpipe != t.separated) {
    r.fail("dma_channels", "FixPipe exists exactly on separated (AIC/AIV) organisations");
  }
  t.ai_cpu_cores = r.count("ai_cpu_cores");
  t.ai_cpu_gflops = r.positive("ai_cpu_gflops");
  r.text("host");
  // The cube's smallest tile (one 16x16 fp16 fractal per operand, a 16x16 fp32 accumulator)
  // must fit, or nothing can be tiled.
  if (t.l0a_bytes < 512 || t.l0b_bytes < 512 || t.l0c_bytes < 1024 || t.ub_bytes < 1024 ||
      t.l1_bytes < 2048) {
    r.fail("l0a_bytes",
           "buffers too small for one 16x16 fractal (L0A/L0B >= 512 B, L0C/UB >= "
           "1 KiB, L1 >= 2 KiB)");
  }
  return t;
}

HardwareTarget load_hardware_target_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TargetError(path.string() + ": cannot open target file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw TargetError(path.string() + ": cannot read target file");
  return parse_hardware_target(text.str(), path.filename().string());
}

const HardwareTarget& hardware_target(std::string_view name) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<HardwareTarget>, std::less<>> cache;
  std::lock_guard lock(mutex);
  if (auto it = cache.find(name); it != cache.end()) return *it->second;
  for (const auto& e : hw::embedded_targets()) {
    if (e.name != name) continue;
    auto t = std::make_unique<HardwareTarget>(
        parse_hardware_target(e.json, std::string(name) + ".json"));
    if (t->name != name) {
      throw TargetError(std::string(name) + ".json: field 'name': '" + t->name +
                        "' does not match the file name");
    }
    return *cache.emplace(std::string(name), std::move(t)).first->second;
  }
  std::string known;
  for (auto n : kNames) known += (known.empty() ? "" : ", ") + std::string(n);
  throw TargetError("no hardware model for target '" + std::string(name) + "' (targets: " + known +
                    ")");
}

}  // namespace graphcore
