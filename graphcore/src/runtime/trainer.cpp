// The Trainer (graphcore/trainer.h): one training step is the loss graph's forward and backward
// pass on one batch (the backward graph built once by autodiff), the optimizer's update of every
// trainable parameter, and the write-back of the state the forward pass updates in training mode
// (BatchNorm's moving statistics).
#include "graphcore/trainer.h"

#include <chrono>
#include <cmath>
#include <map>
#include <sstream>

#include "graphcore/autodiff.h"
#include "graphcore/dataset.h"
#include "graphcore/optim.h"
#include "runtime/internal.h"
#include "runtime/synthetic.h"

namespace graphcore::runtime {

namespace fs = std::filesystem;

struct Trainer::Impl {
  TrainOptions options;
  std::string network;
  std::string loss_name;
  autodiff::GradGraph grad;
  std::unique_ptr<Executor> exec;
  std::unique_ptr<Optimizer> optimizer;
  LossScaler scaler;
  std::optional<double> clip_norm;
  std::unique_ptr<DatasetReader> reader;
  std::vector<std::string> notes;
  // Graph inputs fed from the batch's columns, in order.
  std::vector<size_t> input_columns;
  // The rows of a batch the main graph was compiled for, and the graphs of other batch sizes
  // (the last batch of batch(n, drop_remainder=False)), compiled when first met. The main
  // executor holds the parameters; another one gets them before it runs.
  std::optional<int64_t> main_rows;
  struct Variant {
    autodiff::GradGraph grad;
    std::unique_ptr<Executor> exec;
  };
  std::map<int64_t, Variant> variants;
  ExecOptions exec_options;
  Variant& variant_for(int64_t rows);
  int64_t epochs = 1;
  int64_t epoch = 1;
  int64_t step_in_epoch = 0;
  int64_t global_step = 0;
  bool done = false;

  std::optional<std::vector<Tensor>> next_batch();
  StepReport run_step(const std::vector<Tensor>& batch);
};

namespace {

std::string plan_location(const TrainingPlan& plan) {
  return plan.file + ":" + std::to_string(plan.range.start.line + 1);
}

// The dataset pipeline's reader, with the run's shuffle and batch-size overrides.
void open_dataset(Trainer::Impl& m, const TrainingPlan& plan) {
  DatasetPlan data = *plan.dataset;
  if (!m.options.shuffle) {
    for (Attr& a : data.source.args) {
      if (a.name == "shuffle") a.value = false;
    }
    if (!data.source.arg("shuffle")) data.source.args.push_back(Attr{"shuffle", false});
    std::erase_if(data.ops,
                  [](const DatasetOp& op) { return op.kind == DatasetOp::Kind::Shuffle; });
  }
  if (m.options.batch) {
    bool batched = false;
    for (DatasetOp& op : data.ops) {
      if (op.kind != DatasetOp::Kind::Batch) continue;
      batched = true;
      for (Attr& a : op.call.args) {
        if (a.name == "batch_size") a.value = *m.options.batch;
      }
    }
    if (!batched) {
      throw RuntimeError(plan_location(plan) +
                         ": --batch needs a pipeline that batches (it has no .batch(...))");
    }
  }
  m.reader = std::make_unique<DatasetReader>(data, m.options.data_dir, m.options.seed);
  // The loss graph's inputs are the batch's columns in order (data, label).
  const size_t n_inputs = m.exec->num_inputs();
  if (m.reader->column_names().size() < n_inputs) {
    throw RuntimeError(plan_location(plan) + ": the loss graph takes " + std::to_string(n_inputs) +
                       " inputs but the dataset yields " +
                       std::to_string(m.reader->column_names().size()) + " columns");
  }
  for (size_t i = 0; i < n_inputs; ++i) m.input_columns.push_back(i);
}

}  // namespace

Trainer::Trainer(const TrainingPlan& plan, TrainOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.options = std::move(options);
  m.network = plan.network;
  m.loss_name = plan.loss.api;
  if (!plan.loss_graph.compiled) {
    throw RuntimeError(plan_location(plan) + ": the network with its loss (" + plan.network +
                       " and " + plan.loss.api + ") did not compile; see the diagnostics above");
  }
  if (m.options.synthetic) {
    if (!m.options.steps) {
      throw RuntimeError(plan_location(plan) +
                         ": synthetic data needs a step count (--steps): how many rows the "
                         "script's dataset yields is not known");
    }
  } else if (!plan.dataset) {
    throw RuntimeError(plan_location(plan) + ": the training data is not known (no dataset " +
                       "pipeline was followed); --synthetic trains on random batches instead");
  } else if (!plan.dataset->opaque_reason.empty()) {
    throw RuntimeError(
        plan_location(plan) + ": the dataset cannot be read: " + plan.dataset->opaque_reason +
        "; --synthetic trains on random batches " + "of the network's input types instead");
  }

  autodiff::GradResult g = autodiff::build_backward(plan.loss_graph);
  if (!g.ok()) throw RuntimeError("cannot differentiate the loss: " + g.error);
  m.grad = std::move(*g.grad);
  if (m.options.synthetic) {
    // Fails here, before any step, when an input's type is not known.
    const size_t n = synthetic_batch(m.grad.report, m.options.seed, 0).size();
    for (size_t i = 0; i < n; ++i) m.input_columns.push_back(i);
    m.notes.emplace_back(
        "synthetic data: seeded N(0, 1) floats and uniform labels in the range the loss or "
        "embedding takes, not the script's dataset; the losses say nothing about the model's "
        "quality");
  }

  ExecOptions exec;
  exec.seed = m.options.seed;
  exec.training = true;
  exec.keep_values = false;
  m.exec_options = exec;
  m.exec = std::make_unique<Executor>(m.grad.report, exec);
  if (m.exec->num_inputs() > 0) {
    const TensorType t = m.exec->input_type(0);
    if (t.shape.ranked && !t.shape.dims.empty() && t.shape.dims[0].is_known())
      m.main_rows = t.shape.dims[0].value();
  }
  if (m.options.checkpoint) {
    CheckpointLoad load = m.exec->load_checkpoint(*m.options.checkpoint);
    m.notes.push_back(load.summary());
  }

  if (!m.options.synthetic) open_dataset(m, plan);

  m.optimizer = step_optimizer(optimizer_config_from_plan(plan), m.grad, *m.exec);
  if (plan.loss_scale_manager)
    m.scaler = LossScaler(loss_scale_from_call(*plan.loss_scale_manager));
  m.clip_norm = plan.clip_global_norm;
  if (m.options.checkpoint) {
    const auto entries = read_checkpoint(*m.options.checkpoint);
    // A checkpoint of the network alone (what save_checkpoint(net) writes) has no optimizer
    // state: the optimizer starts fresh, as MindSpore's would.
    bool has_state = false;
    for (const auto& e : entries) has_state = has_state || e.name == "global_step";
    if (has_state) {
      m.optimizer->load_state(entries);
      m.scaler.load_state(entries);
    }
  }
  for (const std::string& p : m.grad.unused_params) {
    m.notes.push_back("parameter " + p + " does not reach the loss: its gradient is zero");
  }
  m.epochs = m.options.epochs.value_or(plan.epochs.value_or(1));
  if (m.reader) m.reader->start_epoch(0);
}

Trainer::~Trainer() = default;

std::optional<std::vector<Tensor>> Trainer::Impl::next_batch() {
  if (!reader) return synthetic_batch(grad.report, options.seed, global_step);
  for (;;) {
    if (auto b = reader->next()) return b;
    if (epoch >= epochs) return std::nullopt;
    reader->start_epoch(epoch);  // 0-based in the reader
    ++epoch;
    step_in_epoch = 0;
  }
}

Trainer::Impl::Variant& Trainer::Impl::variant_for(int64_t rows) {
  if (auto it = variants.find(rows); it != variants.end()) return it->second;
  if (!options.compile_for_batch) {
    throw RuntimeError("a batch of " + std::to_string(rows) + " rows, but the loss graph was " +
                       "compiled for " + std::to_string(main_rows.value_or(0)) +
                       " and cannot be compiled again here");
  }
  CellReport report = options.compile_for_batch(rows);
  if (!report.compiled) {
    throw RuntimeError("the loss graph did not compile for a batch of " + std::to_string(rows) +
                       " rows (the last batch of batch(..., drop_remainder=False))");
  }
  autodiff::GradResult g = autodiff::build_backward(report);
  if (!g.ok()) throw RuntimeError("cannot differentiate the loss: " + g.error);
  if (g.grad->param_grads.size() != grad.param_grads.size() ||
      g.grad->state_updates.size() != grad.state_updates.size()) {
    throw RuntimeError("the loss graph for a batch of " + std::to_string(rows) +
                       " rows has other parameters than the one for " +
                       std::to_string(main_rows.value_or(0)));
  }
  Variant v;
  v.grad = std::move(*g.grad);
  v.exec = std::make_unique<Executor>(v.grad.report, exec_options);
  return variants.emplace(rows, std::move(v)).first->second;
}

StepReport Trainer::Impl::run_step(const std::vector<Tensor>& batch) {
  StepReport r;
  r.samples = batch.empty() || batch[0].rank() == 0 ? 0 : batch[0].shape()[0];
  Executor* ex = exec.get();
  const autodiff::GradGraph* g = &grad;
  if (main_rows && r.samples != *main_rows && !batch.empty() && batch[0].rank() > 0) {
    Variant& v = variant_for(r.samples);
    for (const ParamState& p : exec->params()) v.exec->set_param(p.name, p.value);
    ex = v.exec.get();
    g = &v.grad;
  }
  for (size_t i = 0; i < input_columns.size(); ++i) ex->set_input(i, batch[input_columns[i]]);
  ex->reset();
  // A fresh Dropout mask every step, reproducible from the run's seed.
  ex->set_seed(hash_name(options.seed, "step" + std::to_string(global_step)));
  RunStatus st = ex->run();
  if (st.kind != RunStatus::Kind::Finished) {
    throw RuntimeError("step " + std::to_string(global_step + 1) + ": " + st.message);
  }
  std::vector<Tensor> outs = ex->outputs();
  r.loss = outs.at(0).at(0);
  if (!std::isfinite(r.loss)) {
    throw RuntimeError("step " + std::to_string(global_step + 1) + ": the loss is " +
                       (std::isnan(r.loss) ? std::string("NaN") : std::string("infinite")) + " (" +
                       ex->node_location(g->report.graph.outputs.at(0).node) + ")");
  }
  const size_t n = g->param_grads.size();
  if (global_step == 0 && options.dump_grads) {
    fs::create_directories(*options.dump_grads);
    for (size_t i = 0; i < n; ++i) {
      write_npy(*options.dump_grads / (g->param_grads[i].first + ".npy"), outs.at(1 + i));
    }
  }
  std::vector<Tensor> grads = step_gradients(*g, outs);
  // Loss scaling: the backward pass as seeded with the scale (every gradient times the scale: a
  // power of two, exact), then the training cell's unscale, overflow check and scale update.
  r.loss_scale = scaler.scale();
  if (r.loss_scale != 1.0f) {
    for (Tensor& t : grads) {
      Tensor scaled = t.clone();
      auto* d = scaled.data<float>();
      for (int64_t k = 0; k < scaled.numel(); ++k) d[k] *= static_cast<float>(r.loss_scale);
      t = std::move(scaled);
    }
  }
  const bool apply = scaler.unscale_and_update(grads);
  if (clip_norm) clip_by_global_norm(grads, *clip_norm);
  r.learning_rate = optimizer->current_lr();
  r.skipped = !apply;
  // The main executor holds the parameters (the optimizer's order is the main graph's); the
  // update writes into them in place (copied first only when something shares their storage).
  if (apply) apply_gradients(*optimizer, *exec, grad, grads);
  write_back_state(*exec, *g, outs);
  return r;
}

std::unique_ptr<Optimizer> step_optimizer(OptimizerConfig cfg, const autodiff::GradGraph& grad,
                                          const Executor& exec) {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& [name, ref] : grad.param_grads) {
    (void)ref;
    const ParamState* p = exec.param(name);
    if (!p) throw RuntimeError("the optimizer's parameter " + name + " is not the executor's");
    names.push_back(name);
    shapes.push_back(p->value.shape());
  }
  return std::make_unique<Optimizer>(std::move(cfg), std::move(names), std::move(shapes));
}

std::vector<Tensor> step_gradients(const autodiff::GradGraph& ran,
                                   const std::vector<Tensor>& outs) {
  const size_t n = ran.param_grads.size();
  if (outs.size() < 1 + n) throw RuntimeError("a training step's run has too few outputs");
  return {outs.begin() + 1, outs.begin() + 1 + static_cast<std::ptrdiff_t>(n)};
}

void apply_gradients(Optimizer& opt, Executor& exec, const autodiff::GradGraph& grad,
                     std::span<const Tensor> grads) {
  // The update writes into the executor's parameters in place (copied first only when something
  // shares their storage).
  std::vector<Tensor*> ptrs;
  ptrs.reserve(grad.param_grads.size());
  for (const auto& [name, ref] : grad.param_grads) {
    (void)ref;
    ptrs.push_back(&exec.mutable_param(name));
  }
  opt.step(ptrs, grads);
}

void write_back_state(Executor& exec, const autodiff::GradGraph& ran,
                      const std::vector<Tensor>& outs) {
  const size_t n = ran.param_grads.size();
  for (size_t i = 0; i < ran.state_updates.size(); ++i) {
    exec.set_param(ran.state_updates[i].first, outs.at(1 + n + i));
  }
}

std::optional<StepReport> Trainer::step() {
  Impl& m = *impl_;
  if (m.done || (m.options.steps && m.global_step >= *m.options.steps)) {
    m.done = true;
    return std::nullopt;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto batch = m.next_batch();
  if (!batch) {
    m.done = true;
    return std::nullopt;
  }
  StepReport r = m.run_step(*batch);
  ++m.global_step;
  ++m.step_in_epoch;
  r.epoch = m.epoch;
  r.step = m.step_in_epoch;
  r.global_step = m.global_step;
  r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::vector<CheckpointTensor> Trainer::checkpoint() const {
  const Impl& m = *impl_;
  std::vector<CheckpointTensor> out;
  for (const ParamState& p : m.exec->params()) out.push_back(checkpoint_entry(p.name, p.value));
  for (CheckpointTensor& t : m.optimizer->state()) out.push_back(std::move(t));
  for (CheckpointTensor& t : m.scaler.state()) out.push_back(std::move(t));
  return out;
}

std::string Trainer::summary() const {
  const Impl& m = *impl_;
  std::ostringstream s;
  s << "training " << m.network << " with " << m.loss_name << ", " << m.optimizer->config().str()
    << ", " << m.grad.param_grads.size() << " trainable parameters, " << m.epochs
    << (m.epochs == 1 ? " epoch" : " epochs");
  if (auto b = m.reader ? m.reader->batches_per_epoch() : std::nullopt)
    s << " of " << *b << " batches";
  if (m.options.steps) s << " (at most " << *m.options.steps << " steps)";
  return s.str();
}

std::vector<std::string> Trainer::notes() const { return impl_->notes; }

}  // namespace graphcore::runtime
