// Values of the static evaluator: Python scalars and containers, user functions/classes and
// instances, Cells, MindSpore namespaces and API objects, and abstract tensors.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ast.h"
#include "graphcore/checked.h"
#include "graphcore/registry.h"
#include "graphcore/shape.h"

namespace graphcore::eval {

struct Object;
using Ref = std::shared_ptr<Object>;

enum class VK : uint8_t { None, Bool, Int, Float, Obj, Unknown };

// A small value: scalars inline, everything else behind a shared object.
struct Value {
  VK k = VK::None;
  union {
    bool b;
    int64_t i;
    double f;
  };
  Ref o;

  Value() : i(0) {}
  static Value none() { return Value(); }
  static Value boolean(bool v) {
    Value x;
    x.k = VK::Bool;
    x.b = v;
    return x;
  }
  static Value integer(int64_t v) {
    Value x;
    x.k = VK::Int;
    x.i = v;
    return x;
  }
  static Value real(double v) {
    Value x;
    x.k = VK::Float;
    x.f = v;
    return x;
  }
  static Value obj(Ref r) {
    Value x;
    x.k = VK::Obj;
    x.o = std::move(r);
    return x;
  }
  static Value unknown() {
    Value x;
    x.k = VK::Unknown;
    return x;
  }

  [[nodiscard]] bool is_none() const { return k == VK::None; }
  [[nodiscard]] bool is_unknown() const { return k == VK::Unknown; }
  [[nodiscard]] bool is_int() const { return k == VK::Int || k == VK::Bool; }
  [[nodiscard]] bool is_number() const { return k == VK::Int || k == VK::Bool || k == VK::Float; }
  [[nodiscard]] int64_t as_int() const { return k == VK::Bool ? (b ? 1 : 0) : i; }
  [[nodiscard]] double as_float() const {
    return k == VK::Float ? f : static_cast<double>(as_int());
  }
  template <class T>
  [[nodiscard]] T* as() const;  // the object as T, or nullptr
};

enum class OK : uint8_t {
  Str,
  Tuple,
  List,
  Dict,
  Set,
  Range,
  Slice,
  Ellipsis,
  Function,
  BoundMethod,
  Builtin,
  Class,
  Instance,
  Module,
  Namespace,
  ApiFunction,
  Tensor,
  DType,
  Super,
  Property,
  Opaque,
  SymInt,
};

// A link of the list of objects an ObjectHeap tracks (unlinked: both null).
struct HeapLink {
  HeapLink* prev = nullptr;
  HeapLink* next = nullptr;
};

struct Object : HeapLink {
  explicit Object(OK k);  // joins this thread's ObjectHeap, if one is open
  virtual ~Object();
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;
  Object(Object&&) = delete;
  Object& operator=(Object&&) = delete;
  OK kind;
};

// The objects one evaluation creates. Python code makes reference cycles everywhere (a method
// of a class in the class's namespace whose module holds the class, a closure in the frame it
// closes over, `self.parent = parent`) and shared_ptr never frees a cycle: when the heap
// closes, after the evaluation's own owners (Interpreter, ModuleLoader) are gone, every object
// still alive is garbage; their references are dropped all at once, which frees them. One heap
// per thread at a time; heaps nest (the inner one is current until it closes).
class ObjectHeap {
 public:
  ObjectHeap();
  ~ObjectHeap();
  ObjectHeap(const ObjectHeap&) = delete;
  ObjectHeap& operator=(const ObjectHeap&) = delete;
  ObjectHeap(ObjectHeap&&) = delete;
  ObjectHeap& operator=(ObjectHeap&&) = delete;
  [[nodiscard]] static ObjectHeap* current();
  void adopt(Object* o);

 private:
  // Frees the objects still alive, all of them garbage (in cycles) once the evaluation's owners
  // are gone; returns how many there were.
  size_t sweep() noexcept;
  HeapLink head_;
  ObjectHeap* outer_;
};
// Objects alive in this process, on every thread (tests: none survives an analysis).
int64_t objects_alive();

template <class T>
T* Value::as() const {
  if (k != VK::Obj || !o || o->kind != T::kKind) return nullptr;
  return static_cast<T*>(o.get());
}

struct StrObj : Object {
  static constexpr OK kKind = OK::Str;
  explicit StrObj(std::string v) : Object(kKind), s(std::move(v)) {}
  std::string s;
};

struct TupleObj : Object {
  static constexpr OK kKind = OK::Tuple;
  explicit TupleObj(std::vector<Value> v) : Object(kKind), items(std::move(v)) {}
  std::vector<Value> items;
  // Made by ms.ParameterTuple: a Cell attribute holding it registers each Parameter (as
  // Cell._set_attr_for_param_or_param_tuple does).
  bool parameter_tuple = false;
};

struct ListObj : Object {
  static constexpr OK kKind = OK::List;
  explicit ListObj(std::vector<Value> v) : Object(kKind), items(std::move(v)) {}
  std::vector<Value> items;
};

struct SetObj : Object {
  static constexpr OK kKind = OK::Set;
  explicit SetObj(std::vector<Value> v) : Object(kKind), items(std::move(v)) {}
  std::vector<Value> items;
};

// Insertion-ordered dict with hashable keys (str, int, bool, None, tuples of those, objects by
// identity).
struct DictObj : Object {
  static constexpr OK kKind = OK::Dict;
  DictObj() : Object(kKind) {}
  std::vector<std::pair<Value, Value>> entries;
  // Keys beyond `entries` may exist: the dict came (in part) from something the evaluator does
  // not know (`**kwargs` of an unknown caller, `dict.update(unknown)`). A missing key then reads
  // as Unknown, never a KeyError, and the dict cannot be iterated statically.
  bool open = false;
  // The `**kwargs` of a root tried with its defaults: empty here, maybe not for real callers
  // (see CallArgs::maybe_more).
  bool maybe_more = false;
  Value* find(const Value& key);
  Value* find_str(std::string_view key);
  void set(const Value& key, Value v);
  bool erase(const Value& key);
  // Moves every key and value to `out` and empties the dict (ObjectHeap::sweep).
  void release(std::vector<Value>& out);

 private:
  // Index of string keys, built once the dict outgrows a linear scan (attribute dicts and module
  // globals can hold many thousands; most instance dicts hold a handful). Keys view the strings
  // of the key objects, which the entries keep alive.
  static constexpr size_t kIndexFrom = 12;
  std::unordered_map<std::string_view, size_t> str_index_;
  void reindex();
};

struct RangeObj : Object {
  static constexpr OK kKind = OK::Range;
  RangeObj(int64_t a, int64_t b, int64_t s) : Object(kKind), start(a), stop(b), step(s) {}
  int64_t start, stop, step;
  [[nodiscard]] int64_t size() const;
};

struct SliceObj : Object {
  static constexpr OK kKind = OK::Slice;
  SliceObj(Value a, Value b, Value c)
      : Object(kKind), start(std::move(a)), stop(std::move(b)), step(std::move(c)) {}
  Value start, stop, step;
};

// Python's slice.indices(n) of `s` and the number of items it selects (checked.h), or nullopt
// when a part is neither an int nor None (unknown, symbolic) or the step is 0 (a ValueError).
std::optional<SliceIndices> slice_indices(const SliceObj& s, int64_t n);

struct EllipsisObj : Object {
  static constexpr OK kKind = OK::Ellipsis;
  EllipsisObj() : Object(kKind) {}
};

struct ModuleObj;
struct ClassObj;
struct Frame;

struct FunctionObj : Object {
  static constexpr OK kKind = OK::Function;
  FunctionObj() : Object(kKind) {}
  std::string name;
  const ast::Node* def = nullptr;  // FunctionDef or Lambda
  std::vector<Value> defaults;     // aligned with def's params (Unknown/None when absent)
  std::vector<bool> has_default;
  std::shared_ptr<Frame> closure;  // enclosing function frame (nullptr at module level)
  ModuleObj* module = nullptr;
  bool is_static = false;
  bool is_classmethod = false;
  // The class whose body defined it (Python's `__class__` cell): `super()` works in it even
  // when a decorator's wrapper calls it as a plain function.
  ClassObj* owner = nullptr;
  std::string qualname;  // "ResNet.__init__"
  // Its body yields (outside nested definitions): calling it makes a generator, and the body
  // runs only as that is iterated.
  bool is_generator = false;
};

struct BoundMethodObj : Object {
  static constexpr OK kKind = OK::BoundMethod;
  BoundMethodObj(Value s, Value f) : Object(kKind), self(std::move(s)), func(std::move(f)) {}
  Value self;
  Value func;  // FunctionObj or BuiltinObj
};

class Interpreter;
struct CallArgs;
struct Site;

using BuiltinFn = std::function<Value(Interpreter&, CallArgs&, const Site&)>;

struct BuiltinObj : Object {
  static constexpr OK kKind = OK::Builtin;
  BuiltinObj(std::string n, BuiltinFn f, Value bound_self = {})
      : Object(kKind), name(std::move(n)), fn(std::move(f)), self(std::move(bound_self)) {}
  std::string name;
  BuiltinFn fn;
  Value self;  // for methods of builtin objects (list.append, Cell.cells_and_names)
  // A registry class's constructor (`super().__init__` of an nn.Dropout subclass): its
  // signature, for inspect.signature.
  const ApiEntry* init_of = nullptr;
};

// Native classes the interpreter implements itself.
enum class NativeClass : uint8_t {
  None,
  Object,
  Cell,
  SequentialCell,
  CellList,
  CellDict,
  Exception,
  Parameter,
  Tensor,
  Int,
  Float,
  Str,
  Bool,
  List,
  Tuple,
  Dict,
  Set,
  Type,
  Initializer,
  // MindSpore's training wrappers (mindspore/nn/wrap/): construct modelled natively.
  WithLossCell,
  TrainOneStepCell,
  TrainOneStepWithLossScaleCell,
};

// nn.WithLossCell, nn.TrainOneStepCell and nn.TrainOneStepWithLossScaleCell.
inline bool is_train_wrapper(NativeClass c) {
  return c == NativeClass::WithLossCell || c == NativeClass::TrainOneStepCell ||
         c == NativeClass::TrainOneStepWithLossScaleCell;
}

struct ClassObj : Object {
  static constexpr OK kKind = OK::Class;
  ClassObj() : Object(kKind) {}
  std::string name;
  const ast::Node* def = nullptr;  // user ClassDef, or nullptr
  std::vector<Value> bases;
  std::vector<ClassObj*> mro;              // self first
  DictObj attrs;                           // class namespace
  NativeClass native = NativeClass::None;  // for native classes
  const ApiEntry* api = nullptr;           // registry class (nn.Conv2d, ops.Add)
  ModuleObj* module = nullptr;
  bool is_cell = false;  // derives from nn.Cell (directly, through user classes or registry)
  // Instances may have attributes the evaluator cannot see: a base class it does not know (a
  // third-party or unresolved class), a `__getattr__`/`__getattribute__`, a dict subclass.
  // A missing attribute of such an instance is Unknown, never an error.
  bool open = false;
  // One of its bases is not a class the evaluator knows: it may be anything, a Cell included.
  bool unknown_base = false;
  // An enum.Enum subclass: its class attributes are members (`Color.RED.value`), not the plain
  // values written in the body.
  bool is_enum = false;
  [[nodiscard]] const Value* lookup(std::string_view name) const;  // through the MRO
  [[nodiscard]] bool derives_from(const ClassObj* other) const;
  [[nodiscard]] NativeClass native_base() const;   // first native class in the MRO
  [[nodiscard]] const ApiEntry* api_base() const;  // first registry class in the MRO
};

struct TensorObj;
struct CellShard;  // `cell.shard(...)`'s strategies (parallel_eval.cpp)

// Cell-specific state of an instance.
struct CellState {
  std::vector<std::pair<std::string, Value>> children;  // registered sub-Cells in order
  std::vector<std::pair<std::string, Value>> params;    // own Parameters (relative names)
  std::vector<Value> items;                             // SequentialCell / CellList contents
  // Some contents are not known (`SequentialCell(*layers)` of a list a loop over run-time data
  // filled): what the container computes is unknown, never a pass-through of `items`.
  bool items_unknown = false;
  // Cell.__init__(auto_prefix=False) (MindSpore's training wrappers): the names of the
  // sub-Cells' Parameters do not include the attribute that holds them ("conv1.weight", not
  // "_backbone.conv1.weight"), as in their checkpoints.
  bool no_prefix = false;
  std::vector<std::string> item_names;  // SequentialCell from an OrderedDict
  // Registry-backed objects (nn.Conv2d instances, ops.Add instances).
  const ApiEntry* api = nullptr;
  // Constructor arguments as bound; the registry reads them as ArgValues, converted on demand
  // (keeping only values keeps a layer instance small). Arguments left to their defaults are
  // not stored: Interpreter::api_init_arg finds them through `api`. Names view the registry's
  // parameter names or interned keyword names.
  struct InitArg {
    std::string_view name;
    Value value;
    SourceRange range;
    bool explicit_arg = false;
  };
  std::vector<InitArg> init_args;
  std::shared_ptr<const std::vector<Attr>> attrs;  // shared with the nodes it produces
  // The Parameters the registry declared (shared by layers declaring the same ones); never null.
  std::shared_ptr<const std::vector<ParamInfo>> api_params = no_params();
  static const std::shared_ptr<const std::vector<ParamInfo>>& no_params() {
    static const auto kNone = std::make_shared<const std::vector<ParamInfo>>();
    return kNone;
  }
  bool init_failed = false;
  // nn.Cell.training: False for a new Cell (MindSpore 2.10), set by set_train(mode=True) on the
  // Cell and its sub-Cells.
  bool training = false;
  // Where it was constructed (the call in the parent's __init__).
  IStr file;
  SourceRange site;
  // Where a construct first called it (`self.layer1(x)`; recorded with record_facts).
  IStr call_file;
  SourceRange call_site;
  IStr path;  // instance path within the analysed root, e.g. "layer1.0.conv1"
  // The outermost user function that returned this Cell (`resnet50()`), if any: a call site of
  // an instance tells the inputs of another only when the same factory built both.
  const FunctionObj* factory = nullptr;
  uint32_t walk_mark = 0;  // last tree walk that visited this Cell (see analysis.cpp)
  // `.shard(...)` of an operator object (docs/parallel.md): copied onto the nodes it produces.
  std::shared_ptr<const NodeParallel> shard;
  // `cell.shard(...)` / `mindspore.shard(cell, ...)` of a Cell: its strategies, checked against
  // the inputs of the Cell's calls (check_cell_shard).
  std::shared_ptr<CellShard> cell_shard;
  // `cell.pipeline_stage = k` (-1: never set), and where.
  int64_t pipeline_stage = -1;
  IStr stage_file;
  SourceRange stage_range;
  uint32_t calls = 0;  // applications in the graph `calls_graph` (node ids layer#2...)
  uint32_t calls_graph = 0;
};

struct InstanceObj : Object {
  static constexpr OK kKind = OK::Instance;
  explicit InstanceObj(ClassObj* c, Value cls_ref)
      : Object(kKind), cls(c), cls_value(std::move(cls_ref)) {}
  ClassObj* cls;
  Value cls_value;  // keeps the class alive
  DictObj attrs;
  std::unique_ptr<CellState> cell;  // non-null for Cells and registry objects
  // Attributes were set where the evaluator cannot see their names (`setattr(self, name, v)`
  // with an unknown name, `self.__dict__.update(...)`): a missing attribute is Unknown.
  bool open = false;
  // An instance of a dict subclass (mindyolo's Config, easydict): its items, which
  // `self[k] = v`, `dict.__init__`, `d.get(k)`, `k in d` and iteration use.
  std::shared_ptr<DictObj> mapping;
  [[nodiscard]] bool is_cell() const { return cls->is_cell; }
  // Attributes may exist that the evaluator cannot see (here or through the class).
  [[nodiscard]] bool is_open() const { return open || cls->open; }
};

struct ModuleObj : Object {
  static constexpr OK kKind = OK::Module;
  ModuleObj() : Object(kKind) {}
  std::string name;  // dotted
  std::string file;  // path, empty for synthetic modules
  IStr file_id;      // `file`, interned (what graph nodes store)
  DictObj globals;
  const ast::ParsedFile* parsed = nullptr;
  bool loading = false;
  bool opaque = false;  // an unresolved third-party module: every attribute is Unknown
  // Names beyond its globals may exist: a module-level `__getattr__` (PEP 562), a lazy module
  // installed in `sys.modules`, `from <unknown> import *`. A missing name is Unknown.
  bool open = false;
};

// A MindSpore namespace (mindspore, mindspore.nn, mindspore.ops, ...), resolved lazily.
struct NamespaceObj : Object {
  static constexpr OK kKind = OK::Namespace;
  NamespaceObj(std::string n, std::string p, bool s)
      : Object(kKind), name(std::move(n)), prefix(std::move(p)), strict(s) {}
  std::string name;    // "mindspore.nn"
  std::string prefix;  // registry prefix: "nn.", "ops.", "" for the root
  bool strict;         // unknown attributes are errors (nn, ops)
  DictObj cache;
};

struct ApiFunctionObj : Object {
  static constexpr OK kKind = OK::ApiFunction;
  explicit ApiFunctionObj(const ApiEntry* e) : Object(kKind), entry(e) {}
  const ApiEntry* entry;
};

// An abstract tensor: type, plus where it comes from in the graph being compiled.
struct TensorObj : Object {
  static constexpr OK kKind = OK::Tensor;
  explicit TensorObj(TensorType t) : Object(kKind), type(std::move(t)) {}
  TensorType type;
  uint32_t graph_id = 0;  // 0: not produced inside a graph (constant/Parameter from __init__)
  ValueRef ref;
  bool is_parameter = false;
  bool requires_grad = true;
  std::string param_name;  // relative name given at creation (Parameter(..., name=...))
  // The Parameter's name in its Cell tree ("norm1.gamma"), as MindSpore renames a Parameter when
  // it is bound (cell_setattr): its attribute's name when its own was generated, then the path
  // under every Cell attribute its Cell is bound to. Empty: param_name. `.name` reads it.
  std::string param_path;
  // The name MindSpore gives this Parameter in a Cell tree where it sits at `attribute_path`
  // ("enc.cls_token"): param_path when it was bound, else a name given at creation (a root
  // Cell's own Parameter(..., name='cls') keeps 'cls'), else the attribute path. What the graph's
  // Parameter nodes, the report's parameter list and checkpoint matching all use.
  [[nodiscard]] std::string mindspore_name(const std::string& attribute_path) const {
    if (!param_path.empty()) return param_path;
    if (!param_name.empty() && param_name != "Parameter") return param_name;
    return attribute_path;
  }
  bool is_numpy = false;  // a numpy ndarray constant
  // np.load(path) of a .npy: the file, as found (absolute). A NumpySlicesDataset over arrays
  // loaded so is read from these files by the runtime. Any operation on the array drops it.
  std::shared_ptr<const std::string> file;
  // A constant whose every element is known to equal this value (Tensor(0.125), np.ones(...),
  // np.full(s, v)): recorded as the `value` attribute of its Constant node for the runtime.
  std::optional<double> fill;
  // Every element, row-major, of a small constant computed in Python (numpy code in __init__:
  // position tables, masks; see npvalues.h): at most npv::kMaxElements, null when unknown or
  // uniform (then `fill`). Immutable and shared: Tensor(arr) shares it, a slice assignment
  // replaces it. Recorded on the Constant node for the runtime (Node::constant_values).
  std::shared_ptr<const std::vector<double>> values;
  // A Parameter's initializer as the program gives it (a layer's `weight_init`, its default, the
  // `initializer(...)` a Parameter wraps); also set on the tensor `initializer(...)` returns.
  std::shared_ptr<const ParamInit> init;
  bool poisoned = false;   // produced by a failed op: suppress follow-on diagnostics
  uint32_t walk_mark = 0;  // last parameter walk that counted it
};

struct DTypeObj : Object {
  static constexpr OK kKind = OK::DType;
  explicit DTypeObj(DType t) : Object(kKind), dtype(t) {}
  DType dtype;
};

struct SuperObj : Object {
  static constexpr OK kKind = OK::Super;
  SuperObj(ClassObj* after, Value s) : Object(kKind), start_after(after), self(std::move(s)) {}
  ClassObj* start_after;
  Value self;
};

struct PropertyObj : Object {
  static constexpr OK kKind = OK::Property;
  explicit PropertyObj(Value g, Value s = {})
      : Object(kKind), getter(std::move(g)), setter(std::move(s)) {}
  Value getter;
  Value setter;  // `@name.setter`: what `obj.name = v` calls
};

// Something the evaluator tracks by name only: initializers, dataset objects, optimisers...
struct OpaqueObj : Object {
  static constexpr OK kKind = OK::Opaque;
  explicit OpaqueObj(std::string t) : Object(kKind), type_name(std::move(t)) {}
  std::string type_name;  // "Normal", "mindspore.dataset.MnistDataset"
  std::vector<Value> args;
  DictObj attrs;
  // An initializer object (init.Normal(0.02)) whose arguments are known.
  std::shared_ptr<const InitSpec> initializer;
};

// A Python int known only symbolically, such as a batch size read from `x.shape`.
struct SymIntObj : Object {
  static constexpr OK kKind = OK::SymInt;
  explicit SymIntObj(Dim d) : Object(kKind), dim(d) {}
  Dim dim;
};

// ---- helpers ----
// Python 3.11 itself (pynames.cpp): a builtin name, a public method of a builtin type.
bool python_builtin_exists(std::string_view name);
bool python_method_exists(OK kind, std::string_view name);
// The memory budget (AnalysisOptions::max_value_bytes): bytes of values built so far by the
// evaluation running on this thread. Strings count their length, list/tuple/dict items
// kItemBytes each; Interpreter::step compares the total with the budget.
inline constexpr size_t kItemBytes = 32;
void charge_value_bytes(size_t bytes);
size_t value_bytes_charged();
void reset_value_bytes();
Value make_str(std::string s);
Value make_tuple(std::vector<Value> v);
Value make_list(std::vector<Value> v);
Value make_tensor(TensorType t);
std::string type_name(const Value& v);
std::string repr(const Value& v, int depth = 0);
bool values_equal(const Value& a, const Value& b);  // Python ==, for hashable/simple values
const std::string* str_of(const Value& v);          // the string if v is a str
// The elements if `v` is a tuple or list.
const std::vector<Value>* seq_items(const Value& v);

}  // namespace graphcore::eval
