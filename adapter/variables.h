// What the debug adapter shows of a paused run: variable references (the numbers `scopes`,
// `variables` and `evaluate` hand out), the scopes of a frame, its locals and parameters, tensor
// summaries and the evaluate expression language (a name with an optional statistic), as used by
// the Variables view, hovers, watches, conditions and logpoints. No state of its own beyond the
// references; the Inspector is a read-only view of the executor at one position.
//
// Thread-safety: none; the caller holds the session's mutex (the executor must not run meanwhile).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph_index.h"
#include "graphcore/drift.h"
#include "graphcore/runtime.h"

namespace cellscope::dap {

namespace rt = graphcore::runtime;

// A number as the adapter shows it ("%.6g").
std::string num(double v);
// "Tensor(1, 64, 56, 56) float32 min=.. max=.. mean=.." (nan= and inf= when there are some).
std::string tensor_summary(const rt::Tensor& t);
// `id` relative to `frame` ("layer1.0.conv1" in "layer1.0" is "conv1"; "inner/Add" in "inner" is
// "Add"); `id` itself when it is not inside the frame.
std::string relative_name(const std::string& id, const std::string& frame);

// The training state a stop of a train/joint session shows (Runner::train_view): the step and
// its numbers, each parameter with its gradient and its last update, the optimizer's state.
struct TrainView {
  std::vector<std::pair<std::string, std::string>> info;  // ("step", "3"), ("loss", "2.28") ...
  struct Param {
    std::string name;
    rt::Tensor value;
    std::optional<rt::Tensor> grad, update;  // none: not trainable, or no step yet
    std::optional<double> lr;                // the rate its next update uses
  };
  std::vector<Param> params;
  std::vector<std::pair<std::string, rt::Tensor>> optimizer;  // moments.fc1.weight ...
  // joint, after the inference half: the precision-drift report (the Precision drift scope).
  std::optional<rt::DriftReport> drift;
};

// What a variablesReference stands for.
struct VarRef {
  enum class Kind {
    Locals,
    Params,
    Tensor,
    Values,
    Training,        // TrainView::info
    TrainParams,     // TrainView::params
    TrainParam,      // one of them (`frame`: its name)
    OptimizerState,  // TrainView::optimizer
    Drift,           // TrainView::drift
    DriftLayer,      // one of its layers (`frame`: its node id)
  } kind = Kind::Locals;
  std::string frame;
  rt::Tensor tensor;
};

// The variable references handed out while paused, numbered from 1; cleared on every resume.
class VarRefs {
 public:
  int add(VarRef r);
  // The reference `ref`, or nullptr when it was not handed out (or not since the last resume).
  [[nodiscard]] const VarRef* find(int ref) const;
  void clear() { refs_.clear(); }

 private:
  std::vector<VarRef> refs_;
};

using NamedTensors = std::vector<std::pair<std::string, rt::Tensor>>;

// What an expression evaluates to: a tensor (its summary as text), or a statistic (the number
// and its text), or a shape (text only).
struct EvalResult {
  std::optional<rt::Tensor> tensor;
  std::optional<double> number;
  std::string text;
};

// The values of a run at one position: the nodes before `end` (in execution order) have run.
class Inspector {
 public:
  Inspector(const rt::Executor& ex, const GraphIndex& index, size_t end)
      : ex_(ex), index_(index), end_(end) {}

  // The locals of `frame`: source variables (the last value assigned on a line of the frame's
  // construct that has run), then every computed node of the frame by id.
  [[nodiscard]] NamedTensors locals(const std::string& frame) const;
  // The parameters of `frame`'s Cell (every parameter for the root), by relative name.
  [[nodiscard]] NamedTensors params(const std::string& frame) const;
  // A name in `frame` (a source variable, a node id relative to the frame or absolute, a
  // parameter, a scalar of set_scalars: a number), optionally followed by .min() .max() .mean()
  // .std() .shape .sum() .nan_count() .inf_count(). nullopt with `*err` set when the name is no
  // computed tensor.
  std::optional<EvalResult> evaluate(std::string expr, const std::string& frame,
                                     std::string* err) const;
  // Numbers known by name besides the tensors (train/joint: `step`, `epoch`); a local of the
  // frame with the same name wins.
  void set_scalars(std::vector<std::pair<std::string, double>> scalars) {
    scalars_ = std::move(scalars);
  }

 private:
  const rt::Executor& ex_;
  const GraphIndex& index_;
  size_t end_;
  std::vector<std::pair<std::string, double>> scalars_;
};

// The `scopes` of `frame` (Locals, Parameters; with a training view, Training, Gradients and
// updates, Optimizer state, and Precision drift when it has a drift report), with new
// references.
nlohmann::json scopes(const std::string& frame, VarRefs& refs, const TrainView* train = nullptr);
// A DAP Variable for a tensor (expandable: a new reference).
nlohmann::json tensor_variable(const std::string& name, const rt::Tensor& t,
                               const std::string& evaluate_name, VarRefs& refs);
// The `variables` of reference `r`: a frame's locals or parameters, a tensor's statistics and its
// `values`, or a page of values (`args`: the request's filter, start and count).
nlohmann::json variables(const VarRef& r, const nlohmann::json& args, const Inspector& inspector,
                         VarRefs& refs, const TrainView* train = nullptr);

}  // namespace cellscope::dap
