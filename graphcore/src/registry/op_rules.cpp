#include "registry/op_rules.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace graphcore::rules {

namespace {

// An explicitly passed alias wins over defaulted ones.
const ArgValue& pick(const ContextBase& ctx, const Names& names) {
  for (const std::string& n : names)
    if (ctx.arg(n).explicit_arg && !ctx.arg(n).is_none()) return ctx.arg(n);
  for (const std::string& n : names) {
    const ArgValue& v = ctx.arg(n);
    if (!v.is_missing() && !v.is_none()) return v;
  }
  static const ArgValue kMissing;
  return kMissing;
}

// The value bound to `name`, or (when the call passed extra positionals) the varargs as one
// sequence: x.reshape(2, 3) and x.reshape((2, 3)) read alike.
ArgValue seq_or_varargs(CallContext& ctx, const std::string& name) {
  const ArgValue& v = ctx.arg(name);
  const std::vector<ArgValue>& rest = ctx.varargs();
  if (rest.empty()) return v;
  ArgValue seq;
  seq.kind = ArgValue::Kind::Sequence;
  if (!v.is_missing()) seq.items.push_back(v);
  seq.items.insert(seq.items.end(), rest.begin(), rest.end());
  if (seq.items.size() == 1 && seq.items[0].kind == ArgValue::Kind::Sequence) return seq.items[0];
  return seq;
}

int64_t int_or(const ArgValue& v, int64_t fallback) { return v.as_int().value_or(fallback); }

bool both_int(DType a, DType b) {
  return a != DType::Unknown && b != DType::Unknown && !is_floating(a) && !is_floating(b) &&
         a != DType::Complex64 && b != DType::Complex64;
}

// Shapes of the tensors in a tuple argument (or its varargs); nullopt if not known.
std::optional<std::vector<TensorType>> tensor_list(CallContext& ctx, const std::string& name) {
  ArgValue v = seq_or_varargs(ctx, name);
  if (v.kind != ArgValue::Kind::Sequence) return std::nullopt;
  std::vector<TensorType> out;
  for (const ArgValue& item : v.items) {
    auto t = tensor_value(item);
    if (!t) return std::nullopt;
    out.push_back(*t);
  }
  return out;
}

}  // namespace

InferFn unary_rule(std::string api, std::string x, UnaryDType rule, double flops) {
  return on_any_tensor(x, [api, rule, flops](CallContext& ctx, const TensorType& t) {
    DType out = t.dtype;
    if (rule == UnaryDType::FloatOnly && !require_float(ctx, api, t.dtype)) return;
    if (rule == UnaryDType::ToFloat && t.dtype != DType::Unknown && !is_floating(t.dtype) &&
        t.dtype != DType::Complex64)
      out = DType::Float32;
    if (rule == UnaryDType::ToBool) out = DType::Bool;
    ctx.add_output({t.shape, out});
    flops_per_element(ctx, t.shape, flops);
  });
}

InferFn binary_rule(std::string api, std::string a, std::string b, BinaryDType rule,
                    int64_t first_operand) {
  return [api, a, b, rule, first_operand](CallContext& ctx) {
    const ArgValue& va = ctx.arg(a);
    const ArgValue& vb = ctx.arg(b);
    auto ta = tensor_arg(ctx, a);
    auto tb = tensor_arg(ctx, b);
    if (ctx.failed()) return;
    if (!ta || !tb)
      return add_unknown_output(ctx, rule == BinaryDType::Compare ? DType::Bool : DType::Unknown);
    auto shape = broadcast_all(ctx, api, {ta->shape, tb->shape});
    if (!shape) return;
    DType dt;
    if (va.is_tensor() && is_scalar(vb))
      dt = scalar_promote(ta->dtype, vb.kind);
    else if (vb.is_tensor() && is_scalar(va))
      dt = scalar_promote(tb->dtype, va.kind);
    else
      dt = (ta->dtype == DType::Unknown || tb->dtype == DType::Unknown)
               ? DType::Unknown
               : promote(ta->dtype, tb->dtype);
    if (rule == BinaryDType::TrueDiv && both_int(ta->dtype, tb->dtype) &&
        !(va.is_tensor() && vb.kind == ArgValue::Kind::Float))
      dt = DType::Float32;
    if (rule == BinaryDType::Compare) dt = DType::Bool;
    ctx.add_output({*shape, dt});
    flops_per_element(ctx, *shape, 1);
    if (vb.is_tensor() && is_scalar(va)) record_scalar(ctx, va, first_operand);
    if (va.is_tensor() && is_scalar(vb)) record_scalar(ctx, vb, first_operand + 1);
  };
}

namespace {

DType reduce_dtype(DType in, ReduceDType rule) {
  switch (rule) {
    case ReduceDType::Keep:
      return in;
    case ReduceDType::SumInt64:
      return (in != DType::Unknown && is_integral(in)) ? DType::Int64 : in;
    case ReduceDType::ToInt64:
      return DType::Int64;
    case ReduceDType::ToInt32:
      return DType::Int32;
  }
  return in;
}

void reduce_output(CallContext& ctx, const std::string& api, const TensorType& t,
                   const ArgValue& axis, bool keep, DType dtype, bool with_indices) {
  auto axes = axes_value(axis);
  if (!axes) {
    if (axis.is_unknown()) return add_unknown_output(ctx, dtype);
    ctx.error("invalid-argument",
              api + ": axis must be an int or a tuple of ints, got " + axis.repr(), "axis");
    return;
  }
  auto shape = reduce_shape(ctx, api, t.shape, *axes, keep);
  if (!shape) return;
  ctx.add_output({*shape, dtype});
  ctx.set_attr("axis", *axes);
  ctx.set_attr("keep_dims", keep);
  if (with_indices) ctx.add_output({*shape, DType::Int64});
  flops_per_element(ctx, t.shape, 1);
}

}  // namespace

InferFn reduce_rule(std::string api, std::string x, ReduceNames names, ReduceDType rule,
                    bool with_indices) {
  return on_any_tensor(
      x,
      [api, names, rule, with_indices](CallContext& ctx, const TensorType& t) {
        DType dt = reduce_dtype(t.dtype, rule);
        if (!names.dtype.empty())
          if (auto d = dtype_value(pick(ctx, names.dtype))) dt = *d;
        bool keep = pick(ctx, names.keep).as_bool().value_or(false);
        reduce_output(ctx, api, t, pick(ctx, names.axis), keep, dt, with_indices);
      },
      with_indices ? 2 : 1);
}

InferFn reduce_prim_rule(std::string api, std::string x, std::string axis, ReduceDType rule) {
  return on_any_tensor(x, [api, axis, rule](CallContext& ctx, const TensorType& t) {
    bool keep = ctx.init_arg("keep_dims").as_bool().value_or(false);
    reduce_output(ctx, api, t, ctx.arg(axis), keep, reduce_dtype(t.dtype, rule), false);
  });
}

InferFn reduce_init_axis_rule(std::string api, std::string x, std::string axis, ReduceDType rule) {
  return on_any_tensor(x, [api, axis, rule](CallContext& ctx, const TensorType& t) {
    bool keep = ctx.init_arg("keep_dims").as_bool().value_or(false);
    reduce_output(ctx, api, t, ctx.init_arg(axis), keep, reduce_dtype(t.dtype, rule), false);
  });
}

InferFn reshape_rule(std::string api, std::string x, std::string shape) {
  return on_tensor(x, [api, shape](CallContext& ctx, const TensorType& t) {
    ArgValue v = seq_or_varargs(ctx, shape);
    auto target = shape_value(v);
    if (!target) {
      if (v.is_unknown() || v.kind == ArgValue::Kind::Tensor)
        return add_unknown_output(ctx, t.dtype);
      ctx.error("invalid-argument", api + ": shape must be a tuple of ints, got " + v.repr(),
                shape);
      return;
    }
    size_t minus_ones = 0;
    for (const ArgValue& item : v.kind == ArgValue::Kind::Sequence ? v.items : std::vector{v})
      if (item.kind == ArgValue::Kind::Int && item.i == -1) ++minus_ones;
    if (minus_ones > 1) {
      ctx.error("reshape-size", api + ": only one dimension can be -1, got " + v.repr(), shape);
      return;
    }
    if (auto out = reshape_shape(ctx, api, t.shape, *target)) {
      ctx.add_output({*out, t.dtype});
      if (auto ints = v.as_ints()) ctx.set_attr("shape", *ints);
    }
  });
}

InferFn permute_rule(std::string api, std::string x, std::string perm) {
  return on_tensor(x, [api, perm](CallContext& ctx, const TensorType& t) {
    ArgValue v = seq_or_varargs(ctx, perm);
    auto p = v.as_ints();
    if (!p) return add_unknown_output(ctx, t.dtype);
    if (auto out = permute_shape(ctx, api, t.shape, *p)) {
      ctx.add_output({*out, t.dtype});
      std::vector<int64_t> order = *p;
      for (int64_t& a : order)
        if (a < 0) a += static_cast<int64_t>(t.shape.rank());
      ctx.set_attr("perm", std::move(order));
    }
  });
}

InferFn swap_rule(std::string api, std::string x, std::string a, std::string b) {
  return on_tensor(x, [api, a, b](CallContext& ctx, const TensorType& t) {
    auto ia = ctx.arg(a).as_int();
    auto ib = ctx.arg(b).as_int();
    if (!ia || !ib) return add_unknown_output(ctx, t.dtype);
    auto na = axis_or_error(ctx, api, *ia, t.shape.rank(), a);
    auto nb = axis_or_error(ctx, api, *ib, t.shape.rank(), b);
    if (!na || !nb) return;
    Shape out = t.shape;
    std::swap(out.dims[*na], out.dims[*nb]);
    ctx.add_output({out, t.dtype});
    std::vector<int64_t> perm(t.shape.rank());
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[*na], perm[*nb]);
    ctx.set_attr("perm", std::move(perm));
  });
}

namespace {

InferFn join_rule(std::string api, std::string tensors, Names axis, bool from_init, bool stack) {
  return [api, tensors, axis, from_init, stack](CallContext& ctx) {
    auto list = tensor_list(ctx, tensors);
    const ArgValue& ax = from_init ? ctx.init_arg(axis.front()) : pick(ctx, axis);
    if (!list || list->empty()) return add_unknown_output(ctx);
    int64_t a = int_or(ax, 0);
    std::vector<Shape> shapes;
    DType dt = (*list)[0].dtype;
    for (const TensorType& t : *list) {
      shapes.push_back(t.shape);
      if (dt != DType::Unknown && t.dtype != DType::Unknown) dt = promote(dt, t.dtype);
    }
    auto out = stack ? stack_shape(ctx, api, shapes, a) : concat_shape(ctx, api, shapes, a);
    if (!out) return;
    ctx.add_output({*out, dt});
    ctx.set_attr("axis", a);
  };
}

}  // namespace

InferFn concat_rule(std::string api, std::string tensors, Names axis, bool from_init) {
  return join_rule(std::move(api), std::move(tensors), std::move(axis), from_init, false);
}
InferFn stack_rule(std::string api, std::string tensors, Names axis, bool from_init) {
  return join_rule(std::move(api), std::move(tensors), std::move(axis), from_init, true);
}

namespace {

void emit_split(CallContext& ctx, const std::string& api, const TensorType& t, int64_t axis,
                const std::vector<int64_t>& sizes) {
  auto shapes = split_shapes(ctx, api, t.shape, axis, sizes);
  if (!shapes) return;
  for (const Shape& s : *shapes) ctx.add_output({s, t.dtype});
  ctx.set_attr("axis", axis);
  ctx.set_attr("sizes", sizes);
}

}  // namespace

InferFn split_rule(std::string api, std::string x, std::string sizes, Names axis) {
  return on_tensor(x, [api, sizes, axis](CallContext& ctx, const TensorType& t) {
    const ArgValue& given = pick(ctx, axis);
    if (!given.is_missing() && given.kind != ArgValue::Kind::Int)
      return add_unknown_output(ctx, t.dtype);  // an axis known only at run time
    int64_t a = int_or(given, 0);
    auto n = axis_or_error(ctx, api, a, t.shape.rank(), "axis");
    if (!n) return;
    const ArgValue& v = ctx.arg(sizes);
    const Dim& d = t.shape.dims[*n];
    if (v.kind == ArgValue::Kind::Int) {
      if (!d.is_known()) return add_unknown_output(ctx, t.dtype);
      return emit_split(ctx, api, t, a, split_by_size(d.value(), v.i));
    }
    if (auto list = v.as_ints(); list && v.kind == ArgValue::Kind::Sequence)
      return emit_split(ctx, api, t, a, *list);
    add_unknown_output(ctx, t.dtype);
  });
}

InferFn chunk_rule(std::string api, std::string x, std::string chunks, Names axis) {
  return on_tensor(x, [api, chunks, axis](CallContext& ctx, const TensorType& t) {
    const ArgValue& given = pick(ctx, axis);
    if (!given.is_missing() && given.kind != ArgValue::Kind::Int)
      return add_unknown_output(ctx, t.dtype);  // an axis known only at run time
    int64_t a = int_or(given, 0);
    auto n = axis_or_error(ctx, api, a, t.shape.rank(), "axis");
    if (!n) return;
    auto c = ctx.arg(chunks).as_int();
    const Dim& d = t.shape.dims[*n];
    if (!c || !d.is_known()) return add_unknown_output(ctx, t.dtype);
    emit_split(ctx, api, t, a, chunk_sizes(d.value(), *c));
  });
}

InferFn numpy_split_rule() {
  return on_tensor("x", [](CallContext& ctx, const TensorType& t) {
    const ArgValue& axis = ctx.arg("axis");
    if (!axis.is_missing() && axis.kind != ArgValue::Kind::Int)
      return add_unknown_output(ctx, t.dtype);  // an axis known only at run time
    const int64_t a = int_or(axis, 0);
    auto n = axis_or_error(ctx, "mindspore.numpy.split", a, t.shape.rank(), "axis");
    if (!n) return;
    const ArgValue& v = ctx.arg("indices_or_sections");
    const Dim& d = t.shape.dims[*n];
    if (!d.is_known()) return add_unknown_output(ctx, t.dtype);
    const int64_t len = d.value();
    // Messages measured with MindSpore 2.10 (an int goes to the Split primitive, a list to
    // sub-tensors that may not be empty).
    if (v.kind == ArgValue::Kind::Int) {
      if (v.i <= 0) return add_unknown_output(ctx, t.dtype);
      if (len % v.i != 0) {
        ctx.error("shape-mismatch",
                  "For 'Split', x_shape[" + std::to_string(*n) +
                      "] must be divisible by output_num = " + std::to_string(v.i) + ", but got " +
                      std::to_string(len),
                  "indices_or_sections");
        return;
      }
      return emit_split(ctx, "mindspore.numpy.split", t, static_cast<int64_t>(*n),
                        std::vector<int64_t>(static_cast<size_t>(v.i), len / v.i));
    }
    auto points = v.as_ints();
    if (!points || v.kind != ArgValue::Kind::Sequence) return add_unknown_output(ctx, t.dtype);
    std::vector<int64_t> sizes;
    int64_t begin = 0;
    for (size_t i = 0; i <= points->size(); ++i) {
      const int64_t end = i < points->size() ? (*points)[i] : len;
      if (end < 0) return add_unknown_output(ctx, t.dtype);  // from the end: not modelled
      if (end <= begin || end > len) {
        ctx.error("shape-mismatch",
                  "empty sub-tensor encountered (mindspore.numpy.split of a dimension of " +
                      std::to_string(len) + " at " + v.repr() + ")",
                  "indices_or_sections");
        return;
      }
      sizes.push_back(end - begin);
      begin = end;
    }
    emit_split(ctx, "mindspore.numpy.split", t, static_cast<int64_t>(*n), sizes);
  });
}

InferFn squeeze_rule(std::string api, std::string x, Names axis, bool from_init) {
  return on_tensor(x, [api, axis, from_init](CallContext& ctx, const TensorType& t) {
    ArgValue v = from_init ? ctx.init_arg(axis.front()) : pick(ctx, axis);
    if (!from_init && !ctx.varargs().empty()) v = seq_or_varargs(ctx, axis.front());
    auto axes = axes_value(v);
    if (!axes) return add_unknown_output(ctx, t.dtype);
    std::vector<bool> drop(t.shape.rank(), false);
    if (axes->empty()) {
      for (size_t i = 0; i < t.shape.rank(); ++i) {
        if (t.shape.dims[i] == Dim::known(1)) drop[i] = true;
        if (!t.shape.dims[i].is_known()) return add_unknown_output(ctx, t.dtype);
      }
    }
    for (int64_t a : *axes) {
      auto n = axis_or_error(ctx, api, a, t.shape.rank(), "axis");
      if (!n) return;
      // MindSpore 2.x leaves a non-1 axis in place rather than failing.
      if (dims_equal(t.shape.dims[*n], Dim::known(1)) != Tri::No) drop[*n] = true;
    }
    Shape out;
    std::vector<int64_t> dropped;
    for (size_t i = 0; i < t.shape.rank(); ++i) {
      if (!drop[i]) out.dims.push_back(t.shape.dims[i]);
      if (drop[i]) dropped.push_back(static_cast<int64_t>(i));
    }
    ctx.add_output({out, t.dtype});
    ctx.set_attr("axis", std::move(dropped));
  });
}

InferFn unsqueeze_rule(std::string api, std::string x, Names axis) {
  return on_tensor(x, [api, axis](CallContext& ctx, const TensorType& t) {
    auto a = pick(ctx, axis).as_int();
    if (!a) return add_unknown_output(ctx, t.dtype);
    auto n = axis_or_error(ctx, api, *a, t.shape.rank() + 1, "axis");
    if (!n) return;
    Shape out = t.shape;
    out.dims.insert(out.dims.begin() + static_cast<std::ptrdiff_t>(*n), Dim::known(1));
    ctx.add_output({out, t.dtype});
    ctx.set_attr("axis", static_cast<int64_t>(*n));
  });
}

InferFn flatten_rule(std::string api, std::string x, int64_t default_start) {
  return on_tensor(x, [api, default_start](CallContext& ctx, const TensorType& t) {
    int64_t start = int_or(ctx.arg("start_dim"), default_start);
    int64_t end = int_or(ctx.arg("end_dim"), -1);
    if (auto out = flatten_shape(ctx, api, t.shape, start, end)) ctx.add_output({*out, t.dtype});
  });
}

InferFn cast_rule(std::string api, std::string x, std::string dtype) {
  return on_any_tensor(x, [api, dtype](CallContext& ctx, const TensorType& t) {
    const ArgValue& v = ctx.arg(dtype);
    auto d = dtype_value(v);
    if (!d && !v.is_unknown()) {
      ctx.error("invalid-argument", api + ": expected a mindspore dtype, got " + v.repr(), dtype);
      return;
    }
    ctx.add_output({t.shape, d.value_or(DType::Unknown)});
    if (d) ctx.set_attr("dtype", std::string(dtype_name(*d)));
  });
}

InferFn to_dtype_rule(std::string api, std::string x, DType dtype) {
  (void)api;
  return on_any_tensor(x, [dtype](CallContext& ctx, const TensorType& t) {
    ctx.add_output({t.shape, dtype});
  });
}

InferFn tile_rule(std::string api, std::string x, std::string reps) {
  return on_tensor(x, [api, reps](CallContext& ctx, const TensorType& t) {
    auto r = seq_or_varargs(ctx, reps).as_ints();
    if (!r) return add_unknown_output(ctx, t.dtype);
    Shape in = t.shape;
    std::vector<int64_t> m = *r;
    while (in.rank() < m.size()) in.dims.insert(in.dims.begin(), Dim::known(1));
    while (m.size() < in.rank()) m.insert(m.begin(), 1);
    for (size_t i = 0; i < m.size(); ++i)
      in.dims[i] = in.dims[i].is_unknown() ? in.dims[i] : in.dims[i] * Dim::known(m[i]);
    ctx.add_output({in, t.dtype});
    ctx.set_attr("multiples", std::move(m));
  });
}

InferFn broadcast_to_rule(std::string api, std::string x, std::string shape) {
  return on_tensor(x, [api, shape](CallContext& ctx, const TensorType& t) {
    auto target = shape_value(seq_or_varargs(ctx, shape));
    if (!target) return add_unknown_output(ctx, t.dtype);
    Shape tgt(*target);
    if (tgt.rank() < t.shape.rank()) {
      ctx.error("broadcast-error", api + ": cannot broadcast " + t.shape.str() +
                                       " to a shape of lower rank " + tgt.str());
      return;
    }
    size_t off = tgt.rank() - t.shape.rank();
    for (size_t i = 0; i < tgt.rank(); ++i) {
      if (!tgt.dims[i].is_unknown()) continue;  // -1 keeps the input dim
      if (i >= off) tgt.dims[i] = t.shape.dims[i - off];
    }
    for (size_t i = 0; i < t.shape.rank(); ++i) {
      const Dim& d = t.shape.dims[i];
      const Dim& o = tgt.dims[off + i];
      if (dims_equal(d, Dim::known(1)) == Tri::No && dims_equal(d, o) == Tri::No) {
        ctx.error("broadcast-error", api + ": cannot broadcast " + t.shape.str() + " to " +
                                         tgt.str() + " (dimension " + std::to_string(i) + ": " +
                                         d.str() + " vs " + o.str() + ")");
        return;
      }
    }
    ctx.add_output({tgt, t.dtype});
  });
}

InferFn matmul_rule(std::string api, std::string a, std::string b, MatMulKind kind,
                    bool flags_from_init) {
  return [api, a, b, kind, flags_from_init](CallContext& ctx) {
    auto ta = tensor_arg(ctx, a);
    auto tb = tensor_arg(ctx, b);
    if (ctx.failed()) return;
    if (!ta || !tb) return add_unknown_output(ctx);
    bool tra = flags_from_init && ctx.init_arg("transpose_a").as_bool().value_or(false);
    bool trb = flags_from_init && ctx.init_arg("transpose_b").as_bool().value_or(false);
    auto out = matmul_shape(ctx, api, ta->shape, tb->shape, tra, trb, kind);
    if (!out) return;
    DType dt = (ta->dtype == DType::Unknown || tb->dtype == DType::Unknown)
                   ? DType::Unknown
                   : promote(ta->dtype, tb->dtype);
    ctx.add_output({*out, dt});
    if (ta->shape.ranked && ta->shape.rank() > 0) {
      size_t r = ta->shape.rank();
      Dim k = ta->shape.dims[r == 1 ? 0 : (tra ? r - 2 : r - 1)];
      matmul_flops(ctx, *out, k);
    }
  };
}

InferFn masked_fill_rule(std::string api, std::string x, std::string mask, std::string value) {
  return [api, x, mask, value](CallContext& ctx) {
    auto t = tensor_arg(ctx, x);
    auto m = tensor_arg(ctx, mask);
    if (ctx.failed()) return;
    if (!t || !m) return add_unknown_output(ctx, t ? t->dtype : DType::Unknown);
    if (m->dtype != DType::Unknown && m->dtype != DType::Bool) {
      ctx.error("dtype-error",
                api + ": mask must be a bool tensor, got " + std::string(dtype_name(m->dtype)),
                mask);
      return;
    }
    auto shape = broadcast_all(ctx, api, {t->shape, m->shape});
    if (!shape) return;
    ctx.add_output({*shape, t->dtype});
    if (auto v = scalar_attr_value(ctx.arg(value))) ctx.set_attr("value", std::move(*v));
  };
}

InferFn clamp_rule(std::string api, std::string x, std::string lo, std::string hi) {
  (void)api;
  return on_tensor(x, [lo, hi](CallContext& ctx, const TensorType& t) {
    DType dt = t.dtype;
    for (const std::string& n : {lo, hi})
      if (is_scalar(ctx.arg(n))) dt = scalar_promote(dt, ctx.arg(n).kind);
    ctx.add_output({t.shape, dt});
    // `min` / `max`: a number bound's value, or None for a bound left out (which then takes no
    // input: `ops.clip_by_value(x, None, t)` has t as its only bound input, and it is the upper
    // one). A tensor bound records nothing: it is the node's next input, lower bound first.
    for (const auto& [arg, name] : {std::pair{&lo, "min"}, std::pair{&hi, "max"}}) {
      const ArgValue& a = ctx.arg(*arg);
      if (auto v = scalar_attr_value(a)) {
        ctx.set_attr(name, std::move(*v));
      } else if (a.is_none() || a.is_missing()) {
        ctx.set_attr(name, AttrValue{});
      }
    }
    flops_per_element(ctx, t.shape, 1);
  });
}

InferFn topk_rule(std::string api, std::string x, std::string k, Names dim) {
  return on_tensor(
      x,
      [api, k, dim](CallContext& ctx, const TensorType& t) {
        int64_t d = int_or(pick(ctx, dim), -1);
        if (t.shape.rank() == 0) {
          ctx.add_output(t);
          ctx.add_output({t.shape, DType::Int32});
          return;
        }
        auto n = axis_or_error(ctx, api, d, t.shape.rank(), "dim");
        if (!n) return;
        Shape out = t.shape;
        auto kv = ctx.arg(k).as_int();
        if (kv && dims_equal(t.shape.dims[*n], Dim::known(*kv)) == Tri::No &&
            t.shape.dims[*n].is_known() && t.shape.dims[*n].value() < *kv) {
          ctx.error("shape-mismatch",
                    api + ": k=" + std::to_string(*kv) + " exceeds dimension " + std::to_string(d) +
                        " of shape " + t.shape.str(),
                    k);
          return;
        }
        out.dims[*n] = kv ? Dim::known(*kv) : Dim::unknown();
        ctx.add_output({out, t.dtype});
        ctx.add_output({out, DType::Int32});
      },
      2);
}

InferFn gather_rule(std::string api, std::string params, std::string indices, std::string axis,
                    bool batch_dims_from_init) {
  return [api, params, indices, axis, batch_dims_from_init](CallContext& ctx) {
    auto p = tensor_arg(ctx, params);
    auto i = tensor_arg(ctx, indices);
    if (ctx.failed()) return;
    if (!p || !i || !p->shape.ranked || !i->shape.ranked)
      return add_unknown_output(ctx, p ? p->dtype : DType::Unknown);
    auto a = ctx.arg(axis).as_int();
    int64_t bd =
        int_or(batch_dims_from_init ? ctx.init_arg("batch_dims") : ctx.arg("batch_dims"), 0);
    if (!a) return add_unknown_output(ctx, p->dtype);
    auto n = axis_or_error(ctx, api, *a, p->shape.rank(), axis);
    if (!n) return;
    Shape out(std::vector<Dim>(p->shape.dims.begin(), p->shape.dims.begin() + *n));
    for (size_t k = static_cast<size_t>(std::max<int64_t>(bd, 0)); k < i->shape.rank(); ++k)
      out.dims.push_back(i->shape.dims[k]);
    for (size_t k = *n + 1; k < p->shape.rank(); ++k) out.dims.push_back(p->shape.dims[k]);
    ctx.add_output({out, p->dtype});
    ctx.set_attr("axis", static_cast<int64_t>(*n));
  };
}

InferFn norm_rule(std::string api, std::string x, Names dim, Names keep) {
  return on_tensor(x, [api, dim, keep](CallContext& ctx, const TensorType& t) {
    bool k = pick(ctx, keep).as_bool().value_or(false);
    DType dt = dtype_value(ctx.arg("dtype")).value_or(t.dtype);
    reduce_output(ctx, api, t, pick(ctx, dim), k, dt, false);
  });
}

InferFn same_as_rule(std::string api, std::string x, std::string other) {
  return [api, x, other](CallContext& ctx) {
    auto t = tensor_arg(ctx, x);
    auto o = tensor_arg(ctx, other);
    if (ctx.failed()) return;
    if (!t || !o) return add_unknown_output(ctx, t ? t->dtype : DType::Unknown);
    auto shape = broadcast_all(ctx, api, {t->shape, o->shape});
    if (shape) ctx.add_output({o->shape, t->dtype});
  };
}

}  // namespace graphcore::rules
