// Source positions and text utilities shared by every graphcore layer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace graphcore {

// A 0-based position. `column` counts bytes of UTF-8 within the line; LineIndex converts to
// UTF-16 code units or code points for editors.
struct Position {
  uint32_t line = 0;
  uint32_t column = 0;
  friend bool operator==(const Position&, const Position&) = default;
  friend auto operator<=>(const Position&, const Position&) = default;
};

struct SourceRange {
  Position start;
  Position end;
  friend bool operator==(const SourceRange&, const SourceRange&) = default;
};

// Maps byte offsets and byte columns of one text to lines and to UTF-16/code-point columns.
class LineIndex {
 public:
  explicit LineIndex(std::string_view text);
  [[nodiscard]] Position position_of(size_t byte_offset) const;
  [[nodiscard]] size_t offset_of(Position pos) const;
  // Column of `pos` in UTF-16 code units (LSP's default encoding).
  [[nodiscard]] uint32_t utf16_column(Position pos) const;
  // Byte column for a UTF-16 column on `line` (clamped to the line's end).
  [[nodiscard]] uint32_t byte_column_from_utf16(uint32_t line, uint32_t utf16_col) const;
  [[nodiscard]] std::string_view line_text(uint32_t line) const;
  [[nodiscard]] size_t line_count() const { return line_starts_.size(); }

 private:
  std::string_view text_;
  std::vector<size_t> line_starts_;
};

// Replaces every byte that is not part of valid UTF-8 with '?', keeping offsets; returns the
// offsets that were replaced.
std::vector<size_t> sanitize_utf8(std::string& text);

}  // namespace graphcore
