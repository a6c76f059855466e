#include "view/view_server.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "protocol/document.h"
#include "view/delta.h"
#include "view/security.h"

namespace cellscope::server::view {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

namespace {

constexpr size_t kMaxQueuedFrames = 32;  // a view this far behind is dropped (it reconnects)
constexpr uint64_t kMaxRequestBody = 64 * 1024;
constexpr size_t kMaxWsMessage = 1024 * 1024;

std::string message_json(const protocol::ViewMessage& message) {
  return protocol::to_json(message, {.pretty = false, .defaults = false});
}

class WsSession;

// The state of one followed file.
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
};

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

}  // namespace

struct ViewServer::Impl : std::enable_shared_from_this<ViewServer::Impl> {
  ServerOptions options;
  Handlers handlers;
  AccessPolicy policy;
  asio::io_context io{1};
  std::unique_ptr<tcp::acceptor> acceptor;
  std::thread thread;
  std::atomic<bool> running{false};

  mutable std::mutex mutex;  // guards channels and the debug focus
  std::map<std::string, Channel> channels;
  // The debugger's current focus (view.proto's DebugFocus) and its file's canonical path; null
  // when not paused.
  std::shared_ptr<const std::string> debug_frame;
  std::string debug_file;

  void accept();
  void join(const std::shared_ptr<WsSession>& session, const std::string& file);
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
  WsSession(tcp::socket socket, std::weak_ptr<ViewServer::Impl> server, std::string file)
      : ws_(std::move(socket)), server_(std::move(server)), file_(std::move(file)) {}

  void start(http::request<http::string_body> request) {
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    websocket::permessage_deflate deflate;
    deflate.server_enable = true;
    // Level 1: documents are large and repetitive; the fastest level already shrinks them ~10x,
    // and higher levels cost more time than the transfer they save on a loopback connection.
    deflate.compLevel = 1;
    ws_.set_option(deflate);
    ws_.read_message_max(kMaxWsMessage);
    ws_.auto_fragment(false);  // one frame per message
    ws_.set_option(websocket::stream_base::decorator(
        [](websocket::response_type& res) { res.set(http::field::server, "cellscope"); }));
    ws_.async_accept(request, [self = shared_from_this()](beast::error_code ec) {
      if (ec) {
        spdlog::debug("view: websocket handshake failed: {}", ec.message());
        return;
      }
      if (auto server = self->server_.lock()) server->join(self, self->file_);
      self->read();
    });
  }

  // On the I/O thread.
  void send(std::shared_ptr<const std::string> frame) {
    if (closed_) return;
    if (queue_.size() >= kMaxQueuedFrames) {
      spdlog::warn("view: a view of {} fell {} messages behind; closing it (it will reconnect)",
                   file_, queue_.size());
      close(websocket::close_code::try_again_later);
      return;
    }
    queue_.push_back(std::move(frame));
    if (queue_.size() == 1) write_next();
  }

  void close(websocket::close_code code) {
    if (closed_) return;
    closed_ = true;
    queue_.clear();
    ws_.async_close(code, [self = shared_from_this()](beast::error_code) {});
  }

  const std::string& file() const { return file_; }

 private:
  void write_next() {
    ws_.text(true);
    ws_.async_write(asio::buffer(*queue_.front()),
                    [self = shared_from_this()](beast::error_code ec, size_t) {
                      if (ec) {
                        self->fail(ec);
                        return;
                      }
                      if (!self->queue_.empty()) self->queue_.pop_front();
                      if (!self->queue_.empty() && !self->closed_) self->write_next();
                    });
  }

  void read() {
    ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) {
        self->fail(ec);
        return;
      }
      std::string text = beast::buffers_to_string(self->buffer_.data());
      self->buffer_.consume(self->buffer_.size());
      if (auto server = self->server_.lock()) server->on_request(self, self->file_, text);
      self->read();
    });
  }

  void fail(beast::error_code ec) {
    if (ec != websocket::error::closed && ec != asio::error::operation_aborted &&
        ec != asio::error::eof)
      spdlog::debug("view: connection for {} ended: {}", file_, ec.message());
    closed_ = true;
    queue_.clear();
    if (auto server = server_.lock()) server->leave(shared_from_this(), file_);
  }

  websocket::stream<beast::tcp_stream> ws_;
  beast::flat_buffer buffer_;
  std::weak_ptr<ViewServer::Impl> server_;
  std::string file_;
  std::deque<std::shared_ptr<const std::string>> queue_;
  bool closed_ = false;
};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(tcp::socket socket, std::weak_ptr<ViewServer::Impl> server)
      : stream_(std::move(socket)), server_(std::move(server)) {}

  void start() { read(); }

 private:
  void read() {
    parser_.emplace();
    parser_->body_limit(kMaxRequestBody);
    parser_->header_limit(16 * 1024);
    stream_.expires_after(std::chrono::seconds(30));
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (ec) {
                         if (ec != http::error::end_of_stream && ec != asio::error::eof &&
                             ec != beast::error::timeout)
                           spdlog::debug("view: bad HTTP request: {}", ec.message());
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
      std::make_shared<WsSession>(stream_.release_socket(), server_, file)->start(std::move(req));
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
};

}  // namespace

void ViewServer::Impl::accept() {
  acceptor->async_accept(asio::make_strand(io),
                         [self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
                           if (ec) {
                             if (ec != asio::error::operation_aborted)
                               spdlog::warn("view: accept failed: {}", ec.message());
                             if (!self->running) return;
                           } else {
                             std::make_shared<HttpSession>(std::move(socket), self)->start();
                           }
                           if (self->running) self->accept();
                         });
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
    if (channel.has_document) session->send(channel.full_frame);
    if (channel.status_frame) session->send(channel.status_frame);
    // The debugger's focus follows the document (the first publish sends it when there is none).
    if (channel.has_document && debug_frame && canonical_of(file, channel) == debug_file)
      session->send(debug_frame);
    needs_document = !channel.has_document;
    for (const auto& [name, c] : channels) open += c.sessions.size();
  }
  spdlog::info("view: a view connected for {} ({} open)", file, open);
  if (needs_document && handlers.subscribed) handlers.subscribed(file);
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
    if (slim)
      for (const auto& c : slim->cells())
        if (c.name() == req.cell()) cell = &c;
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
  if (ec)
    throw std::runtime_error("cannot listen on 127.0.0.1:" + std::to_string(impl_->options.port) +
                             ": " + ec.message());
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
  {
    std::lock_guard lock(impl_->mutex);
    auto& channel = impl_->channels[file];
    previous = channel.slim;
    previous_lazy = channel.lazy;
    base = channel.seq;
    viewers = !channel.sessions.empty();
    if (focus.empty()) focus = channel.focus_cell;
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

  std::lock_guard lock(impl_->mutex);
  auto& channel = impl_->channels[file];
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
  // Posted under the lock: frames reach each view in publish order.
  asio::post(impl_->io, [sessions = std::move(sessions), frame, debug] {
    for (const auto& s : sessions) {
      s->send(frame);
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
  if (!sends.empty())
    asio::post(impl_->io, [sends = std::move(sends)] {
      for (const auto& [s, f] : sends) s->send(f);
    });
  return sent;
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

size_t ViewServer::connections() const {
  std::lock_guard lock(impl_->mutex);
  size_t n = 0;
  for (const auto& [file, channel] : impl_->channels) n += channel.sessions.size();
  return n;
}

}  // namespace cellscope::server::view
