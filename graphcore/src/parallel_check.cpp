// The parallel-strategy checks (issue 21, docs/parallel.md "What Cellscope checks"): what
// MindSpore checks only when the graph compiles on Ascend/GPU (operator_info.cc,
// matmul_info.cc, step_parallel_utils.cc, pipeline_transformer.cc), run on the facts the
// evaluator recorded (Node::parallel, Graph::stages, AnalysisResult::parallel), with MindSpore's
// wording plus what it leaves out: the operator's attribute, the input's name and global shape.
// Each sharded node also gets its per-device slices, its output's split and the communication
// MindSpore inserts. Per-operator rules come from the operator's OpDef (ShardRule).
#include "parallel_check.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "graphcore/opdef.h"

namespace graphcore {

std::string strategy_str(const std::vector<int64_t>& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

std::string strategy_str(const Strategy& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + strategy_str(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

namespace {

bool power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

std::string dims_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.dims.size(); ++i) out += (i ? ", " : "") + s.dims[i].str();
  return out + "]";
}

// Resolves a ShardDim of a node to a 0-based dimension of its input, or -1.
int resolve(const ShardDim& d, const Node& n, size_t rank) {
  int dim = d.dim;  // NOLINT(bugprone-signed-char-misuse): a dimension index, not a character
  if (!d.swap_attr.empty()) {
    if (const AttrValue* a = n.find_attr(d.swap_attr)) {
      const bool* b = std::get_if<bool>(a);
      const int64_t* i = std::get_if<int64_t>(a);
      if ((b != nullptr && *b) || (i != nullptr && *i != 0))
        dim = dim == -1 ? -2 : dim == -2 ? -1 : dim;
    }
  }
  int r = static_cast<int>(rank);
  if (dim < 0) dim += r;
  return dim >= 0 && dim < r ? dim : -1;
}

// The dimensions of input 0 (rank `rank`) that rule `r` needs whole on one device, each with
// the axis as the node's attribute gives it: Softmax's axis, LayerNorm's begin_norm_axis and
// every dimension after it.
std::vector<std::pair<int64_t, size_t>> unsplit_dims(const ShardRule& r, const Node& n,
                                                     size_t rank) {
  std::vector<std::pair<int64_t, size_t>> out;
  if (r.unsplit_axis.empty()) return out;
  std::vector<int64_t> axes{r.unsplit_default};
  if (const AttrValue* a = n.find_attr(r.unsplit_axis)) {
    if (const auto* i = std::get_if<int64_t>(a)) axes = {*i};
    if (const auto* v = std::get_if<std::vector<int64_t>>(a)) axes = *v;
  }
  const auto r64 = static_cast<int64_t>(rank);
  for (int64_t axis : axes) {
    const int64_t d = axis < 0 ? axis + r64 : axis;
    if (d < 0 || d >= r64) continue;
    for (int64_t k = d; k < (r.unsplit_from ? r64 : d + 1); ++k)
      out.emplace_back(axis, static_cast<size_t>(k));
  }
  return out;
}

// The output split of a reshape of `in` (split `split`) into `out` (ShardOutput::Reshape):
// dimensions are grouped where the products of the input's and the output's agree; a group
// passes the split of its first input dimension of more than one element to its first such
// output dimension when that divides it. Empty when a split cannot pass without moving data
// (or a dimension is not known).
std::vector<int64_t> reshape_split(const Shape& in, const std::vector<int64_t>& split,
                                   const Shape& out) {
  if (!in.fully_known() || !out.fully_known() || split.size() != in.rank()) return {};
  std::vector<int64_t> result(out.rank(), 1);
  size_t i = 0;
  size_t j = 0;
  while (i < in.rank() || j < out.rank()) {
    const size_t i0 = i;
    const size_t j0 = j;
    int64_t pi = i < in.rank() ? in.dims[i++].value() : 1;
    int64_t pj = j < out.rank() ? out.dims[j++].value() : 1;
    while (pi != pj) {
      if (pi < pj && i < in.rank()) {
        pi *= in.dims[i++].value();
      } else if (pj < pi && j < out.rank()) {
        pj *= out.dims[j++].value();
      } else {
        return {};  // the element counts differ: not a reshape of known shapes
      }
    }
    std::optional<size_t> lead_in;
    for (size_t k = i0; k < i; ++k) {
      if (in.dims[k].value() > 1 && !lead_in) {
        lead_in = k;
      } else if (split[k] != 1) {
        return {};  // a split inside the group: its slices are not contiguous in the output
      }
    }
    if (!lead_in || split[*lead_in] == 1) continue;
    std::optional<size_t> lead_out;
    for (size_t k = j0; k < j && !lead_out; ++k) {
      if (out.dims[k].value() > 1) lead_out = k;
    }
    if (!lead_out || out.dims[*lead_out].value() % split[*lead_in] != 0) return {};
    result[*lead_out] = split[*lead_in];
  }
  return result;
}

struct Checker {
  const ParallelContext& ctx;
  const ParallelReport& report;

  // What one input of a node is, for messages.
  struct In {
    std::string name;  // "x", "w", "the output of relu"
    Shape shape;
  };

  // The broadcast dimensions of rule `r` over `ins` (all of an elementwise operator's, a
  // BatchMatMul's batch ones), aligned from the right: per position, the (input, dimension)
  // pairs of more than one element, which must split alike. A dimension of one element
  // broadcasts: it is left out, and listed in `ones` when given. Ranked inputs only.
  static std::vector<std::vector<std::pair<size_t, size_t>>> broadcast_groups(
      const ShardRule& r, const std::vector<In>& ins,
      std::vector<std::pair<size_t, size_t>>* ones = nullptr) {
    std::vector<std::vector<std::pair<size_t, size_t>>> out;
    if (r.output != ShardOutput::Broadcast && r.output != ShardOutput::Dims) return out;
    const size_t tail = r.output == ShardOutput::Dims ? 2 : 0;
    size_t longest = 0;
    for (const In& in : ins) longest = std::max(longest, in.shape.rank());
    for (size_t e = tail; e < longest; ++e) {  // e-th dimension from the end
      std::vector<std::pair<size_t, size_t>> group;
      for (size_t k = 0; k < ins.size(); ++k) {
        const size_t rank = ins[k].shape.rank();
        if (e >= rank) continue;
        const size_t d = rank - 1 - e;
        const Dim& dim = ins[k].shape.dims[d];
        if (dim.is_known() && dim.value() == 1) {
          if (ones != nullptr) ones->emplace_back(k, d);
          continue;
        }
        group.emplace_back(k, d);
      }
      if (group.size() > 1) out.push_back(std::move(group));
    }
    return out;
  }

  static std::string input_name(const Graph& g, ValueRef r) {
    if (r.node >= g.nodes.size()) return "?";
    const Node& p = g.nodes[r.node];
    std::string id = p.id;
    // "encoder.layers.0.attention/Transpose" -> "Transpose": the same words for every instance
    // of a layer, so that one problem in a repeated layer is one diagnostic.
    if (p.kind == NodeKind::Op) {
      if (auto slash = id.rfind('/'); slash != std::string::npos) {
        id = id.substr(slash + 1);
      } else if (auto dot = id.rfind('.'); dot != std::string::npos) {
        id = id.substr(dot + 1);
      }
      return "the output of " + id;
    }
    if (auto dot = id.rfind('.'); dot != std::string::npos) id = id.substr(dot + 1);
    return id;
  }

  void error(const NodeParallel& p, std::string code, const std::string& msg) {
    report(p.shard_file.str(), p.shard_range, Severity::Error, std::move(code),
           "`self." + p.attr + "`: " + msg);
  }

  // The generic checks of OperatorInfo::CheckStrategyByVector and InferRepeatedCalcInfo, then
  // the operator's own rule. Returns false after the first error (one mistake, one diagnostic).
  bool check_node(const Graph& g, Node& n, const std::vector<In>& ins) {
    NodeParallel& p = *n.parallel;
    const Strategy& s = p.in_strategy;
    // Built only for a message (the propagation runs this on every operator it reaches).
    auto strat = [&s] { return strategy_str(s); };
    auto takes = [&ins] {
      std::string out;
      for (size_t i = 0; i < ins.size(); ++i)
        out += (i ? " and " : "") + ins[i].name + " " + dims_str(ins[i].shape);
      return out;
    };
    const std::string op = n.op.str();
    if (s.size() != ins.size()) {
      error(p, "parallel-strategy-count",
            "The strategy is " + strat() + ", strategy size: " + std::to_string(s.size()) +
                " is not equal to inputs size: " + std::to_string(ins.size()) + " (" + op +
                " takes " + takes() + ": one tuple per input)");
      return false;
    }
    for (size_t i = 0; i < ins.size(); ++i) {
      const Shape& shape = ins[i].shape;
      if (!shape.ranked) continue;
      if (s[i].size() != shape.rank()) {
        error(p, "parallel-strategy-rank",
              "The strategy is " + strat() + ", strategy len: " + std::to_string(s[i].size()) +
                  " is not equal to inputs len: " + std::to_string(shape.rank()) + ", index: " +
                  std::to_string(i) + " (" + ins[i].name + " is " + dims_str(shape) + ")");
        return false;
      }
      for (size_t d = 0; d < s[i].size(); ++d) {
        int64_t v = s[i][d];
        auto where = [&] {
          return " (" + ins[i].name + " " + dims_str(shape) + ", dimension " + std::to_string(d) +
                 ")";
        };
        if (v <= 0) {
          std::string msg = "The strategy is " + strat() +
                            ", the value of strategy must be larger than 0, but get " +
                            std::to_string(v);
          msg += where();
          error(p, "parallel-split-value", msg);
          return false;
        }
        if (ctx.device_num > 0 && power_of_two(ctx.device_num) && !power_of_two(v)) {
          std::string msg = "The strategy is " + strat() +
                            ", the value of strategy must be the power of 2, but get " +
                            std::to_string(v);
          msg += where();
          msg += "; device_num " + std::to_string(ctx.device_num) + " is a power of 2";
          error(p, "parallel-split-value", msg);
          return false;
        }
        const Dim& dim = shape.dims[d];
        if (dim.is_known() && dim.value() % v != 0) {
          error(p, "parallel-not-divisible",
                "The strategy is " + strat() + ", shape " + std::to_string(dim.value()) + " (" +
                    ins[i].name + ", dimension " + std::to_string(d) +
                    ") cannot be divisible by strategy value " + std::to_string(v));
          return false;
        }
      }
    }
    const OpDef* def = find_op(n.op.str());
    const ShardRule* rule = def != nullptr ? def->shard_rule() : nullptr;
    // Dimensions that must split alike, as (input, dim) pairs joined in classes.
    std::map<std::pair<size_t, size_t>, std::pair<size_t, size_t>> parent;
    auto find = [&](std::pair<size_t, size_t> x) {
      while (parent.count(x) && parent[x] != x) x = parent[x];
      return x;
    };
    auto join = [&](std::pair<size_t, size_t> a, std::pair<size_t, size_t> b) {
      a = find(a);
      b = find(b);
      if (a != b) parent[b] = a;
    };
    auto split = [&](std::pair<size_t, size_t> x) { return s[x.first][x.second]; };
    auto rank = [&](size_t i) { return ins[i].shape.ranked ? ins[i].shape.rank() : 0; };
    bool ranked = std::all_of(ins.begin(), ins.end(), [](const In& x) { return x.shape.ranked; });
    if (rule != nullptr && ranked) {
      for (const ShardTie& t : rule->ties) {
        if (static_cast<size_t>(t.a.input) >= ins.size() ||
            static_cast<size_t>(t.b.input) >= ins.size())
          continue;
        int da = resolve(t.a, n, rank(t.a.input));
        int db = resolve(t.b, n, rank(t.b.input));
        if (da < 0 || db < 0) continue;
        std::pair<size_t, size_t> a{t.a.input, da};
        std::pair<size_t, size_t> b{t.b.input, db};
        if (split(a) != split(b)) {
          if (rule->matmul_wording) {
            auto flag = [&](std::string_view attr) {
              const AttrValue* v = n.find_attr(attr);
              const bool* bv = v != nullptr ? std::get_if<bool>(v) : nullptr;
              return bv != nullptr && *bv ? "1" : "0";
            };
            error(p, "parallel-split-mismatch",
                  "Invalid strategy for mat_a " + strategy_str(s[0]) + " and mat_b " +
                      strategy_str(s[1]) + ". The transpose_a is: " + flag("transpose_a") +
                      ", and transpose_b is " + flag("transpose_b") +
                      ", the shard num of first input's column is " + std::to_string(split(a)) +
                      ", but the shard num of second input's row is " + std::to_string(split(b)) +
                      " (the contracted dimension: " + ins[0].name + " dimension " +
                      std::to_string(da) + " and " + ins[1].name + " dimension " +
                      std::to_string(db) + " must be split alike)");
          } else {
            error(p, "parallel-split-mismatch",
                  "The strategy is " + strat() + ": " + ins[a.first].name + " dimension " +
                      std::to_string(da) + " is split " + std::to_string(split(a)) + " but " +
                      ins[b.first].name + " dimension " + std::to_string(db) + " is split " +
                      std::to_string(split(b)) + "; " + n.op.str() + " needs them split alike");
          }
          return false;
        }
        join(a, b);
      }
      // Broadcast dimensions: those of more than one element split alike.
      for (const auto& group : broadcast_groups(*rule, ins)) {
        const std::pair<size_t, size_t> first = group.front();
        for (size_t j = 1; j < group.size(); ++j) {
          const std::pair<size_t, size_t> here = group[j];
          if (split(first) != split(here)) {
            error(p, "parallel-split-mismatch",
                  "The strategy is " + strat() + ": " + ins[first.first].name + " dimension " +
                      std::to_string(first.second) + " is split " + std::to_string(split(first)) +
                      " but " + ins[here.first].name + " dimension " + std::to_string(here.second) +
                      " is split " + std::to_string(split(here)) + "; broadcast dimensions of " +
                      n.op.str() + " must be split alike");
            return false;
          }
          join(first, here);
        }
      }
      if (!ins.empty() && rank(0) > 0) {
        for (auto [axis, d] : unsplit_dims(*rule, n, rank(0))) {
          if (s[0][d] != 1 && rule->unsplit_from) {  // LayerNormInfo::CheckStrategy's words
            error(p, "parallel-split-mismatch",
                  "The dimensions starting form " + std::string(rule->unsplit_axis) +
                      " cannot be split, the " + std::string(rule->unsplit_axis) + " is " +
                      std::to_string(axis < 0 ? axis + static_cast<int64_t>(rank(0)) : axis) +
                      ", but the strategy of first input is " + strategy_str(s[0]) + " (" +
                      n.op.str() + " over " + std::string(rule->unsplit_axis) + "=" +
                      std::to_string(axis) + " of " + ins[0].name + " " + dims_str(ins[0].shape) +
                      " needs dimension " + std::to_string(d) + " whole on one device)");
            return false;
          }
          if (s[0][d] != 1) {
            error(p, "parallel-split-mismatch",
                  "The strategy is " + strat() + ": the strategy corresponding to axis dimension " +
                      std::to_string(d) + " is not 1 (" + n.op.str() + " over " +
                      std::string(rule->unsplit_axis) + "=" + std::to_string(axis) + " of " +
                      ins[0].name + " " + dims_str(ins[0].shape) +
                      " needs the whole axis on one device)");
            return false;
          }
        }
      }
    }
    // The device matrix: one axis per class of dimensions split alike.
    int64_t devices = 1;
    if (rule != nullptr && ranked) {
      for (size_t i = 0; i < ins.size(); ++i) {
        for (size_t d = 0; d < s[i].size(); ++d) {
          if (find({i, d}) == std::make_pair(i, d)) devices *= s[i][d];
        }
      }
    } else if (!s.empty()) {
      for (const auto& one : s) {
        int64_t prod = 1;
        for (int64_t v : one) prod *= v;
        devices = std::max(devices, prod);
      }
    }
    p.device_matrix = devices;
    if (int64_t stage = ctx.stage_devices();
        stage > 0 && (devices > stage || stage % devices != 0)) {
      error(p, "parallel-devices",
            "The strategy is " + strat() + ", it requires " + std::to_string(devices) +
                " devices, but the device number of this stage is " + std::to_string(stage) +
                ", it can not be divisible by " + std::to_string(devices) + " (device_num " +
                std::to_string(ctx.device_num) +
                (ctx.pipeline_stages > 1
                     ? " over " + std::to_string(ctx.pipeline_stages) + " pipeline stages"
                     : std::string()) +
                ")");
      return false;
    }
    // MatMul's out_strategy (MatMul::CheckOutputStrategy): 2-D, the first entry in_a or
    // in_a * in_k (a ReduceScatter), the second in_b's column split.
    if (p.out_strategy && rule != nullptr && rule->reduce_scatter_out && ranked && s.size() == 2 &&
        s[0].size() == 2 && s[1].size() == 2) {
      const Strategy& o = *p.out_strategy;
      int64_t a = s[0][static_cast<size_t>(resolve({0, -2, "transpose_a"}, n, 2))];
      int64_t k = s[0][static_cast<size_t>(resolve({0, -1, "transpose_a"}, n, 2))];
      int64_t b = s[1][static_cast<size_t>(resolve({1, -1, "transpose_b"}, n, 2))];
      if (o.size() != 1 || o[0].size() != 2) {
        error(p, "parallel-split-mismatch",
              "The output strategy is " + strategy_str(o) +
                  ": MatMul's out_strategy is one 2-D tuple");
        return false;
      }
      if (o[0][0] != a && o[0][0] != a * k) {
        error(p, "parallel-split-mismatch",
              "The input strategy is " + strat() +
                  ", the first dimension of output strategy must be " + std::to_string(a) + " or " +
                  std::to_string(a * k) + ", but got " + std::to_string(o[0][0]));
        return false;
      }
      if (o[0][1] != b) {
        error(p, "parallel-split-mismatch",
              "The input strategy is " + strat() +
                  ", the second dimension of output strategy must be " + std::to_string(b) +
                  ", but got " + std::to_string(o[0][1]));
        return false;
      }
    }
    (void)g;
    return true;
  }

  // One device's slice of `shape` split by `split` (global / split; unknown where it does not
  // divide). A strategy using fewer devices than the stage has is repeated, which repeats the
  // same slice (docs/parallel.md §5).
  static Shape slice(const Shape& shape, const std::vector<int64_t>& split) {
    Shape out = shape;
    if (!shape.ranked || split.size() != shape.rank()) return Shape::unranked();
    for (size_t d = 0; d < split.size(); ++d) {
      const Dim& dim = shape.dims[d];
      out.dims[d] = dim.is_known() && split[d] > 0 && dim.value() % split[d] == 0
                        ? Dim::known(dim.value() / split[d])
                        : Dim::unknown();
    }
    return out;
  }

  // Each input's slice, as far as the strategy gives one (also for a strategy the checks reject).
  static void slices(Node& n, const std::vector<In>& ins) {
    NodeParallel& p = *n.parallel;
    p.per_device_inputs.clear();
    for (size_t i = 0; i < ins.size() && i < p.in_strategy.size(); ++i)
      p.per_device_inputs.push_back(slice(ins[i].shape, p.in_strategy[i]));
  }

  // The output's split and slice and the forward communication of a checked node.
  static void derive(Node& n, const std::vector<In>& ins) {
    NodeParallel& p = *n.parallel;
    const Strategy& s = p.in_strategy;
    const OpDef* def = find_op(n.op.str());
    const ShardRule* rule = def != nullptr ? def->shard_rule() : nullptr;
    std::vector<int64_t> out;
    size_t out_rank =
        !n.outputs.empty() && n.outputs[0].shape.ranked ? n.outputs[0].shape.rank() : 0;
    if (rule != nullptr && out_rank > 0) {
      switch (rule->output) {
        case ShardOutput::Input0:
          if (!s.empty() && s[0].size() == out_rank) out = s[0];
          break;
        case ShardOutput::Permute: {
          const AttrValue* a = n.find_attr("perm");
          const auto* perm = a != nullptr ? std::get_if<std::vector<int64_t>>(a) : nullptr;
          if (s.empty() || s[0].size() != out_rank || perm == nullptr || perm->size() != out_rank)
            break;
          out.assign(out_rank, 1);
          const auto r64 = static_cast<int64_t>(out_rank);
          for (size_t k = 0; k < out_rank; ++k) {
            const int64_t from = (*perm)[k] < 0 ? (*perm)[k] + r64 : (*perm)[k];
            if (from < 0 || from >= r64) {
              out.clear();
              break;
            }
            out[k] = s[0][static_cast<size_t>(from)];
          }
          break;
        }
        case ShardOutput::Reshape:
          if (!s.empty() && !ins.empty())
            out = reshape_split(ins[0].shape, s[0], n.outputs[0].shape);
          break;
        case ShardOutput::Broadcast: {
          out.assign(out_rank, 1);
          for (size_t k = 0; k < out_rank; ++k) {
            for (size_t i = 0; i < ins.size() && i < s.size(); ++i) {
              if (k < s[i].size())
                out[out_rank - 1 - k] = std::max(out[out_rank - 1 - k], s[i][s[i].size() - 1 - k]);
            }
          }
          break;
        }
        case ShardOutput::Dims: {
          if (s.empty()) break;
          size_t tail = rule->output_dims.size();
          if (out_rank < tail) break;
          out.assign(out_rank, 1);
          for (size_t k = 0; k < out_rank - tail; ++k) {  // batch dimensions, from the right
            size_t from_end = tail + k;
            if (from_end < s[0].size())
              out[out_rank - 1 - from_end] = s[0][s[0].size() - 1 - from_end];
          }
          for (size_t k = 0; k < tail; ++k) {
            const ShardDim& d = rule->output_dims[k];
            if (static_cast<size_t>(d.input) >= s.size()) continue;
            int r = resolve(d, n, s[static_cast<size_t>(d.input)].size());
            if (r >= 0)
              out[out_rank - tail + k] = s[static_cast<size_t>(d.input)][static_cast<size_t>(r)];
          }
          break;
        }
      }
      for (const ShardTie& t : rule->ties) {
        if (!t.partial || static_cast<size_t>(t.a.input) >= s.size()) continue;
        int d = resolve(t.a, n, s[static_cast<size_t>(t.a.input)].size());
        if (d < 0) continue;
        int64_t k = s[static_cast<size_t>(t.a.input)][static_cast<size_t>(d)];
        if (k <= 1) continue;
        bool scatter = rule->reduce_scatter_out && p.out_strategy && p.out_strategy->size() == 1 &&
                       !out.empty() && (*p.out_strategy)[0].size() == out.size() &&
                       (*p.out_strategy)[0][0] == out[0] * k;
        p.comms.push_back(ParallelComm{
            scatter ? "ReduceScatter" : "AllReduce", k, -1,
            "partial sums of the contracted dimension (split " + std::to_string(k) + ")"});
      }
    }
    if (p.out_strategy && p.out_strategy->size() == 1 && (*p.out_strategy)[0].size() == out_rank)
      out = (*p.out_strategy)[0];
    p.output_split = out;
    p.per_device_outputs.clear();
    if (!out.empty() && !n.outputs.empty())
      p.per_device_outputs.push_back(slice(n.outputs[0].shape, out));
  }

  // R1: an input whose producer's split differs from the split this operator asks for. `warn`:
  // the strategy is the user's (a propagated one only records the communication).
  void redistribution(const Graph& g, Node& n, const std::vector<In>& ins, bool warn) {
    NodeParallel& p = *n.parallel;
    for (size_t i = 0; i < n.inputs.size() && i < p.in_strategy.size(); ++i) {
      const ValueRef r = n.inputs[i];
      if (r.node >= g.nodes.size() || r.output != 0) continue;
      const Node& prod = g.nodes[r.node];
      if (!prod.parallel || prod.parallel->output_split.empty()) continue;
      const std::vector<int64_t>& from = prod.parallel->output_split;
      const std::vector<int64_t>& to = p.in_strategy[i];
      if (from.size() != to.size() || from == to) continue;
      int64_t gather = 1;
      std::string gathered;
      std::string sliced;
      for (size_t d = 0; d < from.size(); ++d) {
        std::string what = "dimension " + std::to_string(d) + ": split " + std::to_string(from[d]) +
                           " -> " + std::to_string(to[d]);
        if (from[d] > to[d] && to[d] > 0 && from[d] % to[d] == 0) {
          gather *= from[d] / to[d];
          gathered += (gathered.empty() ? "" : ", ") + what;
        } else if (from[d] < to[d]) {
          sliced += (sliced.empty() ? "" : ", ") + what;
        }
      }
      if (gather > 1)
        p.comms.push_back(ParallelComm{"AllGather", gather, static_cast<int>(i), gathered});
      if (!sliced.empty())
        p.comms.push_back(ParallelComm{"StridedSlice", 1, static_cast<int>(i), sliced});
      if (gather <= 1 || !warn) continue;  // a local slice moves no data between devices
      std::string msg = "input " + std::to_string(i) + " (" + ins[i].name + ", " +
                        dims_str(ins[i].shape) + ") is split " + strategy_str(from) + " by " +
                        shard_owner(prod) + ", but `self." + p.attr + "` asks for " +
                        strategy_str(to) +
                        ": MindSpore inserts a tensor redistribution between them: an AllGather "
                        "over " +
                        std::to_string(gather) + " devices (" + gathered + ")";
      if (!sliced.empty()) msg += ", then a local StridedSlice (" + sliced + ")";
      report(p.shard_file.str(), p.shard_range, Severity::Warning, "parallel-redistribution",
             "`self." + p.attr + "`: " + msg);
    }
  }

  void check_graph(Graph& g) {
    if (ctx.sharding() && ctx.mode_known) {
      for (Node& n : g.nodes) {
        if (!n.parallel || n.parallel->shard_range == SourceRange{} ||
            n.parallel->in_strategy.empty())
          continue;
        std::vector<In> ins;
        for (const ValueRef& r : n.inputs) {
          Shape shape = r.node < g.nodes.size() && r.output < g.nodes[r.node].outputs.size()
                            ? g.nodes[r.node].outputs[r.output].shape
                            : Shape::unranked();
          ins.push_back(In{input_name(g, r), shape});
        }
        slices(n, ins);
        if (!check_node(g, n, ins)) continue;
        derive(n, ins);
        redistribution(g, n, ins, true);
      }
      propagate(g);
    }
    check_stages(g);
  }

  // Sharding propagation (docs/parallel.md §13). MindSpore runs it under auto_parallel with
  // search_mode "sharding_propagation", and switches a semi_auto_parallel program that uses
  // `Cell.shard` / `mindspore.shard` to it (the Shard pass, shard.cc; the reshard and shard
  // documents): operators without a strategy take one from the layouts of their neighbours, the
  // configured operators' outputs, the sharded calls' inputs and parameter_plan's Parameters.
  // MindSpore chooses among candidate strategies by the redistribution they cost; this follows
  // the layouts forward in graph order, the choice that costs none: an operator takes its
  // inputs' layouts (the first input that has one wins where two disagree, the other is
  // redistributed), and the dimensions its rule ties or broadcasts take the same split. It stops
  // at operators without a sharding rule (StridedSlice, Gather, Conv2D ...) and where no output
  // layout follows (a reshape the split cannot pass): those keep what the cost model gives them
  // (docs/parallel.md §13, "Not modelled").
  [[nodiscard]] bool propagates(const Graph& g) const {
    if (!ctx.sharding() || !ctx.mode_known || ctx.stage_devices() <= 1) return false;
    return !g.shard_seeds.empty() ||
           (ctx.parallel_mode == "auto_parallel" && ctx.search_mode == "sharding_propagation");
  }

  void propagate(Graph& g) {
    if (!propagates(g)) return;
    struct Origin {
      std::string what;
      IStr file;
      SourceRange range;
      ShardSeed* seed = nullptr;
    };
    struct Layout {
      std::vector<int64_t> split;
      size_t origin = 0;
    };
    std::vector<Origin> origins;
    std::map<std::pair<uint32_t, uint32_t>, Layout> layout;  // (node, output) -> its split
    std::map<std::string, Layout> plans;                     // Parameter -> parameter_plan's
    for (ShardSeed& seed : g.shard_seeds) {
      origins.push_back(Origin{seed.what, seed.file, seed.range, &seed});
      for (const auto& [ref, split] : seed.inputs)
        layout.try_emplace({ref.node, ref.output}, Layout{split, origins.size() - 1});
      for (const auto& [name, split] : seed.params)
        plans.try_emplace(name, Layout{split, origins.size() - 1});
    }
    const ParallelReport silent = [](const std::string& /*file*/, SourceRange /*range*/,
                                     Severity /*sev*/, const std::string& /*code*/,
                                     const std::string& /*message*/) {};
    Checker quiet{ctx, silent};
    for (uint32_t i = 0; i < g.nodes.size(); ++i) {
      Node& n = g.nodes[i];
      if (n.kind == NodeKind::Parameter && !n.params.empty() && !n.outputs.empty()) {
        auto it = plans.find(n.params.front());
        const Shape& shape = n.outputs[0].shape;
        if (it != plans.end() && shape.ranked && shape.rank() == it->second.split.size())
          layout.try_emplace({i, 0}, it->second);
        continue;
      }
      if (n.kind != NodeKind::Op || n.inputs.empty()) continue;
      if (n.parallel && !n.parallel->in_strategy.empty()) {  // the user's own strategy
        if (!n.parallel->output_split.empty()) {
          origins.push_back(Origin{"self." + n.parallel->attr + ".shard", n.parallel->shard_file,
                                   n.parallel->shard_range, nullptr});
          layout.try_emplace({i, 0}, Layout{n.parallel->output_split, origins.size() - 1});
        }
        continue;
      }
      const OpDef* def = find_op(n.op.str());
      const ShardRule* rule = def != nullptr ? def->shard_rule() : nullptr;
      if (rule == nullptr) continue;
      std::vector<In> ins;
      std::vector<bool> known;
      const Layout* lead = nullptr;
      Strategy s;
      bool ranked = true;
      for (const ValueRef& r : n.inputs) {
        Shape shape = r.node < g.nodes.size() && r.output < g.nodes[r.node].outputs.size()
                          ? g.nodes[r.node].outputs[r.output].shape
                          : Shape::unranked();
        ranked = ranked && shape.ranked;
        auto it = layout.find({r.node, r.output});
        const bool has =
            it != layout.end() && shape.ranked && it->second.split.size() == shape.rank();
        if (has && lead == nullptr) lead = &it->second;
        known.push_back(has);
        s.push_back(has ? it->second.split
                        : std::vector<int64_t>(shape.ranked ? shape.rank() : 0, 1));
        ins.push_back(In{std::string(), std::move(shape)});  // names serve only messages
      }
      if (!ranked || lead == nullptr) continue;
      const size_t origin = lead->origin;
      // Two dimensions that must split alike: an input without a layout takes the other's split;
      // where both have one, the earlier input's wins and the later is redistributed.
      auto align = [&](size_t a, size_t da, size_t b, size_t db) {
        if (a > b) {
          std::swap(a, b);
          std::swap(da, db);
        }
        if (s[a][da] == s[b][db]) return;
        if (!known[a] && known[b]) {
          s[a][da] = s[b][db];
        } else {
          s[b][db] = s[a][da];
        }
      };
      auto rank = [&](size_t k) { return ins[k].shape.rank(); };
      // An axis the operator needs whole is gathered (before the ties: they then follow it).
      for (auto [axis, d] : unsplit_dims(*rule, n, rank(0))) s[0][d] = 1;
      for (const ShardTie& t : rule->ties) {
        const auto a = static_cast<size_t>(static_cast<uint8_t>(t.a.input));  // < 0: skipped
        const auto b = static_cast<size_t>(static_cast<uint8_t>(t.b.input));
        if (a >= ins.size() || b >= ins.size()) continue;
        const int da = resolve(t.a, n, rank(a));
        const int db = resolve(t.b, n, rank(b));
        if (da >= 0 && db >= 0) align(a, static_cast<size_t>(da), b, static_cast<size_t>(db));
      }
      std::vector<std::pair<size_t, size_t>> ones;
      for (const auto& group : broadcast_groups(*rule, ins, &ones)) {
        for (size_t j = 1; j < group.size(); ++j)
          align(group[0].first, group[0].second, group[j].first, group[j].second);
      }
      for (auto [k, d] : ones) s[k][d] = 1;  // a dimension of one element is never split
      const bool fresh = !n.parallel;
      if (fresh) n.parallel = std::make_shared<NodeParallel>();
      NodeParallel& p = *n.parallel;
      const NodeParallel before = p;  // its stage facts, if it had any
      p.in_strategy = s;
      p.out_strategy.reset();
      slices(n, ins);
      // Not taken after all: the node is as it was.
      auto undo = [&] {
        if (fresh) {
          n.parallel.reset();
        } else {
          p = before;
        }
      };
      if (!quiet.check_node(g, n, ins)) {  // a strategy MindSpore would not choose: none here
        undo();
        continue;
      }
      const Origin& o = origins[origin];
      p.propagated_from = o.what;
      p.from_file = o.file;
      p.from_range = o.range;
      derive(n, ins);
      if (p.output_split.empty() && !n.outputs.empty()) {  // no layout passes: it stops here
        undo();
        continue;
      }
      redistribution(g, n, ins, false);
      if (o.seed != nullptr) ++o.seed->propagated;
      // A sharded call's own layout for the value (its seed) stays: MindSpore redistributes
      // into it at the call.
      if (!p.output_split.empty()) layout.try_emplace({i, 0}, Layout{p.output_split, origin});
    }
  }

  // P3 / P4: the stage of every node (its Cell's, else its producer's, as
  // PipelineTransformer::Coloring propagates it), decreasing stages, layers without one that
  // sit before a later stage.
  void check_stages(Graph& g) {
    if (g.stages.empty()) return;
    const size_t count = g.nodes.size();
    std::vector<const Node*> producer(count, nullptr);
    for (size_t j = 0; j < count; ++j) {
      Node& n = g.nodes[j];
      if (!n.parallel) continue;
      int64_t from = -1;
      for (const ValueRef& r : n.inputs) {
        if (r.node >= count) continue;
        const Node& in = g.nodes[r.node];
        if (in.parallel && in.parallel->stage > from) {
          from = in.parallel->stage;
          producer[j] = &in;
        }
      }
      NodeParallel& p = *n.parallel;
      if (p.stage < 0) {
        p.stage = from;
        p.stage_inherited = from >= 0;
        continue;
      }
      const Node* prod = producer[j];
      if (prod != nullptr && from > p.stage) {
        auto it = std::find_if(g.stages.begin(), g.stages.end(),
                               [&](const CellStage& c) { return c.cell == p.cell; });
        if (it != g.stages.end()) {
          report(it->file.str(), it->range, Severity::Error, "parallel-stage-order",
                 "The stage setting is incorrect. PreNode's stage:" + std::to_string(from) +
                     " is larger than NextNode's stage:" + std::to_string(p.stage) + " (`" +
                     prod->parallel->cell + "` in stage " + std::to_string(from) + " feeds `" +
                     p.cell + "` in stage " + std::to_string(p.stage) +
                     "; stages must not decrease along the data flow)");
        }
      }
    }
    // The latest stage each node's output reaches through nodes without a stage of their own.
    std::vector<int64_t> later(count, -1);
    for (size_t j = count; j-- > 0;) {
      const Node& n = g.nodes[j];
      int64_t d = n.parallel && !n.parallel->stage_inherited && n.parallel->stage >= 0
                      ? n.parallel->stage
                      : later[j];
      for (const ValueRef& r : n.inputs) {
        if (r.node < count) later[r.node] = std::max(later[r.node], d);
      }
    }
    std::set<std::string> warned;
    for (size_t j = 0; j < count; ++j) {
      const Node& n = g.nodes[j];
      if (!n.parallel || !n.parallel->stage_inherited || producer[j] == nullptr) continue;
      const NodeParallel& p = *n.parallel;
      if (later[j] <= p.stage || p.cell.empty() || !warned.insert(p.cell).second) continue;
      report(p.cell_file.str(), p.cell_site, Severity::Warning, "parallel-stage-missing",
             "`" + p.cell + "` has no pipeline_stage in a pipeline of " +
                 std::to_string(ctx.pipeline_stages) + " stages: MindSpore runs it in stage " +
                 std::to_string(p.stage) + ", the stage of `" + producer[j]->parallel->cell +
                 "` that feeds it, although its output goes on to stage " +
                 std::to_string(later[j]) + "; set `" + p.cell + ".pipeline_stage`");
    }
    check_stage_parameters(g);
  }

  // P5: in pipeline training (nn.PipelineCell) every stage holds at least one parameter to
  // train. Only when every node that reads a parameter has a known stage: a node left without
  // one would be placed by MindSpore, not by this check.
  void check_stage_parameters(const Graph& g) {
    const int64_t p = ctx.pipeline_stages;
    if (p <= 1 || ctx.micro_size <= 0 || !ctx.sharding()) return;
    std::vector<size_t> params(static_cast<size_t>(p), 0);
    for (const Node& n : g.nodes) {
      const bool reads = n.kind == NodeKind::Parameter || !n.params.empty();
      if (!reads) continue;
      if (!n.parallel || n.parallel->stage < 0) return;
      if (n.parallel->stage < p) ++params[static_cast<size_t>(n.parallel->stage)];
    }
    std::string empty;
    for (int64_t s = 0; s < p; ++s) {
      if (params[static_cast<size_t>(s)] == 0)
        empty += (empty.empty() ? "" : ", ") + std::to_string(s);
    }
    if (empty.empty()) return;
    std::string used;
    for (const CellStage& c : g.stages)
      used += (used.empty() ? "`" : ", `") + c.cell + "` " + std::to_string(c.stage);
    report(ctx.file.str(), ctx.range, Severity::Error, "parallel-stage-parameters",
           "For Pipeline Parallel, each stage must have at least one parameter that needs to be "
           "trained, but stage: " +
               empty + " has none (pipeline_stages=" + std::to_string(p) +
               "; the stages set: " + used + ")");
  }
};

}  // namespace

std::string shard_owner(const Node& n) {
  if (!n.parallel) return "`" + n.id + "`";
  const NodeParallel& p = *n.parallel;
  if (p.propagated_from.empty()) return "`self." + p.attr + "`";
  return "`" + n.id + "` (" + n.op.str() + ", by sharding propagation from `" + p.propagated_from +
         "`)";
}

std::string describe_parallel(const Graph& g, const Node& n) {
  if (!n.parallel || n.parallel->in_strategy.empty()) return {};
  const NodeParallel& p = *n.parallel;
  std::string out =
      p.propagated_from.empty()
          ? "self." + p.attr + ".shard(" + strategy_str(p.in_strategy) +
                (p.out_strategy ? ", " + strategy_str(*p.out_strategy) : std::string()) + ")"
          : n.op.str() + " strategy " + strategy_str(p.in_strategy) +
                " by sharding propagation from `" + p.propagated_from + "` (line " +
                std::to_string(p.from_range.start.line + 1) + ")";
  if (p.device_matrix > 0) out += " uses " + std::to_string(p.device_matrix) + " devices";
  if (p.stage >= 0) out += ", pipeline stage " + std::to_string(p.stage);
  auto line = [&](const std::string& name, const Shape& global, const Shape& local,
                  const std::vector<int64_t>& split) {
    out += "\n" + name + ": global " + dims_str(global);
    if (local.ranked)
      out += ", per device " + dims_str(local) + " (split " + strategy_str(split) + ")";
  };
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const ValueRef r = n.inputs[i];
    if (r.node >= g.nodes.size() || r.output >= g.nodes[r.node].outputs.size()) continue;
    Shape local = i < p.per_device_inputs.size() ? p.per_device_inputs[i] : Shape::unranked();
    line(Checker::input_name(g, r), g.nodes[r.node].outputs[r.output].shape, local,
         i < p.in_strategy.size() ? p.in_strategy[i] : std::vector<int64_t>{});
  }
  if (!n.outputs.empty()) {
    line("output", n.outputs[0].shape,
         p.per_device_outputs.empty() ? Shape::unranked() : p.per_device_outputs[0],
         p.output_split);
  }
  for (const ParallelComm& c : p.comms) {
    out += "\n" + c.kind + (c.group > 1 ? " over " + std::to_string(c.group) + " devices" : "") +
           (c.input >= 0 ? " on input " + std::to_string(c.input) : std::string()) + ": " + c.why;
  }
  return out;
}

std::string describe_shard_seed(const Graph& g, const ShardSeed& s) {
  std::string out = s.what + ": ";
  out += s.propagated == 0
             ? "no operator takes its strategy from it"
             : std::to_string(s.propagated) + " operator" + (s.propagated == 1 ? "" : "s") +
                   " take their strategies from it by sharding propagation";
  for (const auto& [ref, split] : s.inputs) {
    if (ref.node >= g.nodes.size() || ref.output >= g.nodes[ref.node].outputs.size()) continue;
    const Shape& shape = g.nodes[ref.node].outputs[ref.output].shape;
    out += "\n" + Checker::input_name(g, ref) + ": global " + dims_str(shape) + ", per device " +
           dims_str(Checker::slice(shape, split)) + " (split " + strategy_str(split) + ")";
  }
  for (const auto& [name, split] : s.params) out += "\n" + name + ": split " + strategy_str(split);
  return out;
}

void check_parallel_context(const ParallelContext& ctx, const ParallelReport& report) {
  // P1: device_num divisible by pipeline_stages (ParallelInit, C++).
  if (ctx.device_num > 0 && ctx.pipeline_stages > 1 && ctx.device_num % ctx.pipeline_stages != 0) {
    report(ctx.file.str(), ctx.range, Severity::Error, "parallel-devices",
           "The parameter 'device_num' must be divided by 'split_stage_num', but got the "
           "device_num : " +
               std::to_string(ctx.device_num) +
               " and the split_stage_num : " + std::to_string(ctx.pipeline_stages) + " (" +
               std::to_string(ctx.device_num) + " devices cannot form " +
               std::to_string(ctx.pipeline_stages) + " equal pipeline stages)");
  }
  // P1b: a pipeline under auto_parallel needs a search mode that can place stages
  // (step_parallel_utils.cc ParallelInit); dynamic_programming cannot.
  if (ctx.pipeline_stages > 1 && ctx.parallel_mode == "auto_parallel" &&
      ctx.search_mode == "dynamic_programming") {
    report(ctx.file.str(), ctx.range, Severity::Error, "parallel-context",
           "To enable the pipeline parallel, please set the parallel mode to semi_auto_parallel or "
           "auto_parallel with sharding_propagation or recursive_programming (pipeline_stages=" +
               std::to_string(ctx.pipeline_stages) + " with search_mode 'dynamic_programming')");
  }
}

void check_parallel_graph(Graph& g, const ParallelContext& ctx, const ParallelReport& report) {
  Checker c{ctx, report};
  c.check_graph(g);
}

}  // namespace graphcore
