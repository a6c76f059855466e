// The target files of graphcore/targets/, embedded at build time (see graphcore/CMakeLists.txt).
#pragma once

#include <span>
#include <string_view>

namespace graphcore::hw {

struct EmbeddedTarget {
  std::string_view name;  // the file name without ".json"
  std::string_view json;
};

std::span<const EmbeddedTarget> embedded_targets();

}  // namespace graphcore::hw
