// An open text document as the client sees it: its text and version, edited by
// textDocument/didChange content changes (full or incremental).
#pragma once

#include <memory>
#include <string>

#include "lsp/convert.h"

namespace cellscope::lsp {

struct Document {
  std::string uri;
  std::string path;
  std::string language_id;
  int64_t version = 0;
  // Shared with analysis snapshots: each edit makes a new string, so a snapshot never changes.
  std::shared_ptr<const std::string> text;
};

// Applies one TextDocumentContentChangeEvent ({"text"} or {"range", "text"}) to `text`.
// Throws nlohmann::json::exception for a malformed change; a range beyond the text is clamped (as
// the specification asks for positions past the end of a line).
std::string apply_change(const std::string& text, const Json& change, PositionEncoding encoding);

}  // namespace cellscope::lsp
