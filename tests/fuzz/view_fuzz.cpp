// The view server (server/view) from arbitrary bytes on a real connection: the input is what a
// local client sends on one TCP connection (an HTTP request, a WebSocket upgrade and frames, or
// garbage). "@TOKEN@" and "@PORT@" in the input are replaced by the session's token and port, so
// that mutations get past the access checks into the WebSocket protocol. The server runs in this
// process (one instance for the whole run, as in `cellscope lsp`); after each input the harness
// reads until the server closes the connection or 2 s pass, then checks the server still
// answers a plain request. Every socket call retries when a signal interrupts it: libFuzzer's
// -timeout alarm (SIGALRM every few seconds, no SA_RESTART) lands on whichever thread is in a
// system call, and a probe whose poll() was interrupted used to be reported as the server
// closing without an answer (the "probe finding" of docs/reliability.md).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>

#include "fuzz.h"
#include "view/view_server.h"

namespace {

using Clock = std::chrono::steady_clock;

cellscope::server::view::ViewServer& server() {
  static std::unique_ptr<cellscope::server::view::ViewServer> s = [] {
    // CELLSCOPE_FUZZ_VERBOSE=1: the server's debug log too (why it closed a connection).
    if (cellscope::fuzz::verbose()) spdlog::set_level(spdlog::level::debug);
    auto v = std::make_unique<cellscope::server::view::ViewServer>(
        cellscope::server::view::ServerOptions{});
    v->start();
    return v;
  }();
  return *s;
}

// poll() on one descriptor, again when a signal interrupts it.
int poll_one(pollfd& p, int timeout_ms) {
  int rc = 0;
  do {
    rc = poll(&p, 1, timeout_ms);
  } while (rc < 0 && errno == EINTR);
  return rc;
}

// The end of a connect() a signal interrupted: 0 once connected, -1 with errno set otherwise.
int wait_connected(int fd) {
  pollfd p{fd, POLLOUT, 0};
  const int rc = poll_one(p, 10000);
  if (rc <= 0) {
    if (rc == 0) errno = ETIMEDOUT;
    return -1;
  }
  int error = 0;
  socklen_t len = sizeof error;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0) return -1;
  errno = error;
  return error == 0 ? 0 : -1;
}

// A connection to the server, or -1. Thousands of connections a second use up the loopback's
// ephemeral ports while closed ones wait out TIME_WAIT (EADDRNOTAVAIL: the harness's limit, not
// the server's; what the first campaign's view "crash" was): wait for ports to free up.
int connect_to(uint16_t port) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    // An interrupted connect() goes on in the background: wait for it to finish.
    if (rc != 0 && errno == EINTR) rc = wait_connected(fd);
    if (rc == 0) return fd;
    const int error = errno;
    close(fd);
    if (error != EADDRNOTAVAIL) {
      std::fprintf(stderr, "view_fuzz: connect: %s\n", std::strerror(error));
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::fprintf(stderr, "view_fuzz: no ephemeral port free for 10 s\n");
  return -1;
}

// Sends `data`, half-closes, reads until EOF or `limit`; returns the bytes read (and in
// `local_port` the connection's own port).
std::string exchange(uint16_t port, const std::string& data, std::chrono::milliseconds limit,
                     uint16_t* local_port = nullptr) {
  int fd = connect_to(port);
  if (fd < 0) __builtin_trap();  // the server stopped accepting
  // When the harness closes first, a reset rather than a FIN: no TIME_WAIT holding the port.
  const linger reset{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  if (local_port != nullptr) {
    sockaddr_in self{};
    socklen_t len = sizeof self;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&self), &len) == 0)
      *local_port = ntohs(self.sin_port);
  }
  size_t sent = 0;
  auto deadline = Clock::now() + limit;
  std::string got;
  char buf[4096];
  while (Clock::now() < deadline) {
    pollfd p{fd, static_cast<short>(POLLIN | (sent < data.size() ? POLLOUT : 0)), 0};
    if (poll_one(p, 20) < 0) break;
    if ((p.revents & POLLOUT) != 0 && sent < data.size()) {
      ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
      if (sent == data.size()) shutdown(fd, SHUT_WR);
    }
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && got.empty()) std::fprintf(stderr, "view_fuzz: recv: %s\n", std::strerror(errno));
      if (n <= 0) break;
      if (got.size() < (1u << 20)) got.append(buf, static_cast<size_t>(n));
    }
  }
  if (data.empty()) shutdown(fd, SHUT_WR);
  close(fd);
  return got;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto& view = server();
  std::string input(cellscope::fuzz::as_text(data, size));
  replace_all(input, "@TOKEN@", view.token());
  replace_all(input, "@PORT@", std::to_string(view.port()));
  (void)exchange(view.port(), input, std::chrono::milliseconds(2000));
  // Still serving: an unauthenticated request is answered (401), not ignored.
  std::string probe = "GET / HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(view.port()) +
                      "\r\nConnection: close\r\n\r\n";
  const auto t0 = Clock::now();
  uint16_t probe_port = 0;
  std::string answer = exchange(view.port(), probe, std::chrono::milliseconds(5000), &probe_port);
  if (answer.rfind("HTTP/1.1 ", 0) != 0) {
    std::fprintf(
        stderr, "view_fuzz: the probe (port %u) got %zu bytes in %lld ms: %.200s\n",
        static_cast<unsigned>(probe_port), answer.size(),
        static_cast<long long>(
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count()),
        answer.c_str());
    __builtin_trap();
  }
  return 0;
}
