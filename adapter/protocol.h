// The DAP protocol layer of `cellscope dap`: the messages ({seq, type, command, arguments|body},
// not JSON-RPC), the outgoing Channel, reading an incoming message without ever throwing on a
// member of the wrong type, and DebugProtocol, which dispatches every request to its handler:
// the lifecycle (initialize, launch, configurationDone, terminate, disconnect), breakpoints,
// execution control and the inspection of a stop. The handlers turn requests into calls on the
// launch configuration (launch_config.h), the breakpoint table (breakpoints.h), the variables
// (variables.h) and the run (session.h), and answer with their results.
//
// Threads: handle() runs on the protocol thread; the Channel is shared with the run's worker.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace cellscope::dap {

using json = nlohmann::json;

// The one thread `cellscope dap` shows ("construct").
constexpr int kThreadId = 1;

// ---- messages -----------------------------------------------------------------------------------

// The request's seq and command, as sent when they have the right types (0 and "" otherwise);
// never throw, whatever the request holds.
json request_seq(const json& req);
std::string request_command(const json& req);

json event_message(int seq, const std::string& name, json body);
json response_message(int seq, const json& req, json body);
// A failed response: `message`, also as the body's error (shown to the user).
json error_response_message(int seq, const json& req, const std::string& message);

// What an incoming message body is.
struct Incoming {
  enum class Kind {
    Ignored,  // not a request, or not one that can be answered (no integer seq): dropped
    Invalid,  // a request whose command is not a string: answered with an error
    Request,  // `request` has a string command and object arguments (made {} when not)
  } kind = Kind::Ignored;
  json request;
  std::string command;
};
// Reads a message body (lone surrogate escapes read as U+FFFD); logs why a message is dropped.
Incoming read_message(const std::string& body);

// Outgoing messages, numbered by one counter; thread-safe when `send` is.
class Channel {
 public:
  explicit Channel(std::function<void(std::string)> send) : send_(std::move(send)) {}

  void event(const std::string& name, json body = json::object());
  void respond(const json& req, json body = json::object());
  void fail(const json& req, const std::string& message);
  // An `output` event (a line of the Debug Console, or "stderr").
  void output(const std::string& text, const std::string& category = "console");

 private:
  void send(const json& msg);

  std::function<void(std::string)> send_;
  std::atomic<int> seq_{1};
};

// The body of the `initialize` response: capabilities and the exception filters.
json capabilities();

// ---- requests -----------------------------------------------------------------------------------

class Runner;

class DebugProtocol {
 public:
  DebugProtocol(Channel& channel, Runner& runner) : channel_(channel), runner_(runner) {}

  // Handles one incoming message body.
  void handle(const std::string& body);
  // Called once the client asked to disconnect (after the response is sent).
  std::function<void()> on_disconnect;

 private:
  void dispatch(const json& req, const std::string& cmd);

  void on_initialize(const json& req);
  void on_launch(const json& req);
  void launch(const json& args);
  void on_set_breakpoints(const json& req);
  void set_breakpoints(const json& req);
  void set_breakpoints_unlaunched(const json& req, const std::string& why);
  void on_set_exception_breakpoints(const json& req);
  void on_configuration_done(const json& req);
  void on_resume(const json& req, const std::string& cmd);
  void on_pause(const json& req);
  void on_step_training(const json& req);
  void on_terminate(const json& req);
  void on_disconnect_request(const json& req);
  void on_stack_trace(const json& req);
  void on_scopes(const json& req);
  void on_variables(const json& req);
  void on_evaluate(const json& req);
  void on_exception_info(const json& req);

  Channel& channel_;
  Runner& runner_;
  bool launched_ = false;
  bool configured_ = false;
  std::vector<json> pending_set_breakpoints_;  // answered once launch compiled the model
  std::string launch_error_;                   // why launch failed; "" before or on success
};

}  // namespace cellscope::dap
