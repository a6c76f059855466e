// export_model: the one export of a root Cell shared by `cellscope export` and the language
// server (model_export.h, docs/export.md).
#include "model_export.h"

#include <fstream>
#include <span>
#include <stdexcept>

#include "files.h"
#include "graphcore/export_onnx.h"
#include "graphcore/hardware.h"
#include "graphcore/mindir.h"
#include "graphcore/runtime.h"
#include "protocol/document.h"

namespace cellscope::server {

namespace fs = std::filesystem;

namespace {

// A format's serialized file (weights as views of the runtime's tensors), or why the graph
// cannot be written in it.
struct ExportedFile {
  graphcore::ModelFile file;
  // MindIR's split layout: the data files beside the `_graph.mindir` (relative locations).
  std::vector<graphcore::MindirExport::DataFile> data_files;
  bool split = false;
  std::string data_prefix;  // ONNX external data: the data files' name prefix ("net.onnx.data")
  std::vector<graphcore::Diagnostic> errors;
  std::string summary;  // "MindIR, 42 nodes, 9 primitives, 10 weights"
  uint64_t nodes = 0;
};

graphcore::OnnxExportOptions onnx_options() {
  graphcore::OnnxExportOptions o;
  o.stream_weights = true;
  o.producer_version = std::string(protocol::tool_version());
  return o;
}

// The refusals known before any weight is initialised or loaded (ONNX checks its operators,
// dims and dtypes without weights; MindIR's come with the export itself).
// The article's "custom op with no implementation for the target" first (both formats), at the
// op's line, with the hardware layer's reason; then the format's own refusals.
std::vector<graphcore::Diagnostic> precheck(const std::string& format,
                                            const graphcore::CellReport& report,
                                            const std::string& target) {
  std::vector<graphcore::Diagnostic> out;
  const graphcore::HardwareTarget& t = graphcore::hardware_target(target);
  for (const graphcore::Node& n : report.graph.nodes) {
    if (n.op != "Custom") continue;
    const graphcore::AttrValue* f = n.find_attr("func_type");
    const auto* func_type = f != nullptr ? std::get_if<std::string>(f) : nullptr;
    auto why = graphcore::custom_unsupported(func_type != nullptr ? *func_type : "hybrid", t);
    if (!why) continue;
    graphcore::Diagnostic d;
    d.file = n.file.empty() ? report.file : std::string(n.file);
    d.range = n.file.empty() ? report.range : n.range;
    d.code = "unsupported-on-target";
    d.message = "cannot export " + report.name + ": " + *why;
    out.push_back(std::move(d));
  }
  if (!out.empty()) return out;
  if (format == "onnx") return graphcore::check_onnx_export(report, onnx_options());
  return {};
}

fs::path folder_of(const fs::path& path) {
  return path.has_parent_path() ? path.parent_path() : fs::path(".");
}

// MindSpore's split layout for OUT = DIR/STEM.mindir: DIR/STEM_graph.mindir.
fs::path split_graph_path(const fs::path& out_path) {
  return folder_of(out_path) / (out_path.stem().string() + "_graph.mindir");
}

// "STEM_variables/data_N" for the first N >= index whose file does not exist yet: the data file
// of a previous export stays in place (its graph file still names it) until the new graph file
// has replaced the old one.
std::string unused_data_location(const fs::path& out_path, size_t index) {
  const std::string vars = out_path.stem().string() + "_variables";
  std::error_code ec;
  for (size_t n = index;; ++n) {
    std::string location = vars + "/data_" + std::to_string(n);
    if (!fs::exists(folder_of(out_path) / location, ec)) return location;
  }
}

// Writes the export; returns the path the user loads (the `_graph.mindir` of a split set).
fs::path write_export(const ExportedFile& file, const fs::path& out_path) {
  if (!file.split) {
    write_model_file_atomic(out_path, file.file);
    return out_path;
  }
  std::vector<ModelSetPart> data;
  for (const auto& d : file.data_files) data.push_back({d.location, &d.file});
  if (!file.data_prefix.empty()) {  // ONNX external data: beside the model file
    write_model_set_atomic(out_path, file.file, data, file.data_prefix);
    return out_path;
  }
  fs::path graph = split_graph_path(out_path);
  write_model_set_atomic(graph, file.file, data, "data_");
  return graph;
}

// The one place that knows the formats: --format's value -> its writer.
ExportedFile export_as(const std::string& format, const graphcore::CellReport& report,
                       std::span<const graphcore::runtime::ParamState> params,
                       const fs::path& out_path) {
  ExportedFile out;
  if (format == "mindir") {
    graphcore::MindirOptions mo;
    mo.file_stem = out_path.stem().string();
    mo.data_location = [&](size_t index) { return unused_data_location(out_path, index); };
    graphcore::MindirExport m = graphcore::export_mindir(report, params, mo);
    out.file = std::move(m.file);
    out.data_files = std::move(m.data_files);
    out.split = m.split;
    out.errors = std::move(m.errors);
    out.nodes = m.nodes;
    out.summary = "MindIR, " + std::to_string(m.nodes) + " nodes, " + std::to_string(m.primitives) +
                  " primitives, " + std::to_string(m.weights) + " weights";
  } else if (format == "onnx") {
    graphcore::OnnxExportOptions eo = onnx_options();
    // Above 2 GiB: ONNX external data in "NAME.data" (or "NAME.data.N" while a previous set
    // still names that one).
    const std::string prefix = out_path.filename().string() + ".data";
    eo.external_location = prefix;
    std::error_code ec;
    for (int n = 1; fs::exists(folder_of(out_path) / eo.external_location, ec); ++n) {
      eo.external_location = prefix + "." + std::to_string(n);
    }
    graphcore::OnnxExportResult r = graphcore::build_onnx(report, params, eo);
    if (!r.data_location.empty()) {
      out.data_files.push_back({r.data_location, std::move(r.data_file)});
      out.split = true;
      out.data_prefix = prefix;
    }
    out.file = std::move(r.file);
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

bool same_types(const std::vector<graphcore::TensorType>& a,
                const std::vector<graphcore::TensorType>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].dtype != b[i].dtype || a[i].shape.str() != b[i].shape.str()) return false;
  }
  return true;
}

// Where mindspore_config.json says `"inputs"` (its first line otherwise).
graphcore::SourceRange inputs_key_range(const std::string& config_file) {
  graphcore::SourceRange r;
  std::ifstream in(config_file);
  std::string line;
  for (uint32_t n = 0; std::getline(in, line); ++n) {
    if (auto col = line.find("\"inputs\""); col != std::string::npos) {
      r.start = {n, static_cast<uint32_t>(col)};
      r.end = {n, static_cast<uint32_t>(col + 8)};
      return r;
    }
  }
  return r;
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

std::string types_string(const std::vector<graphcore::TensorType>& types) {
  std::string s;
  for (const auto& t : types) {
    s +=
        (s.empty() ? "" : ", ") + t.shape.str() + ":" + std::string(graphcore::dtype_name(t.dtype));
  }
  return s;
}

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
  if (request.inputs_given && request.project) {
    // The export input (--input, or the ms.export call's) against mindspore_config.json's for
    // this Cell: a model exported with another shape than the project declares is the article's
    // "wrong export shape" pitfall.
    const ProjectConfig& project = *request.project;
    const std::vector<graphcore::TensorType>& inputs = request.analysis.inputs;
    auto declared = project.inputs_for(report.class_name, request.file);
    if (declared.empty() && report.name != report.class_name) {
      declared = project.inputs_for(report.name, request.file);
    }
    if (!declared.empty() && !same_types(declared, inputs)) {
      graphcore::Diagnostic d;
      d.code = "export-input-mismatch";
      d.message = "cannot export " + report.name + ": the export input " + types_string(inputs) +
                  " differs from " + display_path(project.file) + "'s inputs for it " +
                  types_string(declared);
      if (request.export_call) {
        d.file = request.export_call->file;
        d.range = request.export_call->range;
      } else {
        d.file = project.file;
        d.range = inputs_key_range(project.file);
      }
      return refuse({d});
    }
  }
  if (auto problems = dynamic_inputs(report); !problems.empty()) return refuse(problems);
  if (auto problems = precheck(request.format, report, request.analysis.target); !problems.empty())
    return refuse(problems);
  if (cancelled()) return out;

  try {
    stage(request.checkpoint.empty() ? "initialising weights" : "loading checkpoint", 35);
    graphcore::runtime::ExecOptions exec;
    exec.seed = request.seed;
    exec.keep_values = false;
    // With a checkpoint, only the parameters it does not provide run their initializers (after
    // the load), not every weight before it is overwritten.
    exec.defer_init = !request.checkpoint.empty();
    graphcore::runtime::Executor executor(report, exec);
    if (!request.checkpoint.empty()) {
      graphcore::runtime::CheckpointLoad load = executor.load_checkpoint(request.checkpoint);
      out.checkpoint_summary = load.summary();
      executor.init_pending();
    }
    if (cancelled()) return out;
    stage("serializing", 60);
    ExportedFile file = export_as(request.format, report, executor.params(), request.output);
    if (!file.errors.empty()) return refuse(file.errors);
    if (cancelled()) return out;
    stage("writing", 85);
    const fs::path written = write_export(file, request.output);
    out.status = ModelExportOutcome::Status::kWritten;
    out.output = written.string();
    out.summary = std::move(file.summary);
    if (file.split && request.format == "mindir")
      out.summary += "; MindSpore's split layout: weights over 1 GiB";
    if (file.split && request.format == "onnx")
      out.summary += "; ONNX external data: the model exceeds 2 GiB";
    out.nodes = file.nodes;
    out.bytes = file.file.size();
    for (const auto& d : file.data_files) {
      out.bytes += d.file.size();
      out.data_files.push_back(d.location);
    }
  } catch (const std::exception& e) {
    out.status = ModelExportOutcome::Status::kRefused;
    out.errors.push_back("nothing written to " + request.output.string() + ": " + e.what());
  }
  return out;
}

std::optional<CallExport> export_of_call(const graphcore::ExportCall& call, std::string* why) {
  if (!call.unfollowed.empty()) {
    *why = "cannot take the export options from this call: " + call.unfollowed;
    return std::nullopt;
  }
  CallExport out;
  if (call.file_format == "MINDIR") {
    out.format = "mindir";
  } else if (call.file_format == "ONNX") {
    out.format = "onnx";
  } else {
    *why = "file_format='" + call.file_format + "': " +
           (call.file_format == "AIR" ? std::string("Cellscope writes MINDIR and ONNX, not AIR")
                                      : std::string("MindSpore accepts 'AIR', 'ONNX' or 'MINDIR'"));
    return std::nullopt;
  }
  const std::string ext = "." + out.format;
  out.output = call.file_name.ends_with(ext) ? call.file_name : call.file_name + ext;
  return out;
}

}  // namespace cellscope::server
