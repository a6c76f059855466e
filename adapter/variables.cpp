// Variables, scopes and the evaluate expression language of the debug adapter: see variables.h.
#include "variables.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string_view>

#include "graphcore/text.h"

namespace cellscope::dap {

using nlohmann::json;

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string tensor_summary(const rt::Tensor& t) {
  std::string s =
      "Tensor" + rt::shape_str(t.shape()) + " " + std::string(graphcore::dtype_name(t.dtype()));
  if (t.numel() == 0) return s;
  rt::TensorStats st = rt::compute_stats(t);
  s += " min=" + num(st.min) + " max=" + num(st.max) + " mean=" + num(st.mean);
  if (st.nan_count) s += " nan=" + std::to_string(st.nan_count);
  if (st.inf_count) s += " inf=" + std::to_string(st.inf_count);
  return s;
}

std::string relative_name(const std::string& id, const std::string& frame) {
  if (frame.empty()) return id;
  if (id.size() > frame.size() && id.compare(0, frame.size(), frame) == 0 &&
      (id[frame.size()] == '.' || id[frame.size()] == '/'))
    return id.substr(frame.size() + 1);
  return id;
}

int VarRefs::add(VarRef r) {
  refs_.push_back(std::move(r));
  return static_cast<int>(refs_.size());
}

const VarRef* VarRefs::find(int ref) const {
  if (ref < 1 || ref > static_cast<int>(refs_.size())) return nullptr;
  return &refs_[static_cast<size_t>(ref - 1)];
}

NamedTensors Inspector::locals(const std::string& frame) const {
  NamedTensors vars, nodes_out;
  std::map<std::string, size_t> var_index;
  std::set<std::string> input_names;
  const auto& nodes = ex_.graph().nodes;
  auto as = index_.assigned.find(frame);
  for (size_t i = 0; i < end_ && i < nodes.size(); ++i) {
    const NodeInfo& ni = index_.nodes[i];
    if (ni.frame != frame) continue;
    if (nodes[i].kind != graphcore::NodeKind::Op && nodes[i].kind != graphcore::NodeKind::Input)
      continue;
    for (size_t k = 0; k < nodes[i].outputs.size(); ++k) {
      const rt::Tensor* t = ex_.value(i, k);
      if (!t) continue;
      std::string name = nodes[i].kind == graphcore::NodeKind::Input
                             ? nodes[i].id
                             : relative_name(nodes[i].id, frame);
      if (nodes[i].outputs.size() > 1) name += "[" + std::to_string(k) + "]";
      nodes_out.emplace_back(name, *t);
      if (nodes[i].kind == graphcore::NodeKind::Input) input_names.insert(name);
    }
    if (nodes[i].kind == graphcore::NodeKind::Input) continue;
    if (as != index_.assigned.end() && nodes[i].outputs.size() == 1) {
      for (const auto& [line, var] : as->second) {
        if (line != ni.line) continue;
        const rt::Tensor* t = ex_.value(i, 0);
        if (!t) continue;
        auto vi = var_index.find(var);
        if (vi == var_index.end()) {
          var_index[var] = vars.size();
          vars.emplace_back(var, *t);
        } else {
          vars[vi->second].second = *t;
        }
      }
    }
  }
  std::set<std::string> var_names;
  for (const auto& v : vars) var_names.insert(v.first);
  for (auto& n : nodes_out) {
    // A graph input whose name was reassigned in construct stays visible as "x (input)".
    if (var_names.count(n.first) && input_names.count(n.first)) n.first += " (input)";
    if (!var_names.count(n.first)) vars.push_back(std::move(n));
  }
  return vars;
}

NamedTensors Inspector::params(const std::string& frame) const {
  NamedTensors out;
  for (const auto& p : ex_.params()) {
    if (frame.empty() || p.name.rfind(frame + ".", 0) == 0)
      out.emplace_back(relative_name(p.name, frame), p.value);
  }
  return out;
}

std::optional<EvalResult> Inspector::evaluate(std::string expr, const std::string& frame,
                                              std::string* err) const {
  expr = std::string(graphcore::text::trim(expr));
  std::string method;
  for (const char* m : {".max()", ".min()", ".mean()", ".std()", ".shape", ".sum()", ".nan_count()",
                        ".inf_count()"}) {
    std::string s = m;
    if (expr.size() > s.size() && expr.compare(expr.size() - s.size(), s.size(), s) == 0) {
      method = s;
      expr = std::string(
          graphcore::text::trim(std::string_view(expr).substr(0, expr.size() - s.size())));
      break;
    }
  }
  // `self.<path>` (as written in construct): the frame's own layer or Parameter, never a
  // same-named one elsewhere (`self.conv2.weight` in the root frame is `conv2.weight`).
  const bool self_path = expr.starts_with("self.");
  if (self_path) expr.erase(0, 5);
  const std::string relative = frame.empty() ? expr : frame + "." + expr;
  std::optional<rt::Tensor> t;
  if (!self_path) {
    for (const auto& [name, v] : locals(frame))
      if (name == expr) t = v;
  }
  if (!t) {
    auto n = self_path ? ex_.find_node(relative) : ex_.find_node(expr);
    if (!n && !self_path && !frame.empty()) n = ex_.find_node(relative);
    if (!n && !self_path && !frame.empty()) n = ex_.find_node(frame + "/" + expr);
    if (n && *n < end_) {
      if (const rt::Tensor* v = ex_.value(*n)) t = *v;
    }
  }
  if (!t) {
    const rt::ParamState* p = ex_.param(self_path ? relative : expr);
    if (!p && !self_path && !frame.empty()) p = ex_.param(relative);
    if (p) t = p->value;
  }
  if (self_path) expr = "self." + expr;
  if (!t && method.empty() && !self_path) {
    for (const auto& [name, v] : scalars_) {
      if (name != expr) continue;
      EvalResult r;
      r.number = v;
      r.text = num(v);
      return r;
    }
  }
  if (!t) {
    *err = "'" + expr + "' is not a computed tensor in this frame";
    return std::nullopt;
  }
  EvalResult r;
  if (method.empty()) {
    r.tensor = t;
    r.text = tensor_summary(*t);
    return r;
  }
  if (method == ".shape") {
    r.text = rt::shape_str(t->shape());
    return r;
  }
  rt::TensorStats st = rt::compute_stats(*t);
  double v = method == ".max()"         ? st.max
             : method == ".min()"       ? st.min
             : method == ".mean()"      ? st.mean
             : method == ".std()"       ? st.std
             : method == ".sum()"       ? st.mean * static_cast<double>(st.count)
             : method == ".nan_count()" ? static_cast<double>(st.nan_count)
                                        : static_cast<double>(st.inf_count);
  r.number = v;
  r.text = num(v);
  return r;
}

namespace {

// The Precision drift scope: the report's summary, then a row per layer (graph order; expandable
// to its node's figures). Numbers as num() shows them; fractions, not percentages.
void drift_variables(const rt::DriftReport& d, VarRefs& refs, json& vars) {
  auto simple = [&](const std::string& name, const std::string& value) {
    vars.push_back({{"name", name}, {"value", value}, {"variablesReference", 0}});
  };
  simple("precision", std::string(rt::eval_precision_name(d.precision)));
  simple("threshold", num(d.threshold));
  simple("first layer under the threshold",
         d.first_below.empty() ? "none (every layer's cosine >= " + num(d.threshold) + ")"
                               : d.first_below);
  simple("top-1 agreement", num(d.top1_agreement));
  if (d.accuracy_fp32) simple("accuracy (fp32)", num(*d.accuracy_fp32));
  if (d.accuracy_precision) {
    simple("accuracy (" + std::string(rt::eval_precision_name(d.precision)) + ")",
           num(*d.accuracy_precision));
  }
  simple("samples", std::to_string(d.samples));
  if (!d.data.empty()) simple("data", d.data);
  for (const rt::LayerDrift& l : d.layers) {
    std::string value = "cosine " + num(l.cosine) + ", max abs " + num(l.max_abs) + ", max rel " +
                        num(l.max_rel) + ", fp16 overflows " + std::to_string(l.fp16_overflows);
    if (l.node == d.first_below) value += " (first under " + num(d.threshold) + ")";
    vars.push_back({{"name", l.node},
                    {"value", value},
                    {"type", l.op},
                    {"variablesReference", refs.add({VarRef::Kind::DriftLayer, l.node, {}})}});
  }
}

}  // namespace

json scopes(const std::string& frame, VarRefs& refs, const TrainView* train) {
  int locals = refs.add({VarRef::Kind::Locals, frame, {}});
  int params = refs.add({VarRef::Kind::Params, frame, {}});
  json out = {{{"name", "Locals"}, {"variablesReference", locals}, {"expensive", false}},
              {{"name", "Parameters"}, {"variablesReference", params}, {"expensive", false}}};
  if (train) {
    auto scope = [&](const char* name, VarRef::Kind kind) {
      out.push_back(
          {{"name", name}, {"variablesReference", refs.add({kind, "", {}})}, {"expensive", false}});
    };
    scope("Training", VarRef::Kind::Training);
    scope("Gradients and updates", VarRef::Kind::TrainParams);
    scope("Optimizer state", VarRef::Kind::OptimizerState);
    if (train->drift) scope("Precision drift", VarRef::Kind::Drift);
  }
  return out;
}

json tensor_variable(const std::string& name, const rt::Tensor& t, const std::string& evaluate_name,
                     VarRefs& refs) {
  int ref = refs.add({VarRef::Kind::Tensor, "", t});
  return {{"name", name},
          {"value", tensor_summary(t)},
          {"type", "Tensor"},
          {"variablesReference", ref},
          {"evaluateName", evaluate_name}};
}

json variables(const VarRef& r, const json& args, const Inspector& inspector, VarRefs& refs,
               const TrainView* train) {
  json vars = json::array();
  auto simple = [&](const std::string& name, const std::string& value) {
    vars.push_back({{"name", name}, {"value", value}, {"variablesReference", 0}});
  };
  switch (r.kind) {
    case VarRef::Kind::Locals:
      for (const auto& [name, t] : inspector.locals(r.frame))
        vars.push_back(tensor_variable(name, t, name, refs));
      break;
    case VarRef::Kind::Params:
      for (const auto& [name, t] : inspector.params(r.frame))
        vars.push_back(tensor_variable(name, t, name, refs));
      break;
    case VarRef::Kind::Tensor: {
      const rt::Tensor& t = r.tensor;
      rt::TensorStats st = rt::compute_stats(t);
      simple("shape", rt::shape_str(t.shape()));
      simple("dtype", std::string(graphcore::dtype_name(t.dtype())));
      simple("numel", std::to_string(t.numel()));
      simple("min", num(st.min));
      simple("max", num(st.max));
      simple("mean", num(st.mean));
      simple("std", num(st.std));
      simple("nan", std::to_string(st.nan_count));
      simple("inf", std::to_string(st.inf_count));
      simple("zeros", std::to_string(st.zero_count));
      simple("first values", t.preview(8));
      int vref = refs.add({VarRef::Kind::Values, "", t});
      vars.push_back({{"name", "values"},
                      {"value", "[" + std::to_string(t.numel()) + " values, row-major]"},
                      {"variablesReference", vref},
                      {"indexedVariables", t.numel()}});
      break;
    }
    case VarRef::Kind::Training:
      if (!train) break;
      for (const auto& [name, value] : train->info) simple(name, value);
      break;
    case VarRef::Kind::TrainParams:
      if (!train) break;
      for (const TrainView::Param& p : train->params) {
        std::string value = tensor_summary(p.value);
        if (p.grad) value += ", grad " + tensor_summary(*p.grad);
        vars.push_back({{"name", p.name},
                        {"value", value},
                        {"variablesReference", refs.add({VarRef::Kind::TrainParam, p.name, {}})}});
      }
      break;
    case VarRef::Kind::TrainParam:
      if (!train) break;
      for (const TrainView::Param& p : train->params) {
        if (p.name != r.frame) continue;
        vars.push_back(tensor_variable("value", p.value, p.name, refs));
        if (p.grad) {
          vars.push_back(tensor_variable("gradient", *p.grad, "", refs));
        } else {
          simple("gradient", "none (not trained, or no step yet)");
        }
        if (p.update) {
          vars.push_back(tensor_variable("last update", *p.update, "", refs));
        } else {
          simple("last update", "none (not trained, or no step yet)");
        }
        if (p.lr) simple("learning rate", num(*p.lr));
      }
      break;
    case VarRef::Kind::OptimizerState:
      if (!train) break;
      for (const auto& [name, t] : train->optimizer)
        vars.push_back(tensor_variable(name, t, "", refs));
      break;
    case VarRef::Kind::Drift:
      if (!train || !train->drift) break;
      drift_variables(*train->drift, refs, vars);
      break;
    case VarRef::Kind::DriftLayer:
      if (!train || !train->drift) break;
      for (const rt::LayerDrift& d : train->drift->layers) {
        if (d.node != r.frame) continue;
        simple("node", d.node);
        simple("op", d.op);
        simple("scope", d.scope);
        if (!d.file.empty()) simple("source", d.file + ":" + std::to_string(d.line));
        simple("max abs", num(d.max_abs));
        simple("max rel", num(d.max_rel));
        simple("cosine", num(d.cosine));
        simple("fp16 overflows", std::to_string(d.fp16_overflows));
        simple("non-finite", std::to_string(d.nonfinite));
        if (train->drift->precision == rt::EvalPrecision::Int8)
          simple("quantized", d.quantized ? "yes" : "no");
      }
      break;
    case VarRef::Kind::Values: {
      if (args.value("filter", "") == "named") break;  // only indexed children
      const rt::Tensor& t = r.tensor;
      int64_t start = std::max<int64_t>(0, args.value("start", 0));
      int64_t count = args.value("count", 0);
      if (count <= 0) count = std::min<int64_t>(t.numel() - start, 100);
      for (int64_t i = start; i < start + count && i < t.numel(); ++i)
        simple("[" + std::to_string(i) + "]", num(t.at(i)));
      break;
    }
  }
  return vars;
}

}  // namespace cellscope::dap
