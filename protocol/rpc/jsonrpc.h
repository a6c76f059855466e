// JSON-RPC 2.0 over the base protocol, as LSP 3.17 and (for its framing) DAP use it.
//
// A Dispatcher turns message bodies into handler calls and handler results into responses:
//   - requests go to the handler registered for their method; the handler answers through its
//     Context, synchronously (on_request: return the result or throw) or later from any thread
//     (on_async_request: keep the Context and call reply()/error()). Exactly one response is sent
//     per request: a Context dropped without a reply answers InternalError, later replies are
//     ignored;
//   - "$/cancelRequest" marks the request's CancellationToken; a request that is cancelled before
//     its handler replies is answered RequestCancelled (its result, if any, is dropped);
//   - errors: invalid UTF-8, invalid JSON or nesting deeper than kMaxNesting -> ParseError with
//     id null; not an object, bad "jsonrpc", bad id (neither integer nor string; null included),
//     method not a string, params neither object nor array -> InvalidRequest; unknown method ->
//     MethodNotFound (requests only, "$/..." ones included; unknown notifications are logged and
//     ignored); RpcError thrown by a handler -> that error; nlohmann::json::exception ->
//     InvalidParams (handlers read their params with .at()/.get<>()); any other exception ->
//     InternalError. Notification handlers' exceptions are logged;
//   - batches (JSON arrays) are not supported (LSP and DAP never send them): one InvalidRequest
//     response with id null;
//   - responses to our own requests (call()) are matched by id to their callbacks;
//   - a message refused by the framing as oversize is answered InvalidRequest when its id can be
//     read from its first bytes (otherwise, like other framing errors, it is only logged).
// Sending is thread-safe: every outgoing message goes to the sink under one mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "rpc/framing.h"

namespace cellscope::rpc {

using Json = nlohmann::json;

// Messages whose arrays / objects nest deeper than this are refused (ParseError).
inline constexpr std::size_t kMaxNesting = 512;

// Error codes: JSON-RPC 2.0, then LSP's.
enum class ErrorCode : int {
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternalError = -32603,
  kServerNotInitialized = -32002,
  kUnknownErrorCode = -32001,
  kRequestFailed = -32803,
  kServerCancelled = -32802,
  kContentModified = -32801,
  kRequestCancelled = -32800,
};

// An error response; handlers throw it (or pass it to Context::error).
struct RpcError : std::runtime_error {
  RpcError(ErrorCode code, std::string message, Json data = nullptr);
  RpcError(int code, std::string message, Json data = nullptr);
  int code;
  Json data;  // null: no "data" member

  Json to_json() const;                          // {"code", "message"[, "data"]}
  static RpcError from_json(const Json& error);  // tolerant of malformed error objects
};

// A request id: integer or string (LSP's `integer | string`), echoed back exactly.
using RequestId = std::variant<std::int64_t, std::string>;
Json id_to_json(const RequestId& id);
// nullopt unless `id` is an integer (within int64) or a string.
std::optional<RequestId> id_from_json(const Json& id);
std::string id_to_string(const RequestId& id);  // for logs: 7, "abc"

// A message for the peer about an exception a handler let through, naming the member, what was
// expected and what was found, never a library's internals: nlohmann::json's
// "[json.exception.type_error.302] (/params/position/line) type must be number, but is string"
// becomes "params.position.line must be a number, but is a string", "... key 'uri' not found"
// "params.textDocument.uri is missing"; std::stoi's bare "stoi" says a number was expected.
// Anything else: its what(). `root`: the name of the JSON value the handler was given, that
// paths are relative to ("params" for a JSON-RPC handler).
std::string describe_exception(const std::exception& e, std::string_view root = {});

// Message builders (bodies, unframed).
Json make_request(const RequestId& id, std::string_view method, const Json& params);
Json make_notification(std::string_view method, const Json& params);
Json make_response(const RequestId& id, const Json& result);
// `id` nullopt: "id": null.
Json make_error_response(const std::optional<RequestId>& id, const RpcError& error);

// Checks UTF-8 strictly (no overlong forms, surrogates or code points above U+10FFFF).
bool is_valid_utf8(std::string_view text);
// JSON text with every lone UTF-16 surrogate escape ("\ud800" not followed by a low surrogate
// escape, or "\udc00" not preceded by a high one) replaced by "\ufffd" (same length); nullopt
// when there is none. JSON.stringify writes such escapes for strings holding unpaired
// surrogates (an editor buffer cut inside an emoji), and nlohmann::json refuses them.
std::optional<std::string> replace_lone_surrogate_escapes(std::string_view json);
// Parses a message body as JSON, lone surrogate escapes read as U+FFFD (as VS Code and clangd
// read them); a discarded value (is_discarded()) when the body is not JSON. Used for LSP and DAP
// alike.
Json parse_message(std::string_view body);
// Best-effort: the top-level "id" of a JSON object given only its first bytes.
std::optional<RequestId> peek_id(std::string_view json_prefix);

// Set by $/cancelRequest (or by anyone holding a copy); read by handlers, from any thread.
// Handlers that park a request (e.g. until an analysis is done) can ask to be told at once.
class CancellationToken {
 public:
  CancellationToken() : state_(std::make_shared<State>()) {}
  bool cancelled() const { return state_->flag.load(std::memory_order_relaxed); }
  // Sets the flag, then runs (once, on the cancelling thread) the callbacks registered so far.
  void cancel() const;
  // Runs `fn` when the token is cancelled: at once if it already is, else from cancel().
  void on_cancel(std::function<void()> fn) const;
  bool same_as(const CancellationToken& other) const { return state_ == other.state_; }

 private:
  struct State {
    std::atomic<bool> flag{false};
    std::mutex mutex;
    std::vector<std::function<void()>> callbacks;
  };
  std::shared_ptr<State> state_;
};

namespace detail {
struct Core;
struct Call;
}  // namespace detail

// A request being served. Copyable (copies share the request) and usable from any thread.
class Context {
 public:
  const RequestId& id() const;
  const std::string& method() const;
  const CancellationToken& token() const;
  bool cancelled() const { return token().cancelled(); }

  // Sends the response (the first call wins; RequestCancelled if the request was cancelled).
  void reply(Json result) const;
  void error(const RpcError& error) const;
  bool replied() const;

 private:
  friend class Dispatcher;
  explicit Context(std::shared_ptr<detail::Call> call) : call_(std::move(call)) {}
  std::shared_ptr<detail::Call> call_;
};

class Dispatcher {
 public:
  // Receives each outgoing message body (unframed), one at a time, in order.
  using Sink = std::function<void(std::string body)>;
  using RequestHandler = std::function<Json(const Json& params, const Context& ctx)>;
  using AsyncRequestHandler = std::function<void(const Json& params, Context ctx)>;
  using NotificationHandler = std::function<void(const Json& params)>;
  // For a response to call(): exactly one of result / error is set.
  using ResponseCallback =
      std::function<void(std::optional<Json> result, std::optional<RpcError> error)>;
  // Consulted before any handler runs (not for $/cancelRequest or responses). A request it
  // returns an error for is answered with that error (e.g. ServerNotInitialized); a
  // notification is dropped. `is_request`: the message has an id.
  using Gate = std::function<std::optional<RpcError>(const std::string& method, bool is_request)>;

  explicit Dispatcher(Sink sink);
  // Later replies from handlers still holding a Context are dropped, not sent.
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // Registration: before messages arrive (not thread-safe against handle_*). Re-registering a
  // method replaces its handler.
  void on_request(std::string method, RequestHandler handler);
  void on_async_request(std::string method, AsyncRequestHandler handler);
  void on_notification(std::string method, NotificationHandler handler);
  void set_gate(Gate gate);

  // Incoming, from one thread (the I/O thread). Handlers run on that thread.
  void handle_message(std::string_view body);
  // A frame from FrameReader: messages are handled; framing errors are logged (and oversize
  // requests answered, see above).
  void handle_frame(const Frame& frame);

  // Outgoing, from any thread.
  void notify(std::string_view method, const Json& params);
  // A request to the peer; `callback` runs on the thread calling handle_message.
  RequestId call(std::string_view method, const Json& params, ResponseCallback callback);
  // Fails every call() still waiting (e.g. at EOF) with InternalError `why`.
  void fail_pending_calls(const std::string& why);
  // Sends a message as is.
  void send(const Json& message);

  // Requests received and not yet answered.
  std::size_t in_flight() const;
  // Runs `fn` once no request is in flight: now, or on the thread sending the last reply (after
  // sending it). E.g. at EOF: rpc.when_idle([&] { transport.close(); }).
  void when_idle(std::function<void()> fn);

 private:
  void handle_request(const RequestId& id, const std::string& method, const Json& params);
  void handle_notification(const std::string& method, const Json& params);
  void handle_response(const Json& message);
  void cancel_request(const Json& params);

  std::shared_ptr<detail::Core> core_;
};

}  // namespace cellscope::rpc
