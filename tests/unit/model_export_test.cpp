// export_model (server/model_export.h): the export the CLI and the language server share --
// format and name rules, the default file name, written / refused / cancelled outcomes, the stages
// it reports, and that a refused or cancelled export leaves the destination untouched.
#include "model_export.h"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "temp_dir.h"

namespace {

using cellscope::server::default_export_path;
using cellscope::server::export_model;
using cellscope::server::ModelExportOutcome;
using cellscope::server::ModelExportRequest;
using cellscope::server::resolve_export_format;
using cellscope::testing::TempDir;

// ops.dense (the Dense operator): an ONNX mapping, no MindIR one.
constexpr const char* kGate = R"(import mindspore as ms
from mindspore import nn, ops
from mindspore.common.initializer import initializer


class Gate(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = ms.Parameter(initializer("normal", (4, 8)), name="w")

    def construct(self, x):
        return ops.dense(x, self.w)


net = Gate()
out = net(ms.Tensor(ms.numpy.zeros((2, 8)), ms.float32))
)";

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ModelExport, FormatFollowsTheNameUnlessGivenAndMustAgreeWithIt) {
  std::string why;
  EXPECT_EQ(resolve_export_format("", "a/b.mindir", &why), "mindir");
  EXPECT_EQ(resolve_export_format("", "b.onnx", &why), "onnx");
  EXPECT_EQ(resolve_export_format("onnx", "b.model", &why), "onnx");
  EXPECT_FALSE(resolve_export_format("", "b.model", &why));
  EXPECT_NE(why.find("--format"), std::string::npos);
  // mindspore.load accepts only .mindir names; an .onnx name is not written as MindIR.
  EXPECT_FALSE(resolve_export_format("mindir", "b.model", &why));
  EXPECT_FALSE(resolve_export_format("mindir", "b.onnx", &why));
  EXPECT_FALSE(resolve_export_format("onnx", "b.mindir", &why));
  EXPECT_FALSE(resolve_export_format("air", "b.air", &why));
  EXPECT_NE(why.find("air"), std::string::npos);
}

TEST(ModelExport, DefaultPathIsTheCellNextToTheFile) {
  EXPECT_EQ(default_export_path("/w/m/lenet5.py", "LeNet5", "mindir"), "/w/m/LeNet5.mindir");
  EXPECT_EQ(default_export_path("/w/resnet.py", "resnet50()", "onnx"), "/w/resnet50.onnx");
  EXPECT_EQ(default_export_path("/w/x.py", "a/b c", "onnx"), "/w/a_b_c.onnx");
}

ModelExportRequest request_for(const std::filesystem::path& dir, const std::string& format) {
  ModelExportRequest r;
  r.file = dir / "gate.py";
  r.format = format;
  r.output = dir / ("Gate." + format);
  return r;
}

TEST(ModelExport, WritesOnnxAndReportsItsStagesInOrder) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  graphcore::MemorySourceProvider sources(dir.path() / "gate.py", kGate);
  ModelExportRequest r = request_for(dir.path(), "onnx");
  std::vector<std::pair<std::string, int>> stages;
  r.progress = [&](std::string_view s, int pct) { stages.emplace_back(std::string(s), pct); };
  const ModelExportOutcome o = export_model(r, sources);
  ASSERT_EQ(o.status, ModelExportOutcome::Status::kWritten)
      << (o.errors.empty() ? "" : o.errors[0]);
  EXPECT_EQ(o.cell, "Gate");
  EXPECT_EQ(o.nodes, 1u);  // Gemm (ops.dense)
  EXPECT_EQ(slurp(r.output).size(), o.bytes);
  std::vector<std::string> names;
  for (size_t i = 0; i < stages.size(); ++i) {
    names.push_back(stages[i].first);
    if (i > 0) {
      EXPECT_GT(stages[i].second, stages[i - 1].second);
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"compiling", "checking", "initialising weights",
                                             "serializing", "writing"}));
}

TEST(ModelExport, RefusalIsLocatedAndLeavesTheOldFile) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  graphcore::MemorySourceProvider sources(dir.path() / "gate.py", kGate);
  ModelExportRequest r = request_for(dir.path(), "mindir");
  {
    std::ofstream old(r.output, std::ios::binary);
    old << "old";
  }
  const ModelExportOutcome o = export_model(r, sources);
  EXPECT_EQ(o.status, ModelExportOutcome::Status::kRefused);
  ASSERT_EQ(o.diagnostics.size(), 1u);
  EXPECT_EQ(o.diagnostics[0].code, "export-unsupported-op");
  EXPECT_EQ(o.diagnostics[0].range.start.line, 11u);  // return ops.dense(...)
  EXPECT_NE(o.diagnostics[0].message.find("Dense"), std::string::npos);
  EXPECT_EQ(slurp(r.output), "old");
}

TEST(ModelExport, CancelledWritesNothing) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  graphcore::MemorySourceProvider sources(dir.path() / "gate.py", kGate);
  ModelExportRequest r = request_for(dir.path(), "onnx");
  std::atomic<bool> cancel{false};
  r.cancel = &cancel;
  // Cancelled while checking: the stages after it do not run.
  std::vector<std::string> stages;
  r.progress = [&](std::string_view s, int) {
    stages.emplace_back(s);
    if (s == "checking") cancel.store(true);
  };
  const ModelExportOutcome o = export_model(r, sources);
  EXPECT_EQ(o.status, ModelExportOutcome::Status::kCancelled);
  EXPECT_EQ(stages, (std::vector<std::string>{"compiling", "checking"}));
  EXPECT_FALSE(std::filesystem::exists(r.output));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()),
                          std::filesystem::directory_iterator()),
            0);  // no temporary left either
}

TEST(ModelExport, MissingFolderAndSeveralRootsAreNotExported) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  graphcore::MemorySourceProvider sources(dir.path() / "gate.py", kGate);
  ModelExportRequest r = request_for(dir.path(), "onnx");
  r.output = dir.path() / "missing" / "Gate.onnx";
  ModelExportOutcome o = export_model(r, sources);
  EXPECT_EQ(o.status, ModelExportOutcome::Status::kRefused);
  ASSERT_EQ(o.errors.size(), 1u);
  EXPECT_NE(o.errors[0].find("no such directory"), std::string::npos);

  std::string two = std::string(kGate) +
                    "\n\nclass Other(nn.Cell):\n    def construct(self, x):\n" +
                    "        return x\n\n\nother = Other()\ny = other(ms.Tensor(ms.numpy.zeros((2, "
                    "8)), ms.float32))\n";
  graphcore::MemorySourceProvider both(dir.path() / "gate.py", two);
  o = export_model(request_for(dir.path(), "onnx"), both);
  EXPECT_EQ(o.status, ModelExportOutcome::Status::kUsage);
  ASSERT_FALSE(o.errors.empty());
  EXPECT_NE(o.errors[0].find("several root Cells"), std::string::npos);
}

}  // namespace
