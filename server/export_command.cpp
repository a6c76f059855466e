// `cellscope export FILE --format mindir -o OUT`: compile one root Cell, bind its parameters on
// the CPU runtime (initialised as MindSpore would, or loaded from --checkpoint), and write the
// model file atomically (docs/export.md). Refusals are located diagnostics on stderr, exit code 1,
// and nothing is written.
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "files.h"
#include "graphcore/analysis.h"
#include "graphcore/mindir.h"
#include "graphcore/runtime.h"

namespace cellscope::server {

namespace fs = std::filesystem;

namespace {

void export_error(const std::string& message) {
  std::cerr << "cellscope: error: " << message << "\n";
}

void print_located(const graphcore::Diagnostic& d, const std::string& fallback_file) {
  std::cerr << display_path(d.file.empty() ? fallback_file : d.file) << ":"
            << d.range.start.line + 1 << ":" << d.range.start.column + 1 << ": "
            << graphcore::severity_name(d.severity) << ": " << d.message << " [" << d.code << "]\n";
}

// A format's serialized file, or why the graph cannot be written in it.
struct ExportedFile {
  std::string bytes;
  std::vector<graphcore::Diagnostic> errors;
  std::string summary;  // "42 nodes, 9 primitives, 10 weights"
};

// The one place that knows the formats: --format's value -> its writer.
ExportedFile export_as(const std::string& format, const graphcore::CellReport& report,
                       std::span<const graphcore::runtime::ParamState> params) {
  ExportedFile out;
  if (format == "mindir") {
    graphcore::MindirExport m = graphcore::export_mindir(report, params);
    out.bytes = std::move(m.bytes);
    out.errors = std::move(m.errors);
    out.summary = std::to_string(m.nodes) + " nodes, " + std::to_string(m.primitives) +
                  " primitives, " + std::to_string(m.weights) + " weights";
  } else {
    throw std::logic_error("unknown export format " + format);
  }
  return out;
}

// The file name extension each format's loader requires (mindspore.load: ".mindir").
std::string_view format_extension(const std::string& format) {
  return format == "mindir" ? ".mindir" : "";
}

}  // namespace

int run_export(const ExportCommandOptions& options) {
  graphcore::AnalysisOptions analysis;
  if (!graph_analysis_options(options.model, &analysis)) return kExitUsage;
  analysis.constant_values = true;  // constants computed in __init__ are written with values
  if (options.output.empty()) {
    export_error("-o/--output is required: the file to write");
    return kExitUsage;
  }
  const fs::path out_path(options.output);
  const std::string_view ext = format_extension(options.format);
  if (!ext.empty() && out_path.extension() != ext) {
    export_error("--format " + options.format + " writes " + std::string(ext) + " files (" +
                 (options.format == "mindir" ? "mindspore.load accepts no other name" : "") +
                 "): " + options.output);
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
  for (const auto& in : report.inputs) {
    for (const auto& d : in.type.shape.dims) {
      if (d.is_known()) continue;
      graphcore::Diagnostic diag;
      diag.file = report.file;
      diag.range = report.range;
      diag.code = "export-dynamic-shape";
      diag.message = "cannot export " + report.name + ": input " + in.name + " has shape " +
                     in.type.shape.str() + "; give static dims with --input (e.g. 1,3,224,224)";
      print_located(diag, result.file);
      return kExitErrors;
    }
  }

  try {
    graphcore::runtime::ExecOptions exec;
    exec.seed = options.seed;
    exec.keep_values = false;
    graphcore::runtime::Executor executor(report, exec);
    if (!options.checkpoint.empty()) {
      graphcore::runtime::CheckpointLoad load = executor.load_checkpoint(options.checkpoint);
      std::cerr << load.summary() << "\n";
    }
    ExportedFile file = export_as(options.format, report, executor.params());
    if (!file.errors.empty()) {
      for (const auto& d : file.errors) print_located(d, result.file);
      export_error("nothing written: " + std::to_string(file.errors.size()) + " problem" +
                   (file.errors.size() == 1 ? "" : "s") + " above");
      return kExitErrors;
    }
    write_file_atomic(out_path, file.bytes);
    std::cout << "wrote " << display_path(options.output) << " (" << options.format << ", "
              << file.summary << ", " << file.bytes.size() << " bytes)\n";
  } catch (const graphcore::runtime::RuntimeError& e) {
    export_error(std::string("nothing written: ") + e.what());
    return kExitErrors;
  } catch (const std::system_error& e) {
    export_error(std::string("nothing written: ") + e.what());
    return kExitErrors;
  }
  return kExitOk;
}

}  // namespace cellscope::server
