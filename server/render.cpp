#include "render.h"

#include "graphcore/diagnostic_codes.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <unordered_map>

#include "files.h"

namespace cellscope::server {

namespace {

using google::protobuf::Value;

std::string number_string(double v) {
  if (std::isfinite(v) && std::floor(v) == v && std::fabs(v) < 1e15) {
    return std::to_string(static_cast<long long>(v));
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string dim_string(const Value& v) {
  switch (v.kind_case()) {
    case Value::kNumberValue:
      return number_string(v.number_value());
    case Value::kStringValue:
      return v.string_value();
    default:
      return "?";
  }
}

std::string_view short_dtype(std::string_view dtype) {
  static const std::unordered_map<std::string_view, std::string_view> kShort = {
      {"float32", "f32"}, {"float16", "f16"}, {"bfloat16", "bf16"}, {"float64", "f64"},
      {"int8", "i8"},     {"int16", "i16"},   {"int32", "i32"},     {"int64", "i64"},
      {"uint8", "u8"},    {"bool", "bool"},   {"complex64", "c64"}, {"unknown", "?"}};
  auto it = kShort.find(dtype);
  return it == kShort.end() ? dtype : it->second;
}

// 1,234,567
std::string grouped(double v) {
  std::string digits = number_string(std::round(v));
  const bool negative = !digits.empty() && digits[0] == '-';
  if (negative) digits.erase(0, 1);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return negative ? "-" + out : out;
}

std::string flops_string(double flops) {
  static const char* const kUnits[] = {"", "K", "M", "G", "T", "P"};
  int unit = 0;
  double v = flops;
  while (std::fabs(v) >= 1000 && unit < 5) {
    v /= 1000;
    ++unit;
  }
  char buf[48];
  if (unit == 0) {
    std::snprintf(buf, sizeof buf, "%.0f FLOPs", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f %sFLOPs", v, kUnits[unit]);
  }
  return buf;
}

// Byte offset in `line` of UTF-16 column `col`.
size_t byte_offset_of_utf16(std::string_view line, uint32_t col) {
  size_t i = 0;
  uint32_t units = 0;
  while (i < line.size() && units < col) {
    const auto c = static_cast<unsigned char>(line[i]);
    size_t len = 1;
    if (c >= 0xF0) {
      len = 4;
    } else if (c >= 0xE0) {
      len = 3;
    } else if (c >= 0xC0) {
      len = 2;
    }
    units += len == 4 ? 2 : 1;
    i = std::min(line.size(), i + len);
  }
  return i;
}

// Display width (code points; tabs kept as tabs by the caller) of line[0, bytes).
std::string caret_prefix(std::string_view line, size_t bytes) {
  std::string out;
  for (size_t i = 0; i < bytes && i < line.size(); ++i) {
    const auto c = static_cast<unsigned char>(line[i]);
    if (c == '\t') {
      out.push_back('\t');
    } else if ((c & 0xC0) != 0x80) {
      out.push_back(' ');
    }
  }
  return out;
}

size_t code_points(std::string_view s) {
  size_t n = 0;
  for (char ch : s) n += (static_cast<unsigned char>(ch) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

std::string location_string(const std::string& file, const protocol::Range& range) {
  return display_path(file) + ":" + std::to_string(range.start().line() + 1) + ":" +
         std::to_string(range.start().character() + 1);
}

void render_snippet(std::ostream& out, const std::string& file, const protocol::Range& range,
                    protocol::PositionMapper* positions) {
  if (positions == nullptr || file.empty()) return;
  const uint32_t line_no = range.start().line();
  std::string_view line = positions->line_text(file, line_no);
  if (line.empty() && positions->text(file) == nullptr) return;
  const size_t start = byte_offset_of_utf16(line, range.start().character());
  size_t end = range.end().line() == line_no ? byte_offset_of_utf16(line, range.end().character())
                                             : line.size();
  if (end < start) end = start;
  const std::string gutter = std::to_string(line_no + 1);
  out << "  " << gutter << " | " << line << "\n";
  const size_t width = std::max<size_t>(1, code_points(line.substr(start, end - start)));
  out << "  " << std::string(gutter.size(), ' ') << " | " << caret_prefix(line, start) << '^'
      << std::string(width - 1, '~') << "\n";
}

std::string dot_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

// Percent-encodes a relative path for a URI (keeps unreserved characters and '/').
std::string uri_encode_path(std::string_view path) {
  static const char* const kHex = "0123456789ABCDEF";
  std::string out;
  for (char ch : path) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string rule_name(std::string_view id) {
  std::string out;
  bool upper = true;
  for (char c : id) {
    if (c == '-' || c == '_') {
      upper = true;
      continue;
    }
    out.push_back(upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c);
    upper = false;
  }
  return out;
}

const char* sarif_level(std::string_view severity) {
  if (severity == "error") return "error";
  if (severity == "warning") return "warning";
  return "note";
}

nlohmann::ordered_json sarif_location(const std::string& file, const protocol::Range& r) {
  nlohmann::ordered_json artifact;
  std::filesystem::path p(file);
  const std::string shown = display_path(file);
  if (!std::filesystem::path(shown).is_absolute()) {
    artifact["uri"] = uri_encode_path(shown);
    artifact["uriBaseId"] = "SRCROOT";
  } else {
    artifact["uri"] = "file://" + uri_encode_path(p.lexically_normal().generic_string());
  }
  nlohmann::ordered_json region = {
      {"startLine", r.start().line() + 1},
      {"startColumn", r.start().character() + 1},
      {"endLine", r.end().line() + 1},
      {"endColumn", r.end().character() + 1},
  };
  return {{"physicalLocation", {{"artifactLocation", artifact}, {"region", region}}}};
}

}  // namespace

std::string shape_string(const google::protobuf::RepeatedPtrField<Value>& shape, bool compact) {
  std::string out = "(";
  for (int i = 0; i < shape.size(); ++i) {
    if (i > 0) out += compact ? "," : ", ";
    out += dim_string(shape.Get(i));
  }
  if (shape.size() == 1 && !compact) out += ",";
  out += ")";
  return out;
}

std::string tensor_string(const protocol::Tensor& t, bool compact) {
  std::string shape = t.unranked() ? std::string("(?)") : shape_string(t.shape(), compact);
  return shape + " " + std::string(compact ? short_dtype(t.dtype()) : t.dtype());
}

std::string_view compiler_severity(std::string_view s) {
  if (s == "error" || s == "warning" || s == "hint") return s;
  if (s == "information") return "info";
  return s;
}

void render_diagnostic_text(std::ostream& out, const protocol::Diagnostic& d,
                            protocol::PositionMapper* positions) {
  out << location_string(d.file(), d.range()) << ": " << compiler_severity(d.severity()) << ": "
      << d.message();
  if (!d.code().empty()) out << " [" << d.code() << "]";
  out << "\n";
  render_snippet(out, d.file(), d.range(), positions);
  for (const auto& r : d.related()) {
    out << location_string(r.file().empty() ? d.file() : r.file(), r.range())
        << ": note: " << r.message() << "\n";
  }
  std::vector<std::string> shown;  // each fix once, whatever the producer repeated
  for (const auto& f : d.fixes()) {
    if (std::find(shown.begin(), shown.end(), f.title()) != shown.end()) continue;
    shown.push_back(f.title());
    out << "  fix: " << f.title() << "\n";
  }
}

Counts count_diagnostics(const std::vector<protocol::Diagnostic>& diags) {
  Counts c;
  for (const auto& d : diags) {
    if (d.severity() == "error") {
      ++c.errors;
    } else if (d.severity() == "warning") {
      ++c.warnings;
    } else {
      ++c.others;
    }
  }
  return c;
}

std::string summary_line(const Counts& c, size_t files) {
  auto plural = [](size_t n, const char* word) {
    return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
  };
  std::string where = " in " + plural(files, "file");
  if (c.errors == 0 && c.warnings == 0 && c.others == 0) return "no problems" + where;
  std::string out = plural(c.errors, "error") + ", " + plural(c.warnings, "warning");
  if (c.others > 0) out += ", " + plural(c.others, "note");
  return out + where;
}

std::string render_sarif(const std::vector<protocol::Diagnostic>& diags) {
  // Rule descriptions come from graphcore's catalogue of codes (docs/diagnostics.md).
  std::map<std::string, std::string> known;
  for (const auto& r : graphcore::diagnostic_codes()) known.emplace(r.code, r.summary);

  std::vector<std::string> rule_ids;
  std::map<std::string, size_t> rule_index;
  std::map<std::string, std::string> rule_level;
  for (const auto& d : diags) {
    const std::string id = d.code().empty() ? "cellscope" : d.code();
    if (rule_index.emplace(id, rule_ids.size()).second) {
      rule_ids.push_back(id);
      rule_level[id] = sarif_level(d.severity());
    }
  }
  nlohmann::ordered_json rules = nlohmann::ordered_json::array();
  for (const auto& id : rule_ids) {
    auto it = known.find(id);
    const std::string text = it != known.end() ? it->second : "Cellscope check '" + id + "'";
    rules.push_back({{"id", id},
                     {"name", rule_name(id)},
                     {"shortDescription", {{"text", text}}},
                     {"defaultConfiguration", {{"level", rule_level[id]}}}});
  }

  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (const auto& d : diags) {
    const std::string id = d.code().empty() ? "cellscope" : d.code();
    nlohmann::ordered_json result = {
        {"ruleId", id},
        {"ruleIndex", rule_index[id]},
        {"level", sarif_level(d.severity())},
        {"message", {{"text", d.message()}}},
        {"locations", nlohmann::ordered_json::array({sarif_location(d.file(), d.range())})},
    };
    if (d.related_size() > 0) {
      nlohmann::ordered_json related = nlohmann::ordered_json::array();
      int n = 0;
      for (const auto& r : d.related()) {
        auto loc = sarif_location(r.file().empty() ? d.file() : r.file(), r.range());
        loc["id"] = n++;
        loc["message"] = {{"text", r.message()}};
        related.push_back(std::move(loc));
      }
      result["relatedLocations"] = std::move(related);
    }
    if (d.fixes_size() > 0) {
      nlohmann::ordered_json fixes = nlohmann::ordered_json::array();
      for (const auto& f : d.fixes()) {
        // SARIF groups a fix's replacements per artifact.
        std::map<std::string, std::pair<nlohmann::ordered_json, nlohmann::ordered_json>> by_file;
        for (const auto& e : f.edits()) {
          const std::string file = e.file().empty() ? d.file() : e.file();
          auto loc = sarif_location(file, e.range())["physicalLocation"];
          auto& [artifact, replacements] = by_file[file];
          artifact = loc["artifactLocation"];
          replacements.push_back(
              {{"deletedRegion", loc["region"]}, {"insertedContent", {{"text", e.new_text()}}}});
        }
        nlohmann::ordered_json changes = nlohmann::ordered_json::array();
        for (const auto& [file, change] : by_file) {
          changes.push_back({{"artifactLocation", change.first}, {"replacements", change.second}});
        }
        fixes.push_back({{"description", {{"text", f.title()}}}, {"artifactChanges", changes}});
      }
      result["fixes"] = std::move(fixes);
    }
    results.push_back(std::move(result));
  }

  nlohmann::ordered_json driver = {
      {"name", "cellscope"},
      {"version", std::string(protocol::tool_version())},
      {"semanticVersion", std::string(protocol::tool_version())},
      {"rules", rules},
  };
  std::error_code ec;
  std::string root = std::filesystem::current_path(ec).generic_string();
  if (root.empty() || root.back() != '/') root.push_back('/');
  nlohmann::ordered_json run = {
      {"tool", {{"driver", driver}}},
      {"originalUriBaseIds", {{"SRCROOT", {{"uri", "file://" + uri_encode_path(root)}}}}},
      {"columnKind", "utf16CodeUnits"},
      {"results", results},
  };
  nlohmann::ordered_json log = {
      {"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
      {"version", "2.1.0"},
      {"runs", nlohmann::ordered_json::array({run})},
  };
  return log.dump(2) + "\n";
}

namespace {

// "1.25 MiB", "512 B".
std::string bytes_string(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  double v = bytes;
  while (v >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, unit == 0 ? "%.0f %s" : "%.2f %s", v, kUnits[unit]);
  return buf;
}

std::string pad_to(const std::string& s, size_t w) {
  return s + std::string(w > code_points(s) ? w - code_points(s) : 0, ' ');
}

// Rows of cells as aligned columns (the last column is not padded), each line indented.
void print_table(std::ostream& out, const std::vector<std::vector<std::string>>& rows,
                 const std::string& indent) {
  std::vector<size_t> widths;
  for (const auto& r : rows) {
    if (widths.size() < r.size()) widths.resize(r.size(), 0);
    for (size_t i = 0; i < r.size(); ++i) widths[i] = std::max(widths[i], code_points(r[i]));
  }
  for (const auto& r : rows) {
    std::string line = indent;
    for (size_t i = 0; i < r.size(); ++i) {
      line += i + 1 < r.size() ? pad_to(r[i], widths[i]) + "  " : r[i];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
}

std::string joined(const google::protobuf::RepeatedPtrField<std::string>& list, size_t max) {
  std::string out;
  for (int i = 0; i < list.size(); ++i) {
    if (static_cast<size_t>(i) == max) {
      out += ", ... (" + std::to_string(list.size()) + " in all)";
      break;
    }
    if (i > 0) out += ", ";
    out += list.Get(i);
  }
  return out;
}

// The optimization layer of one Cell: totals, passes, fusion groups and the candidates that were
// not fused, dead code, the memory plan and the kernel table.
void render_optimized_text(std::ostream& out, const protocol::OptimizedLayer& layer) {
  const auto& mem = layer.memory();
  out << "  optimized for " << layer.target() << ": " << layer.semantic_ops() << " semantic ops -> "
      << layer.kernels() << " kernels (" << layer.fusion_groups() << " fused, " << layer.transdata()
      << " TransData), " << layer.removed_size() << " removed as dead code\n";

  out << "\n  passes\n";
  std::vector<std::vector<std::string>> rows{{"PASS", "NODES", "CHANGES", "MS"}};
  for (const auto& p : layer.passes()) {
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.3f", p.ms());
    rows.push_back({p.name(),
                    std::to_string(p.nodes_before()) + " -> " + std::to_string(p.nodes_after()),
                    std::to_string(p.changes()), ms});
  }
  print_table(out, rows, "    ");

  int fused = 0, not_fused = 0;
  for (const auto& d : layer.fusions()) (d.fused() ? fused : not_fused)++;
  out << "\n  fusion groups (" << fused << ")\n";
  std::map<std::string, int> by_pattern;
  for (const auto& d : layer.fusions()) {
    if (d.fused()) ++by_pattern[d.pattern()];
  }
  if (!by_pattern.empty()) {
    out << "    by pattern:";
    for (const auto& [pattern, count] : by_pattern) out << " " << pattern << " " << count << ";";
    out << "\n";
  }
  rows = {{"KERNEL", "OPS", "REASON"}};
  for (const auto& d : layer.fusions()) {
    if (d.fused()) rows.push_back({d.kernel(), std::to_string(d.nodes_size()), d.reason()});
  }
  if (rows.size() > 1) print_table(out, rows, "    ");
  out << "\n  not fused (" << not_fused << ")\n";
  for (const auto& d : layer.fusions()) {
    if (!d.fused()) out << "    [" << d.pattern() << "] " << d.reason() << "\n";
  }
  if (layer.removed_size() > 0) {
    out << "\n  removed (" << layer.removed_size() << ")\n";
    for (const auto& r : layer.removed()) out << "    " << r.node() << ": " << r.reason() << "\n";
  }

  if (!mem.algorithm().empty()) {
    out << "\n  memory plan (" << mem.algorithm() << ", " << mem.alignment()
        << "-byte alignment)\n";
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.1f%%",
                  mem.naive_bytes() > 0 ? 100.0 * mem.peak_bytes() / mem.naive_bytes() : 0.0);
    out << "    peak      " << bytes_string(mem.peak_bytes()) << " (" << grouped(mem.peak_bytes())
        << " bytes), " << pct << " of the naive " << bytes_string(mem.naive_bytes())
        << "; lower bound " << bytes_string(mem.lower_bound_bytes()) << "\n";
    out << "    tensors   " << mem.tensors() << " in " << mem.buffers_size() << " buffers";
    if (mem.unsized_size() > 0) out << "; " << mem.unsized_size() << " of unknown size not planned";
    out << "\n";
    out << "    outside   weights " << bytes_string(mem.weight_bytes()) << ", constants "
        << bytes_string(mem.constant_bytes()) << "\n";
    std::vector<const protocol::MemoryBuffer*> top;
    for (const auto& b : mem.buffers()) top.push_back(&b);
    std::stable_sort(top.begin(), top.end(),
                     [](const auto* a, const auto* b) { return a->size() > b->size(); });
    if (top.size() > 8) top.resize(8);
    rows = {{"OFFSET", "SIZE", "TENSORS"}};
    for (const auto* b : top) {
      rows.push_back({grouped(b->offset()), bytes_string(b->size()), joined(b->tensors(), 4)});
    }
    if (!top.empty()) {
      out << "    largest buffers\n";
      print_table(out, rows, "      ");
    }
  }

  out << "\n  kernels   " << layer.nodes_size() << " nodes\n";
  rows = {{"ID", "OP", "OUTPUT", "FORMAT", "MEMORY", "ORIGINS"}};
  for (const auto& n : layer.nodes()) {
    std::vector<std::string> r;
    r.push_back(n.id());
    r.push_back(n.kind() == "op" ? n.op() : n.kind());
    std::string outputs, formats, memory;
    for (int i = 0; i < n.outputs_size(); ++i) {
      if (i > 0) {
        outputs += ", ";
        formats += ", ";
      }
      outputs += tensor_string(n.outputs(i), true);
      formats += n.outputs(i).format();
    }
    for (int i = 0; i < n.memory_size(); ++i) {
      if (i > 0) memory += ", ";
      memory += "b" + std::to_string(n.memory(i).buffer()) + "@" + grouped(n.memory(i).offset());
    }
    r.push_back(outputs.empty() ? "-" : outputs);
    r.push_back(formats.empty() ? "-" : formats);
    r.push_back(memory.empty() ? "-" : memory);
    r.push_back(n.origins_size() == 1 && n.origins(0) == n.id() ? "" : joined(n.origins(), 6));
    rows.push_back(std::move(r));
  }
  print_table(out, rows, "    ");
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string cores_string(const google::protobuf::RepeatedField<uint32_t>& ids) {
  if (ids.empty()) return "-";
  // Runs of consecutive ids: "0-31", "0-3,8".
  std::string out;
  for (int i = 0; i < ids.size();) {
    int j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(ids[i]);
    if (j > i) out += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return out;
}

// The hardware layer of one Cell: the analytical-model statement, the estimate, time by unit and
// by operator, and the top kernels by cycles.
void render_hardware_text(std::ostream& out, const protocol::Cell& cell) {
  const auto& hw = cell.hardware();
  const auto& e = hw.estimate();
  const auto& spec = hw.spec();
  out << "  hardware  " << spec.display_name() << " (" << hw.target() << "), mode " << hw.mode()
      << ", batch " << grouped(e.batch()) << "\n";
  out << "  " << hw.statement() << "\n";
  if (hw.ascend()) {
    out << "  target    " << spec.ai_cores() << " AI cores (" << spec.organisation() << ", "
        << spec.vector_cores() << " vector), " << fixed(spec.frequency_mhz(), 0) << " MHz, "
        << fixed(spec.peak_tflops_fp16(), 1) << " TFLOPS fp16 peak, L2 "
        << bytes_string(spec.l2_bytes()) << ", GM " << fixed(spec.gm_bandwidth_gbps(), 0)
        << " GB/s\n";
  } else {
    out << "  target    " << spec.ai_cores() << " cores, " << fixed(spec.frequency_mhz(), 0)
        << " MHz, " << fixed(spec.peak_tflops_fp16(), 2) << " TFLOPS fp32 peak, DRAM "
        << fixed(spec.gm_bandwidth_gbps(), 1) << " GB/s (all assumptions)\n";
  }
  out << "\n  estimate (analytical model, not a measurement)\n";
  out << "    latency      " << fixed(e.latency_ms(), 3) << " ms per "
      << (hw.mode() == "train" ? "training step" : "batch") << "\n";
  out << "    throughput   " << fixed(e.throughput_per_sec(), 1) << " samples/s\n";
  if (hw.mode() == "train") {
    out << "    step         forward " << fixed(e.forward_ms(), 3) << " ms, backward "
        << fixed(e.backward_ms(), 3) << " ms, optimizer " << fixed(e.optimizer_ms(), 3) << " ms\n";
  }
  if (hw.ascend()) {
    out << "    by unit      cube " << fixed(e.cube_ms(), 3) << " ms, vector "
        << fixed(e.vector_ms(), 3) << " ms, aicpu " << fixed(e.aicpu_ms(), 3) << " ms, dispatch "
        << fixed(e.dispatch_ms(), 3) << " ms\n";
  } else {
    out << "    by unit      cpu " << fixed(e.cpu_ms(), 3) << " ms, executor overhead "
        << fixed(e.dispatch_ms(), 3) << " ms\n";
  }
  out << "    totals       " << hw.kernels() << " kernels, " << flops_string(2 * e.macs())
      << (hw.ascend() ? " on the cube (" : " in matrix products (")
      << fixed(100 * e.cube_utilization(), 1) << "% of peak), " << bytes_string(e.gm_bytes())
      << (hw.ascend() ? " global-memory traffic\n" : " DRAM traffic\n");
  out << "    memory peak  " << bytes_string(e.memory_peak_bytes()) << " activations"
      << (hw.mode() == "train" ? " (every forward activation kept for backward)" : "")
      << ", weights " << bytes_string(e.weight_bytes()) << "\n";
  if (e.comm_bytes() > 0 || cell.optimized().comms() > 0) {
    out << "    comm         " << cell.optimized().comms() << " nodes"
        << (hw.mode() == "train" ? " and the gradient reduction, " : ", ")
        << bytes_string(e.comm_bytes()) << " sent per device, "
        << (e.comm_timed() ? (e.comm_ms() < 0.1 ? fixed(e.comm_ms() * 1e3, 3) + " us"
                                                : fixed(e.comm_ms(), 3) + " ms") +
                                 " on the interconnect"
                           : "no interconnect figure for " + hw.target() + ": time not estimated")
        << "\n";
  }
  if (e.pipeline_stages() > 1) {
    out << "    pipeline     " << e.pipeline_stages() << " stages, " << e.micro_batches()
        << " micro-batches, bubble " << fixed(100 * e.bubble_fraction(), 1) << "%, step "
        << fixed(e.pipeline_step_ms(), 3) << " ms\n";
    for (const auto& s : e.stages()) {
      out << "      stage " << s.stage() << "    compute " << fixed(s.compute_ms(), 3)
          << " ms, comm " << fixed(s.comm_ms(), 3) << " ms\n";
    }
  }
  for (const auto& n : e.notes()) out << "    note: " << n << "\n";

  std::vector<const protocol::HardwareKernel*> kernels;
  for (const auto& n : cell.optimized().nodes()) {
    for (const auto& k : n.hardware()) kernels.push_back(&k);
  }
  for (const auto& k : hw.optimizer()) kernels.push_back(&k);
  // Time by operator.
  std::map<std::string, std::pair<double, int>> by_op;
  for (const auto* k : kernels) {
    auto& [us, count] = by_op[k->phase() == "optimizer" ? "optimizer update" : k->name()];
    us += k->time_us();
    ++count;
  }
  std::vector<std::pair<std::string, std::pair<double, int>>> ops(by_op.begin(), by_op.end());
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  if (ops.size() > 12) ops.resize(12);
  const double total_us = e.latency_ms() * 1e3;
  out << "\n  time by operator\n";
  std::vector<std::vector<std::string>> rows{{"OPERATOR", "KERNELS", "TIME", "SHARE"}};
  for (const auto& [name, v] : ops) {
    rows.push_back({name, std::to_string(v.second), fixed(v.first, 1) + " us",
                    fixed(total_us > 0 ? 100 * v.first / total_us : 0, 1) + "%"});
  }
  print_table(out, rows, "    ");

  std::stable_sort(kernels.begin(), kernels.end(),
                   [](const auto* a, const auto* b) { return a->cycles() > b->cycles(); });
  const size_t top = std::min<size_t>(kernels.size(), 15);
  out << "\n  top " << top << " kernels by cycles\n";
  // In the target's words: Global Memory and launch dispatch are Ascend's; a CPU target has DRAM
  // and the executor's per-operator overhead (the webview's vocab.ts says the same).
  rows = {{"NODE", "KERNEL", "PHASE", "UNIT", "CORES", "CYCLES", "COMPUTE", "MOVE", "TIME",
           hw.ascend() ? "GM BYTES" : "DRAM BYTES", "GB/S", "BOUND"}};
  for (size_t i = 0; i < top; ++i) {
    const auto& k = *kernels[i];
    rows.push_back({k.node().empty() ? "-" : k.node(), k.name(), k.phase(), k.unit(),
                    std::to_string(k.block_dim()) + " [" + cores_string(k.core_ids()) + "]",
                    grouped(k.cycles()), grouped(k.compute_cycles()), grouped(k.movement_cycles()),
                    fixed(k.time_us(), 1) + " us",
                    bytes_string(k.gm_read_bytes() + k.gm_write_bytes()),
                    fixed(k.bandwidth_gbps(), 0),
                    !hw.ascend() && k.bound() == "dispatch" ? "overhead" : k.bound()});
  }
  print_table(out, rows, "    ");
  if (top > 0 && !kernels[0]->tiling().empty()) {
    const auto& k = *kernels[0];
    out << "\n  tiling of " << (k.node().empty() ? k.name() : k.node()) << " (" << k.name()
        << ")\n";
    for (const auto& t : k.tiling()) {
      out << "    " << pad_to(t.buffer(), 6) << t.tile() << "  " << bytes_string(t.bytes()) << " x"
          << t.copies() << " of " << bytes_string(t.capacity()) << "\n";
    }
    out << "    loops ";
    for (const auto& l : k.loops()) out << " " << l.var() << "=" << grouped(l.trips());
    out << "\n    per tile:";
    for (const auto& s : k.schedule()) {
      out << " " << s.op() << " x" << grouped(s.count()) << " [" << s.unit() << "];";
    }
    out << "\n";
  }
}

}  // namespace

namespace {

std::string plan_value(const google::protobuf::Value& v) {
  switch (v.kind_case()) {
    case google::protobuf::Value::kNumberValue: {
      std::ostringstream s;
      s << v.number_value();
      return s.str();
    }
    case google::protobuf::Value::kStringValue:
      return v.string_value();
    case google::protobuf::Value::kBoolValue:
      return v.bool_value() ? "True" : "False";
    case google::protobuf::Value::kListValue: {
      std::string out = "(";
      for (int i = 0; i < v.list_value().values_size(); ++i)
        out += (i ? ", " : "") + plan_value(v.list_value().values(i));
      return out + ")";
    }
    default:
      return "None";
  }
}

std::string plan_call_string(const protocol::PlanCall& c) {
  std::string out = c.api() + "(";
  for (int i = 0; i < c.args_size(); ++i)
    out += (i ? ", " : "") + c.args(i).name() + "=" + plan_value(c.args(i).value());
  return out + ")";
}

// The training plans, briefly: what `cellscope train` would run.
void render_training_text(std::ostream& out, const protocol::GraphDocument& doc) {
  for (const auto& t : doc.training()) {
    out << "\ntraining (" << t.idiom() << ")  " << location_string(t.file(), t.range()) << "\n";
    out << "  network   " << (t.network().empty() ? "? (not followed)" : t.network()) << "\n";
    out << "  loss      " << (t.loss().api().empty() ? "-" : plan_call_string(t.loss())) << "\n";
    out << "  optimizer "
        << (t.optimizer().api().empty() ? "? (not followed)" : plan_call_string(t.optimizer()))
        << "\n";
    for (int i = 0; i < t.param_groups_size(); ++i) {
      const auto& g = t.param_groups(i);
      out << "    group " << i << ": " << g.params_size() << " parameters";
      for (const auto& o : g.overrides()) out << ", " << o.name() << "=" << plan_value(o.value());
      out << "\n";
    }
    if (t.has_lr_schedule()) out << "  lr        " << plan_call_string(t.lr_schedule()) << "\n";
    if (t.has_lr_graph()) {
      const auto& lg = t.lr_graph();
      out << "  lr graph  " << (lg.class_name().empty() ? "?" : lg.class_name()) << ".construct";
      if (lg.compiled()) {
        out << " compiled, " << lg.nodes_size() << " nodes (global_step -> learning rate)";
      } else {
        out << " not compiled: " << t.lr_graph_reason();
      }
      out << "\n";
    }
    if (t.has_loss_scale_manager())
      out << "  scale     " << plan_call_string(t.loss_scale_manager()) << "\n";
    if (t.has_clip_global_norm()) out << "  clip      " << t.clip_global_norm() << "\n";
    out << "  epochs    "
        << (t.has_epochs() ? std::to_string(static_cast<int64_t>(t.epochs())) : "?");
    if (t.dataset_sink_mode()) {
      out << "  (dataset sink mode";
      if (t.has_sink_size()) out << ", sink_size " << static_cast<int64_t>(t.sink_size());
      out << ")";
    }
    out << "\n";
    const auto pipeline = [&out](const protocol::DatasetPlan& d) {
      out << plan_call_string(d.source());
      for (const auto& op : d.ops())
        out << "\n            ." << plan_call_string(op.call()).substr(8);
      out << "\n  batch     ";
      if (d.columns_size() == 0) out << "?";
      for (int i = 0; i < d.columns_size(); ++i)
        out << (i ? ", " : "") << d.columns(i).name() << ": " << tensor_string(d.columns(i), true);
      if (!d.opaque_reason().empty()) out << "\n  (not followed: " << d.opaque_reason() << ")";
      out << "\n";
    };
    if (t.has_dataset()) {
      out << "  dataset   ";
      pipeline(t.dataset());
    } else {
      out << "  dataset   ? (not followed)\n";
    }
    if (t.has_eval_dataset()) {
      out << "  eval data (line " << t.eval_range().start().line() + 1 << ") ";
      pipeline(t.eval_dataset());
    }
    for (const auto& c : t.callbacks()) out << "  callback  " << plan_call_string(c) << "\n";
    for (const auto& c : t.exports()) out << "  export    " << plan_call_string(c) << "\n";
    const auto& g = t.loss_graph();
    out << "  loss graph " << (g.compiled() ? "compiled" : "not compiled") << ", " << g.nodes_size()
        << " nodes, " << grouped(g.params()) << " trainable parameters";
    if (g.outputs_size() > 0) out << ", loss " << tensor_string(g.outputs(0));
    out << "\n";
  }
}

}  // namespace

std::string render_graph_text(const protocol::GraphDocument& doc,
                              protocol::PositionMapper* positions) {
  std::ostringstream out;
  out << "file: " << display_path(doc.file()) << "  (target " << doc.target() << ", MindSpore "
      << doc.mindspore_version() << " API)\n";
  if (doc.cells_size() == 0) out << "\nno Cell analysed (see the diagnostics below)\n";
  for (const auto& c : doc.cells()) {
    out << "\n" << c.name();
    if (!c.class_name().empty() && c.class_name() != c.name()) out << " (" << c.class_name() << ")";
    out << "  " << location_string(c.file(), c.range()) << "\n";
    out << "  compiled  " << (c.compiled() ? "yes" : "no (see diagnostics)") << "\n";
    out << "  params    " << grouped(c.params()) << " trainable, " << grouped(c.total_params())
        << " total\n";
    auto tensors = [&out](const char* label, const auto& list) {
      out << "  " << label;
      if (list.empty()) out << "-";
      for (int i = 0; i < list.size(); ++i) {
        if (i > 0) out << "\n            ";
        const auto& t = list.Get(i);
        if (!t.name().empty()) out << t.name() << ": ";
        out << tensor_string(t);
      }
      out << "\n";
    };
    tensors("inputs    ", c.inputs());
    tensors("outputs   ", c.outputs());
    out << "  FLOPs     " << flops_string(c.flops()) << "\n";
    if (doc.layer() == "hardware") {
      if (c.has_hardware()) {
        render_hardware_text(out, c);
      } else {
        out << "  hardware  -: construct did not compile\n";
      }
      continue;
    }
    if (doc.layer() == "optimized") {
      if (c.has_optimized()) {
        render_optimized_text(out, c.optimized());
      } else {
        out << "  optimized -: construct did not compile\n";
      }
      continue;
    }
    if (c.nodes_size() == 0) continue;

    struct Row {
      std::string id, op, output, line, inputs;
    };
    std::vector<Row> rows;
    rows.push_back({"ID", "OP", "OUTPUT", "LINE", "INPUTS"});
    for (const auto& n : c.nodes()) {
      Row r;
      r.id = n.id();
      r.op = n.kind() == "op" ? n.op() : n.kind();
      for (int i = 0; i < n.outputs_size(); ++i) {
        if (i > 0) r.output += ", ";
        r.output += tensor_string(n.outputs(i), true);
      }
      if (r.output.empty()) r.output = "-";
      const bool located = n.range().end().line() > 0 || n.range().end().character() > 0 ||
                           n.range().start().line() > 0;
      r.line = located ? std::to_string(n.range().start().line() + 1) : "-";
      for (int i = 0; i < n.inputs_size(); ++i) {
        if (i > 0) r.inputs += ", ";
        r.inputs += n.inputs(i).node();
        if (n.inputs(i).output() > 0) r.inputs += ":" + std::to_string(n.inputs(i).output());
      }
      rows.push_back(std::move(r));
    }
    size_t w_id = 0, w_op = 0, w_out = 0, w_line = 0;
    for (const auto& r : rows) {
      w_id = std::max(w_id, code_points(r.id));
      w_op = std::max(w_op, code_points(r.op));
      w_out = std::max(w_out, code_points(r.output));
      w_line = std::max(w_line, r.line.size());
    }
    auto pad = [](const std::string& s, size_t w) {
      return s + std::string(w > code_points(s) ? w - code_points(s) : 0, ' ');
    };
    out << "  nodes     " << c.nodes_size() << "\n";
    for (const auto& r : rows) {
      std::string line = "    " + pad(r.id, w_id) + "  " + pad(r.op, w_op) + "  " +
                         pad(r.output, w_out) + "  " + std::string(w_line - r.line.size(), ' ') +
                         r.line + "  " + r.inputs;
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out << line << "\n";
    }
  }
  render_training_text(out, doc);
  if (doc.diagnostics_size() > 0) {
    out << "\n";
    std::vector<protocol::Diagnostic> diags(doc.diagnostics().begin(), doc.diagnostics().end());
    for (const auto& d : diags) render_diagnostic_text(out, d, positions);
    out << summary_line(count_diagnostics(diags), 1) << "\n";
  }
  return out.str();
}

std::string render_graph_dot(const protocol::GraphDocument& doc) {
  std::ostringstream out;
  out << "digraph cellscope {\n"
      << "  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=11, compound=true, label=\""
      << dot_escape(display_path(doc.file()) + " (target " + doc.target() + ")") << "\"];\n"
      << "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#eef3fb\", "
         "fontname=\"Helvetica\", fontsize=10];\n"
      << "  edge [fontname=\"Helvetica\", fontsize=9, color=\"#555555\"];\n";

  for (int ci = 0; ci < doc.cells_size(); ++ci) {
    const auto& c = doc.cells(ci);
    const std::string prefix = "c" + std::to_string(ci) + "_";
    std::unordered_map<std::string, int> index;  // node id -> index
    for (int i = 0; i < c.nodes_size(); ++i) index.emplace(c.nodes(i).id(), i);
    auto dot_id = [&](int i) { return "\"" + prefix + std::to_string(i) + "\""; };

    // Scope tree: every scope and its ancestors ("layer1.0.conv1" -> "layer1", "layer1.0").
    auto parent_of = [](const std::string& s) {
      const auto dot = s.rfind('.');
      return dot == std::string::npos ? std::string() : s.substr(0, dot);
    };
    std::map<std::string, std::vector<int>> direct;  // scope -> node indices
    std::set<std::string> scopes;
    for (int i = 0; i < c.nodes_size(); ++i) {
      const std::string& s = c.nodes(i).scope();
      direct[s].push_back(i);
      for (std::string p = s; !p.empty(); p = parent_of(p)) scopes.insert(p);
    }
    std::map<std::string, std::vector<std::string>> children;
    for (const auto& s : scopes) children[parent_of(s)].push_back(s);
    // A scope holding a single node and nothing else (a leaf layer) is drawn in its parent.
    std::set<std::string> collapsed;
    for (const auto& s : scopes) {
      if (children[s].empty() && direct[s].size() == 1) collapsed.insert(s);
    }
    std::map<std::string, std::vector<int>> placed;
    for (const auto& [s, nodes] : direct) {
      std::string target = s;
      if (collapsed.count(s) != 0) target = parent_of(s);
      auto& v = placed[target];
      v.insert(v.end(), nodes.begin(), nodes.end());
    }
    for (auto& [s, nodes] : placed) std::sort(nodes.begin(), nodes.end());  // program order

    auto node_line = [&](int i, const std::string& indent) {
      const auto& n = c.nodes(i);
      std::string label = n.id();
      if (n.kind() == "op") {
        label += "\n" + n.op();
      }
      if (n.outputs_size() == 1) label += "\n" + tensor_string(n.outputs(0), true);
      std::string attrs = "label=\"" + dot_escape(label) + "\"";
      if (n.kind() == "input") {
        attrs += ", shape=ellipse, fillcolor=\"#e3f4e1\"";
      } else if (n.kind() == "parameter" || n.kind() == "constant") {
        attrs += ", shape=note, fillcolor=\"#f7f1e1\"";
      }
      if (!n.api().empty()) attrs += ", tooltip=\"" + dot_escape(n.api()) + "\"";
      out << indent << dot_id(i) << " [" << attrs << "];\n";
    };

    int cluster_no = 0;
    std::function<void(const std::string&, const std::string&)> emit =
        [&](const std::string& scope, const std::string& indent) {
          for (int i : placed[scope]) node_line(i, indent);
          for (const auto& child : children[scope]) {
            if (collapsed.count(child) != 0) continue;
            out << indent << "subgraph cluster_" << prefix << cluster_no++ << " {\n"
                << indent << "  label=\"" << dot_escape(child) << "\"; style=\"rounded\"; "
                << "color=\"#9aa5b1\";\n";
            emit(child, indent + "  ");
            out << indent << "}\n";
          }
        };

    out << "  subgraph cluster_" << prefix << "cell {\n"
        << "    label=\"" << dot_escape(c.name() + "  " + grouped(c.params()) + " params")
        << "\"; style=\"bold\"; color=\"#33415c\";\n";
    emit("", "    ");
    if (c.results_size() > 0) {
      out << "    \"" << prefix << "return\" [label=\"return\", shape=doubleoctagon, "
          << "fillcolor=\"#fde2e2\"];\n";
    }
    out << "  }\n";

    auto edge_label = [&](const protocol::Edge& e) -> std::string {
      auto it = index.find(e.node());
      if (it == index.end()) return {};
      const auto& src = c.nodes(it->second);
      if (static_cast<int>(e.output()) >= src.outputs_size()) return {};
      return shape_string(src.outputs(static_cast<int>(e.output())).shape(), true);
    };
    for (int i = 0; i < c.nodes_size(); ++i) {
      for (const auto& e : c.nodes(i).inputs()) {
        auto it = index.find(e.node());
        if (it == index.end()) continue;
        out << "  " << dot_id(it->second) << " -> " << dot_id(i) << " [label=\""
            << dot_escape(edge_label(e)) << "\"];\n";
      }
    }
    for (const auto& e : c.results()) {
      auto it = index.find(e.node());
      if (it == index.end()) continue;
      out << "  " << dot_id(it->second) << " -> \"" << prefix << "return\" [label=\""
          << dot_escape(edge_label(e)) << "\"];\n";
    }
  }
  out << "}\n";
  return out.str();
}

}  // namespace cellscope::server
