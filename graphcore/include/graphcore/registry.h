// The MindSpore API registry: one entry per API drives signatures (with MindSpore's real
// defaults), the Parameters a layer creates, the output shape/dtype rule and FLOPs. The
// interpreter, the LSP features (hover, completion, signature help) and later passes (cost,
// kernels, export) all read the same entries.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "graphcore/graph.h"
#include "graphcore/initializer.h"
#include "graphcore/shape.h"
#include "graphcore/source.h"
#include "graphcore/version.h"

namespace graphcore {

enum class ApiKind : uint8_t {
  CellClass,       // nn.Conv2d: constructed in __init__, applied in construct
  PrimitiveClass,  // ops.Add / P.Conv2D: constructed (attrs), then called with tensors
  Function,        // ops.relu, ops.matmul, mindspore.numpy...: called with tensors
  TensorMethod,    // Tensor.reshape: first call param is the tensor itself
};

enum class ParamKind : uint8_t { PositionalOrKeyword, KeywordOnly, VarPositional, VarKeyword };

struct ParamSpec {
  std::string name;
  // Python source of the default value as MindSpore's signature shows it ("'same'", "1",
  // "None", "(1, 1)", "mindspore.float32"). Empty: required.
  std::string default_src;
  ParamKind kind = ParamKind::PositionalOrKeyword;
  VersionRange versions;   // versions in which this parameter exists
  std::string deprecated;  // non-empty: warning text when the argument is passed explicitly
  [[nodiscard]] bool required() const {
    return default_src.empty() && kind != ParamKind::VarPositional && kind != ParamKind::VarKeyword;
  }
};

// A Python value as the registry sees it: a summary of the interpreter's value, protocol-free.
struct ArgValue {
  enum class Kind : uint8_t {
    Missing,  // not passed and no default
    None,
    Bool,
    Int,
    Float,
    Str,
    Sequence,  // tuple or list
    Tensor,    // abstract tensor (or Parameter)
    DType,     // ms.float32 ...
    Cell,      // a Cell object (e.g. Dense's activation=nn.ReLU())
    Other,     // initializer objects, callables, dicts...
    Unknown,   // a value the static evaluator could not determine
    SymInt,    // a Python int only known symbolically (e.g. `b` from `b, c, h, w = x.shape`)
  };
  Kind kind = Kind::Missing;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;                                // Str value; for Cell/Other the type name
  std::vector<ArgValue> items;                  // Sequence
  TensorType tensor;                            // Tensor
  DType dtype = DType::Unknown;                 // DType
  Dim dim;                                      // SymInt (also set for Int: the known value)
  std::shared_ptr<const InitSpec> initializer;  // Other: an initializer object, arguments known
  SourceRange range;          // where the argument was written (or the call if defaulted)
  bool explicit_arg = false;  // written by the user rather than defaulted

  [[nodiscard]] bool is_none() const { return kind == Kind::None; }
  [[nodiscard]] bool is_missing() const { return kind == Kind::Missing; }
  [[nodiscard]] bool is_unknown() const { return kind == Kind::Unknown; }
  [[nodiscard]] bool is_tensor() const { return kind == Kind::Tensor; }
  [[nodiscard]] std::optional<int64_t> as_int() const;   // Int or Bool
  [[nodiscard]] std::optional<double> as_float() const;  // Int, Bool or Float
  [[nodiscard]] std::optional<bool> as_bool() const;
  [[nodiscard]] std::optional<std::string> as_str() const;
  // The initializer the value stands for where MindSpore takes one (`weight_init=`, the first
  // argument of `initializer()`): an initializer object, a name ('normal', 'zeros'), a number
  // (a constant); nullopt for anything else (None, a tensor, an unknown value).
  [[nodiscard]] std::optional<InitSpec> as_initializer() const;
  // The value as a node attribute: Bool, Int, Float, Str, or a sequence of ints; nullopt for
  // anything else (tensors, None, unknown values, dtypes, objects).
  [[nodiscard]] std::optional<AttrValue> as_attr() const;
  // An int expanded to `n` copies, or a sequence of ints of length `n` (any length if n == 0).
  [[nodiscard]] std::optional<std::vector<int64_t>> as_ints(size_t n = 0) const;
  // Like as_ints, but symbolic ints (SymInt) and unknown ints (Unknown) are kept as Dims, so
  // that `x.reshape(b, -1)` with a symbolic batch `b` still has a shape. -1 stays known(-1)
  // is NOT representable as a Dim: use reshape_spec for reshape-like arguments.
  [[nodiscard]] std::optional<std::vector<Dim>> as_dims(size_t n = 0) const;
  [[nodiscard]] std::string repr() const;  // Python-like rendering for messages
};

class ContextBase {
 public:
  virtual ~ContextBase() = default;
  // The bound argument for parameter `name` (defaults applied); Missing if absent.
  [[nodiscard]] virtual const ArgValue& arg(std::string_view name) const = 0;
  [[nodiscard]] virtual Version version() const = 0;
  [[nodiscard]] virtual std::string_view target() const = 0;  // "cpu", "ascend910b", ...
  // Reports a problem located at argument `at_arg` (or at the call when empty). An error makes
  // the construction/call fail; `code` is one of the documented diagnostic codes.
  virtual void error(std::string_view code, std::string message, std::string_view at_arg = {}) = 0;
  virtual void warning(std::string_view code, std::string message,
                       std::string_view at_arg = {}) = 0;
  [[nodiscard]] virtual bool failed() const = 0;
  // Offers a quick fix for the problem just reported: "Change `param` to `value`", rewriting the
  // constructor argument `param` where the user wrote it (`value` is Python source). Nothing is
  // offered when the argument was defaulted (there is no text to change).
  virtual void suggest_init_value(std::string_view param, std::string value) = 0;
};

// Constructing an API object: `nn.Conv2d(1, 6, 5)`, `ops.ReduceMean(keep_dims=True)`.
class InitContext : public ContextBase {
 public:
  // A Parameter owned by the object, named relative to it ("weight", "bias", "moving_mean").
  virtual void add_parameter(std::string name, Shape shape, DType dtype, bool trainable) = 0;
  // An attribute shown on every node this object produces and readable at call time.
  virtual void set_attr(std::string name, AttrValue value) = 0;
};

// Applying an API: a Cell's construct, a primitive's __call__, a function or a Tensor method.
class CallContext : public ContextBase {
 public:
  // For CellClass/PrimitiveClass: the constructor's bound arguments; Missing otherwise.
  [[nodiscard]] virtual const ArgValue& init_arg(std::string_view name) const = 0;
  // Attributes set at construction (CellClass/PrimitiveClass), or nullptr.
  [[nodiscard]] virtual const AttrValue* init_attr(std::string_view name) const = 0;
  // Parameters of the object (CellClass), by relative name, or nullptr.
  [[nodiscard]] virtual const ParamInfo* param(std::string_view name) const = 0;
  // Variadic arguments (*args) passed for a VarPositional call parameter.
  [[nodiscard]] virtual const std::vector<ArgValue>& varargs() const = 0;
  virtual void add_output(TensorType t) = 0;
  virtual void set_attr(std::string name, AttrValue value) = 0;  // node attribute
  virtual void set_flops(double flops) = 0;
  // The operator this call compiles to, for an API that maps onto one of several by its
  // arguments (ops.interpolate: one per mode and rank, as MindSpore does): the entry's `op` or
  // one of its `variants`.
  virtual void set_op(std::string_view op) = 0;
};

using InitFn = std::function<void(InitContext&)>;
using InferFn = std::function<void(CallContext&)>;

struct ApiEntry {
  std::string name;  // canonical dotted name below `mindspore`: "nn.Conv2d", "ops.Add", "ops.relu",
                     // "Tensor.reshape"
  ApiKind kind = ApiKind::Function;
  std::string op;  // graph operator name ("Conv2D", "MatMul"); defaults to the last name component
  std::vector<std::string> variants;   // the other operators `infer` may select (set_op)
  std::vector<ParamSpec> init_params;  // constructor (CellClass, PrimitiveClass)
  std::vector<ParamSpec> call_params;  // construct / __call__ / function / method (self first)
  VersionRange versions;
  InitFn init;                 // validates constructor args, creates Parameters, sets attrs
  InferFn infer;               // output shapes/dtypes and FLOPs from inputs (+ init args)
  bool returns_tuple = false;  // outputs are returned as a Python tuple even if there is one
  std::string summary;         // one line for hover/completion
  std::string replacement;     // for entries kept only to explain a mistake: the API to use instead
  // CellClass: constructor arguments that, when they are tensors, are inputs of the node after
  // the call's own (a loss's class weights: nn.CrossEntropyLoss(weight=w)), so that later stages
  // read their values from the graph.
  std::vector<std::string> init_tensor_inputs;
};

class Registry {
 public:
  static const Registry& instance();

  // Entry named `name` ("nn.Conv2d") valid at `version`; nullptr if none.
  [[nodiscard]] const ApiEntry* find(std::string_view name, const Version& version) const;
  // Any entry with this name regardless of version (for "removed in"/"added in" messages).
  [[nodiscard]] std::vector<const ApiEntry*> find_all(std::string_view name) const;
  // Names below a namespace prefix ("nn.", "ops.", "Tensor.") valid at `version`.
  [[nodiscard]] std::vector<const ApiEntry*> list(std::string_view prefix,
                                                  const Version& version) const;
  // Closest registered names for a misspelt one ("nn.Dence" -> "nn.Dense").
  [[nodiscard]] std::vector<std::string> suggest(std::string_view name,
                                                 const Version& version) const;
  [[nodiscard]] const std::vector<std::unique_ptr<ApiEntry>>& entries() const { return entries_; }

  void add(ApiEntry entry);

 private:
  Registry();
  std::vector<std::unique_ptr<ApiEntry>> entries_;
  std::unordered_map<std::string, std::vector<const ApiEntry*>> by_name_;
};

// ---- Names, for editors (completion, signature help, hovers) ----
// The registry name of a Python dotted name below `mindspore`: "mindspore.nn.Conv2d" ->
// "nn.Conv2d", "mindspore.ops.operations.Add" -> "ops.Add", "mindspore.Tensor.reshape" ->
// "Tensor.reshape". nullopt when `dotted` is not below `mindspore`.
std::optional<std::string> api_name_of(std::string_view dotted);
// The namespace a MindSpore module exposes: "mindspore.nn" -> "nn", "mindspore.ops.operations"
// -> "ops", "mindspore" -> "" (the top level); nullopt when it is not one Cellscope knows.
std::optional<std::string> api_namespace_of(std::string_view module);
// Every public name of `ns` ("nn" or "ops") in MindSpore `version`, modelled or not; sorted.
std::vector<std::string> mindspore_public_names(std::string_view ns, const Version& version);
// A Python-style signature of the constructor (`init`, for CellClass / PrimitiveClass) or of the
// call, with the parameters of `version`: "nn.Dense(in_channels, out_channels, ...,
// has_bias=True)". `param_spans` (optional) receives each parameter's [begin, end) in the text.
std::string api_signature(const ApiEntry& e, const Version& version, bool init,
                          std::vector<std::pair<size_t, size_t>>* param_spans = nullptr);
// The parameters api_signature shows, in order.
std::vector<const ParamSpec*> api_signature_params(const ApiEntry& e, const Version& version,
                                                   bool init);

// MindSpore's initializer for Parameter `rel` ("weight", "bias", "gamma", "moving_variance",
// "out_proj.weight") of layer `api` when the layer's `<rel>_init` argument is None or absent
// (checked against MindSpore 2.10's nn layer sources). `weight` is the shape of the layer's
// weight when known (a bias's fan-in), `hidden_size` the RNN family's. nullopt: not known.
std::optional<InitSpec> default_initializer(std::string_view api, std::string_view rel,
                                            const Shape* weight,
                                            std::optional<int64_t> hidden_size);
// The weight declared beside Parameter `param` ("layer1.conv.bias" -> "layer1.conv.weight",
// "bias" -> "weight"): the fan-in a bias's default initializer needs.
std::string weight_beside(std::string_view param);
// The constructor argument that initialises Parameter `rel` of a layer ("weight" ->
// "weight_init", "moving_variance" -> "moving_var_init", "embedding_table" -> itself).
std::string init_argument_of(std::string_view rel);

// Registration functions, one per family file under graphcore/src/registry/.
void register_nn_layers(Registry& r);
void register_ops(Registry& r);
void register_tensor_methods(Registry& r);
void register_losses(Registry& r);

}  // namespace graphcore
