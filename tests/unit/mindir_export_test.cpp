// MindIR export (graphcore/mindir.h): the bytes decode with Cellscope's own schema
// (graphcore/proto/mind_ir.proto) into what MindSpore 2.10 loads (docs/mindir-notes.md); an
// operator without MindIR facts is refused at its line; a failing write leaves the old file.
// Loading in MindSpore itself: tests/mindspore/test_export_mindir.py.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "files.h"
#include "graphcore/analysis.h"
#include "graphcore/mindir.h"
#include "graphcore/runtime.h"
#include "graphcore_proto/mind_ir.pb.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;
namespace pb = cellscope::mindir;
using graphcore::AnalysisResult;
using graphcore::CellReport;
using graphcore::MindirExport;

AnalysisResult analyze(const fs::path& file, const std::vector<std::string>& inputs) {
  graphcore::AnalysisOptions opts;
  for (const auto& spec : inputs) {
    std::string why;
    auto t = graphcore::parse_input_spec(spec, &why);
    EXPECT_TRUE(t.has_value()) << why;
    if (t) opts.inputs.push_back(*t);
  }
  opts.constant_values = true;
  graphcore::DiskSourceProvider disk;
  return graphcore::analyze_file(file, opts, disk);
}

MindirExport export_report(const CellReport& report) {
  graphcore::runtime::ExecOptions eo;
  eo.seed = 3;
  graphcore::runtime::Executor ex(report, eo);
  return graphcore::export_mindir(report, ex.params());
}

const pb::Attribute* find_attr(const pb::Primitive& p, const std::string& name) {
  for (const auto& a : p.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

std::vector<int64_t> tuple_ints(const pb::Attribute& a) {
  std::vector<int64_t> v;
  for (const auto& e : a.values()) v.push_back(e.ints(0));
  return v;
}

TEST(MindirExport, LeNetDecodesWithOwnSchema) {
  AnalysisResult res = analyze(fs::path(CELLSCOPE_CORPUS_DIR) / "models/lenet5.py", {"1,1,32,32"});
  ASSERT_EQ(res.cells.size(), 1u);
  const CellReport& report = res.cells[0];
  graphcore::runtime::ExecOptions eo;
  eo.seed = 3;
  graphcore::runtime::Executor ex(report, eo);
  MindirExport out = graphcore::export_mindir(report, ex.params());
  ASSERT_TRUE(out.errors.empty()) << out.errors[0].message;

  pb::Model m;
  ASSERT_TRUE(m.ParseFromString(out.bytes));
  EXPECT_EQ(m.producer_name(), "MindSpore");  // mindspore.load requires one
  EXPECT_EQ(m.mind_ir_version(), 3);
  EXPECT_FALSE(m.model_version().empty());
  EXPECT_TRUE(m.graph().has_name());

  // Weights inline, named <graph>:<param> with the bare name as ref_key, bytes = the runtime's.
  ASSERT_EQ(m.graph().parameter_size(), 8);
  std::set<std::string> defined;
  for (const auto& t : m.graph().parameter()) {
    const auto* p = ex.param(t.ref_key());
    ASSERT_NE(p, nullptr) << t.ref_key();
    EXPECT_EQ(t.name(), m.graph().name() + ":" + t.ref_key());
    EXPECT_EQ(t.data_type(), pb::Tensor::FLOAT);
    ASSERT_EQ(t.raw_data().size(), static_cast<size_t>(p->value.numel()) * 4);
    EXPECT_EQ(std::memcmp(t.raw_data().data(), p->value.data<float>(), t.raw_data().size()), 0);
    defined.insert(t.name());
  }
  ASSERT_EQ(m.graph().input_size(), 1);
  const auto& in = m.graph().input(0).tensor(0);
  EXPECT_EQ(std::vector<int64_t>(in.dims().begin(), in.dims().end()),
            (std::vector<int64_t>{1, 1, 32, 32}));
  defined.insert(m.graph().input(0).name());

  // Topological: every node input is defined before; every REF:: names a primitive.
  std::map<std::string, const pb::Primitive*> prims;
  for (const auto& p : m.primitives()) prims[p.name()] = &p;
  std::map<std::string, int> op_count;
  for (const auto& n : m.graph().node()) {
    for (const auto& i : n.input()) EXPECT_TRUE(defined.contains(i)) << i << " used before";
    ASSERT_EQ(n.output_size(), 1);
    EXPECT_TRUE(defined.insert(n.output(0)).second) << "duplicate " << n.output(0);
    if (n.op_type() == "Constant") {
      ASSERT_EQ(n.attribute_size(), 1);
      EXPECT_EQ(n.attribute(0).name(), "value");
      continue;
    }
    ASSERT_TRUE(n.op_type().starts_with("REF::")) << n.op_type();
    auto it = prims.find(n.op_type().substr(5));
    ASSERT_NE(it, prims.end()) << n.op_type();
    const pb::Primitive& p = *it->second;
    ++op_count[p.op_type()];
    if (p.op_type() == "MatMul") {  // (input, mat2, transpose_a, transpose_b)
      EXPECT_EQ(p.prim_type(), pb::Primitive::PRIMITIVE_FUNCTION);
      EXPECT_EQ(n.input_size(), 4);
    }
    if (p.op_type() == "Conv2D") {
      EXPECT_EQ(p.prim_type(), pb::Primitive::PRIMITIVE);
      ASSERT_NE(find_attr(p, "pad_mode"), nullptr);
      EXPECT_EQ(find_attr(p, "pad_mode")->s(), "valid");
      EXPECT_EQ(tuple_ints(*find_attr(p, "stride")), (std::vector<int64_t>{1, 1, 1, 1}));
      EXPECT_EQ(tuple_ints(*find_attr(p, "kernel_size")), (std::vector<int64_t>{5, 5}));
    }
    if (p.op_type() == "MaxPool") {
      EXPECT_EQ(find_attr(p, "pad_mode")->s(), "VALID");
      EXPECT_EQ(tuple_ints(*find_attr(p, "kernel_size")), (std::vector<int64_t>{1, 1, 2, 2}));
    }
  }
  EXPECT_EQ(op_count["Conv2D"], 2);
  EXPECT_EQ(op_count["MatMul"], 3);
  EXPECT_EQ(op_count["BiasAdd"], 3);  // nn.Dense's bias
  EXPECT_EQ(op_count["ReLU"], 4);
  // Two Conv2D with different out_channel: two primitives; the four ReLU share one.
  int conv_prims = 0;
  int relu_prims = 0;
  for (const auto& p : m.primitives()) {
    conv_prims += p.op_type() == "Conv2D" ? 1 : 0;
    relu_prims += p.op_type() == "ReLU" ? 1 : 0;
  }
  EXPECT_EQ(conv_prims, 2);
  EXPECT_EQ(relu_prims, 1);
  ASSERT_EQ(m.graph().output_size(), 1);
  EXPECT_EQ(m.graph().output(0).name(), m.graph().node(m.graph().node_size() - 1).output(0));
  EXPECT_EQ(out.weights, 8u);
}

// pad_mode "same" has no padding attribute to copy: pad_list is computed from the shapes as
// MindSpore does (total = (ceil(in / s) - 1) * s + k - in, the smaller half first).
TEST(MindirExport, SamePaddingListFromShapes) {
  cellscope::testing::TempDir dir;
  const std::string file = dir.write("same.py", R"(import mindspore.nn as nn

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(2, 3, 3, stride=2, pad_mode='same')
        self.b = nn.Conv2d(3, 3, 2, stride=2, pad_mode='same')

    def construct(self, x):
        return self.b(self.a(x))
)");
  AnalysisResult res = analyze(file, {"1,2,7,7"});
  ASSERT_EQ(res.cells.size(), 1u);
  MindirExport out = export_report(res.cells[0]);
  ASSERT_TRUE(out.errors.empty()) << out.errors[0].message;
  pb::Model m;
  ASSERT_TRUE(m.ParseFromString(out.bytes));
  std::vector<std::vector<int64_t>> lists;
  for (const auto& p : m.primitives()) {
    if (p.op_type() == "Conv2D") lists.push_back(tuple_ints(*find_attr(p, "pad_list")));
  }
  ASSERT_EQ(lists.size(), 2u);
  // 7 -> 4 with k 3, s 2: total 2 -> (1, 1); 4 -> 2 with k 2, s 2: total 0.
  EXPECT_EQ(lists[0], (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(lists[1], (std::vector<int64_t>{0, 0, 0, 0}));
}

TEST(MindirExport, UnmappedOperatorIsRefusedAtItsLine) {
  cellscope::testing::TempDir dir;
  const std::string file = dir.write("net.py", R"(import mindspore.nn as nn
import mindspore.ops as ops

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 3)
        self.pool = nn.MaxPool2d(2, 2, pad_mode='pad', padding=1)

    def construct(self, x, y):
        return ops.sigmoid(self.fc(x)), self.pool(y)
)");
  AnalysisResult res = analyze(file, {"2,4", "1,1,6,6"});
  ASSERT_EQ(res.cells.size(), 1u);
  MindirExport out = export_report(res.cells[0]);
  EXPECT_TRUE(out.bytes.empty());
  ASSERT_EQ(out.errors.size(), 2u);
  EXPECT_EQ(out.errors[0].code, "export-unsupported-op");
  EXPECT_EQ(out.errors[1].code, "export-unsupported-op");
  EXPECT_EQ(out.errors[0].range.start.line, 10);
  EXPECT_NE(out.errors[0].message.find("Sigmoid"), std::string::npos) << out.errors[0].message;
  // A mapped operator in a form MindSpore exports as another primitive: refused too.
  EXPECT_NE(out.errors[1].message.find("padding"), std::string::npos) << out.errors[1].message;
}

// The CLI writes with write_file_atomic: a write that fails half-way (the file size limit, as a
// full disk would) leaves the old file and no temporary file.
TEST(MindirExport, FailingWriteLeavesOldFile) {
  AnalysisResult res = analyze(fs::path(CELLSCOPE_CORPUS_DIR) / "models/lenet5.py", {"1,1,32,32"});
  ASSERT_EQ(res.cells.size(), 1u);
  MindirExport out = export_report(res.cells[0]);
  ASSERT_GT(out.bytes.size(), 100000u);
  cellscope::testing::TempDir dir;
  const fs::path target = dir.path() / "lenet.mindir";
  dir.write("lenet.mindir", "old model");

  struct rlimit old_limit {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old_limit;
  small.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  bool threw = false;
  try {
    cellscope::server::write_file_atomic(target, out.bytes);
  } catch (const std::system_error&) {
    threw = true;
  }
  setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_TRUE(threw);
  std::ifstream f(target, std::ios::binary);
  const std::string kept((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, "old model");
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 1u);

  // Without the limit the same write replaces it whole.
  cellscope::server::write_file_atomic(target, out.bytes);
  EXPECT_EQ(fs::file_size(target), out.bytes.size());
}

}  // namespace
