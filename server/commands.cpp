#include "commands.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "files.h"
#include "graphcore/analysis.h"
#include "graphcore/hardware.h"
#include "graphcore/optimize.h"
#include "protocol/document.h"
#include "render.h"
#include "view/view_server.h"

namespace cellscope::server {

namespace fs = std::filesystem;

namespace {

// Reads each file once: graphcore and the position mapper share the cache.
class CachingSourceProvider : public graphcore::SourceProvider {
 public:
  // Reads through `base` (the disk when null).
  explicit CachingSourceProvider(graphcore::SourceProvider* base = nullptr) : base_(base) {}

  std::optional<std::string> read(const fs::path& path) override {
    const std::string key = path.string();
    auto it = cache_.find(key);
    if (it == cache_.end())
      it = cache_.emplace(key, base_ != nullptr ? base_->read(path) : disk_.read(path)).first;
    return it->second;
  }

 private:
  graphcore::SourceProvider* base_;
  graphcore::DiskSourceProvider disk_;
  std::unordered_map<std::string, std::optional<std::string>> cache_;
};

void usage_error(const std::string& message) {
  std::cerr << "cellscope: error: " << message << "\n";
}

// Fills the analysis options shared by check and graph; false (after a message) on bad input.
bool common_analysis_options(const CommonOptions& common, graphcore::AnalysisOptions* out) {
  out->target = common.target;
  if (!common.ms_version.empty()) {
    auto v = graphcore::Version::parse(common.ms_version);
    if (!v) {
      usage_error("invalid --ms-version '" + common.ms_version + "' (expected e.g. 2.10)");
      return false;
    }
    out->mindspore_version = *v;
  }
  if (!common.root.empty()) {
    std::error_code ec;
    if (!fs::is_directory(common.root, ec)) {
      usage_error("--root: no such directory: " + common.root);
      return false;
    }
    out->workspace_root = fs::path(common.root);
  }
  for (const std::string& c : common.configs) out->config_files.emplace_back(c);
  return true;
}

protocol::DocumentInfo document_info(const graphcore::AnalysisOptions& options) {
  protocol::DocumentInfo info;
  info.target = options.target;
  info.mindspore_version = options.mindspore_version.str();
  return info;
}

// graphcore reports problems as diagnostics and is not expected to throw; if it does, the file
// still gets a located error instead of taking the whole run down.
graphcore::AnalysisResult analyze_guarded(const fs::path& file,
                                          const graphcore::AnalysisOptions& options,
                                          graphcore::SourceProvider& sources) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    auto result = graphcore::analyze_file(file, options, sources);
    const auto ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0);
    spdlog::debug("analysed {} in {:.2f} ms: {} cells, {} diagnostics", file.string(), ms.count(),
                  result.cells.size(), result.diagnostics.size());
    return result;
  } catch (const std::exception& e) {
    spdlog::error("internal error analysing {}: {}", file.string(), e.what());
    graphcore::AnalysisResult result;
    result.file = file.string();
    graphcore::Diagnostic d;
    d.file = result.file;
    d.severity = graphcore::Severity::Error;
    d.code = "internal-error";
    d.message = std::string("cellscope failed while analysing this file: ") + e.what();
    result.diagnostics.push_back(std::move(d));
    return result;
  }
}

bool diagnostic_less(const protocol::Diagnostic& a, const protocol::Diagnostic& b) {
  return std::forward_as_tuple(a.file(), a.range().start().line(), a.range().start().character(),
                               a.code()) < std::forward_as_tuple(b.file(), b.range().start().line(),
                                                                 b.range().start().character(),
                                                                 b.code());
}

std::string diagnostic_key(const protocol::Diagnostic& d) {
  std::ostringstream key;
  key << d.file() << '\x1f' << d.range().start().line() << ':' << d.range().start().character()
      << '-' << d.range().end().line() << ':' << d.range().end().character() << '\x1f'
      << d.severity() << '\x1f' << d.code() << '\x1f' << d.message();
  return key.str();
}

// Writes `data` to `path` atomically, or to stdout for "" / "-".
bool emit(const std::string& path, const std::string& data) {
  if (path.empty() || path == "-") {
    std::cout << data;
    std::cout.flush();
    return static_cast<bool>(std::cout);
  }
  try {
    write_file_atomic(path, data);
    spdlog::info("wrote {} ({} bytes)", path, data.size());
    return true;
  } catch (const std::exception& e) {
    std::cerr << "cellscope: error: " << e.what() << "\n";
    return false;
  }
}

// A file-name-safe form of a Cell name ("resnet50(num_classes=10)" -> "resnet50_num_classes_10_").
std::string file_slug(const std::string& name) {
  std::string out;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    out.push_back(ok ? c : '_');
  }
  if (out.empty() || out == "." || out == "..") out = "cell";
  return out;
}

// Adds the optimization layer (and with --layer hardware the hardware layer) to every compiled
// Cell of `doc`, dumping the passes when asked. False (after a message) when a dump cannot be
// written.
bool add_optimized_layers(const graphcore::AnalysisResult& result, const GraphOptions& options,
                          protocol::PositionMapper& positions, protocol::GraphDocument* doc) {
  bool ok = true;
  for (size_t i = 0; i < result.cells.size(); ++i) {
    const auto& cell = result.cells[i];
    if (!cell.compiled) {
      spdlog::warn("{}: construct did not compile; no optimization layer", cell.name);
      continue;
    }
    graphcore::OptimizeOptions opt;
    opt.target = options.common.target;
    opt.precision = options.precision;
    fs::path dir;
    if (!options.dump_passes.empty() && options.dump_passes != "-") {
      dir = fs::path(options.dump_passes) / (std::to_string(i) + "-" + file_slug(cell.name));
      std::error_code ec;
      fs::create_directories(dir, ec);
      if (ec) {
        std::cerr << "cellscope: error: --dump-passes: cannot create " << dir.string() << ": "
                  << ec.message() << "\n";
        return false;
      }
    }
    if (!options.dump_passes.empty()) {
      opt.dump = [&](std::string_view pass, size_t index, const graphcore::OptimizedGraph& g) {
        if (!ok) return;
        auto layer = protocol::optimized_layer(g, cell.graph);
        if (dir.empty()) {
          std::cerr << protocol::to_json(layer, {.pretty = false});
          return;
        }
        char prefix[8];
        std::snprintf(prefix, sizeof prefix, "%02zu-", index);
        ok =
            emit((dir / (prefix + std::string(pass) + ".json")).string(), protocol::to_json(layer));
      };
    }
    const auto graph = graphcore::optimize(cell, opt);
    if (!ok) return false;
    auto* out = doc->mutable_cells(static_cast<int>(i));
    *out->mutable_optimized() = protocol::optimized_layer(graph, cell.graph);
    if (options.layer != "hardware") continue;
    graphcore::HardwareOptions hw_options;
    hw_options.target = options.common.target;
    hw_options.mode = options.mode;
    hw_options.optimizer = options.optimizer;
    hw_options.mixed_precision = options.precision == "mixed";
    const auto hw = graphcore::estimate_hardware(cell, graph, hw_options);
    protocol::add_hardware_layer(hw, graph, graphcore::hardware_target(hw_options.target), out);
    for (const auto& d : hw.diagnostics)
      *doc->add_diagnostics() = protocol::diagnostic(d, positions);
  }
  return true;
}

}  // namespace

int run_check(const CheckOptions& options) {
  graphcore::AnalysisOptions analysis;
  if (!common_analysis_options(options.common, &analysis)) return kExitUsage;
  analysis.include_nodes = false;
  // Files checked together import the same modules: parse each once.
  analysis.parse_cache = std::make_shared<graphcore::ParseCache>(4096);

  std::vector<std::string> missing;
  const auto files = collect_python_files(options.paths, &missing);
  if (!missing.empty()) {
    for (const auto& m : missing) usage_error("no such file or directory: " + m);
    return kExitUsage;
  }
  spdlog::info("checking {} file(s) for target {}", files.size(), analysis.target);

  CachingSourceProvider sources;
  protocol::PositionMapper positions(sources);
  std::vector<protocol::Diagnostic> diags;
  std::set<std::string> seen;  // a file imported by several checked files reports once
  for (const auto& d : options.common.config_diagnostics) {
    auto pd = protocol::diagnostic(d, positions);
    if (seen.insert(diagnostic_key(pd)).second) diags.push_back(std::move(pd));
  }
  for (const auto& file : files) {
    const auto result = analyze_guarded(file, analysis, sources);
    for (const auto& d : result.diagnostics) {
      auto pd = protocol::diagnostic(d, positions);
      if (seen.insert(diagnostic_key(pd)).second) diags.push_back(std::move(pd));
    }
  }
  std::stable_sort(diags.begin(), diags.end(), diagnostic_less);
  const Counts counts = count_diagnostics(diags);

  std::string out;
  if (options.format == "json") {
    protocol::CheckReport report;
    for (auto& d : diags) *report.add_diagnostics() = d;
    report.set_files(static_cast<uint32_t>(files.size()));
    report.set_errors(static_cast<uint32_t>(counts.errors));
    report.set_warnings(static_cast<uint32_t>(counts.warnings));
    report.set_target(analysis.target);
    report.set_mindspore_version(analysis.mindspore_version.str());
    report.set_tool_version(std::string(protocol::tool_version()));
    out = protocol::to_json(report);
  } else if (options.format == "sarif") {
    out = render_sarif(diags);
  } else {
    std::ostringstream text;
    for (const auto& d : diags)
      render_diagnostic_text(text, d, options.snippets ? &positions : nullptr);
    text << summary_line(counts, files.size()) << "\n";
    out = text.str();
  }
  if (!emit("", out)) return kExitUsage;
  return counts.errors > 0 ? kExitErrors : kExitOk;
}

bool graph_analysis_options(const GraphOptions& options, graphcore::AnalysisOptions* out) {
  auto& analysis = *out;
  if (!common_analysis_options(options.common, &analysis)) return false;
  std::error_code ec;
  if (!fs::exists(options.file, ec)) {
    usage_error("no such file: " + options.file);
    return false;
  }
  if (fs::is_directory(options.file, ec)) {
    usage_error(options.file +
                " is a directory (graph takes one model file; check takes directories)");
    return false;
  }
  if (options.layer != "semantic" && options.layer != "optimized" && options.layer != "hardware") {
    usage_error("unknown --layer '" + options.layer +
                "' (expected semantic, optimized or hardware)");
    return false;
  }
  const bool optimized = options.layer != "semantic";
  if (options.format == "html" && options.layer == "semantic") {
    usage_error(
        "--format html shows every layer: use it with --layer hardware (the default for html)");
    return false;
  }
  if (!optimized && !options.dump_passes.empty()) {
    usage_error("--dump-passes needs --layer optimized or hardware");
    return false;
  }
  if (optimized && options.format == "dot") {
    usage_error("--format dot draws the semantic layer only; use json or text with --layer " +
                options.layer);
    return false;
  }
  if (options.layer == "hardware") {
    const auto names = graphcore::hardware_target_names();
    if (std::find(names.begin(), names.end(), options.common.target) == names.end()) {
      std::string known;
      for (auto n : names) known += (known.empty() ? "" : ", ") + std::string(n);
      usage_error("--layer hardware has no model for target '" + options.common.target +
                  "' (targets: " + known + ")");
      return false;
    }
    try {
      graphcore::hardware_target(options.common.target);
    } catch (const graphcore::TargetError& e) {
      usage_error(std::string("invalid target file: ") + e.what());
      return false;
    }
  } else if (options.mode != "infer") {
    usage_error("--mode " + options.mode + " needs --layer hardware");
    return false;
  }
  analysis.cell = options.cell;
  analysis.entries = options.entries;
  for (const auto& spec : options.inputs) {
    std::string why;
    auto t = graphcore::parse_input_spec(spec, &why);
    if (!t) {
      usage_error("invalid --input '" + spec + "'" + (why.empty() ? "" : ": " + why) +
                  " (expected e.g. 1,3,224,224 or 8,128:int32)");
      return false;
    }
    analysis.inputs.push_back(std::move(*t));
  }
  return true;
}

GraphBuild graph_document_of(const graphcore::AnalysisResult& analysed, const GraphOptions& options,
                             const graphcore::AnalysisOptions& analysis,
                             graphcore::SourceProvider& sources) {
  GraphBuild out;
  const auto t0 = std::chrono::steady_clock::now();
  protocol::PositionMapper positions(sources);
  const graphcore::AnalysisResult* result = &analysed;
  graphcore::AnalysisResult with_config;
  if (!options.common.config_diagnostics.empty()) {
    with_config = analysed;
    with_config.diagnostics.insert(with_config.diagnostics.begin(),
                                   options.common.config_diagnostics.begin(),
                                   options.common.config_diagnostics.end());
    result = &with_config;
  }
  auto info = document_info(analysis);
  info.layer = options.layer;
  out.document = protocol::graph_document(*result, positions, info);
  if (options.layer != "semantic")
    out.dumps_ok = add_optimized_layers(*result, options, positions, &out.document);
  out.compiled = !result->cells.empty();
  for (const auto& cell : result->cells) out.compiled = out.compiled && cell.compiled;
  out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

GraphBuild build_graph_document(const GraphOptions& options,
                                const graphcore::AnalysisOptions& analysis,
                                graphcore::SourceProvider& disk) {
  const auto t0 = std::chrono::steady_clock::now();
  CachingSourceProvider sources(&disk);
  const auto result = analyze_guarded(options.file, analysis, sources);
  auto out = graph_document_of(result, options, analysis, sources);
  out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

int run_graph(const GraphOptions& options) {
  graphcore::AnalysisOptions analysis;
  if (!graph_analysis_options(options, &analysis)) return kExitUsage;
  // One cache for the analysis and the text renderer: each file is read from disk once.
  CachingSourceProvider sources;
  auto built = build_graph_document(options, analysis, sources);
  if (!built.dumps_ok) return kExitUsage;
  const auto& doc = built.document;
  std::vector<protocol::Diagnostic> diags(doc.diagnostics().begin(), doc.diagnostics().end());
  const Counts counts = count_diagnostics(diags);

  std::string out;
  if (options.format == "text") {
    protocol::PositionMapper positions(sources);
    out = render_graph_text(doc, &positions);
  } else {
    if (options.format == "html") {
      try {
        out = view::snapshot_html(doc, display_path(options.file));
      } catch (const std::exception& e) {
        usage_error(e.what());
        return kExitUsage;
      }
    } else {
      out = options.format == "dot" ? render_graph_dot(doc)
                                    : protocol::to_json(doc, {.pretty = !options.compact});
    }
    // The document carries the diagnostics; repeat them on stderr for the person at the terminal.
    if (!diags.empty()) {
      std::ostringstream text;
      for (const auto& d : diags) render_diagnostic_text(text, d, nullptr);
      std::cerr << text.str();
    }
  }
  if (!emit(options.output, out)) return kExitUsage;
  return counts.errors > 0 ? kExitErrors : kExitOk;
}

}  // namespace cellscope::server
