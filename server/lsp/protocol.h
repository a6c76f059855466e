// The LSP protocol layer of `cellscope lsp`: lifecycle (initialize, shutdown, exit) and capability
// negotiation, every request and notification handler on the JSON-RPC dispatcher, settings
// changes, diagnostics publication (push and pull), work-done progress, traces and log messages,
// and the workspace symbol index. It turns messages into calls on the AnalysisScheduler (open
// documents, analyses) and the ViewBridge (the graph view), and answers requests with the editor
// features (features.h), pure functions of one analysed snapshot. The conversions between LSP and
// graphcore positions are in convert.h; the negotiation's pure parts in capabilities.h.
//
// Thread-safety: everything runs on the I/O thread (the dispatcher's handlers, the scheduler's
// and the view bridge's hooks), except the workspace indexer thread, which only touches the
// (thread-safe) WorkspaceIndex and sends $/progress notifications through the dispatcher.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "graphcore/diagnostic.h"

#include "lsp/capabilities.h"
#include "lsp/features.h"
#include "lsp/scheduler.h"
#include "lsp/server.h"
#include "lsp/settings.h"
#include "lsp/view_bridge.h"
#include "lsp/workspace_index.h"
#include "model_export.h"
#include "rpc/jsonrpc.h"

namespace cellscope::lsp {

// What the client has been shown about one open document.
struct DocumentFeedback {
  std::string published;  // last diagnostics sent (push), to skip repeats
  // window/workDoneProgress for an analysis still running after progress_delay_ms.
  std::unique_ptr<boost::asio::steady_timer> progress_timer;
  std::string progress_token;  // non-empty: a progress was created for this document
  bool progress_begun = false;
  // The refusals of the last cellscope.export of this document (export-* codes), shown with its
  // diagnostics while the document is at `export_version` (an edit or a successful export
  // clears them).
  std::vector<graphcore::Diagnostic> export_diagnostics;
  int64_t export_version = -1;
  uint64_t export_seq = 0;  // bumped when they change (part of the pull diagnostics' resultId)
};

// One cellscope.export running on its own thread (I/O thread state).
struct ExportJob {
  std::thread thread;
  std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
  std::string progress_token;  // "" when the client shows no progress
  bool progress_begun = false;
  Json last_report;  // the latest report while `begin` waits for the client
  std::function<void(const server::ModelExportOutcome&)> finish;  // answers the request
};

class ProtocolServer : public std::enable_shared_from_this<ProtocolServer> {
 public:
  ProtocolServer(boost::asio::io_context& io, rpc::Dispatcher& rpc, ServerOptions options,
                 AnalysisScheduler& scheduler, ViewBridge& view);

  // Registers every handler on the dispatcher (call once, before messages arrive).
  void attach();
  // At exit or end of input: cancel timers, end progress, answer waiting requests with nothing.
  void wind_down();
  // Stops the workspace indexer (cancel first, join once the analysis worker is stopped).
  void cancel_indexing() { index_.cancel(); }
  void join_indexer();
  // Cancels the running exports (cellscope.export) and joins their threads (after the io_context
  // stopped: their results are not delivered).
  void stop_exports();

  std::function<void()> on_exit;  // called when `exit` arrives
  [[nodiscard]] bool exit_requested() const { return exit_requested_; }
  [[nodiscard]] int exit_code() const { return shutdown_received_ ? 0 : 1; }

  // ---- what the scheduler and the view bridge ask (SchedulerHooks, ViewBridgeHooks) ----

  [[nodiscard]] const WorkspaceSettings& settings() const { return settings_; }
  // An analysis of `uri` was queued: show progress if it is still running after a while.
  void analysis_queued(const std::string& uri);
  void analysis_dropped(const Job& job);
  // `fa` became `d`'s analysis: end its progress, index its symbols, trace it.
  void analysis_done(OpenDoc& d, const FileAnalysis& fa);
  // Publishes the diagnostics of the files `fa` reported on.
  void analysis_settled(OpenDoc& d, const FileAnalysis& fa, bool from_dependency);
  // The graph view asked to show a source range (window/showDocument).
  void reveal_in_editor(const protocol::RevealRequest& reveal);
  // window/logMessage.
  void log(int type, const std::string& message);

 private:
  enum class State { kUninitialized, kRunning, kShutDown };

  void log_trace(const std::string& message, const std::string& verbose = "");
  void load_project_config();
  Json initialize(const Json& params);
  void initialized();
  void pull_configuration();
  void apply_client_settings(const Json& j);
  void start_indexing();
  void submit_index_refresh(const std::string& path);
  void attach_documents();
  void attach_workspace();
  void attach_features();
  void attach_commands();
  // workspace/executeCommand cellscope.export (docs/export.md, "In the editor").
  void start_export(const Json& params, const rpc::Context& ctx);
  // The disk path of a model file (.mindir) `uri` names, for the graph commands; false with `why`.
  static bool model_file_of(const std::string& uri, std::string* path, std::string* why);
  void export_progress(uint64_t id, const Json& value);
  void finish_export(uint64_t id, const server::ModelExportOutcome& outcome);

  using ConverterCache =
      std::map<std::string,
               std::pair<std::shared_ptr<const std::string>, std::unique_ptr<PositionConverter>>>;
  FeatureContext feature_context(const FileAnalysis& fa,
                                 std::shared_ptr<ConverterCache> cache = nullptr);
  Json diagnostics_for(const OpenDoc& d);
  void publish(OpenDoc& d, bool own);
  void end_progress(DocumentFeedback& f, const std::string& message);

  boost::asio::io_context& io_;
  rpc::Dispatcher& rpc_;
  ServerOptions options_;
  AnalysisScheduler& scheduler_;
  ViewBridge& view_;

  State state_ = State::kUninitialized;
  bool exit_requested_ = false;
  bool shutdown_received_ = false;

  ClientCapabilities client_;  // negotiated by `initialize`
  std::string trace_ = "off";
  WorkspaceSettings settings_;

  std::map<std::string, DocumentFeedback> feedback_;  // by URI, for every open document

  WorkspaceIndex index_;
  std::thread indexer_;

  std::map<uint64_t, ExportJob> exports_;  // by id, while running
  uint64_t export_counter_ = 0;
};

}  // namespace cellscope::lsp
