// The view server's access rules, as pure functions (unit-tested in tests/unit/view_test.cpp).
//
// The server listens on 127.0.0.1 only. Every HTTP and WebSocket request must carry the session's
// random token (query `token=`, `Authorization: Bearer`, or the cookie the server sets when the
// page is first opened with the token), else 401. A request whose Host is not the server's own
// loopback address (DNS rebinding) or whose Origin is a foreign page gets 403.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cellscope::server::view {

// 32 hex digits from the OS's random source (std::random_device, i.e. /dev/urandom).
std::string random_token();

// Compares in time independent of where the strings differ.
bool constant_time_equal(std::string_view a, std::string_view b);

// The path of a request target ("/ws?file=a.py" -> "/ws") and its decoded query parameters.
struct Target {
  std::string path;
  std::map<std::string, std::string> query;
};
std::optional<Target> parse_target(std::string_view target);
std::string percent_encode(std::string_view text);

// The value of cookie `name` in a Cookie header, or "".
std::string cookie_value(std::string_view header, std::string_view name);

// The cookie that carries the token for the server on `port` (cookies do not isolate ports).
std::string cookie_name(uint16_t port);

enum class Access { Allowed, Unauthorized /* 401 */, Forbidden /* 403 */ };

struct RequestFacts {
  std::string_view host;           // Host header
  std::string_view origin;         // Origin header ("" when absent)
  std::string_view authorization;  // Authorization header
  std::string_view cookie;         // Cookie header
  std::string_view query_token;    // token= query parameter
};

struct AccessPolicy {
  std::string token;
  uint16_t port = 0;
  // Origins allowed besides the server's own (http://127.0.0.1:PORT, http://localhost:PORT);
  // an entry ending in '*' is a prefix ("vscode-webview://*").
  std::vector<std::string> extra_origins;
};

struct AccessDecision {
  Access access = Access::Allowed;
  std::string reason;  // for the response body and the log
};

AccessDecision check_access(const RequestFacts& request, const AccessPolicy& policy);

}  // namespace cellscope::server::view
