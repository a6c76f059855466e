// Target files: parsing, validation and the embedded built-in targets, which are both the
// optimization layer's targets (graphcore::targets(), optimize.h) and the hardware layer's.
#include <algorithm>
#include <array>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "graphcore/checked.h"
#include "graphcore/hardware.h"
#include "hw/embedded_targets.h"

namespace graphcore {

namespace {

using json = nlohmann::json;

// The built-in targets (graphcore/targets/<name>.json, one file each) in the order the CLI lists
// them (graphcore::targets()). Only the order is defined here: every fact is in the files, and
// the files and this list must name the same targets (checked when they are first parsed).
constexpr std::array<std::string_view, 6> kTargetOrder = {"cpu",        "gpu",        "ascend910",
                                                          "ascend910b", "ascend310p", "ascend310"};
// The built-in targets with a hardware model (kind "ascend" or "cpu"), in the order the hardware
// layer's messages list them (checked against the files too).
constexpr std::array<std::string_view, 5> kNames = {"cpu", "ascend910", "ascend910b", "ascend310",
                                                    "ascend310p"};
// The fields of a kind "gpu" file: it has no hardware model, so no hardware fields.
constexpr std::array<std::string_view, 6> kGpuFields = {
    "name", "display_name", "kind", "notes", "buffer_alignment_bytes", "fused_attention_kernel"};

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
      : doc_(doc), origin_(origin), sources_(&out->sources) {}

  // Where field() records the sources of the fields read next.
  void record_sources_in(std::vector<FieldSource>* sources) { sources_ = sources; }

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
    sources_->push_back({std::string(name), conf->get<std::string>(), src->get<std::string>()});
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
  uint32_t power_of_two(std::string_view name) {
    const uint32_t v = count(name);
    if ((v & (v - 1)) != 0) fail(name, "expected a power of two");
    return v;
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
  [[nodiscard]] bool has(std::string_view name) const {
    return doc_.find(std::string(name)) != doc_.end();
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
  std::vector<FieldSource>* sources_;
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
    case Unit::Comm:
      return "comm";
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
  t.kind = r.plain("kind", true);
  if (t.kind != "ascend" && t.kind != "cpu" && t.kind != "gpu") {
    r.fail("kind", "expected \"ascend\", \"cpu\" or \"gpu\"");
  }
  t.ascend = t.kind == "ascend";
  // Every kind: the optimization layer's facts, whose sources are kept apart from the hardware
  // model's.
  r.record_sources_in(&t.optimizer_sources);
  t.buffer_alignment = r.power_of_two("buffer_alignment_bytes");
  t.fused_attention_kernel = r.text("fused_attention_kernel");
  r.record_sources_in(&t.sources);
  if (t.kind == "gpu") {
    for (const auto& item : doc.items()) {
      if (std::find(kGpuFields.begin(), kGpuFields.end(), item.key()) == kGpuFields.end()) {
        r.fail(item.key(),
               "not a field of a \"gpu\" target: kind \"gpu\" has no hardware model (the hardware "
               "layer models \"ascend\" and \"cpu\" targets), so its file holds only name, "
               "display_name, kind, notes, buffer_alignment_bytes and fused_attention_kernel");
      }
    }
    return t;
  }
  t.frequency_mhz = r.positive("frequency_mhz");
  t.launch_overhead_us = r.positive("launch_overhead_us");
  // Optional: absent when no public source gives the figure (communication is then not timed).
  if (r.has("interconnect_gbps")) t.interconnect_gbps = r.positive("interconnect_gbps");
  if (r.has("interconnect_latency_us"))
    t.interconnect_latency_us = r.non_negative("interconnect_latency_us");
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

namespace {

// The built-in target files, parsed once: `files` in kTargetOrder's order, `infos` their
// optimizer facts (TargetInfo's views point into `files`, which never change after the build).
struct BuiltInTargets {
  std::vector<HardwareTarget> files;
  std::vector<TargetInfo> infos;
};

BuiltInTargets parse_built_in_targets() {
  BuiltInTargets out;
  out.files.reserve(kTargetOrder.size());
  for (const auto name : kTargetOrder) {
    const std::string origin = std::string(name) + ".json";
    const auto embedded = hw::embedded_targets();
    const auto e = std::find_if(embedded.begin(), embedded.end(),
                                [name](const hw::EmbeddedTarget& x) { return x.name == name; });
    if (e == embedded.end()) {
      throw TargetError(origin + ": missing: target '" + std::string(name) +
                        "' is listed (kTargetOrder, graphcore/src/hw/target.cpp) but "
                        "graphcore/targets/ has no file for it");
    }
    HardwareTarget t = parse_hardware_target(e->json, origin);
    if (t.name != name) {
      throw TargetError(origin + ": field 'name': '" + t.name + "' does not match the file name");
    }
    const bool listed = std::find(kNames.begin(), kNames.end(), name) != kNames.end();
    if (t.has_hardware_model() != listed) {
      throw TargetError(origin + ": field 'kind': \"" + t.kind + "\" " +
                        (listed ? "has no hardware model, but the target is listed with one"
                                : "has a hardware model, but the target is not listed with one") +
                        " (kNames, graphcore/src/hw/target.cpp)");
    }
    out.files.push_back(std::move(t));
  }
  for (const auto& e : hw::embedded_targets()) {
    if (std::find(kTargetOrder.begin(), kTargetOrder.end(), e.name) == kTargetOrder.end()) {
      throw TargetError(std::string(e.name) +
                        ".json: not a listed target (add it to kTargetOrder in "
                        "graphcore/src/hw/target.cpp, where the CLI's order of targets is)");
    }
  }
  for (const auto& t : out.files) {
    const auto source =
        std::find_if(t.optimizer_sources.begin(), t.optimizer_sources.end(),
                     [](const FieldSource& f) { return f.field == "fused_attention_kernel"; });
    out.infos.push_back(
        TargetInfo{t.name, t.ascend, t.buffer_alignment, t.fused_attention_kernel, source->source});
  }
  return out;
}

const BuiltInTargets& built_in_targets() {
  // Moving the vectors keeps their elements where they are, so the views stay valid.
  static const BuiltInTargets parsed = parse_built_in_targets();
  return parsed;
}

}  // namespace

std::span<const TargetInfo> targets() { return built_in_targets().infos; }

const TargetInfo* find_target(std::string_view name) {
  for (const auto& t : targets()) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const HardwareTarget& hardware_target(std::string_view name) {
  for (const auto& t : built_in_targets().files) {
    if (t.name == name && t.has_hardware_model()) return t;
  }
  std::string known;
  for (auto n : kNames) known += (known.empty() ? "" : ", ") + std::string(n);
  throw TargetError("no hardware model for target '" + std::string(name) + "' (targets: " + known +
                    ")");
}

}  // namespace graphcore
