#include "agent/agent.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "agent/crypto.h"
#include "agent/io.h"
#include "agent/mindspore_backend.h"
#include "agent/protocol.h"
#include "agent/runner.h"
#include "agent/store.h"
#include "agent/telemetry.h"
#include "files.h"
#include "graphcore/dataset.h"
#include "protocol/document.h"

namespace cellscope::agent {

namespace fs = std::filesystem;
namespace asio = boost::asio;
namespace ssl = asio::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace rt_quant = graphcore::runtime::quant;

int http_status(ErrorCode code) {
  switch (code) {
    case ErrorCode::kBadRequest:
    case ErrorCode::kBadName:
      return 400;
    case ErrorCode::kUnauthorized:
      return 401;
    case ErrorCode::kNotFound:
    case ErrorCode::kNoModel:
      return 404;
    case ErrorCode::kBusy:
    case ErrorCode::kIncomplete:
    case ErrorCode::kNoPrevious:
      return 409;
    case ErrorCode::kTooLarge:
      return 413;
    case ErrorCode::kChunkHashMismatch:
    case ErrorCode::kFileHashMismatch:
    case ErrorCode::kLoadFailed:
    case ErrorCode::kBadInput:
      return 422;
    case ErrorCode::kRateLimited:
      return 429;
    case ErrorCode::kInternal:
      return 500;
    case ErrorCode::kDiskFull:
      return 507;
  }
  return 500;
}

std::string_view error_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kBadRequest:
      return "bad-request";
    case ErrorCode::kBadName:
      return "bad-name";
    case ErrorCode::kUnauthorized:
      return "unauthorized";
    case ErrorCode::kNotFound:
      return "not-found";
    case ErrorCode::kNoModel:
      return "no-model";
    case ErrorCode::kBusy:
      return "busy";
    case ErrorCode::kIncomplete:
      return "incomplete";
    case ErrorCode::kNoPrevious:
      return "no-previous";
    case ErrorCode::kTooLarge:
      return "too-large";
    case ErrorCode::kChunkHashMismatch:
      return "chunk-hash-mismatch";
    case ErrorCode::kFileHashMismatch:
      return "file-hash-mismatch";
    case ErrorCode::kLoadFailed:
      return "load-failed";
    case ErrorCode::kBadInput:
      return "bad-input";
    case ErrorCode::kRateLimited:
      return "rate-limited";
    case ErrorCode::kInternal:
      return "internal";
    case ErrorCode::kDiskFull:
      return "disk-full";
  }
  return "internal";
}

fs::path default_state_dir() {
  if (::geteuid() == 0) return "/var/lib/cellscope-agent";
  if (const char* x = std::getenv("XDG_STATE_HOME"); x != nullptr && x[0] == '/')
    return fs::path(x) / "cellscope-agent";
  const char* home = std::getenv("HOME");
  return fs::path(home != nullptr ? home : "/tmp") / ".local/state/cellscope-agent";
}

namespace {

// Where the power sensors are looked for: /sys, or (the agent's tests only, docs/deploy.md) a
// fake tree named by $CELLSCOPE_AGENT_SYSFS_ROOT.
fs::path sysfs_root() {
  const char* root = std::getenv("CELLSCOPE_AGENT_SYSFS_ROOT");
  return root != nullptr && root[0] == '/' ? fs::path(root) : fs::path("/sys");
}

// An idle deployment (no request for this long) no longer blocks another one.
constexpr std::chrono::minutes kDeployLease{10};
constexpr std::chrono::seconds kSocketTimeout{30};
// Failed authentications from one peer before it waits; the wait doubles up to the maximum.
constexpr int kFreeFailures = 3;
constexpr std::chrono::seconds kMaxLockout{300};

// Failed token attempts per peer address, with exponential backoff.
class RateLimiter {
 public:
  // Seconds to wait, or 0 when the peer may try.
  int64_t wait(const std::string& peer) {
    const std::lock_guard lock(mu_);
    auto it = peers_.find(peer);
    if (it == peers_.end()) return 0;
    const auto left = std::chrono::ceil<std::chrono::seconds>(it->second.until - Clock::now());
    return std::max<int64_t>(0, left.count());
  }
  void failed(const std::string& peer) {
    const std::lock_guard lock(mu_);
    if (peers_.size() > 4096) {
      std::erase_if(peers_,
                    [](const auto& p) { return p.second.until < Clock::now() - kMaxLockout; });
    }
    Entry& e = peers_[peer];
    ++e.failures;
    if (e.failures >= kFreeFailures) {
      const int shift = std::min(e.failures - kFreeFailures, 8);
      e.until = Clock::now() +
                std::min<std::chrono::seconds>(std::chrono::seconds(1LL << shift), kMaxLockout);
    }
  }
  void succeeded(const std::string& peer) {
    const std::lock_guard lock(mu_);
    peers_.erase(peer);
  }

 private:
  struct Entry {
    int failures = 0;
    Clock::time_point until{};
  };
  std::mutex mu_;
  std::map<std::string, Entry> peers_;
};

struct Reply {
  Reply() = default;
  Reply(http::status s, Json b, int64_t retry)
      : status(s), body(std::move(b)), retry_after(retry) {}
  http::status status = http::status::ok;
  Json body;
  int64_t retry_after = 0;
  // A binary answer (/v1/infer with Accept: application/x-npy or application/zip): these bytes
  // with this Content-Type instead of `body`, and headers with the figures JSON would carry.
  std::string content_type;
  std::string raw;
  std::vector<std::pair<std::string, std::string>> headers;
};

constexpr std::string_view kTypeNpy = "application/x-npy";
constexpr std::string_view kTypeZip = "application/zip";
constexpr std::string_view kTypeJson = "application/json";

// A media type without its parameters, lower case ("Application/JSON; charset=utf-8" -> "...").
std::string media_type(std::string_view v) {
  v = v.substr(0, v.find(';'));
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
  std::string out(v);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The answer's encoding: the first of JSON, .npy, .npz an Accept header lists; JSON without one.
std::string_view answer_type(std::string_view accept) {
  size_t start = 0;
  while (start <= accept.size()) {
    const size_t comma = std::min(accept.find(',', start), accept.size());
    const std::string t = media_type(accept.substr(start, comma - start));
    for (const std::string_view known : {kTypeJson, kTypeNpy, kTypeZip}) {
      if (t == known) return known;
    }
    start = comma + 1;
  }
  return kTypeJson;
}

// A binary /v1/infer's options, from its query string: precision=, backend=, compare=1|true.
Json infer_query(std::string_view query) {
  Json j = Json::object();
  size_t start = 0;
  while (start < query.size()) {
    const size_t amp = std::min(query.find('&', start), query.size());
    const std::string_view kv = query.substr(start, amp - start);
    start = amp + 1;
    if (kv.empty()) continue;
    const size_t eq = kv.find('=');
    const std::string key(kv.substr(0, eq));
    const std::string value(eq == std::string_view::npos ? "" : kv.substr(eq + 1));
    if (key == "precision" || key == "backend") {
      j[key] = value;
    } else if (key == "compare") {
      if (value != "1" && value != "true" && value != "0" && value != "false")
        throw std::invalid_argument("compare is 1, true, 0 or false, not '" + value + "'");
      j[key] = value == "1" || value == "true";
    } else {
      throw std::invalid_argument("unknown parameter '" + key +
                                  "' (a binary /v1/infer takes precision, backend, compare)");
    }
  }
  return j;
}

Reply error_reply(ErrorCode code, const std::string& message) {
  return {static_cast<http::status>(http_status(code)), error_body(code, message), 0};
}

std::string now_iso() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// How a bundle's manifest says it is built: fp32; int8 from its calibration data and (once
// built) its quant.json, whose SHA-256 the manifest records; target (fp16 emulation), its quality
// measured on the data sent with it, if any.
BuildOptions bundle_build(const Bundle& b, const std::string& python, int threads) {
  BuildOptions build;
  build.backend = b.manifest.value("backend", "cellscope-cpu");
  build.python = python;
  build.threads = threads;
  build.precision = b.manifest.value("precision", "fp32");
  if (build.precision != "int8" && build.precision != "target") return build;
  if (build.precision == "int8") {
    const Json cal = b.manifest.value("calibration", Json::object());
    const auto method = rt_quant::calibration_from_name(cal.value("method", "minmax"));
    if (!method) throw std::runtime_error("unknown calibration method in the manifest");
    build.calibration.method = *method;
    build.calibration.percentile = cal.value("percentile", build.calibration.percentile);
  }
  for (const char* kind : {"calibration_data", "labels"}) {
    if (!b.manifest.contains(kind)) continue;
    // Only the names the store writes: a manifest never points outside its bundle.
    const std::string file = b.manifest[kind].value("file", "");
    if (file != "calibration.npy" && file != "calibration.npz" && file != "labels.npy")
      throw std::runtime_error("the manifest names an unexpected " + std::string(kind) + " file");
    const fs::path f = b.dir / file;
    (std::string(kind) == "labels" ? build.labels : build.calibration_data) = f;
    if (sha256_file(f) != b.manifest[kind].value("sha256", "")) {
      throw std::runtime_error(f.filename().string() +
                               " does not match its SHA-256 in the manifest");
    }
  }
  if (b.manifest.contains("quant_table")) {
    const fs::path t = b.dir / "quant.json";
    std::ifstream in(t, std::ios::binary);
    build.quant_table = {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (!in.good() && !in.eof()) throw std::runtime_error("cannot read quant.json");
    if (sha256_hex(build.quant_table) != b.manifest["quant_table"].value("sha256", "")) {
      throw std::runtime_error("quant.json does not match its SHA-256 in the manifest");
    }
  }
  return build;
}

std::shared_ptr<LoadedModel> load_bundle(const Bundle& b, const std::string& python, int threads,
                                         std::string* error) {
  try {
    return LoadedModel::load(b.model, error, bundle_build(b, python, threads));
  } catch (const std::exception& e) {
    *error = e.what();
    return nullptr;
  }
}

class Agent {
 public:
  Agent(const AgentOptions& options, std::string token, TlsIdentity identity)
      : store_(options.state_dir),
        token_(std::move(token)),
        identity_(std::move(identity)),
        telemetry_(sysfs_root()),
        python_(options.python),
        threads_(options.threads) {
    // Whether MindSpore is importable: found out once, in the background (an import takes
    // seconds); /v1/info says "detecting" until then.
    mindspore_ = {{"name", "mindspore"},
                  {"python", python_},
                  {"available", nullptr},
                  {"reason", "detecting"}};
    lite_ = {{"name", "mindspore-lite"},
             {"python", python_},
             {"available", nullptr},
             {"serving", false},
             {"reason", "detecting"}};
    std::thread([this] {
      Json found = detect_mindspore(python_, std::chrono::seconds(120));
      found["precisions"] = Json::array({"fp32"});
      spdlog::info("backend mindspore: {}", found.dump());
      {
        const std::lock_guard lock(mu_);
        mindspore_ = std::move(found);
      }
      Json lite = detect_mindspore_lite(python_, std::chrono::seconds(120));
      spdlog::info("backend mindspore-lite: {}", lite.dump());
      const std::lock_guard lock(mu_);
      lite_ = std::move(lite);
    }).detach();
  }

  // The model `current` names, loaded; else `previous`'s (and current switched back to it).
  void load_current() {
    for (int attempt = 0; attempt < 2; ++attempt) {
      auto cur = store_.current();
      if (!cur) return;
      std::string err;
      if (auto m = load_bundle(*cur, python_, threads_, &err)) {
        model_ = m;
        quality_ = m->quality();
        last_agreement_ = nullptr;
        last_agreement_ = nullptr;
        bundle_ = cur->dir_name;
        spdlog::info("serving {}", cur->dir_name);
        return;
      }
      spdlog::error("the current bundle {} does not load: {}", cur->dir_name, err);
      if (!store_.previous()) return;
      store_.swap_previous();
    }
  }

  Reply handle(const http::request_header<>& head, const std::string& body) {
    const std::string target(head.target());
    const auto method = head.method();
    try {
      if (method == http::verb::get && target == kPathInfo) return {http::status::ok, info(), 0};
      if (method == http::verb::post && target == kPathUploads) return begin(body);
      if (method == http::verb::post && target == kPathRollback) return rollback();
      if (method == http::verb::post &&
          (target == kPathInfer || target.starts_with(std::string(kPathInfer) + "?")))
        return infer(head, body);
      const std::string prefix = std::string(kPathUploads) + "/";
      if (target.starts_with(prefix)) {
        const std::string rest = target.substr(prefix.size());
        const auto slash = rest.find('/');
        const std::string id = rest.substr(0, slash);
        const std::string tail = slash == std::string::npos ? "" : rest.substr(slash);
        if (method == http::verb::put && tail.starts_with("/chunks/")) {
          const std::string n = tail.substr(8);
          if (n.empty() || n.size() > 9 || !std::ranges::all_of(n, ::isdigit))
            return error_reply(ErrorCode::kBadRequest, "bad chunk index '" + n + "'");
          return chunk(id, std::stoull(n), std::string(head[std::string(kHeaderChunkSha)]), body);
        }
        if (method == http::verb::put && (tail == "/calibration" || tail == "/labels")) {
          return companion(id, tail.substr(1), std::string(head[std::string(kHeaderChunkSha)]),
                           body);
        }
        if (method == http::verb::post && tail == "/commit") return commit(id, body);
        if (method == http::verb::delete_ && tail.empty()) return cancel(id);
      }
      return error_reply(ErrorCode::kNotFound,
                         std::string(head.method_string()) + " " + target + " is not an endpoint");
    } catch (const StoreError& e) {
      spdlog::warn("{} {}: {}", std::string(head.method_string()), target, e.message);
      return error_reply(e.code, e.message);
    } catch (const std::exception& e) {
      spdlog::error("{} {}: {}", std::string(head.method_string()), target, e.what());
      return error_reply(ErrorCode::kInternal, e.what());
    }
  }

  Json info() {
    Json j = {{"protocol", kProtocolVersion},
              {"agent", std::string(protocol::tool_version())},
              {"fingerprint", identity_.fingerprint},
              {"backends", Json::array({{{"name", "cellscope-cpu"},
                                         {"available", true},
                                         {"precisions", Json::array({"fp32", "int8", "target"})},
                                         {"threads", threads_}}})}};
    const std::lock_guard lock(mu_);
    j["backends"].push_back(mindspore_);
    j["backends"].push_back(lite_);
    j["backend"] = model_ ? Json(model_->summary().value("backend", "")) : Json(nullptr);
    auto cur = store_.current();
    auto prev = store_.previous();
    // Why the serving backend is not the one asked for (an int8 or target bundle deployed with
    // --backend mindspore), else null.
    j["backend_reason"] =
        cur && model_ ? cur->manifest.value("backend_reason", Json(nullptr)) : Json(nullptr);
    j["current"] = cur && model_ ? cur->manifest : Json(nullptr);
    j["precision"] = model_ ? Json(model_->precision()) : Json(nullptr);
    j["calibration"] = model_ && model_->precision() == "int8" && cur
                           ? cur->manifest.value("calibration", Json(nullptr))
                           : Json(nullptr);
    j["quality"] = model_ && model_->precision() != "fp32" ? quality_ : Json("n/a");
    j["previous"] = prev ? prev->manifest : Json(nullptr);
    j["deploying"] = active_.empty() ? Json(nullptr) : Json(active_);
    return j;
  }

  // One deployment at a time: `id` may go on unless another one was active within the lease.
  std::optional<Reply> claim(const std::string& id) {
    if (!active_.empty() && active_ != id && Clock::now() - active_since_ < kDeployLease) {
      return error_reply(ErrorCode::kBusy, "another deployment (" + active_name_ +
                                               ") is in progress; try again when it ends");
    }
    if (committing_) return error_reply(ErrorCode::kBusy, "a deployment is being committed");
    return std::nullopt;
  }

  // claim() under the lock, then `id` is the active upload as of now.
  std::optional<Reply> claim_and_touch(const std::string& id) {
    const std::lock_guard lock(mu_);
    if (auto busy = claim(id)) return busy;
    active_ = id;
    active_since_ = Clock::now();
    return std::nullopt;
  }

  Reply begin(const std::string& body) {
    const Json j = Json::parse(body, nullptr, false);
    if (!j.is_object() || !j.contains("name") || !j["name"].is_string() || !j.contains("size") ||
        !j["size"].is_number_unsigned() || !j.contains("sha256") || !j["sha256"].is_string()) {
      return error_reply(ErrorCode::kBadRequest,
                         "POST /v1/uploads takes {\"name\", \"size\", \"sha256\", \"chunk_size\"}");
    }
    const std::string name = j["name"].get<std::string>();
    if (auto why = check_model_name(name); !why.empty())
      return error_reply(ErrorCode::kBadName, why);
    const uint64_t chunk = j.value("chunk_size", kDefaultChunkBytes);
    const std::lock_guard lock(mu_);
    // The id is known only after the name is checked; claim against the computed one.
    const std::string id = upload_id(name, j["sha256"].get<std::string>(), chunk);
    if (auto busy = claim(id)) return *busy;
    // The same file under the same name, built the same way, already serves (a commit whose
    // answer was lost).
    const std::string precision = j.value("precision", "fp32");
    const std::string cal_sha = j.value("calibration_sha256", "");
    if (auto cur = store_.current();
        cur && model_ && cur->manifest.value("name", "") == name &&
        cur->manifest.value("sha256", "") == j["sha256"] &&
        cur->manifest.value("precision", "fp32") == precision &&
        cur->manifest.value("requested_backend", cur->manifest.value("backend", "cellscope-cpu")) ==
            j.value("backend", "cellscope-cpu") &&
        (precision == "fp32" ||
         cur->manifest.value("calibration_data", Json::object()).value("sha256", "") == cal_sha)) {
      if (!store_.find_upload(id)) {
        return {http::status::ok,
                {{"already_current", true}, {"bundle", cur->dir_name}, {"manifest", cur->manifest}},
                0};
      }
    }
    UploadMeta m =
        store_.begin_upload(name, j["size"].get<uint64_t>(), j["sha256"].get<std::string>(), chunk);
    active_ = m.id;
    active_name_ = name;
    active_since_ = Clock::now();
    spdlog::info("upload {} of {} ({} bytes): {} of {} chunks already here", m.id, name, m.size,
                 m.chunks() - m.missing().size(), m.chunks());
    return {http::status::ok, m.json(), 0};
  }

  Reply chunk(const std::string& id, uint64_t index, const std::string& sha,
              const std::string& body) {
    if (auto busy = claim_and_touch(id)) return *busy;
    if (!is_sha256_hex(sha)) {
      return error_reply(
          ErrorCode::kBadRequest,
          std::string(kHeaderChunkSha) + " must be the chunk's SHA-256 (64 hex digits)");
    }
    const std::lock_guard lock(chunk_mu_);
    UploadMeta m = store_.write_chunk(id, index, body, sha);
    return {http::status::ok, m.json(), 0};
  }

  Reply companion(const std::string& id, const std::string& kind, const std::string& sha,
                  const std::string& body) {
    if (auto busy = claim_and_touch(id)) return *busy;
    if (!is_sha256_hex(sha)) {
      return error_reply(ErrorCode::kBadRequest, std::string(kHeaderChunkSha) +
                                                     " must be the file's SHA-256 (64 hex digits)");
    }
    const std::lock_guard lock(chunk_mu_);
    store_.write_companion(id, kind, body, sha);
    return {
        http::status::ok, {{"upload", id}, {kind, {{"sha256", sha}, {"size", body.size()}}}}, 0};
  }

  Reply cancel(const std::string& id) {
    const std::lock_guard lock(mu_);
    if (auto busy = claim(id)) return *busy;
    store_.remove_upload(id);
    if (active_ == id) active_.clear();
    return {http::status::ok, {{"cancelled", id}}, 0};
  }

  Reply commit(const std::string& id, const std::string& body) {
    // {"precision": "fp32"|"int8"|"target", "calibration": "minmax"|"percentile"|"kl",
    // "percentile": P}
    const Json opts = body.empty() ? Json::object() : Json::parse(body, nullptr, false);
    if (!opts.is_object()) return error_reply(ErrorCode::kBadRequest, "the commit body is JSON");
    Json extra = {{"deployed_at", now_iso()}};
    const std::string precision = opts.value("precision", "fp32");
    if (precision != "fp32" && precision != "int8" && precision != "target")
      return error_reply(ErrorCode::kBadRequest, "precision is fp32, int8 or target");
    extra["precision"] = precision;
    const std::string backend = opts.value("backend", "cellscope-cpu");
    if (backend != "cellscope-cpu" && backend != "mindspore")
      return error_reply(ErrorCode::kBadRequest, "backend is cellscope-cpu or mindspore");
    if (backend == "mindspore" && precision != "fp32") {
      // MindSpore runs the MindIR as exported: the bundle is served by the CPU runtime, and the
      // manifest, /v1/info and the deploy's answer say so and why (never silently).
      extra["requested_backend"] = backend;
      extra["backend"] = "cellscope-cpu";
      extra["backend_reason"] =
          "the mindspore backend (mindspore.load + nn.GraphCell) runs the MindIR as exported, in "
          "float: it cannot apply " +
          std::string(precision == "int8" ? "the int8 table calibrated on the device (quant.json)"
                                          : "the target (fp16) emulation") +
          ", so the Cellscope CPU runtime serves this " + precision +
          " bundle; deploy fp32 to serve from MindSpore";
    } else {
      extra["backend"] = backend;
    }
    if (precision == "int8") {
      const std::string method = opts.value("calibration", "minmax");
      if (!rt_quant::calibration_from_name(method)) {
        return error_reply(ErrorCode::kBadRequest,
                           "calibration is minmax, percentile or kl, not " + method);
      }
      const double pct = opts.value("percentile", 99.99);
      if (!(pct > 50 && pct <= 100))
        return error_reply(ErrorCode::kBadRequest, "percentile is in (50, 100]");
      extra["calibration"] = {{"method", method}, {"percentile", pct}};
    }
    {
      const std::lock_guard lock(mu_);
      if (auto busy = claim(id)) return *busy;
      committing_ = true;
    }
    struct Done {
      Agent* a;
      ~Done() {
        const std::lock_guard lock(a->mu_);
        a->committing_ = false;
      }
    } done{this};
    const std::lock_guard chunk_lock(chunk_mu_);
    Bundle b = store_.make_bundle(id, extra);
    {
      const std::lock_guard lock(mu_);
      active_.clear();
    }
    std::string err;
    auto m = precision == "int8" && !b.manifest.contains("calibration_data")
                 ? nullptr
                 : load_bundle(b, python_, threads_, &err);
    if (precision == "int8" && !b.manifest.contains("calibration_data"))
      err = "an int8 build needs calibration data (--calibration-data FILE.npy|FILE.npz)";
    if (!m) {
      store_.discard(b);
      const std::lock_guard lock(mu_);
      const std::string serving =
          model_ ? bundle_ + " still serves" : std::string("no model was serving before");
      spdlog::error("{} does not load: {}; rolled back ({})", b.dir_name, err, serving);
      return error_reply(ErrorCode::kLoadFailed, "the new model does not load on the device: " +
                                                     err + "; rolled back: " + serving);
    }
    b.manifest["check"] = m->summary();
    if (m->precision() == "int8") {
      b.manifest["quant_table"] = {{"file", "quant.json"},
                                   {"sha256", sha256_hex(m->quant_table_text())}};
    }
    if (m->precision() != "fp32") b.manifest["quality"] = m->quality();
    try {
      if (m->precision() == "int8")
        server::write_file_atomic(b.dir / "quant.json", m->quant_table_text());
      server::write_file_atomic(b.dir / "manifest.json", b.manifest.dump(2) + "\n");
    } catch (const std::system_error& e) {
      store_.discard(b);
      return error_reply(e.code().value() == ENOSPC ? ErrorCode::kDiskFull : ErrorCode::kInternal,
                         std::string("writing the manifest: ") + e.what() +
                             "; rolled back, the previous model still serves");
    }
    const std::lock_guard lock(mu_);
    store_.activate(b);
    model_ = m;
    quality_ = m->quality();
    last_agreement_ = nullptr;
    bundle_ = b.dir_name;
    spdlog::info("deployed {}", b.dir_name);
    return {http::status::ok, {{"bundle", b.dir_name}, {"manifest", b.manifest}}, 0};
  }

  Reply rollback() {
    const std::lock_guard lock(mu_);
    if (!active_.empty() && Clock::now() - active_since_ < kDeployLease)
      return error_reply(ErrorCode::kBusy, "a deployment (" + active_name_ + ") is in progress");
    if (committing_) return error_reply(ErrorCode::kBusy, "a deployment is being committed");
    auto prev = store_.previous();
    if (!prev) return error_reply(ErrorCode::kNoPrevious, "there is no previous bundle");
    std::string err;
    auto m = load_bundle(*prev, python_, threads_, &err);
    if (!m) {
      return error_reply(ErrorCode::kLoadFailed, "the previous bundle " + prev->dir_name +
                                                     " does not load: " + err +
                                                     "; the current one still serves");
    }
    store_.swap_previous();
    model_ = m;
    quality_ = m->quality();
    last_agreement_ = nullptr;
    bundle_ = prev->dir_name;
    spdlog::info("rolled back to {}", bundle_);
    return {http::status::ok, {{"bundle", bundle_}, {"manifest", prev->manifest}}, 0};
  }

  // JSON in and out by default; a .npy (one input) or .npz (one array per input, by name or in
  // order) body by its Content-Type, its options in the query string; the outputs as a .npy or
  // .npz when Accept asks for it (the figures in X-Cellscope-* headers). docs/deploy.md.
  Reply infer(const http::request_header<>& head, const std::string& body) {
    std::shared_ptr<LoadedModel> m;
    std::string bundle;
    {
      const std::lock_guard lock(mu_);
      m = model_;
      bundle = bundle_;
    }
    if (!m) return error_reply(ErrorCode::kNoModel, "no model is deployed on this device");
    const std::string target(head.target());
    const size_t q = target.find('?');
    const std::string query = q == std::string::npos ? "" : target.substr(q + 1);
    const std::string type = media_type(std::string(head[http::field::content_type]));
    const std::string accept(head[http::field::accept]);
    const std::string_view answer = answer_type(accept);
    Json j;
    std::vector<graphcore::runtime::HostArray> arrays;
    const bool binary_in = type == kTypeNpy || type == kTypeZip;
    try {
      if (binary_in) {
        j = infer_query(query);
        namespace rt = graphcore::runtime;
        if (type == kTypeNpy) {
          arrays.push_back(rt::parse_array_npy(body, "the request's .npy"));
        } else {
          // Each member's size is checked against the body limit before it is inflated.
          arrays = arrays_for_inputs(rt::parse_array_npz(body, "the request's .npz", kMaxJsonBody),
                                     m->input_names(), "the request's .npz", "an inference");
        }
      } else {
        // Any other Content-Type is JSON, as before binary bodies (curl -d and urllib send
        // application/x-www-form-urlencoded).
        if (!query.empty()) {
          return error_reply(ErrorCode::kBadRequest,
                             "a JSON /v1/infer has its options in the body");
        }
        j = Json::parse(body, nullptr, false);
        if (!j.is_object())
          return error_reply(ErrorCode::kBadRequest, "the body must be a JSON object");
      }
    } catch (const std::invalid_argument& e) {
      return error_reply(ErrorCode::kBadInput, e.what());
    } catch (const graphcore::runtime::DatasetError& e) {
      return error_reply(ErrorCode::kBadInput, e.what());
    }
    const size_t outputs = m->summary().value("outputs", Json::array()).size();
    if (answer == kTypeNpy && outputs != 1) {
      return error_reply(ErrorCode::kBadRequest,
                         "the model has " + std::to_string(outputs) +
                             " outputs: one .npy holds one; ask Accept: application/zip");
    }
    try {
      std::vector<graphcore::runtime::HostArray> raw;
      const bool binary_out = answer != kTypeJson;
      Json out = m->infer(j, binary_in ? &arrays : nullptr, binary_out ? &raw : nullptr);
      telemetry_.record(out["ms"].get<double>());
      out["bundle"] = bundle;
      if (out.contains("agreement")) {
        const std::lock_guard lock(mu_);
        if (model_ == m) last_agreement_ = out["agreement"];
      }
      if (!binary_out) return {http::status::ok, std::move(out), 0};
      Reply r;
      r.content_type = std::string(answer);
      if (answer == kTypeNpy) {
        r.raw = graphcore::runtime::encode_array_npy(raw.front());
      } else {
        std::vector<std::pair<std::string, graphcore::runtime::HostArray>> named;
        for (size_t i = 0; i < raw.size(); ++i)
          named.emplace_back("output_" + std::to_string(i), std::move(raw[i]));
        r.raw = graphcore::runtime::encode_array_npz(named);
      }
      std::string non_finite;
      for (const Json& o : out["outputs"])
        non_finite += (non_finite.empty() ? "" : ",") + std::to_string(o.value("non_finite", 0));
      r.headers = {{"X-Cellscope-Ms", Json(out["ms"]).dump()},
                   {"X-Cellscope-Bundle", bundle},
                   {"X-Cellscope-Precision", out.value("precision", "")},
                   {"X-Cellscope-Backend", out.value("backend", "")},
                   {"X-Cellscope-Non-Finite", non_finite}};
      if (out.contains("agreement"))
        r.headers.emplace_back("X-Cellscope-Agreement", out["agreement"].dump());
      return r;
    } catch (const std::invalid_argument& e) {
      return error_reply(ErrorCode::kBadInput, e.what());
    }
  }

  Json status_message() {
    Json j = telemetry_.sample();
    const std::lock_guard lock(mu_);
    j["bundle"] = model_ ? Json(bundle_) : Json(nullptr);
    j["precision"] = model_ ? Json(model_->precision()) : Json(nullptr);
    j["backend"] = model_ ? Json(model_->summary().value("backend", "")) : Json(nullptr);
    // fp32 vs int8 (or target): measured at load on the calibration inputs, and on the last
    // /v1/infer that asked for it ("compare": true); "n/a" when the bundle is fp32.
    const bool reduced = model_ && model_->precision() != "fp32";
    j["agreement"] = {
        {"load", reduced ? quality_ : Json("n/a")},
        {"last_infer", reduced && !last_agreement_.is_null() ? last_agreement_ : Json("n/a")}};
    j["deploying"] = active_.empty() ? Json(nullptr) : Json(active_name_);
    return j;
  }

  RateLimiter& limiter() { return limiter_; }
  [[nodiscard]] bool token_ok(std::string_view given) const {
    return constant_time_equal(given, token_);
  }

 private:
  Store store_;
  std::string token_;
  TlsIdentity identity_;
  RateLimiter limiter_;
  Telemetry telemetry_;
  std::mutex mu_;        // the fields below
  std::mutex chunk_mu_;  // chunk writes and the commit's use of the upload
  std::string active_;   // the upload under way, or ""
  std::string active_name_;
  Clock::time_point active_since_{};
  bool committing_ = false;
  std::shared_ptr<LoadedModel> model_;
  Json quality_;         // model_'s fp32 vs int8 figures at load
  Json last_agreement_;  // of the last /v1/infer with "compare"
  std::string bundle_;
  std::string python_;
  int threads_ = 1;
  Json mindspore_;  // the mindspore backend's detection
  Json lite_;       // MindSpore Lite's: reported, not served through
};

using TlsStream = beast::ssl_stream<beast::tcp_stream>;

void send(asio::io_context& ioc, TlsStream& stream, const Reply& r, unsigned version,
          bool keep_alive) {
  http::response<http::string_body> res{r.status, version};
  res.set(http::field::server, "cellscope-agent");
  res.set(http::field::content_type, r.content_type.empty() ? "application/json" : r.content_type);
  for (const auto& [k, v] : r.headers) res.set(k, v);
  if (r.retry_after > 0) res.set(http::field::retry_after, std::to_string(r.retry_after));
  res.keep_alive(keep_alive);
  res.body() = r.content_type.empty() ? r.body.dump() : r.raw;
  res.prepare_payload();
  run_timed(ioc, beast::get_lowest_layer(stream), kSocketTimeout,
            [&](auto done) { http::async_write(stream, res, done); });
}

// The telemetry stream: a JSON message a second until the peer goes away.
void stream_status(Agent& agent, asio::io_context& ioc, TlsStream& tls,
                   http::request_parser<http::string_body>& parser) {
  websocket::stream<TlsStream&> ws(tls);
  auto& lowest = beast::get_lowest_layer(tls);
  run_timed(ioc, lowest, kSocketTimeout,
            [&](auto done) { ws.async_accept(parser.release(), done); });
  ws.text(true);
  for (;;) {
    const std::string msg = agent.status_message().dump();
    run_timed(ioc, lowest, kSocketTimeout,
              [&](auto done) { ws.async_write(asio::buffer(msg), done); });
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

void serve_connection(Agent& agent, ssl::context& ctx, tcp::socket accepted,
                      std::atomic<size_t>& live) {
  struct Count {
    std::atomic<size_t>& n;
    ~Count() { --n; }
  } count{live};
  beast::error_code ec;
  const std::string peer = accepted.remote_endpoint(ec).address().to_string();
  const auto proto = accepted.local_endpoint(ec).protocol();
  asio::io_context ioc;  // this connection's
  tcp::socket socket(ioc);
  socket.assign(proto, accepted.release(ec), ec);
  if (ec) return;
  TlsStream tls(beast::tcp_stream(std::move(socket)), ctx);
  auto& lowest = beast::get_lowest_layer(tls);
  try {
    run_timed(ioc, lowest, kSocketTimeout,
              [&](auto done) { tls.async_handshake(ssl::stream_base::server, done); });
    beast::flat_buffer buf;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(16 * 1024);
      // Checked against Content-Length as the header is read; the body itself is read only
      // after the token is.
      parser.body_limit(kMaxJsonBody);
      try {
        run_timed(ioc, lowest, std::chrono::minutes(2),
                  [&](auto done) { http::async_read_header(tls, buf, parser, done); });
      } catch (const beast::system_error& e) {
        if (e.code() == http::error::body_limit) {
          send(ioc, tls, error_reply(ErrorCode::kTooLarge, "the body is larger than 64 MiB"), 11,
               false);
        }
        return;  // closed, or idle too long
      }
      const auto& head = parser.get();
      const unsigned version = head.version();
      if (const int64_t wait = agent.limiter().wait(peer); wait > 0) {
        Reply r =
            error_reply(ErrorCode::kRateLimited, "too many failed authentications from " + peer +
                                                     ": retry in " + std::to_string(wait) + " s");
        r.retry_after = wait;
        send(ioc, tls, r, version, false);
        return;
      }
      const std::string auth(head[http::field::authorization]);
      const bool bearer = auth.starts_with("Bearer ");
      if (!bearer || !agent.token_ok(std::string_view(auth).substr(7))) {
        agent.limiter().failed(peer);
        spdlog::warn("refused {} {} from {}: {}", std::string(head.method_string()),
                     std::string(head.target()), peer, bearer ? "wrong token" : "no token");
        send(ioc, tls,
             error_reply(ErrorCode::kUnauthorized,
                         bearer ? "wrong token" : "no token (Authorization: Bearer TOKEN)"),
             version, false);
        return;
      }
      agent.limiter().succeeded(peer);
      if (websocket::is_upgrade(head) && std::string(head.target()) == kPathStream) {
        stream_status(agent, ioc, tls, parser);
        return;
      }
      try {
        run_timed(ioc, lowest, kSocketTimeout,
                  [&](auto done) { http::async_read(tls, buf, parser, done); });
      } catch (const beast::system_error& e) {
        if (e.code() == http::error::body_limit) {
          send(ioc, tls, error_reply(ErrorCode::kTooLarge, "the body is larger than 64 MiB"),
               version, false);
        }
        return;
      }
      const bool keep = parser.get().keep_alive();
      const Reply r = agent.handle(parser.get().base(), parser.get().body());
      send(ioc, tls, r, version, keep);
      if (!keep) break;
    }
    run_timed(ioc, lowest, std::chrono::seconds(5), [&](auto done) { tls.async_shutdown(done); });
  } catch (const std::exception& e) {
    spdlog::debug("connection from {}: {}", peer, e.what());
  }
}

std::string read_token(const AgentOptions& options, const fs::path& state) {
  std::string token;
  if (!options.token_file.empty()) {
    std::ifstream in(options.token_file, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read the token file " + options.token_file);
    std::getline(in, token);
  } else if (const char* env = std::getenv("CELLSCOPE_AGENT_TOKEN"); env != nullptr) {
    token = env;
  } else {
    const fs::path file = state / "token";
    std::ifstream in(file, std::ios::binary);
    if (in) {
      std::getline(in, token);
    } else {
      token = random_hex(32);
      server::write_file_atomic(file, token + "\n", 0600);
      std::cerr << "cellscope agent: made a token in " << file.string()
                << " (copy it to the host's token_file)\n";
    }
  }
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  if (token.size() < 16) throw std::runtime_error("the token must have at least 16 characters");
  return token;
}

}  // namespace

int run_agent(const AgentOptions& given) {
  AgentOptions options = given;
  if (options.state_dir.empty()) options.state_dir = default_state_dir();
  const auto colon = options.listen.rfind(':');
  if (colon == std::string::npos) {
    std::cerr << "cellscope agent: error: --listen takes ADDR:PORT, got " << options.listen << "\n";
    return 2;
  }
  std::string host = options.listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  beast::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  const std::string port_text = options.listen.substr(colon + 1);
  if (ec || port_text.empty() || port_text.size() > 5 ||
      !std::ranges::all_of(port_text, ::isdigit) || std::stoi(port_text) > 65535) {
    std::cerr << "cellscope agent: error: --listen takes an IP address and a port, got "
              << options.listen << "\n";
    return 2;
  }
  try {
    Store probe(options.state_dir);  // creates the directories
    (void)probe;
    TlsIdentity id = load_or_create_identity(options.state_dir);
    const std::string token = read_token(options, options.state_dir);
    std::signal(SIGPIPE, SIG_IGN);  // a dead MindSpore subprocess is an error, not the end
    Agent agent(options, token, id);
    agent.load_current();

    ssl::context ctx(ssl::context::tls_server);
    ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                    ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    ctx.use_certificate_chain_file(id.cert_file.string());
    ctx.use_private_key_file(id.key_file.string(), ssl::context::pem);

    asio::io_context ioc;
    tcp::acceptor acceptor(ioc,
                           tcp::endpoint(address, static_cast<uint16_t>(std::stoi(port_text))));
    std::atomic<size_t> live{0};
    std::function<void()> accept = [&] {
      acceptor.async_accept([&](beast::error_code aec, tcp::socket s) {
        if (aec) {
          if (aec != asio::error::operation_aborted) accept();
          return;
        }
        if (live.load() >= options.max_connections) {
          spdlog::warn("refused a connection: {} are open", live.load());
          s.close(aec);
        } else {
          ++live;
          std::thread(serve_connection, std::ref(agent), std::ref(ctx), std::move(s),
                      std::ref(live))
              .detach();
        }
        accept();
      });
    };
    accept();
    asio::signal_set signals(ioc, SIGINT, SIGTERM);
    signals.async_wait([&](beast::error_code, int sig) {
      spdlog::info("signal {}: stopping", sig);
      ioc.stop();
    });
    const auto ep = acceptor.local_endpoint();
    std::cout << "cellscope agent: listening on https://"
              << (ep.address().is_v6() ? "[" + ep.address().to_string() + "]"
                                       : ep.address().to_string())
              << ":" << ep.port() << " (state " << options.state_dir.string()
              << ", certificate SHA-256 " << id.fingerprint << ")" << std::endl;
    ioc.run();
    std::_Exit(0);  // connection threads are detached; the store is consistent at any moment
  } catch (const std::exception& e) {
    std::cerr << "cellscope agent: error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace cellscope::agent
