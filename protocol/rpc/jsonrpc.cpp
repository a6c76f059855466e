#include "rpc/jsonrpc.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cellscope::rpc {

// ---------------------------------------------------------------------------------------------
// Errors, ids, message builders

RpcError::RpcError(int code_, std::string message, Json data_)
    : std::runtime_error(std::move(message)), code(code_), data(std::move(data_)) {}

RpcError::RpcError(ErrorCode code_, std::string message, Json data_)
    : RpcError(static_cast<int>(code_), std::move(message), std::move(data_)) {}

Json RpcError::to_json() const {
  Json j = {{"code", code}, {"message", what()}};
  if (!data.is_null()) j["data"] = data;
  return j;
}

RpcError RpcError::from_json(const Json& error) {
  if (!error.is_object()) return RpcError(ErrorCode::kUnknownErrorCode, error.dump());
  const auto code_it = error.find("code");
  const auto message_it = error.find("message");
  const auto data_it = error.find("data");
  return RpcError(
      code_it != error.end() && code_it->is_number_integer() ? code_it->get<int>() : -32001,
      message_it != error.end() && message_it->is_string() ? message_it->get<std::string>()
                                                           : std::string(),
      data_it != error.end() ? *data_it : Json());
}

Json id_to_json(const RequestId& id) {
  return std::visit([](const auto& v) { return Json(v); }, id);
}

std::optional<RequestId> id_from_json(const Json& id) {
  if (id.is_number_unsigned()) {
    const auto v = id.get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return std::nullopt;
    }
    return RequestId(static_cast<std::int64_t>(v));
  }
  if (id.is_number_integer()) return RequestId(id.get<std::int64_t>());
  if (id.is_string()) return RequestId(id.get<std::string>());
  return std::nullopt;
}

std::string id_to_string(const RequestId& id) { return id_to_json(id).dump(); }

Json make_request(const RequestId& id, std::string_view method, const Json& params) {
  Json j = {{"jsonrpc", "2.0"}, {"id", id_to_json(id)}, {"method", method}};
  if (!params.is_null()) j["params"] = params;
  return j;
}

Json make_notification(std::string_view method, const Json& params) {
  Json j = {{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null()) j["params"] = params;
  return j;
}

Json make_response(const RequestId& id, const Json& result) {
  return {{"jsonrpc", "2.0"}, {"id", id_to_json(id)}, {"result", result}};
}

Json make_error_response(const std::optional<RequestId>& id, const RpcError& error) {
  return {{"jsonrpc", "2.0"}, {"id", id ? id_to_json(*id) : Json()}, {"error", error.to_json()}};
}

// ---------------------------------------------------------------------------------------------
// Describing exceptions

namespace {

// "/params/contentChanges/0/text" -> "params.contentChanges[0].text" (JSON pointer unescaped).
std::string member_path(std::string_view pointer) {
  std::string out;
  std::size_t i = 0;
  while (i < pointer.size()) {
    if (pointer[i] != '/') return std::string(pointer);
    const std::size_t end = std::min(pointer.find('/', i + 1), pointer.size());
    std::string token;
    for (std::size_t k = i + 1; k < end; ++k) {
      if (pointer[k] == '~' && k + 1 < end && (pointer[k + 1] == '0' || pointer[k + 1] == '1')) {
        token += pointer[++k] == '0' ? '~' : '/';
      } else {
        token += pointer[k];
      }
    }
    const bool index = !token.empty() && token.find_first_not_of("0123456789") == std::string::npos;
    if (index) {
      out += "[" + token + "]";
    } else {
      if (!out.empty()) out += '.';
      out += token;
    }
    i = end;
  }
  return out;
}

// nlohmann's type names with an article: "number" -> "a number".
std::string with_article(std::string_view type) {
  if (type == "null") return "null";
  const bool vowel = !type.empty() && std::string_view("aeiou").find(type[0]) != std::string::npos;
  return std::string(vowel ? "an " : "a ") + std::string(type);
}

std::string describe_json_exception(const Json::exception& e, std::string_view root) {
  std::string_view text = e.what();
  // "[json.exception.type_error.302] " prefix.
  if (text.starts_with("[json.exception.")) {
    const std::size_t close = text.find("] ");
    if (close != std::string_view::npos) text.remove_prefix(close + 2);
  }
  // "(/a/b) " names the value (JSON_DIAGNOSTICS); the message's root when absent.
  std::string path;
  if (text.starts_with("(")) {
    const std::size_t close = text.find(") ");
    if (close != std::string_view::npos) {
      path = member_path(text.substr(1, close - 1));
      text.remove_prefix(close + 2);
    }
  }
  std::string where(root);
  if (!path.empty()) where += where.empty() || path[0] == '[' ? path : "." + path;
  const bool at_root = where.empty();
  if (at_root) where = "the message";
  auto after = [&](std::string_view prefix, std::string_view& rest) {
    if (!text.starts_with(prefix)) return false;
    rest = text.substr(prefix.size());
    return true;
  };
  std::string_view rest;
  if (after("type must be ", rest)) {  // 302: get<T>() of the wrong type
    const std::size_t but = rest.find(", but is ");
    if (but != std::string_view::npos) {
      return where + " must be " + with_article(rest.substr(0, but)) + ", but is " +
             with_article(rest.substr(but + 9));
    }
  }
  if (after("key '", rest) && rest.ends_with("' not found")) {  // 403: at("key")
    const std::string_view key = rest.substr(0, rest.size() - 11);
    return (at_root ? std::string(key) : where + "." + std::string(key)) + " is missing";
  }
  if (after("array index ", rest) && rest.ends_with(" is out of range")) {  // 401: at(i)
    return where + " has no item " + std::string(rest.substr(0, rest.size() - 16));
  }
  if (after("cannot use at() with ", rest) ||                               // 304
      after("cannot use operator[] with a string argument with ", rest)) {  // 305
    return where + " must be an object, but is " + with_article(rest);
  }
  return where + ": " + std::string(text);
}

}  // namespace

std::string describe_exception(const std::exception& e, std::string_view root) {
  if (const auto* je = dynamic_cast<const Json::exception*>(&e)) {
    return describe_json_exception(*je, root);
  }
  // std::stoi and its siblings name only themselves: "stoi" (invalid_argument: no digits) or
  // "stoi" too (out_of_range: the number does not fit).
  const std::string_view what = e.what();
  static constexpr std::string_view kConversions[] = {"stoi",   "stol", "stoll", "stoul",
                                                      "stoull", "stof", "stod",  "stold"};
  if (std::find(std::begin(kConversions), std::end(kConversions), what) != std::end(kConversions)) {
    if (dynamic_cast<const std::out_of_range*>(&e)) return "a number is out of range";
    if (dynamic_cast<const std::invalid_argument*>(&e)) return "a number was expected";
  }
  return std::string(what);
}

// ---------------------------------------------------------------------------------------------
// UTF-8 and peeking into truncated JSON

bool is_valid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // bounds of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // overlong
      if (c == 0xED) hi = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;  // overlong
      if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
    } else {
      return false;
    }
    if (n - i < len) return false;
    if (s[i + 1] < lo || s[i + 1] > hi) return false;
    for (std::size_t k = 2; k < len; ++k) {
      if (s[i + k] < 0x80 || s[i + k] > 0xBF) return false;
    }
    i += len;
  }
  return true;
}

namespace {

// The value of the 4 hex digits at `text[pos]`, or -1.
int hex4(std::string_view text, std::size_t pos) {
  if (pos + 4 > text.size()) return -1;
  int v = 0;
  for (std::size_t k = pos; k < pos + 4; ++k) {
    const char c = text[k];
    int d = -1;
    if (c >= '0' && c <= '9') d = c - '0';
    if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

}  // namespace

std::optional<std::string> replace_lone_surrogate_escapes(std::string_view json) {
  std::optional<std::string> out;
  std::size_t i = 0;
  // Backslashes occur only in strings (elsewhere the text is not JSON, and the parser says so):
  // every one starts an escape, so "\\u..." is an escaped backslash followed by a 'u'.
  while ((i = json.find('\\', i)) != std::string_view::npos) {
    if (i + 1 >= json.size()) break;
    const int unit = json[i + 1] == 'u' ? hex4(json, i + 2) : -1;
    if (unit < 0xD800 || unit > 0xDFFF) {  // not a \u escape, or not a surrogate
      i += 2;
      continue;
    }
    if (unit <= 0xDBFF && i + 7 < json.size() && json[i + 6] == '\\' && json[i + 7] == 'u') {
      const int low = hex4(json, i + 8);
      if (low >= 0xDC00 && low <= 0xDFFF) {  // a pair: one code point above U+FFFF
        i += 12;
        continue;
      }
    }
    if (!out) out.emplace(json);
    out->replace(i, 6, "\\ufffd");
    i += 6;
  }
  return out;
}

Json parse_message(std::string_view body) {
  if (auto fixed = replace_lone_surrogate_escapes(body)) {
    return Json::parse(*fixed, nullptr, /*allow_exceptions=*/false);
  }
  return Json::parse(body, nullptr, /*allow_exceptions=*/false);
}

namespace {

// Whether JSON text nests arrays / objects deeper than `limit` (strings are skipped; the text
// need not be valid). Deep nesting costs nlohmann::json ~70 bytes per level: refuse it early.
bool nests_deeper_than(std::string_view text, std::size_t limit) {
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

// Scalar members at the top level of a JSON object, from a possibly truncated text. Stops at the
// first thing it does not understand.
class PrefixScanner {
 public:
  explicit PrefixScanner(std::string_view text) : s_(text) {}

  std::map<std::string, Json> members() {
    std::map<std::string, Json> out;
    ws();
    if (!eat('{')) return out;
    while (true) {
      ws();
      std::string_view key_token;
      if (!string_token(key_token)) return out;
      const Json key = Json::parse(key_token, nullptr, false);
      ws();
      if (!eat(':')) return out;
      ws();
      if (pos_ >= s_.size()) return out;
      const char c = s_[pos_];
      if (c == '{' || c == '[') {
        if (!skip_nested()) return out;
      } else {
        std::string_view token;
        if (c == '"') {
          if (!string_token(token)) return out;
        } else {
          const std::size_t start = pos_;
          while (pos_ < s_.size() && s_[pos_] != ',' && s_[pos_] != '}' && !is_ws(s_[pos_])) {
            ++pos_;
          }
          if (pos_ >= s_.size()) return out;  // the number may be cut off
          token = s_.substr(start, pos_ - start);
        }
        Json value = Json::parse(token, nullptr, false);
        if (value.is_discarded() || !key.is_string()) return out;
        out.emplace(key.get<std::string>(), std::move(value));
      }
      ws();
      if (!eat(',')) return out;
    }
  }

 private:
  static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
  void ws() {
    while (pos_ < s_.size() && is_ws(s_[pos_])) ++pos_;
  }
  bool eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  // A complete "..." token, quotes included.
  bool string_token(std::string_view& token) {
    const std::size_t start = pos_;
    if (!eat('"')) return false;
    while (pos_ < s_.size()) {
      const char c = s_[pos_++];
      if (c == '\\') {
        ++pos_;
      } else if (c == '"') {
        token = s_.substr(start, pos_ - start);
        return true;
      }
    }
    return false;
  }
  bool skip_nested() {
    std::size_t depth = 0;
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == '"') {
        std::string_view ignored;
        if (!string_token(ignored)) return false;
        continue;
      }
      ++pos_;
      if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) return true;
      }
    }
    return false;
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

}  // namespace

std::optional<RequestId> peek_id(std::string_view json_prefix) {
  const auto members = PrefixScanner(json_prefix).members();
  const auto it = members.find("id");
  if (it == members.end()) return std::nullopt;
  return id_from_json(it->second);
}

// ---------------------------------------------------------------------------------------------
// Dispatcher internals

namespace detail {

struct Core {
  explicit Core(Dispatcher::Sink s) : sink(std::move(s)) {}

  void send(const Json& message) {
    // Replace rather than throw on invalid UTF-8 that a handler put into a string.
    std::string body = message.dump(-1, ' ', false, Json::error_handler_t::replace);
    std::lock_guard lock(send_mutex);
    if (closed) return;
    try {
      sink(std::move(body));
    } catch (const std::exception& e) {
      spdlog::error("rpc: sending a message failed: {}", e.what());
    }
  }

  Dispatcher::Sink sink;
  std::mutex send_mutex;
  bool closed = false;  // guarded by send_mutex

  std::mutex mutex;  // guards the maps below
  std::map<RequestId, CancellationToken> in_flight;
  std::map<RequestId, Dispatcher::ResponseCallback> pending;
  std::vector<std::function<void()>> idle_callbacks;
  std::int64_t next_id = 1;

  // Runs the when_idle() callbacks if nothing is in flight.
  void check_idle() {
    std::vector<std::function<void()>> callbacks;
    {
      std::lock_guard lock(mutex);
      if (!in_flight.empty()) return;
      callbacks.swap(idle_callbacks);
    }
    for (auto& fn : callbacks) {
      try {
        fn();
      } catch (const std::exception& e) {
        spdlog::error("rpc: idle callback failed: {}", e.what());
      }
    }
  }

  // Registered before messages arrive; read on the I/O thread only.
  std::unordered_map<std::string, Dispatcher::AsyncRequestHandler> requests;
  std::unordered_map<std::string, Dispatcher::NotificationHandler> notifications;
  Dispatcher::Gate gate;
};

struct Call {
  Call(std::shared_ptr<Core> c, RequestId i, std::string m)
      : core(std::move(c)), id(std::move(i)), method(std::move(m)) {}
  ~Call() {
    if (!replied.load()) {
      finish(std::nullopt,
             RpcError(ErrorCode::kInternalError, "the server dropped the request: " + method));
    }
  }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  void finish(std::optional<Json> result, std::optional<RpcError> error) {
    if (replied.exchange(true)) {
      spdlog::debug("rpc: second reply to {} ({}) ignored", method, id_to_string(id));
      return;
    }
    try {
      if (token.cancelled()) {
        core->send(make_error_response(
            id, RpcError(ErrorCode::kRequestCancelled, "request cancelled: " + method)));
      } else if (error) {
        core->send(make_error_response(id, *error));
      } else {
        core->send(make_response(id, result ? *result : Json()));
      }
    } catch (const std::exception& e) {
      spdlog::error("rpc: replying to {} failed: {}", method, e.what());
    }
    // Only now, so that a when_idle() callback sees the response already handed to the sink.
    {
      std::lock_guard lock(core->mutex);
      const auto it = core->in_flight.find(id);
      if (it != core->in_flight.end() && it->second.same_as(token)) core->in_flight.erase(it);
    }
    core->check_idle();
  }

  std::shared_ptr<Core> core;
  RequestId id;
  std::string method;
  CancellationToken token;
  std::atomic<bool> replied{false};
};

}  // namespace detail

namespace {

// The error for the exception being handled.
RpcError current_exception_error() {
  try {
    throw;
  } catch (const RpcError& e) {
    return e;
  } catch (const Json::exception& e) {
    return RpcError(ErrorCode::kInvalidParams,
                    "invalid params: " + describe_exception(e, "params"));
  } catch (const std::exception& e) {
    return RpcError(ErrorCode::kInternalError, describe_exception(e, "params"));
  } catch (...) {
    return RpcError(ErrorCode::kInternalError, "unknown exception");
  }
}

bool starts_with_dollar(std::string_view method) { return method.rfind("$/", 0) == 0; }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Context

const RequestId& Context::id() const { return call_->id; }
const std::string& Context::method() const { return call_->method; }
const CancellationToken& Context::token() const { return call_->token; }
void Context::reply(Json result) const { call_->finish(std::move(result), std::nullopt); }
void Context::error(const RpcError& error) const { call_->finish(std::nullopt, error); }
bool Context::replied() const { return call_->replied.load(); }

// ---------------------------------------------------------------------------------------------
// Dispatcher

Dispatcher::Dispatcher(Sink sink) : core_(std::make_shared<detail::Core>(std::move(sink))) {}

Dispatcher::~Dispatcher() {
  std::lock_guard lock(core_->send_mutex);
  core_->closed = true;
}

void Dispatcher::on_request(std::string method, RequestHandler handler) {
  core_->requests[std::move(method)] = [h = std::move(handler)](const Json& params, Context ctx) {
    ctx.reply(h(params, ctx));
  };
}

void Dispatcher::on_async_request(std::string method, AsyncRequestHandler handler) {
  core_->requests[std::move(method)] = std::move(handler);
}

void Dispatcher::on_notification(std::string method, NotificationHandler handler) {
  core_->notifications[std::move(method)] = std::move(handler);
}

void Dispatcher::set_gate(Gate gate) { core_->gate = std::move(gate); }

void Dispatcher::send(const Json& message) { core_->send(message); }

void Dispatcher::notify(std::string_view method, const Json& params) {
  core_->send(make_notification(method, params));
}

RequestId Dispatcher::call(std::string_view method, const Json& params, ResponseCallback callback) {
  RequestId id;
  {
    std::lock_guard lock(core_->mutex);
    id = core_->next_id++;
    core_->pending.emplace(id, std::move(callback));
  }
  core_->send(make_request(id, method, params));
  return id;
}

void Dispatcher::fail_pending_calls(const std::string& why) {
  std::map<RequestId, ResponseCallback> pending;
  {
    std::lock_guard lock(core_->mutex);
    pending.swap(core_->pending);
  }
  for (auto& [id, callback] : pending) {
    try {
      callback(std::nullopt, RpcError(ErrorCode::kInternalError, why));
    } catch (const std::exception& e) {
      spdlog::error("rpc: response callback for {} threw: {}", id_to_string(id), e.what());
    }
  }
}

std::size_t Dispatcher::in_flight() const {
  std::lock_guard lock(core_->mutex);
  return core_->in_flight.size();
}

void Dispatcher::when_idle(std::function<void()> fn) {
  {
    std::lock_guard lock(core_->mutex);
    core_->idle_callbacks.push_back(std::move(fn));
  }
  core_->check_idle();
}

void Dispatcher::handle_frame(const Frame& frame) {
  switch (frame.kind) {
    case Frame::Kind::kMessage:
      handle_message(frame.body);
      return;
    case Frame::Kind::kOversize: {
      spdlog::error("rpc: {}; refused", frame.error);
      const auto members = PrefixScanner(frame.body).members();
      const auto id_it = members.find("id");
      const std::optional<RequestId> id =
          id_it != members.end() ? id_from_json(id_it->second) : std::nullopt;
      if (!id) return;
      const RpcError error(ErrorCode::kInvalidRequest, frame.error);
      if (members.count("method")) {
        send(make_error_response(*id, error));
        return;
      }
      // A response to one of our calls that was too large: fail the call.
      ResponseCallback callback;
      {
        std::lock_guard lock(core_->mutex);
        const auto it = core_->pending.find(*id);
        if (it == core_->pending.end()) return;
        callback = std::move(it->second);
        core_->pending.erase(it);
      }
      callback(std::nullopt, error);
      return;
    }
    case Frame::Kind::kMalformedHeader:
    case Frame::Kind::kTruncated:
      spdlog::warn("rpc: {}", frame.error);
      return;
  }
}

void Dispatcher::handle_message(std::string_view body) {
  if (!is_valid_utf8(body)) {
    spdlog::warn("rpc: message is not valid UTF-8");
    send(make_error_response(std::nullopt,
                             RpcError(ErrorCode::kParseError, "message is not valid UTF-8")));
    return;
  }
  if (nests_deeper_than(body, kMaxNesting)) {
    spdlog::warn("rpc: message nests deeper than {} levels", kMaxNesting);
    send(make_error_response(std::nullopt,
                             RpcError(ErrorCode::kParseError, "message nests too deeply")));
    return;
  }
  Json message = parse_message(body);
  if (message.is_discarded()) {
    spdlog::warn("rpc: message is not valid JSON");
    send(make_error_response(std::nullopt,
                             RpcError(ErrorCode::kParseError, "message is not valid JSON")));
    return;
  }
  const auto invalid = [this](const std::optional<RequestId>& id, const std::string& why) {
    spdlog::warn("rpc: invalid message: {}", why);
    send(make_error_response(id, RpcError(ErrorCode::kInvalidRequest, why)));
  };
  if (message.is_array()) {
    invalid(std::nullopt, "batch messages are not supported");
    return;
  }
  if (!message.is_object()) {
    invalid(std::nullopt, "a message must be a JSON object");
    return;
  }
  const auto id_it = message.find("id");
  const bool has_id = id_it != message.end();
  const std::optional<RequestId> id = has_id ? id_from_json(*id_it) : std::nullopt;
  const auto method_it = message.find("method");
  if (method_it == message.end()) {
    if (message.contains("result") || message.contains("error")) {
      handle_response(message);
    } else {
      invalid(id, "a message needs a method, or a result or error");
    }
    return;
  }
  const auto version_it = message.find("jsonrpc");
  if (version_it == message.end() || *version_it != "2.0") {
    invalid(id, "\"jsonrpc\" must be \"2.0\"");
    return;
  }
  if (has_id && !id) {
    invalid(std::nullopt, "\"id\" must be an integer or a string");
    return;
  }
  if (!method_it->is_string()) {
    invalid(id, "\"method\" must be a string");
    return;
  }
  const auto params_it = message.find("params");
  const Json params = params_it != message.end() ? std::move(*params_it) : Json();
  if (!params.is_null() && !params.is_object() && !params.is_array()) {
    invalid(id, "\"params\" must be an object or an array");
    return;
  }
  const std::string& method = method_it->get_ref<const std::string&>();
  if (id) {
    handle_request(*id, method, params);
  } else {
    handle_notification(method, params);
  }
}

void Dispatcher::handle_request(const RequestId& id, const std::string& method,
                                const Json& params) {
  if (core_->gate) {
    if (auto error = core_->gate(method, true)) {
      send(make_error_response(id, *error));
      return;
    }
  }
  const auto it = core_->requests.find(method);
  if (it == core_->requests.end()) {
    spdlog::debug("rpc: no handler for request {}", method);
    send(make_error_response(id,
                             RpcError(ErrorCode::kMethodNotFound, "method not found: " + method)));
    return;
  }
  auto call = std::make_shared<detail::Call>(core_, id, method);
  {
    std::lock_guard lock(core_->mutex);
    if (!core_->in_flight.insert_or_assign(id, call->token).second)
      spdlog::warn("rpc: request id {} reused while in flight", id_to_string(id));
  }
  const Context ctx(std::move(call));
  try {
    it->second(params, ctx);
  } catch (...) {
    RpcError error = current_exception_error();
    if (ctx.replied()) {
      spdlog::error("rpc: handler for {} threw after replying: {}", method, error.what());
    } else {
      if (error.code == static_cast<int>(ErrorCode::kInternalError)) {
        spdlog::error("rpc: handler for {} failed: {}", method, error.what());
      }
      ctx.error(error);
    }
  }
}

void Dispatcher::handle_notification(const std::string& method, const Json& params) {
  if (method == "$/cancelRequest") {
    cancel_request(params);
    return;
  }
  if (core_->gate) {
    if (auto error = core_->gate(method, false)) {
      spdlog::debug("rpc: notification {} dropped: {}", method, error->what());
      return;
    }
  }
  const auto it = core_->notifications.find(method);
  if (it == core_->notifications.end()) {
    if (starts_with_dollar(method)) {
      spdlog::debug("rpc: ignoring notification {}", method);
    } else {
      spdlog::info("rpc: no handler for notification {}; ignored", method);
    }
    return;
  }
  try {
    it->second(params);
  } catch (...) {
    spdlog::error("rpc: handler for notification {} failed: {}", method,
                  current_exception_error().what());
  }
}

void CancellationToken::cancel() const {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard lock(state_->mutex);
    if (state_->flag.exchange(true)) return;
    callbacks.swap(state_->callbacks);
  }
  for (auto& fn : callbacks) fn();
}

void CancellationToken::on_cancel(std::function<void()> fn) const {
  {
    std::lock_guard lock(state_->mutex);
    if (!state_->flag.load()) {
      state_->callbacks.push_back(std::move(fn));
      return;
    }
  }
  fn();
}

void Dispatcher::cancel_request(const Json& params) {
  const auto id_it = params.is_object() ? params.find("id") : params.end();
  const std::optional<RequestId> id = id_it != params.end() ? id_from_json(*id_it) : std::nullopt;
  if (!id) {
    spdlog::debug("rpc: $/cancelRequest without a valid id ignored");
    return;
  }
  std::optional<CancellationToken> token;
  {
    std::lock_guard lock(core_->mutex);
    const auto it = core_->in_flight.find(*id);
    if (it != core_->in_flight.end()) token = it->second;
  }
  // Outside the lock: on_cancel callbacks may reply, which takes it.
  if (token) token->cancel();
}

void Dispatcher::handle_response(const Json& message) {
  const auto id_it = message.find("id");
  const std::optional<RequestId> id = id_it != message.end() ? id_from_json(*id_it) : std::nullopt;
  if (!id) {
    const auto error_it = message.find("error");
    spdlog::warn("rpc: response without a usable id: {}",
                 error_it != message.end() ? error_it->dump() : std::string("(no error)"));
    return;
  }
  ResponseCallback callback;
  {
    std::lock_guard lock(core_->mutex);
    const auto it = core_->pending.find(*id);
    if (it == core_->pending.end()) {
      spdlog::warn("rpc: response to unknown request {}", id_to_string(*id));
      return;
    }
    callback = std::move(it->second);
    core_->pending.erase(it);
  }
  try {
    const auto error_it = message.find("error");
    if (error_it != message.end()) {
      callback(std::nullopt, RpcError::from_json(*error_it));
    } else {
      callback(message.at("result"), std::nullopt);
    }
  } catch (...) {
    spdlog::error("rpc: response callback for {} failed: {}", id_to_string(*id),
                  current_exception_error().what());
  }
}

}  // namespace cellscope::rpc
