// The bridge from the language server to the graph view (server/view/): starts the view server on
// first use, keeps the debugger's focus for it, and gives it a document for every analysis of a
// file a view follows. It knows nothing of LSP: logging and revealing a range in the editor are
// the ViewBridgeHooks the composition (server.cpp) installs.
//
// Comparisons (view.proto's CompareRequest): a view asks to compare its file with the file as of
// git HEAD or with another model file; the base is analysed on the worker (server/compare_base.h)
// and handed to the view server, which compares every later document of the file with it. The
// base is built again when the settings or the views' input shapes change (a HEAD base is
// analysed with the file's own options, input shapes included).
//
// Thread-safety: current() and worker_analysed() may be called from any thread (the analysis
// worker calls worker_analysed); the view server pointer and the debug focus are guarded by a
// mutex. Every other member function runs on the I/O thread. The view server's own handlers
// (subscribed, reveal) come from its thread and are posted to the I/O thread. Documents for a
// view are built on the analysis worker (AnalysisScheduler::submit), never on the I/O thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "graphcore/analysis.h"
#include "lsp/features.h"
#include "lsp/scheduler.h"
#include "view/view_server.h"

namespace cellscope::lsp {

struct ViewBridgeHooks {
  // The options to analyse `path` with for a view, under the current settings (I/O thread).
  std::function<graphcore::AnalysisOptions(const std::string& path)> options_for;
  // The view asked to show a source range in the editor (I/O thread).
  std::function<void(const protocol::RevealRequest& reveal)> reveal;
  // A message for the user (LSP MessageType: 3 = info) (I/O thread).
  std::function<void(int type, const std::string& message)> log;
};

class ViewBridge : public std::enable_shared_from_this<ViewBridge> {
 public:
  ViewBridge(boost::asio::io_context& io, AnalysisScheduler& scheduler);
  // Installs the hooks (before the first ensure()).
  void set_hooks(ViewBridgeHooks hooks) { hooks_ = std::move(hooks); }

  // The view server, or nullptr before the first ensure(). Any thread.
  std::shared_ptr<server::view::ViewServer> current();
  // Starts the view server on first use. Throws std::runtime_error when it cannot listen.
  std::shared_ptr<server::view::ViewServer> ensure();
  // Stops the view server, if it was started.
  void stop();
  // Keeps the debugger's focus (an empty node clears it) for views started later and passes it
  // to the running views; returns how many views showed it.
  size_t set_debug_focus(const protocol::DebugFocus& focus);
  // Training messages (view.proto's TrainStep, PrecisionDrift; a reset when a debug session of the
  // file starts), relayed by the editor from `cellscope dap`: passed to the view server, started
  // if need be (it keeps the run for views opened later; ViewServer::train_step). I/O thread.
  // Throws std::runtime_error when the server cannot listen. Return how many views got it.
  size_t train_step(const protocol::TrainStep& step, const std::string& session);
  size_t train_drift(const protocol::PrecisionDrift& drift, const std::string& session);
  size_t train_reset(const std::string& file, const std::string& session);
  // A deployed model's telemetry sample (view.proto's DeviceSample), relayed by the editor from
  // `cellscope deploy --watch`: passed to the view server, started if need be (it keeps the
  // samples for views opened later; ViewServer::device_sample). I/O thread. Throws as above.
  size_t device_sample(const protocol::DeviceSample& sample, const std::string& session);

  // On the worker thread, after an analysis of `job.path`: a new document for the views
  // following that file.
  void worker_analysed(const Job& job, const FileAnalysis& fa, graphcore::SourceProvider& sources);

  // The settings analyses run under changed (the client's, or mindspore_config.json): views of
  // files that are not open in the editor get a new document (open ones are re-analysed by the
  // scheduler, which publishes to their views).
  void settings_changed();

 private:
  // A view started following `path`: give it a document.
  void subscribed(const std::string& path);
  void rebuild_from_disk(const std::shared_ptr<server::view::ViewServer>& vs,
                         const std::string& path, Overlay overlay);
  // A view asked to compare `path` with `spec` ("HEAD", a .py file; "" stops comparing).
  void set_compare(const std::string& path, const std::string& spec);
  // Analyses the base of `path`'s comparison (again), on the worker.
  void rebuild_base(const std::shared_ptr<server::view::ViewServer>& vs, const std::string& path,
                    const Overlay& overlay);
  // A view set the input shapes of `path` (empty: back to the settings).
  void set_inputs(const std::string& path, std::vector<graphcore::TensorType> inputs);
  // The input shapes the views of `path` set, if they set some. Any thread.
  std::optional<std::vector<graphcore::TensorType>> input_override(const std::string& path);
  // The settings' analysis options of `path` with the views' input shapes, if they set some.
  graphcore::AnalysisOptions view_options(const std::string& path);

  // Input shapes the views set per file (view.proto's InputsRequest), guarded by mutex_: the
  // worker reads them when it publishes an editor analysis.
  std::map<std::string, std::vector<graphcore::TensorType>> input_overrides_;
  // What each compared file is compared with ("HEAD" or a path), by file. I/O thread.
  std::map<std::string, std::string> compares_;
  boost::asio::io_context& io_;
  AnalysisScheduler& scheduler_;
  ViewBridgeHooks hooks_;
  std::mutex mutex_;
  std::shared_ptr<server::view::ViewServer> view_server_;  // guarded by mutex_
  // The debugger's focus (cellscope.debugFocus, relayed by the editor from `cellscope dap`): kept
  // for a view server started while paused. Guarded by mutex_.
  std::optional<protocol::DebugFocus> debug_focus_;
};

// The Cell "under the cursor" at `line` (0-based; negative: none), the one the graph view opens
// on: the innermost root whose definition holds the line (a factory `def resnet50`, a class built
// with its defaults); else a root built from the class the cursor is in (`class ResNet`, built
// by the factories); else the first root ("" when there is none). Never a private helper: those
// are not roots.
std::string cell_at(const FileAnalysis& fa, int64_t line);

}  // namespace cellscope::lsp
