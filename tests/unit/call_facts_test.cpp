// Call-time facts the registry's rules check and record for the kernels: ops.narrow's ranges
// (MindSpore 2.10 rejects a start outside [0, dim) and a length outside [1, dim - start]), the
// divisor of Tensor.std/var (a `correction` the user wrote becomes `ddof`; omitted, MindSpore
// 2.10 on CPU divides by n) and nn.Pad's paddings as one flat list.
#include <gtest/gtest.h>

#include <string>

#include "expect_analysis.h"

namespace graphcore {
namespace {

std::string net(const std::string& body) {
  return "import mindspore.nn as nn\nimport mindspore.ops as ops\n\n\nclass Net(nn.Cell):\n"
         "    def __init__(self):\n        super().__init__()\n"
         "        self.pad = nn.Pad(((0, 0), (1, 2)), mode='SYMMETRIC')\n\n"
         "    def construct(self, x):\n        return " +
         body + "\n";
}

const Node* find_node(const AnalysisResult& r, std::string_view op) {
  if (r.cells.empty()) return nullptr;
  for (const Node& n : r.cells[0].graph.nodes)
    if (n.op == op) return &n;
  return nullptr;
}

std::string first_error(const AnalysisResult& r) {
  for (const Diagnostic& d : r.diagnostics)
    if (d.severity == Severity::Error) return d.message;
  return "";
}

TEST(CallFacts, NarrowChecksStartAndLengthAsMindSporeDoes) {
  expect_compiles_to(analyse_net(net("ops.narrow(x, 1, 2, 6)")), 1, "(2, 6)");
  EXPECT_EQ(first_error(analyse_net(net("ops.narrow(x, 1, -1, 1)"))),
            "ops.narrow: start must be in [0, 8) for axis 1 of (2, 8), got -1");
  EXPECT_EQ(first_error(analyse_net(net("ops.narrow(x, 1, 8, 1)"))),
            "ops.narrow: start must be in [0, 8) for axis 1 of (2, 8), got 8");
  EXPECT_EQ(first_error(analyse_net(net("ops.narrow(x, 1, 2, 7)"))),
            "ops.narrow: length must be in [1, 6] from start 2 of axis 1 of (2, 8), got 7");
  EXPECT_EQ(first_error(analyse_net(net("ops.narrow(x, 1, 2, 0)"))),
            "ops.narrow: length must be in [1, 6] from start 2 of axis 1 of (2, 8), got 0");
}

TEST(CallFacts, TensorStdRecordsAWrittenCorrectionAsDdof) {
  const auto ddof_of = [](const std::string& call) -> std::optional<int64_t> {
    auto r = analyse_net(net(call));
    const Node* n = find_node(r, "ReduceStd");
    if (n == nullptr) return std::nullopt;
    const AttrValue* v = n->find_attr("ddof");
    if (v == nullptr || !std::holds_alternative<int64_t>(*v)) return std::nullopt;
    return std::get<int64_t>(*v);
  };
  EXPECT_EQ(ddof_of("x.std(1)"), 0);
  EXPECT_EQ(ddof_of("x.std(dim=1)"), 0);
  EXPECT_EQ(ddof_of("x.std(dim=1, correction=1)"), 1);
  EXPECT_EQ(ddof_of("x.std(1, ddof=1)"), 1);
  EXPECT_EQ(ddof_of("ops.std(x, axis=1, ddof=1)"), 1);
}

TEST(CallFacts, PadRecordsItsPaddingsFlat) {
  auto r = analyse_net(net("self.pad(x)"));
  expect_compiles_to(r, 1, "(2, 11)");
  const Node* n = find_node(r, "Pad");
  ASSERT_NE(n, nullptr);
  const AttrValue* v = n->find_attr("paddings");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(std::get<std::vector<int64_t>>(*v), (std::vector<int64_t>{0, 0, 1, 2}));
}

// A call whose error is reported becomes a FailedCall of the graph (the view marks where the
// graph stops): the layer's path or scope/op, the values it received, the diagnostic. What
// consumes its (poisoned) result fails silently and is not a failure of its own.
TEST(CallFacts, ACallWhoseErrorIsReportedIsRecordedAsAFailure) {
  const std::string text =
      "import mindspore.nn as nn\nimport mindspore.ops as ops\n\n\nclass Net(nn.Cell):\n"
      "    def __init__(self):\n        super().__init__()\n"
      "        self.fc = nn.Dense(4, 3)\n        self.head = nn.Dense(3, 2)\n\n"
      "    def construct(self, x):\n        y = ops.relu(x)\n"
      "        a = self.head(self.fc(y))\n        b = self.fc(x)\n"
      "        c = ops.narrow(x, 1, 8, 1)\n        return a, b, c\n";
  const AnalysisResult r = analyse_net(text);
  ASSERT_EQ(r.cells.size(), 1U);
  const Graph& g = r.cells[0].graph;
  ASSERT_EQ(g.failures.size(), 3U);
  const FailedCall& fc = g.failures[0];
  EXPECT_EQ(fc.id, "fc");
  EXPECT_EQ(fc.api, "nn.Dense");
  EXPECT_EQ(fc.op, "MatMul");
  EXPECT_EQ(fc.scope, "fc");
  EXPECT_EQ(fc.code, "shape-mismatch");
  EXPECT_EQ(fc.message, first_error(r));
  ASSERT_EQ(fc.inputs.size(), 1U);
  EXPECT_EQ(g.nodes[fc.inputs[0].node].op, "ReLU");
  EXPECT_EQ(fc.range.start.line, 12U);
  // The same layer failing again on another input: its own id.
  EXPECT_EQ(g.failures[1].id, "fc#2");
  ASSERT_EQ(g.failures[1].inputs.size(), 1U);
  EXPECT_EQ(g.nodes[g.failures[1].inputs[0].node].kind, NodeKind::Input);
  // A function: scope/op (the root's scope is empty).
  EXPECT_EQ(g.failures[2].id, "Narrow");
  EXPECT_EQ(g.failures[2].api, "ops.narrow");
  EXPECT_EQ(g.failures[2].code, "invalid-argument");
  // `self.head` received fc's poisoned value: no diagnostic, no failure.
  for (const FailedCall& f : g.failures) EXPECT_NE(f.id, "head");
}

}  // namespace
}  // namespace graphcore
