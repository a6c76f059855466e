// Seeds of the mindir harness, written at build time (no committed binaries): `mindir_seeds DIR`
// writes small .mindir files there. Two come from Cellscope's own exporter (a Conv2d + BatchNorm +
// ReLU + MaxPool + Dense Cell, a Dense + GELU + LayerNorm + Softmax one, both analysed from source
// held in memory, small shapes so that a file stays a few KiB); one is written by hand in
// MindSpore's own form (Load / UpdateState / MakeTuple monads, a BiasAdd after MatMul, a
// primitive with no row), the shapes of the reader that the exporter never writes.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "graphcore/analysis.h"
#include "graphcore/mindir.h"
#include "graphcore/runtime.h"
#include "graphcore_proto/mind_ir.pb.h"

namespace {

namespace fs = std::filesystem;
namespace pb = cellscope::mindir;

const char* const kConvNet = R"(import mindspore.nn as nn


class ConvNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, pad_mode='pad', padding=1)
        self.bn = nn.BatchNorm2d(2)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(8, 3)

    def construct(self, x):
        x = self.pool(self.relu(self.bn(self.conv(x))))
        return self.fc(self.flatten(x))
)";

const char* const kDenseNet = R"(import mindspore.nn as nn
import mindspore.ops as ops


class DenseNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(4, 6)
        self.act = nn.GELU()
        self.norm = nn.LayerNorm((6,))
        self.fc2 = nn.Dense(6, 2)
        self.softmax = nn.Softmax(axis=-1)

    def construct(self, x):
        h = self.norm(self.act(self.fc1(x)))
        return self.softmax(self.fc2(h) * 2.0)
)";

bool write(const fs::path& file, const std::string& bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

// `source` analysed for `input`, exported with seeded weights; empty on any failure (reported).
std::string exported(const char* name, const char* source, const char* input) {
  const fs::path path = fs::path("/seeds") / (std::string(name) + ".py");
  graphcore::MemorySourceProvider mem(path, source);
  graphcore::AnalysisOptions opts;
  std::string why;
  auto spec = graphcore::parse_input_spec(input, &why);
  if (!spec) {
    std::fprintf(stderr, "mindir_seeds: %s: %s\n", name, why.c_str());
    return {};
  }
  opts.inputs.push_back(*spec);
  opts.constant_values = true;
  auto res = graphcore::analyze_file(path, opts, mem);
  if (res.cells.size() != 1) {
    std::fprintf(stderr, "mindir_seeds: %s: %zu cells\n", name, res.cells.size());
    return {};
  }
  graphcore::runtime::ExecOptions eo;
  eo.seed = 1;
  graphcore::runtime::Executor ex(res.cells[0], eo);
  auto out = graphcore::export_mindir(res.cells[0], ex.params());
  if (!out.errors.empty()) {
    std::fprintf(stderr, "mindir_seeds: %s: %s\n", name, out.errors[0].message.c_str());
    return {};
  }
  return out.bytes;
}

void tensor_type(pb::Tensor* t, std::initializer_list<int64_t> dims) {
  t->set_data_type(pb::Tensor::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
}

// MindSpore's form of Dense(3, 4) + an unmapped primitive: x -> Load(w), Load(b) -> MatMul ->
// BiasAdd -> UpdateState -> Depend -> MadeUpOp; two function graphs' worth of header.
std::string mindspore_style() {
  pb::Model m;
  m.set_ir_version("1.1");
  m.set_producer_name("MindSpore");
  m.set_model_version("2.10.0");
  m.set_little_endian(true);
  m.set_mind_ir_version(3);
  pb::Graph* g = m.mutable_graph();
  g->set_name("1_Net_construct_2");
  pb::ValueInfo* in = g->add_input();
  in->set_name("1_Net_construct_2:x");
  tensor_type(in->add_tensor(), {2, 3});
  auto weight = [&](const char* name, const char* key, std::initializer_list<int64_t> dims,
                    size_t bytes) {
    pb::Tensor* w = g->add_parameter();
    tensor_type(w, dims);
    w->set_name(name);
    w->set_ref_key(key);
    w->set_raw_data(std::string(bytes, '\x01'));
  };
  weight("1_Net_construct_2:fc.weight", "fc.weight", {4, 3}, 48);
  weight("1_Net_construct_2:fc.bias", "fc.bias", {4}, 16);
  auto prim = [&](const char* key, const char* op) {
    pb::Primitive* p = m.add_primitives();
    p->set_name(key);
    p->set_op_type(op);
    p->set_prim_type(pb::Primitive::PRIMITIVE_FUNCTION);
  };
  for (const char* op : {"Load", "MatMul", "BiasAdd", "UpdateState", "Depend", "MadeUpOp"})
    prim((std::string(op) + ":1").c_str(), op);
  auto constant = [&](const char* name, bool v) {
    pb::Node* n = g->add_node();
    n->set_op_type("Constant");
    n->set_name(name);
    n->add_output(name);
    pb::Attribute* a = n->add_attribute();
    a->set_name("value");
    a->set_type(pb::Attribute::BOOL);
    a->set_i(v ? 1 : 0);
  };
  constant("F", false);
  constant("T", true);
  auto node = [&](const char* name, const char* op, std::initializer_list<const char*> ins) {
    pb::Node* n = g->add_node();
    n->set_op_type(std::string("REF::") + op + ":1");
    n->set_name(name);
    n->add_output(name);
    n->set_domain("Default/fc-Dense/" + std::string(op) + "-op0");
    for (const char* i : ins) n->add_input(i);
    pb::Attribute* s = n->add_attribute();
    s->set_name("shape");
    s->set_type(pb::Attribute::TENSORS);
    tensor_type(s->add_tensors(), {2, 4});
  };
  node("w", "Load", {"1_Net_construct_2:fc.weight"});
  node("b", "Load", {"1_Net_construct_2:fc.bias"});
  node("mm", "MatMul", {"1_Net_construct_2:x", "w", "F", "T"});
  node("ba", "BiasAdd", {"mm", "b"});
  node("u", "UpdateState", {"w", "b"});
  node("d", "Depend", {"ba", "u"});
  node("odd", "MadeUpOp", {"d"});
  g->add_output()->set_name("odd");
  std::string bytes;
  m.SerializeToString(&bytes);
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: mindir_seeds DIR\n");
    return 2;
  }
  const fs::path dir = argv[1];
  std::error_code ec;
  fs::create_directories(dir, ec);
  const std::vector<std::pair<std::string, std::string>> seeds = {
      {"convnet.mindir", exported("convnet", kConvNet, "1,1,4,4")},
      {"densenet.mindir", exported("densenet", kDenseNet, "2,4")},
      {"mindspore-style.mindir", mindspore_style()},
  };
  for (const auto& [name, bytes] : seeds) {
    if (bytes.empty() || !write(dir / name, bytes)) {
      std::fprintf(stderr, "mindir_seeds: could not write %s\n", (dir / name).string().c_str());
      return 1;
    }
  }
  return 0;
}
