// The Executor: binds a compiled semantic graph, initialises its parameters, and runs it node by
// node with debugger hooks.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <fstream>
#include <new>
#include <sstream>

#include "graphcore/opdef.h"
#include "graphcore/registry.h"
#include "runtime/dnnl_ops.h"
#include "runtime/internal.h"

namespace graphcore::runtime {

namespace {

std::string base_name(const std::string& file) {
  size_t s = file.find_last_of('/');
  return s == std::string::npos ? file : file.substr(s + 1);
}

// The dtype the runtime holds a value of graph dtype `d` in: `d` itself when it has storage for
// it; float32 for an unknown dtype and for the float types it computes in float32 (float64,
// bfloat16: docs/runtime.md). Any other dtype (int8, int16, uint8, complex64...) is refused with
// a RuntimeError naming `what`: computing it as float32 would silently give values MindSpore
// never computes (an int8 input to a float32 Conv2d, which MindSpore rejects).
DType runtime_dtype(DType d, const std::string& what) {
  if (Tensor::supported(d)) return d;
  if (d == DType::Unknown || d == DType::Float64 || d == DType::BFloat16) return DType::Float32;
  throw RuntimeError(what + " has dtype " + std::string(dtype_name(d)) +
                     ", which the CPU runtime does not support (it computes float32, float16, "
                     "int32, int64 and bool; float64 and bfloat16 as float32)");
}

// MindSpore's default initializer (graphcore::default_initializer) for a parameter the graph
// records none for, from the layer of the node that reads it; nullopt when there is none.
std::optional<InitSpec> unrecorded_default(
    const ParamInfo& info, const std::map<std::string, size_t, std::less<>>& owner,
    const std::map<std::string, const Shape*, std::less<>>& shapes, const Graph& g) {
  std::string api, rel = info.name;
  const Node* node = nullptr;
  if (auto it = owner.find(info.name); it != owner.end()) {
    node = &g.nodes[it->second];
    api = std::string(node->api);
    const std::string& scope = node->scope;
    if (!scope.empty() && info.name.starts_with(scope + "."))
      rel = info.name.substr(scope.size() + 1);
  }
  auto ws = shapes.find(weight_beside(info.name));
  std::optional<int64_t> hidden = node ? attr_int(*node, "hidden_size") : std::nullopt;
  return default_initializer(api, rel, ws == shapes.end() ? nullptr : ws->second, hidden);
}

}  // namespace

Executor::~Executor() = default;

Executor::Executor(const CellReport& report, ExecOptions opts)
    : report_(report), opts_(std::move(opts)) {
  const Graph& g = report_.graph;
  if (!report_.compiled) throw RuntimeError("cell '" + report_.name + "' was not compiled");
  if (g.nodes.empty()) throw RuntimeError("cell '" + report_.name + "' has an empty graph");
  values_.resize(g.nodes.size());
  node_ms_.assign(g.nodes.size(), 0);

  // Which node reads each parameter (first reader): for a graph whose parameters carry no
  // recorded initializer (built by hand or read back from a graph document), the reader's layer
  // gives MindSpore's default; in target precision, its operator's amp policy the storage.
  std::map<std::string, size_t, std::less<>> owner;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const std::string& p : g.nodes[i].params) owner.emplace(p, i);
  }
  std::map<std::string, const Shape*, std::less<>> shapes;
  for (const ParamInfo& p : report_.params) shapes[p.name] = &p.shape;

  params_.reserve(report_.params.size());
  for (const ParamInfo& info : report_.params) {
    ParamState ps;
    ps.name = info.name;
    auto dims = known_dims({info.shape, info.dtype});
    if (!dims) {
      throw RuntimeError("parameter '" + info.name +
                         "' has a shape that is not fully known: " + info.shape.str());
    }
    DType dt = runtime_dtype(info.dtype, "parameter '" + info.name + "'");
    // Amp O2 keeps the cells of its black list (BatchNorm, LayerNorm: OpPrecision::KeepFloat32)
    // in float32, their Parameters included; every other float Parameter is float16.
    if (opts_.precision == Precision::Target && dt == DType::Float32) {
      auto reader = owner.find(info.name);
      const OpDef* op = reader == owner.end() ? nullptr : find_op(g.nodes[reader->second].op);
      if (op == nullptr || op->precision != OpPrecision::KeepFloat32) dt = DType::Float16;
    }
    // Deferred: address space only (pages are touched when loaded or initialised).
    ps.value = opts_.defer_init ? Tensor::uninitialized(*dims, dt) : Tensor(*dims, dt);

    // The initializer the analysis recorded when the Parameter was created.
    if (auto it = opts_.param_inits.find(info.name); it != opts_.param_inits.end()) {
      ps.init = it->second;
      ps.source = InitSource::Override;
    } else if (info.init) {
      ps.init = info.init->spec;
      ps.source = info.init->origin == ParamInit::Origin::Argument ? InitSource::Argument
                                                                   : InitSource::LayerDefault;
      ps.note = info.init->note;
    } else if (auto fallback = unrecorded_default(info, owner, shapes, g)) {
      ps.init = *fallback;
      ps.source = InitSource::LayerDefault;
      ps.note = "no initializer recorded: the default for a parameter named like this, " +
                fallback->str();
    } else {
      ps.source = InitSource::Unknown;
      ps.note =
          "initializer not known to the analysis (a Parameter wrapping a tensor of computed "
          "values): zeros";
    }
    if (opts_.defer_init) {
      ps.pending = true;
    } else {
      fill_init(ps.value, ps.init, hash_name(opts_.seed, info.name));
    }
    params_.push_back(std::move(ps));
  }

  std::map<std::string_view, const ParamState*> by_name;
  for (const ParamState& p : params_) by_name[p.name] = &p;
  node_params_.resize(g.nodes.size());
  last_use_.assign(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    for (const std::string& p : n.params) {
      auto it = by_name.find(p);
      if (it == by_name.end()) {
        throw RuntimeError(
            "node '" + n.id + "' reads parameter '" + p + "', which the report does not list", i);
      }
      node_params_[i].push_back(it->second);
    }
    for (const ValueRef& r : n.inputs) {
      if (r.node >= i) throw RuntimeError("node '" + n.id + "' reads a value of a later node", i);
      last_use_[r.node] = static_cast<uint32_t>(i);
    }
  }
  for (const ValueRef& r : g.outputs) last_use_[r.node] = static_cast<uint32_t>(g.nodes.size());
  for (size_t i = 0; i < num_inputs(); ++i) {
    if (!known_dims(input_type(i))) {
      throw RuntimeError("input '" + input_name(i) + "' has a shape that is not fully known (" +
                         input_type(i).str() + "): compile the cell with concrete input shapes");
    }
  }
}

// ---- inputs
// ----------------------------------------------------------------------------------------
std::vector<uint32_t> graph_inputs(const Graph& g) {
  std::vector<uint32_t> r;
  for (uint32_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].kind == NodeKind::Input) r.push_back(i);
  return r;
}

size_t Executor::num_inputs() const { return graph_inputs(report_.graph).size(); }

TensorType Executor::input_type(size_t i) const {
  auto ins = graph_inputs(report_.graph);
  if (i >= ins.size()) throw RuntimeError("no input #" + std::to_string(i));
  return report_.graph.nodes[ins[i]].outputs.at(0);
}

std::string Executor::input_name(size_t i) const {
  auto ins = graph_inputs(report_.graph);
  if (i >= ins.size()) throw RuntimeError("no input #" + std::to_string(i));
  return report_.graph.nodes[ins[i]].id;
}

void Executor::set_input(size_t i, Tensor t) {
  auto ins = graph_inputs(report_.graph);
  if (i >= ins.size()) {
    throw RuntimeError("the cell has " + std::to_string(ins.size()) + " input(s), no input #" +
                       std::to_string(i));
  }
  const Node& n = report_.graph.nodes[ins[i]];
  TensorType want = n.outputs.at(0);
  auto dims = known_dims(want);
  if (!dims || *dims != t.shape()) {
    throw RuntimeError("input '" + n.id + "' must have shape " + want.shape.str() + ", got " +
                       shape_str(t.shape()));
  }
  DType dt = runtime_dtype(want.dtype, "input '" + n.id + "'");
  if (opts_.precision == Precision::Target && dt == DType::Float32) dt = DType::Float16;
  if (t.dtype() != dt) t = t.cast(dt);
  values_[ins[i]] = {std::move(t)};
}

void Executor::set_input_spec(size_t i, std::string_view spec, uint64_t seed) {
  TensorType tt = input_type(i);
  auto dims = known_dims(tt);
  if (!dims) throw RuntimeError("input #" + std::to_string(i) + " has an unknown shape");
  DType dt = runtime_dtype(tt.dtype, "input '" + input_name(i) + "'");
  // A shape too large to allocate names the input.
  auto make = [&](const std::function<Tensor()>& f) {
    try {
      return f();
    } catch (const RuntimeError& e) {
      throw RuntimeError("input '" + input_name(i) + "': " + e.what());
    }
  };
  if (spec == "zeros") {
    set_input(i, make([&] { return Tensor::zeros(*dims, dt); }));
  } else if (spec == "ones") {
    set_input(i, make([&] { return Tensor::ones(*dims, dt); }));
  } else if (spec == "random" || spec.starts_with("random:")) {
    uint64_t s = seed;
    if (spec.size() > 7) {
      const std::string_view digits = spec.substr(7);
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), s);
      if (ec != std::errc() || end != digits.data() + digits.size()) {
        throw RuntimeError("input '" + input_name(i) + "': the seed in `" + std::string(spec) +
                           "` must be an integer from 0 to 18446744073709551615");
      }
    }
    set_input(i, make([&] { return Tensor::random(*dims, dt, hash_name(s, input_name(i))); }));
  } else {
    Tensor t;
    try {
      t = read_npy(std::filesystem::path(std::string(spec)));
    } catch (const std::exception& e) {
      throw RuntimeError("input '" + input_name(i) + "': " + e.what() +
                         " (expected random, random:SEED, ones, zeros or a .npy path)");
    }
    set_input(i, std::move(t));
  }
}

// ---- parameters --------------------------------------------------------------------------------
const ParamState* Executor::param(std::string_view name) const {
  for (const ParamState& p : params_)
    if (p.name == name) return &p;
  return nullptr;
}

void Executor::set_param(std::string_view name, Tensor value) {
  for (ParamState& p : params_) {
    if (p.name != name) continue;
    if (value.shape() != p.value.shape()) {
      throw RuntimeError("parameter '" + p.name + "' has shape " + shape_str(p.value.shape()) +
                         ", got " + shape_str(value.shape()));
    }
    // cast() of the same dtype shares the storage: take the tensor itself then.
    p.value = value.dtype() == p.value.dtype() ? std::move(value) : value.cast(p.value.dtype());
    p.source = InitSource::Loaded;
    p.pending = false;
    return;
  }
  throw RuntimeError("no parameter named '" + std::string(name) + "'");
}

Tensor& Executor::mutable_param(std::string_view name) {
  for (ParamState& p : params_) {
    if (p.name != name) continue;
    if (!p.value.sole_owner()) p.value = p.value.clone();
    if (p.pending) fill_init(p.value, p.init, hash_name(opts_.seed, p.name));
    p.pending = false;
    p.source = InitSource::Loaded;
    return p.value;
  }
  throw RuntimeError("no parameter named '" + std::string(name) + "'");
}

size_t Executor::load_params_npy(const std::filesystem::path& dir) {
  size_t n = 0;
  for (ParamState& p : params_) {
    auto path = dir / (p.name + ".npy");
    if (!std::filesystem::exists(path)) continue;
    set_param(p.name, read_npy(path));
    ++n;
  }
  return n;
}

size_t Executor::init_pending() {
  size_t n = 0;
  for (ParamState& p : params_) {
    if (!p.pending) continue;
    fill_init(p.value, p.init, hash_name(opts_.seed, p.name));
    p.pending = false;
    ++n;
  }
  return n;
}

void Executor::require_initialised() const {
  for (const ParamState& p : params_) {
    if (p.pending) {
      throw RuntimeError("parameter '" + p.name +
                         "' is not initialised yet (defer_init without init_pending)");
    }
  }
}

void Executor::save_params_npy(const std::filesystem::path& dir) const {
  std::filesystem::create_directories(dir);
  for (const ParamState& p : params_) write_npy(dir / (p.name + ".npy"), p.value);
}

// ---- running
// -------------------------------------------------------------------------------------
const Tensor* Executor::value(ValueRef ref) const {
  if (ref.node >= values_.size()) return nullptr;
  const auto& v = values_[ref.node];
  if (ref.output >= v.size() || !v[ref.output].defined()) return nullptr;
  return &v[ref.output];
}

std::vector<Tensor> Executor::outputs() const {
  std::vector<Tensor> r;
  for (const ValueRef& ref : report_.graph.outputs) {
    const Tensor* t = value(ref);
    r.push_back(t ? *t : Tensor());
  }
  return r;
}

std::optional<size_t> Executor::find_node(std::string_view id) const {
  for (size_t i = 0; i < report_.graph.nodes.size(); ++i)
    if (report_.graph.nodes[i].id == id) return i;
  return std::nullopt;
}

std::string Executor::node_location(size_t i) const {
  const Node& n = report_.graph.nodes.at(i);
  std::string f = n.file.empty() ? base_name(report_.file) : base_name(std::string(n.file));
  return f + ":" + std::to_string(n.range.start.line + 1);
}

void Executor::reset() {
  const Graph& g = report_.graph;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].kind != NodeKind::Input) values_[i].clear();
  pos_ = 0;
  skip_before_ = false;
  done_ = false;
}

RunStatus Executor::run(const Hooks& hooks) {
  require_initialised();
  dnnl_ops::set_threads(opts_.threads);
  RunStatus s;
  while (pos_ < report_.graph.nodes.size()) {
    bool stop = false;
    s = run_one(hooks, &stop);
    if (stop) return s;
  }
  done_ = true;
  s = RunStatus{};
  s.kind = RunStatus::Kind::Finished;
  s.node = report_.graph.nodes.size();
  return s;
}

RunStatus Executor::step(const Hooks& hooks) {
  require_initialised();
  dnnl_ops::set_threads(opts_.threads);
  if (pos_ >= report_.graph.nodes.size()) {
    RunStatus s;
    s.node = pos_;
    return s;
  }
  bool stop = false;
  RunStatus s = run_one(hooks, &stop);
  if (!stop && pos_ >= report_.graph.nodes.size()) s.kind = RunStatus::Kind::Finished;
  return s;
}

RunStatus Executor::run_one(const Hooks& hooks, bool* stop) {
  const Graph& g = report_.graph;
  size_t i = pos_;
  const Node& n = g.nodes[i];
  RunStatus st;
  st.node = i;
  auto error = [&](const std::string& msg) {
    st.kind = RunStatus::Kind::Error;
    std::string what = "node '" + n.id + "' (" + std::string(n.op);
    if (!n.api.empty()) what += ", " + std::string(n.api);
    st.message = what + ") at " + node_location(i) + ": " + msg;
    *stop = true;
    return st;
  };

  std::vector<Tensor> inputs;
  inputs.reserve(n.inputs.size());
  for (const ValueRef& r : n.inputs) {
    const Tensor* t = value(r);
    if (!t) return error("input value from node '" + g.nodes[r.node].id + "' is not available");
    inputs.push_back(*t);
  }
  const auto& nparams = node_params_[i];
  if (!skip_before_) {
    bool interrupted = hooks.interrupt && hooks.interrupt->exchange(false);
    HookAction a = interrupted ? HookAction::Pause : HookAction::Continue;
    if (!interrupted && hooks.before) {
      NodeEvent ev{i, n, inputs, {}, nparams};
      a = hooks.before(ev);
    }
    if (a != HookAction::Continue) {
      st.kind = a == HookAction::Pause ? RunStatus::Kind::Paused : RunStatus::Kind::Aborted;
      skip_before_ = a == HookAction::Pause;
      *stop = true;
      return st;
    }
  }
  skip_before_ = false;

  auto t0 = std::chrono::steady_clock::now();
  std::vector<Tensor> outs;
  try {
    // Before any kernel runs: an output of a dtype the runtime cannot hold fails the node.
    for (size_t k = 0; k < n.outputs.size(); ++k)
      (void)runtime_dtype(n.outputs[k].dtype, "output " + std::to_string(k));
    switch (n.kind) {
      case NodeKind::Input:
        if (values_[i].empty()) return error("input '" + n.id + "' is not set");
        outs = values_[i];
        break;
      case NodeKind::Parameter:
        if (nparams.empty()) return error("parameter node without a parameter");
        outs.push_back(nparams[0]->value);
        break;
      case NodeKind::Constant: {
        auto dims = n.outputs.empty() ? std::nullopt : known_dims(n.outputs[0]);
        DType dt = n.outputs.empty() ? DType::Float32 : n.outputs[0].dtype;
        dt = runtime_dtype(dt, "this constant");
        const AttrValue* v = n.find_attr("value");
        if (!dims || (!v && !n.constant_values))
          return error("the value of this constant is not recorded in the graph");
        Tensor t(*dims, dt);
        if (n.constant_values) {  // elements computed by the static evaluator (numpy code)
          if (static_cast<int64_t>(n.constant_values->size()) != t.numel())
            return error("the recorded elements of this constant do not match its shape");
          for (int64_t k2 = 0; k2 < t.numel(); ++k2)
            t.set(k2, (*n.constant_values)[static_cast<size_t>(k2)]);
        } else if (auto* d = std::get_if<double>(v)) {
          t = Tensor::full(*dims, *d, dt);
        } else if (auto* k = std::get_if<int64_t>(v)) {
          t = Tensor::full(*dims, static_cast<double>(*k), dt);
        } else if (auto* b = std::get_if<bool>(v)) {
          t = Tensor::full(*dims, *b ? 1 : 0, dt);
        } else if (auto* l = std::get_if<std::vector<int64_t>>(v);
                   l && static_cast<int64_t>(l->size()) == t.numel()) {
          for (size_t k2 = 0; k2 < l->size(); ++k2)
            t.set(static_cast<int64_t>(k2), static_cast<double>((*l)[k2]));
        } else {
          return error("the value of this constant is not recorded in a usable form");
        }
        outs.push_back(std::move(t));
        break;
      }
      case NodeKind::Op: {
        KernelFn fn = find_kernel(n.op);
        if (!fn) return error("the runtime has no kernel for operator '" + std::string(n.op) + "'");
        if (hooks.rewrite_inputs) hooks.rewrite_inputs(n, i, inputs);
        if (!hooks.compute || !hooks.compute(n, i, inputs, outs)) {
          KernelCall call{n, inputs, nparams, outs, opts_.seed, opts_.training};
          fn(call);
        }
        if (hooks.rewrite_outputs) hooks.rewrite_outputs(n, i, outs);
        break;
      }
    }
    if (outs.size() != n.outputs.size()) {
      return error("the kernel produced " + std::to_string(outs.size()) +
                   " output(s), the graph declares " + std::to_string(n.outputs.size()));
    }
    for (size_t k = 0; k < outs.size(); ++k) {
      const TensorType& want = n.outputs[k];
      if (want.shape.ranked && want.shape.rank() == outs[k].rank()) {
        for (size_t d = 0; d < outs[k].rank(); ++d) {
          const Dim& dim = want.shape.dims[d];
          if (dim.is_known() && dim.value() != outs[k].shape()[d]) {
            return error("output " + std::to_string(k) + " has shape " +
                         shape_str(outs[k].shape()) + ", the graph says " + want.shape.str());
          }
        }
      } else if (want.shape.ranked) {
        return error("output " + std::to_string(k) + " has shape " + shape_str(outs[k].shape()) +
                     ", the graph says " + want.shape.str());
      }
      DType dt = want.dtype == DType::Unknown
                     ? outs[k].dtype()
                     : runtime_dtype(want.dtype, "output " + std::to_string(k));
      if (opts_.precision == Precision::Target && dt == DType::Float32) dt = DType::Float16;
      if (outs[k].dtype() != dt) outs[k] = outs[k].cast(dt);
      if (dt == DType::Float16 && n.kind == NodeKind::Op) round_to_half(outs[k]);
    }
  } catch (const std::bad_alloc&) {
    return error("out of memory running this node");
  } catch (const std::exception& e) {
    return error(e.what());
  }
  node_ms_[i] =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  values_[i] = std::move(outs);
  ++pos_;

  if (!opts_.keep_values) {
    for (const ValueRef& r : n.inputs) {
      if (last_use_[r.node] == i && g.nodes[r.node].kind != NodeKind::Input)
        values_[r.node].clear();
    }
  }
  if (hooks.after) {
    NodeEvent ev{i, n, inputs, values_[i], nparams};
    HookAction a = hooks.after(ev);
    if (a != HookAction::Continue) {
      st.kind = a == HookAction::Pause ? RunStatus::Kind::Paused : RunStatus::Kind::Aborted;
      st.after = true;
      *stop = true;
      return st;
    }
  }
  st.kind = RunStatus::Kind::Finished;
  return st;
}

}  // namespace graphcore::runtime
