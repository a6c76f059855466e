// The standard library's argparse, evaluated statically: training scripts take their learning
// rate, batch size, epochs and data path from the command line (`args = parser.parse_args()`,
// then `args.lr`). parse_args parses AnalysisOptions::script_args (the command line `cellscope
// train FILE -- ARGS` gives; none: every option at its default, as `python train.py` runs)
// against the add_argument calls the script made, with argparse's rules: dests from the first
// long option, string defaults converted by `type`, store_true/false/const, append, count,
// nargs, required options, unique prefixes of long options, `--opt=value`. What it cannot know
// (a custom Action, sub-commands, an argument list computed at run time) is Unknown, never an
// error; a command line the script would reject is a warning naming what argparse would say.
#include "argparse_model.h"

#include <charconv>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graphcore/pynumber.h"
#include "interp.h"
#include "value.h"

namespace graphcore::eval {

namespace {

struct ArgSpec {
  std::string dest;
  std::vector<std::string> flags;  // empty: positional
  std::string action = "store";    // store, store_true, store_false, store_const, append, ...
  std::string nargs;               // "", "?", "*", "+", or a count
  Value type;                      // None: str
  Value def;
  bool has_default = false;
  Value konst;
  bool required = false;
  bool opaque = false;  // a custom Action class: its value is unknown
  [[nodiscard]] bool positional() const { return flags.empty(); }
};

struct ParserState {
  std::vector<ArgSpec> specs;
  std::vector<std::pair<std::string, Value>> defaults;  // set_defaults
  bool allow_abbrev = true;
  bool open = false;  // sub-commands or arguments it cannot see
  Value namespace_class;
};

std::string dest_of(const std::vector<std::string>& flags) {
  const std::string* pick = nullptr;
  for (const std::string& f : flags) {
    if (f.starts_with("--")) {
      pick = &f;
      break;
    }
  }
  if (!pick && !flags.empty()) pick = &flags.front();
  if (!pick) return {};
  std::string d = pick->substr(pick->find_first_not_of('-'));
  for (char& c : d) {
    if (c == '-') c = '_';
  }
  return d;
}

// argparse's _negative_number_matcher, '^-\d+$|^-\d*\.\d+$' (ASCII digits): "-1e5" and
// "-inf" are options to argparse, not numbers.
bool looks_negative_number(const std::string& s) {
  if (s.size() < 2 || s[0] != '-') return false;
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  size_t i = 1;
  while (i < s.size() && digit(s[i])) ++i;
  if (i == s.size()) return true;  // -12
  if (s[i] != '.' || i + 1 == s.size()) return false;
  for (++i; i < s.size(); ++i) {
    if (!digit(s[i])) return false;
  }
  return true;  // -1.5, -.5
}

// Why a command line fails, as argparse words it.
struct Exit {
  std::string why;
};

class Parse {
 public:
  Parse(Interpreter& in, const ParserState& st, const Site& site) : in_(in), st_(st), site_(site) {}

  // A string argument converted by the spec's type: int, float, str, bool or a callable the
  // evaluator runs statically (a user's str2bool).
  Value convert(const ArgSpec& s, const std::string& text) {
    const Value& t = s.type;
    if (t.is_none()) return make_str(text);
    // int and float read the text exactly as the interpreter's int()/float() do (pynumber.h).
    if (same(t, NativeClass::Int) || same(t, NativeClass::Float)) {
      const bool is_int = same(t, NativeClass::Int);
      const PyNumber r = is_int ? parse_py_int(text) : parse_py_float(text);
      if (r.kind == PyNumber::Kind::Invalid) {
        throw Exit{"argument " + flag(s) + ": invalid " + (is_int ? "int" : "float") + " value: '" +
                   text + "'"};
      }
      if (r.kind == PyNumber::Kind::Unknown) return Value::unknown();
      return is_int ? Value::integer(r.i) : Value::real(r.f);
    }
    if (same(t, NativeClass::Str)) return make_str(text);
    if (same(t, NativeClass::Bool)) return Value::boolean(!text.empty());
    if (t.is_unknown()) return Value::unknown();
    CallArgs a;
    a.pos.push_back(make_str(text));
    a.pos_ranges.push_back(site_.range());
    return in_.call(t, a, site_);
  }

  Value run(const std::vector<std::string>& argv, std::vector<std::string>* extras) {
    values_.assign(st_.specs.size(), std::nullopt);
    std::vector<std::string> positionals;
    bool only_positionals = false;
    for (size_t i = 0; i < argv.size(); ++i) {
      const std::string& tok = argv[i];
      if (!only_positionals && tok == "--") {
        only_positionals = true;
        continue;
      }
      if (only_positionals || tok.size() < 2 || tok[0] != '-' || looks_negative_number(tok)) {
        positionals.push_back(tok);
        continue;
      }
      std::string name = tok;
      std::optional<std::string> inline_value;
      if (auto eq = tok.find('='); eq != std::string::npos && tok.starts_with("--")) {
        name = tok.substr(0, eq);
        inline_value = tok.substr(eq + 1);
      } else if (!tok.starts_with("--") && tok.size() > 2) {
        // -l0.1: a short option with its value attached.
        if (find(tok.substr(0, 2))) {
          name = tok.substr(0, 2);
          inline_value = tok.substr(2);
        }
      }
      const ArgSpec* s = find(name);
      if (!s) {
        if (extras) {
          extras->push_back(tok);
          continue;
        }
        throw Exit{"unrecognized arguments: " + tok};
      }
      const auto idx = static_cast<size_t>(s - st_.specs.data());
      std::vector<std::string> vals;
      if (inline_value) vals.push_back(*inline_value);
      const bool takes_values = s->action == "store" || s->action == "append";
      if (!takes_values) {
        if (inline_value) {
          throw Exit{"argument " + flag(*s) + ": ignored explicit argument '" + *inline_value +
                     "'"};
        }
        apply_flag(*s, idx, name);
        continue;
      }
      if (!inline_value) {
        const size_t want = wanted(*s);
        while (i + 1 < argv.size() && vals.size() < want &&
               !(argv[i + 1].size() > 1 && argv[i + 1][0] == '-' &&
                 !looks_negative_number(argv[i + 1]))) {
          vals.push_back(argv[++i]);
        }
      }
      check_count(*s, vals.size());
      Value v = values_for(*s, vals);
      if (s->action == "append") {
        auto* l = values_[idx] ? values_[idx]->as<ListObj>() : nullptr;
        if (!l) {
          values_[idx] = make_list({});
          l = values_[idx]->as<ListObj>();
        }
        l->items.push_back(v);
      } else {
        values_[idx] = v;
      }
    }
    assign_positionals(positionals, extras);
    for (const ArgSpec& s : st_.specs) {
      const auto idx = static_cast<size_t>(&s - st_.specs.data());
      if (!s.positional() && s.required && !values_[idx])
        throw Exit{"the following arguments are required: " + flag(s)};
    }
    return build_namespace();
  }

 private:
  static bool same(const Value& v, NativeClass c) {
    auto* cls = v.as<ClassObj>();
    return cls && cls->native == c;
  }
  static std::string flag(const ArgSpec& s) {
    if (s.flags.empty()) return s.dest;
    std::string out;
    for (const std::string& f : s.flags) out += (out.empty() ? "" : "/") + f;
    return out;
  }
  const ArgSpec* find(const std::string& name) const {
    for (const ArgSpec& s : st_.specs) {
      for (const std::string& f : s.flags) {
        if (f == name) return &s;
      }
    }
    if (!st_.allow_abbrev || !name.starts_with("--")) return nullptr;
    const ArgSpec* hit = nullptr;
    for (const ArgSpec& s : st_.specs) {
      for (const std::string& f : s.flags) {
        if (f.starts_with("--") && f.starts_with(name)) {
          if (hit && hit != &s) throw Exit{"ambiguous option: " + name};
          hit = &s;
        }
      }
    }
    return hit;
  }
  static size_t wanted(const ArgSpec& s) {
    if (s.nargs.empty()) return 1;
    if (s.nargs == "?") return 1;
    if (s.nargs == "*" || s.nargs == "+") return SIZE_MAX;
    size_t n = 0;
    auto r = std::from_chars(s.nargs.data(), s.nargs.data() + s.nargs.size(), n);
    return r.ec == std::errc() ? n : 1;
  }
  static void check_count(const ArgSpec& s, size_t got) {
    if (s.nargs == "?" || s.nargs == "*") return;
    if (s.nargs == "+") {
      if (got == 0) throw Exit{"argument " + flag(s) + ": expected at least one argument"};
      return;
    }
    const size_t want = wanted(s);
    if (got != want) {
      throw Exit{"argument " + flag(s) + ": expected " +
                 (want == 1 ? std::string("one argument") : std::to_string(want) + " arguments")};
    }
  }
  Value values_for(const ArgSpec& s, const std::vector<std::string>& vals) {
    if (s.opaque) return Value::unknown();
    if (s.nargs == "?" && vals.empty()) return s.konst;
    std::vector<Value> out;
    out.reserve(vals.size());
    for (const std::string& v : vals) out.push_back(convert(s, v));
    if (s.nargs.empty() || s.nargs == "?") return out.empty() ? Value::none() : out.front();
    return make_list(std::move(out));
  }
  void apply_flag(const ArgSpec& s, size_t idx, const std::string& used) {
    const std::optional<Value> before = values_[idx];
    values_[idx] = Value::unknown();  // a custom Action; help and version print and exit
    if (s.opaque) return;
    if (s.action == "store_true") {
      values_[idx] = Value::boolean(true);
    } else if (s.action == "store_false") {
      values_[idx] = Value::boolean(false);
    } else if (s.action == "store_const") {
      values_[idx] = s.konst;
    } else if (s.action == "boolean_optional") {
      values_[idx] = Value::boolean(!used.starts_with("--no-"));
    } else if (s.action == "count") {
      const int64_t n = before && before->is_int() ? before->as_int()
                        : s.def.is_int()           ? s.def.as_int()
                                                   : 0;
      values_[idx] = Value::integer(n + 1);
    } else if (s.action == "append_const") {
      values_[idx] = before && before->as<ListObj>() ? *before : make_list({});
      values_[idx]->as<ListObj>()->items.push_back(s.konst);
    }
  }
  void assign_positionals(const std::vector<std::string>& toks, std::vector<std::string>* extras) {
    size_t next = 0;
    for (const ArgSpec& s : st_.specs) {
      if (!s.positional()) continue;
      const auto idx = static_cast<size_t>(&s - st_.specs.data());
      const size_t left = toks.size() - next;
      std::vector<std::string> vals;
      if (s.nargs == "*" || s.nargs == "+") {
        vals.assign(toks.begin() + static_cast<std::ptrdiff_t>(next), toks.end());
      } else if (s.nargs == "?") {
        if (left > 0) vals.push_back(toks[next]);
      } else {
        const size_t want = wanted(s);
        if (left < want) throw Exit{"the following arguments are required: " + s.dest};
        vals.assign(toks.begin() + static_cast<std::ptrdiff_t>(next),
                    toks.begin() + static_cast<std::ptrdiff_t>(next + want));
      }
      check_count(s, vals.size());
      next += vals.size();
      if (s.nargs == "?" && vals.empty()) {
        values_[idx] = s.has_default ? default_of(s) : Value::none();
      } else if (s.nargs == "*" && vals.empty() && s.has_default) {
        values_[idx] = default_of(s);
      } else {
        values_[idx] = values_for(s, vals);
      }
    }
    for (; next < toks.size(); ++next) {
      if (!extras) throw Exit{"unrecognized arguments: " + toks[next]};
      extras->push_back(toks[next]);
    }
  }
  Value default_of(const ArgSpec& s) {
    for (const auto& [dest, v] : st_.defaults) {
      if (dest == s.dest) return v;
    }
    if (s.opaque) return Value::unknown();
    if (!s.has_default) {
      if (s.action == "store_true") return Value::boolean(false);
      if (s.action == "store_false") return Value::boolean(true);
      return Value::none();
    }
    // argparse converts a string default through `type` (an int default stays as it is).
    if (const std::string* text = str_of(s.def);
        text && (s.action == "store" || s.action == "append") && !s.type.is_none()) {
      return convert(s, *text);
    }
    return s.def;
  }
  Value build_namespace() {
    auto* cls = st_.namespace_class.as<ClassObj>();
    auto ns = std::make_shared<InstanceObj>(cls, st_.namespace_class);
    // Open: programs add attributes the evaluator may not see (`vars(args).update(cfg)`,
    // a parser built partly in another package): a missing one is unknown, not an error.
    ns->open = true;
    for (const ArgSpec& s : st_.specs) {
      const auto idx = static_cast<size_t>(&s - st_.specs.data());
      if (s.dest.empty() || s.action == "help" || s.action == "version") continue;
      ns->attrs.set(make_str(s.dest), values_[idx] ? *values_[idx] : default_of(s));
    }
    for (const auto& [dest, v] : st_.defaults) {
      if (!ns->attrs.find_str(dest)) ns->attrs.set(make_str(dest), v);
    }
    return Value::obj(ns);
  }

  Interpreter& in_;
  const ParserState& st_;
  const Site& site_;
  std::vector<std::optional<Value>> values_;
};

Value add_argument(const std::shared_ptr<ParserState>& st, CallArgs& a) {
  if (a.open) {  // add_argument(*names, **options) with contents the evaluator does not know
    st->open = true;
    return Value::unknown();
  }
  ArgSpec s;
  for (const Value& p : a.pos) {
    const std::string* f = str_of(p);
    if (!f) {  // a flag computed at run time: the namespace may have any attribute
      st->open = true;
      return Value::unknown();
    }
    if (f->starts_with("-")) {
      s.flags.push_back(*f);
    } else {
      s.dest = *f;
    }
  }
  if (!s.flags.empty()) s.dest = dest_of(s.flags);
  if (const Value* d = a.find_kw("dest")) {
    if (const std::string* ds = str_of(*d)) {
      s.dest = *ds;
    } else {
      st->open = true;
      return Value::unknown();
    }
  }
  if (const Value* act = a.find_kw("action")) {
    if (const std::string* name = str_of(*act)) {
      s.action = *name;
    } else if (auto* b = act->as<BuiltinObj>(); b && b->name == "BooleanOptionalAction") {
      s.action = "boolean_optional";
      std::vector<std::string> negated;
      for (const std::string& f : s.flags) {
        if (f.starts_with("--")) negated.push_back("--no-" + f.substr(2));
      }
      s.flags.insert(s.flags.end(), negated.begin(), negated.end());
    } else {
      s.opaque = true;  // a user Action class
    }
  }
  static const std::vector<std::string_view> kActions = {
      "store", "store_true", "store_false", "store_const", "append",          "append_const",
      "count", "help",       "version",     "extend",      "boolean_optional"};
  if (std::find(kActions.begin(), kActions.end(), s.action) == kActions.end()) s.opaque = true;
  if (s.action == "extend") s.opaque = true;
  if (const Value* n = a.find_kw("nargs")) {
    if (const std::string* ns = str_of(*n)) {
      s.nargs = *ns;
    } else if (n->is_int()) {
      s.nargs = std::to_string(n->as_int());
    } else {
      s.opaque = true;
    }
  }
  if (const Value* t = a.find_kw("type")) s.type = *t;
  if (const Value* d = a.find_kw("default")) {
    s.def = *d;
    s.has_default = true;
  }
  if (const Value* c = a.find_kw("const")) s.konst = *c;
  if (const Value* r = a.find_kw("required")) {
    if (r->is_int()) {
      s.required = r->as_int() != 0;
    } else {
      s.opaque = true;
    }
  }
  st->specs.push_back(std::move(s));
  return Value::none();
}

// The methods of a parser or of one of its groups: they all add to the same parser.
Value parser_object(const std::shared_ptr<ParserState>& st, bool is_group);

Value parse(Interpreter& in, const std::shared_ptr<ParserState>& st, CallArgs& a, const Site& site,
            bool known) {
  std::vector<std::string> argv = in.options.script_args;
  const Value* given = !a.pos.empty() ? &a.pos[0] : a.find_kw("args");
  if (given && !given->is_none()) {
    const std::vector<Value>* items = nullptr;
    if (auto* l = given->as<ListObj>()) items = &l->items;
    if (auto* t = given->as<TupleObj>()) items = &t->items;
    if (!items) return Value::unknown();
    argv.clear();
    for (const Value& v : *items) {
      const std::string* s = str_of(v);
      if (!s) return Value::unknown();
      argv.push_back(*s);
    }
  }
  std::vector<std::string> extras;
  try {
    Parse p(in, *st, site);
    Value ns = p.run(argv, known ? &extras : nullptr);
    if (!known) return ns;
    std::vector<Value> rest;
    rest.reserve(extras.size());
    for (const std::string& e : extras) rest.push_back(make_str(e));
    return make_tuple({ns, make_list(std::move(rest))});
  } catch (const Exit& e) {
    in.report(site, Severity::Warning, "raises",
              "parse_args() exits the script (SystemExit 2) on this command line: " + e.why);
    return Value::unknown();
  }
}

Value parser_object(const std::shared_ptr<ParserState>& st, bool is_group) {
  auto cls = std::make_shared<ClassObj>();
  cls->name = is_group ? "_ArgumentGroup" : "ArgumentParser";
  cls->mro.push_back(cls.get());
  cls->open = true;  // print_help, format_usage, error ...: unknown, not missing
  Value cls_value = Value::obj(cls);
  auto obj = std::make_shared<InstanceObj>(cls.get(), cls_value);
  auto method = [&](const char* name, BuiltinFn fn) {
    obj->attrs.set(make_str(name), Value::obj(std::make_shared<BuiltinObj>(name, std::move(fn))));
  };
  method("add_argument",
         [st](Interpreter&, CallArgs& a, const Site&) -> Value { return add_argument(st, a); });
  auto group = [st](Interpreter&, CallArgs&, const Site&) -> Value {
    return parser_object(st, true);
  };
  method("add_argument_group", group);
  method("add_mutually_exclusive_group", group);
  method("set_defaults", [st](Interpreter&, CallArgs& a, const Site&) -> Value {
    if (a.open || !a.pos.empty()) st->open = true;
    for (const auto& [k, v] : a.kw) st->defaults.emplace_back(k, v);
    return Value::none();
  });
  if (!is_group) {
    method("parse_args", [st](Interpreter& in, CallArgs& a, const Site& s) -> Value {
      return parse(in, st, a, s, false);
    });
    method("parse_known_args", [st](Interpreter& in, CallArgs& a, const Site& s) -> Value {
      return parse(in, st, a, s, true);
    });
    method("add_subparsers", [st](Interpreter&, CallArgs&, const Site&) -> Value {
      st->open = true;
      return Value::unknown();
    });
    method("get_default", [st](Interpreter&, CallArgs& a, const Site&) -> Value {
      const std::string* d = a.pos.empty() ? nullptr : str_of(a.pos[0]);
      if (!d) return Value::unknown();
      for (const auto& [k, v] : st->defaults) {
        if (k == *d) return v;
      }
      for (const ArgSpec& s : st->specs) {
        if (s.dest == *d) return s.has_default && !s.opaque ? s.def : Value::unknown();
      }
      return Value::none();
    });
  }
  return Value::obj(obj);
}

}  // namespace

Value argparse_module() {
  auto m = std::make_shared<ModuleObj>();
  m->name = "argparse";
  auto ns_class = std::make_shared<ClassObj>();
  ns_class->name = "Namespace";
  ns_class->mro.push_back(ns_class.get());
  Value ns_value = Value::obj(ns_class);
  m->globals.set(make_str("Namespace"), ns_value);
  m->globals.set(make_str("ArgumentParser"),
                 Value::obj(std::make_shared<BuiltinObj>(
                     "ArgumentParser", [ns_value](Interpreter&, CallArgs& a, const Site&) -> Value {
                       auto st = std::make_shared<ParserState>();
                       st->namespace_class = ns_value;
                       if (const Value* ab = a.find_kw("allow_abbrev"); ab && ab->is_int())
                         st->allow_abbrev = ab->as_int() != 0;
                       if (a.find_kw("parents")) st->open = true;
                       return parser_object(st, false);
                     })));
  // The marker `action=argparse.BooleanOptionalAction` is recognised by (--x / --no-x).
  m->globals.set(make_str("BooleanOptionalAction"),
                 Value::obj(std::make_shared<BuiltinObj>(
                     "BooleanOptionalAction",
                     [](Interpreter&, CallArgs&, const Site&) { return Value::unknown(); })));
  return Value::obj(m);
}

}  // namespace graphcore::eval
