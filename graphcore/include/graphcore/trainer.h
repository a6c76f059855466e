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
};

// The parameter update of a training step, shared by the Trainer and the runtime benchmark
// (bench/cellscope-run --train-step). `grad` is the differentiated loss graph whose executor
// `exec` holds the parameters; a run of it (or of the same loss compiled for another batch,
// `ran`) outputs [loss, the gradients of ran.param_grads, ran.state_updates...].
//
// The optimizer of grad's trainable parameters, in their order, shaped as exec holds them.
std::unique_ptr<Optimizer> step_optimizer(OptimizerConfig cfg, const autodiff::GradGraph& grad,
                                          const Executor& exec);
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

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace graphcore::runtime
