// Breakpoints, conditions and exception filters of the debug adapter: see breakpoints.h.
#include "breakpoints.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "graphcore/outline.h"
#include "graphcore/text.h"

namespace cellscope::dap {

namespace rt = graphcore::runtime;

namespace {

void collect_definitions(const std::vector<graphcore::OutlineSymbol>& symbols, std::set<int>& out) {
  using K = graphcore::OutlineSymbol::Kind;
  for (const auto& sym : symbols) {
    if (sym.kind == K::Class || sym.kind == K::Function || sym.kind == K::Method)
      out.insert(static_cast<int>(sym.selection.start.line) + 1);
    collect_definitions(sym.children, out);
  }
}

}  // namespace

// ---- verification -----------------------------------------------------------------------------

const std::set<int>& DefinitionLines::of(const std::string& file) {
  auto it = files_.find(file);
  if (it != files_.end()) return it->second;
  std::ifstream in(file, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  std::set<int> lines;
  collect_definitions(graphcore::outline_python(file, os.str()).symbols, lines);
  return files_.emplace(file, std::move(lines)).first->second;
}

LineVerdict verify_line(const std::set<int>* node_lines, const std::set<int>& definitions, int line,
                        const std::string& cell, const std::string& file_name) {
  LineVerdict v;
  if (!node_lines) {
    v.message = "no graph node of " + cell + " comes from " + file_name;
    return v;
  }
  auto it = node_lines->lower_bound(line);
  // A `def` or `class` between the line and the next node: the breakpoint would leave its
  // function.
  auto def = it == node_lines->end() ? definitions.end() : definitions.upper_bound(line);
  if (it == node_lines->end() || (def != definitions.end() && *def < *it)) {
    v.message = "line " + std::to_string(line) +
                " produces no graph node (not in construct of a compiled Cell, or no tensor "
                "operation follows it in that function)";
    return v;
  }
  v.line = *it;
  if (v.line != line) {
    v.message =
        "moved from line " + std::to_string(line) + " to the next line that produces a graph node";
  }
  return v;
}

// ---- conditions ---------------------------------------------------------------------------------

std::optional<HitCondition> parse_hit_condition(const std::string& cond) {
  std::string c;
  for (char ch : cond)
    if (ch != ' ') c += ch;
  HitCondition h;
  for (const char* op : {">=", "==", "%", ">", "="}) {
    if (c.rfind(op, 0) == 0) {
      h.op = op;
      break;
    }
  }
  const char* b = c.data() + h.op.size();
  const char* e = c.data() + c.size();
  auto [end, ec] = std::from_chars(b, e, h.n);
  if (b == e || ec != std::errc() || end != e || (h.op == "%" && h.n <= 0)) return std::nullopt;
  if (h.op.empty() || h.op == "=") h.op = "==";
  return h;
}

bool hit_condition_met(const std::string& cond, int hits) {
  if (cond.find_first_not_of(' ') == std::string::npos) return true;
  auto h = parse_hit_condition(cond);
  if (!h) return true;  // refused when the breakpoint was set
  if (h->op == "%") return hits % h->n == 0;
  if (h->op == ">=") return hits >= h->n;
  if (h->op == ">") return hits > h->n;
  return hits == h->n;
}

std::optional<std::string> hit_condition_error(const std::string& cond) {
  if (cond.find_first_not_of(' ') == std::string::npos || parse_hit_condition(cond))
    return std::nullopt;
  return "invalid hit condition `" + cond +
         "`: expected a count N, =N, >N, >=N or %N (every N-th hit, N > 0)";
}

namespace {

// `text` (spaces around it ignored) as a number, or nullopt when it is not exactly one.
std::optional<double> strict_number(const std::string& text) {
  const std::string t(graphcore::text::trim(text));
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size()) return std::nullopt;
  return v;
}

}  // namespace

bool eval_condition(const std::string& cond, const Evaluate& eval, std::string* err) {
  static const char* ops[] = {"<=", ">=", "==", "!=", "<", ">"};
  for (const char* op : ops) {
    auto k = cond.find(op);
    if (k == std::string::npos) continue;
    std::string lhs = cond.substr(0, k), rhs = cond.substr(k + std::string(op).size());
    // `EXPR % N`: the remainder of the left side's number (`step % 5 == 0`).
    std::optional<double> modulus;
    if (auto m = lhs.find('%'); m != std::string::npos) {
      modulus = strict_number(lhs.substr(m + 1));
      if (!modulus || *modulus == 0) {
        *err = "the right side of % must be a non-zero number";
        return false;
      }
      lhs.resize(m);
    }
    auto l = eval(lhs, err);
    if (!l) return false;
    if (!l->number) {
      *err = "the left side must be a number, e.g. x.max() or step";
      return false;
    }
    const std::optional<double> right = strict_number(rhs);
    if (!right) {
      *err = "the right side must be a number";
      return false;
    }
    const double b = *right;
    double a = modulus ? std::fmod(*l->number, *modulus) : *l->number;
    std::string o = op;
    return o == "<="   ? a <= b
           : o == ">=" ? a >= b
           : o == "==" ? a == b
           : o == "!=" ? a != b
           : o == "<"  ? a < b
                       : a > b;
  }
  *err = "unsupported condition (use e.g. `x.max() > 10`)";
  return false;
}

std::string interpolate(const std::string& msg, const Evaluate& eval) {
  std::string out;
  for (size_t i = 0; i < msg.size(); ++i) {
    if (msg[i] == '{') {
      auto j = msg.find('}', i);
      if (j != std::string::npos) {
        std::string err;
        auto r = eval(msg.substr(i + 1, j - i - 1), &err);
        out += r ? r->text : "<" + err + ">";
        i = j;
        continue;
      }
    }
    out += msg[i];
  }
  return out;
}

Reached reach(Breakpoint& bp, const Evaluate& eval) {
  Reached r;
  bool cond_ok = true;
  if (!bp.condition.empty()) {
    std::string err;
    cond_ok = eval_condition(bp.condition, eval, &err);
    if (!err.empty()) {
      r.condition_error = "breakpoint condition \"" + bp.condition + "\": " + err;
      cond_ok = true;
    }
  }
  if (!cond_ok) return r;
  ++bp.hits;
  if (!hit_condition_met(bp.hit_condition, bp.hits)) return r;
  if (!bp.log_message.empty()) {
    r.log = interpolate(bp.log_message, eval);
  } else {
    r.stop = true;
  }
  return r;
}

// ---- the table ----------------------------------------------------------------------------------

std::map<int, Breakpoint> BreakpointTable::take(const std::string& file) {
  auto& table = files_[file];
  std::map<int, Breakpoint> old = std::move(table);
  table.clear();
  return old;
}

int BreakpointTable::id_for(const std::map<int, Breakpoint>& previous, int line) {
  auto prev = previous.find(line);
  return prev != previous.end() ? prev->second.id : next_id_++;
}

void BreakpointTable::add(const std::string& file, const Breakpoint& bp) {
  files_[file][bp.line] = bp;
}

Breakpoint* BreakpointTable::find(const std::string& file, int line) {
  auto bf = files_.find(file);
  if (bf == files_.end()) return nullptr;
  auto bi = bf->second.find(line);
  return bi == bf->second.end() ? nullptr : &bi->second;
}

LineVerdict BreakpointTable::verify(const GraphIndex& index, const std::string& file, int line,
                                    const std::string& cell, const std::string& file_name) {
  static const std::set<int> kNone;
  auto lines = index.node_lines.find(file);
  if (lines == index.node_lines.end()) return verify_line(nullptr, kNone, line, cell, file_name);
  return verify_line(&lines->second, definitions_.of(file), line, cell, file_name);
}

// ---- exception filters --------------------------------------------------------------------------

const std::vector<ExceptionFilter>& exception_filters() {
  static const std::vector<ExceptionFilter> kFilters = {
      {"nan", "NaN", "Stop after a node whose output has a NaN"},
      {"inf", "Inf", "Stop after a node whose output has an infinity"},
      {"fp16-overflow", "fp16 overflow",
       "Stop after a node whose output has a finite value beyond the fp16 range (|v| > 65504)"},
      {"all-zero", "All zero", "Stop after a node whose output is all zeros"},
      // Training (modes train and joint).
      {"loss-nan", "Loss NaN (training)",
       "Stop after the loss node of a training step whose loss is NaN or infinite"},
      {"loss-spike", "Loss spike (training)",
       "Stop after a step whose loss is more than a factor (default 3) times the mean of the "
       "previous 10 steps",
       "the factor, e.g. 3"},
      {"grad-nan", "Gradient NaN (training)",
       "Stop before the update of a step where a parameter's gradient has a NaN"},
      {"grad-inf", "Gradient Inf (training)",
       "Stop before the update of a step where a parameter's gradient has an infinity"},
      {"grad-explode", "Gradient explosion (training)",
       "Stop before the update of a step whose global gradient norm is above a threshold "
       "(default 1000)",
       "the global-norm threshold, e.g. 1000"},
      {"grad-vanish", "Gradient vanishing (training)",
       "Stop before the update of a step whose global gradient norm is below a threshold "
       "(default 1e-7)",
       "the global-norm threshold, e.g. 1e-7"},
      {"weight-unchanged", "Weight unchanged (training)",
       "Stop after a step that left a trained parameter unchanged (a frozen layer, a learning "
       "rate of 0)"},
      {"kernel-error", "Kernel errors (training)",
       "Stop at the node whose kernel failed in a training step (its inputs inspectable); "
       "continuing ends the session",
       nullptr, true},
  };
  return kFilters;
}

std::optional<double> filter_condition_value(const std::string& id, const std::string& condition,
                                             std::string* err) {
  const auto& all = exception_filters();
  const auto f =
      std::find_if(all.begin(), all.end(), [&](const ExceptionFilter& x) { return id == x.id; });
  if (f == all.end()) {
    *err = "unknown exception filter '" + id + "'";
    return std::nullopt;
  }
  if (!f->condition) {
    *err = "the filter '" + id + "' takes no condition";
    return std::nullopt;
  }
  const std::string text(graphcore::text::trim(condition));
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v <= 0) {
    *err = "the condition of '" + id + "' must be a positive number (" + f->condition +
           "), not \"" + condition + "\"";
    return std::nullopt;
  }
  return v;
}

std::set<std::string> default_filters() {
  std::set<std::string> out;
  for (const ExceptionFilter& f : exception_filters())
    if (f.on_by_default) out.insert(f.id);
  return out;
}

bool is_exception_filter(const std::string& id) {
  for (const ExceptionFilter& f : exception_filters())
    if (id == f.id) return true;
  return false;
}

std::optional<std::string> filter_exception(const std::set<std::string>& filters,
                                            const rt::NodeEvent& e, const rt::Executor& ex) {
  for (size_t k = 0; k < e.outputs.size(); ++k) {
    const rt::Tensor& t = e.outputs[k];
    if (!t.defined() || !t.is_float() || t.numel() == 0) continue;
    rt::TensorStats st = rt::compute_stats(t);
    std::string what;
    int64_t at = -1;
    if (filters.count("nan") && st.nan_count) {
      what = "NaN";
      at = st.first_nan;
    } else if (filters.count("inf") && st.inf_count) {
      what = "Inf";
      at = st.first_inf;
    } else if (filters.count("fp16-overflow") && st.fp16_overflow_count) {
      what = "fp16 overflow";
      at = st.first_fp16_overflow;
    } else if (filters.count("all-zero") && st.all_zero()) {
      what = "all-zero output";
      at = 0;
    }
    if (what.empty()) continue;
    const graphcore::Node& n = e.node;
    std::string count = what == "NaN"             ? std::to_string(st.nan_count)
                        : what == "Inf"           ? std::to_string(st.inf_count)
                        : what == "fp16 overflow" ? std::to_string(st.fp16_overflow_count)
                                                  : std::to_string(st.count);
    std::string text = what + " in the output";
    if (e.outputs.size() > 1) text += " " + std::to_string(k);
    text += " of node '" + n.id + "' (" + std::string(n.op) + ") at " + ex.node_location(e.index) +
            ": " + count + " of " + std::to_string(st.count) + " elements, first at index " +
            rt::index_str(t.shape(), at) + " (flat " + std::to_string(at) + ")";
    return text;
  }
  return std::nullopt;
}

std::string exception_id(const std::string& description) {
  if (description.rfind("RuntimeError: ", 0) == 0) return "RuntimeError";
  if (description.rfind("precision-drift: ", 0) == 0) return "precision-drift";
  // The training filters' descriptions start with their id ("grad-explode: step 2: ...").
  for (const ExceptionFilter& f : exception_filters()) {
    const std::string prefix = std::string(f.id) + ": ";
    if (description.rfind(prefix, 0) == 0) return f.id;
  }
  return description.substr(0, description.find(" in the output"));
}

}  // namespace cellscope::dap
