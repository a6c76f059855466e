// The static evaluator. It runs model-building code (__init__, helpers, factories, config
// classes) over abstract values and compiles `construct` as GRAPH_MODE does: Python values fold,
// tensors are abstract, and every tensor operation becomes a node of the graph being built.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ast.h"
#include "graphcore/analysis.h"
#include "graphcore/diagnostic.h"
#include "graphcore/graph.h"
#include "value.h"

namespace graphcore::eval {

// Where something happens: a node of a module's AST.
struct Site {
  const ast::Node* node = nullptr;
  ModuleObj* module = nullptr;
  [[nodiscard]] SourceRange range() const { return node ? node->range : SourceRange{}; }
  [[nodiscard]] const std::string& file() const;
  [[nodiscard]] IStr file_id() const;  // file(), interned
};

struct CallArgs {
  std::vector<Value> pos;
  std::vector<SourceRange> pos_ranges;
  std::vector<std::pair<std::string, Value>> kw;
  std::vector<SourceRange> kw_ranges;
  // More arguments may have been passed than `pos`/`kw` show (`*args` or `**kwargs` whose
  // contents are unknown): no arity error holds, and what is not bound is Unknown.
  bool open = false;
  // The call forwards the `**kwargs` a root was tried with (a factory or class built with its
  // defaults): its callers may well pass more keywords. Defaults still apply, but a required
  // argument nobody gave is unknown rather than missing.
  bool maybe_more = false;
  const Value* find_kw(std::string_view name) const;
};

struct Frame : std::enable_shared_from_this<Frame> {
  std::unordered_map<std::string_view, Value> locals;
  std::shared_ptr<Frame> parent;  // lexically enclosing function frame
  ModuleObj* module = nullptr;
  Value ret;
  std::vector<std::string_view> globals;  // names declared global
  ClassObj* method_class = nullptr;       // class whose method this frame runs (for super())
  Value self;                             // first argument of that method
  bool is_class_body = false;
  ClassObj* defining_class = nullptr;  // the class whose body this frame runs
  bool is_module = false;              // module top level: stores go to globals
  bool in_construct = false;           // compiling a Cell's construct (GRAPH_MODE rules)
};

enum class Flow : uint8_t { Normal, Break, Continue, Return };

// Thrown for `raise` in user code and for budget exhaustion; caught by try/except and at roots.
struct PyRaise {
  std::string type;  // "ValueError"
  std::string message;
  Site site;
};
struct BudgetExceeded {
  std::string what;
  Site site;
  // True when the work was bounded (loops over finite data, `for i in range(10**9)`): the
  // analyser's limit, not a program that never ends.
  bool bounded = false;
  // The memory budget (AnalysisOptions::max_value_bytes) rather than the step budget.
  bool memory = false;
  // A `while True:` outside construct that leaves only by an exception a call in it raises
  // (sys.exit(), Ctrl+C): `what` says so, as information.
  bool endless = false;
};
// Thrown when AnalysisOptions::cancel is set; caught only by analyze_file.
struct Cancelled {};

class Interpreter;
class TrainingRecorder;

// Builds the semantic graph of one root Cell while its construct is compiled.
class GraphBuilder {
 public:
  GraphBuilder(Graph& g, uint32_t id) : graph(g), graph_id(id) {}
  Graph& graph;
  uint32_t graph_id;
  // Constants and Parameters from outside construct, by object. The map keeps each object alive:
  // a freed one's address can be reused by a new tensor, which would then alias its node
  // (`y = Tensor(np.ones(...))` made afresh on every call of a helper).
  struct Captured {
    ValueRef ref;
    Value keep;
  };
  std::unordered_map<const TensorObj*, Captured> captured;
  std::unordered_map<std::string, uint32_t> id_counts;
  std::unordered_map<const ApiEntry*, std::pair<IStr, IStr>> api_names;  // (api, op)
  std::unordered_set<uint32_t> consumed_by_failed;  // nodes feeding an op that failed to compile
  std::unordered_set<uint32_t> discarded;  // nodes whose value an expression statement drops
  std::vector<IStr> caller_scope;          // node -> Cell whose construct made it (when nested)
  std::unordered_map<IStr, const std::string*> scope_class;  // Cell path -> class name
  [[nodiscard]] std::string note_for(uint32_t node) const;   // instance note for diagnostics
  std::string unique_id(const std::string& base);
};

// Loads workspace modules for imports.
class ModuleLoader {
 public:
  ModuleLoader(SourceProvider& sources, const AnalysisOptions& options);
  // A module by dotted name relative to `from` (level = leading dots). nullptr when it is not
  // part of the workspace (the caller decides whether that is opaque or an error).
  ModuleObj* load(Interpreter& in, std::string_view dotted, int level, ModuleObj* from,
                  const Site& site, bool* missing_relative);
  ModuleObj* load_file(Interpreter& in, const std::filesystem::path& file, const std::string& name);
  std::vector<std::string> files_read;
  double parse_ms = 0;
  [[nodiscard]] const ast::ParsedFile* parsed(const std::string& file) const;
  // True when a directory `top` exists in a search root (an absolute import of the workspace).
  bool package_dir_exists(std::string_view top, ModuleObj* from);
  // A file's text through the SourceProvider (config files).
  std::optional<std::string> read_text(const std::filesystem::path& file) {
    return sources_.read(file);
  }
  // A synthetic module for a directory without __init__.py (a namespace package).
  ModuleObj* namespace_package(const std::string& dotted);
  // Keeps the AST of an expression given on the command line alive.
  void keep(std::unique_ptr<ast::ParsedFile> p) { extra_.push_back(std::move(p)); }

 private:
  std::optional<std::filesystem::path> resolve(std::string_view dotted, int level, ModuleObj* from);
  // The directories Python would search for an absolute import made from `from`.
  [[nodiscard]] std::vector<std::filesystem::path> sys_path(const ModuleObj* from) const;
  SourceProvider& sources_;
  const AnalysisOptions& options_;
  std::map<std::string, Ref> modules_;  // by canonical file path
  std::map<std::string, std::shared_ptr<const ast::ParsedFile>> parsed_;
  std::map<std::string, std::string> prefetched_;  // text read by resolve(), by path
  std::vector<std::unique_ptr<ast::ParsedFile>> extra_;
};

class Interpreter {
 public:
  Interpreter(const AnalysisOptions& options, ModuleLoader& loader);
  ~Interpreter();

  const AnalysisOptions& options;
  std::string main_file;  // the analysed file (config paths may be relative to its directory)
  // The config file (AnalysisOptions::config_files) a path the program opens refers to.
  [[nodiscard]] std::optional<std::filesystem::path> named_config(const std::string& path) const;
  // `yaml.safe_load(f)` / `json.load(f)` of a file object: the named config's contents as
  // constants, Unknown for any other file (configs.cpp).
  Value load_config(const Value& source, const Site& site, bool all_documents = false);
  // The text of a file object opened on a named config (`f.read()`), else nullopt; `shown`
  // gets the config's path.
  std::optional<std::string> config_text(const Value& file_obj, const Site& site,
                                         std::string* shown);
  ModuleLoader& loader;

  // ---- evaluation ----
  Value eval(const ast::Node* e, Frame& f);
  Flow exec_block(std::span<ast::Node*> body, Frame& f);
  Flow exec(const ast::Node* s, Frame& f);
  void run_module(ModuleObj* m);

  Value call(const Value& callee, CallArgs& args, const Site& site);
  Value call_function(FunctionObj* fn, CallArgs& args, const Site& site, const Value* self,
                      ClassObj* method_class);
  Value getattr(const Value& obj, std::string_view name, const Site& site, bool report = true);
  void setattr(const Value& obj, const std::string& name, Value v, const Site& site);
  bool hasattr(const Value& obj, std::string_view name);
  // Truthiness; `known` false when it depends on something the evaluator cannot know.
  bool truthy(const Value& v, bool* known);
  // Elements of an iterable, or nullopt when not statically iterable.
  std::optional<std::vector<Value>> iterate(const Value& v, const Site& site);
  Value binop(ast::BinOpKind op, const Value& a, const Value& b, const Site& site);
  Value compare(ast::CmpKind op, const Value& a, const Value& b, const Site& site);
  Value unary(ast::UnaryKind op, const Value& a, const Site& site);
  Value subscript(const Value& obj, const Value& index, const Site& site);
  Value instantiate(ClassObj* cls, const Value& cls_value, CallArgs& args, const Site& site);
  bool isinstance(const Value& v, const Value& cls);

  // ---- diagnostics ----
  void report(const Site& site, Severity sev, std::string code, std::string message,
              std::vector<RelatedLocation> related = {});
  // Whether the diagnostic is shown (false: suppressed, e.g. a data error under an unknown
  // condition); a repeat of one already reported counts as shown.
  bool report_at(const std::string& file, SourceRange range, Severity sev, std::string code,
                 std::string message, std::vector<RelatedLocation> related = {});
  std::vector<Diagnostic> diagnostics;
  // The exception types caught by the `try` statements being executed, innermost last ("*" for
  // a bare `except:`). An error that Python would raise inside one that catches it is not
  // reported: report() throws it as a PyRaise for the handler instead.
  std::vector<std::vector<std::string>> catching;
  // The Python exception an error code stands for ("AttributeError"), or "" for compile errors.
  static std::string_view python_exception(std::string_view code);
  // > 0 while a root nobody asked for is tried with its default arguments (analysis.cpp): an
  // error that says those arguments are wrong data (an AttributeError, a failed assert...) ends
  // the attempt as Python would, instead of being reported against code nobody runs that way.
  int speculative = 0;
  // > 0 inside an `if` whose condition is unknown (see exec_if_unknown).
  int uncertain_branches = 0;
  // The execution mode the program selects (`set_context(mode=...)`: 0 GRAPH_MODE, 1
  // PYNATIVE_MODE), if it does. Without one MindSpore 2.10 runs PYNATIVE_MODE, where construct
  // may use what GRAPH_MODE rejects.
  std::optional<int> selected_mode;
  // The program's parallel configuration (parallel_eval.cpp); any_stage: some Cell set a
  // pipeline_stage, so nodes record their stage.
  ParallelContext parallel;
  bool any_stage = false;
  // The root being compiled has inputs the analyser guessed (no --input, no call site).
  bool guessed_inputs = false;
  // True when the `try` statements being executed catch `type`.
  [[nodiscard]] bool caught(std::string_view type) const;
  // Appends the "(in `layer1.0`, an instance of Bottleneck)" notes collected while reporting.
  void finalize_diagnostics();
  // Discards diagnostics reported since `mark` (a trial compilation that is redone).
  [[nodiscard]] size_t diagnostics_mark() const { return diagnostics.size(); }
  void rollback_diagnostics(size_t mark);
  void step(const Site& site);  // counts one evaluation step against the budget
  // `while` loops and live list iterations running now (loops whose end is not given by data).
  int unbounded_loops = 0;
  // Reports an exhausted budget: an error for a loop or recursion that does not end, one
  // information for bounded work too large to follow (what it computes stays unknown).
  void report_budget(const BudgetExceeded& b);

  // ---- MindSpore and Python natives (mindspore.cpp, builtins.cpp) ----
  // `eval` of a (dotted) name: in `f`'s locals (when given), the module's globals, the
  // builtins; Unknown for any other expression.
  Value eval_name(const std::string& src, Frame* f, const Site& site);
  Value builtin(std::string_view name);  // Unknown-free lookup; Undefined -> VK::Unknown + flag
  bool has_builtin(std::string_view name) const;
  Value mindspore_module(
      std::string_view dotted);  // "mindspore.nn" ...; Unknown when not MindSpore
  Value numpy_module();
  Value numpy_function(std::string_view name);  // a numpy function not modelled explicitly
  // Marks graph tensors as consumed by an op that failed or has no rule (not "unused").
  void mark_consumed(const std::vector<Value>& values);
  Value math_module();
  Value namespace_attr(NamespaceObj* ns, std::string_view name, const Site& site, bool report,
                       bool from_import = false);
  Value native_class(NativeClass which);
  Value api_class(const ApiEntry* e);
  Value call_api_function(const ApiEntry* e, CallArgs& args, const Site& site,
                          InstanceObj* self_obj);
  void init_api_object(InstanceObj* inst, const ApiEntry* e, CallArgs& args, const Site& site);
  // Layer attributes shared by every layer constructed with the same ones (a deep model has
  // thousands of identical convolutions).
  std::shared_ptr<const std::vector<Attr>> shared_attrs(std::vector<Attr> attrs);
  std::shared_ptr<const std::vector<ParamInfo>> shared_params(std::vector<ParamInfo> params);
  // A str object for an attribute name, shared by every dict using it as a key (str is
  // immutable, and instance dicts repeat the same few names thousands of times).
  Value name_str(std::string_view s);
  // A registry object's constructor argument `name` as bound (given, or defaulted), or nullopt.
  std::optional<CellState::InitArg> api_init_arg(const CellState& cs, std::string_view name);
  std::optional<Value> api_internal_attr(InstanceObj* inst, std::string_view name,
                                         const Site& site);
  Value call_cell(InstanceObj* cell, const Value& cell_value, CallArgs& args, const Site& site);
  std::optional<Value> cell_method(InstanceObj* inst, const Value& self, std::string_view name);
  std::optional<Value> builtin_method(const Value& obj, std::string_view name);
  Value tensor_attr(const Value& t, std::string_view name, const Site& site);
  Value tensor_binop(std::string_view api, const Value& a, const Value& b, const Site& site);
  Value tensor_subscript(const Value& t, const Value& index, const Site& site);
  Value dtype_value(DType t);
  Value make_parameter(TensorType t, std::string name, bool requires_grad);
  // A layer's Parameter as the registry declared it (its initializer included).
  Value make_parameter(const ParamInfo& p);
  // Registers `child` under `name` in a Cell's children / params when appropriate.
  void cell_setattr(InstanceObj* inst, const std::string& name, const Value& v);
  // dict.__init__'s arguments (`dict(*args, **kwargs)`) added to a dict subclass's items.
  void add_dict_items(DictObj& items, CallArgs& args, const Site& site);
  // SequentialCell/CellList constructor arguments: Cells, a list of Cells or an OrderedDict.
  void init_container(InstanceObj* target, CallArgs& args, const Site& site);
  // __init__ of nn.WithLossCell / nn.TrainOneStepCell / nn.TrainOneStepWithLossScaleCell.
  void init_train_wrapper(InstanceObj* target, NativeClass which, CallArgs& args, const Site& site);
  // WithLossCell.construct(data, label).
  Value call_with_loss(InstanceObj* inst, CallArgs& args, const Site& site);

  // ---- construct compilation (trace.cpp) ----
  GraphBuilder* graph = nullptr;
  std::vector<TypeFact>* facts = nullptr;  // where to record expression types (LSP), or null
  void record_fact(TypeFact::Kind kind, const Site& site, const Value& v,
                   std::string_view name = {});
  std::vector<Reference>* refs = nullptr;  // where to record what names refer to, or null
  // Records what the name or attribute at `site` refers to, when it is an API or user code.
  void record_ref(const Site& site, const Value& v);
  // The range of a class's / function's name in its definition.
  SourceRange def_name_range(const ast::Node* def, const ModuleObj* module);
  // The source text of `range` in a file that was read, or "".
  std::string source_text(const std::string& file, SourceRange range);
  const LineIndex* line_index(const ast::ParsedFile* pf);
  std::vector<InstanceObj*> cell_stack;  // Cells whose construct is being compiled
  int cell_init_depth = 0;               // > 0 while a Cell's __init__ runs
  ValueRef graph_value(const Value& tensor, const Site& site);  // node output feeding an op
  Value add_op_node(const ApiEntry* e, InstanceObj* obj, std::vector<Value> inputs,
                    std::vector<TensorType> outputs, std::vector<Attr> attrs, double flops,
                    const Site& site, bool returns_tuple, IStr selected_op = {});
  // Records a call of construct whose error was reported (Graph::failures).
  void add_failed_call(const ApiEntry* e, InstanceObj* obj, const std::vector<Value>& inputs,
                       const Site& site, std::string code, std::string message, IStr selected_op);
  IStr current_scope() const;
  // Output values of an op: one tensor, a tuple, or a nested tuple per a tuple_structure attr.
  Value merge_branches(const Value& cond, const Value& a, const Value& b, const Site& site);
  Value pack_outputs(std::vector<Value> outs, const std::vector<Attr>& attrs, bool returns_tuple);
  std::string instance_note() const;  // " (in `layer1.0`, an instance of Bottleneck)"
  Value compile_construct(InstanceObj* cell, const Value& cell_value, CallArgs& args,
                          const Site& site);

  // Cells constructed outside any Cell's __init__, and Cell calls seen at module level.
  struct RootCandidate {
    Value cell;
    Site site;
  };
  std::vector<RootCandidate> module_level_cells;
  struct CallSite {
    Value cell;
    std::vector<Value> inputs;
    Site site;
  };
  std::vector<CallSite> call_sites;
  // ms.export(...) calls: the Values the program passed, and the call as the training plan
  // records it (AnalysisResult::exports is built from them once the roots are known).
  struct ExportSite {
    Value net;
    std::vector<Value> inputs;
    Value file_name;
    Value file_format;
    PlanCall call;
  };
  std::vector<ExportSite> export_calls;
  bool at_module_level = true;  // evaluating module top-level code (not a function body)
  int call_depth = 0;

  // Default values parsed from registry ParamSpec::default_src, cached.
  Value default_value(const ParamSpec& p);
  ArgValue to_arg(const Value& v, SourceRange range, bool explicit_arg);
  Value from_arg(const ArgValue& a);

  ModuleObj* builtins_module = nullptr;

  // The training idioms met (training_eval.h); created when the program first builds a
  // MindSpore training object, so that analyses without one pay nothing.
  std::unique_ptr<TrainingRecorder> training;

 private:
  size_t steps_ = 0;
  std::map<std::tuple<std::string, uint32_t, uint32_t, std::string, std::string>, size_t> seen_;
  std::vector<std::vector<std::string>> notes_;  // per diagnostic: the Cell instances that hit it
  std::unordered_map<const ParamSpec*, Value> default_cache_;
  std::unordered_map<std::string, Value> natives_;
  std::unordered_map<const ApiEntry*, Value> api_classes_;
  std::unordered_map<const ast::ParsedFile*, LineIndex> line_indexes_;  // for def_name_range
  std::unordered_set<const ast::Node*> ref_sites_;                      // nodes record_ref has seen
  std::unordered_map<size_t, std::vector<std::shared_ptr<const std::vector<Attr>>>> attr_sets_;
  std::unordered_map<size_t, std::vector<std::shared_ptr<const std::vector<ParamInfo>>>>
      param_sets_;
  std::unordered_map<std::string_view, Value> name_strs_;
  Value lookup_name(std::string_view name, Frame& f, const Site& site);
  void assign(const ast::Node* target, const Value& v, Frame& f);
  void store_name(std::string_view name, const Value& v, Frame& f);
  // `called_cell`, when given, receives the Cell instance the call applies (left as it is
  // otherwise): a reference that keeps it alive after the call.
  Value eval_call(const ast::Node* e, Frame& f, Value* called_cell = nullptr);
  Value eval_comprehension(const ast::Node* e, Frame& f);
  Value make_function(const ast::Node* def, Frame& f, std::string name);
  Value make_class(const ast::Node* def, Frame& f);
  Value decorate(Value def, const ast::Node* s, Frame& f, bool is_class);
  Flow exec_if_unknown(const ast::Node* s, Frame& f, const Value& cond);
  void havoc_loop(const ast::Node* loop, Frame& f);
  static bool loop_can_exit(std::span<ast::Node*> body);
  static bool body_calls(std::span<ast::Node*> body);
  void exec_import(const ast::Node* s, Frame& f);
  void exec_import_from(const ast::Node* s, Frame& f);
  // A graph-mode-unsupported diagnostic: `sev` where the program selects GRAPH_MODE, else a
  // warning that says so.
  void report_graph_mode(const Site& site, Severity sev, std::string message);
  void check_graph_mode(const ast::Node* s, Frame& f);
  void init_builtins();
  friend class Builtins;
};

// (name, cell) pairs of `root`'s Cell tree depth-first, as MindSpore's cells_and_names yields
// them (cells.cpp).
std::vector<std::pair<std::string, Value>> cells_and_names(const Value& root);

// ---- parallel strategies (parallel_eval.cpp) ----
// `prim.shard(in_strategy, out_strategy)` of operator object `self`.
Value shard_method(Interpreter& in, const Value& self);
// `cell.shard(in_strategy, out_strategy=None, parameter_plan=None)` of Cell `self` (not a
// primitive): MindSpore's Python checks at the call; returns None, as MindSpore's does.
Value cell_shard_method(Interpreter& in, const Value& self);
// A call of Cell `inst` that has a `cell.shard` strategy: the checks MindSpore's Shard pass makes
// of the call's inputs (docs/parallel.md §10, rules C3-C7), reported once per `.shard` call.
void check_cell_shard(Interpreter& in, InstanceObj* inst, const CallArgs& args);
// `cell.pipeline_stage = v`: MindSpore's setter checks, then the stage.
void set_pipeline_stage(Interpreter& in, InstanceObj* inst, const Value& v, const Site& site);
// The strategy and stage facts of node `n`, produced by `obj` (may be null).
void attach_parallel(Interpreter& in, Node& n, InstanceObj* obj);

}  // namespace graphcore::eval
