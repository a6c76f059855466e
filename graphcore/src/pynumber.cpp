// Python's int(str, base) and float(str) text rules (see pynumber.h). Checked against CPython
// 3.11: int("  12 ") == 12, int("1_000") == 1000, int("0x10") raises, int("0x10", 0) == 16,
// int("010", 0) raises, float("1_0.5") == 10.5, float("1e400") == inf, float("0x1p3") raises.
#include "graphcore/pynumber.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <system_error>

#include "graphcore/text.h"

namespace graphcore {

namespace {

// Python strips these around a number (and Unicode spaces, which has_non_ascii leaves out).
constexpr std::string_view kSpaces = " \t\n\r\v\f";

bool has_non_ascii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return true;
  }
  return false;
}

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  return 99;
}

PyNumber invalid() { return PyNumber{PyNumber::Kind::Invalid, 0, 0}; }
PyNumber unknown() { return PyNumber{PyNumber::Kind::Unknown, 0, 0}; }

// Decimal digits with single underscores between them, from s[pos]; appends the digits to out.
// Returns false when there is no digit or an underscore is not between two digits.
bool digit_part(std::string_view s, size_t& pos, std::string& out) {
  const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  if (pos >= s.size() || !is_digit(s[pos])) return false;
  while (pos < s.size()) {
    if (is_digit(s[pos])) {
      out += s[pos++];
    } else if (s[pos] == '_' && pos + 1 < s.size() && is_digit(s[pos + 1])) {
      ++pos;
    } else {
      break;
    }
  }
  return true;
}

}  // namespace

PyNumber parse_py_int(std::string_view text, int base) {
  if (base != 0 && (base < 2 || base > 36)) return invalid();
  // Python also strips Unicode spaces and reads any Unicode decimal digit ("١٢" is 12): text
  // outside ASCII is a value the analyser does not read, never an error.
  if (has_non_ascii(text)) return unknown();
  std::string_view s = text::trim(text, kSpaces);
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  // A base prefix: required to pick the base under base 0, allowed when it names the base.
  bool prefixed = false;
  if (s.size() >= 2 && s[0] == '0') {
    const char p = text::lower(s[1]);
    const int named = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
    if (named != 0 && (base == 0 || base == named)) {
      base = named;
      prefixed = true;
      s.remove_prefix(2);
      if (!s.empty() && s.front() == '_') s.remove_prefix(1);  // 0x_1f
    }
  }
  const bool decimal_base0 = base == 0;
  if (base == 0) base = 10;
  if (s.empty()) return invalid();
  uint64_t magnitude = 0;
  bool too_big = false;
  bool nonzero = false;
  bool prev_digit = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '_') {
      // Only between two digits.
      if (!prev_digit || i + 1 >= s.size() || s[i + 1] == '_') return invalid();
      prev_digit = false;
      continue;
    }
    const int d = digit_value(c);
    if (d >= base) return invalid();
    prev_digit = true;
    if (d != 0) nonzero = true;
    if (!too_big) {
      const auto ub = static_cast<uint64_t>(base);
      const auto ud = static_cast<uint64_t>(d);
      if (magnitude > (std::numeric_limits<uint64_t>::max() - ud) / ub) {
        too_big = true;
      } else {
        magnitude = magnitude * ub + ud;
      }
    }
  }
  // Base 0 reads decimals as Python source does: no leading zero before a nonzero digit.
  if (decimal_base0 && !prefixed && s.front() == '0' && nonzero) return invalid();
  constexpr auto kMaxPos = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (too_big || magnitude > kMaxPos + (negative ? 1 : 0)) return unknown();  // a Python bigint
  PyNumber r{PyNumber::Kind::Ok, 0, 0};
  if (negative) {
    r.i = magnitude == kMaxPos + 1 ? std::numeric_limits<int64_t>::min()
                                   : -static_cast<int64_t>(magnitude);
  } else {
    r.i = static_cast<int64_t>(magnitude);
  }
  r.f = static_cast<double>(r.i);
  return r;
}

PyNumber parse_py_float(std::string_view text) {
  if (has_non_ascii(text)) return unknown();
  std::string_view s = text::trim(text, kSpaces);
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  const double sign = negative ? -1.0 : 1.0;
  if (text::iequals(s, "inf") || text::iequals(s, "infinity"))
    return PyNumber{PyNumber::Kind::Ok, 0, sign * std::numeric_limits<double>::infinity()};
  if (text::iequals(s, "nan"))
    return PyNumber{PyNumber::Kind::Ok, 0, std::numeric_limits<double>::quiet_NaN()};
  // digitpart ["." [digitpart]] | "." digitpart, then an optional exponent.
  std::string clean;
  size_t pos = 0;
  const bool whole = digit_part(s, pos, clean);
  bool fraction = false;
  if (pos < s.size() && s[pos] == '.') {
    clean += s[pos++];
    fraction = digit_part(s, pos, clean);
  }
  if (!whole && !fraction) return invalid();
  if (pos < s.size() && (s[pos] == 'e' || s[pos] == 'E')) {
    clean += s[pos++];
    if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) clean += s[pos++];
    if (!digit_part(s, pos, clean)) return invalid();
  }
  if (pos != s.size()) return invalid();
  double v = 0;
  const auto r = std::from_chars(clean.data(), clean.data() + clean.size(), v);
  if (r.ec == std::errc::result_out_of_range) {
    // Python rounds past the range to inf or to zero (float("1e400") is inf): strtod does too.
    v = std::strtod(clean.c_str(), nullptr);
  } else if (r.ec != std::errc() || r.ptr != clean.data() + clean.size()) {
    return invalid();
  }
  return PyNumber{PyNumber::Kind::Ok, 0, sign * v};
}

}  // namespace graphcore
