// `cellscope export FILE [--format mindir|onnx] -o OUT`: compile one root Cell, bind its
// parameters on the CPU runtime (initialised as MindSpore would from --seed, or loaded from
// --checkpoint), and write the model file atomically (docs/export.md). The export itself is
// export_model (model_export.h), which the language server's cellscope.export runs too. Refusals
// are located diagnostics on stderr (export-* codes, docs/diagnostics.md), exit code 1, and nothing
// is written. stdout stays empty: the summary line is a log.
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "files.h"
#include "graphcore/analysis.h"
#include "model_export.h"
#include "project_config.h"

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

void print_note(const graphcore::PlanCall& call, const std::string& message) {
  std::cerr << display_path(call.file) << ":" << call.range.start.line + 1 << ":"
            << call.range.start.column + 1 << ": note: " << message
            << " [export-call-unfollowed]\n";
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
  std::string why;
  const std::optional<CallExport> call_export = export_of_call(e, &why);
  if (!call_export) {
    print_note(e.call, why);
    export_error(e.unfollowed.empty() ? "nothing to export in that format: " + ask
                                      : "nothing to export without options: " + ask);
    return false;
  }
  const std::string& format = call_export->format;
  if (!options->format.empty() && options->format != format) {
    print_note(e.call, "the call writes " + e.file_format);
    export_error("--format " + options->format + " differs from the ms.export call: " + ask);
    return false;
  }
  options->format = format;
  options->output = call_export->output;
  analysis->cell = e.cell;
  analysis->entries.clear();
  analysis->inputs = e.inputs;
  std::cerr << "cellscope export: the options of the ms.export call at "
            << display_path(e.call.file) << ":" << e.call.range.start.line + 1 << ": " << e.cell
            << ", input " << types_string(e.inputs) << ", " << e.file_format << " to "
            << options->output << "\n";
  return true;
}

}  // namespace

int run_export(const ExportCommandOptions& given) {
  ExportCommandOptions options = given;
  ModelExportRequest request;
  graphcore::AnalysisOptions& analysis = request.analysis;
  if (!graph_analysis_options(options.model, &analysis)) return kExitUsage;
  if (options.output.empty()) {
    if (options.model.cell || !options.model.entries.empty() || !options.model.inputs.empty()) {
      export_error("-o/--output is required: the file to write (.mindir or .onnx)");
      return kExitUsage;
    }
    // The file's own ms.export call gives the options (recorded when the module was evaluated).
    graphcore::AnalysisOptions first_pass = analysis;
    first_pass.record_facts = true;
    first_pass.constant_values = true;
    graphcore::DiskSourceProvider disk;
    const graphcore::AnalysisResult first =
        graphcore::analyze_file(options.model.file, first_pass, disk);
    if (!options_from_export_call(first, &options, &analysis)) return kExitUsage;
    request.export_call = first.exports.front().call;
  }
  // mindspore_config.json's inputs: the Cell's when neither --input nor the call gives them.
  request.inputs_given = !analysis.inputs.empty();
  if (!request.inputs_given && options.project && options.model.entries.empty()) {
    analysis.inputs =
        options.project->inputs_for(options.model.cell.value_or(""), options.model.file);
  }
  // An entry with its inputs given is called on the module as an import would load it: the
  // file's `__main__` block (a demo, a test) is not part of what is exported. Without inputs the
  // file runs as a script, so that its calls of the Cell give them.
  analysis.as_script = analysis.entries.empty() || analysis.inputs.empty();
  request.project = options.project;
  request.output = fs::path(options.output);
  std::string why;
  std::optional<std::string> format = resolve_export_format(options.format, request.output, &why);
  if (!format) {
    export_error(why);
    return kExitUsage;
  }
  request.file = options.model.file;
  request.format = *format;
  request.checkpoint = options.checkpoint;
  request.seed = options.seed;

  graphcore::DiskSourceProvider disk;
  const ModelExportOutcome outcome = export_model(request, disk);
  if (!outcome.checkpoint_summary.empty()) std::cerr << outcome.checkpoint_summary << "\n";
  for (const auto& d : outcome.diagnostics) print_located(d, outcome.analysed_file);
  for (const auto& e : outcome.errors) export_error(e);
  switch (outcome.status) {
    case ModelExportOutcome::Status::kWritten: {
      std::string extra;
      for (const auto& d : outcome.data_files) extra += " + " + d;
      std::cerr << "wrote " << display_path(outcome.output) << extra << " (" << outcome.summary
                << ", " << outcome.bytes << " bytes)\n";
    }
      return kExitOk;
    case ModelExportOutcome::Status::kUsage:
      return kExitUsage;
    case ModelExportOutcome::Status::kRefused:
    case ModelExportOutcome::Status::kCancelled:
      break;
  }
  return kExitErrors;
}

}  // namespace cellscope::server
