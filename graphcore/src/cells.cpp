// Attribute access, instantiation and the nn.Cell object model (sub-Cell registration,
// Parameters, SequentialCell/CellList containers, the Cell methods model code calls).
#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "interp.h"
#include "training_eval.h"

namespace graphcore::eval {

namespace {

// Attributes every nn.Cell has that model code reads; reading them is not an error.
const std::unordered_set<std::string_view>& cell_plain_attrs() {
  static const std::unordered_set<std::string_view> kAttrs = {
      "training",
      "phase",
      "cls_name",
      "requires_grad",
      "param_prefix",
      "bprop_debug",
      "parameter_layout_dict",
      "parallel_parameter_name_list",
      "enable_hook",
      "is_dynamic",
      "_params",
      "_cells",
      "_auto_prefix",
      "_construct_inputs_names",
      "__class__",
      "__name__",
      "_is_dynamic_name",
      "jit_config_dict",
      "recompute_cell",
      "mixed_precision_type",
      "__dict__",
      "_params_list",
      "_primitives",
      // The rest of MindSpore 2.10's public nn.Cell attributes (dir(nn.Cell)); those
      // cell_method models win.
      "IGNORE_LIST",
      "T_destination",
      "add_flags",
      "add_flags_recursive",
      "apply",
      "buffers",
      "cast_inputs",
      "cell_init_args",
      "cells",
      "cells_and_names",
      "check_names",
      "check_names_and_refresh_name",
      "compile",
      "compile_and_run",
      "compile_cache",
      "compile_phase",
      "compiled",
      "construct",
      "create_time",
      "enable_backward_hook",
      "exist_names",
      "exist_objs",
      "extend_repr",
      "generate_scope",
      "get_buffer",
      "get_extra_state",
      "get_flags",
      "get_func_graph_proto",
      "get_inputs",
      "get_mixed_precision_type",
      "get_parameters",
      "get_scope",
      "get_sub_cell",
      "global_cells",
      "init_parameters_data",
      "insert_child_to_cell",
      "insert_param_to_cell",
      "load_state_dict",
      "name_cells",
      "named_buffers",
      "offload",
      "parallel_parameter_merge_net_dict",
      "parameters_and_names",
      "parameters_broadcast_dict",
      "parameters_dict",
      "phase_cache",
      "pipeline_segment",
      "pipeline_stage",
      "recompute",
      "register_backward_hook",
      "register_backward_pre_hook",
      "register_buffer",
      "register_forward_hook",
      "register_forward_pre_hook",
      "register_load_state_dict_post_hook",
      "register_load_state_dict_pre_hook",
      "register_parameter_forward_hook",
      "register_saved_tensors_hooks",
      "register_state_dict_post_hook",
      "register_state_dict_pre_hook",
      "remove_redundant_parameters",
      "run_construct",
      "set_boost",
      "set_broadcast_flag",
      "set_comm_fusion",
      "set_data_parallel",
      "set_extra_state",
      "set_grad",
      "set_inputs",
      "set_jit_config",
      "set_mixed_precision_type",
      "set_train",
      "shard",
      "state_dict",
      "to",
      "to_empty",
      "to_float",
      "total_instance_count",
      "trainable_params",
      "untrainable_params",
      "update_cell_prefix",
      "update_cell_type",
      "update_parameters_name",
  };
  return kAttrs;
}

std::string join_name(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

}  // namespace

// (name, cell) pairs depth-first (interp.h), as MindSpore's cells_and_names yields them: sub-Cells,
// then a container's items (by index, or the OrderedDict's names); each Cell once.
std::vector<std::pair<std::string, Value>> cells_and_names(const Value& root) {
  std::vector<std::pair<std::string, Value>> out;
  std::unordered_set<const Object*> seen;  // a walk at every binding: no quadratic lookup
  std::function<void(const Value&, const std::string&)> rec = [&](const Value& v,
                                                                  const std::string& prefix) {
    auto* c = v.as<InstanceObj>();
    if (!c || !c->cell) return;
    if (!seen.insert(c).second) return;
    out.emplace_back(prefix, v);
    for (auto& [k, child] : c->cell->children) rec(child, join_name(prefix, k));
    for (size_t i = 0; i < c->cell->items.size(); ++i) {
      std::string k = i < c->cell->item_names.size() ? c->cell->item_names[i] : std::to_string(i);
      rec(c->cell->items[i], join_name(prefix, k));
    }
  };
  rec(root, "");
  return out;
}

namespace {

// MindSpore names a Parameter where it is bound (Cell.__setattr__, evaluated in __init__): a
// Parameter with a generated name takes its attribute's name (insert_param_to_cell), and a Cell
// bound under `attr` in a Cell with auto_prefix renames every Parameter of its tree to
// "attr." + the path parameters_and_names() gives it (update_parameters_name), each once.
// `.name` reads the result (TensorObj::param_path).
void name_bound_parameters(const std::string& attr, const Value& v, bool auto_prefix) {
  if (auto* t = v.as<TensorObj>()) {
    if (t->is_parameter && t->param_path.empty() &&
        (t->param_name.empty() || t->param_name == "Parameter"))
      t->param_path = attr;
    return;
  }
  if (!auto_prefix) return;
  std::unordered_set<const TensorObj*> named;
  for (auto& [cell_path, cellv] : cells_and_names(v)) {
    std::string prefix = attr;
    if (!cell_path.empty()) prefix.append(".").append(cell_path);
    for (auto& [k, p] : cellv.as<InstanceObj>()->cell->params) {
      auto* t = p.as<TensorObj>();
      if (t && named.insert(t).second) t->param_path = join_name(prefix, k);
    }
  }
}

// The current MindSpore name of the first Parameter parameters_and_names() yields for Cell `v`'s
// tree, or nullopt when it holds none.
std::optional<std::string> first_parameter_name(const Value& v) {
  for (auto& [cell_path, cellv] : cells_and_names(v)) {
    for (auto& [k, p] : cellv.as<InstanceObj>()->cell->params) {
      if (const auto* t = p.as<TensorObj>()) return t->mindspore_name(join_name(cell_path, k));
    }
  }
  return std::nullopt;
}

std::vector<std::string> split_dots(const std::string& s) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == '.') {
      out.emplace_back();
    } else {
      out.back().push_back(c);
    }
  }
  return out;
}

// MindSpore 2.10's _get_prefix_and_index (nn/layer/container.py), which CellList and
// SequentialCell's append / extend / insert put before the new item's index: the part of the
// first Parameter's current name before the first item's key (confirmed by the second item's
// first Parameter when there is one). It reads names, not paths, so a container bound empty and
// filled by append names its items' Parameters "0.0.weight", "0.1.0.gamma", ... (mindcv's
// EdgeNeXt; measured with MindSpore 2.10), not "downsample_layers.1.0.gamma". `index`: the
// position of the key in the name.
struct ContainerPrefix {
  std::string prefix;
  size_t index = 0;
};
ContainerPrefix container_prefix(const CellState& cs) {
  ContainerPrefix out;
  std::optional<std::string> first;
  std::optional<std::string> second;
  std::string first_key;
  std::string second_key;
  for (size_t i = 0; i < cs.items.size() && !second; ++i) {
    auto name = first_parameter_name(cs.items[i]);
    if (!name) continue;
    std::string key = i < cs.item_names.size() ? cs.item_names[i] : std::to_string(i);
    if (!first) {
      first = std::move(name);
      first_key = std::move(key);
    } else {
      second = std::move(name);
      second_key = std::move(key);
    }
  }
  if (!first) return out;
  const std::vector<std::string> parts = split_dots(*first);
  const std::vector<std::string> second_parts =
      second ? split_dots(*second) : std::vector<std::string>{};
  for (size_t idx = 0; idx < parts.size(); ++idx) {
    if (parts[idx] != first_key) continue;
    out.prefix.clear();
    for (size_t j = 0; j < idx; ++j) out.prefix += parts[j] + ".";
    out.index = idx;
    if (second && idx < second_parts.size() && second_parts[idx] == second_key) break;
  }
  return out;
}

// update_parameters_name(prefix) on Cell `v`: every Parameter of its tree is named prefix + its
// path in the tree.
void rename_parameters(const Value& v, const std::string& prefix) {
  std::unordered_set<const TensorObj*> named;
  for (auto& [cell_path, cellv] : cells_and_names(v)) {
    for (auto& [k, p] : cellv.as<InstanceObj>()->cell->params) {
      auto* t = p.as<TensorObj>();
      if (t && named.insert(t).second) t->param_path = prefix + join_name(cell_path, k);
    }
  }
}

}  // namespace

// What a subclass of a MindSpore layer reads of the layer's own implementation: its Parameters
// (`self.gamma` of nn.LayerNorm) and the primitive its construct calls (`self.layer_norm`,
// checked against MindSpore 2.10's nn.LayerNorm: `P.LayerNorm(begin_norm_axis,
// begin_params_axis, epsilon)`). Built once per instance and kept in its attributes.
std::optional<Value> Interpreter::api_internal_attr(InstanceObj* inst, std::string_view name,
                                                    const Site& site) {
  CellState& cs = *inst->cell;
  for (const ParamInfo& p : *cs.api_params) {
    if (p.name != name) continue;
    Value v = make_parameter(p);
    inst->attrs.set(name_str(name), v);
    return v;
  }
  // An argument of the primitive: from the layer's constructor argument `from` (its value or
  // its default), or the constant `value` when `from` is null.
  struct Arg {
    const char* name;
    const char* from = nullptr;
    int64_t value = 0;
    bool is_bool = false;
  };
  struct Internal {
    const char* api;
    const char* attr;
    const char* primitive;
    std::initializer_list<Arg> args;
  };
  // Checked against MindSpore 2.10's nn/layer/normalization.py, conv.py and basic.py: what each
  // layer's __init__ assigns (`self.conv2d = ops.Conv2D(out_channel=self.out_channels, ...,
  // mode=1, pad=self.padding, ...)`). A subclass's construct calls them on values it computes:
  // mindcv's BiT convolves with a standardised weight, `self.conv2d(x, w)`.
  static const Internal kInternals[] = {
      {"nn.LayerNorm",
       "layer_norm",
       "ops.LayerNorm",
       {{"begin_norm_axis", "begin_norm_axis"},
        {"begin_params_axis", "begin_params_axis"},
        {"epsilon", "epsilon"}}},
      {"nn.Conv2d",
       "conv2d",
       "ops.Conv2D",
       {{"out_channel", "out_channels"},
        {"kernel_size", "kernel_size"},
        {"mode", nullptr, 1},
        {"pad_mode", "pad_mode"},
        {"pad", "padding"},
        {"stride", "stride"},
        {"dilation", "dilation"},
        {"group", "group"},
        {"data_format", "data_format"}}},
      {"nn.Conv2d", "bias_add", "ops.BiasAdd", {{"data_format", "data_format"}}},
      {"nn.Dense", "matmul", "ops.MatMul", {{"transpose_b", nullptr, 1, true}}},
      {"nn.Dense", "bias_add", "ops.BiasAdd", {}},
  };
  for (const Internal& in : kInternals) {
    if (cs.api->name != in.api || name != in.attr) continue;
    const ApiEntry* prim = Registry::instance().find(in.primitive, options.mindspore_version);
    if (!prim) return std::nullopt;
    CallArgs args;
    for (const Arg& a : in.args) {
      if (a.from == nullptr) {
        args.kw.emplace_back(a.name,
                             a.is_bool ? Value::boolean(a.value != 0) : Value::integer(a.value));
        args.kw_ranges.push_back(site.range());
      } else if (auto bound = api_init_arg(cs, a.from)) {
        args.kw.emplace_back(a.name, bound->value);
        args.kw_ranges.push_back(site.range());
      }
    }
    Value cls = api_class(prim);
    Value v = instantiate(cls.as<ClassObj>(), cls, args, site);
    inst->attrs.set(name_str(name), v);
    return v;
  }
  return std::nullopt;
}

Value Interpreter::getattr(const Value& obj, std::string_view name, const Site& site,
                           bool report_missing) {
  if (obj.is_unknown()) return obj;
  if (obj.k != VK::Obj || !obj.o) {
    if (obj.is_number()) {
      if (name == "real") return obj;
      if (name == "imag") return Value::integer(0);
      if (name == "item" || name == "tolist") {  // numpy scalars read back as Python numbers
        return Value::obj(std::make_shared<BuiltinObj>(
            std::string(name), [obj](Interpreter&, CallArgs&, const Site&) { return obj; }));
      }
      if (auto m = builtin_method(obj, name)) return *m;
      // A number may stand for a numpy scalar (an element of a numpy array, tensor_subscript):
      // what numpy scalars have is not missing, only not modelled.
      static const std::unordered_set<std::string_view> kNumpyScalar = {
          "astype", "dtype",   "shape",   "ndim",   "size",     "itemsize", "nbytes",
          "T",      "reshape", "flatten", "ravel",  "squeeze",  "copy",     "round",
          "sum",    "mean",    "min",     "max",    "any",      "all",      "clip",
          "view",   "tobytes", "item",    "tolist", "__array__"};
      if (kNumpyScalar.contains(name)) return Value::unknown();
    }
    if (report_missing) {
      report(site, Severity::Error, "unknown-attribute",
             "`" + type_name(obj) + "` object has no attribute `" + std::string(name) + "`");
    }
    return Value::unknown();
  }
  switch (obj.o->kind) {
    case OK::Instance: {
      auto* inst = obj.as<InstanceObj>();
      if (Value* v = inst->attrs.find_str(name)) return *v;
      if (const Value* cv = inst->cls->lookup(name)) {
        if (auto* fn = cv->as<FunctionObj>()) {
          if (fn->is_static) return *cv;
          if (fn->is_classmethod)
            return Value::obj(std::make_shared<BoundMethodObj>(inst->cls_value, *cv));
          return Value::obj(std::make_shared<BoundMethodObj>(obj, *cv));
        }
        if (auto* p = cv->as<PropertyObj>()) {
          CallArgs none;
          if (auto* g = p->getter.as<FunctionObj>())
            return call_function(g, none, site, &obj, inst->cls);
          return Value::unknown();
        }
        return *cv;
      }
      if (inst->cell) {
        if (auto m = cell_method(inst, obj, name)) return *m;
        if (inst->cell->api) {
          if (auto a = api_init_arg(*inst->cell, name)) return a->value;
          if (auto v = api_internal_attr(inst, name, site)) return *v;
          return Value::unknown();  // private attributes of MindSpore's own classes
        }
        if (cell_plain_attrs().count(name)) return Value::unknown();
      }
      if (inst->cls->native_base() == NativeClass::Exception || inst->cls->api_base())
        return Value::unknown();
      // Attributes set where the evaluator cannot see them (an unknown base, `__getattr__`,
      // `setattr(self, name, ...)` with a name it does not know): unknown, not missing.
      if (name == "__setattr__") {
        // `self.__setattr__(name, value)`: the same as `setattr(self, name, value)`.
        return Value::obj(std::make_shared<BuiltinObj>(
            "__setattr__", [obj](Interpreter& in, CallArgs& a, const Site& s) -> Value {
              if (a.pos.size() != 2) return Value::unknown();
              if (auto* n = str_of(a.pos[0]))
                in.setattr(obj, *n, a.pos[1], s);
              else if (auto* i = obj.as<InstanceObj>())
                i->open = true;
              return Value::none();
            }));
      }
      if (name == "__class__") return inst->cls_value;
      // A dict subclass answers dict's methods from its items.
      if (inst->mapping) {
        if (auto m = builtin_method(Value::obj(inst->mapping), name)) return *m;
      }
      // A user `__getattr__` answers what is not found (Config: `return self[name]`).
      if (const Value* ga = inst->cls->lookup("__getattr__"); ga && ga->as<FunctionObj>()) {
        CallArgs a;
        a.pos.push_back(make_str(std::string(name)));
        a.pos_ranges.push_back(site.range());
        try {
          return call_function(ga->as<FunctionObj>(), a, site, &obj, inst->cls);
        } catch (const PyRaise&) {
          return Value::unknown();  // AttributeError: the class stays open (see ClassObj::open)
        }
      }
      if (inst->is_open()) return Value::unknown();
      if (name == "__dict__") {
        // `self.__dict__.update(cfg)`, `vars(self)`: from here on, attributes come and go by
        // names the evaluator does not follow.
        inst->open = true;
        return Value::unknown();
      }
      if (report_missing) {
        report(site, Severity::Error, "unknown-attribute",
               "`" + inst->cls->name + "` object has no attribute `" + std::string(name) + "`" +
                   (inst->cell ? " (it was never assigned in __init__)" : ""));
      }
      return Value::unknown();
    }
    case OK::Class: {
      auto* cls = obj.as<ClassObj>();
      if (const Value* v = cls->lookup(name)) {
        // An enum member is an object with `.name`/`.value`, not the value written.
        if (cls->is_enum && !v->as<FunctionObj>() && !v->as<PropertyObj>()) return Value::unknown();
        if (auto* fn = v->as<FunctionObj>(); fn && fn->is_classmethod) {
          return Value::obj(std::make_shared<BoundMethodObj>(obj, *v));
        }
        return *v;
      }
      if (name == "__name__") return make_str(cls->name);
      return Value::unknown();
    }
    case OK::Module: {
      auto* m = obj.as<ModuleObj>();
      if (m->opaque) return Value::unknown();
      if (Value* v = m->globals.find_str(name)) return *v;
      if (m->name == "numpy" || m->name == "numpy.random") return numpy_function(name);
      // Standard-library modules are modelled in part (functools, collections...), a module
      // still being initialised (a cyclic import) may define the name later, an open one
      // answers names its code does not show, and a package's submodule may have been imported
      // by any other module of the program.
      bool closed = !m->file.empty() && !m->loading && !m->open &&
                    !m->globals.find_str("__getattr__") &&
                    !m->globals.find_str("__cellscope_opaque_star__") &&
                    !std::filesystem::path(m->file).filename().string().starts_with("__init__");
      if (report_missing && closed) {
        report(site, Severity::Error, "unknown-attribute",
               "module `" + m->name + "` has no attribute `" + std::string(name) + "`");
      }
      return Value::unknown();
    }
    case OK::Namespace:
      return namespace_attr(obj.as<NamespaceObj>(), name, site, report_missing);
    case OK::Tensor:
      return tensor_attr(obj, name, site);
    case OK::Super: {
      auto* sup = obj.as<SuperObj>();
      auto* inst = sup->self.as<InstanceObj>();
      ClassObj* start_cls = inst ? inst->cls : sup->self.as<ClassObj>();
      if (!start_cls) return Value::unknown();
      auto& mro = start_cls->mro;
      auto it = std::find(mro.begin(), mro.end(), sup->start_after);
      if (it != mro.end()) ++it;
      for (; it != mro.end(); ++it) {
        ClassObj* c = *it;
        if (Value* v = c->attrs.find_str(name)) {
          if (v->as<FunctionObj>())
            return Value::obj(std::make_shared<BoundMethodObj>(sup->self, *v));
          return *v;
        }
        if (name == "__init__" && (c->native != NativeClass::None || c->api)) {
          // The native part of a Cell (nn.Cell, SequentialCell, CellList, nn.Conv2d...).
          ClassObj* native = c;
          Value self = sup->self;
          auto init = std::make_shared<BuiltinObj>(
              "__init__", [native, self](Interpreter& in, CallArgs& args, const Site& s) -> Value {
                auto* target = self.as<InstanceObj>();
                if (!target || !target->cell) return Value::none();
                if (native->api) {
                  in.init_api_object(target, native->api, args, s);
                } else if (native->native == NativeClass::SequentialCell ||
                           native->native == NativeClass::CellList) {
                  in.init_container(target, args, s);
                } else if (is_train_wrapper(native->native)) {
                  in.init_train_wrapper(target, native->native, args, s);
                }
                return Value::none();
              });
          init->init_of = native->api;
          return Value::obj(init);
        }
        if (name == "__init__" && c->native == NativeClass::Dict) {
          // dict.__init__(self, mapping_or_pairs, **kw) of a dict subclass: its items.
          Value self = sup->self;
          return Value::obj(std::make_shared<BuiltinObj>(
              "__init__", [self](Interpreter& in, CallArgs& a, const Site& s) -> Value {
                if (auto* target = self.as<InstanceObj>(); target && target->mapping)
                  in.add_dict_items(*target->mapping, a, s);
                return Value::none();
              }));
        }
        if (name == "__init__" && c->native == NativeClass::Object) {
          return Value::obj(std::make_shared<BuiltinObj>(
              "__init__", [](Interpreter&, CallArgs&, const Site&) { return Value::none(); }));
        }
      }
      if (inst && inst->cell) {
        if (auto m = cell_method(inst, sup->self, name)) return *m;
      }
      return Value::unknown();
    }
    case OK::Opaque: {
      auto* o = obj.as<OpaqueObj>();
      if (Value* v = o->attrs.find_str(name)) return *v;
      if (training) {
        if (auto m = training->method(*this, obj, name)) return *m;
      }
      return Value::unknown();
    }
    case OK::Str:
    case OK::List:
    case OK::Tuple:
    case OK::Dict:
    case OK::Set:
      if (auto m = builtin_method(obj, name)) return *m;
      // A real method the evaluator does not model (`set.union`, `str.maketrans`): unknown.
      if (python_method_exists(obj.o->kind, name)) return Value::unknown();
      break;
    case OK::Function:
      if (name == "__name__") return make_str(obj.as<FunctionObj>()->name);
      return Value::unknown();
    case OK::Property: {
      // `@name.setter` / `@name.getter`: a new property with that accessor replaced.
      auto* p = obj.as<PropertyObj>();
      if (name != "setter" && name != "getter") return Value::unknown();
      Value getter = p->getter;
      Value setter = p->setter;
      bool set = name == "setter";
      return Value::obj(std::make_shared<BuiltinObj>(
          std::string(name), [getter, setter, set](Interpreter&, CallArgs& a, const Site&) {
            if (a.pos.size() != 1) return Value::unknown();
            return Value::obj(
                std::make_shared<PropertyObj>(set ? getter : a.pos[0], set ? a.pos[0] : setter));
          }));
    }
    case OK::DType:
      return Value::unknown();
    default:
      return Value::unknown();
  }
  if (report_missing) {
    report(site, Severity::Error, "unknown-attribute",
           "`" + type_name(obj) + "` object has no attribute `" + std::string(name) + "`");
  }
  return Value::unknown();
}

bool Interpreter::hasattr(const Value& obj, std::string_view name) {
  if (auto* inst = obj.as<InstanceObj>()) {
    if (inst->attrs.find_str(name)) return true;
    return inst->cls->lookup(name) != nullptr;
  }
  Site none;
  Value v = getattr(obj, name, none, false);
  return !v.is_unknown();
}

void Interpreter::setattr(const Value& obj, const std::string& name, Value v, const Site& site) {
  if (auto* inst = obj.as<InstanceObj>()) {
    // A class's own `__setattr__` decides (mindyolo's Config stores into its dict items).
    // Not for Cells: their overrides end in nn.Cell's, which the analyser models itself.
    if (!inst->cell) {
      if (const Value* sa = inst->cls->lookup("__setattr__"); sa && sa->as<FunctionObj>()) {
        CallArgs a;
        a.pos.push_back(make_str(name));
        a.pos.push_back(std::move(v));
        a.pos_ranges.assign(2, site.range());
        call_function(sa->as<FunctionObj>(), a, site, &obj, inst->cls);
        return;
      }
    }
    // A property of the class: assignment runs its setter (which may store elsewhere).
    if (const Value* cv = inst->cls->lookup(name)) {
      if (auto* p = cv->as<PropertyObj>()) {
        if (auto* fn = p->setter.as<FunctionObj>()) {
          CallArgs a;
          a.pos.push_back(std::move(v));
          a.pos_ranges.push_back(site.range());
          call_function(fn, a, site, &obj, inst->cls);
        }
        return;
      }
    }
    if (inst->cell) {
      if (name == "pipeline_stage") set_pipeline_stage(*this, inst, v, site);
      cell_setattr(inst, name, v);
    } else {
      inst->attrs.set(make_str(name), std::move(v));
    }
    return;
  }
  if (auto* cls = obj.as<ClassObj>()) {
    cls->attrs.set(make_str(name), std::move(v));
    return;
  }
  if (auto* o = obj.as<OpaqueObj>()) {
    o->attrs.set(make_str(name), std::move(v));
    return;
  }
  if (obj.is_unknown()) return;
  if (auto* t = obj.as<TensorObj>()) {
    if (name == "requires_grad") {
      bool known = true;
      t->requires_grad = truthy(v, &known);
    }
    return;
  }
  if (auto* m = obj.as<ModuleObj>()) {
    // `mod.FLAG = True`, monkey-patching a helper: later reads see it.
    if (!m->opaque) m->globals.set(make_str(name), std::move(v));
    return;
  }
  // Functions, classes of MindSpore, namespaces... take arbitrary attributes in Python; only
  // values that really reject them (ints, strings, tuples) are an error.
  if (obj.is_number() || obj.is_none() || str_of(obj) || obj.as<TupleObj>()) {
    report(site, Severity::Error, "unknown-attribute",
           "cannot set attribute `" + name + "` on `" + type_name(obj) + "`");
  }
}

void Interpreter::cell_setattr(InstanceObj* inst, const std::string& name, const Value& v) {
  CellState& cs = *inst->cell;
  // A ParameterTuple (MindSpore 2.10's Cell._set_attr_for_param_or_param_tuple): each Parameter
  // joins the Cell's parameters under its own name ("cls_token.0" of crossvit's
  // `ms.ParameterTuple([Parameter(..., name='cls_token.' + str(i)) ...])`, not the attribute's),
  // once per object; the attribute holds the tuple. A sub-Cell's are prefixed with its path when
  // it is bound, as any other Parameter.
  if (auto* tup = v.as<TupleObj>(); tup && tup->parameter_tuple) {
    for (size_t i = 0; i < tup->items.size(); ++i) {
      auto* t = tup->items[i].as<TensorObj>();
      if (t == nullptr || !t->is_parameter) continue;
      const bool seen = std::any_of(cs.params.begin(), cs.params.end(), [&](const auto& kp) {
        return kp.second.template as<TensorObj>() == t;
      });
      if (seen) continue;
      std::string key = t->param_name;
      if (key.empty() || key == "Parameter") key = name + "." + std::to_string(i);
      cs.params.emplace_back(key, tup->items[i]);
    }
    inst->attrs.set(make_str(name), v);
    return;
  }
  // Cell.__setattr__ of a Tensor onto a Parameter attribute is that Parameter's set_data
  // (`self.pos_embed = init.initializer(...)`, `m.weight = initializer(...)` in _init_weights):
  // the Parameter stays, with its shape.
  if (auto* t = v.as<TensorObj>(); (t && !t->is_parameter) || v.is_unknown()) {
    for (const auto& [k, p] : cs.params) {
      if (k == name) return;
    }
  }
  // First assignment of a name (the common case, e.g. thousands of layers in an unrolled
  // __init__): append without scanning the registration lists.
  if (!inst->attrs.find_str(name)) {
    if (auto* child = v.as<InstanceObj>(); child && child->cell) {
      cs.children.emplace_back(name, v);
      name_bound_parameters(name, v, !cs.no_prefix);
    } else if (auto* t = v.as<TensorObj>(); t && t->is_parameter) {
      cs.params.emplace_back(name, v);
      name_bound_parameters(name, v, !cs.no_prefix);
    }
    inst->attrs.set(name_str(name), v);
    return;
  }
  auto upsert = [&name](std::vector<std::pair<std::string, Value>>& list, const Value& val) {
    for (auto& [k, x] : list) {
      if (k == name) {
        x = val;
        return;
      }
    }
    list.emplace_back(name, val);
  };
  auto erase = [&name](std::vector<std::pair<std::string, Value>>& list) {
    list.erase(std::remove_if(list.begin(), list.end(), [&](auto& p) { return p.first == name; }),
               list.end());
  };
  if (auto* child = v.as<InstanceObj>(); child && child->cell) {
    erase(cs.params);
    upsert(cs.children, v);
    name_bound_parameters(name, v, !cs.no_prefix);
  } else if (auto* t = v.as<TensorObj>(); t && t->is_parameter) {
    erase(cs.children);
    upsert(cs.params, v);
    name_bound_parameters(name, v, !cs.no_prefix);
  } else {
    erase(cs.children);
    erase(cs.params);
  }
  inst->attrs.set(make_str(name), v);
}

Value Interpreter::instantiate(ClassObj* cls, const Value& cls_value, CallArgs& args,
                               const Site& site) {
  // Native classes: conversions and MindSpore/Python constructors.
  if (cls->native != NativeClass::None && cls->native != NativeClass::Cell &&
      cls->native != NativeClass::SequentialCell && cls->native != NativeClass::CellList &&
      cls->native != NativeClass::CellDict && !is_train_wrapper(cls->native)) {
    Value ctor = builtin(std::string("__new_") + cls->name);
    if (!ctor.is_unknown()) return call(ctor, args, site);
    auto o = std::make_shared<OpaqueObj>(cls->name);
    o->args = args.pos;
    return Value::obj(o);
  }
  auto inst = std::make_shared<InstanceObj>(cls, cls_value);
  Value self = Value::obj(inst);
  if (cls->native_base() == NativeClass::Dict) inst->mapping = std::make_shared<DictObj>();
  if (cls->is_cell) {
    inst->cell = std::make_unique<CellState>();
    inst->cell->file = site.file_id();
    inst->cell->site = site.range();
  }
  // A TrainOneStepCell's construct is a training step, not a forward graph: the network it
  // wraps is the one to analyse.
  const NativeClass nb = cls->native_base();
  bool root_candidate = cls->is_cell && cell_init_depth == 0 && graph == nullptr &&
                        nb != NativeClass::TrainOneStepCell &&
                        nb != NativeClass::TrainOneStepWithLossScaleCell;
  if (cls->is_cell) ++cell_init_depth;
  struct DepthRestore {
    Interpreter* in;
    bool cell;
    ~DepthRestore() {
      if (cell) --in->cell_init_depth;
    }
  } restore{this, cls->is_cell};

  // Find __init__ through the MRO: a user method, or the native part.
  for (ClassObj* c : cls->mro) {
    if (Value* init = c->attrs.find_str("__init__")) {
      if (auto* fn = init->as<FunctionObj>()) {
        Value r = call_function(fn, args, site, &self, c);
        (void)r;
        break;
      }
    }
    if (c->api) {
      init_api_object(inst.get(), c->api, args, site);
      break;
    }
    if (c->native == NativeClass::Dict && inst->mapping) {
      add_dict_items(*inst->mapping, args, site);  // a dict subclass without its own __init__
      break;
    }
    if (c->native == NativeClass::SequentialCell || c->native == NativeClass::CellList) {
      init_container(inst.get(), args, site);
      break;
    }
    if (is_train_wrapper(c->native)) {
      init_train_wrapper(inst.get(), c->native, args, site);
      break;
    }
    if (c->native == NativeClass::Cell || c->native == NativeClass::Object) break;
  }
  if (root_candidate) module_level_cells.push_back(RootCandidate{self, site});
  return self;
}

void Interpreter::add_dict_items(DictObj& items, CallArgs& args, const Site& site) {
  Value made = call(builtin("dict"), args, site);
  if (auto* d = made.as<DictObj>()) {
    for (auto& [k, v] : d->entries) items.set(k, v);
    if (d->open) items.open = true;
  } else {
    items.open = true;
  }
}

// MindSpore 2.10's nn/wrap/cell_wrapper.py and loss_scale.py: each wrapper calls
// Cell.__init__(auto_prefix=False) and keeps its arguments as attributes (WithLossCell: _backbone,
// _loss_fn, and the backbone_network property; TrainOneStepCell: network, optimizer, sens,
// return_grad; TrainOneStepWithLossScaleCell: network, optimizer, scale_sense, and
// loss_scaling_manager when scale_sense is a Cell). What the training plan needs is reachable from
// them; the wrappers' other attributes (weights, grad, grad_reducer) are unknown.
void Interpreter::init_train_wrapper(InstanceObj* target, NativeClass which, CallArgs& args,
                                     const Site& site) {
  CellState& cs = *target->cell;
  cs.no_prefix = true;
  std::vector<std::pair<std::string_view, const char*>> params;  // name, default ("" required)
  std::string_view cls = "WithLossCell";
  if (which == NativeClass::WithLossCell) {
    params = {{"backbone", ""}, {"loss_fn", ""}};
  } else if (which == NativeClass::TrainOneStepCell) {
    cls = "TrainOneStepCell";
    params = {{"network", ""}, {"optimizer", ""}, {"sens", "None"}, {"return_grad", "False"}};
  } else {
    cls = "TrainOneStepWithLossScaleCell";
    params = {{"network", ""}, {"optimizer", ""}, {"scale_sense", ""}};
  }
  std::vector<Value> bound(params.size());
  std::vector<bool> given(params.size(), false);
  if (args.pos.size() > params.size() && !args.open) {
    report(site, Severity::Error, "too-many-arguments",
           std::string(cls) + "() takes " + std::to_string(params.size()) + " arguments, got " +
               std::to_string(args.pos.size()));
    return;
  }
  for (size_t i = 0; i < args.pos.size() && i < params.size(); ++i) {
    bound[i] = args.pos[i];
    given[i] = true;
  }
  for (const auto& kw : args.kw) {
    auto it = std::ranges::find_if(params, [&](const auto& p) { return p.first == kw.first; });
    if (it == params.end()) {
      if (!args.open) {
        report(site, Severity::Error, "unknown-keyword",
               std::string(cls) + "() got an unexpected keyword argument '" + kw.first + "'");
      }
      continue;
    }
    const auto i = static_cast<size_t>(it - params.begin());
    bound[i] = kw.second;
    given[i] = true;
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (given[i]) continue;
    if (std::string_view(params[i].second) == "None") {
      bound[i] = Value::none();
    } else if (std::string_view(params[i].second) == "False") {
      bound[i] = Value::boolean(false);
    } else {
      if (!args.open && !args.maybe_more) {
        report(site, Severity::Error, "missing-argument",
               std::string(cls) + "() missing required argument '" + std::string(params[i].first) +
                   "'");
      }
      bound[i] = Value::unknown();
    }
  }
  if (which == NativeClass::WithLossCell) {
    cell_setattr(target, "_backbone", bound[0]);
    cell_setattr(target, "_loss_fn", bound[1]);
    // The backbone_network property: the same Cell, not a second child.
    target->attrs.set(name_str("backbone_network"), bound[0]);
    return;
  }
  cell_setattr(target, "network", bound[0]);
  cell_setattr(target, "optimizer", bound[1]);
  if (which == NativeClass::TrainOneStepCell) {
    // sens=None is 1.0 (TrainOneStepCell.__init__); return_grad as given.
    cell_setattr(target, "sens", bound[2].is_none() ? Value::real(1.0) : bound[2]);
    cell_setattr(target, "return_grad", bound[3]);
    return;
  }
  // A Cell (DynamicLossScaleUpdateCell) is the loss_scaling_manager; MindSpore then keeps its
  // scale as the Parameter scale_sense, which is left to the training plan.
  if (auto* c = bound[2].as<InstanceObj>(); c && c->cell) {
    cell_setattr(target, "loss_scaling_manager", bound[2]);
    target->attrs.set(name_str("scale_sense"), bound[2]);
  } else {
    cell_setattr(target, "scale_sense", bound[2]);
  }
}

void Interpreter::init_container(InstanceObj* target, CallArgs& args, const Site& site) {
  std::vector<Value> items;
  std::vector<SourceRange> ranges;
  if (args.open || (args.pos.size() == 1 && args.pos[0].is_unknown()))
    target->cell->items_unknown = true;
  if (args.pos.size() == 1 && (seq_items(args.pos[0]) || args.pos[0].as<DictObj>())) {
    if (auto* d = args.pos[0].as<DictObj>()) {
      for (auto& [k, v] : d->entries) {
        items.push_back(v);
        if (auto* ks = str_of(k)) target->cell->item_names.push_back(*ks);
      }
    } else {
      items = *seq_items(args.pos[0]);
    }
    ranges.assign(items.size(), args.pos_ranges.empty() ? site.range() : args.pos_ranges[0]);
  } else {
    items = args.pos;
    ranges = args.pos_ranges;
  }
  std::vector<SourceRange> reported;  // one error per source site (a comprehension's elements)
  for (size_t i = 0; i < items.size(); ++i) {
    auto* ci = items[i].as<InstanceObj>();
    const SourceRange& at = i < ranges.size() ? ranges[i] : site.range();
    if (ci && ci->cell) {
      const std::string key =
          i < target->cell->item_names.size() ? target->cell->item_names[i] : std::to_string(i);
      name_bound_parameters(key, items[i], true);
      target->cell->items.push_back(items[i]);
    } else if (ci && ci->cls->unknown_base) {
      target->cell->items_unknown = true;  // built on a class the evaluator does not know
    } else if (items[i].is_unknown()) {
      target->cell->items_unknown = true;
    } else if (std::find(reported.begin(), reported.end(), at) == reported.end()) {
      reported.push_back(at);
      report_at(site.file(), at, Severity::Error, "type-error",
                target->cls->name + " takes Cells, but element " + std::to_string(i) + " is `" +
                    type_name(items[i]) + "`");
    }
  }
}

std::optional<Value> Interpreter::cell_method(InstanceObj* inst, const Value& self,
                                              std::string_view name) {
  auto method = [&](const char* n, BuiltinFn fn) {
    return Value::obj(std::make_shared<BuiltinObj>(n, std::move(fn), self));
  };
  auto returns_self = [&](const char* n) {
    Value s = self;
    return method(n, [s](Interpreter&, CallArgs&, const Site&) { return s; });
  };
  auto walk = [](const Value& root) { return cells_and_names(root); };
  auto params_of = [walk](const Value& root, int which) {  // 0 all, 1 trainable, 2 frozen
    std::vector<std::pair<std::string, Value>> out;
    for (auto& [cell_prefix, cellv] : walk(root)) {
      auto* c = cellv.as<InstanceObj>();
      const std::string& prefix = cell_prefix;  // (clang 14 cannot capture a structured binding)
      auto add = [&](const std::string& n, const Value& p) {
        auto* t = p.as<TensorObj>();
        if (!t) return;
        if (which == 1 && !t->requires_grad) return;
        if (which == 2 && t->requires_grad) return;
        out.emplace_back(join_name(prefix, n), p);
      };
      for (auto& [n, p] : c->cell->params) add(n, p);
    }
    return out;
  };
  std::string n(name);
  if (n == "training") return Value::boolean(inst->cell->training);
  if (n == "shard") {
    return inst->cell->api && inst->cell->api->kind == ApiKind::PrimitiveClass
               ? shard_method(*this, self)
               : cell_shard_method(*this, self);
  }
  // The methods of mindspore.parallel.auto_parallel.AutoParallel (MindSpore 2.10; the
  // evaluator's AutoParallel(net) is `net` itself, parallel_eval.cpp): `.pipeline(stages=k)`
  // sets the stage count, `.get_pipeline_stages()` reads it, the others configure what the
  // analysis does not model.
  static const std::unordered_set<std::string_view> kAutoParallelMethods = {
      "comm_fusion",
      "dataset_strategy",
      "disable_gradient_fp32_sync",
      "disable_loss_repeated_mean",
      "disable_strategy_file_only_for_trainable_params",
      "dump_local_norm",
      "enable_device_local_norm",
      "enable_fp32_communication",
      "enable_gradients_mean",
      "get_pipeline_stages",
      "hsdp",
      "load_operator_strategy_file",
      "load_param_strategy_file",
      "no_init_parameters_in_compile",
      "pipeline",
      "print_local_norm",
      "save_operator_strategy_file",
      "save_param_strategy_file",
      "set_group_ckpt_save_file",
      "transformer_opt"};
  if (parallel.wrapper && kAutoParallelMethods.count(name)) {
    return method(kAutoParallelMethods.find(name)->data(),
                  [n](Interpreter& in, CallArgs& a, const Site&) -> Value {
                    if (n == "get_pipeline_stages")
                      return Value::integer(in.parallel.pipeline_stages);
                    if (n == "pipeline") {
                      const Value* st = !a.pos.empty() ? a.pos.data() : a.find_kw("stages");
                      if (st != nullptr && st->k == VK::Int && st->as_int() >= 1)
                        in.parallel.pipeline_stages = st->as_int();
                    }
                    // hsdp(shard_size=-1, threshold=64, optimizer_level="level1"): the
                    // parallel optimizer (docs/parallel.md §11).
                    if (n == "hsdp") {
                      in.parallel.parallel_optimizer = true;
                      const Value* sz = !a.pos.empty() ? a.pos.data() : a.find_kw("shard_size");
                      if (sz != nullptr && sz->k == VK::Int) {
                        in.parallel.optimizer_shard_size = sz->as_int();
                      }
                      const Value* th = a.pos.size() > 1 ? &a.pos[1] : a.find_kw("threshold");
                      if (th != nullptr && th->k == VK::Int) {
                        in.parallel.optimizer_threshold_kb = th->as_int();
                      }
                    }
                    return Value::none();
                  });
  }
  if (n == "set_train") {
    return method("set_train", [self](Interpreter&, CallArgs& a, const Site&) -> Value {
      bool mode = true;
      const Value* m = a.pos.empty() ? a.find_kw("mode") : &a.pos[0];
      if (m) {
        if (m->k != VK::Bool) return self;  // a mode known only at run time: leave it as it was
        mode = m->b;
      }
      std::function<void(const Value&)> set = [&](const Value& v) {
        auto* i = v.as<InstanceObj>();
        if (!i || !i->cell) return;
        i->cell->training = mode;
        for (auto& [k, c] : i->cell->children) set(c);
        for (auto& c : i->cell->items) set(c);
      };
      set(self);
      return self;
    });
  }
  if (n == "register_buffer" || n == "insert_param_to_cell") {
    // `self.register_buffer("wavelets", t, persistent=False)`: an attribute by another name;
    // `insert_param_to_cell(name, param)`: a Parameter registered by name.
    return method(n == "register_buffer" ? "register_buffer" : "insert_param_to_cell",
                  [self](Interpreter& in, CallArgs& a, const Site& s) -> Value {
                    if (a.pos.size() < 2) return Value::none();
                    if (auto* key = str_of(a.pos[0]))
                      in.setattr(self, *key, a.pos[1], s);
                    else if (auto* i = self.as<InstanceObj>())
                      i->open = true;
                    return Value::none();
                  });
  }
  if (n == "cells_and_names") {
    return method("cells_and_names", [self, walk](Interpreter&, CallArgs&, const Site&) {
      std::vector<Value> out;
      for (auto& [k, v] : walk(self)) out.push_back(make_tuple({make_str(k), v}));
      return make_list(std::move(out));
    });
  }
  if (n == "cells" || n == "name_cells") {
    bool as_dict = n == "name_cells";
    return method(n == "cells" ? "cells" : "name_cells",
                  [inst, as_dict](Interpreter&, CallArgs&, const Site&) {
                    auto d = std::make_shared<DictObj>();
                    std::vector<Value> out;
                    for (auto& [k, v] : inst->cell->children) {
                      out.push_back(v);
                      d->set(make_str(k), v);
                    }
                    for (size_t i = 0; i < inst->cell->items.size(); ++i) {
                      out.push_back(inst->cell->items[i]);
                      d->set(make_str(std::to_string(i)), inst->cell->items[i]);
                    }
                    return as_dict ? Value::obj(d) : make_list(std::move(out));
                  });
  }
  if (n == "trainable_params" || n == "get_parameters" || n == "untrainable_params" ||
      n == "parameters_and_names" || n == "parameters_dict") {
    int which = n == "trainable_params" ? 1 : (n == "untrainable_params" ? 2 : 0);
    bool names = n == "parameters_and_names";
    bool dict = n == "parameters_dict";
    return method("parameters",
                  [self, params_of, which, names, dict](Interpreter&, CallArgs&, const Site&) {
                    std::vector<Value> out;
                    auto d = std::make_shared<DictObj>();
                    for (auto& [k, p] : params_of(self, which)) {
                      if (names)
                        out.push_back(make_tuple({make_str(k), p}));
                      else
                        out.push_back(p);
                      d->set(make_str(k), p);
                    }
                    return dict ? Value::obj(d) : make_list(std::move(out));
                  });
  }
  if (n == "apply") {
    return method("apply", [self, walk](Interpreter& in, CallArgs& args, const Site& site) {
      if (args.pos.empty()) return self;
      for (auto& [k, v] : walk(self)) {
        CallArgs a;
        a.pos.push_back(v);
        a.pos_ranges.push_back(site.range());
        in.call(args.pos[0], a, site);
      }
      return self;
    });
  }
  if (n == "insert_child_to_cell") {
    return method("insert_child_to_cell", [inst](Interpreter& in, CallArgs& args, const Site&) {
      if (args.pos.size() >= 2) {
        if (auto* s = str_of(args.pos[0])) in.cell_setattr(inst, *s, args.pos[1]);
      }
      return Value::none();
    });
  }
  if (n == "append" || n == "extend" || n == "insert") {
    NativeClass nb = inst->cls->native_base();
    if (nb != NativeClass::SequentialCell && nb != NativeClass::CellList) return std::nullopt;
    // MindSpore 2.10's SequentialCell has append and extend, not insert (AttributeError).
    if (n == "insert" && nb != NativeClass::CellList) return std::nullopt;
    std::string op = n;
    return method(n == "append" ? "append" : (n == "extend" ? "extend" : "insert"),
                  [inst, op](Interpreter& in, CallArgs& args, const Site& site) {
                    CellState& cs = *inst->cell;
                    auto& items = cs.items;
                    // An added Cell's Parameters are renamed "<prefix><index>.<path>", the prefix
                    // read from the names the container's items have now (container_prefix;
                    // extend reads it once, before its first item).
                    const ContainerPrefix at = container_prefix(cs);
                    auto add = [&](const Value& v) {
                      if (!cs.no_prefix) {
                        rename_parameters(v, at.prefix + std::to_string(items.size()) + ".");
                      }
                      items.push_back(v);
                    };
                    if (op == "append" && !args.pos.empty()) add(args.pos[0]);
                    if (op == "extend" && !args.pos.empty()) {
                      if (auto more = in.iterate(args.pos[0], site)) {
                        for (const Value& v : *more) add(v);
                      }
                    }
                    if (op == "insert" && args.pos.size() >= 2 && args.pos[0].is_int()) {
                      const auto len = static_cast<int64_t>(items.size());
                      int64_t i = args.pos[0].as_int();
                      if (i < 0) i += len;  // _valid_index_for_inserting
                      i = std::clamp<int64_t>(i, 0, len);
                      // The items from i on move up one: their Parameters keep what follows
                      // the key in their names, under the new index.
                      if (!cs.no_prefix) {
                        for (int64_t k = len - 1; k >= i; --k) {
                          std::unordered_set<const TensorObj*> named;
                          for (auto& [cell_path, cellv] : cells_and_names(items[k])) {
                            for (auto& [pk, p] : cellv.as<InstanceObj>()->cell->params) {
                              auto* t = p.as<TensorObj>();
                              if (t == nullptr || !named.insert(t).second) continue;
                              const auto parts =
                                  split_dots(t->mindspore_name(join_name(cell_path, pk)));
                              std::string rest;
                              for (size_t j = at.index + 1; j < parts.size(); ++j) {
                                rest += (rest.empty() ? "" : ".") + parts[j];
                              }
                              t->param_path = at.prefix + std::to_string(k + 1) + "." + rest;
                            }
                          }
                        }
                        rename_parameters(args.pos[1], at.prefix + std::to_string(i) + ".");
                      }
                      items.insert(items.begin() + i, args.pos[1]);
                    }
                    return Value::none();
                  });
  }
  static const std::unordered_set<std::string_view> kReturnsSelf = {"set_train",
                                                                    "to_float",
                                                                    "set_grad",
                                                                    "add_flags",
                                                                    "add_flags_recursive",
                                                                    "recompute",
                                                                    "set_boost",
                                                                    "set_comm_fusion",
                                                                    "update_parameters_name",
                                                                    "set_inputs",
                                                                    "set_data_parallel",
                                                                    "set_jit_config",
                                                                    "init_parameters_data",
                                                                    "set_param_ps",
                                                                    "update_cell_prefix",
                                                                    "update_cell_type",
                                                                    "place",
                                                                    "flatten_weights",
                                                                    "set_broadcast_flag",
                                                                    "register_forward_hook",
                                                                    "register_forward_pre_hook",
                                                                    "register_backward_hook",
                                                                    "compile",
                                                                    "load_parameter_slice",
                                                                    "exec_checkpoint_graph",
                                                                    "infer_param_pipeline_stage"};
  if (kReturnsSelf.count(name)) return returns_self(kReturnsSelf.find(name)->data());
  return std::nullopt;
}

// WithLossCell.construct(data, label): `out = self._backbone(data); return self._loss_fn(out,
// label)`, both calls located at the call of the wrapper.
Value Interpreter::call_with_loss(InstanceObj* inst, CallArgs& args, const Site& site) {
  if (!args.open && (args.pos.size() != 2 || !args.kw.empty())) {
    size_t n = args.pos.size() + args.kw.size();
    report(site, Severity::Error, n > 2 ? "too-many-arguments" : "missing-argument",
           "WithLossCell takes two inputs (data, label), got " + std::to_string(n));
    mark_consumed(args.pos);
    return Value::unknown();
  }
  const Value* backbone = inst->attrs.find_str("_backbone");
  const Value* loss_fn = inst->attrs.find_str("_loss_fn");
  if (!backbone || !loss_fn || args.pos.size() < 2) {
    mark_consumed(args.pos);
    return Value::unknown();
  }
  cell_stack.push_back(inst);
  if (graph) graph->graph.scope_classes.emplace(inst->cell->path.str(), inst->cls->name);
  CallArgs a;
  a.pos.push_back(args.pos[0]);
  a.pos_ranges.push_back(site.range());
  Value out = call(*backbone, a, site);
  CallArgs b;
  b.pos.push_back(out);
  b.pos.push_back(args.pos[1]);
  b.pos_ranges.push_back(site.range());
  b.pos_ranges.push_back(site.range());
  Value loss = call(*loss_fn, b, site);
  cell_stack.pop_back();
  return loss;
}

Value Interpreter::call_cell(InstanceObj* inst, const Value& cell_value, CallArgs& args,
                             const Site& site) {
  const Value* construct = inst->cls->lookup("construct");
  bool user_construct = construct && construct->as<FunctionObj>();
  if (graph == nullptr) {
    // A primitive applied outside construct (`zeros = ops.Zeros(); Parameter(zeros(shape,
    // dtype))` in __init__) computes a value as its functional form does.
    if (!user_construct && inst->cell->api && inst->cell->api->kind == ApiKind::PrimitiveClass)
      return call_api_function(inst->cell->api, args, site, inst);
    // Outside any construct being compiled: a call site that tells us the input types.
    if (cell_init_depth == 0) {
      std::vector<Value> inputs = args.pos;
      call_sites.push_back(CallSite{cell_value, std::move(inputs), site});
    }
    return Value::unknown();
  }
  if (inst->cell->cell_shard) check_cell_shard(*this, inst, args);
  if (user_construct) return compile_construct(inst, cell_value, args, site);
  NativeClass nb = inst->cls->native_base();
  if (nb == NativeClass::SequentialCell) {
    if (args.pos.size() != 1) {
      report(site, Severity::Error, "too-many-arguments",
             "SequentialCell takes exactly one input, got " + std::to_string(args.pos.size()));
      return Value::unknown();
    }
    Value x = args.pos[0];
    if (inst->cell->items_unknown) {
      mark_consumed(args.pos);
      auto* t = x.as<TensorObj>();
      if (graph && t && t->type.shape.ranked) {
        report(site, Severity::Hint, "shape-unknown",
               "shapes are unknown from here: this `" + inst->cls->name +
                   "` holds layers only known at run time (built from a list whose length "
                   "depends on run-time data)");
      }
      return Value::unknown();
    }
    cell_stack.push_back(inst);
    if (graph) graph->graph.scope_classes.emplace(inst->cell->path.str(), inst->cls->name);
    for (const Value& item : inst->cell->items) {
      CallArgs a;
      a.pos.push_back(x);
      a.pos_ranges.push_back(site.range());
      x = call(item, a, site);
    }
    cell_stack.pop_back();
    return x;
  }
  if (nb == NativeClass::WithLossCell) return call_with_loss(inst, args, site);
  if (nb == NativeClass::TrainOneStepCell || nb == NativeClass::TrainOneStepWithLossScaleCell) {
    // Its construct differentiates the network and applies the optimizer: a training step
    // (`cellscope train`), not part of a forward graph.
    mark_consumed(args.pos);
    report(site, Severity::Information, "not-analysed",
           "`" + inst->cls->name + "` runs a training step (gradients and optimizer update); " +
               "it is not compiled as part of a forward graph");
    return Value::unknown();
  }
  if (inst->cell->api) return call_api_function(inst->cell->api, args, site, inst);
  // A construct lost to a syntax error in the class (a half-typed `def construct(self,`) is
  // reported as that syntax error, not at every call of the Cell.
  if (inst->cls->def && inst->cls->def->has_error) return Value::unknown();
  report(site, Severity::Error, "type-error",
         "`" + inst->cls->name + "` has no `construct` method, so it cannot be called");
  return Value::unknown();
}

}  // namespace graphcore::eval
