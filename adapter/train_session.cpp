// The train and joint modes of `cellscope dap` (docs/dap.md, "Training"): the worker runs the
// file's training plan on graphcore's Trainer a step at a time. The Trainer calls this runner's
// hooks on every node of a step (breakpoints, stepping, pause and the tensor filters stop in the
// forward pass) and before each update (the gradient filters); the step's end sends the
// `cellscope.trainStep` event, the LossMonitor line and progress, and checks the loss and
// weight filters. A stop blocks the worker inside the hook (the Trainer's step is in the middle
// of its run) until the user resumes. The session ends by writing the trained checkpoint next to
// the file; joint then runs the trained network on held-out batches.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "graphcore/drift.h"
#include "model_export.h"
#include "session.h"

namespace cellscope::dap {

namespace fs = std::filesystem;
namespace rt = graphcore::runtime;
namespace server = cellscope::server;

namespace {

// The filter thresholds when the filter's condition gives none.
constexpr double kLossSpikeFactor = 3.0;  // loss > factor x the mean of the last 10 steps
constexpr double kGradExplode = 1000.0;   // global gradient norm above
constexpr double kGradVanish = 1e-7;      // global gradient norm below
constexpr size_t kLossWindow = 10;        // steps the loss-spike mean is over
constexpr size_t kLossSpikeMinSteps = 1;  // steps before loss-spike can fire

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << v;
  return s.str();
}

// A number of a message: NaN, inf and -inf spelled so, else as the adapter shows numbers.
std::string finite_text(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return num(v);
}

// JSON has no NaN/Inf: a non-finite number is sent as null.
json number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

}  // namespace

rt::TrainOptions Runner::train_options() {
  train_hooks_.before = [this](const rt::NodeEvent& e) {
    if (terminate_) return rt::HookAction::Abort;
    std::unique_lock lock(m_);
    return train_before(e, lock);
  };
  train_hooks_.after = [this](const rt::NodeEvent& e) {
    if (terminate_) return rt::HookAction::Abort;
    std::unique_lock lock(m_);
    return train_after(e, lock);
  };
  rt::TrainOptions o;
  o.hooks = &train_hooks_;
  o.keep_values = true;  // the locals of a stop in the forward pass
  o.record_updates = true;
  o.before_update = [this](const rt::StepReport& r) {
    std::unique_lock lock(m_);
    before_update(r, lock);
  };
  return o;
}

size_t Runner::loss_node() const { return program_.executor->graph().outputs.at(0).node; }

// The Trainer runs the last, smaller batch on an executor compiled for it: stops then show it.
void Runner::sync_step_executor() {
  const rt::Trainer& t = *program_.training->trainer;
  if (&t.step_executor() == program_.executor) return;
  program_.executor = &t.step_executor();
  program_.forward_count = t.forward_count();
  program_.index = index_graph(program_.executor->report(), program_.training->network);
  prev_node_.reset();
}

bool Runner::block(std::unique_lock<std::mutex>& lock, size_t node, bool after) {
  state_ = RunState::Stopped;
  stop_.node = node;
  stop_.after = after;
  train_view_ = make_train_view();
  if (!announce_stop_and_wait(lock)) return false;
  clear_focus();
  stop_.reason.clear();
  stop_.text.clear();
  stop_.hit_ids.clear();
  stop_.boundary = false;
  refs_.clear();
  train_view_.reset();
  state_ = RunState::Running;
  return true;
}

std::unique_ptr<TrainView> Runner::make_train_view() const {
  const rt::Trainer& t = *program_.training->trainer;
  auto v = std::make_unique<TrainView>();
  const int64_t step = current_step();
  v->info.emplace_back("step", std::to_string(step));
  v->info.emplace_back("epoch", std::to_string(t.epoch()));
  if (auto total = t.total_steps()) v->info.emplace_back("total steps", std::to_string(*total));
  if (last_report_) {
    const rt::StepReport& r = *last_report_;
    const std::string of = " (step " + std::to_string(r.global_step) + ")";
    v->info.emplace_back("loss", num(r.loss) + of);
    v->info.emplace_back("learning rate", num(r.learning_rate) + of);
    v->info.emplace_back("gradient norm", num(r.grad_norm) + of);
    v->info.emplace_back("loss scale", num(r.loss_scale) + of);
  }
  v->info.emplace_back("gradients of step", grads_step_ ? std::to_string(grads_step_) : "none yet");
  v->info.emplace_back("updates of step",
                       updates_step_ ? std::to_string(updates_step_) : "none yet");
  std::map<std::string, rt::Tensor> grads(t.last_gradients().begin(), t.last_gradients().end());
  std::map<std::string, rt::Tensor> updates(t.last_updates().begin(), t.last_updates().end());
  for (const rt::ParamState& p : t.executor().params()) {
    TrainView::Param row{p.name, p.value, std::nullopt, std::nullopt, std::nullopt};
    if (auto g = grads.find(p.name); g != grads.end()) {
      row.grad = g->second;
      row.lr = t.learning_rate(p.name);
    }
    if (auto u = updates.find(p.name); u != updates.end()) row.update = u->second;
    v->params.push_back(std::move(row));
  }
  for (rt::CheckpointTensor& e : t.optimizer_state()) {
    if (e.value.defined()) v->optimizer.emplace_back(e.name, std::move(e.value));
  }
  v->drift = drift_;
  return v;
}

// ---- hooks (worker thread, mutex held) ----------------------------------------------------------

rt::HookAction Runner::train_before(const rt::NodeEvent& e, std::unique_lock<std::mutex>& lock) {
  sync_step_executor();
  if (e.index >= program_.forward_count || !program_.index.nodes[e.index].stoppable)
    return rt::HookAction::Continue;
  rt::HookAction a = rt::HookAction::Continue;
  if (boundary_step_ && program_.training->trainer->steps_started() >= *boundary_step_) {
    boundary_step_.reset();
    prev_node_ = e.index;
    a = pause_for(boundary_reason_, "");
    stop_.boundary = true;
  } else if (interrupt_.exchange(false)) {
    prev_node_ = e.index;
    a = pause_for("pause", "");
  } else {
    a = before(e.index);
  }
  if (a != rt::HookAction::Pause) return a;
  return block(lock, e.index, false) ? rt::HookAction::Continue : rt::HookAction::Abort;
}

rt::HookAction Runner::train_after(const rt::NodeEvent& e, std::unique_lock<std::mutex>& lock) {
  if (e.index >= program_.forward_count) return rt::HookAction::Continue;
  rt::HookAction a = after(e);
  if (a != rt::HookAction::Pause && e.index == loss_node() && filters_.count("loss-nan") &&
      !e.outputs.empty() && e.outputs[0].numel() == 1) {
    const double loss = e.outputs[0].at(0);
    if (!std::isfinite(loss)) {
      a = pause_for("exception", "loss-nan: step " +
                                     std::to_string(program_.training->trainer->steps_started()) +
                                     ": the loss is " + finite_text(loss) + " (node '" +
                                     program_.executor->graph().nodes[e.index].id + "' at " +
                                     program_.executor->node_location(e.index) + ")");
    }
  }
  if (a != rt::HookAction::Pause) return a;
  return block(lock, e.index, true) ? rt::HookAction::Continue : rt::HookAction::Abort;
}

// The gradient filters, before the update of the step.
void Runner::before_update(const rt::StepReport& r, std::unique_lock<std::mutex>& lock) {
  if (terminate_) return;
  const rt::Trainer& t = *program_.training->trainer;
  const int64_t step = t.steps_started();
  grads_step_ = step;
  const std::string at = "step " + std::to_string(step) + ": ";
  std::string text;
  if (filters_.count("grad-nan") || filters_.count("grad-inf")) {
    // The first parameter whose gradient has a NaN (or an infinity), then the message.
    const std::pair<std::string, rt::Tensor>* bad = nullptr;
    rt::TensorStats st;
    bool nan = false;
    for (const auto& entry : t.last_gradients()) {
      st = rt::compute_stats(entry.second);
      nan = filters_.count("grad-nan") && st.nan_count;
      if (nan || (filters_.count("grad-inf") && st.inf_count)) {
        bad = &entry;
        break;
      }
    }
    if (bad) {
      text = (nan ? "grad-nan: " : "grad-inf: ") + at + "the gradient of " + bad->first + " has " +
             std::to_string(nan ? st.nan_count : st.inf_count) +
             (nan ? " NaN of " : " infinite of ") + std::to_string(st.count) +
             " elements, first at index " +
             rt::index_str(bad->second.shape(), nan ? st.first_nan : st.first_inf);
    }
  }
  // The parameter with the largest gradient norm, for the norm filters' message.
  auto largest = [&] {
    std::string best;
    double best_norm = -1;
    for (const auto& [name, g] : t.last_gradients()) {
      const double n = rt::global_norm(std::span<const rt::Tensor>(&g, 1));
      if (n > best_norm) {
        best_norm = n;
        best = name;
      }
    }
    return best.empty() ? std::string() : " (largest: " + best + ", norm " + num(best_norm) + ")";
  };
  if (text.empty() && filters_.count("grad-explode") && std::isfinite(r.grad_norm)) {
    const double limit =
        filter_values_.count("grad-explode") ? filter_values_["grad-explode"] : kGradExplode;
    if (r.grad_norm > limit) {
      text = "grad-explode: " + at + "the global gradient norm " + num(r.grad_norm) + " is above " +
             num(limit) + largest();
    }
  }
  if (text.empty() && filters_.count("grad-vanish") && std::isfinite(r.grad_norm)) {
    const double limit =
        filter_values_.count("grad-vanish") ? filter_values_["grad-vanish"] : kGradVanish;
    if (r.grad_norm < limit) {
      text = "grad-vanish: " + at + "the global gradient norm " + num(r.grad_norm) + " is below " +
             num(limit) + largest();
    }
  }
  if (text.empty()) return;
  pause_for("exception", text);
  block(lock, loss_node(), true);
}

// The end of a step: its event, line and progress, then the loss and weight filters.
void Runner::after_step(const rt::StepReport& r, std::unique_lock<std::mutex>& lock) {
  const rt::Trainer& t = *program_.training->trainer;
  last_report_ = r;
  updates_step_ = r.global_step;
  const double per_s = r.ms > 0 ? static_cast<double>(r.samples) * 1000.0 / r.ms : 0.0;
  json ev = {{"file", canonical(program_.path)},
             {"cell", program_cell(program_)},
             {"epoch", r.epoch},
             {"step", r.step},
             {"globalStep", r.global_step},
             {"loss", number_or_null(r.loss)},
             {"lr", number_or_null(r.learning_rate)},
             {"gradNorm", number_or_null(r.grad_norm)},
             {"lossScale", number_or_null(r.loss_scale)},
             {"skipped", r.skipped},
             {"stepMs", r.ms},
             {"samplesPerSec", per_s}};
  const std::optional<int64_t> total = t.total_steps();
  if (total) ev["totalSteps"] = *total;
  channel_.event("cellscope.trainStep", ev);
  std::ostringstream line;
  line << "epoch: " << r.epoch << " step: " << r.step << ", loss is " << r.loss << " ("
       << fixed(r.ms, 1) << " ms, " << fixed(per_s, 0) << " samples/s"
       << (r.skipped ? ", update skipped: gradients overflowed at loss scale " + num(r.loss_scale)
                     : "")
       << ")";
  channel_.output(line.str());
  if (progress_) {
    json p = {
        {"progressId", "cellscope.train"},
        {"message", "step " + std::to_string(r.global_step) +
                        (total ? "/" + std::to_string(*total) : "") + ", loss " + num(r.loss)}};
    if (total && *total > 0)
      p["percentage"] = 100.0 * static_cast<double>(r.global_step) / static_cast<double>(*total);
    channel_.event("progressUpdate", p);
  }

  const std::string at = "step " + std::to_string(r.global_step) + ": ";
  std::string text;
  if (filters_.count("loss-spike") && std::isfinite(r.loss) &&
      losses_.size() >= kLossSpikeMinSteps) {
    const size_t n = std::min(losses_.size(), kLossWindow);
    double mean = 0;
    for (size_t k = losses_.size() - n; k < losses_.size(); ++k) mean += losses_[k];
    mean /= static_cast<double>(n);
    const double factor =
        filter_values_.count("loss-spike") ? filter_values_["loss-spike"] : kLossSpikeFactor;
    if (mean > 0 && r.loss > factor * mean) {
      text = "loss-spike: " + at + "the loss " + num(r.loss) + " is " + num(r.loss / mean) +
             " times the mean of the previous " + std::to_string(n) + " steps (" + num(mean) +
             "), above the factor " + num(factor);
    }
  }
  if (text.empty() && filters_.count("weight-unchanged") && !r.skipped) {
    std::map<std::string, rt::Tensor> grads(t.last_gradients().begin(), t.last_gradients().end());
    const std::string* unchanged = nullptr;
    for (const auto& [name, u] : t.last_updates()) {
      if (rt::compute_stats(u).all_zero()) {
        unchanged = &name;
        break;
      }
    }
    if (unchanged) {
      const rt::Tensor& g = grads.at(*unchanged);
      text = "weight-unchanged: " + at + *unchanged + " did not change (its gradient's norm is " +
             num(rt::global_norm(std::span<const rt::Tensor>(&g, 1))) + ", its learning rate " +
             num(t.learning_rate(*unchanged)) + ")";
    }
  }
  if (std::isfinite(r.loss)) losses_.push_back(r.loss);
  if (text.empty()) return;
  pause_for("exception", text);
  block(lock, loss_node(), true);
}

// ---- the worker ---------------------------------------------------------------------------------

void Runner::run_training() {
  rt::Trainer& trainer = *program_.training->trainer;
  const auto t0 = std::chrono::steady_clock::now();
  if (progress_) {
    std::unique_lock lock(m_);
    json p = {{"progressId", "cellscope.train"},
              {"title", "Training " + program_cell(program_)},
              {"cancellable", false}};
    if (auto total = trainer.total_steps()) p["message"] = std::to_string(*total) + " steps";
    channel_.event("progressStart", p);
  }
  auto end_progress = [&](const std::string& message) {
    if (progress_) {
      channel_.event("progressEnd", {{"progressId", "cellscope.train"}, {"message", message}});
    }
  };
  try {
    for (;;) {
      {
        std::unique_lock lock(m_);
        if (terminate_) break;
        prev_node_.reset();  // a step's first line is a new line
      }
      std::optional<rt::StepReport> r = trainer.step();
      std::unique_lock lock(m_);
      if (terminate_) break;
      if (!r) {
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        end_progress("done");
        channel_.output("cellscope: trained " + std::to_string(trainer.steps_started()) +
                        " steps in " + fixed(ms / 1000.0, 2) + " s");
        finish_training(lock);
        return;
      }
      after_step(*r, lock);
    }
  } catch (const rt::TrainingAborted&) {
    // terminate: nothing is written
  } catch (const rt::RuntimeError& e) {
    // A kernel error (or the Trainer's own refusal): with the kernel-error filter, a stop at the
    // failing node first.
    std::unique_lock lock(m_);
    end_progress("failed");
    if (!terminate_) {
      channel_.output(
          "cellscope: training failed: " + std::string(e.what()) + " (no checkpoint written)",
          "stderr");
      if (!stop_on_kernel_error(lock, e)) {
        state_ = RunState::Done;
        return;
      }
      state_ = RunState::Done;
      channel_.event("exited", {{"exitCode", 1}});
      channel_.event("terminated");
      return;
    }
  } catch (const std::exception& e) {
    std::unique_lock lock(m_);
    end_progress("failed");
    if (!terminate_) {
      channel_.output(
          "cellscope: training failed: " + std::string(e.what()) + " (no checkpoint written)",
          "stderr");
      state_ = RunState::Done;
      channel_.event("exited", {{"exitCode", 1}});
      channel_.event("terminated");
      return;
    }
  }
  std::unique_lock lock(m_);
  state_ = RunState::Done;
}

int64_t Runner::current_step() const {
  return failed_step_ ? *failed_step_ : program_.training->trainer->steps_started();
}

bool Runner::stop_on_kernel_error(std::unique_lock<std::mutex>& lock, const rt::RuntimeError& e) {
  if (!filters_.count("kernel-error") || !e.node()) return true;
  sync_step_executor();  // the executor that failed is the Trainer's step executor
  size_t node = *e.node();
  if (node >= program_.index.nodes.size()) node = loss_node();
  // The Trainer no longer counts the failed step as started: the stop shows it.
  failed_step_ = program_.training->trainer->steps_started() + 1;
  pause_for("exception", "RuntimeError: " + std::string(e.what()));
  // Before the node (it did not run): its inputs and the step's values so far are inspectable.
  return block(lock, node, false);
}

// After the last step (worker, mutex held): joint's inference half (and its drift stop), then
// the checkpoint, the model the file's ms.export call describes, and the artifacts event.
void Runner::finish_training(std::unique_lock<std::mutex>& lock) {
  TrainProgram& tp = *program_.training;
  const LaunchConfig& config = program_.config;
  const std::vector<rt::CheckpointTensor> trained = tp.trainer->checkpoint();
  int exit_code = 0;
  if (config.mode == Mode::Joint) {
    try {
      graphcore::CellReport network = compile_network(tp, config);
      rt::EvalOptions eo;
      eo.batches = config.eval_batches;
      if (config.data) eo.data_dir = fs::path(*config.data);
      eo.batch = config.batch;
      eo.seed = config.exec.seed;
      const auto t0 = std::chrono::steady_clock::now();
      rt::EvalReport e = rt::evaluate_top1(tp.plan(), network, trained, eo);
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      channel_.output("inference (fp32): top-1 accuracy " + fixed(100.0 * e.accuracy(), 2) + "% (" +
                      std::to_string(e.correct) + " of " + std::to_string(e.samples) +
                      " samples, " + std::to_string(e.batches) + " batches of the " + e.split +
                      " split, " + fixed(ms, 1) + " ms)" +
                      (e.note.empty() ? std::string() : "; " + e.note));
      report_drift(network, trained);
    } catch (const std::exception& e) {
      channel_.output("cellscope: the inference half failed: " + std::string(e.what()), "stderr");
      exit_code = 1;
    }
    if (!stop_on_drift(lock)) return;  // terminated: nothing is written
  }
  // The trained parameters and optimizer state, next to the file (atomic).
  const fs::path file(program_.path);
  const fs::path out = file.parent_path() / (file.stem().string() + "_trained.ckpt");
  json artifacts = {{"file", canonical(program_.path)}, {"cell", program_cell(program_)}};
  try {
    rt::write_checkpoint(out, trained);
    channel_.output("cellscope: wrote the trained checkpoint " + out.string());
    artifacts["checkpoint"] = out.string();
    export_trained(out.string(), artifacts);
  } catch (const std::exception& e) {
    channel_.output("cellscope: cannot write the checkpoint: " + std::string(e.what()), "stderr");
    exit_code = 1;
  }
  if (artifacts.contains("checkpoint")) channel_.event("cellscope.sessionArtifacts", artifacts);
  state_ = RunState::Done;
  channel_.event("exited", {{"exitCode", exit_code}});
  channel_.event("terminated");
}

// The session's stop after the inference half, per `stopOnDrift` (docs/dap.md): when a layer's
// cosine falls under the threshold, at that layer's node (an exception, `precision-drift`);
// with "always" and no such layer, at the network's output (a pause). The Precision drift scope
// shows the report (make_train_view).
bool Runner::stop_on_drift(std::unique_lock<std::mutex>& lock) {
  if (!drift_ || program_.config.stop_on_drift == DriftStop::Never) return true;
  const rt::DriftReport& d = *drift_;
  const bool below = !d.first_below.empty();
  if (!below && program_.config.stop_on_drift != DriftStop::Always) return true;
  const std::string precision(rt::eval_precision_name(d.precision));
  const rt::Executor& ex = *program_.executor;
  // The layer's node in the training step's graph (the network's ids, as the drift names them).
  auto node_of = [&](const std::string& id) -> std::optional<size_t> {
    if (id.empty()) return std::nullopt;
    auto n = ex.find_node(id);
    if (n && *n < program_.forward_count && *n < program_.index.nodes.size()) return n;
    return std::nullopt;
  };
  std::string text;
  size_t node = loss_node();
  if (below) {
    const auto layer = std::find_if(d.layers.begin(), d.layers.end(), [&](const rt::LayerDrift& l) {
      return l.node == d.first_below;
    });
    text = "precision-drift: at " + precision + " the cosine of layer '" + d.first_below + "'";
    if (layer != d.layers.end()) {
      text += " (" + layer->op + " at " + fs::path(layer->file).filename().string() + ":" +
              std::to_string(layer->line) + ") is " + num(layer->cosine);
    }
    text += ", under " + num(d.threshold) + "; top-1 agreement " + num(d.top1_agreement) +
            " (see the Precision drift scope)";
    if (auto n = node_of(d.first_below)) node = *n;
    pause_for("exception", text);
  } else {
    text = "precision drift (" + precision + "): every layer's cosine is at least " +
           num(d.threshold) + "; top-1 agreement " + num(d.top1_agreement) +
           " (see the Precision drift scope)";
    if (auto n = node_of(d.logits)) node = *n;
    pause_for("pause", text);
  }
  return block(lock, node, true);
}

// The file's own ms.export(...) call, written from the trained checkpoint with the exporter of
// `cellscope export` (server/model_export.h), next to the file when its file_name is relative.
void Runner::export_trained(const std::string& checkpoint, json& artifacts) {
  const graphcore::AnalysisResult& analysis = program_.training->analysis;
  if (analysis.exports.empty()) return;  // the file exports nothing
  // What the file asks for and was not done: on stderr, and in the event's `notes`.
  auto note = [&](const std::string& text) {
    channel_.output("cellscope: " + text, "stderr");
    artifacts["notes"].push_back(text);
  };
  if (analysis.exports.size() > 1) {
    note("no model exported: the file calls ms.export " + std::to_string(analysis.exports.size()) +
         " times (cellscope export FILE --cell ... -o ... writes one)");
    return;
  }
  const graphcore::ExportCall& call = analysis.exports.front();
  std::string why;
  const std::optional<server::CallExport> target = server::export_of_call(call, &why);
  const std::string at = fs::path(call.call.file).filename().string() + ":" +
                         std::to_string(call.call.range.start.line + 1);
  if (!target) {
    note("no model exported: the ms.export call at " + at + ": " + why);
    return;
  }
  server::ModelExportRequest request;
  request.file = program_.path;
  request.analysis = program_.config.analysis;
  request.analysis.cell = call.cell;
  request.analysis.entries.clear();
  request.analysis.inputs = call.inputs;
  request.inputs_given = true;
  request.export_call = call.call;
  request.format = target->format;
  fs::path output(target->output);
  if (output.is_relative()) output = fs::path(program_.path).parent_path() / output;
  request.output = output;
  request.checkpoint = checkpoint;
  request.seed = program_.config.exec.seed;
  graphcore::DiskSourceProvider sources;
  const server::ModelExportOutcome outcome = server::export_model(request, sources);
  if (outcome.status != server::ModelExportOutcome::Status::kWritten) {
    std::string reasons;
    for (const auto& d : outcome.diagnostics) reasons += "; " + d.message;
    for (const auto& e : outcome.errors) reasons += "; " + e;
    note("no model exported: the ms.export call at " + at + " was refused" + reasons);
    return;
  }
  channel_.output("cellscope: wrote " + outcome.output + " (" + outcome.summary + ", " +
                  std::to_string(outcome.bytes) + " bytes), as the ms.export call at " + at +
                  " asks, from the trained checkpoint");
  artifacts[target->format] = outcome.output;
}

// The precision-drift report of the joint mode: the trained network at fp32 against the launch
// configuration's `precision` (target: fp16 storage, fp32 accumulation; int8: post-training
// quantisation calibrated on `calibrationBatches`), layer by layer (graphcore/drift.h), printed as
// a table in the Debug Console and sent as the `cellscope.drift` event (docs/dap.md), which the
// extension relays to the graph view's drift overlay. Its node ids are the network's (the loss
// graph's nodes under the network's own scope), as the view and `cellscope.focus` name them.
void Runner::report_drift(const graphcore::CellReport& network,
                          const std::vector<rt::CheckpointTensor>& params) {
  const LaunchConfig& config = program_.config;
  const auto precision = rt::eval_precision_from_name(config.precision);
  if (!precision || *precision == rt::EvalPrecision::Fp32) return;  // nothing to compare
  rt::DriftOptions o;
  o.precision = *precision;
  o.eval_batches = config.eval_batches;
  o.calibration_batches = config.calibration_batches;
  o.cosine_threshold = config.drift_threshold;
  o.seed = config.exec.seed;
  if (config.data) o.data_dir = fs::path(*config.data);
  o.batch = config.batch;
  const auto t0 = std::chrono::steady_clock::now();
  drift_ = rt::measure_drift(program_.training->plan(), params, o);
  const rt::DriftReport& r = *drift_;
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  channel_.output(rt::drift_table_text(r) + "(measured in " + fixed(ms, 1) + " ms)");
  json layers = json::array();
  for (const rt::LayerDrift& d : r.layers) {
    layers.push_back({{"node", d.node},
                      {"op", d.op},
                      {"scope", d.scope},
                      {"maxAbs", number_or_null(d.max_abs)},
                      {"maxRel", number_or_null(d.max_rel)},
                      {"cosine", number_or_null(d.cosine)},
                      {"overflows", d.fp16_overflows}});
  }
  json ev = {{"file", canonical(program_.path)},
             {"cell", network.name.empty() ? program_cell(program_) : network.name},
             {"precision", std::string(rt::eval_precision_name(r.precision))},
             {"threshold", r.threshold},
             {"layers", std::move(layers)},
             {"firstBelow", r.first_below},
             {"top1Agreement", number_or_null(r.top1_agreement)},
             {"samples", r.samples}};
  if (r.accuracy_fp32) ev["accuracyFp32"] = number_or_null(*r.accuracy_fp32);
  if (r.accuracy_precision) ev["accuracyPrecision"] = number_or_null(*r.accuracy_precision);
  channel_.event("cellscope.drift", ev);
}

}  // namespace cellscope::dap
