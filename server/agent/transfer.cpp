#include "agent/transfer.h"

#include <openssl/x509.h>
#include <spdlog/spdlog.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <fstream>
#include <thread>
#include <vector>

#include "agent/crypto.h"
#include "agent/io.h"
#include "agent/protocol.h"

namespace cellscope::agent {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using Json = nlohmann::json;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

struct Client::Impl {
  std::string address;
  std::string host;
  std::string port;
  std::string token;
  std::function<void(const std::string&)> check;
  std::chrono::seconds timeout;
  asio::io_context ioc;
  ssl::context ctx{ssl::context::tls_client};
  std::unique_ptr<TlsStream> stream;

  void connect() {
    stream.reset();
    auto s = std::make_unique<TlsStream>(ioc, ctx);
    auto& lowest = beast::get_lowest_layer(*s);
    try {
      tcp::resolver resolver(ioc);
      const auto endpoints = resolver.resolve(host, port);
      run_timed(ioc, lowest, timeout, [&](auto done) { lowest.async_connect(endpoints, done); });
      run_timed(ioc, lowest, timeout,
                [&](auto done) { s->async_handshake(ssl::stream_base::client, done); });
    } catch (const beast::system_error& e) {
      throw TransportError("cannot reach " + address + ": " + e.code().message());
    }
    X509* cert = SSL_get1_peer_certificate(s->native_handle());
    if (cert == nullptr) throw TransportError(address + " sent no certificate");
    unsigned char* der = nullptr;
    const int len = i2d_X509(cert, &der);
    X509_free(cert);
    if (len <= 0) throw TransportError(address + " sent a certificate that does not encode");
    const std::string fp = fingerprint_of_der(
        std::string_view(reinterpret_cast<const char*>(der), static_cast<size_t>(len)));
    OPENSSL_free(der);
    check(fp);  // throws to refuse: nothing has been sent
    stream = std::move(s);
  }
};

Client::Client(std::string address, std::string token,
               std::function<void(const std::string&)> check_certificate,
               std::chrono::seconds timeout)
    : impl_(std::make_unique<Impl>()) {
  impl_->address = std::move(address);
  impl_->token = std::move(token);
  impl_->check = std::move(check_certificate);
  impl_->timeout = timeout;
  // The certificate is self-signed: trust comes from the pinned fingerprint, not a CA.
  impl_->ctx.set_verify_mode(ssl::verify_none);
  impl_->ctx.set_options(ssl::context::no_sslv2 | ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                         ssl::context::no_tlsv1_1);
  const std::string& a = impl_->address;
  const auto colon = a.rfind(':');
  if (colon == std::string::npos || colon + 1 == a.size())
    throw DeployError(0, "bad-address", "the device address must be HOST:PORT, got " + a);
  impl_->host = a.substr(0, colon);
  if (impl_->host.size() > 2 && impl_->host.front() == '[')
    impl_->host = impl_->host.substr(1, impl_->host.size() - 2);
  impl_->port = a.substr(colon + 1);
}

Client::~Client() = default;

void Client::disconnect() { impl_->stream.reset(); }

Response Client::request(const std::string& method, const std::string& target,
                         const std::string& body, const std::string& chunk_sha) {
  if (!impl_->stream) impl_->connect();
  TlsStream& s = *impl_->stream;
  auto& lowest = beast::get_lowest_layer(s);
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, impl_->host);
  req.set(http::field::user_agent, "cellscope-deploy");
  req.set(http::field::authorization, "Bearer " + impl_->token);
  req.set(http::field::content_type,
          chunk_sha.empty() ? "application/json" : "application/octet-stream");
  if (!chunk_sha.empty()) req.set(std::string(kHeaderChunkSha), chunk_sha);
  req.keep_alive(true);
  req.body() = body;
  req.prepare_payload();
  http::response_parser<http::string_body> parser;
  parser.body_limit(uint64_t{256} << 20);
  beast::flat_buffer buf;
  try {
    run_timed(impl_->ioc, lowest, impl_->timeout,
              [&](auto done) { http::async_write(s, req, done); });
    // A commit loads and runs the model: give it longer.
    const auto wait = target.ends_with("/commit") ? impl_->timeout * 15 : impl_->timeout;
    run_timed(impl_->ioc, lowest, wait, [&](auto done) { http::async_read(s, buf, parser, done); });
  } catch (const beast::system_error& e) {
    impl_->stream.reset();
    throw TransportError("the link to " + impl_->address + " failed: " + e.code().message());
  }
  Response r;
  r.status = static_cast<int>(parser.get().result_int());
  r.body = Json::parse(parser.get().body(), nullptr, false);
  if (!parser.get().keep_alive()) impl_->stream.reset();
  return r;
}

void Client::stream(const std::string& target, std::chrono::seconds idle,
                    const std::function<bool(const std::string&)>& on_message) {
  impl_->connect();  // a connection of its own: pinned before anything is sent
  TlsStream& tls = *impl_->stream;
  auto& lowest = beast::get_lowest_layer(tls);
  struct Drop {
    Impl& impl;
    ~Drop() { impl.stream.reset(); }
  } drop{*impl_};
  websocket::stream<TlsStream&> ws(tls);
  const std::string auth = "Bearer " + impl_->token;
  ws.set_option(websocket::stream_base::decorator([&auth](websocket::request_type& req) {
    req.set(http::field::authorization, auth);
    req.set(http::field::user_agent, "cellscope-deploy");
  }));
  websocket::response_type res;
  try {
    run_timed(impl_->ioc, lowest, impl_->timeout,
              [&](auto done) { ws.async_handshake(res, impl_->host, target, done); });
  } catch (const beast::system_error& e) {
    if (e.code() == websocket::error::upgrade_declined && res.result_int() != 0) {
      Response r;
      r.status = static_cast<int>(res.result_int());
      r.body = Json::parse(res.body(), nullptr, false);
      throw_if_error(r);
    }
    throw TransportError("the link to " + impl_->address + " failed: " + e.code().message());
  }
  beast::flat_buffer buf;
  for (;;) {
    buf.clear();
    try {
      run_timed(impl_->ioc, lowest, idle, [&](auto done) { ws.async_read(buf, done); });
    } catch (const beast::system_error& e) {
      const std::string why = e.code() == beast::error::timeout
                                  ? "no message for " + std::to_string(idle.count()) + " s"
                                  : e.code().message();
      throw TransportError("the stream from " + impl_->address + " stopped: " + why);
    }
    if (!on_message(beast::buffers_to_string(buf.data()))) return;
  }
}

void throw_if_error(const Response& r) {
  if (r.status >= 200 && r.status < 300) return;
  std::string code = "http-" + std::to_string(r.status);
  std::string message = "the device answered HTTP " + std::to_string(r.status);
  if (r.body.is_object() && r.body.contains("error") && r.body["error"].is_object()) {
    code = r.body["error"].value("code", code);
    message = r.body["error"].value("message", message);
  }
  throw DeployError(r.status, code, message);
}

Json with_retries(const std::function<Json()>& call, std::chrono::seconds retry_for,
                  const std::function<void(const std::string&)>& progress) {
  const auto deadline = std::chrono::steady_clock::now() + retry_for;
  auto backoff = std::chrono::milliseconds(500);
  for (;;) {
    try {
      return call();
    } catch (const TransportError& e) {
      if (std::chrono::steady_clock::now() + backoff > deadline) {
        throw DeployError(0, "unreachable",
                          std::string(e.what()) + " (gave up after " +
                              std::to_string(retry_for.count()) + " s of retries)");
      }
      if (progress) progress(std::string(e.what()) + "; retrying");
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
    }
  }
}

Json upload_and_commit(Client& client, const std::filesystem::path& file,
                       const UploadOptions& options) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw DeployError(0, "unreadable", "cannot read " + file.string());
  const uint64_t size = std::filesystem::file_size(file);
  const std::string sha = sha256_file(file);
  const uint64_t chunk_bytes = options.chunk_bytes == 0 ? kDefaultChunkBytes : options.chunk_bytes;
  Json begin = {
      {"name", options.name}, {"size", size}, {"sha256", sha}, {"chunk_size", chunk_bytes}};
  // The int8 / target build's companion files, sent after the chunks and before the commit.
  std::vector<std::pair<std::string, std::string>> companions;  // kind, bytes
  Json commit_body = {{"precision", options.precision}, {"backend", options.backend}};
  if (options.precision == "int8" || options.precision == "target") {
    if (options.precision == "int8") {
      commit_body["calibration"] = options.calibration;
      commit_body["percentile"] = options.percentile;
    }
    for (const auto& [kind, path] :
         {std::pair{std::string("calibration"), options.calibration_data},
          std::pair{std::string("labels"), options.labels}}) {
      if (path.empty()) continue;
      std::ifstream f(path, std::ios::binary);
      if (!f) throw DeployError(0, "unreadable", "cannot read " + path.string());
      std::string bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
      if (bytes.size() > kMaxJsonBody) {
        throw DeployError(0, "too-large",
                          path.string() + " is larger than 64 MiB: send fewer samples");
      }
      if (kind == "calibration") begin["calibration_sha256"] = sha256_hex(bytes);
      companions.emplace_back(kind, std::move(bytes));
    }
  }
  begin["precision"] = options.precision;
  begin["backend"] = options.backend;
  auto say = [&](const std::string& m) {
    if (options.progress) options.progress(m);
  };
  // A link that fails again and again without progress: backoff, and give up after retry_for.
  auto last_progress = std::chrono::steady_clock::now();
  auto backoff = std::chrono::milliseconds(500);
  auto link_down = [&](const TransportError& e) {
    if (std::chrono::steady_clock::now() - last_progress > options.retry_for) {
      throw DeployError(0, "unreachable",
                        std::string(e.what()) + " (no progress for " +
                            std::to_string(options.retry_for.count()) + " s)");
    }
    say(std::string(e.what()) + "; reconnecting");
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
  };
  bool corrupted = false;
  bool first_begin = true;
  int mismatches = 0;
  for (;;) {
    // Begin (or resume): the agent says which chunks it has.
    Json state = with_retries(
        [&] {
          Response r = client.request("POST", std::string(kPathUploads), begin.dump());
          throw_if_error(r);
          return r.body;
        },
        options.retry_for, options.progress);
    if (state.value("already_current", false)) {
      say("the device already serves this model (" + state.value("bundle", "") + ")");
      return state;
    }
    const std::string id = state.at("upload").get<std::string>();
    const uint64_t chunks = state.at("chunks").get<uint64_t>();
    std::vector<bool> have(chunks, false);
    for (const auto& i : state.at("received")) {
      if (i.get<uint64_t>() < chunks) have[i.get<uint64_t>()] = true;
    }
    const auto already = static_cast<uint64_t>(std::count(have.begin(), have.end(), true));
    if (first_begin || already > 0) {
      say(already == 0 ? "upload " + id + ": " + std::to_string(chunks) + " chunks of " +
                             std::to_string(chunk_bytes) + " bytes"
                       : "resuming upload " + id + ": " + std::to_string(already) + " of " +
                             std::to_string(chunks) + " chunks already on the device");
    }
    first_begin = false;
    uint64_t bytes_done = 0;
    for (uint64_t i = 0; i < chunks; ++i) {
      if (have[i]) bytes_done += std::min(chunk_bytes, size - i * chunk_bytes);
    }
    uint64_t chunks_done = already;
    auto upload_event = [&] {
      if (options.event) {
        options.event({{"phase", "upload"},
                       {"upload", id},
                       {"chunks_done", chunks_done},
                       {"chunks_total", chunks},
                       {"bytes_done", bytes_done},
                       {"bytes_total", size}});
      }
    };
    upload_event();
    bool link_failed = false;
    std::string data;
    for (uint64_t i = 0; i < chunks && !link_failed; ++i) {
      if (have[i]) continue;
      const uint64_t off = i * chunk_bytes;
      data.resize(std::min(chunk_bytes, size - off));
      in.clear();
      in.seekg(static_cast<std::streamoff>(off));
      in.read(data.data(), static_cast<std::streamsize>(data.size()));
      if (!in) throw DeployError(0, "unreadable", "cannot read " + file.string());
      const std::string chunk_sha = sha256_hex(data);
      std::string sent = data;
      if (options.corrupt_chunk && *options.corrupt_chunk == i && !corrupted) {
        sent[sent.size() / 2] = static_cast<char>(sent[sent.size() / 2] ^ 0x5a);
        corrupted = true;
        say("fault injection: chunk " + std::to_string(i) + " sent with one byte flipped");
      }
      try {
        Response r = client.request(
            "PUT", std::string(kPathUploads) + "/" + id + "/chunks/" + std::to_string(i), sent,
            chunk_sha);
        if (r.status == 422 && r.body.is_object() &&
            r.body["error"].value("code", "") == error_name(ErrorCode::kChunkHashMismatch)) {
          if (++mismatches > 3) throw_if_error(r);
          say("chunk " + std::to_string(i) + " rejected by the device (" +
              r.body["error"].value("message", "") + "); sending it again");
          --i;  // the same chunk again
          continue;
        }
        throw_if_error(r);
      } catch (const TransportError& e) {
        link_down(e);
        link_failed = true;
        break;
      }
      last_progress = std::chrono::steady_clock::now();
      backoff = std::chrono::milliseconds(500);
      say("sent chunk " + std::to_string(i + 1) + "/" + std::to_string(chunks));
      ++chunks_done;
      bytes_done += data.size();
      upload_event();
      if (options.chunk_delay.count() > 0) std::this_thread::sleep_for(options.chunk_delay);
    }
    if (link_failed) continue;  // begin again: the agent says what it has
    if (options.event) options.event({{"phase", "commit"}, {"upload", id}});
    try {
      for (const auto& [kind, bytes] : companions) {
        std::string target = std::string(kPathUploads) + "/";
        target += id;
        target += "/";
        target += kind;
        Response r = client.request("PUT", target, bytes, sha256_hex(bytes));
        throw_if_error(r);
        say("sent the " + kind + " data (" + std::to_string(bytes.size()) + " bytes)");
      }
      if (options.precision != "fp32")
        say("building the " + options.precision + " bundle on the device");
      Response r = client.request("POST", std::string(kPathUploads) + "/" + id + "/commit",
                                  commit_body.dump());
      if (r.status == 409 && r.body.is_object() &&
          r.body["error"].value("code", "") == error_name(ErrorCode::kIncomplete)) {
        continue;
      }
      throw_if_error(r);
      return r.body;
    } catch (const TransportError& e) {
      // The commit may have happened: begin again (the agent answers already_current when the
      // file serves), else the upload resumes and is committed again.
      link_down(e);
    }
  }
}

}  // namespace cellscope::agent
