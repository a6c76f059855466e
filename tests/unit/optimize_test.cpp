// The optimization layer (graphcore/optimize.h): each pass on small hand-built graphs, the dump
// hook and bad input; then every corpus model on a CPU and an Ascend target: every semantic op
// is covered exactly once (or removed as dead code), graph outputs keep their types, execution
// order is topological and no two simultaneously live tensors overlap in the arena.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "graphcore/analysis.h"
#include "graphcore/optimize.h"

namespace graphcore {
namespace {

namespace fs = std::filesystem;

// Builds a CellReport's semantic graph by hand.
struct Builder {
  CellReport rep;
  Builder() {
    rep.name = "Net";
    rep.compiled = true;
  }
  uint32_t add(NodeKind kind, std::string id, std::string op, std::vector<uint32_t> inputs,
               std::vector<int64_t> shape) {
    Node n;
    n.id = std::move(id);
    n.kind = kind;
    n.op = op;
    for (uint32_t i : inputs) n.inputs.push_back(ValueRef{i, 0});
    n.outputs.push_back(TensorType{Shape::of(shape), DType::Float32});
    rep.graph.nodes.push_back(std::move(n));
    return static_cast<uint32_t>(rep.graph.nodes.size() - 1);
  }
  uint32_t input(std::string id, std::vector<int64_t> shape) {
    return add(NodeKind::Input, std::move(id), "Input", {}, std::move(shape));
  }
  uint32_t constant(std::string id, std::vector<int64_t> shape) {
    return add(NodeKind::Constant, std::move(id), "Constant", {}, std::move(shape));
  }
  uint32_t param(std::string id, std::vector<int64_t> shape) {
    return add(NodeKind::Parameter, std::move(id), "Parameter", {}, std::move(shape));
  }
  uint32_t op(std::string id, std::string op, std::vector<uint32_t> inputs,
              std::vector<int64_t> shape) {
    return add(NodeKind::Op, std::move(id), std::move(op), std::move(inputs), std::move(shape));
  }
  // An op reading weights (a layer), e.g. Conv2D or nn.Dense's MatMul.
  uint32_t layer(std::string id, std::string op, std::vector<uint32_t> inputs,
                 std::vector<int64_t> shape, std::vector<Attr> attrs = {}) {
    const uint32_t n = this->op(id, std::move(op), std::move(inputs), std::move(shape));
    rep.graph.nodes[n].params = {id + ".weight"};
    rep.graph.nodes[n].attrs = std::move(attrs);
    rep.params.push_back(ParamInfo{id + ".weight", Shape::of({16, 16}), DType::Float32, true});
    return n;
  }
  void output(uint32_t n) { rep.graph.outputs.push_back(ValueRef{n, 0}); }

  OptimizedGraph run(std::vector<std::string> passes, std::string target = "cpu") {
    OptimizeOptions o;
    o.target = std::move(target);
    o.passes = std::move(passes);
    return optimize(rep, o);
  }
};

const OptNode* find(const OptimizedGraph& g, std::string_view id) {
  for (const auto& n : g.nodes) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

std::vector<std::string> origin_ids(const CellReport& rep, const OptNode& n) {
  std::vector<std::string> out;
  for (uint32_t o : n.origins) out.push_back(rep.graph.nodes[o].id);
  return out;
}

const FusionDecision* decision_with(const OptimizedGraph& g, bool fused, std::string_view text) {
  for (const auto& d : g.decisions) {
    if (d.fused == fused && d.reason.find(text) != std::string::npos) return &d;
  }
  return nullptr;
}

// --- dead-code elimination -----------------------------------------------------------------

TEST(OptimizeDce, DropsDeadChainsAndKeepsInputs) {
  Builder b;
  const uint32_t x = b.input("x", {1, 8});
  const uint32_t relu = b.op("relu", "ReLU", {x}, {1, 8});
  const uint32_t dead1 = b.op("exp", "Exp", {relu}, {1, 8});
  b.op("neg", "Neg", {dead1}, {1, 8});  // never used
  b.constant("unused_const", {8});
  b.output(relu);
  const auto g = b.run({"dce"});
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].id, "x");
  EXPECT_EQ(g.nodes[1].id, "relu");
  std::map<std::string, std::string> removed;
  for (const auto& r : g.removed) removed[b.rep.graph.nodes[r.node].id] = r.reason;
  ASSERT_EQ(removed.size(), 3u);
  EXPECT_NE(removed["neg"].find("unused-result"), std::string::npos);
  EXPECT_NE(removed["exp"].find("only feeds dead code (`neg`)"), std::string::npos);
  EXPECT_NE(removed["unused_const"].find("never read"), std::string::npos);
  EXPECT_EQ(g.passes.at(0).changes, 3u);
}

// The ops DCE drops for being unused are the ones the unused-result warning reports.
TEST(OptimizeDce, MatchesUnusedResultWarnings) {
  const fs::path dir = fs::temp_directory_path() / "cellscope_dce_test";
  fs::create_directories(dir);
  const fs::path file = dir / "dead.py";
  std::ofstream(file) << R"(import mindspore.nn as nn
import mindspore.ops as ops


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(8, 4)
        self.relu = nn.ReLU()

    def construct(self, x):
        y = self.fc(x)
        z = self.relu(y)
        ops.exp(ops.neg(z))
        ops.sigmoid(y)
        return z
)";
  AnalysisOptions options;
  options.inputs.push_back(TensorType{Shape::of({2, 8}), DType::Float32});
  DiskSourceProvider disk;
  const auto result = analyze_file(file, options, disk);
  ASSERT_EQ(result.cells.size(), 1u);
  std::set<uint32_t> warned_lines;
  for (const auto& d : result.diagnostics) {
    if (d.code == "unused-result") warned_lines.insert(d.range.start.line);
  }
  ASSERT_EQ(warned_lines.size(), 2u);
  OptimizeOptions o;
  o.passes = {"dce"};
  const auto g = optimize(result.cells[0], o);
  std::set<uint32_t> unused_lines;
  size_t chain = 0;
  for (const auto& r : g.removed) {
    const Node& n = result.cells[0].graph.nodes[r.node];
    if (r.reason.find("unused-result") != std::string::npos) {
      unused_lines.insert(n.range.start.line);
    } else {
      ++chain;
    }
  }
  EXPECT_EQ(unused_lines, warned_lines);
  EXPECT_EQ(chain, 1u);  // ops.neg, feeding the unused ops.exp
  fs::remove_all(dir);
}

// --- constant folding ----------------------------------------------------------------------

TEST(OptimizeConstantFold, FoldsConstantSubgraphsOnly) {
  Builder b;
  const uint32_t x = b.input("x", {1, 128});
  const uint32_t range = b.op("Range", "Range", {}, {128});
  const uint32_t reshape = b.op("Reshape", "Reshape", {range}, {1, 128});
  const uint32_t add = b.op("Add", "Add", {x, reshape}, {1, 128});
  const uint32_t zeros = b.op("ZerosLike", "ZerosLike", {x}, {1, 128});
  const uint32_t add2 = b.op("Add2", "Add", {add, zeros}, {1, 128});
  const uint32_t c = b.constant("c", {1, 128});
  const uint32_t drop = b.op("drop", "Dropout", {c}, {1, 128});        // random: kept
  const uint32_t emb = b.layer("emb", "Gather", {reshape}, {1, 128});  // reads weights: kept
  (void)emb;
  const uint32_t out = b.op("Add3", "Add", {add2, drop}, {1, 128});
  b.output(out);
  b.output(emb);
  const auto g = b.run({"constant-fold"});
  const OptNode* folded = find(g, "const/Reshape");
  ASSERT_NE(folded, nullptr);
  EXPECT_EQ(folded->kind, NodeKind::Constant);
  EXPECT_EQ(folded->pass, "constant-fold");
  // Range was read only by Reshape: absorbed.
  EXPECT_EQ(origin_ids(b.rep, *folded), (std::vector<std::string>{"Reshape", "Range"}));
  EXPECT_EQ(find(g, "Range"), nullptr);
  EXPECT_EQ(find(g, "const/Range"), nullptr);
  ASSERT_NE(find(g, "const/ZerosLike"), nullptr);
  EXPECT_TRUE(find(g, "const/ZerosLike")->inputs.empty());
  EXPECT_NE(find(g, "drop"), nullptr);
  EXPECT_NE(find(g, "emb"), nullptr);
  EXPECT_NE(find(g, "Add"), nullptr);
  EXPECT_NE(find(g, "c"), nullptr);  // still read by the Dropout
}

// --- conv / dense ----------------------------------------------------------------------------

TEST(OptimizeFuseConv, ConvBatchNormReluIsOneKernel) {
  Builder b;
  const uint32_t x = b.input("x", {1, 3, 8, 8});
  const uint32_t conv = b.layer("conv", "Conv2D", {x}, {1, 16, 8, 8});
  const uint32_t bn = b.layer("bn", "BatchNorm", {conv}, {1, 16, 8, 8});
  const uint32_t relu = b.op("relu", "ReLU", {bn}, {1, 16, 8, 8});
  const uint32_t pool = b.op("pool", "MaxPool", {relu}, {1, 16, 4, 4});
  b.output(pool);
  const auto g = b.run({"fuse-conv"});
  const OptNode* k = find(g, "conv/conv");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->op, "FusedConv2D");
  EXPECT_EQ(k->pattern, "conv");
  EXPECT_EQ(origin_ids(b.rep, *k), (std::vector<std::string>{"conv", "bn", "relu"}));
  EXPECT_EQ(k->params, (std::vector<std::string>{"conv.weight", "bn.weight"}));
  ASSERT_EQ(k->inputs.size(), 1u);
  EXPECT_EQ(g.nodes[k->inputs[0].node].id, "x");
  EXPECT_EQ(g.nodes.size(), 3u);
  const auto* d = decision_with(g, true, "Conv2D + BatchNorm + ReLU");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->kernel, "conv/conv");
}

TEST(OptimizeFuseConv, ReluNotFusedWhenTheIntermediateIsReadElsewhere) {
  Builder b;
  const uint32_t x = b.input("x", {1, 16, 8, 8});
  const uint32_t conv = b.layer("conv", "Conv2D", {x}, {1, 16, 8, 8});
  const uint32_t relu = b.op("relu", "ReLU", {conv}, {1, 16, 8, 8});
  const uint32_t add = b.op("add", "Add", {conv, relu}, {1, 16, 8, 8});
  b.output(add);
  const auto g = b.run({"fuse-conv"});
  EXPECT_NE(find(g, "conv"), nullptr);  // left alone
  const auto* d = decision_with(g, false, "ReLU `relu` not fused into Conv2D `conv`");
  ASSERT_NE(d, nullptr) << (g.decisions.empty() ? "" : g.decisions[0].reason);
  EXPECT_NE(d->reason.find("`add`"), std::string::npos) << d->reason;
  EXPECT_NE(decision_with(g, false, "Conv2D `conv` left alone"), nullptr);
}

TEST(OptimizeFuseConv, ResidualAddAndReluFuseIntoTheConvThatRunsLast) {
  // A bottleneck's tail: conv + BN, then Add with a shortcut computed earlier (a projection conv
  // + BN), then ReLU. The later conv's kernel reads the shortcut in its epilogue; the projection
  // conv cannot take the Add (its other operand is computed after it).
  Builder b;
  const uint32_t x = b.input("x", {1, 16, 8, 8});
  const uint32_t proj = b.layer("proj", "Conv2D", {x}, {1, 32, 8, 8});
  const uint32_t pbn = b.layer("pbn", "BatchNorm", {proj}, {1, 32, 8, 8});
  const uint32_t conv = b.layer("conv", "Conv2D", {x}, {1, 32, 8, 8});
  const uint32_t bn = b.layer("bn", "BatchNorm", {conv}, {1, 32, 8, 8});
  const uint32_t add = b.op("add", "Add", {bn, pbn}, {1, 32, 8, 8});
  const uint32_t relu = b.op("relu", "ReLU", {add}, {1, 32, 8, 8});
  b.output(relu);
  const auto g = b.run({"fuse-conv"});
  const OptNode* k = find(g, "conv/conv");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(origin_ids(b.rep, *k), (std::vector<std::string>{"conv", "bn", "add", "relu"}));
  ASSERT_EQ(k->inputs.size(), 2u);
  EXPECT_EQ(g.nodes[k->inputs[0].node].id, "x");
  EXPECT_EQ(g.nodes[k->inputs[1].node].id, "conv/proj");
  const auto* d = decision_with(g, true, "Conv2D + BatchNorm + Add + ReLU");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->reason.find("residual Add: the epilogue reads the shortcut `pbn`"),
            std::string::npos)
      << d->reason;
  const OptNode* p = find(g, "conv/proj");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(origin_ids(b.rep, *p), (std::vector<std::string>{"proj", "pbn"}));
}

TEST(OptimizeFuseConv, AnAddThatBroadcastsIsNotAResidual) {
  Builder b;
  const uint32_t x = b.input("x", {1, 16, 8, 8});
  const uint32_t y = b.input("y", {1, 16, 1, 1});
  const uint32_t conv = b.layer("conv", "Conv2D", {x}, {1, 16, 8, 8});
  const uint32_t add = b.op("add", "Add", {conv, y}, {1, 16, 8, 8});  // broadcasts
  const uint32_t conv2 = b.layer("conv2", "Conv2D", {add}, {1, 16, 8, 8});
  const uint32_t add2 = b.op("add2", "Add", {conv2, x}, {1, 16, 8, 8});
  const uint32_t mul = b.op("mul", "Mul", {add2, add2}, {1, 16, 8, 8});
  b.output(mul);
  b.output(add2);
  const auto g = b.run({"fuse-conv"});
  EXPECT_NE(find(g, "conv"), nullptr);  // left alone
  EXPECT_NE(find(g, "add"), nullptr);
  const auto* d = decision_with(g, false, "Conv2D `conv` left alone");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->reason.find("is not a residual Add"), std::string::npos) << d->reason;
  // A graph input of the output's shape is a valid shortcut; the sum may have other readers.
  const OptNode* k2 = find(g, "conv/conv2");
  ASSERT_NE(k2, nullptr);
  EXPECT_EQ(origin_ids(b.rep, *k2), (std::vector<std::string>{"conv2", "add2"}));
}

TEST(OptimizeFuseDense, MatMulBiasActivation) {
  Builder b;
  const uint32_t x = b.input("x", {4, 16});
  const uint32_t fc = b.layer("fc", "MatMul", {x}, {4, 16});
  const uint32_t bias = b.param("bias", {16});
  const uint32_t add = b.op("bias_add", "Add", {fc, bias}, {4, 16});
  const uint32_t act = b.op("gelu", "GeLU", {add}, {4, 16});
  const uint32_t y = b.input("y", {16, 4});
  const uint32_t mm = b.op("mm", "MatMul", {act, y}, {4, 4});  // no weights: not a candidate
  b.output(mm);
  const auto g = b.run({"fuse-dense"});
  const OptNode* k = find(g, "dense/fc");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->op, "FusedMatMul");
  EXPECT_EQ(origin_ids(b.rep, *k), (std::vector<std::string>{"fc", "bias_add", "gelu"}));
  ASSERT_EQ(k->inputs.size(), 2u);  // x and the bias Parameter
  EXPECT_NE(find(g, "mm"), nullptr);
  EXPECT_EQ(g.decisions.size(), 1u);
}

TEST(OptimizeFuseDense, DenseWithBiasSkipsTheBiasStage) {
  Builder b;
  const uint32_t x = b.input("x", {4, 16});
  const uint32_t fc = b.layer("fc", "MatMul", {x}, {4, 16}, {Attr{"has_bias", true}});
  const uint32_t relu = b.op("relu", "ReLU", {fc}, {4, 16});
  b.output(relu);
  const auto g = b.run({"fuse-dense"});
  ASSERT_NE(find(g, "dense/fc"), nullptr);
  EXPECT_EQ(g.nodes.size(), 2u);
}

// --- attention ----------------------------------------------------------------------------

struct Attention {
  Builder b;
  uint32_t q, k, v, mask, scores, scale, add, softmax, drop, ctx;
  Attention() {
    q = b.input("q", {1, 12, 128, 64});
    k = b.input("k", {1, 12, 128, 64});
    v = b.input("v", {1, 12, 128, 64});
    mask = b.input("mask", {1, 1, 1, 128});
    scores = b.op("scores", "BatchMatMul", {q, k}, {1, 12, 128, 128});
    scale = b.op("scale", "Mul", {scores}, {1, 12, 128, 128});
    add = b.op("mask_add", "Add", {scale, mask}, {1, 12, 128, 128});
    softmax = b.op("softmax", "Softmax", {add}, {1, 12, 128, 128});
    drop = b.op("drop", "Dropout", {softmax}, {1, 12, 128, 128});
    ctx = b.op("context", "BatchMatMul", {drop, v}, {1, 12, 128, 64});
  }
};

TEST(OptimizeFuseAttention, WholePatternIsOneKernel) {
  Attention a;
  a.b.output(a.ctx);
  const auto g = a.b.run({"fuse-attention"});
  const OptNode* k = find(g, "attention/scores");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->op, "FusedAttention");
  EXPECT_EQ(origin_ids(a.b.rep, *k), (std::vector<std::string>{"scores", "scale", "mask_add",
                                                               "softmax", "drop", "context"}));
  std::vector<std::string> inputs;
  for (const auto& r : k->inputs) inputs.push_back(g.nodes[r.node].id);
  EXPECT_EQ(inputs, (std::vector<std::string>{"q", "k", "mask", "v"}));
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.nodes[g.outputs[0].node].id, "attention/scores");
  EXPECT_NE(decision_with(g, true, "stays on chip"), nullptr);
}

TEST(OptimizeFuseAttention, ScoresReadElsewhereAreNotFused) {
  Attention a;
  a.b.output(a.ctx);
  a.b.output(a.scores);  // the scores are also returned
  const auto g = a.b.run({"fuse-attention"});
  EXPECT_EQ(find(g, "attention/scores"), nullptr);
  const auto* d = decision_with(g, false, "Softmax `softmax` not fused");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->reason.find("graph output"), std::string::npos) << d->reason;
}

TEST(OptimizeFuseAttention, OnlyTargetsWithAnAttentionKernelFuseIt) {
  // Ascend 910 (Atlas training products) has neither FlashAttentionScore nor
  // PromptFlashAttention; 910B and 310P have one; the 310 has none.
  for (const auto& [target, fused] : std::vector<std::pair<std::string, bool>>{{"ascend910", false},
                                                                               {"ascend910b", true},
                                                                               {"ascend310p", true},
                                                                               {"ascend310", false},
                                                                               {"cpu", true}}) {
    Attention a;
    a.b.output(a.ctx);
    const auto g = a.b.run({"fuse-attention"}, target);
    EXPECT_EQ(find(g, "attention/scores") != nullptr, fused) << target;
    if (!fused) {
      const auto* d = decision_with(g, false, "has no fused attention kernel");
      ASSERT_NE(d, nullptr) << target;
      EXPECT_NE(d->reason.find("CANN"), std::string::npos) << d->reason;
    }
  }
}

// --- LayerNorm -----------------------------------------------------------------------------

TEST(OptimizeFuseLayerNorm, DecomposedLayerNormIsOneKernel) {
  Builder b;
  const uint32_t x = b.input("x", {2, 16});
  const uint32_t mean = b.op("mean", "ReduceMean", {x}, {2, 1});
  const uint32_t d = b.op("centred", "Sub", {x, mean}, {2, 16});
  const uint32_t sq = b.op("sq", "Square", {d}, {2, 16});
  const uint32_t var = b.op("var", "ReduceMean", {sq}, {2, 1});
  const uint32_t eps = b.op("eps", "Add", {var}, {2, 1});
  const uint32_t sd = b.op("sd", "Sqrt", {eps}, {2, 1});
  const uint32_t y = b.op("norm", "Div", {d, sd}, {2, 16});
  const uint32_t gamma = b.param("gamma", {16});
  const uint32_t scaled = b.op("scaled", "Mul", {y, gamma}, {2, 16});
  const uint32_t relu = b.op("relu", "ReLU", {scaled}, {2, 16});
  b.output(relu);
  const auto g = b.run({"fuse-layernorm"});
  const OptNode* k = find(g, "layernorm/mean");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->op, "LayerNorm");
  EXPECT_EQ(k->origins.size(), 8u);
  EXPECT_NE(find(g, "relu"), nullptr);
}

TEST(OptimizeFuseLayerNorm, ResidualAddLayerNorm) {
  Builder b;
  const uint32_t x = b.input("x", {1, 8, 16});
  const uint32_t h = b.input("h", {1, 8, 16});
  const uint32_t add = b.op("add", "Add", {x, h}, {1, 8, 16});
  const uint32_t ln = b.layer("ln", "LayerNorm", {add}, {1, 8, 16});
  const uint32_t bias = b.input("bias", {16});
  const uint32_t add2 = b.op("add2", "Add", {ln, bias}, {1, 8, 16});  // broadcasts
  const uint32_t ln2 = b.layer("ln2", "LayerNorm", {add2}, {1, 8, 16});
  b.output(ln2);
  const auto g = b.run({"fuse-layernorm"});
  const OptNode* k = find(g, "add-layernorm/add");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->op, "AddLayerNorm");
  EXPECT_NE(find(g, "ln2"), nullptr);
  EXPECT_NE(decision_with(g, false, "it broadcasts"), nullptr);
}

// --- elementwise -----------------------------------------------------------------------------

TEST(OptimizeFuseElementwise, ChainsAndCuts) {
  Builder b;
  const uint32_t x = b.input("x", {4, 8});
  const uint32_t y = b.input("y", {4, 8});
  const uint32_t add = b.op("add", "Add", {x, y}, {4, 8});
  const uint32_t relu = b.op("relu", "ReLU", {add}, {4, 8});
  const uint32_t mul = b.op("mul", "Mul", {relu, x}, {4, 8});
  const uint32_t exp = b.op("exp", "Exp", {mul}, {4, 8});
  const uint32_t neg = b.op("neg", "Neg", {mul}, {4, 8});
  const uint32_t sub = b.op("sub", "Sub", {exp, neg}, {4, 8});
  b.output(sub);
  const auto g = b.run({"fuse-elementwise"});
  const OptNode* k = find(g, "elementwise/add");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(origin_ids(b.rep, *k), (std::vector<std::string>{"add", "relu", "mul"}));
  // `mul` feeds two ops: exp and neg start chains of their own; sub continues exp's.
  const OptNode* k2 = find(g, "elementwise/exp");
  ASSERT_NE(k2, nullptr);
  EXPECT_EQ(origin_ids(b.rep, *k2), (std::vector<std::string>{"exp", "sub"}));
  EXPECT_NE(find(g, "neg"), nullptr);
  EXPECT_NE(decision_with(g, false, "Exp `exp` not fused with `mul`"), nullptr);
}

// --- layout --------------------------------------------------------------------------------

TEST(OptimizeLayout, AscendFormatsAndTransData) {
  Builder b;
  const uint32_t x = b.input("x", {1, 3, 8, 8});
  const uint32_t conv = b.layer("conv", "Conv2D", {x}, {1, 16, 8, 8});
  const uint32_t relu = b.op("relu", "ReLU", {conv}, {1, 16, 8, 8});
  const uint32_t flat = b.op("flat", "Flatten", {relu}, {1, 1024});
  const uint32_t fc = b.layer("fc", "MatMul", {flat}, {1, 10});
  b.output(fc);
  const auto g = b.run({"layout"}, "ascend910b");
  std::vector<std::string> ids;
  for (const auto& n : g.nodes) ids.push_back(n.id);
  EXPECT_EQ(ids, (std::vector<std::string>{
                     "x", "TransData/x:0/NC1HWC0", "conv", "relu", "TransData/relu:0/NCHW", "flat",
                     "TransData/flat:0/FRACTAL_NZ", "fc", "TransData/fc:0/ND"}));
  EXPECT_EQ(find(g, "conv")->formats[0], Format::NC1HWC0);
  EXPECT_EQ(find(g, "relu")->formats[0], Format::NC1HWC0);  // follows the conv
  EXPECT_EQ(find(g, "fc")->formats[0], Format::FRACTAL_NZ);
  EXPECT_TRUE(find(g, "TransData/x:0/NC1HWC0")->origins.empty());
  EXPECT_EQ(g.nodes[g.outputs[0].node].formats[0], Format::ND);
  // CPU: no layout pass at all.
  const auto cpu = b.run({"layout"}, "cpu");
  EXPECT_EQ(cpu.nodes.size(), b.rep.graph.nodes.size());
  EXPECT_TRUE(cpu.passes.empty());
}

TEST(OptimizeLayout, PaddedSizes) {
  const TensorType t{Shape::of({1, 3, 8, 8}), DType::Float32};
  EXPECT_EQ(tensor_bytes(t, Format::NCHW), 1u * 3 * 8 * 8 * 4);
  EXPECT_EQ(tensor_bytes(t, Format::NC1HWC0), 1u * 16 * 8 * 8 * 4);  // C padded to C0 = 16
  const TensorType m{Shape::of({2, 20, 30}), DType::Float16};
  EXPECT_EQ(tensor_bytes(m, Format::FRACTAL_NZ), 2u * 32 * 32 * 2);
  const TensorType sym{Shape({Dim::symbol("N"), Dim::known(3)}), DType::Float32};
  EXPECT_FALSE(tensor_bytes(sym, Format::ND).has_value());
}

// --- amp (mixed precision) -----------------------------------------------------------------------

const OptNode* producer_of(const OptimizedGraph& g, const OptNode& n, size_t slot = 0) {
  return &g.nodes[n.inputs.at(slot).node];
}

TEST(OptimizeAmp, O2ListsFloat16KernelsFloat32NormsAndCastsBetween) {
  Builder b;
  const uint32_t x = b.input("x", {8, 32});
  const uint32_t fc = b.layer("fc", "MatMul", {x}, {8, 32});
  const uint32_t ln = b.op("ln", "LayerNorm", {fc}, {8, 32});
  const uint32_t sm = b.op("sm", "Softmax", {ln}, {8, 32});
  b.output(sm);
  const auto g = b.run({"amp"}, "ascend910");
  EXPECT_EQ(g.precision, "mixed");
  ASSERT_EQ(g.passes.size(), 1u);
  EXPECT_EQ(g.passes[0].changes, 4u);  // x -> fp16, fc -> fp32, ln -> fp16, output -> fp32
  // MatMul (AMP_WHITE_LIST territory) and Softmax run in float16; LayerNorm (AMP_BLACK_LIST) in
  // float32.
  EXPECT_EQ(find(g, "fc")->outputs[0].dtype, DType::Float16);
  EXPECT_EQ(find(g, "ln")->outputs[0].dtype, DType::Float32);
  EXPECT_EQ(find(g, "sm")->outputs[0].dtype, DType::Float16);
  // The fp32 data input is cast for the fp16 MatMul; LayerNorm's operand to fp32 and back.
  const OptNode* c0 = producer_of(g, *find(g, "fc"));
  EXPECT_EQ(c0->id, "Cast/x:0/float16");
  EXPECT_EQ(c0->pass, "amp");
  EXPECT_TRUE(c0->origins.empty());
  EXPECT_EQ(producer_of(g, *find(g, "ln"))->id, "Cast/fc:0/float32");
  EXPECT_EQ(producer_of(g, *find(g, "sm"))->id, "Cast/ln:0/float16");
  // The output leaves in its semantic dtype (_OutputTo32).
  const OptNode& out = g.nodes[g.outputs[0].node];
  EXPECT_EQ(out.id, "Cast/sm:0/float32");
  EXPECT_EQ(out.outputs[0].dtype, DType::Float32);
  // Weights are read as their fp16 copy: no Cast of a Parameter.
  for (const auto& n : g.nodes) {
    if (n.op == "Cast") {
      EXPECT_NE(g.nodes[n.inputs[0].node].kind, NodeKind::Parameter);
    }
  }

  // fp32: the pass changes nothing; CPU: it does not run.
  OptimizeOptions o;
  o.target = "ascend910";
  o.passes = {"amp"};
  o.precision = "fp32";
  const auto f = optimize(b.rep, o);
  EXPECT_EQ(f.precision, "fp32");
  EXPECT_EQ(f.nodes.size(), b.rep.graph.nodes.size());
  EXPECT_EQ(find(f, "fc")->outputs[0].dtype, DType::Float32);
  EXPECT_TRUE(b.run({"amp"}, "cpu").precision.empty());
  o.precision = "bf16";
  EXPECT_THROW(optimize(b.rep, o), std::invalid_argument);
}

TEST(OptimizeAmp, ExplicitCastsAndFoldedBatchNormKeepTheirDtypes) {
  Builder b;
  const uint32_t x = b.input("x", {1, 16, 8, 8});
  const uint32_t conv = b.layer("conv", "Conv2D", {x}, {1, 16, 8, 8});
  const uint32_t bn = b.op("bn", "BatchNorm", {conv}, {1, 16, 8, 8});
  const uint32_t cast = b.op("cast", "Cast", {bn}, {1, 16, 8, 8});
  b.output(cast);
  const auto g = b.run({"fuse-conv", "amp"}, "ascend310p");
  // conv + BatchNorm fused: the epilogue applies BN to the fp32 accumulators; fp16 output.
  const OptNode* k = find(g, "conv/conv");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->outputs[0].dtype, DType::Float16);
  // The user's ops.Cast keeps the dtype it asked for and is read as written: no amp Cast after it.
  EXPECT_EQ(find(g, "cast")->outputs[0].dtype, DType::Float32);
  EXPECT_EQ(g.nodes[g.outputs[0].node].id, "cast");
  // A standalone BatchNorm (AMP_BLACK_LIST) computes in float32.
  const auto u = b.run({"amp"}, "ascend310p");
  EXPECT_EQ(find(u, "bn")->outputs[0].dtype, DType::Float32);
  EXPECT_EQ(producer_of(u, *find(u, "bn"))->id, "Cast/conv:0/float32");
}

// --- transdata-elim
// --------------------------------------------------------------------------------

TEST(OptimizeTransDataElim, PairsAroundShapeOnlyOpsThatUndoEachOther) {
  Builder b;
  const uint32_t x = b.input("x", {1, 16, 8, 8});
  const uint32_t c1 = b.layer("c1", "Conv2D", {x}, {1, 16, 8, 8});
  const uint32_t id = b.op("id", "Identity", {c1}, {1, 16, 8, 8});
  const uint32_t c2 = b.layer("c2", "Conv2D", {id}, {1, 16, 8, 8});
  b.output(c2);
  const auto before = b.run({"layout"}, "ascend910");
  EXPECT_NE(find(before, "TransData/c1:0/NCHW"), nullptr);
  EXPECT_NE(find(before, "TransData/id:0/NC1HWC0"), nullptr);
  const auto g = b.run({"layout", "transdata-elim"}, "ascend910");
  EXPECT_EQ(find(g, "TransData/c1:0/NCHW"), nullptr);
  EXPECT_EQ(find(g, "TransData/id:0/NC1HWC0"), nullptr);
  // The Identity relabels c1's NC1HWC0 tensor, and c2 reads it.
  EXPECT_EQ(find(g, "id")->formats[0], Format::NC1HWC0);
  EXPECT_EQ(producer_of(g, *find(g, "id"))->id, "c1");
  EXPECT_EQ(producer_of(g, *find(g, "c2"))->id, "id");
  ASSERT_EQ(g.eliminated.size(), 1u);
  EXPECT_EQ(g.eliminated[0].ids,
            (std::vector<std::string>{"TransData/c1:0/NCHW", "TransData/id:0/NC1HWC0"}));
  EXPECT_EQ(g.eliminated[0].value, "c1");
  EXPECT_NE(g.eliminated[0].reason.find("undo each other around `id`"), std::string::npos)
      << g.eliminated[0].reason;
  EXPECT_EQ(g.passes.back().changes, 2u);
  EXPECT_EQ(g.nodes.size(), before.nodes.size() - 2);
}

TEST(OptimizeTransDataElim, FlattenedDenseOperandAndWhatMustStay) {
  // [96, 64] in FRACTAL_NZ -> Reshape [2, 48, 64] -> a dense MatMul that flattens it back to
  // [96, 64]: the same fractal matrix, so both conversions go.
  Builder b;
  const uint32_t x = b.input("x", {96, 64});
  const uint32_t fc1 = b.layer("fc1", "MatMul", {x}, {96, 64});
  const uint32_t r = b.op("r", "Reshape", {fc1}, {2, 48, 64});
  const uint32_t fc2 = b.layer("fc2", "MatMul", {r}, {2, 48, 64});
  b.output(fc2);
  const auto g = b.run({"layout", "transdata-elim"}, "ascend910b");
  ASSERT_EQ(g.eliminated.size(), 1u);
  EXPECT_NE(g.eliminated[0].reason.find("dense matmul"), std::string::npos);
  EXPECT_EQ(find(g, "r")->formats[0], Format::FRACTAL_NZ);
  EXPECT_EQ(producer_of(g, *find(g, "fc2"))->id, "r");

  // A batched reader (a Softmax over the last axis, which follows FRACTAL_NZ) sees a different
  // fractal layout of [2, 48, 64] than [96, 64]: the conversions stay.
  Builder c;
  const uint32_t y = c.input("y", {96, 64});
  const uint32_t d1 = c.layer("d1", "MatMul", {y}, {96, 64});
  const uint32_t rr = c.op("rr", "Reshape", {d1}, {2, 48, 64});
  const uint32_t bmm = c.op("bmm", "BatchMatMul", {rr, rr}, {2, 48, 48});
  c.output(bmm);
  const auto h = c.run({"layout", "transdata-elim"}, "ascend910b");
  EXPECT_TRUE(h.eliminated.empty());
  EXPECT_NE(find(h, "TransData/d1:0/ND"), nullptr);
  EXPECT_NE(find(h, "TransData/rr:0/FRACTAL_NZ"), nullptr);
  // The pass runs only on Ascend targets.
  EXPECT_TRUE(b.run({"layout", "transdata-elim"}, "cpu").passes.empty());
}

// --- memory planning ---------------------------------------------------------------------------

void expect_no_overlap(const OptimizedGraph& g) {
  const auto& ts = g.memory.tensors;
  for (size_t i = 0; i < ts.size(); ++i) {
    if (ts[i].size == 0) continue;
    EXPECT_EQ(ts[i].offset % g.memory.alignment, 0u);
    EXPECT_LE(ts[i].offset + ts[i].size, g.memory.peak);
    for (size_t j = i + 1; j < ts.size(); ++j) {
      if (ts[j].size == 0) continue;
      const bool live_together = ts[i].first <= ts[j].last && ts[j].first <= ts[i].last;
      const bool bytes_overlap =
          ts[i].offset < ts[j].offset + ts[j].size && ts[j].offset < ts[i].offset + ts[i].size;
      EXPECT_FALSE(live_together && bytes_overlap)
          << g.nodes[ts[i].node].id << " and " << g.nodes[ts[j].node].id;
    }
  }
}

TEST(OptimizeMemoryPlan, ReusesDeadBuffers) {
  Builder b;
  uint32_t cur = b.input("x", {1, 1000});  // 4000 bytes -> 4000 (32-aligned)
  for (int i = 0; i < 6; ++i) cur = b.op("relu" + std::to_string(i), "ReLU", {cur}, {1, 1000});
  const uint32_t w = b.param("w", {1000, 10});
  const uint32_t fc = b.op("fc", "MatMul", {cur, w}, {1, 10});
  b.output(fc);
  b.rep.params.push_back(ParamInfo{"w", Shape::of({1000, 10}), DType::Float32, true});
  const auto g = b.run({"memory-plan"});
  const auto& m = g.memory;
  ASSERT_TRUE(m.planned);
  EXPECT_EQ(m.alignment, 32u);
  EXPECT_EQ(m.tensors.size(), 8u);  // x, 6 ReLUs, fc; the Parameter is not in the arena
  EXPECT_EQ(m.naive, 7u * 4000 + 64);
  // Ping-pong between two buffers; the result reuses the one the last ReLU does not hold.
  EXPECT_EQ(m.peak, 2u * 4000);
  EXPECT_EQ(m.lower_bound, 2u * 4000);
  ASSERT_EQ(m.buffers.size(), 2u);
  EXPECT_EQ(m.buffers[0].tensors.size() + m.buffers[1].tensors.size(), 8u);
  EXPECT_EQ(m.weight_bytes, 40000u);
  expect_no_overlap(g);
  // The graph output stays live to the end.
  EXPECT_EQ(m.tensors.back().last, g.nodes.size());
}

TEST(OptimizeMemoryPlan, AscendAlignmentAndUnknownSizes) {
  Builder b;
  const uint32_t x = b.input("x", {1, 10});
  const uint32_t relu = b.op("relu", "ReLU", {x}, {1, 10});
  Node n;
  n.id = "dyn";
  n.op = "Reshape";
  n.inputs = {ValueRef{relu, 0}};
  n.outputs = {TensorType{Shape({Dim::symbol("N")}), DType::Float32}};
  b.rep.graph.nodes.push_back(n);
  b.output(2);
  const auto g = b.run({"memory-plan"}, "ascend310p");
  EXPECT_EQ(g.memory.alignment, 512u);
  EXPECT_EQ(g.memory.unsized, (std::vector<std::string>{"dyn:0"}));
  EXPECT_EQ(g.memory.naive, 1024u);
}

// --- the pass manager ------------------------------------------------------------------------

TEST(OptimizePassManager, DumpsAfterImportAndEachPass) {
  Attention a;
  a.b.output(a.ctx);
  std::vector<std::pair<std::string, size_t>> dumps;
  OptimizeOptions o;
  o.target = "ascend910";
  o.dump = [&](std::string_view pass, size_t index, const OptimizedGraph& g) {
    dumps.emplace_back(std::string(pass), g.nodes.size());
    EXPECT_EQ(index + 1, dumps.size());
  };
  const auto g = optimize(a.b.rep, o);
  // Every pass but the parallel-only one (comm: a single-device program has no communication,
  // and the pass leaves no record).
  std::vector<std::string> names{"import"};
  for (auto p : pass_names()) {
    if (p != "comm") names.emplace_back(p);
  }
  ASSERT_EQ(names.size(), pass_names().size());
  ASSERT_EQ(dumps.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(dumps[i].first, names[i]);
  EXPECT_EQ(g.passes.size(), names.size() - 1);
  // Without the Ascend-only passes (amp, layout, transdata-elim) on CPU.
  o.target = "cpu";
  dumps.clear();
  optimize(a.b.rep, o);
  EXPECT_EQ(dumps.size(), names.size() - 3);
}

TEST(OptimizePassManager, BadInput) {
  Builder b;
  b.output(b.input("x", {1}));
  OptimizeOptions o;
  o.target = "tpu";
  try {
    optimize(b.rep, o);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown target 'tpu'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("ascend910b"), std::string::npos);
  }
  o.target = "cpu";
  o.passes = {"fuse-everything"};
  EXPECT_THROW(optimize(b.rep, o), std::invalid_argument);
  o.passes.clear();
  b.rep.compiled = false;
  EXPECT_THROW(optimize(b.rep, o), std::invalid_argument);
}

// --- the corpus --------------------------------------------------------------------------------

struct CorpusModel {
  std::string file;
  std::string cell;
  std::vector<TensorType> inputs;
};

std::vector<CorpusModel> corpus_models() {
  const fs::path dir = CELLSCOPE_CORPUS_DIR;
  std::ifstream in(dir / "manifest.json");
  const auto manifest = nlohmann::json::parse(in);
  std::vector<CorpusModel> out;
  for (const auto& m : manifest["models"]) {
    CorpusModel c;
    c.file = (dir / m["file"].get<std::string>()).string();
    c.cell = m["cell"].get<std::string>();
    for (const auto& i : m["inputs"]) {
      std::string spec;
      for (const auto& d : i["shape"])
        spec += (spec.empty() ? "" : ",") + std::to_string(d.get<int64_t>());
      spec += ":" + i["dtype"].get<std::string>();
      std::string why;
      auto t = parse_input_spec(spec, &why);
      if (!t) throw std::runtime_error("bad manifest input " + spec + ": " + why);
      c.inputs.push_back(*t);
    }
    out.push_back(std::move(c));
  }
  return out;
}

TEST(OptimizeCorpus, SemanticsPreservedOnEveryModel) {
  const auto models = corpus_models();
  ASSERT_GE(models.size(), 9u);
  for (const auto& model : models) {
    AnalysisOptions options;
    if (model.cell.find('(') != std::string::npos) {
      options.entries = {model.cell};
    } else {
      options.cell = model.cell;
    }
    options.inputs = model.inputs;
    DiskSourceProvider disk;
    const auto result = analyze_file(model.file, options, disk);
    ASSERT_EQ(result.cells.size(), 1u) << model.file;
    const CellReport& rep = result.cells[0];
    ASSERT_TRUE(rep.compiled) << model.file;
    for (const std::string target : {"cpu", "ascend910"}) {
      SCOPED_TRACE(model.file + " on " + target);
      OptimizeOptions o;
      o.target = target;
      const auto g = optimize(rep, o);
      // Every semantic op: in exactly one node's origins, or removed.
      std::vector<int> covered(rep.graph.nodes.size(), 0);
      for (const auto& n : g.nodes) {
        for (uint32_t origin : n.origins) ++covered[origin];
      }
      for (const auto& r : g.removed) ++covered[r.node];
      for (size_t i = 0; i < rep.graph.nodes.size(); ++i) {
        if (rep.graph.nodes[i].kind != NodeKind::Op) continue;
        EXPECT_EQ(covered[i], 1) << rep.graph.nodes[i].id;
      }
      // Graph outputs keep their types (and the default format).
      ASSERT_EQ(g.outputs.size(), rep.graph.outputs.size());
      for (size_t i = 0; i < g.outputs.size(); ++i) {
        const auto& sem = rep.graph.outputs[i];
        const OptNode& n = g.nodes[g.outputs[i].node];
        EXPECT_EQ(n.outputs[g.outputs[i].output], rep.graph.nodes[sem.node].outputs[sem.output]);
        EXPECT_EQ(n.formats[g.outputs[i].output],
                  default_format(n.outputs[g.outputs[i].output].shape.rank()));
      }
      // Execution order is topological; one format per output.
      std::set<std::string> ids;
      for (uint32_t i = 0; i < g.nodes.size(); ++i) {
        EXPECT_TRUE(ids.insert(g.nodes[i].id).second) << "duplicate id " << g.nodes[i].id;
        EXPECT_EQ(g.nodes[i].formats.size(), g.nodes[i].outputs.size());
        for (const auto& r : g.nodes[i].inputs) EXPECT_LT(r.node, i) << g.nodes[i].id;
      }
      // CPU keeps the framework formats.
      if (target == "cpu") {
        for (const auto& n : g.nodes) EXPECT_NE(n.op, "TransData");
      }
      // The memory plan.
      ASSERT_TRUE(g.memory.planned);
      EXPECT_TRUE(g.memory.unsized.empty());
      EXPECT_LE(g.memory.lower_bound, g.memory.peak);
      EXPECT_LE(g.memory.peak, g.memory.naive);
      EXPECT_GT(g.memory.weight_bytes, 0u);
      expect_no_overlap(g);
      // Every decision names its candidate and says why.
      for (const auto& d : g.decisions) {
        EXPECT_FALSE(d.nodes.empty());
        EXPECT_FALSE(d.reason.empty());
        EXPECT_EQ(d.fused, !d.kernel.empty()) << d.reason;
      }
    }
  }
}

}  // namespace
}  // namespace graphcore
