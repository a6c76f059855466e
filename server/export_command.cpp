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

}  // namespace

int run_export(const ExportCommandOptions& options) {
  ModelExportRequest request;
  if (!graph_analysis_options(options.model, &request.analysis)) return kExitUsage;
  if (options.output.empty()) {
    export_error("-o/--output is required: the file to write (.mindir or .onnx)");
    return kExitUsage;
  }
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
    case ModelExportOutcome::Status::kWritten:
      std::cerr << "wrote " << display_path(options.output) << " (" << outcome.summary << ", "
                << outcome.bytes << " bytes)\n";
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
