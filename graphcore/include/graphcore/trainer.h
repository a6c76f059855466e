// Training a script's plan on the CPU runtime (issue 17): the loss graph of the TrainingPlan
// (training.h) differentiated by autodiff.h, run forward and backward by the Executor in training
// mode, its parameters updated by MindSpore's optimizer formulas (optim.h), on the batches the
// plan's dataset pipeline yields (dataset.h). Nothing of the user's code is executed. `cellscope
// train` and the debug adapter drive it a step at a time.
//
//   Trainer t(plan, {.steps = 20, .data_dir = "MNIST_Data"});
//   while (auto s = t.step()) print(s->epoch, s->step, s->loss);
//   write_checkpoint("lenet.ckpt", t.checkpoint());
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graphcore/optim.h"
#include "graphcore/runtime.h"
#include "graphcore/training.h"

namespace graphcore::autodiff {
struct GradGraph;
}

namespace graphcore::runtime {

struct TrainOptions {
  std::optional<int64_t> steps;   // stop after this many steps (all epochs together)
  std::optional<int64_t> epochs;  // overrides the plan's epoch count
  std::optional<std::filesystem::path> data_dir;  // replaces the dataset source's directory
  // Overrides the pipeline's batch size (the plan's loss graph must be compiled for it:
  // AnalysisOptions::training_batch).
  std::optional<int64_t> batch;
  // The plan's loss graph compiled for another batch size (the analysis again with
  // AnalysisOptions::training_batch): what the last, smaller batch of batch(n,
  // drop_remainder=False) runs on, as MindSpore runs it. Without it such a batch is an error.
  std::function<CellReport(int64_t batch)> compile_for_batch;
  uint64_t seed = 0;  // shuffles, random transforms, Dropout, initializers
  // false: the data in file order (the sources' shuffle and every .shuffle() off), to compare a
  // run with a reference run of the same script whose shuffle is off too.
  bool shuffle = true;
  // Initial parameters (and optimizer state when the file has it) from a MindSpore checkpoint;
  // otherwise the initializers the program names.
  std::optional<std::filesystem::path> checkpoint;
  // Seeded random batches of the loss graph's input types instead of the dataset's rows
  // (runtime/synthetic.h): what `cellscope train --synthetic` asks for when the pipeline cannot
  // be read (GeneratorDataset over user code). Needs `steps`, and input types that are known
  // (AnalysisOptions::training_inputs gives them).
  bool synthetic = false;
  // The gradient of every trainable parameter at the first step, as <dir>/<name>.npy.
  std::optional<std::filesystem::path> dump_grads;

  // ---- for a debugger (the debug adapter's train mode) ----
  // Hooks on every node of each step's run (the forward nodes, then the backward ones:
  // Trainer::forward_count). A hook may block (a debugger waiting for its user); Pause is
  // ignored (the run goes on), Abort ends the step with TrainingAborted.
  const Hooks* hooks = nullptr;
  // Keep every node's value of a step until the next one (the debugger's locals); false frees
  // activations after their last use.
  bool keep_values = false;
  // Keep each step's gradients and parameter updates (value after the step minus before) for
  // last_gradients() / last_updates().
  bool record_updates = false;
  // Called once per step when the gradients are known (unscaled and clipped, as the optimizer
  // gets them; last_gradients() and the report's grad_norm are set), before the update; may
  // block. Also called when the loss is not finite, before the step fails.
  std::function<void(const struct StepReport&)> before_update;
};

// Thrown by Trainer::step when a hook aborted the step (the debugger's terminate).
struct TrainingAborted : RuntimeError {
  using RuntimeError::RuntimeError;
};

// One optimizer step.
struct StepReport {
  int64_t epoch = 1;        // 1-based, as LossMonitor prints it
  int64_t step = 1;         // 1-based within the epoch
  int64_t global_step = 1;  // 1-based over the run
  double loss = 0;
  double learning_rate = 0;  // the rate this step used (group 0's)
  double loss_scale = 1;     // the loss-scale manager's scale this step used
  bool skipped = false;      // the gradients overflowed: the update was skipped (loss scaling)
  double ms = 0;             // wall time of the step, data loading included
  int64_t samples = 0;       // rows in the batch
  // The global L2 norm of the gradients (unscaled, before ops.clip_by_global_norm), as
  // clip_by_global_norm computes it; NaN or inf when a gradient is.
  double grad_norm = 0;
};

// The parameter update of a training step, shared by the Trainer and the runtime benchmark
// (bench/cellscope-run --train-step). `grad` is the differentiated loss graph whose executor
// `exec` holds the parameters; a run of it (or of the same loss compiled for another batch,
// `ran`) outputs [loss, the gradients of ran.param_grads, ran.state_updates...].
//
// The optimizer of grad's trainable parameters, in their order, shaped as exec holds them.
std::unique_ptr<Optimizer> step_optimizer(OptimizerConfig cfg, const autodiff::GradGraph& grad,
                                          const Executor& exec);
// The global L2 norm of float tensors (as ops.clip_by_global_norm computes it, in double).
double global_norm(std::span<const Tensor> tensors);
// The gradients among a finished run's outputs, in ran.param_grads order.
std::vector<Tensor> step_gradients(const autodiff::GradGraph& ran, const std::vector<Tensor>& outs);
// One optimizer step: exec's parameters (grad.param_grads' names) updated in place by `grads`.
void apply_gradients(Optimizer& opt, Executor& exec, const autodiff::GradGraph& grad,
                     std::span<const Tensor> grads);
// The state the forward pass updates in training mode (BatchNorm's moving statistics), from the
// run's outputs into exec's parameters.
void write_back_state(Executor& exec, const autodiff::GradGraph& ran,
                      const std::vector<Tensor>& outs);

class Trainer {
 public:
  // Builds the backward graph, the executor, the optimizer and the data reader; throws
  // RuntimeError with what is missing (a loss graph that did not compile, an operator without a
  // gradient rule, an optimizer or dataset the runtime does not follow, a missing data file).
  Trainer(const TrainingPlan& plan, TrainOptions options);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Runs one step; nullopt when the run is over (steps or epochs done). A NaN loss, a label out
  // of range or a kernel failure throws RuntimeError naming the step and the node.
  std::optional<StepReport> step();

  // The parameters (and the optimizer's state, named as MindSpore names it) to save.
  [[nodiscard]] std::vector<CheckpointTensor> checkpoint() const;
  // What the run is: "LeNet5 with SoftmaxCrossEntropyWithLogits, Momentum(lr=0.01 ...), 46
  // batches of 32 per epoch, 1 epoch".
  [[nodiscard]] std::string summary() const;
  [[nodiscard]] std::vector<std::string> notes() const;  // checkpoint load summary, data notes

  // ---- what a debugger inspects (between steps, or from a hook or before_update) ----
  // The executor that runs (or last ran) a step: the main one, or the one compiled for another
  // batch size (the last batch). Its graph is the loss graph's forward nodes [0,
  // forward_count()) followed by the backward nodes; its parameters are current.
  [[nodiscard]] const Executor& step_executor() const;
  [[nodiscard]] size_t forward_count() const;
  // The executor that holds the parameters (updated in place by each step).
  [[nodiscard]] const Executor& executor() const;
  // The global step of the step running (from a hook) or last run: 1-based, 0 before the first.
  [[nodiscard]] int64_t steps_started() const;
  [[nodiscard]] int64_t epoch() const;
  // How many steps the run makes, when known (steps, or epochs x batches per epoch).
  [[nodiscard]] std::optional<int64_t> total_steps() const;
  // With TrainOptions::record_updates: the last step's gradients and updates by parameter
  // name, in the optimizer's (the network's trainable parameters') order; empty before.
  [[nodiscard]] const std::vector<std::pair<std::string, Tensor>>& last_gradients() const;
  [[nodiscard]] const std::vector<std::pair<std::string, Tensor>>& last_updates() const;
  // The optimizer's state (moments, accumulations, global_step ...) as MindSpore names it.
  [[nodiscard]] std::vector<CheckpointTensor> optimizer_state() const;
  // The learning rate each trainable parameter gets at the next step (its group's).
  [[nodiscard]] double learning_rate(std::string_view param) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// The inference half of a train -> infer session: the trained network at fp32 on held-out
// batches of the plan's pipeline, scored by top-1 accuracy (the argmax of the network's last
// axis against the label column).
struct EvalOptions {
  int64_t batches = 10;
  std::optional<std::filesystem::path> data_dir;  // as TrainOptions::data_dir
  std::optional<int64_t> batch;                   // as TrainOptions::batch
  uint64_t seed = 0;
};
struct EvalReport {
  int64_t batches = 0;
  int64_t samples = 0;
  int64_t correct = 0;
  // Which rows: "test" (the source's usage='test' split, in file order) or, when the data has
  // none, "train" with `note` saying why.
  std::string split;
  std::string note;
  [[nodiscard]] double accuracy() const {
    return samples > 0 ? static_cast<double>(correct) / static_cast<double>(samples) : 0.0;
  }
};
// `network` is the plan's network compiled for one batch of its first column (its input); its
// parameters are set from `params` by name (the Trainer's checkpoint()). Throws RuntimeError
// (the data cannot be read, the output is not (batch, classes)).
EvalReport evaluate_top1(const TrainingPlan& plan, const CellReport& network,
                         std::span<const CheckpointTensor> params, const EvalOptions& options);

}  // namespace graphcore::runtime
