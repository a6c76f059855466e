// The Trainer (graphcore/trainer.h): one training step is the loss graph's forward and backward
// pass on one batch (the backward graph built once by autodiff), the optimizer's update of every
// trainable parameter, and the write-back of the state the forward pass updates in training mode
// (BatchNorm's moving statistics).
#include "graphcore/trainer.h"

#include <algorithm>
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
  bool running = false;  // inside run_step
  // The executor and backward graph of the step running or last run (main or a variant).
  Executor* current = nullptr;
  const autodiff::GradGraph* current_grad = nullptr;
  std::vector<std::pair<std::string, Tensor>> last_grads;
  std::vector<std::pair<std::string, Tensor>> last_updates;

  std::optional<std::vector<Tensor>> next_batch();
  StepReport run_step(const std::vector<Tensor>& batch);
};

namespace {

// after - before, elementwise (float tensors of one shape).
Tensor subtract(const Tensor& after, const Tensor& before) {
  Tensor d = Tensor::zeros(after.shape(), DType::Float32);
  auto* out = d.data<float>();
  for (int64_t k = 0; k < d.numel(); ++k) out[k] = static_cast<float>(after.at(k) - before.at(k));
  return d;
}

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
  exec.keep_values = m.options.keep_values;
  m.exec_options = exec;
  m.exec = std::make_unique<Executor>(m.grad.report, exec);
  m.current = m.exec.get();
  m.current_grad = &m.grad;
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
  current = ex;
  current_grad = g;
  for (size_t i = 0; i < input_columns.size(); ++i) ex->set_input(i, batch[input_columns[i]]);
  ex->reset();
  // A fresh Dropout mask every step, reproducible from the run's seed.
  ex->set_seed(hash_name(options.seed, "step" + std::to_string(global_step)));
  RunStatus st;
  if (options.hooks) {
    // A debugger's hooks: they block while its user looks; a Pause just goes on.
    do {
      st = ex->run(*options.hooks);
    } while (st.kind == RunStatus::Kind::Paused);
    if (st.kind == RunStatus::Kind::Aborted) {
      throw TrainingAborted("step " + std::to_string(global_step + 1) + ": aborted");
    }
  } else {
    st = ex->run();
  }
  if (st.kind != RunStatus::Kind::Finished) {
    // The failing node, for a debugger's stop there (its executor is step_executor()).
    throw RuntimeError("step " + std::to_string(global_step + 1) + ": " + st.message, st.node);
  }
  std::vector<Tensor> outs = ex->outputs();
  r.loss = outs.at(0).at(0);
  auto loss_error = [&] {
    return RuntimeError("step " + std::to_string(global_step + 1) + ": the loss is " +
                        (std::isnan(r.loss) ? std::string("NaN") : std::string("infinite")) + " (" +
                        ex->node_location(g->report.graph.outputs.at(0).node) + ")");
  };
  if (!std::isfinite(r.loss) && !options.before_update) throw loss_error();
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
  r.grad_norm = global_norm(grads);
  if (clip_norm) clip_by_global_norm(grads, *clip_norm);
  r.learning_rate = optimizer->current_lr();
  r.skipped = !apply;
  const bool record = options.record_updates || options.before_update;
  if (record) {
    last_grads.clear();
    for (size_t i = 0; i < n; ++i) last_grads.emplace_back(grad.param_grads[i].first, grads[i]);
  }
  if (options.before_update) {
    options.before_update(r);
    if (!std::isfinite(r.loss)) throw loss_error();
  }
  // The parameters before the update (shared storage: the update copies before it writes).
  std::vector<Tensor> before;
  if (record) {
    for (const auto& [name, ref] : grad.param_grads) {
      (void)ref;
      before.push_back(exec->param(name)->value);
    }
  }
  // The main executor holds the parameters (the optimizer's order is the main graph's); the
  // update writes into them in place (copied first only when something shares their storage).
  if (apply) apply_gradients(*optimizer, *exec, grad, grads);
  write_back_state(*exec, *g, outs);
  if (record) {
    last_updates.clear();
    for (size_t i = 0; i < n; ++i) {
      const std::string& name = grad.param_grads[i].first;
      last_updates.emplace_back(name, subtract(exec->param(name)->value, before[i]));
    }
  }
  return r;
}

double global_norm(std::span<const Tensor> tensors) {
  double sum = 0;
  for (const Tensor& t : tensors) {
    if (!t.is_float()) continue;
    for (int64_t k = 0; k < t.numel(); ++k) {
      const double v = t.at(k);
      sum += v * v;
    }
  }
  return std::sqrt(sum);
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
  m.running = true;
  StepReport r;
  try {
    r = m.run_step(*batch);
  } catch (...) {
    m.running = false;
    throw;
  }
  m.running = false;
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

const Executor& Trainer::step_executor() const { return *impl_->current; }
size_t Trainer::forward_count() const { return impl_->current_grad->forward_count; }
const Executor& Trainer::executor() const { return *impl_->exec; }
int64_t Trainer::epoch() const { return impl_->epoch; }

int64_t Trainer::steps_started() const { return impl_->global_step + (impl_->running ? 1 : 0); }

std::optional<int64_t> Trainer::total_steps() const {
  const Impl& m = *impl_;
  std::optional<int64_t> all;
  if (auto b = m.reader ? m.reader->batches_per_epoch() : std::nullopt) all = *b * m.epochs;
  if (m.options.steps) return all ? std::min(*all, *m.options.steps) : *m.options.steps;
  return all;
}

const std::vector<std::pair<std::string, Tensor>>& Trainer::last_gradients() const {
  return impl_->last_grads;
}
const std::vector<std::pair<std::string, Tensor>>& Trainer::last_updates() const {
  return impl_->last_updates;
}
std::vector<CheckpointTensor> Trainer::optimizer_state() const { return impl_->optimizer->state(); }

double Trainer::learning_rate(std::string_view param) const {
  return impl_->optimizer->lr_at(param, impl_->optimizer->global_step());
}

namespace {

// The plan's pipeline for evaluation: file order, one pass, the given split and batch size.
DatasetPlan eval_pipeline(const TrainingPlan& plan, const std::optional<std::string>& usage,
                          const std::optional<int64_t>& batch) {
  DatasetPlan data = *plan.dataset;
  std::erase_if(data.source.args, [](const Attr& a) { return a.name == "shuffle"; });
  data.source.args.push_back(Attr{"shuffle", false});
  if (usage) {
    std::erase_if(data.source.args, [](const Attr& a) { return a.name == "usage"; });
    data.source.args.push_back(Attr{"usage", *usage});
  }
  std::erase_if(data.ops, [](const DatasetOp& op) {
    return op.kind == DatasetOp::Kind::Shuffle || op.kind == DatasetOp::Kind::Repeat;
  });
  if (batch) {
    for (DatasetOp& op : data.ops) {
      if (op.kind != DatasetOp::Kind::Batch) continue;
      for (Attr& a : op.call.args) {
        if (a.name == "batch_size") a.value = *batch;
      }
    }
  }
  return data;
}

}  // namespace

EvalReport evaluate_top1(const TrainingPlan& plan, const CellReport& network,
                         std::span<const CheckpointTensor> params, const EvalOptions& options) {
  if (!plan.dataset || !plan.dataset->opaque_reason.empty())
    throw RuntimeError("the evaluation data is not known (no dataset pipeline was followed)");
  EvalReport report;
  std::unique_ptr<DatasetReader> reader;
  // The held-out split of a source that has one (MnistDataset, Cifar10Dataset: usage='test').
  const std::string source = plan.dataset->source.api;
  const bool has_usage =
      source.find("Mnist") != std::string::npos || source.find("Cifar") != std::string::npos;
  if (has_usage) {
    try {
      reader = std::make_unique<DatasetReader>(
          eval_pipeline(plan, std::string("test"), options.batch), options.data_dir, options.seed);
      report.split = "test";
    } catch (const RuntimeError& e) {
      report.note = std::string("no test split: ") + e.what();
    }
  } else {
    report.note = source + " has no test split";
  }
  if (!reader) {
    reader = std::make_unique<DatasetReader>(eval_pipeline(plan, std::nullopt, options.batch),
                                             options.data_dir, options.seed);
    report.split = "train";
  }
  ExecOptions exec;
  exec.seed = options.seed;
  exec.keep_values = false;
  Executor ex(network, exec);
  for (const CheckpointTensor& t : params) {
    if (t.value.defined() && ex.param(t.name)) ex.set_param(t.name, t.value);
  }
  const TensorType in = ex.input_type(0);
  const int64_t rows = in.shape.ranked && !in.shape.dims.empty() && in.shape.dims[0].is_known()
                           ? in.shape.dims[0].value()
                           : -1;
  reader->start_epoch(0);
  while (report.batches < options.batches) {
    auto batch = reader->next();
    if (!batch) break;
    if (batch->size() < 2) throw RuntimeError("the evaluation data has no label column");
    const Tensor& x = (*batch)[0];
    const Tensor& y = (*batch)[1];
    if (x.rank() == 0 || x.shape()[0] != rows) {
      report.note += (report.note.empty() ? "" : "; ") + std::string("a last batch of ") +
                     std::to_string(x.rank() ? x.shape()[0] : 0) + " rows was left out";
      break;
    }
    ex.set_input(0, x);
    ex.reset();
    RunStatus st = ex.run();
    if (st.kind != RunStatus::Kind::Finished) throw RuntimeError("evaluation: " + st.message);
    const Tensor out = ex.outputs().at(0);
    if (out.rank() != 2 || out.shape()[0] != rows || y.numel() != rows) {
      throw RuntimeError("evaluation: the network's output " + shape_str(out.shape()) +
                         " is not (batch, classes) for labels " + shape_str(y.shape()));
    }
    const int64_t classes = out.shape()[1];
    for (int64_t r = 0; r < rows; ++r) {
      int64_t best = 0;
      for (int64_t k = 1; k < classes; ++k)
        if (out.at(r * classes + k) > out.at(r * classes + best)) best = k;
      report.correct += best == static_cast<int64_t>(y.at(r)) ? 1 : 0;
    }
    report.samples += rows;
    ++report.batches;
  }
  return report;
}

}  // namespace graphcore::runtime
