// `cellscope dap`: the Debug Adapter Protocol over stdio, a thin layer over graphcore's CPU
// runtime (graphcore/runtime.h). See docs/dap.md.
//
// DAP shares the LSP's base protocol (Content-Length framing, protocol/rpc/framing.h) but not
// JSON-RPC: its messages are {seq, type: request|response|event, command, arguments|body}.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace cellscope::dap {

// One debug session: handles requests (on the protocol thread) and runs the model on a worker
// thread. `send` is called with every outgoing message body (thread-safe sink).
class Session {
 public:
  explicit Session(std::function<void(std::string)> send);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Handles one incoming message body.
  void handle(const std::string& body);
  // Called once the client asked to disconnect (after the response is sent).
  void set_disconnect_handler(std::function<void()> f);
  // Stops the worker (if any) and waits for it.
  void stop();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Serves DAP on stdin/stdout until the client disconnects or the input ends. Logs go to stderr
// or `log_file`, never to stdout. Returns the process exit status.
int run_stdio_server(const std::string& log_file);

}  // namespace cellscope::dap
