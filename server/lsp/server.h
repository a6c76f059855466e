// `cellscope lsp`: a language server over the base protocol (protocol/rpc) that keeps every open
// model compiled as the user types. LanguageServer is the composition of three parts, each with
// its own header: the protocol layer (protocol.h: handlers, capabilities, diagnostics, progress),
// the analysis scheduler (scheduler.h: open documents, debounce, worker, cancellation, versions)
// and the view bridge (view_bridge.h: the graph view's server).
//
// Threads: all protocol state (documents, settings, published results) lives on the I/O thread
// that runs the io_context; analyses run on one worker thread over immutable snapshots (the text
// of every open document at one moment) and post their results back. A change to a document
// cancels its running analysis (graphcore polls a flag), restarts its debounce timer, and
// re-schedules the open documents that import it; a result for a version that is no longer
// current is dropped, never published. Requests that need a document's analysis (hover, inlay
// hints, ...) wait until the analysis of its current version is done.
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace cellscope::rpc {
class Dispatcher;
}  // namespace cellscope::rpc

namespace cellscope::lsp {

struct ServerOptions {
  // A fixed debounce; -1 (the default): sized from measured analysis times (DebouncePolicy in
  // lsp/scheduler.h). Clients fix it with the `cellscope.debounceMs` setting.
  int debounce_ms = -1;
  // An analysis still running after this long is shown as window/workDoneProgress.
  int progress_delay_ms = 300;
};

class LanguageServer {
 public:
  LanguageServer(boost::asio::io_context& io, rpc::Dispatcher& rpc, ServerOptions options = {});
  ~LanguageServer();
  LanguageServer(const LanguageServer&) = delete;
  LanguageServer& operator=(const LanguageServer&) = delete;

  // Registers every handler on the dispatcher (call once, before messages arrive).
  void attach();
  // Stops the worker threads; call on the I/O thread before the io_context is destroyed.
  void stop();
  // Set once `exit` arrives: the process exit code (0 after shutdown, 1 otherwise).
  // Called (on the I/O thread) when `exit` arrives, e.g. to close the transport.
  void set_exit_handler(std::function<void()> on_exit);
  // The input ended without `exit`: cancel pending work so that the io_context can finish.
  void end_of_input();
  [[nodiscard]] bool exit_requested() const;
  [[nodiscard]] int exit_code() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// The `cellscope lsp` subcommand: serves stdin/stdout until `exit` or EOF. Returns the exit code.
int run_stdio_server(const ServerOptions& options, const std::string& log_file);

}  // namespace cellscope::lsp
