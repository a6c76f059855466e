// The pass manager: formats, the import of a semantic graph, the shared rewriting helpers and the
// pipeline itself. The targets (targets(), find_target()) are read from the target files
// (graphcore/targets/*.json) by src/hw/target.cpp.
#include <algorithm>
#include <array>
#include <chrono>
#include <stdexcept>
#include <unordered_set>

#include "graphcore/checked.h"
#include "graphcore/opdef.h"
#include "opt/passes.h"

namespace graphcore {

namespace {

struct PassInfo {
  std::string_view name;
  std::string_view description;
  void (*run)(opt::PassContext&);
  bool ascend_only;
  bool parallel_only = false;  // runs only for a parallel job (device_num > 1)
};

constexpr std::array kPasses = {
    PassInfo{"dce", "dead-code elimination: drop ops whose results nobody reads", opt::run_dce,
             false},
    PassInfo{"constant-fold", "constant folding: ops whose inputs are all constants",
             opt::run_constant_fold, false},
    PassInfo{"comm",
             "parallel jobs: the communication MindSpore inserts (AllReduce, ReduceScatter, "
             "AllGather of a redistribution, Send/Receive between pipeline stages)",
             opt::run_comm, false, true},
    PassInfo{
        "fuse-attention",
        "BatchMatMul, scale (Mul/Div), mask (Add), Softmax, BatchMatMul -> one attention kernel",
        opt::run_fuse_attention, false},
    PassInfo{"fuse-conv",
             "Conv2D (+BiasAdd) (+BatchNorm) (+residual Add) (+ReLU/ReLU6) -> one conv kernel",
             opt::run_fuse_conv, false},
    PassInfo{"fuse-dense", "MatMul with weights (+bias) (+activation) -> one dense kernel",
             opt::run_fuse_dense, false},
    PassInfo{
        "fuse-layernorm",
        "decomposed LayerNorm -> one LayerNorm kernel; residual Add + LayerNorm -> AddLayerNorm",
        opt::run_fuse_layernorm, false},
    PassInfo{"fuse-elementwise", "chains of elementwise ops -> one elementwise kernel",
             opt::run_fuse_elementwise, false},
    PassInfo{"amp",
             "mixed precision (amp O2): float16 kernels, BatchNorm/LayerNorm in float32, Cast "
             "where the dtype changes",
             opt::run_amp, true},
    PassInfo{"layout",
             "Ascend formats: NC1HWC0 for Cube convolutions, FRACTAL_NZ for matmuls, TransData "
             "where formats change",
             opt::run_layout, true},
    PassInfo{"transdata-elim",
             "remove TransData pairs that undo each other and conversions a consumer converts "
             "straight back",
             opt::run_transdata_elim, true},
    PassInfo{"memory-plan", "tensor lifetimes and greedy-by-size offsets in one arena",
             opt::run_memory_plan, false},
};

std::string target_list() {
  std::string out;
  for (const auto& t : targets()) {
    if (!out.empty()) out += ", ";
    out += t.name;
  }
  return out;
}

std::string pass_list() {
  std::string out;
  for (const auto& p : kPasses) {
    if (!out.empty()) out += ", ";
    out += p.name;
  }
  return out;
}

OptimizedGraph import_graph(const CellReport& report, std::string_view target) {
  OptimizedGraph g;
  g.target = std::string(target);
  const Graph& sem = report.graph;
  g.nodes.reserve(sem.nodes.size());
  for (uint32_t i = 0; i < sem.nodes.size(); ++i) {
    const Node& s = sem.nodes[i];
    OptNode n;
    n.id = s.id;
    n.kind = s.kind;
    n.op = s.op;
    n.inputs = s.inputs;
    n.outputs = s.outputs;
    n.formats.reserve(s.outputs.size());
    for (const auto& t : s.outputs) n.formats.push_back(default_format(t.shape.rank()));
    n.origins = {i};
    n.pass = "import";
    n.params = s.params;
    n.flops = s.flops;
    g.nodes.push_back(std::move(n));
  }
  g.outputs = sem.outputs;
  return g;
}

}  // namespace

std::string_view format_name(Format f) {
  switch (f) {
    case Format::ND:
      return "ND";
    case Format::NCHW:
      return "NCHW";
    case Format::NC1HWC0:
      return "NC1HWC0";
    case Format::FRACTAL_NZ:
      return "FRACTAL_NZ";
  }
  return "ND";
}

Format default_format(size_t rank) { return rank == 4 ? Format::NCHW : Format::ND; }

std::optional<uint64_t> tensor_bytes(const TensorType& type, Format format) {
  if (!type.shape.ranked) return std::nullopt;
  const uint64_t elem = dtype_size(type.dtype);
  if (elem == 0) return std::nullopt;
  std::vector<uint64_t> dims;
  dims.reserve(type.shape.rank());
  for (const Dim& d : type.shape.dims) {
    if (!d.is_known()) return std::nullopt;
    dims.push_back(static_cast<uint64_t>(d.value()));
  }
  const uint64_t c0 = elem == 1 ? 32 : 16;
  auto round_up = [](uint64_t v, uint64_t m) { return (v + m - 1) / m * m; };
  if (format == Format::NC1HWC0 && dims.size() == 4) {
    dims[1] = round_up(dims[1], c0);
  } else if (format == Format::FRACTAL_NZ && dims.size() >= 2) {
    dims[dims.size() - 2] = round_up(dims[dims.size() - 2], 16);
    dims.back() = round_up(dims.back(), c0);
  }
  // Sizes that overflow are unknown, not wrapped.
  std::optional<uint64_t> n = elem;
  for (uint64_t d : dims) {
    if (n) n = checked_mul(*n, d);
  }
  return n;
}

std::vector<std::string_view> pass_names() {
  std::vector<std::string_view> out;
  out.reserve(kPasses.size());
  for (const auto& p : kPasses) out.push_back(p.name);
  return out;
}

OptimizedGraph optimize(const CellReport& report, const OptimizeOptions& options) {
  const TargetInfo* target = find_target(options.target);
  if (!target) {
    throw std::invalid_argument("unknown target '" + options.target + "' (expected one of " +
                                target_list() + ")");
  }
  if (options.precision != "mixed" && options.precision != "fp32") {
    throw std::invalid_argument("unknown precision '" + options.precision +
                                "' (expected mixed or fp32)");
  }
  if (!report.compiled) {
    throw std::invalid_argument("`" + report.name +
                                "`: construct did not compile, so there is no graph to optimize");
  }
  std::vector<const PassInfo*> pipeline;
  if (options.passes.empty()) {
    for (const auto& p : kPasses) pipeline.push_back(&p);
  } else {
    std::unordered_set<std::string_view> wanted;
    for (const auto& name : options.passes) {
      auto it = std::find_if(kPasses.begin(), kPasses.end(),
                             [&](const PassInfo& p) { return p.name == name; });
      if (it == kPasses.end()) {
        throw std::invalid_argument("unknown pass '" + name + "' (expected one of " + pass_list() +
                                    ")");
      }
      wanted.insert(it->name);
    }
    for (const auto& p : kPasses) {
      if (wanted.count(p.name)) pipeline.push_back(&p);
    }
  }

  OptimizedGraph g = import_graph(report, target->name);
  if (options.dump) options.dump("import", 0, g);
  size_t index = 0;
  for (const PassInfo* p : pipeline) {
    if (p->ascend_only && !target->ascend) continue;
    if (p->parallel_only && (options.parallel == nullptr || !options.parallel->parallel_job()))
      continue;
    const auto t0 = std::chrono::steady_clock::now();
    PassRecord rec;
    rec.name = std::string(p->name);
    rec.description = std::string(p->description);
    rec.nodes_before = g.nodes.size();
    opt::PassContext ctx{report, *target, g};
    ctx.precision = options.precision;
    ctx.parallel = options.parallel;
    p->run(ctx);
    rec.nodes_after = g.nodes.size();
    rec.changes = ctx.changes;
    rec.ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    g.passes.push_back(std::move(rec));
    if (options.dump) options.dump(p->name, ++index, g);
  }
  return g;
}

namespace opt {

Uses::Uses(const OptimizedGraph& g) {
  const size_t n = g.nodes.size();
  start_.assign(n + 1, 0);
  output_.assign(n, 0);
  for (const auto& node : g.nodes) {
    for (const auto& r : node.inputs) ++start_[r.node + 1];
  }
  for (size_t i = 0; i < n; ++i) start_[i + 1] += start_[i];
  uses_.resize(start_[n]);
  std::vector<uint32_t> fill(start_.begin(), start_.end() - 1);
  for (uint32_t i = 0; i < n; ++i) {
    const auto& in = g.nodes[i].inputs;
    for (uint32_t s = 0; s < in.size(); ++s) uses_[fill[in[s].node]++] = Use{i, s, in[s].output};
  }
  for (const auto& r : g.outputs) output_[r.node] = 1;
}

uint32_t sole_consumer(const OptimizedGraph& g, const Uses& uses, uint32_t n, std::string* why) {
  const auto u = uses.of(n);
  if (uses.is_output(n)) {
    if (why) *why = "its output is a graph output";
    return kNone;
  }
  if (u.empty()) {
    if (why) *why = "its output is not read";
    return kNone;
  }
  if (u.size() == 1 && g.nodes[n].outputs.size() == 1) return u[0].node;
  if (why) {
    std::string others;
    size_t shown = 0;
    for (const auto& x : u) {
      if (shown == 3) {
        others += ", ...";
        break;
      }
      if (!others.empty()) others += ", ";
      others += quoted(g.nodes[x.node]);
      ++shown;
    }
    *why = "its output feeds " + std::to_string(u.size()) + " consumers (" + others + ")";
  }
  return kNone;
}

void apply_groups(PassContext& ctx, std::vector<Group>& groups, std::string_view pass) {
  if (groups.empty()) return;
  OptimizedGraph& g = ctx.g;
  const size_t n = g.nodes.size();
  std::vector<uint32_t> group_of(n, kNone);
  for (uint32_t k = 0; k < groups.size(); ++k) {
    for (uint32_t m : groups[k].members) group_of[m] = k;
  }
  std::vector<uint32_t> remap(n, kNone);
  std::vector<OptNode> out;
  out.reserve(n);
  auto map_ref = [&](ValueRef r) {
    if (remap[r.node] == kNone) {
      throw std::logic_error("optimizer: `" + g.nodes[r.node].id +
                             "` is read outside its fusion group");
    }
    return ValueRef{remap[r.node], r.output};
  };
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t k = group_of[i];
    if (k == kNone) {
      OptNode node = std::move(g.nodes[i]);
      for (auto& r : node.inputs) r = map_ref(r);
      remap[i] = static_cast<uint32_t>(out.size());
      out.push_back(std::move(node));
      continue;
    }
    Group& grp = groups[k];
    if (grp.members.back() != i) continue;
    const OptNode& anchor = g.nodes[grp.members.front()];
    OptNode fused;
    fused.id = grp.pattern + "/" + anchor.id;
    fused.kind = NodeKind::Op;
    fused.op = grp.op;
    fused.pattern = grp.pattern;
    fused.pass = std::string(pass);
    fused.outputs = g.nodes[i].outputs;
    fused.formats = g.nodes[i].formats;
    for (uint32_t m : grp.members) {
      const OptNode& member = g.nodes[m];
      for (const auto& r : member.inputs) {
        if (group_of[r.node] == k) continue;
        const ValueRef mapped = map_ref(r);
        if (std::find(fused.inputs.begin(), fused.inputs.end(), mapped) == fused.inputs.end())
          fused.inputs.push_back(mapped);
      }
      add_origins(member, fused.origins);
      fused.params.insert(fused.params.end(), member.params.begin(), member.params.end());
      fused.flops += member.flops;
    }
    if (grp.decision != SIZE_MAX) g.decisions[grp.decision].kernel = fused.id;
    ctx.changes += grp.members.size();
    remap[i] = static_cast<uint32_t>(out.size());
    out.push_back(std::move(fused));
  }
  for (auto& r : g.outputs) r = map_ref(r);
  g.nodes = std::move(out);
}

void compact(OptimizedGraph& g, const std::vector<char>& drop) {
  std::vector<uint32_t> remap(g.nodes.size(), kNone);
  uint32_t next = 0;
  for (uint32_t i = 0; i < g.nodes.size(); ++i) {
    if (!drop[i]) remap[i] = next++;
  }
  auto map_ref = [&](ValueRef& r) {
    if (remap[r.node] == kNone) {
      throw std::logic_error("optimizer: a removed node `" + g.nodes[r.node].id +
                             "` is still read");
    }
    r.node = remap[r.node];
  };
  std::vector<OptNode> out;
  out.reserve(next);
  for (uint32_t i = 0; i < g.nodes.size(); ++i) {
    if (drop[i]) continue;
    for (auto& r : g.nodes[i].inputs) map_ref(r);
    out.push_back(std::move(g.nodes[i]));
  }
  for (auto& r : g.outputs) map_ref(r);
  g.nodes = std::move(out);
}

std::string quoted_ids(const PassContext& ctx, std::span<const uint32_t> nodes) {
  std::string out;
  for (uint32_t i : nodes) {
    if (!out.empty()) out += ", ";
    out += "`" + ctx.sem_id(i) + "`";
  }
  return out;
}

std::string quoted(const OptNode& n) { return "`" + n.id + "`"; }

void add_origins(const OptNode& n, std::vector<uint32_t>& out) {
  out.insert(out.end(), n.origins.begin(), n.origins.end());
}

// The operators' traits are facts of their definitions (graphcore/opdef.h).
bool is_elementwise(std::string_view op) { return op_has(op, kElementwise); }
bool is_reshape_like(std::string_view op) { return op_has(op, kReshapeLike); }
bool is_activation(std::string_view op) { return op_has(op, kActivation); }
bool is_random(std::string_view op) { return op_has(op, kRandom); }

}  // namespace opt

}  // namespace graphcore
