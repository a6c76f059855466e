// Small ASCII text helpers shared by graphcore, the protocol layer and the servers (header-only:
// the JSON-RPC framing uses them without linking graphcore's code). Locale-independent.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace graphcore::text {

// `s` without leading and trailing characters of `chars` (by default spaces and tabs, the
// optional white space of HTTP and of the LSP base protocol's headers).
[[nodiscard]] constexpr std::string_view trim(std::string_view s, std::string_view chars = " \t") {
  const size_t first = s.find_first_not_of(chars);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(chars) - first + 1);
}

[[nodiscard]] constexpr char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// ASCII lower case (other bytes, UTF-8 included, unchanged).
[[nodiscard]] inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}

// ASCII case-insensitive equality.
[[nodiscard]] constexpr bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

// The value of a hexadecimal digit, or -1.
[[nodiscard]] constexpr int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

enum class PercentDecoding {
  kLenient,  // a '%' not followed by two hex digits is kept as it is (HTTP request targets)
  kStrict,   // ... makes the text invalid, and so does an encoded NUL (file URIs)
};

// %XX sequences decoded (and '+' as a space when `plus_is_space`, for query strings); nullopt
// only in strict mode, for a malformed escape or "%00".
[[nodiscard]] inline std::optional<std::string> percent_decode(std::string_view s,
                                                               PercentDecoding mode,
                                                               bool plus_is_space = false) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '%') {
      const int hi = i + 2 < s.size() ? hex_digit(s[i + 1]) : -1;
      const int lo = i + 2 < s.size() ? hex_digit(s[i + 2]) : -1;
      if (hi >= 0 && lo >= 0) {
        const auto decoded = static_cast<char>(hi * 16 + lo);
        if (decoded == '\0' && mode == PercentDecoding::kStrict) return std::nullopt;
        out.push_back(decoded);
        i += 2;
        continue;
      }
      if (mode == PercentDecoding::kStrict) return std::nullopt;
    }
    out.push_back(c == '+' && plus_is_space ? ' ' : c);
  }
  return out;
}

}  // namespace graphcore::text
