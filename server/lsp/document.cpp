#include "lsp/document.h"

#include <algorithm>

namespace cellscope::lsp {

std::string apply_change(const std::string& text, const Json& change, PositionEncoding encoding) {
  const auto& new_text = change.at("text").get_ref<const std::string&>();
  auto range = change.find("range");
  if (range == change.end() || range->is_null()) return new_text;
  PositionConverter conv(text, encoding);
  size_t start = conv.offset(range->at("start"));
  size_t end = conv.offset(range->at("end"));
  if (end < start) std::swap(start, end);
  std::string out;
  out.reserve(text.size() - (end - start) + new_text.size());
  out.append(text, 0, start);
  out += new_text;
  out.append(text, end, std::string::npos);
  return out;
}

}  // namespace cellscope::lsp
