// Line ends as CPython reads them: "\n", "\r\n" and a lone "\r" each end a line (LineIndex in
// source.h counts lines the same way, as the LSP specification asks).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace graphcore {

// Splits `text` into lines the way LineIndex does (terminators removed; a final line end is
// followed by one empty line).
std::vector<std::string_view> split_lines(std::string_view text);

// Replaces every lone '\r' (one not followed by '\n') with '\n', keeping offsets, lines and
// columns: CPython reads a lone CR as a line end, tree-sitter's Python grammar does not. Returns
// how many were replaced.
size_t normalize_lone_cr(std::string& text);

}  // namespace graphcore
