#include "lsp/convert.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "graphcore/text.h"

namespace cellscope::lsp {

std::optional<std::string> uri_to_path(std::string_view uri) {
  constexpr std::string_view kScheme = "file://";
  if (uri.size() < kScheme.size()) return std::nullopt;
  if (!graphcore::text::iequals(uri.substr(0, kScheme.size()), kScheme)) return std::nullopt;
  std::string_view rest = uri.substr(kScheme.size());
  // file://host/path: only an empty host or "localhost" names this machine.
  size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  std::string_view host = rest.substr(0, slash);
  if (!host.empty() && host != "localhost") return std::nullopt;
  rest = rest.substr(slash);
  if (size_t q = rest.find_first_of("?#"); q != std::string_view::npos) rest = rest.substr(0, q);
  return graphcore::text::percent_decode(rest, graphcore::text::PercentDecoding::kStrict);
}

std::string path_to_uri(std::string_view path) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out = "file://";
  for (unsigned char c : path) {
    bool keep = std::isalnum(c) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~' ||
                c == '!' || c == '$' || c == '&' || c == '\'' || c == '(' || c == ')' || c == '*' ||
                c == '+' || c == ',' || c == ';' || c == '=' || c == '@';
    if (keep) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::pair<uint32_t, uint32_t> read_position(const Json& position) {
  auto line = position.at("line").get<int64_t>();
  auto character = position.at("character").get<int64_t>();
  for (auto [name, v] : {std::pair{"line", line}, std::pair{"character", character}}) {
    if (v < 0 || v > UINT32_MAX) {
      throw Json::type_error::create(
          302, std::string(name) + " must be between 0 and 4294967295, but is " + std::to_string(v),
          &position);
    }
  }
  return {static_cast<uint32_t>(line), static_cast<uint32_t>(character)};
}

Json PositionConverter::position(graphcore::Position p) const {
  uint32_t character = p.column;
  if (encoding_ == PositionEncoding::kUtf16 && p.line < index_.line_count()) {
    character = index_.utf16_column(p);
  }
  return Json{{"line", p.line}, {"character", character}};
}

Json PositionConverter::range(const graphcore::SourceRange& r) const {
  return Json{{"start", position(r.start)}, {"end", position(r.end)}};
}

graphcore::Position PositionConverter::from_lsp(const Json& position) const {
  auto [line, character] = read_position(position);
  if (index_.line_count() == 0) return {};
  if (line >= index_.line_count()) {
    auto last = static_cast<uint32_t>(index_.line_count() - 1);
    return {last, static_cast<uint32_t>(index_.line_text(last).size())};
  }
  if (encoding_ == PositionEncoding::kUtf16) {
    return {line, index_.byte_column_from_utf16(line, character)};
  }
  auto len = static_cast<uint32_t>(index_.line_text(line).size());
  uint32_t col = std::min(character, len);
  // Never inside a UTF-8 sequence.
  std::string_view text = index_.line_text(line);
  while (col > 0 && col < len && (static_cast<unsigned char>(text[col]) & 0xC0) == 0x80) --col;
  return {line, col};
}

size_t PositionConverter::offset(const Json& position) const {
  return index_.offset_of(from_lsp(position));
}

}  // namespace cellscope::lsp
