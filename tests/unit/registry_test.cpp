// Drives registry entries directly through small fakes of InitContext/CallContext.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "graphcore/registry.h"

namespace graphcore {
namespace {

using K = ArgValue::Kind;

ArgValue I(int64_t v) {
  ArgValue a;
  a.kind = K::Int;
  a.i = v;
  a.dim = v >= 0 ? Dim::known(v) : Dim::unknown();
  return a;
}
ArgValue Fl(double v) {
  ArgValue a;
  a.kind = K::Float;
  a.f = v;
  return a;
}
ArgValue Bo(bool v) {
  ArgValue a;
  a.kind = K::Bool;
  a.b = v;
  return a;
}
ArgValue Str(std::string v) {
  ArgValue a;
  a.kind = K::Str;
  a.s = std::move(v);
  return a;
}
ArgValue NoneV() {
  ArgValue a;
  a.kind = K::None;
  return a;
}
ArgValue Seq(std::vector<ArgValue> items) {
  ArgValue a;
  a.kind = K::Sequence;
  a.items = std::move(items);
  return a;
}
ArgValue Ints(std::vector<int64_t> v) {
  std::vector<ArgValue> items;
  for (int64_t x : v) items.push_back(I(x));
  return Seq(items);
}
ArgValue Ten(Shape s, DType dt = DType::Float32) {
  ArgValue a;
  a.kind = K::Tensor;
  a.tensor = TensorType{std::move(s), dt};
  return a;
}
ArgValue Ten(std::initializer_list<int64_t> dims, DType dt = DType::Float32) {
  return Ten(Shape::of(dims), dt);
}
ArgValue DT(DType dt) {
  ArgValue a;
  a.kind = K::DType;
  a.dtype = dt;
  return a;
}

// Parses the default sources the registry uses: ints, floats, strings, bools, None, tuples,
// mindspore dtypes. Anything else becomes Other.
ArgValue parse_default(std::string_view src) {
  auto trim = [](std::string_view s) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    return s;
  };
  src = trim(src);
  if (src == "None") return NoneV();
  if (src == "True" || src == "False") return Bo(src == "True");
  if (src.size() >= 2 && (src.front() == '\'' || src.front() == '"'))
    return Str(std::string(src.substr(1, src.size() - 2)));
  if (src.starts_with("mindspore.")) {
    auto dt = dtype_from_name(src.substr(10));
    if (dt) return DT(*dt);
  }
  if (src.starts_with("(")) {
    std::vector<ArgValue> items;
    std::string_view inner = src.substr(1, src.size() - 2);
    size_t start = 0;
    while (start < inner.size()) {
      size_t comma = inner.find(',', start);
      std::string_view part = trim(inner.substr(start, comma - start));
      if (!part.empty()) items.push_back(parse_default(part));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    return Seq(items);
  }
  std::string s(src);
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (end && *end == '\0' && !s.empty()) return I(v);
  double d = std::strtod(s.c_str(), &end);
  if (end && *end == '\0' && !s.empty()) return Fl(d);
  ArgValue other;
  other.kind = K::Other;
  other.s = s;
  return other;
}

using Kwargs = std::map<std::string, ArgValue>;

// Binds positional and keyword arguments to `params` like Python would (defaults applied).
struct Bound {
  std::map<std::string, ArgValue, std::less<>> args;
  std::vector<ArgValue> varargs;
};
Bound bind_args(const std::vector<ParamSpec>& params, const std::vector<ArgValue>& pos,
                const Kwargs& kw) {
  Bound b;
  size_t p = 0;
  for (const ParamSpec& spec : params) {
    if (spec.kind == ParamKind::VarPositional) {
      while (p < pos.size()) b.varargs.push_back(pos[p++]);
      continue;
    }
    if (spec.kind == ParamKind::VarKeyword) continue;
    if (spec.kind == ParamKind::PositionalOrKeyword && p < pos.size()) {
      b.args[spec.name] = pos[p++];
      b.args[spec.name].explicit_arg = true;
    } else if (auto it = kw.find(spec.name); it != kw.end()) {
      b.args[spec.name] = it->second;
      b.args[spec.name].explicit_arg = true;
    } else if (!spec.default_src.empty()) {
      b.args[spec.name] = parse_default(spec.default_src);
    }
  }
  EXPECT_EQ(p, pos.size()) << "too many positional arguments";
  for (const auto& [name, v] : kw) {
    bool known = false;
    for (const ParamSpec& spec : params) known = known || spec.name == name;
    EXPECT_TRUE(known) << "unexpected keyword " << name;
  }
  return b;
}

struct Diag {
  std::string code;
  std::string message;
  bool error;
};

template <class Base>
class FakeBase : public Base {
 public:
  Bound bound;
  std::vector<Diag> diags;
  Version ver = kDefaultMindSporeVersion;

  const ArgValue& arg(std::string_view name) const override {
    auto it = bound.args.find(name);
    return it == bound.args.end() ? missing_ : it->second;
  }
  Version version() const override { return ver; }
  std::string_view target() const override { return "cpu"; }
  void error(std::string_view code, std::string message, std::string_view) override {
    diags.push_back({std::string(code), std::move(message), true});
  }
  void warning(std::string_view code, std::string message, std::string_view) override {
    diags.push_back({std::string(code), std::move(message), false});
  }
  bool failed() const override {
    for (const Diag& d : diags)
      if (d.error) return true;
    return false;
  }
  void suggest_init_value(std::string_view param, std::string value) override {
    fixes.push_back(std::string(param) + "=" + value);
  }
  std::vector<std::string> fixes;  // "in_channels=9216"
  std::string errors() const {
    std::string out;
    for (const Diag& d : diags)
      if (d.error) out += d.code + ": " + d.message + "\n";
    return out;
  }

 protected:
  ArgValue missing_;
};

class FakeInit : public FakeBase<InitContext> {
 public:
  std::vector<ParamInfo> params;
  std::map<std::string, AttrValue> attrs;
  void add_parameter(std::string name, Shape shape, DType dtype, bool trainable) override {
    params.push_back({std::move(name), std::move(shape), dtype, trainable});
  }
  void set_attr(std::string name, AttrValue value) override { attrs[name] = std::move(value); }
  const ParamInfo* find(std::string_view name) const {
    for (const ParamInfo& p : params)
      if (p.name == name) return &p;
    return nullptr;
  }
};

class FakeCall : public FakeBase<CallContext> {
 public:
  const FakeInit* init = nullptr;
  std::vector<TensorType> outputs;
  std::map<std::string, AttrValue> attrs;
  double flops = -1;

  const ArgValue& init_arg(std::string_view name) const override {
    return init ? init->arg(name) : missing_;
  }
  const AttrValue* init_attr(std::string_view name) const override {
    if (!init) return nullptr;
    auto it = init->attrs.find(std::string(name));
    return it == init->attrs.end() ? nullptr : &it->second;
  }
  const ParamInfo* param(std::string_view name) const override {
    return init ? init->find(name) : nullptr;
  }
  const std::vector<ArgValue>& varargs() const override { return bound.varargs; }
  void add_output(TensorType t) override { outputs.push_back(std::move(t)); }
  void set_attr(std::string name, AttrValue value) override { attrs[name] = std::move(value); }
  void set_flops(double f) override { flops = f; }
  void set_op(std::string_view o) override { op = o; }
  std::string op;
};

const ApiEntry& entry(std::string_view name) {
  const ApiEntry* e = Registry::instance().find(name, kDefaultMindSporeVersion);
  EXPECT_NE(e, nullptr) << name;
  if (!e) std::abort();
  return *e;
}

struct Layer {
  FakeInit init;
  const ApiEntry* e = nullptr;
};

Layer construct(std::string_view name, std::vector<ArgValue> pos = {}, Kwargs kw = {}) {
  Layer l;
  l.e = &entry(name);
  l.init.bound = bind_args(l.e->init_params, pos, kw);
  if (l.e->init) l.e->init(l.init);
  return l;
}

FakeCall apply(const Layer& l, std::vector<ArgValue> pos, Kwargs kw = {}) {
  FakeCall c;
  c.init = &l.init;
  c.bound = bind_args(l.e->call_params, pos, kw);
  if (!l.init.failed()) l.e->infer(c);
  return c;
}

FakeCall call(std::string_view name, std::vector<ArgValue> pos, Kwargs kw = {}) {
  FakeCall c;
  const ApiEntry& e = entry(name);
  c.bound = bind_args(e.call_params, pos, kw);
  e.infer(c);
  return c;
}

std::string shape_of(const FakeCall& c, size_t i = 0) {
  EXPECT_GT(c.outputs.size(), i) << c.errors();
  return c.outputs.size() > i ? c.outputs[i].shape.str() : "<none>";
}

bool has_code(const std::vector<Diag>& diags, std::string_view code) {
  for (const Diag& d : diags)
    if (d.code == code) return true;
  return false;
}

// ---- Convolution and dense ----------------------------------------------------------------------

TEST(RegistryConv, PadModesShapesAndParams) {
  struct Case {
    Kwargs kw;
    std::string out;
  };
  const std::vector<Case> cases = {
      {{}, "(1, 6, 28, 28)"},  // default pad_mode='same'
      {{{"pad_mode", Str("valid")}}, "(1, 6, 24, 24)"},
      {{{"pad_mode", Str("pad")}, {"padding", I(2)}}, "(1, 6, 28, 28)"},
      {{{"pad_mode", Str("pad")}, {"padding", Ints({1, 1, 2, 2})}, {"stride", I(2)}},
       "(1, 6, 13, 14)"},
      {{{"pad_mode", Str("same")}, {"stride", I(2)}}, "(1, 6, 14, 14)"},
      {{{"pad_mode", Str("valid")}, {"dilation", I(2)}}, "(1, 6, 20, 20)"},
  };
  for (const Case& c : cases) {
    Layer conv = construct("nn.Conv2d", {I(3), I(6), I(5)}, c.kw);
    ASSERT_FALSE(conv.init.failed()) << conv.init.errors();
    FakeCall out = apply(conv, {Ten({1, 3, 28, 28})});
    EXPECT_EQ(shape_of(out), c.out) << out.errors();
  }
  Layer conv =
      construct("nn.Conv2d", {I(4), I(6), I(3)}, {{"group", I(2)}, {"has_bias", Bo(true)}});
  ASSERT_EQ(conv.init.params.size(), 2u);
  EXPECT_EQ(conv.init.params[0].name, "weight");
  EXPECT_EQ(conv.init.params[0].shape.str(), "(6, 2, 3, 3)");
  EXPECT_EQ(conv.init.params[1].shape.str(), "(6,)");
  Layer nobias = construct("nn.Conv2d", {I(4), I(6), I(3)});
  EXPECT_EQ(nobias.init.params.size(), 1u);
  Layer c1 = construct("nn.Conv1d", {I(4), I(6), I(3)});
  EXPECT_EQ(c1.init.params[0].shape.str(), "(6, 4, 1, 3)");
}

TEST(RegistryConv, InvalidConfigurationsAndChannelMismatch) {
  Layer bad = construct("nn.Conv2d", {I(2), I(3), I(3)}, {{"padding", I(1)}});
  EXPECT_TRUE(has_code(bad.init.diags, "invalid-argument"));
  Layer grp = construct("nn.Conv2d", {I(3), I(6), I(3)}, {{"group", I(2)}});
  EXPECT_TRUE(grp.init.failed());
  Layer conv = construct("nn.Conv2d", {I(32), I(64), I(3)});
  FakeCall c = apply(conv, {Ten({1, 16, 8, 8})});
  EXPECT_TRUE(has_code(c.diags, "shape-mismatch"));
  FakeCall r3 = apply(conv, {Ten({32, 8, 8})});
  EXPECT_TRUE(has_code(r3.diags, "rank-error"));
}

// MindSpore 2.10 (CPU, PyNative and graph mode alike) raises TypeError "For primitive[Conv2D], the
// input type must be same." for an int8 (or float16, int32, bool...) input to a float32 Conv2d,
// and a float16 Conv2d (dtype=mindspore.float16) takes float16 only (issue 14). Cellscope
// reports the non-float inputs; a float one of another width may be cast by mixed precision.
TEST(RegistryConv, InputDtypeMustBeTheWeightDtypeAsInMindSpore) {
  Layer conv = construct("nn.Conv2d", {I(3), I(4), I(3)});
  FakeCall i8 = apply(conv, {Ten({1, 3, 8, 8}, DType::Int8)});
  ASSERT_EQ(i8.diags.size(), 1u) << i8.errors();
  EXPECT_EQ(i8.diags[0].code, "dtype-error");
  EXPECT_EQ(i8.diags[0].message,
            "nn.Conv2d receives an input of dtype int8 but its weight is float32; MindSpore's "
            "Conv2D requires the same dtype for both (it raises TypeError: For "
            "primitive[Conv2D], the input type must be same.); cast the input first (e.g. "
            "x.astype(mindspore.float32))");
  EXPECT_TRUE(i8.outputs.empty());
  for (DType dt : {DType::Int32, DType::UInt8, DType::Bool}) {
    FakeCall c = apply(conv, {Ten({1, 3, 8, 8}, dt)});
    EXPECT_TRUE(has_code(c.diags, "dtype-error")) << dtype_name(dt);
  }
  // Another float dtype is MindSpore's TypeError too, unless automatic mixed precision (set up
  // in a training script, amp.auto_mixed_precision / Cell.to_float) casts it: not reported.
  for (DType dt : {DType::Float16, DType::Float64, DType::BFloat16}) {
    FakeCall c = apply(conv, {Ten({1, 3, 8, 8}, dt)});
    EXPECT_FALSE(has_code(c.diags, "dtype-error")) << dtype_name(dt) << c.errors();
  }
  EXPECT_TRUE(apply(conv, {Ten({1, 3, 8, 8}, DType::Float32)}).diags.empty());
  EXPECT_TRUE(apply(conv, {Ten({1, 3, 8, 8}, DType::Unknown)}).diags.empty());
  Layer half = construct("nn.Conv2d", {I(3), I(4), I(3)}, {{"dtype", DT(DType::Float16)}});
  FakeCall h = apply(half, {Ten({1, 3, 8, 8}, DType::Float16)});
  EXPECT_TRUE(h.diags.empty()) << h.errors();
  ASSERT_EQ(h.outputs.size(), 1u);
  EXPECT_EQ(h.outputs[0].dtype, DType::Float16);
  EXPECT_TRUE(has_code(apply(half, {Ten({1, 3, 8, 8}, DType::Int32)}).diags, "dtype-error"));
  // Conv1d (Conv2D inside), Conv2dTranspose and Conv3d alike.
  FakeCall c1 = apply(construct("nn.Conv1d", {I(3), I(4), I(3)}), {Ten({1, 3, 8}, DType::Int8)});
  EXPECT_NE(c1.errors().find("MindSpore's Conv2D requires"), std::string::npos) << c1.errors();
  FakeCall ct =
      apply(construct("nn.Conv2dTranspose", {I(3), I(4), I(3)}), {Ten({1, 3, 8, 8}, DType::Int8)});
  EXPECT_NE(ct.errors().find("primitive[Conv2DTranspose]"), std::string::npos) << ct.errors();
  FakeCall c3 =
      apply(construct("nn.Conv3d", {I(3), I(4), I(3)}), {Ten({1, 3, 8, 8, 8}, DType::Int8)});
  EXPECT_TRUE(has_code(c3.diags, "dtype-error"));
}

TEST(RegistryConv, TransposedConvMatchesMindSpore) {
  // Verified with MindSpore 2.10: (1, 2, 5, 5), k=3, stride=2.
  const std::vector<std::pair<Kwargs, std::string>> cases = {
      {{{"pad_mode", Str("same")}}, "(1, 3, 10, 10)"},
      {{{"pad_mode", Str("valid")}}, "(1, 3, 11, 11)"},
      {{{"pad_mode", Str("pad")}, {"padding", I(1)}}, "(1, 3, 9, 9)"},
      {{{"pad_mode", Str("pad")}, {"padding", I(1)}, {"output_padding", I(1)}}, "(1, 3, 10, 10)"},
  };
  for (auto [kw, out] : cases) {
    kw["stride"] = I(2);
    Layer l = construct("nn.Conv2dTranspose", {I(2), I(3), I(3)}, kw);
    EXPECT_EQ(shape_of(apply(l, {Ten({1, 2, 5, 5})})), out);
  }
  Layer l = construct("nn.Conv2dTranspose", {I(4), I(6), I(3)}, {{"has_bias", Bo(true)}});
  EXPECT_EQ(l.init.params[0].shape.str(), "(4, 6, 3, 3)");
}

// ops.interpolate compiles to the operator MindSpore 2.10 runs for its mode and rank
// (ops/function/nn_func.py); the shape is the same whichever it is.
TEST(RegistryResize, InterpolateSelectsTheOperatorOfItsModeAndRank) {
  struct Case {
    std::initializer_list<int64_t> input;
    const char* mode;
    std::vector<int64_t> size;
    const char* op;
  };
  const Case cases[] = {
      {{2, 3, 7}, "nearest", {11}, "ResizeNearestNeighborV2"},
      {{2, 3, 5, 6}, "nearest-exact", {8, 11}, "ResizeNearestNeighborV2"},
      {{1, 2, 3, 4, 5}, "nearest", {5, 7, 6}, "UpsampleNearest3D"},
      {{2, 3, 7}, "linear", {11}, "ResizeLinear1D"},
      {{2, 3, 5, 6}, "bilinear", {8, 11}, "ResizeBilinearV2"},
      {{2, 3, 5, 6}, "bicubic", {8, 11}, "ResizeBicubic"},
      {{1, 2, 3, 4, 5}, "trilinear", {5, 7, 6}, "UpsampleTrilinear3D"},
      {{2, 3, 8}, "area", {4}, "AdaptiveAvgPool1D"},
      {{2, 3, 5, 6}, "area", {3, 4}, "AdaptiveAvgPool2D"},
      {{1, 2, 3, 4, 5}, "area", {2, 3, 4}, "AdaptiveAvgPool3D"},
  };
  for (const Case& c : cases) {
    FakeCall r =
        call("ops.interpolate", {Ten(c.input)}, {{"size", Ints(c.size)}, {"mode", Str(c.mode)}});
    EXPECT_EQ(r.op, c.op) << c.mode << " " << r.errors();
    ASSERT_EQ(r.outputs.size(), 1U) << c.mode;
    EXPECT_EQ(r.outputs[0].shape.rank(), c.input.size()) << c.mode;
    EXPECT_EQ(r.outputs[0].shape.dims.back().value(), c.size.back()) << c.mode;
  }
  // MindSpore's default mode is 'nearest'; a mode that is not a constant selects nothing (the
  // entry's own operator stays).
  FakeCall plain = call("ops.interpolate", {Ten({2, 3, 5, 6})}, {{"size", Ints({8, 11})}});
  EXPECT_EQ(plain.op, "ResizeNearestNeighborV2");
  FakeCall unknown =
      call("ops.interpolate", {Ten({2, 3, 5, 6})}, {{"size", Ints({8, 11})}, {"mode", ArgValue{}}});
  EXPECT_EQ(unknown.op, "");
  EXPECT_EQ(unknown.outputs.size(), 1U);
  // 'area' on 3-D input is adaptive_avg_pool1d: the length must divide by the size (MindSpore
  // raises for 7 -> 4).
  FakeCall area =
      call("ops.interpolate", {Ten({2, 3, 7})}, {{"size", Ints({4})}, {"mode", Str("area")}});
  EXPECT_TRUE(area.outputs.empty());
  EXPECT_NE(area.errors().find("divisible by output_size (4)"), std::string::npos) << area.errors();
}

// nn.Upsample is ops.interpolate on its constructor's arguments (MindSpore 2.10): the same
// operator per mode, shape and checks. 4-D 'nearest' takes no scale_factor unless
// recompute_scale_factor=True (2.10 raises for every value), and a scale_factor is a float.
TEST(RegistryResize, UpsampleIsInterpolateOnItsConstructorArguments) {
  Layer bilinear =
      construct("nn.Upsample", {}, {{"size", Ints({7, 8})}, {"mode", Str("bilinear")}});
  FakeCall b = apply(bilinear, {Ten({2, 4, 5, 6})});
  EXPECT_EQ(shape_of(b), "(2, 4, 7, 8)");
  EXPECT_EQ(b.op, "ResizeBilinearV2");
  Layer recomputed = construct("nn.Upsample", {},
                               {{"scale_factor", Fl(2.0)}, {"recompute_scale_factor", Bo(true)}});
  EXPECT_EQ(shape_of(apply(recomputed, {Ten({2, 4, 5, 6})})), "(2, 4, 10, 12)");
  Layer trilinear =
      construct("nn.Upsample", {}, {{"scale_factor", Fl(1.5)}, {"mode", Str("trilinear")}});
  FakeCall t = apply(trilinear, {Ten({1, 2, 3, 4, 5})});
  EXPECT_EQ(shape_of(t), "(1, 2, 4, 6, 7)");
  EXPECT_EQ(t.op, "UpsampleTrilinear3D");
  const std::pair<Kwargs, const char*> rejected[] = {
      {{{"scale_factor", Fl(2.0)}}, "'scale_factor' cannot be set with mode 'nearest' and a 4-D"},
      {{{"scale_factor", I(2)}, {"recompute_scale_factor", Bo(true)}},
       "the 'scale_factor' must be float, but got 'int'"},
      {{}, "'size' and 'scale_factor' cannot be both empty"},
      {{{"size", Ints({7, 8})}, {"recompute_scale_factor", Bo(true)}},
       "'recompute_scale_factor' to True after specifying an explicit 'size'"},
      {{{"size", Ints({7, 8, 9})}}, "'input' is 2D, 'size' is 3D"},
      {{{"size", Ints({0, 8})}}, "the 'size[0]' must be int and must > 0"},
  };
  for (const auto& [kw, says] : rejected) {
    FakeCall c = apply(construct("nn.Upsample", {}, kw), {Ten({2, 4, 5, 6})});
    EXPECT_TRUE(c.outputs.empty()) << says;
    EXPECT_NE(c.errors().find(says), std::string::npos) << c.errors();
    EXPECT_NE(c.errors().find("nn.Upsample"), std::string::npos) << c.errors();
  }
  // ops.interpolate says the same.
  FakeCall f = call("ops.interpolate", {Ten({2, 4, 5, 6})}, {{"scale_factor", I(2)}});
  EXPECT_NE(f.errors().find("ops.interpolate: the 'scale_factor' must be float"), std::string::npos)
      << f.errors();
}

// Index dtypes as MindSpore 2.10 gives them (CPU): ops.max / ops.min and the ArgMaxWithValue /
// ArgMinWithValue primitives int64, ops.argmax int64, ops.argmin and ops.Argmax int32.
TEST(RegistryReduce, IndexDtypesAreMindSporesOwn) {
  for (const char* prim : {"ops.ArgMaxWithValue", "ops.ArgMinWithValue"}) {
    FakeCall c = apply(construct(prim, {}, {{"axis", I(1)}}), {Ten({2, 3})});
    ASSERT_EQ(c.outputs.size(), 2U) << prim << c.errors();
    EXPECT_EQ(c.outputs[0].dtype, DType::Int64) << prim;  // (index, value)
    EXPECT_EQ(c.outputs[1].dtype, DType::Float32) << prim;
  }
  FakeCall mx = call("ops.max", {Ten({2, 3}), I(1)});
  ASSERT_EQ(mx.outputs.size(), 2U) << mx.errors();
  EXPECT_EQ(mx.outputs[1].dtype, DType::Int64);  // (values, indices)
  FakeCall amin = call("ops.argmin", {Ten({2, 3}), I(1)});
  ASSERT_EQ(amin.outputs.size(), 1U) << amin.errors();
  EXPECT_EQ(amin.outputs[0].dtype, DType::Int32);
  FakeCall amax = call("ops.argmax", {Ten({2, 3}), I(1)});
  ASSERT_EQ(amax.outputs.size(), 1U) << amax.errors();
  EXPECT_EQ(amax.outputs[0].dtype, DType::Int64);
  FakeCall method_min = call("Tensor.argmin", {Ten({2, 3}), I(1)});
  ASSERT_EQ(method_min.outputs.size(), 1U) << method_min.errors();
  EXPECT_EQ(method_min.outputs[0].dtype, DType::Int32);
  FakeCall method_max = call("Tensor.argmax", {Ten({2, 3}), I(1)});
  ASSERT_EQ(method_max.outputs.size(), 1U) << method_max.errors();
  EXPECT_EQ(method_max.outputs[0].dtype, DType::Int64);
}

TEST(RegistryDense, MismatchMessageNamesBothNumbers) {
  Layer dense = construct("nn.Dense", {I(1600), I(128)});
  FakeCall c = apply(dense, {Ten({1, 9216})});
  ASSERT_TRUE(has_code(c.diags, "shape-mismatch"));
  EXPECT_NE(c.errors().find("1600"), std::string::npos);
  EXPECT_NE(c.errors().find("9216"), std::string::npos);
  EXPECT_NE(c.errors().find("(1, 9216)"), std::string::npos);
  EXPECT_EQ(c.fixes, std::vector<std::string>{"in_channels=9216"});  // the quick fix's rewrite
  EXPECT_EQ(dense.init.params[0].shape.str(), "(128, 1600)");
  EXPECT_EQ(dense.init.params[1].shape.str(), "(128,)");
  // Any rank >= 1 works in 2.x.
  EXPECT_EQ(shape_of(apply(dense, {Ten({2, 3, 1600})})), "(2, 3, 128)");
}

TEST(RegistryFlops, ConvAndDenseMatchHandComputation) {
  Layer conv = construct("nn.Conv2d", {I(3), I(6), I(5)}, {{"pad_mode", Str("valid")}});
  FakeCall c = apply(conv, {Ten({1, 3, 32, 32})});
  // 6*28*28 outputs, each 3*5*5 multiply-adds.
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 6 * 28 * 28 * 3 * 5 * 5);
  Layer biased = construct("nn.Conv2d", {I(3), I(6), I(5)},
                           {{"pad_mode", Str("valid")}, {"has_bias", Bo(true)}});
  EXPECT_DOUBLE_EQ(apply(biased, {Ten({1, 3, 32, 32})}).flops,
                   2.0 * 6 * 28 * 28 * 3 * 5 * 5 + 6 * 28 * 28);
  Layer dense = construct("nn.Dense", {I(400), I(120)});
  EXPECT_DOUBLE_EQ(apply(dense, {Ten({4, 400})}).flops, 2.0 * 4 * 400 * 120 + 4 * 120);
}

TEST(RegistrySymbolic, BatchFlowsThroughConvDenseReshape) {
  Dim n = Dim::symbol("N");
  Layer conv = construct("nn.Conv2d", {I(1), I(6), I(5)}, {{"pad_mode", Str("valid")}});
  FakeCall c = apply(conv, {Ten(Shape({n, Dim::known(1), Dim::known(32), Dim::known(32)}))});
  ASSERT_TRUE(c.diags.empty()) << c.errors();
  ASSERT_EQ(c.outputs.size(), 1u);
  EXPECT_EQ(c.outputs[0].shape.dims[0], n);
  EXPECT_EQ(c.outputs[0].shape.dims[2], Dim::known(28));

  FakeCall flat = call("ops.reshape", {Ten(c.outputs[0].shape), Ints({-1, 6 * 28 * 28})});
  ASSERT_TRUE(flat.diags.empty()) << flat.errors();
  EXPECT_EQ(flat.outputs[0].shape.dims[0], n);

  Layer dense = construct("nn.Dense", {I(6 * 28 * 28), I(10)});
  FakeCall d = apply(dense, {Ten(flat.outputs[0].shape)});
  ASSERT_TRUE(d.diags.empty()) << d.errors();
  EXPECT_EQ(d.outputs[0].shape.dims[0], n);
  EXPECT_EQ(d.outputs[0].shape.dims[1], Dim::known(10));

  // A symbolic spatial size flows through conv without errors, and unknown dims suppress checks.
  Dim h = Dim::symbol("H");
  FakeCall sym = apply(conv, {Ten(Shape({n, Dim::known(1), h, h}))});
  EXPECT_TRUE(sym.diags.empty()) << sym.errors();
  FakeCall unk = apply(dense, {Ten(Shape({n, Dim::unknown()}))});
  EXPECT_TRUE(unk.diags.empty()) << unk.errors();

  // x.reshape(b, -1) with a symbolic b.
  ArgValue b;
  b.kind = K::SymInt;
  b.dim = n;
  FakeCall m = call("Tensor.reshape", {Ten(flat.outputs[0].shape), b, I(-1)});
  ASSERT_TRUE(m.diags.empty()) << m.errors();
  EXPECT_EQ(m.outputs[0].shape.dims[0], n);
  EXPECT_EQ(m.outputs[0].shape.dims[1], Dim::known(6 * 28 * 28));
}

// Symbolic sizes print in one notation and simplify: ceil(x / b) is (x + b - 1) // b, floor
// divisions of floor divisions merge, and an operand is parenthesised unless it is one group.
// The chain is a stride-2 stem as ResNet's (valid conv, same-padded pool, padded conv, pool):
// (H - 11) // 16 + 1 at H = 224 is 14, as each step computes.
TEST(RegistrySymbolic, StridedChainsSimplifyToOneFloorDivision) {
  const Dim h = Dim::symbol("H");
  const Dim conv = Dim::floor_div(h - Dim::known(3), Dim::known(2)) + Dim::known(1);
  EXPECT_EQ(conv.str(), "(H-3)//2+1");
  const Dim pool = Dim::ceil_div(conv, Dim::known(2));
  EXPECT_EQ(pool.str(), "(H+1)//4");
  const Dim conv2 =
      Dim::floor_div(pool + Dim::known(2) - Dim::known(3), Dim::known(2)) + Dim::known(1);
  EXPECT_EQ(conv2.str(), "(H-3)//8+1");
  const Dim pool2 = Dim::floor_div(conv2 - Dim::known(2), Dim::known(2)) + Dim::known(1);
  EXPECT_EQ(pool2.str(), "(H-11)//16+1");
  EXPECT_EQ((224 - 11) / 16 + 1, 14);
  // A multiple of the divisor divides out; an operand that is not one group keeps its
  // parentheses (one starting with "(" used to be left bare: "(H-3)//2-1//2").
  EXPECT_EQ(Dim::floor_div(Dim::known(4) * h + Dim::known(6), Dim::known(2)).str(), "2*H+3");
  const Dim w = Dim::symbol("W");
  EXPECT_EQ(Dim::floor_div(conv, w).str(), "((H-3)//2+1)//W");
  EXPECT_EQ(Dim::ceil_div(conv, w).str(), "ceil(((H-3)//2+1)/W)");
}

// ---- Normalisation, pooling, recurrent -------------------------------------------------------

TEST(RegistryNorm, BatchNormParamsTrainability) {
  Layer bn = construct("nn.BatchNorm2d", {I(8)});
  ASSERT_EQ(bn.init.params.size(), 4u);
  EXPECT_FALSE(bn.init.find("moving_mean")->trainable);
  EXPECT_FALSE(bn.init.find("moving_variance")->trainable);
  EXPECT_TRUE(bn.init.find("gamma")->trainable);
  EXPECT_TRUE(bn.init.find("beta")->trainable);
  Layer frozen = construct("nn.BatchNorm2d", {I(8)}, {{"affine", Bo(false)}});
  EXPECT_FALSE(frozen.init.find("gamma")->trainable);
  EXPECT_TRUE(has_code(apply(bn, {Ten({2, 4, 5, 5})}).diags, "shape-mismatch"));
  EXPECT_EQ(shape_of(apply(construct("nn.BatchNorm1d", {I(3)}), {Ten({2, 3, 5})})), "(2, 3, 5)");
}

TEST(RegistryPool, CeilModeAndPadModes) {
  Layer p =
      construct("nn.MaxPool2d", {I(2), I(2)}, {{"pad_mode", Str("pad")}, {"ceil_mode", Bo(true)}});
  EXPECT_EQ(shape_of(apply(p, {Ten({1, 1, 5, 5})})), "(1, 1, 3, 3)");
  Layer same = construct("nn.MaxPool2d", {I(3), I(2)}, {{"pad_mode", Str("same")}});
  EXPECT_EQ(shape_of(apply(same, {Ten({1, 1, 5, 5})})), "(1, 1, 3, 3)");
  Layer avg = construct("nn.AvgPool2d", {I(3), I(2)},
                        {{"pad_mode", Str("pad")}, {"padding", I(1)}, {"ceil_mode", Bo(true)}});
  EXPECT_EQ(shape_of(apply(avg, {Ten({1, 1, 6, 6})})), "(1, 1, 4, 4)");
  // ceil_mode rounds up in pad_mode 'valid' too (MindSpore 2.10: nn.AvgPool2d(2, 2,
  // ceil_mode=True) on 9 x 9 is 5 x 5; the rule said 4 x 4).
  Layer valid_ceil = construct("nn.AvgPool2d", {I(2), I(2)}, {{"ceil_mode", Bo(true)}});
  EXPECT_EQ(shape_of(apply(valid_ceil, {Ten({2, 8, 9, 9})})), "(2, 8, 5, 5)");
  // The averages' divisor is on the node: the runtime and the exporters read it.
  Layer divisor = construct(
      "nn.AvgPool2d", {I(2), I(2)},
      {{"pad_mode", Str("pad")}, {"count_include_pad", Bo(false)}, {"divisor_override", I(3)}});
  ASSERT_TRUE(divisor.init.attrs.count("count_include_pad"));
  EXPECT_EQ(std::get<bool>(divisor.init.attrs.at("count_include_pad")), false);
  ASSERT_TRUE(divisor.init.attrs.count("divisor_override"));
  EXPECT_EQ(std::get<int64_t>(divisor.init.attrs.at("divisor_override")), 3);
  Layer bad = construct("nn.MaxPool2d", {I(2)}, {{"ceil_mode", Bo(true)}});
  EXPECT_TRUE(bad.init.failed());
  Layer ada = construct("nn.AdaptiveAvgPool2d", {Seq({I(3), NoneV()})});
  EXPECT_EQ(shape_of(apply(ada, {Ten({1, 2, 7, 5})})), "(1, 2, 3, 5)");
}

TEST(RegistryRnn, LstmOutputsAndParams) {
  Layer l = construct("nn.LSTM", {I(4), I(6)}, {{"num_layers", I(2)}, {"bidirectional", Bo(true)}});
  EXPECT_EQ(l.init.params.size(), 16u);
  EXPECT_EQ(l.init.find("weight_ih_l1_reverse")->shape.str(), "(24, 12)");
  FakeCall c = apply(l, {Ten({3, 5, 4})});
  ASSERT_EQ(c.outputs.size(), 3u);
  EXPECT_EQ(shape_of(c, 0), "(3, 5, 12)");
  EXPECT_EQ(shape_of(c, 1), "(4, 5, 6)");
  EXPECT_EQ(shape_of(c, 2), "(4, 5, 6)");
  EXPECT_EQ(std::get<std::string>(c.attrs["tuple_structure"]), "(0, (1, 2))");
}

TEST(RegistryAttention, MultiheadAttentionShapes) {
  Layer m = construct("nn.MultiheadAttention", {I(8), I(2)}, {{"batch_first", Bo(true)}});
  EXPECT_EQ(m.init.find("in_proj_weight")->shape.str(), "(24, 8)");
  FakeCall c = apply(m, {Ten({2, 5, 8}), Ten({2, 7, 8}), Ten({2, 7, 8})});
  EXPECT_EQ(shape_of(c, 0), "(2, 5, 8)");
  EXPECT_EQ(shape_of(c, 1), "(2, 5, 7)");
  FakeCall one =
      apply(m, {Ten({2, 5, 8}), Ten({2, 7, 8}), Ten({2, 7, 8})}, {{"need_weights", Bo(false)}});
  EXPECT_EQ(one.outputs.size(), 1u);
}

TEST(RegistryDropout, KeepProbIsDeprecated) {
  const ApiEntry& e = entry("nn.Dropout");
  bool found = false;
  for (const ParamSpec& p : e.init_params)
    if (p.name == "keep_prob") {
      found = true;
      EXPECT_NE(p.deprecated.find("p=1-keep_prob"), std::string::npos);
    }
  EXPECT_TRUE(found);
}

// MindSpore 2.10: nn.ELU(alpha=0.7) builds and fails at the call ("In Elu, alpha must be 1.0f");
// an int alpha fails to dispatch (TypeError); alpha=1.0 runs.
TEST(RegistryActivation, EluSupportsOnlyAFloatAlphaOfOne) {
  FakeCall layer = apply(construct("nn.ELU", {}, {{"alpha", Fl(0.7)}}), {Ten({2, 3})});
  ASSERT_TRUE(has_code(layer.diags, "invalid-argument"));
  EXPECT_NE(layer.errors().find("alpha=1.0"), std::string::npos) << layer.errors();
  EXPECT_NE(layer.errors().find("0.7"), std::string::npos) << layer.errors();
  EXPECT_TRUE(apply(construct("nn.ELU", {}, {{"alpha", I(1)}}), {Ten({2, 3})}).failed());
  EXPECT_TRUE(apply(construct("nn.ELU"), {Ten({2, 3})}).diags.empty());
  EXPECT_TRUE(call("ops.elu", {Ten({2, 3}), Fl(0.5)}).failed());
  EXPECT_TRUE(call("ops.elu", {Ten({2, 3})}, {{"alpha", I(1)}}).failed());
  FakeCall ok = call("ops.elu", {Ten({2, 3})}, {{"alpha", Fl(1.0)}});
  EXPECT_TRUE(ok.diags.empty());
  EXPECT_EQ(shape_of(ok), "(2, 3)");
}

// ---- Operator rules -----------------------------------------------------------------------------

TEST(RegistryOps, BroadcastingAndDtypes) {
  EXPECT_EQ(shape_of(call("ops.add", {Ten({2, 1, 4}), Ten({3, 1})})), "(2, 3, 4)");
  FakeCall bad = call("ops.add", {Ten({2, 3}), Ten({4, 3})});
  ASSERT_TRUE(has_code(bad.diags, "broadcast-error"));
  EXPECT_NE(bad.errors().find("(2, 3)"), std::string::npos);
  EXPECT_NE(bad.errors().find("(4, 3)"), std::string::npos);
  EXPECT_EQ(call("ops.less", {Ten({3}, DType::Int32), I(1)}).outputs[0].dtype, DType::Bool);
  EXPECT_EQ(call("ops.mul", {Ten({3}, DType::Int32), Fl(2.5)}).outputs[0].dtype, DType::Float32);
  EXPECT_EQ(call("ops.mul", {Ten({3}, DType::Float16), Fl(2.5)}).outputs[0].dtype, DType::Float16);
  EXPECT_EQ(call("ops.div", {Ten({3}, DType::Int32), I(2)}).outputs[0].dtype, DType::Float32);
  EXPECT_EQ(call("ops.floor_div", {Ten({3}, DType::Int32), I(2)}).outputs[0].dtype, DType::Int32);
  EXPECT_EQ(call("ops.add", {Ten({3}, DType::Bool), I(1)}).outputs[0].dtype, DType::Int64);
  EXPECT_TRUE(call("ops.exp", {Ten({3}, DType::Int32)}).failed());
  EXPECT_EQ(call("ops.sqrt", {Ten({3}, DType::Int32)}).outputs[0].dtype, DType::Float32);
  for (const char* name :
       {"ops.add", "ops.sub", "ops.mul", "ops.div", "ops.floor_div", "ops.mod", "ops.pow",
        "ops.matmul", "ops.neg", "ops.equal", "ops.not_equal", "ops.less", "ops.less_equal",
        "ops.greater", "ops.greater_equal", "ops.logical_not", "ops.invert"})
    EXPECT_NE(Registry::instance().find(name, kDefaultMindSporeVersion), nullptr) << name;
}

TEST(RegistryOps, MatMulDims) {
  FakeCall bad = call("ops.matmul", {Ten({3, 4}), Ten({5, 6})});
  ASSERT_TRUE(has_code(bad.diags, "matmul-dim"));
  EXPECT_NE(bad.errors().find("(3, 4)"), std::string::npos);
  EXPECT_NE(bad.errors().find("(5, 6)"), std::string::npos);
  EXPECT_EQ(shape_of(call("ops.matmul", {Ten({2, 1, 3, 4}), Ten({5, 4, 6})})), "(2, 5, 3, 6)");
  EXPECT_EQ(shape_of(call("ops.matmul", {Ten({3, 4}), Ten({4})})), "(3,)");
  Layer mm = construct("ops.MatMul", {}, {{"transpose_b", Bo(true)}});
  FakeCall c = apply(mm, {Ten({3, 4}), Ten({5, 4})});
  EXPECT_EQ(shape_of(c), "(3, 5)");
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 3 * 5 * 4);
  EXPECT_TRUE(has_code(apply(mm, {Ten({2, 3, 4}), Ten({5, 4})}).diags, "rank-error"));
}

TEST(RegistryOps, ReshapeConcatSplit) {
  EXPECT_EQ(shape_of(call("ops.reshape", {Ten({2, 3, 4}), Ints({-1, 4})})), "(6, 4)");
  EXPECT_EQ(shape_of(call("Tensor.reshape", {Ten({2, 3, 4}), I(4), I(-1)})), "(4, 6)");
  EXPECT_EQ(shape_of(call("Tensor.view", {Ten({2, 3, 4}), Ints({4, 6})})), "(4, 6)");
  EXPECT_TRUE(has_code(call("ops.reshape", {Ten({2, 3, 4}), Ints({5, -1})}).diags, "reshape-size"));
  EXPECT_TRUE(has_code(call("ops.reshape", {Ten({2, 3, 4}), Ints({5, 5})}).diags, "reshape-size"));
  EXPECT_EQ(shape_of(call("ops.concat", {Seq({Ten({2, 3}), Ten({2, 5})}), I(1)})), "(2, 8)");
  EXPECT_TRUE(
      has_code(call("ops.concat", {Seq({Ten({2, 3}), Ten({4, 5})}), I(1)}).diags, "concat-dim"));
  Layer cat = construct("ops.Concat", {I(1)});
  EXPECT_EQ(shape_of(apply(cat, {Seq({Ten({2, 3}), Ten({2, 1})})})), "(2, 4)");
  FakeCall sp = call("ops.split", {Ten({7, 4}), I(3)});
  ASSERT_EQ(sp.outputs.size(), 3u);
  EXPECT_EQ(shape_of(sp, 2), "(1, 4)");
  Layer split = construct("ops.Split", {I(1), I(2)});
  FakeCall s2 = apply(split, {Ten({3, 4})});
  ASSERT_EQ(s2.outputs.size(), 2u);
  EXPECT_EQ(shape_of(s2, 1), "(3, 2)");
  EXPECT_EQ(shape_of(call("Tensor.transpose", {Ten({2, 3, 4}), I(0), I(2)})), "(4, 3, 2)");
  EXPECT_EQ(shape_of(call("Tensor.permute", {Ten({2, 3, 4}), I(2), I(0), I(1)})), "(4, 2, 3)");
  EXPECT_EQ(shape_of(call("Tensor.flatten", {Ten({2, 3, 4})})), "(24,)");
  EXPECT_EQ(shape_of(call("ops.flatten", {Ten({2, 3, 4})})), "(2, 12)");
}

// mindspore.numpy.split: an int is equal pieces (MindSpore's Split message when they are not),
// a list the split points (numpy's meaning); an empty piece is MindSpore's ValueError. Shapes
// and messages measured with MindSpore 2.10.
TEST(RegistryOps, NumpySplitAtIndices) {
  FakeCall at = call("numpy.split", {Ten({2, 8}), Ints({2, 5})}, {{"axis", I(1)}});
  ASSERT_EQ(at.outputs.size(), 3u) << at.errors();
  EXPECT_EQ(shape_of(at, 0), "(2, 2)");
  EXPECT_EQ(shape_of(at, 1), "(2, 3)");
  EXPECT_EQ(shape_of(at, 2), "(2, 3)");
  FakeCall equal = call("numpy.split", {Ten({2, 8}), I(4)}, {{"axis", I(1)}});
  ASSERT_EQ(equal.outputs.size(), 4u) << equal.errors();
  EXPECT_EQ(shape_of(equal, 3), "(2, 2)");
  FakeCall uneven = call("numpy.split", {Ten({2, 8}), I(3)}, {{"axis", I(1)}});
  ASSERT_TRUE(has_code(uneven.diags, "shape-mismatch"));
  EXPECT_NE(uneven.errors().find("x_shape[1] must be divisible by output_num = 3, but got 8"),
            std::string::npos)
      << uneven.errors();
  EXPECT_TRUE(has_code(call("numpy.split", {Ten({2, 8}), Ints({5, 2})}, {{"axis", I(1)}}).diags,
                       "shape-mismatch"));
  // An axis known only at run time: the pieces are unknown (not a split of axis 0).
  ArgValue later;
  later.kind = ArgValue::Kind::Unknown;
  for (const char* api : {"numpy.split", "ops.split"}) {
    FakeCall unknown_axis = call(api, {Ten({8, 8}), I(2)}, {{"axis", later}});
    ASSERT_FALSE(unknown_axis.outputs.empty()) << api;
    EXPECT_FALSE(unknown_axis.outputs[0].shape.ranked) << api;
    EXPECT_TRUE(unknown_axis.diags.empty()) << api << unknown_axis.errors();
  }
  EXPECT_TRUE(has_code(call("numpy.split", {Ten({2, 8}), Ints({3, 12})}, {{"axis", I(1)}}).diags,
                       "shape-mismatch"));
}

// ops.pad takes a flat tuple of ints in MindSpore 2.10; numpy's nested pairs are its TypeError
// (mindcv's volo), not a shape.
TEST(RegistryOps, PadRefusesNestedPairs) {
  FakeCall nested = call("ops.pad", {Ten({1, 2, 3, 3}), Seq({Ints({0, 0}), Ints({1, 1})})});
  ASSERT_TRUE(has_code(nested.diags, "invalid-argument"));
  EXPECT_NE(nested.errors().find("the paddings value must be tuple of int or list of int, but "
                                 "got ((0, 0), (1, 1))"),
            std::string::npos)
      << nested.errors();
  EXPECT_EQ(shape_of(call("ops.pad", {Ten({1, 2, 3, 3}), Ints({1, 1, 2, 0})})), "(1, 2, 5, 5)");
}

TEST(RegistryOps, Reductions) {
  Layer mean = construct("ops.ReduceMean", {Bo(true)});
  EXPECT_EQ(shape_of(apply(mean, {Ten({2, 3, 4}), Ints({1, 2})})), "(2, 1, 1)");
  EXPECT_EQ(
      shape_of(call("Tensor.mean", {Ten({2, 3, 4})}, {{"axis", I(1)}, {"keep_dims", Bo(true)}})),
      "(2, 1, 4)");
  FakeCall mx = call("ops.max", {Ten({2, 3, 4}), I(1)});
  ASSERT_EQ(mx.outputs.size(), 2u);
  EXPECT_EQ(shape_of(mx, 1), "(2, 4)");
  EXPECT_EQ(call("ops.argmax", {Ten({2, 3}), I(1)}).outputs[0].dtype, DType::Int64);
  EXPECT_EQ(call("ops.sum", {Ten({2, 3}, DType::Int32)}).outputs[0].dtype, DType::Int64);
  EXPECT_TRUE(has_code(call("ops.mean", {Ten({2, 3}), I(2)}).diags, "axis-error"));
}

// ---- Lookup
// ---------------------------------------------------------------------------------------

TEST(RegistryLookup, SuggestAndVersions) {
  const Registry& r = Registry::instance();
  auto s = r.suggest("nn.Dence", kDefaultMindSporeVersion);
  EXPECT_NE(std::find(s.begin(), s.end(), "nn.Dense"), s.end());
  auto mp = r.suggest("ops.MaxPool2d", kDefaultMindSporeVersion);
  ASSERT_FALSE(mp.empty());
  EXPECT_EQ(mp[0], "nn.MaxPool2d");
  EXPECT_NE(std::find(mp.begin(), mp.end(), "ops.MaxPool"), mp.end());
  auto lin = r.suggest("nn.linear", kDefaultMindSporeVersion);
  ASSERT_FALSE(lin.empty());
  EXPECT_EQ(lin.front(), "nn.Dense");

  Registry& mut = const_cast<Registry&>(r);  // test-only: add version-gated entries
  ApiEntry old;
  old.name = "nn.TestGated";
  old.versions = {{2, 0, 0}, {2, 3, 0}};
  old.summary = "old";
  old.infer = [](CallContext& ctx) { ctx.add_output(TensorType{}); };
  mut.add(old);
  ApiEntry fresh = old;
  fresh.versions = {{2, 3, 0}, {99, 0, 0}};
  fresh.summary = "new";
  mut.add(fresh);
  EXPECT_EQ(r.find("nn.TestGated", {2, 2, 0})->summary, "old");
  EXPECT_EQ(r.find("nn.TestGated", {2, 10, 0})->summary, "new");
  EXPECT_EQ(r.find("nn.TestGated", {1, 9, 0}), nullptr);
  EXPECT_EQ(r.find_all("nn.TestGated").size(), 2u);
  EXPECT_FALSE(r.list("nn.", kDefaultMindSporeVersion).empty());
}

TEST(RegistryArgValue, Accessors) {
  EXPECT_EQ(I(3).as_ints(2), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(Ints({1, 2}).as_ints(), (std::vector<int64_t>{1, 2}));
  EXPECT_FALSE(Ints({1, 2}).as_ints(3));
  EXPECT_EQ(Bo(true).as_int(), 1);
  EXPECT_EQ(Fl(0.5).repr(), "0.5");
  EXPECT_EQ(Ints({1}).repr(), "(1,)");
  EXPECT_EQ(Str("same").repr(), "'same'");
}

// Every entry runs on generic inputs of several ranks, symbolic, unranked and unknown values
// without crashing (errors are fine).
TEST(RegistrySmoke, EveryEntryRunsOnGenericInputs) {
  ArgValue unknown;
  unknown.kind = K::Unknown;
  const std::vector<ArgValue> inputs = {
      Ten({2, 4, 8, 8}),
      Ten({3}),
      Ten(Shape{}),
      Ten({2, 4, 8}, DType::Int32),
      Ten(Shape({Dim::symbol("N"), Dim::known(4), Dim::symbol("H"), Dim::unknown()})),
      Ten(Shape::unranked()),
      unknown,
  };
  for (const ArgValue& x : inputs) {
    for (const auto& e : Registry::instance().entries()) {
      SCOPED_TRACE(e->name + " on " + x.repr());
      FakeInit init;
      for (const ParamSpec& p : e->init_params) {
        if (p.kind == ParamKind::VarPositional || p.kind == ParamKind::VarKeyword) continue;
        init.bound.args[p.name] = p.default_src.empty() ? I(4) : parse_default(p.default_src);
      }
      if (e->init) e->init(init);
      FakeCall c;
      c.init = &init;
      for (const ParamSpec& p : e->call_params) {
        if (p.kind == ParamKind::VarPositional) {
          c.bound.varargs = {I(2), I(-1)};
          continue;
        }
        if (p.kind == ParamKind::VarKeyword) continue;
        c.bound.args[p.name] = p.default_src.empty() ? x : parse_default(p.default_src);
      }
      ASSERT_TRUE(e->infer) << e->name;
      e->infer(c);
      EXPECT_TRUE(c.failed() || !c.outputs.empty()) << "no output and no error";
      EXPECT_FALSE(e->summary.empty());
      EXPECT_FALSE(e->op.empty());
    }
  }
}

}  // namespace
}  // namespace graphcore
