// The CLI's subcommands. Each returns the process exit code: 0 no errors, 1 errors found,
// 2 usage errors (bad arguments, missing files).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graphcore/analysis.h"
#include "graphcore/diagnostic.h"
#include "graphcore/source.h"
#include "protocol/graph.pb.h"

namespace cellscope::server {

inline constexpr int kExitOk = 0;
inline constexpr int kExitErrors = 1;
inline constexpr int kExitUsage = 2;

struct CommonOptions {
  std::string target = "cpu";
  std::string ms_version;  // empty: the registry's default
  std::string root;        // workspace root for absolute imports; empty: automatic
  // Config files (YAML/JSON) whose loads are known constants: --config, then
  // mindspore_config.json's `configs`.
  std::vector<std::string> configs;
  // Problems in the project's mindspore_config.json (reported with the analysis' diagnostics).
  std::vector<graphcore::Diagnostic> config_diagnostics;
};

struct CheckOptions {
  CommonOptions common;
  std::vector<std::string> paths;
  std::string format = "text";  // text | json | sarif
  bool snippets = true;         // text: show the source line under each diagnostic
};

struct GraphOptions {
  CommonOptions common;
  std::string file;
  std::optional<std::string> cell;
  std::vector<std::string> entries;
  std::vector<std::string> inputs;  // "1,3,224,224", "8,128:int32"
  std::string format = "json";      // json | text | dot | html (the view, self-contained)
  std::string output;               // empty or "-": stdout
  bool compact = false;             // json: no whitespace
  // Which layers of the graph document to build: "semantic" (the graph from construct),
  // "optimized" (plus the optimization layer for the target) or "hardware" (plus the analytical
  // hardware model of the optimized graph on the target).
  std::string layer = "semantic";
  // --layer hardware: "infer" (one forward pass) or "train" (forward, backward, optimizer).
  std::string mode = "infer";
  std::string optimizer = "momentum";  // train: sgd | momentum | adam | lamb
  std::string precision = "mixed";     // mixed (fp16 activations on Ascend) | fp32
  // --layer optimized: write the optimization layer after import and after each pass, one JSON
  // file per pass under this directory ("-": to stderr). Empty: no dumps.
  std::string dump_passes;
};

int run_check(const CheckOptions& options);
int run_graph(const GraphOptions& options);

// The pieces of `graph` that `view` reuses.
// Validates `options` and fills `analysis`; false after printing a usage error.
bool graph_analysis_options(const GraphOptions& options, graphcore::AnalysisOptions* analysis);
struct GraphBuild {
  protocol::GraphDocument document;
  bool compiled = false;  // every Cell's construct compiled (false: no Cells, or a syntax error)
  bool dumps_ok = true;   // --dump-passes files were written
  double ms = 0;          // analysis + optimization + hardware model
};
// The document of an analysis already made, with the layers options.layer asks for (positions
// converted with the texts `sources` gives).
GraphBuild graph_document_of(const graphcore::AnalysisResult& result, const GraphOptions& options,
                             const graphcore::AnalysisOptions& analysis,
                             graphcore::SourceProvider& sources);
// Analyses options.file, reading sources through `sources`, and builds the document with the
// layers options.layer asks for.
GraphBuild build_graph_document(const GraphOptions& options,
                                const graphcore::AnalysisOptions& analysis,
                                graphcore::SourceProvider& sources);

}  // namespace cellscope::server
