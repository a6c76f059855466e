// The operator families of graphcore/include/graphcore/opdef.h, one function per file of this
// directory; ops/table.cpp merges them into the one table.
#pragma once

#include <span>

#include "autodiff/rules.h"
#include "export/onnx_builder.h"
#include "graphcore/opdef.h"
#include "runtime/kernels.h"

namespace graphcore::ops {

namespace kernels = runtime::kernels;
namespace ad = autodiff::rules;
namespace ox = exporter::rules;

std::span<const OpDef> elementwise_ops();  // elementwise.cpp
std::span<const OpDef> activation_ops();   // activation.cpp
std::span<const OpDef> nn_ops();           // nn.cpp
std::span<const OpDef> tensor_ops();       // tensor.cpp
std::span<const OpDef> grad_ops();         // grad.cpp: backward operators
std::span<const OpDef> loss_ops();         // loss.cpp

}  // namespace graphcore::ops
