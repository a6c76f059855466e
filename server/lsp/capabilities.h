// Capability negotiation for `initialize`: what the client says it supports, the workspace
// folders it opens, and the capabilities the server answers with. Pure functions of the
// InitializeParams (no state, no I/O); thread-safe.
#pragma once

#include <string>
#include <vector>

#include "lsp/convert.h"
#include "lsp/features.h"

namespace cellscope::lsp {

// What the client supports, from InitializeParams.capabilities.
struct ClientCapabilities {
  PositionEncoding encoding = PositionEncoding::kUtf16;  // UTF-8 when the client offers it
  ClientFeatures features;                               // what the editor features adapt to
  bool pull_diagnostics = false;    // textDocument/diagnostic instead of publishDiagnostics
  bool diagnostic_refresh = false;  // workspace/diagnostic/refresh
  bool work_done_progress = false;  // server-initiated window/workDoneProgress
  bool show_document = false;       // window/showDocument
  bool configuration_pull = false;  // workspace/configuration
  bool watch_registration = false;  // dynamic registration of workspace/didChangeWatchedFiles
};

ClientCapabilities negotiate(const Json& initialize_params);

// The workspace folders (workspaceFolders, else rootUri, else rootPath), normalised, without a
// trailing '/'.
std::vector<std::string> workspace_roots(const Json& initialize_params);

// InitializeResult.capabilities.
Json server_capabilities(PositionEncoding encoding, bool pull_diagnostics);

}  // namespace cellscope::lsp
