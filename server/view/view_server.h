// The view server: serves the graph view (webview/, embedded in the binary) over HTTP and pushes
// graph documents to it over a WebSocket (protocol/view.proto), with Boost.Beast on one I/O thread.
//
// Access (view/security.h): 127.0.0.1 only, a random per-session token on every request, Host and
// Origin checked; refused requests get 401/403. Knows nothing of LSP: `cellscope view` (a file on
// disk) and `cellscope lsp` (open documents) feed it documents through publish().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graphcore/shape.h"
#include "protocol/graph.pb.h"
#include "protocol/view.pb.h"
#include "view/delta.h"

namespace cellscope::server::view {

// The training steps the server keeps per file (view.proto's TrainProgress.max_steps): past this,
// every other step of the older half is dropped (thin_train_steps), so a long run keeps its recent
// steps at full resolution and its start thinned, in bounded memory and frame size.
inline constexpr size_t kMaxTrainSteps = 10000;

// Drops every other step of the older half of `steps` while there are more than `max` of them.
void thin_train_steps(std::vector<protocol::TrainStep>* steps, size_t max = kMaxTrainSteps);

// The device telemetry samples the server keeps per file (view.proto's DeviceProgress.max_samples):
// the last hour of a once-a-second stream; older ones are dropped.
inline constexpr size_t kMaxDeviceSamples = 3600;

struct ServerOptions {
  uint16_t port = 0;  // 0: a free port
  // Origins allowed besides the server's own; "vscode-webview://*" lets VS Code webviews connect.
  std::vector<std::string> extra_origins = {"vscode-webview://*"};
  bool editor = false;     // RevealRequest opens the editor (hello.editor)
  std::string focus_cell;  // hello.focus_cell when the URL names none
  // Cells with more semantic nodes than this are sent lazily (view.proto's CellSkeleton; the view
  // asks for each scope's nodes when it expands its group). See kLazyThreshold (view/delta.h).
  size_t lazy_threshold = kLazyThreshold;

  // Load limits (issue 14). Connections (HTTP and WebSocket) beyond max_connections are answered
  // 503 and closed.
  size_t max_connections = 64;
  // An HTTP request (headers and body), or the WebSocket handshake, must arrive in this time
  // (slow-loris); it is also how long a keep-alive connection may stay idle between requests.
  std::chrono::milliseconds handshake_timeout{5000};
  // The largest message a view may send, fragments reassembled (RFC 6455); larger ones close the
  // connection with 1009 (message too big).
  size_t max_message_bytes = 64 * 1024;
  // A view's unsent frames: when a new one would exceed either bound, the unsent ones are dropped
  // and the view gets only the latest state (document, status, debug focus) once it reads again.
  size_t max_queued_frames = 32;
  size_t max_queued_bytes = 8 * 1024 * 1024;
  // A write to a view that makes no progress for this long: the view is disconnected.
  std::chrono::milliseconds write_timeout{30000};
};

// Counters since start() (for tests and logs).
struct ServerStats {
  size_t open = 0;              // connections open now (HTTP and WebSocket)
  uint64_t accepted = 0;        // connections accepted
  uint64_t refused = 0;         // connections answered 503 (over max_connections)
  uint64_t accept_errors = 0;   // failed accept() calls (each one, back-off retries included)
  uint64_t timeouts = 0;        // requests or handshakes cut by handshake_timeout
  uint64_t coalesced = 0;       // times a slow view's unsent frames were replaced by the latest
  uint64_t write_timeouts = 0;  // views disconnected by write_timeout
};

struct Handlers {
  // Whether a view may follow `file` ("" = yes, else why not). Called on the I/O thread.
  std::function<std::string(const std::string& file)> allow_file;
  // A view started following `file`, which has no document yet: analyse it and publish(). Must
  // not block (queue the work). Called on the I/O thread.
  std::function<void(const std::string& file)> subscribed;
  // The view asked to reveal a source range in the editor. Called on the I/O thread.
  std::function<void(const protocol::RevealRequest& reveal)> reveal;
  // A view of `file` set its input shapes (view.proto's InputsRequest; the specs are checked,
  // empty: back to the settings): analyse it with them and publish. Must not block. Called on
  // the I/O thread.
  std::function<void(const std::string& file, std::vector<graphcore::TensorType> inputs)> inputs;
  // A view of `file` asked to compare its graph with a base (view.proto's CompareRequest: "HEAD",
  // a .py file, "" to stop): find and analyse the base (compare_pending, then set_compare_base),
  // or stop_comparing. Must not block. Called on the I/O thread.
  std::function<void(const std::string& file, const std::string& base)> compare;
};

class ViewServer {
 public:
  explicit ViewServer(ServerOptions options, Handlers handlers = {});
  ~ViewServer();
  ViewServer(const ViewServer&) = delete;
  ViewServer& operator=(const ViewServer&) = delete;

  // Binds 127.0.0.1:port and starts the I/O thread. Throws std::runtime_error when it cannot.
  void start();
  void stop();
  bool running() const;

  uint16_t port() const;
  const std::string& token() const;
  // http://127.0.0.1:PORT/?token=T&file=F[&cell=C]
  std::string url(const std::string& file, const std::string& cell = {}) const;

  // A new document for `file` (any layer; views want "hardware"). Sent to every view of the file
  // as a delta against the previous one, or in full. Thread-safe; the work of diffing and
  // serialising is done on the caller's thread.
  void publish(const std::string& file, protocol::GraphDocument doc, double analysis_ms,
               const std::string& focus_cell = {});
  // Status for the views of `file`: "analysing" | "ok" | "failed" (with the diagnostics; the
  // views keep the last good graph). Thread-safe.
  void publish_status(const std::string& file, const std::string& state,
                      const std::string& message = {},
                      const std::vector<protocol::Diagnostic>& diagnostics = {});
  // The result of an analysis of `file`: a document that compiled (every Cell) is published; one
  // that did not is published only when the views have no graph yet, and otherwise reported as a
  // "failed" status with its diagnostics, so that the views keep the last good graph.
  void update(const std::string& file, protocol::GraphDocument doc, bool compiled,
              double analysis_ms, const std::string& focus_cell = {});
  // Which Cell views of `file` should show (the cursor's Cell in the editor).
  void set_focus(const std::string& file, const std::string& cell);
  // The node the debugger is paused on (view.proto's DebugFocus; an empty `node` clears it). Sent
  // to every view of `focus.file` (paths compared canonically) and remembered, so that a view that
  // connects while paused gets it after its hello and document. A new focus on another file clears
  // the previous file's views. Thread-safe. Returns the number of views it was sent to.
  size_t set_debug_focus(const protocol::DebugFocus& focus);

  // Training (view.proto's TrainProgress, PrecisionDrift), by the canonical path of the message's
  // `file`. Each is sent to every view of that file, in call order, and kept: a view that connects
  // later (or catches up after falling behind) gets the run's steps so far in one TrainProgress
  // with `reset` and the last drift. `session` names the run; a step or drift of another session
  // than the file's current one starts a new run (the views drop the old chart and overlay).
  // Thread-safe. Each returns the number of views it was sent to.
  size_t train_step(const protocol::TrainStep& step, const std::string& session = {});
  size_t train_drift(const protocol::PrecisionDrift& drift, const std::string& session = {});
  // A new run of `file` starts (a debug session was launched): its views drop the chart and the
  // drift overlay.
  size_t train_reset(const std::string& file, const std::string& session = {});
  // What a view of `file` would be given now: the run's steps (TrainProgress, reset) and its drift
  // (null when there is none).
  std::shared_ptr<const protocol::TrainProgress> train_progress(const std::string& file) const;
  std::shared_ptr<const protocol::PrecisionDrift> precision_drift(const std::string& file) const;

  // A deployed model's telemetry (view.proto's DeviceSample), by the canonical path of its `file`:
  // sent to every view of that file in a DeviceProgress, in call order, and kept (the last
  // kMaxDeviceSamples): a view that connects later gets them in one DeviceProgress with `reset`.
  // A sample of another `session` (a new watch) than the file's current one starts a new chart.
  // Thread-safe. Returns the number of views it was sent to.
  size_t device_sample(const protocol::DeviceSample& sample, const std::string& session = {});
  // What a view of `file` would be given now (null when no sample was given).
  std::shared_ptr<const protocol::DeviceProgress> device_progress(const std::string& file) const;

  // Comparisons (view.proto's Comparison): every document of `file` compared with a fixed base.
  // Starts (or restarts) one whose base is being analysed: the views show it pending. Returns the
  // comparison's generation, for set_compare_base. Thread-safe.
  uint64_t compare_pending(const std::string& file, const protocol::CompareBase& base);
  // The base of comparison `generation` of `file`: its document, compared with the current
  // document now (when there is one) and with every document published later; or, when
  // `document` is null, why there is none (`error`, shown to the user). Ignored when the
  // comparison was stopped or restarted since. Thread-safe.
  void set_compare_base(const std::string& file, uint64_t generation,
                        const protocol::CompareBase& base,
                        std::shared_ptr<const protocol::GraphDocument> document,
                        const std::string& error = {});
  // Stops comparing `file` (its views drop the comparison). Thread-safe.
  void stop_comparing(const std::string& file);
  // The comparison the views of `file` have (or would get), null when not comparing.
  std::shared_ptr<const protocol::Comparison> comparison(const std::string& file) const;

  // Whether `file` has at least one connected view.
  bool watching(const std::string& file) const;
  // Files with at least one connected view.
  std::vector<std::string> watched_files() const;
  size_t connections() const;
  ServerStats stats() const;

  struct Impl;  // view_server.cpp (public so that its session classes can name it)

 private:
  std::shared_ptr<Impl> impl_;
};

// The embedded view assets (webview/dist), by path ("/app.js").
struct Asset {
  std::string_view path;
  std::string_view content_type;
  std::string_view data;
};
const Asset* find_asset(std::string_view path);

// A self-contained HTML page showing `doc` with no server: the view's script, style and layout
// worker inlined, the document embedded (with all per-kernel detail).
// `extra`: more messages for the page after the document (a TrainProgress and a PrecisionDrift:
// the training chart and the drift overlay as they were last given).
std::string snapshot_html(const protocol::GraphDocument& doc, const std::string& title,
                          const std::vector<protocol::ViewMessage>& extra = {});

}  // namespace cellscope::server::view
