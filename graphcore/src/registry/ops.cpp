// mindspore.ops: functions (ops.relu) and primitive classes (ops.ReLU()). Signatures checked
// against MindSpore 2.10.0 with inspect.signature; primitives whose __call__ is (*args) use the
// parameter names of their documentation.
#include <cmath>
#include <utility>

#include "registry/op_rules.h"

namespace graphcore {

namespace {

using namespace rules;  // NOLINT(google-build-using-namespace): entries are written in rules' DSL

void fn(Registry& r, std::string name, std::string op, std::vector<ParamSpec> params, InferFn infer,
        std::string summary, bool tuple = false) {
  ApiEntry e;
  e.name = std::move(name);
  e.kind = ApiKind::Function;
  e.op = std::move(op);
  e.call_params = std::move(params);
  e.infer = std::move(infer);
  e.summary = std::move(summary);
  e.returns_tuple = tuple;
  r.add(std::move(e));
}

void prim(Registry& r, std::string name, std::vector<ParamSpec> init, std::vector<ParamSpec> call,
          InferFn infer, std::string summary, bool tuple = false) {
  ApiEntry e;
  e.name = std::move(name);
  e.kind = ApiKind::PrimitiveClass;
  e.init_params = std::move(init);
  e.call_params = std::move(call);
  std::vector<std::string> attr_names;
  for (const ParamSpec& p : e.init_params) attr_names.push_back(p.name);
  e.init = [attr_names](InitContext& ctx) {
    for (const std::string& n : attr_names) {
      if (auto a = ctx.arg(n).as_attr()) ctx.set_attr(n, std::move(*a));
    }
  };
  e.infer = std::move(infer);
  e.summary = std::move(summary);
  e.returns_tuple = tuple;
  r.add(std::move(e));
}

// ---- Elementwise tables -----------------------------------------------------------------------
struct Unary {
  const char* fn;      // ops.<fn>, or nullptr
  const char* fn_arg;  // its tensor parameter
  const char* prim;    // ops.<Prim>, or nullptr
  const char* prim_arg;
  const char* op;
  UnaryDType dtype;
  std::vector<ParamSpec> extra;  // further function parameters
  // Checks of the function's further arguments before the shape rule; false: reported.
  ArgCheck check = nullptr;
};

void register_unary(Registry& r) {
  using U = UnaryDType;
  const std::vector<Unary> table = {
      {"relu", "input", "ReLU", "input", "ReLU", U::Keep, {P("inplace", "False")}},
      {"relu6", "x", "ReLU6", "x", "ReLU6", U::Keep, {}},
      {"gelu", "input", "GeLU", "input", "GeLU", U::FloatOnly, {P("approximate", "'none'")}},
      {nullptr, nullptr, "FastGeLU", "x", "FastGeLU", U::FloatOnly, {}},
      {"silu", "input", nullptr, nullptr, "SiLU", U::FloatOnly, {}},
      {"sigmoid", "input", "Sigmoid", "input", "Sigmoid", U::FloatOnly, {}},
      {"tanh", "input", "Tanh", "input", "Tanh", U::FloatOnly, {}},
      {"mish", "x", "Mish", "x", "Mish", U::FloatOnly, {}},
      {"hardswish", "input", "HSwish", "input", "HSwish", U::Keep, {}},
      {"leaky_relu", "input", nullptr, nullptr, "LeakyReLU", U::Keep, {P("alpha", "0.2")}},
      {"elu",
       "input_x",
       nullptr,
       nullptr,
       "Elu",
       U::FloatOnly,
       {P("alpha", "1.0")},
       [](CallContext& ctx, std::string_view api) { return elu_alpha_supported(ctx, api, false); }},
      {"softplus",
       "input",
       nullptr,
       nullptr,
       "Softplus",
       U::FloatOnly,
       {P("beta", "1"), P("threshold", "20")}},
      {"sqrt", "x", "Sqrt", "x", "Sqrt", U::ToFloat, {}},
      {"rsqrt", "input", "Rsqrt", "input", "Rsqrt", U::ToFloat, {}},
      {"exp", "input", "Exp", "input", "Exp", U::FloatOnly, {}},
      {"log", "input", "Log", "input", "Log", U::FloatOnly, {}},
      {"erf", "input", "Erf", "input", "Erf", U::FloatOnly, {}},
      {"sin", "input", "Sin", "input", "Sin", U::FloatOnly, {}},
      {"cos", "input", "Cos", "input", "Cos", U::FloatOnly, {}},
      {"abs", "input", "Abs", "input", "Abs", U::Keep, {}},
      {"neg", "input", "Neg", "input", "Neg", U::Keep, {}},
      {"square", "input", "Square", "input", "Square", U::Keep, {}},
      {"floor", "input", "Floor", "input", "Floor", U::Keep, {}},
      {"round", "input", nullptr, nullptr, "Round", U::Keep, {KW("decimals", "0")}},
      {"sign", "input", "Sign", "input", "Sign", U::Keep, {}},
      {"reciprocal", "input", "Reciprocal", "input", "Reciprocal", U::ToFloat, {}},
      {"logical_not", "input", "LogicalNot", "input", "LogicalNot", U::ToBool, {}},
      {"invert", "x", nullptr, nullptr, "Invert", U::Keep, {}},
      {nullptr, nullptr, "Identity", "input_x", "Identity", U::Keep, {}},
      {nullptr, nullptr, "ZerosLike", "x", "ZerosLike", U::Keep, {}},
      {nullptr, nullptr, "OnesLike", "x", "OnesLike", U::Keep, {}},
      {"cumsum", "x", nullptr, nullptr, "CumSum", U::Keep, {P("axis"), P("dtype", "None")}},
  };
  for (const Unary& u : table) {
    const double flops = 1;
    if (u.fn) {
      std::vector<ParamSpec> params = {P(u.fn_arg)};
      params.insert(params.end(), u.extra.begin(), u.extra.end());
      std::string name = std::string("ops.") + u.fn;
      InferFn rule = unary_rule(name, u.fn_arg, u.dtype, flops);
      if (u.check) rule = checked_first(u.check, name, std::move(rule));
      fn(r, name, u.op, params, std::move(rule), std::string("elementwise ") + u.fn);
    }
    if (u.prim) {
      std::string name = std::string("ops.") + u.prim;
      prim(r, name, {}, {P(u.prim_arg)}, unary_rule(name, u.prim_arg, u.dtype, flops),
           std::string("elementwise ") + u.op + " primitive");
    }
  }
}

struct Binary {
  const char* name;  // full name below mindspore
  const char* a;
  const char* b;
  const char* op;
  BinaryDType dtype;
  bool primitive;
  std::vector<ParamSpec> extra;
};

void register_binary(Registry& r) {
  using B = BinaryDType;
  const std::vector<Binary> table = {
      {"ops.add", "input", "other", "Add", B::Promote, false, {}},
      {"ops.sub", "input", "other", "Sub", B::Promote, false, {}},
      {"ops.mul", "input", "other", "Mul", B::Promote, false, {}},
      {"ops.div", "input", "other", "Div", B::TrueDiv, false, {KW("rounding_mode", "None")}},
      {"ops.floor_div", "x", "y", "FloorDiv", B::Promote, false, {}},
      {"ops.floordiv", "input", "other", "FloorDiv", B::Promote, false, {}},
      // Not a public MindSpore function: the target of Python's `%` on tensors.
      {"ops.mod", "input", "other", "FloorMod", B::Promote, false, {}},
      {"ops.remainder", "input", "other", "FloorMod", B::Promote, false, {}},
      {"ops.pow", "input", "exponent", "Pow", B::Promote, false, {}},
      {"ops.maximum", "input", "other", "Maximum", B::Promote, false, {}},
      {"ops.minimum", "input", "other", "Minimum", B::Promote, false, {}},
      {"ops.equal", "input", "other", "Equal", B::Compare, false, {}},
      {"ops.eq", "input", "other", "Equal", B::Compare, false, {}},
      {"ops.not_equal", "input", "other", "NotEqual", B::Compare, false, {}},
      {"ops.ne", "input", "other", "NotEqual", B::Compare, false, {}},
      {"ops.less", "input", "other", "Less", B::Compare, false, {}},
      {"ops.lt", "input", "other", "Less", B::Compare, false, {}},
      {"ops.less_equal", "input", "other", "LessEqual", B::Compare, false, {}},
      {"ops.le", "input", "other", "LessEqual", B::Compare, false, {}},
      {"ops.greater", "input", "other", "Greater", B::Compare, false, {}},
      {"ops.gt", "input", "other", "Greater", B::Compare, false, {}},
      {"ops.greater_equal", "input", "other", "GreaterEqual", B::Compare, false, {}},
      {"ops.ge", "input", "other", "GreaterEqual", B::Compare, false, {}},
      {"ops.logical_and", "input", "other", "LogicalAnd", B::Compare, false, {}},
      {"ops.logical_or", "input", "other", "LogicalOr", B::Compare, false, {}},
      {"ops.Add", "input", "other", "Add", B::Promote, true, {}},
      {"ops.Sub", "x", "y", "Sub", B::Promote, true, {}},
      {"ops.Mul", "input", "other", "Mul", B::Promote, true, {}},
      {"ops.RealDiv", "x", "y", "RealDiv", B::TrueDiv, true, {}},
      {"ops.Div", "input", "other", "Div", B::TrueDiv, true, {}},
      {"ops.FloorDiv", "input", "other", "FloorDiv", B::Promote, true, {}},
      {"ops.Mod", "x", "y", "Mod", B::Promote, true, {}},
      {"ops.Pow", "input", "exponent", "Pow", B::Promote, true, {}},
      {"ops.Maximum", "input", "other", "Maximum", B::Promote, true, {}},
      {"ops.Minimum", "input", "other", "Minimum", B::Promote, true, {}},
      {"ops.Equal", "input", "other", "Equal", B::Compare, true, {}},
      {"ops.NotEqual", "input", "other", "NotEqual", B::Compare, true, {}},
      {"ops.Less", "input", "other", "Less", B::Compare, true, {}},
      {"ops.LessEqual", "input", "other", "LessEqual", B::Compare, true, {}},
      {"ops.Greater", "input", "other", "Greater", B::Compare, true, {}},
      {"ops.GreaterEqual", "input", "other", "GreaterEqual", B::Compare, true, {}},
      {"ops.LogicalAnd", "x", "y", "LogicalAnd", B::Compare, true, {}},
      {"ops.LogicalOr", "x", "y", "LogicalOr", B::Compare, true, {}},
  };
  for (const Binary& b : table) {
    std::vector<ParamSpec> params = {P(b.a), P(b.b)};
    params.insert(params.end(), b.extra.begin(), b.extra.end());
    InferFn infer = binary_rule(b.name, b.a, b.b, b.dtype);
    std::string summary = std::string("elementwise ") + b.op + " with broadcasting";
    if (b.primitive) {
      prim(r, b.name, {}, params, infer, summary);
    } else {
      fn(r, b.name, b.op, params, infer, summary);
    }
  }
}

// ---- Reductions ---------------------------------------------------------------------------------
void register_reductions(Registry& r) {
  using R = ReduceDType;
  fn(r, "ops.mean", "ReduceMean", {P("x"), P("axis", "None"), P("keep_dims", "False")},
     reduce_rule("ops.mean", "x", {{"axis"}, {"keep_dims"}, {}}, R::Keep), "mean over axis");
  fn(r, "ops.sum", "ReduceSum",
     {P("input"), P("dim", "None"), P("keepdim", "False"), KW("dtype", "None")},
     reduce_rule("ops.sum", "input", {{"dim"}, {"keepdim"}, {"dtype"}}, R::SumInt64),
     "sum over dim (integer inputs sum to int64)");
  // ops.reduce_sum(x, axis=()): the older functional form; () sums every axis, no keep_dims, the
  // dtype kept (int32 stays int32; measured with MindSpore 2.10).
  fn(r, "ops.reduce_sum", "ReduceSum", {P("x"), P("axis", "()")},
     reduce_rule("ops.reduce_sum", "x", {{"axis"}, {}, {}}, R::Keep),
     "sum over axis (() sums every axis)");
  fn(r, "ops.prod", "ReduceProd",
     {P("input"), P("axis", "None"), P("keep_dims", "False"), P("dtype", "None")},
     reduce_rule("ops.prod", "input", {{"axis"}, {"keep_dims"}, {"dtype"}}, R::Keep),
     "product over axis");
  for (const char* name : {"max", "min"}) {
    std::string api = std::string("ops.") + name;
    fn(r, api, name[1] == 'a' ? "ArgMaxWithValue" : "ArgMinWithValue",
       {P("input"), P("axis", "None"), P("keepdims", "False"), KW("initial", "None"),
        KW("where", "None")},
       reduce_rule(api, "input", {{"axis"}, {"keepdims"}, {}}, R::Keep, true),
       std::string("(values, indices) of the ") + name + " over axis", true);
    std::string a = std::string("ops.a") + name;
    fn(r, a, name[1] == 'a' ? "ReduceMax" : "ReduceMin",
       {P("input"), P("axis", "None"), P("keepdims", "False"), KW("initial", "None"),
        KW("where", "None")},
       reduce_rule(a, "input", {{"axis"}, {"keepdims"}, {}}, R::Keep),
       std::string(name) + " over axis");
  }
  fn(r, "ops.argmax", "Argmax", {P("input"), P("dim", "None"), P("keepdim", "False")},
     reduce_rule("ops.argmax", "input", {{"dim"}, {"keepdim"}, {}}, R::ToInt64),
     "int64 index of the maximum over dim");
  // MindSpore 2.10: ops.argmax gives int64 indices, ops.argmin int32 (its Argmin primitive's
  // default output_type).
  fn(r, "ops.argmin", "Argmin", {P("input"), P("axis", "None"), P("keepdims", "False")},
     reduce_rule("ops.argmin", "input", {{"axis"}, {"keepdims"}, {}}, R::ToInt32),
     "int32 index of the minimum over axis");
  for (const char* name : {"std", "var"}) {
    fn(r, std::string("ops.") + name, name == std::string("std") ? "ReduceStd" : "ReduceVar",
       {P("input"), P("axis", "None"), P("ddof", "0"), P("keepdims", "False")},
       reduce_rule(std::string("ops.") + name, "input", {{"axis"}, {"keepdims"}, {}}, R::Keep),
       std::string(name) + " over axis");
  }
  fn(r, "ops.logsumexp", "LogSumExp", {P("input"), P("dim"), P("keepdim", "False")},
     reduce_rule("ops.logsumexp", "input", {{"dim"}, {"keepdim"}, {}}, R::Keep),
     "log(sum(exp(x))) over dim");
  fn(r, "ops.norm", "Norm",
     {P("A"), P("ord", "None"), P("dim", "None"), P("keepdim", "False"), KW("dtype", "None")},
     norm_rule("ops.norm", "A", {"dim"}, {"keepdim"}), "vector/matrix norm over dim");
  const std::vector<std::pair<const char*, ReduceDType>> prims = {{"ReduceMean", R::Keep},
                                                                  {"ReduceSum", R::Keep},
                                                                  {"ReduceMax", R::Keep},
                                                                  {"ReduceMin", R::Keep},
                                                                  {"ReduceProd", R::Keep}};
  for (auto [name, rule] : prims) {
    std::vector<ParamSpec> init = {P("keep_dims", "False")};
    if (std::string(name) == "ReduceSum") init.push_back(P("skip_mode", "False"));
    std::string api = std::string("ops.") + name;
    prim(r, api, init, {P("x"), P("axis", "()")}, reduce_prim_rule(api, "x", "axis", rule),
         std::string(name) + "(keep_dims) called with (x, axis)");
  }
  // LpNorm(axis, p, keep_dims, epsilon)(x): the norm over `axis`, an init argument (checked
  // against MindSpore 2.10: axis=[1, 2], keep_dims=True on (2, 5, 6, 7) gives (2, 1, 1, 7)).
  prim(r, "ops.LpNorm", {P("axis"), P("p", "2"), P("keep_dims", "False"), P("epsilon", "1e-12")},
       {P("input")}, reduce_init_axis_rule("ops.LpNorm", "input", "axis", R::Keep),
       "LpNorm(axis, p, keep_dims)(x): the p-norm over axis");
  auto argmax_with_value = [](CallContext& ctx) {
    auto t = tensor_arg(ctx, "input");
    // The index is int64, as ops.max's (MindSpore 2.10, CPU).
    if (!t || !t->shape.ranked) {
      add_unknown_output(ctx, DType::Int64);
      return add_unknown_output(ctx, t ? t->dtype : DType::Unknown);
    }
    auto shape = reduce_shape(ctx, "ops.ArgMaxWithValue", t->shape,
                              {ctx.init_arg("axis").as_int().value_or(0)},
                              ctx.init_arg("keep_dims").as_bool().value_or(false));
    if (!shape) return;
    ctx.add_output({*shape, DType::Int64});
    ctx.add_output({*shape, t->dtype});
  };
  for (const char* name : {"ops.ArgMaxWithValue", "ops.ArgMinWithValue"}) {
    prim(r, name, {P("axis", "0"), P("keep_dims", "False")}, {P("input")}, argmax_with_value,
         "(index, value) of the extremum over axis", true);
  }
  for (auto [name, x] : {std::pair{"Argmax", "input_x"}, {"Argmin", "x"}}) {
    std::string api = std::string("ops.") + name;
    prim(r, api, {P("axis", "-1"), P("output_type", "mindspore.int32")}, {P(x)},
         on_tensor(x,
                   [api](CallContext& ctx, const TensorType& t) {
                     auto shape = reduce_shape(ctx, api, t.shape,
                                               {ctx.init_arg("axis").as_int().value_or(-1)}, false);
                     if (shape) {
                       ctx.add_output(
                           {*shape,
                            dtype_value(ctx.init_arg("output_type")).value_or(DType::Int32)});
                     }
                   }),
         "index of the extremum over axis (int32)");
  }
}

// ---- Shape manipulation -------------------------------------------------------------------------
void register_shape_ops(Registry& r) {
  fn(r, "ops.reshape", "Reshape", {P("input"), P("shape")},
     reshape_rule("ops.reshape", "input", "shape"), "reshape (one -1 allowed)");
  prim(r, "ops.Reshape", {}, {P("input"), P("shape")},
       reshape_rule("ops.Reshape", "input", "shape"), "reshape primitive: Reshape()(x, shape)");
  // The permutation was named `input_perm` up to MindSpore 2.7.0 and `dims` since 2.7.1.
  auto transpose_rule = [](const std::string& api) -> InferFn {
    InferFn before = permute_rule(api, "input", "input_perm");
    InferFn after = permute_rule(api, "input", "dims");
    return [before, after](CallContext& ctx) { (ctx.version() < kMs2_7_1 ? before : after)(ctx); };
  };
  fn(r, "ops.transpose", "Transpose",
     {P("input"), until(kMs2_7_1, P("input_perm")), since(kMs2_7_1, P("dims"))},
     transpose_rule("ops.transpose"), "permutes all axes");
  fn(r, "ops.permute", "Transpose", {P("input"), P("axis")},
     permute_rule("ops.permute", "input", "axis"), "permutes all axes");
  prim(r, "ops.Transpose", {},
       {P("input"), until(kMs2_7_1, P("input_perm")), since(kMs2_7_1, P("dims"))},
       transpose_rule("ops.Transpose"), "Transpose()(x, perm)");
  fn(r, "ops.swapaxes", "Transpose", {P("input"), P("axis0"), P("axis1")},
     swap_rule("ops.swapaxes", "input", "axis0", "axis1"), "swaps two axes");
  for (const char* name : {"ops.concat", "ops.cat"}) {
    fn(r, name, "Concat", {P("tensors"), P("axis", "0")}, concat_rule(name, "tensors", {"axis"}),
       "concatenates a tuple of tensors along axis");
  }
  prim(r, "ops.Concat", {P("axis", "0")}, {P("tensors")},
       concat_rule("ops.Concat", "tensors", {"axis"}, true), "Concat(axis)((x, y, ...))");
  fn(r, "ops.stack", "Stack", {P("tensors"), P("axis", "0")},
     stack_rule("ops.stack", "tensors", {"axis"}), "stacks tensors along a new axis");
  prim(r, "ops.Stack", {P("axis", "0")}, {P("input_x")},
       stack_rule("ops.Stack", "input_x", {"axis"}, true), "Stack(axis)((x, y, ...))");
  fn(r, "ops.split", "Split", {P("tensor"), P("split_size_or_sections"), P("axis", "0")},
     split_rule("ops.split", "tensor", "split_size_or_sections", {"axis"}),
     "splits into pieces of a size (last smaller) or of the given sizes; returns a tuple", true);
  fn(r, "numpy.split", "Split", {P("x"), P("indices_or_sections"), P("axis", "0")},
     numpy_split_rule(),
     "mindspore.numpy.split: equal pieces, or split at the given indices; returns a list", true);
  fn(r, "ops.chunk", "Split", {P("input"), P("chunks"), P("axis", "0")},
     chunk_rule("ops.chunk", "input", "chunks", {"axis"}), "splits into chunks; returns a tuple",
     true);
  auto split_prim = on_tensor("input_x", [](CallContext& ctx, const TensorType& t) {
    int64_t axis = ctx.init_arg("axis").as_int().value_or(0);
    int64_t n = ctx.init_arg("output_num").as_int().value_or(1);
    auto ax = axis_or_error(ctx, "ops.Split", axis, t.shape.rank(), "input_x");
    if (!ax || n <= 0) return;
    const Dim& d = t.shape.dims[*ax];
    if (d.is_known() && d.value() % n != 0) {
      ctx.error("shape-mismatch", "ops.Split: dimension " + std::to_string(axis) + " of " +
                                      t.shape.str() + " (" + d.str() +
                                      ") is not divisible by output_num=" + std::to_string(n));
      return;
    }
    Shape piece = t.shape;
    piece.dims[*ax] = d.is_known() ? Dim::known(d.value() / n)
                                   : Dim::exact_div(d, Dim::known(n)).value_or(Dim::unknown());
    for (int64_t i = 0; i < n; ++i) ctx.add_output({piece, t.dtype});
  });
  // The number of pieces is an init argument: known even when the input's shape is not.
  auto split_prim_any = [split_prim](CallContext& ctx) {
    auto t = tensor_arg(ctx, "input_x");
    if (t && !t->shape.ranked) {
      int64_t n = ctx.init_arg("output_num").as_int().value_or(0);
      if (n <= 0 || n > 4096) return split_prim(ctx);
      for (int64_t i = 0; i < n; ++i) ctx.add_output({Shape::unranked(), t->dtype});
      return;
    }
    split_prim(ctx);
  };
  prim(r, "ops.Split", {P("axis", "0"), P("output_num", "1")}, {P("input_x")}, split_prim_any,
       "Split(axis, output_num)(x): output_num equal pieces; returns a tuple", true);
  // unstack: removes `axis`, one output per element along it (which must be known).
  auto unstack_infer = [](const char* api, bool from_init) {
    return on_tensor("input_x", [api, from_init](CallContext& ctx, const TensorType& t) {
      int64_t axis = (from_init ? ctx.init_arg("axis") : ctx.arg("axis")).as_int().value_or(0);
      auto ax = axis_or_error(ctx, api, axis, t.shape.rank(), "input_x");
      if (!ax) return;
      const Dim& d = t.shape.dims[*ax];
      if (!d.is_known()) {
        // As many pieces as the axis is long, which is not known here (MindSpore itself needs
        // it at compile time only when the pieces are used by count).
        ctx.add_output({Shape::unranked(), t.dtype});
        return;
      }
      Shape piece = t.shape;
      piece.dims.erase(piece.dims.begin() + static_cast<std::ptrdiff_t>(*ax));
      for (int64_t i = 0; i < d.value(); ++i) ctx.add_output({piece, t.dtype});
    });
  };
  prim(r, "ops.Unstack", {P("axis", "0"), P("num", "None")}, {P("input_x")},
       unstack_infer("ops.Unstack", true),
       "Unstack(axis)(x): the slices along axis; returns a tuple", true);
  // ops.unstack(input_x, axis=0) in every 2.7-2.10 release (not `input`).
  fn(r, "ops.unstack", "Unstack", {P("input_x"), P("axis", "0")},
     unstack_infer("ops.unstack", false), "the slices along axis; returns a tuple", true);
  fn(r, "ops.squeeze", "Squeeze", {P("input"), P("axis", "None")},
     squeeze_rule("ops.squeeze", "input", {"axis"}), "removes size-1 axes");
  prim(r, "ops.Squeeze", {P("axis", "()")}, {P("input")},
       squeeze_rule("ops.Squeeze", "input", {"axis"}, true), "Squeeze(axis)(x)");
  fn(r, "ops.unsqueeze", "ExpandDims", {P("input"), P("dim")},
     unsqueeze_rule("ops.unsqueeze", "input", {"dim"}), "inserts a size-1 axis");
  fn(r, "ops.expand_dims", "ExpandDims", {P("input_x"), P("axis")},
     unsqueeze_rule("ops.expand_dims", "input_x", {"axis"}), "inserts a size-1 axis");
  prim(r, "ops.ExpandDims", {}, {P("input_x"), P("axis")},
       unsqueeze_rule("ops.ExpandDims", "input_x", {"axis"}), "ExpandDims()(x, axis)");
  fn(r, "ops.flatten", "Flatten",
     {P("input"), P("order", "'C'"), KW("start_dim", "1"), KW("end_dim", "-1")},
     flatten_rule("ops.flatten", "input", 1), "flattens dims start_dim..end_dim (default 1..-1)");
  prim(r, "ops.Flatten", {}, {P("input_x")}, flatten_rule("ops.Flatten", "input_x", 1),
       "Flatten()(x): (N, prod(rest))");
  fn(r, "ops.cast", "Cast", {P("input"), P("dtype")}, cast_rule("ops.cast", "input", "dtype"),
     "converts to dtype");
  prim(r, "ops.Cast", {}, {P("input_x"), P("dtype")}, cast_rule("ops.Cast", "input_x", "dtype"),
       "Cast()(x, dtype)");
  fn(r, "ops.tile", "Tile", {P("input"), P("dims")}, tile_rule("ops.tile", "input", "dims"),
     "repeats the tensor along each axis");
  prim(r, "ops.Tile", {}, {P("input"), P("dims")}, tile_rule("ops.Tile", "input", "dims"),
       "Tile()(x, multiples)");
  fn(r, "ops.broadcast_to", "BroadcastTo", {P("input"), P("shape")},
     broadcast_to_rule("ops.broadcast_to", "input", "shape"), "broadcasts to shape (-1 keeps)");
  fn(r, "ops.gather", "Gather",
     {P("input_params"), P("input_indices"), P("axis"), P("batch_dims", "0")},
     gather_rule("ops.gather", "input_params", "input_indices", "axis", false),
     "gathers slices along axis");
  prim(r, "ops.Gather", {P("batch_dims", "0")}, {P("input_params"), P("input_indices"), P("axis")},
       gather_rule("ops.Gather", "input_params", "input_indices", "axis", true),
       "Gather()(params, indices, axis)");
  fn(r, "ops.masked_fill", "MaskedFill", {P("input_x"), P("mask"), P("value")},
     masked_fill_rule("ops.masked_fill", "input_x", "mask", "value"),
     "fills positions where mask is True");
  prim(r, "ops.MaskedFill", {}, {P("input_x"), P("mask"), P("value")},
       masked_fill_rule("ops.MaskedFill", "input_x", "mask", "value"), "MaskedFill()(x, mask, v)");
  fn(r, "ops.narrow", "Narrow", {P("input"), P("axis"), P("start"), P("length")},
     on_tensor("input",
               [](CallContext& ctx, const TensorType& t) {
                 auto a = ctx.arg("axis").as_int();
                 auto n = a ? axis_or_error(ctx, "ops.narrow", *a, t.shape.rank(), "axis")
                            : std::nullopt;
                 if (!n) return ctx.failed() ? void() : add_unknown_output(ctx, t.dtype);
                 // MindSpore 2.10 checks start in [0, dim) and length in [1, dim - start].
                 auto start = ctx.arg("start").as_int();
                 auto len = ctx.arg("length").as_int();
                 const Dim& dim = t.shape.dims[*n];
                 if (dim.is_known() && start && (*start < 0 || *start >= dim.value())) {
                   ctx.error("invalid-argument",
                             "ops.narrow: start must be in [0, " + std::to_string(dim.value()) +
                                 ") for axis " + std::to_string(*n) + " of " + t.shape.str() +
                                 ", got " + std::to_string(*start),
                             "start");
                   return;
                 }
                 if (dim.is_known() && start && len && (*len < 1 || *len > dim.value() - *start)) {
                   ctx.error("invalid-argument",
                             "ops.narrow: length must be in [1, " +
                                 std::to_string(dim.value() - *start) + "] from start " +
                                 std::to_string(*start) + " of axis " + std::to_string(*n) +
                                 " of " + t.shape.str() + ", got " + std::to_string(*len),
                             "length");
                   return;
                 }
                 Shape out = t.shape;
                 out.dims[*n] = len ? Dim::known(*len) : Dim::unknown();
                 ctx.add_output({out, t.dtype});
               }),
     "slice of `length` along axis");
  fn(r, "ops.topk", "TopK",
     {P("input"), P("k"), P("dim", "None"), P("largest", "True"), P("sorted", "True")},
     topk_rule("ops.topk", "input", "k", {"dim"}), "(values, indices) of the k largest", true);
  fn(r, "ops.unbind", "Unstack", {P("input"), P("dim", "0")},
     on_tensor("input",
               [](CallContext& ctx, const TensorType& t) {
                 int64_t d = ctx.arg("dim").as_int().value_or(0);
                 auto n = axis_or_error(ctx, "ops.unbind", d, t.shape.rank(), "dim");
                 if (!n) return;
                 if (!t.shape.dims[*n].is_known()) return add_unknown_output(ctx, t.dtype);
                 Shape piece = t.shape;
                 piece.dims.erase(piece.dims.begin() + static_cast<std::ptrdiff_t>(*n));
                 for (int64_t i = 0; i < t.shape.dims[*n].value(); ++i)
                   ctx.add_output({piece, t.dtype});
               }),
     "removes a dimension, returning a tuple of slices", true);
  auto strided = on_tensor("input_x", [](CallContext& ctx, const TensorType& t) {
    auto b = ctx.arg("begin").as_ints();
    auto e = ctx.arg("end").as_ints();
    auto s = ctx.arg("strides").as_ints();
    bool masks = false;
    for (const char* m :
         {"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"})
      masks = masks || ctx.init_arg(m).as_int().value_or(0) != 0;
    if (!b || !e || !s || masks || b->size() != e->size() || b->size() != s->size() ||
        b->size() > t.shape.rank())
      return add_unknown_output(ctx, t.dtype);
    Shape out = t.shape;
    for (size_t i = 0; i < b->size(); ++i) {
      const Dim& d = t.shape.dims[i];
      int64_t st = (*s)[i];
      if (!d.is_known() || st == 0) {
        out.dims[i] = Dim::unknown();
        continue;
      }
      auto clampi = [&](int64_t v) {
        if (v < 0) v += d.value();
        return std::clamp<int64_t>(v, st > 0 ? 0 : -1, st > 0 ? d.value() : d.value() - 1);
      };
      int64_t lo = clampi((*b)[i]);
      int64_t hi = clampi((*e)[i]);
      int64_t len = st > 0 ? (hi - lo + st - 1) / st : (lo - hi - st - 1) / -st;
      out.dims[i] = Dim::known(std::max<int64_t>(len, 0));
    }
    ctx.add_output({out, t.dtype});
    ctx.set_attr("begin", *b);
    ctx.set_attr("end", *e);
    ctx.set_attr("strides", *s);
  });
  prim(r, "ops.StridedSlice",
       {P("begin_mask", "0"), P("end_mask", "0"), P("ellipsis_mask", "0"), P("new_axis_mask", "0"),
        P("shrink_axis_mask", "0")},
       {P("input_x"), P("begin"), P("end"), P("strides")}, strided,
       "StridedSlice(masks)(x, begin, end, strides)");
}

// ---- Creation -----------------------------------------------------------------------------------
void register_creation(Registry& r) {
  auto filled = [](const std::string& size_arg, const std::optional<std::string>& value_arg) {
    return [size_arg, value_arg](CallContext& ctx) {
      auto dims = shape_value(ctx.arg(size_arg));
      if (!dims && !ctx.varargs().empty()) {
        ArgValue seq;
        seq.kind = ArgValue::Kind::Sequence;
        seq.items = ctx.varargs();
        dims = shape_value(seq);
      }
      DType dt = DType::Float32;
      if (value_arg) {
        const ArgValue& v = ctx.arg(*value_arg);
        if (v.kind == ArgValue::Kind::Int) dt = DType::Int64;
        if (v.kind == ArgValue::Kind::Bool) dt = DType::Bool;
        if (v.is_tensor()) dt = v.tensor.dtype;
        if (auto fill = scalar_attr_value(v)) ctx.set_attr("value", std::move(*fill));
      }
      if (auto d = dtype_value(ctx.arg("dtype"))) dt = *d;
      if (auto d = dtype_value(ctx.arg("type"))) dt = *d;  // Ones()/Zeros() before 2.8.0
      if (!dims) return add_unknown_output(ctx, dt);
      ctx.add_output({Shape(*dims), dt});
    };
  };
  fn(r, "ops.ones", "Ones", {P("shape"), P("dtype", "None")}, filled("shape", std::nullopt),
     "tensor of ones (float32 by default)");
  fn(r, "ops.zeros", "Zeros", {P("size"), P("dtype", "None")}, filled("size", std::nullopt),
     "tensor of zeros (float32 by default)");
  // Random tensors: randn(2, 3) and randn((2, 3)) both give (2, 3); float32 unless dtype says.
  auto random = [](const std::string& sampler) {
    return [sampler](CallContext& ctx) {
      std::optional<std::vector<Dim>> dims;
      const auto& va = ctx.varargs();
      if (va.size() == 1 && va[0].kind == ArgValue::Kind::Sequence) {
        dims = shape_value(va[0]);
      } else if (!va.empty()) {
        ArgValue seq;
        seq.kind = ArgValue::Kind::Sequence;
        seq.items = va;
        dims = shape_value(seq);
      }
      DType dt = DType::Float32;
      if (auto d = dtype_value(ctx.arg("dtype"))) dt = *d;
      ctx.set_attr("sampler", sampler);
      if (!dims) return add_unknown_output(ctx, dt);
      ctx.add_output({Shape(*dims), dt});
    };
  };
  fn(r, "ops.randn", "StandardNormal", {VAR("size"), KW("dtype", "None"), KW("seed", "None")},
     random("normal"), "tensor of standard-normal samples (float32 by default)");
  fn(r, "ops.rand", "UniformReal", {VAR("size"), KW("dtype", "None"), KW("seed", "None")},
     random("uniform"), "tensor of uniform [0, 1) samples (float32 by default)");
  fn(
      r, "ops.randint", "UniformInt",
      {P("low"), P("high"), P("size"), P("seed", "None"), KW("dtype", "None")},
      [](CallContext& ctx) {
        auto dims = shape_value(ctx.arg("size"));
        DType dt = DType::Int64;
        if (auto d = dtype_value(ctx.arg("dtype"))) dt = *d;
        if (!dims) return add_unknown_output(ctx, dt);
        ctx.add_output({Shape(*dims), dt});
      },
      "tensor of integers in [low, high) (int64 by default)");
  fn(r, "ops.full", "Fill", {P("size"), P("fill_value"), KW("dtype", "None")},
     filled("size", "fill_value"), "tensor filled with fill_value");
  // Ones()/Zeros() took (size, type) up to MindSpore 2.7.x; since 2.8.0 Ones() takes
  // (shape, dtype) and Zeros() (size, dtype).
  prim(
      r, "ops.Ones", {},
      {until(kMs2_8_0, P("size")), until(kMs2_8_0, P("type", "None")), since(kMs2_8_0, P("shape")),
       since(kMs2_8_0, P("dtype", "None"))},
      [filled](CallContext& ctx) {
        filled(ctx.version() < kMs2_8_0 ? "size" : "shape", std::nullopt)(ctx);
      },
      "Ones()(shape, dtype)");
  prim(r, "ops.Zeros", {},
       {P("size"), until(kMs2_8_0, P("type", "None")), since(kMs2_8_0, P("dtype", "None"))},
       filled("size", std::nullopt), "Zeros()(shape, dtype)");
  prim(r, "ops.Fill", {}, {P("dtype"), P("dims"), P("x")}, filled("dims", "x"),
       "Fill()(dtype, shape, value)");
  for (const char* name : {"ones_like", "zeros_like"}) {
    fn(r, std::string("ops.") + name, name[0] == 'o' ? "OnesLike" : "ZerosLike",
       {P("input"), KW("dtype", "None")},
       on_tensor("input",
                 [](CallContext& ctx, const TensorType& t) {
                   ctx.add_output({t.shape, dtype_value(ctx.arg("dtype")).value_or(t.dtype)});
                 }),
       "tensor of the same shape");
  }
  fn(r, "ops.full_like", "FillLike", {P("input"), P("fill_value"), KW("dtype", "None")},
     on_tensor("input",
               [](CallContext& ctx, const TensorType& t) {
                 ctx.add_output({t.shape, dtype_value(ctx.arg("dtype")).value_or(t.dtype)});
                 if (auto v = scalar_attr_value(ctx.arg("fill_value")))
                   ctx.set_attr("value", std::move(*v));
               }),
     "tensor of the same shape filled with fill_value");
  // linspace(start, end, steps): `steps` evenly spaced float32 values, both ends included
  // (MindSpore 2.10: linspace(0, 0.1, 5) is (5,) float32).
  fn(
      r, "ops.linspace", "LinSpace", {P("start"), P("end"), P("steps")},
      [](CallContext& ctx) {
        auto n = ctx.arg("steps").as_int();
        if (!n || *n < 0) return add_unknown_output(ctx, DType::Float32);
        ctx.add_output({Shape::of({*n}), DType::Float32});
        if (auto a = ctx.arg("start").as_float()) ctx.set_attr("start", *a);
        if (auto b = ctx.arg("end").as_float()) ctx.set_attr("end", *b);
      },
      "1-D tensor of `steps` evenly spaced values from start to end");
  fn(
      r, "ops.arange", "Range",
      {P("start", "0"), P("end", "None"), P("step", "1"), KW("dtype", "None")},
      [](CallContext& ctx) {
        const ArgValue& s = ctx.arg("start");
        const ArgValue& e = ctx.arg("end");
        const ArgValue& st = ctx.arg("step");
        bool all_int = true;
        for (const ArgValue* v : {&s, &e, &st})
          if (v->kind == ArgValue::Kind::Float) all_int = false;
        DType dt = dtype_value(ctx.arg("dtype")).value_or(all_int ? DType::Int64 : DType::Float32);
        auto a = s.as_float();
        auto b = e.is_none() || e.is_missing() ? std::optional<double>{} : e.as_float();
        if (!b) {  // arange(n)
          b = a;
          a = 0.0;
        }
        auto step = st.as_float();
        if (!a || !b || !step || *step == 0) return add_unknown_output(ctx, dt);
        double n = std::ceil((*b - *a) / *step);
        ctx.add_output({Shape::of({static_cast<int64_t>(std::max(n, 0.0))}), dt});
        ctx.set_attr("start", *a);
        ctx.set_attr("limit", *b);
        ctx.set_attr("delta", *step);
      },
      "1-D range [start, end) with step");
}

// ---- Neural-network functions and primitives ----------------------------------------------------

void register_nn_ops(Registry& r) {
  auto softmax = [](const std::string& api, std::string x) {
    return on_tensor(std::move(x), [api](CallContext& ctx, const TensorType& t) {
      if (!require_float(ctx, api, t.dtype)) return;
      auto a = ctx.arg("axis").as_int();
      if (!a) a = ctx.init_arg("axis").as_int();
      if (a && !axis_or_error(ctx, api, *a, std::max<size_t>(t.shape.rank(), 1), "axis")) return;
      ctx.add_output({t.shape, dtype_value(ctx.arg("dtype")).value_or(t.dtype)});
      flops_per_element(ctx, t.shape, 3);
    });
  };
  fn(r, "ops.softmax", "Softmax", {P("input"), P("axis", "-1"), KW("dtype", "None")},
     softmax("ops.softmax", "input"), "softmax over axis");
  fn(r, "ops.log_softmax", "LogSoftmax", {P("logits"), P("axis", "-1")},
     softmax("ops.log_softmax", "logits"), "log-softmax over axis");
  prim(r, "ops.Softmax", {P("axis", "-1")}, {P("input")}, softmax("ops.Softmax", "input"),
       "Softmax(axis)(x)");
  prim(r, "ops.LogSoftmax", {P("axis", "-1")}, {P("logits")}, softmax("ops.LogSoftmax", "logits"),
       "LogSoftmax(axis)(x)");
  prim(r, "ops.L2Normalize", {P("axis", "0"), P("epsilon", "0.0001")}, {P("x")},
       on_tensor("x",
                 [](CallContext& ctx, const TensorType& t) {
                   const std::string api = "ops.L2Normalize";
                   if (!require_float(ctx, api, t.dtype)) return;
                   auto a = ctx.init_arg("axis").as_int();
                   if (a &&
                       !axis_or_error(ctx, api, *a, std::max<size_t>(t.shape.rank(), 1), "axis")) {
                     return;
                   }
                   ctx.add_output({t.shape, t.dtype});
                   flops_per_element(ctx, t.shape, 4);
                 }),
       "L2Normalize(axis, epsilon)(x): x / sqrt(max(sum(x^2, axis), epsilon))");

  fn(r, "ops.matmul", "MatMul", {P("input"), P("other")},
     matmul_rule("ops.matmul", "input", "other", MatMulKind::NumPy),
     "NumPy-style matrix product (1-D operands promoted, batch dims broadcast)");
  fn(r, "ops.bmm", "BatchMatMul", {P("input_x"), P("mat2")},
     matmul_rule("ops.bmm", "input_x", "mat2", MatMulKind::Batch), "batched matrix product");
  prim(r, "ops.MatMul", {P("transpose_a", "False"), P("transpose_b", "False")},
       {P("input"), P("mat2")},
       matmul_rule("ops.MatMul", "input", "mat2", MatMulKind::Matrix, true),
       "2-D matrix product with optional transposes");
  prim(r, "ops.BatchMatMul", {P("transpose_a", "False"), P("transpose_b", "False")},
       {P("x"), P("y")}, matmul_rule("ops.BatchMatMul", "x", "y", MatMulKind::Batch, true),
       "batched matrix product with optional transposes");
  fn(
      r, "ops.dense", "Dense", {P("input"), P("weight"), P("bias", "None")},
      [](CallContext& ctx) {
        auto x = tensor_arg(ctx, "input");
        auto w = tensor_arg(ctx, "weight");
        if (!x || !w || !x->shape.ranked || !w->shape.ranked || w->shape.rank() != 2)
          return ctx.failed() ? void() : add_unknown_output(ctx, x ? x->dtype : DType::Unknown);
        Shape wt({w->shape.dims[1], w->shape.dims[0]});
        auto out = matmul_shape(ctx, "ops.dense", x->shape, wt, false, false, MatMulKind::NumPy);
        if (!out) return;
        ctx.add_output({*out, x->dtype});
        matmul_flops(ctx, *out, w->shape.dims[1]);
      },
      "x @ weight.T + bias");

  fn(
      r, "ops.where", "Select", {P("condition"), P("input"), P("other")},
      [](CallContext& ctx) {
        auto c = tensor_arg(ctx, "condition");
        auto a = tensor_arg(ctx, "input");
        auto b = tensor_arg(ctx, "other");
        if (!c || !a || !b) return ctx.failed() ? void() : add_unknown_output(ctx);
        auto shape = broadcast_all(ctx, "ops.where", {c->shape, a->shape, b->shape});
        if (!shape) return;
        DType dt = ctx.arg("input").is_tensor() && is_scalar(ctx.arg("other"))
                       ? scalar_promote(a->dtype, ctx.arg("other").kind)
                   : ctx.arg("other").is_tensor() && is_scalar(ctx.arg("input"))
                       ? scalar_promote(b->dtype, ctx.arg("input").kind)
                       : promote(a->dtype, b->dtype);
        ctx.add_output({*shape, dt});
        if (ctx.arg("other").is_tensor()) record_scalar(ctx, ctx.arg("input"), 1);
        if (ctx.arg("input").is_tensor()) record_scalar(ctx, ctx.arg("other"), 2);
      },
      "elementwise select: condition ? input : other");
  prim(r, "ops.Select", {}, {P("condition"), P("input"), P("other")},
       binary_rule("ops.Select", "input", "other", BinaryDType::Promote, 1),
       "Select()(cond, x, y)");
  for (const char* name : {"ops.clamp", "ops.clip"}) {
    fn(r, name, "ClipByValue", {P("input"), P("min", "None"), P("max", "None")},
       clamp_rule(name, "input", "min", "max"), "clamps to [min, max]");
  }
  // ops.roll(input, shifts, dims=None) and mindspore.numpy.roll(a, shift, axis=None): elements
  // shifted cyclically along the axes (an int shift with several axes shifts each by it; no axis:
  // the flattened array, reshaped back). The node is Roll with `shift` (one per axis) and `axis`
  // (empty: flattened). Swin's shifted windows: `mindspore.numpy.roll(x, (-3, -3), (1, 2))`.
  auto roll_rule = [](std::string api, std::string x, std::string shift, std::string axis) {
    return on_tensor(x, [api, shift, axis](CallContext& ctx, const TensorType& t) {
      const ArgValue& ax = ctx.arg(axis);
      std::vector<int64_t> axes;
      if (!ax.is_none() && !ax.is_missing()) {
        auto a = ax.as_ints();
        if (!a) return add_unknown_output(ctx, t.dtype);
        axes = *a;
      }
      auto shifts = ctx.arg(shift).as_ints(axes.empty() ? 1 : 0);
      if (!shifts) return add_unknown_output(ctx, t.dtype);
      if (shifts->size() == 1 && axes.size() > 1) shifts->assign(axes.size(), (*shifts)[0]);
      if (!axes.empty() && shifts->size() != axes.size()) {
        // MindSpore 2.10's mindspore.numpy.roll (measured): numpy's broadcast of shift against
        // axis.
        ctx.error("invalid-argument",
                  api + ": shape mismatch: objects cannot be broadcast to a single shape (shift " +
                      std::to_string(shifts->size()) + " values, axis " +
                      std::to_string(axes.size()) + ")",
                  shift);
        return;
      }
      if (axes.empty() && shifts->size() != 1) return add_unknown_output(ctx, t.dtype);
      if (t.shape.ranked) {
        const auto rank = static_cast<int64_t>(t.shape.rank());
        for (int64_t& a : axes) {
          if (a < -rank || a >= rank) {
            ctx.error("invalid-argument",
                      api + ": axis " + std::to_string(a) +
                          " is out of bounds for array of dimension " + std::to_string(rank),
                      axis);
            return;
          }
          if (a < 0) a += rank;
        }
      }
      ctx.set_attr("shift", *shifts);
      ctx.set_attr("axis", axes);
      ctx.add_output(t);
    });
  };
  fn(r, "ops.roll", "Roll", {P("input"), P("shifts"), P("dims", "None")},
     roll_rule("ops.roll", "input", "shifts", "dims"), "shifts elements cyclically along dims");
  fn(r, "numpy.roll", "Roll", {P("a"), P("shift"), P("axis", "None")},
     roll_rule("mindspore.numpy.roll", "a", "shift", "axis"),
     "shifts elements cyclically along axis (numpy's signature)");
  // ops.clip_by_value(x, clip_value_min, clip_value_max) (MindSpore 2.10's signature; a list of
  // tensors for x is not modelled: unknown). mindcv's SwinV2 clips its logit scale with it.
  fn(r, "ops.clip_by_value", "ClipByValue",
     {P("x"), P("clip_value_min", "None"), P("clip_value_max", "None")},
     clamp_rule("ops.clip_by_value", "x", "clip_value_min", "clip_value_max"),
     "clamps to [clip_value_min, clip_value_max]");

  // Dropout and normalisation functions keep the input's shape.
  auto keep = [](CallContext& ctx, const TensorType& t) { ctx.add_output(t); };
  fn(r, "ops.dropout", "Dropout",
     {P("input"), P("p", "0.5"), P("training", "True"), P("seed", "None")},
     on_tensor("input", keep), "zeroes elements with probability p when training");
  prim(r, "ops.Dropout", {P("keep_prob", "0.5"), P("Seed0", "0"), P("Seed1", "0")}, {P("x")},
       on_tensor(
           "x",
           [](CallContext& ctx, const TensorType& t) {
             ctx.add_output(t);
             ctx.add_output({t.shape, DType::Float32});
           },
           2),
       "Dropout(keep_prob)(x) -> (output, mask)", true);
  fn(r, "ops.layer_norm", "LayerNorm",
     {P("input"), P("normalized_shape"), P("weight", "None"), P("bias", "None"), P("eps", "1e-05")},
     on_tensor("input", keep), "layer normalisation over the trailing normalized_shape");
  prim(r, "ops.LayerNorm",
       {P("begin_norm_axis", "1"), P("begin_params_axis", "1"), P("epsilon", "1e-07")},
       {P("input_x"), P("gamma"), P("beta")},
       on_tensor(
           "input_x",
           [](CallContext& ctx, const TensorType& t) {
             int64_t bna = ctx.init_arg("begin_norm_axis").as_int().value_or(1);
             auto n = axis_or_error(ctx, "ops.LayerNorm", bna, t.shape.rank(), "input_x");
             if (!n) return;
             Shape stat = t.shape;
             for (size_t i = *n; i < stat.rank(); ++i) stat.dims[i] = Dim::known(1);
             ctx.add_output(t);
             ctx.add_output({stat, t.dtype});
             ctx.add_output({stat, t.dtype});
             flops_per_element(ctx, t.shape, 5);
           },
           3),
       "LayerNorm(...)(x, gamma, beta) -> (y, mean, rstd)", true);
  // GroupNorm: a gen_ops_prim class mindspore.ops does not export (nn.GroupNorm's construct
  // calls it; inspect.signature in MindSpore 2.10: __init__(self), __call__(self, input,
  // num_groups, weight=None, bias=None, eps=1e-05)); it returns (y, mean, rstd), the statistics
  // (N, num_groups) (measured in mindspore.export's file of nn.GroupNorm(2, 8)). The importer
  // reads a .mindir's GroupNorm node with it.
  prim(r, "ops.auto_generate.GroupNorm", {},
       {P("input"), P("num_groups"), P("weight", "None"), P("bias", "None"), P("eps", "1e-05")},
       on_tensor(
           "input",
           [](CallContext& ctx, const TensorType& t) {
             if (!require_rank(ctx, "GroupNorm", t.shape, 2, 99, "input")) return;
             const int64_t g = ctx.arg("num_groups").as_int().value_or(-1);
             const Shape stat({t.shape.dims[0], g > 0 ? Dim::known(g) : Dim::unknown()});
             ctx.add_output(t);
             ctx.add_output({stat, t.dtype});
             ctx.add_output({stat, t.dtype});
             flops_per_element(ctx, t.shape, 5);
           },
           3),
       "GroupNorm()(input, num_groups, weight, bias, eps) -> (y, mean, rstd)", true);
  prim(r, "ops.BatchNorm",
       {P("is_training", "False"), P("epsilon", "1e-05"), P("momentum", "0.1"),
        P("data_format", "'NCHW'")},
       {P("input_x"), P("scale"), P("bias"), P("mean"), P("variance")},
       on_tensor(
           "input_x",
           [](CallContext& ctx, const TensorType& t) {
             if (!require_rank(ctx, "ops.BatchNorm", t.shape, 2, 5, "input_x")) return;
             Shape c({t.shape.dims[1]});
             ctx.add_output(t);
             for (int i = 0; i < 4; ++i) ctx.add_output({c, DType::Float32});
             flops_per_element(ctx, t.shape, 2);
           },
           5),
       "BatchNorm(...)(x, scale, bias, mean, variance) -> 5 outputs", true);
  prim(
      r, "ops.BiasAdd", {P("data_format", "'NCHW'")}, {P("input_x"), P("bias")},
      [](CallContext& ctx) {
        auto x = tensor_arg(ctx, "input_x");
        auto b = tensor_arg(ctx, "bias");
        if (!x || !b || !x->shape.ranked || !b->shape.ranked)
          return ctx.failed() ? void() : add_unknown_output(ctx, x ? x->dtype : DType::Unknown);
        if (!require_rank(ctx, "ops.BiasAdd", x->shape, 2, 5, "input_x")) return;
        if (b->shape.rank() == 1 && b->shape.dims[0].is_known() &&
            !require_dim(ctx, "ops.BiasAdd", "channels", "bias.shape[0]", b->shape.dims[0].value(),
                         x->shape.dims[1], x->shape, "input_x"))
          return;
        ctx.add_output(*x);
        flops_per_element(ctx, x->shape, 1);
      },
      "adds a (C,) bias along channel axis 1");
  fn(r, "ops.one_hot", "OneHot",
     {P("indices"), P("depth"), P("on_value", "1"), P("off_value", "0"), P("axis", "-1")},
     on_tensor("indices",
               [](CallContext& ctx, const TensorType& t) {
                 int64_t axis =
                     ctx.arg("axis").as_int().value_or(ctx.init_arg("axis").as_int().value_or(-1));
                 auto n = axis == -1
                              ? std::optional<size_t>(t.shape.rank())
                              : axis_or_error(ctx, "one_hot", axis, t.shape.rank() + 1, "axis");
                 if (!n) return;
                 Shape out = t.shape;
                 auto depth = ctx.arg("depth").as_int();
                 out.dims.insert(out.dims.begin() + static_cast<std::ptrdiff_t>(*n),
                                 depth ? Dim::known(*depth) : Dim::unknown());
                 const ArgValue& on = ctx.arg("on_value");
                 DType dt = on.is_tensor()                     ? on.tensor.dtype
                            : on.kind == ArgValue::Kind::Float ? DType::Float32
                                                               : DType::Int64;
                 ctx.add_output({out, dt});
               }),
     "one-hot encoding with depth classes at axis");
  // The primitive takes the same call arguments; reuse the function's rule.
  {
    const ApiEntry* f = nullptr;
    for (const auto& e : r.entries())
      if (e->name == "ops.one_hot") f = e.get();
    prim(r, "ops.OneHot", {P("axis", "-1")},
         {P("indices"), P("depth"), P("on_value"), P("off_value")}, f->infer,
         "OneHot(axis)(indices, depth, on_value, off_value)");
  }
  fn(r, "ops.pad", "Pad", {P("input_x"), P("padding"), P("mode", "'constant'"), P("value", "None")},
     on_tensor("input_x",
               [](CallContext& ctx, const TensorType& t) {
                 // MindSpore 2.10's ops.pad takes a flat tuple/list of ints (or a Tensor);
                 // numpy's nested pairs `((0, 0), (1, 1))` are refused before anything runs
                 // (measured: TypeError, this wording; mindcv's volo writes them).
                 const ArgValue& padding = ctx.arg("padding");
                 if (padding.kind == ArgValue::Kind::Sequence) {
                   for (const ArgValue& item : padding.items) {
                     if (item.kind != ArgValue::Kind::Sequence) continue;
                     ctx.error("invalid-argument",
                               "For 'pad', the paddings value must be tuple of int or list of "
                               "int, but got " +
                                   padding.repr(),
                               "padding");
                     return add_unknown_output(ctx, t.dtype);
                   }
                 }
                 auto p = padding.as_ints();
                 if (!p || p->size() % 2 != 0 || p->size() / 2 > t.shape.rank())
                   return add_unknown_output(ctx, t.dtype);
                 Shape out = t.shape;
                 for (size_t i = 0; i < p->size() / 2; ++i) {
                   Dim& d = out.dims[out.rank() - 1 - i];
                   int64_t add = (*p)[2 * i] + (*p)[2 * i + 1];
                   if (d.is_known()) {
                     d = Dim::known(std::max<int64_t>(d.value() + add, 0));
                   } else if (!d.is_unknown() && add > 0) {
                     d = d + Dim::known(add);
                   } else if (add != 0) {
                     d = Dim::unknown();
                   }
                 }
                 ctx.add_output({out, t.dtype});
               }),
     "pads the last dims: (left, right, top, bottom, ...)");
  // Built in construct with the target size (`ops.ResizeNearestNeighbor((h * 2, w * 2))(x)`:
  // HRNet, mindyolo's Upsample), sizes may be symbolic.
  prim(r, "ops.ResizeNearestNeighbor",
       {P("size"), P("align_corners", "False"), P("half_pixel_centers", "False")}, {P("input_x")},
       on_tensor("input_x",
                 [](CallContext& ctx, const TensorType& t) {
                   if (!require_rank(ctx, "ops.ResizeNearestNeighbor", t.shape, 4, 4, "input_x"))
                     return;
                   Shape out = t.shape;
                   auto size = shape_value(ctx.init_arg("size"));
                   for (size_t i = 0; i < 2; ++i)
                     out.dims[2 + i] = size && size->size() == 2 ? (*size)[i] : Dim::unknown();
                   ctx.add_output({out, t.dtype});
                 }),
       "ResizeNearestNeighbor(size)(x): nearest-neighbour resize of NCHW to size");
  ApiEntry interpolate;
  interpolate.name = "ops.interpolate";
  interpolate.op = "ResizeNearestNeighborV2";
  interpolate.variants = {"UpsampleNearest3D", "ResizeLinear1D",      "ResizeBilinearV2",
                          "ResizeBicubic",     "UpsampleTrilinear3D", "AdaptiveAvgPool1D",
                          "AdaptiveAvgPool2D", "AdaptiveAvgPool3D"};
  interpolate.call_params = {P("input"),
                             P("size", "None"),
                             P("scale_factor", "None"),
                             P("mode", "'nearest'"),
                             P("align_corners", "None"),
                             P("recompute_scale_factor", "None")};
  interpolate.infer = on_tensor("input", [](CallContext& ctx, const TensorType& t) {
    interpolate_rule(ctx, ctx, "ops.interpolate", t);
  });
  interpolate.summary = "resizes the spatial dims to size or by scale_factor";
  r.add(std::move(interpolate));

  // Convolution and pooling functions/primitives.
  auto conv = [](const std::string& api, size_t nd, WindowArgNames names, bool functional) {
    return [api, nd, names, functional](CallContext& ctx) {
      auto x = tensor_arg(ctx, "input");
      if (!functional) x = tensor_arg(ctx, "x");
      auto w = tensor_arg(ctx, "weight");
      if (!x || !w || !x->shape.ranked || !w->shape.ranked)
        return ctx.failed() ? void() : add_unknown_output(ctx, x ? x->dtype : DType::Unknown);
      if (!require_rank(ctx, api, x->shape, nd + 2, nd + 2, functional ? "input" : "x") ||
          !require_rank(ctx, api, w->shape, nd + 2, nd + 2, "weight"))
        return;
      ArgValue k;
      k.kind = ArgValue::Kind::Sequence;
      for (size_t i = 0; i < nd; ++i) {
        ArgValue d;
        d.kind = w->shape.dims[2 + i].is_known() ? ArgValue::Kind::Int : ArgValue::Kind::Unknown;
        d.i = w->shape.dims[2 + i].value();
        k.items.push_back(d);
      }
      // Kernel sizes come from the weight; the rest from the call (function) or init (primitive).
      struct Args : ContextBase {
        CallContext& c;
        ArgValue kernel;
        bool fn_args;
        Args(CallContext& cc, ArgValue kk, bool f) : c(cc), kernel(std::move(kk)), fn_args(f) {}
        const ArgValue& arg(std::string_view n) const override {
          if (n == "\x01kernel") return kernel;
          return fn_args ? c.arg(n) : c.init_arg(n);
        }
        Version version() const override { return c.version(); }
        std::string_view target() const override { return c.target(); }
        void error(std::string_view code, std::string m, std::string_view a) override {
          c.error(code, std::move(m), a);
        }
        void warning(std::string_view code, std::string m, std::string_view a) override {
          c.warning(code, std::move(m), a);
        }
        bool failed() const override { return c.failed(); }
        void suggest_init_value(std::string_view p, std::string v) override {
          if (!fn_args) c.suggest_init_value(p, std::move(v));
        }
      } args(ctx, k, functional);
      WindowArgNames n = names;
      n.kernel = "\x01kernel";
      auto win = read_window(args, nd, false, nd > 1, n);
      if (!win) return ctx.failed() ? void() : add_unknown_output(ctx, x->dtype);
      int64_t groups = args.arg(functional ? "groups" : "group").as_int().value_or(1);
      const Dim& wc = w->shape.dims[1];
      if (wc.is_known() && !require_dim(ctx, api, "input channels", "weight.shape[1]*groups",
                                        wc.value() * groups, x->shape.dims[1], x->shape))
        return;
      Shape y = window_shape(x->shape, *win, WindowOp::Conv);
      y.dims[1] = w->shape.dims[0];
      ctx.add_output({y, x->dtype});
      auto ny = known_count(y);
      auto kw =
          known_count(Shape(std::vector<Dim>(w->shape.dims.begin() + 1, w->shape.dims.end())));
      if (ny && kw) ctx.set_flops(2.0 * *ny * *kw);
    };
  };
  std::vector<ParamSpec> conv_params = {P("input"),
                                        P("weight"),
                                        P("bias", "None"),
                                        P("stride", "1"),
                                        P("pad_mode", "'valid'"),
                                        P("padding", "0"),
                                        P("dilation", "1"),
                                        P("groups", "1")};
  fn(r, "ops.conv2d", "Conv2D", conv_params, conv("ops.conv2d", 2, {}, true),
     "2-D convolution with an explicit weight (out, in/groups, kh, kw)");
  fn(r, "ops.conv1d", "Conv1D", conv_params, conv("ops.conv1d", 1, {}, true),
     "1-D convolution with an explicit weight (out, in/groups, k)");
  prim(r, "ops.Conv2D",
       {P("out_channel"), P("kernel_size"), P("mode", "1"), P("pad_mode", "'valid'"), P("pad", "0"),
        P("stride", "1"), P("dilation", "1"), P("group", "1"), P("data_format", "'NCHW'")},
       {P("x"), P("weight")},
       conv("ops.Conv2D", 2,
            {.kernel = "",
             .stride = "stride",
             .dilation = "dilation",
             .pad_mode = "pad_mode",
             .padding = "pad"},
            false),
       "Conv2D(out_channel, kernel_size, ...)(x, weight)");

  auto pool = [](const std::string& api, WindowArgNames names, bool functional,
                 std::string x_name) {
    return on_tensor(std::move(x_name),
                     [api, names, functional](CallContext& ctx, const TensorType& t) {
                       if (!require_rank(ctx, api, t.shape, 3, 4)) return;
                       std::optional<Window> w;
                       if (functional) {
                         w = read_window(ctx, 2, true, false, names);
                       } else {
                         InitArgs args(ctx);
                         w = read_window(args, 2, true, false, names);
                       }
                       if (!w) return ctx.failed() ? void() : add_unknown_output(ctx, t.dtype);
                       if (functional) {
                         // ops.max_pool2d has no pad_mode (its padding is explicit) and its
                         // stride defaults to kernel_size: the node says so, or the runtime and
                         // the exporters took stride 1 and no padding.
                         ctx.set_attr("stride", w->stride);
                         ctx.set_attr("pad_mode", std::string("pad"));
                       }
                       w->ceil_mode = functional && flag(ctx, "ceil_mode");
                       Shape y = window_shape(t.shape, *w, WindowOp::Pool);
                       ctx.add_output({y, t.dtype});
                       if (functional && flag(ctx, "return_indices"))
                         ctx.add_output({y, DType::Int64});
                       double k = 1;
                       for (int64_t v : w->kernel) k *= static_cast<double>(v);
                       flops_per_element(ctx, y, k);
                     });
  };
  fn(r, "ops.max_pool2d", "MaxPool",
     {P("x"), P("kernel_size"), P("stride", "None"), P("padding", "0"), P("dilation", "1"),
      P("return_indices", "False"), P("ceil_mode", "False")},
     pool("ops.max_pool2d", {.pad_mode = "\x01none"}, true, "x"),
     "2-D max pooling (stride defaults to kernel_size)");
  fn(r, "ops.avg_pool2d", "AvgPool",
     {P("input_x"), P("kernel_size", "1"), P("stride", "1"), P("padding", "0"),
      P("ceil_mode", "False"), P("count_include_pad", "True"), P("divisor_override", "0")},
     pool("ops.avg_pool2d", {.pad_mode = "\x01none"}, true, "input_x"), "2-D average pooling");
  for (const char* name : {"ops.MaxPool", "ops.AvgPool"}) {
    prim(r, name,
         {P("kernel_size", "1"), P("strides", "1"),
          P("pad_mode", name[5] == 'a' ? "'valid'" : "'VALID'"), P("data_format", "'NCHW'")},
         {P("x")},
         pool(name, {.stride = "strides", .dilation = "\x01none", .padding = "\x01none"}, false,
              "x"),
         std::string(name + 4) + "(kernel_size, strides, pad_mode)(x)");
  }
  fn(r, "ops.adaptive_avg_pool2d", "AdaptiveAvgPool2D", {P("input"), P("output_size")},
     on_tensor("input",
               [](CallContext& ctx, const TensorType& t) {
                 if (!require_rank(ctx, "ops.adaptive_avg_pool2d", t.shape, 3, 4, "input")) return;
                 Shape y = t.shape;
                 const ArgValue& os = ctx.arg("output_size");
                 for (size_t i = 0; i < 2; ++i) {
                   const ArgValue& item = os.kind == ArgValue::Kind::Sequence && i < os.items.size()
                                              ? os.items[i]
                                              : os;
                   if (item.kind == ArgValue::Kind::Int) {
                     y.dims[y.rank() - 2 + i] = Dim::known(item.i);
                   } else if (!item.is_none()) {
                     y.dims[y.rank() - 2 + i] = Dim::unknown();
                   }
                 }
                 ctx.add_output({y, t.dtype});
               }),
     "adaptive average pooling to output_size");
}

// Names people reach for that do not exist in mindspore.ops.
void register_mistakes(Registry& r) {
  const std::vector<std::pair<const char*, const char*>> mistakes = {
      {"ops.MaxPool2d", "nn.MaxPool2d"},
      {"ops.MaxPool2D", "ops.MaxPool"},
      {"ops.Conv2d", "ops.Conv2D"},
      {"ops.Linear", "nn.Dense"},
  };
  for (auto [wrong, right] : mistakes) {
    ApiEntry e;
    e.name = wrong;
    e.kind = ApiKind::PrimitiveClass;
    e.init_params = {VAR("args"), KWARGS("kwargs")};
    e.call_params = {VAR("args")};
    e.replacement = right;
    e.summary = std::string("does not exist in MindSpore; use ") + right;
    std::string msg = std::string(wrong) + " does not exist in MindSpore; use " + right;
    if (std::string(wrong) == "ops.MaxPool2d") msg += " (the layer) or ops.MaxPool (the primitive)";
    e.init = [msg](InitContext& ctx) { ctx.error("unknown-api", msg); };
    e.infer = [](CallContext& ctx) { add_unknown_output(ctx); };
    r.add(std::move(e));
  }
}

// ops.Custom: a user kernel. Its shape function is user code (not evaluated), so outputs are
// unknown; the node stays in the graph so the hardware layer can say where its func_type cannot
// run (docs/hardware-model.md, `unsupported-on-target`).
void register_custom(Registry& r) {
  prim(
      r, "ops.Custom",
      {P("func"), P("out_shape", "None"), P("out_dtype", "None"), P("func_type", "'hybrid'"),
       P("bprop", "None"), P("reg_info", "None")},
      {VAR("inputs")}, [](CallContext& ctx) { add_unknown_output(ctx); },
      "user-defined kernel (output shape from user code: unknown)");
}

}  // namespace

void register_ops(Registry& r) {
  register_unary(r);
  register_binary(r);
  register_reductions(r);
  register_shape_ops(r);
  register_creation(r);
  register_nn_ops(r);
  register_mistakes(r);
  register_custom(r);
}

}  // namespace graphcore
