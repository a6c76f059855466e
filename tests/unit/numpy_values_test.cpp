// Element values of small numpy constants (graphcore/src/npvalues.h): what numpy code in
// __init__ computes is recorded on the Constant nodes (Node::constant_values) when
// AnalysisOptions::constant_values is set, and executed by the runtime. Expected values and
// dtypes are numpy 1.24's for the Python expressions in each test.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "graphcore/analysis.h"
#include "graphcore/runtime.h"

namespace graphcore {
namespace {

// A Cell whose __init__ runs `init` (8-space indented lines) and whose construct returns x and
// a copy of each attribute of `outs` (constant tensors): one Constant node per attribute, in order.
struct ConstNet {
  AnalysisResult res;
  std::vector<const Node*> constants;
};

ConstNet compile_consts(const std::string& init, const std::vector<std::string>& outs,
                        bool constant_values = true) {
  std::string ret;
  for (const std::string& o : outs) ret += ", self." + o + ".copy()";
  MemorySourceProvider src;
  src.add("/mem/net.py",
          "import math\nimport numpy as np\nimport mindspore as ms\nfrom mindspore import nn, "
          "Tensor\n\n\nclass Net(nn.Cell):\n    def __init__(self):\n        super().__init__()\n" +
              init + "\n    def construct(self, x):\n        return x" + ret + "\n");
  AnalysisOptions opts;
  opts.cell = "Net";
  opts.inputs = {{Shape::of({1}), DType::Float32}};
  opts.constant_values = constant_values;
  ConstNet c{analyze_file("/mem/net.py", opts, src), {}};
  for (const Diagnostic& d : c.res.diagnostics) EXPECT_NE(d.severity, Severity::Error) << d.message;
  if (c.res.cells.empty()) {
    ADD_FAILURE() << "no cell";
    return c;
  }
  for (const Node& n : c.res.cells[0].graph.nodes)
    if (n.kind == NodeKind::Constant) c.constants.push_back(&n);
  EXPECT_EQ(c.constants.size(), outs.size());
  return c;
}

std::vector<double> values_of(const Node& n) {
  if (!n.constant_values) {
    ADD_FAILURE() << n.id << " has no recorded elements";
    return {};
  }
  return *n.constant_values;
}

void expect_values(const Node& n, DType dtype, std::vector<int64_t> shape,
                   const std::vector<double>& want, double tol = 0) {
  ASSERT_EQ(n.outputs.size(), 1u);
  EXPECT_EQ(n.outputs[0].dtype, dtype) << n.id << ": " << dtype_name(n.outputs[0].dtype);
  EXPECT_EQ(n.outputs[0].shape, Shape::of(shape)) << n.id;
  std::vector<double> got = values_of(n);
  ASSERT_EQ(got.size(), want.size()) << n.id;
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol) << n.id << "[" << i << "]";
}

// The Transformer's sinusoid table and causal mask, small.
TEST(NumpyValues, SinusoidTableAndCausalMask) {
  ConstNet c = compile_consts(
      "        pos = np.arange(6)[:, None].astype(np.float32)\n"
      "        div = np.exp(np.arange(0, 4, 2).astype(np.float32) * -(math.log(10000.0) / 4))\n"
      "        pe = np.zeros((6, 4), dtype=np.float32)\n"
      "        pe[:, 0::2] = np.sin(pos * div)\n"
      "        pe[:, 1::2] = np.cos(pos * div)\n"
      "        self.pe = Tensor(pe[None, :, :], ms.float32)\n"
      "        causal = np.triu(np.ones((4, 4), dtype=np.float32), k=1) * -1e9\n"
      "        self.mask = Tensor(causal, ms.float32)\n",
      {"pe", "mask"});
  ASSERT_EQ(c.constants.size(), 2u);
  // numpy: div = [1.0, 0.009999998845160007] (float32); pe[p, 2i] = sin(p * div[i]),
  // pe[p, 2i + 1] = cos(p * div[i]), every operation rounded to float32.
  std::vector<double> pe;
  const double div[2] = {1.0, 0.009999998845160007};
  for (int p = 0; p < 6; ++p)
    for (int i = 0; i < 2; ++i) {
      float arg = static_cast<float>(p) * static_cast<float>(div[i]);
      pe.push_back(static_cast<float>(std::sin(static_cast<double>(arg))));
      pe.push_back(static_cast<float>(std::cos(static_cast<double>(arg))));
    }
  expect_values(*c.constants[0], DType::Float32, {1, 6, 4}, pe, 1e-7);
  EXPECT_NEAR(values_of(*c.constants[0])[4 * 5 + 2], 0.049979161471128464, 1e-8);  // numpy
  std::vector<double> mask;
  for (int r = 0; r < 4; ++r)
    for (int k = 0; k < 4; ++k) mask.push_back(k > r ? -1e9 : 0.0);
  expect_values(*c.constants[1], DType::Float32, {4, 4}, mask);
}

TEST(NumpyValues, DtypesFollowNumpy) {
  ConstNet c = compile_consts(
      "        self.a = Tensor(np.arange(0, 5, 2) / 2)\n"     // int64 / int -> float64
      "        self.b = Tensor(np.arange(3) + 1)\n"           // int64
      "        self.c = Tensor(np.arange(0, 6, 2) * 1.5)\n"   // int64 * float -> float64
      "        self.d = Tensor(np.linspace(0, 1, 5))\n"       // float64
      "        self.e = Tensor(np.eye(3, k=1))\n"             // float64
      "        self.f = Tensor(np.power(np.arange(4), 2))\n"  // int64
      "        self.g = Tensor(np.tril(np.arange(9).reshape(3, 3)).T)\n"
      "        self.h = Tensor(np.sqrt(np.array([[1, 4], [9, 16]])))\n"  // int -> float64
      "        self.i = Tensor(np.arange(6).reshape(2, 3) % 4 > 1)\n"    // bool
      "        self.j = Tensor(np.expand_dims(np.arange(3, dtype=np.float16) / 3, 0))\n"
      "        self.k = Tensor(np.log(np.arange(1, 4, dtype=np.float32)), ms.float32)\n"
      "        self.l = Tensor(np.arange(0, 6, 2) * 1.5, ms.int32)\n",  // converted: truncated
      {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"});
  ASSERT_EQ(c.constants.size(), 12u);
  auto& k = c.constants;
  expect_values(*k[0], DType::Float64, {3}, {0, 1, 2});
  expect_values(*k[1], DType::Int64, {3}, {1, 2, 3});
  expect_values(*k[2], DType::Float64, {3}, {0, 3, 6});
  expect_values(*k[3], DType::Float64, {5}, {0, 0.25, 0.5, 0.75, 1});
  expect_values(*k[4], DType::Float64, {3, 3}, {0, 1, 0, 0, 0, 1, 0, 0, 0});
  expect_values(*k[5], DType::Int64, {4}, {0, 1, 4, 9});
  expect_values(*k[6], DType::Int64, {3, 3}, {0, 3, 6, 0, 4, 7, 0, 0, 8});
  expect_values(*k[7], DType::Float64, {2, 2}, {1, 2, 3, 4});
  expect_values(*k[8], DType::Bool, {2, 3}, {0, 0, 1, 1, 0, 0});
  // float16: 1/3 and 2/3 rounded to binary16, as numpy prints them.
  expect_values(*k[9], DType::Float16, {1, 3}, {0, 0.333251953125, 0.66650390625});
  expect_values(*k[10], DType::Float32, {3}, {0, 0.6931471824645996, 1.0986123085021973});
  expect_values(*k[11], DType::Int32, {3}, {0, 3, 6});
}

// Uniform arrays keep a fill whatever their size; computed arrays above the element cap, and
// arrays assigned data that is not known, have no recorded elements (shape and dtype only).
TEST(NumpyValues, CapAndUnknownData) {
  ConstNet c = compile_consts(
      "        self.big = Tensor(np.arange(2 ** 21).reshape(1024, 2048), ms.float32)\n"
      "        self.twos = Tensor(np.ones((2048, 1024)) * 2, ms.float32)\n"
      "        z = np.zeros((2, 2))\n"
      "        z[0] = np.random.randn(2)\n"
      "        self.z = Tensor(z, ms.float32)\n"
      "        w = np.zeros((2, 2))\n"
      "        w[0, 1] = 5\n"
      "        self.w = Tensor(w, ms.float32)\n",
      {"big", "twos", "z", "w"});
  ASSERT_EQ(c.constants.size(), 4u);
  const Node& big = *c.constants[0];
  EXPECT_EQ(big.outputs[0].shape, Shape::of({1024, 2048}));
  EXPECT_EQ(big.constant_values, nullptr);
  EXPECT_EQ(big.find_attr("value"), nullptr);
  const Node& twos = *c.constants[1];
  EXPECT_EQ(twos.constant_values, nullptr);
  ASSERT_NE(twos.find_attr("value"), nullptr);
  EXPECT_EQ(std::get<double>(*twos.find_attr("value")), 2.0);
  const Node& z = *c.constants[2];  // np.zeros, then random data: no longer all zeros
  EXPECT_EQ(z.constant_values, nullptr);
  EXPECT_EQ(z.find_attr("value"), nullptr);
  expect_values(*c.constants[3], DType::Float32, {2, 2}, {0, 5, 0, 0});
}

// Without AnalysisOptions::constant_values (the CLI, the editor, the benchmarks) no element is
// computed: uniform constants keep their fill, everything else is shape and dtype only, and a
// slice assignment makes the data unknown rather than leaving a stale fill.
TEST(NumpyValues, OffUnlessRequested) {
  ConstNet c = compile_consts(
      "        self.r = Tensor(np.arange(4) * 2, ms.float32)\n"
      "        self.o = Tensor(np.ones((3, 3)) * 2, ms.float32)\n"
      "        z = np.zeros((2, 2))\n"
      "        z[0, 1] = 5\n"
      "        self.z = Tensor(z, ms.float32)\n",
      {"r", "o", "z"}, false);
  ASSERT_EQ(c.constants.size(), 3u);
  for (const Node* n : c.constants) EXPECT_EQ(n->constant_values, nullptr) << n->id;
  EXPECT_EQ(c.constants[0]->find_attr("value"), nullptr);
  ASSERT_NE(c.constants[1]->find_attr("value"), nullptr);
  EXPECT_EQ(std::get<double>(*c.constants[1]->find_attr("value")), 2.0);
  EXPECT_EQ(c.constants[2]->find_attr("value"), nullptr);
}

// The runtime fills Constant nodes from the recorded elements.
TEST(NumpyValues, RuntimeUsesTheRecordedElements) {
  ConstNet c = compile_consts(
      "        t = np.zeros((2, 3), dtype=np.float32)\n"
      "        t[1, :] = np.arange(3) * 0.5\n"
      "        self.t = Tensor(t[:, ::-1], ms.float32)\n"
      "        self.m = Tensor(np.tril(np.ones((3, 3))) > 0)\n",
      {"t", "m"});
  ASSERT_FALSE(c.res.cells.empty());
  runtime::Executor ex(c.res.cells[0]);
  ex.set_input_spec(0, "ones", 0);
  runtime::RunStatus s = ex.run();
  ASSERT_EQ(s.kind, runtime::RunStatus::Kind::Finished) << s.message;
  std::vector<runtime::Tensor> outs = ex.outputs();
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(outs[1].shape(), (std::vector<int64_t>{2, 3}));
  const double t[6] = {0, 0, 0, 1.0, 0.5, 0};
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(outs[1].at(i), t[i]) << i;
  EXPECT_EQ(outs[2].dtype(), DType::Bool);
  for (int64_t i = 0; i < 9; ++i) EXPECT_EQ(outs[2].at(i), (i % 3) <= (i / 3) ? 1 : 0) << i;
}

}  // namespace
}  // namespace graphcore
