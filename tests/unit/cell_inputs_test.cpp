// Inputs declared for a Cell class (mindspore_config.json `"inputs": {"Net": ["1,1,28,28"]}`):
// graphcore applies them to a root of that class (AnalysisOptions::cell_inputs), and the language
// server passes the project's and the client's to every analysis.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "graphcore/analysis.h"
#include "graphcore/source.h"
#include "lsp/settings.h"

namespace {

using graphcore::AnalysisOptions;
using graphcore::AnalysisResult;
using graphcore::DType;
using graphcore::Shape;
using graphcore::TensorType;

const char* kModel =
    "import mindspore.nn as nn\n"
    "\n"
    "class Net(nn.Cell):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.fc = nn.Dense(16, 4)\n"
    "\n"
    "    def construct(self, x):\n"
    "        return self.fc(x)\n"
    "\n"
    "class Other(nn.Cell):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.fc = nn.Dense(8, 2)\n"
    "\n"
    "    def construct(self, x):\n"
    "        return self.fc(x)\n";

TensorType f32(const std::vector<int64_t>& dims) {
  return TensorType{Shape::of(dims), DType::Float32};
}

AnalysisResult analyse(const AnalysisOptions& opts) {
  graphcore::MemorySourceProvider mem("/ws/model.py", kModel);
  return graphcore::analyze_file("/ws/model.py", opts, mem);
}

const graphcore::CellReport* cell(const AnalysisResult& r, const std::string& name) {
  auto it =
      std::find_if(r.cells.begin(), r.cells.end(), [&](const auto& c) { return c.name == name; });
  return it == r.cells.end() ? nullptr : &*it;
}

TEST(CellInputs, AppliedToTheRootOfThatClassOnly) {
  AnalysisOptions opts;
  opts.cell_inputs["Net"] = {f32({1, 16})};
  AnalysisResult r = analyse(opts);
  EXPECT_EQ(r.error_count(), 0u);
  const auto* net = cell(r, "Net");
  ASSERT_NE(net, nullptr);
  ASSERT_EQ(net->inputs.size(), 1u);
  EXPECT_EQ(net->inputs[0].type.shape.str(), "(1, 16)");
  ASSERT_FALSE(net->outputs.empty());
  EXPECT_EQ(net->outputs[0].type.shape.str(), "(1, 4)");
  const auto* other = cell(r, "Other");
  ASSERT_NE(other, nullptr);
  ASSERT_EQ(other->inputs.size(), 1u);
  EXPECT_NE(other->inputs[0].type.shape.str(), "(1, 16)");
}

TEST(CellInputs, WrongDeclaredInputIsTheErrorMindSporeRaises) {
  AnalysisOptions opts;
  opts.cell_inputs["Net"] = {f32({1, 32})};
  AnalysisResult r = analyse(opts);
  auto err = std::find_if(r.diagnostics.begin(), r.diagnostics.end(),
                          [](const auto& d) { return d.severity == graphcore::Severity::Error; });
  ASSERT_NE(err, r.diagnostics.end());
  EXPECT_EQ(err->code, "shape-mismatch");
}

TEST(CellInputs, OptionsInputsWinOverTheClassEntry) {
  AnalysisOptions opts;
  opts.inputs = {f32({2, 16})};
  opts.cell_inputs["Net"] = {f32({1, 32})};
  opts.cell = "Net";
  AnalysisResult r = analyse(opts);
  EXPECT_EQ(r.error_count(), 0u);
  const auto* net = cell(r, "Net");
  ASSERT_NE(net, nullptr);
  EXPECT_EQ(net->inputs[0].type.shape.str(), "(2, 16)");
}

TEST(CellInputs, LanguageServerPassesProjectAndClientEntries) {
  cellscope::lsp::WorkspaceSettings s(std::nullopt);
  s.roots = {"/ws"};
  s.client.inputs["Net"] = {f32({1, 16})};
  s.client.inputs["*"] = {f32({3, 8})};
  AnalysisOptions o = s.options_for("/ws/model.py");
  ASSERT_EQ(o.cell_inputs.count("Net"), 1u);
  EXPECT_EQ(o.cell_inputs.at("Net")[0].shape.str(), "(1, 16)");
}

}  // namespace
