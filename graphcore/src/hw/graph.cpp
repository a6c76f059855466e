// The hardware layer of a whole optimized graph: each node is classified onto a unit and turned
// into kernel problems (forward; in training also the nodes of the backward graph build_backward
// emits for the network's loss, each attributed to the optimized node of its forward origin, and
// one optimizer update per trainable Parameter), each kernel is modelled (kernels.cpp), and a list
// scheduler places the kernels on the cores in execution order.
#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graphcore/autodiff.h"
#include "graphcore/hardware.h"
#include "graphcore/opdef.h"
#include "hw/model.h"

namespace graphcore {

namespace {

constexpr uint32_t kNoNode = std::numeric_limits<uint32_t>::max();

enum class OpClass { Skip, HostNoop, Conv, MatMul, Attention, Layer, Vector, AiCpu, Unsupported };

// Vector instructions per element of an operator (graphcore/opdef.h; 1 for a plain elementwise
// operator and for one nobody defined).
double vector_ops(std::string_view op) {
  const OpDef* d = find_op(op);
  return d == nullptr ? 1 : d->vector_ops;
}

double product(const Shape& s, size_t from, size_t to) {
  double p = 1;
  for (size_t i = from; i < to && i < s.rank(); ++i) {
    if (!s.dims[i].is_known()) return 0;
    p *= static_cast<double>(s.dims[i].value());
  }
  return p;
}

double dim(const Shape& s, int64_t axis) {
  if (!s.ranked || s.rank() == 0) return 0;
  const auto a = normalize_axis(axis, s.rank());
  if (!a || !s.dims[*a].is_known()) return 0;
  return static_cast<double>(s.dims[*a].value());
}

int64_t int_attr(const Node& n, std::string_view name, int64_t fallback) {
  const AttrValue* v = n.find_attr(name);
  if (v == nullptr) return fallback;
  if (const auto* i = std::get_if<int64_t>(v)) return *i;
  if (const auto* l = std::get_if<std::vector<int64_t>>(v); l && !l->empty()) {
    int64_t p = 1;
    for (int64_t x : *l) p *= x;
    return p;
  }
  return fallback;
}

bool bool_attr(const Node& n, std::string_view name) {
  const AttrValue* v = n.find_attr(name);
  const auto* b = v ? std::get_if<bool>(v) : nullptr;
  return b && *b;
}

std::string str_attr(const Node& n, std::string_view name, const std::string& fallback) {
  const AttrValue* v = n.find_attr(name);
  const auto* s = v ? std::get_if<std::string>(v) : nullptr;
  return s ? *s : fallback;
}

std::string_view str_attr_view(const Node& n, std::string_view name) {
  const AttrValue* v = n.find_attr(name);
  const auto* s = v ? std::get_if<std::string>(v) : nullptr;
  return s ? std::string_view(*s) : std::string_view();
}

// Operators costed as one layer kernel of many products (Estimator::layer_kernel).
bool is_layer_op(std::string_view op) {
  return op == "LSTM" || op == "GRU" || op == "RNN" || op == "RecurrentGrad" ||
         op == "MultiheadAttention" || op == "MultiheadAttentionGrad";
}

// The GEMM of a convolution in im2col form, from its output `y` [N, Cout, spatial...] and weight
// `w` [Cout, Cin/g, kernel...]: M = N x output pixels, K = Cin/g x kernel, N = Cout/g, `groups`
// independent products; a depthwise convolution runs 16 channels per fractal column block, of
// which only the diagonal is useful. False when a dimension is not known.
bool conv_dims(const Shape& y, const Shape& w, double groups, CubeProblem* p) {
  if (!y.ranked || y.rank() < 3 || !w.ranked || w.rank() < 3) return false;
  const double batch = dim(y, 0), cout = dim(y, 1);
  const double spatial = product(y, 2, y.rank());
  const double wk = product(w, 1, w.rank());  // Cin/g x kernel
  const double kernel = product(w, 2, w.rank());
  if (batch <= 0 || cout <= 0 || spatial <= 0 || wk <= 0) return false;
  p->m = batch * spatial;
  const double cin_g = wk / std::max(1.0, kernel);
  if (groups > 1 && cin_g == 1) {
    p->batch = std::ceil(cout / 16);
    p->k = kernel * 16;
    p->n = 16;
  } else {
    p->batch = groups;
    p->k = wk;
    p->n = cout / groups;
  }
  return true;
}

// The product of a MatMul / Dense / BatchMatMul from its first operand `a` and output `y`: K is
// a's contraction dimension, N y's last; `batched` (both operands batched) keeps y's leading
// dimensions as independent products, else they are rows of M. False when one is not known.
bool matmul_dims(const Shape& a, const Shape& y, bool transpose_a, bool batched, CubeProblem* p) {
  if (!a.ranked || !y.ranked || a.rank() < 1 || y.rank() < 1) return false;
  const double k = transpose_a && a.rank() >= 2 ? dim(a, -2) : dim(a, -1);
  const double n = dim(y, -1);
  double batch = 1, m = product(y, 0, y.rank() - 1);
  if (batched && y.rank() > 2) {
    batch = product(y, 0, y.rank() - 2);
    m = dim(y, -2);
  }
  if (k <= 0 || n <= 0 || m <= 0 || batch <= 0) return false;
  p->batch = batch;
  p->m = m;
  p->k = k;
  p->n = n;
  return true;
}

bool transposes_a(const Node& n) {
  return bool_attr(n, "transpose_a") || bool_attr(n, "transpose_x1");
}

class Estimator {
 public:
  Estimator(const CellReport& report, const OptimizedGraph& graph, const HardwareOptions& options,
            const HardwareTarget& target)
      : r_(report),
        g_(graph),
        o_(options),
        t_(target),
        train_(options.mode == "train"),
        amp_graph_(graph.precision == "mixed") {
    for (const auto& p : report.params) params_.emplace(p.name, &p);
    written_.assign(graph.nodes.size(), -1);
  }

  // Parameter name -> the devices its slice is split over (a parallel job's device view).
  void set_param_splits(std::map<std::string, int64_t> splits) {
    param_splits_ = std::move(splits);
  }

  HardwareGraph run() {
    HardwareGraph out;
    out.target = t_.name;
    out.ascend = t_.ascend;
    out.statement =
        "Analytical model: every figure is computed from " + t_.display_name +
        "'s target file (graphcore/targets/" + t_.name +
        ".json: published, test-config, derived and assumed numbers, each with its source), not "
        "measured on hardware.";
    if (!t_.ascend) {
      out.statement +=
          " No Ascend details (AI-core ids, L0/L1/UB tiling, MTE channels) on target cpu: use "
          "--target ascend910b (or another Ascend target), or set "
          "\"graph_visualization\": {\"backend\": \"ascend\"} in mindspore_config.json.";
    }
    // Forward kernels in execution order, then (train) the loss's forward kernels, the backward
    // graph's kernels in the order build_backward emitted them, and the optimizer updates.
    kernels_.reserve(g_.nodes.size() * (train_ ? 3 : 1));
    if (train_) plan_parallel_training();
    for (uint32_t i = 0; i < g_.nodes.size(); ++i) forward(i, &out);
    if (train_) {
      training();
      gradient_reduction();
      optimizer();
    }
    schedule(&out);
    out.kernels = std::move(kernels_);
    return out;
  }

 private:
  // ---- tensor sizes ---------------------------------------------------------------------------

  // Bytes per element a tensor of `dtype` occupies on the target: float tensors are fp16 under
  // mixed precision on Ascend.
  double elem_bytes(DType dtype) const {
    if (t_.ascend && is_floating(dtype) && amp_graph_) {
      // The amp pass chose every kernel's dtype; at fp32 every float tensor is float32.
      return o_.mixed_precision ? static_cast<double>(dtype_size(dtype)) : 4;
    }
    if (t_.ascend && o_.mixed_precision && is_floating(dtype)) return 2;
    const size_t s = dtype_size(dtype);
    return s == 0 ? (t_.ascend && o_.mixed_precision ? 2 : 4) : static_cast<double>(s);
  }
  const TensorType* type_of(const ValueRef& v) const {
    if (v.node >= g_.nodes.size()) return nullptr;
    const auto& n = g_.nodes[v.node];
    return v.output < n.outputs.size() ? &n.outputs[v.output] : nullptr;
  }
  // Elements of a tensor in its format (Ascend padding included); 0 when unknown.
  double elements(const ValueRef& v) const {
    const TensorType* ty = type_of(v);
    if (ty == nullptr) return 0;
    const auto& n = g_.nodes[v.node];
    const Format f = t_.ascend && v.output < n.formats.size() ? n.formats[v.output]
                                                              : default_format(ty->shape.rank());
    // As tensor_bytes() counts them: C padded to C0 in NC1HWC0, the last two dimensions to
    // 16 x C0 in FRACTAL_NZ.
    const Shape& sh = ty->shape;
    if (!sh.ranked) return 0;
    const size_t rank = sh.rank();
    const double c0 = dtype_size(ty->dtype) == 1 ? 32 : 16;  // 8-bit types: C0 = 32
    auto up = [](double x, double m) { return std::ceil(x / m) * m; };
    double e = 1;
    for (size_t d = 0; d < rank; ++d) {
      if (!sh.dims[d].is_known()) return 0;
      auto extent = static_cast<double>(sh.dims[d].value());
      if (f == Format::NC1HWC0 && rank == 4 && d == 1) extent = up(extent, c0);
      if (f == Format::FRACTAL_NZ && rank >= 2 && d + 2 == rank) extent = up(extent, 16);
      if (f == Format::FRACTAL_NZ && rank >= 2 && d + 1 == rank) extent = up(extent, c0);
      e *= extent;
    }
    return e;
  }
  double bytes(const ValueRef& v) const {
    const TensorType* ty = type_of(v);
    return ty ? elements(v) * elem_bytes(ty->dtype) : 0;
  }
  double out_elements(const OptNode& n) const {
    double e = 0;
    for (uint32_t k = 0; k < n.outputs.size(); ++k) e += elements({node_index(n), k});
    return e;
  }
  uint32_t node_index(const OptNode& n) const {
    return static_cast<uint32_t>(&n - g_.nodes.data());
  }
  double out_bytes(const OptNode& n) const {
    double b = 0;
    for (uint32_t k = 0; k < n.outputs.size(); ++k) b += bytes({node_index(n), k});
    return b;
  }
  double in_bytes(const OptNode& n) const {
    double b = 0;
    for (const auto& v : n.inputs) b += bytes(v);
    return b;
  }
  double weight_elements(const OptNode& n, size_t min_rank) const {
    double e = 0;
    for (const auto& name : n.params) {
      auto it = params_.find(name);
      if (it == params_.end() || it->second->shape.rank() < min_rank) continue;
      e += product(it->second->shape, 0, it->second->shape.rank());
    }
    return e;
  }
  const ParamInfo* weight(const OptNode& n, size_t rank) const {
    for (const auto& name : n.params) {
      auto it = params_.find(name);
      if (it != params_.end() && it->second->shape.rank() == rank) return it->second;
    }
    return nullptr;
  }
  const Node* origin(const OptNode& n) const {
    return n.origins.empty() || n.origins[0] >= r_.graph.nodes.size()
               ? nullptr
               : &r_.graph.nodes[n.origins[0]];
  }
  bool has_origin_op(const OptNode& n, std::string_view op) const {
    for (uint32_t o : n.origins) {
      if (o < r_.graph.nodes.size() && r_.graph.nodes[o].op == op) return true;
    }
    return false;
  }
  // L2 residency of a tensor written by an earlier kernel: it is still in L2 when the bytes
  // written since (plus its own) fit.
  double l2_fraction(const std::vector<ValueRef>& inputs) const {
    if (!t_.ascend) return 0;
    double total = 0, hit = 0;
    for (const auto& v : inputs) {
      const double b = bytes(v);
      total += b;
      if (v.node < written_.size() && written_[v.node] >= 0 &&
          written_total_ - written_[v.node] + b <= static_cast<double>(t_.l2_bytes)) {
        hit += b;
      }
    }
    return total > 0 ? hit / total : 0;
  }

  // ---- classification -------------------------------------------------------------------------

  OpClass classify(const OptNode& n) const {
    if (n.kind != NodeKind::Op) return OpClass::Skip;
    const std::string_view op = n.op;
    if (op == "Custom") return OpClass::Unsupported;  // resolved per func_type in forward()
    // Shape-only operators (kHostNoop): on contiguous (default-format) data they only relabel
    // the shape, so the runtime does not launch a kernel. The layout pass inserts TransData
    // before any of them that reads a private format.
    const OpDef* def = find_op(op);
    if (def != nullptr && def->unit == OpUnit::Host) return OpClass::HostNoop;
    if (op == "Dropout" && !train_) return OpClass::HostNoop;  // identity in inference graphs
    // An amp Cast estimated at fp32 (a graph optimized for mixed precision): both sides are
    // float32, and a Cast between equal types is removed.
    if (op == "Cast" && n.pass == "amp" && !o_.mixed_precision) return OpClass::HostNoop;
    if (def == nullptr) return OpClass::Vector;
    if (def->unit == OpUnit::Cube) {
      if (is_layer_op(op)) return OpClass::Layer;
      switch (def->category) {
        case OpCategory::Attention:
          return OpClass::Attention;
        case OpCategory::Convolution:
          return OpClass::Conv;
        default:
          return OpClass::MatMul;
      }
    }
    // No AI-core kernel in CANN's operator library: it runs on the AI CPU.
    if (def->unit == OpUnit::AiCpu) return OpClass::AiCpu;
    return OpClass::Vector;
  }

  // ---- kernel problems ------------------------------------------------------------------------

  struct Gemm {
    bool known = false;
    CubeProblem p;
  };

  Gemm conv_gemm(const OptNode& n) const {
    Gemm g;
    if (n.inputs.empty() || n.outputs.empty()) return g;
    const TensorType* x = type_of(n.inputs[0]);
    const Shape& y = n.outputs[0].shape;
    const ParamInfo* w = weight(n, y.rank());
    if (x == nullptr || w == nullptr || !y.ranked || y.rank() < 3) return g;
    const Node* o = origin(n);
    const double groups =
        o ? static_cast<double>(std::max<int64_t>(1, int_attr(*o, "group", 1))) : 1;
    if (!conv_dims(y, w->shape, groups, &g.p)) return g;
    g.known = true;
    g.p.a_gm_bytes = bytes(n.inputs[0]);
    g.p.b_gm_bytes = product(w->shape, 0, w->shape.rank()) * 2;
    // A fused residual Add reads its shortcut (an activation of the output's shape) in the
    // epilogue.
    if (has_origin_op(n, "Add")) {
      for (size_t s = 1; s < n.inputs.size(); ++s) {
        const TensorType* r = type_of(n.inputs[s]);
        if (r != nullptr && r->shape == y) g.p.residual_gm_bytes += bytes(n.inputs[s]);
      }
    }
    g.p.c_gm_bytes = out_bytes(n);
    g.p.out_bytes = static_cast<uint32_t>(elem_bytes(n.outputs[0].dtype));
    return g;
  }

  Gemm matmul_gemm(const OptNode& n) const {
    Gemm g;
    if (n.inputs.empty() || n.outputs.empty()) return g;
    const TensorType* a = type_of(n.inputs[0]);
    const Shape& y = n.outputs[0].shape;
    if (a == nullptr || !a->shape.ranked || !y.ranked || y.rank() < 1 || a->shape.rank() < 1) {
      return g;
    }
    const Node* o = origin(n);
    const ParamInfo* w = weight(n, 2);
    const TensorType* b = n.inputs.size() > 1 ? type_of(n.inputs[1]) : nullptr;
    const bool batched = w == nullptr && b != nullptr && b->shape.ranked && b->shape.rank() > 2;
    if (!matmul_dims(a->shape, y, o && transposes_a(*o), batched, &g.p)) return g;
    g.known = true;
    g.p.a_gm_bytes = bytes(n.inputs[0]);
    g.p.b_gm_bytes =
        w ? product(w->shape, 0, 2) * 2 : (n.inputs.size() > 1 ? bytes(n.inputs[1]) : 0);
    g.p.c_gm_bytes = out_bytes(n);
    g.p.out_bytes = static_cast<uint32_t>(elem_bytes(n.outputs[0].dtype));
    return g;
  }

  // ---- kernels --------------------------------------------------------------------------------

  KernelEstimate& add(KernelEstimate k, uint32_t node, std::string phase, std::string name) {
    k.node = node;
    k.phase = std::move(phase);
    k.name = std::move(name);
    kernels_.push_back(std::move(k));
    return kernels_.back();
  }

  // Problems repeat (every block of a deep network has the same convolutions): each distinct
  // problem is modelled once.
  static std::string problem_key(char kind, std::initializer_list<double> fields) {
    std::string key(1, kind);
    for (double f : fields) key.append(reinterpret_cast<const char*>(&f), sizeof f);
    return key;
  }
  static std::string problem_key(char kind, const CubeProblem& p) {
    return problem_key(kind, {p.batch, p.m, p.k, p.n, static_cast<double>(p.in_bytes),
                              static_cast<double>(p.out_bytes), static_cast<double>(p.epilogue_ops),
                              p.a_gm_bytes, p.b_gm_bytes, p.c_gm_bytes, p.a_l2_fraction,
                              p.residual_gm_bytes, p.residual_l2_fraction});
  }
  static std::string problem_key(char kind, const VectorProblem& p) {
    return problem_key(kind, {p.elements, p.in_bytes, p.out_bytes, p.ops_per_element,
                              static_cast<double>(p.elem_bytes), p.l2_fraction});
  }

  KernelEstimate cube(const CubeProblem& p) {
    if (t_.ascend) {
      auto key = problem_key('c', p);
      auto it = memo_.find(key);
      if (it == memo_.end()) it = memo_.emplace(std::move(key), model_cube_kernel(t_, p)).first;
      return it->second;
    }
    return cpu_kernel(2 * p.batch * p.m * p.k * p.n, p.a_gm_bytes + p.b_gm_bytes + p.c_gm_bytes,
                      true);
  }
  KernelEstimate vector(const VectorProblem& p) {
    if (t_.ascend) {
      auto key = problem_key('v', p);
      auto it = memo_.find(key);
      if (it == memo_.end()) it = memo_.emplace(std::move(key), model_vector_kernel(t_, p)).first;
      return it->second;
    }
    return cpu_kernel(p.elements * p.ops_per_element, p.in_bytes + p.out_bytes, false);
  }

  // The host CPU: a roofline over all cores with the target's GEMM efficiency.
  KernelEstimate cpu_kernel(double flops, double gm_bytes, bool gemm) const {
    KernelEstimate k;
    k.unit = Unit::Cpu;
    const double chunk = gemm ? 64 * 64 * 64 * 2.0 : 16384;
    k.block_dim = static_cast<uint32_t>(
        std::clamp(std::ceil(flops / chunk), 1.0, static_cast<double>(t_.cores)));
    const double rate = t_.flops_per_cycle_fp32 * (gemm ? t_.matmul_efficiency : 0.25);
    k.compute_cycles = flops / k.block_dim / rate;
    const double bw = t_.dram_bandwidth_gbps * 1e3 / t_.frequency_mhz;  // bytes/cycle, chip
    k.movement_cycles = gm_bytes / bw;
    k.cycles = std::max(k.compute_cycles, k.movement_cycles);
    k.macs = gemm ? flops / 2 : 0;
    k.gm_read_bytes = gm_bytes;
    k.bound = k.compute_cycles >= k.movement_cycles ? "compute" : "memory";
    const double tile = static_cast<double>(t_.cache_bytes) / 2;
    k.tiles = static_cast<uint64_t>(std::max(1.0, std::ceil(gm_bytes / k.block_dim / tile)));
    KernelDetail d;
    d.tiling = {{"cache", "per-core working set (half the cache)", static_cast<uint64_t>(tile), 2,
                 t_.cache_bytes}};
    d.loops = {{"core", k.block_dim, "threads"}, {"tile", k.tiles, "cache-sized blocks per core"}};
    d.schedule = {{"load", "Memory", k.tiles, k.movement_cycles},
                  {gemm ? "fma (AVX2, 8 lanes)" : "vector op", "SIMD",
                   static_cast<uint64_t>(flops / k.block_dim / 16), k.compute_cycles}};
    k.detail = std::make_shared<const KernelDetail>(std::move(d));
    return k;
  }

  // A shape-only operator: nothing runs on the device.
  static KernelEstimate host_noop() {
    KernelEstimate k;
    k.unit = Unit::Host;
    k.bound = "none";
    static const auto kNoop = std::make_shared<const KernelDetail>(
        KernelDetail{{}, {}, {}, {{"relabel shape (no data moved)", "Host", 1, 0}}});
    k.detail = kNoop;
    return k;
  }

  // Writes of node `i` enter L2.
  void wrote(uint32_t i) {
    written_total_ += out_bytes(g_.nodes[i]);
    written_[i] = written_total_;
  }

  // A communication node (pass "comm"): the bytes one device sends over the interconnect for the
  // per-device tensor it holds, and their time when the target file has an interconnect figure.
  void communication(uint32_t i) {
    const OptNode& n = g_.nodes[i];
    int64_t group = 1;
    double elements = 1;
    bool known = false;
    for (const Attr& a : n.attrs) {
      if (a.name == "group") {
        if (const auto* v = std::get_if<int64_t>(&a.value)) group = *v;
      } else if (a.name == "per_device_shape") {
        if (const auto* v = std::get_if<std::vector<int64_t>>(&a.value)) {
          known = true;
          for (int64_t d : *v) {
            if (d < 0) known = false;
            elements *= static_cast<double>(std::max<int64_t>(d, 0));
          }
        }
      }
    }
    KernelEstimate k;
    k.unit = Unit::Comm;
    k.block_dim = 1;
    comm_untimed_ |= t_.interconnect_gbps <= 0;  // no figure: no time, whatever the shapes
    if (!known || n.outputs.empty()) {
      k.bound = "unknown-shape";
      add(std::move(k), i, "forward", n.op);
      notes_.insert("kernels whose shapes are not fully known are not costed (0 cycles)");
      return;
    }
    const double held = elements * elem_bytes(n.outputs[0].dtype);
    const auto moved = comm_moved_bytes(n.op, group, static_cast<uint64_t>(held));
    k.comm_bytes = moved ? static_cast<double>(*moved) : 0;
    // A Receive's bytes are the Send's, counted once (at the sender).
    if (n.op != "Receive") comm_bytes_ += k.comm_bytes;
    const auto us = comm_time_us(t_, n.op, group, k.comm_bytes);
    if (us) {
      k.cycles = *us * t_.frequency_mhz;
      k.bound = "communication";
    } else {
      k.bound = "not-estimated";
      comm_untimed_ = true;
    }
    add(std::move(k), i, "forward", n.op);
  }

  void forward(uint32_t i, HardwareGraph* out) {
    const OptNode& n = g_.nodes[i];
    if (n.pass == "comm") {
      communication(i);
      return;
    }
    const OpClass cls = classify(n);
    if (cls == OpClass::Skip) return;
    const std::string name = n.op;
    if (cls == OpClass::Unsupported) {
      unsupported(n, out);
      return;
    }
    if (cls == OpClass::HostNoop) {
      add(host_noop(), i, "forward", name);
      return;
    }
    if (cls == OpClass::AiCpu) {
      add(aicpu(out_elements(n), in_bytes(n) + out_bytes(n)), i, "forward", name);
      wrote(i);
      return;
    }
    const double l2 = l2_fraction(n.inputs);
    if (cls == OpClass::Conv || cls == OpClass::MatMul) {
      Gemm gm = cls == OpClass::Conv ? conv_gemm(n) : matmul_gemm(n);
      if (!gm.known) {
        unknown(i, "forward", name, Unit::Cube);
        return;
      }
      const bool bn = has_origin_op(n, "BatchNorm");
      const uint32_t fused = n.origins.empty() ? 0 : static_cast<uint32_t>(n.origins.size() - 1);
      gm.p.a_l2_fraction = l2_fraction({n.inputs[0]});
      if (gm.p.residual_gm_bytes > 0) {
        gm.p.residual_l2_fraction =
            l2_fraction(std::vector<ValueRef>(n.inputs.begin() + 1, n.inputs.end()));
      }
      // Training BatchNorm needs the batch statistics of the conv output: it cannot fold into the
      // conv epilogue, and runs as BNTrainingReduce + BNTrainingUpdate (with the activation).
      gm.p.epilogue_ops = train_ && bn ? 0 : fused + (bn ? 1 : 0);
      add(cube(gm.p), i, "forward", name).macs = gm.p.batch * gm.p.m * gm.p.k * gm.p.n;
      if (train_ && bn) {
        const double ob = out_bytes(n), oe = out_elements(n);
        const auto eb = static_cast<uint32_t>(elem_bytes(n.outputs[0].dtype));
        add(vector({.elements = oe,
                    .in_bytes = ob,
                    .out_bytes = 0,
                    .ops_per_element = 2,
                    .elem_bytes = eb,
                    .l2_fraction = 0}),
            i, "forward", "BNTrainingReduce");
        // With the fused activation and residual Add (which reads the shortcut).
        add(vector({.elements = oe,
                    .in_bytes = ob + gm.p.residual_gm_bytes,
                    .out_bytes = ob,
                    .ops_per_element = 3.0 + (fused > 1 ? fused - 1 : 0),
                    .elem_bytes = eb}),
            i, "forward", "BNTrainingUpdate");
      }
      wrote(i);
      return;
    }
    if (cls == OpClass::Attention) {
      attention(i, l2);
      wrote(i);
      return;
    }
    if (cls == OpClass::Layer) {
      const Node* o = origin(n);
      const TensorType* x = n.inputs.empty() ? nullptr : type_of(n.inputs[0]);
      const TensorType* k = n.inputs.size() > 1 ? type_of(n.inputs[1]) : nullptr;
      const TensorType* v = n.inputs.size() > 2 ? type_of(n.inputs[2]) : nullptr;
      std::optional<KernelEstimate> est;
      if (o != nullptr && x != nullptr) est = layer_kernel(*o, o->op, false, *x, k, v);
      if (est) {
        add(std::move(*est), i, "forward", name);
      } else {
        unknown(i, "forward", name, Unit::Cube);
      }
      wrote(i);
      return;
    }
    // Vector.
    VectorProblem p = vector_problem(n);
    p.l2_fraction = l2;
    add(vector(p), i, "forward", name);
    wrote(i);
  }

  VectorProblem vector_problem(const OptNode& n) const {
    VectorProblem p;
    p.in_bytes = in_bytes(n);
    p.out_bytes = out_bytes(n);
    p.elements = out_elements(n);
    p.elem_bytes = n.outputs.empty() ? 2 : static_cast<uint32_t>(elem_bytes(n.outputs[0].dtype));
    const std::string_view op = n.op;
    if (op == "FusedElemwise") {
      double ops = 0;
      for (uint32_t o : n.origins) {
        if (o < r_.graph.nodes.size()) ops += vector_ops(r_.graph.nodes[o].op);
      }
      p.ops_per_element = std::max(1.0, ops);
    } else if (op == "MaxPool" || op == "AvgPool") {
      const Node* o = origin(n);
      p.ops_per_element =
          static_cast<double>(o ? std::max<int64_t>(1, int_attr(*o, "kernel_size", 1)) : 1);
      if (o && o->find_attr("kernel_size") &&
          std::holds_alternative<int64_t>(*o->find_attr("kernel_size"))) {
        p.ops_per_element *= p.ops_per_element;  // k x k window
      }
    } else if (op.starts_with("Reduce") || op.starts_with("Arg")) {
      double in_e = 0;
      for (const auto& v : n.inputs) in_e += elements(v);
      p.elements = std::max(p.elements, in_e);
    } else {
      p.ops_per_element = vector_ops(op);
    }
    if (op == "Dropout") p.out_bytes += p.elements / 8;  // the bit mask
    return p;
  }

  void attention(uint32_t i, double l2) {
    const OptNode& n = g_.nodes[i];
    const TensorType* q = n.inputs.empty() ? nullptr : type_of(n.inputs[0]);
    const TensorType* kk = n.inputs.size() > 1 ? type_of(n.inputs[1]) : nullptr;
    const TensorType* v = n.inputs.empty() ? nullptr : type_of(n.inputs.back());
    if (!q || !kk || !v || !q->shape.ranked || q->shape.rank() < 2 || !kk->shape.ranked ||
        !v->shape.ranked) {
      unknown(i, "forward", n.op, Unit::Cube);
      return;
    }
    const double batch = product(q->shape, 0, q->shape.rank() - 2);
    const double sq = dim(q->shape, -2), d = dim(q->shape, -1), sk = dim(kk->shape, -2),
                 dv = dim(v->shape, -1);
    if (batch <= 0 || sq <= 0 || d <= 0 || sk <= 0 || dv <= 0) {
      unknown(i, "forward", n.op, Unit::Cube);
      return;
    }
    const auto eb = static_cast<uint32_t>(elem_bytes(q->dtype));
    const double scores = batch * sq * sk;
    CubeProblem qk{.batch = batch, .m = sq, .k = d, .n = sk};
    qk.a_l2_fraction = l2;
    qk.c_gm_bytes = scores * eb;
    CubeProblem pv{.batch = batch, .m = sq, .k = sk, .n = dv};
    pv.a_gm_bytes = scores * eb;
    pv.a_l2_fraction = scores * eb <= static_cast<double>(t_.l2_bytes) / 2 ? 1 : 0;
    double mask = 0;
    for (size_t k = 2; k + 1 < n.inputs.size(); ++k) mask += bytes(n.inputs[k]);
    const double softmax_ops =
        n.origins.size() > 2 ? 5.0 + static_cast<double>(n.origins.size()) - 3 : 5;
    VectorProblem sm{.elements = scores,
                     .in_bytes = scores * eb + mask,
                     .out_bytes = scores * eb,
                     .ops_per_element = softmax_ops,
                     .elem_bytes = eb};
    sm.l2_fraction = scores * eb <= static_cast<double>(t_.l2_bytes) / 2 ? 1 : 0;
    KernelEstimate k = combine({cube(qk), vector(sm), cube(pv)}, {"qk", "softmax", "pv"});
    k.macs = batch * sq * sk * (d + dv);
    add(std::move(k), i, "forward", n.op);
  }

  // ---- layers that are one node but many products (nn.LSTM/GRU/RNN, nn.MultiheadAttention) ---

  // One layer node as the kernel that runs it: its products on the Cube unit and its
  // elementwise work on the Vector unit, one after the other (combine()). `attrs` holds the
  // layer's recorded attributes (the forward node's, or its gradient node's copy of them), `op`
  // the forward operator, `x` (and `key`, `value` for attention) its inputs' types. nullopt when
  // a size is not known.
  std::optional<KernelEstimate> layer_kernel(const Node& attrs, std::string_view op, bool backward,
                                             const TensorType& x, const TensorType* key,
                                             const TensorType* value) {
    if (op == "MultiheadAttention") return mha_kernel(attrs, backward, x, key, value);
    return recurrent_kernel(attrs, op, backward, x);
  }

  // `times` runs of kernel `k` one after the other (the steps of a recurrence).
  static KernelEstimate repeated(KernelEstimate k, double times) {
    k.cycles *= times;
    k.compute_cycles *= times;
    k.movement_cycles *= times;
    k.gm_read_bytes *= times;
    k.gm_write_bytes *= times;
    k.macs *= times;
    k.tiles = static_cast<uint64_t>(static_cast<double>(k.tiles) * times);
    return k;
  }

  // nn.LSTM / nn.GRU / nn.RNN, per layer and direction (the way a DynamicRNN-style kernel runs
  // it): the input projection of all T steps at once, one (T*N) x F x G*H product; then T
  // dependent recurrent products N x H x G*H, each waiting for the previous step's state (a
  // batch of N rows fills a 16-row Cube tile poorly: this is what makes recurrences slow on a
  // matrix unit); and the gate arithmetic on the Vector unit (sigmoid/tanh and the state update,
  // `kGateOps` instructions per gate element). Backward (RecurrentGrad): the gate gradients, T
  // dependent N x G*H x H products back through time, the input gradient (T*N) x G*H x F, and
  // the two weight gradients as products over all steps.
  std::optional<KernelEstimate> recurrent_kernel(const Node& attrs, std::string_view op,
                                                 bool backward, const TensorType& x) {
    constexpr double kGateOps = 5;
    const double gates = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
    const auto h = static_cast<double>(int_attr(attrs, "hidden_size", 0));
    const auto layers = static_cast<double>(std::max<int64_t>(1, int_attr(attrs, "num_layers", 1)));
    const double dirs = bool_attr(attrs, "bidirectional") ? 2 : 1;
    const bool bf = bool_attr(attrs, "batch_first");
    if (!x.shape.ranked || x.shape.rank() != 3 || h <= 0) return std::nullopt;
    const double t = dim(x.shape, bf ? 1 : 0), n = dim(x.shape, bf ? 0 : 1), f0 = dim(x.shape, 2);
    if (t <= 0 || n <= 0 || f0 <= 0) return std::nullopt;
    const auto eb = static_cast<uint32_t>(elem_bytes(x.dtype));
    std::vector<KernelEstimate> parts;
    std::vector<std::string> names;
    double macs = 0;
    const auto product_part = [&](const CubeProblem& p, double times, std::string part) {
      KernelEstimate k = repeated(cube(p), times);
      macs += p.batch * p.m * p.k * p.n * times;
      parts.push_back(std::move(k));
      names.push_back(std::move(part));
    };
    const double gh = gates * h;
    for (double l = 0; l < layers; ++l) {
      const double f = l == 0 ? f0 : h * dirs;
      for (double d = 0; d < dirs; ++d) {
        std::string tag = "l" + std::to_string(static_cast<int>(l)) + (d > 0 ? "r" : "");
        VectorProblem gate{.elements = t * n * gh,
                           .in_bytes = t * n * (gh + h) * eb,
                           .out_bytes = t * n * 2 * h * eb,
                           .ops_per_element = kGateOps + (backward ? 1 : 0),
                           .elem_bytes = eb};
        if (!backward) {
          product_part({.m = t * n, .k = f, .n = gh}, 1, tag + ".x_proj");
          product_part({.m = n, .k = h, .n = gh}, t,
                       tag + ".h_proj x" + std::to_string(static_cast<int64_t>(t)));
          parts.push_back(vector(gate));
          names.push_back(tag + ".gates");
        } else {
          parts.push_back(vector(gate));
          names.push_back(tag + ".dgates");
          product_part({.m = n, .k = gh, .n = h}, t,
                       tag + ".dh x" + std::to_string(static_cast<int64_t>(t)));
          product_part({.m = t * n, .k = gh, .n = f}, 1, tag + ".dx");
          product_part({.m = f, .k = t * n, .n = gh}, 1, tag + ".dW_ih");
          product_part({.m = h, .k = t * n, .n = gh}, 1, tag + ".dW_hh");
        }
      }
    }
    KernelEstimate k = combine(std::move(parts), names);
    k.macs = macs;
    return k;
  }

  // nn.MultiheadAttention: the query, key and value projections, the attention of every head
  // (QK^T, softmax, PV as a fused attention), the output projection. Backward: each projection's
  // input and weight gradients, and the attention's four products (dP = dO V^T, dV = P^T dO,
  // dQ = dS K, dK = dS^T Q) with the softmax gradient between them.
  std::optional<KernelEstimate> mha_kernel(const Node& attrs, bool backward, const TensorType& q,
                                           const TensorType* key, const TensorType* value) {
    const auto e = static_cast<double>(int_attr(attrs, "embed_dim", 0));
    const auto heads = static_cast<double>(int_attr(attrs, "num_heads", 0));
    const bool bf = bool_attr(attrs, "batch_first");
    if (key == nullptr || value == nullptr || e <= 0 || heads <= 0) return std::nullopt;
    const auto ranked3 = [](const TensorType& t) { return t.shape.ranked && t.shape.rank() == 3; };
    if (!ranked3(q) || !ranked3(*key) || !ranked3(*value)) return std::nullopt;
    const double l = dim(q.shape, bf ? 1 : 0), n = dim(q.shape, bf ? 0 : 1);
    const double s = dim(key->shape, bf ? 1 : 0), kd = dim(key->shape, 2),
                 vd = dim(value->shape, 2);
    if (l <= 0 || n <= 0 || s <= 0 || kd <= 0 || vd <= 0) return std::nullopt;
    const double hd = e / heads, bh = n * heads, eb = static_cast<double>(elem_bytes(q.dtype));
    std::vector<KernelEstimate> parts;
    std::vector<std::string> names;
    double macs = 0;
    const auto product_part = [&](const CubeProblem& p, std::string part) {
      macs += p.batch * p.m * p.k * p.n;
      parts.push_back(cube(p));
      names.push_back(std::move(part));
    };
    // (rows, in features, out features) of the four projections.
    const std::array<std::array<double, 3>, 4> proj = {
        {{n * l, e, e}, {n * s, kd, e}, {n * s, vd, e}, {n * l, e, e}}};
    const std::array<const char*, 4> pname = {"q_proj", "k_proj", "v_proj", "out_proj"};
    const double scores = bh * l * s;
    VectorProblem sm{.elements = scores,
                     .in_bytes = scores * eb * (backward ? 2 : 1),
                     .out_bytes = scores * eb,
                     .ops_per_element = backward ? 3.0 : 5.0,
                     .elem_bytes = static_cast<uint32_t>(eb)};
    if (!backward) {
      for (size_t i = 0; i < 3; ++i)
        product_part({.m = proj[i][0], .k = proj[i][1], .n = proj[i][2]}, pname[i]);
      product_part({.batch = bh, .m = l, .k = hd, .n = s}, "qk");
      parts.push_back(vector(sm));
      names.emplace_back("softmax");
      product_part({.batch = bh, .m = l, .k = s, .n = hd}, "pv");
      product_part({.m = proj[3][0], .k = proj[3][1], .n = proj[3][2]}, pname[3]);
    } else {
      const auto proj_grads = [&](size_t i) {
        product_part({.m = proj[i][0], .k = proj[i][2], .n = proj[i][1]},
                     std::string(pname[i]) + ".dx");
        product_part({.m = proj[i][1], .k = proj[i][0], .n = proj[i][2]},
                     std::string(pname[i]) + ".dW");
      };
      proj_grads(3);
      product_part({.batch = bh, .m = l, .k = hd, .n = s}, "dP");
      product_part({.batch = bh, .m = s, .k = l, .n = hd}, "dV");
      parts.push_back(vector(sm));
      names.emplace_back("softmax_grad");
      product_part({.batch = bh, .m = l, .k = s, .n = hd}, "dQ");
      product_part({.batch = bh, .m = s, .k = l, .n = hd}, "dK");
      for (size_t i = 0; i < 3; ++i) proj_grads(i);
    }
    KernelEstimate k = combine(std::move(parts), names);
    k.macs = macs;
    return k;
  }

  // One kernel made of sequential sub-kernels (a fused attention: QK^T, softmax, PV).
  static KernelEstimate combine(std::vector<KernelEstimate> parts,
                                const std::vector<std::string>& names) {
    KernelEstimate k = parts.front();
    k.unit = Unit::Cube;
    k.cycles = k.compute_cycles = k.movement_cycles = k.gm_read_bytes = k.gm_write_bytes = 0;
    k.tiles = 0;
    KernelDetail d;
    for (size_t i = 0; i < parts.size(); ++i) {
      const auto& p = parts[i];
      k.cycles += p.cycles;
      k.compute_cycles += p.compute_cycles;
      k.movement_cycles += p.movement_cycles;
      k.gm_read_bytes += p.gm_read_bytes;
      k.gm_write_bytes += p.gm_write_bytes;
      k.block_dim = std::max(k.block_dim, p.block_dim);
      k.tiles += p.tiles;
      if (!p.detail) continue;
      for (auto tl : p.detail->tiling) {
        tl.tile = names[i] + ": " + tl.tile;
        d.tiling.push_back(std::move(tl));
      }
      for (auto l : p.detail->loops) {
        l.var = names[i] + "." + l.var;
        d.loops.push_back(std::move(l));
      }
      for (const auto& x : p.detail->dma) d.dma.push_back(x);
      for (auto x : p.detail->schedule) {
        x.op = names[i] + ": " + x.op;
        d.schedule.push_back(std::move(x));
      }
    }
    k.detail = std::make_shared<const KernelDetail>(std::move(d));
    k.bound = k.compute_cycles >= k.movement_cycles ? "compute" : "memory";
    return k;
  }

  KernelEstimate aicpu(double elements, double io_bytes) const {
    KernelEstimate k;
    k.unit = Unit::AiCpu;
    k.block_dim = 1;
    // A scalar-heavy AI CPU kernel: ~8 operations per element at the core's rate, or its memory
    // traffic at ~10 GB/s, whichever is slower.
    const double us = std::max(elements * 8 / (t_.ai_cpu_gflops * 1e3), io_bytes / 1e4);
    k.cycles = us * t_.frequency_mhz;
    k.compute_cycles = k.cycles;
    k.gm_read_bytes = io_bytes;
    k.bound = "compute";
    k.detail = std::make_shared<const KernelDetail>(KernelDetail{
        {},
        {},
        {},
        {{"AI CPU kernel (scalar loop)", "AICPU", static_cast<uint64_t>(elements), k.cycles}}});
    return k;
  }

  void unknown(uint32_t i, std::string phase, std::string name, Unit unit) {
    KernelEstimate k;
    k.unit = unit;
    k.block_dim = 1;
    k.bound = "unknown-shape";
    add(std::move(k), i, std::move(phase), std::move(name));
    notes_.insert("kernels whose shapes are not fully known are not costed (0 cycles)");
  }

  void unsupported(const OptNode& n, HardwareGraph* out) {
    const Node* o = origin(n);
    const std::string func_type = o ? str_attr(*o, "func_type", "hybrid") : "hybrid";
    const std::optional<std::string> why = custom_unsupported(func_type, t_);
    const uint32_t i = node_index(n);
    if (!why) {
      // A compiled custom kernel: costed like an elementwise kernel over its outputs.
      add(vector(vector_problem(n)), i, "forward", n.op);
      wrote(i);
      return;
    }
    KernelEstimate k;
    k.unit = t_.ascend ? Unit::AiCpu : Unit::Cpu;
    k.bound = "unsupported";
    add(std::move(k), i, "forward", n.op);
    if (o == nullptr) return;
    Diagnostic d;
    d.file = o->file;
    d.range = o->range;
    d.severity = Severity::Error;
    d.code = "unsupported-on-target";
    d.message = *why;
    out->diagnostics.push_back(std::move(d));
  }

  // ---- training -------------------------------------------------------------------------------

  // ---- training -------------------------------------------------------------------------------

  // The graph build_backward differentiates: the network's forward graph with its loss as the one
  // output. `to_cell` maps each of its nodes to the analysed graph's node (kNoNode: a node of the
  // loss, costed with the forward pass but attributed to no optimized node).
  struct LossGraph {
    CellReport report;
    std::vector<uint32_t> to_cell;
  };

  // The training plan's loss graph, when its network is this one at the analysed shapes: every
  // operator node of the analysed graph is in it with the same id, operator and output types.
  std::optional<LossGraph> plan_loss() {
    const TrainingPlan* plan = o_.training;
    if (plan == nullptr) return std::nullopt;
    const CellReport& l = plan->loss_graph;
    const std::string loss = plan->loss.api.empty() ? "its loss" : plan->loss.api;
    if (!l.compiled || l.graph.outputs.size() != 1) {
      notes_.insert("train: the training plan's loss graph (" + loss +
                    ") did not compile: a stand-in loss is used");
      return std::nullopt;
    }
    std::unordered_map<std::string_view, uint32_t> ids;
    for (uint32_t i = 0; i < r_.graph.nodes.size(); ++i) {
      if (r_.graph.nodes[i].kind == NodeKind::Op) ids.emplace(r_.graph.nodes[i].id, i);
    }
    LossGraph lg;
    lg.to_cell.assign(l.graph.nodes.size(), kNoNode);
    size_t matched = 0;
    for (uint32_t j = 0; j < l.graph.nodes.size(); ++j) {
      const Node& n = l.graph.nodes[j];
      auto it = n.kind == NodeKind::Op ? ids.find(n.id) : ids.end();
      if (it == ids.end()) continue;
      const Node& c = r_.graph.nodes[it->second];
      if (std::string_view(c.op) != std::string_view(n.op) || c.outputs != n.outputs) continue;
      lg.to_cell[j] = it->second;
      ++matched;
    }
    if (matched != ids.size()) {
      std::string shapes;
      for (const NamedTensor& in : l.inputs) {
        shapes += (shapes.empty() ? "" : ", ") + in.name + " " + in.type.str();
      }
      notes_.insert("train: the training plan's loss graph (" + loss + " over " + shapes +
                    ") is not this network at the analysed shapes: a stand-in loss is used "
                    "(analyse with the plan's input shapes to cost its loss)");
      return std::nullopt;
    }
    lg.report = l;
    loss_what_ = "the training plan's " + loss;
    return lg;
  }

  // The analysed graph with a stand-in loss: its first float output when that is a scalar (the
  // Cell computes a loss), else the mean of all its elements (ReduceMean, as ops.mean(y)).
  std::optional<LossGraph> stand_in_loss() {
    LossGraph lg;
    lg.report = r_;
    Graph& g = lg.report.graph;
    lg.to_cell.resize(g.nodes.size());
    std::iota(lg.to_cell.begin(), lg.to_cell.end(), 0u);
    std::optional<ValueRef> out;
    std::string name = "output";
    for (size_t i = 0; i < g.outputs.size() && !out; ++i) {
      const ValueRef v = g.outputs[i];
      if (v.node < g.nodes.size() && v.output < g.nodes[v.node].outputs.size() &&
          is_floating(g.nodes[v.node].outputs[v.output].dtype)) {
        out = v;
        if (i < r_.outputs.size()) name = r_.outputs[i].name;
      }
    }
    const std::string why = o_.training == nullptr ? " (the file trains no such network)" : "";
    if (!out) {
      notes_.insert(
          "train: the network has no float output to take a loss of: no backward pass "
          "is costed");
      return std::nullopt;
    }
    const Node& producer = g.nodes[out->node];
    const TensorType t = producer.outputs[out->output];
    if (t.shape.ranked && t.shape.fully_known() && t.shape.num_elements().value() == 1) {
      g.outputs = {*out};
      loss_what_ = "the network's scalar output '" + name + "'" + why;
      return lg;
    }
    Node loss;
    loss.id = "loss/ReduceMean";
    loss.kind = NodeKind::Op;
    loss.op = "ReduceMean";
    loss.inputs = {*out};
    loss.outputs = {TensorType{Shape::of(std::vector<int64_t>{}), t.dtype}};
    loss.attrs = {{"axis", std::vector<int64_t>{}}, {"keep_dims", false}};
    loss.file = producer.file;
    loss.range = producer.range;
    g.nodes.push_back(std::move(loss));
    g.outputs = {ValueRef{static_cast<uint32_t>(g.nodes.size() - 1), 0}};
    lg.to_cell.push_back(kNoNode);
    loss_what_ = "a stand-in, ReduceMean of output '" + name + "'" + why;
    return lg;
  }

  // build_backward over `lg`. When a node on the path has no gradient rule (or its rule refuses),
  // again without the parameters it depends on, so that the backward of the rest of the network
  // is still costed; each failure is a note naming the node and its source line.
  std::optional<autodiff::GradGraph> differentiate(const LossGraph& lg) {
    const Graph& g = lg.report.graph;
    autodiff::GradResult res = autodiff::build_backward(lg.report);
    std::set<std::string, std::less<>> excluded;
    for (int attempt = 0;
         !res.ok() && res.error_node && *res.error_node < g.nodes.size() && attempt < 16;
         ++attempt) {
      // The failing node and everything it depends on.
      std::vector<bool> seen(g.nodes.size(), false);
      std::vector<uint32_t> stack{*res.error_node};
      while (!stack.empty()) {
        const uint32_t i = stack.back();
        stack.pop_back();
        if (i >= g.nodes.size() || seen[i]) continue;
        seen[i] = true;
        for (const std::string& p : g.nodes[i].params) excluded.insert(p);
        for (const ValueRef& v : g.nodes[i].inputs) stack.push_back(v.node);
      }
      std::vector<std::string> rest;
      size_t trainable = 0;
      for (const ParamInfo& p : lg.report.params) {
        if (!p.trainable || !is_floating(p.dtype)) continue;
        ++trainable;
        if (!excluded.contains(p.name)) rest.push_back(p.name);
      }
      if (rest.empty()) break;
      notes_.insert("train: " + res.error + ": the backward pass of the " +
                    std::to_string(trainable - rest.size()) +
                    " trainable Parameters before it is not costed");
      res = autodiff::build_backward(lg.report, {.params = std::move(rest)});
    }
    if (!res.ok()) {
      notes_.insert("train: no backward pass is costed: " + res.error);
      return std::nullopt;
    }
    return std::move(res.grad);
  }

  void training() {
    std::optional<LossGraph> lg = plan_loss();
    if (!lg) lg = stand_in_loss();
    if (!lg) return;
    const Graph& lgraph = lg->report.graph;
    // The loss's own forward nodes.
    for (uint32_t j = 0; j < lgraph.nodes.size(); ++j) {
      if (lg->to_cell[j] == kNoNode && lgraph.nodes[j].kind == NodeKind::Op) {
        graph_kernel(lgraph, j, kNoNode, "forward", nullptr);
      }
    }
    const std::optional<autodiff::GradGraph> gg = differentiate(*lg);
    if (!gg) return;
    // Semantic node -> the optimized node computing it (its fused kernel).
    std::vector<uint32_t> opt_of(r_.graph.nodes.size(), kNoNode);
    for (uint32_t i = 0; i < g_.nodes.size(); ++i) {
      for (uint32_t o : g_.nodes[i].origins) {
        if (o < opt_of.size() && opt_of[o] == kNoNode) opt_of[o] = i;
      }
    }
    // The outputs something reads: a gradient nobody uses (the input gradient of a layer that
    // reads the graph input) is not computed.
    const Graph& g = gg->report.graph;
    std::vector<std::vector<bool>> used(g.nodes.size());
    for (size_t i = 0; i < g.nodes.size(); ++i) used[i].assign(g.nodes[i].outputs.size(), false);
    auto use = [&](ValueRef v) {
      if (v.node < used.size() && v.output < used[v.node].size()) used[v.node][v.output] = true;
    };
    for (const Node& n : g.nodes) std::for_each(n.inputs.begin(), n.inputs.end(), use);
    std::for_each(g.outputs.begin(), g.outputs.end(), use);
    // The backward nodes in the order build_backward emitted them (reverse topological order of
    // their forward origins), each attributed to its origin's optimized node.
    for (size_t b = 0; b < gg->origin.size(); ++b) {
      const auto j = static_cast<uint32_t>(gg->forward_count + b);
      const uint32_t f = gg->origin[b];
      const uint32_t cell = f < lg->to_cell.size() ? lg->to_cell[f] : kNoNode;
      graph_kernel(g, j, cell < opt_of.size() ? opt_of[cell] : kNoNode, "backward", &used);
    }
    backward_nodes_ = gg->origin.size();
  }

  // ---- kernels of semantic nodes (the loss and the backward graph) ----------------------------

  static const TensorType& value_type(const Graph& g, ValueRef v) {
    return g.nodes[v.node].outputs[v.output];
  }
  static double count(const TensorType& t) {
    return t.shape.ranked ? product(t.shape, 0, t.shape.rank()) : 0;
  }
  // Bytes per element of a value of the training graph: float tensors in fp16 under mixed
  // precision on Ascend, but for operators amp keeps in float32 (their OpDef's precision).
  double value_elem_bytes(const Graph& g, ValueRef v) const {
    const TensorType& t = value_type(g, v);
    const auto size = static_cast<double>(dtype_size(t.dtype));
    if (!is_floating(t.dtype)) return size > 0 ? size : 4;
    if (t_.ascend && o_.mixed_precision) {
      const OpDef* d = find_op(g.nodes[v.node].op);
      return d != nullptr && d->precision == OpPrecision::KeepFloat32 ? 4 : 2;
    }
    return size > 0 ? size : 4;
  }
  double value_bytes(const Graph& g, ValueRef v) const {
    return count(value_type(g, v)) * value_elem_bytes(g, v);
  }

  // The kernels of node `j` of `g`, attributed to optimized node `node`. A backward Cube operator
  // (Conv2DGrad, DenseGrad, MatMulGrad) is one Cube problem per gradient `used` says is read;
  // every other operator one kernel on its OpDef's unit.
  void graph_kernel(const Graph& g, uint32_t j, uint32_t node, const std::string& phase,
                    const std::vector<std::vector<bool>>* used) {
    const Node& n = g.nodes[j];
    const OpDef* def = find_op(n.op);
    const std::string name = n.op;
    if (def != nullptr && def->unit == OpUnit::Host) {
      add(host_noop(), node, phase, name);
      return;
    }
    bool known = true;
    for (const TensorType& t : n.outputs) known = known && count(t) > 0;
    for (const ValueRef& v : n.inputs) known = known && count(value_type(g, v)) > 0;
    const bool on_cube = def != nullptr && def->unit == OpUnit::Cube;
    if (!known) {
      unknown(node, phase, name, on_cube ? Unit::Cube : Unit::Vector);
      return;
    }
    double in_b = 0, out_b = 0, out_e = 0, max_e = 0;
    for (const ValueRef& v : n.inputs) {
      in_b += value_bytes(g, v);
      max_e = std::max(max_e, count(value_type(g, v)));
    }
    for (uint32_t k = 0; k < n.outputs.size(); ++k) {
      out_b += value_bytes(g, {j, k});
      out_e += count(n.outputs[k]);
    }
    if (on_cube && is_layer_op(n.op) && !n.inputs.empty()) {
      const TensorType& x = value_type(g, n.inputs[0]);
      const TensorType* k = n.inputs.size() > 1 ? &value_type(g, n.inputs[1]) : nullptr;
      const TensorType* v = n.inputs.size() > 2 ? &value_type(g, n.inputs[2]) : nullptr;
      std::string_view fwd = n.op;
      if (def->backward) fwd = str_attr_view(n, "forward_op");
      if (auto est = layer_kernel(n, fwd, def->backward, x, k, v)) {
        add(std::move(*est), node, phase, name);
      } else {
        unknown(node, phase, name, Unit::Cube);
      }
      return;
    }
    if (on_cube && !n.inputs.empty()) {
      cube_kernels(g, j, node, phase, used);
      return;
    }
    if (def != nullptr && def->unit == OpUnit::AiCpu) {
      add(aicpu(out_e, in_b + out_b), node, phase, name);
      return;
    }
    // A vector kernel streams its largest tensor (a reduction its input, a broadcast or the
    // gradient of one its output).
    VectorProblem p;
    p.elements = std::max(out_e, max_e);
    p.in_bytes = in_b;
    p.out_bytes = out_b;
    p.ops_per_element = def != nullptr ? def->vector_ops : 1;
    p.elem_bytes = n.outputs.empty() ? 2 : static_cast<uint32_t>(value_elem_bytes(g, {j, 0}));
    add(vector(p), node, phase, name);
  }

  // A Cube operator of the training graph. Forward (a MatMul of the loss): one product. Backward:
  // from the forward product (M, K, N) it differentiates, dX = dY W^T is that product with K and
  // N exchanged and dW = X^T dY with M and K exchanged (each the forward's MACs), a bias gradient
  // a reduction of dY; only the gradients the graph reads are computed.
  void cube_kernels(const Graph& g, uint32_t j, uint32_t node, const std::string& phase,
                    const std::vector<std::vector<bool>>* used) {
    const Node& n = g.nodes[j];
    const OpDef* def = find_op(n.op);
    const std::string name = n.op;
    const bool backward = def->backward;
    const bool conv = def->category == OpCategory::Convolution;
    // Backward operators read (x, [w,] dY); dY has the forward output's shape.
    const ValueRef x = n.inputs[0];
    const TensorType& y = backward ? value_type(g, n.inputs.back()) : n.outputs[0];
    const size_t w_rank = conv ? y.shape.rank() : 2;
    std::optional<Shape> w;
    for (const std::string& p : n.params) {
      auto it = params_.find(p);
      if (it != params_.end() && it->second->shape.rank() == w_rank) {
        w = it->second->shape;
        break;
      }
    }
    const bool w_param = w.has_value();
    if (!w && n.inputs.size() > (backward ? 2u : 1u)) w = value_type(g, n.inputs[1]).shape;
    CubeProblem f;
    bool ok = false;
    if (conv) {
      const auto groups = static_cast<double>(std::max<int64_t>(1, int_attr(n, "group", 1)));
      ok = w && conv_dims(y.shape, *w, groups, &f);
    } else {
      const bool batched = !w_param && w && w->ranked && w->rank() > 2;
      ok = matmul_dims(value_type(g, x).shape, y.shape, transposes_a(n), batched, &f);
    }
    if (!ok) {
      unknown(node, phase, name, Unit::Cube);
      return;
    }
    const double macs = f.batch * f.m * f.k * f.n;
    const double w_bytes = w ? product(*w, 0, w->rank()) * 2 : 0;
    if (!backward) {
      f.a_gm_bytes = value_bytes(g, x);
      f.b_gm_bytes = w_bytes;
      f.c_gm_bytes = value_bytes(g, {j, 0});
      f.out_bytes = static_cast<uint32_t>(value_elem_bytes(g, {j, 0}));
      add(cube(f), node, phase, name).macs = macs;
      return;
    }
    const ValueRef dy = n.inputs.back();
    const bool params = !n.params.empty();
    for (uint32_t k = 0; k < n.outputs.size(); ++k) {
      if (used != nullptr && !(*used)[j][k]) continue;
      const bool param_grad = params && k >= 1;
      // Parameter gradients are fp32 (the optimizer's), activation gradients as the graph's.
      const double eb = param_grad ? 4 : value_elem_bytes(g, {j, k});
      const double out_b = count(n.outputs[k]) * eb;
      if (param_grad && k == 2) {
        add(vector({.elements = count(y),
                    .in_bytes = value_bytes(g, dy),
                    .out_bytes = out_b,
                    .ops_per_element = 1,
                    .elem_bytes = static_cast<uint32_t>(value_elem_bytes(g, dy))}),
            node, "backward", name + "(db)");
        continue;
      }
      CubeProblem p;
      if (k == 0) {
        p = {.batch = f.batch, .m = f.m, .k = f.n, .n = f.k};
        p.a_gm_bytes = value_bytes(g, dy);
        p.b_gm_bytes = w_bytes;
      } else {
        p = {.batch = f.batch, .m = f.k, .k = f.m, .n = f.n};
        p.a_gm_bytes = value_bytes(g, x);
        p.b_gm_bytes = value_bytes(g, dy);
      }
      p.c_gm_bytes = out_b;
      p.out_bytes = static_cast<uint32_t>(eb);
      std::string kernel = name;
      kernel += k == 0 ? "(dX)" : params ? "(dW)" : "(dX" + std::to_string(k) + ")";
      add(cube(p), node, param_grad ? "backward-wgrad" : "backward-dgrad", std::move(kernel)).macs =
          macs;
    }
  }

  // The gradient reduction of a parallel training step (docs/parallel.md §4, §11), before the
  // optimizer: each trainable parameter whose slice is held by several devices of its stage has
  // its gradient summed over them (data parallel: DistributedGradReducer's AllReduce over the
  // world group; semi-auto: the mirror op's AllReduce over the devices repeating the slice;
  // operators without a strategy: replicated, as MindSpore's default data-parallel strategy
  // leaves their parameters). Group = the stage's devices / the splits of the parameter's
  // slice; the bytes those of the gradient slice in the parameter's dtype. MindSpore fuses the
  // gradients' AllReduces (fusion 1): one kernel per group size, carrying all their bytes.
  // With the parallel optimizer a sharded parameter's gradient is reduce-scattered over its
  // shard group instead (plus an AllReduce of the shard over the rest of the group, if any).
  void gradient_reduction() {
    std::map<std::pair<std::string, int64_t>, std::pair<double, size_t>> by_group;
    auto tally = [&](const char* kind, int64_t group, double bytes) {
      auto& [b, count] = by_group[{kind, group}];
      b += bytes;
      ++count;
    };
    for (const auto& [name, r] : reductions_) {
      const auto shard = opt_shards_.find(name);
      if (shard == opt_shards_.end()) {
        tally("AllReduce", r.group, r.bytes);
        continue;
      }
      tally("ReduceScatter", shard->second, r.bytes);
      if (r.group / shard->second > 1) {
        tally("AllReduce", r.group / shard->second, r.bytes / static_cast<double>(shard->second));
      }
    }
    for (const auto& [key, load] : by_group) {
      add_collective(key.first, key.second, load.first, "backward",
                     key.first + "(gradients of " + std::to_string(load.second) + " parameter" +
                         (load.second == 1 ? "" : "s") + ", " + std::to_string(key.second) +
                         " devices)");
    }
  }

  // Which trainable parameters a parallel training step reduces (`reductions_`: the devices
  // repeating each one's slice and the slice's bytes) and, with the parallel optimizer, which it
  // shards (`opt_shards_`): a slice of at least the threshold whose first dimension the shard
  // group divides (MindSpore 2.10's optimizer-parallel page: "the highest dimension of the shape
  // is divisible by the cardinality of the duplicate slices"); the group is
  // optimizer_weight_shard_size when it divides the repeats, else all of them. A sharded
  // parameter is gathered before the forward pass: one fused AllGather per shard group.
  void plan_parallel_training() {
    const ParallelContext* pc = o_.parallel;
    if (pc == nullptr || !pc->parallel_job()) return;
    const int64_t devices = pc->stage_devices();
    if (devices <= 1) return;
    const bool sharding = pc->parallel_optimizer && pc->sharding();
    std::map<int64_t, std::pair<double, size_t>> gathers;
    for (const auto& p : r_.params) {
      if (!p.trainable) continue;
      const double e = product(p.shape, 0, p.shape.rank());
      if (e <= 0) continue;
      const auto it = param_splits_.find(p.name);
      const int64_t split = it == param_splits_.end() ? 1 : it->second;
      if (split <= 0 || devices % split != 0 || devices / split <= 1) continue;
      const int64_t group = devices / split;
      const double bytes = e * static_cast<double>(std::max<size_t>(dtype_size(p.dtype), 1));
      reductions_.emplace_back(p.name, Reduction{group, bytes});
      if (!sharding || bytes < static_cast<double>(pc->optimizer_threshold_kb) * 1024) continue;
      const int64_t shard = pc->optimizer_shard_size > 1 && group % pc->optimizer_shard_size == 0
                                ? pc->optimizer_shard_size
                                : group;
      if (p.shape.rank() == 0 || !p.shape.dims[0].is_known() ||
          p.shape.dims[0].value() % shard != 0) {
        continue;
      }
      opt_shards_[p.name] = shard;
      auto& [b, count] = gathers[shard];
      b += bytes / static_cast<double>(shard);
      ++count;
    }
    for (const auto& [shard, load] : gathers) {
      add_collective("AllGather", shard, load.first, "forward",
                     "AllGather(parameters of the parallel optimizer: " +
                         std::to_string(load.second) + ", " + std::to_string(shard) + " devices)");
    }
  }

  // One collective kernel on the interconnect: `bytes` held per device before it.
  void add_collective(const std::string& kind, int64_t group, double bytes, const char* phase,
                      std::string name) {
    KernelEstimate k;
    k.unit = Unit::Comm;
    k.block_dim = 1;
    const auto moved = comm_moved_bytes(kind, group, static_cast<uint64_t>(bytes));
    k.comm_bytes = moved ? static_cast<double>(*moved) : 0;
    comm_bytes_ += k.comm_bytes;
    if (const auto us = comm_time_us(t_, kind, group, k.comm_bytes)) {
      k.cycles = *us * t_.frequency_mhz;
      k.bound = "communication";
    } else {
      k.bound = "not-estimated";
      comm_untimed_ = true;
    }
    add(std::move(k), kNoNode, phase, std::move(name));
  }

  void optimizer() {
    // Per trainable Parameter: read w, grad and the optimizer state, write w and the state
    // (fp32), plus the fp16 copy of w that mixed precision casts for the next step.
    const double fp16_copy = t_.ascend && o_.mixed_precision ? 2 : 0;
    for (const auto& p : r_.params) {
      if (!p.trainable) continue;
      double e = product(p.shape, 0, p.shape.rank());
      if (e <= 0) continue;
      // The parallel optimizer: each device updates its shard.
      if (auto it = opt_shards_.find(p.name); it != opt_shards_.end()) {
        e /= static_cast<double>(it->second);
      }
      for (const OptimizerKernel& k : optimizer_kernels(o_.optimizer, fp16_copy)) {
        add(vector({.elements = e,
                    .in_bytes = e * k.read_bytes,
                    .out_bytes = e * k.write_bytes,
                    .ops_per_element = k.ops,
                    .elem_bytes = 4}),
            kNoNode, "optimizer", k.name + " " + p.name);
      }
    }
  }

  // ---- schedule -------------------------------------------------------------------------------

  // A list scheduler in execution order on one stream: each kernel starts when the previous one
  // ends and takes the `block_dim` cores of its unit that have been idle longest (ties: lowest
  // id).
  void schedule(HardwareGraph* out) {
    auto pool_size = [this](Unit u) -> uint32_t {
      switch (u) {
        case Unit::Cube:
          return t_.ascend ? t_.ai_cores : t_.cores;
        case Unit::Vector:
          return t_.ascend ? t_.vector_cores : t_.cores;
        case Unit::AiCpu:
          return t_.ascend ? t_.ai_cpu_cores : t_.cores;
        case Unit::Cpu:
          return t_.cores;
        case Unit::Host:
        case Unit::Comm:
          return 1;
      }
      return 1;
    };
    // Coupled chips run cube and vector kernels on the same cores.
    auto pool_of = [this](Unit u) {
      if (u == Unit::Vector && t_.ascend && !t_.separated) return static_cast<int>(Unit::Cube);
      return static_cast<int>(u);
    };
    // Per pool, its cores from least to most recently used: a kernel takes the first
    // `block_dim` and they move to the back (on one stream they all finish together).
    std::unordered_map<int, std::vector<uint32_t>> lru;
    double clock = 0;  // us
    ModelEstimate& e = out->estimate;
    for (auto& k : kernels_) {
      const uint32_t size = pool_size(k.unit);
      auto& order = lru[pool_of(k.unit)];
      if (order.size() < size) {
        for (auto c = static_cast<uint32_t>(order.size()); c < size; ++c) order.push_back(c);
      }
      k.block_dim = std::clamp<uint32_t>(k.block_dim, 1, size);
      // Cores of a shared pool beyond this unit's count (vector kernels on a coupled chip's
      // cube cores) are skipped.
      k.core_ids.clear();
      std::vector<uint32_t> rest;
      rest.reserve(order.size());
      for (uint32_t c : order) {
        if (k.core_ids.size() < k.block_dim && c < size) {
          k.core_ids.push_back(c);
        } else {
          rest.push_back(c);
        }
      }
      std::copy(k.core_ids.begin(), k.core_ids.end(), std::back_inserter(rest));
      order.swap(rest);
      std::sort(k.core_ids.begin(), k.core_ids.end());
      const bool launched = k.unit != Unit::Host && k.unit != Unit::Comm &&
                            k.bound != "unsupported" && k.bound != "unknown-shape";
      const double dispatch = launched ? t_.launch_overhead_us : 0;
      k.start_us = clock;
      k.time_us = k.cycles / t_.frequency_mhz + dispatch;
      clock += k.time_us;
      const double gm = k.gm_read_bytes + k.gm_write_bytes;
      k.bandwidth_gbps = k.time_us > 0 ? gm / (k.time_us * 1e3) : 0;
      if (launched && k.cycles / t_.frequency_mhz < dispatch) k.bound = "dispatch";
      const double ms = k.time_us / 1e3;
      (k.phase == "forward"     ? e.forward_ms
       : k.phase == "optimizer" ? e.optimizer_ms
                                : e.backward_ms) += ms;
      if (k.unit == Unit::Cube) e.cube_ms += ms - dispatch / 1e3;
      if (k.unit == Unit::Vector) e.vector_ms += ms - dispatch / 1e3;
      if (k.unit == Unit::AiCpu) e.aicpu_ms += ms - dispatch / 1e3;
      if (k.unit == Unit::Cpu) e.cpu_ms += ms - dispatch / 1e3;
      if (k.unit == Unit::Comm) e.comm_ms += ms;
      e.dispatch_ms += dispatch / 1e3;
      e.macs += k.macs;
      e.gm_bytes += gm;
    }
    e.target = t_.name;
    e.mode = o_.mode;
    e.analytical = true;
    e.batch = batch();
    e.latency_ms = clock / 1e3;
    e.throughput_per_sec =
        e.latency_ms > 0 ? static_cast<double>(e.batch) / (e.latency_ms / 1e3) : 0;
    const double peak_macs_per_ms =
        t_.ascend ? t_.ai_cores * t_.cube_macs_fp16 * t_.frequency_mhz * 1e3
                  : t_.cores * t_.flops_per_cycle_fp32 / 2 * t_.frequency_mhz * 1e3;
    parallel_estimate(e);
    e.cube_utilization = e.latency_ms > 0 ? e.macs / (peak_macs_per_ms * e.latency_ms) : 0;
    e.memory_peak_bytes = g_.memory.peak;
    e.weight_bytes = g_.memory.weight_bytes;
    if (train_) {
      // Training keeps every forward activation for the backward pass.
      e.memory_peak_bytes = std::max(g_.memory.peak, g_.memory.naive);
      notes_.insert(
          "train: the loss is " + (loss_what_.empty() ? std::string("not known") : loss_what_) +
          "; backward: the " + std::to_string(backward_nodes_) +
          " nodes autodiff (build_backward) emits for it, one kernel each (Conv2DGrad, DenseGrad, "
          "MatMulGrad: one Cube problem per gradient the graph reads), not fused, in the default "
          "format; optimizer '" +
          o_.optimizer + "' per trainable Parameter; the data pipeline is not modelled");
    }
    if (t_.ascend && o_.mixed_precision && amp_graph_) {
      notes_.insert(
          "mixed precision (amp O2): kernels in fp16, BatchNorm/LayerNorm in fp32 with the Casts "
          "the amp pass inserted, optimizer state fp32");
    } else if (t_.ascend && o_.mixed_precision) {
      notes_.insert("mixed precision: float tensors are fp16 on the chip, optimizer state fp32");
    } else if (t_.ascend && amp_graph_) {
      notes_.insert(
          "precision fp32 on a graph optimized for mixed precision: every float tensor is fp32 "
          "and the amp Casts (now between equal types) cost nothing");
    }
    if (t_.ascend && !t_.cube_fp32) notes_.insert("float32 matmuls run on the fp16 cube");
    // In the target's words: an Ascend kernel is dispatched (launched) on the AI cores; the CPU
    // backend's executor spends its overhead per operator.
    const std::string overhead = std::to_string(t_.launch_overhead_us).substr(0, 4);
    notes_.insert(t_.ascend ? "one stream: kernels run one after another; dispatch " + overhead +
                                  " us per launched kernel"
                            : "one stream: operators run one after another; executor overhead " +
                                  overhead + " us per operator");
    e.notes.assign(notes_.begin(), notes_.end());
    std::sort(e.notes.begin(), e.notes.end());
  }

  // The pipeline stage of each optimized node: its semantic origin's recorded stage, a Send's or
  // Receive's own, else (other inserted nodes) its first input's; -1 when none is recorded.
  std::vector<int64_t> node_stages() const {
    std::vector<int64_t> st(g_.nodes.size(), -1);
    for (uint32_t i = 0; i < g_.nodes.size(); ++i) {
      const OptNode& n = g_.nodes[i];
      if (!n.origins.empty()) {
        const Node& s = r_.graph.nodes[n.origins.front()];
        if (s.parallel) st[i] = s.parallel->stage;
        continue;
      }
      bool own = false;
      for (const Attr& a : n.attrs) {
        if (a.name != "stage") continue;
        if (const auto* v = std::get_if<int64_t>(&a.value)) {
          st[i] = *v;
          own = true;
        }
      }
      if (!own && !n.inputs.empty() && n.inputs[0].node < i) st[i] = st[n.inputs[0].node];
    }
    return st;
  }

  // Communication totals, and the pipeline's stages and bubble (docs/parallel.md, "Communication
  // and its cost").
  void parallel_estimate(ModelEstimate& e) {
    const ParallelContext* pc = o_.parallel;
    if (pc == nullptr || !pc->parallel_job()) return;
    e.comm_bytes = comm_bytes_;
    e.comm_timed = !comm_untimed_;
    if (comm_untimed_) {
      e.comm_ms = 0;
      notes_.insert("no interconnect figure for " + t_.name + ": time not estimated (" +
                    std::to_string(static_cast<uint64_t>(std::llround(comm_bytes_))) +
                    " bytes sent per device by the communication nodes; the target file has no "
                    "sourced interconnect_gbps)");
    } else if (comm_bytes_ > 0) {
      notes_.insert(
          "communication: ring algorithms on one interconnect link of " +
          std::to_string(t_.interconnect_gbps).substr(0, 5) + " GB/s" +
          (t_.interconnect_latency_us > 0 ? " plus the per-hop latency" : " (no per-hop latency)") +
          "; kernels and communication do not overlap");
    }
    if (train_) {
      notes_.insert(
          "parallel training: gradients of parameters held by several devices are summed by "
          "AllReduce before the update (one fused AllReduce per group size); the parallel "
          "optimizer's AllGather / ReduceScatter is not modelled");
    }
    if (pc->pipeline_stages <= 1) return;
    e.pipeline_stages = pc->pipeline_stages;
    e.micro_batches = pc->micro_size;
    const auto st = node_stages();
    std::map<int64_t, StageEstimate> by_stage;
    for (const auto& k : kernels_) {
      if (k.node >= st.size() || st[k.node] < 0) continue;
      StageEstimate& s = by_stage[st[k.node]];
      s.stage = st[k.node];
      (k.unit == Unit::Comm ? s.comm_ms : s.compute_ms) += k.time_us / 1e3;
    }
    double slowest = 0;
    for (const auto& [stage, s] : by_stage) {
      e.stages.push_back(s);
      slowest = std::max(slowest, s.compute_ms + s.comm_ms);
    }
    if (pc->micro_size < 1) {
      notes_.insert(
          "pipeline: no nn.PipelineCell micro_size recorded: no bubble, the step is the sum of "
          "the stages");
      return;
    }
    const auto p = static_cast<double>(pc->pipeline_stages);
    const auto m = static_cast<double>(pc->micro_size);
    e.bubble_fraction = pipeline_bubble(pc->pipeline_stages, pc->micro_size);
    e.pipeline_step_ms = slowest * (m + p - 1) / m;
    e.latency_ms = e.pipeline_step_ms;
    e.throughput_per_sec =
        e.latency_ms > 0 ? static_cast<double>(e.batch) / (e.latency_ms / 1e3) : 0;
    notes_.insert(
        "pipeline: " + std::to_string(pc->pipeline_stages) + " stages, " +
        std::to_string(pc->micro_size) +
        " micro-batches: the step is (m+p-1)/m x the slowest stage; bubble (p-1)/(m+p-1)");
  }

  int64_t batch() const {
    for (const auto& in : r_.inputs) {
      if (in.type.shape.ranked && in.type.shape.rank() > 0 && in.type.shape.dims[0].is_known()) {
        return std::max<int64_t>(1, in.type.shape.dims[0].value());
      }
    }
    return 1;
  }

  const CellReport& r_;
  const OptimizedGraph& g_;
  const HardwareOptions& o_;
  const HardwareTarget& t_;
  bool train_;
  // The graph carries amp O2 dtypes (the amp pass ran with precision "mixed").
  bool amp_graph_;
  std::unordered_map<std::string_view, const ParamInfo*> params_;
  std::vector<double> written_;
  double written_total_ = 0;
  std::vector<KernelEstimate> kernels_;
  std::unordered_map<std::string, KernelEstimate> memo_;
  std::unordered_set<std::string> notes_;
  // Train: what the loss is, and how many backward nodes were costed.
  std::string loss_what_;
  size_t backward_nodes_ = 0;
  // Communication nodes: bytes sent per device, and whether one could not be timed.
  double comm_bytes_ = 0;
  bool comm_untimed_ = false;
  // Parameter name -> the devices its slice is split over (the product of the splits of the
  // strategy that reads it); absent: 1 (replicated).
  std::map<std::string, int64_t> param_splits_;
  // A parallel training step (plan_parallel_training): the parameters whose gradients are
  // reduced, in CellReport::params order, and those the parallel optimizer shards (their shard
  // group).
  struct Reduction {
    int64_t group = 1;
    double bytes = 0;
  };
  std::vector<std::pair<std::string, Reduction>> reductions_;
  std::map<std::string, int64_t> opt_shards_;
};

}  // namespace

std::optional<std::string> custom_unsupported(std::string_view func_type, const HardwareTarget& t) {
  const bool ok = t.ascend ? func_type != "pyfunc" && func_type != "julia"
                           : func_type != "tbe" && func_type != "aicpu";
  if (ok) return std::nullopt;
  return "`ops.Custom` with func_type='" + std::string(func_type) + "' has no implementation for " +
         t.name +
         (t.ascend ? " (pyfunc and julia kernels run only on CPU; use func_type='aot', 'hybrid' or "
                     "'tbe' for Ascend)"
                   : " (tbe and aicpu kernels run only on Ascend)");
}

std::optional<double> comm_time_us(const HardwareTarget& t, std::string_view kind, int64_t group,
                                   double moved_bytes) {
  if (t.interconnect_gbps <= 0) return std::nullopt;
  const double n = static_cast<double>(std::max<int64_t>(group, 1));
  double hops = 1;  // Send / Receive
  if (kind == "AllReduce") hops = 2 * (n - 1);
  if (kind == "AllGather" || kind == "ReduceScatter" || kind == "AllToAll") hops = n - 1;
  // GB/s = 1e3 bytes per microsecond.
  return moved_bytes / (t.interconnect_gbps * 1e3) + hops * t.interconnect_latency_us;
}

double pipeline_bubble(int64_t stages, int64_t micro_batches) {
  if (stages <= 1 || micro_batches < 1) return 0;
  const auto p = static_cast<double>(stages);
  return (p - 1) / (static_cast<double>(micro_batches) + p - 1);
}

std::vector<OptimizerKernel> optimizer_kernels(std::string_view optimizer, double fp16_copy_bytes) {
  // Bytes per element of the parameter, fp32 state. One fused kernel for the CANN Apply* ops.
  if (optimizer == "sgd") return {{"ApplyGradientDescent", 4 * 2, 4 + fp16_copy_bytes, 2}};
  if (optimizer == "momentum") return {{"ApplyMomentum", 4 * 3, 4 * 2 + fp16_copy_bytes, 4}};
  if (optimizer == "adam") return {{"ApplyAdam", 4 * 4, 4 * 3 + fp16_copy_bytes, 10}};
  if (optimizer == "lamb") {
    // nn.Lamb as MindSpore's Ascend backend fuses it (IR fusion passes LambNextMVWithDecayRule,
    // LambUpdateWithLRRuleFusion; SquareSumAll for the two norms): the moments and the update
    // direction r = m^/(sqrt(v^)+eps) + wd*w, then ||w|| and ||r||, then w -= lr*(||w||/||r||)*r.
    // The norms need all of r before the update, so these are three kernels, not one.
    return {{"LambNextMVWithDecay", 4 * 4, 4 * 3, 12},
            {"SquareSumAll", 4 * 2, 0, 4},
            {"LambUpdateWithLR", 4 * 2, 4 + fp16_copy_bytes, 4}};
  }
  throw std::invalid_argument("unknown optimizer '" + std::string(optimizer) +
                              "' (expected sgd, momentum, adam or lamb)");
}

namespace {

// One device's share of a parallel job (docs/parallel.md, "Per-device cost"): every operator
// with a `.shard` strategy at the per-device shapes the checks recorded (its outputs, and the
// parameters and graph inputs it reads at the slices it reads), its FLOPs divided by the devices
// its strategy uses, and the communication nodes' outputs at their per-device shape. Under
// semi_auto_parallel an operator without a strategy runs MindSpore's batch-parallel one (D1);
// otherwise it keeps its global shapes. nullopt when nothing is sharded.
struct DeviceView {
  CellReport report;
  OptimizedGraph graph;
  size_t sharded = 0;     // semantic operators costed at their per-device shapes
  size_t propagated = 0;  // of them, with a strategy sharding propagation gave (§13)
  // semi_auto_parallel on several devices: operators without a strategy run MindSpore's
  // default batch-parallel one (D1); `batch_parallel` of them are split by it.
  bool default_strategy = false;
  size_t batch_parallel = 0;
  std::map<std::string, int64_t> param_splits;  // parameter -> devices its slice is split over
};

std::optional<DeviceView> device_view(const CellReport& report, const OptimizedGraph& graph,
                                      const ParallelContext* pc) {
  if (pc == nullptr || !pc->parallel_job()) return std::nullopt;
  auto recorded = [](const Node& n) {
    return n.parallel && n.parallel->device_matrix > 0 &&
           n.parallel->per_device_outputs.size() == n.outputs.size() &&
           n.parallel->per_device_inputs.size() == n.inputs.size();
  };
  const bool default_dp = pc->parallel_mode == "semi_auto_parallel" && pc->stage_devices() > 1;
  if (!default_dp && std::none_of(report.graph.nodes.begin(), report.graph.nodes.end(), recorded))
    return std::nullopt;
  DeviceView v{report, graph, 0, 0, default_dp, 0, {}};
  std::vector<Node>& sem = v.report.graph.nodes;
  std::vector<bool> changed(sem.size(), false);
  std::map<std::string, Shape> param_slices;
  for (size_t i = 0; i < sem.size(); ++i) {
    Node& n = sem[i];
    if (!recorded(n)) continue;
    const NodeParallel& par = *n.parallel;
    for (size_t k = 0; k < n.outputs.size(); ++k) n.outputs[k].shape = par.per_device_outputs[k];
    n.flops /= static_cast<double>(par.device_matrix);
    changed[i] = true;
    ++v.sharded;
    if (!par.propagated_from.empty()) ++v.propagated;
    // A parameter or graph input is held as the slice its (first) sharded reader reads: MindSpore
    // slices parameters by the strategy, and the dataset's batch by the data strategy.
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const ValueRef in = n.inputs[k];
      if (in.node >= sem.size() || changed[in.node]) continue;
      Node& p = sem[in.node];
      if (p.kind != NodeKind::Parameter && p.kind != NodeKind::Input) continue;
      if (in.output >= p.outputs.size()) continue;
      p.outputs[in.output].shape = par.per_device_inputs[k];
      changed[in.node] = true;
      if (p.kind == NodeKind::Parameter && !p.params.empty()) {
        param_slices.emplace(p.params.front(), par.per_device_inputs[k]);
        const Shape& whole = report.graph.nodes[in.node].outputs[in.output].shape;
        const Shape& slice = par.per_device_inputs[k];
        int64_t split = 1;
        for (size_t d = 0; d < whole.rank() && d < slice.rank(); ++d) {
          if (whole.dims[d].is_known() && slice.dims[d].is_known() && slice.dims[d].value() > 0)
            split *= whole.dims[d].value() / slice.dims[d].value();
        }
        v.param_splits.emplace(p.params.front(), split);
      }
    }
  }
  // D1 (docs/parallel.md §3): under semi_auto_parallel an operator without a strategy gets
  // MindSpore's batch-parallel one (operator_info.cc GenerateBatchStrategies /
  // GenerateBatchStrategiesWithCheck): its first input's first dimension split over the stage's
  // devices, lowered to their gcd with that dimension when it does not divide; its parameters
  // whole on every device. Its outputs whose first dimension is that one are split alike.
  for (size_t i = 0; i < sem.size() && default_dp; ++i) {
    Node& n = sem[i];
    if (n.kind != NodeKind::Op || recorded(n) || n.inputs.empty()) continue;
    const ValueRef x = n.inputs[0];
    if (x.node >= sem.size() || x.output >= sem[x.node].outputs.size()) continue;
    const Shape& batch = report.graph.nodes[x.node].outputs[x.output].shape;
    if (!batch.ranked || batch.rank() == 0 || !batch.dims[0].is_known() ||
        batch.dims[0].value() <= 0) {
      continue;
    }
    const int64_t b = batch.dims[0].value();
    const int64_t g = std::gcd(b, pc->stage_devices());
    if (g <= 1) continue;
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const Shape& whole = report.graph.nodes[i].outputs[k].shape;
      if (whole.ranked && whole.rank() > 0 && whole.dims[0] == batch.dims[0]) {
        n.outputs[k].shape.dims[0] = Dim::known(b / g);
      }
    }
    n.flops /= static_cast<double>(g);
    changed[i] = true;
    ++v.batch_parallel;
    Node& p = sem[x.node];
    if (p.kind == NodeKind::Input && !changed[x.node]) {
      p.outputs[x.output].shape.dims[0] = Dim::known(b / g);
      changed[x.node] = true;
    }
  }
  for (ParamInfo& p : v.report.params) {
    if (auto it = param_slices.find(p.name); it != param_slices.end()) p.shape = it->second;
  }
  // The optimized graph in order: a kernel's output is that of its origin with the same global
  // shape (the anchor of a fused kernel, or its epilogue's last operator), its FLOPs its
  // origins'; a node the passes inserted (Cast, TransData) keeps its input's shape; a
  // communication node's output is its per-device shape.
  std::vector<bool> opt_changed(v.graph.nodes.size(), false);
  for (size_t i = 0; i < v.graph.nodes.size(); ++i) {
    OptNode& o = v.graph.nodes[i];
    const OptNode& before = graph.nodes[i];
    if (o.pass == "comm") {
      for (const Attr& a : o.attrs) {
        const auto* dims = std::get_if<std::vector<int64_t>>(&a.value);
        if (a.name == "per_device_shape" && dims != nullptr && !o.outputs.empty()) {
          o.outputs[0].shape = Shape::of(*dims);
          opt_changed[i] = true;
        }
      }
      continue;
    }
    if (o.origins.empty()) {
      if (o.inputs.empty() || o.outputs.size() != 1) continue;
      const ValueRef in = o.inputs[0];
      if (in.node >= i || !opt_changed[in.node]) continue;
      const OptNode& producer = graph.nodes[in.node];
      if (in.output >= producer.outputs.size() ||
          producer.outputs[in.output].shape != before.outputs[0].shape) {
        continue;
      }
      o.outputs[0].shape = v.graph.nodes[in.node].outputs[in.output].shape;
      opt_changed[i] = true;
      continue;
    }
    bool any = false;
    double flops = 0;
    for (uint32_t origin : o.origins) {
      if (origin >= sem.size()) continue;
      any = any || changed[origin];
      flops += sem[origin].flops;
    }
    if (!any) continue;
    if (o.flops > 0) o.flops = flops;
    for (size_t k = 0; k < o.outputs.size(); ++k) {
      for (uint32_t origin : o.origins) {
        if (origin >= sem.size() || !changed[origin]) continue;
        const Node& global = report.graph.nodes[origin];
        bool matched = false;
        for (size_t j = 0; j < global.outputs.size() && !matched; ++j) {
          if (global.outputs[j].shape == before.outputs[k].shape) {
            o.outputs[k].shape = sem[origin].outputs[j].shape;
            matched = true;
          }
        }
        if (matched) {
          opt_changed[i] = true;
          break;
        }
      }
    }
  }
  return v;
}

}  // namespace

HardwareGraph estimate_hardware(const CellReport& report, const OptimizedGraph& graph,
                                const HardwareOptions& options) {
  if (options.mode != "infer" && options.mode != "train") {
    throw std::invalid_argument("unknown mode '" + options.mode + "' (expected infer or train)");
  }
  if (options.optimizer != "sgd" && options.optimizer != "momentum" &&
      options.optimizer != "adam" && options.optimizer != "lamb") {
    throw std::invalid_argument("unknown optimizer '" + options.optimizer +
                                "' (expected sgd, momentum, adam or lamb)");
  }
  const HardwareTarget& target = hardware_target(options.target);
  if (auto device = device_view(report, graph, options.parallel)) {
    Estimator estimator(device->report, device->graph, options, target);
    estimator.set_param_splits(std::move(device->param_splits));
    HardwareGraph out = estimator.run();
    out.estimate.notes.push_back(
        "parallel: one device's kernels: " + std::to_string(device->sharded) + " operator" +
        (device->sharded == 1 ? "" : "s") +
        " with a strategy at the per-device shapes it gives (FLOPs / the devices it uses" +
        (device->propagated > 0
             ? "; " + std::to_string(device->propagated) + " by sharding propagation"
             : std::string()) +
        "); " +
        (device->default_strategy
             ? std::to_string(device->batch_parallel) + " without one at MindSpore's default "
                                                        "batch-parallel strategy (the first "
                                                        "input's first dimension split over "
                                                        "the stage's devices), the rest whole"
             : std::string("operators without one at their global shapes")));
    return out;
  }
  HardwareGraph out = Estimator(report, graph, options, target).run();
  if (options.parallel != nullptr && options.parallel->parallel_job()) {
    out.estimate.notes.emplace_back(
        options.parallel->parallel_mode == "data_parallel"
            ? "data parallel: each device runs the whole network on the batch the script gives "
              "it (its dataset shard)"
            : "parallel: no operator has a strategy: kernels at the graph's global shapes");
  }
  return out;
}

}  // namespace graphcore
