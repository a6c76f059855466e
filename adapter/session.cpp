// The run of a launched model in `cellscope dap`: see session.h.
#include "session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

namespace cellscope::dap {

namespace rt = graphcore::runtime;

namespace {
constexpr const char* kTensorFilters[] = {"nan", "inf", "fp16-overflow", "all-zero"};
}  // namespace

// ---- graph view focus ---------------------------------------------------------------------------
// The custom event `cellscope.focus` tells the editor which graph node the run is paused on (the
// extension relays it to the graph view, docs/dap.md): sent with every stop (just before
// `stopped`), cleared (an empty `node`) when the run resumes or ends.

std::string program_cell(const Program& program) {
  if (program.training) return program.training->plan().network;
  return program.executor ? program.executor->report().name : std::string();
}

json focus_body(const Program& program, const Stop& stop) {
  const rt::Executor& ex = *program.executor;
  const graphcore::Node& n = ex.graph().nodes[stop.node];
  const NodeInfo& ni = program.index.nodes[stop.node];
  json b = {{"file", canonical(program.path)},
            {"cell", program_cell(program)},
            {"node", n.id},
            {"op", std::string(n.op)},
            {"scope", std::string(n.scope)},
            {"source", ni.file},
            {"line", ni.line},
            {"reason", stop.reason},
            {"ran", stop.after}};
  if (!stop.text.empty()) b["description"] = stop.text;
  // The live tensor: the node's output once it ran, else the first tensor flowing into it.
  const rt::Tensor* t = nullptr;
  std::string tensor;
  if (stop.after) {
    t = ex.value(stop.node, 0);
    tensor = n.id;
  } else {
    for (const graphcore::ValueRef& in : n.inputs) {
      t = ex.value(in);
      if (t && t->defined()) {
        tensor = ex.graph().nodes[in.node].id;
        if (in.output) tensor += "[" + std::to_string(in.output) + "]";
        break;
      }
    }
  }
  if (!t || !t->defined()) return b;
  b["tensor"] = tensor;
  b["shape"] = t->shape();
  b["dtype"] = std::string(graphcore::dtype_name(t->dtype()));
  json stats = {{"numel", t->numel()}};
  if (t->numel() > 0) {
    rt::TensorStats st = rt::compute_stats(*t);
    // JSON has no NaN/Inf: statistics over no finite value are left out.
    for (auto [k, v] : {std::pair<const char*, double>{"min", st.min},
                        {"max", st.max},
                        {"mean", st.mean},
                        {"std", st.std}})
      if (std::isfinite(v) && st.count > st.nan_count + st.inf_count) stats[k] = v;
    stats["nan"] = st.nan_count;
    stats["inf"] = st.inf_count;
    stats["zeros"] = st.zero_count;
  }
  b["stats"] = stats;
  return b;
}

void Runner::send_focus() {
  channel_.event("cellscope.focus", focus_body(program_, stop_));
  focus_sent_ = true;
}

// The run is at stop_ (state Stopped): the `stopped` event (reason, description, hit
// breakpoints), the graph view's focus, then the wait for a resume. False when the wait ended in
// terminate.
bool Runner::announce_stop_and_wait(std::unique_lock<std::mutex>& lock) {
  json body = {{"reason", stop_.reason},
               {"threadId", kThreadId},
               {"allThreadsStopped", true},
               {"preserveFocusHint", false}};
  if (!stop_.text.empty()) {
    body["description"] = stop_.text;
    body["text"] = stop_.text;
  }
  if (stop_.reason == "breakpoint") body["hitBreakpointIds"] = stop_.hit_ids;
  step_ = StepMode::None;
  resume_ = false;
  send_focus();
  channel_.event("stopped", body);
  cv_.wait(lock, [this] { return resume_ || terminate_; });
  return !terminate_;
}

void Runner::clear_focus() {
  if (!focus_sent_) return;
  focus_sent_ = false;
  channel_.event(
      "cellscope.focus",
      {{"file", canonical(program_.path)}, {"cell", program_cell(program_)}, {"node", ""}});
}

// ---- state --------------------------------------------------------------------------------------

Inspector Runner::inspector() const {
  Inspector in(*program_.executor, program_.index, stop_.computed_end());
  in.set_scalars(training_scalars());
  return in;
}

std::vector<std::pair<std::string, double>> Runner::training_scalars() const {
  if (!program_.training) return {};
  const rt::Trainer& t = *program_.training->trainer;
  return {{"step", static_cast<double>(current_step())}, {"epoch", static_cast<double>(t.epoch())}};
}

void Runner::start() {
  state_ = RunState::Running;
  if (program_.training) {
    if (program_.stop_on_entry) boundary_step_ = 1;
    boundary_reason_ = "entry";
    worker_ = std::thread([this] { run_training(); });
    return;
  }
  entry_pending_ = program_.stop_on_entry;
  worker_ = std::thread([this] { run(); });
}

void Runner::resume(StepMode mode) {
  const NodeInfo& ni = program_.index.nodes[stop_.node];
  step_ = mode;
  step_frame_ = ni.frame;
  step_line_ = ni.line;
  step_file_ = ni.file;
  // The paused-at node counts as "seen": a step does not stop on its own line again.
  prev_node_ = stop_.node;
  if (step_ == StepMode::Out && ni.frame.empty()) step_ = StepMode::None;  // out of the root
  // At the top of a training step, `next` runs the whole step (docs/dap.md).
  if (program_.training && stop_.boundary && mode == StepMode::Over) {
    step_ = StepMode::None;
    boundary_step_ = program_.training->trainer->steps_started() + 1;
    boundary_reason_ = "step";
  }
  resume_ = true;
  cv_.notify_all();
}

void Runner::step_training() {
  resume(StepMode::None);
  // The rest of this step (a stop between steps counts as the last one's end), then the top of
  // the next.
  boundary_step_ = program_.training->trainer->steps_started() + 1;
  boundary_reason_ = "step";
}

void Runner::finish() { state_ = RunState::Done; }

void Runner::stop() {
  {
    std::unique_lock lock(m_);
    terminate_ = true;
    cv_.notify_all();
  }
  if (worker_.joinable()) worker_.join();
}

// ---- hooks (worker thread, mutex held) ----------------------------------------------------------

rt::HookAction Runner::pause_for(const std::string& reason, const std::string& text) {
  stop_.reason = reason;
  stop_.text = text;
  return rt::HookAction::Pause;
}

// Whether to stop before node `i`.
rt::HookAction Runner::before(size_t i) {
  const NodeInfo& ni = program_.index.nodes[i];
  if (!ni.stoppable) return rt::HookAction::Continue;
  bool new_line = true;
  if (prev_node_) {
    const NodeInfo& p = program_.index.nodes[*prev_node_];
    new_line = !(p.frame == ni.frame && p.line == ni.line && p.file == ni.file);
  }
  prev_node_ = i;
  if (entry_pending_) {
    entry_pending_ = false;
    return pause_for("entry", "");
  }
  if (!new_line) return rt::HookAction::Continue;
  if (Breakpoint* bp = breakpoints_.find(ni.file, ni.line)) {
    // Training: the hit count counts steps (every instance reaching the line in one step is
    // that step's hit).
    if (program_.training) {
      const int64_t step = program_.training->trainer->steps_started();
      if (bp->step == step) {
        bp->hits = bp->step_base;
      } else {
        bp->step = step;
        bp->step_base = bp->hits;
      }
    }
    Inspector inspector(*program_.executor, program_.index, i);
    inspector.set_scalars(training_scalars());
    Reached r = reach(*bp, [&](const std::string& expr, std::string* err) {
      return inspector.evaluate(expr, ni.frame, err);
    });
    if (!r.condition_error.empty()) channel_.output(r.condition_error, "stderr");
    if (r.log) {
      channel_.output(*r.log);
    } else if (r.stop) {
      stop_.hit_ids = {bp->id};
      return pause_for("breakpoint", "");
    }
  }
  switch (step_) {
    case StepMode::None:
      break;
    case StepMode::In:
      return pause_for("step", "");
    case StepMode::Over: {
      bool inside = std::find(ni.chain.begin(), ni.chain.end(), step_frame_) != ni.chain.end();
      if (!inside || (ni.frame == step_frame_ && (ni.line != step_line_ || ni.file != step_file_)))
        return pause_for("step", "");
      break;
    }
    case StepMode::Out:
      if (std::find(ni.chain.begin(), ni.chain.end(), step_frame_) == ni.chain.end())
        return pause_for("step", "");
      break;
  }
  return rt::HookAction::Continue;
}

// The exception filters, after node `e.index` ran.
rt::HookAction Runner::after(const rt::NodeEvent& e) {
  // Only the tensor filters look at outputs (the training filters and kernel-error do not).
  const bool tensor_filters = std::any_of(std::begin(kTensorFilters), std::end(kTensorFilters),
                                          [&](const char* id) { return filters_.count(id) != 0; });
  if (!tensor_filters || !program_.index.nodes[e.index].stoppable) return rt::HookAction::Continue;
  if (auto text = filter_exception(filters_, e, *program_.executor))
    return pause_for("exception", *text);
  return rt::HookAction::Continue;
}

// ---- the worker ---------------------------------------------------------------------------------

void Runner::run() {
  rt::Executor& ex = *program_.owned;
  rt::Hooks hooks;
  hooks.before = [this](const rt::NodeEvent& e) {
    if (terminate_) return rt::HookAction::Abort;
    std::lock_guard lock(m_);
    return before(e.index);
  };
  hooks.after = [this](const rt::NodeEvent& e) {
    if (terminate_) return rt::HookAction::Abort;
    std::lock_guard lock(m_);
    return after(e);
  };
  hooks.interrupt = &interrupt_;
  double run_ms = 0;
  for (;;) {
    auto t0 = std::chrono::steady_clock::now();
    rt::RunStatus s = ex.run(hooks);
    run_ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::unique_lock lock(m_);
    // A kernel error stops at the failing node (not run) so that its inputs and the stack can
    // be inspected; any resume then ends the session.
    const bool fatal = s.kind == rt::RunStatus::Kind::Error;
    if (fatal && !terminate_) {
      channel_.output("cellscope: runtime error: " + s.message, "stderr");
      stop_.reason = "exception";
      stop_.text = "RuntimeError: " + s.message;
    }
    if (s.kind == rt::RunStatus::Kind::Paused || (fatal && s.node < program_.index.nodes.size())) {
      if (terminate_) break;
      state_ = RunState::Stopped;
      stop_.node = s.node;
      stop_.after = s.after;
      if (stop_.reason.empty()) stop_.reason = "pause";
      if (!announce_stop_and_wait(lock)) break;
      clear_focus();
      if (fatal) {
        state_ = RunState::Done;
        channel_.event("exited", {{"exitCode", 1}});
        channel_.event("terminated");
        return;
      }
      stop_.reason.clear();
      stop_.text.clear();
      stop_.hit_ids.clear();
      refs_.clear();
      state_ = RunState::Running;
      continue;
    }
    state_ = RunState::Done;
    if (s.kind == rt::RunStatus::Kind::Finished) {
      const size_t ran = ex.graph().nodes.size();
      channel_.output("cellscope: ran " + std::to_string(ran) + " nodes in " + num(run_ms) + " ms");
      auto outs = ex.outputs();
      for (size_t i = 0; i < outs.size(); ++i) {
        channel_.output("output " + std::to_string(i) + ": " + tensor_summary(outs[i]) + " " +
                        outs[i].preview(6));
      }
      channel_.event("exited", {{"exitCode", 0}});
    } else if (fatal) {
      channel_.event("exited", {{"exitCode", 1}});
    }
    if (!terminate_) channel_.event("terminated");
    return;
  }
  state_ = RunState::Done;
}

}  // namespace cellscope::dap
