// export_model: the one export of a root Cell shared by `cellscope export` and the language
// server (model_export.h, docs/export.md).
#include "model_export.h"

#include <span>
#include <stdexcept>

#include "files.h"
#include "graphcore/export_onnx.h"
#include "graphcore/mindir.h"
#include "graphcore/runtime.h"
#include "protocol/document.h"

namespace cellscope::server {

namespace fs = std::filesystem;

namespace {

// A format's serialized file, or why the graph cannot be written in it.
struct ExportedFile {
  std::string bytes;
  std::vector<graphcore::Diagnostic> errors;
  std::string summary;  // "MindIR, 42 nodes, 9 primitives, 10 weights"
  uint64_t nodes = 0;
};

graphcore::OnnxExportOptions onnx_options() {
  graphcore::OnnxExportOptions o;
  o.producer_version = std::string(protocol::tool_version());
  return o;
}

// The refusals known before any weight is initialised or loaded (ONNX checks its operators,
// dims and dtypes without weights; MindIR's come with the export itself).
std::vector<graphcore::Diagnostic> precheck(const std::string& format,
                                            const graphcore::CellReport& report) {
  if (format == "onnx") return graphcore::check_onnx_export(report, onnx_options());
  return {};
}

// The one place that knows the formats: the format's name -> its writer.
ExportedFile export_as(const std::string& format, const graphcore::CellReport& report,
                       std::span<const graphcore::runtime::ParamState> params) {
  ExportedFile out;
  if (format == "mindir") {
    graphcore::MindirExport m = graphcore::export_mindir(report, params);
    out.bytes = std::move(m.bytes);
    out.errors = std::move(m.errors);
    out.nodes = m.nodes;
    out.summary = "MindIR, " + std::to_string(m.nodes) + " nodes, " + std::to_string(m.primitives) +
                  " primitives, " + std::to_string(m.weights) + " weights";
  } else if (format == "onnx") {
    const graphcore::OnnxExportOptions eo = onnx_options();
    graphcore::OnnxExportResult r = graphcore::build_onnx(report, params, eo);
    out.bytes = std::move(r.bytes);
    out.errors = std::move(r.diagnostics);
    out.nodes = r.nodes;
    out.summary = "ONNX opset " + std::to_string(eo.opset) + ", " + std::to_string(r.nodes) +
                  " nodes, " + std::to_string(r.initializers) + " initializers";
  } else {
    throw std::logic_error("unknown export format " + format);
  }
  return out;
}

// An input whose dims are not all numbers: one located diagnostic per input (not at every node
// after it), the same for every format.
std::vector<graphcore::Diagnostic> dynamic_inputs(const graphcore::CellReport& report) {
  std::vector<graphcore::Diagnostic> out;
  for (const graphcore::Node& n : report.graph.nodes) {
    if (n.kind != graphcore::NodeKind::Input || n.outputs.empty()) continue;
    const graphcore::Shape& shape = n.outputs.front().shape;
    bool known = shape.ranked;
    for (const auto& d : shape.dims) known = known && d.is_known();
    if (known) continue;
    graphcore::Diagnostic diag;
    diag.file = n.file.empty() ? report.file : std::string(n.file);
    diag.range = n.file.empty() ? report.range : n.range;
    diag.code = "export-dynamic-shape";
    diag.message = "cannot export " + report.name + ": input '" + n.id + "' has shape " +
                   shape.str() + "; give static dims with --input (e.g. 1,3,224,224)";
    out.push_back(std::move(diag));
  }
  return out;
}

std::string cell_file_stem(const std::string& cell) {
  std::string stem = cell;
  if (stem.ends_with("()")) stem.resize(stem.size() - 2);
  for (char& c : stem) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '-' || c == '.';
    if (!plain) c = '_';
  }
  return stem.empty() ? "model" : stem;
}

}  // namespace

std::string export_format_of_name(const fs::path& path) {
  const std::string ext = path.extension().string();
  if (ext == ".mindir") return "mindir";
  if (ext == ".onnx") return "onnx";
  return "";
}

std::optional<std::string> resolve_export_format(const std::string& format, const fs::path& output,
                                                 std::string* why) {
  const std::string named = export_format_of_name(output);
  if (!format.empty() && format != "mindir" && format != "onnx") {
    *why = "unknown format '" + format + "' (expected mindir or onnx)";
    return std::nullopt;
  }
  if (format.empty()) {
    if (named.empty()) {
      *why =
          "give --format mindir|onnx, or an -o name ending in .mindir or .onnx: " + output.string();
      return std::nullopt;
    }
    return named;
  }
  if (format == "mindir" && named != "mindir") {
    *why = "--format mindir writes .mindir files (mindspore.load accepts no other name): " +
           output.string();
    return std::nullopt;
  }
  if (!named.empty() && named != format) {
    *why = "--format " + format + " does not write ." + named + " files: " + output.string();
    return std::nullopt;
  }
  return format;
}

fs::path default_export_path(const fs::path& model_file, const std::string& cell,
                             const std::string& format) {
  return model_file.parent_path() / (cell_file_stem(cell) + "." + format);
}

ModelExportOutcome export_model(const ModelExportRequest& request,
                                graphcore::SourceProvider& sources) {
  ModelExportOutcome out;
  out.format = request.format;
  out.analysed_file = request.file.string();
  out.output = request.output.string();
  auto stage = [&](std::string_view what, int percent) {
    if (request.progress) request.progress(what, percent);
  };
  auto cancelled = [&] {
    if (request.cancel && request.cancel->load()) {
      out.status = ModelExportOutcome::Status::kCancelled;
      out.errors.emplace_back("export cancelled: nothing written");
      return true;
    }
    return false;
  };
  std::error_code ec;
  const fs::path dir =
      request.output.has_parent_path() ? request.output.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) {
    out.errors.push_back("cannot write " + request.output.string() + ": no such directory " +
                         dir.string());
    return out;
  }
  if (fs::is_directory(request.output, ec)) {
    out.errors.push_back("cannot write " + request.output.string() + ": it is a directory");
    return out;
  }
  if (!request.checkpoint.empty() && !fs::is_regular_file(request.checkpoint, ec)) {
    out.status = ModelExportOutcome::Status::kUsage;
    out.errors.push_back("no such checkpoint: " + request.checkpoint);
    return out;
  }

  stage("compiling", 5);
  graphcore::AnalysisOptions analysis = request.analysis;
  analysis.record_facts = true;     // initializers at constructor sites, as the runtime binds them
  analysis.constant_values = true;  // constants computed in __init__ are written with values
  analysis.cancel = request.cancel;
  graphcore::AnalysisResult result = graphcore::analyze_file(request.file, analysis, sources);
  if (cancelled()) return out;
  out.analysed_file = result.file;
  for (auto& d : result.diagnostics) {
    if (d.severity == graphcore::Severity::Error) out.diagnostics.push_back(std::move(d));
  }
  if (result.cells.empty()) {
    out.errors.push_back("no Cell to export in " + display_path(request.file.string()) +
                         " (name one with --cell or --entry)");
    return out;
  }
  if (result.cells.size() > 1) {
    std::string names;
    for (const auto& c : result.cells) names += (names.empty() ? "" : ", ") + c.name;
    out.status = ModelExportOutcome::Status::kUsage;
    out.errors.push_back(display_path(request.file.string()) + " has several root Cells (" + names +
                         "): choose one with --cell or --entry");
    return out;
  }
  const graphcore::CellReport& report = result.cells.front();
  out.cell = report.name;
  if (!report.compiled || !out.diagnostics.empty()) {
    out.errors.push_back("nothing written: " + report.name + " does not compile");
    return out;
  }
  auto refuse = [&](std::vector<graphcore::Diagnostic> problems) {
    out.diagnostics = std::move(problems);
    out.errors.push_back("nothing written to " + request.output.string() + ": " +
                         std::to_string(out.diagnostics.size()) + " problem" +
                         (out.diagnostics.size() == 1 ? "" : "s"));
    return out;
  };
  // Refusals first: nothing is initialised or loaded for a model that cannot be exported.
  stage("checking", 20);
  if (auto problems = dynamic_inputs(report); !problems.empty()) return refuse(problems);
  if (auto problems = precheck(request.format, report); !problems.empty()) return refuse(problems);
  if (cancelled()) return out;

  try {
    stage(request.checkpoint.empty() ? "initialising weights" : "loading checkpoint", 35);
    graphcore::runtime::ExecOptions exec;
    exec.seed = request.seed;
    exec.keep_values = false;
    graphcore::runtime::Executor executor(report, exec);
    if (!request.checkpoint.empty()) {
      graphcore::runtime::CheckpointLoad load = executor.load_checkpoint(request.checkpoint);
      out.checkpoint_summary = load.summary();
    }
    if (cancelled()) return out;
    stage("serializing", 60);
    ExportedFile file = export_as(request.format, report, executor.params());
    if (!file.errors.empty()) return refuse(file.errors);
    if (cancelled()) return out;
    stage("writing", 85);
    write_file_atomic(request.output, file.bytes);
    out.status = ModelExportOutcome::Status::kWritten;
    out.summary = std::move(file.summary);
    out.nodes = file.nodes;
    out.bytes = file.bytes.size();
  } catch (const std::exception& e) {
    out.status = ModelExportOutcome::Status::kRefused;
    out.errors.push_back("nothing written to " + request.output.string() + ": " + e.what());
  }
  return out;
}

}  // namespace cellscope::server
