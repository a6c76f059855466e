// Parallel strategies at evaluation time (issue 21, docs/parallel.md): the evaluator records
// `set_auto_parallel_context(...)`, `AutoParallel(net, parallel_mode=...)`, `Primitive.shard(...)`,
// `cell.pipeline_stage = k`, `nn.PipelineCell(net, micro_size)` and `Layout(...)` as facts
// (Interpreter::parallel, CellState::shard / pipeline_stage, Node::parallel), and reports what
// MindSpore itself rejects in Python at the call, with MindSpore's wording. The checks that
// MindSpore makes only when the graph compiles on Ascend/GPU read those facts afterwards
// (parallel_check.cpp).
#include <algorithm>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "interp.h"

namespace graphcore::eval {

namespace {

// The keys of MindSpore 2.10's `_set_auto_parallel_context_func_map`
// (mindspore/parallel/_auto_parallel_context.py; recorded in
// tests/parallel/ms_parallel_truth.json).
constexpr std::string_view kContextKeys[] = {
    "device_num",
    "global_rank",
    "gradients_mean",
    "gradient_fp32_sync",
    "loss_repeated_mean",
    "pipeline_stages",
    "auto_pipeline",
    "pipeline_result_broadcast",
    "pipeline_segments",
    "parallel_mode",
    "search_mode",
    "auto_parallel_search_mode",
    "parameter_broadcast",
    "strategy_ckpt_load_file",
    "strategy_ckpt_save_file",
    "group_ckpt_save_file",
    "full_batch",
    "dataset_strategy",
    "enable_parallel_optimizer",
    "force_fp32_communication",
    "parallel_optimizer_config",
    "pipeline_config",
    "grad_accumulation_step",
    "all_reduce_fusion_config",
    "communi_parallel_mode",
    "optimizer_weight_shard_size",
    "optimizer_weight_shard_aggregated_save",
    "sharding_propagation",
    "enable_alltoall",
    "strategy_ckpt_config",
    "comm_fusion",
    "dump_local_norm",
    "dump_local_norm_path",
    "dump_device_local_norm",
    "auto_parallel_new_interface",
    "init_param_in_compile",
};

constexpr std::string_view kParallelModes[] = {"stand_alone", "data_parallel", "hybrid_parallel",
                                               "semi_auto_parallel", "auto_parallel"};

SourceRange kw_range(const CallArgs& a, std::string_view name, const Site& site) {
  for (size_t i = 0; i < a.kw.size(); ++i) {
    if (a.kw[i].first == name && i < a.kw_ranges.size()) return a.kw_ranges[i];
  }
  return site.range();
}

// A strategy value: a tuple of tuples of ints, or of Layout calls (their splits). nullopt when
// it is not one the analysis knows (a variable only known at run time, a list: MindSpore
// rejects lists in Python, which is not this check's business).
// A Layout call's value (`layout("dp", "None")`, see `layout` below: an OpaqueObj "Layout()"),
// or null.
const OpaqueObj* layout_call(const Value& v) {
  const auto* o = v.as<OpaqueObj>();
  return o != nullptr && o->type_name == "Layout()" ? o : nullptr;
}

// The splits a Layout call stands for, one per tensor dimension.
std::vector<int64_t> layout_splits(const OpaqueObj& layout) {
  std::vector<int64_t> splits;
  for (const Value& x : layout.args) splits.push_back(x.as_int());
  return splits;
}

// A Cell as messages name it: its path in the analysed root, else its class.
const std::string& cell_label(const InstanceObj& inst) {
  return inst.cell->path.empty() ? inst.cls->name : inst.cell->path.str();
}

std::optional<Strategy> strategy_of(const Value& v) {
  const auto* outer = v.as<TupleObj>();
  if (outer == nullptr) return std::nullopt;
  Strategy s;
  for (const Value& item : outer->items) {
    if (const OpaqueObj* layout = layout_call(item)) {
      s.push_back(layout_splits(*layout));
      continue;
    }
    const auto* inner = item.as<TupleObj>();
    if (inner == nullptr) return std::nullopt;
    std::vector<int64_t> splits;
    for (const Value& x : inner->items) {
      if (x.k != VK::Int) return std::nullopt;
      splits.push_back(x.as_int());
    }
    s.push_back(std::move(splits));
  }
  return s;
}

std::string tuple_str(const std::vector<std::string>& names) {
  std::string out = "(";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", '" : "'") + names[i] + "'";
  return out + (names.size() == 1 ? ",)" : ")");
}

}  // namespace

// ---- Cell.shard / mindspore.shard (docs/parallel.md §10, rules C1-C7) ----

// `cell.shard(in_strategy, out_strategy=None, parameter_plan=None)` or `mindspore.shard(fn, ...)`:
// the input strategies as given, for the checks MindSpore's Shard pass makes at each call
// (mindspore/ccsrc/frontend/parallel/shard/shard.cc SetInputLayout).
struct CellShard {
  struct Entry {
    std::vector<int64_t> splits;
    bool layout = false;  // a Layout call: checked by the operators it reaches, not here
  };
  std::vector<Entry> in;
  // parameter_plan's tuple entries that passed the checks: Parameter name -> split.
  std::vector<std::pair<std::string, std::vector<int64_t>>> params;
  IStr file;
  SourceRange range;  // the `.shard(...)` / `shard(...)` call
  std::string what;   // "block2.shard", "shard(add)": how messages name it
};

namespace {

// A value of a plain Python type (None, a number, a str, a list, a dict, a set): what MindSpore's
// isinstance checks certainly refuse where a tuple or a Layout is wanted. Anything else (an
// object the analysis models loosely, a Layout not called) is not judged.
bool plain_python(const Value& v) {
  if (v.k == VK::None || v.k == VK::Bool || v.k == VK::Int || v.k == VK::Float) return true;
  return v.as<StrObj>() != nullptr || v.as<ListObj>() != nullptr || v.as<DictObj>() != nullptr ||
         v.as<SetObj>() != nullptr;
}

// MindSpore's Python checks of a strategy argument (Shard._check_layout_inner_type,
// mindspore/parallel/shard.py; messages measured with MindSpore 2.10): the entries, or nullopt
// with `error` set when MindSpore raises, or nullopt with `error` empty when a value is not known
// statically (nothing to check).
std::optional<std::vector<CellShard::Entry>> shard_entries(const Value& v, std::string_view what,
                                                           std::string& error) {
  const auto* outer = v.as<TupleObj>();
  if (outer == nullptr) return std::nullopt;
  std::vector<CellShard::Entry> out;
  bool tuples = false;
  bool layouts = false;
  for (const Value& item : outer->items) {
    if (item.is_unknown()) return std::nullopt;
    if (const OpaqueObj* layout = layout_call(item)) {
      out.push_back(CellShard::Entry{layout_splits(*layout), true});
      layouts = true;
      continue;
    }
    const auto* inner = item.as<TupleObj>();
    if (inner == nullptr && !plain_python(item)) return std::nullopt;
    if (inner == nullptr) {
      error = "The '" + std::string(what) +
              "' should be a tuple(tuple(int)) or tuple(mindspore.parallel.Layout), but got " +
              type_name(item);
      return std::nullopt;
    }
    CellShard::Entry e;
    for (const Value& x : inner->items) {
      if (x.is_unknown()) return std::nullopt;
      if (x.k != VK::Int && x.k != VK::Bool) {
        error = "The tuple strategy for each dimension should be tuple(int).";
        return std::nullopt;
      }
      e.splits.push_back(x.as_int());
    }
    out.push_back(std::move(e));
    tuples = true;
  }
  if (tuples == layouts) {  // both kinds, or an empty tuple
    error = "For 'Shard', the strategy can only pass in consistent type for all dimensions.";
    return std::nullopt;
  }
  return out;
}

SourceRange arg_range(const CallArgs& a, size_t pos, std::string_view name, const Site& site) {
  if (a.pos.size() > pos) return pos < a.pos_ranges.size() ? a.pos_ranges[pos] : site.range();
  return kw_range(a, name, site);
}

// parameter_plan: MindSpore's type checks, then each entry against the trainable Parameter of
// `fn`'s tree it names (Shard._search_parameter_by_name: the key without "self." equals the
// Parameter's name as MindSpore has named it so far) with Shard._check_layout_is_valid. The tuple
// entries that pass go to `out` (name -> split), for sharding propagation.
void check_parameter_plan(Interpreter& in, const Value& fn, const Value& plan,
                          const std::string& file, SourceRange at,
                          std::vector<std::pair<std::string, std::vector<int64_t>>>& out) {
  if (plan.is_none() || plan.is_unknown()) return;
  const auto* dict = plan.as<DictObj>();
  if (dict == nullptr && !plain_python(plan)) return;
  if (dict == nullptr) {
    in.report_at(
        file, at, Severity::Error, "parallel-strategy-type",
        "For 'Shard', the 'parameter_plan' should be a dict or None, but got " + type_name(plan));
    return;
  }
  auto* cell = fn.as<InstanceObj>();
  if (cell == nullptr || !cell->cell) {
    if (fn.as<FunctionObj>() != nullptr) {
      in.report_at(file, at, Severity::Error, "parallel-strategy-type",
                   "If parameter_plan is set, type of fn must be mindspore.nn.Cell, but got "
                   "<class 'function'>");
    }
    return;
  }
  for (const auto& [k, v] : dict->entries) {
    if (k.is_unknown() || v.is_unknown()) return;
    const bool layout = layout_call(v) != nullptr;
    if (!layout && v.as<TupleObj>() == nullptr && !plain_python(v)) return;  // not judged
    if (str_of(k) == nullptr || (v.as<TupleObj>() == nullptr && !layout)) {
      in.report_at(file, at, Severity::Error, "parallel-strategy-type",
                   "For 'Shard', the type of each key and value in 'parameter_plan' must be str "
                   "and tuple/Layout, but got " +
                       type_name(k) + " and " + type_name(v));
      return;
    }
  }
  // The trainable Parameters of fn's tree by the name MindSpore gives them now. A tree with
  // contents the analysis does not know may hold others: then no entry is said to be missing.
  std::vector<std::pair<std::string, const TensorObj*>> params;
  std::vector<std::string> untrainable;
  bool complete = true;
  for (const auto& [prefix, cv] : cells_and_names(fn)) {
    auto* c = cv.as<InstanceObj>();
    if (c == nullptr || !c->cell) continue;
    if (c->cell->items_unknown || c->cls->unknown_base || c->cell->init_failed) complete = false;
    for (const auto& [n, p] : c->cell->params) {
      const auto* t = p.as<TensorObj>();
      if (t == nullptr) continue;
      std::string path = prefix;
      if (!path.empty()) path += '.';
      path += n;
      std::string name = t->mindspore_name(path);
      if (t->requires_grad) {
        params.emplace_back(std::move(name), t);
      } else {
        untrainable.push_back(std::move(name));
      }
    }
  }
  for (const auto& [k, v] : dict->entries) {
    const std::string& key = *str_of(k);
    std::string name = key;
    for (size_t p = name.find("self."); p != std::string::npos; p = name.find("self.", p)) {
      name.erase(p, 5);
    }
    auto it = std::find_if(params.begin(), params.end(),
                           [&](const auto& pr) { return pr.first == name; });
    if (it == params.end()) {
      if (!complete) continue;
      std::string msg = "'" + key + "' names no trainable Parameter of `";
      msg += cell_label(*cell);
      msg += "`: MindSpore ignores the entry (\"" + key + " is not exist, ignored its setting.\")";
      if (std::find(untrainable.begin(), untrainable.end(), name) != untrainable.end()) {
        msg += "; '" + name + "' is not trainable";
      } else if (!params.empty()) {
        msg += "; its trainable Parameters are ";
        for (size_t i = 0; i < params.size() && i < 4; ++i) {
          msg += (i ? ", '" : "'") + params[i].first + "'";
        }
        if (params.size() > 4) msg += ", ...";
      }
      in.report_at(file, at, Severity::Warning, "parallel-parameter-plan", std::move(msg));
      continue;
    }
    const auto* strategy = v.as<TupleObj>();
    const Shape& shape = it->second->type.shape;
    if (strategy == nullptr || !shape.ranked) continue;  // a Layout: checked where it is used
    std::vector<int64_t> splits;
    for (const Value& x : strategy->items) {
      if (x.k != VK::Int && x.k != VK::Bool) return;
      splits.push_back(x.as_int());
    }
    if (splits.size() != shape.rank()) {
      in.report_at(file, at, Severity::Error, "parallel-strategy-rank",
                   "For " + key +
                       ", the length of param_strategy: " + std::to_string(splits.size()) +
                       ", is not equal to param_shape len: " + std::to_string(shape.rank()) + ".");
      return;
    }
    bool divides = true;
    for (size_t i = 0; i < splits.size(); ++i) {
      const Dim& dim = shape.dims[i];
      if (dim.is_known() && splits[i] != 0 && dim.value() % splits[i] != 0) divides = false;
      if (splits[i] <= 0) divides = false;
    }
    if (divides) out.emplace_back(it->first, splits);
    if (!shape.fully_known()) continue;
    std::vector<int64_t> dims;
    for (const Dim& d : shape.dims) dims.push_back(d.value());
    for (size_t i = 0; i < splits.size(); ++i) {
      if (splits[i] != 0 && dims[i] % splits[i] != 0) {
        in.report_at(file, at, Severity::Error, "parallel-not-divisible",
                     "For '" + key + "', the param_shape is " + strategy_str(dims) +
                         " and the setting param_strategy is " + strategy_str(splits) +
                         ". The param_shape[" + std::to_string(i) + "]: " +
                         std::to_string(dims[i]) + " cannot be divisible by param_strategy[" +
                         std::to_string(i) + "]: " + std::to_string(splits[i]) + ".");
        return;
      }
    }
  }
}

// `Shard()(fn, in_strategy, out_strategy, parameter_plan)` (mindspore/parallel/shard.py): its
// Python checks, reported at the argument when the program runs on several devices (MindSpore
// returns before them on one: `get_group_size() == 1`); the strategies for the calls' checks.
std::shared_ptr<CellShard> shard_call(Interpreter& in, const Value& fn, const CallArgs& a,
                                      size_t first, const Site& site, std::string what) {
  const ParallelContext& ctx = in.parallel;
  const bool report = ctx.sharding() || ctx.parallel_job();
  const Value* ins = a.pos.size() > first ? &a.pos[first] : a.find_kw("in_strategy");
  const Value* outs = a.pos.size() > first + 1 ? &a.pos[first + 1] : a.find_kw("out_strategy");
  const Value* plan = a.pos.size() > first + 2 ? &a.pos[first + 2] : a.find_kw("parameter_plan");
  if (ins == nullptr || ins->is_unknown()) return nullptr;
  const std::string& file = site.file();
  auto fail = [&](SourceRange at, std::string msg) -> std::shared_ptr<CellShard> {
    if (report) in.report_at(file, at, Severity::Error, "parallel-strategy-type", std::move(msg));
    return nullptr;
  };
  const SourceRange in_at = arg_range(a, first, "in_strategy", site);
  if (ins->as<TupleObj>() == nullptr && !plain_python(*ins)) return nullptr;
  if (ins->as<TupleObj>() == nullptr) {
    return fail(in_at, "For 'Shard', the 'in_strategy' should be a tuple, but got " +
                           type_name(*ins) + ".");
  }
  std::string error;
  auto entries = shard_entries(*ins, "in_strategy", error);
  if (!entries) return error.empty() ? nullptr : fail(in_at, error);
  if (outs != nullptr && !outs->is_none() && !outs->is_unknown()) {
    const SourceRange out_at = arg_range(a, first + 1, "out_strategy", site);
    if (outs->as<TupleObj>() == nullptr && !plain_python(*outs)) return nullptr;
    if (outs->as<TupleObj>() == nullptr) {
      return fail(out_at, "For 'Shard', the 'out_strategy' should be None or tuple, but got " +
                              type_name(*outs) + ".");
    }
    if (!shard_entries(*outs, "out_strategy", error) && !error.empty()) {
      return fail(out_at, error);
    }
  }
  auto s = std::make_shared<CellShard>();
  if (plan != nullptr && report) {
    check_parameter_plan(in, fn, *plan, file, arg_range(a, first + 2, "parameter_plan", site),
                         s->params);
  }
  s->in = std::move(*entries);
  s->file = site.file_id();
  s->range = site.range();
  s->what = std::move(what);
  return s;
}

// The checks of Shard's SetInputLayout for one call of the sharded Cell or function: the number
// of inputs, then the devices each strategy needs (CheckDeviceNum), then each input's rank and
// divisibility (CheckInputStrategy / CheckShapeStrategy). Strategies given as Layouts are checked
// by the operators that use them, as in MindSpore. `params`: the construct's inputs when every
// one is passed (-1: not known).
void check_shard_inputs(Interpreter& in, const CellShard& s, const CallArgs& args, int params) {
  const ParallelContext& ctx = in.parallel;
  if (!ctx.sharding()) return;  // MindSpore ignores strategies in the other modes
  const std::string& file = s.file.str();
  auto error = [&](const char* code, std::string msg) {
    in.report_at(file, s.range, Severity::Error, code, "`" + s.what + "`: " + std::move(msg));
  };
  if (ctx.parallel_mode == "auto_parallel" && !ctx.wrapper &&
      ctx.search_mode != "sharding_propagation") {
    error("parallel-context",
          "'search_mode' must be 'sharding_propagation' for 'Shard' when the 'parallel_mode' is "
          "'auto_parallel.' (search_mode is '" +
              ctx.search_mode + "')");
    return;
  }
  const size_t given = args.pos.size() + args.kw.size();
  if (!args.open && params >= 0 && static_cast<size_t>(params) == given && given != s.in.size()) {
    error("parallel-strategy-count",
          "Input numbers: " + std::to_string(given) +
              " is not equal to in_strategy numbers: " + std::to_string(s.in.size()));
    return;
  }
  const int64_t devices = ctx.stage_devices();
  for (size_t i = 0; i < s.in.size() && devices > 0; ++i) {
    if (s.in[i].layout) continue;
    int64_t need = 1;
    for (int64_t v : s.in[i].splits) {
      if (v <= 0 || __builtin_mul_overflow(need, v, &need)) need = 0;
      if (need == 0) break;
    }
    if (need == 0) continue;
    const std::string tail = " (check device number failed: in_strategy " +
                             strategy_str(s.in[i].splits) + " needs " + std::to_string(need) +
                             " devices; a pipeline stage has " + std::to_string(devices) + ")";
    if (need > devices) {
      error("parallel-devices",
            "required device number: " + std::to_string(need) +
                " is larger than available device number: " + std::to_string(devices) +
                " at index: " + std::to_string(i) + tail);
      return;
    }
    if (devices % need != 0) {
      error("parallel-devices",
            "required device number: " + std::to_string(need) +
                " is not divisible by device number: " + std::to_string(devices) +
                " at index: " + std::to_string(i) + tail);
      return;
    }
  }
  for (size_t i = 0; i < s.in.size() && i < args.pos.size(); ++i) {
    if (s.in[i].layout) continue;
    const auto* t = args.pos[i].as<TensorObj>();
    if (t == nullptr || !t->type.shape.ranked) continue;
    const Shape& shape = t->type.shape;
    const auto& splits = s.in[i].splits;
    if (shape.rank() != splits.size()) {
      error("parallel-strategy-rank",
            "Input dimension: " + std::to_string(shape.rank()) +
                " is not equal to in_strategy dimension: " + std::to_string(splits.size()) +
                " at index " + std::to_string(i) + " (input " + std::to_string(i) + " is " +
                shape.str() + ", in_strategy " + strategy_str(splits) + ")");
      return;
    }
    for (size_t d = 0; d < splits.size(); ++d) {
      const Dim& dim = shape.dims[d];
      if (!dim.is_known() || splits[d] <= 0 || dim.value() % splits[d] == 0) continue;
      error("parallel-not-divisible",
            "dimension length: " + std::to_string(dim.value()) + " is not divisible by layout: " +
                std::to_string(splits[d]) + " at index: " + std::to_string(d) + " (input " +
                std::to_string(i) + " is " + shape.str() + ", in_strategy " + strategy_str(splits) +
                "; MindSpore: Check conformance between input strategy and tensor shape failed)");
      return;
    }
  }
  // The checks passed: the layouts this call gives its inputs (and its parameter_plan) are where
  // sharding propagation starts (docs/parallel.md §13).
  if (in.graph == nullptr) return;
  ShardSeed seed{s.what, s.file, s.range, {}, s.params, 0};
  for (size_t i = 0; i < s.in.size() && i < args.pos.size(); ++i) {
    const auto* t = args.pos[i].as<TensorObj>();
    if (t == nullptr || t->graph_id != in.graph->graph_id || s.in[i].splits.empty()) continue;
    if (!t->type.shape.ranked || t->type.shape.rank() != s.in[i].splits.size()) continue;
    seed.inputs.emplace_back(t->ref, s.in[i].splits);
  }
  if (seed.inputs.empty() && seed.params.empty()) return;
  in.graph->graph.shard_seeds.push_back(std::move(seed));
}

// The inputs of function `fn` from parameter `first` on (1: after a method's self) when every
// call passes all of them (no defaults, no *args / **kwargs): -1 otherwise or when unknown.
int fixed_inputs(const FunctionObj* fn, size_t first) {
  if (fn == nullptr || fn->def == nullptr) return -1;
  const auto& params = fn->def->list;
  int n = 0;
  for (size_t i = first; i < params.size(); ++i) {
    auto kind = static_cast<ast::ParamKindAst>(params[i]->op);
    if (kind == ast::ParamKindAst::VarArgs || kind == ast::ParamKindAst::VarKwargs) return -1;
    if (i < fn->has_default.size() && fn->has_default[i]) return -1;
    ++n;
  }
  return n;
}

// The construct's inputs of Cell `inst`, as fixed_inputs.
int construct_inputs(const InstanceObj* inst) {
  const Value* c = inst->cls->lookup("construct");
  return fixed_inputs(c != nullptr ? c->as<FunctionObj>() : nullptr, 1);
}

}  // namespace

// The callee of call `site` as written when it is a dotted name ("self.block2.shard"), else
// empty: how a message names a `.shard` call made before the Cell has a path in any root.
static std::string dotted_callee(const Site& site) {
  const ast::Node* f =
      site.node != nullptr && site.node->kind == ast::K::Call ? site.node->a : nullptr;
  std::string out;
  for (; f != nullptr && f->kind == ast::K::Attribute; f = f->a) {
    out.insert(0, "." + std::string(f->str));
  }
  if (f == nullptr || f->kind != ast::K::Name) return {};
  return std::string(f->str) + out;
}

Value cell_shard_method(Interpreter& /*in*/, const Value& self) {
  return Value::obj(std::make_shared<BuiltinObj>(
      "shard",
      [self](Interpreter& in, CallArgs& a, const Site& site) -> Value {
        auto* inst = self.as<InstanceObj>();
        if (inst == nullptr || !inst->cell) return Value::none();
        std::string name = dotted_callee(site);
        if (name.empty()) {
          name = cell_label(*inst) + ".shard";
        }
        if (auto s = shard_call(in, self, a, 0, site, std::move(name))) {
          inst->cell->cell_shard = std::move(s);
        }
        return Value::none();  // Cell.shard returns None (MindSpore 2.10, measured)
      },
      self));
}

void check_cell_shard(Interpreter& in, InstanceObj* inst, const CallArgs& args) {
  if (inst->cell && inst->cell->cell_shard) {
    check_shard_inputs(in, *inst->cell->cell_shard, args, construct_inputs(inst));
  }
}

void register_parallel_natives(Interpreter& in, std::unordered_map<std::string, Value>& natives);

void register_parallel_natives(Interpreter& /*interp*/,
                               std::unordered_map<std::string, Value>& natives) {
  auto add = [&](const std::string& name, BuiltinFn fn) {
    natives[name] = Value::obj(std::make_shared<BuiltinObj>(name, std::move(fn)));
  };
  // set_auto_parallel_context(**kwargs): MindSpore's Python checks (unknown key, parallel_mode,
  // device_num, pipeline_stages), then the values as the program's parallel context.
  auto set_context = [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    ParallelContext& ctx = in.parallel;
    ctx.file = site.file_id();
    ctx.range = site.range();
    for (size_t i = 0; i < a.kw.size(); ++i) {
      const std::string& key = a.kw[i].first;
      const Value& v = a.kw[i].second;
      SourceRange at = i < a.kw_ranges.size() ? a.kw_ranges[i] : site.range();
      auto bad = [&](std::string msg) {
        in.report_at(site.file(), at, Severity::Error, "parallel-context", std::move(msg));
      };
      if (std::ranges::find(kContextKeys, key) == std::end(kContextKeys)) {
        bad("Set context keyword " + key + " is not recognized!");
        continue;
      }
      if (key == "parallel_mode") {
        const std::string* mode = str_of(v);
        if (mode == nullptr) {
          ctx.mode_known = false;
          continue;
        }
        if (std::ranges::find(kParallelModes, *mode) == std::end(kParallelModes)) {
          ctx.mode_known = false;
          bad("The context configuration parameter 'parallel_mode' only support 'stand_alone', "
              "'data_parallel', 'hybrid_parallel', 'semi_auto_parallel' and 'auto_parallel', but "
              "got the value : " +
              *mode + ".");
          continue;
        }
        ctx.parallel_mode = *mode;
        ctx.mode_known = true;
      } else if (key == "device_num" && v.k == VK::Int) {
        if (v.as_int() < 1) {
          bad("The context configuration parameter 'device_num' must be a positive integer, but "
              "got the value of device_num : " +
              std::to_string(v.as_int()) + ".");
          continue;
        }
        ctx.device_num = v.as_int();
        ctx.device_num_from = "script";
      } else if (key == "pipeline_stages" && v.k == VK::Int) {
        if (v.as_int() < 1) {
          bad("For 'set_auto_parallel_context', the argument 'pipeline_stages' should be greater "
              "or equal 1, but got the value of stages : " +
              std::to_string(v.as_int()) + ".");
          continue;
        }
        ctx.pipeline_stages = v.as_int();
      } else if (key == "full_batch" && v.k == VK::Bool) {
        ctx.full_batch = v.b;
      } else if (key == "enable_parallel_optimizer" && v.k == VK::Bool) {
        ctx.parallel_optimizer = v.b;
      } else if (key == "parallel_optimizer_config") {
        // Its keys as _AutoParallelContext.set_parallel_optimizer_config reads them; MindSpore's
        // own checks of their values are not repeated here.
        if (const auto* d = v.as<DictObj>()) {
          for (const auto& [ck, cv] : d->entries) {
            const std::string* name = str_of(ck);
            if (name == nullptr || cv.k != VK::Int) continue;
            if (*name == "optimizer_weight_shard_size") ctx.optimizer_shard_size = cv.as_int();
            if (*name == "parallel_optimizer_threshold") ctx.optimizer_threshold_kb = cv.as_int();
          }
        }
      } else if (key == "dataset_strategy") {
        ctx.dataset_strategy = strategy_of(v);
      } else if (key == "search_mode" || key == "auto_parallel_search_mode") {
        const std::string* m = str_of(v);
        if (m == nullptr) continue;
        if (*m != "recursive_programming" && *m != "dynamic_programming" &&
            *m != "sharding_propagation") {
          // MindSpore 2.10's message names the other spelling of the key (measured: search_mode
          // says 'auto_parallel_search_mode' and the reverse).
          bad("The context configuration parameter '" +
              std::string(key == "search_mode" ? "auto_parallel_search_mode" : "search_mode") +
              "' only support 'recursive_programming', 'dynamic_programming' and "
              "'sharding_propagation', but got the value: " +
              *m + ".");
          continue;
        }
        ctx.search_mode = *m;
      }
    }
    return Value::none();
  };
  add("ms.set_auto_parallel_context", set_context);
  add("context.set_auto_parallel_context", set_context);
  auto reset_context = [](Interpreter& in, CallArgs&, const Site&) -> Value {
    int64_t configured = in.options.device_num;
    in.parallel = ParallelContext{};
    if (configured > 0) {
      in.parallel.device_num = configured;
      in.parallel.device_num_from = "mindspore_config.json";
    }
    return Value::none();
  };
  add("ms.reset_auto_parallel_context", reset_context);
  add("context.reset_auto_parallel_context", reset_context);

  // mindspore.parallel.auto_parallel.AutoParallel(network, parallel_mode="semi_auto"): the mode
  // of the wrapped network (its device count comes from the launcher: get_group_size()). The
  // wrapper runs the network's construct, so the analysis follows the network itself.
  auto auto_parallel = [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    const Value* net = !a.pos.empty() ? a.pos.data() : a.find_kw("network");
    const Value* mode = a.pos.size() > 1 ? &a.pos[1] : a.find_kw("parallel_mode");
    in.parallel.wrapper = true;
    in.parallel.parallel_mode = "semi_auto_parallel";
    in.parallel.file = site.file_id();
    in.parallel.range = site.range();
    if (mode != nullptr) {
      if (const std::string* m = str_of(*mode)) {
        if (*m == "semi_auto") {
          in.parallel.search_mode = "";
        } else if (*m == "sharding_propagation" || *m == "recursive_programming") {
          in.parallel.parallel_mode = "auto_parallel";
          in.parallel.search_mode = *m;
        } else {
          in.report_at(site.file(), kw_range(a, "parallel_mode", site), Severity::Error,
                       "parallel-context",
                       "AutoParallel's parallel_mode must be one of 'semi_auto', "
                       "'sharding_propagation' or 'recursive_programming', but got '" +
                           *m + "'");
        }
      }
    }
    return net != nullptr ? *net : Value::unknown();
  };
  // mindspore.shard(fn, in_strategy, out_strategy=None, parameter_plan=None): MindSpore's
  // Python checks of the strategies (Shard.__call__, mindspore/parallel/shard.py), then a function
  // that calls fn with its arguments (its `shard_fn(*args)`), whose calls get the Shard pass's
  // checks of their inputs. A Cell is returned itself, with the strategies, as Cell.shard records
  // them: its Parameters stay in the network's tree.
  auto shard_fn = [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    const Value* fn = !a.pos.empty() ? a.pos.data() : a.find_kw("fn");
    if (fn == nullptr) return Value::unknown();
    if (auto* inst = fn->as<InstanceObj>(); inst && inst->cell) {
      if (auto s = shard_call(in, *fn, a, 1, site, "shard(" + cell_label(*inst) + ")")) {
        inst->cell->cell_shard = std::move(s);
      }
      return *fn;
    }
    const auto* f = fn->as<FunctionObj>();
    auto s = shard_call(in, *fn, a, 1, site, "shard(" + (f ? f->name : type_name(*fn)) + ")");
    if (!s) return *fn;
    Value target = *fn;
    const int params = fixed_inputs(f, 0);
    return Value::obj(std::make_shared<BuiltinObj>(
        "shard_fn", [target, s, params](Interpreter& in2, CallArgs& args, const Site& at) {
          check_shard_inputs(in2, *s, args, params);
          return in2.call(target, args, at);
        }));
  };
  add("ms.shard", shard_fn);
  add("mindspore.shard", shard_fn);
  add("mindspore.parallel.shard", shard_fn);
  add("mindspore.parallel.auto_parallel.AutoParallel", auto_parallel);
  add("mindspore.parallel.AutoParallel", auto_parallel);

  // nn.PipelineCell(network, micro_size, stage_config=None, segment_config=None): MindSpore's
  // Python check of micro_size (cell_wrapper.py), and its documented micro_size >=
  // pipeline_stages (the 1F1B scheduler's C++ check). The wrapper cuts the batch into
  // micro-batches and runs the network on each: the analysis follows the network.
  auto pipeline_cell = [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    const Value* net = !a.pos.empty() ? a.pos.data() : a.find_kw("network");
    const Value* micro = a.pos.size() > 1 ? &a.pos[1] : a.find_kw("micro_size");
    if (micro != nullptr && micro->k == VK::Int) {
      int64_t m = micro->as_int();
      SourceRange at = a.pos.size() > 1 && a.pos_ranges.size() > 1
                           ? a.pos_ranges[1]
                           : kw_range(a, "micro_size", site);
      if (m <= 0) {
        in.report_at(site.file(), at, Severity::Error, "parallel-micro-size",
                     "For 'PipelineCell', the argument 'micro_size' must be large than 0, but "
                     "got " +
                         std::to_string(m) + ".");
      } else {
        in.parallel.micro_size = m;
        if (m < in.parallel.pipeline_stages) {
          in.report_at(site.file(), at, Severity::Error, "parallel-micro-size",
                       "micro_size must be greater or equal to pipeline stages: micro_size " +
                           std::to_string(m) + " < pipeline_stages " +
                           std::to_string(in.parallel.pipeline_stages) +
                           " (MindSpore's 1F1B scheduler: \"MicroBatch num must be larger or "
                           "equal than StageNum\")");
        }
      }
    }
    return net != nullptr ? *net : Value::unknown();
  };
  add("nn.PipelineCell", pipeline_cell);
  add("nn.Pipeline", pipeline_cell);
  add("mindspore.parallel.nn.PipelineCell", pipeline_cell);
  add("mindspore.parallel.nn.Pipeline", pipeline_cell);

  // Layout(device_matrix, alias_name, rank_list=None) and its calls `layout("dp", "None")`
  // (mindspore/parallel/shard.py): MindSpore's Python checks, and each call as the splits it
  // stands for (an OpaqueObj "Layout()" whose args are the splits, one per tensor dimension).
  auto layout = [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    const Value* dm = !a.pos.empty() ? a.pos.data() : a.find_kw("device_matrix");
    const Value* al = a.pos.size() > 1 ? &a.pos[1] : a.find_kw("alias_name");
    const auto* dims = dm != nullptr ? seq_items(*dm) : nullptr;
    const auto* aliases = al != nullptr ? seq_items(*al) : nullptr;
    if (dims == nullptr || aliases == nullptr) return Value::unknown();
    std::vector<int64_t> matrix;
    std::vector<std::string> names;
    for (const Value& d : *dims) {
      if (d.k != VK::Int) return Value::unknown();
      matrix.push_back(d.as_int());
    }
    for (const Value& n : *aliases) {
      const std::string* s = str_of(n);
      if (s == nullptr) return Value::unknown();
      names.push_back(*s);
    }
    auto bad = [&](std::string msg) {
      in.report(site, Severity::Error, "parallel-layout", std::move(msg));
      return Value::unknown();
    };
    if (matrix.size() != names.size())
      return bad("device_matrix length should be equal to alias_name length");
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == "None") {
        return bad(
            "The element of alias_name can not set 'None', because 'None' means no sharding.");
      }
      for (size_t j = 0; j < i; ++j) {
        if (names[j] == names[i])
          return bad("Each element of alias_name " + tuple_str(names) + " should be different");
      }
    }
    return Value::obj(std::make_shared<BuiltinObj>(
        "Layout", [matrix, names](Interpreter& li, CallArgs& c, const Site& s) -> Value {
          auto spec = std::make_shared<OpaqueObj>("Layout()");
          std::vector<std::string> used;
          for (size_t i = 0; i < c.pos.size(); ++i) {
            // One dimension: an alias, "None", or a tuple of aliases (split by their product).
            std::vector<std::string> axes;
            if (const std::string* one = str_of(c.pos[i])) {
              axes.push_back(*one);
            } else if (const auto* many = seq_items(c.pos[i])) {
              for (const Value& x : *many) {
                const std::string* nm = str_of(x);
                if (nm == nullptr) return Value::unknown();
                axes.push_back(*nm);
              }
            } else {
              return Value::unknown();
            }
            int64_t split = 1;
            for (const std::string& axis : axes) {
              if (axis == "None") continue;
              auto it = std::find(names.begin(), names.end(), axis);
              SourceRange at = i < c.pos_ranges.size() ? c.pos_ranges[i] : s.range();
              if (it == names.end()) {
                li.report_at(s.file(), at, Severity::Error, "parallel-layout",
                             "The axis " + axis + " is not found in " + tuple_str(names));
                return Value::unknown();
              }
              if (std::find(used.begin(), used.end(), axis) != used.end()) {
                li.report_at(
                    s.file(), at, Severity::Error, "parallel-layout",
                    "The axis " + axis + " has been set more than one in " + tuple_str(names));
                return Value::unknown();
              }
              used.push_back(axis);
              split *= matrix[static_cast<size_t>(it - names.begin())];
            }
            spec->args.push_back(Value::integer(split));
          }
          return Value::obj(spec);
        }));
  };
  add("ms.Layout", layout);
  add("mindspore.parallel.Layout", layout);

  // The article's `ms.ops.auto_parallel(x, strategy=..., stage_id=...)`: not a MindSpore API.
  // The error names the real ones; the quick fix keeps `x` (the call's first argument).
  add("ops.auto_parallel", [](Interpreter& in, CallArgs& a, const Site& site) -> Value {
    std::string msg =
        "module 'mindspore.ops' has no attribute 'auto_parallel': MindSpore has no "
        "`ops.auto_parallel`. Split an operator with `Primitive.shard` "
        "(`self.matmul = ops.MatMul().shard(((2, 4), (4, 1)))`) or `Cell.shard` / "
        "`mindspore.parallel.shard`, and choose a pipeline stage with `cell.pipeline_stage = k`";
    if (const Value* s = a.find_kw("strategy")) {
      if (auto st = strategy_of(*s)) {
        msg += "; the strategy " + strategy_str(*st) +
               " goes to the `.shard(...)` of the operator that consumes this tensor";
      }
    }
    in.report(site, Severity::Error, "parallel-api", msg);
    if (!in.diagnostics.empty() && in.diagnostics.back().code == "parallel-api" && !a.pos.empty() &&
        !a.pos_ranges.empty() && site.node != nullptr) {
      std::string arg = in.source_text(site.file(), a.pos_ranges[0]);
      if (!arg.empty()) {
        in.diagnostics.back().fixes.push_back(
            Fix{"Remove `ops.auto_parallel(...)` (keep `" + arg +
                    "`); split with `.shard(...)` on the operator instead",
                {TextEdit{site.file(), site.range(), arg}}});
      }
    }
    return a.pos.empty() ? Value::unknown() : a.pos[0];
  });
}

// `prim.shard(in_strategy, out_strategy=None)` on an operator object: the strategy, where it was
// given, and the object itself (MindSpore returns the primitive).
Value shard_method(Interpreter& /*in*/, const Value& self) {
  return Value::obj(std::make_shared<BuiltinObj>(
      "shard",
      [self](Interpreter& in, CallArgs& a, const Site& site) -> Value {
        auto* inst = self.as<InstanceObj>();
        if (inst == nullptr || !inst->cell) return self;
        const Value* ins = !a.pos.empty() ? a.pos.data() : a.find_kw("in_strategy");
        const Value* outs = a.pos.size() > 1 ? &a.pos[1] : a.find_kw("out_strategy");
        auto facts = std::make_shared<NodeParallel>();
        if (ins != nullptr) {
          auto s = strategy_of(*ins);
          if (!s) return self;  // not known statically: nothing to check
          facts->in_strategy = std::move(*s);
        }
        if (outs != nullptr && !outs->is_none()) facts->out_strategy = strategy_of(*outs);
        facts->shard_file = site.file_id();
        facts->shard_range = site.range();
        inst->cell->shard = std::move(facts);
        (void)in;
        return self;
      },
      self));
}

// `cell.pipeline_stage = v`: MindSpore's property setter checks (nn/cell.py), then the stage.
void set_pipeline_stage(Interpreter& in, InstanceObj* inst, const Value& v, const Site& site) {
  if (v.is_unknown()) return;
  if (v.k != VK::Int) {
    in.report(site, Severity::Error, "parallel-stage",
              "For 'Cell', the property 'pipeline_stage' must be int type, but got type : "
              "<class '" +
                  type_name(v) + "'>");
    return;
  }
  if (v.as_int() < 0) {
    in.report(site, Severity::Error, "parallel-stage",
              "For 'Cell', the property 'pipeline_stage' can not be less than 0, but got " +
                  std::to_string(v.as_int()));
    return;
  }
  inst->cell->pipeline_stage = v.as_int();
  inst->cell->stage_file = site.file_id();
  inst->cell->stage_range = site.range();
  in.any_stage = true;
}

// The parallel facts of a node being added: the operator's strategy (`obj`'s `.shard`) and,
// when the program sets stages, the stage of the innermost Cell that has one.
void attach_parallel(Interpreter& in, Node& n, InstanceObj* obj) {
  const bool sharded = obj != nullptr && obj->cell && obj->cell->shard;
  if (!sharded && !in.any_stage) return;
  auto p = sharded ? std::make_shared<NodeParallel>(*obj->cell->shard)
                   : std::make_shared<NodeParallel>();
  if (sharded) {
    const std::string& path = obj->cell->path.str();
    p->attr = path.substr(path.rfind('.') == std::string::npos ? 0 : path.rfind('.') + 1);
  }
  if (in.any_stage) {
    InstanceObj* layer = obj != nullptr && obj->cell && !obj->cell->path.empty()
                             ? obj
                             : (in.cell_stack.empty() ? nullptr : in.cell_stack.back());
    InstanceObj* staged = nullptr;
    if (layer != nullptr && layer->cell && layer->cell->pipeline_stage >= 0) staged = layer;
    for (auto it = in.cell_stack.rbegin(); staged == nullptr && it != in.cell_stack.rend(); ++it) {
      if ((*it)->cell && (*it)->cell->pipeline_stage >= 0) staged = *it;
    }
    InstanceObj* named = staged != nullptr ? staged : layer;
    if (named != nullptr && named->cell) {
      p->cell = named->cell->path.str();
      p->cell_file = named->cell->file;
      p->cell_site = named->cell->site;
    }
    if (staged != nullptr) {
      CellState& cs = *staged->cell;
      p->stage = cs.pipeline_stage;
      auto& stages = in.graph->graph.stages;
      if (std::none_of(stages.begin(), stages.end(),
                       [&](const CellStage& c) { return c.cell == cs.path.str(); })) {
        stages.push_back(
            CellStage{cs.path.str(), cs.pipeline_stage, cs.stage_file, cs.stage_range});
      }
    }
  }
  n.parallel = std::move(p);
}

}  // namespace graphcore::eval
