// graphcore runtime: tensors, statistics, .npy, initializers, kernels on small hand-checkable
// cases, and the Executor's hooks (pause/resume/abort/interrupt, errors naming the node).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <span>

#include "graphcore/analysis.h"
#include "graphcore/runtime.h"
#include "temp_dir.h"

using namespace graphcore;
using namespace graphcore::runtime;
namespace fs = std::filesystem;

namespace {

// A tiny graph builder: inputs, ops, parameters.
struct G {
  CellReport r;
  G() {
    r.name = "T";
    r.file = "model.py";
    r.compiled = true;
  }
  uint32_t input(std::vector<int64_t> shape, DType dt = DType::Float32) {
    Node n;
    n.id = "in" + std::to_string(r.graph.nodes.size());
    n.kind = NodeKind::Input;
    n.op = "Input";
    n.outputs.push_back({Shape::of(shape), dt});
    r.graph.nodes.push_back(std::move(n));
    return static_cast<uint32_t>(r.graph.nodes.size() - 1);
  }
  uint32_t op(std::string op, std::vector<uint32_t> ins, std::vector<int64_t> out,
              std::vector<Attr> attrs = {}, std::vector<std::string> params = {},
              DType dt = DType::Float32, uint32_t line = 0, std::string api = "") {
    Node n;
    n.id = op + "_" + std::to_string(r.graph.nodes.size());
    n.op = op;
    n.api = api;
    for (uint32_t i : ins) n.inputs.push_back({i, 0});
    n.outputs.push_back({Shape::of(out), dt});
    n.attrs = std::move(attrs);
    n.params = params;
    n.file = "model.py";
    n.range.start.line = line;
    r.graph.nodes.push_back(std::move(n));
    return static_cast<uint32_t>(r.graph.nodes.size() - 1);
  }
  void param(std::string name, std::vector<int64_t> shape) {
    r.params.push_back({std::move(name), Shape::of(shape), DType::Float32, true});
  }
  void output(uint32_t n) { r.graph.outputs.push_back({n, 0}); }
};

std::vector<float> values(const Tensor& t) {
  std::vector<float> v(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = static_cast<float>(t.at(i));
  return v;
}

Tensor run1(G& g, std::vector<Tensor> inputs, ExecOptions o = {},
            std::map<std::string, Tensor> params = {}) {
  Executor ex(g.r, o);
  for (size_t i = 0; i < inputs.size(); ++i) ex.set_input(i, inputs[i]);
  for (auto& [k, v] : params) ex.set_param(k, v);
  RunStatus s = ex.run();
  EXPECT_EQ(s.kind, RunStatus::Kind::Finished) << s.message;
  auto outs = ex.outputs();
  return outs.empty() ? Tensor() : outs[0];
}

}  // namespace

TEST(RuntimeTensor, ShapesCastsAndHalf) {
  Tensor t = Tensor::from_floats({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.reshape({3, -1}).shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_THROW((void)t.reshape({4, 2}), RuntimeError);
  Tensor i = Tensor::from_floats({3}, {1.9f, -1.9f, 0.2f}).cast(DType::Int32);
  EXPECT_EQ(values(i), (std::vector<float>{1, -1, 0}));  // truncation toward zero
  EXPECT_EQ(round_to_half(1.0001f), 1.0f);
  EXPECT_EQ(round_to_half(65504.0f), 65504.0f);
  EXPECT_TRUE(std::isinf(round_to_half(65520.0f)));
  EXPECT_THROW(Tensor({2}, DType::Complex64), RuntimeError);
  Tensor a = Tensor::random({4, 4}, DType::Float32, 7),
         b = Tensor::random({4, 4}, DType::Float32, 7);
  EXPECT_EQ(values(a), values(b));
}

// Storage of 64 KiB and more goes back to a pool and is handed out again for the same size; a
// recycled block is still zero-filled for Tensor(shape, dtype), and turning the pool off frees it.
TEST(RuntimeTensor, PoolRecyclesBlocksAndStillZeroFills) {
  const size_t limit = tensor_pool_limit();
  release_tensor_pool();
  const float* first = nullptr;
  {
    Tensor a({256, 256}, DType::Float32);  // 256 KiB
    first = a.data<float>();
    std::fill_n(a.data<float>(), a.numel(), 7.0f);
  }
  EXPECT_GE(tensor_pool_bytes(), size_t{256} << 10);
  Tensor b({256, 256}, DType::Float32);
  EXPECT_EQ(b.data<float>(), first);  // the same block again
  EXPECT_TRUE(compute_stats(b).all_zero());
  EXPECT_EQ(tensor_pool_bytes(), 0u);
  Tensor u = Tensor::uninitialized({64 * 1024 + 3}, DType::Float32);
  EXPECT_EQ(u.numel(), 64 * 1024 + 3);
  set_tensor_pool_limit(0);  // off: nothing kept
  u = Tensor();
  EXPECT_EQ(tensor_pool_bytes(), 0u);
  Tensor small({4}, DType::Float32);  // below the pool's size: plain allocations
  EXPECT_EQ(small.at(3), 0.0);
  set_tensor_pool_limit(limit);
}

// A value derived from a tensor's elements is shared by its views and dropped when the elements
// are written through mutable access.
TEST(RuntimeTensor, DerivedValueIsDroppedOnWrite) {
  Tensor w = Tensor::random({8, 8}, DType::Float32, 3);
  const Tensor view = w.reshape({64});
  auto value = std::make_shared<int>(42);
  view.set_derived("layout-a", value);
  ASSERT_NE(w.derived("layout-a"), nullptr);
  EXPECT_EQ(*static_cast<const int*>(w.derived("layout-a").get()), 42);
  EXPECT_EQ(w.derived("layout-b"), nullptr);  // another key
  const Tensor& cw = w;
  (void)cw.data<float>();  // reading keeps it
  EXPECT_NE(view.derived("layout-a"), nullptr);
  w.data<float>()[0] += 1;  // writing drops it
  EXPECT_EQ(view.derived("layout-a"), nullptr);
  view.set_derived("layout-a", value);
  w.set(5, 2.0);
  EXPECT_EQ(view.derived("layout-a"), nullptr);
  EXPECT_EQ(w.clone().derived("layout-a"), nullptr);  // a copy has its own storage
}

TEST(RuntimeTensor, Statistics) {
  float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  Tensor t = Tensor::from_floats({2, 3}, {0, 1, nan, 3, inf, 70000});
  TensorStats s = compute_stats(t);
  EXPECT_EQ(s.nan_count, 1);
  EXPECT_EQ(s.first_nan, 2);
  EXPECT_EQ(s.inf_count, 1);
  EXPECT_EQ(s.first_inf, 4);
  EXPECT_EQ(s.fp16_overflow_count, 1);
  EXPECT_EQ(s.first_fp16_overflow, 5);
  EXPECT_EQ(s.zero_count, 1);
  EXPECT_DOUBLE_EQ(s.min, 0);
  EXPECT_DOUBLE_EQ(s.max, 70000);
  EXPECT_DOUBLE_EQ(s.mean, 70004.0 / 4);
  EXPECT_EQ(index_str({2, 3}, 5), "[1, 2]");
  EXPECT_TRUE(compute_stats(Tensor::zeros({3})).all_zero());
  TensorStats u = compute_stats(Tensor::from_floats({2}, {1, 3}));
  EXPECT_DOUBLE_EQ(u.std, 1.0);
}

TEST(RuntimeTensor, NpyRoundTrip) {
  auto dir = std::filesystem::temp_directory_path() / "cellscope_rt_npy";
  std::filesystem::create_directories(dir);
  Tensor f = Tensor::from_floats({2, 2}, {1.5f, -2, 3, 4});
  write_npy(dir / "f.npy", f);
  EXPECT_EQ(values(read_npy(dir / "f.npy")), values(f));
  Tensor l = Tensor::from_ints({3}, {1, -5, 1LL << 40}, DType::Int64);
  write_npy(dir / "l.npy", l);
  Tensor l2 = read_npy(dir / "l.npy");
  EXPECT_EQ(l2.dtype(), DType::Int64);
  EXPECT_EQ(l2.data<int64_t>()[2], 1LL << 40);
  Tensor h = Tensor::from_floats({2}, {0.1f, 2}).cast(DType::Float16);
  write_npy(dir / "h.npy", h);
  Tensor h2 = read_npy(dir / "h.npy");
  EXPECT_EQ(h2.dtype(), DType::Float16);
  EXPECT_EQ(values(h2), values(h));
  Tensor b = Tensor::from_ints({2}, {0, 1}, DType::Bool);
  write_npy(dir / "b.npy", b);
  EXPECT_EQ(values(read_npy(dir / "b.npy")), (std::vector<float>{0, 1}));
  Tensor s = Tensor::full({}, 2.5);
  write_npy(dir / "s.npy", s);
  EXPECT_EQ(read_npy(dir / "s.npy").rank(), 0u);
  EXPECT_THROW(read_npy(dir / "missing.npy"), std::runtime_error);
  std::filesystem::remove_all(dir);
}

// Issue 14: sizes are checked before anything is allocated or written.
std::string runtime_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(RuntimeTensor, ElementAndByteCountsThatOverflowAreErrors) {
  // 2**62 elements fit in int64, their 2**64 bytes wrap size_t to 0: a one-byte allocation that
  // random() wrote 2**62 floats into.
  std::string e = runtime_error_of([] {
    (void)Tensor::random({2147483648, 2147483648}, DType::Float32, 1);
  });
  EXPECT_NE(e.find("(2147483648, 2147483648) f32"), std::string::npos) << e;
  EXPECT_NE(e.find("bytes"), std::string::npos) << e;
  // 3037000500**2 > 2**63 - 1: the element count itself overflows.
  e = runtime_error_of([] { (void)Tensor::zeros({3037000500, 3037000500}); });
  EXPECT_NE(e.find("(3037000500, 3037000500) has more elements than fit in int64"),
            std::string::npos)
      << e;
  e = runtime_error_of([] { (void)Tensor::ones({100000, 100000, 100000, 100000}, DType::Int64); });
  EXPECT_NE(e.find("more elements than fit in int64"), std::string::npos) << e;
  e = runtime_error_of([] { (void)Tensor::zeros({2, -3}); });
  EXPECT_NE(e.find("negative dimension"), std::string::npos) << e;
  // reshape's product of the known dims.
  Tensor t = Tensor::zeros({4});
  e = runtime_error_of([&] { (void)t.reshape({-1, 3037000500, 3037000500}); });
  EXPECT_NE(e.find("cannot reshape"), std::string::npos) << e;
  EXPECT_EQ(t.reshape({-1, 2}).shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Tensor::zeros({0, 3037000500, 3037000500}).numel(), 0);
}

TEST(RuntimeTensor, TensorsOverTheByteLimitAreRefusedBeforeAllocating) {
  EXPECT_GT(max_tensor_bytes(), size_t{1} << 20);
  // 4 TB: more than the machine's memory (the default limit).
  std::string e = runtime_error_of([] {
    (void)Tensor::random({1000000, 1000000}, DType::Float32, 1);
  });
  EXPECT_NE(e.find("tensor (1000000, 1000000) f32 needs 3.6 TiB, more than the runtime's limit"),
            std::string::npos)
      << e;
  set_max_tensor_bytes(1000000);
  e = runtime_error_of([] { (void)Tensor::zeros({1000, 1000}); });
  EXPECT_EQ(e,
            "tensor (1000, 1000) f32 needs 3.8 MiB, more than the runtime's limit of 976.6 KiB for "
            "one tensor");
  EXPECT_EQ(Tensor::zeros({500, 500}).numel(), 250000);  // 1,000,000 bytes: at the limit
  set_max_tensor_bytes(0);                               // the default again
  EXPECT_EQ(Tensor::zeros({1000, 1000}).numel(), 1000000);
}

TEST(RuntimeTensor, ForgedNpyHeadersFailWithoutAllocating) {
  auto dir = std::filesystem::temp_directory_path() / "cellscope_rt_forged_npy";
  std::filesystem::create_directories(dir);
  auto forged = [&](const std::string& shape, size_t data_bytes) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
    auto path = dir / "forged.npy";
    std::ofstream out(path, std::ios::binary);
    out.write("\x93NUMPY\x01\x00", 8);
    char len[2] = {static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
    out.write(len, 2);
    out << header << std::string(data_bytes, '\0');
    out.close();
    return runtime_error_of([&] { (void)read_npy(path); });
  };
  std::string e = forged("(100000, 100000, 100000)", 64);
  EXPECT_NE(
      e.find("truncated data: shape (100000, 100000, 100000) needs 3.6 PiB, the file has 64 bytes"),
      std::string::npos)
      << e;
  e = forged("(100000, 100000, 100000, 100000)", 64);
  EXPECT_NE(e.find("more elements than fit in int64"), std::string::npos) << e;
  e = forged("(2147483648, 2147483648)", 64);  // 2**64 bytes: wraps size_t
  EXPECT_NE(e.find("truncated data"), std::string::npos) << e;
  e = forged("(-1, 4)", 64);
  EXPECT_NE(e.find("bad dimension '-1'"), std::string::npos) << e;
  e = forged("(99999999999999999999999,)", 64);
  EXPECT_NE(e.find("bad dimension"), std::string::npos) << e;
  e = forged("(4, 4)", 63);  // one byte short
  EXPECT_NE(e.find("needs 64 bytes, the file has 63 bytes"), std::string::npos) << e;
  EXPECT_EQ(forged("(4, 4)", 64), "(no error)");
  std::filesystem::remove_all(dir);
}

TEST(RuntimeInputSpec, ShapesWhoseElementCountOverflowsAreRejected) {
  std::string err;
  EXPECT_FALSE(parse_input_spec("3037000500,3037000500", &err));
  EXPECT_EQ(err, "shape `3037000500,3037000500` has more elements than fit in int64");
  EXPECT_FALSE(parse_input_spec("100000,100000,100000,100000:int32", &err));
  EXPECT_NE(err.find("more elements than fit in int64"), std::string::npos) << err;
  // Symbolic and unknown dims are at least 1 (0 makes any shape empty); 2**62 elements fit
  // (their bytes are the runtime's business).
  EXPECT_FALSE(parse_input_spec("N,3037000500,3037000500", &err));
  EXPECT_TRUE(parse_input_spec("N,?,2147483648,2147483648", &err));
  EXPECT_TRUE(parse_input_spec("2147483648,2147483648", &err));
  EXPECT_TRUE(parse_input_spec("0,3037000500,3037000500", &err));
}

TEST(RuntimeInit, InitializersByNameAndCall) {
  using A = InitSpec::Arg;
  const A sigma{{}, 0.02, std::nullopt};
  auto n = InitSpec::call("Normal", std::span(&sigma, 1));
  ASSERT_TRUE(n);
  EXPECT_EQ(n->kind, InitSpec::Kind::Normal);
  EXPECT_DOUBLE_EQ(n->sigma, 0.02);
  const A kw[] = {{"sigma", 0.1, std::nullopt}, {"mean", 1.0, std::nullopt}};
  auto t = InitSpec::call("TruncatedNormal", kw);
  ASSERT_TRUE(t);
  EXPECT_DOUBLE_EQ(t->mean, 1);
  const A he_args[] = {{{}, std::sqrt(5.0), std::nullopt}, {"mode", std::nullopt, "fan_out"}};
  auto he = InitSpec::call("HeUniform", std::span(he_args, 1));
  ASSERT_TRUE(he);
  EXPECT_DOUBLE_EQ(he->negative_slope, std::sqrt(5.0));
  EXPECT_TRUE(InitSpec::call("HeNormal", he_args)->fan_out);
  EXPECT_EQ(InitSpec::named("zeros")->kind, InitSpec::Kind::Zero);
  EXPECT_EQ(InitSpec::named("xavier_uniform")->kind, InitSpec::Kind::XavierUniform);
  EXPECT_EQ(InitSpec::named("HeUniform")->kind, InitSpec::Kind::HeUniform);
  EXPECT_FALSE(InitSpec::named("orthogonal"));  // not modelled: unknown, never a guess
  EXPECT_FALSE(InitSpec::named("constant"));    // Constant needs its value
  EXPECT_FALSE(InitSpec::call("Constant", {}));
  const A extra[] = {{{}, 0.1, std::nullopt}, {{}, 0.2, std::nullopt}};
  EXPECT_FALSE(InitSpec::call("Uniform", extra));  // Uniform(scale) takes one
  const A bad_kw{"sigma", 0.1, std::nullopt};
  EXPECT_FALSE(InitSpec::call("Uniform", std::span(&bad_kw, 1)));
  const A bad_mode{"mode", std::nullopt, "fan_avg"};
  EXPECT_FALSE(InitSpec::call("HeUniform", std::span(&bad_mode, 1)));
  EXPECT_FALSE(InitSpec::call("my_init", {}));

  // MindSpore's Conv2d default HeUniform(sqrt(5)): bound 1/sqrt(fan_in).
  Tensor w({8, 4, 3, 3}, DType::Float32);
  fill_init(w, *he, 1);
  double bound = 1.0 / std::sqrt(4.0 * 9);
  TensorStats s = compute_stats(w);
  EXPECT_LE(s.max, bound);
  EXPECT_GE(s.min, -bound);
  EXPECT_GT(s.max, 0.8 * bound);
  Tensor w2({8, 4, 3, 3}, DType::Float32);
  fill_init(w2, *he, 1);
  EXPECT_EQ(values(w), values(w2));  // reproducible from the seed
  Tensor tn({1000}, DType::Float32);
  const A bounds[] = {{{}, 1.0, std::nullopt},
                      {{}, 0.0, std::nullopt},
                      {{}, -0.5, std::nullopt},
                      {{}, 0.5, std::nullopt}};
  fill_init(tn, *InitSpec::call("TruncatedNormal", bounds), 2);
  EXPECT_LE(compute_stats(tn).max, 0.5);
  EXPECT_GE(compute_stats(tn).min, -0.5);
}

// Analyses model source `text`, written to the temporary file `name`, with one input `input`.
AnalysisResult analyze_source(const std::string& name, const std::string& text,
                              const TensorType& input) {
  // Removed when the test binary exits (a fixed /tmp directory was left behind before).
  static const cellscope::testing::TempDir temp("cellscope_runtime_test_");
  const fs::path file = temp.path() / name;
  std::ofstream(file) << text;
  AnalysisOptions opts;
  opts.inputs.push_back(input);
  DiskSourceProvider disk;
  return analyze_file(file, opts, disk);
}

// The initializer of every Parameter is recorded when the analysis creates it: a layer's
// argument (evaluated, not re-read from the text: math.sqrt(5) is a number), the signature's
// default (gamma_init='ones'), MindSpore's default for the layer, the initializer() a Parameter
// wraps, a tensor of one known value; the layer's default standing in for an initializer that is
// not known statically; and nothing for a Parameter of computed values.
TEST(RuntimeInit, InitializersAreRecordedAtEvaluation) {
  AnalysisResult res = analyze_source("inits.py", R"(import math
import numpy as np
import mindspore as ms
from mindspore import nn, ops, Parameter, Tensor
from mindspore.common.initializer import initializer, Normal, TruncatedNormal, HeUniform


def my_init(scale):
    return ops.randn((3, 4)) * scale


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a = nn.Dense(4, 3, weight_init=Normal(0.02))
        self.b = nn.Dense(4, 3, weight_init=TruncatedNormal(sigma=0.1, mean=1), bias_init='zeros')
        self.c = nn.Dense(4, 3, weight_init=HeUniform(math.sqrt(5), mode='fan_out'))
        self.d = nn.Dense(4, 3, weight_init='xavier_uniform', has_bias=False)
        self.e = nn.Dense(4, 3, weight_init=my_init(1.0), has_bias=False)
        self.bn = nn.BatchNorm1d(3)
        self.pos = Parameter(initializer(TruncatedNormal(0.02), (1, 3)), name='pos')
        self.cls = Parameter(Tensor(np.zeros((1, 3)), ms.float32), name='cls')
        self.noise = Parameter(ops.randn((1, 3)), name='noise')

    def construct(self, x):
        y = self.a(x) + self.b(x) + self.c(x) + self.d(x) + self.e(x)
        return self.bn(y) + self.pos + self.cls + self.noise
)",
                                      {Shape::of({2, 4}), DType::Float32});
  ASSERT_EQ(res.cells.size(), 1u);
  std::map<std::string, const ParamInfo*> p;
  for (const ParamInfo& info : res.cells[0].params) p[info.name] = &info;
  using K = InitSpec::Kind;
  using O = ParamInit::Origin;
  auto init = [&](const std::string& name) -> const ParamInit* {
    auto it = p.find(name);
    return it == p.end() ? nullptr : it->second->init.get();
  };
  ASSERT_TRUE(init("a.weight"));
  EXPECT_EQ(init("a.weight")->spec.kind, K::Normal);
  EXPECT_DOUBLE_EQ(init("a.weight")->spec.sigma, 0.02);
  EXPECT_EQ(init("a.weight")->origin, O::Argument);
  EXPECT_EQ(init("a.weight")->note, "weight_init=Normal(sigma=0.02, mean=0)");
  ASSERT_TRUE(init("a.bias"));  // MindSpore's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
  EXPECT_EQ(init("a.bias")->spec.kind, K::Uniform);
  EXPECT_DOUBLE_EQ(init("a.bias")->spec.scale, 0.5);
  EXPECT_EQ(init("a.bias")->origin, O::LayerDefault);
  ASSERT_TRUE(init("b.weight"));
  EXPECT_EQ(init("b.weight")->spec.kind, K::TruncatedNormal);
  EXPECT_DOUBLE_EQ(init("b.weight")->spec.mean, 1);
  EXPECT_EQ(init("b.bias")->spec.kind, K::Zero);
  ASSERT_TRUE(init("c.weight"));
  EXPECT_DOUBLE_EQ(init("c.weight")->spec.negative_slope, std::sqrt(5.0));
  EXPECT_TRUE(init("c.weight")->spec.fan_out);
  EXPECT_EQ(init("d.weight")->spec.kind, K::XavierUniform);
  // A tensor of computed values: not known; the layer's default stands in, and says so.
  ASSERT_TRUE(init("e.weight"));
  EXPECT_EQ(init("e.weight")->origin, O::Substitute);
  EXPECT_EQ(init("e.weight")->spec.kind, K::HeUniform);
  EXPECT_NE(init("e.weight")->note.find("not known statically"), std::string::npos)
      << init("e.weight")->note;
  ASSERT_TRUE(init("bn.gamma"));
  EXPECT_EQ(init("bn.gamma")->spec.kind, K::One);
  EXPECT_EQ(init("bn.gamma")->origin, O::LayerDefault);
  EXPECT_EQ(init("bn.moving_variance")->spec.kind, K::One);
  EXPECT_EQ(init("bn.moving_mean")->spec.kind, K::Zero);
  ASSERT_TRUE(init("pos"));
  EXPECT_EQ(init("pos")->spec.kind, K::TruncatedNormal);
  EXPECT_DOUBLE_EQ(init("pos")->spec.sigma, 0.02);
  ASSERT_TRUE(init("cls"));
  EXPECT_EQ(init("cls")->spec.kind, K::Constant);
  EXPECT_DOUBLE_EQ(init("cls")->spec.value, 0);
  EXPECT_EQ(init("noise"), nullptr);

  // The runtime fills from the records and says where each came from.
  ExecOptions eo;
  eo.seed = 3;
  Executor ex(res.cells[0], eo);
  EXPECT_EQ(ex.param("a.weight")->source, InitSource::Argument);
  EXPECT_NEAR(compute_stats(ex.param("a.weight")->value).std, 0.02, 0.015);
  EXPECT_EQ(ex.param("a.bias")->source, InitSource::LayerDefault);
  EXPECT_LE(compute_stats(ex.param("a.bias")->value).max, 0.5);
  EXPECT_EQ(compute_stats(ex.param("bn.gamma")->value).min, 1);
  EXPECT_TRUE(compute_stats(ex.param("cls")->value).all_zero());
  EXPECT_EQ(ex.param("noise")->source, InitSource::Unknown);
}

// Tensor indexing reaches the StridedSlice kernel as the typed attributes the evaluator records
// (begin/end/strides and masks), never as text: ellipsis, new axes, negative steps and indices.
TEST(RuntimeKernels, IndexingFromRecordedSliceAttributes) {
  AnalysisResult res = analyze_source("slices.py", R"(from mindspore import nn


class Net(nn.Cell):
    def construct(self, x):
        return x[..., 1:3], x[None, :, ::-1], x[-1], x[1::-1, 0], x[:, -3:-1:1]
)",
                                      {Shape::of({3, 4}), DType::Float32});
  ASSERT_EQ(res.cells.size(), 1u);
  for (const Node& n : res.cells[0].graph.nodes) {
    if (n.op == "StridedSlice") {
      EXPECT_NE(n.find_attr("strides"), nullptr) << n.id;
    }
  }
  Executor ex(res.cells[0], ExecOptions{});
  std::vector<float> arange(12);
  for (size_t i = 0; i < arange.size(); ++i) arange[i] = static_cast<float>(i);
  ex.set_input(0, Tensor::from_floats({3, 4}, arange));
  ASSERT_EQ(ex.run().kind, RunStatus::Kind::Finished);
  const auto& out = ex.outputs();
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(values(out[0]), (std::vector<float>{1, 2, 5, 6, 9, 10}));
  EXPECT_EQ(out[1].shape(), (std::vector<int64_t>{1, 3, 4}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8}));
  EXPECT_EQ(values(out[2]), (std::vector<float>{8, 9, 10, 11}));
  EXPECT_EQ(values(out[3]), (std::vector<float>{4, 0}));
  EXPECT_EQ(values(out[4]), (std::vector<float>{1, 2, 5, 6, 9, 10}));
}

// The largest int index on an axis of unknown size is recorded without overflowing its end
// (UBSan in the ASan tier checks the arithmetic).
TEST(RuntimeKernels, SliceAttributesOfTheLargestIndex) {
  std::string err;
  auto input = parse_input_spec("N,3", &err);
  ASSERT_TRUE(input) << err;
  AnalysisResult res = analyze_source("largest_index.py", R"(from mindspore import nn


class Net(nn.Cell):
    def construct(self, x):
        return x[9223372036854775807]
)",
                                      *input);
  ASSERT_EQ(res.cells.size(), 1u);
  bool found = false;
  for (const Node& n : res.cells[0].graph.nodes) {
    if (n.op != "StridedSlice") continue;
    found = true;
    ASSERT_NE(n.find_attr("begin"), nullptr);
    EXPECT_EQ(std::get<std::vector<int64_t>>(*n.find_attr("begin")),
              std::vector<int64_t>{std::numeric_limits<int64_t>::max()});
    EXPECT_EQ(std::get<int64_t>(*n.find_attr("shrink_axis_mask")), 1);
  }
  EXPECT_TRUE(found);
}

// nn.MaxPool2d's dilation and return_indices reach the node, the shape rule and the runtime's
// pool (they were dropped: a dilated pool ran undilated). The expected shapes and values are
// MindSpore 2.10's (msvenv, PyNative) for this input, x = (arange(112) % 13 - 6) * 0.5 as
// (2, 1, 7, 8) float32 with x[0, 0, 3, 4] = 9: nn.MaxPool2d(3, 1, pad_mode='pad', padding=1,
// dilation=2), nn.MaxPool2d(2, 2, pad_mode='pad', dilation=(2, 3), ceil_mode=True),
// nn.MaxPool2d(3, 2, pad_mode='pad', padding=1, dilation=2, return_indices=True) and
// ops.max_pool2d(x, 2, None, 0, (2, 3), False, True) (the same as the second).
TEST(RuntimeKernels, DilatedMaxPoolMatchesMindSpore) {
  std::string err;
  auto input = parse_input_spec("2,1,7,8", &err);
  ASSERT_TRUE(input) << err;
  AnalysisResult res = analyze_source("dilated_pool.py", R"(from mindspore import nn, ops


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.mp = nn.MaxPool2d(3, 1, pad_mode="pad", padding=1, dilation=2)
        self.mp2 = nn.MaxPool2d(2, 2, pad_mode="pad", dilation=(2, 3), ceil_mode=True)
        self.mp3 = nn.MaxPool2d(3, 2, pad_mode="pad", padding=1, dilation=2, return_indices=True)

    def construct(self, x):
        v, i = self.mp3(x)
        return self.mp(x), self.mp2(x), v, i, ops.max_pool2d(x, 2, None, 0, (2, 3), False, True)
)",
                                      *input);
  ASSERT_EQ(res.cells.size(), 1u);
  const CellReport& cell = res.cells[0];
  ASSERT_TRUE(cell.compiled);
  ASSERT_EQ(cell.graph.outputs.size(), 5u);
  auto out_shape = [&](size_t i) {
    const auto& ref = cell.graph.outputs[i];
    return cell.graph.nodes[ref.node].outputs[ref.output];
  };
  EXPECT_EQ(out_shape(0).shape.str(), "(2, 1, 5, 6)");
  EXPECT_EQ(out_shape(1).shape.str(), "(2, 1, 3, 3)");
  EXPECT_EQ(out_shape(2).shape.str(), "(2, 1, 3, 3)");
  EXPECT_EQ(out_shape(3).shape.str(), "(2, 1, 3, 3)");
  EXPECT_EQ(out_shape(3).dtype, DType::Int64);
  EXPECT_EQ(out_shape(4).shape.str(), "(2, 1, 3, 3)");
  for (const Node& n : cell.graph.nodes) {
    if (n.op == "MaxPool") {
      EXPECT_NE(n.find_attr("dilation"), nullptr) << n.id;
    }
  }

  std::vector<float> xv(112);
  for (int i = 0; i < 112; ++i) xv[i] = static_cast<float>(i % 13 - 6) * 0.5f;
  xv[3 * 8 + 4] = 9.0f;
  Executor ex(cell, ExecOptions{});
  ex.set_input(0, Tensor::from_floats({2, 1, 7, 8}, xv));
  RunStatus s = ex.run();
  ASSERT_EQ(s.kind, RunStatus::Kind::Finished) << s.message;
  auto outs = ex.outputs();
  ASSERT_EQ(outs.size(), 5u);
  EXPECT_EQ(values(outs[0]),
            (std::vector<float>{3.0, 9.0, 3.0, 9.0, 2.5, 9.0, 1.5,  2.0, 2.5, 3.0, 2.5, 3.0,
                                3.0, 9.0, 3.0, 9.0, 2.5, 9.0, 3.0,  2.5, 3.0, 3.0, 3.0, 3.0,
                                3.0, 9.0, 3.0, 9.0, 1.0, 9.0, -0.5, 3.0, 0.5, 1.0, 1.5, 1.0,
                                2.5, 3.0, 3.0, 3.0, 3.0, 2.5, 1.0,  3.0, 2.0, 2.5, 3.0, 2.5,
                                2.5, 3.0, 3.0, 3.0, 3.0, 2.5, 1.0,  1.5, 2.0, 2.5, 3.0, 2.5}));
  const std::vector<float> second{0.0, 1.0, 2.0, 1.5, 2.5, 2.0, 3.0, 2.5, 2.0,
                                  2.0, 3.0, 2.5, 2.0, 3.0, 2.5, 2.0, 3.0, 0.5};
  EXPECT_EQ(values(outs[1]), second);
  EXPECT_EQ(values(outs[2]), (std::vector<float>{3.0, 3.0, 2.5, 3.0, 3.0, 2.5, 3.0, 3.0, 1.0, -0.5,
                                                 0.5, 1.5, 1.0, 2.0, 3.0, 1.0, 2.0, 3.0}));
  EXPECT_EQ(outs[3].dtype(), DType::Int64);
  EXPECT_EQ(values(outs[3]), (std::vector<float>{25, 25, 11, 25, 25, 11, 25, 25, 47, 27, 29, 31, 43,
                                                 45, 47, 43, 45, 47}));
  EXPECT_EQ(values(outs[4]), second);
}

TEST(RuntimeKernels, ConvSamePaddingOnOnes) {
  G g;
  uint32_t x = g.input({1, 1, 3, 3});
  g.param("c.weight", {1, 1, 3, 3});
  uint32_t c = g.op("Conv2D", {x}, {1, 1, 3, 3},
                    {{"pad_mode", std::string("same")}, {"kernel_size", int64_t{3}}}, {"c.weight"});
  g.r.graph.nodes[c].scope = "c";
  g.output(c);
  Tensor y = run1(g, {Tensor::ones({1, 1, 3, 3})}, {}, {{"c.weight", Tensor::ones({1, 1, 3, 3})}});
  EXPECT_EQ(values(y), (std::vector<float>{4, 6, 4, 6, 9, 6, 4, 6, 4}));
}

TEST(RuntimeKernels, ConvStrideAndDepthwise) {
  G g;
  uint32_t x = g.input({1, 2, 4, 4});
  g.param("d.weight", {2, 1, 2, 2});
  uint32_t c =
      g.op("Conv2D", {x}, {1, 2, 2, 2},
           {{"pad_mode", std::string("valid")}, {"stride", int64_t{2}}, {"group", int64_t{2}}},
           {"d.weight"});
  g.output(c);
  std::vector<float> xv(32);
  for (int i = 0; i < 32; ++i) xv[i] = static_cast<float>(i);
  Tensor w = Tensor::from_floats({2, 1, 2, 2}, {1, 0, 0, 0, 0, 0, 0, 1});
  Tensor y = run1(g, {Tensor::from_floats({1, 2, 4, 4}, xv)}, {}, {{"d.weight", w}});
  // channel 0 picks the top-left of each 2x2 window, channel 1 the bottom-right
  EXPECT_EQ(values(y), (std::vector<float>{0, 2, 8, 10, 21, 23, 29, 31}));
}

TEST(RuntimeKernels, PoolingSoftmaxNorms) {
  {
    G g;
    uint32_t x = g.input({1, 1, 4, 4});
    uint32_t p =
        g.op("MaxPool", {x}, {1, 1, 2, 2}, {{"kernel_size", int64_t{2}}, {"stride", int64_t{2}}});
    g.output(p);
    std::vector<float> xv(16);
    for (int i = 0; i < 16; ++i) xv[i] = static_cast<float>(i);
    EXPECT_EQ(values(run1(g, {Tensor::from_floats({1, 1, 4, 4}, xv)})),
              (std::vector<float>{5, 7, 13, 15}));
  }
  {
    G g;
    uint32_t x = g.input({1, 1, 3, 3});
    uint32_t p = g.op(
        "AvgPool", {x}, {1, 1, 2, 2},
        {{"kernel_size", int64_t{2}}, {"stride", int64_t{2}}, {"pad_mode", std::string("same")}});
    g.output(p);
    // windows: {1,1,1,1} {1,1} {1,1} {1}: averages over valid elements only
    EXPECT_EQ(values(run1(g, {Tensor::ones({1, 1, 3, 3})})), (std::vector<float>{1, 1, 1, 1}));
  }
  {
    G g;
    uint32_t x = g.input({1, 2});
    uint32_t s = g.op("Softmax", {x}, {1, 2}, {{"axis", int64_t{-1}}});
    g.output(s);
    auto v = values(run1(g, {Tensor::from_floats({1, 2}, {0, std::log(2.0f)})}));
    EXPECT_NEAR(v[0], 1.0 / 3, 1e-6);
    EXPECT_NEAR(v[1], 2.0 / 3, 1e-6);
  }
  {
    G g;
    uint32_t x = g.input({1, 3});
    g.param("ln.gamma", {3});
    g.param("ln.beta", {3});
    uint32_t l =
        g.op("LayerNorm", {x}, {1, 3}, {{"begin_norm_axis", int64_t{-1}}, {"epsilon", 0.0}},
             {"ln.gamma", "ln.beta"});
    g.output(l);
    auto v = values(run1(g, {Tensor::from_floats({1, 3}, {1, 2, 3})}));
    EXPECT_NEAR(v[0], -std::sqrt(1.5), 1e-5);
    EXPECT_NEAR(v[1], 0, 1e-6);
    EXPECT_NEAR(v[2], std::sqrt(1.5), 1e-5);
  }
  {
    G g;
    uint32_t x = g.input({1, 2, 1, 1});
    for (const char* p : {"bn.moving_mean", "bn.moving_variance", "bn.gamma", "bn.beta"})
      g.param(p, {2});
    uint32_t b = g.op("BatchNorm", {x}, {1, 2, 1, 1}, {{"eps", 0.0}},
                      {"bn.moving_mean", "bn.moving_variance", "bn.gamma", "bn.beta"});
    g.output(b);
    auto v = values(run1(g, {Tensor::from_floats({1, 2, 1, 1}, {3, 3})}, {},
                         {{"bn.moving_mean", Tensor::from_floats({2}, {1, 2})},
                          {"bn.moving_variance", Tensor::from_floats({2}, {4, 1})},
                          {"bn.gamma", Tensor::from_floats({2}, {2, 1})},
                          {"bn.beta", Tensor::from_floats({2}, {0, 10})}}));
    EXPECT_EQ(v, (std::vector<float>{2, 11}));  // (3-1)/2*2+0, (3-2)/1*1+10
  }
}

TEST(RuntimeKernels, MatMulBroadcastReduceTranspose) {
  {
    G g;
    uint32_t a = g.input({2, 2}), b = g.input({2, 2});
    uint32_t m = g.op("MatMul", {a, b}, {2, 2}, {{"transpose_b", true}});
    g.output(m);
    auto v = values(run1(
        g, {Tensor::from_floats({2, 2}, {1, 2, 3, 4}), Tensor::from_floats({2, 2}, {1, 0, 1, 1})}));
    EXPECT_EQ(v, (std::vector<float>{1, 3, 3, 7}));
  }
  {
    G g;
    uint32_t x = g.input({1, 3});
    g.param("fc.weight", {2, 3});
    g.param("fc.bias", {2});
    uint32_t d = g.op("MatMul", {x}, {1, 2}, {{"activation", std::string("relu")}},
                      {"fc.weight", "fc.bias"}, DType::Float32, 0, "nn.Dense");
    g.output(d);
    auto v = values(run1(g, {Tensor::from_floats({1, 3}, {1, 2, 3})}, {},
                         {{"fc.weight", Tensor::from_floats({2, 3}, {1, 1, 1, -1, -1, -1})},
                          {"fc.bias", Tensor::from_floats({2}, {0.5f, 1})}}));
    EXPECT_EQ(v, (std::vector<float>{6.5f, 0}));
  }
  {
    G g;
    uint32_t a = g.input({2, 1}), b = g.input({3});
    uint32_t s = g.op("Sub", {a, b}, {2, 3});
    g.output(s);
    auto v = values(
        run1(g, {Tensor::from_floats({2, 1}, {10, 20}), Tensor::from_floats({3}, {1, 2, 3})}));
    EXPECT_EQ(v, (std::vector<float>{9, 8, 7, 19, 18, 17}));
  }
  {
    G g;  // ReduceMean with keep_dims, axes inferred from the shapes
    uint32_t x = g.input({1, 2, 2, 2});
    uint32_t m = g.op("ReduceMean", {x}, {1, 2, 1, 1}, {{"keep_dims", true}});
    g.output(m);
    auto v = values(run1(g, {Tensor::from_floats({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}));
    EXPECT_EQ(v, (std::vector<float>{2.5f, 6.5f}));
  }
  {
    G g;  // Transpose with the permutation inferred from distinct dims
    uint32_t x = g.input({2, 3});
    uint32_t t = g.op("Transpose", {x}, {3, 2});
    g.output(t);
    auto v = values(run1(g, {Tensor::from_floats({2, 3}, {1, 2, 3, 4, 5, 6})}));
    EXPECT_EQ(v, (std::vector<float>{1, 4, 2, 5, 3, 6}));
  }
  {
    G g;  // ambiguous permutation: a clear error
    uint32_t x = g.input({1, 2, 2});
    uint32_t t = g.op("Transpose", {x}, {1, 2, 2}, {}, {}, DType::Float32, 41);
    g.output(t);
    Executor ex(g.r);
    ex.set_input(0, Tensor::zeros({1, 2, 2}));
    RunStatus s = ex.run();
    EXPECT_EQ(s.kind, RunStatus::Kind::Error);
    EXPECT_NE(s.message.find("ambiguous"), std::string::npos) << s.message;
    EXPECT_NE(s.message.find("model.py:42"), std::string::npos) << s.message;
  }
  {
    G g;  // concat, strided slice from its recorded attributes ([:, -1]), embedding gather
    uint32_t a = g.input({2, 2}), b = g.input({2, 1});
    uint32_t c = g.op("Concat", {a, b}, {2, 3}, {{"axis", int64_t{1}}});
    uint32_t s = g.op("StridedSlice", {c}, {2},
                      {{"begin", std::vector<int64_t>{0, -1}},
                       {"end", std::vector<int64_t>{0, 0}},
                       {"strides", std::vector<int64_t>{1, 1}},
                       {"begin_mask", int64_t{1}},
                       {"end_mask", int64_t{1}},
                       {"shrink_axis_mask", int64_t{2}}});
    g.output(s);
    auto v = values(
        run1(g, {Tensor::from_floats({2, 2}, {1, 2, 3, 4}), Tensor::from_floats({2, 1}, {5, 6})}));
    EXPECT_EQ(v, (std::vector<float>{5, 6}));
  }
}

TEST(RuntimeKernels, GatherOutOfRangeNamesTheIndex) {
  G g;
  uint32_t ids = g.input({2}, DType::Int32);
  g.param("emb.embedding_table", {4, 2});
  uint32_t e =
      g.op("Gather", {ids}, {2, 2}, {}, {"emb.embedding_table"}, DType::Float32, 9, "nn.Embedding");
  g.output(e);
  Executor ex(g.r);
  ex.set_input(0, Tensor::from_ints({2}, {1, 7}, DType::Int32));
  RunStatus s = ex.run();
  ASSERT_EQ(s.kind, RunStatus::Kind::Error);
  EXPECT_NE(s.message.find("index 7 at [1]"), std::string::npos) << s.message;
}

TEST(RuntimeExecutor, UnsupportedOpIsAClearError) {
  G g;
  uint32_t x = g.input({2});
  uint32_t f = g.op("FancyOp", {x}, {2}, {}, {}, DType::Float32, 11, "ops.fancy");
  g.output(f);
  Executor ex(g.r);
  ex.set_input(0, Tensor::ones({2}));
  RunStatus s = ex.run();
  ASSERT_EQ(s.kind, RunStatus::Kind::Error);
  EXPECT_EQ(s.node, 1u);
  EXPECT_NE(s.message.find("no kernel for operator 'FancyOp'"), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("model.py:12"), std::string::npos) << s.message;
  EXPECT_THROW(ex.set_input(0, Tensor::ones({3})), RuntimeError);  // wrong input shape
}

// The runtime has no int8 (uint8, int16, complex...) storage or kernels: before, an int8 input
// was silently made float32 and a float32 Conv2d ran on it (MindSpore raises TypeError). Now an
// input, a parameter or a node output of such a dtype fails with its name (issue 14).
TEST(RuntimeExecutor, DtypesTheRuntimeCannotHoldAreRefusedNotComputedAsFloat) {
  const std::string why =
      "has dtype int8, which the CPU runtime does not support (it computes float32, float16, "
      "int32, int64 and bool; float64 and bfloat16 as float32)";
  {
    G g;
    uint32_t x = g.input({1, 3, 4, 4}, DType::Int8);
    g.param("conv.weight", {2, 3, 1, 1});
    uint32_t c =
        g.op("Conv2D", {x}, {1, 2, 4, 4}, {}, {"conv.weight"}, DType::Int8, 4, "nn.Conv2d");
    g.output(c);
    Executor ex(g.r);
    try {
      ex.set_input_spec(0, "ones", 0);
      ADD_FAILURE() << "an int8 input was accepted";
    } catch (const RuntimeError& e) {
      EXPECT_EQ(std::string(e.what()), "input 'in0' " + why);
    }
    EXPECT_THROW(ex.set_input(0, Tensor::ones({1, 3, 4, 4}, DType::Int32)), RuntimeError);
    RunStatus s = ex.run();  // never set: the run fails, it computes nothing
    EXPECT_EQ(s.kind, RunStatus::Kind::Error);
  }
  {
    G g;  // a float input cast to int8 inside construct
    uint32_t x = g.input({4});
    uint32_t c = g.op("Cast", {x}, {4}, {}, {}, DType::Int8, 6, "Tensor.astype");
    g.output(c);
    Executor ex(g.r);
    ex.set_input(0, Tensor::from_floats({4}, {0.5f, 1.5f, -2.f, 3.f}));
    RunStatus s = ex.run();
    ASSERT_EQ(s.kind, RunStatus::Kind::Error);
    EXPECT_NE(s.message.find("output 0 " + why), std::string::npos) << s.message;
    EXPECT_NE(s.message.find("model.py:7"), std::string::npos) << s.message;
  }
  {
    G g;  // float64 and bfloat16 are computed as float32, as before
    uint32_t x = g.input({2}, DType::Float64);
    uint32_t r = g.op("ReLU", {x}, {2}, {}, {}, DType::BFloat16);
    g.output(r);
    Tensor out = run1(g, {Tensor::from_floats({2}, {-1.f, 2.f})});
    EXPECT_EQ(out.dtype(), DType::Float32);
    EXPECT_EQ(values(out), (std::vector<float>{0.f, 2.f}));
  }
}

TEST(RuntimeExecutor, HooksPauseResumeAbortInterrupt) {
  G g;
  uint32_t x = g.input({2});
  uint32_t a = g.op("ReLU", {x}, {2});
  uint32_t b = g.op("Add", {a, x}, {2});
  uint32_t c = g.op("Neg", {b}, {2});
  g.output(c);
  Executor ex(g.r);
  ex.set_input(0, Tensor::from_floats({2}, {-1, 2}));
  std::vector<std::string> trace;
  Hooks h;
  h.before = [&](const NodeEvent& e) {
    trace.push_back("b" + std::to_string(e.index));
    EXPECT_TRUE(e.outputs.empty());
    return e.index == b ? HookAction::Pause : HookAction::Continue;
  };
  h.after = [&](const NodeEvent& e) {
    trace.push_back("a" + std::to_string(e.index));
    EXPECT_EQ(e.outputs.size(), 1u);
    return HookAction::Continue;
  };
  RunStatus s = ex.run(h);
  ASSERT_EQ(s.kind, RunStatus::Kind::Paused);
  EXPECT_EQ(s.node, b);
  EXPECT_FALSE(s.after);
  EXPECT_EQ(ex.position(), b);
  ASSERT_NE(ex.value(a), nullptr);  // earlier values are inspectable while paused
  EXPECT_EQ(values(*ex.value(a)), (std::vector<float>{0, 2}));
  EXPECT_EQ(ex.value(b), nullptr);
  s = ex.run(h);  // resumes without re-pausing at b
  ASSERT_EQ(s.kind, RunStatus::Kind::Finished);
  EXPECT_EQ(values(ex.outputs()[0]), (std::vector<float>{1, -4}));
  // `before` of the paused node is not called again on resume.
  EXPECT_EQ(trace, (std::vector<std::string>{"b0", "a0", "b1", "a1", "b2", "a2", "b3", "a3"}));

  // Abort from `after`; step(); interrupt flag.
  ex.reset();
  Hooks abort;
  abort.after = [&](const NodeEvent& e) {
    return e.index == a ? HookAction::Abort : HookAction::Continue;
  };
  s = ex.run(abort);
  EXPECT_EQ(s.kind, RunStatus::Kind::Aborted);
  EXPECT_TRUE(s.after);
  ex.reset();
  EXPECT_EQ(ex.step().kind, RunStatus::Kind::Finished);
  EXPECT_EQ(ex.position(), 1u);
  std::atomic<bool> stop{true};
  Hooks intr;
  intr.interrupt = &stop;
  s = ex.run(intr);
  EXPECT_EQ(s.kind, RunStatus::Kind::Paused);
  EXPECT_EQ(s.node, 1u);
  EXPECT_FALSE(stop.load());
  EXPECT_EQ(ex.run(intr).kind, RunStatus::Kind::Finished);
}

TEST(RuntimeExecutor, TargetPrecisionRoundsToHalf) {
  G g;
  uint32_t x = g.input({2}), y = g.input({2});
  uint32_t m = g.op("Mul", {x, y}, {2});
  uint32_t s = g.op("Add", {m, x}, {2});
  g.output(s);
  ExecOptions o;
  o.precision = Precision::Target;
  Executor ex(g.r, o);
  ex.set_input(0, Tensor::from_floats({2}, {300, 1}));
  ex.set_input(1, Tensor::from_floats({2}, {300, 1e-4f}));
  ASSERT_EQ(ex.run().kind, RunStatus::Kind::Finished);
  Tensor out = ex.outputs()[0];
  EXPECT_EQ(out.dtype(), DType::Float16);
  TensorStats st = compute_stats(out);
  EXPECT_EQ(st.inf_count, 1);  // 300*300 = 90000 overflows fp16
  EXPECT_EQ(out.at(1), 1.0);   // 1 + 1e-4 rounds back to 1 in fp16
}

// Amp O2 keeps BatchNorm (and LayerNorm) in float32, Parameters included (OpPrecision::
// KeepFloat32): a moving variance past float16's range stays finite; other Parameters are float16.
TEST(RuntimeExecutor, TargetPrecisionKeepsNormalizationParametersInFloat32) {
  G g;
  uint32_t x = g.input({1, 2, 1, 1});
  for (const char* p : {"bn.gamma", "bn.beta", "bn.moving_mean", "bn.moving_variance"})
    g.param(p, {2});
  g.param("fc.weight", {2, 2});
  uint32_t b = g.op("BatchNorm", {x}, {1, 2, 1, 1}, {{"eps", 1e-5}},
                    {"bn.gamma", "bn.beta", "bn.moving_mean", "bn.moving_variance"});
  uint32_t f = g.op("Flatten", {b}, {1, 2});
  uint32_t d = g.op("MatMul", {f}, {1, 2}, {{"transpose_b", true}}, {"fc.weight"}, DType::Float32,
                    0, "nn.Dense");
  g.output(d);
  ExecOptions o;
  o.precision = Precision::Target;
  Executor ex(g.r, o);
  EXPECT_EQ(ex.param("bn.moving_variance")->value.dtype(), DType::Float32);
  EXPECT_EQ(ex.param("bn.gamma")->value.dtype(), DType::Float32);
  EXPECT_EQ(ex.param("fc.weight")->value.dtype(), DType::Float16);
  ex.set_param("bn.moving_variance", Tensor::from_floats({2}, {1e5f, 1e5f}));
  ex.set_param("fc.weight", Tensor::from_floats({2, 2}, {1, 0, 0, 1}));
  ex.set_input(0, Tensor::from_floats({1, 2, 1, 1}, {1000, -1000}));
  ASSERT_EQ(ex.run().kind, RunStatus::Kind::Finished);
  const auto v = values(ex.outputs()[0]);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_NEAR(v[0], 1000 / std::sqrt(1e5), 0.01);  // float16 storage would make the variance inf
  EXPECT_NEAR(v[1], -1000 / std::sqrt(1e5), 0.01);
}

// ops.maximum / ops.minimum on NaN as MindSpore 2.10's CPU kernels compute them (measured: a NaN
// first operand gives the second, a NaN second operand NaN), not numpy's NaN propagation, which
// npvalues keeps for numpy code.
TEST(RuntimeKernels, MaximumMinimumOnNaNAsMindSpore) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const char* op : {"Maximum", "Minimum"}) {
    G g;
    uint32_t a = g.input({4}), b = g.input({4});
    g.output(g.op(op, {a, b}, {4}));
    Tensor out = run1(g, {Tensor::from_floats({4}, {1, nan, 3, nan}),
                          Tensor::from_floats({4}, {nan, 2, 1, nan})});
    const auto v = values(out);
    EXPECT_TRUE(std::isnan(v[0])) << op;
    EXPECT_EQ(v[1], 2) << op;
    EXPECT_EQ(v[2], std::string(op) == "Maximum" ? 3 : 1) << op;
    EXPECT_TRUE(std::isnan(v[3])) << op;
  }
}

// A constant made afresh on each call of a helper is a node of its own: the graph keeps every
// captured object alive, so a new tensor never reuses a freed one's address and with it the old
// node (it did: offsets 3 and 4 were read as 1 and 2, x + 1 instead of x + 3).
TEST(RuntimeExecutor, ConstantsMadeOnEveryCallAreNotAliased) {
  AnalysisResult res = analyze_source("aliasing.py", R"(import numpy as np
from mindspore import nn, Tensor


class Net(nn.Cell):
    def offset(self, x, k):
        y = Tensor(np.full((2, 3), k), x.dtype)
        return x + y

    def construct(self, x):
        for k in range(6):
            x = self.offset(x, k)
        return x
)",
                                      {Shape::of({2, 3}), DType::Float32});
  ASSERT_EQ(res.cells.size(), 1u);
  std::vector<double> offsets;
  for (const Node& n : res.cells[0].graph.nodes) {
    if (n.kind != NodeKind::Constant) continue;
    const AttrValue* v = n.find_attr("value");
    ASSERT_NE(v, nullptr);
    offsets.push_back(std::get<double>(*v));
  }
  EXPECT_EQ(offsets, (std::vector<double>{0, 1, 2, 3, 4, 5}));
  Executor ex(res.cells[0], ExecOptions{});
  ex.set_input(0, Tensor::from_floats({2, 3}, {0, 0, 0, 0, 0, 0}));
  ASSERT_EQ(ex.run().kind, RunStatus::Kind::Finished);
  EXPECT_EQ(values(ex.outputs()[0]), (std::vector<float>(6, 15)));
}

TEST(RuntimeExecutor, LeNetFromSource) {
  AnalysisOptions opts;
  opts.record_facts = true;
  opts.constant_values = true;
  opts.inputs.push_back({Shape::of({2, 1, 32, 32}), DType::Float32});
  DiskSourceProvider disk;
  AnalysisResult res =
      analyze_file(std::string(CELLSCOPE_CORPUS_DIR) + "/models/lenet5.py", opts, disk);
  ASSERT_FALSE(res.cells.empty());
  ExecOptions eo;
  eo.seed = 5;
  Executor ex(res.cells[0], eo);
  const ParamState* fc1 = ex.param("fc1.weight");
  ASSERT_NE(fc1, nullptr);
  EXPECT_EQ(fc1->source, InitSource::Argument);  // weight_init=Normal(0.02)
  EXPECT_EQ(fc1->init.kind, InitSpec::Kind::Normal);
  EXPECT_NEAR(compute_stats(fc1->value).std, 0.02, 0.002);
  EXPECT_EQ(ex.param("conv1.weight")->source, InitSource::LayerDefault);
  ex.set_input_spec(0, "ones", 0);
  size_t after_calls = 0;
  Hooks h;
  h.after = [&](const NodeEvent& e) {
    ++after_calls;
    for (const Tensor& t : e.outputs) EXPECT_EQ(compute_stats(t).nan_count, 0);
    return HookAction::Continue;
  };
  ASSERT_EQ(ex.run(h).kind, RunStatus::Kind::Finished);
  EXPECT_EQ(after_calls, ex.graph().nodes.size());
  Tensor out = ex.outputs()[0];
  EXPECT_EQ(out.shape(), (std::vector<int64_t>{2, 10}));
  // Same seed, same numbers.
  Executor ex2(res.cells[0], eo);
  ex2.set_input_spec(0, "ones", 0);
  ASSERT_EQ(ex2.run().kind, RunStatus::Kind::Finished);
  EXPECT_EQ(values(ex2.outputs()[0]), values(out));
}
