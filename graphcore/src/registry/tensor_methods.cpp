// Tensor methods (x.reshape(...)). call_params[0] is the tensor itself ("self"). MindSpore 2.10
// implements most of these as builtins with overloaded signatures (dim/keepdim next to the older
// axis/keep_dims); the older spellings are listed as keyword-only aliases.
#include <algorithm>

#include "registry/op_rules.h"

namespace graphcore {

namespace {

using namespace rules;  // NOLINT(google-build-using-namespace): entries are written in rules' DSL

void method(Registry& r, const std::string& name, std::string op, std::vector<ParamSpec> params,
            InferFn infer, std::string summary, bool tuple = false) {
  ApiEntry e;
  e.name = "Tensor." + name;
  e.kind = ApiKind::TensorMethod;
  e.op = std::move(op);
  e.call_params = {P("self")};
  e.call_params.insert(e.call_params.end(), params.begin(), params.end());
  e.infer = std::move(infer);
  e.summary = std::move(summary);
  e.returns_tuple = tuple;
  r.add(std::move(e));
}

std::string api(const std::string& name) { return "Tensor." + name; }

void register_elementwise(Registry& r) {
  struct Row {
    const char* name;
    const char* op;
    UnaryDType dtype;
  };
  const std::vector<Row> unary = {
      {"abs", "Abs", UnaryDType::Keep},
      {"neg", "Neg", UnaryDType::Keep},
      {"square", "Square", UnaryDType::Keep},
      {"exp", "Exp", UnaryDType::FloatOnly},
      {"log", "Log", UnaryDType::FloatOnly},
      {"sqrt", "Sqrt", UnaryDType::ToFloat},
      {"sigmoid", "Sigmoid", UnaryDType::FloatOnly},
      {"tanh", "Tanh", UnaryDType::FloatOnly},
      {"floor", "Floor", UnaryDType::Keep},
      {"round", "Round", UnaryDType::Keep},
      {"contiguous", "Identity", UnaryDType::Keep},
      {"copy", "Identity", UnaryDType::Keep},
  };
  for (const Row& u : unary) {
    method(r, u.name, u.op, {}, unary_rule(api(u.name), "self", u.dtype),
           std::string("elementwise ") + u.name);
  }
  struct Bin {
    const char* name;
    const char* op;
    BinaryDType dtype;
  };
  const std::vector<Bin> binary = {
      {"add", "Add", BinaryDType::Promote}, {"sub", "Sub", BinaryDType::Promote},
      {"mul", "Mul", BinaryDType::Promote}, {"div", "Div", BinaryDType::TrueDiv},
      {"pow", "Pow", BinaryDType::Promote},
  };
  for (const Bin& b : binary) {
    std::string other = std::string(b.name) == "pow" ? "exponent" : "other";
    method(r, b.name, b.op, {P(other)}, binary_rule(api(b.name), "self", other, b.dtype),
           std::string("elementwise ") + b.name + " with broadcasting");
  }
  const std::vector<std::pair<const char*, DType>> casts = {{"float", DType::Float32},
                                                            {"half", DType::Float16},
                                                            {"int", DType::Int32},
                                                            {"long", DType::Int64},
                                                            {"bool", DType::Bool}};
  for (auto [name, dt] : casts) {
    method(r, name, "Cast", {}, to_dtype_rule(api(name), "self", dt),
           std::string("cast to ") + std::string(dtype_name(dt)));
  }
  method(r, "astype", "Cast", {P("dtype"), P("copy", "True")},
         cast_rule(api("astype"), "self", "dtype"), "cast to dtype");
  method(
      r, "type_as", "Cast", {P("other")},
      [](CallContext& ctx) {
        auto t = tensor_arg(ctx, "self");
        auto o = tensor_arg(ctx, "other");
        if (!t || !t->shape.ranked) return add_unknown_output(ctx, o ? o->dtype : DType::Unknown);
        ctx.add_output({t->shape, o ? o->dtype : DType::Unknown});
      },
      "cast to other's dtype");
  method(r, "clip", "ClipByValue", {P("min", "None"), P("max", "None")},
         clamp_rule(api("clip"), "self", "min", "max"), "clamps to [min, max]");
  method(r, "clamp", "ClipByValue", {P("min", "None"), P("max", "None")},
         clamp_rule(api("clamp"), "self", "min", "max"), "clamps to [min, max]");
  method(r, "masked_fill", "MaskedFill", {P("mask"), P("value")},
         masked_fill_rule(api("masked_fill"), "self", "mask", "value"),
         "fills positions where mask is True");
  method(r, "matmul", "MatMul", {P("tensor2")},
         matmul_rule(api("matmul"), "self", "tensor2", MatMulKind::NumPy), "matrix product");
  method(r, "softmax", "Softmax", {P("axis"), P("dtype", "None")},
         unary_rule(api("softmax"), "self", UnaryDType::FloatOnly, 3), "softmax over axis");
  // The dim is recorded as `axis` too, the attribute ops.cumsum records and the runtime's kernel
  // and the exporters read.
  method(
      r, "cumsum", "CumSum", {P("dim"), KW("dtype", "None")},
      // `dtype` is the output's (edgenext's `not_mask.cumsum(1, dtype=ms.float32)` on a bool
      // mask is float32 in MindSpore 2.10); None keeps the input's.
      [rule = on_tensor("self",
                        [](CallContext& c, const TensorType& t) {
                          c.add_output({t.shape, dtype_value(c.arg("dtype")).value_or(t.dtype)});
                          flops_per_element(c, t.shape, 1);
                        })](CallContext& ctx) {
        rule(ctx);
        if (auto d = ctx.arg("dim").as_int()) ctx.set_attr("axis", *d);
      },
      "cumulative sum along dim");
}

void register_reductions(Registry& r) {
  // Each takes dim/keepdim (2.x) with axis/keep_dims/keepdims accepted as keyword aliases.
  auto params = [](bool with_dtype) {
    std::vector<ParamSpec> p = {P("dim", "None"), P("keepdim", "False")};
    if (with_dtype) p.push_back(KW("dtype", "None"));
    p.push_back(KW("axis", "None"));
    p.push_back(KW("keep_dims", "False"));
    p.push_back(KW("keepdims", "False"));
    return p;
  };
  ReduceNames names{{"dim", "axis"}, {"keepdim", "keep_dims", "keepdims"}, {"dtype"}};
  method(r, "mean", "ReduceMean", params(true),
         reduce_rule(api("mean"), "self", names, ReduceDType::Keep), "mean over dim");
  method(r, "sum", "ReduceSum", params(true),
         reduce_rule(api("sum"), "self", names, ReduceDType::SumInt64),
         "sum over dim (integer inputs sum to int64)");
  method(r, "prod", "ReduceProd", params(true),
         reduce_rule(api("prod"), "self", names, ReduceDType::Keep), "product over dim");
  // x.max() / x.max(axis=1) give a tensor; x.max(dim) gives (values, indices). The registry
  // follows the keyword `axis` form; a positional dim is the 2.x torch-style overload.
  for (const char* name : {"max", "min"}) {
    std::string a = api(name);
    method(
        r, name, name[1] == 'a' ? "ReduceMax" : "ReduceMin", params(false),
        [a, names](CallContext& ctx) {
          bool positional_dim = ctx.arg("dim").kind == ArgValue::Kind::Int;
          reduce_rule(a, "self", names, ReduceDType::Keep, positional_dim)(ctx);
        },
        std::string(name) + " over axis; x." + name + "(dim) returns (values, indices)");
  }
  // MindSpore 2.10 (CPU): x.argmax gives int64 indices, x.argmin int32.
  for (const char* name : {"argmax", "argmin"}) {
    const bool is_max = std::string_view(name) == "argmax";
    method(
        r, name, is_max ? "Argmax" : "Argmin", params(false),
        reduce_rule(api(name), "self", names, is_max ? ReduceDType::ToInt64 : ReduceDType::ToInt32),
        is_max ? "int64 index of the maximum over dim" : "int32 index of the minimum over dim");
  }
  for (const char* name : {"std", "var"}) {
    std::vector<ParamSpec> p = {P("axis", "None"), P("ddof", "0"),        P("keepdims", "False"),
                                KW("dim", "None"), KW("correction", "1"), KW("keepdim", "False")};
    // The divisor is n - ddof; a `correction` written by the user replaces ddof (MindSpore
    // 2.10 on CPU: x.std(dim=1) divides by n, x.std(dim=1, correction=1) by n - 1). The kernel
    // reads `ddof`.
    auto rule = reduce_rule(api(name), "self", {{"axis", "dim"}, {"keepdims", "keepdim"}, {}},
                            ReduceDType::Keep);
    method(
        r, name, name[0] == 's' ? "ReduceStd" : "ReduceVar", p,
        [rule](CallContext& ctx) {
          rule(ctx);
          const ArgValue& correction = ctx.arg("correction");
          if (correction.explicit_arg)
            if (auto v = correction.as_int()) ctx.set_attr("ddof", *v);
        },
        std::string(name) + " over axis");
  }
  method(r, "norm", "Norm",
         {P("ord", "None"), P("dim", "None"), P("keepdim", "False"), KW("dtype", "None")},
         norm_rule(api("norm"), "self", {"dim"}, {"keepdim"}), "norm over dim");
}

void register_shape_methods(Registry& r) {
  // x.reshape(2, -1), x.reshape((2, -1)) and x.reshape(shape=(2, -1)) (every 2.7-2.10 release).
  method(r, "reshape", "Reshape", {P("shape"), VAR("args")},
         reshape_rule(api("reshape"), "self", "shape"),
         "reshape: x.reshape(2, -1) or x.reshape((2, -1))");
  // x.view(*shape): `shape=` is accepted since MindSpore 2.7.1 (2.7.0's view was a Python
  // method taking only *shape); x.view(dtype) reinterprets the bytes since 2.8.0.
  method(
      r, "view", "Reshape",
      {since(kMs2_7_1, P("shape")), until(kMs2_7_1, VAR("shape")), since(kMs2_7_1, VAR("args"))},
      [shape_rule = reshape_rule(api("view"), "self", "shape")](CallContext& ctx) {
        const ArgValue& named = ctx.arg("shape");
        const std::vector<ArgValue>& rest = ctx.varargs();
        bool one = named.is_missing() ? rest.size() == 1 : rest.empty();
        const ArgValue& first = named.is_missing() && !rest.empty() ? rest[0] : named;
        if (!one || first.kind != ArgValue::Kind::DType) return shape_rule(ctx);
        if (ctx.version() < kMs2_8_0) {
          ctx.error("invalid-argument",
                    "Tensor.view: MindSpore " + ctx.version().str() +
                        " takes a shape, not a dtype (x.view(dtype) exists since MindSpore 2.8.0)",
                    "shape");
          return;
        }
        auto t = tensor_arg(ctx, "self");
        if (!t) return add_unknown_output(ctx, first.dtype);
        auto from = static_cast<int64_t>(dtype_size(t->dtype));
        auto to = static_cast<int64_t>(dtype_size(first.dtype));
        if (from == to) return ctx.add_output({t->shape, first.dtype});
        if (!t->shape.ranked || t->shape.rank() == 0 || from == 0 || to == 0)
          return add_unknown_output(ctx, first.dtype);
        Shape out = t->shape;
        Dim& last = out.dims.back();
        if (to < from) {
          if (!last.is_unknown()) last = last * Dim::known(from / to);
        } else if (last.is_known() && last.value() % (to / from) != 0) {
          ctx.error("invalid-argument",
                    "Tensor.view: the last dimension of " + t->shape.str() +
                        " must be divisible by " + std::to_string(to / from) + " to view " +
                        std::string(dtype_name(t->dtype)) + " as " +
                        std::string(dtype_name(first.dtype)),
                    "shape");
          return;
        } else if (!last.is_unknown()) {
          last = Dim::exact_div(last, Dim::known(to / from)).value_or(Dim::unknown());
        }
        ctx.add_output({out, first.dtype});
      },
      "reshape view: x.view(2, -1); x.view(dtype) reinterprets the bytes (2.8.0+)");
  method(
      r, "reshape_as", "Reshape", {P("other")},
      [](CallContext& ctx) {
        auto t = tensor_arg(ctx, "self");
        auto o = tensor_arg(ctx, "other");
        if (!t || !o || !o->shape.ranked)
          return add_unknown_output(ctx, t ? t->dtype : DType::Unknown);
        if (auto s = reshape_shape(ctx, api("reshape_as"), t->shape, o->shape.dims))
          ctx.add_output({*s, t->dtype});
      },
      "reshape to other's shape");
  // x.permute(*dims): `dims=` is accepted since MindSpore 2.7.1.
  method(r, "permute", "Transpose",
         {since(kMs2_7_1, P("dims")), until(kMs2_7_1, VAR("dims")), since(kMs2_7_1, VAR("args"))},
         permute_rule(api("permute"), "self", "dims"), "permutes all axes: x.permute(0, 2, 1)");
  // x.transpose(0, 2) swaps two axes (2.x); x.transpose((2, 0, 1)) or x.transpose(2, 0, 1)
  // with a full permutation keeps the older meaning.
  method(
      r, "transpose", "Transpose", {VAR("axes")},
      [](CallContext& ctx) {
        const std::vector<ArgValue>& va = ctx.varargs();
        auto t = tensor_arg(ctx, "self");
        bool swap2 = va.size() == 2 && t && t->shape.ranked && va[0].kind == ArgValue::Kind::Int &&
                     va[1].kind == ArgValue::Kind::Int;
        if (swap2) {
          auto a = normalize_axis(va[0].i, t->shape.rank());
          auto b = normalize_axis(va[1].i, t->shape.rank());
          if (!a || !b) {
            ctx.error("axis-error", "Tensor.transpose: axes (" + std::to_string(va[0].i) + ", " +
                                        std::to_string(va[1].i) + ") out of range for shape " +
                                        t->shape.str());
            return;
          }
          Shape out = t->shape;
          std::swap(out.dims[*a], out.dims[*b]);
          ctx.add_output({out, t->dtype});
          return;
        }
        permute_rule(api("transpose"), "self", "axes")(ctx);
      },
      "x.transpose(dim0, dim1) swaps two axes; x.transpose(*axes) permutes");
  method(r, "swapaxes", "Transpose", {P("axis0"), P("axis1")},
         swap_rule(api("swapaxes"), "self", "axis0", "axis1"), "swaps two axes");
  method(r, "t", "Transpose", {},
         on_tensor("self",
                   [](CallContext& ctx, const TensorType& t) {
                     if (!require_rank(ctx, "Tensor.t", t.shape, 0, 2)) return;
                     Shape out = t.shape;
                     std::reverse(out.dims.begin(), out.dims.end());
                     ctx.add_output({out, t.dtype});
                   }),
         "transpose of a tensor of rank <= 2");
  method(r, "expand_dims", "ExpandDims", {P("axis")},
         unsqueeze_rule(api("expand_dims"), "self", {"axis"}), "inserts a size-1 axis");
  method(r, "unsqueeze", "ExpandDims", {P("dim")},
         unsqueeze_rule(api("unsqueeze"), "self", {"dim"}), "inserts a size-1 axis");
  // x.squeeze(axis=None): an int or a tuple, never several ints (every 2.7-2.10 release).
  method(r, "squeeze", "Squeeze", {P("axis", "None")},
         squeeze_rule(api("squeeze"), "self", {"axis"}), "removes size-1 axes");
  method(r, "flatten", "Flatten", {P("start_dim", "0"), P("end_dim", "-1"), KW("order", "'C'")},
         flatten_rule(api("flatten"), "self", 0), "flattens dims start_dim..end_dim (default all)");
  // x.tile(dims) / x.tile(dims=...); x.tile(2, 2) only since MindSpore 2.7.1.
  method(r, "tile", "Tile", {P("dims"), since(kMs2_7_1, VAR("args"))},
         tile_rule(api("tile"), "self", "dims"), "repeats along each axis");
  // x.broadcast_to(shape); x.broadcast_to(2, 3) only since MindSpore 2.7.1.
  method(r, "broadcast_to", "BroadcastTo", {P("shape"), since(kMs2_7_1, VAR("args"))},
         broadcast_to_rule(api("broadcast_to"), "self", "shape"), "broadcasts to shape");
  method(r, "expand_as", "BroadcastTo", {P("other")},
         same_as_rule(api("expand_as"), "self", "other"), "broadcasts to other's shape");
  method(r, "split", "Split", {P("split_size_or_sections"), P("axis", "0"), KW("dim", "None")},
         split_rule(api("split"), "self", "split_size_or_sections", {"dim", "axis"}),
         "splits into pieces; returns a tuple", true);
  method(r, "chunk", "Split", {P("chunks"), P("axis", "0"), KW("dim", "None")},
         chunk_rule(api("chunk"), "self", "chunks", {"dim", "axis"}),
         "splits into chunks; returns a tuple", true);
  method(r, "topk", "TopK", {P("k"), P("dim", "None"), P("largest", "True"), P("sorted", "True")},
         topk_rule(api("topk"), "self", "k", {"dim"}), "(values, indices) of the k largest", true);
  method(r, "gather", "Gather", {P("input_indices"), P("axis"), P("batch_dims", "0")},
         gather_rule(api("gather"), "self", "input_indices", "axis", false),
         "gathers slices along axis");
}

}  // namespace

void register_tensor_methods(Registry& r) {
  register_elementwise(r);
  register_reductions(r);
  register_shape_methods(r);
}

}  // namespace graphcore
