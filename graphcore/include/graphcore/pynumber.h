// Python's int(str, base) and float(str), with CPython's rules for the text: surrounding
// whitespace, one sign, single underscores between digits, base prefixes (0x/0o/0b) only where
// the base allows them, inf/infinity/nan in any case, no hex floats. One definition, used by the
// interpreter's int()/float() builtins and by the argparse model's `type=int` / `type=float`.
#pragma once

#include <cstdint>
#include <string_view>

namespace graphcore {

struct PyNumber {
  enum class Kind {
    Ok,       // value is the number
    Invalid,  // Python raises ValueError
    Unknown,  // Python accepts it but the analyser cannot say the value (an int past int64,
              // text with non-ASCII digits or spaces)
  };
  Kind kind = Kind::Unknown;
  int64_t i = 0;  // int results
  double f = 0;   // float results
};

// int(text, base): base 0 or 2..36 (other bases are a caller's TypeError/ValueError to report).
PyNumber parse_py_int(std::string_view text, int base = 10);
// float(text).
PyNumber parse_py_float(std::string_view text);

}  // namespace graphcore
