// Core of the static evaluator: statements, expressions, name resolution, calls and binding.
#include "interp.h"
#include "npvalues.h"
#include "training_eval.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace graphcore::eval {

using ast::K;
using ast::Node;

namespace {
const std::string kEmpty;
}

const std::string& Site::file() const { return module ? module->file : kEmpty; }
IStr Site::file_id() const { return module ? module->file_id : IStr(); }

const Value* CallArgs::find_kw(std::string_view name) const {
  for (const auto& [k, v] : kw) {
    if (k == name) return &v;
  }
  return nullptr;
}

Interpreter::Interpreter(const AnalysisOptions& opts, ModuleLoader& ld)
    : options(opts), loader(ld) {
  reset_value_bytes();
  init_builtins();
}
Interpreter::~Interpreter() = default;

void Interpreter::report(const Site& site, Severity sev, std::string code, std::string message,
                         std::vector<RelatedLocation> related) {
  report_at(site.file(), site.range(), sev, std::move(code), std::move(message),
            std::move(related));
}

std::string_view Interpreter::python_exception(std::string_view code) {
  static const std::unordered_map<std::string_view, std::string_view> kMap = {
      {"unknown-attribute", "AttributeError"},
      {"key-error", "KeyError"},
      {"index-error", "IndexError"},
      {"type-error", "TypeError"},
      {"missing-argument", "TypeError"},
      {"too-many-arguments", "TypeError"},
      {"unknown-keyword", "TypeError"},
      {"value-error", "ValueError"},
      {"invalid-argument", "ValueError"},
      {"unpack-error", "ValueError"},
      {"zero-division", "ZeroDivisionError"},
      {"assertion-failed", "AssertionError"},
      {"undefined-name", "NameError"},
      {"import-error", "ImportError"},
      {"unknown-api", "AttributeError"},
      // Parallel strategies: what MindSpore raises in Python (parallel_eval.cpp).
      {"parallel-context", "ValueError"},
      {"parallel-micro-size", "ValueError"},
      {"parallel-stage", "ValueError"},
      {"parallel-layout", "ValueError"},
      {"parallel-api", "AttributeError"},
  };
  auto it = kMap.find(code);
  return it == kMap.end() ? std::string_view{} : it->second;
}

namespace {
// Every child of an AST node (operands, then the three lists), in order.
template <class F>
void for_each_child(const Node* n, F&& f) {
  for (const Node* c : {n->a, n->b, n->c}) {
    if (c) f(c);
  }
  for (const auto* lst : {&n->list, &n->list2, &n->list3}) {
    for (const Node* c : *lst) f(c);
  }
}

// Counts a scope in one of the interpreter's nesting counters for as long as it lives.
struct ScopedCount {
  explicit ScopedCount(int& counter, bool on = true) : n(counter), counted(on) {
    if (counted) ++n;
  }
  ~ScopedCount() {
    if (counted) --n;
  }
  ScopedCount(const ScopedCount&) = delete;
  ScopedCount& operator=(const ScopedCount&) = delete;
  int& n;
  bool counted;
};

// Python's built-in exception hierarchy, as far as model code catches it.
bool exception_is(std::string_view type, std::string_view handler) {
  if (handler == "*" || handler == type || handler == "Exception" || handler == "BaseException")
    return true;
  if (handler == "LookupError") return type == "KeyError" || type == "IndexError";
  if (handler == "ArithmeticError") return type == "ZeroDivisionError";
  if (handler == "ImportError") return type == "ModuleNotFoundError";
  return false;
}
}  // namespace

bool Interpreter::caught(std::string_view type) const {
  for (const auto& handlers : catching) {
    for (const std::string& h : handlers) {
      if (exception_is(type, h)) return true;
    }
  }
  return false;
}

bool Interpreter::report_at(const std::string& file, SourceRange range, Severity sev,
                            std::string code, std::string message,
                            std::vector<RelatedLocation> related) {
  // Inside `try: ... except AttributeError:` the error is the program's own control flow.
  if (sev == Severity::Error && !catching.empty()) {
    std::string_view type = python_exception(code);
    if (!type.empty() && caught(type)) throw PyRaise{std::string(type), message, Site{}};
  }
  // Errors about Python data, which hold only for the data the analyser assumed.
  static const std::unordered_set<std::string_view> kDataErrors = {
      "unknown-attribute", "key-error",    "index-error",     "type-error",
      "value-error",       "unpack-error", "assertion-failed"};
  // Of those, the ones a guessed construct input makes (a list of tensors where it guessed one,
  // a float32 tensor where callers pass a bool mask).
  static const std::unordered_set<std::string_view> kGuessErrors = {
      "assertion-failed", "type-error", "unpack-error", "dtype-error"};
  if (sev == Severity::Error) {
    // Code under a condition nobody knows is taken, or construct on inputs nothing gave.
    if (uncertain_branches > 0 && kDataErrors.count(code)) return false;
    if (graph && guessed_inputs && kGuessErrors.count(code)) return false;
    // `self.clip_embeds = None` in __init__, set by the pipeline before it calls the Cell: on
    // a construct nobody in the file calls, a None attribute is state its callers fill in.
    if (graph && guessed_inputs && code == "unknown-attribute" && message.starts_with("`NoneType`"))
      return false;
    // A root tried with its defaults: what those defaults break ends the attempt (analysis.cpp).
    if (speculative > 0 && graph == nullptr &&
        (kDataErrors.count(code) || code == "zero-division" || code == "missing-argument"))
      throw PyRaise{std::string(python_exception(code)), message, Site{}};
  }
  // A message may end with an instance note (see instance_note()): the same problem hit by
  // several instances of one Cell class is one diagnostic that names them.
  std::string note;
  if (auto p = message.find('\x1f'); p != std::string::npos) {
    note = message.substr(p + 1);
    message.resize(p);
  }
  // Diagnostics may also be appended directly (parse errors of imported files): keep notes aligned.
  if (notes_.size() < diagnostics.size()) notes_.resize(diagnostics.size());
  auto key = std::make_tuple(file, range.start.line, range.start.column, code, message);
  auto it = seen_.find(key);
  if (it != seen_.end()) {
    auto& notes = notes_[it->second];
    if (!note.empty() && std::find(notes.begin(), notes.end(), note) == notes.end())
      notes.push_back(note);
    return true;
  }
  seen_.emplace(key, diagnostics.size());
  notes_.push_back(note.empty() ? std::vector<std::string>{} : std::vector<std::string>{note});
  diagnostics.push_back(
      Diagnostic{file, range, sev, std::move(code), std::move(message), std::move(related), {}});
  return true;
}

void Interpreter::rollback_diagnostics(size_t mark) {
  for (auto it = seen_.begin(); it != seen_.end();) {
    if (it->second >= mark)
      it = seen_.erase(it);
    else
      ++it;
  }
  if (diagnostics.size() > mark) diagnostics.resize(mark);
  if (notes_.size() > mark) notes_.resize(mark);
}

void Interpreter::finalize_diagnostics() {
  if (notes_.size() < diagnostics.size()) notes_.resize(diagnostics.size());
  for (size_t i = 0; i < diagnostics.size() && i < notes_.size(); ++i) {
    auto& notes = notes_[i];
    if (notes.empty()) continue;
    auto sep = notes[0].find('\x1f');
    std::string path = notes[0].substr(0, sep);
    std::string cls = sep == std::string::npos ? "" : notes[0].substr(sep + 1);
    std::string suffix = " (in `" + path + "`";
    if (notes.size() == 1) {
      suffix += ", an instance of " + cls + ")";
    } else {
      suffix += " and " + std::to_string(notes.size() - 1) + " more instance" +
                (notes.size() > 2 ? "s" : "") + " of " + cls + ")";
    }
    diagnostics[i].message += suffix;
    notes.clear();
  }
}

void Interpreter::record_fact(TypeFact::Kind kind, const Site& site, const Value& v,
                              std::string_view name) {
  auto* t = v.as<TensorObj>();
  if (!t || t->poisoned) return;
  facts->push_back(
      TypeFact{kind, site.file(), site.range(), current_scope(), t->type, std::string(name)});
}

SourceRange Interpreter::def_name_range(const ast::Node* def, const ModuleObj* module) {
  SourceRange r{def->range.start, def->range.start};
  const ast::ParsedFile* pf = module ? module->parsed : nullptr;
  const std::string_view text = pf ? std::string_view(pf->text) : std::string_view();
  if (def->str.empty() || text.empty() || def->str.data() < text.data() ||
      def->str.data() + def->str.size() > text.data() + text.size()) {
    return r;
  }
  const LineIndex* index = line_index(pf);
  auto off = static_cast<size_t>(def->str.data() - text.data());
  r.start = index->position_of(off);
  r.end = index->position_of(off + def->str.size());
  return r;
}

const LineIndex* Interpreter::line_index(const ast::ParsedFile* pf) {
  auto it = line_indexes_.find(pf);
  if (it == line_indexes_.end()) it = line_indexes_.emplace(pf, LineIndex(pf->text)).first;
  return &it->second;
}

std::string Interpreter::source_text(const std::string& file, SourceRange range) {
  const ast::ParsedFile* pf = loader.parsed(file);
  if (!pf) return {};
  const LineIndex* index = line_index(pf);
  size_t a = index->offset_of(range.start);
  size_t b = index->offset_of(range.end);
  if (a > b || b > pf->text.size()) return {};
  return pf->text.substr(a, b - a);
}

void Interpreter::record_ref(const Site& site, const Value& v) {
  if (!site.node || !site.module || site.module->file.empty()) return;
  // A name evaluated many times (a helper called per layer) is recorded once: what it refers to
  // the first time.
  if (!ref_sites_.insert(site.node).second) return;
  SourceRange use = site.range();
  if (site.node->kind == ast::K::Attribute) {
    // Only the attribute's name: `conv1` of `self.conv1`.
    const auto n = static_cast<uint32_t>(site.node->str.size());
    use.start = use.end;
    use.start.column = use.end.column >= n ? use.end.column - n : 0;
  }
  Reference ref;
  ref.file = site.module->file;
  ref.range = use;
  const Value* target = &v;
  if (auto* bm = v.as<BoundMethodObj>()) target = &bm->func;
  if (auto* api_fn = target->as<ApiFunctionObj>()) {
    ref.kind = Reference::Kind::Api;
    ref.name = api_fn->entry->name;
  } else if (auto* cls = target->as<ClassObj>()) {
    if (const ApiEntry* api = cls->def ? nullptr : cls->api) {
      ref.kind = Reference::Kind::Api;
      ref.name = api->name;
    } else if (cls->def && cls->module && !cls->module->file.empty()) {
      ref.kind = Reference::Kind::Definition;
      ref.name = cls->name;
      ref.what = "class";
      ref.target_file = cls->module->file;
      ref.target_range = def_name_range(cls->def, cls->module);
    } else {
      return;
    }
  } else if (auto* fn = target->as<FunctionObj>()) {
    if (!fn->module || fn->module->file.empty() || !fn->def || fn->def->kind != ast::K::FunctionDef)
      return;
    ref.kind = Reference::Kind::Definition;
    ref.name = fn->name;
    ref.what = "function";
    ref.target_file = fn->module->file;
    ref.target_range = def_name_range(fn->def, fn->module);
  } else if (auto* inst = target->as<InstanceObj>()) {
    if (!inst->cell || inst->cell->file.empty() || site.node->kind != ast::K::Attribute) return;
    ref.kind = Reference::Kind::Definition;
    ref.name = std::string(site.node->str);
    ref.what = "cell";
    ref.target_file = inst->cell->file;
    ref.target_range = inst->cell->site;
  } else {
    return;
  }
  refs->push_back(std::move(ref));
}

void Interpreter::step(const Site& site) {
  if (options.cancel && (steps_ & 1023) == 0 && options.cancel->load(std::memory_order_relaxed))
    throw Cancelled{};
  if (++steps_ > options.step_budget) {
    steps_ = 0;
    throw BudgetExceeded{"evaluation step budget (" + std::to_string(options.step_budget) +
                             " steps) exhausted; is there an infinite loop?",
                         site, unbounded_loops == 0};
  }
  if (value_bytes_charged() > options.max_value_bytes) {
    // Values this large are built by bounded work (a loop nesting lists) that is too big to
    // follow, never by a program that cannot end: information, like a bounded step budget.
    reset_value_bytes();
    steps_ = 0;
    throw BudgetExceeded{
        "value memory budget (" + std::to_string(options.max_value_bytes >> 20) + " MiB) exhausted",
        site, true, true};
  }
}

void Interpreter::report_budget(const BudgetExceeded& b) {
  if (b.endless) {
    report(b.site, Severity::Information, "budget-exceeded", b.what);
    return;
  }
  if (!b.bounded) {
    report(b.site, Severity::Error, "budget-exceeded", b.what);
    return;
  }
  if (b.memory) {
    report(b.site, Severity::Information, "budget-exceeded",
           "evaluation stopped here: the values built so far exceed the " +
               std::to_string(options.max_value_bytes >> 20) +
               " MiB the analyser follows, so what this computes is unknown (not an error in "
               "the code)");
    return;
  }
  report(b.site, Severity::Information, "budget-exceeded",
         "evaluation stopped here after " + std::to_string(options.step_budget) +
             " steps: this bounded computation is larger than the analyser follows, so what it "
             "builds is unknown (not an error in the code)");
}

// ---- names ------------------------------------------------------------------------------------

Value Interpreter::lookup_name(std::string_view name, Frame& f, const Site& site) {
  for (Frame* fr = &f; fr; fr = fr->parent.get()) {
    auto it = fr->locals.find(name);
    if (it != fr->locals.end()) return it->second;
  }
  if (f.module) {
    if (Value* v = f.module->globals.find_str(name)) return *v;
  }
  if (has_builtin(name)) return builtin(name);
  bool opaque_star = false;
  if (f.module) {
    if (Value* v = f.module->globals.find_str("__cellscope_opaque_star__"))
      opaque_star = v->k == VK::Bool;
  }
  // A real builtin the evaluator does not model (`bin`, `memoryview`) is unknown; a module-level
  // `__getattr__` or a lazy module may also supply names.
  if (!opaque_star && !python_builtin_exists(name) && !(f.module && f.module->open)) {
    report(site, Severity::Error, "undefined-name",
           "name `" + std::string(name) + "` is not defined");
  }
  return Value::unknown();
}

void Interpreter::store_name(std::string_view name, const Value& v, Frame& f) {
  bool is_global =
      f.is_module || std::find(f.globals.begin(), f.globals.end(), name) != f.globals.end();
  if (is_global && f.module) {
    f.module->globals.set(make_str(std::string(name)), v);
    return;
  }
  f.locals[name] = v;
}

void Interpreter::assign(const Node* target, const Value& v, Frame& f) {
  if (!target) return;
  Site site{target, f.module};
  switch (target->kind) {
    case K::Name:
      if (facts && f.in_construct) record_fact(TypeFact::Kind::Assignment, site, v, target->str);
      store_name(target->str, v, f);
      return;
    case K::Attribute: {
      Value obj = eval(target->a, f);
      setattr(obj, std::string(target->str), v, site);
      return;
    }
    case K::Subscript: {
      Value obj = eval(target->a, f);
      Value idx = eval(target->b, f);
      // `sys.modules[__name__] = _LazyModule(...)`: the module's names are whatever that object
      // answers, not what its code defines.
      if (target->a->kind == K::Attribute && target->a->str == "modules" && f.module)
        f.module->open = true;
      if (auto* l = obj.as<ListObj>()) {
        if (idx.is_int()) {
          int64_t i = idx.as_int();
          auto n = static_cast<int64_t>(l->items.size());
          if (i < 0) i += n;
          if (i >= 0 && i < n)
            l->items[static_cast<size_t>(i)] = v;
          else
            report(site, Severity::Error, "index-error", "list assignment index out of range");
        }
      } else if (auto* t = obj.as<TensorObj>(); t && t->graph_id == 0 && !t->is_parameter) {
        // A constant array (numpy in __init__): `pe[:, 0::2] = np.sin(...)` updates its elements
        // in place, or forgets them when the assignment cannot be computed.
        if (auto* tup = idx.as<TupleObj>())
          npv::assign(*t, tup->items, v);
        else
          npv::assign(*t, {idx}, v);
      } else if (auto* d = obj.as<DictObj>()) {
        d->set(idx, v);
      } else if (auto* mi = obj.as<InstanceObj>();
                 mi && mi->mapping && !mi->cls->lookup("__setitem__")) {
        if (idx.is_unknown())
          mi->mapping->open = true;
        else
          mi->mapping->set(idx, v);
      } else if (auto* inst = obj.as<InstanceObj>()) {
        if (inst->cell && idx.is_int()) {
          int64_t i = idx.as_int();
          auto n = static_cast<int64_t>(inst->cell->items.size());
          if (i < 0) i += n;
          if (i >= 0 && i < n) inst->cell->items[static_cast<size_t>(i)] = v;
        }
      }
      // Tensor item assignment in construct (x[0] = ...) keeps x's type.
      return;
    }
    case K::Tuple:
    case K::List: {
      auto items = iterate(v, site);
      if (!items) {
        for (Node* t : target->list) assign(t->kind == K::Starred ? t->a : t, Value::unknown(), f);
        return;
      }
      size_t star = target->list.size();
      for (size_t i = 0; i < target->list.size(); ++i) {
        if (target->list[i]->kind == K::Starred) star = i;
      }
      size_t n = items->size();
      size_t nt = target->list.size();
      if (star == nt) {
        if (n != nt) {
          report(site, Severity::Error, "unpack-error",
                 n > nt ? "too many values to unpack (expected " + std::to_string(nt) + ", got " +
                              std::to_string(n) + ")"
                        : "not enough values to unpack (expected " + std::to_string(nt) + ", got " +
                              std::to_string(n) + ")");
          for (size_t i = 0; i < nt; ++i)
            assign(target->list[i], i < n ? (*items)[i] : Value::unknown(), f);
          return;
        }
        for (size_t i = 0; i < nt; ++i) assign(target->list[i], (*items)[i], f);
        return;
      }
      size_t after = nt - star - 1;
      if (n < nt - 1) {
        report(site, Severity::Error, "unpack-error", "not enough values to unpack");
        return;
      }
      for (size_t i = 0; i < star; ++i) assign(target->list[i], (*items)[i], f);
      std::vector<Value> rest((*items).begin() + static_cast<long>(star),
                              (*items).end() - static_cast<long>(after));
      assign(target->list[star]->a, make_list(std::move(rest)), f);
      for (size_t i = 0; i < after; ++i)
        assign(target->list[star + 1 + i], (*items)[n - after + i], f);
      return;
    }
    case K::Starred:
      assign(target->a, v, f);
      return;
    default:
      return;
  }
}

// ---- statements -------------------------------------------------------------------------------

Flow Interpreter::exec_block(std::span<Node*> body, Frame& f) {
  for (Node* s : body) {
    Flow fl = exec(s, f);
    if (fl != Flow::Normal) return fl;
  }
  return Flow::Normal;
}

// Certain only where the program selects GRAPH_MODE; otherwise it fails only once the model is
// compiled as a graph (MindSpore's default mode is PYNATIVE_MODE): a warning.
void Interpreter::report_graph_mode(const Site& site, Severity sev, std::string message) {
  const bool graph = selected_mode == 0;
  if (!graph) {
    sev = Severity::Warning;
    message +=
        "; this program does not select GRAPH_MODE, so it fails only when compiled as a "
        "graph";
  }
  report(site, sev, "graph-mode-unsupported", std::move(message));
}

void Interpreter::check_graph_mode(const Node* s, Frame& f) {
  if (!f.in_construct) return;
  Site site{s, f.module};
  auto unsupported = [&](const char* what, Severity sev) {
    report_graph_mode(site, sev,
                      std::string(what) +
                          " is not supported in `construct`: MindSpore compiles construct to a "
                          "static graph (GRAPH_MODE)");
  };
  switch (s->kind) {
    case K::ClassDef:
      unsupported("a class definition", Severity::Error);
      break;
    case K::Import:
    case K::ImportFrom:
      unsupported("`import`", Severity::Error);
      break;
    case K::Global:
      unsupported("`global` (assignments to the global are ignored)", Severity::Warning);
      break;
    case K::Nonlocal:
      unsupported("`nonlocal`", Severity::Warning);
      break;
    case K::Try:
      unsupported("`try`/`except`", Severity::Error);
      break;
    case K::Delete:
      unsupported("`del`", Severity::Error);
      break;
    case K::Unsupported:
      unsupported("this statement", Severity::Error);
      break;
    default:
      break;
  }
}

Flow Interpreter::exec(const Node* s, Frame& f) {
  Site site{s, f.module};
  step(site);
  if (f.in_construct) check_graph_mode(s, f);
  switch (s->kind) {
    case K::ExprStmt: {
      Value v = eval(s->a, f);
      // `self.relu(x)` as a statement: the value is thrown away in the source itself, which is
      // what an unused-result warning is about (report_unused in analysis.cpp).
      if (graph) {
        auto note = [&](const Value& x) {
          if (auto* t = x.as<TensorObj>(); t && t->graph_id == graph->graph_id)
            graph->discarded.insert(t->ref.node);
        };
        note(v);
        if (auto* items = seq_items(v)) {
          for (const Value& x : *items) note(x);
        }
      }
      return Flow::Normal;
    }
    case K::Assign: {
      Value v = eval(s->a, f);
      for (Node* t : s->list) assign(t, v, f);
      return Flow::Normal;
    }
    case K::AnnAssign:
      if (s->b) assign(s->a, eval(s->b, f), f);
      return Flow::Normal;
    case K::AugAssign: {
      Value cur = eval(s->a, f);
      Value rhs = eval(s->b, f);
      auto op = static_cast<ast::BinOpKind>(s->op);
      // In-place list extension keeps identity (x += [..]).
      if (auto* l = cur.as<ListObj>(); l && op == ast::BinOpKind::Add) {
        if (auto items = iterate(rhs, site)) {
          // Larger than the analyser follows (see binop): the list is unknown from here.
          if (l->items.size() + items->size() > (size_t{1} << 20)) {
            assign(s->a, Value::unknown(), f);
            return Flow::Normal;
          }
          l->items.insert(l->items.end(), items->begin(), items->end());
          return Flow::Normal;
        }
      }
      assign(s->a, binop(op, cur, rhs, site), f);
      return Flow::Normal;
    }
    case K::Return:
      f.ret = s->a ? eval(s->a, f) : Value::none();
      return Flow::Return;
    case K::If: {
      Value cond = eval(s->a, f);
      if (cond.as<TensorObj>()) mark_consumed({cond});
      bool known = true;
      bool t = truthy(cond, &known);
      if (!known) return exec_if_unknown(s, f, cond);
      return exec_block(t ? s->list : s->list2, f);
    }
    case K::For: {
      const uint64_t batches_before = training ? training->iterations : 0;
      Value it = eval(s->b, f);
      // A list is iterated live, as Python does (appending inside the loop extends it); other
      // iterables are expanded first.
      auto* live = it.as<ListObj>();
      std::optional<std::vector<Value>> items;
      if (!live) {
        items = iterate(it, site);
        if (!items) {
          if (it.is_unknown() || it.as<OpaqueObj>() || it.as<ModuleObj>() ||
              (it.as<DictObj>() && it.as<DictObj>()->open)) {
            havoc_loop(s, f);
            return Flow::Normal;
          }
          if (!it.as<TensorObj>()) {
            report(Site{s->b, f.module}, Severity::Error, "type-error",
                   "`" + type_name(it) + "` object is not iterable");
          }
          return Flow::Normal;
        }
      }
      // A loop over a dataset's batches: its body runs once, with one abstract batch, so the
      // training step it makes is followed; what it assigns is unknown afterwards.
      if (training && training->iterations != batches_before) {
        training->enter_loop(*this, s, site);
        Flow fl = Flow::Normal;
        try {
          for (size_t i = 0; i < (live ? live->items.size() : items->size()) && i < 1; ++i) {
            assign(s->a, live ? live->items[i] : (*items)[i], f);
            fl = exec_block(s->list, f);
          }
        } catch (...) {
          training->exit_loop(*this);
          throw;
        }
        training->exit_loop(*this);
        if (fl == Flow::Return) return fl;
        havoc_loop(s, f);
        return Flow::Normal;
      }
      // A list that grows while it is iterated may never end.
      ScopedCount growing(unbounded_loops, live != nullptr);
      for (size_t i = 0; i < (live ? live->items.size() : items->size()); ++i) {
        Value item = live ? live->items[i] : (*items)[i];
        assign(s->a, item, f);
        Flow fl = exec_block(s->list, f);
        if (fl == Flow::Break) return Flow::Normal;
        if (fl == Flow::Return) return fl;
      }
      return exec_block(s->list2, f);  // the loop's `else`: it ran without `break`
    }
    case K::While: {
      // `while True:` (a constant true condition) with no break, return or raise in its body
      // never ends: said at once, without running it to the budget.
      // Outside construct a call in the body may end it by an exception (sys.exit(), next() at
      // the end of an iterator, KeyboardInterrupt at Ctrl+C: a script that runs until it is
      // stopped): that is not an error, and evaluation stops there with a note.
      if (s->a && (s->a->kind == K::Bool || s->a->kind == K::Int) && s->a->ival != 0 &&
          !loop_can_exit(s->list)) {
        if (!f.in_construct && body_calls(s->list)) {
          BudgetExceeded b{
              "evaluation stops at this loop: its condition is always true and it "
              "ends only by an exception a call in it raises (sys.exit(), Ctrl+C), "
              "so what follows it is not analysed",
              site};
          b.endless = true;
          throw b;
        }
        throw BudgetExceeded{
            "this loop never ends: its condition is always true and nothing in "
            "it breaks, returns or raises",
            site, false};
      }
      ScopedCount open_ended(unbounded_loops);
      while (true) {
        Value cond = eval(s->a, f);
        if (cond.as<TensorObj>()) mark_consumed({cond});
        bool known = true;
        bool t = truthy(cond, &known);
        if (!known) {
          // A loop on a value only known at run time: compile its body once in construct.
          if (f.in_construct) {
            Flow fl = exec_block(s->list, f);
            if (fl == Flow::Return) return fl;
          }
          return Flow::Normal;
        }
        if (!t) return exec_block(s->list2, f);
        Flow fl = exec_block(s->list, f);
        if (fl == Flow::Break) return Flow::Normal;
        if (fl == Flow::Return) return fl;
      }
    }
    case K::Break:
      return Flow::Break;
    case K::Continue:
      return Flow::Continue;
    case K::Pass:
      return Flow::Normal;
    case K::FunctionDef:
      store_name(s->str, decorate(make_function(s, f, std::string(s->str)), s, f, false), f);
      return Flow::Normal;
    case K::ClassDef:
      store_name(s->str, decorate(make_class(s, f), s, f, true), f);
      return Flow::Normal;
    case K::Import:
      exec_import(s, f);
      return Flow::Normal;
    case K::ImportFrom:
      exec_import_from(s, f);
      return Flow::Normal;
    case K::Global:
    case K::Nonlocal:
      for (Node* n : s->list) f.globals.push_back(n->str);
      return Flow::Normal;
    case K::Assert: {
      Value cond = eval(s->a, f);
      bool known = true;
      bool t = truthy(cond, &known);
      if (known && !t) {
        std::string msg = "assertion fails";
        if (s->b) {
          Value m = eval(s->b, f);
          if (auto* str = str_of(m)) msg += ": " + *str;
        }
        report(site, Severity::Error, "assertion-failed", msg);
      }
      return Flow::Normal;
    }
    case K::Raise: {
      PyRaise r{"Exception", "", site};
      if (s->a) {
        const Node* e = s->a;
        if (e->kind == K::Call && e->a) {
          if (e->a->kind == K::Name || e->a->kind == K::Attribute) r.type = std::string(e->a->str);
          if (!e->list.empty()) {
            Value m = eval(e->list[0], f);
            if (auto* str = str_of(m)) r.message = *str;
          }
        } else if (e->kind == K::Name) {
          r.type = std::string(e->str);
        }
      }
      if (f.in_construct) {
        // A run-time check in construct (it raises only for some tensor values): not a compile
        // error, and what the function would have returned is unknown, not None.
        f.ret = Value::unknown();
        return Flow::Return;
      }
      throw r;
    }
    case K::Try: {
      Flow fl = Flow::Normal;
      // What each handler catches, by name (a tuple lists several; no type catches all).
      std::vector<std::vector<std::string>> handler_types;
      std::vector<std::string> all;
      for (const Node* h : s->list2) {
        std::vector<std::string> types;
        auto add = [&](const Node* t) {
          if (t && (t->kind == K::Name || t->kind == K::Attribute)) types.emplace_back(t->str);
        };
        if (!h->a) {
          types.emplace_back("*");
        } else if (h->a->kind == K::Tuple) {
          for (const Node* t : h->a->list) add(t);
        } else {
          add(h->a);
        }
        all.insert(all.end(), types.begin(), types.end());
        handler_types.push_back(std::move(types));
      }
      std::optional<PyRaise> raised;
      catching.push_back(std::move(all));
      try {
        fl = exec_block(s->list, f);
      } catch (const PyRaise& r) {
        raised = r;
      } catch (...) {
        catching.pop_back();
        throw;
      }
      catching.pop_back();
      if (raised) {
        // The first handler that catches it; an exception type the evaluator cannot name (a
        // `raise` of an expression) goes to the first handler, as before.
        const Node* handler = nullptr;
        for (size_t i = 0; i < s->list2.size() && !handler; ++i) {
          for (const std::string& h : handler_types[i]) {
            if (exception_is(raised->type, h) || raised->type == "Exception") {
              handler = s->list2[i];
              break;
            }
          }
        }
        if (!handler && !s->list2.empty() && handler_types[0].empty()) handler = s->list2[0];
        if (!handler) {
          if (s->b) exec_block(s->b->list, f);
          throw *raised;
        }
        const Node* h = handler;
        if (!h->str.empty())
          store_name(h->str, Value::obj(std::make_shared<OpaqueObj>("Exception")), f);
        fl = exec_block(h->list, f);
      } else if (s->a) {
        if (fl == Flow::Normal) fl = exec_block(s->a->list, f);
      }
      if (s->b) {
        Flow fin = exec_block(s->b->list, f);
        if (fin != Flow::Normal) fl = fin;
      }
      return fl;
    }
    case K::With: {
      for (Node* item : s->list) {
        Value v = eval(item->a, f);
        if (item->b) assign(item->b, v, f);
      }
      return exec_block(s->list2, f);
    }
    case K::Delete:
      for (Node* t : s->list) {
        if (t->kind == K::Name) f.locals.erase(t->str);
      }
      return Flow::Normal;
    default:
      return Flow::Normal;
  }
}

// Applies a definition's decorators, innermost first. A decorator the evaluator cannot follow
// (a third-party model registry, say) leaves the definition as it is rather than losing it.
Value Interpreter::decorate(Value def, const Node* s, Frame& f, bool is_class) {
  for (auto it = s->list3.rbegin(); it != s->list3.rend(); ++it) {
    Value dec = eval(*it, f);
    if (dec.is_unknown()) continue;
    CallArgs a;
    a.pos.push_back(def);
    a.pos_ranges.push_back(s->range);
    Value r = call(dec, a, Site{*it, f.module});
    if (is_class ? r.as<ClassObj>() != nullptr : (!r.is_unknown() && !r.is_none())) def = r;
  }
  return def;
}

// An `if` whose condition the evaluator cannot decide. In construct on a tensor condition,
// GRAPH_MODE compiles both branches; variables they assign must agree in shape.
Flow Interpreter::exec_if_unknown(const Node* s, Frame& f, const Value& cond) {
  Site site{s, f.module};
  bool tensor_cond = cond.as<TensorObj>() != nullptr;
  // Code under a condition nobody knows may never run: what it does to Python data (an
  // attribute set only in some configurations, an optional input that is None) is not an error
  // there. Shape errors in it still are: both branches must compile in GRAPH_MODE.
  ScopedCount uncertain(uncertain_branches);
  if (!(f.in_construct && tensor_cond)) {
    // A Python value the evaluator cannot know (an opaque config, say): follow the `if` branch,
    // unless it raises (`if len(cfg.MEAN) != len(cfg.STD): raise ValueError(...)`): a check
    // on unknown data may just as well pass, so the run goes on through the `else` branch.
    try {
      return exec_block(s->list, f);
    } catch (const PyRaise&) {
      return exec_block(s->list2, f);
    }
  }
  auto snapshot = f.locals;
  Value ret_before = f.ret;
  Flow ft = exec_block(s->list, f);
  Value ret_then = f.ret;
  auto then_locals = f.locals;
  f.locals = snapshot;
  f.ret = ret_before;
  Flow fe = exec_block(s->list2, f);
  Value ret_else = f.ret;
  auto else_locals = f.locals;

  auto join = [&](const Value& a, const Value& b, const std::string& what) -> Value {
    auto* ta = a.as<TensorObj>();
    auto* tb = b.as<TensorObj>();
    if (!ta || !tb || ta == tb) return a;
    if (ta->poisoned || tb->poisoned) {
      mark_consumed({a, b});
      return ta->poisoned ? a : b;
    }
    bool same_rank = ta->type.shape.ranked && tb->type.shape.ranked &&
                     ta->type.shape.rank() == tb->type.shape.rank();
    bool differs = !same_rank && ta->type.shape.ranked && tb->type.shape.ranked;
    if (same_rank) {
      for (size_t i = 0; i < ta->type.shape.rank(); ++i) {
        if (dims_equal(ta->type.shape.dims[i], tb->type.shape.dims[i]) == Tri::No) differs = true;
      }
    }
    if (differs) {
      report(site, Severity::Warning, "branch-shape",
             "the branches of this `if` on a tensor value give " + what +
                 " different shapes: " + ta->type.shape.str() + " vs " + tb->type.shape.str() +
                 "; the shape after it is only known at run time (dynamic shape, which static "
                 "export and Ascend kernels handle poorly)" +
                 instance_note());
    }
    return merge_branches(cond, a, b, site);
  };
  if (ft == Flow::Return && fe == Flow::Return) {
    f.ret = join(ret_then, ret_else, "the returned value");
    return Flow::Return;
  }
  if (ft == Flow::Return) {
    f.locals = else_locals;
    f.ret = ret_then;
    return Flow::Normal;
  }
  if (fe == Flow::Return) {
    f.locals = then_locals;
    return Flow::Normal;
  }
  f.locals = then_locals;
  for (auto& [name, v] : else_locals) {
    auto it = f.locals.find(name);
    if (it == f.locals.end()) {
      f.locals[name] = v;
    } else {
      it->second = join(it->second, v, "`" + std::string(name) + "`");
    }
  }
  return Flow::Normal;
}

// ---- expressions ------------------------------------------------------------------------------

Value Interpreter::eval(const Node* e, Frame& f) {
  if (!e) return Value::unknown();
  Site site{e, f.module};
  step(site);
  switch (e->kind) {
    case K::Name: {
      Value v = lookup_name(e->str, f, site);
      if (facts && f.in_construct) record_fact(TypeFact::Kind::Name, site, v);
      if (refs) record_ref(site, v);
      return v;
    }
    case K::Int:
      return Value::integer(e->ival);
    case K::Float:
      return Value::real(e->fval);
    case K::Bool:
      return Value::boolean(e->ival != 0);
    case K::None:
      return Value::none();
    case K::Ellipsis:
      return Value::obj(std::make_shared<EllipsisObj>());
    case K::Str:
      return make_str(std::string(e->str));
    case K::FString: {
      std::string out;
      for (Node* p : e->list) {
        if (p->kind == K::Str) {
          out += p->str;
          continue;
        }
        Value v = eval(p, f);
        if (v.is_unknown() || v.as<TensorObj>()) return Value::unknown();
        if (auto* s = str_of(v))
          out += *s;
        else
          out += repr(v);
      }
      return make_str(std::move(out));
    }
    case K::BinOp: {
      Value a = eval(e->a, f);
      Value b = eval(e->b, f);
      return binop(static_cast<ast::BinOpKind>(e->op), a, b, site);
    }
    case K::UnaryOp:
      return unary(static_cast<ast::UnaryKind>(e->op), eval(e->a, f), site);
    case K::Not: {
      Value v = eval(e->a, f);
      bool known = true;
      bool t = truthy(v, &known);
      if (!known) return Value::unknown();
      return Value::boolean(!t);
    }
    case K::BoolOp: {
      Value a = eval(e->a, f);
      bool known = true;
      bool t = truthy(a, &known);
      if (!known) {
        Value b = eval(e->b, f);
        if (a.as<TensorObj>() && b.as<TensorObj>()) {
          return tensor_binop(e->op == 1 ? "ops.logical_or" : "ops.logical_and", a, b, site);
        }
        return Value::unknown();
      }
      bool is_or = e->op == 1;
      if (is_or ? t : !t) return a;
      return eval(e->b, f);
    }
    case K::Compare: {
      Value left = eval(e->list[0], f);
      Value result = Value::boolean(true);
      for (size_t i = 0; i < e->cmp_ops.size() && i + 1 < e->list.size(); ++i) {
        Value right = eval(e->list[i + 1], f);
        Value r = compare(e->cmp_ops[i], left, right, site);
        if (e->cmp_ops.size() == 1) return r;
        bool known = true;
        bool t = truthy(r, &known);
        if (!known) return Value::unknown();
        if (!t) return r;
        result = r;
        left = right;
      }
      return result;
    }
    case K::Call: {
      if (!facts || !f.in_construct) return eval_call(e, f);
      Value called;  // holds the callee alive: `nn.ReLU()(x)` builds it in the expression
      Value v = eval_call(e, f, &called);
      record_fact(TypeFact::Kind::Call, site, v);
      // The debugger's call-site map: where a construct first called each sub-Cell.
      if (auto* inst = called.as<InstanceObj>();
          inst && inst->cell && inst->cell->call_file.empty()) {
        inst->cell->call_file = site.file_id();
        inst->cell->call_site = site.range();
      }
      return v;
    }
    case K::Attribute: {
      Value obj = eval(e->a, f);
      Value v = getattr(obj, e->str, site);
      if (refs) record_ref(site, v);
      return v;
    }
    case K::Subscript: {
      Value obj = eval(e->a, f);
      Value idx = eval(e->b, f);
      return subscript(obj, idx, site);
    }
    case K::Slice:
      return Value::obj(std::make_shared<SliceObj>(e->a ? eval(e->a, f) : Value::none(),
                                                   e->b ? eval(e->b, f) : Value::none(),
                                                   e->c ? eval(e->c, f) : Value::none()));
    case K::Tuple:
    case K::List:
    case K::Set: {
      std::vector<Value> items;
      items.reserve(e->list.size());
      for (Node* x : e->list) {
        if (x->kind == K::Starred) {
          Value v = eval(x->a, f);
          auto more = iterate(v, Site{x, f.module});
          if (!more) return Value::unknown();
          items.insert(items.end(), more->begin(), more->end());
        } else {
          items.push_back(eval(x, f));
        }
      }
      if (e->kind == K::Tuple) return make_tuple(std::move(items));
      if (e->kind == K::Set) return Value::obj(std::make_shared<SetObj>(std::move(items)));
      return make_list(std::move(items));
    }
    case K::Dict: {
      auto d = std::make_shared<DictObj>();
      for (size_t i = 0; i < e->list.size(); ++i) {
        if (!e->list[i]) {
          Value other = eval(e->list2[i], f);
          if (auto* od = other.as<DictObj>()) {
            for (auto& [k, v] : od->entries) d->set(k, v);
            if (od->open) d->open = true;
          } else {
            d->open = true;  // `{**config}` of a mapping the evaluator does not know
          }
          continue;
        }
        Value k = eval(e->list[i], f);
        d->set(k, eval(e->list2[i], f));
      }
      return Value::obj(d);
    }
    case K::ListComp:
    case K::SetComp:
    case K::GenExp:
    case K::DictComp:
      return eval_comprehension(e, f);
    case K::Lambda:
      return make_function(e, f, "<lambda>");
    case K::IfExp: {
      Value cond = eval(e->b, f);
      if (cond.as<TensorObj>()) mark_consumed({cond});
      bool known = true;
      bool t = truthy(cond, &known);
      if (known) return eval(t ? e->a : e->c, f);
      Value a = eval(e->a, f);
      Value b = eval(e->c, f);
      if (cond.as<TensorObj>() && a.as<TensorObj>() && b.as<TensorObj>() && graph) {
        auto* ta = a.as<TensorObj>();
        auto* tb = b.as<TensorObj>();
        if (ta->type.shape.ranked && tb->type.shape.ranked && !ta->poisoned && !tb->poisoned &&
            !(ta->type.shape == tb->type.shape)) {
          std::string why;
          if (!broadcast_shapes(ta->type.shape, tb->type.shape, &why) ||
              ta->type.shape.rank() != tb->type.shape.rank()) {
            report(site, Severity::Warning, "branch-shape",
                   "the two values of this conditional expression have different shapes: " +
                       ta->type.shape.str() + " vs " + tb->type.shape.str() + instance_note());
          }
        }
        return merge_branches(cond, a, b, site);
      }
      return Value::unknown();
    }
    case K::Starred:
      report(site, Severity::Error, "syntax-error", "starred expression is not allowed here");
      return Value::unknown();
    case K::NamedExpr: {
      Value v = eval(e->b, f);
      assign(e->a, v, f);
      return v;
    }
    case K::Await:
    case K::Yield:
      if (f.in_construct) {
        report_graph_mode(site, Severity::Error,
                          std::string(e->kind == K::Yield ? "`yield`" : "`await`") +
                              " is not supported in `construct` (GRAPH_MODE)");
      }
      return Value::unknown();
    default:
      return Value::unknown();
  }
}

Value Interpreter::eval_comprehension(const Node* e, Frame& f) {
  auto frame = std::make_shared<Frame>();
  // The comprehension scope sees the enclosing locals through its parent chain.
  frame->parent = f.is_module ? nullptr : f.shared_from_this();
  frame->module = f.module;
  frame->in_construct = f.in_construct;
  std::vector<Value> out;
  auto dict = e->kind == K::DictComp ? std::make_shared<DictObj>() : nullptr;
  bool failed = false;
  std::function<void(size_t)> loop = [&](size_t gi) {
    if (failed) return;
    if (gi == e->list.size()) {
      if (dict) {
        Value k = eval(e->a, *frame);
        dict->set(k, eval(e->b, *frame));
      } else {
        out.push_back(eval(e->a, *frame));
        charge_value_bytes(kItemBytes);
      }
      return;
    }
    const Node* g = e->list[gi];
    Value it = eval(g->b, gi == 0 ? f : *frame);
    auto items = iterate(it, Site{g->b, f.module});
    if (!items) {
      failed = true;
      return;
    }
    for (const Value& item : *items) {
      assign(g->a, item, *frame);
      bool pass = true;
      for (Node* cond : g->list) {
        bool known = true;
        bool t = truthy(eval(cond, *frame), &known);
        if (!known) {
          failed = true;
          return;
        }
        if (!t) {
          pass = false;
          break;
        }
      }
      if (pass) loop(gi + 1);
      if (failed) return;
    }
  };
  loop(0);
  if (failed) return Value::unknown();
  if (dict) return Value::obj(dict);
  if (e->kind == K::SetComp) return Value::obj(std::make_shared<SetObj>(std::move(out)));
  if (e->kind == K::GenExp) return make_tuple(std::move(out));
  return make_list(std::move(out));
}

// True when statements `body` hold a node of `kind`, not counting nested functions, lambdas and
// classes (a `yield` of the function itself, a call in a loop's body).
static bool body_holds(std::span<ast::Node* const> body, K kind) {
  std::function<bool(const Node*)> holds = [&](const Node* n) -> bool {
    if (!n || n->kind == K::FunctionDef || n->kind == K::ClassDef || n->kind == K::Lambda)
      return false;
    if (n->kind == kind) return true;
    bool found = false;
    for_each_child(n, [&](const Node* c) { found = found || holds(c); });
    return found;
  };
  return std::any_of(body.begin(), body.end(), [&](const Node* n) { return holds(n); });
}

// True when a loop body calls something (not counting nested functions and classes).
bool Interpreter::body_calls(std::span<ast::Node*> body) { return body_holds(body, K::Call); }

// True when a loop body can leave the loop: a `break` of this loop, or a return/raise anywhere
// in it (not counting nested functions and classes).
bool Interpreter::loop_can_exit(std::span<ast::Node*> body) {
  std::function<bool(const Node*, bool)> exits = [&](const Node* n, bool nested_loop) -> bool {
    if (!n || n->kind == K::FunctionDef || n->kind == K::ClassDef || n->kind == K::Lambda)
      return false;
    if (n->kind == K::Return || n->kind == K::Raise) return true;
    if (n->kind == K::Break && !nested_loop) return true;
    bool inner = nested_loop || n->kind == K::While || n->kind == K::For;
    bool found = false;
    for_each_child(n, [&](const Node* c) { found = found || exits(c, inner); });
    return found;
  };
  return std::any_of(body.begin(), body.end(), [&](const Node* n) { return exits(n, false); });
}

// A loop over something the evaluator cannot enumerate runs its body an unknown number of
// times: every name it assigns is unknown afterwards, and an object it gives attributes by
// computed names (`for k, v in cfg.items(): setattr(self, k, v)`) may have any attribute.
void Interpreter::havoc_loop(const Node* loop, Frame& f) {
  std::function<void(const Node*)> walk = [&](const Node* n) {
    if (!n || n->kind == K::FunctionDef || n->kind == K::ClassDef || n->kind == K::Lambda) return;
    auto forget = [&](const Node* target) {
      std::function<void(const Node*)> names = [&](const Node* t) {
        if (!t) return;
        if (t->kind == K::Name) {
          store_name(t->str, Value::unknown(), f);
        } else if (t->kind == K::Tuple || t->kind == K::List) {
          for (const Node* e : t->list) names(e);
        } else if (t->kind == K::Starred) {
          names(t->a);
        }
      };
      names(target);
    };
    // A container the body fills (`blocks.append(...)`, `d[k] = v`) has an unknown number of
    // items afterwards: a list or set becomes unknown, a dict may hold any key.
    auto mutated = [&](const Node* base) {
      if (!base || base->kind != K::Name) return;
      for (Frame* fr = &f; fr; fr = fr->parent.get()) {
        auto it = fr->locals.find(base->str);
        if (it == fr->locals.end()) continue;
        if (auto* d = it->second.as<DictObj>())
          d->open = true;
        else if (it->second.as<ListObj>() || it->second.as<SetObj>())
          it->second = Value::unknown();
        break;
      }
    };
    if (n->kind == K::Assign) {
      for (const Node* t : n->list) {
        forget(t);
        if (t->kind == K::Subscript) mutated(t->a);
      }
    } else if (n->kind == K::AugAssign || n->kind == K::AnnAssign || n->kind == K::For) {
      forget(n->a);
      if (n->a && n->a->kind == K::Subscript) mutated(n->a->a);
    }
    static const std::unordered_set<std::string_view> kMutators = {
        "append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add"};
    if (n->kind == K::Call && n->a && n->a->kind == K::Attribute && kMutators.count(n->a->str))
      mutated(n->a->a);
    if (n->kind == K::Call && n->a && n->a->kind == K::Name && n->a->str == "setattr" &&
        !n->list.empty() && n->list[0]->kind == K::Name) {
      for (Frame* fr = &f; fr; fr = fr->parent.get()) {
        auto it = fr->locals.find(n->list[0]->str);
        if (it == fr->locals.end()) continue;
        if (auto* inst = it->second.as<InstanceObj>()) inst->open = true;
        break;
      }
    }
    for_each_child(n, walk);
  };
  for (const Node* st : loop->list) walk(st);
}

Value Interpreter::make_function(const Node* def, Frame& f, std::string name) {
  auto fn = std::make_shared<FunctionObj>();
  fn->name = name;
  fn->def = def;
  fn->module = f.module;
  if (f.is_class_body) fn->owner = f.defining_class;
  // Methods and nested functions close over the enclosing function frame (not a class body,
  // not the module, whose names are globals).
  Frame* enclosing = f.is_class_body ? f.parent.get() : &f;
  if (enclosing && !enclosing->is_module) fn->closure = enclosing->shared_from_this();
  for (Node* p : def->list) {
    fn->has_default.push_back(p->a != nullptr);
    fn->defaults.push_back(p->a ? eval(p->a, f) : Value::unknown());
  }
  if (def->kind == K::FunctionDef) {
    fn->is_generator = body_holds(def->list2, K::Yield);
  }
  return Value::obj(fn);
}

Value Interpreter::make_class(const Node* def, Frame& f) {
  auto cls = std::make_shared<ClassObj>();
  cls->name = std::string(def->str);
  cls->def = def;
  cls->module = f.module;
  for (Node* b : def->list) {
    if (b->kind == K::Keyword) continue;  // metaclass=...
    Value base = eval(b, f);
    if (base.as<ClassObj>())
      cls->bases.push_back(base);
    else
      cls->open = cls->unknown_base = true;  // a base the evaluator does not know: anything
  }
  // MRO: C3 is overkill for model code; a depth-first left-to-right walk without duplicates.
  cls->mro.push_back(cls.get());
  std::function<void(ClassObj*)> add = [&](ClassObj* c) {
    if (std::find(cls->mro.begin(), cls->mro.end(), c) == cls->mro.end()) cls->mro.push_back(c);
  };
  for (const Value& b : cls->bases) {
    for (ClassObj* c : b.as<ClassObj>()->mro) add(c);
  }
  for (ClassObj* c : cls->mro) {
    if (c->is_cell) cls->is_cell = true;
    if (c->open) cls->open = true;
    if (c->unknown_base) cls->unknown_base = true;
    if (c->is_enum) cls->is_enum = true;
  }
  Value cls_value = Value::obj(cls);
  auto body = std::make_shared<Frame>();
  body->module = f.module;
  body->is_class_body = true;
  body->defining_class = cls.get();
  body->parent = f.is_module ? nullptr : f.shared_from_this();
  body->in_construct = false;
  bool saved = at_module_level;
  at_module_level = false;
  ++call_depth;
  try {
    exec_block(def->list2, *body);
  } catch (...) {
    --call_depth;
    at_module_level = saved;
    throw;
  }
  --call_depth;
  at_module_level = saved;
  for (auto& [k, v] : body->locals) {
    Value val = v;
    if (auto* fn = val.as<FunctionObj>()) fn->qualname = cls->name + "." + fn->name;
    // Attribute hooks answer for attributes no assignment shows.
    if (k == "__getattr__" || k == "__getattribute__") cls->open = true;
    cls->attrs.set(make_str(std::string(k)), val);
  }
  // A mapping subclass (`class Config(dict)`) is filled by keys, often through a `__setattr__`
  // hook or `__dict__` tricks: what it holds is data, not a fixed set of attributes.
  if (cls->native_base() == NativeClass::Dict) cls->open = true;
  return cls_value;
}

// ---- calls ------------------------------------------------------------------------------------

Value Interpreter::eval_call(const Node* e, Frame& f, Value* called_cell) {
  Site site{e, f.module};
  // super() without arguments: the method's class and self.
  if (e->a && e->a->kind == K::Name && e->a->str == "super" && e->list.empty()) {
    Frame* fr = &f;
    while (fr && !fr->method_class && fr->parent) fr = fr->parent.get();
    if (fr && fr->method_class) {
      return Value::obj(std::make_shared<SuperObj>(fr->method_class, fr->self));
    }
    report(site, Severity::Error, "type-error", "super(): no arguments outside a method");
    return Value::unknown();
  }
  Value callee = eval(e->a, f);
  if (called_cell) {
    if (auto* inst = callee.as<InstanceObj>(); inst && inst->cell) *called_cell = callee;
  }
  CallArgs args;
  args.pos.reserve(e->list.size());
  for (Node* a : e->list) {
    if (a->kind == K::Starred) {
      Value v = eval(a->a, f);
      auto items = v.is_unknown() ? std::nullopt : iterate(v, Site{a, f.module});
      if (!items) {
        // `*args` of unknown length: the call still happens, with arguments nobody knows.
        args.open = true;
        continue;
      }
      for (auto& it : *items) {
        args.pos.push_back(it);
        args.pos_ranges.push_back(a->range);
      }
    } else {
      args.pos.push_back(eval(a, f));
      args.pos_ranges.push_back(a->range);
    }
  }
  for (Node* k : e->list2) {
    if (k->kind == K::DoubleStarred) {
      Value v = eval(k->a, f);
      if (auto* d = v.as<DictObj>()) {
        for (auto& [key, val] : d->entries) {
          if (auto* s = str_of(key)) {
            args.kw.emplace_back(*s, val);
            args.kw_ranges.push_back(k->range);
          } else {
            args.open = true;  // a key the evaluator cannot name
          }
        }
        if (d->open) args.open = true;
        if (d->maybe_more) args.maybe_more = true;
      } else {
        // `**config` read at run time: the keywords are unknown, the call is still made.
        args.open = true;
      }
      continue;
    }
    args.kw.emplace_back(std::string(k->str), eval(k->a, f));
    args.kw_ranges.push_back(k->range);
  }
  // `eval("nc")`, `eval("ConvNormAct")` of a known name, as config-driven builders do: the name
  // where the call is made, locals first (the builtin alone sees only the module).
  if (auto* b = callee.as<BuiltinObj>(); b && b->name == "eval" && args.pos.size() == 1) {
    if (const std::string* src = str_of(args.pos[0])) return eval_name(*src, &f, site);
  }
  return call(callee, args, site);
}

Value Interpreter::eval_name(const std::string& src, Frame* f, const Site& site) {
  std::vector<std::string_view> parts;
  for (size_t start = 0; start <= src.size();) {
    size_t dot = std::min(src.find('.', start), src.size());
    std::string_view part = std::string_view(src).substr(start, dot - start);
    bool ident = !part.empty() && !std::isdigit(static_cast<unsigned char>(part[0])) &&
                 std::all_of(part.begin(), part.end(), [](char c) {
                   return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                 });
    if (!ident) return Value::unknown();
    parts.push_back(part);
    start = dot + 1;
  }
  Value cur = Value::unknown();
  bool found = false;
  for (Frame* fr = f; fr && !found; fr = fr->parent.get()) {
    if (auto it = fr->locals.find(parts[0]); it != fr->locals.end()) {
      cur = it->second;
      found = true;
    }
  }
  if (!found && site.module) {
    const Value* g = site.module->globals.find_str(parts[0]);
    cur = g ? *g : builtin(parts[0]);
  }
  for (size_t i = 1; i < parts.size() && !cur.is_unknown(); ++i)
    cur = getattr(cur, parts[i], site, false);
  return cur;
}

Value Interpreter::call(const Value& callee, CallArgs& args, const Site& site) {
  step(site);
  if (callee.is_unknown()) {
    mark_consumed(args.pos);  // an unresolved callee: its tensor arguments are not "unused"
    // In construct, a known tensor going into something the analyser cannot follow is where
    // shapes are lost: say so once, there (shapes after it are unknown, never an error).
    if (graph && site.node) {
      bool known_tensor = std::any_of(args.pos.begin(), args.pos.end(), [&](const Value& v) {
        auto* t = v.as<TensorObj>();
        return t && t->graph_id == graph->graph_id && t->type.shape.ranked;
      });
      // After an error the unknown is most likely its consequence (an unknown API, a failed
      // import): the error is the one thing to say.
      bool after_error = std::any_of(diagnostics.begin(), diagnostics.end(),
                                     [](const auto& d) { return d.severity == Severity::Error; });
      if (known_tensor && !after_error) {
        const bool is_call = site.node->kind == K::Call && site.node->a;
        std::string text = source_text(site.file(), is_call ? site.node->a->range : site.range());
        if (text.size() > 60) text = text.substr(0, 57) + "...";
        report(site, Severity::Hint, "shape-unknown",
               "shapes are unknown from here: the analyser cannot tell what `" + text +
                   "` is (a value only known at run time, or code it does not model)");
      }
    }
    return Value::unknown();
  }
  if (callee.k != VK::Obj || !callee.o) {
    report(site, Severity::Error, "type-error",
           "`" + type_name(callee) + "` object is not callable");
    return Value::unknown();
  }
  switch (callee.o->kind) {
    case OK::Function:
      return call_function(callee.as<FunctionObj>(), args, site, nullptr, nullptr);
    case OK::BoundMethod: {
      auto* bm = callee.as<BoundMethodObj>();
      if (auto* fn = bm->func.as<FunctionObj>()) {
        ClassObj* owner = nullptr;
        if (auto* inst = bm->self.as<InstanceObj>()) {
          for (ClassObj* c : inst->cls->mro) {
            if (const Value* v = c->attrs.find_str(fn->name); v && v->as<FunctionObj>() == fn) {
              owner = c;
              break;
            }
          }
        } else if (auto* c = bm->self.as<ClassObj>()) {
          owner = c;
        }
        return call_function(fn, args, site, &bm->self, owner);
      }
      CallArgs with_self;
      with_self.pos.push_back(bm->self);
      with_self.pos_ranges.push_back(site.range());
      with_self.pos.insert(with_self.pos.end(), args.pos.begin(), args.pos.end());
      with_self.pos_ranges.insert(with_self.pos_ranges.end(), args.pos_ranges.begin(),
                                  args.pos_ranges.end());
      with_self.kw = args.kw;
      with_self.kw_ranges = args.kw_ranges;
      with_self.open = args.open;
      with_self.maybe_more = args.maybe_more;
      return call(bm->func, with_self, site);
    }
    case OK::Builtin: {
      auto* b = callee.as<BuiltinObj>();
      return b->fn(*this, args, site);
    }
    case OK::Class:
      return instantiate(callee.as<ClassObj>(), callee, args, site);
    case OK::ApiFunction:
      return call_api_function(callee.as<ApiFunctionObj>()->entry, args, site, nullptr);
    case OK::Instance: {
      auto* inst = callee.as<InstanceObj>();
      if (inst->cell) return call_cell(inst, callee, args, site);
      if (const Value* m = inst->cls->lookup("__call__")) {
        if (auto* fn = m->as<FunctionObj>())
          return call_function(fn, args, site, &callee, inst->cls);
      }
      // A class built on one the analyser does not know (`mint.nn.Conv3d`, a third-party
      // layer) may well be callable: that base is where __call__ would come from.
      if (inst->is_open()) {
        mark_consumed(args.pos);
        return Value::unknown();
      }
      report(site, Severity::Error, "type-error",
             "`" + inst->cls->name + "` object is not callable");
      return Value::unknown();
    }
    case OK::Opaque:
      if (PlanObj* p = training ? plan_of(callee) : nullptr)
        return training->call(*this, p, callee, args, site);
      return Value::unknown();
    case OK::Module:
      return Value::unknown();
    default:
      report(site, Severity::Error, "type-error",
             "`" + type_name(callee) + "` object is not callable");
      return Value::unknown();
  }
}

Value Interpreter::call_function(FunctionObj* fn, CallArgs& args, const Site& site,
                                 const Value* self, ClassObj* method_class) {
  if (call_depth >= static_cast<int>(options.max_call_depth)) {
    throw BudgetExceeded{"call depth limit (" + std::to_string(options.max_call_depth) +
                             ") reached in `" + fn->name + "`; is there runaway recursion?",
                         site};
  }
  const Node* def = fn->def;
  auto frame = std::make_shared<Frame>();
  frame->module = fn->module;
  frame->parent = fn->closure;
  frame->method_class = method_class;
  frame->in_construct = graph != nullptr;
  if (self) frame->self = *self;
  if (!method_class && fn->owner && !fn->is_static && !self && !args.pos.empty()) {
    // A method reached through a decorator's wrapper (`init(self, *args, **kwargs)`).
    frame->method_class = fn->owner;
    frame->self = args.pos[0];
  }
  // Bind parameters.
  std::vector<Value> pos = args.pos;
  if (self && !fn->is_static) pos.insert(pos.begin(), *self);
  size_t pi = 0;
  const auto& params = def->list;
  std::vector<bool> bound(params.size(), false);
  int varargs_idx = -1;
  int varkw_idx = -1;
  for (size_t i = 0; i < params.size(); ++i) {
    auto kind = static_cast<ast::ParamKindAst>(params[i]->op);
    if (kind == ast::ParamKindAst::VarArgs) varargs_idx = static_cast<int>(i);
    if (kind == ast::ParamKindAst::VarKwargs) varkw_idx = static_cast<int>(i);
  }
  std::vector<Value> extra_pos;
  for (size_t i = 0; i < params.size() && pi < pos.size(); ++i) {
    auto kind = static_cast<ast::ParamKindAst>(params[i]->op);
    if (kind != ast::ParamKindAst::Normal) break;
    frame->locals[params[i]->str] = pos[pi++];
    bound[i] = true;
  }
  while (pi < pos.size()) extra_pos.push_back(pos[pi++]);
  if (!extra_pos.empty()) {
    if (varargs_idx >= 0) {
      frame->locals[params[static_cast<size_t>(varargs_idx)]->str] = make_tuple(extra_pos);
      bound[static_cast<size_t>(varargs_idx)] = true;
    } else if (!args.open) {
      report(site, Severity::Error, "too-many-arguments",
             "`" + fn->name + "()` takes " + std::to_string(params.size() - (self ? 1 : 0)) +
                 " positional argument(s) but " + std::to_string(pos.size() - (self ? 1 : 0)) +
                 " were given");
    }
  } else if (varargs_idx >= 0) {
    frame->locals[params[static_cast<size_t>(varargs_idx)]->str] =
        args.open ? Value::unknown() : make_tuple({});
    bound[static_cast<size_t>(varargs_idx)] = true;
  }
  auto kwdict = std::make_shared<DictObj>();
  kwdict->open = args.open;
  kwdict->maybe_more = args.maybe_more;
  bool misnamed = false;  // a keyword the function does not take was given
  for (size_t k = 0; k < args.kw.size(); ++k) {
    const auto& [name, v] = args.kw[k];
    bool found = false;
    for (size_t i = 0; i < params.size(); ++i) {
      auto kind = static_cast<ast::ParamKindAst>(params[i]->op);
      if ((kind == ast::ParamKindAst::Normal || kind == ast::ParamKindAst::KeywordOnly) &&
          params[i]->str == name) {
        if (bound[i]) {
          report(Site{site.node, site.module}, Severity::Error, "invalid-argument",
                 "`" + fn->name + "()` got multiple values for argument `" + name + "`");
        }
        frame->locals[params[i]->str] = v;
        bound[i] = true;
        found = true;
        break;
      }
    }
    if (!found) {
      if (varkw_idx >= 0) {
        kwdict->set(make_str(name), v);
      } else if (!args.open) {
        misnamed = true;
        report_at(site.file(), k < args.kw_ranges.size() ? args.kw_ranges[k] : site.range(),
                  Severity::Error, "unknown-keyword",
                  "`" + fn->name + "()` got an unexpected keyword argument `" + name + "`");
      }
    }
  }
  if (varkw_idx >= 0) {
    frame->locals[params[static_cast<size_t>(varkw_idx)]->str] = Value::obj(kwdict);
    bound[static_cast<size_t>(varkw_idx)] = true;
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (bound[i]) continue;
    if (args.open || (misnamed && !fn->has_default[i])) {
      // Perhaps given by the unknown `*args`/`**kwargs`: whatever it is, nobody knows. (After a
      // misnamed keyword, the missing argument is the same mistake: reported once.)
      frame->locals[params[i]->str] = Value::unknown();
    } else if (fn->has_default[i]) {
      frame->locals[params[i]->str] = fn->defaults[i];
    } else if (args.maybe_more) {
      frame->locals[params[i]->str] = Value::unknown();
    } else {
      report(
          site, Severity::Error, "missing-argument",
          "`" + fn->name + "()` missing required argument `" + std::string(params[i]->str) + "`");
      frame->locals[params[i]->str] = Value::unknown();
    }
  }
  bool saved_module_level = at_module_level;
  at_module_level = false;
  ++call_depth;
  struct Restore {
    Interpreter* in;
    bool saved;
    ~Restore() {
      --in->call_depth;
      in->at_module_level = saved;
    }
  } restore{this, saved_module_level};
  if (def->kind == K::Lambda) return eval(def->a, *frame);
  // A generator (`for name, cell in _cell_list(net)`): what it yields is not followed, so the
  // iterator is unknown. In construct its body still runs, for what GRAPH_MODE says of `yield`.
  if (fn->is_generator && !frame->in_construct) return Value::unknown();
  Flow fl = exec_block(def->list2, *frame);
  if (fl == Flow::Return) {
    // Outer factories return last, so the outermost one is what stays recorded.
    if (auto* inst = frame->ret.as<InstanceObj>(); inst && inst->cell && !method_class)
      inst->cell->factory = fn;
    return frame->ret;
  }
  return Value::none();
}

}  // namespace graphcore::eval
