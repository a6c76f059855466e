// Conversions between LSP's vocabulary and graphcore's: file URIs and paths, and positions.
// graphcore positions count UTF-8 bytes within a line; LSP counts UTF-16 code units unless the
// client and server negotiated "utf-8" (LSP 3.17 positionEncoding).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "graphcore/source.h"

namespace cellscope::lsp {

using Json = nlohmann::json;

enum class PositionEncoding { kUtf16, kUtf8 };

// "file:///home/a/b%20c.py" -> "/home/a/b c.py"; nullopt for other schemes or malformed URIs.
std::optional<std::string> uri_to_path(std::string_view uri);
// The inverse, percent-encoding what RFC 3986 does not allow in a path (as VS Code does).
std::string path_to_uri(std::string_view path);

// Converts between LSP positions and graphcore positions over one text.
class PositionConverter {
 public:
  PositionConverter(std::string_view text, PositionEncoding encoding)
      : index_(text), encoding_(encoding) {}
  // graphcore -> LSP {"line", "character"}.
  [[nodiscard]] Json position(graphcore::Position p) const;
  [[nodiscard]] Json range(const graphcore::SourceRange& r) const;
  // LSP -> graphcore, clamped to the text (a line past the end maps to the end of the text).
  [[nodiscard]] graphcore::Position from_lsp(const Json& position) const;
  // LSP -> byte offset into the text.
  [[nodiscard]] size_t offset(const Json& position) const;
  [[nodiscard]] const graphcore::LineIndex& index() const { return index_; }

 private:
  graphcore::LineIndex index_;
  PositionEncoding encoding_;
};

// Reads {"line", "character"}; throws nlohmann::json::exception (InvalidParams) when malformed
// or negative.
std::pair<uint32_t, uint32_t> read_position(const Json& position);

}  // namespace cellscope::lsp
