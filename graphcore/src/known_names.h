// Public names of mindspore.nn and mindspore.ops in the registry's default MindSpore version.
#pragma once

#include <string_view>

namespace graphcore {

// True when `ns` ("nn" or "ops") has a public attribute `name` in MindSpore.
bool known_mindspore_name(std::string_view ns, std::string_view name);

}  // namespace graphcore
