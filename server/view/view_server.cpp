#include "view/view_server.h"

#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <cerrno>
#include <chrono>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "graphcore/analysis.h"
#include "protocol/document.h"
#include "view/compare.h"
#include "view/delta.h"
#include "view/security.h"

namespace cellscope::server::view {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

namespace {

constexpr uint64_t kMaxRequestBody = uint64_t{64} * 1024;
constexpr uint32_t kMaxRequestHeader = 16 * 1024;
// Accept back-off on errors: 10 ms doubling to 1 s.
constexpr std::chrono::milliseconds kAcceptBackoffFirst{10};
constexpr std::chrono::milliseconds kAcceptBackoffMax{1000};
// A long accept failure is logged again at most this often.
constexpr std::chrono::seconds kAcceptLogInterval{60};
// Refused connections (their 503 sent) drained at the same time; more are closed at once.
constexpr size_t kMaxRefusing = 32;
// How long a refused connection is drained (so that closing it does not reset the 503).
constexpr std::chrono::milliseconds kRefuseDrain{1000};

std::string message_json(const protocol::ViewMessage& message) {
  return protocol::to_json(message, {.pretty = false, .defaults = false});
}

class WsSession;

// The state of one followed file.
// One open connection, counted in `open` while alive (moved from the HTTP session to the
// WebSocket session it becomes).
class ConnectionSlot {
 public:
  explicit ConnectionSlot(std::shared_ptr<std::atomic<size_t>> counter)
      : counter_(std::move(counter)) {
    ++*counter_;
  }
  ~ConnectionSlot() { --*counter_; }
  ConnectionSlot(const ConnectionSlot&) = delete;
  ConnectionSlot& operator=(const ConnectionSlot&) = delete;

 private:
  std::shared_ptr<std::atomic<size_t>> counter_;
};

struct Counters {
  std::shared_ptr<std::atomic<size_t>> open = std::make_shared<std::atomic<size_t>>(0);
  std::shared_ptr<std::atomic<size_t>> refusing = std::make_shared<std::atomic<size_t>>(0);
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> refused{0};
  std::atomic<uint64_t> accept_errors{0};
  std::atomic<uint64_t> timeouts{0};
  std::atomic<uint64_t> coalesced{0};
  std::atomic<uint64_t> write_timeouts{0};
};

// What a view that falls behind is sent instead of its unsent frames: what a new view gets.
struct ViewState {
  uint32_t seq = 0;
  std::vector<std::shared_ptr<const std::string>> frames;  // update (if any), status, debug
};

bool resource_exhausted(const beast::error_code& ec) {
  if (ec.category() != boost::system::system_category()) return false;
  const int v = ec.value();
  return v == EMFILE || v == ENFILE || v == ENOBUFS || v == ENOMEM;
}

struct Channel {
  uint32_t seq = 0;
  bool has_document = false;
  std::shared_ptr<const protocol::GraphDocument> full;  // with per-kernel detail (DetailsRequest)
  std::shared_ptr<const protocol::GraphDocument> slim;  // what views have
  std::shared_ptr<const std::string> full_frame;        // ViewMessage{update{document: slim}}
  bool lazy = false;  // full_frame holds skeletons: every update is a full one
  // Lazy Cells: the group of each node (for NodesRequest), by Cell name.
  std::shared_ptr<const std::map<std::string, CellGroups>> groups;
  double analysis_ms = 0;
  std::string focus_cell;
  std::shared_ptr<const std::string> status_frame;  // the last non-"ok" status, if any
  std::set<std::shared_ptr<WsSession>> sessions;
  std::string canonical;  // the file's canonical path (debug focus matching), once needed
  // The comparison with a fixed base (CompareRequest): its generation (a new one per
  // compare_pending and stop_comparing), the base and its document (null while it is built, or
  // when it could not be), the last Comparison and its frame (null when not comparing).
  uint64_t compare_gen = 0;
  protocol::CompareBase compare_base;
  std::shared_ptr<const protocol::GraphDocument> base_doc;
  std::shared_ptr<const protocol::Comparison> comparison;
  std::shared_ptr<const std::string> compare_frame;
};

// The comparison of `doc` (update `seq`) with `base_doc`.
std::shared_ptr<const protocol::Comparison> compare_with(const protocol::GraphDocument& base_doc,
                                                         const protocol::CompareBase& base,
                                                         const protocol::GraphDocument& doc,
                                                         uint32_t seq) {
  auto c = std::make_shared<protocol::Comparison>(compare_documents(base_doc, doc));
  *c->mutable_base() = base;
  c->set_seq(seq);
  return c;
}

std::shared_ptr<const std::string> comparison_frame(const protocol::Comparison& c) {
  protocol::ViewMessage m;
  *m.mutable_comparison() = c;
  return std::make_shared<const std::string>(message_json(m));
}

std::string canonical_path(const std::string& file) {
  if (file.empty()) return file;
  std::error_code ec;
  auto p = std::filesystem::weakly_canonical(std::filesystem::path(file), ec);
  return ec ? file : p.string();
}

const std::string& canonical_of(const std::string& file, Channel& channel) {
  if (channel.canonical.empty()) channel.canonical = canonical_path(file);
  return channel.canonical;
}

// A training run of one file: its steps (thinned past kMaxTrainSteps) and last drift, and the
// frames built from them (null until asked for; dropped when they change).
struct TrainRun {
  std::string session;
  std::string file;  // as the messages name it
  std::string cell;
  std::vector<protocol::TrainStep> steps;
  std::shared_ptr<const protocol::PrecisionDrift> drift;
  std::shared_ptr<const std::string> history_frame;
  std::shared_ptr<const std::string> drift_frame;
};

protocol::TrainProgress progress_of(const TrainRun& run) {
  protocol::TrainProgress p;
  p.set_file(run.file);
  p.set_cell(run.cell);
  p.set_reset(true);
  p.set_max_steps(static_cast<uint32_t>(kMaxTrainSteps));
  p.set_session(run.session);
  for (const auto& s : run.steps) *p.add_steps() = s;
  return p;
}

// The device watch of one file: its samples (the last kMaxDeviceSamples) and the frame built from
// them (null until asked for; dropped when they change).
struct DeviceRun {
  std::string session;
  std::string file;  // as the samples name it
  std::string device;
  std::deque<protocol::DeviceSample> samples;
  std::shared_ptr<const std::string> history_frame;
};

protocol::DeviceProgress device_progress_of(const DeviceRun& run) {
  protocol::DeviceProgress p;
  p.set_file(run.file);
  p.set_device(run.device);
  p.set_reset(true);
  p.set_max_samples(static_cast<uint32_t>(kMaxDeviceSamples));
  p.set_session(run.session);
  for (const auto& s : run.samples) *p.add_samples() = s;
  return p;
}

}  // namespace

struct ViewServer::Impl : std::enable_shared_from_this<ViewServer::Impl> {
  ServerOptions options;
  Handlers handlers;
  AccessPolicy policy;
  asio::io_context io{1};
  std::unique_ptr<tcp::acceptor> acceptor;
  std::thread thread;
  std::atomic<bool> running{false};
  Counters counters;

  // Accept errors (I/O thread only): the current burst of consecutive failures and its back-off.
  asio::steady_timer accept_timer{io};
  std::chrono::milliseconds accept_backoff{kAcceptBackoffFirst};
  uint64_t accept_burst = 0;  // failures since the last successful accept
  std::chrono::steady_clock::time_point accept_burst_start, accept_logged;
  uint64_t refused_burst = 0;  // connections refused since the last one accepted

  mutable std::mutex mutex;  // guards channels and the debug focus
  std::map<std::string, Channel> channels;
  // The debugger's current focus (view.proto's DebugFocus) and its file's canonical path; null
  // when not paused.
  std::shared_ptr<const std::string> debug_frame;
  std::string debug_file;
  // Training runs (TrainProgress, PrecisionDrift) by canonical file.
  std::map<std::string, TrainRun> trains;
  // Device watches (DeviceProgress) by canonical file.
  std::map<std::string, DeviceRun> devices;

  // The training frames a view of `file` gets when it connects (under `mutex`).
  void train_frames(const std::string& file, Channel& channel,
                    std::vector<std::shared_ptr<const std::string>>* out);
  // The device telemetry frame a view of `file` gets when it connects (under `mutex`).
  void device_frames(const std::string& file, Channel& channel,
                     std::vector<std::shared_ptr<const std::string>>* out);
  // Sends `frame` to every view of canonical `file` (under `mutex`); returns how many.
  size_t send_to_file(const std::string& file, const std::shared_ptr<const std::string>& frame);
  // The run of canonical `file` for `session`: a new one (cleared) when the session changed.
  TrainRun& run_of(const std::string& file, const std::string& session, bool* restarted);

  void accept();
  void accepted(tcp::socket socket);
  void accept_failed(const beast::error_code& ec);
  void join(const std::shared_ptr<WsSession>& session, const std::string& file);
  ViewState state_of(const std::string& file);
  void leave(const std::shared_ptr<WsSession>& session, const std::string& file);
  void on_request(const std::shared_ptr<WsSession>& session, const std::string& file,
                  const std::string& text);
};

namespace {

// The headers every HTTP answer carries.
template <typename Body>
void common_headers(http::response<Body>& res, uint16_t port) {
  res.set(http::field::server, "cellscope");
  res.set(http::field::cache_control, "no-store");
  res.set("X-Content-Type-Options", "nosniff");
  res.set("Referrer-Policy", "no-referrer");
  res.set("X-Frame-Options", "DENY");
  const std::string p = std::to_string(port);
  res.set("Content-Security-Policy",
          "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
          "img-src 'self' data: blob:; worker-src 'self' blob:; font-src 'self' data:; "
          "connect-src 'self' ws://127.0.0.1:" +
              p + " ws://localhost:" + p + "; base-uri 'none'; form-action 'none'");
}

http::response<http::string_body> text_response(http::status status, unsigned version,
                                                bool keep_alive, std::string body, uint16_t port) {
  http::response<http::string_body> res{status, version};
  common_headers(res, port);
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.keep_alive(keep_alive);
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

class WsSession : public std::enable_shared_from_this<WsSession> {
 public:
  WsSession(tcp::socket socket, std::weak_ptr<ViewServer::Impl> server, std::string file,
            std::unique_ptr<ConnectionSlot> slot, const ServerOptions& options, Counters* counters)
      : ws_(std::move(socket)),
        write_timer_(ws_.get_executor()),
        server_(std::move(server)),
        file_(std::move(file)),
        slot_(std::move(slot)),
        max_frames_(options.max_queued_frames),
        max_bytes_(options.max_queued_bytes),
        write_timeout_(options.write_timeout),
        counters_(counters),
        max_message_bytes_(options.max_message_bytes) {
    // The message limit is enforced in read(), not with read_message_max: Beast's own 1009 path
    // (Boost 1.74) closes the socket after draining at most 2 KiB of what the peer is still
    // sending, so the peer gets a reset and usually loses the close frame.
    auto timeout = websocket::stream_base::timeout::suggested(beast::role_type::server);
    timeout.handshake_timeout = options.handshake_timeout;
    // Pings a silent view at half the idle time: a dead peer is dropped, a live one is kept.
    timeout.keep_alive_pings = true;
    ws_.set_option(timeout);
  }

  void start(const http::request<http::string_body>& request) {
    websocket::permessage_deflate deflate;
    deflate.server_enable = true;
    // Level 1: documents are large and repetitive; the fastest level already shrinks them ~10x,
    // and higher levels cost more time than the transfer they save on a loopback connection.
    deflate.compLevel = 1;
    ws_.set_option(deflate);
    ws_.auto_fragment(false);  // one frame per message
    ws_.set_option(websocket::stream_base::decorator(
        [](websocket::response_type& res) { res.set(http::field::server, "cellscope"); }));
    ws_.async_accept(request, [self = shared_from_this()](beast::error_code ec) {
      if (ec) {
        if (ec == beast::error::timeout && self->counters_ != nullptr) ++self->counters_->timeouts;
        spdlog::debug("view: websocket handshake failed: {}", ec.message());
        return;
      }
      if (auto server = self->server_.lock()) server->join(self, self->file_);
      self->read();
    });
  }

  // On the I/O thread. `seq` is the update a frame carries (0: not an update): an update not
  // newer than the last one queued is stale (the view got a later document) and dropped.
  void send(std::shared_ptr<const std::string> frame, uint32_t seq = 0) {
    if (closed_) return;
    if (seq != 0) {
      if (seq <= last_seq_) return;
      last_seq_ = seq;
    }
    if (behind_) return;  // the latest state is sent when the view catches up
    // Frames queued behind the one being written; a new update supersedes them all.
    const size_t pending = queue_.empty() ? 0 : queue_.size() - 1;
    if (pending > 0 && (pending >= max_frames_ || (seq != 0 && pending_bytes_ >= max_bytes_))) {
      if (!warned_) {
        spdlog::warn(
            "view: a view of {} fell behind ({} frames, {} bytes unsent); it gets the latest "
            "document when it reads again",
            file_, pending, pending_bytes_);
      }
      warned_ = true;
      if (counters_ != nullptr) ++counters_->coalesced;
      queue_.erase(queue_.begin() + 1, queue_.end());
      pending_bytes_ = 0;
      behind_ = true;
      return;
    }
    if (!queue_.empty()) pending_bytes_ += frame->size();
    queue_.push_back(std::move(frame));
    if (queue_.size() == 1) write_next();
  }

  void close(websocket::close_code code) {
    if (closed_) return;
    closed_ = true;
    queue_.clear();
    pending_bytes_ = 0;
    write_timer_.cancel();
    ws_.async_close(code, [self = shared_from_this()](beast::error_code) {});
  }

  const std::string& file() const { return file_; }

 private:
  void write_next() {
    ws_.text(true);
    // A view that stops reading stalls the write: after write_timeout it is disconnected (a
    // close frame could not reach it either).
    write_timer_.expires_after(write_timeout_);
    write_timer_.async_wait([weak = weak_from_this(), n = writes_](beast::error_code ec) {
      auto self = weak.lock();
      if (ec || !self || self->closed_ || self->writes_ != n) return;
      spdlog::warn("view: a view of {} read nothing for {} ms; disconnecting it", self->file_,
                   self->write_timeout_.count());
      if (self->counters_ != nullptr) ++self->counters_->write_timeouts;
      beast::get_lowest_layer(self->ws_).close();
    });
    // The handler owns the frame being written: close() and fail() may clear the queue while
    // the write is in flight.
    auto frame = queue_.front();
    ws_.async_write(asio::buffer(*frame),
                    [self = shared_from_this(), frame](beast::error_code ec, size_t) {
                      ++self->writes_;
                      self->write_timer_.cancel();
                      if (ec) {
                        self->fail(ec);
                        return;
                      }
                      if (!self->queue_.empty()) self->queue_.pop_front();
                      if (!self->queue_.empty())
                        self->pending_bytes_ -= self->queue_.front()->size();
                      if (self->closed_) return;
                      if (self->queue_.empty() && self->behind_) self->catch_up();
                      if (!self->queue_.empty()) self->write_next();
                    });
  }

  // The view read what was being written: it gets the latest state in place of what it missed.
  void catch_up() {
    behind_ = false;
    auto server = server_.lock();
    if (!server) return;
    auto state = server->state_of(file_);
    last_seq_ = std::max(last_seq_, state.seq);
    for (auto& f : state.frames) {
      if (!queue_.empty()) pending_bytes_ += f->size();
      queue_.push_back(std::move(f));
    }
    if (read_paused_) {
      read_paused_ = false;
      read();
    }
  }

  // Reads a message a bounded piece at a time (a deflate bomb inflates no further than the
  // limit); one over max_message_bytes_ is refused with a close frame (1009), which also drains
  // what the view is still sending until its close frame or the handshake timeout.
  void read() {
    const size_t room = max_message_bytes_ - std::min(max_message_bytes_, buffer_.size()) + 1;
    ws_.async_read_some(buffer_, room, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) {
        self->fail(ec);
        return;
      }
      if (self->buffer_.size() > self->max_message_bytes_) {
        self->refuse_too_big();
        return;
      }
      if (!self->ws_.is_message_done()) {
        self->read();
        return;
      }
      std::string text = beast::buffers_to_string(self->buffer_.data());
      self->buffer_.consume(self->buffer_.size());
      if (auto server = self->server_.lock()) server->on_request(self, self->file_, text);
      // A view that does not read its answers is not read from either (its requests would
      // cost the I/O thread for nothing) until it catches up.
      if (self->behind_) {
        self->read_paused_ = true;
        return;
      }
      self->read();
    });
  }

  void refuse_too_big() {
    spdlog::warn("view: a view of {} sent a message over {} bytes; closed it (1009)", file_,
                 max_message_bytes_);
    buffer_.consume(buffer_.size());
    close(websocket::close_code::too_big);
    if (auto server = server_.lock()) server->leave(shared_from_this(), file_);
  }

  void fail(beast::error_code ec) {
    if (ec != websocket::error::closed && ec != asio::error::operation_aborted &&
        ec != asio::error::eof)
      spdlog::debug("view: connection for {} ended: {}", file_, ec.message());
    closed_ = true;
    queue_.clear();
    pending_bytes_ = 0;
    write_timer_.cancel();
    if (auto server = server_.lock()) server->leave(shared_from_this(), file_);
  }

  websocket::stream<beast::tcp_stream> ws_;
  asio::steady_timer write_timer_;
  beast::flat_buffer buffer_;
  std::weak_ptr<ViewServer::Impl> server_;
  std::string file_;
  std::unique_ptr<ConnectionSlot> slot_;
  size_t max_frames_;
  size_t max_bytes_;
  std::chrono::milliseconds write_timeout_;
  Counters* counters_;  // the server's; outlives the I/O thread's sessions (see stop())
  size_t max_message_bytes_;
  std::deque<std::shared_ptr<const std::string>> queue_;  // front: being written
  size_t pending_bytes_ = 0;                              // bytes of queue_ but its front
  uint64_t writes_ = 0;                                   // writes finished
  uint32_t last_seq_ = 0;
  bool behind_ = false;       // unsent frames were dropped: send the latest state when caught up
  bool read_paused_ = false;  // not reading requests while behind_
  bool warned_ = false;
  bool closed_ = false;
};

// A connection over max_connections, its 503 written and its sending side shut: drained until
// the client closes or kRefuseDrain passes, so that closing it does not reset the answer.
class RefusedSession : public std::enable_shared_from_this<RefusedSession> {
 public:
  RefusedSession(tcp::socket socket, std::shared_ptr<std::atomic<size_t>> refusing)
      : stream_(std::move(socket)), slot_(std::move(refusing)) {}

  void start() {
    stream_.expires_after(kRefuseDrain);
    drain();
  }

 private:
  void drain() {
    stream_.async_read_some(asio::buffer(buffer_),
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              if (!ec) self->drain();
                            });
  }

  beast::tcp_stream stream_;
  ConnectionSlot slot_;
  std::array<char, 4096> buffer_{};
};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(tcp::socket socket, std::weak_ptr<ViewServer::Impl> server,
              std::unique_ptr<ConnectionSlot> slot, std::chrono::milliseconds timeout,
              Counters* counters)
      : stream_(std::move(socket)),
        server_(std::move(server)),
        slot_(std::move(slot)),
        timeout_(timeout),
        counters_(counters) {}

  void start() { read(); }

 private:
  uint16_t peer_port() {
    beast::error_code ec;
    return stream_.socket().remote_endpoint(ec).port();
  }

  void read() {
    parser_.emplace();
    parser_->body_limit(kMaxRequestBody);
    parser_->header_limit(kMaxRequestHeader);
    // The whole request (a slow-loris trickling its headers included), or an idle keep-alive
    // connection's next one, within the handshake timeout.
    stream_.expires_after(timeout_);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (ec) {
                         // A timeout before the first byte is an idle keep-alive connection.
                         if (ec == beast::error::timeout && self->parser_->got_some())
                           ++self->counters_->timeouts;
                         if (ec != http::error::end_of_stream && ec != asio::error::eof &&
                             ec != beast::error::timeout) {
                           spdlog::debug("view: bad HTTP request: {}", ec.message());
                         } else if (spdlog::should_log(spdlog::level::debug)) {
                           spdlog::debug("view: connection from port {} ended: {}",
                                         self->peer_port(), ec.message());
                         }
                         beast::error_code ignored;
                         self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
                         return;
                       }
                       self->handle();
                     });
  }

  template <typename Response>
  void write(Response res) {
    auto sp = std::make_shared<Response>(std::move(res));
    const bool keep = sp->keep_alive();
    http::async_write(stream_, *sp,
                      [self = shared_from_this(), sp, keep](beast::error_code ec, size_t) {
                        if (ec || !keep) {
                          beast::error_code ignored;
                          self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
                          return;
                        }
                        self->read();
                      });
  }

  void handle() {
    auto server = server_.lock();
    if (!server) return;
    auto req = parser_->release();
    const uint16_t port = server->policy.port;
    const auto version = req.version();
    const bool keep = req.keep_alive();
    auto target = parse_target(std::string_view(req.target().data(), req.target().size()));
    if (!target) {
      write(text_response(http::status::bad_request, version, false, "bad request target\n", port));
      return;
    }
    const auto header = [&](http::field f) {
      const auto v = req[f];
      return std::string_view(v.data(), v.size());
    };
    const auto token_it = target->query.find("token");
    RequestFacts facts{
        header(http::field::host), header(http::field::origin), header(http::field::authorization),
        header(http::field::cookie),
        token_it == target->query.end() ? std::string_view() : std::string_view(token_it->second)};
    const auto decision = check_access(facts, server->policy);
    if (decision.access != Access::Allowed) {
      const bool unauthorized = decision.access == Access::Unauthorized;
      spdlog::warn("view: refused {} {}: {}", std::string(req.method_string()), target->path,
                   decision.reason);
      auto res = text_response(
          unauthorized ? http::status::unauthorized : http::status::forbidden, version, false,
          unauthorized ? "401 Unauthorized: " + decision.reason +
                             ". Open the view with the URL (and its token) that `cellscope view` "
                             "printed or the editor opened.\n"
                       : "403 Forbidden: " + decision.reason + ".\n",
          port);
      if (unauthorized) res.set(http::field::www_authenticate, "Bearer realm=\"cellscope\"");
      write(std::move(res));
      return;
    }

    if (websocket::is_upgrade(req)) {
      if (target->path != "/ws") {
        write(text_response(http::status::not_found, version, false, "no websocket here\n", port));
        return;
      }
      const auto file_it = target->query.find("file");
      const std::string file = file_it == target->query.end() ? "" : file_it->second;
      std::string why = file.empty() ? "the URL names no file (file=...)" : "";
      if (why.empty() && server->handlers.allow_file) why = server->handlers.allow_file(file);
      if (!why.empty()) {
        write(text_response(http::status::not_found, version, false, "404 Not Found: " + why + "\n",
                            port));
        return;
      }
      beast::get_lowest_layer(stream_).expires_never();
      std::make_shared<WsSession>(stream_.release_socket(), server_, file, std::move(slot_),
                                  server->options, counters_)
          ->start(req);
      return;
    }

    if (req.method() != http::verb::get && req.method() != http::verb::head) {
      auto res = text_response(http::status::method_not_allowed, version, keep,
                               "405 Method Not Allowed\n", port);
      res.set(http::field::allow, "GET, HEAD");
      write(std::move(res));
      return;
    }
    if (target->path == "/favicon.ico") {  // browsers ask; the page declares no icon
      http::response<http::empty_body> res{http::status::no_content, version};
      common_headers(res, port);
      res.keep_alive(keep);
      write(std::move(res));
      return;
    }
    const std::string path = target->path == "/" ? "/index.html" : target->path;
    const Asset* asset = find_asset(path);
    if (asset == nullptr) {
      write(text_response(http::status::not_found, version, keep,
                          "404 Not Found: " + target->path + "\n", port));
      return;
    }
    http::response<http::string_body> res{http::status::ok, version};
    common_headers(res, port);
    res.set(http::field::content_type, std::string(asset->content_type) + "; charset=utf-8");
    if (token_it != target->query.end()) {
      // The page's own requests (scripts, the worker, the WebSocket) then carry the token.
      res.set(http::field::set_cookie, cookie_name(port) + "=" + server->policy.token +
                                           "; Path=/; HttpOnly; SameSite=Strict");
    }
    res.keep_alive(keep);
    if (req.method() == http::verb::get) res.body() = std::string(asset->data);
    res.prepare_payload();
    if (req.method() == http::verb::head) res.content_length(asset->data.size());
    write(std::move(res));
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::weak_ptr<ViewServer::Impl> server_;
  std::unique_ptr<ConnectionSlot> slot_;
  std::chrono::milliseconds timeout_;
  Counters* counters_;
};

}  // namespace

void ViewServer::Impl::accept() {
  acceptor->async_accept(asio::make_strand(io),
                         [self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
                           if (!self->running || ec == asio::error::operation_aborted) return;
                           if (ec) {
                             self->accept_failed(ec);
                             return;
                           }
                           self->accepted(std::move(socket));
                           self->accept();
                         });
}

void ViewServer::Impl::accepted(tcp::socket socket) {
  using clock = std::chrono::steady_clock;
  if (accept_burst > 0) {
    const double s = std::chrono::duration<double>(clock::now() - accept_burst_start).count();
    spdlog::warn("view: accepting connections again after {} failed accepts in {:.1f} s",
                 accept_burst, s);
    accept_burst = 0;
    accept_backoff = kAcceptBackoffFirst;
  }
  ++counters.accepted;
  const size_t open = counters.open->load();
  if (spdlog::should_log(spdlog::level::debug)) {
    beast::error_code peer_ec;
    spdlog::debug("view: accepted a connection from port {} ({} open)",
                  socket.remote_endpoint(peer_ec).port(), open);
  }
  if (open < options.max_connections) {
    if (refused_burst > 0) {
      spdlog::warn("view: refused {} connections over the limit of {}", refused_burst,
                   options.max_connections);
      refused_burst = 0;
    }
    std::make_shared<HttpSession>(std::move(socket), shared_from_this(),
                                  std::make_unique<ConnectionSlot>(counters.open),
                                  options.handshake_timeout, &counters)
        ->start();
    return;
  }
  ++counters.refused;
  if (refused_burst++ == 0)
    spdlog::warn("view: {} connections open, the limit; answering new ones 503", open);
  static const std::string response = [] {
    const std::string body =
        "503 Service Unavailable: too many connections to the Cellscope view server; retry "
        "later.\n";
    return "HTTP/1.1 503 Service Unavailable\r\nServer: cellscope\r\nContent-Type: text/plain; "
           "charset=utf-8\r\nCache-Control: no-store\r\nRetry-After: 1\r\nConnection: "
           "close\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  }();
  // Answered at once (a new socket's send buffer takes it whole), not after the burst of
  // accepts this one may be part of; the request, if any, is not read.
  beast::error_code ec;
  socket.non_blocking(true, ec);
  if (!ec) asio::write(socket, asio::buffer(response), ec);
  if (!ec) socket.shutdown(tcp::socket::shutdown_send, ec);
  // Beyond kMaxRefusing being drained, closed now: the answer is already on its way.
  if (ec || counters.refusing->load() >= kMaxRefusing) return;
  std::make_shared<RefusedSession>(std::move(socket), counters.refusing)->start();
}

void ViewServer::Impl::accept_failed(const beast::error_code& ec) {
  using clock = std::chrono::steady_clock;
  ++counters.accept_errors;
  const auto now = clock::now();
  if (accept_burst++ == 0) {
    accept_burst_start = accept_logged = now;
    spdlog::warn("view: accept failed: {} ({} connections open); retrying with back-off",
                 ec.message(), counters.open->load());
  } else if (now - accept_logged >= kAcceptLogInterval) {
    accept_logged = now;
    spdlog::warn("view: accept still failing: {} ({} failures so far)", ec.message(), accept_burst);
  }
  // A connection reset before it was accepted is that connection's problem: retry at once. Out
  // of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM) the pending connection stays
  // ready, so an immediate retry would spin: wait 10 ms, doubling to 1 s.
  if (!resource_exhausted(ec) && accept_burst < 8) {
    accept();
    return;
  }
  accept_timer.expires_after(accept_backoff);
  accept_backoff = std::min(accept_backoff * 2, kAcceptBackoffMax);
  accept_timer.async_wait([self = shared_from_this()](beast::error_code timer_ec) {
    if (!timer_ec && self->running) self->accept();
  });
}

ViewState ViewServer::Impl::state_of(const std::string& file) {
  ViewState state;
  std::lock_guard lock(mutex);
  auto& channel = channels[file];
  if (channel.has_document) {
    state.seq = channel.seq;
    state.frames.push_back(channel.full_frame);
  }
  if (channel.status_frame) state.frames.push_back(channel.status_frame);
  if (channel.has_document && debug_frame && canonical_of(file, channel) == debug_file)
    state.frames.push_back(debug_frame);
  if (channel.compare_frame) state.frames.push_back(channel.compare_frame);
  train_frames(file, channel, &state.frames);
  device_frames(file, channel, &state.frames);
  return state;
}

void ViewServer::Impl::join(const std::shared_ptr<WsSession>& session, const std::string& file) {
  bool needs_document = false;
  size_t open = 0;
  {
    std::lock_guard lock(mutex);
    auto& channel = channels[file];
    channel.sessions.insert(session);
    protocol::ViewMessage hello;
    auto* h = hello.mutable_hello();
    h->set_file(file);
    h->set_tool_version(std::string(protocol::tool_version()));
    h->set_editor(options.editor);
    h->set_focus_cell(channel.focus_cell.empty() ? options.focus_cell : channel.focus_cell);
    session->send(std::make_shared<const std::string>(message_json(hello)));
    if (channel.has_document) session->send(channel.full_frame, channel.seq);
    if (channel.status_frame) session->send(channel.status_frame);
    // The debugger's focus follows the document (the first publish sends it when there is none).
    if (channel.has_document && debug_frame && canonical_of(file, channel) == debug_file)
      session->send(debug_frame);
    if (channel.compare_frame) session->send(channel.compare_frame);
    std::vector<std::shared_ptr<const std::string>> train;
    train_frames(file, channel, &train);
    device_frames(file, channel, &train);
    for (auto& f : train) session->send(std::move(f));
    needs_document = !channel.has_document;
    for (const auto& [name, c] : channels) open += c.sessions.size();
  }
  spdlog::info("view: a view connected for {} ({} open)", file, open);
  if (needs_document && handlers.subscribed) handlers.subscribed(file);
}

void ViewServer::Impl::train_frames(const std::string& file, Channel& channel,
                                    std::vector<std::shared_ptr<const std::string>>* out) {
  if (trains.empty()) return;
  const auto it = trains.find(canonical_of(file, channel));
  if (it == trains.end()) return;
  TrainRun& run = it->second;
  if (!run.steps.empty() && !run.history_frame) {
    protocol::ViewMessage m;
    *m.mutable_train() = progress_of(run);
    run.history_frame = std::make_shared<const std::string>(message_json(m));
  }
  if (run.history_frame) out->push_back(run.history_frame);
  if (run.drift_frame) out->push_back(run.drift_frame);
}

void ViewServer::Impl::device_frames(const std::string& file, Channel& channel,
                                     std::vector<std::shared_ptr<const std::string>>* out) {
  if (devices.empty()) return;
  const auto it = devices.find(canonical_of(file, channel));
  if (it == devices.end() || it->second.samples.empty()) return;
  DeviceRun& run = it->second;
  if (!run.history_frame) {
    protocol::ViewMessage m;
    *m.mutable_device() = device_progress_of(run);
    run.history_frame = std::make_shared<const std::string>(message_json(m));
  }
  out->push_back(run.history_frame);
}

size_t ViewServer::Impl::send_to_file(const std::string& file,
                                      const std::shared_ptr<const std::string>& frame) {
  std::vector<std::shared_ptr<WsSession>> sessions;
  for (auto& [name, channel] : channels) {
    if (channel.sessions.empty() || canonical_of(name, channel) != file) continue;
    sessions.insert(sessions.end(), channel.sessions.begin(), channel.sessions.end());
  }
  const size_t n = sessions.size();
  // Posted under the lock: in order with every other frame of these views.
  if (n > 0) {
    asio::post(io, [sessions = std::move(sessions), frame] {
      for (const auto& s : sessions) s->send(frame);
    });
  }
  return n;
}

TrainRun& ViewServer::Impl::run_of(const std::string& file, const std::string& session,
                                   bool* restarted) {
  auto [it, fresh] = trains.try_emplace(file);
  TrainRun& run = it->second;
  *restarted = fresh || run.session != session;
  if (*restarted) {
    run = TrainRun{};
    run.session = session;
  }
  return run;
}

void ViewServer::Impl::leave(const std::shared_ptr<WsSession>& session, const std::string& file) {
  std::lock_guard lock(mutex);
  auto it = channels.find(file);
  if (it == channels.end()) return;
  it->second.sessions.erase(session);
}

void ViewServer::Impl::on_request(const std::shared_ptr<WsSession>& session,
                                  const std::string& file, const std::string& text) {
  protocol::ViewRequest request;
  std::string error;
  if (!protocol::from_json(text, &request, &error)) {
    spdlog::warn("view: ignoring a malformed request from a view of {}: {}", file, error);
    return;
  }
  if (request.has_details()) {
    protocol::ViewMessage m;
    {
      std::lock_guard lock(mutex);
      auto& channel = channels[file];
      static const protocol::GraphDocument kNone;
      *m.mutable_details() = node_details(channel.full ? *channel.full : kNone,
                                          request.details().cell(), request.details().node());
      m.mutable_details()->set_seq(channel.seq);
    }
    session->send(std::make_shared<const std::string>(message_json(m)));
  } else if (request.has_nodes()) {
    std::shared_ptr<const protocol::GraphDocument> slim;
    std::shared_ptr<const std::map<std::string, CellGroups>> groups;
    uint32_t seq = 0;
    {
      std::lock_guard lock(mutex);
      auto& channel = channels[file];
      slim = channel.slim;
      groups = channel.groups;
      seq = channel.seq;
    }
    protocol::ViewMessage m;
    auto* out = m.mutable_nodes();
    const auto& req = request.nodes();
    const protocol::Cell* cell = nullptr;
    if (slim) {
      for (const auto& c : slim->cells())
        if (c.name() == req.cell()) cell = &c;
    }
    const CellGroups* cell_groups = nullptr;
    if (cell != nullptr && groups) {
      const auto it = groups->find(req.cell());
      if (it != groups->end()) cell_groups = &it->second;
    }
    if (cell_groups == nullptr) {
      out->set_cell(req.cell());
      out->set_scope(req.scope());
      out->set_error(cell == nullptr ? "no Cell " + req.cell()
                                     : "Cell " + req.cell() + " is not sent lazily");
    } else {
      *out = scope_nodes(*cell, *cell_groups, req.scope());
    }
    out->set_seq(seq);
    session->send(std::make_shared<const std::string>(message_json(m)));
  } else if (request.has_reveal()) {
    if (handlers.reveal) handlers.reveal(request.reveal());
  } else if (request.has_inputs()) {
    // A spec that does not parse is this view's typo: answered to it alone, not broadcast.
    const auto refuse = [&](const std::string& why) {
      protocol::ViewMessage m;
      m.mutable_status()->set_state("failed");
      m.mutable_status()->set_message(why);
      session->send(std::make_shared<const std::string>(message_json(m)));
    };
    std::vector<graphcore::TensorType> inputs;
    for (const std::string& spec : request.inputs().inputs()) {
      std::string why;
      auto t = graphcore::parse_input_spec(spec, &why);
      if (!t) return refuse("input '" + spec + "': " + (why.empty() ? "not a shape" : why));
      inputs.push_back(std::move(*t));
    }
    if (!handlers.inputs) return refuse("this server does not take input shapes");
    handlers.inputs(file, std::move(inputs));
  } else if (request.has_compare()) {
    if (!handlers.compare) {
      protocol::Comparison c;
      c.mutable_base()->set_spec(request.compare().base());
      c.set_error("this server cannot compare graphs");
      session->send(comparison_frame(c));
      return;
    }
    handlers.compare(file, request.compare().base());
  }
}

// ---------------------------------------------------------------------------------------------

ViewServer::ViewServer(ServerOptions options, Handlers handlers) : impl_(std::make_shared<Impl>()) {
  impl_->options = std::move(options);
  impl_->handlers = std::move(handlers);
  impl_->policy.token = random_token();
  impl_->policy.extra_origins = impl_->options.extra_origins;
}

ViewServer::~ViewServer() { stop(); }

void ViewServer::start() {
  if (impl_->running) return;
  beast::error_code ec;
  auto acceptor = std::make_unique<tcp::acceptor>(impl_->io);
  const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), impl_->options.port);
  acceptor->open(endpoint.protocol(), ec);
  if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor->bind(endpoint, ec);
  if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    throw std::runtime_error("cannot listen on 127.0.0.1:" + std::to_string(impl_->options.port) +
                             ": " + ec.message());
  }
  impl_->policy.port = acceptor->local_endpoint().port();
  impl_->acceptor = std::move(acceptor);
  impl_->running = true;
  impl_->accept();
  impl_->thread = std::thread([impl = impl_] {
    try {
      impl->io.run();
    } catch (const std::exception& e) {
      spdlog::error("view: server thread stopped: {}", e.what());
    }
  });
  spdlog::info("view: serving on 127.0.0.1:{}", impl_->policy.port);
}

void ViewServer::stop() {
  if (!impl_->running.exchange(false)) return;
  asio::post(impl_->io, [impl = impl_] {
    beast::error_code ignored;
    if (impl->acceptor) impl->acceptor->close(ignored);
    impl->accept_timer.cancel();
    std::lock_guard lock(impl->mutex);
    for (auto& [file, channel] : impl->channels)
      for (const auto& s : channel.sessions) s->close(websocket::close_code::going_away);
  });
  // Give the close frames a moment, then stop the loop.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  std::lock_guard lock(impl_->mutex);
  impl_->channels.clear();
}

bool ViewServer::running() const { return impl_->running; }
uint16_t ViewServer::port() const { return impl_->policy.port; }
const std::string& ViewServer::token() const { return impl_->policy.token; }

std::string ViewServer::url(const std::string& file, const std::string& cell) const {
  std::string out = "http://127.0.0.1:" + std::to_string(port()) + "/?token=" + token() +
                    "&file=" + percent_encode(file);
  if (!cell.empty()) out += "&cell=" + percent_encode(cell);
  return out;
}

void ViewServer::publish(const std::string& file, protocol::GraphDocument doc, double analysis_ms,
                         const std::string& focus_cell) {
  // One publisher per file (the analysis worker, or `cellscope view`'s loop): the previous
  // document read here is still the latest when the new one is committed below, so the
  // expensive work (slimming, diffing, serialising) runs outside the lock.
  std::shared_ptr<const protocol::GraphDocument> previous;
  uint32_t base = 0;
  bool previous_lazy = false;
  bool viewers = false;
  std::string focus = focus_cell;
  std::shared_ptr<const protocol::GraphDocument> base_doc;  // the comparison's base, if any
  protocol::CompareBase compare_base;
  {
    std::lock_guard lock(impl_->mutex);
    auto& channel = impl_->channels[file];
    previous = channel.slim;
    previous_lazy = channel.lazy;
    base = channel.seq;
    viewers = !channel.sessions.empty();
    if (focus.empty()) focus = channel.focus_cell;
    base_doc = channel.base_doc;
    compare_base = channel.compare_base;
  }
  // The full update, serialised once for every view that connects before the next document.
  protocol::ViewMessage full_message;
  auto* u = full_message.mutable_update();
  auto slim = std::make_shared<protocol::GraphDocument>(slim_document(doc));
  auto groups = std::make_shared<std::map<std::string, CellGroups>>();
  const bool lazy = lazy_update(slim.get(), impl_->options.lazy_threshold, u, groups.get());
  if (!lazy) {
    groups.reset();
    u->mutable_document()->Swap(slim.get());
  }
  u->set_seq(base + 1);
  u->set_analysis_ms(analysis_ms);
  u->set_focus_cell(focus);
  auto full_frame = std::make_shared<const std::string>(message_json(full_message));
  if (!lazy) slim->Swap(u->mutable_document());
  std::shared_ptr<const std::string> frame = full_frame;
  // Lazy documents (before or after) are always sent in full: the views hold skeletons.
  if (previous && viewers && !lazy && !previous_lazy) {
    auto delta = diff_documents(*previous, *slim, base);
    // A delta that is not clearly smaller than the document is not worth applying.
    if (delta.ByteSizeLong() * 2 < slim->ByteSizeLong()) {
      protocol::ViewMessage m;
      auto* du = m.mutable_update();
      du->set_seq(base + 1);
      *du->mutable_delta() = std::move(delta);
      du->set_analysis_ms(analysis_ms);
      du->set_focus_cell(focus);
      frame = std::make_shared<const std::string>(message_json(m));
    }
  }
  auto full = std::make_shared<const protocol::GraphDocument>(std::move(doc));
  std::shared_ptr<const protocol::Comparison> comparison;
  if (base_doc) comparison = compare_with(*base_doc, compare_base, *slim, base + 1);

  std::lock_guard lock(impl_->mutex);
  auto& channel = impl_->channels[file];
  // The comparison's base changed meanwhile (rare): compare with the new one.
  if (channel.base_doc != base_doc) {
    comparison.reset();
    if (channel.base_doc)
      comparison = compare_with(*channel.base_doc, channel.compare_base, *slim, base + 1);
  }
  std::shared_ptr<const std::string> compare_frame;
  if (comparison) {
    compare_frame = comparison_frame(*comparison);
    channel.comparison = comparison;
    channel.compare_frame = compare_frame;
  }
  const bool had = channel.has_document;
  channel.seq = base + 1;
  channel.full = std::move(full);
  channel.slim = std::move(slim);
  channel.full_frame = std::move(full_frame);
  channel.lazy = lazy;
  channel.groups = std::move(groups);
  channel.has_document = true;
  channel.analysis_ms = analysis_ms;
  if (!focus_cell.empty()) channel.focus_cell = focus_cell;
  channel.status_frame.reset();
  if (channel.sessions.empty()) return;
  // A view that joined while this document was being prepared has the previous one (or none).
  if (!had || !previous) frame = channel.full_frame;
  // Views that joined before the first document get the debugger's focus after it.
  std::shared_ptr<const std::string> debug;
  if (!had && impl_->debug_frame && canonical_of(file, channel) == impl_->debug_file)
    debug = impl_->debug_frame;
  std::vector<std::shared_ptr<WsSession>> sessions(channel.sessions.begin(),
                                                   channel.sessions.end());
  // Posted under the lock: frames reach each view in publish order. The comparison goes first:
  // the view holds it until the update it names, and draws both at once.
  asio::post(impl_->io,
             [sessions = std::move(sessions), frame, debug, compare_frame, seq = base + 1] {
               for (const auto& s : sessions) {
                 if (compare_frame) s->send(compare_frame);
                 s->send(frame, seq);
                 if (debug) s->send(debug);
               }
             });
}

void ViewServer::publish_status(const std::string& file, const std::string& state,
                                const std::string& message,
                                const std::vector<protocol::Diagnostic>& diagnostics) {
  protocol::ViewMessage m;
  auto* s = m.mutable_status();
  s->set_state(state);
  s->set_message(message);
  for (const auto& d : diagnostics) *s->add_diagnostics() = d;
  auto frame = std::make_shared<const std::string>(message_json(m));
  std::lock_guard lock(impl_->mutex);
  auto& channel = impl_->channels[file];
  channel.status_frame = state == "failed" ? frame : nullptr;
  if (channel.sessions.empty()) return;
  std::vector<std::shared_ptr<WsSession>> sessions(channel.sessions.begin(),
                                                   channel.sessions.end());
  asio::post(impl_->io, [sessions = std::move(sessions), frame] {
    for (const auto& session : sessions) session->send(frame);
  });
}

void ViewServer::update(const std::string& file, protocol::GraphDocument doc, bool compiled,
                        double analysis_ms, const std::string& focus_cell) {
  bool had = false;
  {
    std::lock_guard lock(impl_->mutex);
    auto it = impl_->channels.find(file);
    had = it != impl_->channels.end() && it->second.has_document;
  }
  std::vector<protocol::Diagnostic> diagnostics;
  size_t errors = 0;
  if (!compiled) {
    for (const auto& d : doc.diagnostics()) {
      errors += d.severity() == "error" ? 1 : 0;
      diagnostics.push_back(d);
    }
  }
  if (compiled || !had) publish(file, std::move(doc), analysis_ms, focus_cell);
  if (compiled) {
    publish_status(file, "ok");
    return;
  }
  publish_status(file, "failed",
                 "The model does not compile (" + std::to_string(errors) + " error" +
                     (errors == 1 ? "" : "s") + ")" +
                     (had ? "; showing the last graph that did." : "."),
                 diagnostics);
}

void ViewServer::set_focus(const std::string& file, const std::string& cell) {
  std::lock_guard lock(impl_->mutex);
  auto& channel = impl_->channels[file];
  channel.focus_cell = cell;
}

size_t ViewServer::set_debug_focus(const protocol::DebugFocus& focus) {
  const bool paused = !focus.node().empty();
  const std::string file = canonical_path(focus.file());
  protocol::ViewMessage m;
  *m.mutable_debug() = focus;
  auto frame = std::make_shared<const std::string>(message_json(m));
  std::lock_guard lock(impl_->mutex);
  const std::string previous = impl_->debug_file;
  // A focus on another file than the previous one: the previous file's views are cleared.
  std::shared_ptr<const std::string> clear_previous;
  if (!previous.empty() && previous != file) {
    protocol::ViewMessage c;
    c.mutable_debug()->set_file(previous);
    clear_previous = std::make_shared<const std::string>(message_json(c));
  }
  impl_->debug_frame = paused ? frame : nullptr;
  impl_->debug_file = paused ? file : std::string();
  std::vector<std::pair<std::shared_ptr<WsSession>, std::shared_ptr<const std::string>>> sends;
  size_t sent = 0;
  for (auto& [name, channel] : impl_->channels) {
    if (channel.sessions.empty()) continue;
    const std::string& canon = canonical_of(name, channel);
    std::shared_ptr<const std::string> f;
    if (canon == file || (file.empty() && canon == previous)) {
      f = frame;
      sent += channel.sessions.size();
    } else if (clear_previous && canon == previous) {
      f = clear_previous;
    }
    if (f)
      for (const auto& s : channel.sessions) sends.emplace_back(s, f);
  }
  if (!sends.empty()) {
    asio::post(impl_->io, [sends = std::move(sends)] {
      for (const auto& [s, f] : sends) s->send(f);
    });
  }
  return sent;
}

void thin_train_steps(std::vector<protocol::TrainStep>* steps, size_t max) {
  while (max >= 2 && steps->size() > max) {
    const size_t half = steps->size() / 2;
    size_t w = 0;
    for (size_t r = 0; r < steps->size(); ++r) {
      if (r < half && r % 2 == 1) continue;
      if (w != r) (*steps)[w] = std::move((*steps)[r]);
      ++w;
    }
    steps->resize(w);
  }
}

size_t ViewServer::train_step(const protocol::TrainStep& step, const std::string& session) {
  const std::string file = canonical_path(step.file());
  std::lock_guard lock(impl_->mutex);
  bool restarted = false;
  TrainRun& run = impl_->run_of(file, session, &restarted);
  run.file = step.file();
  if (!step.cell().empty()) run.cell = step.cell();
  run.steps.push_back(step);
  thin_train_steps(&run.steps);
  run.history_frame.reset();
  if (restarted) run.drift_frame.reset();
  protocol::ViewMessage m;
  auto* p = m.mutable_train();
  p->set_file(step.file());
  p->set_cell(run.cell);
  p->set_reset(restarted);
  p->set_max_steps(static_cast<uint32_t>(kMaxTrainSteps));
  p->set_session(session);
  *p->add_steps() = step;
  return impl_->send_to_file(file, std::make_shared<const std::string>(message_json(m)));
}

size_t ViewServer::train_drift(const protocol::PrecisionDrift& drift, const std::string& session) {
  const std::string file = canonical_path(drift.file());
  protocol::ViewMessage m;
  *m.mutable_drift() = drift;
  auto frame = std::make_shared<const std::string>(message_json(m));
  std::lock_guard lock(impl_->mutex);
  bool restarted = false;
  TrainRun& run = impl_->run_of(file, session, &restarted);
  run.file = drift.file();
  if (run.cell.empty()) run.cell = drift.cell();
  if (restarted) {
    // A drift of a run without steps (an inference session): the views drop the old chart.
    protocol::ViewMessage r;
    r.mutable_train()->set_file(drift.file());
    r.mutable_train()->set_reset(true);
    r.mutable_train()->set_session(session);
    impl_->send_to_file(file, std::make_shared<const std::string>(message_json(r)));
  }
  const bool clear = drift.layers().empty();
  run.drift = clear ? nullptr : std::make_shared<const protocol::PrecisionDrift>(drift);
  run.drift_frame = clear ? nullptr : frame;
  return impl_->send_to_file(file, frame);
}

size_t ViewServer::train_reset(const std::string& file_name, const std::string& session) {
  const std::string file = canonical_path(file_name);
  std::lock_guard lock(impl_->mutex);
  impl_->trains.erase(file);
  TrainRun& run = impl_->trains[file];
  run.session = session;
  run.file = file_name;
  protocol::ViewMessage m;
  m.mutable_train()->set_file(file_name);
  m.mutable_train()->set_reset(true);
  m.mutable_train()->set_session(session);
  return impl_->send_to_file(file, std::make_shared<const std::string>(message_json(m)));
}

std::shared_ptr<const protocol::TrainProgress> ViewServer::train_progress(
    const std::string& file) const {
  std::lock_guard lock(impl_->mutex);
  const auto it = impl_->trains.find(canonical_path(file));
  if (it == impl_->trains.end() || it->second.steps.empty()) return nullptr;
  return std::make_shared<const protocol::TrainProgress>(progress_of(it->second));
}

std::shared_ptr<const protocol::PrecisionDrift> ViewServer::precision_drift(
    const std::string& file) const {
  std::lock_guard lock(impl_->mutex);
  const auto it = impl_->trains.find(canonical_path(file));
  return it == impl_->trains.end() ? nullptr : it->second.drift;
}

size_t ViewServer::device_sample(const protocol::DeviceSample& sample, const std::string& session) {
  const std::string file = canonical_path(sample.file());
  std::lock_guard lock(impl_->mutex);
  auto [it, fresh] = impl_->devices.try_emplace(file);
  DeviceRun& run = it->second;
  const bool restarted = fresh || run.session != session;
  if (restarted) {
    run = DeviceRun{};
    run.session = session;
  }
  run.file = sample.file();
  run.device = sample.device();
  run.samples.push_back(sample);
  while (run.samples.size() > kMaxDeviceSamples) run.samples.pop_front();
  run.history_frame.reset();
  protocol::ViewMessage m;
  auto* p = m.mutable_device();
  p->set_file(sample.file());
  p->set_device(sample.device());
  p->set_reset(restarted);
  p->set_max_samples(static_cast<uint32_t>(kMaxDeviceSamples));
  p->set_session(session);
  *p->add_samples() = sample;
  return impl_->send_to_file(file, std::make_shared<const std::string>(message_json(m)));
}

std::shared_ptr<const protocol::DeviceProgress> ViewServer::device_progress(
    const std::string& file) const {
  std::lock_guard lock(impl_->mutex);
  const auto it = impl_->devices.find(canonical_path(file));
  if (it == impl_->devices.end() || it->second.samples.empty()) return nullptr;
  return std::make_shared<const protocol::DeviceProgress>(device_progress_of(it->second));
}

namespace {

// Sends `frame` to the views of `channel` (under the server's lock: in order with publish()).
void send_to_views(asio::io_context& io, const Channel& channel,
                   const std::shared_ptr<const std::string>& frame) {
  if (channel.sessions.empty()) return;
  std::vector<std::shared_ptr<WsSession>> sessions(channel.sessions.begin(),
                                                   channel.sessions.end());
  asio::post(io, [sessions = std::move(sessions), frame] {
    for (const auto& s : sessions) s->send(frame);
  });
}

}  // namespace

uint64_t ViewServer::compare_pending(const std::string& file, const protocol::CompareBase& base) {
  protocol::Comparison c;
  *c.mutable_base() = base;
  c.set_pending(true);
  auto comparison = std::make_shared<const protocol::Comparison>(std::move(c));
  auto frame = comparison_frame(*comparison);
  std::lock_guard lock(impl_->mutex);
  auto& channel = impl_->channels[file];
  channel.compare_base = base;
  channel.base_doc.reset();
  channel.comparison = std::move(comparison);
  channel.compare_frame = frame;
  send_to_views(impl_->io, channel, frame);
  return ++channel.compare_gen;
}

void ViewServer::set_compare_base(const std::string& file, uint64_t generation,
                                  const protocol::CompareBase& base,
                                  std::shared_ptr<const protocol::GraphDocument> document,
                                  const std::string& error) {
  std::shared_ptr<const protocol::GraphDocument> slim;
  uint32_t seq = 0;
  {
    std::lock_guard lock(impl_->mutex);
    auto& channel = impl_->channels[file];
    if (channel.compare_gen != generation) return;
    channel.compare_base = base;
    channel.base_doc = document;
    if (!document) {
      protocol::Comparison c;
      *c.mutable_base() = base;
      c.set_error(error.empty() ? "the base could not be analysed" : error);
      channel.comparison = std::make_shared<const protocol::Comparison>(std::move(c));
      channel.compare_frame = comparison_frame(*channel.comparison);
      send_to_views(impl_->io, channel, channel.compare_frame);
      return;
    }
    // No document yet: the first one published is compared (the views keep "pending").
    if (!channel.has_document) return;
    slim = channel.slim;
    seq = channel.seq;
  }
  auto comparison = compare_with(*document, base, *slim, seq);
  auto frame = comparison_frame(*comparison);
  std::lock_guard lock(impl_->mutex);
  auto& channel = impl_->channels[file];
  // A newer document (compared by publish()) or another base since: this one is stale.
  if (channel.compare_gen != generation || channel.base_doc != document || channel.seq != seq)
    return;
  channel.comparison = std::move(comparison);
  channel.compare_frame = frame;
  send_to_views(impl_->io, channel, frame);
}

void ViewServer::stop_comparing(const std::string& file) {
  protocol::ViewMessage m;
  m.mutable_comparison();  // no base: the comparison ends
  auto frame = std::make_shared<const std::string>(message_json(m));
  std::lock_guard lock(impl_->mutex);
  auto& channel = impl_->channels[file];
  ++channel.compare_gen;
  channel.compare_base.Clear();
  channel.base_doc.reset();
  channel.comparison.reset();
  channel.compare_frame.reset();
  send_to_views(impl_->io, channel, frame);
}

std::shared_ptr<const protocol::Comparison> ViewServer::comparison(const std::string& file) const {
  std::lock_guard lock(impl_->mutex);
  const auto it = impl_->channels.find(file);
  return it == impl_->channels.end() ? nullptr : it->second.comparison;
}

bool ViewServer::watching(const std::string& file) const {
  std::lock_guard lock(impl_->mutex);
  const auto it = impl_->channels.find(file);
  return it != impl_->channels.end() && !it->second.sessions.empty();
}

std::vector<std::string> ViewServer::watched_files() const {
  std::lock_guard lock(impl_->mutex);
  std::vector<std::string> out;
  for (const auto& [file, channel] : impl_->channels)
    if (!channel.sessions.empty()) out.push_back(file);
  return out;
}

ServerStats ViewServer::stats() const {
  const auto& c = impl_->counters;
  ServerStats out;
  out.open = c.open->load();
  out.accepted = c.accepted.load();
  out.refused = c.refused.load();
  out.accept_errors = c.accept_errors.load();
  out.timeouts = c.timeouts.load();
  out.coalesced = c.coalesced.load();
  out.write_timeouts = c.write_timeouts.load();
  return out;
}

size_t ViewServer::connections() const {
  std::lock_guard lock(impl_->mutex);
  size_t n = 0;
  for (const auto& [file, channel] : impl_->channels) n += channel.sessions.size();
  return n;
}

}  // namespace cellscope::server::view
