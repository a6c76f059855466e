// Memory planning of activations in one arena.
//
// Execution order is the optimized graph's node order (a topological order). Every output of an
// op or graph input is a tensor; it is live from the step that writes it to the last step that
// reads it (graph outputs: to the end; graph inputs are written before step 0 at their own
// step). Parameters and constants live outside the arena and are only counted.
//
// Offsets are assigned greedy by size (the "greedy by size for offset calculation" strategy of
// TFLite's arena planner and MindSpore's SOMAS): tensors sorted by aligned size, largest first
// (ties: earlier first use, then graph order); each is placed at the lowest aligned offset where
// it overlaps no already-placed tensor whose lifetime intersects its own. Sizes are in the
// tensor's format (Ascend private formats include their padding), rounded up to the target's
// alignment. A buffer is one offset of the arena, shared by the tensors placed there.
//
// Cost: finding a tensor's conflicts walks the steps of its lifetime, over per-step lists of
// placed tensors: O(sum of lifetimes x live tensors per step), linear for graphs whose tensors
// die within a bounded number of steps (chains, residual blocks).
#include <algorithm>
#include <map>

#include "opt/passes.h"

namespace graphcore::opt {

void run_memory_plan(PassContext& ctx) {
  OptimizedGraph& g = ctx.g;
  MemoryPlan plan;
  plan.planned = true;
  plan.alignment = ctx.target.alignment;
  const auto steps = static_cast<uint32_t>(g.nodes.size());

  for (const ParamInfo& p : ctx.report.params) {
    plan.weight_bytes += tensor_bytes(TensorType{p.shape, p.dtype}, Format::ND).value_or(0);
  }
  // Lifetimes.
  std::vector<uint32_t> first_tensor(steps + 1, 0);  // node -> index of its first tensor
  for (uint32_t i = 0; i < steps; ++i) {
    const OptNode& node = g.nodes[i];
    first_tensor[i] = static_cast<uint32_t>(plan.tensors.size());
    if (node.kind == NodeKind::Constant) {
      for (const auto& t : node.outputs)
        plan.constant_bytes += tensor_bytes(t, Format::ND).value_or(0);
      continue;
    }
    if (node.kind == NodeKind::Parameter) continue;  // counted with the weights
    for (uint32_t k = 0; k < node.outputs.size(); ++k) {
      PlannedTensor t;
      t.node = i;
      t.output = k;
      t.first = i;
      t.last = i;
      plan.tensors.push_back(t);
    }
  }
  first_tensor[steps] = static_cast<uint32_t>(plan.tensors.size());
  auto tensor_of = [&](ValueRef r) -> PlannedTensor* {
    const uint32_t idx = first_tensor[r.node] + r.output;
    if (idx >= first_tensor[r.node + 1]) return nullptr;  // a Parameter or constant
    return &plan.tensors[idx];
  };
  for (uint32_t i = 0; i < steps; ++i) {
    for (const auto& r : g.nodes[i].inputs) {
      if (PlannedTensor* t = tensor_of(r)) t->last = std::max(t->last, i);
    }
  }
  for (const auto& r : g.outputs) {
    if (PlannedTensor* t = tensor_of(r)) t->last = steps;
  }
  // Sizes; tensors of unknown size are listed and left out.
  const uint64_t align = plan.alignment;
  std::vector<uint32_t> order;
  order.reserve(plan.tensors.size());
  for (uint32_t k = 0; k < plan.tensors.size(); ++k) {
    PlannedTensor& t = plan.tensors[k];
    const OptNode& node = g.nodes[t.node];
    const auto bytes = tensor_bytes(node.outputs[t.output], node.formats[t.output]);
    if (!bytes) {
      plan.unsized.push_back(node.id + ":" + std::to_string(t.output));
      continue;
    }
    t.bytes = *bytes;
    t.size = std::max<uint64_t>(align, (*bytes + align - 1) / align * align);
    order.push_back(k);
  }
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const PlannedTensor& x = plan.tensors[a];
    const PlannedTensor& y = plan.tensors[b];
    if (x.size != y.size) return x.size > y.size;
    return x.first < y.first;
  });

  // Greedy by size.
  std::vector<std::vector<uint32_t>> live_at(steps + 1);  // placed tensors live at each step
  std::vector<uint32_t> seen(plan.tensors.size(), UINT32_MAX);
  std::vector<uint32_t> conflicts;
  for (uint32_t k : order) {
    PlannedTensor& t = plan.tensors[k];
    conflicts.clear();
    for (uint32_t s = t.first; s <= t.last; ++s) {
      for (uint32_t other : live_at[s]) {
        if (seen[other] == k) continue;
        seen[other] = k;
        conflicts.push_back(other);
      }
    }
    std::sort(conflicts.begin(), conflicts.end(), [&](uint32_t a, uint32_t b) {
      return plan.tensors[a].offset < plan.tensors[b].offset;
    });
    uint64_t offset = 0;
    for (uint32_t other : conflicts) {
      const PlannedTensor& o = plan.tensors[other];
      if (offset + t.size <= o.offset) break;  // fits in the gap below `o`
      offset = std::max(offset, o.offset + o.size);
    }
    t.offset = offset;
    plan.peak = std::max(plan.peak, offset + t.size);
    plan.naive += t.size;
    for (uint32_t s = t.first; s <= t.last; ++s) live_at[s].push_back(k);
  }

  // Buffers: one per distinct offset.
  std::map<uint64_t, uint32_t> by_offset;
  std::vector<uint32_t> by_first = order;
  std::sort(by_first.begin(), by_first.end(), [&](uint32_t a, uint32_t b) {
    const PlannedTensor& x = plan.tensors[a];
    const PlannedTensor& y = plan.tensors[b];
    return x.first != y.first ? x.first < y.first : a < b;
  });
  for (uint32_t k : by_first) by_offset.emplace(plan.tensors[k].offset, 0);
  for (auto& [offset, index] : by_offset) {
    index = static_cast<uint32_t>(plan.buffers.size());
    plan.buffers.push_back(MemoryBuffer{offset, 0, {}});
  }
  for (uint32_t k : by_first) {
    PlannedTensor& t = plan.tensors[k];
    t.buffer = by_offset[t.offset];
    MemoryBuffer& b = plan.buffers[t.buffer];
    b.size = std::max(b.size, t.size);
    b.tensors.push_back(k);
  }
  // The most bytes live at once: no placement can use less than this.
  std::vector<int64_t> delta(steps + 2, 0);
  for (uint32_t k : order) {
    const PlannedTensor& t = plan.tensors[k];
    delta[t.first] += static_cast<int64_t>(t.size);
    delta[t.last + 1] -= static_cast<int64_t>(t.size);
  }
  int64_t live = 0;
  for (int64_t d : delta) {
    live += d;
    plan.lower_bound = std::max(plan.lower_bound, static_cast<uint64_t>(live));
  }
  ctx.changes = order.size();
  g.memory = std::move(plan);
}

}  // namespace graphcore::opt
