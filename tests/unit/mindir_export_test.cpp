// MindIR export (graphcore/mindir.h): the bytes decode with Cellscope's own schema
// (graphcore/proto/mind_ir.proto) into what MindSpore 2.10 loads (docs/mindir-notes.md); an
// operator without MindIR facts is refused at its line; a failing write leaves the old file.
// Loading in MindSpore itself: tests/mindspore/test_export_mindir.py.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
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

// An exported file decoded: the model, each primitive's op type by the name nodes refer to it
// with ("REF::name"), and each node by its output's name. Allocated once: `values` points into
// `model`.
struct Decoded {
  pb::Model model;
  std::map<std::string, std::string> prims;
  std::map<std::string, const pb::Node*> values;

  // The primitive of a computing node ("" for a Constant).
  [[nodiscard]] std::string prim(const pb::Node& n) const {
    auto it = prims.find(n.op_type());
    return it == prims.end() ? std::string() : it->second;
  }
};

std::unique_ptr<Decoded> decode(const MindirExport& out) {
  auto d = std::make_unique<Decoded>();
  if (!d->model.ParseFromString(out.bytes)) return nullptr;
  for (const auto& p : d->model.primitives()) d->prims["REF::" + p.name()] = p.op_type();
  for (const auto& n : d->model.graph().node()) d->values[n.output(0)] = &n;
  return d;
}

// The float of a 0-d float32 Constant node.
float scalar_float(const pb::Node& constant) {
  const pb::Tensor& t = constant.attribute(0).tensors(0);
  float v = 0;
  EXPECT_EQ(t.raw_data().size(), sizeof v);
  if (t.raw_data().size() == sizeof v) std::memcpy(&v, t.raw_data().data(), sizeof v);
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

// Two of mindcv's export blockers (edgenext's FloorDiv, coat's ops.Zeros), reduced: FloorDiv
// is the function primitive FloorDiv(input, other) with a scalar divisor as a 0-d tensor;
// ops.zeros / ops.Zeros are folded to a Constant tensor of zeros, as MindSpore's compile does
// (measured, docs/mindir-notes.md).
TEST(MindirExport, FloorDivAndZerosAsMindSporeWritesThem) {
  cellscope::testing::TempDir dir;
  const std::string file = dir.write("fz.py", R"(import mindspore as ms
import mindspore.nn as nn
import mindspore.ops as ops

class Net(nn.Cell):
    def construct(self, x):
        return x // 2.0, ops.Zeros()((2, 3), ms.float32) * x
)");
  AnalysisResult res = analyze(file, {"2,3"});
  ASSERT_EQ(res.cells.size(), 1u);
  MindirExport out = export_report(res.cells[0]);
  ASSERT_TRUE(out.errors.empty()) << out.errors[0].message;
  const auto d = decode(out);
  ASSERT_TRUE(d);
  std::multiset<std::string> ops;
  for (const auto& n : d->model.graph().node()) {
    if (n.op_type() != "Constant") ops.insert(d->prim(n));
  }
  EXPECT_EQ(ops, (std::multiset<std::string>{"FloorDiv", "Mul", "MakeTuple"}));
  for (const auto& n : d->model.graph().node()) {
    if (n.op_type() == "Constant") continue;
    const std::string prim = d->prim(n);
    if (prim == "FloorDiv") {
      ASSERT_EQ(n.input_size(), 2);
      const pb::Node* c = d->values.at(n.input(1));
      ASSERT_EQ(c->op_type(), "Constant");
      EXPECT_EQ(c->attribute(0).tensors(0).dims_size(), 0);
      EXPECT_EQ(scalar_float(*c), 2.0F);
    }
    if (prim == "Mul") {
      const pb::Node* z = d->values.at(n.input(0));
      ASSERT_EQ(z->op_type(), "Constant");
      const pb::Tensor& t = z->attribute(0).tensors(0);
      ASSERT_EQ(t.dims_size(), 2);
      EXPECT_EQ(t.dims(0), 2);
      EXPECT_EQ(t.dims(1), 3);
      EXPECT_EQ(t.raw_data(), std::string(6 * sizeof(float), '\0'));
    }
  }
}

// Roll as mindspore.numpy.roll writes it (MindirExpansion::RollSlices): per shifted axis two
// StridedSlices (len - k .. len, then 0 .. len - k) and a Concat on the axis; a whole period
// writes nothing; no axis: Reshape to one dim, the same pair, Reshape back. An integer tensor is
// refused (MindSpore casts it to float32 and back).
TEST(MindirExport, RollAsStridedSlicePairsAndConcat) {
  cellscope::testing::TempDir dir;
  const std::string file = dir.write("roll.py", R"(import mindspore as ms
import mindspore.nn as nn
import mindspore.numpy as mnp

class Net(nn.Cell):
    def construct(self, x):
        return mnp.roll(x, (-2, 7), (1, 2)), mnp.roll(x, 6, 1), mnp.roll(x, -5)

class IntNet(nn.Cell):
    def construct(self, x):
        return mnp.roll(x.astype(ms.int32), 1, 1)
)");
  AnalysisResult res = analyze(file, {"2,6,5"});
  ASSERT_EQ(res.cells.size(), 2u);
  const CellReport& net = res.cells[0].class_name == "Net" ? res.cells[0] : res.cells[1];
  const CellReport& int_net = res.cells[0].class_name == "Net" ? res.cells[1] : res.cells[0];
  MindirExport out = export_report(net);
  ASSERT_TRUE(out.errors.empty()) << out.errors[0].message;
  const auto d = decode(out);
  ASSERT_TRUE(d);
  std::multiset<std::string> ops;
  std::vector<std::vector<int64_t>> begins;
  std::vector<int64_t> concat_axes;
  auto ints = [&](const std::string& name) {
    const pb::Node* c = d->values.at(name);
    EXPECT_EQ(c->op_type(), "Constant");
    const pb::Attribute& a = c->attribute(0);
    if (a.values_size() > 0) return tuple_ints(a);
    return std::vector<int64_t>{a.i()};
  };
  for (const auto& n : d->model.graph().node()) {
    if (n.op_type() == "Constant") continue;
    const std::string prim = d->prim(n);
    ops.insert(prim);
    if (prim == "StridedSlice") {
      ASSERT_EQ(n.input_size(), 9);
      begins.push_back(ints(n.input(1)));
      for (int i = 4; i < 9; ++i) EXPECT_EQ(ints(n.input(i)), std::vector<int64_t>{0});
    }
    if (prim == "Concat") concat_axes.push_back(ints(n.input(1)).at(0));
  }
  // (-2, 7) on (6, 5): k = 4 on axis 1, 2 on axis 2; 6 on axis 1: a whole period; -5 flattened
  // (60 elements): k = 55.
  EXPECT_EQ(ops, (std::multiset<std::string>{"StridedSlice", "StridedSlice", "StridedSlice",
                                             "StridedSlice", "StridedSlice", "StridedSlice",
                                             "MakeTuple", "MakeTuple", "MakeTuple", "MakeTuple",
                                             "Concat", "Concat", "Concat", "Reshape", "Reshape"}));
  EXPECT_EQ(begins, (std::vector<std::vector<int64_t>>{
                        {0, 2, 0}, {0, 0, 0}, {0, 0, 3}, {0, 0, 0}, {5}, {0}}));
  EXPECT_EQ(concat_axes, (std::vector<int64_t>{1, 2, 0}));

  MindirExport refused = export_report(int_net);
  ASSERT_EQ(refused.errors.size(), 1u);
  EXPECT_NE(refused.errors[0].message.find("int32"), std::string::npos)
      << refused.errors[0].message;
}

// ops.clip_by_value as mindspore.export writes it (MindirExpansion::ClipForms): Maximum with the
// lower bound, then Minimum with the upper one; a None bound writes nothing and takes no input
// (`(x, None, t)`: t is the upper bound). ops.clamp with numbers is ClampScalar(x, min, max), a
// FLOAT or INT64 scalar or NONE per bound (measured); a tensor bound beside a number: refused.
TEST(MindirExport, ClipByValueAsMaximumAndMinimum) {
  cellscope::testing::TempDir dir;
  const std::string file = dir.write("clip.py", R"(import mindspore.nn as nn
import mindspore.ops as ops
from mindspore import Tensor
from mindspore import dtype as mstype

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.hi = ops.log(Tensor(2.0, mstype.float32))

    def construct(self, x):
        return ops.clip_by_value(x, -0.5, self.hi), ops.clip_by_value(x, None, self.hi)

class Clamp(nn.Cell):
    def construct(self, x):
        return ops.clamp(x, -1.0, 1.0) + ops.clip(x, max=6)

class Mixed(nn.Cell):
    def construct(self, x):
        return ops.clamp(x, x * 0.5, 1.0)
)");
  AnalysisResult res = analyze(file, {"2,3"});
  ASSERT_EQ(res.cells.size(), 3u);
  auto cell = [&](std::string_view name) -> const CellReport& {
    for (const auto& c : res.cells) {
      if (c.class_name == name) return c;
    }
    throw std::runtime_error("no cell " + std::string(name));
  };
  MindirExport out = export_report(cell("Net"));
  ASSERT_TRUE(out.errors.empty()) << out.errors[0].message;
  const auto d = decode(out);
  ASSERT_TRUE(d);
  std::vector<std::string> ops;
  std::vector<float> constants;  // the second input of each Maximum / Minimum, when constant
  for (const auto& n : d->model.graph().node()) {
    if (n.op_type() == "Constant") continue;
    const std::string prim = d->prim(n);
    ops.push_back(prim);
    if (prim != "Maximum" && prim != "Minimum") continue;
    const pb::Node* c = d->values.at(n.input(1));
    ASSERT_EQ(c->op_type(), "Constant");
    constants.push_back(scalar_float(*c));
  }
  EXPECT_EQ(ops, (std::vector<std::string>{"Maximum", "Minimum", "Minimum", "MakeTuple"}));
  // -0.5, then log(2) computed at construction (the constant's value), twice.
  ASSERT_EQ(constants.size(), 3u);
  EXPECT_EQ(constants[0], -0.5F);
  EXPECT_FLOAT_EQ(constants[1], std::log(2.0F));
  EXPECT_FLOAT_EQ(constants[2], std::log(2.0F));

  MindirExport clamp = export_report(cell("Clamp"));
  ASSERT_TRUE(clamp.errors.empty()) << clamp.errors[0].message;
  const auto c = decode(clamp);
  ASSERT_TRUE(c);
  // (type, value) of each bound of each ClampScalar, in order.
  std::vector<std::pair<int, double>> bounds;
  for (const auto& n : c->model.graph().node()) {
    if (n.op_type() == "Constant" || c->prim(n) != "ClampScalar") continue;
    ASSERT_EQ(n.input_size(), 3);
    for (int k = 1; k < 3; ++k) {
      const pb::Attribute& a = c->values.at(n.input(k))->attribute(0);
      bounds.emplace_back(static_cast<int>(a.type()), a.type() == pb::Attribute::FLOAT ? a.f()
                                                      : a.type() == pb::Attribute::INT64
                                                          ? static_cast<double>(a.i())
                                                          : 0.0);
    }
  }
  using A = pb::Attribute;
  EXPECT_EQ(bounds, (std::vector<std::pair<int, double>>{
                        {A::FLOAT, -1.0}, {A::FLOAT, 1.0}, {A::NONE, 0.0}, {A::INT64, 6.0}}));

  MindirExport refused = export_report(cell("Mixed"));
  ASSERT_EQ(refused.errors.size(), 1u);
  EXPECT_NE(refused.errors[0].message.find("a tensor bound beside a number bound"),
            std::string::npos)
      << refused.errors[0].message;
}

// Tensors built in __init__ by ops.zeros / ops.ones and by an elementwise function of a known
// constant are constants of known elements (CMT's relative-position buffers, SwinV2's
// ops.log(Tensor(100))): written with their values, not refused as "its value is not known".
TEST(MindirExport, ConstantsBuiltAtConstructionHaveTheirValues) {
  cellscope::testing::TempDir dir;
  const std::string file = dir.write("consts.py", R"(import mindspore as ms
import mindspore.nn as nn
import mindspore.ops as ops
from mindspore import Tensor

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.zeros = ops.zeros((2, 3), ms.float32)
        self.ones = ops.ones((2, 3), ms.float32)
        self.e = ops.exp(Tensor(1.0, ms.float32))

    def construct(self, x):
        return x + self.zeros, x * self.ones, x - self.e
)");
  AnalysisResult res = analyze(file, {"2,3"});
  ASSERT_EQ(res.cells.size(), 1u);
  MindirExport out = export_report(res.cells[0]);
  ASSERT_TRUE(out.errors.empty()) << out.errors[0].message;
  pb::Model m;
  ASSERT_TRUE(m.ParseFromString(out.bytes));
  std::multiset<std::vector<float>> constants;  // the float32 Constant tensors' elements
  for (const auto& n : m.graph().node()) {
    if (n.op_type() != "Constant" || n.attribute_size() == 0) continue;
    const pb::Attribute& a = n.attribute(0);
    if (a.tensors_size() == 0 || a.tensors(0).data_type() != pb::Tensor::FLOAT) {
      continue;
    }
    const std::string& raw = a.tensors(0).raw_data();
    std::vector<float> v(raw.size() / sizeof(float));
    std::memcpy(v.data(), raw.data(), v.size() * sizeof(float));
    constants.insert(v);
  }
  EXPECT_EQ(constants.count(std::vector<float>(6, 0.0F)), 1u);
  EXPECT_EQ(constants.count(std::vector<float>(6, 1.0F)), 1u);
  EXPECT_EQ(constants.count(std::vector<float>{std::exp(1.0F)}), 1u);
}

// The rows BERT-base and ViT-B/16 need, in the forms mindspore.export writes them
// (docs/mindir-notes.md): Gather(table, ids, 0, 0), scalar operands as 0-d tensors, Cast's TypeId,
// ZerosLike / Range folded to constant tensors, Unstack's tuple read by TupleGetItem, Concat over
// a MakeTuple, Tile's multiples, StridedSlice's masks, exact GELU as Div/Erf/Add/Mul/Mul,
// nn.Dense's activation after its BiasAdd; a weight only an untaken branch reads is left out.
TEST(MindirExport, TransformerRowsAsMindSporeWritesThem) {
  cellscope::testing::TempDir dir;
  const std::string file = dir.write("net.py", R"(import mindspore as ms
import mindspore.nn as nn
import mindspore.ops as ops

class Net(nn.Cell):
    def __init__(self, use_extra=False):
        super().__init__()
        self.emb = nn.Embedding(20, 4)
        self.extra = nn.Dense(4, 4)
        self.use_extra = use_extra
        self.pool = nn.Dense(8, 4, activation='tanh')
        self.gelu = nn.GELU(approximate=False)
        self.unstack = ops.Unstack(axis=0)
        self.cat = ops.Concat(axis=1)
        self.tile = ops.Tile()

    def construct(self, ids):
        zeros = ops.zeros_like(ids)
        mask = ops.cast(ops.not_equal(ids, 0), ms.float32)
        bias = (1.0 - mask) * -10000.0
        pos = ops.arange(6, dtype=ms.int32).reshape(1, -1)
        e = self.emb(ids) + self.emb(pos) + self.emb(zeros)
        if self.use_extra:
            e = self.extra(e)
        a, b = self.unstack(self.tile(e, (2, 1, 1)))
        c = self.cat((a, b))
        g = self.gelu(c).reshape(2, 3, 8)
        return self.pool(g[:, 0]), bias
)");
  AnalysisResult res = analyze(file, {"1,6:int32"});
  ASSERT_EQ(res.cells.size(), 1u);
  MindirExport out = export_report(res.cells[0]);
  ASSERT_TRUE(out.errors.empty()) << out.errors[0].message;
  pb::Model m;
  ASSERT_TRUE(m.ParseFromString(out.bytes));

  std::map<std::string, const pb::Primitive*> prims;
  for (const auto& p : m.primitives()) prims[p.name()] = &p;
  std::map<std::string, const pb::Attribute*> constants;
  std::map<std::string, int> op_count;
  std::set<std::string> defined;
  for (const auto& t : m.graph().parameter()) defined.insert(t.name());
  for (const auto& i : m.graph().input()) defined.insert(i.name());
  auto constant_dims = [&](const std::string& name) {
    const pb::Tensor& t = constants.at(name)->tensors(0);
    return std::vector<int64_t>(t.dims().begin(), t.dims().end());
  };
  std::vector<std::vector<int64_t>> gather_index_dims;
  for (const auto& n : m.graph().node()) {
    for (const auto& i : n.input()) EXPECT_TRUE(defined.contains(i)) << i << " used before";
    defined.insert(n.output(0));
    if (n.op_type() == "Constant") {
      constants[n.output(0)] = &n.attribute(0);
      continue;
    }
    const pb::Primitive& p = *prims.at(n.op_type().substr(5));
    ++op_count[p.op_type()];
    if (p.op_type() == "Gather") {  // (input_params, input_indices, axis, batch_dims)
      ASSERT_EQ(n.input_size(), 4);
      EXPECT_TRUE(n.input(0).ends_with(":emb.embedding_table")) << n.input(0);
      EXPECT_EQ(constants.at(n.input(2))->i(), 0);
      EXPECT_EQ(constants.at(n.input(3))->i(), 0);
      if (constants.contains(n.input(1))) gather_index_dims.push_back(constant_dims(n.input(1)));
    }
    if (p.op_type() == "NotEqual") {  // ids != 0: the 0 a 0-d int32 tensor
      ASSERT_EQ(n.input_size(), 2);
      const pb::Tensor& zero = constants.at(n.input(1))->tensors(0);
      EXPECT_EQ(zero.dims_size(), 0);
      EXPECT_EQ(zero.data_type(), pb::Tensor::INT32);
    }
    if (p.op_type() == "Sub") {  // 1.0 - mask: the scalar first, float32
      EXPECT_EQ(constants.at(n.input(0))->tensors(0).data_type(), pb::Tensor::FLOAT);
    }
    if (p.op_type() == "Cast") {
      ASSERT_EQ(n.input_size(), 2);
      EXPECT_EQ(constants.at(n.input(1))->i(), 43);  // TypeId kNumberTypeFloat32
    }
    if (p.op_type() == "Unstack") {
      EXPECT_EQ(p.prim_type(), pb::Primitive::PRIMITIVE);
      EXPECT_EQ(find_attr(p, "num")->i(), 2);
      EXPECT_EQ(find_attr(p, "axis")->i(), 0);
    }
    if (p.op_type() == "Tile") {
      EXPECT_EQ(tuple_ints(*constants.at(n.input(1))), (std::vector<int64_t>{2, 1, 1}));
    }
    if (p.op_type() == "Concat") {
      ASSERT_EQ(n.input_size(), 2);
      EXPECT_EQ(constants.at(n.input(1))->i(), 1);
    }
    if (p.op_type() == "StridedSlice") {  // [:, 0]: begin_mask 1, end_mask 1, shrink_axis 2
      ASSERT_EQ(n.input_size(), 9);
      EXPECT_EQ(tuple_ints(*constants.at(n.input(1))), (std::vector<int64_t>{0, 0}));
      EXPECT_EQ(tuple_ints(*constants.at(n.input(2))), (std::vector<int64_t>{0, 1}));
      EXPECT_EQ(constants.at(n.input(4))->i(), 1);
      EXPECT_EQ(constants.at(n.input(8))->i(), 2);
    }
  }
  // zeros_like(ids) and arange(6).reshape(1, -1): folded into the tensors the Gathers read.
  EXPECT_EQ(op_count["ZerosLike"], 0);
  EXPECT_EQ(op_count["Range"], 0);
  EXPECT_EQ(op_count["Gather"], 3);
  EXPECT_EQ(gather_index_dims.size(), 1u);  // zeros; the range goes through its Reshape
  bool folded_range = false;
  for (const auto& [name, a] : constants) {
    if (a->type() != pb::Attribute::TENSORS || a->tensors(0).dims_size() != 1) continue;
    const std::string& raw = a->tensors(0).raw_data();
    if (a->tensors(0).data_type() != pb::Tensor::INT32 || raw.size() != 24) continue;
    std::vector<int32_t> v(6);
    std::memcpy(v.data(), raw.data(), 24);
    folded_range = folded_range || v == std::vector<int32_t>{0, 1, 2, 3, 4, 5};
  }
  EXPECT_TRUE(folded_range);
  EXPECT_EQ(op_count["TupleGetItem"], 2);  // Unstack's two outputs
  EXPECT_EQ(op_count["MakeTuple"], 2);     // Concat's tensors, the two graph outputs
  EXPECT_EQ(op_count["Erf"], 1);           // exact GELU
  EXPECT_EQ(op_count["Div"], 1);
  EXPECT_EQ(op_count["GeLU"], 0);
  EXPECT_EQ(op_count["Tanh"], 1);  // nn.Dense(activation='tanh')
  // The untaken branch's nn.Dense: its weights are not written.
  for (const auto& t : m.graph().parameter()) {
    EXPECT_FALSE(t.ref_key().starts_with("extra.")) << t.ref_key();
  }
  EXPECT_EQ(m.graph().parameter_size(), 3);
}

// The file's ms.export(...) call, recorded when the module is evaluated: the root Cell its
// network is, its inputs' types, file_name and file_format as given; an input whose shape the
// evaluator cannot know makes the call unfollowed, with the reason.
TEST(MindirExport, ExportCallRecordedAtEvaluation) {
  cellscope::testing::TempDir dir;
  const std::string file = dir.write("net.py", R"(import numpy as np
import mindspore as ms
import mindspore.nn as nn

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 3)

    def construct(self, x):
        return self.fc(x)

if __name__ == "__main__":
    net = Net()
    ms.export(net, ms.Tensor(np.ones((2, 4)), ms.float32), file_name="net", file_format="ONNX")
    ms.export(net, ms.Tensor(np.load("x.npy")), file_name="other", file_format="MINDIR")
)");
  AnalysisResult res = analyze(file, {});
  ASSERT_EQ(res.exports.size(), 2u);
  const graphcore::ExportCall& e = res.exports[0];
  EXPECT_EQ(e.cell, "Net");
  EXPECT_TRUE(e.unfollowed.empty()) << e.unfollowed;
  ASSERT_EQ(e.inputs.size(), 1u);
  EXPECT_EQ(e.inputs[0].shape.str(), "(2, 4)");
  EXPECT_EQ(e.inputs[0].dtype, graphcore::DType::Float32);
  EXPECT_EQ(e.file_name, "net");
  EXPECT_EQ(e.file_format, "ONNX");
  EXPECT_EQ(e.call.range.start.line, 14);
  EXPECT_EQ(e.call.api, "ms.export");
  EXPECT_NE(res.exports[1].unfollowed.find("input 1"), std::string::npos)
      << res.exports[1].unfollowed;
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
        return ops.logsumexp(self.fc(x), 1), ops.pad(self.pool(y), (1, 1), mode='reflect')
)");
  AnalysisResult res = analyze(file, {"2,4", "1,1,6,6"});
  ASSERT_EQ(res.cells.size(), 1u);
  MindirExport out = export_report(res.cells[0]);
  EXPECT_TRUE(out.bytes.empty());
  ASSERT_EQ(out.errors.size(), 2u);
  EXPECT_EQ(out.errors[0].code, "export-unsupported-op");
  EXPECT_EQ(out.errors[1].code, "export-unsupported-op");
  EXPECT_EQ(out.errors[0].range.start.line, 10);
  EXPECT_NE(out.errors[0].message.find("LogSumExp"), std::string::npos) << out.errors[0].message;
  // A mapped operator in a form MindSpore exports as another primitive (ops.pad's reflect mode
  // is MirrorPad): refused too. (MaxPool2d with padding, refused here before, is written now.)
  EXPECT_NE(out.errors[1].message.find("reflect"), std::string::npos) << out.errors[1].message;
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
