// Python's int(str, base) / float(str) text rules (graphcore/pynumber.h), the one definition the
// interpreter's int()/float() and the argparse model share. Expected values: CPython 3.11.
#include "graphcore/pynumber.h"

#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>

namespace graphcore {
namespace {

using Kind = PyNumber::Kind;

void expect_int(const std::string& text, int base, int64_t want) {
  const PyNumber r = parse_py_int(text, base);
  ASSERT_EQ(r.kind, Kind::Ok) << "int(" << text << ", " << base << ")";
  EXPECT_EQ(r.i, want) << "int(" << text << ", " << base << ")";
}

void expect_float(const std::string& text, double want) {
  const PyNumber r = parse_py_float(text);
  ASSERT_EQ(r.kind, Kind::Ok) << "float(" << text << ")";
  EXPECT_EQ(r.f, want) << "float(" << text << ")";
}

TEST(PyNumber, IntTextAsCPythonReadsIt) {
  expect_int("  12 ", 10, 12);
  expect_int("\t\n12\r\v\f", 10, 12);
  expect_int("1_000", 10, 1000);
  expect_int("+5", 10, 5);
  expect_int("-0", 10, 0);
  expect_int("0012", 10, 12);
  expect_int("0_0", 10, 0);
  expect_int("-9223372036854775808", 10, std::numeric_limits<int64_t>::min());
  expect_int("0x10", 16, 16);
  expect_int("0x10", 0, 16);
  expect_int("0X_1f", 0, 31);
  expect_int("0b1", 16, 177);  // no 0b prefix in base 16: hex digits
  expect_int("0b_101", 2, 5);
  expect_int("0o17", 8, 15);
  expect_int("00", 0, 0);
  expect_int("FF", 16, 255);
  expect_int("z", 36, 35);
  for (const auto& [text, base] : std::initializer_list<std::pair<const char*, int>>{
           {"0x10", 10}, {"1__0", 10},   {"_1", 10},  {"1_", 10},  {"+-1", 10},
           {" ", 10},    {"", 10},       {"1 2", 10}, {"+ 5", 10}, {"0b1", 10},
           {"+_1", 10},  {"\03412", 10}, {"010", 0},  {"0x", 16},  {"12", 2},
           {"_0x1", 0},  {"0x__1", 16},  {"1.5", 10}, {"1", 1},    {"1", 37}}) {
    EXPECT_EQ(parse_py_int(text, base).kind, Kind::Invalid)
        << "int(" << text << ", " << base << ")";
  }
  // Python accepts these; the analyser does not say the value: never an error.
  EXPECT_EQ(parse_py_int("9223372036854775808").kind, Kind::Unknown);
  EXPECT_EQ(parse_py_int("\xd9\xa1\xd9\xa2").kind, Kind::Unknown);  // "١٢" is 12
  EXPECT_EQ(parse_py_int("\302\24012").kind, Kind::Unknown);        // NBSP 12
}

TEST(PyNumber, FloatTextAsCPythonReadsIt) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  expect_float("inf", kInf);
  expect_float("-iNfInItY", -kInf);
  expect_float("+INF", kInf);
  expect_float("1e5", 1e5);
  expect_float("1E5", 1e5);
  expect_float("1_0.5", 10.5);
  expect_float("1_0.5_1", 10.51);
  expect_float(" 1.5 ", 1.5);
  expect_float("1.", 1.0);
  expect_float("  .5", 0.5);
  expect_float("+.5e-2", 0.005);
  expect_float("1e5_0", 1e50);
  expect_float("1e0_5", 1e5);
  expect_float("0001.5", 1.5);
  expect_float("1e400", kInf);  // Python rounds past the range: no error
  expect_float("-1e400", -kInf);
  expect_float("1e-400", 0.0);
  EXPECT_TRUE(std::isnan(parse_py_float("-NaN").f));
  EXPECT_EQ(parse_py_float("-NaN").kind, Kind::Ok);
  for (const char* text :
       {"infin", "nan(1)", ".",   " ",    "",     "1e",  "1e+", "1e_3",  "1_e3", "1._5", "1_.5",
        "0x1p3", "1.5f",   "1,5", "_1.0", "1.0_", "--1", "1d5", "1e+_5", "0x10", "in f"}) {
    EXPECT_EQ(parse_py_float(text).kind, Kind::Invalid) << "float(" << text << ")";
  }
  EXPECT_EQ(parse_py_float("\xd9\xa1\xd9\xa2.5").kind, Kind::Unknown);
}

}  // namespace
}  // namespace graphcore
