#include "graphcore/source.h"

#include <algorithm>

#include "graphcore/diagnostic.h"
#include "graphcore/graph.h"
#include "graphcore/lines.h"
#include "graphcore/version.h"

namespace graphcore {

// "\n", "\r\n" and a lone "\r" all end a line, as in CPython's tokenizer and LSP.
LineIndex::LineIndex(std::string_view text) : text_(text) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n' || (c == '\r' && (i + 1 == text.size() || text[i + 1] != '\n'))) {
      line_starts_.push_back(i + 1);
    }
  }
}

Position LineIndex::position_of(size_t byte_offset) const {
  byte_offset = std::min(byte_offset, text_.size());
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), byte_offset);
  auto line = static_cast<uint32_t>(std::distance(line_starts_.begin(), it) - 1);
  return Position{line, static_cast<uint32_t>(byte_offset - line_starts_[line])};
}

size_t LineIndex::offset_of(Position pos) const {
  if (pos.line >= line_starts_.size()) return text_.size();
  return std::min(line_starts_[pos.line] + pos.column, text_.size());
}

std::string_view LineIndex::line_text(uint32_t line) const {
  if (line >= line_starts_.size()) return {};
  size_t start = line_starts_[line];
  if (line + 1 == line_starts_.size()) return text_.substr(start);
  size_t end = line_starts_[line + 1] - 1;  // the terminator's last byte
  if (end > start && text_[end] == '\n' && text_[end - 1] == '\r') --end;
  return text_.substr(start, end - start);
}

std::vector<std::string_view> split_lines(std::string_view text) {
  LineIndex index(text);
  std::vector<std::string_view> lines;
  lines.reserve(index.line_count());
  for (size_t i = 0; i < index.line_count(); ++i) {
    lines.push_back(index.line_text(static_cast<uint32_t>(i)));
  }
  return lines;
}

size_t normalize_lone_cr(std::string& text) {
  size_t n = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n')) {
      text[i] = '\n';
      ++n;
    }
  }
  return n;
}

namespace {
// Length of the UTF-8 sequence starting with lead byte `c` (1 for invalid leads).
size_t utf8_length(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c >> 5) == 0x6) return 2;
  if ((c >> 4) == 0xE) return 3;
  if ((c >> 3) == 0x1E) return 4;
  return 1;
}
}  // namespace

uint32_t LineIndex::utf16_column(Position pos) const {
  std::string_view line = line_text(pos.line);
  size_t limit = std::min<size_t>(pos.column, line.size());
  uint32_t units = 0;
  for (size_t i = 0; i < limit;) {
    size_t len = utf8_length(static_cast<unsigned char>(line[i]));
    units += len == 4 ? 2 : 1;
    i += len;
  }
  return units;
}

uint32_t LineIndex::byte_column_from_utf16(uint32_t line_no, uint32_t utf16_col) const {
  std::string_view line = line_text(line_no);
  uint32_t units = 0;
  size_t i = 0;
  while (i < line.size() && units < utf16_col) {
    size_t len = utf8_length(static_cast<unsigned char>(line[i]));
    units += len == 4 ? 2 : 1;
    i += len;
  }
  return static_cast<uint32_t>(std::min(i, line.size()));
}

std::vector<size_t> sanitize_utf8(std::string& text) {
  std::vector<size_t> replaced;
  size_t i = 0;
  while (i < text.size()) {
    auto c = static_cast<unsigned char>(text[i]);
    size_t len = utf8_length(c);
    bool ok = !(c >= 0x80 && len == 1) && i + len <= text.size();
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    }
    if (ok && len == 3) {
      auto c1 = static_cast<unsigned char>(text[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);  // overlong / surrogates
    }
    if (ok && len == 4) {
      auto c1 = static_cast<unsigned char>(text[i + 1]);
      ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90) && c <= 0xF4;
    }
    if (ok && len == 2) ok = c >= 0xC2;
    if (!ok) {
      replaced.push_back(i);
      text[i] = '?';
      ++i;
      continue;
    }
    if (c == 0) {  // NUL bytes confuse the tokenizer as much as invalid UTF-8 does
      replaced.push_back(i);
      text[i] = ' ';
    }
    i += len;
  }
  return replaced;
}

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::Error:
      return "error";
    case Severity::Warning:
      return "warning";
    case Severity::Information:
      return "information";
    case Severity::Hint:
      return "hint";
  }
  return "error";
}

std::string Version::str() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::optional<Version> Version::parse(std::string_view text) {
  Version v{0, 0, 0};
  int* parts[] = {&v.major, &v.minor, &v.patch};
  size_t idx = 0;
  int cur = -1;
  for (char ch : text) {
    if (ch >= '0' && ch <= '9') {
      cur = (cur < 0 ? 0 : cur) * 10 + (ch - '0');
      if (cur > 100000) return std::nullopt;
    } else if (ch == '.') {
      if (cur < 0 || idx >= 2) return std::nullopt;
      *parts[idx++] = cur;
      cur = -1;
    } else {
      return std::nullopt;
    }
  }
  if (cur < 0 || idx < 1) return std::nullopt;
  *parts[idx] = cur;
  return v;
}

const AttrValue* Node::find_attr(std::string_view name) const {
  for (const Attr& a : attrs) {
    if (a.name == name) return &a.value;
  }
  if (layer_attrs) {
    for (const Attr& a : *layer_attrs) {
      if (a.name == name) return &a.value;
    }
  }
  return nullptr;
}

std::string attr_to_string(const AttrValue& v) {
  struct Visitor {
    std::string operator()(std::monostate) const { return "None"; }
    std::string operator()(bool b) const { return b ? "True" : "False"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const {
      std::string s = std::to_string(d);
      while (s.size() > 1 && s.back() == '0' && s[s.size() - 2] != '.') s.pop_back();
      return s;
    }
    std::string operator()(const std::string& s) const { return "'" + s + "'"; }
    std::string operator()(const std::vector<int64_t>& xs) const {
      std::string out = "(";
      for (size_t i = 0; i < xs.size(); ++i) out += (i ? ", " : "") + std::to_string(xs[i]);
      return out + (xs.size() == 1 ? ",)" : ")");
    }
  };
  return std::visit(Visitor{}, v);
}

}  // namespace graphcore
