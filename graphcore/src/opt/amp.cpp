// Mixed precision (Ascend targets, OptimizeOptions::precision == "mixed"): the kernel dtypes
// MindSpore's automatic mixed precision gives a network trained or run at amp level O2, the level
// `Model(..., amp_level="O2")` and `build_train_network` use on Ascend. From MindSpore's
// mindspore/train/amp.py (2.x; the same lists since 1.x):
//   - O2 casts the network to float16 (`to_float(float16)`) except the cells of AMP_BLACK_LIST =
//     [nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.LayerNorm], which are kept in float32
//     (`_do_keep_batchnorm_fp32`: `_OutputTo16(cell.to_float(float32))`, i.e. a Cast to float32
//     before the cell and a Cast back to float16 after it);
//   - the network's output is cast back to float32 (`_OutputTo32`).
// So every kernel computes in float16, except those whose main op is BatchNorm or LayerNorm
// (and AddLayerNorm, whose LayerNorm needs its operands in float32), which compute in float32. A
// BatchNorm folded into a convolution is not a kernel of its own: the conv epilogue applies it to
// the float32 accumulators before the output is cast, so it needs no Cast. Explicit casts in the
// model (ops.Cast) keep the dtype the user asked for. Graph inputs arrive in float32 from the data
// pipeline and outputs leave in their semantic dtype; Parameters read by float16 kernels are read
// as their float16 copy (written by the optimizer update, or converted once at load time for
// inference), never cast in the graph.
//
// A `Cast` node (pass "amp", no origins, attributes src_dtype/dst_dtype) is inserted wherever a
// float value is read in another dtype than it was written in, one per (value, dtype), shared by
// its readers. The pass runs after fusion and before layout: the casts are kernels of their own
// (the layout pass lets them follow their input's format, as any elementwise op).
#include <unordered_map>

#include "graphcore/opdef.h"
#include "opt/passes.h"

namespace graphcore::opt {

namespace {

// A kernel that computes in float32 under amp O2 (AMP_BLACK_LIST: BatchNorm1d/2d/3d, LayerNorm;
// the operators whose definition says OpPrecision::KeepFloat32).
bool fp32_kernel(const OptNode& n) {
  if (n.pattern == "conv" || n.pattern == "dense" || n.pattern == "attention") return false;
  const OpDef* d = find_op(n.op);
  return d != nullptr && d->precision == OpPrecision::KeepFloat32;
}

// A kernel containing an explicit ops.Cast of the model: it keeps the dtypes the user chose.
bool user_cast(const PassContext& ctx, const OptNode& n) {
  for (uint32_t o : n.origins) {
    if (ctx.semantic().nodes[o].op == "Cast") return true;
  }
  return false;
}

}  // namespace

void run_amp(PassContext& ctx) {
  OptimizedGraph& g = ctx.g;
  g.precision = std::string(ctx.precision);
  if (ctx.precision != "mixed") return;
  const size_t n = g.nodes.size();
  // Parameters and constants read by a float16 kernel are read as their float16 copy.
  std::vector<char> read_fp16(n, 0);
  for (const auto& node : g.nodes) {
    if (node.kind != NodeKind::Op || fp32_kernel(node)) continue;
    for (const auto& r : node.inputs) read_fp16[r.node] = 1;
  }
  std::vector<OptNode> out;
  out.reserve(n + n / 8);
  std::vector<uint32_t> remap(n, kNone);
  std::unordered_map<uint64_t, uint32_t> casted;  // (value, dtype) -> Cast node
  auto cast = [&](ValueRef r, DType want) -> ValueRef {
    const OptNode& src = out[r.node];
    const TensorType& type = src.outputs[r.output];
    if (!is_floating(type.dtype) || type.dtype == want) return r;
    const uint64_t key = (static_cast<uint64_t>(r.node) << 24) | (uint64_t{r.output} << 8) |
                         static_cast<uint64_t>(want);
    if (auto it = casted.find(key); it != casted.end()) return ValueRef{it->second, 0};
    OptNode c;
    c.id = "Cast/" + src.id + ":" + std::to_string(r.output) + "/" + std::string(dtype_name(want));
    c.op = "Cast";
    c.inputs = {r};
    c.outputs = {TensorType{type.shape, want}};
    c.formats = {src.formats[r.output]};
    c.pass = "amp";
    c.attrs = {Attr{"src_dtype", std::string(dtype_name(type.dtype))},
               Attr{"dst_dtype", std::string(dtype_name(want))}};
    const auto idx = static_cast<uint32_t>(out.size());
    out.push_back(std::move(c));
    casted.emplace(key, idx);
    ++ctx.changes;
    return ValueRef{idx, 0};
  };

  for (uint32_t i = 0; i < n; ++i) {
    OptNode node = std::move(g.nodes[i]);
    for (auto& r : node.inputs) r.node = remap[r.node];
    if ((node.kind == NodeKind::Parameter || node.kind == NodeKind::Constant) && read_fp16[i]) {
      for (auto& t : node.outputs) {
        if (is_floating(t.dtype)) t.dtype = DType::Float16;
      }
    } else if (node.kind == NodeKind::Op && !user_cast(ctx, node)) {
      const DType want = fp32_kernel(node) ? DType::Float32 : DType::Float16;
      for (auto& r : node.inputs) {
        const NodeKind k = out[r.node].kind;
        if (k == NodeKind::Op || k == NodeKind::Input) r = cast(r, want);
      }
      const DType before = node.outputs.empty() ? want : node.outputs[0].dtype;
      for (auto& t : node.outputs) {
        if (is_floating(t.dtype)) t.dtype = want;
      }
      if (!node.outputs.empty() && node.outputs[0].dtype != before) refresh_comm_bytes(node);
    }
    remap[i] = static_cast<uint32_t>(out.size());
    out.push_back(std::move(node));
  }
  // The network's outputs leave in their semantic dtype (_OutputTo32).
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    ValueRef& r = g.outputs[k];
    r.node = remap[r.node];
    if (k >= ctx.semantic().outputs.size()) continue;
    const ValueRef sem = ctx.semantic().outputs[k];
    r = cast(r, ctx.semantic().nodes[sem.node].outputs[sem.output].dtype);
  }
  g.nodes = std::move(out);
}

}  // namespace graphcore::opt
