// The ONNX form of each operator (OpDef::onnx, graphcore/opdef.h): one function per operator
// family, writing the application through OnnxNodeBuilder (onnx_builder.h). Geometry (pads from
// MindSpore's pad modes, reduction axes) comes from the same helpers the CPU runtime's kernels
// use, so the exported model computes what the runtime computes. Opset: kOnnxOpset
// (graphcore/export_onnx.h).
#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "export/onnx_builder.h"
#include "graphcore/checked.h"
#include "runtime/internal.h"
#include "runtime/kernels.h"

namespace graphcore::exporter::rules {

namespace {

namespace rt = graphcore::runtime;

// The runtime's geometry helpers fail with RuntimeError; here that is a refusal.
template <class F>
auto runtime_fact(OnnxNodeBuilder& b, F f) {
  try {
    return f();
  } catch (const std::exception& e) {
    b.refuse(e.what());
  }
}

void require_nchw(const OnnxNodeBuilder& b) {
  for (const char* key : {"data_format", "format"}) {
    if (auto f = rt::attr_str(b.node(), key); f && *f != "NCHW" && *f != "NCW") {
      b.refuse(std::string(key) + "='" + *f + "' (ONNX convolutions and pools are channels-first)");
    }
  }
}

void binary(OnnxNodeBuilder& b, std::string_view op_type) {
  std::vector<std::string> ops = b.operands(2);
  b.emit(op_type, {ops[0], ops[1]}, {b.output()});
}

// ONNX Conv/Pool attributes of a Window: kernel_shape, strides, pads (all begins, then ends).
std::vector<int64_t> onnx_pads(const rt::kernels::Window& w) {
  std::vector<int64_t> pads = w.pad_before;
  pads.insert(pads.end(), w.pad_after.begin(), w.pad_after.end());
  return pads;
}

}  // namespace

void o_relu(OnnxNodeBuilder& b) { b.same("Relu"); }
void o_sigmoid(OnnxNodeBuilder& b) { b.same("Sigmoid"); }
void o_tanh(OnnxNodeBuilder& b) { b.same("Tanh"); }
void o_identity(OnnxNodeBuilder& b) { b.emit("Identity", {b.input(0)}, {b.output()}); }

// Gelu (opset 20): approximate "none" (erf) or "tanh", as nn.GELU(approximate=...).
void o_gelu(OnnxNodeBuilder& b) {
  const bool tanh = rt::kernels::gelu_approximate(b.node());
  b.emit("Gelu", {b.input(0)}, {b.output()},
         {{"approximate", std::string(tanh ? "tanh" : "none")}});
}

void o_add(OnnxNodeBuilder& b) { binary(b, "Add"); }
// FloorDiv on floats: Floor(Div(x, y)) (the runtime's floor(x / y)); ONNX's integer Div
// truncates toward zero, so integer floor division is refused.
void o_floordiv(OnnxNodeBuilder& b) {
  if (!is_floating(b.node().outputs.at(0).dtype)) {
    b.refuse("an integer floor division (ONNX's Div truncates toward zero)");
  }
  std::vector<std::string> ops = b.operands(2);
  const std::string q = b.temp("quotient");
  b.emit("Div", {ops[0], ops[1]}, {q});
  b.emit("Floor", {q}, {b.output()});
}
void o_sub(OnnxNodeBuilder& b) { binary(b, "Sub"); }
void o_mul(OnnxNodeBuilder& b) { binary(b, "Mul"); }
void o_div(OnnxNodeBuilder& b) { binary(b, "Div"); }

// BiasAdd adds a (C,) bias along axis 1 (the last axis of a 2-D input): the bias is reshaped to
// (C, 1, ..., 1) so that ONNX's numpy broadcasting lines it up with axis 1.
void o_bias_add(OnnxNodeBuilder& b) {
  const std::vector<int64_t> x = b.input_dims(0);
  require_nchw(b);
  std::string bias = b.input(1);
  if (x.size() > 2) {
    std::vector<int64_t> shape(x.size() - 1, 1);
    shape[0] = x[1];
    const std::string reshaped = b.temp("bias");
    b.emit("Reshape", {bias, b.const_i64("bias_shape", shape)}, {reshaped});
    bias = reshaped;
  }
  b.emit("Add", {b.input(0), bias}, {b.output()});
}

// Conv2D (and Conv1D): pads resolved from pad_mode as the runtime's kernel resolves them.
void o_conv(OnnxNodeBuilder& b) {
  require_nchw(b);
  const std::vector<int64_t> x = b.input_dims(0);
  std::string w = b.param("weight");
  std::vector<int64_t> wd;
  if (w.empty()) {  // ops.conv2d(x, weight[, bias])
    w = b.input(1);
    wd = b.input_dims(1);
  } else {
    wd = b.param_dims("weight");
  }
  if (x.size() == 3 && wd.size() == 4 && wd[2] == 1) {
    // nn.Conv1d keeps its weight as (out, in / group, 1, k) (MindSpore 2.10): ONNX's 1-D Conv
    // takes (out, in / group, k).
    wd = {wd[0], wd[1], wd[3]};
    const std::string reshaped = b.temp("weight");
    b.emit("Reshape", {w, b.const_i64("weight_shape", wd)}, {reshaped});
    w = reshaped;
  }
  if (x.size() < 3 || wd.size() != x.size()) {
    b.refuse("a convolution of a " + std::to_string(x.size()) + "-D input with a " +
             std::to_string(wd.size()) + "-D weight");
  }
  const std::vector<int64_t> spatial(x.begin() + 2, x.end());
  const std::vector<int64_t> kernel(wd.begin() + 2, wd.end());
  const rt::kernels::Window win =
      runtime_fact(b, [&] { return rt::kernels::make_window(b.node(), spatial, kernel, false); });
  const int64_t group =
      rt::attr_int(b.node(), "group").value_or(rt::attr_int(b.node(), "groups").value_or(1));
  std::vector<std::string> inputs{b.input(0), w};
  if (rt::attr_bool(b.node(), "has_bias").value_or(false)) {
    const std::string bias = b.param("bias");
    if (bias.empty()) b.refuse("has_bias=True but the node reads no bias");
    inputs.push_back(bias);
  } else if (b.param("weight").empty() && b.num_inputs() > 2) {
    inputs.push_back(b.input(2));
  }
  b.emit("Conv", inputs, {b.output()},
         {{"kernel_shape", kernel},
          {"strides", win.stride},
          {"dilations", win.dilation},
          {"pads", onnx_pads(win)},
          {"group", group}});
}

// MaxPool / AvgPool: MindSpore's pad modes become explicit pads; AvgPool divides by the whole
// window only for pad_mode='pad' with count_include_pad (the runtime's rule).
void o_pool(OnnxNodeBuilder& b) {
  require_nchw(b);
  const std::vector<int64_t> x = b.input_dims(0);
  if (x.size() < 3) b.refuse("a pool of a " + std::to_string(x.size()) + "-D input");
  const size_t nd = x.size() - 2;
  const std::vector<int64_t> spatial(x.begin() + 2, x.end());
  const auto kernel =
      rt::attr_ints(b.node(), "kernel_size", nd).value_or(std::vector<int64_t>(nd, 1));
  const bool ceil_mode = rt::attr_bool(b.node(), "ceil_mode").value_or(false);
  const rt::kernels::Window win = runtime_fact(
      b, [&] { return rt::kernels::make_window(b.node(), spatial, kernel, ceil_mode); });
  std::vector<OnnxAttr> attrs{{"kernel_shape", win.kernel},
                              {"strides", win.stride},
                              {"pads", onnx_pads(win)},
                              {"ceil_mode", int64_t{ceil_mode ? 1 : 0}}};
  if (b.node().op == "MaxPool") {
    // ONNX's Indices count over the whole N x C x H x W tensor, MindSpore's over each (H, W)
    // plane: not the same numbers.
    if (b.node().outputs.size() >= 2)
      b.refuse("return_indices (ONNX's MaxPool indices are not MindSpore's per-plane indices)");
    attrs.push_back({"dilations", win.dilation});
    b.emit("MaxPool", {b.input(0)}, {b.output()}, attrs);
    return;
  }
  if (rt::attr_int(b.node(), "divisor_override").value_or(0) > 0)
    b.refuse("divisor_override (ONNX's AveragePool divides by the window's count)");
  const std::string mode = rt::attr_str(b.node(), "pad_mode").value_or("valid");
  const bool include_pad = (mode == "pad" || mode == "PAD") &&
                           rt::attr_bool(b.node(), "count_include_pad").value_or(true);
  attrs.push_back({"count_include_pad", int64_t{include_pad ? 1 : 0}});
  b.emit("AveragePool", {b.input(0)}, {b.output()}, attrs);
}

// AdaptiveAvgPool2D: GlobalAveragePool for a 1x1 output; a plain AveragePool when the input
// divides evenly into the output; otherwise ONNX has no form for its uneven windows.
void o_adaptive_avgpool(OnnxNodeBuilder& b) {
  const std::vector<int64_t> x = b.input_dims(0);
  const std::vector<int64_t> y = b.output_dims();
  if (x.size() < 3 || y.size() != x.size()) b.refuse("an adaptive pool of a batched input only");
  bool global = true, even = true;
  std::vector<int64_t> kernel;
  for (size_t i = 2; i < x.size(); ++i) {
    global = global && y[i] == 1;
    even = even && y[i] > 0 && x[i] % y[i] == 0;
    kernel.push_back(y[i] > 0 ? x[i] / y[i] : 1);
  }
  if (global) {
    b.emit("GlobalAveragePool", {b.input(0)}, {b.output()});
  } else if (even) {
    b.emit("AveragePool", {b.input(0)}, {b.output()},
           {{"kernel_shape", kernel}, {"strides", kernel}});
  } else {
    b.refuse("output size does not divide the input (uneven adaptive windows)");
  }
}

// BatchNorm at inference: the moving statistics (the export is of the inference graph).
void o_batchnorm(OnnxNodeBuilder& b) {
  require_nchw(b);
  const std::string gamma = b.param("gamma"), beta = b.param("beta");
  const std::string mean = b.param("moving_mean"), var = b.param("moving_variance");
  if (gamma.empty() || beta.empty() || mean.empty() || var.empty()) {
    b.refuse("a BatchNorm without its gamma, beta, moving_mean and moving_variance weights");
  }
  const double eps =
      rt::attr_float(b.node(), "eps").value_or(rt::attr_float(b.node(), "epsilon").value_or(1e-5));
  b.emit("BatchNormalization", {b.input(0), gamma, beta, mean, var}, {b.output()},
         {{"epsilon", static_cast<float>(eps)}});
}

// nn.Dense: y = x W^T + b with W (out, in). A 2-D input is one Gemm; a batched input is
// MatMul with the transposed weight, then Add.
void o_dense(OnnxNodeBuilder& b) {
  // nn.Dense(activation=...): the product, then the activation as its own node.
  std::string act_type;
  if (auto act = rt::attr_str(b.node(), "activation"); act && !act->empty() && *act != "None") {
    if (*act == "relu") {
      act_type = "Relu";
    } else if (*act == "tanh") {
      act_type = "Tanh";
    } else if (*act == "sigmoid") {
      act_type = "Sigmoid";
    } else {
      b.refuse("nn.Dense(activation='" + *act + "') has no ONNX form here");
    }
  }
  const std::string out = act_type.empty() ? b.output() : b.temp("dense");
  std::string w = b.param("weight"), bias = b.param("bias");
  if (w.empty()) {  // ops.dense(x, w[, b])
    w = b.input(1);
    if (b.num_inputs() > 2) bias = b.input(2);
  }
  const std::vector<int64_t> x = b.input_dims(0);
  if (x.size() == 2) {
    std::vector<std::string> in{b.input(0), w};
    if (!bias.empty()) in.push_back(bias);
    b.emit("Gemm", in, {out}, {{"transB", int64_t{1}}});
  } else {
    const std::string wt = b.temp("weight_t");
    b.emit("Transpose", {w}, {wt}, {{"perm", std::vector<int64_t>{1, 0}}});
    if (bias.empty()) {
      b.emit("MatMul", {b.input(0), wt}, {out});
    } else {
      const std::string prod = b.temp("matmul");
      b.emit("MatMul", {b.input(0), wt}, {prod});
      b.emit("Add", {prod, bias}, {out});
    }
  }
  if (!act_type.empty()) b.emit(act_type, {out}, {b.output()});
}

// MatMul / BatchMatMul with transpose_a / transpose_b: Transpose of the last two dims first.
void o_matmul(OnnxNodeBuilder& b) {
  if (b.node().api == "nn.Dense" || !b.node().params.empty()) return o_dense(b);
  const Node& n = b.node();
  const bool ta =
      rt::attr_bool(n, "transpose_a").value_or(rt::attr_bool(n, "transpose_x1").value_or(false));
  const bool tb =
      rt::attr_bool(n, "transpose_b").value_or(rt::attr_bool(n, "transpose_x2").value_or(false));
  std::vector<std::string> in{b.input(0), b.input(1)};
  for (size_t i = 0; i < 2; ++i) {
    if (!(i == 0 ? ta : tb)) continue;
    const size_t r = b.input_dims(i).size();
    if (r < 2) b.refuse("a transposed operand of rank " + std::to_string(r));
    std::vector<int64_t> perm;
    for (size_t d = 0; d < r; ++d) perm.push_back(static_cast<int64_t>(d));
    std::swap(perm[r - 1], perm[r - 2]);
    const std::string t = b.temp(i == 0 ? "a_t" : "b_t");
    b.emit("Transpose", {in[i]}, {t}, {{"perm", perm}});
    in[i] = t;
  }
  b.emit("MatMul", in, {b.output()});
}

// Anything that only relabels the shape: Reshape to the output's known dims.
void o_reshape(OnnxNodeBuilder& b) {
  b.emit("Reshape", {b.input(0), b.const_i64("shape", b.output_dims())}, {b.output()});
}

namespace {
// The axes a reduction node reduces over (and its keep_dims), as the runtime's kernel resolves
// them from the node's facts, so the export reduces what the runtime does.
std::vector<int64_t> reduction_axes(OnnxNodeBuilder& b, const std::vector<int64_t>& x, bool* keep) {
  std::vector<rt::Tensor> none;
  std::vector<const rt::ParamState*> no_params;
  std::vector<rt::Tensor> outs;
  rt::KernelCall call{b.node(), none, no_params, outs};
  return runtime_fact(b, [&] { return rt::kernels::reduce_axes(call, x, keep); });
}

void reduce(OnnxNodeBuilder& b, std::string_view op_type) {
  const std::vector<int64_t> x = b.input_dims(0);
  bool keep = false;
  const std::vector<int64_t> axes = reduction_axes(b, x, &keep);
  // Opset 18+: the axes are an input.
  b.emit(op_type, {b.input(0), b.const_i64("axes", axes)}, {b.output()},
         {{"keepdims", int64_t{keep ? 1 : 0}}});
}
}  // namespace

void o_reduce_mean(OnnxNodeBuilder& b) { reduce(b, "ReduceMean"); }
void o_reduce_sum(OnnxNodeBuilder& b) { reduce(b, "ReduceSum"); }

// ReduceVar (ops.var, Tensor.var): ReduceMean (keepdims), Sub, Mul, ReduceSum, Div by n - ddof,
// the runtime's moments over the axes its kernel resolves.
void o_reduce_var(OnnxNodeBuilder& b) {
  const std::vector<int64_t> x = b.input_dims(0);
  bool keep = false;
  const std::vector<int64_t> axes = reduction_axes(b, x, &keep);
  int64_t n = 1;
  for (int64_t a : axes) n *= x.at(static_cast<size_t>(a));
  const int64_t ddof = rt::attr_int(b.node(), "ddof").value_or(0);
  if (n - ddof <= 0) b.refuse("its ddof leaves no degrees of freedom");
  const DType t = b.input_type(0).dtype;
  const std::string ax = b.const_i64("axes", axes);
  const std::string mean = b.temp("mean"), d = b.temp("centered"), sq = b.temp("squared");
  const std::string sum = b.temp("sum");
  b.emit("ReduceMean", {b.input(0), ax}, {mean}, {{"keepdims", int64_t{1}}});
  b.emit("Sub", {b.input(0), mean}, {d});
  b.emit("Mul", {d, d}, {sq});
  b.emit("ReduceSum", {sq, ax}, {sum}, {{"keepdims", int64_t{keep ? 1 : 0}}});
  b.emit("Div", {sum, b.const_scalar("count", static_cast<double>(n - ddof), t)}, {b.output()});
}

// ops.L2Normalize: x / sqrt(max(sum(x^2, axis), epsilon)), as the kernel. ONNX's
// LpNormalization has no epsilon, so the sum of squares is clamped before the square root.
void o_l2_normalize(OnnxNodeBuilder& b) {
  const auto axes = rt::attr_ints(b.node(), "axis").value_or(std::vector<int64_t>{0});
  if (axes.size() != 1) b.refuse("an L2Normalize over several axes");
  const size_t r = b.input_dims(0).size();
  const auto axis = normalize_axis(axes[0], r);
  if (!axis) b.refuse("its axis is out of range");
  const double eps = rt::attr_float(b.node(), "epsilon").value_or(1e-4);
  const DType t = b.input_type(0).dtype;
  const std::string ax = b.const_i64("axes", {static_cast<int64_t>(*axis)});
  const std::string sq = b.temp("squared"), sum = b.temp("sum"), clamped = b.temp("clamped");
  const std::string norm = b.temp("norm");
  b.emit("Mul", {b.input(0), b.input(0)}, {sq});
  b.emit("ReduceSum", {sq, ax}, {sum}, {{"keepdims", int64_t{1}}});
  b.emit("Max", {sum, b.const_scalar("epsilon", eps, t)}, {clamped});
  b.emit("Sqrt", {clamped}, {norm});
  b.emit("Div", {b.input(0), norm}, {b.output()});
}

void o_softmax(OnnxNodeBuilder& b) {
  const auto axes = rt::attr_ints(b.node(), "axis").value_or(std::vector<int64_t>{-1});
  if (axes.size() != 1) b.refuse("a Softmax over several axes");
  b.emit("Softmax", {b.input(0)}, {b.output()}, {{"axis", axes[0]}});
}

void o_transpose(OnnxNodeBuilder& b) {
  auto perm = rt::attr_ints(b.node(), "perm");
  if (!perm) perm = rt::attr_ints(b.node(), "dims");
  if (!perm) b.refuse("the permutation was not recorded");
  b.emit("Transpose", {b.input(0)}, {b.output()}, {{"perm", *perm}});
}

// LayerNorm (opset 17): normalised over begin_norm_axis..end; gamma/beta over the same dims.
void o_layernorm(OnnxNodeBuilder& b) {
  const Node& n = b.node();
  const int64_t axis = rt::attr_int(n, "begin_norm_axis").value_or(-1);
  const int64_t params_axis = rt::attr_int(n, "begin_params_axis").value_or(axis);
  const size_t r = b.input_dims(0).size();
  const auto na = normalize_axis(axis, r), pa = normalize_axis(params_axis, r);
  if (!na || !pa || *na != *pa) b.refuse("begin_params_axis differs from begin_norm_axis");
  std::string gamma = b.param("gamma"), beta = b.param("beta");
  if (gamma.empty() && beta.empty() && b.num_inputs() >= 3) {  // ops.LayerNorm()(x, gamma, beta)
    gamma = b.input(1);
    beta = b.input(2);
  }
  if (gamma.empty() || beta.empty()) b.refuse("a LayerNorm without gamma and beta weights");
  const double eps = rt::attr_float(n, "epsilon").value_or(rt::attr_float(n, "eps").value_or(1e-7));
  b.emit("LayerNormalization", {b.input(0), gamma, beta}, {b.output()},
         {{"axis", static_cast<int64_t>(*na)}, {"epsilon", static_cast<float>(eps)}});
  if (n.outputs.size() < 2) return;
  // ops.LayerNorm's mean and (biased) variance over the normalized axes, kept as 1s (the
  // runtime's and MindSpore's outputs 1 and 2; ONNX's own optional outputs are mean and 1/std).
  std::vector<int64_t> axes;
  for (size_t a = *na; a < r; ++a) axes.push_back(static_cast<int64_t>(a));
  const std::string ax = b.const_i64("axes", axes);
  const std::string mean = n.outputs.size() > 1 ? b.output(1) : b.temp("mean");
  b.emit("ReduceMean", {b.input(0), ax}, {mean}, {{"keepdims", int64_t{1}}});
  if (n.outputs.size() < 3) return;
  const std::string d = b.temp("centered"), sq = b.temp("squared");
  b.emit("Sub", {b.input(0), mean}, {d});
  b.emit("Mul", {d, d}, {sq});
  b.emit("ReduceMean", {sq, ax}, {b.output(2)}, {{"keepdims", int64_t{1}}});
}

// GroupNorm (nn.GroupNorm): over (N, G, C/G * spatial) the mean and biased variance, then the
// per-channel gamma and beta, as the runtime computes it (ONNX's GroupNormalization is written
// out so that any opset's reading of its scale agrees).
void o_group_norm(OnnxNodeBuilder& b) {
  const std::vector<int64_t> x = b.input_dims(0);
  const auto groups = rt::attr_int(b.node(), "num_groups");
  if (!groups || *groups <= 0 || x.size() < 2 || x[1] % *groups != 0)
    b.refuse("its num_groups does not divide its channels");
  const std::string gamma = b.param("gamma"), beta = b.param("beta");
  if (gamma.empty() || beta.empty()) b.refuse("a GroupNorm without gamma and beta weights");
  const double eps = rt::attr_float(b.node(), "eps").value_or(1e-5);
  const DType t = b.input_type(0).dtype;
  const std::string g = b.temp("grouped"), mean = b.temp("mean"), d = b.temp("centered");
  const std::string sq = b.temp("squared"), var = b.temp("variance"), ve = b.temp("var_eps");
  const std::string sd = b.temp("std"), nrm = b.temp("normalized"), back = b.temp("reshaped");
  b.emit("Reshape", {b.input(0), b.const_i64("shape", {x[0], *groups, -1})}, {g});
  const std::string ax = b.const_i64("axes", {2});
  b.emit("ReduceMean", {g, ax}, {mean}, {{"keepdims", int64_t{1}}});
  b.emit("Sub", {g, mean}, {d});
  b.emit("Mul", {d, d}, {sq});
  b.emit("ReduceMean", {sq, ax}, {var}, {{"keepdims", int64_t{1}}});
  b.emit("Add", {var, b.const_scalar("eps", eps, t)}, {ve});
  b.emit("Sqrt", {ve}, {sd});
  b.emit("Div", {d, sd}, {nrm});
  b.emit("Reshape", {nrm, b.const_i64("shape", x)}, {back});
  std::vector<int64_t> per_channel(x.size() - 1, 1);
  per_channel[0] = x[1];
  const std::string gs = b.temp("gamma"), bs = b.temp("beta"), scaled = b.temp("scaled");
  b.emit("Reshape", {gamma, b.const_i64("shape", per_channel)}, {gs});
  b.emit("Reshape", {beta, b.const_i64("shape", per_channel)}, {bs});
  b.emit("Mul", {back, gs}, {scaled});
  b.emit("Add", {scaled, bs}, {b.output()});
}

// Resize to the output's static dims: nearest (ResizeNearestNeighbor / V2: the runtime's
// floor(out * in / out_size) grid, or rounding on the align_corners grid) and bilinear
// (ResizeBilinearV2: half-pixel, or align_corners).
void o_resize(OnnxNodeBuilder& b) {
  const Node& n = b.node();
  const bool align = rt::attr_bool(n, "align_corners").value_or(false);
  if (rt::attr_bool(n, "half_pixel_centers").value_or(false) && n.op != "ResizeBilinearV2")
    b.refuse("a nearest resize with half_pixel_centers");
  const std::string mode = rt::attr_str(n, "mode").value_or("");
  if (mode == "nearest-exact") b.refuse("the nearest-exact mode");
  std::vector<OnnxAttr> attrs;
  if (n.op == "ResizeBilinearV2") {
    attrs = {
        {"mode", std::string("linear")},
        {"coordinate_transformation_mode", std::string(align ? "align_corners" : "half_pixel")}};
  } else {
    attrs = {
        {"mode", std::string("nearest")},
        {"coordinate_transformation_mode", std::string(align ? "align_corners" : "asymmetric")},
        {"nearest_mode", std::string(align ? "round_prefer_ceil" : "floor")}};
  }
  b.emit("Resize", {b.input(0), "", "", b.const_i64("sizes", b.output_dims())}, {b.output()},
         attrs);
}

// ZerosLike / OnesLike: the value depends only on the (static) shape: an initializer.
void o_fill_like(OnnxNodeBuilder& b) { b.fill_output(b.node().op == "OnesLike" ? 1 : 0); }

void o_equal(OnnxNodeBuilder& b) {
  std::vector<std::string> ops = b.operands(2);
  if (b.node().op == "Equal") {
    b.emit("Equal", {ops[0], ops[1]}, {b.output()});
    return;
  }
  const std::string eq = b.temp("equal");
  b.emit("Equal", {ops[0], ops[1]}, {eq});
  b.emit("Not", {eq}, {b.output()});
}

// Cast to the output's dtype (the graph recorded it).
void o_cast(OnnxNodeBuilder& b) {
  const DType to = b.node().outputs.at(0).dtype;
  if (onnx_dtype(to) == 0) b.refuse("a cast to " + std::string(dtype_name(to)));
  b.emit("Cast", {b.input(0)}, {b.output()}, {{"to", int64_t{onnx_dtype(to)}}});
}

// ops.arange with recorded bounds: its output is static, so the values are an initializer
// computed as the runtime's kernel computes them.
void o_range(OnnxNodeBuilder& b) {
  const Node& n = b.node();
  const double start = rt::attr_float(n, "start").value_or(0);
  const double delta = rt::attr_float(n, "delta").value_or(rt::attr_float(n, "step").value_or(1));
  if (!rt::attr_float(n, "limit") && !rt::attr_float(n, "end")) {
    b.refuse("the bounds of the range were not recorded");
  }
  const std::vector<int64_t> dims = b.output_dims();
  if (dims.size() != 1) b.refuse("a range of rank " + std::to_string(dims.size()));
  const DType t = n.outputs[0].dtype;
  const std::string s = b.const_scalar("start", start, t);
  const std::string l = b.const_scalar("limit", start + static_cast<double>(dims[0]) * delta, t);
  const std::string d = b.const_scalar("delta", delta, t);
  b.emit("Range", {s, l, d}, {b.output()});
}

// nn.Embedding (the table is a weight) and ops.gather(x, indices, axis).
void o_gather(OnnxNodeBuilder& b) {
  if (const std::string table = b.param("embedding_table"); !table.empty()) {
    b.emit("Gather", {table, b.input(0)}, {b.output()}, {{"axis", int64_t{0}}});
    return;
  }
  const auto axis = rt::attr_int(b.node(), "axis");
  if (!axis) b.refuse("the gather axis was not recorded");
  b.emit("Gather", {b.input(0), b.input(1)}, {b.output()}, {{"axis", *axis}});
}

// StridedSlice / getitem: Slice over every axis with the runtime's geometry (start, step,
// count), then Reshape to the output (integer indices drop their axis, None adds one).
void o_strided_slice(OnnxNodeBuilder& b) {
  const std::vector<int64_t> x = b.input_dims(0);
  const rt::kernels::SliceGeometry g =
      runtime_fact(b, [&] { return rt::kernels::strided_slice_geometry(b.node(), x); });
  std::vector<int64_t> starts, ends, axes, steps;
  for (size_t a = 0; a < x.size(); ++a) {
    const int64_t last = g.start[a] + (g.count[a] - 1) * g.step[a];
    int64_t end = last + (g.step[a] > 0 ? 1 : -1);
    // A negative end means "from the back" in ONNX: past-the-front is INT64_MIN.
    if (end < 0) end = std::numeric_limits<int64_t>::min();
    starts.push_back(g.count[a] == 0 ? 0 : g.start[a]);
    ends.push_back(g.count[a] == 0 ? 0 : end);
    axes.push_back(static_cast<int64_t>(a));
    steps.push_back(g.step[a]);
  }
  const std::string sliced = b.temp("slice");
  b.emit("Slice",
         {b.input(0), b.const_i64("starts", starts), b.const_i64("ends", ends),
          b.const_i64("axes", axes), b.const_i64("steps", steps)},
         {sliced});
  b.emit("Reshape", {sliced, b.const_i64("shape", b.output_dims())}, {b.output()});
}

// ReLU6: Clip to [0, 6] (bounds as 0-d initializers of the input's dtype).
void o_relu6(OnnxNodeBuilder& b) {
  const DType t = b.input_type(0).dtype;
  b.emit("Clip", {b.input(0), b.const_scalar("min", 0, t), b.const_scalar("max", 6, t)},
         {b.output()});
}

// HSwish x * relu6(x + 3) / 6 is HardSwish; HSigmoid relu6(x + 3) / 6 is HardSigmoid with
// alpha 1/6, beta 1/2; SiLU x * sigmoid(x) is Sigmoid then Mul.
void o_hswish(OnnxNodeBuilder& b) { b.same("HardSwish"); }
void o_hsigmoid(OnnxNodeBuilder& b) {
  b.emit("HardSigmoid", {b.input(0)}, {b.output()},
         {{"alpha", static_cast<float>(1.0 / 6.0)}, {"beta", 0.5F}});
}
void o_silu(OnnxNodeBuilder& b) {
  const std::string s = b.temp("sigmoid");
  b.emit("Sigmoid", {b.input(0)}, {s});
  b.emit("Mul", {b.input(0), s}, {b.output()});
}

// Concat along the recorded axis, else the one axis where output and first input differ (the
// runtime's rule).
void o_concat(OnnxNodeBuilder& b) {
  const std::vector<int64_t> x0 = b.input_dims(0);
  const std::vector<int64_t> y = b.output_dims();
  std::optional<int64_t> axis = rt::attr_int(b.node(), "axis");
  if (!axis) {
    for (size_t i = 0; i < x0.size() && i < y.size(); ++i)
      if (x0[i] != y[i]) axis = static_cast<int64_t>(i);
  }
  std::vector<std::string> in;
  for (size_t i = 0; i < b.num_inputs(); ++i) in.push_back(b.input(i));
  b.emit("Concat", in, {b.output()}, {{"axis", axis.value_or(0)}});
}

// Unstack: Split into ones along the axis, then Reshape each piece to its output (the axis
// dropped).
void o_unstack(OnnxNodeBuilder& b) {
  const std::vector<int64_t> x = b.input_dims(0);
  const auto axis = normalize_axis(rt::attr_int(b.node(), "axis").value_or(0), x.size());
  if (!axis) b.refuse("the unstack axis is out of range");
  const size_t n = b.node().outputs.size();
  if (static_cast<int64_t>(n) != x[*axis]) b.refuse("the outputs do not match the axis length");
  std::vector<std::string> pieces;
  for (size_t i = 0; i < n; ++i) pieces.push_back(b.temp("piece"));
  b.emit("Split", {b.input(0), b.const_i64("split", std::vector<int64_t>(n, 1))}, pieces,
         {{"axis", static_cast<int64_t>(*axis)}});
  for (size_t i = 0; i < n; ++i) {
    b.emit("Reshape", {pieces[i], b.const_i64("shape", b.output_dims(i))}, {b.output(i)});
  }
}

// Tile: repeats = output / input per axis; an input of lower rank first gets leading 1s (as
// MindSpore's Tile does with longer multiples).
void o_tile(OnnxNodeBuilder& b) {
  std::vector<int64_t> x = b.input_dims(0);
  const std::vector<int64_t> y = b.output_dims();
  if (y.size() < x.size()) b.refuse("a Tile whose output has fewer dims than its input");
  std::string in = b.input(0);
  if (y.size() > x.size()) {
    x.insert(x.begin(), y.size() - x.size(), 1);
    const std::string r = b.temp("ranked");
    b.emit("Reshape", {in, b.const_i64("shape", x)}, {r});
    in = r;
  }
  std::vector<int64_t> repeats;
  for (size_t i = 0; i < y.size(); ++i) {
    if (x[i] == 0 || y[i] % x[i] != 0) b.refuse("the output is not a whole tiling of the input");
    repeats.push_back(y[i] / x[i]);
  }
  b.emit("Tile", {in, b.const_i64("repeats", repeats)}, {b.output()});
}

// LpNorm (ops.LpNorm(axis, p, keep_dims, epsilon)): max((sum |x|^p over axis)^(1/p), epsilon), as
// the kernel: ReduceL2 / ReduceL1 for p 2 / 1, else Abs, Pow p, ReduceSum, Pow 1/p; then Max with
// epsilon.
void o_lp_norm(OnnxNodeBuilder& b) {
  const Node& n = b.node();
  const size_t rank = b.input_dims(0).size();
  std::vector<int64_t> axes;
  if (auto listed = rt::attr_ints(n, "axis")) {
    for (int64_t a : *listed) {
      const auto axis = normalize_axis(a, rank);
      if (!axis) b.refuse("its axis is out of range");
      axes.push_back(*axis);
    }
  } else if (auto one = rt::attr_int(n, "axis")) {
    const auto axis = normalize_axis(*one, rank);
    if (!axis) b.refuse("its axis is out of range");
    axes.push_back(*axis);
  } else {
    b.refuse("its axis was not recorded");
  }
  const double p = rt::attr_float(n, "p").value_or(2);
  if (p <= 0) b.refuse("its p is not positive");
  const double eps = rt::attr_float(n, "epsilon").value_or(1e-12);
  const bool keep = rt::attr_bool(n, "keep_dims").value_or(false);
  const DType t = n.outputs.at(0).dtype;
  const std::vector<OnnxAttr> keepdims = {{"keepdims", int64_t{keep ? 1 : 0}}};
  const std::string ax = b.const_i64("axes", axes), norm = b.temp("norm");
  if (p == 2 || p == 1) {
    b.emit(p == 2 ? "ReduceL2" : "ReduceL1", {b.input(0), ax}, {norm}, keepdims);
  } else {
    const std::string magnitude = b.temp("magnitude"), powered = b.temp("powered");
    const std::string sum = b.temp("sum");
    b.emit("Abs", {b.input(0)}, {magnitude});
    b.emit("Pow", {magnitude, b.const_scalar("p", p, t)}, {powered});
    b.emit("ReduceSum", {powered, ax}, {sum}, keepdims);
    b.emit("Pow", {sum, b.const_scalar("inverse_p", 1.0 / p, t)}, {norm});
  }
  b.emit("Max", {norm, b.const_scalar("epsilon", eps, t)}, {b.output()});
}

// ClipByValue (ops.clamp, ops.clip, ops.clip_by_value, Tensor.clamp / clip): Max(x, min), then
// Min(., max), as the runtime's kernel; a number bound (the node's `min` / `max`) is a 0-d
// constant of the output's dtype, a None bound (recorded as None) left out, a tensor bound (not
// recorded) the next input, of the same dtype (ONNX's Max / Min take one type).
void o_clip(OnnxNodeBuilder& b) {
  const Node& n = b.node();
  const DType t = n.outputs.at(0).dtype;
  if (b.input_type(0).dtype != t) b.refuse("its output's dtype differs from its input's");
  size_t next = 1;
  auto bound = [&](const char* name) -> std::optional<std::string> {
    const rt::ClipBound c = rt::clip_bound(n, name, &next, b.num_inputs());
    switch (c.kind) {
      case rt::ClipBound::Kind::None:
        return std::nullopt;
      case rt::ClipBound::Kind::Number:
        return b.const_scalar(name, c.number, t);
      case rt::ClipBound::Kind::NotNumber:
        b.refuse(std::string("its ") + name + " bound is not a number");
      case rt::ClipBound::Kind::Input:
        if (b.input_type(c.input).dtype != t) b.refuse("a bound's dtype differs from the input's");
        return b.input(c.input);
      case rt::ClipBound::Kind::Missing:
        break;
    }
    b.refuse("its bounds were not recorded");
  };
  const auto lo = bound("min");
  const auto hi = bound("max");
  std::string value = b.input(0);
  if (!lo && !hi) {
    b.emit("Identity", {value}, {b.output()});
    return;
  }
  if (lo) {
    const std::string to = hi ? b.temp("lower_bounded") : b.output();
    b.emit("Max", {value, *lo}, {to});
    value = to;
  }
  if (hi) b.emit("Min", {value, *hi}, {b.output()});
}

// Roll: ONNX has no roll. Per (shift, axis) pair with k = shift mod the axis' length not 0,
// Slice(x, len - k .. len) and Slice(x, 0 .. len - k) on the axis, concatenated (the MindIR
// form's arithmetic: mindspore.numpy.roll's); no axis: a Reshape to one dim first, back after.
void o_roll(OnnxNodeBuilder& b) {
  std::string why;
  bool overflow = false;
  const auto plan = rt::roll_steps(b.node(), b.input_dims(0), &why, &overflow);
  if (!plan) b.refuse(why);
  std::string value = b.input(0);
  if (plan->flattened) {
    const std::string flat = b.temp("flat");
    b.emit("Reshape", {value, b.const_i64("shape", plan->dims)}, {flat});
    value = flat;
  }
  if (plan->steps.empty()) {
    b.emit(plan->flattened ? "Reshape" : "Identity",
           plan->flattened ? std::vector<std::string>{value, b.const_i64("shape", b.output_dims())}
                           : std::vector<std::string>{value},
           {b.output()});
    return;
  }
  for (size_t m = 0; m < plan->steps.size(); ++m) {
    const auto [axis, by] = plan->steps[m];
    const int64_t len = plan->dims[axis];
    const std::string ax = b.const_i64("axes", {static_cast<int64_t>(axis)});
    const std::string head = b.temp("head"), tail = b.temp("tail");
    b.emit("Slice", {value, b.const_i64("starts", {len - by}), b.const_i64("ends", {len}), ax},
           {head});
    b.emit("Slice", {value, b.const_i64("starts", {0}), b.const_i64("ends", {len - by}), ax},
           {tail});
    const bool last = m + 1 == plan->steps.size();
    const std::string rolled = last && !plan->flattened ? b.output() : b.temp("rolled");
    b.emit("Concat", {head, tail}, {rolled}, {{"axis", static_cast<int64_t>(axis)}});
    value = rolled;
  }
  if (plan->flattened) {
    b.emit("Reshape", {value, b.const_i64("shape", b.output_dims())}, {b.output()});
  }
}

// Split: the pieces' lengths along the axis are the outputs' (the runtime's rule), so equal and
// unequal splits (ops.split with a size or a list, ops.chunk) are one Split node.
void o_split(OnnxNodeBuilder& b) {
  const std::vector<int64_t> x = b.input_dims(0);
  const auto axis = normalize_axis(rt::attr_int(b.node(), "axis").value_or(0), x.size());
  if (!axis) b.refuse("the split axis is out of range");
  std::vector<int64_t> sizes;
  std::vector<std::string> outs;
  for (size_t i = 0; i < b.node().outputs.size(); ++i) {
    const std::vector<int64_t> y = b.output_dims(i);
    if (y.size() != x.size()) b.refuse("a split output of another rank than its input");
    sizes.push_back(y[*axis]);
    outs.push_back(b.output(i));
  }
  b.emit("Split", {b.input(0), b.const_i64("split", sizes)}, outs,
         {{"axis", static_cast<int64_t>(*axis)}});
}

// Stack: each input Unsqueezed at the axis (counted in the output's rank), then one Concat.
void o_stack(OnnxNodeBuilder& b) {
  const std::vector<int64_t> y = b.output_dims();
  const auto axis = normalize_axis(rt::attr_int(b.node(), "axis").value_or(0), y.size());
  if (!axis) b.refuse("the stack axis is out of range");
  std::vector<std::string> parts;
  for (size_t i = 0; i < b.num_inputs(); ++i) {
    parts.push_back(b.temp("unsqueezed"));
    b.emit("Unsqueeze", {b.input(i), b.const_i64("axes", {static_cast<int64_t>(*axis)})},
           {parts.back()});
  }
  b.emit("Concat", parts, {b.output()}, {{"axis", static_cast<int64_t>(*axis)}});
}

// CumSum along the recorded axis (a 0-d int64 input); a `dtype` other than the input's is a Cast
// first, as ops.cumsum(x, axis, dtype) casts before summing.
void o_cumsum(OnnxNodeBuilder& b) {
  const auto axis = rt::attr_int(b.node(), "axis");
  if (!axis) b.refuse("its axis is not recorded");
  const DType from = b.input_type(0).dtype;
  const DType to = b.node().outputs.at(0).dtype;
  std::string in = b.input(0);
  if (from != to) {
    const int32_t t = onnx_dtype(to);
    if (t == 0) b.refuse("a cumulative sum to a dtype ONNX export does not write");
    in = b.temp("cast");
    b.emit("Cast", {b.input(0)}, {in}, {{"to", static_cast<int64_t>(t)}});
  }
  b.emit("CumSum", {in, b.const_scalar("axis", static_cast<double>(*axis), DType::Int64)},
         {b.output()});
}

// BroadcastTo: Expand to the output's static dims.
void o_broadcast_to(OnnxNodeBuilder& b) {
  b.emit("Expand", {b.input(0), b.const_i64("shape", b.output_dims())}, {b.output()});
}

// Pad (constant mode): nn.Pad's `paddings` are (before, after) per axis from the first; ops.pad's
// `padding` pairs start at the last axis. ONNX takes every axis' begins, then every axis' ends.
void o_pad(OnnxNodeBuilder& b) {
  const Node& n = b.node();
  std::string mode = rt::attr_str(n, "mode").value_or("constant");
  std::ranges::transform(mode, mode.begin(),
                         [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (mode != "constant") b.refuse("the padding mode '" + mode + "'");
  const size_t r = b.input_dims(0).size();
  std::vector<int64_t> pads(2 * r, 0);
  if (auto p = rt::attr_ints(n, "paddings"); p && p->size() == 2 * r) {
    for (size_t a = 0; a < r; ++a) {
      pads[a] = (*p)[2 * a];
      pads[r + a] = (*p)[2 * a + 1];
    }
  } else if (auto q = rt::attr_ints(n, "padding"); q && q->size() % 2 == 0 && q->size() <= 2 * r) {
    for (size_t k = 0; 2 * k < q->size(); ++k) {
      const size_t a = r - 1 - k;
      pads[a] = (*q)[2 * k];
      pads[r + a] = (*q)[2 * k + 1];
    }
  } else {
    b.refuse("its paddings are not recorded as pairs");
  }
  const double value = rt::attr_float(n, "value").value_or(0.0);
  b.emit("Pad",
         {b.input(0), b.const_i64("pads", pads),
          b.const_scalar("value", value, b.input_type(0).dtype)},
         {b.output()}, {{"mode", std::string("constant")}});
}

}  // namespace graphcore::exporter::rules
