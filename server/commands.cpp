#include "commands.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>
#include <tuple>

#include "files.h"
#include "graphcore/analysis.h"
#include "graphcore/hardware.h"
#include "protocol/document.h"
#include "render.h"
#include "view/train_view.h"
#include "view/view_server.h"

namespace cellscope::server {

namespace fs = std::filesystem;

namespace {

void usage_error(const std::string& message) {
  std::cerr << "cellscope: error: " << message << "\n";
}

}  // namespace

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
  out->cell_inputs = common.cell_inputs;
  out->device_num = common.device_num;
  return true;
}

namespace {

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

}  // namespace

namespace {

// The diagnostics of `cellscope check` for options.paths (sorted, each once) into `diags` and the
// number of files checked into *files; kExitUsage after a usage error, else kExitOk.
int collect_check(const CheckOptions& options, graphcore::AnalysisOptions& analysis,
                  CachingSourceProvider& sources, protocol::PositionMapper& positions,
                  std::vector<protocol::Diagnostic>& diags, size_t* files_checked) {
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
  *files_checked = files.size();
  return kExitOk;
}

}  // namespace

int run_check(const CheckOptions& options) {
  graphcore::AnalysisOptions analysis;
  CachingSourceProvider sources;
  protocol::PositionMapper positions(sources);
  std::vector<protocol::Diagnostic> diags;
  size_t files = 0;
  if (int rc = collect_check(options, analysis, sources, positions, diags, &files); rc != kExitOk)
    return rc;
  const Counts counts = count_diagnostics(diags);

  std::string out;
  if (options.format == "json") {
    protocol::CheckReport report;
    for (auto& d : diags) *report.add_diagnostics() = d;
    report.set_files(static_cast<uint32_t>(files));
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
    text << summary_line(counts, files) << "\n";
    out = text.str();
  }
  if (!emit("", out)) return kExitUsage;
  return counts.errors > 0 ? kExitErrors : kExitOk;
}

int check_report_text(const CheckOptions& options, std::ostream& out, size_t* errors,
                      size_t* warnings) {
  graphcore::AnalysisOptions analysis;
  CachingSourceProvider sources;
  protocol::PositionMapper positions(sources);
  std::vector<protocol::Diagnostic> diags;
  size_t files = 0;
  if (int rc = collect_check(options, analysis, sources, positions, diags, &files); rc != kExitOk)
    return rc;
  const Counts counts = count_diagnostics(diags);
  for (const auto& d : diags)
    render_diagnostic_text(out, d, options.snippets ? &positions : nullptr);
  out << summary_line(counts, files) << "\n";
  *errors = counts.errors;
  *warnings = counts.warnings;
  return kExitOk;
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
  if (options.pipeline.layer != "semantic" && options.pipeline.layer != "optimized" &&
      options.pipeline.layer != "hardware") {
    usage_error("unknown --layer '" + options.pipeline.layer +
                "' (expected semantic, optimized or hardware)");
    return false;
  }
  const bool optimized = options.pipeline.layer != "semantic";
  if ((!options.snapshot_progress.empty() || !options.snapshot_drift.empty()) &&
      options.format != "html") {
    usage_error("--progress and --drift go into the view's snapshot: use them with --format html");
    return false;
  }
  if (options.format == "html" && options.pipeline.layer == "semantic") {
    usage_error(
        "--format html shows every layer: use it with --layer hardware (the default for html)");
    return false;
  }
  if (!optimized && !options.pipeline.dump_passes.empty()) {
    usage_error("--dump-passes needs --layer optimized or hardware");
    return false;
  }
  if (optimized && options.format == "dot") {
    usage_error("--format dot draws the semantic layer only; use json or text with --layer " +
                options.pipeline.layer);
    return false;
  }
  if (options.pipeline.layer == "hardware") {
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
  } else if (options.pipeline.mode != "infer") {
    usage_error("--mode " + options.pipeline.mode + " needs --layer hardware");
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

PipelineOptions pipeline_options(const GraphOptions& options) {
  PipelineOptions pipeline = options.pipeline;
  pipeline.config_diagnostics = options.common.config_diagnostics;
  return pipeline;
}

int run_graph(const GraphOptions& options) {
  graphcore::AnalysisOptions analysis;
  if (!graph_analysis_options(options, &analysis)) return kExitUsage;
  // One cache for the analysis and the text renderer: each file is read from disk once.
  CachingSourceProvider sources;
  auto built = build_graph_document(options.file, analysis, pipeline_options(options), sources);
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
        std::vector<protocol::ViewMessage> extra;
        std::string why;
        if (!view::train_messages(options.snapshot_progress, options.snapshot_drift, doc.file(),
                                  &extra, &why)) {
          usage_error(why);
          return kExitUsage;
        }
        out = view::snapshot_html(doc, display_path(options.file), extra);
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
