// The training idioms as the static evaluator follows them (issue 17): MindSpore's training
// objects (datasets and their transforms, Model, optimizers, learning-rate schedules, loss-scale
// managers, callbacks, TrainOneStepCell, value_and_grad) are plan objects that remember how they
// were built; `model.train(...)`, a call of a gradient function or of a TrainOneStepCell inside a
// loop over a dataset are training events. analysis.cpp turns the events into TrainingPlans.
// Nothing here runs unless the program touches one of these APIs: the recorder is created on
// first use, so an analysis without training pays nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "graphcore/training.h"
#include "interp.h"

namespace graphcore::eval {

// A MindSpore training object built by the program. Its Values live in OpaqueObj::attrs (the
// ObjectHeap frees cycles through them); keys starting with \x01 are private.
struct PlanObj : OpaqueObj {
  enum class Kind : uint8_t {
    Dataset,       // a pipeline: a source, or a stage appended to one
    Iterator,      // create_tuple_iterator() / create_dict_iterator()
    Transform,     // vision.Resize(...), transforms.TypeCast(...)
    Model,         // mindspore.Model
    Optimizer,     // nn.Momentum, nn.SGD, ...
    LrSchedule,    // nn.cosine_decay_lr(...) (a list), nn.CosineDecayLR (a Cell)
    LossScale,     // DynamicLossScaleManager, FixedLossScaleManager, nn.*LossScaleUpdateCell
    Callback,      // LossMonitor, TimeMonitor, ModelCheckpoint, CheckpointConfig ...
    WithLoss,      // nn.WithLossCell (when the registry does not model it)
    TrainOneStep,  // nn.TrainOneStepCell, nn.TrainOneStepWithLossScaleCell
    GradFn,        // ms.value_and_grad(fn, ...)
    Loss,          // an nn loss the registry does not model
  };
  PlanObj(Kind k, std::string api);
  Kind kind;
  PlanCall call;
  // Dataset: the pipeline so far (source, ops, row columns before batching is applied in
  // `columns`), or why it cannot be followed.
  std::shared_ptr<const DatasetPlan> dataset;
  bool dict_iterator = false;  // Iterator
  bool numpy_iterator = false;
  [[nodiscard]] Value get(std::string_view key) const;  // a private value, or Unknown
  void put(std::string_view key, Value v);
};

PlanObj* plan_of(const Value& v);

// A training idiom met while the module's code ran.
struct TrainingEvent {
  TrainingPlan::Idiom idiom = TrainingPlan::Idiom::ModelTrain;
  Site site;      // model.train(...), the grad function's call, the TrainOneStepCell's call
  Value trainer;  // the Model, GradFn or TrainOneStep plan object
  Value dataset = Value::unknown();  // the dataset trained on (Model.train's, or the loop's)
  std::vector<Value> inputs;     // the values a grad function / TrainOneStepCell was called with
  std::vector<Attr> train_args;  // Model.train's epoch, dataset_sink_mode, sink_size (bound)
  Value callbacks = Value::unknown();
  const ast::Node* loop = nullptr;  // the dataset loop the call was in
  SourceRange loop_range;
  std::set<uint64_t> loop_runs;      // distinct runs of that loop that made the call: the epochs
  Value network = Value::unknown();  // GradFn: the first Cell forward_fn called
  Value loss = Value::unknown();     // GradFn: the loss forward_fn called after it
  std::optional<double> clip;        // ops.clip_by_global_norm(grads, clip_norm) in the loop
  size_t first_export = 0;           // exports recorded from here on came after training
};

// A place the program evaluates on a dataset: Model.eval / Model.fit's valid_dataset (trainer
// the Model), or a loop over a dataset (trainer Unknown) and the Cells its body called.
struct EvalEvent {
  Site site;
  SourceRange range;
  Value trainer = Value::unknown();
  Value dataset = Value::unknown();
  const ast::Node* loop = nullptr;
  std::vector<Value> cells;  // loops: the Cells called in the body, in order
};

struct PlannedTraining;

class TrainingRecorder {
 public:
  // A MindSpore name this module follows for training (`ds.MnistDataset`, `nn.Momentum`,
  // `ms.Model`), or nullopt to leave it to the namespace's usual resolution.
  static std::optional<Value> api(Interpreter& in, NamespaceObj* ns, std::string_view name);
  // True when `ns.name` may be one of those (cheap: no recorder needed).
  static bool may_handle(const NamespaceObj* ns, std::string_view name);

  std::optional<Value> method(Interpreter& in, const Value& obj, std::string_view name);
  Value call(Interpreter& in, PlanObj* p, const Value& self, CallArgs& args, const Site& site);
  // One batch for a loop over a dataset iterator (the loop body runs once with it).
  std::optional<std::vector<Value>> iterate(Interpreter& in, const Value& v);

  // Dataset loops: `for ... in dataset.create_tuple_iterator()` (interp.cpp's K::For).
  uint64_t iterations = 0;  // batches handed out; a change tells K::For it iterates a dataset
  void enter_loop(Interpreter& in, const ast::Node* loop, const Site& site);
  void exit_loop(Interpreter& in);
  void record_export(Interpreter& in, CallArgs& args, const Site& site);
  void record_clip(CallArgs& args);

  std::vector<TrainingEvent> events;
  std::vector<EvalEvent> evals;
  std::vector<PlanCall> exports;
  // The dataset handed out by the last iterate(), for the loop that asked.
  Value last_dataset = Value::unknown();

 private:
  struct Loop {
    const ast::Node* node;
    SourceRange range;
    uint64_t run;
    Value dataset;
    Site site;
    size_t call_sites_before = 0;  // Interpreter::call_sites.size() when the body started
  };
  std::vector<Loop> loops_;
  uint64_t runs_ = 0;
  // clip_by_global_norm seen in a loop before its training step was.
  const ast::Node* pending_clip_loop_ = nullptr;
  std::optional<double> pending_clip_;
  friend std::vector<PlannedTraining> plan_trainings(Interpreter& in, TrainingRecorder& rec);

 public:
  std::vector<Value> optimizers;    // every optimizer built, in order
  std::vector<Value> loss_scalers;  // every mindspore.amp loss scaler built, in order
  std::vector<Value> losses;        // loss plan objects called (forward_fn's loss)
  TrainingEvent& event_at(TrainingPlan::Idiom idiom, const Site& site, const Value& trainer);
};

// The plan of one event: everything but the loss graph, which analysis.cpp compiles. `net` and
// `loss` get the network and loss Values (Unknown when not followed), `loss_graph_callee` what to
// call with the dataset's columns (a Cell or a function), `first_output_only` when its first
// output is the loss (has_aux). Diagnostics for what is not followed are reported here.
struct PlannedTraining {
  TrainingPlan plan;
  Site site;  // the training event (where the loss graph's messages go)
  Value network = Value::unknown();
  Value loss_fn = Value::unknown();
  Value callee = Value::unknown();  // Unknown: the loss graph cannot be compiled
  // The optimizer's learning rate when it is an instance of a user's LearningRateSchedule
  // subclass (its construct is compiled into TrainingPlan::lr_graph).
  Value lr_cell = Value::unknown();
  std::vector<TensorType> inputs;
  std::vector<std::string> input_names;
  bool first_output_only = false;
};
std::vector<PlannedTraining> plan_trainings(Interpreter& in, TrainingRecorder& rec);

// A call of `api` as MindSpore binds it: positional arguments named by its signature.
PlanCall plan_call(Interpreter& in, std::string api, CallArgs& args, const Site& site);

}  // namespace graphcore::eval
