// The operator table (graphcore/opdef.h) against its consumers: every operator an API, the
// evaluator or a pass can produce is defined; no definition is orphaned; the runtime's kernels and
// docs/runtime.md's kernel list are the table's.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>

#include "graphcore/analysis.h"
#include "graphcore/opdef.h"
#include "graphcore/optimize.h"
#include "graphcore/registry.h"

namespace graphcore {
namespace {

// Operators an API entry emits (entries kept only to explain a mistake emit none).
std::set<std::string, std::less<>> api_ops() {
  std::set<std::string, std::less<>> ops;
  for (const auto& e : Registry::instance().entries()) {
    if (!e->replacement.empty() || !e->infer) continue;
    ops.insert(e->op);
    ops.insert(e->variants.begin(), e->variants.end());
  }
  return ops;
}

// Operators the evaluator makes itself, not through an API entry: the value of a variable after
// an `if` on a tensor (trace.cpp).
const std::set<std::string, std::less<>> kEvaluatorOps = {"Merge"};

// Operators an API emits that the CPU runtime cannot run. The list may only shrink: an operator
// that gains a kernel must leave it (the test fails), and a new operator without a kernel fails
// until it has one or is added here with the reason. Custom: ops.Custom runs a kernel the user
// supplies (a Python function, an AOT library, AKG source), which a static runtime that never
// executes user code cannot run.
const std::set<std::string, std::less<>> kNoKernelYet = {
    "Custom",
};

TEST(OpDef, TheTableIsSortedAndHasNoDuplicates) {
  auto all = all_ops();
  ASSERT_FALSE(all.empty());
  for (size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1].name, all[i].name);
  for (const OpDef& d : all) {
    EXPECT_EQ(find_op(d.name), &d) << d.name;
    EXPECT_GE(d.vector_ops, 1) << d.name;
  }
  EXPECT_EQ(find_op("NoSuchOperator"), nullptr);
}

TEST(OpDef, EveryOperatorAnApiEmitsIsDefined) {
  for (const std::string& op : api_ops()) {
    const OpDef* d = find_op(op);
    ASSERT_NE(d, nullptr) << op << " is emitted by an API but has no OpDef";
    EXPECT_FALSE(d->pass_only) << op << " is emitted by an API but marked pass-only";
  }
}

TEST(OpDef, NoDefinitionIsOrphaned) {
  const auto ops = api_ops();
  for (const OpDef& d : all_ops()) {
    // A backward operator (`<op>Grad`) is emitted by the gradient rule of the operator it
    // differentiates (graphcore/autodiff.h).
    const OpDef* forward =
        d.name.ends_with("Grad") ? find_op(d.name.substr(0, d.name.size() - 4)) : nullptr;
    const bool backward = forward != nullptr && forward->grad != nullptr;
    const bool produced = d.pass_only || d.backward || ops.contains(d.name) ||
                          kEvaluatorOps.contains(d.name) || backward;
    EXPECT_TRUE(produced) << d.name << " is defined but no API, pass or evaluator produces it";
  }
}

TEST(OpDef, EveryOperatorAnApiEmitsHasAKernelOrIsAKnownGap) {
  auto ops = api_ops();
  ops.insert(kEvaluatorOps.begin(), kEvaluatorOps.end());
  for (const std::string& op : ops) {
    const OpDef* d = find_op(op);
    ASSERT_NE(d, nullptr) << op;
    if (kNoKernelYet.contains(op)) {
      EXPECT_EQ(d->kernel, nullptr) << op << " has a kernel now: remove it from kNoKernelYet";
    } else {
      EXPECT_NE(d->kernel, nullptr) << op << " has no CPU kernel";
    }
  }
  for (const std::string& op : kNoKernelYet) EXPECT_TRUE(ops.contains(op)) << op;
}

// The operators the optimizer produces on real models are all defined, and those only a pass
// produces are marked so.
TEST(OpDef, EveryOperatorTheOptimizerProducesIsDefined) {
  const auto ops = api_ops();
  struct Model {
    const char* file;
    const char* entry;
    TensorType input;
  };
  const Model models[] = {
      {"models/resnet50.py", "resnet50()", {Shape::of({1, 3, 224, 224}), DType::Float32}},
      {"models/bert_base.py", "", {Shape::of({1, 16}), DType::Int32}},
      {"models/vit_b16.py", "", {Shape::of({1, 3, 224, 224}), DType::Float32}},
  };
  std::set<std::string> seen;
  DiskSourceProvider disk;
  for (const Model& m : models) {
    AnalysisOptions options;
    if (*m.entry) options.entries.emplace_back(m.entry);
    options.inputs.push_back(m.input);
    const AnalysisResult r =
        analyze_file(std::string(CELLSCOPE_CORPUS_DIR) + "/" + m.file, options, disk);
    ASSERT_FALSE(r.cells.empty()) << m.file;
    for (const CellReport& cell : r.cells) {
      for (const char* target : {"ascend910b", "cpu"}) {
        OptimizeOptions o;
        o.target = target;
        const OptimizedGraph g = optimize(cell, o);
        for (const auto& n : g.nodes) {
          if (n.kind == NodeKind::Op) seen.insert(n.op);
        }
      }
    }
  }
  ASSERT_FALSE(seen.empty());
  for (const std::string& op : seen) {
    const OpDef* d = find_op(op);
    ASSERT_NE(d, nullptr) << op << " is produced by the optimizer but has no OpDef";
    if (!ops.contains(op)) {
      EXPECT_TRUE(d->pass_only) << op;
    }
  }
  for (const char* fused : {"FusedConv2D", "FusedMatMul", "FusedElemwise", "TransData", "Cast"}) {
    EXPECT_TRUE(seen.contains(fused)) << fused << " was expected from these models";
  }
}

// docs/runtime.md lists the kernels between <!-- kernels:begin --> and <!-- kernels:end -->:
// exactly the operators whose definition has one.
TEST(OpDef, TheDocumentedKernelListIsTheTables) {
  std::ifstream in(std::string(CELLSCOPE_SOURCE_DIR) + "/docs/runtime.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const std::string begin = "<!-- kernels:begin -->", end = "<!-- kernels:end -->";
  const size_t b = doc.find(begin), e = doc.find(end);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(e, std::string::npos);
  std::string listed = doc.substr(b + begin.size(), e - b - begin.size());
  std::string want;
  for (const OpDef& d : all_ops()) {
    if (d.kernel == nullptr) continue;
    want += (want.empty() ? "" : ", ") + std::string(d.name);
  }
  std::string got;
  for (char c : listed) {
    if (c != '\n') {
      got += c;
    } else if (!got.empty() && got.back() != ' ') {
      got += ' ';
    }
  }
  while (!got.empty() && got.front() == ' ') got.erase(got.begin());
  while (!got.empty() && got.back() == ' ') got.pop_back();
  EXPECT_EQ(got, want + ".") << "docs/runtime.md's kernel list should read:\n" << want << ".";
}

TEST(OpDef, CategoriesHaveNames) {
  std::set<std::string_view> names;
  for (const OpDef& d : all_ops()) names.insert(category_name(d.category));
  EXPECT_TRUE(names.contains("convolution"));
  EXPECT_TRUE(names.contains("activation"));
  EXPECT_EQ(op_category("Conv2D"), OpCategory::Convolution);
  EXPECT_TRUE(op_has("ReLU", kActivation));
  EXPECT_FALSE(op_has("NoSuchOperator", kElementwise));
}

}  // namespace
}  // namespace graphcore
