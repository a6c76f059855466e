// Compiling `construct`: tensor operations become nodes of the root Cell's graph, sub-Cell calls
// are compiled recursively under their scope path, and Python values fold away.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "interp.h"
#include "npvalues.h"

namespace graphcore::eval {

namespace {
constexpr char kNoteMark = '\x1f';
}

std::string GraphBuilder::unique_id(const std::string& base) {
  uint32_t& n = id_counts[base];
  ++n;
  if (n == 1) return base;
  return base + "#" + std::to_string(n);
}

IStr Interpreter::current_scope() const {
  if (cell_stack.empty()) return {};
  return cell_stack.back()->cell->path;
}

std::string Interpreter::instance_note() const {
  if (cell_stack.size() < 2) return "";
  InstanceObj* inst = cell_stack.back();
  if (inst->cell->path.empty()) return "";
  return std::string(1, kNoteMark) + inst->cell->path + kNoteMark + inst->cls->name;
}

std::string GraphBuilder::note_for(uint32_t node) const {
  if (node >= caller_scope.size() || caller_scope[node].empty()) return "";
  IStr scope = caller_scope[node];
  auto cls = scope_class.find(scope);
  return std::string(1, kNoteMark) + scope + kNoteMark +
         (cls == scope_class.end() ? std::string("a Cell") : *cls->second);
}

void Interpreter::mark_consumed(const std::vector<Value>& values) {
  if (!graph) return;
  for (const Value& v : values) {
    if (auto* t = v.as<TensorObj>(); t && t->graph_id == graph->graph_id) {
      graph->consumed_by_failed.insert(t->ref.node);
    } else if (auto* items = seq_items(v)) {
      mark_consumed(*items);
    }
  }
}

namespace {
// Rebuilds nested tuple outputs from a "(0, (1, 2))" structure attribute (LSTM's output, (h, c)).
Value nest_outputs(const std::vector<Value>& outs, std::string_view spec, size_t& pos) {
  while (pos < spec.size() && spec[pos] == ' ') ++pos;
  if (pos < spec.size() && spec[pos] == '(') {
    ++pos;
    std::vector<Value> items;
    while (pos < spec.size() && spec[pos] != ')') {
      items.push_back(nest_outputs(outs, spec, pos));
      while (pos < spec.size() && (spec[pos] == ' ' || spec[pos] == ',')) ++pos;
    }
    ++pos;
    return make_tuple(std::move(items));
  }
  size_t start = pos;
  while (pos < spec.size() && std::isdigit(static_cast<unsigned char>(spec[pos]))) ++pos;
  size_t idx = outs.size();
  if (start < pos) (void)std::from_chars(spec.data() + start, spec.data() + pos, idx);
  return idx < outs.size() ? outs[idx] : Value::unknown();
}
}  // namespace

// The value of a variable after an `if` on a tensor: a Merge node reading the condition and both
// branch values (GRAPH_MODE's Switch). Its shape keeps the dimensions the branches agree on.
Value Interpreter::merge_branches(const Value& cond, const Value& a, const Value& b,
                                  const Site& site) {
  auto* ta = a.as<TensorObj>();
  auto* tb = b.as<TensorObj>();
  if (!graph || !ta || !tb) return a;
  TensorType out = ta->type;
  if (!(ta->type.shape == tb->type.shape)) {
    if (ta->type.shape.ranked && tb->type.shape.ranked &&
        ta->type.shape.rank() == tb->type.shape.rank()) {
      for (size_t i = 0; i < out.shape.rank(); ++i) {
        if (dims_equal(ta->type.shape.dims[i], tb->type.shape.dims[i]) != Tri::Yes)
          out.shape.dims[i] = Dim::unknown();
      }
    } else {
      out.shape = Shape::unranked();
    }
  }
  out.dtype = promote(ta->type.dtype, tb->type.dtype);
  static ApiEntry kMerge = [] {
    ApiEntry e;
    e.name = "if";
    e.op = "Merge";
    return e;
  }();
  std::vector<Value> inputs;
  if (cond.as<TensorObj>()) inputs.push_back(cond);
  inputs.push_back(a);
  inputs.push_back(b);
  return add_op_node(&kMerge, nullptr, std::move(inputs), {out}, {}, 0, site, false);
}

Value Interpreter::pack_outputs(std::vector<Value> outs, const std::vector<Attr>& attrs,
                                bool returns_tuple) {
  for (const Attr& a : attrs) {
    if (a.name != "tuple_structure") continue;
    if (auto* spec = std::get_if<std::string>(&a.value)) {
      size_t pos = 0;
      return nest_outputs(outs, *spec, pos);
    }
  }
  if (outs.size() == 1 && !returns_tuple) return outs[0];
  return make_tuple(std::move(outs));
}

namespace {

// The name of a layer's own Parameter `attr` ("weight") as the report lists it (assign_paths:
// TensorObj::mindspore_name): the name MindSpore binds, which follows the Cell's last binding
// (a Conv2d assigned to `self.final_conv` and then put in `self.classifier = SequentialCell([...,
// self.final_conv])` owns `classifier.1.weight`), not the path the walk happened to give the
// Cell first.
std::string layer_param_name(const CellState& cs, const std::string& attr) {
  std::string path = cs.path.empty() ? attr : cs.path + "." + attr;
  for (const auto& [k, v] : cs.params) {
    if (k != attr) continue;
    if (const auto* t = v.as<TensorObj>()) return t->mindspore_name(path);
    break;
  }
  return path;
}

}  // namespace

ValueRef Interpreter::graph_value(const Value& v, const Site& site) {
  auto* t = v.as<TensorObj>();
  if (t->graph_id == graph->graph_id) return t->ref;
  auto it = graph->captured.find(t);
  if (it != graph->captured.end()) return it->second.ref;
  Node n;
  n.outputs.push_back(t->type);
  n.file = site.file_id();
  n.range = site.range();
  if (t->is_parameter) {
    n.kind = NodeKind::Parameter;
    n.op = "Parameter";
    // Its MindSpore name (TensorObj::mindspore_name), from the Cell attribute that holds it,
    // searching the Cells being compiled.
    std::string name;
    for (auto cit = cell_stack.rbegin(); cit != cell_stack.rend() && name.empty(); ++cit) {
      for (auto& [k, p] : (*cit)->cell->params) {
        if (p.o.get() == t) {
          name = t->mindspore_name((*cit)->cell->path.empty() ? k : (*cit)->cell->path + "." + k);
          break;
        }
      }
    }
    if (name.empty()) name = t->mindspore_name(t->param_name.empty() ? "parameter" : t->param_name);
    n.id = graph->unique_id(name);
    n.params.push_back(name);
    n.scope = current_scope();
  } else {
    n.kind = NodeKind::Constant;
    n.op = "Constant";
    // The value, when every element is known: uniform (Tensor(0.125), np.ones(...)) as the
    // `value` attribute, else the elements numpy code computed (npvalues.h), shared with the
    // evaluator's array. The runtime fills the constant with them.
    // (Small arrays always have their elements inside the evaluator, to choose layers with;
    // they reach the graph only when the runtime asked for them.)
    if (npv::enabled()) n.constant_values = t->values;
    if (t->fill && !t->values) {
      if (t->type.dtype == DType::Bool) {
        n.attrs.push_back(Attr{"value", *t->fill != 0});
      } else if (is_integral(t->type.dtype) && std::nearbyint(*t->fill) == *t->fill) {
        n.attrs.push_back(Attr{"value", static_cast<int64_t>(*t->fill)});
      } else {
        n.attrs.push_back(Attr{"value", *t->fill});
      }
    }
    n.scope = current_scope();
    n.id = graph->unique_id(n.scope.empty() ? std::string("Constant") : n.scope + "/Constant");
  }
  auto idx = static_cast<uint32_t>(graph->graph.nodes.size());
  graph->graph.nodes.push_back(std::move(n));
  ValueRef ref{idx, 0};
  graph->captured.emplace(t, GraphBuilder::Captured{ref, v});
  return ref;
}

void Interpreter::add_failed_call(const ApiEntry* e, InstanceObj* obj,
                                  const std::vector<Value>& inputs, const Site& site,
                                  std::string code, std::string message, IStr selected_op) {
  FailedCall f;
  f.api = IStr(e->name);
  f.op = !selected_op.empty() ? selected_op : IStr(e->op);
  const bool layer = obj && obj->cell && !obj->cell->path.empty();
  f.scope = layer ? obj->cell->path : current_scope();
  f.id = layer ? f.scope.str() : (f.scope.empty() ? f.op.str() : f.scope + "/" + f.op);
  // Unique among the failures (a layer applied twice fails twice); node ids are not touched.
  size_t same = 0;
  for (const FailedCall& g : graph->graph.failures)
    same += g.id == f.id || g.id.starts_with(f.id + "#") ? 1 : 0;
  if (same > 0) f.id += "#" + std::to_string(same + 1);
  for (const Value& v : inputs) {
    const auto* t = v.as<TensorObj>();
    if (t && !t->poisoned && t->graph_id == graph->graph_id) f.inputs.push_back(t->ref);
  }
  f.file = site.file_id();
  f.range = site.range();
  f.code = std::move(code);
  f.message = std::move(message);
  graph->graph.failures.push_back(std::move(f));
}

Value Interpreter::add_op_node(const ApiEntry* e, InstanceObj* obj, std::vector<Value> inputs,
                               std::vector<TensorType> outputs, std::vector<Attr> attrs,
                               double flops, const Site& site, bool returns_tuple,
                               IStr selected_op) {
  Node n;
  n.kind = NodeKind::Op;
  auto names = graph->api_names.find(e);
  if (names == graph->api_names.end()) {
    IStr op(e->op.empty() ? std::string_view(e->name).substr(e->name.rfind('.') + 1)
                          : std::string_view(e->op));
    names = graph->api_names.emplace(e, std::make_pair(IStr(e->name), op)).first;
  }
  n.api = names->second.first;
  n.op = selected_op.empty() ? names->second.second : selected_op;
  if (obj && obj->cell && !obj->cell->path.empty()) {
    n.scope = obj->cell->path;
    // A layer's node is named after its path; applying it again adds #2, #3...
    CellState& cs = *obj->cell;
    if (cs.calls_graph != graph->graph_id) {
      cs.calls_graph = graph->graph_id;
      cs.calls = 0;
    }
    ++cs.calls;
    n.id = cs.calls == 1 ? cs.path.str() : cs.path + "#" + std::to_string(cs.calls);
    n.params.reserve(cs.api_params->size());
    for (auto& p : *cs.api_params) n.params.push_back(layer_param_name(cs, p.name));
    n.layer_attrs = cs.attrs;
  } else {
    n.scope = current_scope();
    n.id = graph->unique_id(n.scope.empty() ? n.op.str() : n.scope + "/" + n.op);
    // An API object without a path of its own (the root itself, the loss of a root WithLossCell,
    // whose sub-Cells are not prefixed, a primitive built in construct): its Parameters are named
    // as the report names them, and its constructor's attributes reach the kernel all the same.
    if (obj && obj->cell && obj->cell->api) {
      for (auto& p : *obj->cell->api_params)
        n.params.push_back(layer_param_name(*obj->cell, p.name));
      n.layer_attrs = obj->cell->attrs;
    }
  }
  n.inputs.reserve(inputs.size());
  for (const Value& in : inputs) n.inputs.push_back(graph_value(in, site));
  n.outputs = outputs;
  n.attrs = std::move(attrs);
  n.file = site.file_id();
  n.range = site.range();
  n.flops = flops;
  attach_parallel(*this, n, obj);
  auto idx = static_cast<uint32_t>(graph->graph.nodes.size());
  graph->graph.nodes.push_back(std::move(n));
  if (cell_stack.size() > 1) {
    if (graph->caller_scope.size() <= idx) graph->caller_scope.resize(idx + 1);
    graph->caller_scope[idx] = current_scope();
  }
  std::vector<Value> outs;
  outs.reserve(outputs.size());
  for (uint32_t i = 0; i < outputs.size(); ++i) {
    auto t = std::make_shared<TensorObj>(outputs[i]);
    t->graph_id = graph->graph_id;
    t->ref = ValueRef{idx, i};
    outs.push_back(Value::obj(t));
  }
  return pack_outputs(std::move(outs), graph->graph.nodes[idx].attrs, returns_tuple);
}

Value Interpreter::compile_construct(InstanceObj* cell, const Value& cell_value, CallArgs& args,
                                     const Site& site) {
  if (std::find(cell_stack.begin(), cell_stack.end(), cell) != cell_stack.end()) {
    report(site, Severity::Error, "recursion",
           "`" + cell->cls->name + "` calls itself from its own construct");
    return Value::unknown();
  }
  ClassObj* owner = nullptr;
  FunctionObj* fn = nullptr;
  for (ClassObj* c : cell->cls->mro) {
    if (Value* v = c->attrs.find_str("construct")) {
      fn = v->as<FunctionObj>();
      owner = c;
      break;
    }
  }
  if (!fn) return Value::unknown();
  cell_stack.push_back(cell);
  if (graph) {
    graph->scope_class[cell->cell->path] = &cell->cls->name;
    graph->graph.scope_classes.emplace(cell->cell->path.str(), cell->cls->name);
  }
  Value result;
  try {
    result = call_function(fn, args, site, &cell_value, owner);
  } catch (...) {
    cell_stack.pop_back();
    throw;
  }
  cell_stack.pop_back();
  if (result.is_none()) {
    bool has_return = false;
    std::function<void(std::span<ast::Node*>)> scan = [&](std::span<ast::Node*> body) {
      for (ast::Node* s : body) {
        if (!s || has_return) return;
        if (s->kind == ast::K::Return && s->a) has_return = true;
        if (s->kind == ast::K::FunctionDef || s->kind == ast::K::ClassDef) continue;
        scan(s->list);
        scan(s->list2);
        if (s->a && s->a->kind == ast::K::Block) scan(s->a->list);
        if (s->b && s->b->kind == ast::K::Block) scan(s->b->list);
      }
    };
    scan(fn->def->list2);
    if (!has_return) {
      SourceRange r = fn->def->range;
      r.end = Position{r.start.line,
                       r.start.column + 3 + 1 + static_cast<uint32_t>(fn->def->str.size())};
      report_at(fn->module ? fn->module->file : site.file(), r, Severity::Warning, "no-return",
                "`" + cell->cls->name +
                    ".construct` returns nothing: the compiled graph has no output (MindSpore "
                    "reports \"No output node found\" when exporting)");
    }
  }
  return result;
}

Value Interpreter::tensor_binop(std::string_view api, const Value& a, const Value& b,
                                const Site& site) {
  const ApiEntry* e = Registry::instance().find(api, options.mindspore_version);
  if (!e) return Value::unknown();
  CallArgs args;
  args.pos.push_back(a);
  args.pos_ranges.push_back(site.node && site.node->a ? site.node->a->range : site.range());
  if (!b.is_none() || e->call_params.size() > 1) {
    if (!(b.is_none() && e->call_params.size() > 1 && !e->call_params[1].required())) {
      args.pos.push_back(b);
      args.pos_ranges.push_back(site.node && site.node->b ? site.node->b->range : site.range());
    }
  }
  Value r = call_api_function(e, args, site, nullptr);
  // A constant result (no operand in the graph): its elements, when the operands' are known.
  auto* rt = r.as<TensorObj>();
  if (!rt || rt->graph_id != 0 || rt->poisoned) return r;
  if (b.is_none()) {
    if (api == "ops.neg") npv::unary("negative", a, *rt);
    return r;
  }
  auto op = npv::op_for_api(api);
  if (!op) return r;
  auto* ta = a.as<TensorObj>();
  auto* tb = b.as<TensorObj>();
  // numpy arrays (with each other or Python numbers) follow numpy's dtype rules.
  if ((!ta || ta->is_numpy) && (!tb || tb->is_numpy)) {
    rt->is_numpy = true;
    npv::registry_function(api, {a, b}, nullptr, *rt);
  } else {
    npv::binary(*op, a, b, *rt);
  }
  return r;
}

Value Interpreter::tensor_attr(const Value& tv, std::string_view name, const Site& site) {
  auto* t = tv.as<TensorObj>();
  if (!t) return Value::unknown();
  const Shape& s = t->type.shape;
  auto dim_value = [](Dim d) -> Value {
    if (d.is_known()) return Value::integer(d.value());
    if (d.is_symbolic()) return Value::obj(std::make_shared<SymIntObj>(d));
    return Value::unknown();
  };
  if (name == "shape") {
    if (!s.ranked) return Value::unknown();
    std::vector<Value> dims;
    for (Dim d : s.dims) dims.push_back(dim_value(d));
    return make_tuple(std::move(dims));
  }
  if (name == "ndim")
    return s.ranked ? Value::integer(static_cast<int64_t>(s.rank())) : Value::unknown();
  if (name == "dtype") return dtype_value(t->type.dtype);
  if (name == "size") return dim_value(s.num_elements());
  if (name == "itemsize") return Value::integer(static_cast<int64_t>(dtype_size(t->type.dtype)));
  if (name == "nbytes")
    return dim_value(s.num_elements() *
                     Dim::known(static_cast<int64_t>(dtype_size(t->type.dtype))));
  if (name == "tolist" && t->is_numpy && s.ranked && s.rank() == 1) {
    // A 1-D array with known elements as a list of Python numbers.
    return Value::obj(std::make_shared<BuiltinObj>(
        "tolist", [this, tv](Interpreter&, CallArgs&, const Site& cs) -> Value {
          auto items = iterate(tv, cs);
          if (!items || (!items->empty() && (*items)[0].as<TensorObj>())) return Value::unknown();
          return make_list(std::move(*items));
        }));
  }
  if (name == "astype" && t->is_numpy) {
    // numpy's astype takes Python types and numpy dtypes (`arr.astype(int)`), not only
    // MindSpore's; int is int64 and float is float64, as on Linux.
    return Value::obj(std::make_shared<BuiltinObj>(
        "astype", [tv](Interpreter&, CallArgs& a, const Site&) -> Value {
          auto* src = tv.as<TensorObj>();
          const Value* d = a.pos.empty() ? a.find_kw("dtype") : &a.pos[0];
          if (!d) return Value::unknown();
          std::optional<DType> to;
          if (auto* dt = d->as<DTypeObj>()) to = dt->dtype;
          if (auto* c = d->as<ClassObj>()) {
            if (c->native == NativeClass::Int) to = DType::Int64;
            if (c->native == NativeClass::Float) to = DType::Float64;
            if (c->native == NativeClass::Bool) to = DType::Bool;
          }
          if (auto* str = str_of(*d)) to = dtype_from_name(*str);
          if (!to) return Value::unknown();
          auto r = std::make_shared<TensorObj>(TensorType{src->type.shape, *to});
          r->is_numpy = true;
          if (src->fill) r->fill = npv::to_dtype(*to, *src->fill);
          if (src->values) {
            std::vector<double> v(*src->values);
            for (double& x : v) x = npv::to_dtype(*to, x);
            r->values = std::make_shared<const std::vector<double>>(std::move(v));
          }
          return Value::obj(r);
        }));
  }
  if (name == "requires_grad") return Value::boolean(t->requires_grad);
  if (name == "name") {
    if (!t->param_path.empty()) return make_str(t->param_path);
    return t->param_name.empty() ? Value::unknown() : make_str(t->param_name);
  }
  if (name == "data") return tv;
  if (name == "T" || name == "mT") {
    if (!s.ranked) return Value::unknown();
    std::vector<Value> perm;
    for (size_t i = s.rank(); i-- > 0;) perm.push_back(Value::integer(static_cast<int64_t>(i)));
    const ApiEntry* e = Registry::instance().find("ops.transpose", options.mindspore_version);
    if (!e) return Value::unknown();
    CallArgs a;
    a.pos = {tv, make_tuple(std::move(perm))};
    a.pos_ranges = {site.range(), site.range()};
    Value r = call_api_function(e, a, site, nullptr);
    if (auto* rt = r.as<TensorObj>(); rt && rt->graph_id == 0 && !rt->poisoned) {
      rt->is_numpy = t->is_numpy;
      npv::transpose(tv, {}, *rt);
    }
    return r;
  }
  static const char* kSelfReturning[] = {"set_data",
                                         "init_data",
                                         "set_dtype",
                                         "assign_value",
                                         "clone",
                                         "asnumpy",
                                         "asnumpy_of_slice_persistent_data",
                                         "value",
                                         "set_param_ps",
                                         "contiguous"};
  for (const char* m : kSelfReturning) {
    if (name == m) {
      Value self = tv;
      return Value::obj(std::make_shared<BuiltinObj>(
          m, [self](Interpreter&, CallArgs&, const Site&) { return self; }));
    }
  }
  std::string full = "Tensor." + std::string(name);
  const ApiEntry* e = Registry::instance().find(full, options.mindspore_version);
  if (!e) {
    // A method without a rule (numpy arrays share the Tensor method rules above).
    return Value::obj(std::make_shared<BuiltinObj>(
        full, [full](Interpreter& in, CallArgs& args, const Site& call_site) -> Value {
          in.mark_consumed(args.pos);
          if (in.graph) {
            in.report(call_site, Severity::Information, "unmodelled-api",
                      "Cellscope has no shape rule for `" + full +
                          "`; shapes after this call are unknown");
            auto out = std::make_shared<TensorObj>(TensorType{Shape::unranked(), DType::Unknown});
            out->poisoned = true;
            return Value::obj(out);
          }
          return Value::unknown();
        }));
  }
  Value self = tv;
  return Value::obj(std::make_shared<BuiltinObj>(
      full,
      [e, self, method = std::string(name)](Interpreter& in, CallArgs& args,
                                            const Site& cs) -> Value {
        CallArgs with_self;
        with_self.pos.push_back(self);
        with_self.pos_ranges.push_back(cs.node && cs.node->a ? cs.node->a->range : cs.range());
        with_self.pos.insert(with_self.pos.end(), args.pos.begin(), args.pos.end());
        with_self.pos_ranges.insert(with_self.pos_ranges.end(), args.pos_ranges.begin(),
                                    args.pos_ranges.end());
        with_self.kw = args.kw;
        with_self.kw_ranges = args.kw_ranges;
        with_self.open = args.open;
        Value r = in.call_api_function(e, with_self, cs, nullptr);
        auto* rt = r.as<TensorObj>();
        if (!rt || rt->graph_id != 0 || rt->poisoned) return r;
        if (self.as<TensorObj>()->is_numpy) rt->is_numpy = true;
        // The elements of a constant result, for the methods that only reorder or convert them.
        std::string_view m = method;
        if (m == "astype" || m == "reshape" || m == "view" || m == "flatten" || m == "squeeze" ||
            m == "expand_dims" || m == "unsqueeze" || m == "ravel" || m == "to")
          npv::same_order(self, *rt);
        else if (m == "transpose" || m == "permute") {
          std::vector<Value> perm_args{self};
          if (args.pos.size() == 1 && seq_items(args.pos[0]))
            perm_args.push_back(args.pos[0]);
          else if (!args.pos.empty())
            perm_args.push_back(make_tuple(args.pos));
          npv::registry_function("ops.transpose", perm_args, args.find_kw("axes"), *rt);
        }
        return r;
      }));
}

namespace {

// A basic index (ints, slices of ints, None, Ellipsis) as MindSpore's StridedSlice primitive takes
// it and MindIR records it: per index item a begin, end and stride, and five bit masks (item k is
// bit k): begin/end left out, Ellipsis, None (a new axis), an int (the axis is dropped). Not
// encodable (`ok` false): a symbolic or unknown int, a tensor, list or bool index.
struct SliceAttrs {
  std::vector<int64_t> begin, end, strides;
  int64_t begin_mask = 0, end_mask = 0, ellipsis_mask = 0, new_axis_mask = 0, shrink_axis_mask = 0;
  bool ok = true;

  void add(const Value& x) {
    const size_t k = begin.size();
    if (k >= 63) ok = false;
    if (!ok) return;
    const int64_t bit = int64_t{1} << k;
    int64_t b = 0, e = 0, st = 1;
    if (x.is_none()) {
      new_axis_mask |= bit;
    } else if (x.as<EllipsisObj>()) {
      ellipsis_mask |= bit;
    } else if (x.is_int()) {
      b = x.as_int();
      e = b == std::numeric_limits<int64_t>::max() ? b : b + 1;  // a shrunk axis reads `begin`
      shrink_axis_mask |= bit;
    } else if (auto* sl = x.as<SliceObj>()) {
      auto part = [&](const Value& v, int64_t& out, int64_t& mask) {
        if (v.is_none()) {
          mask |= bit;
        } else if (v.is_int()) {
          out = v.as_int();
        } else {
          ok = false;
        }
      };
      part(sl->start, b, begin_mask);
      part(sl->stop, e, end_mask);
      if (sl->step.is_int()) {
        st = sl->step.as_int();
        ok &= st != 0;
      } else if (!sl->step.is_none()) {
        ok = false;
      }
    } else {
      ok = false;
    }
    begin.push_back(b);
    end.push_back(e);
    strides.push_back(st);
  }

  void record(std::vector<Attr>& attrs) const {
    attrs.push_back(Attr{"begin", begin});
    attrs.push_back(Attr{"end", end});
    attrs.push_back(Attr{"strides", strides});
    attrs.push_back(Attr{"begin_mask", begin_mask});
    attrs.push_back(Attr{"end_mask", end_mask});
    attrs.push_back(Attr{"ellipsis_mask", ellipsis_mask});
    attrs.push_back(Attr{"new_axis_mask", new_axis_mask});
    attrs.push_back(Attr{"shrink_axis_mask", shrink_axis_mask});
  }
};

}  // namespace

// Indexing a tensor with ints, slices, None, Ellipsis, lists and integer tensors (GRAPH_MODE
// semantics): the result shape, plus a StridedSlice/Gather node. A StridedSlice records the
// index as typed attributes (SliceAttrs) for the kernels and exporters, and `index`, the index
// as written, for people (hovers, the view) only.
Value Interpreter::tensor_subscript(const Value& tv, const Value& index, const Site& site) {
  auto* t = tv.as<TensorObj>();
  const Shape& s = t->type.shape;
  std::vector<Value> idx;
  if (auto* tup = index.as<TupleObj>())
    idx = tup->items;
  else
    idx.push_back(index);
  auto poisoned_result = [&]() {
    auto r = std::make_shared<TensorObj>(TensorType{Shape::unranked(), t->type.dtype});
    r->poisoned = true;
    return Value::obj(r);
  };
  if (t->poisoned) return poisoned_result();
  Shape out;
  bool gather = false;
  std::string index_text;
  if (!s.ranked) {
    out = Shape::unranked();
  } else {
    size_t consumed = 0;
    for (const Value& x : idx) {
      if (!(x.is_none() || x.as<EllipsisObj>())) ++consumed;
    }
    size_t axis = 0;
    for (const Value& x : idx) {
      if (!index_text.empty()) index_text += ", ";
      if (x.is_none()) {
        out.dims.push_back(Dim::known(1));
        index_text += "None";
        continue;
      }
      if (x.as<EllipsisObj>()) {
        size_t fill = s.rank() >= consumed ? s.rank() - consumed : 0;
        for (size_t k = 0; k < fill && axis < s.rank(); ++k) out.dims.push_back(s.dims[axis++]);
        index_text += "...";
        continue;
      }
      if (axis >= s.rank()) {
        report(site, Severity::Error, "index-error",
               "too many indices for a tensor of shape " + s.str() + " (" +
                   std::to_string(consumed) + " indices for rank " + std::to_string(s.rank()) +
                   ")" + instance_note());
        return poisoned_result();
      }
      Dim d = s.dims[axis];
      if (x.is_int()) {
        int64_t i = x.as_int();
        if (d.is_known() && (i >= d.value() || i < -d.value())) {
          report(site, Severity::Error, "index-error",
                 "index " + std::to_string(i) + " is out of bounds for axis " +
                     std::to_string(axis) + " with size " + std::to_string(d.value()) +
                     instance_note());
          return poisoned_result();
        }
        index_text += std::to_string(i);
        ++axis;
        continue;
      }
      if (x.as<SymIntObj>() || x.is_unknown()) {
        index_text += "i";
        ++axis;
        continue;
      }
      if (auto* sl = x.as<SliceObj>()) {
        auto part = [](const Value& v) { return v.is_none() ? std::string() : repr(v); };
        index_text += part(sl->start) + ":" + part(sl->stop) +
                      (sl->step.is_none() ? "" : ":" + part(sl->step));
        bool full = sl->start.is_none() && sl->stop.is_none() &&
                    (sl->step.is_none() || (sl->step.is_int() && sl->step.as_int() == 1));
        if (full) {
          out.dims.push_back(d);
        } else if (auto b = d.is_known() ? slice_indices(*sl, d.value()) : std::nullopt) {
          out.dims.push_back(Dim::known(b->length));
        } else if ((sl->start.is_none() || (sl->start.is_int() && sl->start.as_int() >= 0)) &&
                   sl->stop.is_int() && sl->stop.as_int() >= 0 && (sl->step.is_none())) {
          int64_t a = sl->start.is_int() ? sl->start.as_int() : 0;
          out.dims.push_back(Dim::known(std::max<int64_t>(0, sl->stop.as_int() - a)));
        } else if (sl->stop.as<SymIntObj>() && sl->start.is_none() && sl->step.is_none()) {
          out.dims.push_back(sl->stop.as<SymIntObj>()->dim);
        } else {
          out.dims.push_back(Dim::unknown());
        }
        ++axis;
        continue;
      }
      if (auto* it = x.as<TensorObj>()) {
        gather = true;
        index_text += "tensor";
        if (it->type.dtype == DType::Bool) {
          out.dims.push_back(Dim::unknown());
        } else if (it->type.shape.ranked) {
          for (Dim dd : it->type.shape.dims) out.dims.push_back(dd);
        } else {
          out = Shape::unranked();
          break;
        }
        ++axis;
        continue;
      }
      if (auto* items = seq_items(x)) {
        gather = true;
        index_text += repr(x);
        out.dims.push_back(Dim::known(static_cast<int64_t>(items->size())));
        ++axis;
        continue;
      }
      if (x.k == VK::Bool) {
        out.dims.push_back(Dim::known(x.b ? 1 : 0));
        continue;
      }
      report(site, Severity::Error, "type-error",
             "a tensor cannot be indexed with `" + type_name(x) + "`" + instance_note());
      return poisoned_result();
    }
    if (out.ranked) {
      for (; axis < s.rank(); ++axis) out.dims.push_back(s.dims[axis]);
    }
  }
  TensorType rt{out, t->type.dtype};
  bool in_graph = graph && (t->graph_id != 0 || t->is_parameter);
  std::vector<Value> inputs{tv};
  for (const Value& x : idx) {
    if (auto* it = x.as<TensorObj>()) {
      in_graph |= graph && it->graph_id != 0;
      inputs.push_back(x);
    }
  }
  if (!in_graph) {
    auto r = std::make_shared<TensorObj>(rt);
    r->is_numpy = t->is_numpy;
    npv::index(tv, idx, *r);
    // numpy: an element of an array is a numpy scalar, which model code compares and branches
    // on as a Python number (`DropPath(dpr[i]) if dpr[i] > 0. else Identity()` over
    // np.linspace's rates: mindcv's CrossViT).
    if (r->is_numpy) {
      if (auto scalar = npv::as_numpy_scalar(*r)) return *scalar;
    }
    return Value::obj(r);
  }
  static ApiEntry kIndex = [] {
    ApiEntry e;
    e.name = "Tensor.__getitem__";
    e.op = "StridedSlice";
    return e;
  }();
  static ApiEntry kGather = [] {
    ApiEntry e;
    e.name = "Tensor.__getitem__";
    e.op = "Gather";
    return e;
  }();
  std::vector<Attr> attrs{Attr{"index", "[" + index_text + "]"}};
  if (!gather) {
    SliceAttrs slice;
    for (const Value& x : idx) slice.add(x);
    if (slice.ok && s.ranked) slice.record(attrs);
  }
  return add_op_node(gather ? &kGather : &kIndex, nullptr, std::move(inputs), {rt},
                     std::move(attrs), 0, site, false);
}

}  // namespace graphcore::eval
