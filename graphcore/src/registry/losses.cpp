// Losses: mindspore.nn's loss Cells and mindspore.ops' loss functions, onto the operators of
// graphcore/src/ops/loss.cpp. Signatures, defaults, the checks MindSpore makes at construction
// and the shapes/dtypes it accepts were checked against MindSpore 2.10 (inspect.signature,
// nn/loss/loss.py, ops/function/nn_func.py, and running the Cells on the CPU wheel).
//
// Node attributes the kernels read: reduction, ignore_index, label_smoothing, sparse, beta, and
// has_weight / has_pos_weight, set when the optional weight tensors are inputs of the node (after
// the input and the labels, in that order). The nn Cells' weights are constructor arguments: the
// entry lists them in ApiEntry::init_tensor_inputs, which makes them inputs of the node too.
#include "registry/rules.h"

namespace graphcore {

namespace {

using namespace rules;  // NOLINT(google-build-using-namespace): entries are written in rules' DSL

// MindSpore's own wording of the errors it raises, for the messages.
std::string raises(std::string_view type, std::string_view text) {
  return " (MindSpore raises " + std::string(type) + ": " + std::string(text) + ")";
}

std::string dtype_str(DType t) { return "mindspore." + std::string(dtype_name(t)); }

// LossBase.__init__ (and the functions): reduction must be 'none', 'mean' or 'sum'. A value that
// is not known is not checked.
bool check_reduction(ContextBase& ctx, std::string_view api, std::string_view cls) {
  const ArgValue& v = ctx.arg("reduction");
  if (v.is_unknown() || v.is_missing()) return true;
  auto s = v.as_str();
  if (s && (*s == "none" || *s == "mean" || *s == "sum")) return true;
  const std::string got = s ? *s : v.repr();
  ctx.error("invalid-argument",
            std::string(api) + ": 'reduction' must be 'mean', 'sum' or 'none', got " + v.repr() +
                raises("ValueError", "For '" + std::string(cls) +
                                         "', the 'reduction' must be in ['mean', 'sum', 'none'], "
                                         "but got " +
                                         got + "."),
            "reduction");
  return false;
}

// A float32/float16 tensor class weight (CrossEntropyLoss, NLLLoss check it at construction).
bool check_class_weight(InitContext& ctx, std::string_view api, std::string_view cls) {
  const ArgValue& w = ctx.arg("weight");
  if (!w.is_tensor()) {
    if (w.is_none() || w.is_missing() || w.is_unknown()) return true;
    ctx.error("invalid-argument",
              std::string(api) + ": 'weight' must be a Tensor, got " + w.repr() +
                  raises("TypeError",
                         "For '" + std::string(cls) + "', the type of 'weight' should be 'Tensor'"),
              "weight");
    return false;
  }
  DType d = w.tensor.dtype;
  if (d == DType::Unknown || d == DType::Float32 || d == DType::Float16) return true;
  ctx.error("dtype-error",
            std::string(api) + ": 'weight' must be float16 or float32, got " +
                std::string(dtype_name(d)) +
                raises("TypeError", "For '" + std::string(cls) +
                                        "', the 'weight' should be one of [mindspore.float16, "
                                        "mindspore.float32], but got '" +
                                        dtype_str(d) + "'."),
            "weight");
  return false;
}

// validator.check_value_type('ignore_index', ignore_index, int): a Python int (not a bool).
bool check_ignore_index(ContextBase& ctx, std::string_view api, std::string_view cls) {
  const ArgValue& v = ctx.arg("ignore_index");
  if (v.is_unknown() || v.is_missing() || v.kind == ArgValue::Kind::Int ||
      v.kind == ArgValue::Kind::SymInt)
    return true;
  ctx.error("invalid-argument",
            std::string(api) + ": 'ignore_index' must be an int, got " + v.repr() +
                raises("TypeError", "For '" + std::string(cls) +
                                        "', the type of 'ignore_index' should be 'int'"),
            "ignore_index");
  return false;
}

// The class weights as an input of the node: `has_weight`.
void note_weight(CallContext& ctx, const ArgValue& weight, const char* attr = "has_weight") {
  if (weight.is_tensor()) ctx.set_attr(attr, true);
}

DType float_or_f32(DType t) { return is_floating(t) ? t : DType::Float32; }

// The output when an input is not a known tensor: a scalar unless nothing is reduced.
void unknown_loss_output(CallContext& ctx, const std::string& reduction, DType dtype) {
  if (reduction == "none") {
    add_unknown_output(ctx, dtype);
  } else {
    ctx.add_output(TensorType{Shape::of(std::vector<int64_t>{}), dtype});
  }
}

// ---- CrossEntropyLoss / cross_entropy / NLLLoss / nll_loss -----------------------------------
struct ClassRule {
  std::string api;  // "nn.CrossEntropyLoss", "ops.cross_entropy"
  std::string cls;  // MindSpore's name in its messages
  bool nn = false;  // nn.CrossEntropyLoss's stricter _check_cross_entropy_inputs
  bool nll = false;
  std::string input, target;  // call parameter names
  bool cell = false;          // weight and reduction are constructor arguments
};

// The loss's output: a scalar, or with reduction 'none' the input's shape without the class axis
// (axis 1, or 0 for a 1-D input).
void class_output(CallContext& ctx, const TensorType& x, const std::string& reduction) {
  const DType dt = float_or_f32(x.dtype);
  if (reduction != "none") {
    ctx.add_output(TensorType{Shape::of(std::vector<int64_t>{}), dt});
  } else if (!x.shape.ranked) {
    add_unknown_output(ctx, dt);
  } else {
    Shape s = x.shape;
    s.dims.erase(s.dims.begin() + (s.rank() == 1 ? 0 : 1));
    ctx.add_output(TensorType{s, dt});
  }
  if (auto n = known_count(x.shape)) ctx.set_flops(*n * 6);
}

std::string reduction_of(const CallContext& ctx, bool from_init, const char* fallback) {
  const ArgValue& v = from_init ? ctx.init_arg("reduction") : ctx.arg("reduction");
  return v.as_str().value_or(fallback);
}

InferFn class_rule(const ClassRule& r) {
  return [r](CallContext& ctx) {
    if (!r.cell && !check_reduction(ctx, r.api, r.cls)) return;
    if (!r.cell && !check_ignore_index(ctx, r.api, r.cls)) return;
    auto x = tensor_arg(ctx, r.input);
    auto t = tensor_arg(ctx, r.target);
    if (ctx.failed()) return;
    const ArgValue& weight = r.cell ? ctx.init_arg("weight") : ctx.arg("weight");
    note_weight(ctx, weight);
    const std::string red = reduction_of(ctx, r.cell, "mean");
    if (!x) {
      unknown_loss_output(ctx, red, DType::Unknown);
      return;
    }
    // The input must be float (a log-softmax or log-probabilities).
    if (x->dtype != DType::Unknown && !is_floating(x->dtype)) {
      ctx.error("dtype-error",
                r.api + ": '" + r.input + "' must be float16 or float32, got " +
                    std::string(dtype_name(x->dtype)) +
                    raises("TypeError", "For '" + r.cls + "', the '" + r.input +
                                            "' should be one of [mindspore.float16, "
                                            "mindspore.float32], but got '" +
                                            dtype_str(x->dtype) + "'."),
                r.input);
      return;
    }
    if (x->shape.ranked && x->shape.rank() == 0) {
      ctx.error("rank-error", r.api + ": '" + r.input + "' must have a class axis, got a scalar",
                r.input);
      return;
    }
    if (t && x->shape.ranked && t->shape.ranked) {
      const size_t xr = x->shape.rank(), tr = t->shape.rank();
      const bool probabilities = xr == tr && !r.nll;
      const std::string shapes =
          "'" + r.input + "' " + x->shape.str() + " and '" + r.target + "' " + t->shape.str();
      if (!probabilities && tr + 1 != xr && !(!r.nn && tr == xr)) {
        ctx.error("rank-error",
                  r.api + ": " + shapes +
                      ": class indices need one dimension fewer than the input (N, C, d1, ...) "
                      "-> (N, d1, ...)" +
                      (r.nll ? "" : ", probabilities the input's shape"),
                  r.target);
        return;
      }
      if (probabilities) {
        // Probabilities must be float and of the input's shape.
        if (t->dtype != DType::Unknown && !is_floating(t->dtype)) {
          ctx.error("dtype-error",
                    r.api + ": " + shapes + " have one rank, so '" + r.target +
                        "' holds class probabilities and must be float, got " +
                        std::string(dtype_name(t->dtype)) +
                        "; class indices have one dimension fewer than the input" +
                        (r.nn ? raises("TypeError", "For '" + r.cls +
                                                        "', the 'labels' should be one of "
                                                        "[mindspore.float16, mindspore.float32], "
                                                        "but got '" +
                                                        dtype_str(t->dtype) + "'.")
                              : ""),
                    r.target);
          return;
        }
        for (size_t k = 0; k < xr; ++k) {
          if (dims_equal(x->shape.dims[k], t->shape.dims[k]) == Tri::No) {
            ctx.error("shape-mismatch",
                      r.api + ": class probabilities must have the input's shape, got " + shapes,
                      r.target);
            return;
          }
        }
      } else {
        // Class indices: int32 (nn.CrossEntropyLoss takes only int32), one per position.
        if (t->dtype != DType::Unknown) {
          const bool ok = r.nn ? t->dtype == DType::Int32
                               : (t->dtype == DType::Int32 || t->dtype == DType::Int64);
          if (!ok) {
            const std::string want = r.nn ? "int32" : "int32 or int64";
            ctx.error("dtype-error",
                      r.api + ": class indices '" + r.target + "' must be " + want + ", got " +
                          std::string(dtype_name(t->dtype)) +
                          (r.nn ? raises("TypeError", "For '" + r.cls +
                                                          "', the 'labels' should be one of "
                                                          "[mindspore.int32], but got '" +
                                                          dtype_str(t->dtype) + "'.")
                                : ""),
                      r.target);
            return;
          }
        }
        if (tr + 1 == xr) {
          // (N, C, d1, ...) -> (N, d1, ...); a 1-D input takes a scalar label.
          for (size_t k = 0; k < tr; ++k) {
            const Dim& xd = x->shape.dims[k == 0 ? 0 : k + 1];
            if (dims_equal(xd, t->shape.dims[k]) == Tri::No) {
              ctx.error(
                  "shape-mismatch",
                  r.api + ": " + shapes + " do not match: the labels of an input (N, C, " +
                      "d1, ...) are (N, d1, ...)" +
                      (k == 0 ? " (batch " + xd.str() + " vs " + t->shape.dims[0].str() + ")" : ""),
                  r.target);
              return;
            }
          }
        }
      }
    }
    class_output(ctx, *x, red);
  };
}

// ---- MSE / L1 / SmoothL1 ---------------------------------------------------------------------
struct PointwiseRule {
  std::string api, cls;
  bool nn = false;
  bool same_shape = false;  // SmoothL1Loss: no broadcasting
  bool float_only = false;  // SmoothL1Loss: the CPU kernel takes float only
  const char* default_reduction = "mean";
  std::string input, target;
};

InferFn pointwise_rule(const PointwiseRule& r) {
  return [r](CallContext& ctx) {
    if (!r.nn && !check_reduction(ctx, r.api, r.cls)) return;
    if (!r.nn && r.api == "ops.smooth_l1_loss") {
      if (auto beta = ctx.arg("beta").as_float(); beta && *beta < 0) {
        ctx.error("invalid-argument",
                  r.api + ": 'beta' must not be negative, got " + ctx.arg("beta").repr(), "beta");
        return;
      }
    }
    auto x = tensor_arg(ctx, r.input);
    auto y = tensor_arg(ctx, r.target);
    if (ctx.failed()) return;
    const std::string red = reduction_of(ctx, r.nn, r.default_reduction);
    if (!x || !y) {
      unknown_loss_output(ctx, red, x ? float_or_f32(x->dtype) : DType::Unknown);
      return;
    }
    if (r.float_only) {
      for (const auto& [name, t] : {std::pair{r.input, *x}, std::pair{r.target, *y}}) {
        if (t.dtype != DType::Unknown && !is_floating(t.dtype)) {
          ctx.error("dtype-error",
                    r.api + ": '" + name + "' must be float, got " +
                        std::string(dtype_name(t.dtype)) +
                        raises("TypeError",
                               "Select CPU operator[SmoothL1Loss] fail! Unsupported data type!"),
                    name);
          return;
        }
      }
    }
    Shape out = x->shape;
    if (r.same_shape) {
      if (x->shape.ranked && y->shape.ranked) {
        bool differ = x->shape.rank() != y->shape.rank();
        for (size_t k = 0; !differ && k < x->shape.rank(); ++k)
          differ = dims_equal(x->shape.dims[k], y->shape.dims[k]) == Tri::No;
        if (differ) {
          ctx.error("shape-mismatch",
                    r.api + ": '" + r.input + "' " + x->shape.str() + " and '" + r.target + "' " +
                        y->shape.str() + " must have the same shape (SmoothL1Loss does not " +
                        "broadcast)",
                    r.target);
          return;
        }
      }
    } else {
      auto b = broadcast_all(ctx, r.api, {x->shape, y->shape});
      if (!b) return;
      out = *b;
    }
    const DType dt = float_or_f32(promote(x->dtype, y->dtype));
    if (red == "none") {
      ctx.add_output(TensorType{out, dt});
    } else {
      ctx.add_output(TensorType{Shape::of(std::vector<int64_t>{}), dt});
    }
    if (auto n = known_count(out)) ctx.set_flops(*n * 3);
  };
}

// ---- BCEWithLogitsLoss / binary_cross_entropy_with_logits -----------------------------------
InferFn bce_rule(const std::string& api, bool nn) {
  return [api, nn](CallContext& ctx) {
    if (!nn && !check_reduction(ctx, api, "BCEWithLogitsLoss")) return;
    auto x = tensor_arg(ctx, "input");
    auto y = tensor_arg(ctx, "target");
    if (ctx.failed()) return;
    const ArgValue& w = nn ? ctx.init_arg("weight") : ctx.arg("weight");
    const ArgValue& pw = nn ? ctx.init_arg("pos_weight") : ctx.arg("pos_weight");
    note_weight(ctx, w);
    note_weight(ctx, pw, "has_pos_weight");
    const std::string red = reduction_of(ctx, nn, "mean");
    if (!x || !y) {
      unknown_loss_output(ctx, red, x ? float_or_f32(x->dtype) : DType::Unknown);
      return;
    }
    for (const auto& [name, t] : {std::pair{"input", *x}, std::pair{"target", *y}}) {
      if (t.dtype != DType::Unknown && !is_floating(t.dtype)) {
        ctx.error("dtype-error",
                  api + ": '" + name + "' must be float, got " + std::string(dtype_name(t.dtype)) +
                      raises("TypeError", "For primitive[BCEWithLogitsLoss], the input argument[" +
                                              std::string(name) +
                                              "] must be a type of {BFloat16, Float16, Float32}"),
                  name);
        return;
      }
    }
    if (x->shape.ranked && y->shape.ranked) {
      bool differ = x->shape.rank() != y->shape.rank();
      for (size_t k = 0; !differ && k < x->shape.rank(); ++k)
        differ = dims_equal(x->shape.dims[k], y->shape.dims[k]) == Tri::No;
      if (differ) {
        ctx.error("shape-mismatch",
                  api + ": 'input' " + x->shape.str() + " and 'target' " + y->shape.str() +
                      " must have the same shape" +
                      raises("ValueError",
                             "For 'BCEWithLogitsLoss', two inputs 'input' and "
                             "'target' shape are not equal"),
                  "target");
        return;
      }
    }
    // weight and pos_weight broadcast to the input.
    for (const auto& [name, v] : {std::pair{"weight", &w}, std::pair{"pos_weight", &pw}}) {
      if (!v->is_tensor() || !x->shape.ranked || !v->tensor.shape.ranked) continue;
      std::string why;
      auto b = broadcast_shapes(x->shape, v->tensor.shape, &why);
      bool fits = b.has_value() && b->rank() == x->shape.rank();
      for (size_t k = 0; fits && k < b->rank(); ++k)
        fits = dims_equal(b->dims[k], x->shape.dims[k]) != Tri::No;
      if (!fits) {
        ctx.error("broadcast-error",
                  api + ": '" + std::string(name) + "' " + v->tensor.shape.str() +
                      " does not broadcast to the input's shape " + x->shape.str(),
                  nn ? std::string_view{} : std::string_view(name));
        return;
      }
    }
    const DType dt = float_or_f32(x->dtype);
    if (red == "none") {
      ctx.add_output(TensorType{x->shape, dt});
    } else {
      ctx.add_output(TensorType{Shape::of(std::vector<int64_t>{}), dt});
    }
    if (auto n = known_count(x->shape)) ctx.set_flops(*n * 8);
  };
}

// ---- SoftmaxCrossEntropyWithLogits -----------------------------------------------------------
// construct: sparse labels with reduction 'mean' go to SparseSoftmaxCrossEntropyWithLogits
// (logits (..., C), labels (...), int32/int64); otherwise (sparse labels are one-hot encoded
// first) to SoftmaxCrossEntropyWithLogits, which takes 2-D logits and labels of their shape and
// dtype, and LossBase.get_loss reduces the per-sample losses.
void sce_infer(CallContext& ctx) {
  constexpr std::string_view api = "nn.SoftmaxCrossEntropyWithLogits";
  auto x = tensor_arg(ctx, "logits");
  auto t = tensor_arg(ctx, "labels");
  if (ctx.failed()) return;
  const bool sparse = ctx.init_arg("sparse").as_bool().value_or(false);
  const std::string red = reduction_of(ctx, true, "none");
  if (!x) {
    unknown_loss_output(ctx, red, DType::Unknown);
    return;
  }
  if (!require_float(ctx, api, x->dtype, "logits")) return;
  const bool sparse_mean = sparse && red == "mean";
  if (!sparse_mean && x->shape.ranked && x->shape.rank() != 2) {
    ctx.error("rank-error",
              std::string(api) + ": logits must be 2-D (N, C)" +
                  (sparse ? " unless sparse=True with reduction='mean'" : std::string()) +
                  ", got " + x->shape.str() +
                  raises("ValueError",
                         "For primitive[SoftmaxCrossEntropyWithLogits], the "
                         "dimension of logits must be equal to 2, but got " +
                             std::to_string(x->shape.rank()) + "."),
              "logits");
    return;
  }
  if (t) {
    if (sparse && t->dtype != DType::Unknown && t->dtype != DType::Int32 &&
        t->dtype != DType::Int64) {
      ctx.error(
          "dtype-error",
          std::string(api) + ": sparse labels are class indices and must be int32 or " +
              "int64, got " + std::string(dtype_name(t->dtype)) +
              raises(
                  "TypeError",
                  "For primitive[" +
                      std::string(sparse_mean ? "SparseSoftmaxCrossEntropyWithLogits" : "OneHot") +
                      "], the input argument[" + (sparse_mean ? "labels_type" : "indices") +
                      "] must be a type of {Tensor[Int32], Tensor[Int64]}"),
          "labels");
      return;
    }
    if (!sparse && t->dtype != DType::Unknown && x->dtype != DType::Unknown &&
        t->dtype != x->dtype) {
      ctx.error("dtype-error",
                std::string(api) + ": dense labels must have the logits' dtype (" +
                    std::string(dtype_name(x->dtype)) + "), got " +
                    std::string(dtype_name(t->dtype)) + "; class indices need sparse=True" +
                    raises("TypeError",
                           "For primitive[SoftmaxCrossEntropyWithLogits], the input type must be "
                           "same."),
                "labels");
      return;
    }
    if (x->shape.ranked && t->shape.ranked) {
      const size_t xr = x->shape.rank(), tr = t->shape.rank();
      bool bad = sparse ? tr + 1 != xr : tr != xr;
      for (size_t k = 0; !bad && k < tr; ++k)
        bad = dims_equal(x->shape.dims[k], t->shape.dims[k]) == Tri::No;
      if (bad) {
        ctx.error(sparse && tr + 1 != xr ? "rank-error" : "shape-mismatch",
                  std::string(api) + ": logits " + x->shape.str() + " and labels " +
                      t->shape.str() +
                      (sparse ? " do not match: sparse labels have the logits' shape without its "
                                "last (class) axis"
                              : " do not match: dense labels have the logits' shape"),
                  "labels");
        return;
      }
    }
  }
  const DType dt = float_or_f32(x->dtype);
  if (red != "none") {
    ctx.add_output(TensorType{Shape::of(std::vector<int64_t>{}), dt});
  } else if (!x->shape.ranked) {
    add_unknown_output(ctx, dt);
  } else {
    Shape s = x->shape;
    s.dims.pop_back();
    ctx.add_output(TensorType{s, dt});
  }
  if (auto n = known_count(x->shape)) ctx.set_flops(*n * 6);
}

ApiEntry loss_cell(std::string name, std::string op, std::vector<ParamSpec> init,
                   std::vector<ParamSpec> call, InitFn init_fn, InferFn infer,
                   std::string summary) {
  ApiEntry e;
  e.name = std::move(name);
  e.kind = ApiKind::CellClass;
  e.op = std::move(op);
  e.init_params = std::move(init);
  e.call_params = std::move(call);
  e.init = std::move(init_fn);
  e.infer = std::move(infer);
  e.summary = std::move(summary);
  return e;
}

void copy_attrs(InitContext& ctx, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) {
    if (auto a = ctx.arg(n).as_attr()) ctx.set_attr(std::string(n), std::move(*a));
  }
}

void function(Registry& r, std::string name, std::string op, std::vector<ParamSpec> params,
              InferFn infer, std::string summary) {
  ApiEntry e;
  e.name = std::move(name);
  e.kind = ApiKind::Function;
  e.op = std::move(op);
  e.call_params = std::move(params);
  e.infer = std::move(infer);
  e.summary = std::move(summary);
  r.add(std::move(e));
}

}  // namespace

void register_losses(Registry& r) {
  // nn.SoftmaxCrossEntropyWithLogits(sparse=False, reduction='none')
  r.add(loss_cell(
      "nn.SoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyWithLogits",
      {P("sparse", "False"), P("reduction", "'none'")}, {P("logits"), P("labels")},
      [](InitContext& ctx) {
        const ArgValue& s = ctx.arg("sparse");
        if (!s.is_unknown() && s.kind != ArgValue::Kind::Bool) {
          ctx.error("invalid-argument",
                    "nn.SoftmaxCrossEntropyWithLogits: 'sparse' must be a bool, got " + s.repr() +
                        raises("TypeError",
                               "For 'SoftmaxCrossEntropyWithLogits', the 'sparse' must be a bool"),
                    "sparse");
          return;
        }
        if (!check_reduction(ctx, "nn.SoftmaxCrossEntropyWithLogits",
                             "SoftmaxCrossEntropyWithLogits"))
          return;
        copy_attrs(ctx, {"sparse", "reduction"});
      },
      sce_infer, "softmax cross entropy between logits and (sparse or one-hot) labels"));

  // nn.CrossEntropyLoss(weight=None, ignore_index=-100, reduction='mean', label_smoothing=0.0)
  {
    ApiEntry e = loss_cell(
        "nn.CrossEntropyLoss", "CrossEntropyLoss",
        {P("weight", "None"), P("ignore_index", "-100"), P("reduction", "'mean'"),
         P("label_smoothing", "0.0")},
        {P("logits"), P("labels")},
        [](InitContext& ctx) {
          constexpr std::string_view api = "nn.CrossEntropyLoss", cls = "CrossEntropyLoss";
          if (!check_reduction(ctx, api, cls) || !check_ignore_index(ctx, api, cls)) return;
          const ArgValue& ls = ctx.arg("label_smoothing");
          if (!ls.is_unknown() && ls.kind != ArgValue::Kind::Float) {
            ctx.error("invalid-argument",
                      std::string(api) + ": 'label_smoothing' must be a float, got " + ls.repr() +
                          raises("TypeError",
                                 "For 'CrossEntropyLoss', the type of "
                                 "'label_smoothing' should be 'float'"),
                      "label_smoothing");
            return;
          }
          if (ls.kind == ArgValue::Kind::Float && !(ls.f >= 0.0 && ls.f <= 1.0)) {
            ctx.error("invalid-argument",
                      std::string(api) + ": 'label_smoothing' must be in [0.0, 1.0], got " +
                          ls.repr() +
                          raises("ValueError",
                                 "For 'CrossEntropyLoss', the 'label_smoothing' "
                                 "must be in range of [0.0, 1.0]"),
                      "label_smoothing");
            return;
          }
          if (!check_class_weight(ctx, api, cls)) return;
          copy_attrs(ctx, {"ignore_index", "reduction", "label_smoothing"});
        },
        class_rule(
            {"nn.CrossEntropyLoss", "CrossEntropyLoss", true, false, "logits", "labels", true}),
        "cross entropy of logits against class indices or class probabilities");
    e.init_tensor_inputs = {"weight"};
    r.add(std::move(e));
  }

  // nn.NLLLoss(weight=None, ignore_index=-100, reduction='mean')
  {
    ApiEntry e = loss_cell(
        "nn.NLLLoss", "NLLLoss",
        {P("weight", "None"), P("ignore_index", "-100"), P("reduction", "'mean'")},
        {P("logits"), P("labels")},
        [](InitContext& ctx) {
          constexpr std::string_view api = "nn.NLLLoss", cls = "NLLLoss";
          if (!check_reduction(ctx, api, cls) || !check_ignore_index(ctx, api, cls)) return;
          if (!check_class_weight(ctx, api, cls)) return;
          copy_attrs(ctx, {"ignore_index", "reduction"});
        },
        class_rule({"nn.NLLLoss", "NLLLoss", false, true, "logits", "labels", true}),
        "negative log likelihood of log-probabilities against class indices");
    e.init_tensor_inputs = {"weight"};
    r.add(std::move(e));
  }

  // nn.MSELoss(reduction='mean'), nn.L1Loss(reduction='mean')
  for (const auto& [name, op, cls] : {std::tuple{"nn.MSELoss", "MSELoss", "MSELoss"},
                                      std::tuple{"nn.L1Loss", "L1Loss", "L1Loss"}}) {
    std::string api = name, c = cls;
    r.add(loss_cell(
        name, op, {P("reduction", "'mean'")}, {P("logits"), P("labels")},
        [api, c](InitContext& ctx) {
          if (check_reduction(ctx, api, c)) copy_attrs(ctx, {"reduction"});
        },
        pointwise_rule({api, c, true, false, false, "mean", "logits", "labels"}),
        op == std::string_view("MSELoss") ? "mean squared error" : "mean absolute error"));
  }

  // nn.SmoothL1Loss(beta=1.0, reduction='none')
  r.add(loss_cell(
      "nn.SmoothL1Loss", "SmoothL1Loss", {P("beta", "1.0"), P("reduction", "'none'")},
      {P("logits"), P("labels")},
      [](InitContext& ctx) {
        if (!check_reduction(ctx, "nn.SmoothL1Loss", "SmoothL1Loss")) return;
        // A negative beta fails at construction, 0 at the first call ("the values for beta
        // should greater than 0").
        if (auto beta = ctx.arg("beta").as_float(); beta && *beta <= 0) {
          ctx.error("invalid-argument",
                    "nn.SmoothL1Loss: 'beta' must be greater than 0, got " + ctx.arg("beta").repr(),
                    "beta");
          return;
        }
        copy_attrs(ctx, {"beta", "reduction"});
      },
      pointwise_rule(
          {"nn.SmoothL1Loss", "SmoothL1Loss", true, true, true, "none", "logits", "labels"}),
      "smooth L1 (Huber-like) loss"));

  // nn.BCEWithLogitsLoss(reduction='mean', weight=None, pos_weight=None)
  {
    ApiEntry e = loss_cell(
        "nn.BCEWithLogitsLoss", "BCEWithLogitsLoss",
        {P("reduction", "'mean'"), P("weight", "None"), P("pos_weight", "None")},
        {P("input"), P("target")},
        [](InitContext& ctx) {
          // An invalid reduction fails at construction (in 2.10 with an AttributeError from
          // the primitive's own check).
          if (!check_reduction(ctx, "nn.BCEWithLogitsLoss", "BCEWithLogitsLoss")) return;
          copy_attrs(ctx, {"reduction"});
        },
        bce_rule("nn.BCEWithLogitsLoss", true), "binary cross entropy of logits");
    e.init_tensor_inputs = {"weight", "pos_weight"};
    r.add(std::move(e));
  }

  // Functional forms.
  function(r, "ops.cross_entropy", "CrossEntropyLoss",
           {P("input"), P("target"), P("weight", "None"), P("ignore_index", "-100"),
            P("reduction", "'mean'"), P("label_smoothing", "0.0")},
           class_rule({"ops.cross_entropy", "cross_entropy_loss", false, false, "input", "target"}),
           "cross entropy of logits against class indices or class probabilities");
  function(r, "ops.nll_loss", "NLLLoss",
           {P("inputs"), P("target"), P("weight", "None"), P("ignore_index", "-100"),
            P("reduction", "'mean'"), P("label_smoothing", "0.0")},
           class_rule({"ops.nll_loss", "nll_loss", false, true, "inputs", "target"}),
           "negative log likelihood of log-probabilities against class indices");
  function(
      r, "ops.mse_loss", "MSELoss", {P("input"), P("target"), P("reduction", "'mean'")},
      pointwise_rule({"ops.mse_loss", "mse_loss", false, false, false, "mean", "input", "target"}),
      "mean squared error");
  function(
      r, "ops.l1_loss", "L1Loss", {P("input"), P("target"), P("reduction", "'mean'")},
      pointwise_rule({"ops.l1_loss", "l1_loss", false, false, false, "mean", "input", "target"}),
      "mean absolute error");
  function(r, "ops.smooth_l1_loss", "SmoothL1Loss",
           {P("input"), P("target"), P("beta", "1.0"), P("reduction", "'none'")},
           pointwise_rule({"ops.smooth_l1_loss", "SmoothL1Loss", false, true, true, "none", "input",
                           "target"}),
           "smooth L1 (Huber-like) loss");
  function(r, "ops.binary_cross_entropy_with_logits", "BCEWithLogitsLoss",
           {P("input"), P("target"), P("weight", "None"), P("pos_weight", "None"),
            P("reduction", "'mean'")},
           bce_rule("ops.binary_cross_entropy_with_logits", false),
           "binary cross entropy of logits");
}

}  // namespace graphcore
