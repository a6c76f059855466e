// Overflow-checked integer arithmetic for sizes and counts: element counts of shapes, byte sizes
// of tensors, parameter counts. Every such computation on sizes that come from user input (shapes
// in model code, on the command line, in a .npy header) goes through these: an overflow is
// nullopt, never a wrapped number (or signed-overflow undefined behaviour).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
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

// `x` as the integer type T when it is a whole number within T's range; nullopt for NaN,
// infinities, fractions and numbers out of range (where the cast would be undefined behaviour).
// For counts and sizes read as JSON numbers.
template <std::integral T>
[[nodiscard]] constexpr std::optional<T> checked_whole(double x) {
  constexpr auto kLow = static_cast<double>(std::numeric_limits<T>::min());  // 0 or -2^(n-1)
  // The first number past T's maximum, 2^n or 2^(n-1): exact as a double.
  constexpr double kPastHigh = 2.0 * static_cast<double>(std::numeric_limits<T>::max() / 2 + 1);
  if (!(x >= kLow && x < kPastHigh)) return std::nullopt;  // NaN fails both
  const auto r = static_cast<T>(x);
  if (static_cast<double>(r) != x) return std::nullopt;
  return r;
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

// len(range(start, stop, step)) for step != 0 (0 for step 0); nullopt when it is 2^63 or more
// (Python's OverflowError). The difference of the bounds is taken in uint64, where it cannot wrap.
[[nodiscard]] constexpr std::optional<int64_t> checked_range_length(int64_t start, int64_t stop,
                                                                    int64_t step) {
  uint64_t span = 0;    // |stop - start|
  uint64_t stride = 0;  // |step|
  if (step > 0 && start < stop) {
    span = static_cast<uint64_t>(stop) - static_cast<uint64_t>(start);
    stride = static_cast<uint64_t>(step);
  } else if (step < 0 && start > stop) {
    span = static_cast<uint64_t>(start) - static_cast<uint64_t>(stop);
    stride = static_cast<uint64_t>(-(step + 1)) + 1;  // -step without overflow at INT64_MIN
  } else {
    return 0;
  }
  const uint64_t n = (span - 1) / stride + 1;
  if (n > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(n);
}

// Python's slice(start, stop, step).indices(n) (a part that is nullopt is None) and the number of
// items the slice selects from a sequence of length n >= 0; step != 0.
struct SliceIndices {
  int64_t start = 0;
  int64_t stop = 0;
  int64_t step = 1;
  int64_t length = 0;
};
[[nodiscard]] constexpr SliceIndices slice_indices(std::optional<int64_t> start,
                                                   std::optional<int64_t> stop, int64_t step,
                                                   int64_t n) {
  auto clamp = [&](std::optional<int64_t> part, int64_t none) {
    if (!part) return none;
    int64_t q = *part;
    if (q < 0) q += n;  // cannot overflow: n >= 0
    const int64_t low = step > 0 ? 0 : -1;
    const int64_t high = step > 0 ? n : n - 1;
    return q < low ? low : (q > high ? high : q);
  };
  SliceIndices s;
  s.step = step;
  s.start = clamp(start, step > 0 ? 0 : n - 1);
  s.stop = clamp(stop, step > 0 ? n : -1);
  // At most n items: always representable.
  s.length = checked_range_length(s.start, s.stop, step).value_or(n);
  return s;
}

}  // namespace graphcore
