// Parallel strategies (issue 21, docs/parallel.md): every case of tests/parallel/cases/ is
// analysed, and the located diagnostics, per-device shapes and redistributions are compared with
// the case's own markers and with MindSpore 2.10's recorded outcomes
// (tests/parallel/ms_parallel_truth.json, written by ms_parallel_truth.py from the real msvenv).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "graphcore/analysis.h"
#include "graphcore/hardware.h"
#include "graphcore/optimize.h"

namespace graphcore {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const fs::path kCases = fs::path(CELLSCOPE_SOURCE_DIR) / "tests/parallel/cases";

struct Case {
  std::string id;
  std::string kind;                    // valid | mistake | warning
  int marker = -1;                     // 0-based line of `# <- diagnostic`
  std::vector<std::string> fragments;  // `# mindspore-text:` lines
};

Case read_case(const fs::path& file) {
  Case c;
  c.id = file.stem().string();
  std::ifstream in(file);
  std::string line;
  for (int n = 0; std::getline(in, line); ++n) {
    if (line.rfind("# kind: ", 0) == 0) c.kind = line.substr(8);
    if (line.rfind("# mindspore-text: ", 0) == 0) c.fragments.push_back(line.substr(18));
    if (line.find("# <- diagnostic") != std::string::npos) c.marker = n;
  }
  return c;
}

// The code each mistake and warning case must get. pipeline_layer_without_stage is a mistake by
// the case's own account, but MindSpore accepts it (the layer joins its producer's stage), so
// Cellscope warns (docs/parallel.md, P3).
const std::map<std::string, std::pair<Severity, std::string>>& expected() {
  static const std::map<std::string, std::pair<Severity, std::string>> kExpected = {
      {"article_auto_parallel", {Severity::Error, "parallel-api"}},
      {"cell_shard_auto_search_mode", {Severity::Error, "parallel-context"}},
      {"cell_shard_count_mismatch", {Severity::Error, "parallel-strategy-count"}},
      {"cell_shard_devices", {Severity::Error, "parallel-devices"}},
      {"cell_shard_none_strategy", {Severity::Error, "parallel-strategy-type"}},
      {"cell_shard_not_divisible", {Severity::Error, "parallel-not-divisible"}},
      {"cell_shard_parameter_plan", {Severity::Error, "parallel-not-divisible"}},
      {"cell_shard_plan_unknown_parameter", {Severity::Warning, "parallel-parameter-plan"}},
      {"cell_shard_rank_mismatch", {Severity::Error, "parallel-strategy-rank"}},
      {"dim_not_divisible", {Severity::Error, "parallel-not-divisible"}},
      {"layout_unknown_axis", {Severity::Error, "parallel-layout"}},
      {"matmul_k_mismatch", {Severity::Error, "parallel-split-mismatch"}},
      {"micro_size_zero", {Severity::Error, "parallel-micro-size"}},
      {"ms_shard_function", {Severity::Error, "parallel-not-divisible"}},
      {"parallel_mode_unknown", {Severity::Error, "parallel-context"}},
      {"pipeline_layer_without_stage", {Severity::Warning, "parallel-stage-missing"}},
      {"pipeline_stage_negative", {Severity::Error, "parallel-stage"}},
      {"pipeline_stage_order", {Severity::Error, "parallel-stage-order"}},
      {"pipeline_stages_not_dividing", {Severity::Error, "parallel-devices"}},
      {"pipeline_stage_without_parameter", {Severity::Error, "parallel-stage-parameters"}},
      {"pipeline_auto_dynamic_programming", {Severity::Error, "parallel-context"}},
      {"search_mode_unknown", {Severity::Error, "parallel-context"}},
      {"product_exceeds_devices", {Severity::Error, "parallel-devices"}},
      {"product_not_dividing", {Severity::Error, "parallel-devices"}},
      {"redistribution", {Severity::Warning, "parallel-redistribution"}},
      {"split_not_power_of_two", {Severity::Error, "parallel-split-value"}},
      {"split_zero", {Severity::Error, "parallel-split-value"}},
      {"strategy_count_mismatch", {Severity::Error, "parallel-strategy-count"}},
      {"strategy_rank_mismatch", {Severity::Error, "parallel-strategy-rank"}},
  };
  return kExpected;
}

AnalysisResult analyse(const fs::path& file) {
  DiskSourceProvider src;
  AnalysisOptions opts;
  return analyze_file(file, opts, src);
}

// `source` written to <temp>/<folder>/net.py, then analysed.
AnalysisResult analyse_source(const std::string& folder, const std::string& source) {
  const fs::path dir = fs::temp_directory_path() / folder;
  fs::create_directories(dir);
  const fs::path file = dir / "net.py";
  std::ofstream(file) << source;
  return analyse(file);
}

std::string listing(const AnalysisResult& r) {
  std::ostringstream out;
  for (const Diagnostic& d : r.diagnostics)
    out << "\n  " << d.range.start.line + 1 << ": [" << d.code << "] " << d.message;
  return out.str();
}

// The node whose `.shard(...)` call is on 0-based line `line`.
const Node* sharded_at(const AnalysisResult& r, uint32_t line) {
  for (const CellReport& c : r.cells) {
    for (const Node& n : c.graph.nodes) {
      if (n.parallel && !n.parallel->in_strategy.empty() &&
          n.parallel->shard_range.start.line == line)
        return &n;
    }
  }
  return nullptr;
}

std::vector<int64_t> dims_of(const Shape& s) {
  std::vector<int64_t> out;
  for (const Dim& d : s.dims) out.push_back(d.is_known() ? d.value() : -1);
  return out;
}

Json truth() {
  std::ifstream in(fs::path(CELLSCOPE_SOURCE_DIR) / "tests/parallel/ms_parallel_truth.json");
  return Json::parse(in);
}

TEST(Parallel, EveryCaseGetsItsDiagnostic) {
  size_t cases = 0;
  for (const auto& entry : fs::directory_iterator(kCases)) {
    if (entry.path().extension() != ".py") continue;
    ++cases;
    Case c = read_case(entry.path());
    SCOPED_TRACE(c.id);
    AnalysisResult r = analyse(entry.path());
    std::string all = listing(r);
    size_t errors = 0;
    for (const Diagnostic& d : r.diagnostics) errors += d.severity == Severity::Error ? 1 : 0;
    if (c.kind == "valid") {
      for (const Diagnostic& d : r.diagnostics) {
        EXPECT_FALSE(d.code.rfind("parallel-", 0) == 0 &&
                     (d.severity == Severity::Error || d.severity == Severity::Warning))
            << all;
      }
      EXPECT_EQ(errors, 0U) << all;
      continue;
    }
    auto it = expected().find(c.id);
    ASSERT_NE(it, expected().end()) << "no expected code for " << c.id;
    ASSERT_GE(c.marker, 0);
    const auto& [severity, code] = it->second;
    size_t found = 0;
    for (const Diagnostic& d : r.diagnostics) {
      if (d.code != code) continue;
      ++found;
      EXPECT_EQ(d.severity, severity) << all;
      EXPECT_EQ(d.range.start.line, static_cast<uint32_t>(c.marker)) << all;
      for (const std::string& f : c.fragments)
        EXPECT_NE(d.message.find(f), std::string::npos)
            << "missing MindSpore's \"" << f << "\"" << all;
    }
    EXPECT_EQ(found, 1U) << all;
    EXPECT_EQ(errors, severity == Severity::Error ? 1U : 0U) << all;
  }
  EXPECT_EQ(cases, 41U);
}

TEST(Parallel, PerDeviceShapesEqualMindSpore) {
  Json t = truth();
  size_t compared = 0;
  for (const auto& [id, c] : t["cases"].items()) {
    const Json& calls = c["probe"]["shard_calls"];
    if (!calls.is_array()) continue;
    AnalysisResult r = analyse(kCases / (id + ".py"));
    for (const Json& call : calls) {
      if (!call.contains("per_device")) continue;
      SCOPED_TRACE(id + " " + call["attr"].get<std::string>());
      const Node* n = sharded_at(r, call["line"].get<uint32_t>() - 1);
      ASSERT_NE(n, nullptr) << listing(r);
      const Json& inputs = call["per_device"];
      ASSERT_LE(n->parallel->per_device_inputs.size(), inputs.size());
      ASSERT_GE(n->parallel->per_device_inputs.size(), 1U);
      for (size_t i = 0; i < n->parallel->per_device_inputs.size(); ++i) {
        for (const Json& ranks : inputs[i]["per_device"]) {  // one shape per rank group
          EXPECT_EQ(dims_of(n->parallel->per_device_inputs[i]),
                    ranks["shape"].get<std::vector<int64_t>>())
              << "input " << i;
          ++compared;
        }
      }
    }
  }
  EXPECT_GE(compared, 20U);
}

TEST(Parallel, RedistributionNamesMindSporesCommunication) {
  Json t = truth();
  const Json& redis = t["cases"]["redistribution"]["probe"]["redistributions"];
  ASSERT_EQ(redis.size(), 1U);
  // MindSpore's engine concatenates rank 0's slice over ranks [0, 1, 2, 3] (AllConcat: an
  // AllGather, its last argument the axis).
  int64_t group = 0;
  for (const Json& op : redis[0]["operators_rank0"]) {
    if (op[0] == "AllConcat") group = static_cast<int64_t>(op[1].size()) - 1;
  }
  ASSERT_EQ(group, 4);
  AnalysisResult r = analyse(kCases / "redistribution.py");
  const Node* add = sharded_at(r, 19);
  ASSERT_NE(add, nullptr);
  bool gather = false;
  bool slice = false;
  for (const ParallelComm& c : add->parallel->comms) {
    if (c.kind == "AllGather" && c.input == 0) {
      gather = true;
      EXPECT_EQ(c.group, group);
    }
    slice |= c.kind == "StridedSlice" && c.input == 0;
  }
  EXPECT_TRUE(gather);
  EXPECT_TRUE(slice);
  for (const Diagnostic& d : r.diagnostics) {
    if (d.code == "parallel-redistribution") {
      EXPECT_NE(d.message.find("AllGather over 4 devices"), std::string::npos) << d.message;
    }
  }
}

TEST(Parallel, MatMulContractionAddsTheForwardAllReduce) {
  // matmul_valid: ((2, 4), (4, 1)) leaves partial sums over the 4 devices of a row block;
  // matmul_out_strategy_valid's out_strategy ((8, 1),) makes it a ReduceScatter.
  for (const auto& [file, kind] : {std::pair{"matmul_valid.py", "AllReduce"},
                                   std::pair{"matmul_out_strategy_valid.py", "ReduceScatter"}}) {
    AnalysisResult r = analyse(kCases / file);
    const Node* mm = sharded_at(r, 18);
    ASSERT_NE(mm, nullptr) << file << listing(r);
    ASSERT_EQ(mm->parallel->comms.size(), 1U) << file;
    EXPECT_EQ(mm->parallel->comms[0].kind, kind);
    EXPECT_EQ(mm->parallel->comms[0].group, 4);
    EXPECT_EQ(mm->parallel->device_matrix, 8);
    // What the hover shows (describe_parallel), from the same facts.
    const Graph* graph = nullptr;
    for (const CellReport& c : r.cells) {
      if (!c.graph.nodes.empty() && mm >= c.graph.nodes.data() &&
          mm < c.graph.nodes.data() + c.graph.nodes.size())
        graph = &c.graph;
    }
    ASSERT_NE(graph, nullptr);
    std::string hover = describe_parallel(*graph, *mm);
    EXPECT_NE(hover.find("x: global [16, 64], per device [8, 16] (split (2, 4))"),
              std::string::npos)
        << hover;
    EXPECT_NE(hover.find("w: global [64, 32], per device [16, 32] (split (4, 1))"),
              std::string::npos)
        << hover;
    EXPECT_NE(hover.find(std::string(kind) + " over 4 devices"), std::string::npos) << hover;
  }
}

TEST(Parallel, ConfiguredDeviceCountAppliesWhenTheScriptGivesNone) {
  // msrun_semi_auto sets no device_num (msrun's workers give it): with 3 configured devices the
  // (2, 1) split cannot divide them.
  DiskSourceProvider src;
  AnalysisOptions opts;
  opts.device_num = 3;
  AnalysisResult r = analyze_file(kCases / "msrun_semi_auto.py", opts, src);
  EXPECT_EQ(r.parallel.device_num, 3);
  EXPECT_EQ(r.parallel.device_num_from, "mindspore_config.json");
  size_t found = 0;
  for (const Diagnostic& d : r.diagnostics) found += d.code == "parallel-devices" ? 1 : 0;
  EXPECT_EQ(found, 1U) << listing(r);
  opts.device_num = 2;
  r = analyze_file(kCases / "msrun_semi_auto.py", opts, src);
  for (const Diagnostic& d : r.diagnostics) EXPECT_NE(d.severity, Severity::Error) << d.message;
}

TEST(Parallel, AutoParallelWrapperMethodsAreModelled) {
  // AutoParallel(net)'s own methods (MindSpore 2.10's list, ms_parallel_truth.json "AutoParallel
  // methods") are not missing attributes of `net`; .pipeline(stages=k) sets the stage count.
  std::ifstream in(kCases / "autoparallel_wrapper_valid.py");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string call = "out = net(*inputs)";
  ASSERT_NE(text.find(call), std::string::npos);
  text.replace(text.find(call), call.size(),
               "net.pipeline(stages=2)\nnet.save_param_strategy_file(\"s.ckpt\")\n"
               "net.hsdp(shard_size=4, threshold=32)\n" +
                   call);
  MemorySourceProvider src("/w/ap.py", text);
  AnalysisResult r = analyze_file("/w/ap.py", AnalysisOptions{}, src);
  for (const Diagnostic& d : r.diagnostics) EXPECT_NE(d.severity, Severity::Error) << d.message;
  EXPECT_TRUE(r.parallel.wrapper);
  EXPECT_EQ(r.parallel.pipeline_stages, 2);
  EXPECT_TRUE(r.parallel.parallel_optimizer);  // .hsdp(): the parallel optimizer
  EXPECT_EQ(r.parallel.optimizer_shard_size, 4);
  EXPECT_EQ(r.parallel.optimizer_threshold_kb, 32);
  // Without AutoParallel the same names are missing attributes of the Cell.
  const std::string wrap = "net = AutoParallel(Net(), parallel_mode=\"semi_auto\")";
  ASSERT_NE(text.find(wrap), std::string::npos);
  text.replace(text.find(wrap), wrap.size(), "net = Net()");
  MemorySourceProvider plain("/w/ap.py", text);
  r = analyze_file("/w/ap.py", AnalysisOptions{}, plain);
  size_t missing = 0;
  for (const Diagnostic& d : r.diagnostics) missing += d.code == "unknown-attribute" ? 1 : 0;
  EXPECT_EQ(missing, 3U);
}

// mindspore.shard(fn, in_strategy) returns a function calling fn (mindspore/parallel/shard.py's
// shard_fn): the shapes go on through it (they were unknown after it).
TEST(Parallel, ShardedFunctionPassesShapesThrough) {
  AnalysisResult r =
      analyse_source("cellscope_ms_shard",
                     "import numpy as np\nimport mindspore as ms\nfrom mindspore import "
                     "Tensor, nn, ops\n\nms.set_auto_parallel_context(parallel_mode="
                     "\"semi_auto_parallel\", device_num=8)\n\n\nclass Net(nn.Cell):\n"
                     "    def __init__(self):\n        super().__init__()\n"
                     "        self.fc = nn.Dense(64, 32)\n"
                     "        self.f = ms.shard(self.fc, in_strategy=((2, 4),))\n"
                     "        self.g = ms.shard(ops.relu, in_strategy=((8, 1),))\n\n"
                     "    def construct(self, x):\n        return self.g(self.f(x))\n\n\n"
                     "net = Net()\nout = net(Tensor(np.ones((16, 64), np.float32)))\n");
  ASSERT_EQ(r.cells.size(), 1U);
  ASSERT_EQ(r.cells[0].outputs.size(), 1U);
  EXPECT_EQ(r.cells[0].outputs[0].type.shape.str(), "(16, 32)");
}

TEST(Parallel, AutoParallelApiHasAQuickFix) {
  AnalysisResult r = analyse(kCases / "article_auto_parallel.py");
  const Diagnostic* d = nullptr;
  for (const Diagnostic& x : r.diagnostics) d = x.code == "parallel-api" ? &x : d;
  ASSERT_NE(d, nullptr) << listing(r);
  ASSERT_EQ(d->fixes.size(), 1U);
  ASSERT_EQ(d->fixes[0].edits.size(), 1U);
  EXPECT_EQ(d->fixes[0].edits[0].new_text, "x");
  EXPECT_NE(d->message.find("Primitive.shard"), std::string::npos);
}

// ---- Communication nodes and their cost (docs/parallel.md, "Communication and its cost") -----

// The compiled root Cell holding the parallel facts, called with the script's inputs (every input
// shape known).
const CellReport* parallel_cell(const AnalysisResult& r) {
  for (const CellReport& c : r.cells) {
    if (!c.compiled) continue;
    bool known = !c.inputs.empty();
    for (const auto& in : c.inputs) {
      for (const Dim& d : in.type.shape.dims) known &= d.is_known();
    }
    bool parallel = false;
    for (const Node& n : c.graph.nodes) parallel |= n.parallel != nullptr;
    if (known && parallel) return &c;
  }
  return nullptr;
}

OptimizedGraph optimize_parallel(const AnalysisResult& r, const CellReport& cell,
                                 const std::string& target = "cpu") {
  OptimizeOptions o;
  o.target = target;
  o.parallel = &r.parallel;
  return optimize(cell, o);
}

const AttrValue* attr_of(const OptNode& n, const std::string& name) {
  for (const Attr& a : n.attrs) {
    if (a.name == name) return &a.value;
  }
  return nullptr;
}
int64_t int_of(const OptNode& n, const std::string& name) {
  const AttrValue* v = attr_of(n, name);
  return v != nullptr && std::holds_alternative<int64_t>(*v) ? std::get<int64_t>(*v) : -1;
}

std::vector<uint32_t> comm_nodes(const OptimizedGraph& g) {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].pass == "comm") out.push_back(i);
  }
  return out;
}

TEST(CommPass, RedistributionIsMindSporesAllGatherBeforeTheConsumer) {
  // MindSpore's redistribution for rank 0 (recorded): its communicating operators, in order.
  Json t = truth();
  const Json& red = t["cases"]["redistribution"]["probe"]["redistributions"][0];
  std::vector<std::pair<std::string, int64_t>> recorded;  // (MindSpore's name, group)
  for (const Json& op : red["operators_rank0"]) {
    const std::string name = op[0];
    if (name == "AllConcat") recorded.emplace_back(name, static_cast<int64_t>(op[1].size()) - 1);
    if (name == "AllGather" || name == "AllReduce" || name == "ReduceScatter" || name == "AlltoAll")
      recorded.emplace_back(name, -1);
  }
  ASSERT_EQ(recorded.size(), 1U);
  // The producer's slice on rank 0, as MindSpore's _count_tensor_shape gave it.
  std::vector<int64_t> slice;
  for (const Json& call : t["cases"]["redistribution"]["probe"]["shard_calls"]) {
    if (call["attr"] == "relu")
      slice = call["per_device"][0]["per_device"][0]["shape"].get<std::vector<int64_t>>();
  }
  ASSERT_EQ(slice, (std::vector<int64_t>{8, 16}));

  AnalysisResult r = analyse(kCases / "redistribution.py");
  const CellReport* cell = parallel_cell(r);
  ASSERT_NE(cell, nullptr) << listing(r);
  const OptimizedGraph g = optimize_parallel(r, *cell);
  const auto comms = comm_nodes(g);
  ASSERT_EQ(comms.size(), recorded.size());
  const OptNode& c = g.nodes[comms[0]];
  EXPECT_EQ(c.op, "AllGather");  // AllConcat is an AllGather (+ concat) in the graph
  const AttrValue* ms_op = attr_of(c, "mindspore_op");
  ASSERT_NE(ms_op, nullptr);
  EXPECT_EQ(std::get<std::string>(*ms_op), recorded[0].first);
  EXPECT_EQ(int_of(c, "group"), recorded[0].second);
  // Bytes from the per-device shape: 8 x 16 float32 held, (n-1) slices received and sent.
  EXPECT_EQ(std::get<std::vector<int64_t>>(*attr_of(c, "per_device_shape")), slice);
  EXPECT_EQ(int_of(c, "bytes"), 8 * 16 * 4);
  EXPECT_EQ(int_of(c, "moved_bytes"), 3 * 8 * 16 * 4);
  // Edges: ReLU -> AllGather -> Add (input 0), in execution order.
  ASSERT_EQ(c.inputs.size(), 1U);
  EXPECT_EQ(g.nodes[c.inputs[0].node].op, "ReLU");
  EXPECT_LT(c.inputs[0].node, comms[0]);
  bool read = false;
  for (uint32_t i = comms[0] + 1; i < g.nodes.size(); ++i) {
    if (g.nodes[i].op == "Add" && !g.nodes[i].inputs.empty() &&
        g.nodes[i].inputs[0].node == comms[0])
      read = true;
  }
  EXPECT_TRUE(read);
  EXPECT_NE(c.reason.find("AllGather over 4 devices"), std::string::npos) << c.reason;
  // Recorded in the pass records like the others.
  bool recorded_pass = false;
  for (const PassRecord& p : g.passes) {
    if (p.name == "comm") {
      recorded_pass = true;
      EXPECT_EQ(p.changes, 1U);
      EXPECT_EQ(p.nodes_after, p.nodes_before + 1);
    }
  }
  EXPECT_TRUE(recorded_pass);
}

TEST(CommPass, ContractionAddsAllReduceOrReduceScatterAfterTheMatMul) {
  // ((2, 4), (4, 1)) on x [16, 64], w [64, 32]: every device holds the partial sums of its
  // [8, 32] output block; with out_strategy ((8, 1),) the ReduceScatter leaves [2, 32] each.
  struct Want {
    const char* file;
    const char* op;
    std::vector<int64_t> held;
    int64_t moved;  // float32 bytes, by the ring formulas
  };
  for (const Want& w :
       {Want{"matmul_valid.py", "AllReduce", {8, 32}, 2 * 3 * 8 * 32 * 4 / 4},
        Want{"matmul_out_strategy_valid.py", "ReduceScatter", {8, 32}, 3 * 8 * 32 * 4 / 4}}) {
    AnalysisResult r = analyse(kCases / w.file);
    const CellReport* cell = parallel_cell(r);
    ASSERT_NE(cell, nullptr) << w.file << listing(r);
    const OptimizedGraph g = optimize_parallel(r, *cell);
    const auto comms = comm_nodes(g);
    ASSERT_EQ(comms.size(), 1U) << w.file;
    const OptNode& c = g.nodes[comms[0]];
    EXPECT_EQ(c.op, w.op);
    EXPECT_EQ(int_of(c, "group"), 4);
    EXPECT_EQ(std::get<std::vector<int64_t>>(*attr_of(c, "per_device_shape")), w.held);
    EXPECT_EQ(int_of(c, "bytes"), 8 * 32 * 4);
    EXPECT_EQ(int_of(c, "moved_bytes"), w.moved) << w.file;
    EXPECT_EQ(g.nodes[c.inputs[0].node].op, "MatMul") << w.file;
    // Nothing reads the MatMul but the collective.
    for (uint32_t i = 0; i < g.nodes.size(); ++i) {
      for (const ValueRef& in : g.nodes[i].inputs) {
        if (in.node == c.inputs[0].node) {
          EXPECT_EQ(i, comms[0]) << g.nodes[i].id;
        }
      }
    }
  }
}

TEST(CommPass, UnderMixedPrecisionTheBytesAreThoseOfTheFloat16ItCarries) {
  // On an Ascend target the amp pass (after "comm") carries the collective in float16: its
  // recorded bytes follow, half the float32 figures of the test above.
  AnalysisResult r = analyse(kCases / "matmul_valid.py");
  const CellReport* cell = parallel_cell(r);
  ASSERT_NE(cell, nullptr) << listing(r);
  const OptimizedGraph g = optimize_parallel(r, *cell, "ascend910");
  const auto comms = comm_nodes(g);
  ASSERT_EQ(comms.size(), 1U);
  const OptNode& c = g.nodes[comms[0]];
  ASSERT_EQ(c.outputs[0].dtype, DType::Float16) << c.reason;
  EXPECT_EQ(int_of(c, "bytes"), 8 * 32 * 2);
  EXPECT_EQ(int_of(c, "moved_bytes"), 2 * 3 * 8 * 32 * 2 / 4);
  EXPECT_NE(c.reason.find("carried as float16 (amp): 512 bytes per device"), std::string::npos)
      << c.reason;
  // With fp32 kept, the float32 figures.
  OptimizeOptions o;
  o.target = "ascend910";
  o.precision = "fp32";
  o.parallel = &r.parallel;
  const OptimizedGraph full = optimize(*cell, o);
  const auto fc = comm_nodes(full);
  ASSERT_EQ(fc.size(), 1U);
  EXPECT_EQ(int_of(full.nodes[fc[0]], "bytes"), 8 * 32 * 4);
}

TEST(CommPass, PipelineStagesSendAndReceiveAtEveryBoundary) {
  AnalysisResult r = analyse(kCases / "pipeline_four_stages_valid.py");
  const CellReport* cell = parallel_cell(r);
  std::string cells;
  for (const CellReport& c : r.cells) cells += " " + c.name;
  ASSERT_NE(cell, nullptr) << listing(r) << cells;
  ASSERT_EQ(r.parallel.pipeline_stages, 4);
  ASSERT_EQ(r.parallel.micro_size, 4);
  const OptimizedGraph g = optimize_parallel(r, *cell);
  std::vector<std::pair<int64_t, int64_t>> sends;  // (stage, peer)
  for (uint32_t i : comm_nodes(g)) {
    const OptNode& n = g.nodes[i];
    if (n.op == "Send") {
      sends.emplace_back(int_of(n, "stage"), int_of(n, "peer_stage"));
      // The Receive reads this Send; the next stage reads the Receive.
      ASSERT_LT(i + 1, g.nodes.size());
      const OptNode& recv = g.nodes[i + 1];
      EXPECT_EQ(recv.op, "Receive");
      EXPECT_EQ(recv.inputs[0].node, i);
      EXPECT_EQ(int_of(recv, "stage"), int_of(n, "peer_stage"));
      // Unsharded Dense output: the whole [16, 32] float32 tensor.
      EXPECT_EQ(int_of(n, "bytes"), 16 * 32 * 4) << n.reason;
      EXPECT_EQ(int_of(n, "moved_bytes"), 16 * 32 * 4);
      bool read = false;
      for (const OptNode& m : g.nodes) {
        for (const ValueRef& in : m.inputs) read |= in.node == i + 1;
      }
      EXPECT_TRUE(read) << recv.id;
    }
  }
  std::sort(sends.begin(), sends.end());
  EXPECT_EQ(sends, (std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 2}, {2, 3}}));
}

TEST(CommPass, CostIsTheRingFormulaOnTheCitedLinkAndTheBubbleIsGPipes) {
  // The cited figure, read from the target file itself.
  std::ifstream in(fs::path(CELLSCOPE_SOURCE_DIR) / "graphcore/targets/ascend910.json");
  const Json file = Json::parse(in);
  const double gbps = file["interconnect_gbps"]["value"];
  EXPECT_NE(file["interconnect_gbps"]["source"].get<std::string>().find("240 Gbps HCCS"),
            std::string::npos);
  const HardwareTarget& t = hardware_target("ascend910");
  ASSERT_EQ(t.interconnect_gbps, gbps);
  // AllReduce of 1 MiB over 4 devices: 2 * 3/4 * 1 MiB sent, at gbps GB/s (1e3 bytes/us per GB/s).
  const auto moved = comm_moved_bytes("AllReduce", 4, 1 << 20);
  ASSERT_TRUE(moved.has_value());
  EXPECT_EQ(*moved, 1572864U);
  EXPECT_DOUBLE_EQ(*comm_time_us(t, "AllReduce", 4, 1572864.0), 1572864.0 / (gbps * 1e3));
  EXPECT_EQ(*comm_moved_bytes("AllGather", 4, 512), 1536U);
  EXPECT_EQ(*comm_moved_bytes("ReduceScatter", 4, 1024), 768U);
  EXPECT_EQ(*comm_moved_bytes("AllToAll", 8, 800), 700U);
  EXPECT_EQ(*comm_moved_bytes("Send", 2, 2048), 2048U);
  EXPECT_FALSE(comm_moved_bytes("AllReduce", 2, UINT64_MAX).has_value());  // overflow
  // No figure for the 910B: no time.
  EXPECT_FALSE(comm_time_us(hardware_target("ascend910b"), "AllReduce", 4, 1e6).has_value());
  // Bubble (p-1)/(m+p-1).
  EXPECT_DOUBLE_EQ(pipeline_bubble(4, 4), 3.0 / 7.0);
  EXPECT_DOUBLE_EQ(pipeline_bubble(1, 4), 0.0);

  // In the step estimate: the matmul_valid AllReduce on ascend910 (fp16 under amp: 8 x 32 x 2).
  AnalysisResult r = analyse(kCases / "matmul_valid.py");
  const CellReport* cell = parallel_cell(r);
  ASSERT_NE(cell, nullptr);
  const OptimizedGraph g = optimize_parallel(r, *cell, "ascend910");
  HardwareOptions ho;
  ho.target = "ascend910";
  ho.parallel = &r.parallel;
  const HardwareGraph hw = estimate_hardware(*cell, g, ho);
  const double sent = 2.0 * 3 / 4 * (8 * 32 * 2);
  EXPECT_DOUBLE_EQ(hw.estimate.comm_bytes, sent);
  EXPECT_TRUE(hw.estimate.comm_timed);
  EXPECT_NEAR(hw.estimate.comm_ms, sent / (gbps * 1e3) / 1e3, 1e-12);
  double comm_kernel_us = 0;
  for (const KernelEstimate& k : hw.kernels) {
    if (k.unit == Unit::Comm) comm_kernel_us += k.time_us;
  }
  EXPECT_NEAR(comm_kernel_us, sent / (gbps * 1e3), 1e-9);
  // It is part of the step: the latency is the sum of the schedule.
  double total_us = 0;
  for (const KernelEstimate& k : hw.kernels) total_us += k.time_us;
  EXPECT_NEAR(hw.estimate.latency_ms, total_us / 1e3, 1e-9);

  // Without a figure the bytes are reported and the time is not.
  ho.target = "ascend910b";
  const HardwareGraph b = estimate_hardware(*cell, optimize_parallel(r, *cell, "ascend910b"), ho);
  EXPECT_FALSE(b.estimate.comm_timed);
  EXPECT_EQ(b.estimate.comm_ms, 0);
  EXPECT_DOUBLE_EQ(b.estimate.comm_bytes, sent);
  bool said = false;
  for (const std::string& n : b.estimate.notes)
    said |= n.find("no interconnect figure for ascend910b: time not estimated") == 0;
  EXPECT_TRUE(said);
}

// One device's kernels (docs/parallel.md, "Per-device cost"): matmul_valid's MatMul with
// ((2, 4), (4, 1)) on 8 devices does 1/8 of the multiply-adds on each, reads its (8, 16) slice of
// x and (16, 32) slice of w, and writes its (8, 32) block of partial sums; in training the
// optimizer updates the (16, 32) slice of w each device holds.
TEST(CommPass, KernelsAreCostedAtTheirPerDeviceShapes) {
  AnalysisResult r = analyse(kCases / "matmul_valid.py");
  const CellReport* cell = parallel_cell(r);
  ASSERT_NE(cell, nullptr);
  auto matmul_macs = [](const HardwareGraph& hw) {
    double macs = 0;
    for (const KernelEstimate& k : hw.kernels) {
      if (k.phase == "forward" && k.unit == Unit::Cube) macs += k.macs;
    }
    return macs;
  };
  HardwareOptions ho;
  ho.target = "ascend910";
  const OptimizedGraph g = optimize_parallel(r, *cell, "ascend910");
  const HardwareGraph global = estimate_hardware(*cell, g, ho);  // no parallel context
  ho.parallel = &r.parallel;
  const HardwareGraph device = estimate_hardware(*cell, g, ho);
  EXPECT_DOUBLE_EQ(matmul_macs(global), 16.0 * 64 * 32);
  EXPECT_DOUBLE_EQ(matmul_macs(device), 16.0 * 64 * 32 / 8);
  bool said = false;
  for (const std::string& n : device.estimate.notes)
    said |= n.find("parallel: one device's kernels: 1 operator with a strategy") == 0;
  EXPECT_TRUE(said);
  // Training: the optimizer's update of w is that of the slice a device holds.
  ho.mode = "train";
  ho.optimizer = "sgd";
  auto update_bytes = [](const HardwareGraph& hw) {
    double b = 0;
    for (const KernelEstimate& k : hw.kernels) {
      if (k.phase == "optimizer") b += k.gm_read_bytes + k.gm_write_bytes;
    }
    return b;
  };
  const HardwareGraph train = estimate_hardware(*cell, g, ho);
  ho.parallel = nullptr;
  const HardwareGraph train_global = estimate_hardware(*cell, g, ho);
  ASSERT_GT(update_bytes(train_global), 0);
  EXPECT_NEAR(update_bytes(train) / update_bytes(train_global), 16.0 * 32 / (64 * 32), 1e-9);
  // w's (16, 32) slice (split 4 of 8 devices) is held by 2 devices: its gradient's mirror
  // AllReduce over 2 sends 2 * 1/2 of the 2,048 fp32 bytes; none without the parallel context.
  auto gradient_reductions = [](const HardwareGraph& hw) {
    std::vector<const KernelEstimate*> out;
    for (const KernelEstimate& k : hw.kernels) {
      if (k.phase == "backward" && k.unit == Unit::Comm) out.push_back(&k);
    }
    return out;
  };
  const auto reductions = gradient_reductions(train);
  ASSERT_EQ(reductions.size(), 1U);
  EXPECT_EQ(reductions[0]->name, "AllReduce(gradients of 1 parameter, 2 devices)");
  EXPECT_DOUBLE_EQ(reductions[0]->comm_bytes, 2048.0);
  EXPECT_GT(reductions[0]->time_us, 0);
  EXPECT_TRUE(gradient_reductions(train_global).empty());
}

// Data parallel training (DistributedGradReducer): every gradient is summed over the world group;
// the kernels keep the script's (per-device) shapes.
TEST(CommPass, DataParallelTrainingSumsEveryGradient) {
  AnalysisResult r =
      analyse_source("cellscope_comm_dp",
                     "import numpy as np\nimport mindspore as ms\nfrom mindspore import "
                     "Tensor, nn\n\nms.set_auto_parallel_context(parallel_mode="
                     "\"data_parallel\", device_num=8, gradients_mean=True)\n\n\n"
                     "class Net(nn.Cell):\n    def __init__(self):\n"
                     "        super().__init__()\n        self.fc1 = nn.Dense(64, 32)\n"
                     "        self.fc2 = nn.Dense(32, 10)\n\n    def construct(self, x):\n"
                     "        return self.fc2(self.fc1(x))\n\n\nnet = Net()\n"
                     "out = net(Tensor(np.ones((16, 64), np.float32)))\n");
  ASSERT_FALSE(r.cells.empty());
  ASSERT_EQ(r.parallel.device_num, 8);
  HardwareOptions ho;
  ho.target = "ascend910";
  ho.mode = "train";
  ho.optimizer = "sgd";
  ho.parallel = &r.parallel;
  const HardwareGraph hw =
      estimate_hardware(r.cells.front(), optimize_parallel(r, r.cells.front(), "ascend910"), ho);
  std::vector<const KernelEstimate*> reductions;
  for (const KernelEstimate& k : hw.kernels) {
    if (k.phase == "backward" && k.unit == Unit::Comm) reductions.push_back(&k);
  }
  ASSERT_EQ(reductions.size(), 1U);
  EXPECT_EQ(reductions[0]->name, "AllReduce(gradients of 4 parameters, 8 devices)");
  const double bytes = (64.0 * 32 + 32 + 32 * 10 + 10) * 4;
  EXPECT_DOUBLE_EQ(reductions[0]->comm_bytes, 2.0 * 7 / 8 * bytes);
  EXPECT_DOUBLE_EQ(hw.estimate.comm_bytes, 2.0 * 7 / 8 * bytes);
  const HardwareTarget& t = hardware_target("ascend910");
  EXPECT_NEAR(reductions[0]->time_us, *comm_time_us(t, "AllReduce", 8, 2.0 * 7 / 8 * bytes), 1e-9);
  bool said = false;
  for (const std::string& n : hw.estimate.notes)
    said |= n.find("data parallel: each device runs the whole network") == 0;
  EXPECT_TRUE(said);
}

// D1: under semi_auto_parallel an operator without a strategy runs MindSpore's batch-parallel one
// (operator_info.cc GenerateBatchStrategiesWithCheck): its first input's first dimension split
// over the stage's devices, or over their gcd with it. Dense(64, 32) on a batch of 16 does 1/8 of
// its multiply-adds per device on 8 devices; on a batch of 12, 1/4 (gcd(12, 8) = 4).
TEST(CommPass, UnshardedOperatorsRunTheDefaultBatchParallelStrategy) {
  for (const auto& [batch, split] : {std::pair{16, 8}, std::pair{12, 4}}) {
    AnalysisResult r = analyse_source(
        "cellscope_comm_d1_" + std::to_string(batch),
        "import numpy as np\nimport mindspore as ms\nfrom mindspore import Tensor, nn\n\n"
        "ms.set_auto_parallel_context(parallel_mode=\"semi_auto_parallel\", device_num=8)\n\n\n"
        "class Net(nn.Cell):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Dense(64, 32)\n        self.relu = nn.ReLU()\n\n"
        "    def construct(self, x):\n        return self.relu(self.fc(x))\n\n\n"
        "net = Net()\nout = net(Tensor(np.ones((" +
            std::to_string(batch) + ", 64), np.float32)))\n");
    ASSERT_FALSE(r.cells.empty()) << listing(r);
    HardwareOptions ho;
    ho.target = "ascend910";
    const OptimizedGraph g = optimize_parallel(r, r.cells.front(), "ascend910");
    auto macs = [](const HardwareGraph& hw) {
      double m = 0;
      for (const KernelEstimate& k : hw.kernels) {
        if (k.phase == "forward" && k.unit == Unit::Cube) m += k.macs;
      }
      return m;
    };
    const HardwareGraph global = estimate_hardware(r.cells.front(), g, ho);
    ho.parallel = &r.parallel;
    const HardwareGraph device = estimate_hardware(r.cells.front(), g, ho);
    EXPECT_DOUBLE_EQ(macs(global), batch * 64.0 * 32);
    EXPECT_DOUBLE_EQ(macs(device), batch * 64.0 * 32 / split) << batch;
    bool said = false;
    for (const std::string& n : device.estimate.notes)
      said |=
          n.find("without one at MindSpore's default batch-parallel strategy") != std::string::npos;
    EXPECT_TRUE(said);
    // auto_parallel searches its strategies: no default is assumed there.
    ParallelContext automatic = r.parallel;
    automatic.parallel_mode = "auto_parallel";
    ho.parallel = &automatic;
    EXPECT_DOUBLE_EQ(macs(estimate_hardware(r.cells.front(), g, ho)), batch * 64.0 * 32);
  }
}

// Cell.shard's strategy is checked at each call of the Cell with that call's inputs (MindSpore's
// Shard pass), and only in semi_auto/auto_parallel: stand-alone, MindSpore ignores it.
TEST(Parallel, CellShardIsCheckedPerCallAndOnlyWhenSharding) {
  const std::string net =
      "class Block(nn.Cell):\n    def __init__(self):\n        super().__init__()\n"
      "        self.relu = nn.ReLU()\n\n    def construct(self, x):\n"
      "        return self.relu(x)\n\n\nclass Net(nn.Cell):\n"
      "    def __init__(self):\n        super().__init__()\n        self.block = Block()\n"
      "        self.none = self.block.shard(in_strategy=((1, 8),))\n\n"
      "    def construct(self, x, y):\n        return self.block(x), self.block(y), self.none\n\n\n"
      "net = Net()\nout = net(Tensor(np.ones((16, 32), np.float32)), "
      "Tensor(np.ones((16, 30), np.float32)))\n";
  const std::string head =
      "import numpy as np\nimport mindspore as ms\nfrom mindspore import Tensor, nn\n\n";
  AnalysisResult r = analyse_source(
      "cellscope_cell_shard_calls",
      head +
          "ms.set_auto_parallel_context(parallel_mode=\"semi_auto_parallel\", device_num=8)\n\n\n" +
          net);
  std::vector<const Diagnostic*> errors;
  for (const Diagnostic& d : r.diagnostics) {
    if (d.code.rfind("parallel-", 0) == 0) errors.push_back(&d);
  }
  ASSERT_EQ(errors.size(), 1U) << listing(r);
  EXPECT_EQ(errors[0]->code, "parallel-not-divisible");
  EXPECT_NE(
      errors[0]->message.find("dimension length: 30 is not divisible by layout: 8 at index: 1"),
      std::string::npos)
      << errors[0]->message;
  EXPECT_EQ(errors[0]->range.start.line, 20U);  // the .shard call (0-based)
  // Cell.shard returns None (MindSpore 2.10): the third output is no tensor.
  ASSERT_FALSE(r.cells.empty());
  EXPECT_EQ(r.cells.front().outputs.size(), 2U) << listing(r);
  AnalysisResult alone = analyse_source("cellscope_cell_shard_alone", head + "\n\n" + net);
  for (const Diagnostic& d : alone.diagnostics)
    EXPECT_NE(d.code.rfind("parallel-", 0), 0U) << d.message;
}

// The parallel optimizer (enable_parallel_optimizer=True; docs/parallel.md §11): Dense(256, 128)
// on 8 devices under semi_auto_parallel, batch-parallel (D1), so its parameters are repeated on
// all 8. The weight (128 KB, at least the 64 KB threshold, 128 rows divisible by 8) is kept as
// 1/8 shards: gathered before the forward pass, its gradient reduce-scattered, and its update
// 1/8 of the work; the bias (512 B) is below the threshold and AllReduced whole. With
// optimizer_weight_shard_size 2 the weight is sharded over 2 and the shard AllReduced over 4.
TEST(CommPass, ParallelOptimizerShardsTheRepeatedParameters) {
  auto source = [](const std::string& config) {
    return "import numpy as np\nimport mindspore as ms\nfrom mindspore import Tensor, nn\n\n"
           "ms.set_auto_parallel_context(parallel_mode=\"semi_auto_parallel\", device_num=8, "
           "enable_parallel_optimizer=True" +
           config +
           ")\n\n\nclass Net(nn.Cell):\n    def __init__(self):\n        super().__init__()\n"
           "        self.fc = nn.Dense(256, 128)\n\n    def construct(self, x):\n"
           "        return self.fc(x)\n\n\nnet = Net()\nout = net(Tensor(np.ones((16, 256), "
           "np.float32)))\n";
  };
  auto run = [](const AnalysisResult& r, const ParallelContext* pc) {
    HardwareOptions ho;
    ho.target = "ascend910";
    ho.mode = "train";
    ho.optimizer = "sgd";
    ho.parallel = pc;
    return estimate_hardware(r.cells.front(), optimize_parallel(r, r.cells.front(), "ascend910"),
                             ho);
  };
  auto comm = [](const HardwareGraph& hw) {
    std::map<std::string, double> out;
    for (const KernelEstimate& k : hw.kernels) {
      if (k.unit == Unit::Comm) out[k.name] = k.comm_bytes;
    }
    return out;
  };
  auto updated = [](const HardwareGraph& hw) {
    double b = 0;
    for (const KernelEstimate& k : hw.kernels) {
      if (k.phase == "optimizer") b += k.gm_read_bytes + k.gm_write_bytes;
    }
    return b;
  };
  AnalysisResult r = analyse_source("cellscope_comm_optimizer", source(""));
  ASSERT_FALSE(r.cells.empty()) << listing(r);
  ASSERT_TRUE(r.parallel.parallel_optimizer);
  const HardwareGraph hw = run(r, &r.parallel);
  const double weight = 128.0 * 256 * 4;
  std::map<std::string, double> expected = {
      {"AllGather(parameters of the parallel optimizer: 1, 8 devices)", 7 * weight / 8},
      {"ReduceScatter(gradients of 1 parameter, 8 devices)", 7 * weight / 8},
      {"AllReduce(gradients of 1 parameter, 8 devices)", 2.0 * 7 / 8 * 128 * 4}};
  EXPECT_EQ(comm(hw), expected);
  ParallelContext plain = r.parallel;
  plain.parallel_optimizer = false;
  const HardwareGraph whole = run(r, &plain);
  EXPECT_EQ(comm(whole),
            (std::map<std::string, double>{{"AllReduce(gradients of 2 parameters, 8 devices)",
                                            2.0 * 7 / 8 * (weight + 128 * 4)}}));
  // SGD reads and writes w and its gradient per element: the weight's part is 1/8.
  EXPECT_NEAR(updated(hw), updated(whole) * (weight / 8 + 128 * 4) / (weight + 128 * 4), 1e-6);

  AnalysisResult two =
      analyse_source("cellscope_comm_optimizer_2",
                     source(", parallel_optimizer_config={\"optimizer_weight_shard_size\": 2}"));
  ASSERT_FALSE(two.cells.empty()) << listing(two);
  EXPECT_EQ(two.parallel.optimizer_shard_size, 2);
  const auto by_two = comm(run(two, &two.parallel));
  EXPECT_DOUBLE_EQ(by_two.at("AllGather(parameters of the parallel optimizer: 1, 2 devices)"),
                   weight / 2);
  EXPECT_DOUBLE_EQ(by_two.at("ReduceScatter(gradients of 1 parameter, 2 devices)"), weight / 2);
  EXPECT_DOUBLE_EQ(by_two.at("AllReduce(gradients of 1 parameter, 4 devices)"),
                   2.0 * 3 / 4 * weight / 2);
  EXPECT_DOUBLE_EQ(by_two.at("AllReduce(gradients of 1 parameter, 8 devices)"),
                   2.0 * 7 / 8 * 128 * 4);
}

TEST(CommPass, PipelineStepHasTheBubble) {
  AnalysisResult r = analyse(kCases / "pipeline_four_stages_valid.py");
  const CellReport* cell = parallel_cell(r);
  ASSERT_NE(cell, nullptr);
  HardwareOptions ho;
  ho.target = "ascend910";
  ho.parallel = &r.parallel;
  const HardwareGraph hw = estimate_hardware(*cell, optimize_parallel(r, *cell, "ascend910"), ho);
  const ModelEstimate& e = hw.estimate;
  EXPECT_EQ(e.pipeline_stages, 4);
  EXPECT_EQ(e.micro_batches, 4);
  EXPECT_DOUBLE_EQ(e.bubble_fraction, 3.0 / 7.0);
  ASSERT_EQ(e.stages.size(), 4U);
  double slowest = 0;
  for (const StageEstimate& s : e.stages) {
    EXPECT_GT(s.compute_ms, 0) << s.stage;
    slowest = std::max(slowest, s.compute_ms + s.comm_ms);
  }
  // Stages 0..2 send, 1..3 receive: every stage has communication.
  for (const StageEstimate& s : e.stages) EXPECT_GT(s.comm_ms, 0) << s.stage;
  EXPECT_DOUBLE_EQ(e.pipeline_step_ms, slowest * (4 + 4 - 1) / 4.0);
  EXPECT_DOUBLE_EQ(e.latency_ms, e.pipeline_step_ms);
}

TEST(CommPass, SingleDeviceOptimizedLayerIsUnchanged) {
  // A stand-alone program: the parallel context is recorded but names one device at most.
  AnalysisResult r =
      analyse_source("cellscope_comm_single",
                     "import numpy as np\nimport mindspore as ms\nfrom mindspore import "
                     "Tensor, nn, ops\n\n\nclass Net(nn.Cell):\n    def __init__(self):\n"
                     "        super().__init__()\n        self.fc = nn.Dense(64, 32)\n"
                     "        self.relu = ops.ReLU()\n\n    def construct(self, x):\n"
                     "        return self.relu(self.fc(x))\n\n\nnet = Net()\n"
                     "out = net(Tensor(np.ones((16, 64), np.float32)))\n");
  ASSERT_FALSE(r.cells.empty());
  ASSERT_LE(r.parallel.device_num, 1);
  for (const std::string target : {"cpu", "ascend910"}) {
    OptimizeOptions with;
    with.target = target;
    with.parallel = &r.parallel;
    OptimizeOptions without;
    without.target = target;
    const OptimizedGraph a = optimize(r.cells[0], with);
    const OptimizedGraph b = optimize(r.cells[0], without);
    ASSERT_EQ(a.nodes.size(), b.nodes.size());
    for (size_t i = 0; i < a.nodes.size(); ++i) {
      EXPECT_EQ(a.nodes[i].id, b.nodes[i].id);
      EXPECT_EQ(a.nodes[i].op, b.nodes[i].op);
      EXPECT_EQ(a.nodes[i].inputs, b.nodes[i].inputs);
    }
    ASSERT_EQ(a.passes.size(), b.passes.size());
    for (const PassRecord& p : a.passes) EXPECT_NE(p.name, "comm");
    EXPECT_TRUE(comm_nodes(a).empty());
  }
  // mindspore_config.json's device_num does not make a stand-alone script a parallel job (the
  // mode is MindSpore's default): no comm pass, and no parallel note in the estimate.
  r.parallel.device_num = 8;
  r.parallel.device_num_from = "mindspore_config.json";
  ASSERT_EQ(r.parallel.parallel_mode, "stand_alone");
  OptimizeOptions oo;
  oo.target = "ascend910";
  oo.parallel = &r.parallel;
  const OptimizedGraph g = optimize(r.cells[0], oo);
  for (const PassRecord& p : g.passes) EXPECT_NE(p.name, "comm");
  HardwareOptions ho;
  ho.target = "ascend910";
  ho.parallel = &r.parallel;
  const HardwareGraph hw = estimate_hardware(r.cells[0], g, ho);
  for (const std::string& n : hw.estimate.notes)
    EXPECT_EQ(n.find("parallel"), std::string::npos) << n;
  EXPECT_EQ(hw.estimate.comm_bytes, 0);
  EXPECT_EQ(hw.estimate.pipeline_stages, 0U);
  fs::remove_all(fs::temp_directory_path() / "cellscope_comm_single");
}

// The node of `r`'s first Cell with id `id`, or nullptr.
const Node* node_named(const AnalysisResult& r, const std::string& id) {
  if (r.cells.empty()) return nullptr;
  for (const Node& n : r.cells.front().graph.nodes) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

// Sharding propagation (docs/parallel.md §12): a Cell.shard'ed block's operators take their
// strategies from the layout its in_strategy gives its input, down to the operators after it;
// a split contracted dimension adds MatMul's AllReduce; parameter_plan splits a Parameter an
// operator reads; nothing is propagated under semi_auto_parallel without a sharded Cell.
TEST(Parallel, CellShardLayoutsPropagateToTheOperatorsThatUseThem) {
  auto source = [](const std::string& context, const std::string& shard) {
    return "import numpy as np\nimport mindspore as ms\nfrom mindspore import Parameter, Tensor, "
           "nn, ops\n\nms.set_auto_parallel_context(" +
           context +
           ")\n\n\nclass Block(nn.Cell):\n    def __init__(self):\n        super().__init__()\n"
           "        self.fc1 = nn.Dense(64, 128)\n        self.relu = nn.ReLU()\n"
           "        self.fc2 = nn.Dense(128, 32)\n\n    def construct(self, x):\n"
           "        return self.fc2(self.relu(self.fc1(x)))\n\n\nclass Proj(nn.Cell):\n"
           "    def __init__(self):\n        super().__init__()\n"
           "        self.w = Parameter(Tensor(np.ones((32, 16), np.float32)))\n"
           "        self.matmul = ops.MatMul()\n\n    def construct(self, x):\n"
           "        return self.matmul(x, self.w)\n\n\nclass Net(nn.Cell):\n"
           "    def __init__(self):\n        super().__init__()\n        self.block = Block()\n"
           "        self.proj = Proj()\n" +
           shard +
           "        self.add = ops.Add()\n\n    def construct(self, x):\n"
           "        return self.add(self.proj(self.block(x)), 1.0)\n\n\nnet = Net()\n"
           "out = net(Tensor(np.ones((16, 64), np.float32)))\n";
  };
  const std::string semi = "parallel_mode=\"semi_auto_parallel\", device_num=8";
  const AnalysisResult r = analyse_source(
      "cellscope_shard_propagation",
      source(semi,
             "        self.block.shard(in_strategy=((4, 1),))\n"
             "        self.proj.shard(in_strategy=((2, 1),), parameter_plan={\"self.proj.w\": (1, "
             "4)})\n"));
  for (const Diagnostic& d : r.diagnostics)
    EXPECT_NE(d.code.rfind("parallel-", 0), 0U) << listing(r);
  ASSERT_FALSE(r.cells.empty());
  const Graph& g = r.cells.front().graph;
  ASSERT_EQ(g.shard_seeds.size(), 2U);
  EXPECT_EQ(g.shard_seeds[0].what, "self.block.shard");
  EXPECT_EQ(g.shard_seeds[0].propagated, 3U);  // fc1, relu, fc2
  auto expect = [&](const std::string& id, const std::vector<int64_t>& shape,
                    const std::string& from) {
    const Node* n = node_named(r, id);
    ASSERT_NE(n, nullptr) << id;
    ASSERT_TRUE(n->parallel) << id;
    EXPECT_EQ(n->parallel->propagated_from, from) << id;
    ASSERT_EQ(n->parallel->per_device_outputs.size(), 1U) << id;
    EXPECT_EQ(dims_of(n->parallel->per_device_outputs[0]), shape) << id;
    EXPECT_EQ(n->parallel->shard_range, SourceRange{}) << id;  // no strategy written there
  };
  expect("block.fc1", {4, 128}, "self.block.shard");
  expect("block.relu", {4, 128}, "self.block.shard");
  expect("block.fc2", {4, 32}, "self.block.shard");
  // Proj's input is laid out (2, 1) by its own call, its weight (1, 4) by parameter_plan:
  // MatMul ((2, 1), (1, 4)) on all 8 devices, its output split (2, 4).
  const Node* mm = node_named(r, "proj.matmul");
  ASSERT_NE(mm, nullptr);
  ASSERT_TRUE(mm->parallel);
  EXPECT_EQ(mm->parallel->propagated_from, "self.proj.shard");
  EXPECT_EQ(mm->parallel->in_strategy, (Strategy{{2, 1}, {1, 4}}));
  EXPECT_EQ(mm->parallel->device_matrix, 8);
  ASSERT_EQ(mm->parallel->per_device_outputs.size(), 1U);
  EXPECT_EQ(dims_of(mm->parallel->per_device_outputs[0]), (std::vector<int64_t>{8, 4}));
  expect("add", {8, 4}, "self.proj.shard");
  const std::string hover = describe_parallel(g, *node_named(r, "block.relu"));
  EXPECT_NE(hover.find("by sharding propagation from `self.block.shard` (line 34)"),
            std::string::npos)
      << hover;
  const std::string seed = describe_shard_seed(g, g.shard_seeds[0]);
  EXPECT_NE(seed.find("3 operators take their strategies from it"), std::string::npos) << seed;
  EXPECT_NE(seed.find("x: global [16, 64], per device [4, 64] (split (4, 1))"), std::string::npos)
      << seed;

  // Splitting the features the first Dense contracts: its partial sums are AllReduced.
  const AnalysisResult k =
      analyse_source("cellscope_shard_propagation_k",
                     source(semi, "        self.block.shard(in_strategy=((1, 8),))\n"));
  const Node* fc1 = node_named(k, "block.fc1");
  ASSERT_NE(fc1, nullptr);
  ASSERT_TRUE(fc1->parallel);
  ASSERT_EQ(fc1->parallel->comms.size(), 1U) << describe_parallel(k.cells.front().graph, *fc1);
  EXPECT_EQ(fc1->parallel->comms[0].kind, "AllReduce");
  EXPECT_EQ(fc1->parallel->comms[0].group, 8);

  // No sharded Cell under semi_auto_parallel: no propagation (D1 applies instead).
  const AnalysisResult none = analyse_source("cellscope_shard_propagation_none", source(semi, ""));
  ASSERT_FALSE(none.cells.empty());
  EXPECT_TRUE(none.cells.front().graph.shard_seeds.empty());
  for (const Node& n : none.cells.front().graph.nodes)
    EXPECT_TRUE(!n.parallel || n.parallel->in_strategy.empty()) << n.id;

  // auto_parallel with sharding_propagation: a Primitive.shard'ed operator's output layout
  // reaches the operator after it.
  const AnalysisResult prim = analyse_source(
      "cellscope_shard_propagation_primitive",
      source("parallel_mode=\"auto_parallel\", search_mode=\"sharding_propagation\", "
             "device_num=8",
             "        self.proj.matmul.shard(((8, 1), (1, 1)))\n"));
  const Node* add = node_named(prim, "add");
  ASSERT_NE(add, nullptr);
  ASSERT_TRUE(add->parallel) << listing(prim);
  EXPECT_EQ(add->parallel->propagated_from, "self.matmul.shard");
  ASSERT_EQ(add->parallel->per_device_outputs.size(), 1U);
  EXPECT_EQ(dims_of(add->parallel->per_device_outputs[0]), (std::vector<int64_t>{2, 16}));
}

// Sharding propagation through a Transformer attention block (docs/parallel.md §13): the batch
// split a Cell.shard gives its input passes LayerNorm (its normalized axis stays whole), the
// Dense layers, the reshape into heads and the transposes (their rules: the split stays on the
// leading dimension of its group, the permutation moves it), both BatchMatMuls and the Softmax,
// and back: every operator runs on a quarter of the batch with no communication. A split of
// the hidden dimension stops at the LayerNorm, which needs it whole (gathered there).
TEST(Parallel, PropagationFollowsTheBatchThroughAnAttentionBlock) {
  auto source = [](const std::string& strategy) {
    return "import numpy as np\nimport mindspore as ms\nfrom mindspore import Tensor, nn, ops\n\n"
           "ms.set_auto_parallel_context(parallel_mode=\"semi_auto_parallel\", device_num=8)\n\n\n"
           "class Attention(nn.Cell):\n    def __init__(self):\n        super().__init__()\n"
           "        self.norm = nn.LayerNorm((64,))\n        self.q = nn.Dense(64, 64)\n"
           "        self.k = nn.Dense(64, 64)\n        self.v = nn.Dense(64, 64)\n"
           "        self.out = nn.Dense(64, 64)\n"
           "        self.scores = ops.BatchMatMul(transpose_b=True)\n"
           "        self.mix = ops.BatchMatMul()\n        self.softmax = nn.Softmax()\n\n"
           "    def heads(self, t):\n        return t.reshape(8, 16, 4, 16).transpose(0, 2, 1, "
           "3)\n\n"
           "    def construct(self, x):\n        y = self.norm(x)\n"
           "        q, k, v = self.heads(self.q(y)), self.heads(self.k(y)), self.heads(self.v(y))\n"
           "        a = self.softmax(self.scores(q, k))\n"
           "        o = self.mix(a, v).transpose(0, 2, 1, 3).reshape(8, 16, 64)\n"
           "        return x + self.out(o)\n\n\nclass Net(nn.Cell):\n    def __init__(self):\n"
           "        super().__init__()\n        self.attn = Attention()\n"
           "        self.attn.shard(in_strategy=(" +
           strategy +
           ",))\n\n    def construct(self, x):\n        return self.attn(x)\n\n\nnet = Net()\n"
           "out = net(Tensor(np.ones((8, 16, 64), np.float32)))\n";
  };
  const AnalysisResult r = analyse_source("cellscope_propagation_attention", source("(2, 1, 1)"));
  for (const Diagnostic& d : r.diagnostics)
    EXPECT_NE(d.code.rfind("parallel-", 0), 0U) << listing(r);
  ASSERT_FALSE(r.cells.empty());
  const Graph& g = r.cells.front().graph;
  ASSERT_EQ(g.shard_seeds.size(), 1U);
  size_t ops = 0;
  for (const Node& n : g.nodes) {
    if (n.kind != NodeKind::Op) continue;
    ++ops;
    ASSERT_TRUE(n.parallel) << n.id;
    EXPECT_EQ(n.parallel->propagated_from, "self.attn.shard") << n.id;
    ASSERT_EQ(n.parallel->per_device_outputs.size(), 1U) << n.id;
    const Shape& local = n.parallel->per_device_outputs[0];
    ASSERT_TRUE(local.rank() > 0 && local.dims[0].is_known()) << n.id;
    EXPECT_EQ(local.dims[0].value(), n.outputs[0].shape.dims[0].value() / 2) << n.id;
    EXPECT_TRUE(n.parallel->comms.empty()) << n.id << ": " << describe_parallel(g, n);
  }
  EXPECT_EQ(g.shard_seeds[0].propagated, ops);
  EXPECT_GE(ops, 17U);  // LayerNorm, 4 Dense, 4 reshapes, 4 transposes, 2 BatchMatMul, ...
  // The heads' transpose moved the batch split: [8, 16, 4, 16] (2, 1, 1, 1) -> [8, 4, 16, 16].
  const Node* scores = node_named(r, "attn.scores");
  ASSERT_NE(scores, nullptr);
  EXPECT_EQ(dims_of(scores->parallel->per_device_outputs[0]), (std::vector<int64_t>{4, 4, 16, 16}));

  // The hidden dimension split by 4: LayerNorm needs it whole, so its strategy is (1, 1, 1) and
  // its input is gathered from the Cell's (1, 1, 4) layout.
  const AnalysisResult h = analyse_source("cellscope_propagation_hidden", source("(1, 1, 4)"));
  const Node* norm = node_named(h, "attn.norm");
  ASSERT_NE(norm, nullptr);
  ASSERT_TRUE(norm->parallel) << listing(h);
  EXPECT_EQ(norm->parallel->in_strategy, (Strategy{{1, 1, 1}}));
}

// The sharding rules of LayerNorm, Transpose and Reshape (their OpDefs) for written strategies:
// a Transpose's output takes its input's splits permuted; splitting LayerNorm's normalized
// axis is refused as MindSpore refuses it (LayerNormInfo::CheckStrategy).
TEST(Parallel, TransposeAndLayerNormRulesCheckWrittenStrategies) {
  auto source = [](const std::string& shard) {
    return "import numpy as np\nimport mindspore as ms\nfrom mindspore import Parameter, Tensor, "
           "nn, ops\n\nms.set_auto_parallel_context(parallel_mode=\"semi_auto_parallel\", "
           "device_num=8)\n\n\nclass Net(nn.Cell):\n    def __init__(self):\n"
           "        super().__init__()\n" +
           shard + "\n\n    def construct(self, x):\n        return self.op(x" +
           (shard.find("LayerNorm") != std::string::npos ? ", self.g, self.b)[0]"
                                                         : ", (0, 2, 1))") +
           "\n\n\nnet = Net()\nout = net(Tensor(np.ones((8, 16, 64), np.float32)))\n";
  };
  const AnalysisResult t = analyse_source(
      "cellscope_rule_transpose", source("        self.op = ops.Transpose().shard(((2, 4, 1),))"));
  const Node* tr = sharded_at(t, 10);
  ASSERT_NE(tr, nullptr) << listing(t);
  EXPECT_EQ(tr->parallel->output_split, (std::vector<int64_t>{2, 1, 4}));
  ASSERT_EQ(tr->parallel->per_device_outputs.size(), 1U);
  EXPECT_EQ(dims_of(tr->parallel->per_device_outputs[0]), (std::vector<int64_t>{4, 64, 4}));
  const AnalysisResult ln = analyse_source(
      "cellscope_rule_layernorm",
      source("        self.g = Parameter(Tensor(np.ones((64,), np.float32)))\n"
             "        self.b = Parameter(Tensor(np.zeros((64,), np.float32)))\n"
             "        self.op = ops.LayerNorm(-1, -1).shard(((2, 1, 4), (4,), (4,)))"));
  std::vector<const Diagnostic*> errors;
  for (const Diagnostic& d : ln.diagnostics) {
    if (d.code.rfind("parallel-", 0) == 0) errors.push_back(&d);
  }
  ASSERT_EQ(errors.size(), 1U) << listing(ln);
  EXPECT_EQ(errors[0]->code, "parallel-split-mismatch");
  EXPECT_NE(errors[0]->message.find("The dimensions starting form begin_norm_axis cannot be split, "
                                    "the begin_norm_axis is 2, but the strategy of first input is "
                                    "(2, 1, 4)"),
            std::string::npos)
      << errors[0]->message;
}

}  // namespace
}  // namespace graphcore
