// build_backward (graphcore/autodiff.h): reverse-mode differentiation of a compiled graph. The
// forward nodes on a path from a differentiated parameter or input to the loss are visited in
// reverse order; each one's OpDef::grad emits its backward nodes through GradBuilderImpl, which
// sums the contributions to one value with Add nodes.
#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <stdexcept>

#include "graphcore/autodiff.h"
#include "graphcore/opdef.h"

namespace graphcore::autodiff {

namespace {

// A rule refused (GradBuilder::unsupported) or misbehaved; build_backward turns it into
// GradResult::error located at the forward node.
struct RuleError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

bool fully_known(const TensorType& t) { return t.shape.ranked && t.shape.fully_known(); }

std::string location(const Node& n) {
  std::string file = n.file;
  const size_t slash = file.find_last_of('/');
  if (slash != std::string::npos) file = file.substr(slash + 1);
  if (file.empty()) return "(no source)";
  return file + ":" + std::to_string(n.range.start.line + 1);
}

std::string describe(const Node& n) {
  std::string s = "node '" + n.id + "' (" + std::string(n.op);
  if (!n.api.empty()) s += ", " + std::string(n.api);
  return s + ") at " + location(n);
}

class GradBuilderImpl final : public GradBuilder {
 public:
  // `forward` is the caller's graph: node() and the types of forward values are read from it, so
  // the references rules hold stay valid while emit() grows the result graph.
  GradBuilderImpl(GradGraph& out, const Graph& forward,
                  const std::set<std::string, std::less<>>& diff_params,
                  const std::vector<std::vector<bool>>& active)
      : g_(out), fwd_(forward), diff_params_(diff_params), active_(active) {
    for (const ParamInfo& p : g_.report.params) param_info_[p.name] = &p;
    grads_.resize(g_.report.graph.nodes.size());
    for (size_t i = 0; i < grads_.size(); ++i)
      grads_[i].resize(g_.report.graph.nodes[i].outputs.size());
  }

  void set_current(uint32_t node) { cur_ = node; }

  [[nodiscard]] const Node& node() const override { return fwd_.nodes[cur_]; }
  [[nodiscard]] uint32_t node_index() const override { return cur_; }
  [[nodiscard]] const TensorType& type_of(ValueRef v) const override {
    const std::vector<TensorType>* outs = nullptr;
    if (v.node < fwd_.nodes.size()) {
      outs = &fwd_.nodes[v.node].outputs;
    } else if (v.node - fwd_.nodes.size() < backward_types_.size()) {
      outs = &backward_types_[v.node - fwd_.nodes.size()];
    }
    if (outs == nullptr || v.output >= outs->size())
      throw RuleError("a gradient rule asked for the type of a value that does not exist");
    return (*outs)[v.output];
  }
  [[nodiscard]] std::optional<TensorType> param_type(std::string_view name) const override {
    auto it = param_info_.find(name);
    if (it == param_info_.end()) return std::nullopt;
    return TensorType{it->second->shape, it->second->dtype};
  }
  [[nodiscard]] bool param_trainable(std::string_view name) const override {
    auto it = param_info_.find(name);
    return it != param_info_.end() && it->second->trainable;
  }
  [[nodiscard]] std::optional<ValueRef> dout(size_t i) const override {
    if (cur_ >= grads_.size() || i >= grads_[cur_].size()) return std::nullopt;
    return grads_[cur_][i];
  }
  [[nodiscard]] bool needs_input_grad(size_t i) const override {
    if (i >= node().inputs.size()) return false;
    const ValueRef r = node().inputs[i];
    return active_[r.node][r.output];
  }
  [[nodiscard]] bool needs_param_grad(std::string_view name) const override {
    return diff_params_.contains(name);
  }

  uint32_t emit(std::string_view op, std::vector<ValueRef> inputs, std::vector<TensorType> outputs,
                std::vector<Attr> attrs, std::vector<std::string> params,
                bool layer_attrs) override {
    const OpDef* def = find_op(op);
    if (def == nullptr || def->kernel == nullptr) {
      throw RuleError("the gradient rule emits operator '" + std::string(op) +
                      "', which has no CPU kernel");
    }
    auto& nodes = g_.report.graph.nodes;
    for (const ValueRef& r : inputs) {
      if (r.node >= nodes.size() || r.output >= nodes[r.node].outputs.size()) {
        throw RuleError("the gradient rule of " + std::string(node().op) +
                        " reads a value that does not exist");
      }
    }
    const Node& fwd = fwd_.nodes[cur_];
    Node n;
    std::string base = fwd.id + "/grad/" + std::string(op);
    const int count = id_counts_[base]++;
    n.id = count == 0 ? base : base + "#" + std::to_string(count);
    n.kind = NodeKind::Op;
    n.op = op;
    n.scope = fwd.scope;
    n.file = fwd.file;
    n.range = fwd.range;
    n.inputs = std::move(inputs);
    n.outputs = std::move(outputs);
    n.attrs = std::move(attrs);
    n.params = std::move(params);
    if (layer_attrs) n.layer_attrs = fwd.layer_attrs;
    backward_types_.push_back(n.outputs);
    nodes.push_back(std::move(n));
    g_.origin.push_back(cur_);
    grads_.emplace_back(nodes.back().outputs.size());
    return static_cast<uint32_t>(nodes.size() - 1);
  }

  void grad_input(size_t i, ValueRef g) override {
    if (!needs_input_grad(i)) return;
    const ValueRef r = node().inputs[i];
    check_same_shape(type_of(g), type_of(r), "input " + std::to_string(i));
    accumulate(grads_[r.node][r.output], g);
  }
  void grad_param(std::string_view name, ValueRef g) override {
    if (!needs_param_grad(name)) return;
    auto t = param_type(name);
    if (!t) {
      throw RuleError("the gradient rule names parameter '" + std::string(name) +
                      "', which the report does not list");
    }
    check_same_shape(type_of(g), *t, "parameter '" + std::string(name) + "'");
    auto [it, fresh] = param_grads_.try_emplace(std::string(name), g);
    if (!fresh) {
      std::optional<ValueRef> acc = it->second;
      accumulate(acc, g);
      it->second = *acc;
    }
  }
  void state_update(std::string_view name, ValueRef v) override {
    for (const auto& [n, _] : g_.state_updates) {
      if (n == name) return;  // a Cell applied twice updates its statistics once per step here
    }
    g_.state_updates.emplace_back(std::string(name), v);
  }
  void unsupported(std::string why) override { throw RuleError(why); }

  // The seed: d(loss)/d(loss) = 1, emitted at the loss node.
  void seed(ValueRef loss) {
    set_current(loss.node);
    grads_[loss.node][loss.output] = emit1("OnesLike", {loss}, type_of(loss));
  }
  [[nodiscard]] std::optional<ValueRef> grad_of(ValueRef v) const {
    return grads_[v.node][v.output];
  }
  [[nodiscard]] const std::map<std::string, ValueRef, std::less<>>& param_grads() const {
    return param_grads_;
  }

 private:
  static void check_same_shape(const TensorType& got, const TensorType& want,
                               const std::string& what) {
    if (got.shape.str() != want.shape.str()) {
      throw RuleError("the gradient of " + what + " has shape " + got.shape.str() +
                      ", the value has " + want.shape.str());
    }
  }
  void accumulate(std::optional<ValueRef>& slot, ValueRef g) {
    if (!slot) {
      slot = g;
      return;
    }
    slot = emit1("Add", {*slot, g}, type_of(*slot));
  }

  GradGraph& g_;
  const Graph& fwd_;
  // The output types of the backward nodes, stable (a deque) for the references type_of returns.
  std::deque<std::vector<TensorType>> backward_types_;
  const std::set<std::string, std::less<>>& diff_params_;
  const std::vector<std::vector<bool>>& active_;
  std::map<std::string, const ParamInfo*, std::less<>> param_info_;
  std::vector<std::vector<std::optional<ValueRef>>> grads_;
  std::map<std::string, ValueRef, std::less<>> param_grads_;
  std::map<std::string, int> id_counts_;
  uint32_t cur_ = 0;
};

GradResult fail(std::string why, std::optional<uint32_t> node = std::nullopt) {
  GradResult r;
  r.error = std::move(why);
  r.error_node = node;
  return r;
}

}  // namespace

GradResult build_backward(const CellReport& report, const GradOptions& options) {
  const Graph& fg = report.graph;
  if (!report.compiled) return fail("cell '" + report.name + "' was not compiled");
  if (fg.outputs.size() != 1) {
    return fail("cell '" + report.name + "' returns " + std::to_string(fg.outputs.size()) +
                " values; differentiation needs one scalar loss");
  }
  const ValueRef loss = fg.outputs[0];
  if (loss.node >= fg.nodes.size() || loss.output >= fg.nodes[loss.node].outputs.size())
    return fail("cell '" + report.name + "' has a malformed output");
  const Node& loss_node = fg.nodes[loss.node];
  const TensorType& lt = loss_node.outputs[loss.output];
  if (!is_floating(lt.dtype)) {
    return fail("the loss (" + describe(loss_node) + ") has dtype " +
                    std::string(dtype_name(lt.dtype)) + ": only a float loss can be differentiated",
                loss.node);
  }
  if (!fully_known(lt) || lt.shape.num_elements().value() != 1) {
    return fail("the loss (" + describe(loss_node) + ") has shape " + lt.shape.str() +
                    ": it must be a scalar (one element); reduce it, e.g. with ops.mean",
                loss.node);
  }

  // What is differentiated.
  std::set<std::string, std::less<>> diff;
  std::map<std::string, const ParamInfo*, std::less<>> infos;
  for (const ParamInfo& p : report.params) infos[p.name] = &p;
  if (options.params.empty()) {
    for (const ParamInfo& p : report.params)
      if (p.trainable && is_floating(p.dtype)) diff.insert(p.name);
  } else {
    for (const std::string& name : options.params) {
      auto it = infos.find(name);
      if (it == infos.end())
        return fail("parameter '" + name + "' is not a parameter of cell '" + report.name + "'");
      if (!is_floating(it->second->dtype))
        return fail("parameter '" + name + "' is not float: it cannot be differentiated");
      diff.insert(name);
    }
  }

  // Forward: which values depend on something differentiated (float values only: integer and
  // bool paths stop the gradient, as do ZerosLike/OnesLike, whose value ignores the input's).
  const size_t n = fg.nodes.size();
  std::vector<std::vector<bool>> active(n);
  for (size_t i = 0; i < n; ++i) {
    const Node& node = fg.nodes[i];
    bool a = false;
    switch (node.kind) {
      case NodeKind::Input:
        a = options.input_grads;
        break;
      case NodeKind::Parameter:
        a = !node.params.empty() && diff.contains(node.params[0]);
        break;
      case NodeKind::Constant:
        break;
      case NodeKind::Op:
        if (op_has(node.op, kLikeInput)) break;
        for (const ValueRef& r : node.inputs) a = a || (r.node < i && active[r.node][r.output]);
        for (const std::string& p : node.params) a = a || diff.contains(p);
        break;
    }
    active[i].resize(node.outputs.size());
    for (size_t k = 0; k < node.outputs.size(); ++k)
      active[i][k] = a && is_floating(node.outputs[k].dtype);
  }
  // Backward: which active values reach the loss; the nodes producing them are on the path.
  std::vector<std::vector<bool>> needed(n);
  for (size_t i = 0; i < n; ++i) needed[i].assign(fg.nodes[i].outputs.size(), false);
  std::vector<bool> on_path(n, false);
  if (active[loss.node][loss.output]) needed[loss.node][loss.output] = true;
  for (size_t i = n; i-- > 0;) {
    const Node& node = fg.nodes[i];
    bool any = false;
    for (size_t k = 0; k < node.outputs.size(); ++k) any = any || needed[i][k];
    if (!any) continue;
    on_path[i] = true;
    for (const ValueRef& r : node.inputs)
      if (active[r.node][r.output]) needed[r.node][r.output] = true;
  }

  GradGraph gg;
  gg.report = report;
  gg.forward_count = n;
  GradBuilderImpl builder(gg, fg, diff, active);
  builder.seed(loss);

  for (size_t i = n; i-- > 0;) {
    const Node& node = fg.nodes[i];
    if (node.kind != NodeKind::Op) continue;
    // A node reading state (non-trainable parameters: BatchNorm's moving statistics) has its
    // rule called off the path too, so that the state it updates is recorded.
    bool reads_state = false;
    for (const std::string& p : node.params) {
      auto it = infos.find(p);
      reads_state = reads_state || (it != infos.end() && !it->second->trainable);
    }
    if (!on_path[i] && !reads_state) continue;
    const OpDef* def = find_op(node.op);
    if (def == nullptr || def->grad == nullptr) {
      if (!on_path[i]) continue;
      return fail("operator " + std::string(node.op) + " has no gradient rule: " + describe(node) +
                      " lies on the path from a trained parameter to the loss",
                  static_cast<uint32_t>(i));
    }
    if (on_path[i]) {
      for (const TensorType& t : node.outputs) {
        if (!fully_known(t)) {
          return fail(describe(node) + " has an output of unknown shape " + t.shape.str() +
                          ": compile the cell with concrete input shapes",
                      static_cast<uint32_t>(i));
        }
      }
      for (const ValueRef& r : node.inputs) {
        if (!fully_known(fg.nodes[r.node].outputs[r.output])) {
          return fail(describe(node) +
                          " has an input of unknown shape: compile the cell with "
                          "concrete input shapes",
                      static_cast<uint32_t>(i));
        }
      }
    }
    builder.set_current(static_cast<uint32_t>(i));
    try {
      def->grad(builder);
    } catch (const RuleError& e) {
      return fail("cannot differentiate " + describe(node) + ": " + e.what(),
                  static_cast<uint32_t>(i));
    } catch (const std::bad_alloc&) {
      return fail("out of memory differentiating " + describe(node), static_cast<uint32_t>(i));
    } catch (const std::out_of_range&) {
      // A node its rule does not recognise (fewer inputs or outputs than the operator has: a
      // malformed program the fuzzer found, BatchNorm with no input): not differentiated.
      return fail("cannot differentiate " + describe(node) +
                      ": it does not have the inputs and outputs its operator has",
                  static_cast<uint32_t>(i));
    }
  }

  // Parameters read directly in construct (Parameter nodes): their output's gradient.
  std::map<std::string, ValueRef, std::less<>> pgrads = builder.param_grads();
  for (size_t i = 0; i < n; ++i) {
    const Node& node = fg.nodes[i];
    if (node.kind != NodeKind::Parameter || node.params.empty() || !diff.contains(node.params[0]))
      continue;
    auto g = builder.grad_of({static_cast<uint32_t>(i), 0});
    if (!g) continue;
    auto [it, fresh] = pgrads.try_emplace(node.params[0], *g);
    if (!fresh) {
      builder.set_current(static_cast<uint32_t>(i));
      it->second = builder.emit1("Add", {it->second, *g}, builder.type_of(*g));
    }
  }

  Graph& out = gg.report.graph;
  out.outputs = {loss};
  gg.report.outputs.clear();
  gg.report.outputs.push_back({"loss", lt});
  for (const ParamInfo& p : report.params) {
    if (!diff.contains(p.name)) continue;
    auto it = pgrads.find(p.name);
    if (it == pgrads.end()) {
      gg.unused_params.push_back(p.name);
      continue;
    }
    gg.param_grads.emplace_back(p.name, it->second);
    out.outputs.push_back(it->second);
    gg.report.outputs.push_back(
        {"grad:" + p.name, out.nodes[it->second.node].outputs[it->second.output]});
  }
  for (const auto& [name, v] : gg.state_updates) {
    out.outputs.push_back(v);
    gg.report.outputs.push_back({"state:" + name, out.nodes[v.node].outputs[v.output]});
  }
  if (options.input_grads) {
    for (size_t i = 0; i < n; ++i) {
      const Node& node = fg.nodes[i];
      if (node.kind != NodeKind::Input) continue;
      auto g = builder.grad_of({static_cast<uint32_t>(i), 0});
      gg.input_grads.push_back(g);
      if (g) {
        out.outputs.push_back(*g);
        gg.report.outputs.push_back(
            {"input_grad:" + node.id, out.nodes[g->node].outputs[g->output]});
      }
    }
  }
  GradResult r;
  r.grad = std::move(gg);
  return r;
}

}  // namespace graphcore::autodiff
