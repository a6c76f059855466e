// Communication (pass "comm"; parallel jobs only, OptimizeOptions::parallel with device_num > 1):
// the collective and point-to-point operators MindSpore inserts into each device's graph, from
// the facts the parallel checks recorded on the semantic nodes (Node::parallel, docs/parallel.md
// §4 and "Communication and its cost"):
//   - a forward AllReduce (or ReduceScatter, with MatMul's out_strategy) after an operator whose
//     strategy splits a contracted dimension: it reads the operator's output, and every reader of
//     that output reads the collective instead;
//   - the AllGather of a tensor redistribution (MindSpore's AllConcat) before the consumer whose
//     strategy asks for a coarser split than its producer's; the local StridedSlice that may
//     follow moves no data and is not a node;
//   - a Send and a Receive on every edge from an operator of pipeline stage s to an operator of a
//     later stage (pipeline_transformer.cc InsertSend / InsertReceive), one pair per value and
//     destination stage.
// Each node keeps the value's global type as its output (the graph's shapes stay global) and
// records in its attributes the per-device shape, the bytes one device holds (`bytes`, checked
// arithmetic) and sends (`moved_bytes`, comm_moved_bytes()), the group size and, for pipeline
// edges, the stages. The pass runs before fusion, so no fused kernel spans a collective.
#include <map>
#include <tuple>

#include "graphcore/checked.h"
#include "graphcore/opdef.h"
#include "opt/passes.h"

namespace graphcore {

std::optional<uint64_t> comm_moved_bytes(std::string_view kind, int64_t group, uint64_t bytes) {
  if (group < 1) return std::nullopt;
  const auto n = static_cast<uint64_t>(group);
  if (kind == "Send" || kind == "Receive") return bytes;
  if (kind == "AllGather") return checked_mul(bytes, n - 1);
  auto scaled = [&](uint64_t factor) -> std::optional<uint64_t> {
    auto v = checked_mul(bytes, factor * (n - 1));
    if (!v) return std::nullopt;
    return *v / n;
  };
  if (kind == "AllReduce") return scaled(2);
  if (kind == "ReduceScatter" || kind == "AllToAll") return scaled(1);
  return std::nullopt;
}

namespace opt {

namespace {

std::string dims_text(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.dims.size(); ++i) {
    if (i) out += ", ";
    out += s.dims[i].is_known() ? std::to_string(s.dims[i].value()) : "?";
  }
  return out + "]";
}

std::vector<int64_t> dims_of(const Shape& s) {
  std::vector<int64_t> out;
  for (const Dim& d : s.dims) out.push_back(d.is_known() ? d.value() : -1);
  return out;
}

// Sets `bytes` (what one device holds of `per_device` in the node's output dtype) and
// `moved_bytes` (what it sends, comm_moved_bytes) on communication node `c`, replacing earlier
// values; the bytes held, or nullopt when the size is not known.
std::optional<uint64_t> set_comm_bytes(OptNode& c, const Shape& per_device, int64_t group) {
  std::erase_if(c.attrs,
                [](const Attr& a) { return a.name == "bytes" || a.name == "moved_bytes"; });
  const auto bytes = tensor_bytes(TensorType{per_device, c.outputs[0].dtype}, Format::ND);
  if (!bytes) return std::nullopt;
  c.attrs.push_back(Attr{"bytes", static_cast<int64_t>(*bytes)});
  if (auto moved = comm_moved_bytes(c.op, group, *bytes))
    c.attrs.push_back(Attr{"moved_bytes", static_cast<int64_t>(*moved)});
  return bytes;
}

// A communication node over value `from` of type `type` (global), of which each device holds
// `per_device`.
OptNode comm_node(std::string id, std::string op, ValueRef from, const OptimizedGraph& g,
                  const Shape& per_device, int64_t group, std::string reason) {
  OptNode c;
  c.id = std::move(id);
  c.op = std::move(op);
  c.inputs = {from};
  const OptNode& src = g.nodes[from.node];
  c.outputs = {src.outputs[from.output]};
  c.formats = {from.output < src.formats.size() ? src.formats[from.output]
                                                : default_format(c.outputs[0].shape.rank())};
  c.pass = "comm";
  c.attrs = {Attr{"group", group}, Attr{"per_device_shape", dims_of(per_device)}};
  if (const auto bytes = set_comm_bytes(c, per_device, group)) {
    reason += "; each device holds " + dims_text(per_device) + " " +
              std::string(dtype_name(c.outputs[0].dtype)) + " = " + std::to_string(*bytes) +
              " bytes";
  } else {
    reason += "; its per-device size " + dims_text(per_device) + " is not known";
  }
  c.reason = std::move(reason);
  return c;
}

}  // namespace

void refresh_comm_bytes(OptNode& c) {
  if (c.pass != "comm" || c.outputs.empty()) return;
  const std::vector<int64_t>* dims = nullptr;
  int64_t group = 0;
  for (const Attr& a : c.attrs) {
    if (a.name == "per_device_shape") dims = std::get_if<std::vector<int64_t>>(&a.value);
    if (const auto* v = std::get_if<int64_t>(&a.value); v != nullptr && a.name == "group")
      group = *v;
  }
  if (dims == nullptr) return;
  Shape per_device;
  for (int64_t d : *dims) per_device.dims.push_back(d < 0 ? Dim::unknown() : Dim::known(d));
  const auto bytes = set_comm_bytes(c, per_device, group);
  if (!bytes) return;
  c.reason += "; carried as " + std::string(dtype_name(c.outputs[0].dtype)) +
              " (amp): " + std::to_string(*bytes) + " bytes per device";
}

void run_comm(PassContext& ctx) {
  // MindSpore's default mode, stand_alone, runs no parallel job whatever device_num says.
  if (ctx.parallel == nullptr || !ctx.parallel->parallel_job()) return;
  OptimizedGraph& g = ctx.g;
  const Graph& sem = ctx.semantic();
  const size_t n = g.nodes.size();
  // The optimized node holding each semantic node (the pass runs before fusion: one each).
  std::vector<uint32_t> holder(sem.nodes.size(), kNone);
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t o : g.nodes[i].origins) holder[o] = i;
  }
  auto facts = [&](uint32_t i) -> const NodeParallel* {
    const Node* s = ctx.anchor(g.nodes[i]);
    return s != nullptr && s->parallel ? s->parallel.get() : nullptr;
  };
  auto out_shape = [&](uint32_t i) -> Shape {
    const NodeParallel* p = facts(i);
    if (p != nullptr && !p->per_device_outputs.empty()) return p->per_device_outputs[0];
    return g.nodes[i].outputs.empty() ? Shape{} : g.nodes[i].outputs[0].shape;
  };

  // Nodes to add right after node i reading its output 0 (AllReduce / ReduceScatter), and the
  // redirected input edges of consumers: (consumer, slot) -> the AllGather before it.
  std::vector<std::vector<OptNode>> after(n);
  std::vector<std::vector<std::pair<uint32_t, OptNode>>> before(n);
  for (uint32_t i = 0; i < n; ++i) {
    const NodeParallel* p = facts(i);
    if (p == nullptr || g.nodes[i].kind != NodeKind::Op) continue;
    const std::string& id = g.nodes[i].id;
    for (const ParallelComm& c : p->comms) {
      if ((c.kind == "AllReduce" || c.kind == "ReduceScatter") && c.input < 0 &&
          !g.nodes[i].outputs.empty()) {
        // The devices hold the whole output block of their rows and columns as partial sums.
        Shape held = g.nodes[i].outputs[0].shape;
        if (!p->output_split.empty() && c.kind == "AllReduce") held = out_shape(i);
        if (c.kind == "ReduceScatter" && !p->per_device_outputs.empty() &&
            p->per_device_outputs[0].rank() > 0 && p->per_device_outputs[0].dims[0].is_known()) {
          held = p->per_device_outputs[0];
          held.dims[0] = Dim::known(held.dims[0].value() * c.group);
        }
        after[i].push_back(
            comm_node(c.kind + "/" + id, c.kind, ValueRef{i, 0}, g, held, c.group,
                      shard_owner(*ctx.anchor(g.nodes[i])) + " (" + strategy_str(p->in_strategy) +
                          "): " + c.why + ": " + c.kind + " (sum) over " + std::to_string(c.group) +
                          " devices after it (MatMulBase::InferForwardCommunication)"));
      } else if (c.kind == "AllGather" && c.input >= 0) {
        const Node* s = ctx.anchor(g.nodes[i]);
        const auto slot = static_cast<size_t>(c.input);
        if (s == nullptr || slot >= s->inputs.size()) continue;
        const uint32_t prod = holder[s->inputs[slot].node];
        if (prod == kNone || slot >= g.nodes[i].inputs.size() ||
            g.nodes[i].inputs[slot].node != prod)
          continue;
        const Shape slice = out_shape(prod);
        const NodeParallel* pp = facts(prod);
        before[i].emplace_back(
            static_cast<uint32_t>(slot),
            comm_node("AllGather/" + g.nodes[prod].id + "->" + id, "AllGather",
                      g.nodes[i].inputs[slot], g, slice, c.group,
                      "input " + std::to_string(slot) + " of " + shard_owner(*s) + " is split " +
                          (pp != nullptr ? strategy_str(pp->output_split) : "?") +
                          " by its producer but asked " + strategy_str(p->in_strategy[slot]) +
                          ": the tensor redistribution gathers " + c.why + " (AllConcat, an " +
                          "AllGather over " + std::to_string(c.group) + " devices)"));
        before[i].back().second.attrs.push_back(Attr{"mindspore_op", std::string("AllConcat")});
      }
    }
  }
  // Pipeline edges: value (producer, output) read by a later stage -> one Send/Receive pair per
  // destination stage, placed after the producer (and its own collective).
  std::map<std::tuple<uint32_t, uint32_t, int64_t>, uint32_t> sent;  // -> index in after[p]
  std::vector<std::vector<std::tuple<uint32_t, uint32_t, int64_t>>> recv_of(n);  // (slot, p, st)
  if (ctx.parallel->pipeline_stages > 1) {
    for (uint32_t c = 0; c < n; ++c) {
      const NodeParallel* cp = facts(c);
      if (cp == nullptr || cp->stage < 0 || g.nodes[c].kind != NodeKind::Op) continue;
      for (uint32_t s = 0; s < g.nodes[c].inputs.size(); ++s) {
        const ValueRef r = g.nodes[c].inputs[s];
        const NodeParallel* pp = facts(r.node);
        if (pp == nullptr || pp->stage < 0 || pp->stage >= cp->stage ||
            g.nodes[r.node].kind != NodeKind::Op)
          continue;
        const auto key = std::make_tuple(r.node, r.output, cp->stage);
        if (!sent.count(key)) {
          const std::string& pid = g.nodes[r.node].id;
          const std::string edge =
              "stage " + std::to_string(pp->stage) + " -> stage " + std::to_string(cp->stage);
          const std::string what = pp->per_device_outputs.empty()
                                       ? " (the operator has no strategy: its whole output)"
                                       : " (its per-device slice)";
          std::string stage_edge = "`" + pid + "` (";
          stage_edge += pp->cell.empty() ? "root" : pp->cell;
          stage_edge += ", " + edge + ") feeds `" + g.nodes[c].id + "`";
          std::string send_why = stage_edge;
          send_why += ": the pipeline sends the value to the next stage's devices (InsertSend)";
          send_why += what;
          std::string recv_why = stage_edge;
          recv_why += ": stage " + std::to_string(cp->stage) + " receives it (InsertReceive)";
          recv_why += what;
          OptNode send = comm_node("Send/" + pid + "->" + std::to_string(cp->stage), "Send", r, g,
                                   out_shape(r.node), 2, std::move(send_why));
          send.attrs.push_back(Attr{"stage", pp->stage});
          send.attrs.push_back(Attr{"peer_stage", cp->stage});
          OptNode recv = comm_node("Receive/" + pid + "->" + std::to_string(cp->stage), "Receive",
                                   r, g, out_shape(r.node), 2, std::move(recv_why));
          recv.attrs.push_back(Attr{"stage", cp->stage});
          recv.attrs.push_back(Attr{"peer_stage", pp->stage});
          sent.emplace(key, static_cast<uint32_t>(after[r.node].size()));
          after[r.node].push_back(std::move(send));
          after[r.node].push_back(std::move(recv));
        }
        recv_of[c].emplace_back(s, r.node, cp->stage);
      }
    }
  }

  // Rebuild in execution order.
  std::vector<OptNode> out;
  out.reserve(n + n / 4);
  std::vector<uint32_t> remap(n, kNone);  // value i (output 0 after its collective)
  std::vector<uint32_t> raw(n, kNone);    // node i itself
  std::map<std::pair<uint32_t, size_t>, uint32_t> placed;  // (producer, index in after) -> node
  for (uint32_t i = 0; i < n; ++i) {
    OptNode node = std::move(g.nodes[i]);
    for (auto& r : node.inputs) r.node = r.output == 0 ? remap[r.node] : raw[r.node];
    for (auto& [slot, c] : before[i]) {
      c.inputs[0] = node.inputs[slot];
      const auto idx = static_cast<uint32_t>(out.size());
      out.push_back(std::move(c));
      node.inputs[slot] = ValueRef{idx, 0};
      ++ctx.changes;
    }
    for (const auto& [slot, p, stage] : recv_of[i]) {
      const uint32_t k = sent.at({p, node.inputs[slot].output, stage}) + 1;  // the Receive
      node.inputs[slot] = ValueRef{placed.at({p, k}), 0};
    }
    raw[i] = static_cast<uint32_t>(out.size());
    out.push_back(std::move(node));
    remap[i] = raw[i];
    ValueRef value{raw[i], 0};
    for (size_t k = 0; k < after[i].size(); ++k) {
      OptNode& c = after[i][k];
      const auto idx = static_cast<uint32_t>(out.size());
      if (c.op == "Receive") {
        c.inputs[0] = ValueRef{idx - 1, 0};  // the Send just placed
      } else if (c.op == "Send") {
        c.inputs[0] = c.inputs[0].output == 0 ? value : ValueRef{raw[i], c.inputs[0].output};
      } else {
        c.inputs[0] = value;
        remap[i] = idx;  // readers of output 0 read the collective's result
        value = ValueRef{idx, 0};
      }
      placed.emplace(std::make_pair(i, k), idx);
      out.push_back(std::move(c));
      ++ctx.changes;
    }
  }
  for (auto& r : g.outputs) r.node = r.output == 0 ? remap[r.node] : raw[r.node];
  g.nodes = std::move(out);
}

}  // namespace opt

}  // namespace graphcore
