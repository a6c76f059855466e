// The semantic graph of a Cell's `construct`, and the per-Cell report built around it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "graphcore/initializer.h"
#include "graphcore/istr.h"
#include "graphcore/parallel.h"
#include "graphcore/shape.h"
#include "graphcore/source.h"

namespace graphcore {

using AttrValue =
    std::variant<std::monostate, bool, int64_t, double, std::string, std::vector<int64_t>>;

std::string attr_to_string(const AttrValue& v);

struct Attr {
  std::string name;
  AttrValue value;
};

enum class NodeKind : uint8_t {
  Input,      // a graph input (an argument of the root construct)
  Parameter,  // a Parameter read directly in construct (weights owned by layer nodes are listed in
              // `params`)
  Constant,   // a constant tensor built in construct or captured from __init__
  Op,         // an operator / layer application
};

// A tensor flowing along an edge: output `output` of node `node` (an index into Graph::nodes).
struct ValueRef {
  uint32_t node = 0;
  uint32_t output = 0;
  friend bool operator==(const ValueRef&, const ValueRef&) = default;
};

struct ParamInfo {
  std::string name;  // full path, e.g. "layer1.0.conv1.weight"
  Shape shape;
  DType dtype = DType::Float32;
  bool trainable = true;
  // How the program initialises it, recorded when it was created; nullptr when that is not known
  // (a Parameter wrapping a tensor of computed or loaded values).
  std::shared_ptr<const ParamInit> init = nullptr;
};

// `op`, `api`, `scope` and `file` repeat across nodes and are interned (IStr): they read as
// `const std::string&` / `std::string_view`, compare with strings, and assign from strings.
// `id` is unique per node and stays a plain string.
struct Node {
  std::string id;  // stable: scope-derived, e.g. "layer1.0.conv1" or "layer1.0/Add_1"
  NodeKind kind = NodeKind::Op;
  IStr op;     // graph-level operator, e.g. "Conv2D", "MatMul", "Add"
  IStr api;    // registry entry that produced it, e.g. "nn.Conv2d", "ops.add", "Tensor.reshape"
  IStr scope;  // Cell instance path, e.g. "layer1.0.conv1" ("" for the root)
  std::vector<ValueRef> inputs;
  std::vector<TensorType> outputs;
  std::vector<Attr> attrs;  // attributes of this application (e.g. a reshape's target shape)
  // Constructor attributes of the layer that produced the node (kernel_size, stride, ...), shared
  // by every node of that layer.
  std::shared_ptr<const std::vector<Attr>> layer_attrs;
  std::vector<std::string> params;  // parameter names this node reads (layer weights)
  IStr file;
  SourceRange range;  // the expression in construct that produced the node
  double flops = 0;
  // A Constant's elements, row-major, when the static evaluator computed them (numpy code in
  // __init__: position tables, masks; at most 1M elements), in the output's dtype, as doubles.
  // Null when unknown or uniform (a uniform constant has the `value` attribute). Shared, never
  // serialised: graph and view documents stay small; the runtime fills the constant from it.
  std::shared_ptr<const std::vector<double>> constant_values;
  // Parallel facts (docs/parallel.md): the `.shard(...)` strategy of the operator, its per-device
  // slices and inserted communication, its pipeline stage. Null when the program sets none.
  std::shared_ptr<NodeParallel> parallel;

  // The attribute `name`, from this application or the layer's constructor; nullptr if absent.
  [[nodiscard]] const AttrValue* find_attr(std::string_view name) const;
  // Every attribute: the layer's constructor attributes, then this application's.
  template <class F>
  void for_each_attr(F&& f) const {
    if (layer_attrs) {
      for (const Attr& a : *layer_attrs) f(a);
    }
    for (const Attr& a : attrs) f(a);
  }
};

// A call of construct that an error was reported at: it produced no node, and nothing that
// depends on it was compiled. The view marks it where the graph stops.
struct FailedCall {
  std::string id;  // the layer's path ("fc1"), else "<scope>/<op>"; unique among failures
  IStr api;        // "nn.Dense"
  IStr op;         // the operator it would have been ("MatMul")
  IStr scope;      // as Node::scope
  std::vector<ValueRef> inputs;  // the graph values it received
  IStr file;
  SourceRange range;  // the call
  std::string code;   // the diagnostic's code ("shape-mismatch") and message
  std::string message;
};

// One call of a Cell or function sharded with `Cell.shard` / `mindspore.shard`
// (docs/parallel.md §13): the split its in_strategy gives each graph value it received, and its
// parameter_plan's tuple entries. MindSpore propagates these layouts to the operators that use
// them (sharding propagation); the checks do the same.
struct ShardSeed {
  std::string what;  // "self.block.shard", "shard(add)": as messages name the call
  IStr file;
  SourceRange range;  // the `.shard(...)` call
  std::vector<std::pair<ValueRef, std::vector<int64_t>>> inputs;
  std::vector<std::pair<std::string, std::vector<int64_t>>> params;  // Parameter name -> split
  size_t propagated = 0;  // filled by the checks: operators that took their strategy from it
};

struct Graph {
  std::vector<Node> nodes;
  std::vector<ValueRef> outputs;
  std::vector<FailedCall> failures;  // in evaluation order
  // The class of every Cell instance whose construct ran while the graph was built ("layer1.0"
  // -> "Bottleneck", "layer1" -> "SequentialCell"; "" is the root).
  std::map<std::string, std::string> scope_classes;
  // The `pipeline_stage` of every Cell instance that set one, in the order their construct ran.
  std::vector<CellStage> stages;
  // Every call of a sharded Cell or function, in the order they ran.
  std::vector<ShardSeed> shard_seeds;
};

struct NamedTensor {
  std::string name;
  TensorType type;
};

// The type of a tensor-valued expression of construct, for hovers and inlay hints.
struct TypeFact {
  enum class Kind : uint8_t { Assignment, Name, Call };
  Kind kind = Kind::Name;
  std::string file;
  SourceRange range;
  std::string scope;  // Cell instance whose construct evaluated it ("" for the root)
  TensorType type;
  std::string name{};  // Assignment: the variable assigned
};

// One Cell instance of a root's tree (recorded with AnalysisOptions::record_facts).
struct CellInstance {
  std::string path;         // "layer1.0.conv1" ("" for the root)
  std::string class_name;   // "Bottleneck", "Conv2d"
  std::string api;          // registry name for MindSpore layers ("nn.Conv2d"), else ""
  std::string class_file;   // user classes: where the class is defined
  SourceRange class_range;  // ... its name in the `class` statement
  std::string site_file;    // where the instance was constructed
  SourceRange site_range;
  std::string call_file{};   // where a construct first called it (`self.layer1(x)`); "" if never
  SourceRange call_range{};  // ... the whole call expression
};

// Everything Cellscope knows about one analysed root Cell.
struct CellReport {
  std::string name;        // class name, or the entry expression ("resnet50()")
  std::string class_name;  // the root Cell's class
  std::string file;
  SourceRange range;  // the class definition (or the entry's call site)
  std::vector<NamedTensor> inputs;
  std::vector<NamedTensor> outputs;
  int64_t trainable_params = 0;
  int64_t total_params = 0;
  std::vector<ParamInfo> params;
  double flops = 0;
  Graph graph;
  std::vector<TypeFact> facts;          // only with AnalysisOptions::record_facts
  std::vector<CellInstance> instances;  // only with AnalysisOptions::record_facts; root first
  bool compiled = false;  // false when construct could not be compiled (see diagnostics)
};

}  // namespace graphcore
