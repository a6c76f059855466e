// The gradient rules (rules.h). Shape-only operators compose forward operators (Reshape,
// Transpose, BroadcastTo, ReduceSum, Concat); everything that needs the forward values or the
// layer's weights emits one backward operator (graphcore/src/ops/grad.cpp) whose kernel
// recomputes what it needs from the forward inputs.
#include "autodiff/rules.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

namespace graphcore::autodiff::rules {

namespace {

std::vector<int64_t> dims_of(const TensorType& t) {
  std::vector<int64_t> d;
  for (const Dim& x : t.shape.dims) d.push_back(x.value());
  return d;
}

TensorType with_dims(const TensorType& t, const std::vector<int64_t>& dims) {
  return TensorType{Shape::of(dims), t.dtype};
}

std::optional<int64_t> int_attr(const Node& n, std::string_view name) {
  const AttrValue* v = n.find_attr(name);
  if (v == nullptr) return std::nullopt;
  if (const auto* i = std::get_if<int64_t>(v)) return *i;
  if (const auto* l = std::get_if<std::vector<int64_t>>(v); l && l->size() == 1) return (*l)[0];
  return std::nullopt;
}

std::optional<std::vector<int64_t>> ints_attr(const Node& n, std::string_view name) {
  const AttrValue* v = n.find_attr(name);
  if (v == nullptr) return std::nullopt;
  if (const auto* i = std::get_if<int64_t>(v)) return std::vector<int64_t>{*i};
  if (const auto* l = std::get_if<std::vector<int64_t>>(v)) return *l;
  return std::nullopt;
}

int64_t norm_axis(GradBuilder& b, int64_t axis, size_t rank) {
  auto a = normalize_axis(axis, rank);
  if (!a) {
    b.unsupported("axis " + std::to_string(axis) + " is out of range for rank " +
                  std::to_string(rank));
  }
  return static_cast<int64_t>(a.value_or(0));
}

// The parameter of the node whose name ends with ".<suffix>" (or is it); "" when none.
std::string param_named(const Node& n, std::string_view suffix) {
  for (const std::string& p : n.params) {
    if (p == suffix ||
        (p.size() > suffix.size() && p.ends_with(suffix) && p[p.size() - suffix.size() - 1] == '.'))
      return p;
  }
  return {};
}

TensorType param_type(GradBuilder& b, const std::string& name) {
  auto t = b.param_type(name);
  if (!t) b.unsupported("parameter '" + name + "' is not listed in the report");
  return *t;
}

// The gradient `dy` of a value of shape `from`, summed over the dims broadcasting added or
// stretched to give the shape `to` of the value it was broadcast from.
ValueRef sum_to(GradBuilder& b, ValueRef dy, const TensorType& to) {
  const std::vector<int64_t> from = dims_of(b.type_of(dy));
  const std::vector<int64_t> target = dims_of(to);
  if (from == target) return dy;
  const size_t lead = from.size() - std::min(from.size(), target.size());
  std::vector<int64_t> axes, kept = from;
  for (size_t i = 0; i < from.size(); ++i) {
    const bool extra = i < lead;
    if (extra || (target[i - lead] == 1 && from[i] != 1)) {
      axes.push_back(static_cast<int64_t>(i));
      kept[i] = 1;
    }
  }
  ValueRef r = dy;
  if (!axes.empty()) {
    r = b.emit1("ReduceSum", {dy}, with_dims(b.type_of(dy), kept),
                {{"axis", axes}, {"keep_dims", true}});
  }
  return b.emit1("Reshape", {r}, TensorType{to.shape, b.type_of(dy).dtype});
}

// The shape a reduction's output has with keep_dims=True: from the recorded axes, else from the
// shapes (the reduced axes are those whose removal gives the output).
std::vector<int64_t> keep_dims_shape(GradBuilder& b) {
  const Node& n = b.node();
  const std::vector<int64_t> x = dims_of(b.type_of(b.input(0)));
  std::vector<int64_t> y = dims_of(n.outputs[0]);
  if (x.size() == y.size()) return y;
  std::vector<int64_t> keep = x;
  if (auto axes = ints_attr(n, "axis")) {
    if (axes->empty()) return std::vector<int64_t>(x.size(), 1);
    for (int64_t a : *axes) keep[norm_axis(b, a, x.size())] = 1;
    return keep;
  }
  if (x.size() > 20) b.unsupported("the reduction axes are not recorded");
  for (uint32_t mask = 0; mask < (1u << x.size()); ++mask) {
    std::vector<int64_t> rest, k = x;
    for (size_t i = 0; i < x.size(); ++i) {
      if (mask & (1u << i)) {
        k[i] = 1;
      } else {
        rest.push_back(x[i]);
      }
    }
    if (rest == y) return k;
  }
  b.unsupported("the output shape is not a reduction of the input's");
  return keep;
}

std::optional<ValueRef> dy0(GradBuilder& b) { return b.dout(0); }

// Every output's gradient, a zero tensor for an output with none (a fused layer's backward
// kernel reads them all).
std::vector<ValueRef> all_douts(GradBuilder& b) {
  const Node& n = b.node();
  std::vector<ValueRef> r;
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    auto d = b.dout(k);
    r.push_back(d ? *d : b.emit1("ZerosLike", {b.output(k)}, n.outputs[k]));
  }
  return r;
}

bool any_dout(GradBuilder& b) {
  for (size_t k = 0; k < b.node().outputs.size(); ++k)
    if (b.dout(k)) return true;
  return false;
}

// A fused layer's backward node: (forward inputs, every output's gradient) -> (the gradient of
// each forward input, then of each of the layer's parameters in Node::params order).
void fused_layer_grad(GradBuilder& b, std::string_view op) {
  if (!any_dout(b)) return;
  const Node& n = b.node();
  std::vector<ValueRef> ins = n.inputs;
  for (const ValueRef& d : all_douts(b)) ins.push_back(d);
  std::vector<TensorType> outs;
  for (const ValueRef& r : n.inputs) {
    TensorType t = b.type_of(r);
    if (!is_floating(t.dtype)) t.dtype = DType::Float32;
    outs.push_back(t);
  }
  for (const std::string& p : n.params) outs.push_back(param_type(b, p));
  std::vector<Attr> attrs = n.attrs;
  attrs.push_back({"forward_op", std::string(n.op)});
  const uint32_t g = b.emit(op, ins, outs, attrs, n.params, true);
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (is_floating(b.type_of(n.inputs[i]).dtype)) b.grad_input(i, {g, static_cast<uint32_t>(i)});
  }
  for (size_t j = 0; j < n.params.size(); ++j)
    b.grad_param(n.params[j], {g, static_cast<uint32_t>(n.inputs.size() + j)});
}

}  // namespace

void g_identity(GradBuilder& b) {
  if (auto dy = dy0(b)) b.grad_input(0, *dy);
}

void g_reshape(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  const TensorType& x = b.type_of(b.input(0));
  b.grad_input(0, b.emit1("Reshape", {*dy}, TensorType{x.shape, b.type_of(*dy).dtype}));
}

void g_cast(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  b.grad_input(0, b.emit1("Cast", {*dy}, b.type_of(b.input(0))));
}

void g_neg(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  b.grad_input(0, b.emit1("Neg", {*dy}, b.type_of(*dy)));
}

void g_unary(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  const Node& n = b.node();
  b.grad_input(0, b.emit1(std::string(n.op) + "Grad", {b.input(0), *dy}, b.type_of(b.input(0)),
                          n.attrs, {}, true));
}

void g_binary(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy) return;
  const Node& n = b.node();
  std::vector<ValueRef> ins = n.inputs;
  std::vector<TensorType> outs;
  bool any = false;
  for (size_t i = 0; i < ins.size(); ++i) {
    outs.push_back(b.type_of(ins[i]));
    if (!is_floating(outs.back().dtype)) outs.back().dtype = DType::Float32;
    any = any || b.needs_input_grad(i);
  }
  if (!any) return;
  ins.push_back(*dy);
  const uint32_t g = b.emit(std::string(n.op) + "Grad", ins, outs, n.attrs, {}, true);
  for (size_t i = 0; i + 1 < ins.size(); ++i) b.grad_input(i, {g, static_cast<uint32_t>(i)});
}

void g_bias_add(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy) return;
  b.grad_input(0, *dy);
  if (b.needs_input_grad(1)) b.grad_input(1, b.emit1("BiasAddGrad", {*dy}, b.type_of(b.input(1))));
}

// Layers whose weights are parameters (nn.Dense, nn.Conv2d) or, functionally, inputs
// (ops.dense(x, w, b), ops.conv2d(x, w)): one backward node giving every gradient.
void layer_grad(GradBuilder& b, std::string_view op, bool bias_needs_attr) {
  auto dy = dy0(b);
  if (!dy) return;
  const Node& n = b.node();
  const std::string w = param_named(n, "weight");
  if (!w.empty()) {
    std::string bias = param_named(n, "bias");
    if (bias_needs_attr) {
      const AttrValue* hb = n.find_attr("has_bias");
      const bool* has = hb ? std::get_if<bool>(hb) : nullptr;
      if (has == nullptr || !*has) bias.clear();
    }
    std::vector<TensorType> outs{b.type_of(b.input(0)), param_type(b, w)};
    std::vector<std::string> params{w};
    if (!bias.empty()) {
      outs.push_back(param_type(b, bias));
      params.push_back(bias);
    }
    const uint32_t g = b.emit(op, {b.input(0), *dy}, outs, n.attrs, params, true);
    b.grad_input(0, {g, 0});
    b.grad_param(w, {g, 1});
    if (!bias.empty()) b.grad_param(bias, {g, 2});
    return;
  }
  std::vector<ValueRef> ins = n.inputs;
  std::vector<TensorType> outs;
  outs.reserve(ins.size());
  for (const ValueRef& r : ins) outs.push_back(b.type_of(r));
  ins.push_back(*dy);
  const uint32_t g = b.emit(op, ins, outs, n.attrs, {}, true);
  for (size_t i = 0; i + 1 < ins.size(); ++i) b.grad_input(i, {g, static_cast<uint32_t>(i)});
}

void g_dense(GradBuilder& b) { layer_grad(b, "DenseGrad", false); }

void g_matmul(GradBuilder& b) {
  const Node& n = b.node();
  if (n.api == "nn.Dense" || !n.params.empty()) return g_dense(b);
  auto dy = dy0(b);
  if (!dy || n.inputs.size() < 2) {
    if (dy) b.unsupported("MatMul with fewer than two tensor inputs");
    return;
  }
  const uint32_t g = b.emit("MatMulGrad", {b.input(0), b.input(1), *dy},
                            {b.type_of(b.input(0)), b.type_of(b.input(1))}, n.attrs, {}, true);
  b.grad_input(0, {g, 0});
  b.grad_input(1, {g, 1});
}

void g_conv(GradBuilder& b) { layer_grad(b, "Conv2DGrad", true); }

void g_pool(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  const Node& n = b.node();
  b.grad_input(0, b.emit1(std::string(n.op) + "Grad", {b.input(0), *dy}, b.type_of(b.input(0)),
                          n.attrs, {}, true));
}

void g_adaptive_avgpool(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  const Node& n = b.node();
  const int64_t nd = n.op == "AdaptiveAvgPool1D" ? 1 : n.op == "AdaptiveAvgPool3D" ? 3 : 2;
  const bool is_max = n.op == "AdaptiveMaxPool2D";
  b.grad_input(0, b.emit1(is_max ? "AdaptiveMaxPoolGrad" : "AdaptiveAvgPoolGrad", {b.input(0), *dy},
                          b.type_of(b.input(0)), {{"nd", nd}}));
}

void g_batchnorm(GradBuilder& b) {
  const Node& n = b.node();
  const std::string gamma = param_named(n, "gamma"), beta = param_named(n, "beta");
  const std::string mean = param_named(n, "moving_mean"), var = param_named(n, "moving_variance");
  if (gamma.empty() || beta.empty() || mean.empty() || var.empty()) {
    if (dy0(b)) {
      b.unsupported(
          "only the BatchNorm layers (nn.BatchNorm1d/2d/3d) are differentiated, not the "
          "functional ops.BatchNorm");
    }
    return;
  }
  if (auto dy = dy0(b)) {
    const uint32_t g = b.emit("BatchNormGrad", {b.input(0), *dy},
                              {b.type_of(b.input(0)), param_type(b, gamma), param_type(b, beta)},
                              n.attrs, n.params, true);
    b.grad_input(0, {g, 0});
    b.grad_param(gamma, {g, 1});
    b.grad_param(beta, {g, 2});
  }
  // The moving statistics a training step leaves (unchanged in inference).
  if (!b.param_trainable(mean) && !b.param_trainable(var)) {
    const uint32_t u = b.emit("BatchNormUpdate", {b.input(0)},
                              {param_type(b, mean), param_type(b, var)}, n.attrs, n.params, true);
    b.state_update(mean, {u, 0});
    b.state_update(var, {u, 1});
  }
}

void g_layernorm(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy) return;
  const Node& n = b.node();
  const std::string gamma = param_named(n, "gamma"), beta = param_named(n, "beta");
  if (!gamma.empty() && !beta.empty()) {
    const uint32_t g = b.emit("LayerNormGrad", {b.input(0), *dy},
                              {b.type_of(b.input(0)), param_type(b, gamma), param_type(b, beta)},
                              n.attrs, {gamma, beta}, true);
    b.grad_input(0, {g, 0});
    b.grad_param(gamma, {g, 1});
    b.grad_param(beta, {g, 2});
    return;
  }
  // ops.layer_norm / ops.LayerNorm: (x, gamma, beta) are inputs.
  if (n.inputs.size() < 3) b.unsupported("LayerNorm without gamma and beta");
  std::vector<TensorType> outs;
  for (size_t i = 0; i < 3; ++i) outs.push_back(b.type_of(b.input(i)));
  const uint32_t g =
      b.emit("LayerNormGrad", {b.input(0), *dy, b.input(1), b.input(2)}, outs, n.attrs, {}, true);
  for (uint32_t i = 0; i < 3; ++i) b.grad_input(i, {g, i});
}

void g_softmax(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  const Node& n = b.node();
  b.grad_input(0, b.emit1(std::string(n.op) + "Grad", {b.output(0), *dy}, b.type_of(b.input(0)),
                          n.attrs, {}, true));
}

void g_reduce(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  const TensorType& x = b.type_of(b.input(0));
  const std::vector<int64_t> keep = keep_dims_shape(b);
  const DType dt = b.type_of(*dy).dtype;
  ValueRef r = b.emit1("Reshape", {*dy}, TensorType{Shape::of(keep), dt});
  r = b.emit1("BroadcastTo", {r}, TensorType{x.shape, dt});
  if (b.node().op == "ReduceMean") {
    const int64_t in = x.shape.num_elements().value();
    int64_t out = 1;
    for (int64_t d : keep) out *= d;
    if (in > 0 && out > 0 && in != out) {
      const double scale = static_cast<double>(out) / static_cast<double>(in);
      r = b.emit1("Mul", {r}, TensorType{x.shape, dt},
                  {{"scalar", scale}, {"scalar_index", int64_t{1}}});
    }
  }
  b.grad_input(0, r);
}

// The value output of a max/min that also returns the index (ops.max(x, axis): values, indices;
// ops.ArgMaxWithValue: index, values): its gradient goes to the position the index names, as
// MindSpore's does (a tie does not split it).
void extremum_with_index(GradBuilder& b) {
  const Node& n = b.node();
  if (n.outputs.size() != 2) b.unsupported("expected a value and an index output");
  const size_t vi = is_floating(n.outputs[0].dtype) ? 0 : 1;
  auto dy = b.dout(vi);
  if (!dy || !b.needs_input_grad(0)) return;
  const std::vector<int64_t> x = dims_of(b.type_of(b.input(0)));
  const std::vector<int64_t> keep = keep_dims_shape(b);
  std::optional<int64_t> axis;
  if (auto a = ints_attr(n, "axis"); a && a->size() == 1) axis = norm_axis(b, (*a)[0], x.size());
  for (size_t i = 0; i < x.size() && !axis; ++i)
    if (keep[i] == 1 && x[i] != 1) axis = static_cast<int64_t>(i);
  const ValueRef idx =
      b.emit1("Reshape", {b.output(1 - vi)}, TensorType{Shape::of(keep), n.outputs[1 - vi].dtype});
  const ValueRef g = b.emit1("Reshape", {*dy}, TensorType{Shape::of(keep), b.type_of(*dy).dtype});
  b.grad_input(0, b.emit1("IndexScatterGrad", {idx, g},
                          TensorType{b.type_of(b.input(0)).shape, b.type_of(*dy).dtype},
                          {{"axis", axis.value_or(0)}}));
}

void g_reduce_extremum(GradBuilder& b) {
  if (b.node().outputs.size() == 2) return extremum_with_index(b);
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  const std::vector<int64_t> keep = keep_dims_shape(b);
  const DType dt = b.type_of(*dy).dtype;
  const ValueRef y = b.emit1("Reshape", {b.output(0)}, TensorType{Shape::of(keep), dt});
  const ValueRef g = b.emit1("Reshape", {*dy}, TensorType{Shape::of(keep), dt});
  b.grad_input(0, b.emit1("ReduceExtremumGrad", {b.input(0), y, g}, b.type_of(b.input(0))));
}

void g_transpose(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  const Node& n = b.node();
  const std::vector<int64_t> x = dims_of(b.type_of(b.input(0)));
  const std::vector<int64_t> y = dims_of(n.outputs[0]);
  std::optional<std::vector<int64_t>> perm = ints_attr(n, "perm");
  if (!perm) perm = ints_attr(n, "input_perm");
  if (perm) {
    if (perm->size() != x.size()) b.unsupported("the permutation does not match the rank");
    for (int64_t& p : *perm) p = norm_axis(b, p, x.size());
  } else {
    // Not recorded: the permutation the shapes imply (the forward kernel's rule); candidates
    // that order the non-trivial axes alike move the same data.
    std::vector<int64_t> p(x.size());
    std::iota(p.begin(), p.end(), 0);
    do {
      bool ok = true;
      for (size_t i = 0; i < p.size() && ok; ++i) ok = x[p[i]] == y[i];
      if (ok) {
        perm = p;
        break;
      }
    } while (std::next_permutation(p.begin(), p.end()));
    if (!perm) b.unsupported("the permutation is not recorded");
  }
  std::vector<int64_t> inv(perm->size());
  for (size_t i = 0; i < perm->size(); ++i) inv[(*perm)[i]] = static_cast<int64_t>(i);
  b.grad_input(
      0, b.emit1("Transpose", {*dy}, TensorType{b.type_of(b.input(0)).shape, b.type_of(*dy).dtype},
                 {{"perm", inv}}));
}

// The gradient of a node joining its inputs along `axis` (Concat, Stack): one node `op` splitting
// the output gradient back into pieces of the inputs' shapes.
void split_back(GradBuilder& b, ValueRef dy, int64_t axis, std::string_view op) {
  const Node& n = b.node();
  std::vector<TensorType> outs;
  for (const ValueRef& r : n.inputs)
    outs.push_back(TensorType{b.type_of(r).shape, b.type_of(dy).dtype});
  const uint32_t g = b.emit(op, {dy}, outs, {{"axis", axis}});
  for (size_t i = 0; i < n.inputs.size(); ++i) b.grad_input(i, {g, static_cast<uint32_t>(i)});
}

// The gradient of a node splitting its input into outputs along its `axis` (Split, Unstack):
// the outputs' gradients (zeros for an unused one) joined by `op`.
void join_back(GradBuilder& b, std::string_view op) {
  const Node& n = b.node();
  bool any = false;
  for (size_t k = 0; k < n.outputs.size(); ++k) any = any || b.dout(k).has_value();
  if (!any || !b.needs_input_grad(0)) return;
  const TensorType& x = b.type_of(b.input(0));
  const int64_t a = norm_axis(b, int_attr(n, "axis").value_or(0), x.shape.rank());
  std::vector<ValueRef> parts;
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    auto d = b.dout(k);
    parts.push_back(d ? *d : b.emit1("ZerosLike", {b.output(k)}, n.outputs[k]));
  }
  b.grad_input(0, b.emit1(op, parts, x, {{"axis", a}}));
}

void g_concat(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy) return;
  const Node& n = b.node();
  const std::vector<int64_t> y = dims_of(n.outputs[0]);
  std::optional<int64_t> axis = int_attr(n, "axis");
  if (!axis) {
    const std::vector<int64_t> x0 = dims_of(b.type_of(b.input(0)));
    for (size_t i = 0; i < y.size(); ++i)
      if (x0[i] != y[i]) axis = static_cast<int64_t>(i);
  }
  split_back(b, *dy, norm_axis(b, axis.value_or(0), y.size()), "ConcatGrad");
}

void g_split(GradBuilder& b) { join_back(b, "Concat"); }

void g_strided_slice(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  const Node& n = b.node();
  b.grad_input(0, b.emit1("StridedSliceGrad", {*dy}, b.type_of(b.input(0)), n.attrs, {}, true));
}

void g_gather(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy) return;
  const Node& n = b.node();
  const std::string table = param_named(n, "embedding_table");
  if (!table.empty()) {
    if (b.needs_param_grad(table)) {
      b.grad_param(table, b.emit1("GatherGrad", {b.input(0), *dy}, param_type(b, table),
                                  {{"axis", int64_t{0}}}));
    }
    return;
  }
  if (!b.needs_input_grad(0)) return;
  if (n.inputs.size() < 2) b.unsupported("Gather without an index input");
  const std::vector<int64_t> x = dims_of(b.type_of(b.input(0)));
  const std::vector<int64_t> ids = dims_of(b.type_of(b.input(1)));
  const std::vector<int64_t> y = dims_of(n.outputs[0]);
  std::optional<int64_t> axis = int_attr(n, "axis");
  if (!axis) {
    for (size_t a = 0; a < x.size() && !axis; ++a) {
      std::vector<int64_t> s(x.begin(), x.begin() + static_cast<int64_t>(a));
      s.insert(s.end(), ids.begin(), ids.end());
      s.insert(s.end(), x.begin() + static_cast<int64_t>(a) + 1, x.end());
      if (s == y) axis = static_cast<int64_t>(a);
    }
    if (!axis) b.unsupported("the gather axis is not recorded");
  }
  b.grad_input(0, b.emit1("GatherGrad", {b.input(1), *dy}, b.type_of(b.input(0)),
                          {{"axis", norm_axis(b, *axis, x.size())}}));
}

void g_dropout(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  const Node& n = b.node();
  std::vector<Attr> attrs = n.attrs;
  attrs.push_back({"rng_node", n.id});  // the forward node's mask (runtime: dropout_mask)
  attrs.push_back({"forward_op", std::string(n.op)});
  b.grad_input(0, b.emit1("DropoutGrad", {*dy}, b.type_of(b.input(0)), attrs, {}, true));
}

void g_broadcast_to(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  b.grad_input(0, sum_to(b, *dy, b.type_of(b.input(0))));
}

void g_no_gradient(GradBuilder& /*b*/) {
  // Nothing flows back: the inputs' gradient is zero, as MindSpore's bprop gives (Floor, Round,
  // Sign, FloorDiv, OneHot's values, comparisons, argmax ...). Emitting nothing says so.
}

void g_tile(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  const TensorType& x = b.type_of(b.input(0));
  const std::vector<int64_t> y = dims_of(b.node().outputs[0]);
  std::vector<int64_t> xs = dims_of(x);
  if (xs.size() > y.size()) b.unsupported("the output has a lower rank than the input");
  xs.insert(xs.begin(), y.size() - xs.size(), 1);
  const DType dt = b.type_of(*dy).dtype;
  if (x.shape.num_elements().value() == 0) {
    b.grad_input(0, b.emit1("ZerosLike", {b.input(0)}, TensorType{x.shape, dt}));
    return;
  }
  // y viewed as (m0, x0, m1, x1, ...): the copies are summed over the m axes.
  std::vector<int64_t> split, axes;
  for (size_t i = 0; i < y.size(); ++i) {
    if (y[i] % xs[i] != 0) b.unsupported("the output shape is not a tiling of the input's");
    axes.push_back(static_cast<int64_t>(split.size()));
    split.push_back(y[i] / xs[i]);
    split.push_back(xs[i]);
  }
  const ValueRef r = b.emit1("Reshape", {*dy}, TensorType{Shape::of(split), dt});
  const ValueRef s = b.emit1("ReduceSum", {r}, TensorType{Shape::of(xs), dt},
                             {{"axis", axes}, {"keep_dims", false}});
  b.grad_input(0, b.emit1("Reshape", {s}, TensorType{x.shape, dt}));
}

void g_stack(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy) return;
  const Node& n = b.node();
  split_back(b, *dy, norm_axis(b, int_attr(n, "axis").value_or(0), n.outputs[0].shape.rank()),
             "Unstack");
}

void g_unstack(GradBuilder& b) { join_back(b, "Stack"); }

// The operand position (among a Python scalar's too) of tensor input `i`.
size_t operand_position(const Node& n, size_t i) {
  if (n.find_attr("scalar") == nullptr) return i;
  const auto at = int_attr(n, "scalar_index");
  return at && static_cast<int64_t>(i) >= *at ? i + 1 : i;
}

void g_select(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy) return;
  const Node& n = b.node();
  if (operand_position(n, 0) != 0) b.unsupported("the condition is a Python scalar");
  const TensorType& gt = b.type_of(*dy);
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    if (!b.needs_input_grad(i)) continue;
    // x's gradient is dy where the condition holds, 0 elsewhere; y's the other way round.
    const size_t pos = operand_position(n, i);
    const int64_t zero_at = pos == 1 ? 2 : 1;
    const ValueRef s =
        b.emit1("Select", {b.input(0), *dy}, gt, {{"scalar", 0.0}, {"scalar_index", zero_at}});
    b.grad_input(i, sum_to(b, s, b.type_of(b.input(i))));
  }
}

void g_masked_fill(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy) return;
  const Node& n = b.node();
  if (n.inputs.size() < 2) b.unsupported("MaskedFill without a mask input");
  const TensorType& gt = b.type_of(*dy);
  if (b.needs_input_grad(0)) {
    const ValueRef m = b.emit1("MaskedFill", {*dy, b.input(1)}, gt, {{"value", 0.0}});
    b.grad_input(0, sum_to(b, m, b.type_of(b.input(0))));
  }
  if (n.inputs.size() >= 3 && b.needs_input_grad(2)) {
    // A tensor fill value: the sum of the gradient over the filled positions.
    const ValueRef s =
        b.emit1("Select", {b.input(1), *dy}, gt, {{"scalar", 0.0}, {"scalar_index", int64_t{2}}});
    const ValueRef t =
        b.emit1("ReduceSum", {s}, TensorType{Shape::of(std::vector<int64_t>{}), gt.dtype},
                {{"axis", std::vector<int64_t>{}}, {"keep_dims", false}});
    b.grad_input(2, b.emit1("Reshape", {t}, TensorType{b.type_of(b.input(2)).shape, gt.dtype}));
  }
}

void g_cumsum(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  const Node& n = b.node();
  const TensorType& x = b.type_of(b.input(0));
  b.grad_input(0, b.emit1("CumSumGrad", {*dy}, TensorType{x.shape, b.type_of(*dy).dtype}, n.attrs,
                          {}, true));
}

void g_pad(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  const Node& n = b.node();
  const TensorType& x = b.type_of(b.input(0));
  b.grad_input(0, b.emit1("PadGrad", {b.input(0), *dy}, TensorType{x.shape, b.type_of(*dy).dtype},
                          n.attrs, {}, true));
}

void g_l2_normalize(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  const Node& n = b.node();
  const TensorType& x = b.type_of(b.input(0));
  b.grad_input(0, b.emit1("L2NormalizeGrad", {b.input(0), *dy},
                          TensorType{x.shape, b.type_of(*dy).dtype}, n.attrs, {}, true));
}

void g_roll(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  const Node& n = b.node();
  std::vector<Attr> attrs = n.attrs;
  for (Attr& a : attrs) {
    if (a.name != "shift") continue;
    if (auto* v = std::get_if<std::vector<int64_t>>(&a.value)) {
      for (int64_t& s : *v) s = -s;
    }
  }
  const TensorType& x = b.type_of(b.input(0));
  b.grad_input(0,
               b.emit1("Roll", {*dy}, TensorType{x.shape, b.type_of(*dy).dtype}, std::move(attrs)));
}

void g_group_norm(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy) return;
  const Node& n = b.node();
  const std::string gamma = param_named(n, "gamma"), beta = param_named(n, "beta");
  if (gamma.empty() || beta.empty()) b.unsupported("GroupNorm without its gamma and beta");
  const uint32_t g = b.emit("GroupNormGrad", {b.input(0), *dy},
                            {b.type_of(b.input(0)), param_type(b, gamma), param_type(b, beta)},
                            n.attrs, {gamma, beta}, true);
  b.grad_input(0, {g, 0});
  b.grad_param(gamma, {g, 1});
  b.grad_param(beta, {g, 2});
}

void g_conv_transpose(GradBuilder& b) { layer_grad(b, "Conv2DTransposeGrad", true); }

void g_logsumexp(GradBuilder& b) {
  // d/dx log(sum(exp x)) = exp(x - y): composed from forward operators.
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  const TensorType& x = b.type_of(b.input(0));
  const std::vector<int64_t> keep = keep_dims_shape(b);
  const DType dt = b.type_of(*dy).dtype;
  const TensorType kt{Shape::of(keep), dt}, xt{x.shape, dt};
  const ValueRef y = b.emit1("BroadcastTo", {b.emit1("Reshape", {b.output(0)}, kt)}, xt);
  const ValueRef g = b.emit1("BroadcastTo", {b.emit1("Reshape", {*dy}, kt)}, xt);
  const ValueRef p = b.emit1("Exp", {b.emit1("Sub", {b.input(0), y}, xt)}, xt);
  b.grad_input(0, b.emit1("Mul", {p, g}, xt));
}

void g_resize(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  const Node& n = b.node();
  std::vector<Attr> attrs = n.attrs;
  attrs.push_back({"forward_op", std::string(n.op)});
  const TensorType& x = b.type_of(b.input(0));
  b.grad_input(
      0, b.emit1("ResizeGrad", {*dy}, TensorType{x.shape, b.type_of(*dy).dtype}, attrs, {}, true));
}

void g_arg_extremum_with_value(GradBuilder& b) { extremum_with_index(b); }

void g_topk(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  const Node& n = b.node();
  const TensorType& x = b.type_of(b.input(0));
  const int64_t axis =
      norm_axis(b, int_attr(n, "dim").value_or(-1), std::max<size_t>(x.shape.rank(), 1));
  b.grad_input(0, b.emit1("IndexScatterGrad", {b.output(1), *dy},
                          TensorType{x.shape, b.type_of(*dy).dtype}, {{"axis", axis}}));
}

void g_clip(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy) return;
  const Node& n = b.node();
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    if (b.needs_input_grad(i)) b.unsupported("the gradient of a tensor bound is not computed");
  }
  if (!b.needs_input_grad(0)) return;
  std::vector<ValueRef> ins = n.inputs;
  ins.push_back(*dy);
  const TensorType& x = b.type_of(b.input(0));
  b.grad_input(0, b.emit1("ClipByValueGrad", ins, TensorType{x.shape, b.type_of(*dy).dtype},
                          n.attrs, {}, true));
}

void g_prelu(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy) return;
  const Node& n = b.node();
  const std::string w = param_named(n, "w");
  if (w.empty()) b.unsupported("PReLU without its slope parameter w");
  const uint32_t g = b.emit("PReLUGrad", {b.input(0), *dy},
                            {b.type_of(b.input(0)), param_type(b, w)}, n.attrs, {w}, true);
  b.grad_input(0, {g, 0});
  b.grad_param(w, {g, 1});
}

void g_softmin(GradBuilder& b) {
  // softmin(x) = softmax(-x): Softmax's gradient at its output, negated.
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  const Node& n = b.node();
  const TensorType t = b.type_of(b.input(0));
  const ValueRef g = b.emit1("SoftmaxGrad", {b.output(0), *dy}, t, n.attrs, {}, true);
  b.grad_input(0, b.emit1("Neg", {g}, t));
}

void g_moments(GradBuilder& b) {
  // var = sum((x - mean)^2) / (n - ddof): dvar/dx = 2 (x - mean) / (n - ddof); std = sqrt(var):
  // dstd/dx = (x - mean) / ((n - ddof) std). Composed from forward operators.
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  const Node& n = b.node();
  const TensorType& x = b.type_of(b.input(0));
  const std::vector<int64_t> xs = dims_of(x);
  const std::vector<int64_t> keep = keep_dims_shape(b);
  std::vector<int64_t> axes;
  for (size_t i = 0; i < xs.size(); ++i)
    if (keep[i] == 1) axes.push_back(static_cast<int64_t>(i));
  const int64_t total = x.shape.num_elements().value();
  int64_t kept = 1;
  for (int64_t d : keep) kept *= d;
  const double count = kept > 0 ? static_cast<double>(total) / static_cast<double>(kept) : 0;
  const double divisor = count - static_cast<double>(int_attr(n, "ddof").value_or(0));
  if (divisor <= 0) b.unsupported("the divisor n - ddof is not positive");
  const DType dt = b.type_of(*dy).dtype;
  const TensorType kt{Shape::of(keep), dt}, xt{x.shape, dt};
  const ValueRef mean =
      b.emit1("ReduceMean", {b.input(0)}, kt, {{"axis", axes}, {"keep_dims", true}});
  const ValueRef d = b.emit1("Sub", {b.input(0), b.emit1("BroadcastTo", {mean}, xt)}, xt);
  ValueRef g = b.emit1("BroadcastTo", {b.emit1("Reshape", {*dy}, kt)}, xt);
  const bool std_dev = n.op == "ReduceStd";
  if (std_dev) {
    const ValueRef y = b.emit1("BroadcastTo", {b.emit1("Reshape", {b.output(0)}, kt)}, xt);
    g = b.emit1("Div", {g, y}, xt);
  }
  const ValueRef p = b.emit1("Mul", {d, g}, xt);
  b.grad_input(
      0, b.emit1("Mul", {p}, xt,
                 {{"scalar", (std_dev ? 1.0 : 2.0) / divisor}, {"scalar_index", int64_t{1}}}));
}

void g_narrow(GradBuilder& b) {
  // The slice's gradient put back in zeros: Pad with zeros before `start` and after the slice.
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  const Node& n = b.node();
  const std::vector<int64_t> x = dims_of(b.type_of(b.input(0)));
  const auto axis = int_attr(n, "axis");
  const auto start = int_attr(n, "start");
  const auto length = int_attr(n, "length");
  if (!axis || !start || !length) b.unsupported("Narrow's axis, start or length is not recorded");
  const auto a = static_cast<size_t>(norm_axis(b, *axis, x.size()));
  if (*start < 0 || *length < 0 || *start + *length > x[a]) b.unsupported("Narrow out of range");
  std::vector<int64_t> paddings(2 * x.size(), 0);
  paddings[2 * a] = *start;
  paddings[2 * a + 1] = x[a] - *start - *length;
  b.grad_input(0,
               b.emit1("Pad", {*dy}, TensorType{b.type_of(b.input(0)).shape, b.type_of(*dy).dtype},
                       {{"paddings", paddings}, {"mode", std::string("CONSTANT")}}));
}

void g_reduce_prod(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  const std::vector<int64_t> keep = keep_dims_shape(b);
  const DType dt = b.type_of(*dy).dtype;
  const ValueRef g = b.emit1("Reshape", {*dy}, TensorType{Shape::of(keep), dt});
  b.grad_input(
      0, b.emit1("ReduceProdGrad", {b.input(0), g}, TensorType{b.type_of(b.input(0)).shape, dt}));
}

void g_recurrent(GradBuilder& b) {
  // Backward through time in one kernel (RecurrentGrad) rather than the recurrence unrolled into
  // per-step graph nodes: the graph stays one node per layer whatever the sequence length, and
  // the kernel batches the weight gradients over all steps into one product each.
  const Node& n = b.node();
  const size_t states = n.op == "LSTM" ? 2 : 1;
  if (n.inputs.size() > 1 + states && any_dout(b))
    b.unsupported(std::string(n.op) + " with seq_length: the runtime does not run it");
  fused_layer_grad(b, "RecurrentGrad");
}

void g_multihead_attention(GradBuilder& b) {
  const Node& n = b.node();
  if (!any_dout(b)) return;
  if (n.inputs.size() != 3) {
    b.unsupported(
        "MultiheadAttention with a key_padding_mask or attn_mask: the runtime does not "
        "run it");
  }
  for (const std::string& p : n.params) {
    if (p.ends_with("bias_k") || p.ends_with("bias_v"))
      b.unsupported("MultiheadAttention with add_bias_kv: the runtime does not run it");
  }
  fused_layer_grad(b, "MultiheadAttentionGrad");
}

void g_norm(GradBuilder& b) {
  auto dy = dy0(b);
  if (!dy || !b.needs_input_grad(0)) return;
  const Node& n = b.node();
  const std::vector<int64_t> keep = keep_dims_shape(b);
  if (n.op == "Norm") {
    // A numeric ord (or 'inf', recorded as text) over one dim is a vector norm; over two dims a
    // matrix norm, which the runtime's forward does not run either.
    const AttrValue* ord = n.find_attr("ord");
    const auto* s = ord ? std::get_if<std::string>(ord) : nullptr;
    const std::vector<int64_t> x = dims_of(b.type_of(b.input(0)));
    size_t reduced = 0;
    for (size_t i = 0; i < x.size(); ++i) reduced += keep[i] == 1 && x[i] != 1 ? 1 : 0;
    const bool two_norm = ord == nullptr || std::holds_alternative<std::monostate>(*ord) ||
                          (s != nullptr && *s == "fro");
    if (s != nullptr && *s == "nuc") b.unsupported("the nuclear norm: the runtime does not run it");
    if (!two_norm && reduced > 1)
      b.unsupported("a matrix norm (ord over two dims): the runtime does not run it");
  }
  const DType dt = b.type_of(*dy).dtype;
  const ValueRef y = b.emit1("Reshape", {b.output(0)}, TensorType{Shape::of(keep), dt});
  const ValueRef g = b.emit1("Reshape", {*dy}, TensorType{Shape::of(keep), dt});
  std::vector<Attr> attrs = n.attrs;
  attrs.push_back({"forward_op", std::string(n.op)});
  b.grad_input(0, b.emit1("NormGrad", {b.input(0), y, g},
                          TensorType{b.type_of(b.input(0)).shape, dt}, attrs, {}, true));
}

void g_conv3d(GradBuilder& b) { layer_grad(b, "Conv3DGrad", true); }

void g_merge(GradBuilder& b) {
  // The join of an `if` on a tensor (condition, the `if` branch's value, the other's): the graph
  // holds both branches and the runtime's Merge picks one by the condition's value, so the
  // gradient goes to the branch taken, known only at run time: Select on the same condition
  // routes dy to one input and zeros to the other (MindSpore's gradient of the branch that did
  // not run is zero too).
  auto dy = dy0(b);
  if (!dy) return;
  const Node& n = b.node();
  if (n.inputs.size() != 3) {
    b.unsupported(
        "the condition of the `if` is not a tensor of the graph: which branch runs is "
        "not known");
  }
  const TensorType& ct = b.type_of(b.input(0));
  const auto count = ct.shape.num_elements();
  if (!count.is_known() || count.value() != 1) {
    b.unsupported(
        "the condition of the `if` is not a one-element tensor (its truth value is "
        "ambiguous)");
  }
  const ValueRef cond =
      b.emit1("Reshape", {b.input(0)}, TensorType{Shape::of(std::vector<int64_t>{}), ct.dtype});
  const TensorType& gt = b.type_of(*dy);
  for (size_t i = 1; i < 3; ++i) {
    if (!b.needs_input_grad(i)) continue;
    // Input 1 (the `if` branch) keeps dy where the condition holds; input 2 where it does not.
    const int64_t zero_at = i == 1 ? 2 : 1;
    ValueRef g = b.emit1("Select", {cond, *dy}, gt, {{"scalar", 0.0}, {"scalar_index", zero_at}});
    const TensorType& it = b.type_of(b.input(i));
    if (it.dtype != gt.dtype) g = b.emit1("Cast", {g}, TensorType{gt.shape, it.dtype});
    b.grad_input(i, g);
  }
}

}  // namespace graphcore::autodiff::rules
