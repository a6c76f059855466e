// Breakpoints of the debug adapter, without protocol: where a requested line is verified (the
// next line that produces a graph node, in the same function), hit conditions, conditions and
// logpoint messages (over the evaluate language of variables.h, passed in as a function), the
// table of set breakpoints, and the exception filters (tensor watchpoints: NaN, Inf, fp16
// overflow, all-zero outputs). Everything but BreakpointTable and DefinitionLines is a pure
// function of its arguments.
//
// Thread-safety: none; the session's mutex guards the table (the worker reads it in its hooks).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graphcore/runtime.h"
#include "variables.h"

namespace cellscope::dap {

// ---- verification -----------------------------------------------------------------------------

// The lines (1-based) on which a class or function definition starts, per file, from the file's
// syntactic outline (graphcore/outline.h): where a breakpoint would leave its function. Each file
// is read once, when first asked for.
class DefinitionLines {
 public:
  const std::set<int>& of(const std::string& file);

 private:
  std::map<std::string, std::set<int>> files_;
};

// Where a breakpoint requested on a line stops: `line` (0: unverified), and why it moved or why
// it is unverified.
struct LineVerdict {
  int line = 0;
  std::string message;
};

// Verifies a breakpoint requested on `line` of a file whose nodes start on `node_lines` (nullptr:
// no node of the graph comes from the file) and whose definitions start on `definitions`: the
// first line at or after `line` that produces a node, unless a `def` or `class` starts in between.
// `cell` and `file_name` name the graph and the file in the message.
LineVerdict verify_line(const std::set<int>* node_lines, const std::set<int>& definitions, int line,
                        const std::string& cell, const std::string& file_name);

// ---- conditions ---------------------------------------------------------------------------------

// A hit condition: `N`, `=N`, `==N`, `>N`, `>=N` or `%N` (every N-th hit, N > 0), spaces ignored.
struct HitCondition {
  std::string op;  // "==", ">", ">=" or "%"
  int n = 0;
};
std::optional<HitCondition> parse_hit_condition(const std::string& cond);
// Whether the hit count `hits` satisfies `cond` (an empty or blank condition, or one that does
// not parse, always does).
bool hit_condition_met(const std::string& cond, int hits);
// Why a breakpoint's hit condition is refused, or nullopt when it is blank or parses.
std::optional<std::string> hit_condition_error(const std::string& cond);

// The evaluate language, as conditions and logpoints use it: the value of an expression in the
// breakpoint's frame, or nullopt with `*err` set.
using Evaluate =
    std::function<std::optional<EvalResult>(const std::string& expr, std::string* err)>;

// A condition `EXPR OP NUMBER` with OP in < <= > >= == !=, EXPR a name with a statistic
// (`x.max() > 10`). false with `*err` set when it cannot be evaluated.
bool eval_condition(const std::string& cond, const Evaluate& eval, std::string* err);
// A logpoint message: every `{expr}` replaced by its value's text (`<error>` when it has none).
std::string interpolate(const std::string& msg, const Evaluate& eval);

// ---- the table ----------------------------------------------------------------------------------

struct Breakpoint {
  int id = 0;
  int line = 0;  // verified line
  std::string condition, hit_condition, log_message;
  int hits = 0;
  // Training: the hit count counts steps, not instances. The step last counted, and the count
  // before it (a line reached again in that step, by another instance, counts as that step).
  int64_t step = -1;
  int step_base = 0;
};

// What reaching a breakpoint's line did: its hit count is bumped when its condition holds (or
// cannot be evaluated, which is reported); then, if the hit condition is met, a logpoint logs
// and any other breakpoint stops.
struct Reached {
  std::string condition_error;     // "breakpoint condition \"...\": why", or ""
  std::optional<std::string> log;  // a logpoint's interpolated message
  bool stop = false;
};
Reached reach(Breakpoint& bp, const Evaluate& eval);

// The breakpoints set, by canonical file and verified line, with ids that stay with a line
// when the client sets a file's breakpoints again.
class BreakpointTable {
 public:
  // Starts replacing `file`'s breakpoints: returns the previous ones (see id_for); the file has
  // none until add().
  std::map<int, Breakpoint> take(const std::string& file);
  // The id of a breakpoint on `line`: the previous one's (from take()), else a new one.
  int id_for(const std::map<int, Breakpoint>& previous, int line);
  void add(const std::string& file, const Breakpoint& bp);
  // The breakpoint on `line` of `file`, or nullptr.
  Breakpoint* find(const std::string& file, int line);
  // Verifies a requested line of `file` (canonical) against `index` (see verify_line).
  LineVerdict verify(const GraphIndex& index, const std::string& file, int line,
                     const std::string& cell, const std::string& file_name);

 private:
  std::map<std::string, std::map<int, Breakpoint>> files_;
  int next_id_ = 1;
  DefinitionLines definitions_;
};

// ---- exception filters --------------------------------------------------------------------------

struct ExceptionFilter {
  const char* id;
  const char* label;
  const char* description;
  // Training filters whose condition is a number (a factor or a threshold): its description.
  const char* condition = nullptr;
  // On unless the client says otherwise (the `default` initialize announces, and the session's
  // filters until setExceptionBreakpoints).
  bool on_by_default = false;
};
// The filters `initialize` announces, in order.
const std::vector<ExceptionFilter>& exception_filters();
bool is_exception_filter(const std::string& id);
// The ids of the filters on by default (a session's filters before setExceptionBreakpoints).
std::set<std::string> default_filters();
// The number a filter's condition gives (loss-spike's factor, grad-explode's threshold ...), or
// `*err` says why it is refused (a filter without a condition, not a positive number).
std::optional<double> filter_condition_value(const std::string& id, const std::string& condition,
                                             std::string* err);

// The exception the `filters` see in the float outputs of a node that just ran ("NaN in the
// output of node 'inner/Log' (Log) at nan_model.py:16: 8 of 8 elements, first at index [0, 0]
// (flat 0)"), or nullopt.
std::optional<std::string> filter_exception(const std::set<std::string>& filters,
                                            const graphcore::runtime::NodeEvent& e,
                                            const graphcore::runtime::Executor& ex);
// The exceptionId of a stop's description ("NaN", "fp16 overflow", "RuntimeError",
// "precision-drift").
std::string exception_id(const std::string& description);

}  // namespace cellscope::dap
