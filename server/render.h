// Renderers for the CLI's output formats. They read protocol messages only (already converted to
// UTF-16 positions), so every format shows the same facts.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "protocol/document.h"
#include "protocol/graph.pb.h"

namespace cellscope::server {

// "(1, 3, 224, 224)", "(N, 64, 12, 12)", "(?)" for unranked; compact: "(1,3,224,224)".
std::string shape_string(const google::protobuf::RepeatedPtrField<google::protobuf::Value>& shape,
                         bool compact = false);
// "(1, 3, 224, 224) float32"; compact: "(1,3,224,224) f32".
std::string tensor_string(const protocol::Tensor& t, bool compact = false);

// "error", "warning", "info", "hint" (compiler vocabulary).
std::string_view compiler_severity(std::string_view protocol_severity);

// Compiler-style text: `file:line:col: error: message [code]` (1-based line and column), an
// optional source excerpt with a caret (when `positions` can supply the text), related notes and
// fix hints.
void render_diagnostic_text(std::ostream& out, const protocol::Diagnostic& diag,
                            protocol::PositionMapper* positions);

struct Counts {
  size_t errors = 0;
  size_t warnings = 0;
  size_t others = 0;
};
Counts count_diagnostics(const std::vector<protocol::Diagnostic>& diags);
// "2 errors, 1 warning in 3 files" / "no problems in 1 file".
std::string summary_line(const Counts& counts, size_t files);

// SARIF 2.1.0 log for the given diagnostics (one run). URIs are relative to the current
// directory (uriBaseId SRCROOT) when the files lie below it.
std::string render_sarif(const std::vector<protocol::Diagnostic>& diags);

// Human-readable per-Cell summary and node table, followed by the diagnostics.
std::string render_graph_text(const protocol::GraphDocument& doc,
                              protocol::PositionMapper* positions);

// Graphviz: one cluster per analysed Cell, nested clusters per scope, edges labelled with shapes.
std::string render_graph_dot(const protocol::GraphDocument& doc);

}  // namespace cellscope::server
