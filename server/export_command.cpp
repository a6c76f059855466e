// `cellscope export FILE [--format mindir|onnx] -o OUT`: compile one root Cell, bind its
// parameters on the CPU runtime (initialised as MindSpore would from --seed, or loaded from
// --checkpoint), and write the model file atomically (docs/export.md). MindIR is written by
// graphcore::export_mindir, ONNX by graphcore::build_onnx; both files go through the CLI's one
// atomic writer (write_file_atomic). Refusals are located diagnostics on stderr (export-* codes,
// docs/diagnostics.md), exit code 1, and nothing is written. stdout stays empty: the summary line
// is a log.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "commands.h"
#include "files.h"
#include "graphcore/analysis.h"
#include "graphcore/export_onnx.h"
#include "graphcore/mindir.h"
#include "graphcore/runtime.h"
#include "project_config.h"
#include "protocol/document.h"

namespace cellscope::server {

namespace fs = std::filesystem;

namespace {

void export_error(const std::string& message) {
  std::cerr << "cellscope export: error: " << message << "\n";
}

void print_located(const graphcore::Diagnostic& d, const std::string& fallback_file) {
  std::cerr << display_path(d.file.empty() ? fallback_file : d.file) << ":"
            << d.range.start.line + 1 << ":" << d.range.start.column + 1 << ": "
            << graphcore::severity_name(d.severity) << ": " << d.message << " [" << d.code << "]\n";
}

// The format a file name's extension names; "" for any other name.
std::string format_of_name(const fs::path& path) {
  const std::string ext = path.extension().string();
  if (ext == ".mindir") return "mindir";
  if (ext == ".onnx") return "onnx";
  return "";
}

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
};

graphcore::OnnxExportOptions onnx_options() {
  graphcore::OnnxExportOptions o;
  o.stream_weights = true;
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

void print_note(const graphcore::PlanCall& call, const std::string& message) {
  std::cerr << display_path(call.file) << ":" << call.range.start.line + 1 << ":"
            << call.range.start.column + 1 << ": note: " << message
            << " [export-call-unfollowed]\n";
}

std::string types_string(const std::vector<graphcore::TensorType>& types) {
  std::string s;
  for (const auto& t : types) {
    s +=
        (s.empty() ? "" : ", ") + t.shape.str() + ":" + std::string(graphcore::dtype_name(t.dtype));
  }
  return s;
}

// No --cell/--entry/--input/-o: the options are the file's one ms.export(...) call, as the
// evaluator recorded it (graphcore::ExportCall): its network's root Cell, its inputs' types, its
// file_name with the extension MindSpore appends (".mindir" / ".onnx" unless the name ends with
// it), its file_format. False (after a note at the call, or a usage error) when there is no such
// call to follow: the caller exits 2 and asks for options.
bool options_from_export_call(const graphcore::AnalysisResult& result,
                              ExportCommandOptions* options, graphcore::AnalysisOptions* analysis) {
  const std::string ask = "give --cell or --entry, --input and -o";
  if (result.exports.empty()) {
    export_error("-o/--output is required: the file to write (.mindir or .onnx); " +
                 display_path(result.file) + " has no ms.export(...) call to take it from");
    return false;
  }
  if (result.exports.size() > 1) {
    for (const auto& e : result.exports) print_note(e.call, "an ms.export(...) call");
    export_error(display_path(result.file) + " calls ms.export " +
                 std::to_string(result.exports.size()) + " times: " + ask);
    return false;
  }
  const graphcore::ExportCall& e = result.exports.front();
  if (!e.unfollowed.empty()) {
    print_note(e.call, "cannot take the export options from this call: " + e.unfollowed);
    export_error("nothing to export without options: " + ask);
    return false;
  }
  std::string format;
  if (e.file_format == "MINDIR") {
    format = "mindir";
  } else if (e.file_format == "ONNX") {
    format = "onnx";
  } else {
    print_note(e.call, "file_format='" + e.file_format + "': " +
                           (e.file_format == "AIR"
                                ? std::string("Cellscope writes MINDIR and ONNX, not AIR")
                                : std::string("MindSpore accepts 'AIR', 'ONNX' or 'MINDIR'")));
    export_error("nothing to export in that format: " + ask);
    return false;
  }
  if (!options->format.empty() && options->format != format) {
    print_note(e.call, "the call writes " + e.file_format);
    export_error("--format " + options->format + " differs from the ms.export call: " + ask);
    return false;
  }
  options->format = format;
  const std::string ext = "." + format;
  options->output = e.file_name.ends_with(ext) ? e.file_name : e.file_name + ext;
  analysis->cell = e.cell;
  analysis->entries.clear();
  analysis->inputs = e.inputs;
  std::cerr << "cellscope export: the options of the ms.export call at "
            << display_path(e.call.file) << ":" << e.call.range.start.line + 1 << ": " << e.cell
            << ", input " << types_string(e.inputs) << ", " << e.file_format << " to "
            << options->output << "\n";
  return true;
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

}  // namespace

int run_export(const ExportCommandOptions& given) {
  ExportCommandOptions options = given;
  std::optional<graphcore::PlanCall> from_call;  // the ms.export call that gave the options
  graphcore::AnalysisOptions analysis;
  if (!graph_analysis_options(options.model, &analysis)) return kExitUsage;
  analysis.record_facts = true;     // initializers at constructor sites, as the runtime binds them
  analysis.constant_values = true;  // constants computed in __init__ are written with values
  if (options.output.empty()) {
    if (options.model.cell || !options.model.entries.empty() || !options.model.inputs.empty()) {
      export_error("-o/--output is required: the file to write (.mindir or .onnx)");
      return kExitUsage;
    }
    // The file's own ms.export call gives the options (recorded when the module was evaluated).
    graphcore::DiskSourceProvider disk;
    const graphcore::AnalysisResult first =
        graphcore::analyze_file(options.model.file, analysis, disk);
    if (!options_from_export_call(first, &options, &analysis)) return kExitUsage;
    from_call = first.exports.front().call;
  }
  // mindspore_config.json's inputs: the Cell's when neither --input nor the call gives them.
  const bool inputs_given = !analysis.inputs.empty();
  if (!inputs_given && options.project && options.model.entries.empty()) {
    analysis.inputs =
        options.project->inputs_for(options.model.cell.value_or(""), options.model.file);
  }
  const fs::path out_path(options.output);
  const std::string named = format_of_name(out_path);
  std::string format = options.format;
  if (format.empty()) {
    if (named.empty()) {
      export_error("give --format mindir|onnx, or an -o name ending in .mindir or .onnx: " +
                   options.output);
      return kExitUsage;
    }
    format = named;
  }
  if (format == "mindir" && named != "mindir") {
    export_error("--format mindir writes .mindir files (mindspore.load accepts no other name): " +
                 options.output);
    return kExitUsage;
  }
  if (!named.empty() && named != format) {
    export_error("--format " + format + " does not write ." + named + " files: " + options.output);
    return kExitUsage;
  }
  std::error_code ec;
  const fs::path dir = out_path.has_parent_path() ? out_path.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) {
    export_error("cannot write " + options.output + ": no such directory " + dir.string());
    return kExitErrors;
  }
  if (fs::is_directory(out_path, ec)) {
    export_error("cannot write " + options.output + ": it is a directory");
    return kExitErrors;
  }
  if (!options.checkpoint.empty() && !fs::is_regular_file(options.checkpoint, ec)) {
    export_error("no such checkpoint: " + options.checkpoint);
    return kExitUsage;
  }

  graphcore::DiskSourceProvider disk;
  graphcore::AnalysisResult result = graphcore::analyze_file(options.model.file, analysis, disk);
  bool failed = false;
  for (const auto& d : result.diagnostics) {
    if (d.severity != graphcore::Severity::Error) continue;
    print_located(d, result.file);
    failed = true;
  }
  if (result.cells.empty()) {
    export_error("no Cell to export in " + display_path(options.model.file) +
                 " (name one with --cell or --entry)");
    return kExitErrors;
  }
  if (result.cells.size() > 1) {
    std::string names;
    for (const auto& c : result.cells) names += (names.empty() ? "" : ", ") + c.name;
    export_error(display_path(options.model.file) + " has several root Cells (" + names +
                 "): choose one with --cell or --entry");
    return kExitUsage;
  }
  const graphcore::CellReport& report = result.cells.front();
  if (!report.compiled || failed) {
    export_error("nothing written: " + report.name + " does not compile (errors above)");
    return kExitErrors;
  }
  auto refuse = [&](const std::vector<graphcore::Diagnostic>& problems) {
    for (const auto& d : problems) print_located(d, result.file);
    export_error("nothing written to " + options.output + ": " + std::to_string(problems.size()) +
                 " problem" + (problems.size() == 1 ? "" : "s") + " above");
    return kExitErrors;
  };
  // Refusals first: nothing is initialised or loaded for a model that cannot be exported.
  if (inputs_given && options.project) {
    // The export input (--input, or the ms.export call's) against mindspore_config.json's for
    // this Cell: a model exported with another shape than the project declares is the article's
    // "wrong export shape" pitfall.
    auto declared = options.project->inputs_for(report.class_name, options.model.file);
    if (declared.empty() && report.name != report.class_name) {
      declared = options.project->inputs_for(report.name, options.model.file);
    }
    if (!declared.empty() && !same_types(declared, analysis.inputs)) {
      graphcore::Diagnostic d;
      d.code = "export-input-mismatch";
      d.message = "cannot export " + report.name + ": the export input " +
                  types_string(analysis.inputs) + " differs from " +
                  display_path(options.project->file) + "'s inputs for it " +
                  types_string(declared);
      if (from_call) {
        d.file = from_call->file;
        d.range = from_call->range;
      } else {
        d.file = options.project->file;
        d.range = inputs_key_range(options.project->file);
      }
      return refuse({d});
    }
  }
  if (auto problems = dynamic_inputs(report); !problems.empty()) return refuse(problems);
  if (auto problems = precheck(format, report); !problems.empty()) return refuse(problems);

  try {
    graphcore::runtime::ExecOptions exec;
    exec.seed = options.seed;
    exec.keep_values = false;
    graphcore::runtime::Executor executor(report, exec);
    if (!options.checkpoint.empty()) {
      graphcore::runtime::CheckpointLoad load = executor.load_checkpoint(options.checkpoint);
      std::cerr << load.summary() << "\n";
    }
    ExportedFile file = export_as(format, report, executor.params(), out_path);
    if (!file.errors.empty()) return refuse(file.errors);
    const fs::path written = write_export(file, out_path);
    uint64_t bytes = file.file.size();
    std::string extra;
    for (const auto& d : file.data_files) {
      bytes += d.file.size();
      extra += " + " + d.location;
    }
    if (file.split && format == "mindir")
      extra += " (MindSpore's split layout: weights over 1 GiB)";
    if (file.split && format == "onnx") extra += " (ONNX external data: the model exceeds 2 GiB)";
    std::cerr << "wrote " << display_path(written.string()) << extra << " (" << file.summary << ", "
              << bytes << " bytes)\n";
  } catch (const std::exception& e) {
    export_error("nothing written to " + options.output + ": " + e.what());
    return kExitErrors;
  }
  return kExitOk;
}

}  // namespace cellscope::server
