// The language features, as functions of one analysed snapshot of a document. No I/O, no
// threads: the scheduler (scheduler.h) decides when a snapshot is current, the protocol layer
// (protocol.h) calls these.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "graphcore/analysis.h"
#include "graphcore/outline.h"
#include "graphcore/version.h"
#include "lsp/convert.h"

namespace cellscope::lsp {

// One document analysed at one version, with everything the features need.
struct FileAnalysis {
  std::string uri;
  std::string path;
  int64_t version = 0;
  uint64_t seq = 0;  // increases with every analysis the server completes
  std::shared_ptr<const std::string> text;
  std::unique_ptr<PositionConverter> conv;  // over *text
  graphcore::AnalysisResult result;
  graphcore::FileOutline outline;
  std::map<std::string, int64_t> versions_used;  // open documents (by path) the analysis read
  double elapsed_ms = 0;                         // wall time of the analysis
  double cpu_ms = 0;                             // CPU time of the worker thread during it
};

struct ClientFeatures {
  bool hierarchical_symbols = false;
  bool markdown_hover = true;
  bool signature_label_offsets = false;
  bool related_information = true;
  bool snippets = false;
};

// What the features need besides the snapshot.
struct FeatureContext {
  const FileAnalysis& fa;
  graphcore::Version mindspore_version;
  PositionEncoding encoding = PositionEncoding::kUtf16;
  ClientFeatures client;
  // Converts positions of another file (a definition or related location there); nullptr when
  // the file cannot be read (positions then keep their byte columns).
  std::function<const PositionConverter*(const std::string& path)> converter_for;
};

// The LSP Diagnostic of a graphcore diagnostic located in the snapshot's file.
Json diagnostic_json(const FeatureContext& ctx, const graphcore::Diagnostic& d);
// Diagnostics of the snapshot located in its own file.
Json file_diagnostics(const FeatureContext& ctx);

Json hover(const FeatureContext& ctx, const Json& position);
Json inlay_hints(const FeatureContext& ctx, const Json& range);
Json code_lenses(const FeatureContext& ctx);
// The "Export now" lenses of the ms.export calls recorded in `fa`'s training plans (appended).
void export_lenses(const FileAnalysis& fa, Json& out);
Json document_symbols(const FeatureContext& ctx);
Json code_actions(const FeatureContext& ctx, const Json& params);
Json definition(const FeatureContext& ctx, const Json& position);
// Completion and signature help read the document's current `text` (typing does not wait for
// analysis); the snapshot supplies imports and types.
Json completion(const FeatureContext& ctx, const std::string& text, const Json& position);
Json signature_help(const FeatureContext& ctx, const std::string& text, const Json& position);

// The Visualize Graph command's answer until the view server exists: the graph document of the
// Cell `cell` (class or root name; empty: every analysed Cell) as JSON.
Json graph_document_json(const FeatureContext& ctx, const std::string& cell,
                         const std::string& target);

// Formatting helpers shared with the server (and tested).
std::string format_count(int64_t n);  // 61706 -> "61,706"
std::string format_flops(double f);   // 4.2e8 -> "420.0 MFLOPs"

}  // namespace cellscope::lsp
