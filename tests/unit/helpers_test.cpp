// The shared helpers every layer uses instead of its own copy: slice and range lengths
// (graphcore/checked.h), ASCII text (graphcore/text.h), in-memory sources (analysis.h); and what
// the analyser computes with them from Python text, checked against CPython 3.11 and NumPy.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "expect_analysis.h"
#include "graphcore/analysis.h"
#include "graphcore/checked.h"
#include "graphcore/text.h"

namespace graphcore {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(Helpers, RangeLengthIsPythonsLenOfRange) {
  EXPECT_EQ(checked_range_length(0, 10, 3), 4);   // len(range(0, 10, 3))
  EXPECT_EQ(checked_range_length(10, 0, -3), 4);  // len(range(10, 0, -3))
  EXPECT_EQ(checked_range_length(0, 10, -1), 0);
  EXPECT_EQ(checked_range_length(5, 5, 1), 0);
  EXPECT_EQ(checked_range_length(0, 10, 0), 0);
  // The bounds' difference and the step at the ends of int64 (they overflowed before).
  EXPECT_EQ(checked_range_length(0, kMax, kMax), 1);
  EXPECT_EQ(checked_range_length(kMax, kMin, kMin), 2);  // len(range(2**63-1, -2**63, -2**63))
  EXPECT_EQ(checked_range_length(-1, kMax, 1), std::nullopt);    // 2**63: OverflowError
  EXPECT_EQ(checked_range_length(kMin, kMax, 2), std::nullopt);  // 2**63 again
  EXPECT_EQ(checked_range_length(kMin, kMax, 3), 6148914691236517205);
}

TEST(Helpers, WholeNumbersOfAType) {
  EXPECT_EQ(checked_whole<uint32_t>(4294967295.0), 4294967295U);
  EXPECT_EQ(checked_whole<uint32_t>(4294967296.0), std::nullopt);
  EXPECT_EQ(checked_whole<uint32_t>(-1.0), std::nullopt);
  EXPECT_EQ(checked_whole<uint32_t>(2.5), std::nullopt);
  EXPECT_EQ(checked_whole<uint64_t>(1.8446744073709552e19), std::nullopt);  // 2^64
  EXPECT_EQ(checked_whole<uint64_t>(6.5e87), std::nullopt);
  EXPECT_EQ(checked_whole<int64_t>(-9223372036854775808.0), kMin);
  EXPECT_EQ(checked_whole<int64_t>(9223372036854775808.0), std::nullopt);
  EXPECT_EQ(checked_whole<int32_t>(std::numeric_limits<double>::quiet_NaN()), std::nullopt);
  EXPECT_EQ(checked_whole<int32_t>(std::numeric_limits<double>::infinity()), std::nullopt);
}

TEST(Helpers, SliceIndicesAreSliceIndices) {
  // slice(start, stop, step).indices(6) and len(range(*...)) in CPython.
  auto s = slice_indices(1, std::nullopt, 2, 6);
  EXPECT_EQ(s.start, 1);
  EXPECT_EQ(s.stop, 6);
  EXPECT_EQ(s.length, 3);
  s = slice_indices(std::nullopt, std::nullopt, -1, 6);
  EXPECT_EQ(s.start, 5);
  EXPECT_EQ(s.stop, -1);
  EXPECT_EQ(s.length, 6);
  s = slice_indices(-100, 100, 1, 6);
  EXPECT_EQ(s.start, 0);
  EXPECT_EQ(s.stop, 6);
  EXPECT_EQ(s.length, 6);
  s = slice_indices(5, std::nullopt, kMax, 6);  // [5::2**63-1]: one item
  EXPECT_EQ(s.length, 1);
  s = slice_indices(std::nullopt, std::nullopt, kMin, 6);  // [::-2**63]: the last item
  EXPECT_EQ(s.start, 5);
  EXPECT_EQ(s.length, 1);
  s = slice_indices(kMin, kMax, 1, 6);
  EXPECT_EQ(s.length, 6);
  s = slice_indices(2, 2, 1, 0);
  EXPECT_EQ(s.length, 0);
}

TEST(Helpers, Text) {
  EXPECT_EQ(text::trim(" \tab c\t "), "ab c");
  EXPECT_EQ(text::trim(" \t "), "");
  EXPECT_EQ(text::trim("--x--", "-"), "x");
  EXPECT_EQ(text::lower("Content-LENGTH: ÄB"), "content-length: Äb");
  EXPECT_TRUE(text::iequals("Content-Length", "content-length"));
  EXPECT_FALSE(text::iequals("Content-Length", "content-lengt"));
  using text::PercentDecoding;
  EXPECT_EQ(text::percent_decode("/a%20b%2F%zz%4", PercentDecoding::kLenient), "/a b/%zz%4");
  EXPECT_EQ(text::percent_decode("a+b%2B", PercentDecoding::kLenient, true), "a b+");
  EXPECT_EQ(text::percent_decode("/a%20b", PercentDecoding::kStrict), "/a b");
  EXPECT_EQ(text::percent_decode("/a%2", PercentDecoding::kStrict), std::nullopt);
  EXPECT_EQ(text::percent_decode("/a%zz", PercentDecoding::kStrict), std::nullopt);
  EXPECT_EQ(text::percent_decode("/a%00b", PercentDecoding::kStrict), std::nullopt);
  EXPECT_EQ(text::percent_decode("/a%00b", PercentDecoding::kLenient), std::string("/a\0b", 4));
}

TEST(Helpers, MemorySourcesNormalisePaths) {
  MemorySourceProvider src("/w/a/../net.py", "x = 1\n");
  EXPECT_EQ(src.read("/w/net.py"), "x = 1\n");
  EXPECT_EQ(src.read("/w/./net.py"), "x = 1\n");
  EXPECT_EQ(src.read("/w/other.py"), std::nullopt);
}

// What the analyser computes with them: list, tuple and tensor slices with steps at the ends of
// int64 (signed overflow before: UBSan), and slices whose bounds it does not know.
TEST(Helpers, SlicesInModelCode) {
  const AnalysisResult r = analyse_net(R"(import os

import mindspore.nn as nn

xs = [1, 2, 3, 4, 5, 6]
A = len(xs[5::9223372036854775807])
B = len(tuple(xs)[::-9223372036854775807 - 1])
C = len(range(0, 9223372036854775807, 9223372036854775807))
D = xs[::-9223372036854775807 - 1][0]


class Net(nn.Cell):
    def __init__(self, k):
        super().__init__()
        self.fc = nn.Dense(A + B + C + D, 3)
        self.fc2 = nn.Dense(len(xs[:k]), 3)  # k is not known: neither is the length

    def construct(self, x):
        y = x[:, ::-9223372036854775807 - 1]
        y = y.broadcast_to((2, 9))
        return self.fc(y), self.fc2(y)


net = Net(int(os.environ["K"]))
)");
  // A + B + C + D = 1 + 1 + 1 + 6: Dense(9, 3) takes the (2, 9) input; Dense(len(xs[:k]), 3)
  // is not reported (it was Dense(6, 3), a false error, when xs[:k] read as xs[:]).
  expect_compiles_to(r, 2, "(2, 3)");
}

}  // namespace
}  // namespace graphcore
