// The ONNX writer (graphcore/export_onnx.h): the ModelProto it builds, parsed back with the
// classes generated from Debian's onnx.proto -- opset, IR version, inputs and outputs with
// shapes, weights as little-endian raw_data equal to the runtime's values, nodes in topological
// order with the attributes their OpDef rule derives -- its refusals, and the atomic write.
// (onnx.checker and onnxruntime run in tests/runtime/check_onnx.py.)
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "files.h"
#include "graphcore/analysis.h"
#include "graphcore/export_onnx.h"
#include "graphcore/opdef.h"
#include "graphcore/runtime.h"
#include "onnx/onnx.pb.h"
#include "temp_dir.h"

namespace graphcore {
namespace {

using runtime::Executor;

AnalysisResult compile(const std::string& init, const std::string& body,
                       std::vector<TensorType> inputs) {
  const std::string text =
      "import mindspore as ms\nfrom mindspore import nn, ops\n\n\nclass Net(nn.Cell):\n"
      "    def __init__(self):\n        super().__init__()\n" +
      init + "\n    def construct(self, x):\n" + body;
  MemorySourceProvider src("/mem/net.py", text);
  AnalysisOptions opts;
  opts.cell = "Net";
  opts.inputs = std::move(inputs);
  return analyze_file("/mem/net.py", opts, src);
}

TensorType f32(const std::vector<int64_t>& dims) { return {Shape::of(dims), DType::Float32}; }

const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

std::vector<int64_t> ints(const onnx::AttributeProto* a) {
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
}

TEST(OnnxExport, ConvBatchNormPoolDenseModel) {
  AnalysisResult r = compile(
      "        self.conv = nn.Conv2d(3, 8, 3, stride=2, pad_mode='same', has_bias=True)\n"
      "        self.bn = nn.BatchNorm2d(8, eps=1e-3)\n"
      "        self.relu = nn.ReLU()\n"
      "        self.pool = nn.MaxPool2d(kernel_size=3, stride=2, pad_mode='same')\n"
      "        self.flat = nn.Flatten()\n"
      "        self.fc = nn.Dense(8 * 3 * 3, 5)\n",
      "        y = self.pool(self.relu(self.bn(self.conv(x))))\n"
      "        return self.fc(self.flat(y)) + 1\n",
      {f32({2, 3, 11, 11})});
  ASSERT_EQ(r.cells.size(), 1u);
  const CellReport& report = r.cells[0];
  runtime::ExecOptions eo;
  eo.seed = 3;
  Executor ex(report, eo);
  OnnxExportOptions oo;
  oo.producer_version = "test";
  const OnnxExportResult res = build_onnx(report, ex.params(), oo);
  ASSERT_TRUE(res.ok()) << res.diagnostics.front().message;
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(res.bytes));
  EXPECT_EQ(m.ir_version(), kOnnxIrVersion);
  ASSERT_EQ(m.opset_import_size(), 1);
  EXPECT_EQ(m.opset_import(0).domain(), "");
  EXPECT_EQ(m.opset_import(0).version(), kOnnxOpset);
  EXPECT_EQ(m.producer_name(), "cellscope");
  const onnx::GraphProto& g = m.graph();

  ASSERT_EQ(g.input_size(), 1);
  EXPECT_EQ(g.input(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
  std::vector<int64_t> in_dims;
  for (const auto& d : g.input(0).type().tensor_type().shape().dim())
    in_dims.push_back(d.dim_value());
  EXPECT_EQ(in_dims, (std::vector<int64_t>{2, 3, 11, 11}));
  ASSERT_EQ(g.output_size(), 1);
  std::vector<int64_t> out_dims;
  for (const auto& d : g.output(0).type().tensor_type().shape().dim())
    out_dims.push_back(d.dim_value());
  EXPECT_EQ(out_dims, (std::vector<int64_t>{2, 5}));

  // Every weight is an initializer holding the runtime's values, little-endian float32.
  std::set<std::string> defined{g.input(0).name()};
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& p : ex.params()) {
    const onnx::TensorProto* t = nullptr;
    for (const auto& i : g.initializer())
      if (i.name() == p.name) t = &i;
    ASSERT_NE(t, nullptr) << p.name;
    EXPECT_EQ(t->data_type(), onnx::TensorProto::FLOAT);
    EXPECT_EQ(std::vector<int64_t>(t->dims().begin(), t->dims().end()), p.value.shape());
    ASSERT_EQ(t->raw_data().size(), static_cast<size_t>(p.value.numel()) * 4) << p.name;
    float first = 0;
    std::memcpy(&first, t->raw_data().data(), 4);
    EXPECT_EQ(first, p.value.data<float>()[0]) << p.name;
  }

  // Topological order: every node input is defined before the node.
  std::vector<std::string> ops;
  for (const auto& n : g.node()) {
    for (const auto& i : n.input()) EXPECT_TRUE(defined.count(i)) << n.op_type() << " reads " << i;
    for (const auto& o : n.output()) defined.insert(o);
    ops.push_back(n.op_type());
  }
  EXPECT_TRUE(defined.count(g.output(0).name()));
  EXPECT_EQ(ops, (std::vector<std::string>{"Conv", "BatchNormalization", "Relu", "MaxPool",
                                           "Reshape", "Gemm", "Add"}));

  // Attributes from the recorded attributes: 'same' padding of an 11x11 input with stride 2
  // and a 3x3 kernel pads 1 on each side.
  const onnx::NodeProto& conv = g.node(0);
  EXPECT_EQ(conv.input_size(), 3);  // x, weight, bias
  EXPECT_EQ(ints(attr(conv, "strides")), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ints(attr(conv, "pads")), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(ints(attr(conv, "kernel_shape")), (std::vector<int64_t>{3, 3}));
  ASSERT_NE(attr(g.node(1), "epsilon"), nullptr);
  EXPECT_FLOAT_EQ(attr(g.node(1), "epsilon")->f(), 1e-3F);
  // The pool's 6x6 input: 'same' with stride 2 needs one row and column, added after (MindSpore
  // and TensorFlow put the odd one at the end).
  EXPECT_EQ(ints(attr(g.node(3), "pads")), (std::vector<int64_t>{0, 0, 1, 1}));
  EXPECT_EQ(attr(g.node(5), "transB")->i(), 1);
  EXPECT_EQ(res.nodes, 7u);
}

// 8-bit constants keep their values (they were written as 0/1, the bool encoding).
TEST(OnnxExport, Int8AndUInt8ConstantsKeepTheirValues) {
  const std::string text =
      "import mindspore as ms\nfrom mindspore import nn, ops\n\n\nclass Net(nn.Cell):\n"
      "    def __init__(self):\n        super().__init__()\n"
      "        self.a = ms.Tensor([-3, 5, 100, -128], ms.int8)\n"
      "        self.b = ms.Tensor([0, 7, 200, 255], ms.uint8)\n\n"
      "    def construct(self, x):\n"
      "        return x + ops.cast(self.a, ms.float32) + ops.cast(self.b, ms.float32)\n";
  MemorySourceProvider src("/mem/net.py", text);
  AnalysisOptions opts;
  opts.cell = "Net";
  opts.inputs = {f32({2, 4})};
  opts.constant_values = true;  // as `cellscope export` analyses (server/model_export.cpp)
  AnalysisResult r = analyze_file("/mem/net.py", opts, src);
  ASSERT_EQ(r.cells.size(), 1u);
  runtime::ExecOptions eo;
  Executor ex(r.cells[0], eo);
  const OnnxExportResult res = build_onnx(r.cells[0], ex.params(), {});
  ASSERT_TRUE(res.ok()) << res.diagnostics.front().message;
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(res.bytes));
  std::map<int, std::string> raw;  // data_type -> raw_data
  for (const auto& t : m.graph().initializer()) raw[t.data_type()] = t.raw_data();
  ASSERT_TRUE(raw.count(onnx::TensorProto::INT8));
  ASSERT_TRUE(raw.count(onnx::TensorProto::UINT8));
  const std::string i8 = raw[onnx::TensorProto::INT8];
  const std::string u8 = raw[onnx::TensorProto::UINT8];
  ASSERT_EQ(i8.size(), 4u);
  ASSERT_EQ(u8.size(), 4u);
  EXPECT_EQ(static_cast<int8_t>(i8[0]), -3);
  EXPECT_EQ(static_cast<int8_t>(i8[1]), 5);
  EXPECT_EQ(static_cast<int8_t>(i8[2]), 100);
  EXPECT_EQ(static_cast<int8_t>(i8[3]), -128);
  EXPECT_EQ(static_cast<uint8_t>(u8[1]), 7);
  EXPECT_EQ(static_cast<uint8_t>(u8[2]), 200);
  EXPECT_EQ(static_cast<uint8_t>(u8[3]), 255);
}

TEST(OnnxExport, UnmappedOperatorIsALocatedRefusal) {
  AnalysisResult r =
      compile("        self.fc = nn.Dense(4, 4)\n",
              "        y = self.fc(x)\n        return ops.logsumexp(y, 1)\n", {f32({2, 4})});
  ASSERT_EQ(r.cells.size(), 1u);
  const OpDef* def = find_op("LogSumExp");
  ASSERT_NE(def, nullptr);
  ASSERT_EQ(def->onnx, nullptr) << "LogSumExp got an ONNX rule: pick another unmapped operator";
  const std::vector<Diagnostic> d = check_onnx_export(r.cells[0]);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].code, "export-unsupported-op");
  EXPECT_NE(d[0].message.find("LogSumExp"), std::string::npos) << d[0].message;
  EXPECT_EQ(d[0].range.start.line, 11u);  // the return line (12), 0-based
  EXPECT_EQ(d[0].file, "/mem/net.py");
}

TEST(OnnxExport, SymbolicInputIsRefusedAtTheInputOnly) {
  AnalysisResult r =
      compile("        self.fc = nn.Dense(4, 4)\n", "        return self.fc(x)\n",
              {TensorType{Shape({Dim::symbol("N"), Dim::known(4)}), DType::Float32}});
  ASSERT_EQ(r.cells.size(), 1u);
  const std::vector<Diagnostic> d = check_onnx_export(r.cells[0]);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].code, "export-dynamic-shape");
  EXPECT_NE(d[0].message.find("(N, 4)"), std::string::npos) << d[0].message;
}

// The CLI writes every export format with the shared server helper write_file_atomic.
TEST(OnnxExport, AtomicWriteReplacesWholeAndLeavesNoTemporaryFile) {
  cellscope::testing::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::filesystem::path file = dir.path() / "m.onnx";
  cellscope::server::write_file_atomic(file, "first");
  cellscope::server::write_file_atomic(file, std::string(100000, 'x'));
  std::ifstream in(file, std::ios::binary);
  const std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(got, std::string(100000, 'x'));
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1u);
  // An unwritable destination: an error naming it, nothing created.
  EXPECT_THROW(cellscope::server::write_file_atomic(dir.path() / "missing" / "m.onnx", "x"),
               std::runtime_error);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "missing"));
}

TEST(OnnxExport, RulesExistForTheVisionModelOperators) {
  for (const char* op :
       {"Conv2D", "BiasAdd", "ReLU", "MaxPool", "AvgPool", "AdaptiveAvgPool2D", "ReduceMean",
        "BatchNorm", "Add", "Flatten", "Reshape", "MatMul", "Dense"}) {
    const OpDef* def = find_op(op);
    ASSERT_NE(def, nullptr) << op;
    EXPECT_NE(def->onnx, nullptr) << op;
  }
}

}  // namespace
}  // namespace graphcore
