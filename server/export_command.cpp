// `cellscope export FILE --format onnx`: compiles the Cell, binds its weights (initialised from
// seed 0 as the runtime does, or loaded from --checkpoint) and writes an ONNX model with
// graphcore::export_onnx. Refusals are located diagnostics on stderr, exit 1, nothing written.
// (The MindIR format is another engineer's block of the same command.)
#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>

#include "commands.h"
#include "files.h"
#include "graphcore/export_onnx.h"
#include "graphcore/runtime.h"
#include "graphcore/source.h"
#include "protocol/document.h"

namespace cellscope::server {

namespace {

void export_error(const std::string& message) {
  std::cerr << "cellscope export: error: " << message << "\n";
}

void print(const graphcore::Diagnostic& d, const std::string& fallback_file) {
  std::cerr << display_path(d.file.empty() ? fallback_file : d.file) << ":"
            << d.range.start.line + 1 << ":" << d.range.start.column + 1 << ": "
            << graphcore::severity_name(d.severity) << ": " << d.message << " [" << d.code << "]\n";
}

}  // namespace

int run_export_onnx(const ExportOptions& options) {
  GraphOptions graph;
  graph.common = options.common;
  graph.file = options.file;
  graph.cell = options.cell;
  graph.entries = options.entries;
  graph.inputs = options.inputs;
  graphcore::AnalysisOptions analysis;
  if (!graph_analysis_options(graph, &analysis)) return kExitUsage;
  analysis.record_facts = true;     // initializers at constructor sites, as the runtime binds them
  analysis.constant_values = true;  // constants computed by numpy code become initializers
  if (options.output.empty()) {
    export_error("give the destination with -o FILE.onnx");
    return kExitUsage;
  }
  graphcore::DiskSourceProvider sources;
  const graphcore::AnalysisResult result = graphcore::analyze_file(options.file, analysis, sources);
  bool errors = false;
  for (const auto& d : result.diagnostics) {
    if (d.severity == graphcore::Severity::Error) {
      print(d, options.file);
      errors = true;
    }
  }
  if (result.cells.empty()) {
    export_error(display_path(options.file) + ": no Cell to export (give --cell or --entry)");
    return kExitErrors;
  }
  if (errors) {
    export_error("the model has errors: nothing exported");
    return kExitErrors;
  }
  const graphcore::CellReport& report = result.cells.front();
  // Refusals first: nothing is initialised or loaded for a model that cannot be exported.
  graphcore::OnnxExportOptions eo;
  eo.producer_version = std::string(protocol::tool_version());
  if (auto problems = graphcore::check_onnx_export(report, eo); !problems.empty()) {
    for (const auto& d : problems) print(d, options.file);
    export_error("nothing written to " + options.output);
    return kExitErrors;
  }
  namespace rt = graphcore::runtime;
  try {
    rt::Executor ex(report, rt::ExecOptions{});
    if (!options.checkpoint.empty()) {
      const rt::CheckpointLoad load = ex.load_checkpoint(options.checkpoint);
      std::cerr << load.summary() << "\n";
    }
    const graphcore::OnnxExportResult r =
        graphcore::export_onnx(report, ex.params(), options.output, eo);
    for (const auto& d : r.diagnostics) print(d, options.file);
    if (!r.ok()) {
      export_error("nothing written to " + options.output);
      return kExitErrors;
    }
    std::cerr << "wrote " << options.output << " (ONNX opset " << eo.opset << ", " << r.nodes
              << " nodes, " << r.initializers << " initializers, " << r.bytes.size() << " bytes)\n";
  } catch (const std::exception& e) {
    export_error(e.what());
    return kExitErrors;
  }
  return kExitOk;
}

}  // namespace cellscope::server
