// The run of a launched model in `cellscope dap`: the worker thread that runs the executor with
// before/after hooks, the stops they decide (entry, breakpoints, logpoints, stepping, exception
// filters, pause, runtime errors), resume, pause and terminate, and the events a run sends
// (`stopped`, `exited`, `terminated`, its output, and the custom `cellscope.focus` that names the
// paused node for the graph view). The requests that inspect a stop are the protocol layer's
// (protocol.h); they read the state kept here.
//
// Threads: the protocol thread (requests) and the worker (hooks). Every member is guarded by
// mutex(), which a request handler holds while it reads or changes the run and answers, and the
// worker holds while a hook decides and while it reports a stop; the worker waits on it while
// paused. pause() and stop() may be called without it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "breakpoints.h"
#include "graph_index.h"
#include "graphcore/runtime.h"
#include "launch_config.h"
#include "protocol.h"
#include "variables.h"

namespace cellscope::dap {

// A launched model: what `launch` built.
struct Program {
  std::string path;  // the program as given in the launch configuration
  LaunchConfig config;
  // infer: the model's executor. train/joint: the training plan and its Trainer.
  std::unique_ptr<graphcore::runtime::Executor> owned;
  std::unique_ptr<TrainProgram> training;
  // What stops show: infer's executor, or the executor of the training step (the Trainer's;
  // its nodes [0, forward_count) are the forward pass, the rest the backward pass).
  const graphcore::runtime::Executor* executor = nullptr;
  size_t forward_count = 0;
  GraphIndex index;  // of `executor`'s graph
  bool stop_on_entry = false;
};

enum class RunState { Idle, Running, Stopped, Done };
enum class StepMode { None, In, Over, Out };

// Where the run is paused (RunState::Stopped), and why.
struct Stop {
  size_t node = 0;
  bool after = false;        // after the node ran (an exception filter), else before it
  std::string reason;        // "entry", "breakpoint", "step", "pause", "exception"
  std::string text;          // the exception's description
  std::vector<int> hit_ids;  // the breakpoint hit
  bool boundary = false;     // train: before the first node of a step (`next` runs the step)
  // Nodes computed so far (in execution order).
  [[nodiscard]] size_t computed_end() const { return after ? node + 1 : node; }
};

// The Cell a stop's events name: the trained network (train/joint) or the Cell run.
std::string program_cell(const Program& program);

// The body of the `cellscope.focus` event for `stop` (docs/dap.md): the paused node, its source
// and its live tensor (the node's output once it ran, else its first computed input).
nlohmann::json focus_body(const Program& program, const Stop& stop);

class Runner {
 public:
  explicit Runner(Channel& channel) : channel_(channel) {}
  ~Runner() { stop(); }
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  std::mutex& mutex() { return m_; }

  // ---- with mutex() held ----
  [[nodiscard]] RunState state() const { return state_; }
  // The launched model (once `launch` succeeded).
  Program& program() { return program_; }
  BreakpointTable& breakpoints() { return breakpoints_; }
  std::set<std::string>& filters() { return filters_; }
  VarRefs& refs() { return refs_; }
  // Valid in RunState::Stopped.
  [[nodiscard]] const Stop& stopped_at() const { return stop_; }
  // What the stop shows (the values computed so far).
  [[nodiscard]] Inspector inspector() const;
  // train/joint: the training state at the stop (nullptr otherwise).
  [[nodiscard]] const TrainView* train_view() const { return train_view_.get(); }
  // The exception filters' conditions (loss-spike's factor, grad-explode's threshold ...).
  std::map<std::string, double>& filter_values() { return filter_values_; }
  // Whether the client shows progress events (initialize's supportsProgressReporting).
  void set_progress_support(bool on) { progress_ = on; }
  // The Trainer's debugging options: this runner's hooks and callback (train/joint launch).
  graphcore::runtime::TrainOptions train_options();

  // Starts the run on the worker thread (from Idle).
  void start();
  // Resumes a stopped run; `mode` steps (None: continue).
  void resume(StepMode mode);
  // train: resumes a stopped run until the start of the next training step.
  void step_training();
  // The session ends without a run (a failed launch) or after terminate.
  void finish();
  // Clears the `cellscope.focus` the last stop sent, if any.
  void clear_focus();

  // ---- any thread, without mutex() ----
  // Stops the run before its next node.
  void pause() { interrupt_ = true; }
  // Stops the worker (if any) and waits for it. Idempotent.
  void stop();

 private:
  void run();
  graphcore::runtime::HookAction before(size_t i);
  graphcore::runtime::HookAction after(const graphcore::runtime::NodeEvent& e);
  graphcore::runtime::HookAction pause_for(const std::string& reason, const std::string& text);
  void send_focus();
  // Sends `stopped` for stop_ (and the focus), then waits for a resume; false on terminate.
  bool announce_stop_and_wait(std::unique_lock<std::mutex>& lock);

  // train/joint (train_session.cpp).
  void run_training();
  graphcore::runtime::HookAction train_before(const graphcore::runtime::NodeEvent& e,
                                              std::unique_lock<std::mutex>& lock);
  graphcore::runtime::HookAction train_after(const graphcore::runtime::NodeEvent& e,
                                             std::unique_lock<std::mutex>& lock);
  void before_update(const graphcore::runtime::StepReport& r, std::unique_lock<std::mutex>& lock);
  void after_step(const graphcore::runtime::StepReport& r, std::unique_lock<std::mutex>& lock);
  // Reports the stop set by pause_for at `node` and waits until resumed (true) or terminated.
  bool block(std::unique_lock<std::mutex>& lock, size_t node, bool after);
  void sync_step_executor();
  [[nodiscard]] size_t loss_node() const;
  [[nodiscard]] std::unique_ptr<TrainView> make_train_view() const;
  // train/joint: `step` and `epoch` for evaluate, conditions and logpoints (empty in infer).
  [[nodiscard]] std::vector<std::pair<std::string, double>> training_scalars() const;
  // The global step running (1-based; the failed one at a kernel-error stop).
  [[nodiscard]] int64_t current_step() const;
  // After the last step: joint's inference half (and its drift stop), the checkpoint, the
  // export, the artifacts event. False when terminated meanwhile.
  void finish_training(std::unique_lock<std::mutex>& lock);
  // joint: the precision-drift report of the trained network (cellscope.drift), kept in drift_.
  void report_drift(const graphcore::CellReport& network,
                    const std::vector<graphcore::runtime::CheckpointTensor>& params);
  // joint: stops after the inference half when `stopOnDrift` asks (the Precision drift scope).
  // False when terminated meanwhile.
  bool stop_on_drift(std::unique_lock<std::mutex>& lock);
  // The model the file's own ms.export(...) call describes, from `checkpoint`, next to the
  // file: adds `mindir`/`onnx` (or a note) to the artifacts event's body.
  void export_trained(const std::string& checkpoint, nlohmann::json& artifacts);
  // A kernel error of a training step: the kernel-error stop at its node. False on terminate.
  bool stop_on_kernel_error(std::unique_lock<std::mutex>& lock,
                            const graphcore::runtime::RuntimeError& e);

  Channel& channel_;
  std::mutex m_;
  std::condition_variable cv_;

  Program program_;
  BreakpointTable breakpoints_;
  std::set<std::string> filters_ = default_filters();
  std::map<std::string, double> filter_values_;
  VarRefs refs_;

  // train/joint
  graphcore::runtime::Hooks train_hooks_;
  bool progress_ = false;
  // Stop before the first forward node of this step (or a later one, when it had none).
  std::optional<int64_t> boundary_step_;
  std::string boundary_reason_ = "step";
  int64_t grads_step_ = 0;    // the step last_gradients() are of
  int64_t updates_step_ = 0;  // the step last_updates() are of
  std::optional<graphcore::runtime::StepReport> last_report_;
  std::vector<double> losses_;  // finite losses of the steps so far
  std::unique_ptr<TrainView> train_view_;
  std::optional<graphcore::runtime::DriftReport> drift_;  // joint, after the inference half
  std::optional<int64_t> failed_step_;  // the step a kernel error failed (its stop)

  RunState state_ = RunState::Idle;
  std::thread worker_;
  std::atomic<bool> interrupt_{false};
  std::atomic<bool> terminate_{false};
  bool resume_ = false;
  StepMode step_ = StepMode::None;
  std::string step_frame_;
  int step_line_ = 0;
  std::string step_file_;
  bool entry_pending_ = false;
  std::optional<size_t> prev_node_;  // last stoppable node whose `before` ran
  Stop stop_;
  bool focus_sent_ = false;  // a `cellscope.focus` event names the paused node
};

}  // namespace cellscope::dap
