// The CPU runtime on the whole corpus (tests/corpus/manifest.json), and the call-time values the
// registry records for it: Python scalar operands (`scalar` / `scalar_index`), permutations,
// reduction axes, concat axes, arange bounds, constant values.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "graphcore/analysis.h"
#include "graphcore/runtime.h"

namespace graphcore {
namespace {

using runtime::Executor;
using runtime::RunStatus;
using runtime::Tensor;

// ---- Every corpus model, run to completion ------------------------------------------------------
struct CorpusCase {
  const char* file;   // under tests/corpus/models
  const char* entry;  // the manifest's "cell": a class name or a factory expression
  std::vector<TensorType> inputs;
  std::vector<std::vector<int64_t>> outputs;  // expected output shapes
};

std::vector<CorpusCase> corpus_cases() {
  auto f32 = [](std::vector<int64_t> d) { return TensorType{Shape::of(d), DType::Float32}; };
  auto i32 = [](std::vector<int64_t> d) { return TensorType{Shape::of(d), DType::Int32}; };
  return {
      {"lenet5.py", "LeNet5", {f32({2, 1, 32, 32})}, {{2, 10}}},
      {"resnet50.py", "resnet50()", {f32({1, 3, 224, 224})}, {{1, 1000}}},
      {"mobilenetv2.py", "mobilenet_v2()", {f32({1, 3, 224, 224})}, {{1, 1000}}},
      {"vgg16.py", "vgg16()", {f32({1, 3, 224, 224})}, {{1, 1000}}},
      {"densenet.py", "densenet121()", {f32({1, 3, 224, 224})}, {{1, 1000}}},
      {"vit_b16.py", "vit_b_16()", {f32({1, 3, 224, 224})}, {{1, 1000}}},
      {"bert_base.py", "bert_base()", {i32({1, 128})}, {{1, 128, 768}, {1, 768}}},
      // 24 layers of width 1024: a shorter sequence keeps the test fast (same graph structure).
      {"bert_large.py", "bert_large()", {i32({1, 32})}, {{1, 32, 1024}, {1, 1024}}},
  };
}

AnalysisResult analyze_corpus(const CorpusCase& c) {
  AnalysisOptions opts;
  opts.record_facts = true;
  opts.constant_values = true;
  opts.inputs = c.inputs;
  std::string entry = c.entry;
  if (entry.find('(') != std::string::npos)
    opts.entries.push_back(entry);
  else
    opts.cell = entry;
  DiskSourceProvider disk;
  return analyze_file(std::string(CELLSCOPE_CORPUS_DIR) + "/models/" + c.file, opts, disk);
}

class CorpusRuntime : public ::testing::TestWithParam<CorpusCase> {};

TEST_P(CorpusRuntime, RunsToCompletionWithFiniteOutputs) {
  const CorpusCase& c = GetParam();
  AnalysisResult res = analyze_corpus(c);
  ASSERT_FALSE(res.cells.empty()) << c.file;
  runtime::ExecOptions eo;
  eo.seed = 7;
  eo.keep_values = false;
  Executor ex(res.cells[0], eo);
  ASSERT_EQ(ex.num_inputs(), c.inputs.size());
  // Int inputs (token ids) are drawn from [0, 10): valid rows of every embedding table.
  for (size_t i = 0; i < ex.num_inputs(); ++i) ex.set_input_spec(i, "random", eo.seed + i);
  RunStatus s = ex.run();
  ASSERT_EQ(s.kind, RunStatus::Kind::Finished) << c.file << ": " << s.message;
  std::vector<Tensor> outs = ex.outputs();
  ASSERT_EQ(outs.size(), c.outputs.size()) << c.file;
  for (size_t i = 0; i < outs.size(); ++i) {
    EXPECT_EQ(outs[i].shape(), c.outputs[i]) << c.file << " output " << i;
    EXPECT_EQ(outs[i].dtype(), DType::Float32) << c.file << " output " << i;
    runtime::TensorStats st = runtime::compute_stats(outs[i]);
    EXPECT_EQ(st.nan_count, 0) << c.file << " output " << i;
    EXPECT_EQ(st.inf_count, 0) << c.file << " output " << i;
    EXPECT_GT(st.std, 0) << c.file << " output " << i << " is constant";
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, CorpusRuntime, ::testing::ValuesIn(corpus_cases()),
                         [](const ::testing::TestParamInfo<CorpusCase>& p) {
                           std::string n = p.param.file;
                           n = n.substr(0, n.find('.'));
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

// The Transformer's position table and causal mask are computed by numpy code in __init__
// (np.arange/exp/sin/cos, slice assignment, np.triu): the static evaluator computes their
// elements (npvalues.h), so the constants construct slices from them carry data and the model
// runs to the end. The table's slice is checked against the formula, the mask against np.triu.
TEST(CorpusRuntime, TransformerRunsWithItsNumpyConstants) {
  auto i32 = [](std::vector<int64_t> d) { return TensorType{Shape::of(d), DType::Int32}; };
  CorpusCase c{"transformer.py", "transformer_base()", {i32({1, 8}), i32({1, 8})}, {}};
  AnalysisResult res = analyze_corpus(c);
  ASSERT_FALSE(res.cells.empty());
  runtime::ExecOptions eo;
  eo.seed = 7;
  Executor ex(res.cells[0], eo);
  for (size_t i = 0; i < ex.num_inputs(); ++i) ex.set_input_spec(i, "random", eo.seed + i);
  RunStatus s = ex.run();
  ASSERT_EQ(s.kind, RunStatus::Kind::Finished) << s.message;
  std::vector<Tensor> outs = ex.outputs();
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].shape(), (std::vector<int64_t>{1, 8, 32000}));
  runtime::TensorStats st = runtime::compute_stats(outs[0]);
  EXPECT_EQ(st.nan_count, 0);
  EXPECT_EQ(st.inf_count, 0);
  EXPECT_GT(st.std, 0);
  int tables = 0, masks = 0;
  for (size_t i = 0; i < ex.graph().nodes.size(); ++i) {
    const Node& n = ex.graph().nodes[i];
    if (n.kind != NodeKind::Constant || n.find_attr("value")) continue;
    ASSERT_NE(n.constant_values, nullptr) << n.id;
    const Tensor* vp = ex.value(i, 0);
    ASSERT_NE(vp, nullptr) << n.id;
    const Tensor& v = *vp;
    if (v.shape() == std::vector<int64_t>{1, 8, 512}) {  // position_table[:, :8, :]
      ++tables;
      for (int64_t p = 0; p < 8; ++p)
        for (int64_t j = 0; j < 256; ++j) {
          auto div = static_cast<float>(std::exp(static_cast<double>(
              static_cast<float>(2 * j) * static_cast<float>(-(std::log(10000.0) / 512)))));
          double arg = static_cast<float>(static_cast<float>(p) * div);
          ASSERT_NEAR(v.at(p * 512 + 2 * j), std::sin(arg), 1e-6) << p << ", " << j;
          ASSERT_NEAR(v.at(p * 512 + 2 * j + 1), std::cos(arg), 1e-6) << p << ", " << j;
        }
    } else if (v.shape() == std::vector<int64_t>{8, 8}) {  // causal_mask[:8, :8]
      ++masks;
      for (int64_t r = 0; r < 8; ++r)
        for (int64_t k = 0; k < 8; ++k) EXPECT_EQ(v.at(r * 8 + k), k > r ? -1e9f : 0.0f);
    } else {
      ADD_FAILURE() << "unexpected constant " << n.id;
    }
  }
  EXPECT_EQ(tables, 2);  // encode and decode each slice the table
  EXPECT_EQ(masks, 1);
}

// ---- Recorded call-time values ------------------------------------------------------------------

struct Compiled {
  AnalysisResult res;
  const CellReport& cell() const { return res.cells.at(0); }
  // The op nodes in graph order (inputs, parameters and constants skipped).
  std::vector<const Node*> ops() const {
    std::vector<const Node*> r;
    for (const Node& n : cell().graph.nodes)
      if (n.kind == NodeKind::Op) r.push_back(&n);
    return r;
  }
};

Compiled compile(const std::string& construct_body, std::vector<TensorType> inputs,
                 const std::string& args = "x") {
  const std::string text =
      "import math\nimport numpy as np\nimport mindspore as ms\nfrom mindspore import nn, "
      "ops, Tensor\n\n\nclass Net(nn.Cell):\n    def __init__(self):\n        "
      "super().__init__()\n        self.half = Tensor(0.5, ms.float32)\n        self.ones "
      "= Tensor(np.ones((2, 3)), ms.float32)\n\n    def construct(self, " +
      args + "):\n" + construct_body;
  MemorySourceProvider src("/mem/net.py", text);
  AnalysisOptions opts;
  opts.cell = "Net";
  opts.inputs = std::move(inputs);
  Compiled c{analyze_file("/mem/net.py", opts, src)};
  for (const Diagnostic& d : c.res.diagnostics) EXPECT_NE(d.severity, Severity::Error) << d.message;
  return c;
}

template <class T>
T attr(const Node& n, const char* name) {
  const AttrValue* v = n.find_attr(name);
  EXPECT_NE(v, nullptr) << n.id << " has no attribute " << name;
  if (!v || !std::holds_alternative<T>(*v)) {
    ADD_FAILURE() << n.id << "." << name << " has another type";
    return T{};
  }
  return std::get<T>(*v);
}

TEST(RecordedValues, ScalarOperandsWithTheirPosition) {
  Compiled c = compile(
      "        a = x - 10\n        b = 10 - x\n        c = x * 0.5\n        d = ops.pow(x, 2)\n"
      "        e = x / math.sqrt(4)\n        f = 1.0 - x\n        g = x != 0\n"
      "        h = ops.mul(True, x)\n        return a, b, c, d, e, f, g, h\n",
      {{Shape::of({2, 3}), DType::Float32}});
  auto ops = c.ops();
  ASSERT_EQ(ops.size(), 8u);
  const std::vector<std::pair<std::string, int64_t>> want = {
      {"Sub", 1}, {"Sub", 0}, {"Mul", 1},      {"Pow", 1},
      {"Div", 1}, {"Sub", 0}, {"NotEqual", 1}, {"Mul", 0}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(ops[i]->op, want[i].first) << i;
    EXPECT_EQ(ops[i]->inputs.size(), 1u) << i;  // the scalar is an attribute, not a node
    EXPECT_EQ(attr<int64_t>(*ops[i], "scalar_index"), want[i].second) << i;
  }
  EXPECT_EQ(attr<int64_t>(*ops[0], "scalar"), 10);  // ints stay ints
  EXPECT_EQ(attr<int64_t>(*ops[1], "scalar"), 10);
  EXPECT_EQ(attr<double>(*ops[2], "scalar"), 0.5);
  EXPECT_EQ(attr<int64_t>(*ops[3], "scalar"), 2);
  EXPECT_EQ(attr<double>(*ops[4], "scalar"), 2.0);
  EXPECT_EQ(attr<double>(*ops[5], "scalar"), 1.0);
  EXPECT_EQ(attr<int64_t>(*ops[6], "scalar"), 0);
  EXPECT_EQ(attr<bool>(*ops[7], "scalar"), true);
  // Two tensors: nothing recorded.
  Compiled t = compile("        return x - x\n", {{Shape::of({2, 3}), DType::Float32}});
  ASSERT_EQ(t.ops().size(), 1u);
  EXPECT_EQ(t.ops()[0]->find_attr("scalar"), nullptr);
}

TEST(RecordedValues, AxesPermutationsRangesAndConstants) {
  Compiled c = compile(
      "        a = ops.transpose(x, (0, 2, 1))\n        b = x.swapaxes(-1, -2)\n"
      "        c = ops.mean(x, (1,), True)\n        d = ops.ReduceSum()(x, -1)\n"
      "        e = ops.concat((x, x), axis=-1)\n        f = ops.arange(2, 11, 3)\n"
      "        g = ops.cast(x, ms.int32)\n        h = ops.tile(x, (1, 2, 1))\n"
      "        i = x * self.half + self.ones\n        return a, b, c, d, e, f, g, h, i\n",
      {{Shape::of({4, 2, 3}), DType::Float32}});
  auto ops = c.ops();
  ASSERT_GE(ops.size(), 10u);
  EXPECT_EQ(attr<std::vector<int64_t>>(*ops[0], "perm"), (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(attr<std::vector<int64_t>>(*ops[1], "perm"), (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(attr<std::vector<int64_t>>(*ops[2], "axis"), (std::vector<int64_t>{1}));
  EXPECT_EQ(attr<bool>(*ops[2], "keep_dims"), true);
  EXPECT_EQ(attr<std::vector<int64_t>>(*ops[3], "axis"), (std::vector<int64_t>{-1}));
  EXPECT_EQ(attr<bool>(*ops[3], "keep_dims"), false);
  EXPECT_EQ(attr<int64_t>(*ops[4], "axis"), -1);
  EXPECT_EQ(attr<double>(*ops[5], "start"), 2);
  EXPECT_EQ(attr<double>(*ops[5], "limit"), 11);
  EXPECT_EQ(attr<double>(*ops[5], "delta"), 3);
  EXPECT_EQ(attr<std::string>(*ops[6], "dtype"), "int32");
  EXPECT_EQ(attr<std::vector<int64_t>>(*ops[7], "multiples"), (std::vector<int64_t>{1, 2, 1}));
  // Constants whose every element is known carry it as `value`.
  std::vector<const Node*> consts;
  for (const Node& n : c.cell().graph.nodes)
    if (n.kind == NodeKind::Constant) consts.push_back(&n);
  ASSERT_EQ(consts.size(), 2u);
  EXPECT_EQ(attr<double>(*consts[0], "value"), 0.5);
  EXPECT_EQ(attr<double>(*consts[1], "value"), 1.0);
}

// ---- Scalar operands executed -------------------------------------------------------------------
std::vector<double> run_values(const Compiled& c, const std::vector<Tensor>& inputs,
                               std::vector<DType>* dtypes = nullptr) {
  Executor ex(c.cell());
  for (size_t i = 0; i < inputs.size(); ++i) ex.set_input(i, inputs[i]);
  RunStatus s = ex.run();
  EXPECT_EQ(s.kind, RunStatus::Kind::Finished) << s.message;
  std::vector<double> r;
  if (s.kind != RunStatus::Kind::Finished) return r;
  for (const Tensor& t : ex.outputs()) {
    if (dtypes) dtypes->push_back(t.dtype());
    for (int64_t i = 0; i < t.numel(); ++i) r.push_back(t.at(i));
  }
  return r;
}

TEST(RecordedValues, ScalarOperandsExecuteInTheirPosition) {
  Compiled c = compile(
      "        return x - 1, 1 - x, x / 4, 4 / x, x ** 2, 2 ** x, x > 1.5, ops.maximum(x, 1.5), "
      "x * self.half\n",
      {{Shape::of({3}), DType::Float32}});
  std::vector<double> v = run_values(c, {Tensor::from_floats({3}, {1, 2, 4})});
  const std::vector<double> want = {0,  1, 3, 0,  -1, -3, 0.25, 0.5, 1, 4, 2,   1, 1, 4,
                                    16, 2, 4, 16, 0,  1,  1,    1.5, 2, 4, 0.5, 1, 2};
  ASSERT_EQ(v.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(v[i], want[i], 1e-6) << i;
}

TEST(RecordedValues, IntTensorsWithPythonScalarsFollowMindSporeTypes) {
  // MindSpore 2.10: int32 * 0.5 -> float32; int32 + 2 -> int32; int32 / 2 -> float32;
  // int32 // 2 -> int32 (floor); int32 != 0 -> bool; int32 < 1.5 -> bool, compared as floats.
  Compiled c =
      compile("        return ids * 0.5, ids + 2, ids / 2, ids // 2, ids != 0, ids < 1.5\n",
              {{Shape::of({3}), DType::Int32}}, "ids");
  std::vector<DType> dtypes;
  std::vector<double> v =
      run_values(c, {Tensor::from_ints({3}, {-3, 0, 1}, DType::Int32)}, &dtypes);
  EXPECT_EQ(dtypes, (std::vector<DType>{DType::Float32, DType::Int32, DType::Float32, DType::Int32,
                                        DType::Bool, DType::Bool}));
  const std::vector<double> want = {-1.5, 0, 0.5, -1, 2, 3, -1.5, 0, 0.5,
                                    -2,   0, 0,   1,  0, 1, 1,    1, 1};
  ASSERT_EQ(v.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(v[i], want[i], 1e-6) << i;
}

}  // namespace
}  // namespace graphcore
