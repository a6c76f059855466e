// Parallel strategies in the graph document (issue 21, docs/parallel.md "In the view and
// editor"): each sharded node's strategy, per-device shapes, communication and `.shard` range;
// every node's pipeline stage; the program's parallel summary; and a strategy edit reaching the
// view as a node upsert of the delta. Analysed from the repository's parallel cases.
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "graphcore/analysis.h"
#include "pipeline.h"
#include "protocol/document.h"
#include "view/delta.h"

namespace cellscope::server {
namespace {

namespace fs = std::filesystem;

const fs::path kCases = fs::path(CELLSCOPE_SOURCE_DIR) / "tests" / "parallel" / "cases";

PipelineOptions layer(const std::string& l) {
  PipelineOptions p;
  p.layer = l;
  return p;
}

protocol::GraphDocument document_of(const fs::path& file, const std::string& text,
                                    const std::string& l = "semantic") {
  graphcore::MemorySourceProvider src(file.string(), text);
  return build_graph_document(file, graphcore::AnalysisOptions{}, layer(l), src).document;
}

std::string read(const fs::path& file) {
  graphcore::DiskSourceProvider disk;
  return disk.read(file).value_or("");
}

const protocol::Node* node_with_op(const protocol::Cell& c, const std::string& op) {
  const auto it = std::find_if(c.nodes().begin(), c.nodes().end(),
                               [&](const protocol::Node& n) { return n.op() == op; });
  return it == c.nodes().end() ? nullptr : &*it;
}

std::vector<double> dims(const protocol::Tensor& t) {
  std::vector<double> out;
  for (const auto& v : t.shape()) out.push_back(v.number_value());
  return out;
}

std::vector<int> splits(const protocol::ShardingRow& r) {
  return {r.splits().begin(), r.splits().end()};
}

TEST(ParallelDocument, ShardedNodeCarriesStrategyShapesAndCommunication) {
  const fs::path file = kCases / "matmul_valid.py";
  const std::string text = read(file);
  ASSERT_FALSE(text.empty());
  const protocol::GraphDocument doc = document_of(file, text);
  ASSERT_EQ(doc.cells_size(), 1);
  const protocol::Node* mm = node_with_op(doc.cells(0), "MatMul");
  ASSERT_NE(mm, nullptr);
  ASSERT_TRUE(mm->has_sharding());
  const protocol::Sharding& s = mm->sharding();
  ASSERT_EQ(s.strategy_size(), 2);
  EXPECT_EQ(splits(s.strategy(0)), (std::vector<int>{2, 4}));
  EXPECT_EQ(splits(s.strategy(1)), (std::vector<int>{4, 1}));
  EXPECT_EQ(s.out_strategy_size(), 0);
  EXPECT_EQ(s.attr(), "matmul");
  // The truth JSON's per-device slices (MindSpore's _count_tensor_shape): x 8x16, w 16x32.
  ASSERT_EQ(s.device_inputs_size(), 2);
  EXPECT_EQ(dims(s.device_inputs(0)), (std::vector<double>{8, 16}));
  EXPECT_EQ(dims(s.device_inputs(1)), (std::vector<double>{16, 32}));
  ASSERT_EQ(s.device_outputs_size(), 1);
  EXPECT_EQ(dims(s.device_outputs(0)), (std::vector<double>{8, 32}));
  EXPECT_EQ(s.device_inputs(0).dtype(), "float32");
  EXPECT_EQ(s.device_outputs(0).dtype(), "float32");
  EXPECT_EQ(s.device_matrix(), 8U);
  ASSERT_EQ(s.comms_size(), 1);
  EXPECT_EQ(s.comms(0).kind(), "AllReduce");
  EXPECT_EQ(s.comms(0).group(), 4U);
  // The `.shard(...)` call: on the line that writes it, in UTF-16 columns.
  const size_t line = static_cast<size_t>(std::count(
      text.begin(), text.begin() + static_cast<std::ptrdiff_t>(text.find(".shard(")), '\n'));
  EXPECT_EQ(s.file(), file.string());
  EXPECT_EQ(s.range().start().line(), line);
  EXPECT_FALSE(mm->has_stage()) << "no pipeline_stage in the program";
  // The program: semi_auto_parallel on 8 devices, from the script.
  ASSERT_TRUE(doc.has_parallel());
  EXPECT_EQ(doc.parallel().mode(), "semi_auto_parallel");
  EXPECT_EQ(doc.parallel().device_num(), 8U);
  EXPECT_EQ(doc.parallel().device_num_from(), "script");
  EXPECT_EQ(doc.parallel().pipeline_stages(), 1U);
  EXPECT_TRUE(doc.parallel().sharding());
  // In the optimized layer the semantic node keeps its sharding (the view frames its kernels).
  const protocol::GraphDocument opt = document_of(file, text, "optimized");
  ASSERT_NE(node_with_op(opt.cells(0), "MatMul"), nullptr);
  EXPECT_TRUE(node_with_op(opt.cells(0), "MatMul")->has_sharding());
}

TEST(ParallelDocument, StagesAndPipelineSummary) {
  const fs::path file = kCases / "pipeline_valid.py";
  const protocol::GraphDocument doc = document_of(file, read(file));
  ASSERT_TRUE(doc.has_parallel());
  EXPECT_EQ(doc.parallel().pipeline_stages(), 2U);
  EXPECT_EQ(doc.parallel().micro_batches(), 2U);
  EXPECT_EQ(doc.parallel().device_num(), 8U);
  ASSERT_GE(doc.cells_size(), 1);
  std::vector<int> stages;
  for (const auto& n : doc.cells(0).nodes()) {
    if (n.kind() != "op") continue;
    ASSERT_TRUE(n.has_stage()) << n.id();
    if (n.scope().rfind("fc1", 0) == 0 || n.scope().find(".fc1") != std::string::npos) {
      EXPECT_EQ(n.stage(), 0) << n.id();
    }
    if (n.scope().rfind("fc2", 0) == 0 || n.scope().find(".fc2") != std::string::npos) {
      EXPECT_EQ(n.stage(), 1) << n.id();
    }
    stages.push_back(n.stage());
  }
  EXPECT_EQ(*std::min_element(stages.begin(), stages.end()), 0);
  EXPECT_EQ(*std::max_element(stages.begin(), stages.end()), 1);
}

// matmul_valid.py without its set_auto_parallel_context call: a stand-alone program.
std::string stand_alone_text(const fs::path& file) {
  std::string text = read(file);
  const std::string call =
      "ms.set_auto_parallel_context(parallel_mode=\"semi_auto_parallel\", device_num=8)";
  const auto at = text.find(call);
  if (at != std::string::npos) text.replace(at, call.size(), "pass");
  return text;
}

TEST(ParallelDocument, StandAloneProgramHasNoSummary) {
  const fs::path file = kCases / "matmul_valid.py";
  const std::string text = stand_alone_text(file);
  ASSERT_EQ(text.find("set_auto_parallel_context"), std::string::npos);
  const protocol::GraphDocument doc = document_of(file, text);
  EXPECT_FALSE(doc.has_parallel());
  const protocol::Node* mm = node_with_op(doc.cells(0), "MatMul");
  ASSERT_NE(mm, nullptr);
  // The strategy is still recorded (MindSpore ignores it stand-alone; the view still shows it).
  EXPECT_EQ(mm->sharding().strategy_size(), 2);
}

TEST(ParallelDocument, ConfiguredDeviceCountDoesNotMakeAStandAloneJob) {
  // mindspore_config.json's device_num (AnalysisOptions::device_num) with no parallel mode in the
  // script: no summary, so the view offers no rank picker.
  const fs::path file = kCases / "matmul_valid.py";
  const std::string text = stand_alone_text(file);
  ASSERT_EQ(text.find("set_auto_parallel_context"), std::string::npos);
  graphcore::MemorySourceProvider src(file.string(), text);
  graphcore::AnalysisOptions opts;
  opts.device_num = 8;
  const protocol::GraphDocument doc =
      build_graph_document(file, opts, layer("semantic"), src).document;
  EXPECT_FALSE(doc.has_parallel());
}

TEST(ParallelDocument, StrategyEditIsADeltaUpsert) {
  const fs::path file = kCases / "matmul_valid.py";
  const std::string text = read(file);
  std::string edited = text;
  const std::string from = ".shard(((2, 4), (4, 1)))";
  ASSERT_NE(edited.find(from), std::string::npos);
  edited.replace(edited.find(from), from.size(), ".shard(((8, 1), (1, 1)))");
  const protocol::GraphDocument before = document_of(file, text);
  const protocol::GraphDocument after = document_of(file, edited);
  const protocol::GraphDelta delta = view::diff_documents(before, after, 1);
  ASSERT_EQ(delta.cells_size(), 1);
  const protocol::Node* mm = node_with_op(after.cells(0), "MatMul");
  ASSERT_NE(mm, nullptr);
  std::vector<std::string> upserts;
  for (const auto& n : delta.cells(0).nodes()) upserts.push_back(n.id());
  EXPECT_EQ(upserts, (std::vector<std::string>{mm->id()}));
  EXPECT_EQ(dims(delta.cells(0).nodes(0).sharding().device_inputs(0)),
            (std::vector<double>{2, 64}));
  protocol::GraphDocument applied = before;
  ASSERT_TRUE(view::apply_delta(delta, &applied));
  // (Compared as messages: the byte order of map fields is not deterministic.)
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(applied, after));
}

}  // namespace
}  // namespace cellscope::server
