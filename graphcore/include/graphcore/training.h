// The training plan of a script, as the static evaluator understands it (issue 17): which network
// is trained with which loss, optimizer, learning-rate schedule and dataset pipeline, for how long,
// recorded while the module's code is evaluated (nothing is executed). MindSpore's three idioms:
//   (a) Model(net, loss_fn, optimizer, metrics) ... model.train(epoch, dataset, callbacks=[...])
//   (b) functional: forward_fn + ms.value_and_grad(forward_fn, None, optimizer.parameters,
//       has_aux=...) + train_step + `for data, label in dataset.create_tuple_iterator()`
//   (c) nn.WithLossCell + nn.TrainOneStepCell (or TrainOneStepWithLossScaleCell)
// The runtime's trainer (runtime/train.h) runs a plan; `cellscope graph` shows it (`training`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graphcore/diagnostic.h"
#include "graphcore/graph.h"

namespace graphcore {

// A call the plan was read from: the API and its arguments as the program passed them (keyword
// names; positional arguments bound to MindSpore's parameter names), and where.
struct PlanCall {
  std::string api;  // "nn.Momentum", "dataset.MnistDataset", "vision.Resize"
  std::vector<Attr> args;
  std::string file;
  SourceRange range;
  [[nodiscard]] const AttrValue* arg(std::string_view name) const;
};

// One step of a mindspore.dataset pipeline, in program order.
struct DatasetOp {
  enum class Kind : uint8_t { Map, Batch, Shuffle, Repeat, Take, Project };
  Kind kind = Kind::Map;
  PlanCall call;                           // `.map(...)`, `.batch(32, drop_remainder=True)` ...
  std::vector<PlanCall> transforms;        // Map: the operations, in order
  std::vector<std::string> input_columns;  // Map: input_columns (empty: the first column)
  std::vector<std::string> columns;        // Project: the columns kept, in order
};

struct DatasetColumn {
  std::string name;  // "image", "label"
  TensorType type;   // one row (before batching: (28, 28, 1) uint8) or one batch
};

struct DatasetPlan {
  PlanCall source;  // "dataset.MnistDataset(dataset_dir=..., usage='train', shuffle=...)"
  std::vector<DatasetOp> ops;
  // The columns of one batch as the network receives them, inferred statically through the
  // transforms; unknown dims where the analyser cannot tell.
  std::vector<DatasetColumn> columns;
  // The source cannot be followed (GeneratorDataset over user code, a dataset the runtime does
  // not read): why. The trainer then needs synthetic data the user asks for.
  std::string opaque_reason;
};

struct TrainingPlan {
  enum class Idiom : uint8_t { ModelTrain, Functional, TrainOneStepCell };
  Idiom idiom = Idiom::ModelTrain;
  std::string file;
  SourceRange range;  // model.train(...), the training loop, or the TrainOneStepCell

  // The network trained with its loss as one compiled graph: inputs are the dataset's columns
  // (data, label ...), its one output the scalar loss: WithLossCell(net, loss_fn) for (a) and (c),
  // forward_fn for (b). Its params are the network's.
  CellReport loss_graph;
  std::string network;  // the network's class ("LeNet5")
  PlanCall loss;        // "nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction='mean')"
  PlanCall optimizer;   // "nn.Momentum(params=net.trainable_params(), learning_rate=0.01, ...)"
  // The optimizer's parameter groups as the program wrote them: each group's parameter names and
  // its overrides (weight_decay, lr, grad_centralization); empty when one list of parameters.
  struct ParamGroup {
    std::vector<std::string> params;
    std::vector<Attr> overrides;
  };
  std::vector<ParamGroup> param_groups;
  // A learning-rate schedule the program built (nn.cosine_decay_lr(...), a LearningRateSchedule
  // subclass), when the optimizer's learning_rate is not a number.
  std::optional<PlanCall> lr_schedule;
  // A LearningRateSchedule subclass of the program (`class WarmupCosine(LearningRateSchedule)`):
  // its construct compiled with the optimizer's global_step (int32, shape (1,), as MindSpore's
  // optimizer passes it) as the one input and the learning rate as the one output, which the
  // runtime evaluates each step. Not compiled (lr_graph.compiled false) when the program has no
  // such class or the evaluator cannot follow its construct; lr_graph_reason then says why.
  CellReport lr_graph;
  std::string lr_graph_reason;
  std::optional<PlanCall> loss_scale_manager;  // FixedLossScaleManager, DynamicLossScaleManager
  std::optional<double> clip_global_norm;      // ops.clip_by_global_norm(grads, clip_norm)
  std::optional<DatasetPlan> dataset;
  // The program's own evaluation pipeline for this network, when it has one: the dataset of
  // `model.eval(ds)` or `model.fit(..., valid_dataset=ds)` on the same Model, or of a loop over
  // another dataset whose body calls the trained network without a training step (the usual
  // `test_loop`). eval_range is that call or loop. Precision drift evaluates on it.
  std::optional<DatasetPlan> eval_dataset;
  SourceRange eval_range;
  std::optional<int64_t> epochs;
  std::optional<int64_t> sink_size;
  bool dataset_sink_mode = false;
  std::vector<PlanCall> callbacks;  // LossMonitor(per_print_times), TimeMonitor, ModelCheckpoint
  std::vector<PlanCall> exports;    // ms.export(...) calls after training
};

}  // namespace graphcore
