// Overflow-checked integer arithmetic for sizes and counts: element counts of shapes, byte sizes
// of tensors, parameter counts. Every such computation on sizes that come from user input (shapes
// in model code, on the command line, in a .npy header) goes through these: an overflow is
// nullopt, never a wrapped number (or signed-overflow undefined behaviour).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace graphcore {

template <std::integral T>
[[nodiscard]] constexpr std::optional<T> checked_add(T a, T b) {
  T r{};
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

template <std::integral T>
[[nodiscard]] constexpr std::optional<T> checked_sub(T a, T b) {
  T r{};
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}

template <std::integral T>
[[nodiscard]] constexpr std::optional<T> checked_mul(T a, T b) {
  T r{};
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// A double truncated toward zero as int64 (C++'s cast, Python's int()); nullopt when it is not
// finite or out of int64's range (the cast would be undefined behaviour).
[[nodiscard]] constexpr std::optional<int64_t> checked_to_int64(double x) {
  // -2^63 is exact as a double; 2^63 is the first value past the range.
  constexpr double kLow = -9223372036854775808.0;
  constexpr double kHigh = 9223372036854775808.0;
  if (!(x >= kLow && x < kHigh)) return std::nullopt;  // NaN fails both
  return static_cast<int64_t>(x);
}

// The number of elements of a shape with these (non-negative) dims; nullopt when a dim is
// negative or the product does not fit in int64.
[[nodiscard]] constexpr std::optional<int64_t> checked_numel(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    auto p = checked_mul(n, d);
    if (!p) return std::nullopt;
    n = *p;
  }
  return n;
}

// Bytes of `count` elements of `element_size` bytes each; nullopt when `count` is negative or the
// product does not fit in size_t.
[[nodiscard]] constexpr std::optional<size_t> checked_bytes(int64_t count, size_t element_size) {
  if (count < 0) return std::nullopt;
  return checked_mul(static_cast<size_t>(count), element_size);
}

}  // namespace graphcore
