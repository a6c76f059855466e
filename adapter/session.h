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
#include "protocol.h"
#include "variables.h"

namespace cellscope::dap {

// A launched model: what `launch` built.
struct Program {
  std::string path;  // the program as given in the launch configuration
  std::unique_ptr<graphcore::runtime::Executor> executor;
  GraphIndex index;
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
  // Nodes computed so far (in execution order).
  [[nodiscard]] size_t computed_end() const { return after ? node + 1 : node; }
};

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

  // Starts the run on the worker thread (from Idle).
  void start();
  // Resumes a stopped run; `mode` steps (None: continue).
  void resume(StepMode mode);
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

  Channel& channel_;
  std::mutex m_;
  std::condition_variable cv_;

  Program program_;
  BreakpointTable breakpoints_;
  std::set<std::string> filters_;
  VarRefs refs_;

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
