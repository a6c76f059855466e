// The operator families of graphcore/include/graphcore/opdef.h, one function per file of this
// directory; ops/table.cpp merges them into the one table.
#pragma once

#include <span>

#include "graphcore/opdef.h"
#include "runtime/kernels.h"

namespace graphcore::ops {

namespace kernels = runtime::kernels;

std::span<const OpDef> elementwise_ops();  // elementwise.cpp
std::span<const OpDef> activation_ops();   // activation.cpp
std::span<const OpDef> nn_ops();           // nn.cpp
std::span<const OpDef> tensor_ops();       // tensor.cpp

}  // namespace graphcore::ops
