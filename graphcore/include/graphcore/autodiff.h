// Reverse-mode automatic differentiation over the semantic graph (issue 17). The backward pass of
// a compiled graph with a scalar output (a loss) is itself a graph: build_backward appends to a
// copy of the forward graph one backward node per step of each forward node's gradient rule (the
// `grad` of its OpDef, graphcore/opdef.h), every backward node remembering the forward node it
// came from. The CPU runtime runs the result like any other graph; the hardware model costs it.
//
//   GradResult g = build_backward(report);           // report.graph has one scalar output
//   if (!g.ok()) ... g.error names the node without a rule and its source line
//   runtime::Executor ex(g.report, {.training = true});
//   // outputs: [loss, gradient of each trainable parameter (GradGraph::param_grads order),
//   //           new values of the state it updates (GradGraph::state_updates order)]
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graphcore/graph.h"

namespace graphcore::autodiff {

// What a gradient rule sees and does. A rule is called once per forward node that lies on a
// path from a trainable parameter (or a differentiated input) to the loss, in reverse
// topological order, after the gradients of all the node's outputs are known.
class GradBuilder {
 public:
  virtual ~GradBuilder() = default;

  // The forward node being differentiated, its index, its inputs and outputs as graph values.
  [[nodiscard]] virtual const Node& node() const = 0;
  [[nodiscard]] virtual uint32_t node_index() const = 0;
  [[nodiscard]] ValueRef input(size_t i) const { return node().inputs.at(i); }
  [[nodiscard]] ValueRef output(size_t i) const {
    return ValueRef{node_index(), static_cast<uint32_t>(i)};
  }
  // The type of any value of the graph being built (forward or backward).
  [[nodiscard]] virtual const TensorType& type_of(ValueRef v) const = 0;
  // The type of parameter `name` (CellReport::params); nullopt for an unknown name.
  [[nodiscard]] virtual std::optional<TensorType> param_type(std::string_view name) const = 0;
  // Whether parameter `name` is trainable (moving statistics are not: they are state).
  [[nodiscard]] virtual bool param_trainable(std::string_view name) const = 0;
  // The gradient flowing into output `i`; nullopt when no path from it reaches the loss (zero).
  [[nodiscard]] virtual std::optional<ValueRef> dout(size_t i) const = 0;
  // Whether input `i` / parameter `name` needs a gradient (it lies on a path from something
  // differentiated); a rule may skip emitting what is not needed.
  [[nodiscard]] virtual bool needs_input_grad(size_t i) const = 0;
  [[nodiscard]] virtual bool needs_param_grad(std::string_view name) const = 0;

  // Appends a backward node running operator `op` (it must have an OpDef with a CPU kernel) and
  // returns its index: its outputs are ValueRef{index, k}. The node inherits the forward node's
  // scope, file and source range; its id is "<forward id>/grad/<op>[#k]". `params` are parameter
  // names its kernel reads (as Node::params); `layer_attrs` true shares the forward node's
  // constructor attributes (kernel_size, stride ...) with it.
  virtual uint32_t emit(std::string_view op, std::vector<ValueRef> inputs,
                        std::vector<TensorType> outputs, std::vector<Attr> attrs = {},
                        std::vector<std::string> params = {}, bool layer_attrs = false) = 0;
  // emit() for a one-output node: its value.
  ValueRef emit1(std::string_view op, std::vector<ValueRef> inputs, TensorType output,
                 std::vector<Attr> attrs = {}, std::vector<std::string> params = {},
                 bool layer_attrs = false) {
    return ValueRef{emit(op, std::move(inputs), {std::move(output)}, std::move(attrs),
                         std::move(params), layer_attrs),
                    0};
  }

  // The gradient of input `i` / parameter `name`. Several contributions to the same value are
  // summed (an Add node is emitted).
  virtual void grad_input(size_t i, ValueRef g) = 0;
  virtual void grad_param(std::string_view name, ValueRef g) = 0;
  // Training state the forward node updates as a side effect (BatchNorm's moving mean and
  // variance): after a step the runtime's trainer sets parameter `name` to value `v`.
  virtual void state_update(std::string_view name, ValueRef v) = 0;

  // The rule cannot differentiate this application (an attribute combination it does not
  // handle): build_backward fails with `why`, located at the node.
  virtual void unsupported(std::string why) = 0;
};

// An OpDef's gradient rule is a graphcore::OpGradFn (opdef.h): void (*)(GradBuilder&).

struct GradOptions {
  // Parameters to differentiate; empty: every trainable parameter of CellReport::params.
  std::vector<std::string> params;
  // Also the gradients of the graph inputs (float inputs only).
  bool input_grads = false;
};

struct GradGraph {
  // The forward graph (nodes [0, forward_count), unchanged) followed by the backward nodes; its
  // outputs are [loss, param_grads..., state_updates..., input_grads...] in that order.
  CellReport report;
  size_t forward_count = 0;
  // Per backward node (index - forward_count): the forward node whose rule emitted it.
  std::vector<uint32_t> origin;
  // (parameter name, gradient) in CellReport::params order. A parameter with no path to the loss
  // has no entry in `param_grads` and is listed in `unused_params` (its gradient is zero).
  std::vector<std::pair<std::string, ValueRef>> param_grads;
  std::vector<std::string> unused_params;
  std::vector<std::pair<std::string, ValueRef>> state_updates;
  std::vector<std::optional<ValueRef>> input_grads;  // with GradOptions::input_grads
};

struct GradResult {
  std::optional<GradGraph> grad;
  // Why there is none: the loss is not a scalar float, a node on the path has no gradient rule
  // (its operator and source line named), a rule refused.
  std::string error;
  std::optional<uint32_t> error_node;
  [[nodiscard]] bool ok() const { return grad.has_value(); }
};

// `report` must be compiled with known input shapes and exactly one float output of one element
// (the loss). Never throws for a graph it cannot differentiate: GradResult::error says why.
GradResult build_backward(const CellReport& report, const GradOptions& options = {});

}  // namespace graphcore::autodiff
