// analyze_file: load the module, find the Cells to analyse, compile each root's construct into a
// graph, and assemble per-Cell reports and diagnostics.
#include "graphcore/analysis.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_set>

#include "graphcore/checked.h"
#include "interp.h"
#include "npvalues.h"
#include "parallel_check.h"
#include "training_eval.h"

namespace graphcore {

using namespace eval;
namespace fs = std::filesystem;

std::optional<std::string> DiskSourceProvider::read(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void MemorySourceProvider::add(const fs::path& path, std::string text) {
  files_[path.lexically_normal().generic_string()] = std::move(text);
}

std::optional<std::string> MemorySourceProvider::read(const fs::path& path) {
  auto it = files_.find(path.lexically_normal().generic_string());
  if (it == files_.end()) return std::nullopt;
  return it->second;
}

size_t AnalysisResult::error_count() const {
  return static_cast<size_t>(
      std::count_if(diagnostics.begin(), diagnostics.end(),
                    [](const Diagnostic& d) { return d.severity == Severity::Error; }));
}

std::optional<TensorType> parse_input_spec(std::string_view spec, std::string* error) {
  TensorType t{Shape{}, DType::Float32};
  std::string_view dims = spec;
  if (auto colon = spec.find(':'); colon != std::string_view::npos) {
    dims = spec.substr(0, colon);
    auto dt = dtype_from_name(spec.substr(colon + 1));
    if (!dt) {
      if (error)
        *error = "unknown dtype `" + std::string(spec.substr(colon + 1)) +
                 "` (try float32, float16, int32, int64, bool)";
      return std::nullopt;
    }
    t.dtype = *dt;
  }
  if (dims.empty() || dims == "()" || dims == "scalar") return t;
  size_t pos = 0;
  while (pos <= dims.size()) {
    size_t comma = dims.find(',', pos);
    std::string_view part =
        dims.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    if (part.empty()) {
      if (error) *error = "empty dimension in `" + std::string(spec) + "`";
      return std::nullopt;
    }
    if (part == "?" || part == "-1" || part == "None") {
      t.shape.dims.push_back(Dim::unknown());
    } else if (std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      if (part.size() > 15) {
        if (error) *error = "dimension `" + std::string(part) + "` is too large";
        return std::nullopt;
      }
      t.shape.dims.push_back(Dim::known(std::stoll(std::string(part))));
    } else if (std::isalpha(static_cast<unsigned char>(part.front())) &&
               std::all_of(part.begin(), part.end(), [](char c) {
                 return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
               })) {
      t.shape.dims.push_back(Dim::symbol(part));
    } else {
      if (error)
        *error = "bad dimension `" + std::string(part) + "` in `" + std::string(spec) +
                 "` (use e.g. 1,3,224,224 or N,128:int32)";
      return std::nullopt;
    }
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  int64_t count = 1;
  for (const Dim& d : t.shape.dims) {
    if (!d.is_known()) continue;
    auto c = checked_mul(count, d.value());
    if (!c) {
      if (error) *error = "shape `" + std::string(dims) + "` has more elements than fit in int64";
      return std::nullopt;
    }
    count = *c;
  }
  return t;
}

namespace {

struct Root {
  std::string name;
  Value cell;
  Site site;
};

// An ms.export call as the options it gives `cellscope export`: the root Cell its network is, its
// inputs' static types, its file name and format -- or why it does not give them.
ExportCall export_call(const Interpreter::ExportSite& site, const std::vector<Root>& roots) {
  ExportCall e;
  e.call = site.call;
  for (const Root& r : roots) {
    if (r.cell.o == site.net.o) e.cell = r.name;
  }
  // A root the analysis built itself the way the program built its network (`net = vit_b_16()`
  // in __main__, the root `vit_b_16()`): the same class from the same factory, as call sites
  // give a root its inputs.
  const auto* net = site.net.as<InstanceObj>();
  for (const Root& r : roots) {
    const auto* other = r.cell.as<InstanceObj>();
    if (e.cell.empty() && net != nullptr && net->cell && other != nullptr && other->cell &&
        other->cls == net->cls && other->cell->factory == net->cell->factory) {
      e.cell = r.name;
    }
  }
  auto why = [&](std::string reason) {
    if (e.unfollowed.empty()) e.unfollowed = std::move(reason);
  };
  if (net == nullptr) {
    why("its network is not a Cell the analysis followed");
  } else if (e.cell.empty()) {
    why("its network is not one of the file's root Cells");
  }
  for (size_t i = 0; i < site.inputs.size(); ++i) {
    const auto* t = site.inputs[i].as<TensorObj>();
    if (t == nullptr) {
      why("input " + std::to_string(i + 1) + " is not a tensor the analysis followed");
    } else if (t->type.dtype == DType::Unknown || !t->type.shape.fully_known()) {
      why("input " + std::to_string(i + 1) +
          " has no static shape and dtype: " + t->type.shape.str());
    } else {
      e.inputs.push_back(t->type);
    }
  }
  if (site.inputs.empty()) why("it passes no input tensor");
  if (const std::string* s = str_of(site.file_name)) {
    e.file_name = *s;
  } else {
    why("its file_name is not a string the analysis knows");
  }
  if (const std::string* s = str_of(site.file_format)) {
    e.file_format = *s;
  } else {
    why("its file_format is not a string the analysis knows");
  }
  return e;
}

// Tree walks mark what they visited instead of keeping hash sets (Cells and Parameters can be
// shared, and a model can hold a hundred thousand of them).
uint32_t next_walk_mark() {
  static std::atomic<uint32_t> counter{0};
  return ++counter;
}

// The element count of a Parameter of this shape; nullopt if a dim is not known. Sets `overflow`
// when the dims are known but their product does not fit in int64.
std::optional<int64_t> param_elements(const Shape& shape, bool& overflow) {
  overflow = false;
  if (!shape.fully_known()) return std::nullopt;
  int64_t n = 1;
  for (const Dim& d : shape.dims) {
    auto p = checked_mul(n, d.value());
    if (!p) {
      overflow = true;
      return std::nullopt;
    }
    n = *p;
  }
  return n;
}

// The first Parameter whose count overflows int64, at the construction of the Cell that owns it.
struct CountOverflow {
  std::string message;  // empty: none
  std::string file;
  SourceRange range;
};

// Walks a root's Cell tree, giving each instance its path ("layer1.0.conv1"), and collecting
// the classes met (`classes`) and the Parameters with their counts (`report`) when given. A count
// that overflows int64 is left out of the totals and recorded in `overflow` (when given).
void assign_paths(const Value& v, std::string& path, uint32_t mark,
                  std::unordered_set<const ClassObj*>* classes, CellReport* report,
                  CountOverflow* overflow = nullptr) {
  auto* inst = v.as<InstanceObj>();
  if (!inst || !inst->cell || inst->cell->walk_mark == mark) return;
  CellState& cs = *inst->cell;
  cs.walk_mark = mark;
  if (cs.path != std::string_view(path)) cs.path = path;  // interning is the costly part
  if (classes) classes->insert(inst->cls);
  // `path` is extended in place for each child and restored afterwards.
  const size_t len = path.size();
  auto join = [&](std::string_view k) {
    path.resize(len);
    if (len != 0) path += '.';
    path += k;
  };
  if (report) {
    for (auto& [k, p] : cs.params) {
      auto* t = p.as<TensorObj>();
      if (!t || t->walk_mark == mark) continue;
      t->walk_mark = mark;
      join(k);
      report->params.push_back(ParamInfo{t->mindspore_name(path), t->type.shape, t->type.dtype,
                                         t->requires_grad, t->init});
      bool too_large = false;
      auto n = param_elements(t->type.shape, too_large);
      std::optional<int64_t> total, trainable = report->trainable_params;
      if (n) {
        total = checked_add(report->total_params, *n);
        if (t->requires_grad) trainable = checked_add(report->trainable_params, *n);
      }
      if (n && total && trainable) {
        report->total_params = *total;
        report->trainable_params = *trainable;
      } else if ((too_large || n) && overflow && overflow->message.empty()) {
        overflow->message = too_large ? "the element count of Parameter `" + path + "` (shape " +
                                            t->type.shape.str() + ") overflows int64"
                                      : "the parameter count overflows int64 at Parameter `" +
                                            path + "` (shape " + t->type.shape.str() + ")";
        overflow->file = std::string(std::string_view(cs.file));
        overflow->range = cs.site;
      }
    }
  }
  for (auto& [k, child] : cs.children) {
    if (cs.no_prefix) {
      path.resize(len);  // Cell.__init__(auto_prefix=False): the child keeps this Cell's path
    } else {
      join(k);
    }
    assign_paths(child, path, mark, classes, report, overflow);
  }
  for (size_t i = 0; i < cs.items.size(); ++i) {
    if (i < cs.item_names.size())
      join(cs.item_names[i]);
    else
      join(std::to_string(i));
    assign_paths(cs.items[i], path, mark, classes, report, overflow);
  }
  path.resize(len);
}

// The Cell tree below `v` in the order of registration (LSP hovers and code lenses).
void collect_instances(Interpreter& in, const Value& v, uint32_t mark, CellReport& report) {
  auto* inst = v.as<InstanceObj>();
  if (!inst || !inst->cell || inst->cell->walk_mark == mark) return;
  inst->cell->walk_mark = mark;
  CellInstance ci;
  ci.path = inst->cell->path;
  ci.class_name = inst->cls->name;
  if (const ApiEntry* api = inst->cls->api_base(); api && !inst->cls->def) ci.api = api->name;
  if (inst->cls->def && inst->cls->module && !inst->cls->module->file.empty()) {
    ci.class_file = inst->cls->module->file;
    ci.class_range = in.def_name_range(inst->cls->def, inst->cls->module);
  }
  ci.site_file = inst->cell->file;
  ci.site_range = inst->cell->site;
  ci.call_file = inst->cell->call_file;
  ci.call_range = inst->cell->call_site;
  report.instances.push_back(std::move(ci));
  for (auto& [k, child] : inst->cell->children) collect_instances(in, child, mark, report);
  for (const Value& item : inst->cell->items) collect_instances(in, item, mark, report);
}

FunctionObj* construct_of(InstanceObj* inst) {
  const Value* c = inst->cls->lookup("construct");
  return c ? c->as<FunctionObj>() : nullptr;
}

// True when the class can be constructed with no arguments.
// A literal-like value: None, a number, a string, a dtype, or a tuple of those.
bool plain_data(const Value& v) {
  if (v.is_none() || v.is_number() || str_of(v) || v.as<DTypeObj>()) return true;
  if (auto* t = v.as<TupleObj>()) {
    return std::all_of(t->items.begin(), t->items.end(), plain_data);
  }
  return false;
}

bool constructible_with_defaults(ClassObj* cls) {
  for (ClassObj* c : cls->mro) {
    if (Value* init = c->attrs.find_str("__init__")) {
      auto* fn = init->as<FunctionObj>();
      if (!fn) return false;
      const auto& params = fn->def->list;
      bool named = false;
      for (size_t i = 1; i < params.size(); ++i) {
        auto kind = static_cast<ast::ParamKindAst>(params[i]->op);
        if (kind == ast::ParamKindAst::VarArgs || kind == ast::ParamKindAst::VarKwargs) continue;
        if (!fn->has_default[i]) return false;
        named = true;
      }
      // `__init__(self, *args, **kwargs)` forwards whatever its caller gives: with nothing it
      // builds nothing anybody uses.
      return named || params.size() <= 1;
    }
    if (c->api) return false;  // subclass of a registry layer without its own __init__
  }
  return true;
}

std::vector<std::string> required_params(ClassObj* cls) {
  std::vector<std::string> out;
  for (ClassObj* c : cls->mro) {
    if (Value* init = c->attrs.find_str("__init__")) {
      if (auto* fn = init->as<FunctionObj>()) {
        const auto& params = fn->def->list;
        for (size_t i = 1; i < params.size(); ++i) {
          auto kind = static_cast<ast::ParamKindAst>(params[i]->op);
          if (kind == ast::ParamKindAst::Normal || kind == ast::ParamKindAst::KeywordOnly) {
            if (!fn->has_default[i]) out.emplace_back(params[i]->str);
          }
        }
      }
      break;
    }
  }
  return out;
}

class RootCompiler {
 public:
  RootCompiler(Interpreter& in, const AnalysisOptions& options, const ModuleLoader& loader)
      : in_(in), options_(options), loader_(loader) {}

  // Compiles a root. Inputs nobody gave a shape for start unranked; if the first layer reading
  // one tells its rank (a Conv2d wants (N, C, H, W)), the root is compiled again with symbolic
  // dimensions so that channel and feature checks still work without a concrete input.
  CellReport compile(const Root& root, uint32_t& next_graph_id) {
    size_t mark = in_.diagnostics_mark();
    std::vector<std::optional<TensorType>> refined;
    CellReport rep = compile_once(root, next_graph_id++, {}, &refined);
    bool any =
        std::any_of(refined.begin(), refined.end(), [](const auto& t) { return t.has_value(); });
    if (!any) return rep;
    in_.rollback_diagnostics(mark);
    return compile_once(root, next_graph_id++, refined, nullptr);
  }

 private:
  // The type an unshaped input must have for the first layer that reads it, or nullopt.
  static std::optional<TensorType> infer_input(const Graph& g, uint32_t input_node) {
    for (const Node& n : g.nodes) {
      bool reads = std::any_of(n.inputs.begin(), n.inputs.end(),
                               [&](const ValueRef& r) { return r.node == input_node; });
      if (!reads || n.kind != NodeKind::Op) continue;
      auto attr_int = [&](const char* name) -> std::optional<int64_t> {
        if (const AttrValue* v = n.find_attr(name)) {
          if (auto* i = std::get_if<int64_t>(v)) return *i;
        }
        return std::nullopt;
      };
      auto channel = [&](std::initializer_list<const char*> names) {
        for (const char* nm : names) {
          if (auto v = attr_int(nm)) return Dim::known(*v);
        }
        return Dim::symbol("C");
      };
      const std::string& api = n.api;
      auto ends = [&](std::string_view suffix) {
        return api.size() >= suffix.size() &&
               api.compare(api.size() - suffix.size(), suffix.size(), suffix) == 0;
      };
      Dim N = Dim::symbol("N");
      if (ends("2d") || ends("2dTranspose")) {
        return TensorType{Shape({N, channel({"in_channels", "num_features", "channel"}),
                                 Dim::symbol("H"), Dim::symbol("W")}),
                          DType::Float32};
      }
      if (ends("1d") || ends("1dTranspose")) {
        return TensorType{
            Shape({N, channel({"in_channels", "num_features", "channel"}), Dim::symbol("L")}),
            DType::Float32};
      }
      if (ends("3d")) {
        return TensorType{Shape({N, channel({"in_channels", "num_features"}), Dim::symbol("D"),
                                 Dim::symbol("H"), Dim::symbol("W")}),
                          DType::Float32};
      }
      if (api == "nn.Dense")
        return TensorType{Shape({N, channel({"in_channels"})}), DType::Float32};
      if (api == "nn.Embedding") return TensorType{Shape({N, Dim::symbol("L")}), DType::Int32};
      if (api == "nn.LSTM" || api == "nn.GRU" || api == "nn.RNN") {
        bool batch_first = false;
        if (const AttrValue* v = n.find_attr("batch_first")) {
          if (auto* b = std::get_if<bool>(v)) batch_first = *b;
        }
        Dim feat = channel({"input_size"});
        return TensorType{
            batch_first ? Shape({N, Dim::symbol("L"), feat}) : Shape({Dim::symbol("L"), N, feat}),
            DType::Float32};
      }
      return std::nullopt;
    }
    return std::nullopt;
  }

 public:
  CellReport compile_once(const Root& root, uint32_t graph_id,
                          const std::vector<std::optional<TensorType>>& given,
                          std::vector<std::optional<TensorType>>* refine) {
    CellReport rep;
    auto* inst = root.cell.as<InstanceObj>();
    rep.name = root.name;
    rep.class_name = inst->cls->name;
    rep.file = inst->cls->module ? inst->cls->module->file : root.site.file();
    rep.range = inst->cls->def ? inst->cls->def->range : root.site.range();
    {
      std::string path;
      CountOverflow overflow;
      assign_paths(root.cell, path, next_walk_mark(), nullptr, &rep, &overflow);
      // MindSpore could not build such a Cell either (numpy cannot create the array).
      if (!overflow.message.empty()) {
        if (overflow.file.empty()) {
          overflow.file = rep.file;
          overflow.range = rep.range;
        }
        in_.report_at(overflow.file, overflow.range, Severity::Error, "invalid-argument",
                      "`" + rep.name + "`: " + overflow.message);
      }
    }
    FunctionObj* fn = construct_of(inst);
    const NativeClass root_native = inst->cls->native_base();
    if (!fn && !inst->cell->api && root_native != NativeClass::SequentialCell &&
        root_native != NativeClass::WithLossCell) {
      // Not compiled: the Cell tree is all there is (no call sites).
      if (options_.record_facts) collect_instances(in_, root.cell, next_walk_mark(), rep);
      // A construct lost to a syntax error is already reported as one.
      if (inst->cls->def && inst->cls->def->has_error) return rep;
      // A container (CellList) is never called; a Cell without construct is a mistake only
      // when it is called (`net(x)` in the file) or was written the PyTorch way (`forward`).
      NativeClass nb = inst->cls->native_base();
      if (nb == NativeClass::CellList || nb == NativeClass::CellDict) return rep;
      // A training step (TrainOneStepCell) is compiled by `cellscope train`, not as a graph.
      if (nb == NativeClass::TrainOneStepCell || nb == NativeClass::TrainOneStepWithLossScaleCell) {
        return rep;
      }
      bool called = std::any_of(in_.call_sites.begin(), in_.call_sites.end(),
                                [&](const auto& cs) { return cs.cell.o == root.cell.o; });
      if (!called && !inst->cls->lookup("forward")) return rep;
      in_.report_at(rep.file, rep.range, Severity::Error, "no-construct",
                    "`" + inst->cls->name + "` has no `construct` method");
      return rep;
    }
    // Inputs: the CLI, then a call site for this instance, then one for its class, else symbolic.
    std::vector<Value> inputs;
    std::vector<std::string> names;
    bool var_inputs = false;  // construct(self, *inputs)
    std::string var_name;
    if (fn) {
      const auto& params = fn->def->list;
      for (size_t i = 1; i < params.size(); ++i) {
        auto kind = static_cast<ast::ParamKindAst>(params[i]->op);
        if (kind == ast::ParamKindAst::VarArgs) {
          var_inputs = true;
          var_name = std::string(params[i]->str);
        }
        if (kind != ast::ParamKindAst::Normal) continue;
        names.emplace_back(params[i]->str);
      }
    } else if (root_native == NativeClass::WithLossCell) {
      names = {"data", "label"};  // WithLossCell.construct(self, data, label)
    } else {
      names.emplace_back("x");
    }
    const std::vector<Value>* site_inputs = nullptr;
    for (auto& cs : in_.call_sites) {
      if (cs.cell.o == root.cell.o) {
        site_inputs = &cs.inputs;
        break;
      }
    }
    // Another instance's call site tells this one's inputs only when both were built the same
    // way: a factory's model (`repmlp_b224()`) is not the one `__main__` built with another
    // factory (`repmlp_b256()`) and called with a 256x256 image.
    if (!site_inputs) {
      for (auto& cs : in_.call_sites) {
        auto* other = cs.cell.as<InstanceObj>();
        if (other && other->cls == inst->cls && other->cell &&
            other->cell->factory == inst->cell->factory) {
          site_inputs = &cs.inputs;
          break;
        }
      }
    }
    // Declared inputs: the options' (`--input`, the file's entry in mindspore_config.json), else
    // the config's entry for this root's class (`"inputs": {"Net": ["1,1,28,28"]}`).
    const std::vector<TensorType>* declared = options_.inputs.empty() ? nullptr : &options_.inputs;
    if (!declared) {
      if (auto it = options_.cell_inputs.find(inst->cls->name);
          it != options_.cell_inputs.end() && !it->second.empty())
        declared = &it->second;
    }
    size_t fixed_inputs = names.size();
    size_t given_count =
        !given.empty() ? given.size()
                       : (declared ? declared->size() : (site_inputs ? site_inputs->size() : 0));
    if (var_inputs) {
      for (size_t i = fixed_inputs; i < given_count; ++i)
        names.push_back(var_name + "[" + std::to_string(i - fixed_inputs) + "]");
    }
    Graph& g = rep.graph;
    g.nodes.reserve(256);
    GraphBuilder gb(g, graph_id);
    in_.graph = &gb;
    in_.facts = options_.record_facts ? &rep.facts : nullptr;
    in_.cell_stack.clear();
    CallArgs args;
    std::vector<std::pair<size_t, uint32_t>> unshaped_inputs;  // (argument index, node)
    for (size_t i = 0; i < names.size(); ++i) {
      Value v;
      bool unshaped = false;
      if (i < given.size() && given[i]) {
        v = make_tensor(*given[i]);
      } else if (declared && i < declared->size()) {
        v = make_tensor((*declared)[i]);
      } else if (!declared && site_inputs && i < site_inputs->size()) {
        v = (*site_inputs)[i];
      } else if (fn && i < fixed_inputs && fn->has_default[i + 1]) {
        // An optional input (`mask=None`, `input_id=None`): callers the file does not show may
        // pass a tensor, so it is unknown rather than None. Plain data defaults
        // (`training=False`) are kept; an object default (`state=MatmulLtState`, a class
        // standing for the instance callers pass) is unknown too.
        const Value& d = fn->defaults[i + 1];
        v = plain_data(d) && !d.is_none() ? d : Value::unknown();
      } else {
        v = make_tensor(TensorType{Shape::unranked(), DType::Float32});
        unshaped = true;
      }
      if (auto* t = v.as<TensorObj>()) {
        TensorType type = t->type;  // `v` is replaced below
        Node n;
        n.kind = NodeKind::Input;
        n.op = "Input";
        n.id = names[i];
        n.outputs.push_back(type);
        n.file = rep.file;
        n.range = fn && i < fixed_inputs ? fn->def->list[i + 1]->range : rep.range;
        auto idx = static_cast<uint32_t>(g.nodes.size());
        g.nodes.push_back(std::move(n));
        auto graph_t = std::make_shared<TensorObj>(type);
        graph_t->graph_id = graph_id;
        graph_t->ref = ValueRef{idx, 0};
        v = Value::obj(graph_t);
        rep.inputs.push_back(NamedTensor{names[i], type});
        if (unshaped) unshaped_inputs.emplace_back(i, idx);
      }
      args.pos.push_back(v);
      args.pos_ranges.push_back(rep.range);
    }
    // `construct(self, *inputs)` with no call site or --input: how many inputs is unknown.
    if (var_inputs && given_count == 0) args.open = true;
    in_.guessed_inputs = declared == nullptr && site_inputs == nullptr;
    Site site = root.site;
    Value out;
    try {
      out = in_.call(root.cell, args, site);
      rep.compiled = true;
    } catch (const BudgetExceeded& b) {
      in_.report_budget(b);
    } catch (const PyRaise& r) {
      in_.report(r.site, Severity::Error, "raises",
                 "compiling `" + inst->cls->name + ".construct` raises " + r.type +
                     (r.message.empty() ? "" : ": " + r.message));
    }
    in_.graph = nullptr;
    in_.facts = nullptr;
    in_.cell_stack.clear();
    // After compiling: construct recorded where each instance is called.
    if (options_.record_facts) collect_instances(in_, root.cell, next_walk_mark(), rep);
    // Outputs (a tensor, or a tuple/list of them).
    std::vector<Value> outs;
    if (auto* items = seq_items(out))
      outs = *items;
    else if (!out.is_none())
      outs.push_back(out);
    for (size_t i = 0; i < outs.size(); ++i) {
      auto* t = outs[i].as<TensorObj>();
      if (!t) continue;
      if (t->graph_id == graph_id) g.outputs.push_back(t->ref);
      rep.outputs.push_back(
          NamedTensor{"output" + (outs.size() > 1 ? std::to_string(i) : ""), t->type});
    }
    if (refine && !unshaped_inputs.empty()) {
      refine->assign(names.size(), std::nullopt);
      for (auto [arg, node] : unshaped_inputs) (*refine)[arg] = infer_input(g, node);
    }
    for (const Node& n : g.nodes) rep.flops += n.flops;
    // With no output at all (no-return), every node would look unused: that is one error, not many.
    if (!rep.outputs.empty()) report_unused(rep, gb);
    // The parallel-strategy checks read the nodes: before a diagnostics-only run drops them.
    check_parallel_graph(g, in_.parallel, parallel_report_);
    if (!options_.include_nodes) g.nodes.clear();
    return rep;
  }

  // The loss graph of a training plan: `callee` (a loss Cell, WithLossCell's composition or
  // forward_fn) called with the batch's columns as graph inputs. Its Parameters are the
  // network's, named as MindSpore names them (the network is the root of the paths).
  CellReport compile_loss_graph(const PlannedTraining& pt, const Site& site,
                                uint32_t& next_graph_id) {
    CellReport rep;
    rep.name = "loss:" + (pt.plan.network.empty() ? std::string("?") : pt.plan.network);
    rep.class_name = pt.plan.network;
    rep.file = pt.plan.file;
    rep.range = pt.plan.range;
    uint32_t mark = next_walk_mark();
    std::string path;
    assign_paths(pt.network, path, mark, nullptr, &rep, nullptr);
    if (pt.loss_fn.as<InstanceObj>() && pt.callee.as<BuiltinObj>()) {
      std::string loss_path = "_loss_fn";
      assign_paths(pt.loss_fn, loss_path, mark, nullptr, nullptr, nullptr);
    }
    const uint32_t graph_id = next_graph_id++;
    Graph& g = rep.graph;
    GraphBuilder gb(g, graph_id);
    in_.graph = &gb;
    in_.facts = nullptr;
    in_.cell_stack.clear();
    CallArgs args;
    for (size_t i = 0; i < pt.inputs.size(); ++i) {
      Node n;
      n.kind = NodeKind::Input;
      n.op = "Input";
      n.id = pt.input_names[i];
      n.outputs.push_back(pt.inputs[i]);
      n.file = rep.file;
      n.range = rep.range;
      auto idx = static_cast<uint32_t>(g.nodes.size());
      g.nodes.push_back(std::move(n));
      auto t = std::make_shared<TensorObj>(pt.inputs[i]);
      t->graph_id = graph_id;
      t->ref = ValueRef{idx, 0};
      args.pos.push_back(Value::obj(t));
      args.pos_ranges.push_back(rep.range);
      rep.inputs.push_back(NamedTensor{pt.input_names[i], pt.inputs[i]});
    }
    in_.guessed_inputs = false;
    Value out;
    try {
      out = in_.call(pt.callee, args, site);
      rep.compiled = true;
    } catch (const BudgetExceeded& b) {
      in_.report_budget(b);
    } catch (const PyRaise& r) {
      in_.report(r.site, Severity::Information, "training-not-followed",
                 "training plan: compiling the loss raises " + r.type +
                     (r.message.empty() ? "" : ": " + r.message));
    }
    in_.graph = nullptr;
    in_.cell_stack.clear();
    if (pt.first_output_only) {
      if (auto* items = seq_items(out); items && !items->empty()) out = (*items)[0];
    }
    if (auto* t = out.as<TensorObj>()) {
      if (t->graph_id == graph_id) g.outputs.push_back(t->ref);
      rep.outputs.push_back(NamedTensor{"loss", t->type});
    }
    for (const Node& n : g.nodes) rep.flops += n.flops;
    if (!options_.include_nodes) g.nodes.clear();
    return rep;
  }

  // The learning rate of a plan whose optimizer was given an instance of a user's
  // LearningRateSchedule subclass: its construct called with the optimizer's global_step (a
  // graph input, int32, shape (1,)) gives the lr graph the runtime evaluates at each step. Nothing
  // of the user's code runs; a construct the evaluator cannot follow leaves the graph uncompiled,
  // with why in plan.lr_graph_reason and an Information diagnostic at the schedule's creation.
  void compile_lr_graph(PlannedTraining& pt, const Site& site, uint32_t& next_graph_id) {
    TrainingPlan& plan = pt.plan;
    auto* inst = pt.lr_cell.as<InstanceObj>();
    if (inst == nullptr) return;
    const std::string cls = inst->cls->name;
    // Messages go to the class's definition (its construct is what is compiled).
    const bool at_class = inst->cls->def != nullptr && inst->cls->module != nullptr;
    const std::string file = at_class ? inst->cls->module->file : plan.file;
    const SourceRange where = at_class ? inst->cls->def->range : plan.range;
    auto give_up = [&](const std::string& why) {
      plan.lr_graph = CellReport{};
      plan.lr_graph.class_name = cls;
      plan.lr_graph_reason = why;
      in_.report_at(file, where, Severity::Information, "training-not-followed",
                    "training plan: the learning rate " + cls +
                        " (a LearningRateSchedule subclass) cannot be evaluated: " + why);
    };
    // A LearningRateSchedule is a Cell: calling it runs construct. When the evaluator does not
    // see the base as a Cell (its module not modelled), construct is called directly.
    Value callee = pt.lr_cell;
    if (!inst->is_cell()) {
      callee = in_.getattr(pt.lr_cell, "construct", site, false);
      if (callee.is_unknown()) {
        give_up("the analyser sees no construct(self, global_step) in it");
        return;
      }
    }
    CellReport& rep = plan.lr_graph;
    rep.name = "lr:" + cls;
    rep.class_name = cls;
    rep.file = file;
    rep.range = where;
    uint32_t mark = next_walk_mark();
    std::string path;
    assign_paths(pt.lr_cell, path, mark, nullptr, &rep, nullptr);
    const uint32_t graph_id = next_graph_id++;
    Graph& g = rep.graph;
    GraphBuilder gb(g, graph_id);
    in_.graph = &gb;
    in_.facts = nullptr;
    in_.cell_stack.clear();
    const TensorType step_type{Shape::of({1}), DType::Int32};
    Node n;
    n.kind = NodeKind::Input;
    n.op = "Input";
    n.id = "global_step";
    n.outputs.push_back(step_type);
    n.file = file;
    n.range = where;
    g.nodes.push_back(std::move(n));
    auto step = std::make_shared<TensorObj>(step_type);
    step->graph_id = graph_id;
    step->ref = ValueRef{0, 0};
    CallArgs args;
    args.pos.push_back(Value::obj(step));
    args.pos_ranges.push_back(where);
    rep.inputs.push_back(NamedTensor{"global_step", step_type});
    in_.guessed_inputs = false;
    Value out;
    std::string raised;
    try {
      out = in_.call(callee, args, site);
    } catch (const BudgetExceeded& b) {
      in_.report_budget(b);
      raised = "the evaluation budget ran out";
    } catch (const PyRaise& r) {
      raised = "its construct raises " + r.type + (r.message.empty() ? "" : ": " + r.message);
    }
    in_.graph = nullptr;
    in_.cell_stack.clear();
    auto* t = out.as<TensorObj>();
    const bool one_value = t != nullptr && t->type.shape.ranked && t->type.shape.fully_known() &&
                           t->type.shape.num_elements().is_known() &&
                           t->type.shape.num_elements().value() == 1;
    if (!raised.empty()) {
      give_up(raised);
    } else if (t == nullptr || t->graph_id != graph_id) {
      give_up(
          "its construct(global_step) does not give a tensor computed from global_step "
          "that the analyser follows");
    } else if (!one_value || (t->type.dtype != DType::Float32 && t->type.dtype != DType::Float16)) {
      give_up("its construct gives " + t->type.str() + ", not one float value");
    } else if (!rep.params.empty()) {
      give_up("it holds Parameters (" + rep.params.front().name +
              "), whose values the plan does not know");
    } else {
      g.outputs.push_back(t->ref);
      rep.outputs.push_back(NamedTensor{"learning_rate", t->type});
      rep.compiled = true;
      plan.lr_graph_reason.clear();
    }
  }

 private:
  // A node whose result nobody reads and that is not an output: dead code the user probably
  // did not mean (only the last node of a dead chain is reported).
  void report_unused(const CellReport& rep, const GraphBuilder& gb) {
    const auto& consumed = gb.consumed_by_failed;
    const Graph& g = rep.graph;
    std::vector<uint32_t> uses(g.nodes.size(), 0);
    for (const Node& n : g.nodes) {
      for (const ValueRef& r : n.inputs) ++uses[r.node];
    }
    for (const ValueRef& r : g.outputs) ++uses[r.node];
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      if (n.kind != NodeKind::Op || uses[i] != 0 || consumed.count(static_cast<uint32_t>(i)))
        continue;
      // Only a value the source itself drops: a node nobody reads in the graph may still be
      // used by code the evaluator could not follow (an op without a shape rule leaves no node).
      if (!gb.discarded.count(static_cast<uint32_t>(i))) continue;
      in_.report_at(n.file, n.range, Severity::Warning, "unused-result",
                    "the result of `" + source_text(n.file, n.range) +
                        "` is computed but never used" + gb.note_for(static_cast<uint32_t>(i)));
    }
  }
  std::string source_text(const std::string& file, SourceRange r) const {
    const ast::ParsedFile* p = loader_.parsed(file);
    if (!p) return "...";
    LineIndex index(p->text);
    size_t a = index.offset_of(r.start);
    size_t b = index.offset_of(r.end);
    std::string t = b > a ? p->text.substr(a, b - a) : std::string("...");
    for (char& c : t) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    if (t.size() > 60) t = t.substr(0, 57) + "...";
    return t;
  }
  Interpreter& in_;
  const AnalysisOptions& options_;
  // The parallel checks report as the interpreter does (a repeat is reported once; a root's
  // trial compilation that is redone takes its reports back).
  ParallelReport parallel_report_ = [this](const std::string& f, SourceRange r, Severity sev,
                                           std::string code, std::string msg) {
    in_.report_at(f, r, sev, std::move(code), std::move(msg));
  };
  const ModuleLoader& loader_;
};

}  // namespace

namespace {

AnalysisResult analyze_unguarded(const fs::path& file, const AnalysisOptions& options,
                                 SourceProvider& sources) {
  AnalysisResult result;
  result.file = file.string();
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  };
  auto t_start = Clock::now();
  // Declared first, closed last: what the loader and the interpreter leave alive is cycles.
  ObjectHeap heap;
  ModuleLoader loader(sources, options);
  Interpreter in(options, loader);
  if (options.device_num > 0) {  // mindspore_config.json's, until the script sets its own
    in.parallel.device_num = options.device_num;
    in.parallel.device_num_from = "mindspore_config.json";
  }
  npv::Enable element_values(options.constant_values);
  if (options.record_facts) in.refs = &result.references;
  in.main_file = file.string();
  ModuleObj* main = loader.load_file(in, file, "__main__");
  if (main && main->parsed && options.outline) result.outline = ast::outline_of(*main->parsed);
  if (!main) {
    result.diagnostics.push_back(Diagnostic{file.string(),
                                            SourceRange{},
                                            Severity::Error,
                                            "file-not-found",
                                            "cannot read `" + file.string() + "`",
                                            {},
                                            {}});
    return result;
  }
  std::vector<Root> roots;
  std::unordered_set<const ClassObj*> rooted_classes;
  std::unordered_set<std::string> used_names;
  auto unique_name = [&](std::string n) {
    std::string base = n;
    for (int k = 2; used_names.count(n); ++k) n = base + "#" + std::to_string(k);
    used_names.insert(n);
    return n;
  };
  auto add_root = [&](const std::string& name, const Value& cell, const Site& site) {
    auto* inst = cell.as<InstanceObj>();
    if (!inst || !inst->cell) return false;
    for (auto& r : roots) {
      if (r.cell.o == cell.o) return false;
    }
    roots.push_back(Root{unique_name(name), cell, site});
    rooted_classes.insert(inst->cls);
    return true;
  };
  auto guarded_budget = [&](auto&& fn) {
    try {
      fn();
    } catch (const BudgetExceeded& b) {
      in.report_budget(b);
    }
  };
  auto guarded = [&](auto&& fn) {
    try {
      fn();
    } catch (const BudgetExceeded& b) {
      in.report_budget(b);
    } catch (const PyRaise& r) {
      in.report(
          r.site, Severity::Error, "raises",
          "constructing the model raises " + r.type + (r.message.empty() ? "" : ": " + r.message));
    }
  };
  // A root nobody asked for: a Cell class or a public function tried with its defaults because
  // nothing in the file builds it. If that construction raises, those defaults are not a model
  // anybody runs (a base class whose defaults fail its own asserts, a helper that needs its
  // caller's arguments): the attempt and whatever it reported are dropped, with one hint.
  auto speculative = [&](const std::string& what, SourceRange name_range, auto&& fn) {
    size_t mark = in.diagnostics_mark();
    std::string why;
    ++in.speculative;
    try {
      fn();
      --in.speculative;
      return;
    } catch (const BudgetExceeded& b) {
      // A loop or recursion that never ends does so whatever the arguments: an error.
      --in.speculative;
      in.report_budget(b);
      return;
    } catch (const PyRaise& r) {
      why = "raises " + r.type + (r.message.empty() ? "" : ": " + r.message);
    }
    --in.speculative;
    in.rollback_diagnostics(mark);
    in.report_at(main->file, name_range, Severity::Information, "not-analysed",
                 "`" + what + "` is not analysed alone: with its default arguments it " + why +
                     ". It is analysed where it is used, or with --entry");
  };
  // Decorated by a model registry (`@register_model`, `@register_backbone`): the library's own
  // way of building it (`create_model("resnet50")` calls it with its defaults).
  auto registered = [](const FunctionObj* fn) {
    for (const ast::Node* d : fn->def->list3) {
      const ast::Node* e = d->kind == ast::K::Call ? d->a : d;
      if (e && (e->kind == ast::K::Name || e->kind == ast::K::Attribute) &&
          e->str.find("regist") != std::string_view::npos)
        return true;
    }
    return false;
  };
  // Classes another class of the module derives from: bases whose attributes subclasses set
  // (`Bottleneck` reading `self.conv1`) are analysed through those subclasses, never alone.
  std::unordered_set<const ClassObj*> subclassed;
  if (main) {
    for (auto& [k, v] : main->globals.entries) {
      if (auto* cls = v.as<ClassObj>()) {
        for (const Value& b : cls->bases) subclassed.insert(b.as<ClassObj>());
      }
    }
  }

  if (main && main->parsed) {
    if (!options.entries.empty()) {
      for (const std::string& expr : options.entries) {
        ast::ParseLimits limits;
        auto parsed = ast::parse_python("<entry>", expr, limits);
        ast::Node* stmt = parsed->module->list.empty() ? nullptr : parsed->module->list[0];
        if (!stmt || stmt->kind != ast::K::ExprStmt || !parsed->diagnostics.empty()) {
          in.report_at(result.file, SourceRange{}, Severity::Error, "invalid-entry",
                       "--entry `" + expr + "` is not a Python expression");
          continue;
        }
        guarded([&] {
          auto frame = std::make_shared<Frame>();
          frame->is_module = true;
          frame->module = main;
          // Evaluate as module-level code of the analysed file; locations of the expression
          // itself are reported against the file's first line.
          Value v = in.eval(stmt->a, *frame);
          if (auto* plan = eval::plan_of(v);
              plan && plan->kind == eval::PlanObj::Kind::TrainOneStep) {
            // A training step (gradients and the optimizer's update), not a forward graph:
            // `cellscope train` runs it; what it wraps is its `.network`.
            in.report_at(result.file, SourceRange{}, Severity::Information, "not-analysed",
                         "--entry `" + expr + "` is a " + plan->call.api +
                             ": it runs a training step, not a forward graph (`cellscope train` "
                             "runs it; `" +
                             expr + ".network` is the network with its loss)");
          } else if (!add_root(expr, v, Site{nullptr, main})) {
            in.report_at(
                result.file, SourceRange{}, Severity::Error, "invalid-entry",
                "--entry `" + expr + "` does not evaluate to a Cell (got `" + type_name(v) + "`)");
          }
        });
        loader.keep(std::move(parsed));
      }
    } else {
      // Factory functions of this file callable with their defaults.
      for (auto& [k, v] : main->globals.entries) {
        auto* fn = v.as<FunctionObj>();
        if (!fn || fn->module != main || fn->def->kind != ast::K::FunctionDef) continue;
        // Callable with no arguments, and not a pass-through helper taking *args
        // (`def conv(*args, **kw)`); `**kwargs` alone is common in model-zoo factories.
        bool all_default = true;
        for (size_t i = 0; i < fn->def->list.size(); ++i) {
          auto kind = static_cast<ast::ParamKindAst>(fn->def->list[i]->op);
          if (kind == ast::ParamKindAst::VarArgs) all_default = false;
          if (kind != ast::ParamKindAst::VarKwargs && kind != ast::ParamKindAst::VarArgs &&
              !fn->has_default[i]) {
            all_default = false;
          }
        }
        if (!all_default) continue;
        // Only functions that return a value (factories), not entry points like main().
        bool returns_value = false;
        for (ast::Node* s : fn->def->list2) {
          if (s->kind == ast::K::Return && s->a && s->a->kind != ast::K::None) returns_value = true;
        }
        if (!returns_value) continue;
        // Registered factories are built the way the library builds them. Other public
        // factories are tried with their defaults. Private helpers (`_create_resnet`) and pure
        // forwarders (`def build(**kwargs)`) only make sense with their callers' arguments.
        bool is_registered = registered(fn);
        bool only_varargs = std::all_of(fn->def->list.begin(), fn->def->list.end(), [](auto* p) {
          auto kind = static_cast<ast::ParamKindAst>(p->op);
          return kind == ast::ParamKindAst::VarArgs || kind == ast::ParamKindAst::VarKwargs;
        });
        if (!is_registered && (fn->name.starts_with("_") || only_varargs)) continue;
        auto build = [&] {
          CallArgs none;
          none.maybe_more = true;  // callers of a factory may pass keywords its **kwargs takes
          size_t before = in.module_level_cells.size();
          Value r = in.call_function(fn, none, Site{fn->def, main}, nullptr, nullptr);
          in.module_level_cells.resize(before);
          if (r.as<InstanceObj>() && r.as<InstanceObj>()->cell)
            add_root(fn->name + "()", r, Site{fn->def, main});
        };
        if (is_registered) {
          // Built the way the library builds it, so what that reports stands. But a `raise`
          // the defaults lead to (`if pretrained: raise NotImplementedError(...)`, where every
          // config passes pretrained=False) says the library's callers pass other arguments.
          try {
            guarded_budget(build);
          } catch (const PyRaise& r) {
            in.report_at(main->file, in.def_name_range(fn->def, main), Severity::Information,
                         "not-analysed",
                         "`" + fn->name +
                             "()` is not analysed alone: with its default arguments "
                             "it raises " +
                             r.type + (r.message.empty() ? "" : ": " + r.message) +
                             ". It is analysed where it is used, or with --entry");
          }
        } else
          speculative(fn->name + "()", in.def_name_range(fn->def, main), build);
      }
      // Cells constructed by module-level code.
      for (auto& c : in.module_level_cells) {
        auto* inst = c.cell.as<InstanceObj>();
        if (rooted_classes.count(inst->cls)) continue;
        // A MindSpore Cell of several inputs built at module level (a loss: logits and labels)
        // is a part the program uses, not a network: its inputs cannot be guessed from a first
        // layer, and compiling it with one would report a missing argument nobody omitted.
        if (inst->cell && inst->cell->api) {
          const auto& params = inst->cell->api->call_params;
          if (std::count_if(params.begin(), params.end(),
                            [](const auto& p) { return p.required(); }) > 1)
            continue;
        }
        add_root(inst->cls->name, c.cell, c.site);
      }
      // Every Cell class of this file constructible with its defaults.
      std::unordered_set<const ClassObj*> used_as_sub;
      {
        uint32_t mark = next_walk_mark();
        std::string path;
        for (auto& r : roots) assign_paths(r.cell, path, mark, &used_as_sub, nullptr);
      }
      for (auto& [k, v] : main->globals.entries) {
        auto* cls = v.as<ClassObj>();
        if (!cls || !cls->is_cell || cls->module != main || !cls->def) continue;
        if (rooted_classes.count(cls)) continue;
        // A building block already analysed through the model that uses it.
        if (used_as_sub.count(cls)) continue;
        // A base class, or a private one: analysed through what derives from or uses it.
        if (subclassed.count(cls) || cls->name.starts_with("_")) continue;
        // Containers (CellList subclasses) have no construct of their own; a construct that is
        // a staticmethod belongs to an autograd-style Function, not a network.
        if (NativeClass nb = cls->native_base();
            nb == NativeClass::CellList || nb == NativeClass::CellDict)
          continue;
        // A Cell that overrides __call__ instead of defining construct (attention processors,
        // helpers) is not a network MindSpore compiles.
        if (!cls->lookup("construct") && cls->lookup("__call__")) continue;
        if (cls->lookup("__new__")) continue;  // builds something else (not modelled)
        if (const Value* c = cls->lookup("construct");
            c && c->as<FunctionObj>() &&
            (c->as<FunctionObj>()->is_static || c->as<FunctionObj>()->is_classmethod))
          continue;
        if (!constructible_with_defaults(cls)) {
          if (!used_as_sub.count(cls) && !required_params(cls).empty()) {
            auto req = required_params(cls);
            std::string list;
            for (size_t i = 0; i < req.size(); ++i) list += (i ? ", " : "") + req[i];
            SourceRange r = cls->def->range;
            r.end = Position{r.start.line,
                             r.start.column + 6 + static_cast<uint32_t>(cls->name.size())};
            in.report_at(
                main->file, r, Severity::Information, "needs-arguments",
                "`" + cls->name + "` is not analysed: its constructor needs " + list +
                    ", and nothing in this file constructs it. Analyse it with --entry \"" +
                    cls->name + "(...)\" or construct it at module level");
          }
          continue;
        }
        const Value& cls_value = v;  // (clang 14 cannot capture a structured binding)
        speculative(cls->name, in.def_name_range(cls->def, main), [&] {
          CallArgs none;
          none.maybe_more = true;
          size_t before = in.module_level_cells.size();
          Value inst = in.instantiate(cls, cls_value, none, Site{cls->def, main});
          in.module_level_cells.resize(before);
          add_root(cls->name, inst, Site{cls->def, main});
        });
      }
    }
  }
  result.timings.parse_ms = loader.parse_ms;
  result.timings.evaluate_ms = ms_since(t_start) - loader.parse_ms;
  auto t_compile = Clock::now();
  uint32_t graph_id = 1;  // each compilation gets its own id (tensors remember their graph)
  RootCompiler compiler(in, options, loader);
  for (const Root& r : roots) {
    auto* inst = r.cell.as<InstanceObj>();
    if (options.cell && *options.cell != r.name && *options.cell != inst->cls->name) continue;
    result.cells.push_back(compiler.compile(r, graph_id));
  }
  if (in.training) {
    // Training plans, in program order, each with its loss graph compiled from the batch's types.
    for (PlannedTraining& pt : plan_trainings(in, *in.training)) {
      if (!pt.callee.is_unknown()) {
        pt.plan.loss_graph = compiler.compile_loss_graph(pt, pt.site, graph_id);
      }
      compiler.compile_lr_graph(pt, pt.site, graph_id);
      result.training.push_back(std::move(pt.plan));
    }
  }
  result.timings.compile_ms = ms_since(t_compile);
  result.parallel = in.parallel;
  check_parallel_context(result.parallel, [&in](const std::string& f, SourceRange r, Severity sev,
                                                std::string code, std::string msg) {
    in.report_at(f, r, sev, std::move(code), std::move(msg));
  });
  for (const auto& site : in.export_calls) result.exports.push_back(export_call(site, roots));
  if (options.cell && result.cells.empty()) {
    std::string known;
    for (auto& r : roots) known += (known.empty() ? "" : ", ") + r.name;
    in.report_at(result.file, SourceRange{}, Severity::Error, "unknown-cell",
                 "no analysed Cell is named `" + *options.cell + "`" +
                     (known.empty() ? "" : " (analysed: " + known + ")"));
  }
  in.finalize_diagnostics();
  result.diagnostics = std::move(in.diagnostics);
  std::stable_sort(result.diagnostics.begin(), result.diagnostics.end(),
                   [&](const Diagnostic& a, const Diagnostic& b) {
                     if (a.file != b.file)
                       return a.file == result.file || (b.file != result.file && a.file < b.file);
                     return a.range.start < b.range.start;
                   });
  result.files = loader.files_read;
  auto ref_key = [](const Reference& r) {
    return std::tie(r.file, r.range.start, r.range.end, r.kind, r.name);
  };
  std::sort(result.references.begin(), result.references.end(),
            [&](const Reference& a, const Reference& b) { return ref_key(a) < ref_key(b); });
  result.references.erase(
      std::unique(result.references.begin(), result.references.end(),
                  [&](const Reference& a, const Reference& b) { return ref_key(a) == ref_key(b); }),
      result.references.end());
  return result;
}

}  // namespace

int64_t evaluator_objects_alive() { return eval::objects_alive(); }

AnalysisResult analyze_file(const fs::path& file, const AnalysisOptions& options,
                            SourceProvider& sources) {
  try {
    return analyze_unguarded(file, options, sources);
  } catch (const Cancelled&) {
    AnalysisResult result;
    result.file = file.string();
    result.cancelled = true;
    return result;
  }
}

}  // namespace graphcore
