// The one pipeline every front end runs to turn a model file into a graph document:
//
//   analyse (graphcore::analyze_file, guarded)  ->  optimize (each compiled Cell, for the
//   target)  ->  hardware model (the optimized graph on the target)  ->  document (the
//   protocol's GraphDocument, positions in UTF-16)
//
// `cellscope graph` and `cellscope view` (server/commands.cpp, view/view_command.cpp) and the
// language server's graph view (lsp/view_bridge.cpp) call it; none of them repeats a stage. The
// target and the MindSpore version are the analysis options' (graphcore::AnalysisOptions); what
// follows the analysis is PipelineOptions.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "graphcore/analysis.h"
#include "graphcore/diagnostic.h"
#include "protocol/graph.pb.h"

namespace cellscope::server {

struct PipelineOptions {
  // Which layers to build: "semantic" (the graph construct builds), "optimized" (plus the
  // optimization layer for the target) or "hardware" (plus the analytical hardware model).
  std::string layer = "semantic";
  // Hardware layer: "infer" (one forward pass) or "train" (forward, backward, optimizer).
  std::string mode = "infer";
  std::string optimizer = "momentum";  // train: sgd | momentum | adam | lamb
  std::string precision = "mixed";     // mixed (fp16 activations on Ascend) | fp32
  // Optimization layer after import and after each pass, one JSON file per pass under this
  // directory ("-": JSON lines on stderr). Empty: no dumps.
  std::string dump_passes;
  // Problems in the project's mindspore_config.json, put first among the document's diagnostics.
  std::vector<graphcore::Diagnostic> config_diagnostics;
};

struct GraphBuild {
  protocol::GraphDocument document;
  bool compiled = false;  // every Cell's construct compiled (false: no Cells, or a syntax error)
  bool dumps_ok = true;   // the dump_passes files were written
  double ms = 0;          // the stages run by the call
};

// Reads each file once (the analysis and the position mapper share it): through `base`, or the
// disk when null.
class CachingSourceProvider : public graphcore::SourceProvider {
 public:
  explicit CachingSourceProvider(graphcore::SourceProvider* base = nullptr) : base_(base) {}
  std::optional<std::string> read(const std::filesystem::path& path) override;

 private:
  graphcore::SourceProvider* base_;
  graphcore::DiskSourceProvider disk_;
  std::unordered_map<std::string, std::optional<std::string>> cache_;
};

// graphcore reports problems as diagnostics and is not expected to throw; if it does, the file
// still gets a located "internal-error" diagnostic instead of taking the caller down.
graphcore::AnalysisResult analyze_guarded(const std::filesystem::path& file,
                                          const graphcore::AnalysisOptions& analysis,
                                          graphcore::SourceProvider& sources);

// The document of an analysis already made (the language server's, of its open buffers), with
// the layers `pipeline` asks for; positions converted with the texts `sources` gives.
GraphBuild graph_document_of(const graphcore::AnalysisResult& result,
                             const graphcore::AnalysisOptions& analysis,
                             const PipelineOptions& pipeline, graphcore::SourceProvider& sources);

// Every stage: analyses `file` (reading through `sources`), then graph_document_of.
GraphBuild build_graph_document(const std::filesystem::path& file,
                                const graphcore::AnalysisOptions& analysis,
                                const PipelineOptions& pipeline,
                                graphcore::SourceProvider& sources);

}  // namespace cellscope::server
