// Streamed model files (graphcore/model_file.h): the exporters' weights are views of the
// runtime's tensors framed by hand in protobuf's wire format, so the bytes must still parse as
// the whole message; MindSpore's split MindIR layout (graph + <stem>_variables/data_0, 64-byte
// header and alignment); and the CLI's writers for one file and for a graph + data file set
// (server/files.h), whose old set survives a failing write.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>

#include "files.h"
#include "graphcore/analysis.h"
#include "graphcore/export_onnx.h"
#include "graphcore/mindir.h"
#include "graphcore/model_file.h"
#include "graphcore/runtime.h"
#include "graphcore_proto/mind_ir.pb.h"
#include "onnx/onnx.pb.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;
namespace pb = cellscope::mindir;
using graphcore::ModelFile;
using graphcore::runtime::Tensor;

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::string tensor_bytes(const Tensor& t) {
  return {reinterpret_cast<const char*>(t.data<float>()), static_cast<size_t>(t.numel()) * 4};
}

graphcore::AnalysisResult lenet() {
  graphcore::AnalysisOptions opts;
  std::string why;
  auto t = graphcore::parse_input_spec("2,1,32,32", &why);
  EXPECT_TRUE(t.has_value()) << why;
  if (t) opts.inputs.push_back(*t);
  opts.constant_values = true;
  graphcore::DiskSourceProvider disk;
  return graphcore::analyze_file(fs::path(CELLSCOPE_CORPUS_DIR) / "models/lenet5.py", opts, disk);
}

graphcore::runtime::Executor executor(const graphcore::CellReport& report) {
  graphcore::runtime::ExecOptions eo;
  eo.seed = 5;
  return graphcore::runtime::Executor(report, eo);
}

TEST(ModelFile, WireHelpers) {
  EXPECT_EQ(graphcore::wire::varint(0), std::string(1, '\0'));
  EXPECT_EQ(graphcore::wire::varint(300), "\xAC\x02");
  EXPECT_EQ(graphcore::wire::varint_size(uint64_t{1} << 35), 6u);
  // Field 3, wire type 2, length 200: key 0x1A, length 0xC8 0x01.
  EXPECT_EQ(graphcore::wire::length_delimited(3, 200), "\x1A\xC8\x01");
  EXPECT_EQ(graphcore::wire::framed_size(3, 200), 203u);
}

TEST(ModelFile, PiecesAndHalfConversion) {
  ModelFile f;
  f.append("ab");
  f.append("c");
  const Tensor w = Tensor::from_floats({3}, {1.0F, -2.0F, 0.5F});
  f.append_tensor(w, false);
  Tensor h = Tensor::from_floats({2}, {1.0F, 65504.0F}).cast(graphcore::DType::Float16);
  f.append_tensor(h, true);
  EXPECT_EQ(f.size(), 3u + 12u + 4u);
  EXPECT_EQ(f.owned_bytes(), 3u);
  const std::string s = f.to_string();
  ASSERT_EQ(s.size(), f.size());
  EXPECT_EQ(s.substr(0, 3), "abc");
  EXPECT_EQ(s.substr(3, 12), tensor_bytes(w));
  uint16_t half[2];
  std::memcpy(half, s.data() + 15, 4);
  EXPECT_EQ(half[0], 0x3C00);  // 1.0
  EXPECT_EQ(half[1], 0x7BFF);  // 65504, the largest finite binary16
  EXPECT_EQ(graphcore::binary16_bits(-2.0F), 0xC000);
  EXPECT_THROW(f.append_tensor(w, true), std::logic_error);  // only Float16 is written as half
}

// The streamed MindIR parses as the whole ModelProto, holds the runtime's bytes for every weight,
// and the ModelFile owns only the structure (the weights are not copied).
TEST(ModelFile, MindirStreamedParsesWhole) {
  auto res = lenet();
  ASSERT_EQ(res.cells.size(), 1u);
  auto ex = executor(res.cells[0]);
  graphcore::MindirOptions mo;
  mo.file_stem = "lenet";
  const graphcore::MindirExport out = graphcore::export_mindir(res.cells[0], ex.params(), mo);
  ASSERT_TRUE(out.errors.empty()) << out.errors[0].message;
  EXPECT_FALSE(out.split);
  uint64_t weights = 0;
  for (const auto& p : ex.params()) weights += static_cast<uint64_t>(p.value.numel()) * 4;
  EXPECT_EQ(out.file.size() - out.file.owned_bytes(), weights);
  EXPECT_LT(out.file.owned_bytes(), weights / 4);

  pb::Model m;
  ASSERT_TRUE(m.ParseFromString(out.file.to_string()));
  EXPECT_EQ(m.producer_name(), "MindSpore");
  EXPECT_GT(m.graph().node_size(), 10);
  EXPECT_GT(m.primitives_size(), 3);
  ASSERT_EQ(static_cast<size_t>(m.graph().parameter_size()), ex.params().size());
  for (const auto& t : m.graph().parameter()) {
    const graphcore::runtime::ParamState* p = nullptr;
    for (const auto& q : ex.params())
      if (q.name == t.ref_key()) p = &q;
    ASSERT_NE(p, nullptr) << t.ref_key();
    EXPECT_EQ(t.raw_data(), tensor_bytes(p->value)) << t.ref_key();
    EXPECT_FALSE(t.has_external_data());
  }
  // The in-memory form (tests, small files) is the same bytes.
  EXPECT_EQ(graphcore::export_mindir(res.cells[0], ex.params()).bytes, out.file.to_string());
}

// Above the threshold (here 0 bytes): MindSpore's split layout. The graph keeps no raw_data;
// each weight's external_data names "<stem>_variables/data_0", an offset past the 64-byte header
// and a multiple of 64, in parameter-name order, and its unpadded length.
TEST(ModelFile, MindirSplitLayout) {
  auto res = lenet();
  ASSERT_EQ(res.cells.size(), 1u);
  auto ex = executor(res.cells[0]);
  graphcore::MindirOptions mo;
  mo.file_stem = "lenet";
  mo.split_threshold = 0;
  const graphcore::MindirExport out = graphcore::export_mindir(res.cells[0], ex.params(), mo);
  ASSERT_TRUE(out.errors.empty()) << out.errors[0].message;
  ASSERT_TRUE(out.split);
  ASSERT_EQ(out.data_files.size(), 1u);
  EXPECT_EQ(out.data_files[0].location, "lenet_variables/data_0");
  EXPECT_EQ(out.file.owned_bytes(), out.file.size());  // the graph holds no weight

  pb::Model m;
  ASSERT_TRUE(m.ParseFromString(out.file.to_string()));
  const std::string data = out.data_files[0].file.to_string();
  ASSERT_GE(data.size(), 64u);
  EXPECT_EQ(data[0], 1);  // little-endian host
  EXPECT_EQ(data.substr(1, 63), std::string(63, '\0'));
  EXPECT_EQ(data.size() % 64, 0u);
  std::map<int64_t, std::string> by_offset;
  for (const auto& t : m.graph().parameter()) {
    EXPECT_TRUE(t.raw_data().empty()) << t.ref_key();
    ASSERT_TRUE(t.has_external_data()) << t.ref_key();
    const auto& e = t.external_data();
    EXPECT_EQ(e.location(), "lenet_variables/data_0");
    EXPECT_GE(e.offset(), 64);
    EXPECT_EQ(e.offset() % 64, 0);
    const graphcore::runtime::ParamState* p = nullptr;
    for (const auto& q : ex.params())
      if (q.name == t.ref_key()) p = &q;
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(e.length(), p->value.numel() * 4);
    ASSERT_LE(static_cast<size_t>(e.offset() + e.length()), data.size());
    EXPECT_EQ(data.substr(static_cast<size_t>(e.offset()), static_cast<size_t>(e.length())),
              tensor_bytes(p->value))
        << t.ref_key();
    by_offset[e.offset()] = t.ref_key();
  }
  std::string previous;
  for (const auto& [offset, name] : by_offset) {
    EXPECT_LT(previous, name) << "data in parameter-name order, as mindspore.export writes it";
    previous = name;
  }
}

// The streamed ONNX model parses to the same message as the one serialized in memory.
TEST(ModelFile, OnnxStreamedEqualsInMemory) {
  auto res = lenet();
  ASSERT_EQ(res.cells.size(), 1u);
  auto ex = executor(res.cells[0]);
  graphcore::OnnxExportOptions plain;
  graphcore::OnnxExportOptions streamed;
  streamed.stream_weights = true;
  const auto a = graphcore::build_onnx(res.cells[0], ex.params(), plain);
  const auto b = graphcore::build_onnx(res.cells[0], ex.params(), streamed);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(b.bytes.empty());
  EXPECT_LT(b.file.owned_bytes(), b.file.size() / 4);
  onnx::ModelProto ma;
  onnx::ModelProto mb;
  ASSERT_TRUE(ma.ParseFromString(a.bytes));
  ASSERT_TRUE(mb.ParseFromString(b.file.to_string()));
  EXPECT_EQ(ma.graph().initializer_size(), mb.graph().initializer_size());
  EXPECT_EQ(ma.SerializeAsString(), mb.SerializeAsString());
}

// Above the threshold (here 0): ONNX external data. Each weight's initializer names the data
// file, a 4096-aligned offset and its length, with data_location EXTERNAL and no raw_data; the
// data file holds the runtime's bytes there. Small constants stay inline.
TEST(ModelFile, OnnxExternalData) {
  auto res = lenet();
  ASSERT_EQ(res.cells.size(), 1u);
  auto ex = executor(res.cells[0]);
  graphcore::OnnxExportOptions oo;
  oo.stream_weights = true;
  oo.external_threshold = 0;
  oo.external_location = "m.onnx.data";
  const auto r = graphcore::build_onnx(res.cells[0], ex.params(), oo);
  ASSERT_TRUE(r.ok()) << r.diagnostics.front().message;
  EXPECT_EQ(r.data_location, "m.onnx.data");
  EXPECT_EQ(r.file.owned_bytes(), r.file.size());
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(r.file.to_string()));
  const std::string data = r.data_file.to_string();
  size_t external = 0;
  for (const auto& t : m.graph().initializer()) {
    const graphcore::runtime::ParamState* p = nullptr;
    for (const auto& q : ex.params())
      if (q.name == t.name()) p = &q;
    if (p == nullptr) {
      EXPECT_NE(t.data_location(), onnx::TensorProto::EXTERNAL) << t.name();
      continue;
    }
    ++external;
    EXPECT_EQ(t.data_location(), onnx::TensorProto::EXTERNAL);
    EXPECT_FALSE(t.has_raw_data());
    std::map<std::string, std::string> kv;
    for (const auto& e : t.external_data()) kv[e.key()] = e.value();
    EXPECT_EQ(kv["location"], "m.onnx.data");
    const size_t offset = std::stoull(kv["offset"]);
    const size_t length = std::stoull(kv["length"]);
    EXPECT_EQ(offset % 4096, 0u);
    ASSERT_EQ(length, static_cast<size_t>(p->value.numel()) * 4);
    ASSERT_LE(offset + length, data.size());
    EXPECT_EQ(data.substr(offset, length), tensor_bytes(p->value)) << t.name();
  }
  EXPECT_EQ(external, ex.params().size());
}

// float16 weights (float32 storage in the runtime) go to ONNX as FLOAT16 with binary16 raw_data,
// streamed (converted in chunks) or in memory alike.
TEST(ModelFile, OnnxFloat16Weights) {
  cellscope::testing::TempDir dir;
  const std::string file = dir.write("half.py",
                                     "import numpy as np\n"
                                     "import mindspore as ms\n"
                                     "import mindspore.nn as nn\n"
                                     "from mindspore import Parameter, Tensor\n"
                                     "\n"
                                     "class Half(nn.Cell):\n"
                                     "    def __init__(self):\n"
                                     "        super().__init__()\n"
                                     "        self.fc = nn.Dense(8, 4, dtype=ms.float16)\n"
                                     "        self.shift = Parameter(Tensor(np.full((4,), 0.5, "
                                     "np.float16)), name='shift')\n"
                                     "\n"
                                     "    def construct(self, x):\n"
                                     "        return self.fc(x) + self.shift\n");
  graphcore::AnalysisOptions opts;
  std::string why;
  auto t = graphcore::parse_input_spec("2,8:float16", &why);
  ASSERT_TRUE(t.has_value()) << why;
  opts.inputs.push_back(*t);
  graphcore::DiskSourceProvider disk;
  auto res = graphcore::analyze_file(file, opts, disk);
  ASSERT_EQ(res.cells.size(), 1u);
  auto ex = executor(res.cells[0]);
  graphcore::OnnxExportOptions streamed;
  streamed.stream_weights = true;
  const auto a = graphcore::build_onnx(res.cells[0], ex.params(), {});
  const auto b = graphcore::build_onnx(res.cells[0], ex.params(), streamed);
  ASSERT_TRUE(a.ok() && b.ok()) << (a.ok() ? b : a).diagnostics.front().message;
  onnx::ModelProto ma;
  onnx::ModelProto mb;
  ASSERT_TRUE(ma.ParseFromString(a.bytes));
  ASSERT_TRUE(mb.ParseFromString(b.file.to_string()));
  EXPECT_EQ(ma.SerializeAsString(), mb.SerializeAsString());
  EXPECT_EQ(mb.graph().input(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT16);
  size_t checked = 0;
  for (const auto& p : ex.params()) {
    ASSERT_EQ(p.value.dtype(), graphcore::DType::Float16) << p.name;
    for (const auto& init : mb.graph().initializer()) {
      if (init.name() != p.name) continue;
      EXPECT_EQ(init.data_type(), onnx::TensorProto::FLOAT16);
      ASSERT_EQ(init.raw_data().size(), static_cast<size_t>(p.value.numel()) * 2);
      for (int64_t i = 0; i < p.value.numel(); ++i) {
        uint16_t h = 0;
        std::memcpy(&h, init.raw_data().data() + 2 * i, 2);
        EXPECT_EQ(h, graphcore::binary16_bits(p.value.data<float>()[i])) << p.name << " " << i;
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 3u);
}

// One file: written piece by piece, atomically.
TEST(ModelFile, WriteModelFileAtomic) {
  cellscope::testing::TempDir dir;
  ModelFile f;
  f.append("head");
  f.append_tensor(Tensor::from_floats({2}, {3.0F, 4.0F}), false);
  const fs::path target = dir.path() / "m.onnx";
  dir.write("m.onnx", "old");
  cellscope::server::write_model_file_atomic(target, f);
  EXPECT_EQ(read_file(target), f.to_string());
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 1u);
}

// A graph + data set replaces the old one: the data file goes under a new name first, the graph
// file is the commit point, then the old data file (and stray temporaries) are removed. A data
// write that fails half-way (the file size limit, as a full disk would) leaves the old set whole.
TEST(ModelFile, WriteModelSetReplacesOldSet) {
  cellscope::testing::TempDir dir;
  const fs::path graph = dir.path() / "m_graph.mindir";
  dir.write("m_graph.mindir", "old graph naming data_0");
  dir.write("m_variables/data_0", "old data");
  dir.write("m_variables/.data_5.tmp.abc123", "a temporary file left by a kill");
  dir.write("m_variables/notes.txt", "not ours");

  ModelFile big;
  big.append(std::string(64, '\0'));
  big.append_tensor(Tensor::full({4096}, 1.5), false);
  ModelFile g;
  g.append("new graph naming data_1");

  struct rlimit old_limit {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old_limit;
  small.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  EXPECT_THROW(
      cellscope::server::write_model_set_atomic(graph, g, {{"m_variables/data_1", &big}}, "data_"),
      std::system_error);
  setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(read_file(graph), "old graph naming data_0");
  EXPECT_EQ(read_file(dir.path() / "m_variables/data_0"), "old data");
  EXPECT_FALSE(fs::exists(dir.path() / "m_variables/data_1"));

  cellscope::server::write_model_set_atomic(graph, g, {{"m_variables/data_1", &big}}, "data_");
  EXPECT_EQ(read_file(graph), g.to_string());
  EXPECT_EQ(read_file(dir.path() / "m_variables/data_1"), big.to_string());
  EXPECT_FALSE(fs::exists(dir.path() / "m_variables/data_0"));
  EXPECT_FALSE(fs::exists(dir.path() / "m_variables/.data_5.tmp.abc123"));
  EXPECT_TRUE(fs::exists(dir.path() / "m_variables/notes.txt"));
}

// kill -9 at random moments while a set is replaced: afterwards the graph file always names a
// data file that exists and holds that set's bytes (the old set or the new one, never a mix).
TEST(ModelFile, WriteModelSetSurvivesKill) {
  cellscope::testing::TempDir dir;
  const fs::path graph = dir.path() / "k_graph.mindir";
  auto data_for = [](int round) {
    ModelFile d;
    d.append(std::string(64, static_cast<char>(round)));
    d.append_tensor(Tensor::full({1 << 21}, static_cast<double>(round)), false);  // 8 MiB
    return d;
  };
  auto write_round = [&](int round) {
    std::string location;
    for (int n = 0;; ++n) {
      location = "k_variables/data_" + std::to_string(n);
      if (!fs::exists(dir.path() / location)) break;
    }
    ModelFile g;
    g.append(std::to_string(round) + " " + location);
    const ModelFile d = data_for(round);
    cellscope::server::write_model_set_atomic(graph, g, {{location, &d}}, "data_");
  };
  write_round(0);
  std::mt19937 rng(12345);
  int kept_old = 0;
  int got_new = 0;
  int current = 0;
  for (int round = 1; round <= 8; ++round) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      write_round(round);
      ::_exit(0);
    }
    ::usleep(static_cast<useconds_t>(std::uniform_int_distribution<int>(0, 60000)(rng)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    const std::string g = read_file(graph);
    const auto space = g.find(' ');
    ASSERT_NE(space, std::string::npos) << g;
    const int named = std::stoi(g.substr(0, space));
    ASSERT_TRUE(named == current || named == round) << g;
    EXPECT_EQ(read_file(dir.path() / g.substr(space + 1)), data_for(named).to_string()) << g;
    (named == round ? got_new : kept_old) += 1;
    current = named;
  }
  std::cout << "kill -9 while replacing a graph + data set: old set kept " << kept_old
            << "x, new set complete " << got_new << "x\n";
}

}  // namespace
