#include "view/security.h"

#include <array>
#include <cctype>
#include <random>

#include "graphcore/text.h"

namespace cellscope::server::view {

using graphcore::text::lower;
using graphcore::text::trim;

namespace {

std::string query_decode(std::string_view text) {
  return *graphcore::text::percent_decode(text, graphcore::text::PercentDecoding::kLenient,
                                          /*plus_is_space=*/true);
}

}  // namespace

std::string random_token() {
  std::random_device device;  // /dev/urandom on Linux
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(32);
  for (int i = 0; i < 4; ++i) {
    const uint32_t word = device();
    for (int nibble = 0; nibble < 8; ++nibble) out.push_back(kHex[(word >> (nibble * 4)) & 0xF]);
  }
  return out;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = a.size() < b.size() ? a.size() : b.size();
  for (size_t i = 0; i < n; ++i)
    diff |= static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i]);
  return diff == 0;
}

std::string percent_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xF]);
    }
  }
  return out;
}

std::optional<Target> parse_target(std::string_view target) {
  if (target.empty() || target.front() != '/') return std::nullopt;
  Target out;
  const auto q = target.find('?');
  out.path = *graphcore::text::percent_decode(target.substr(0, q),
                                              graphcore::text::PercentDecoding::kLenient);
  if (q == std::string_view::npos) return out;
  std::string_view rest = target.substr(q + 1);
  if (const auto hash = rest.find('#'); hash != std::string_view::npos) rest = rest.substr(0, hash);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    if (!pair.empty()) {
      const auto eq = pair.find('=');
      const std::string key = query_decode(pair.substr(0, eq));
      const std::string value =
          eq == std::string_view::npos ? std::string() : query_decode(pair.substr(eq + 1));
      out.query.emplace(key, value);  // the first occurrence wins
    }
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  return out;
}

std::string cookie_value(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    const auto semi = header.find(';');
    const std::string_view item = trim(header.substr(0, semi));
    const auto eq = item.find('=');
    if (eq != std::string_view::npos && trim(item.substr(0, eq)) == name)
      return std::string(trim(item.substr(eq + 1)));
    if (semi == std::string_view::npos) break;
    header.remove_prefix(semi + 1);
  }
  return {};
}

std::string cookie_name(uint16_t port) { return "cellscope-token-" + std::to_string(port); }

namespace {

bool host_allowed(std::string_view host, uint16_t port) {
  const std::string h = lower(trim(host));
  const std::string p = std::to_string(port);
  return h == "127.0.0.1:" + p || h == "localhost:" + p || h == "[::1]:" + p;
}

bool origin_allowed(std::string_view origin, const AccessPolicy& policy) {
  const std::string o = lower(trim(origin));
  const std::string p = std::to_string(policy.port);
  if (o == "http://127.0.0.1:" + p || o == "http://localhost:" + p) return true;
  for (const auto& allowed : policy.extra_origins) {
    const std::string a = lower(allowed);
    if (!a.empty() && a.back() == '*') {
      if (o.compare(0, a.size() - 1, a, 0, a.size() - 1) == 0 && o.size() >= a.size()) return true;
    } else if (o == a) {
      return true;
    }
  }
  return false;
}

}  // namespace

AccessDecision check_access(const RequestFacts& request, const AccessPolicy& policy) {
  if (!host_allowed(request.host, policy.port))
    return {Access::Forbidden,
            "Host '" + std::string(request.host) + "' is not this server's loopback address"};
  // Browsers send Origin on WebSocket handshakes and cross-origin fetches; a page of another
  // origin must not read the model even if it learnt the token.
  if (!request.origin.empty() && !origin_allowed(request.origin, policy))
    return {Access::Forbidden, "Origin '" + std::string(request.origin) + "' is not allowed"};
  std::string presented;
  if (!request.query_token.empty()) {
    presented = std::string(request.query_token);
  } else if (const auto auth = trim(request.authorization);
             auth.size() > 7 && lower(auth.substr(0, 7)) == "bearer ") {
    presented = std::string(trim(auth.substr(7)));
  } else {
    presented = cookie_value(request.cookie, cookie_name(policy.port));
  }
  if (presented.empty()) return {Access::Unauthorized, "missing session token"};
  if (!constant_time_equal(presented, policy.token))
    return {Access::Unauthorized, "wrong session token"};
  return {};
}

}  // namespace cellscope::server::view
