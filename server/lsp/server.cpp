#include "lsp/server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "graphcore/analysis.h"
#include "graphcore/outline.h"
#include "lsp/document.h"
#include "lsp/features.h"
#include "lsp/workspace_index.h"
#include "pipeline.h"
#include "project_config.h"
#include "protocol/document.h"
#include "rpc/jsonrpc.h"
#include "rpc/stdio_transport.h"
#include "view/view_server.h"

namespace cellscope::lsp {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using rpc::Context;
using rpc::ErrorCode;
using rpc::RpcError;
using Clock = std::chrono::steady_clock;

namespace {

double thread_cpu_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

using server::normalize_target;

// Settings from the client (`cellscope.*`) and from mindspore_config.json: one reader for both
// (server/project_config.h). Inputs are keyed by file (relative to the workspace folder), file
// name, or "*".
using Settings = server::ProjectConfig;

// Reads the client's settings object; problems are appended to `problems` (shown to the user).
Settings parse_settings(const Json& j, std::vector<std::string>& problems) {
  Settings s;
  server::read_settings(
      j, s, [&](const std::string&, const std::string& message) { problems.push_back(message); });
  return s;
}

// Reads text through the open documents of a snapshot, then the disk.
class SnapshotSources : public graphcore::SourceProvider {
 public:
  explicit SnapshotSources(std::map<std::string, std::shared_ptr<const std::string>> overlay)
      : overlay_(std::move(overlay)) {}
  std::optional<std::string> read(const fs::path& path) override {
    auto it = overlay_.find(path.lexically_normal().string());
    if (it != overlay_.end()) return *it->second;
    return disk_.read(path);
  }

 private:
  std::map<std::string, std::shared_ptr<const std::string>> overlay_;
  graphcore::DiskSourceProvider disk_;
};

struct Job {
  std::string uri;
  std::string path;
  int64_t version = 0;
  std::shared_ptr<const std::string> text;
  std::map<std::string, std::shared_ptr<const std::string>> overlay;
  std::map<std::string, int64_t> versions;
  graphcore::AnalysisOptions options;
  std::shared_ptr<std::atomic<bool>> cancel;
  bool from_dependency = false;
  uint64_t generation = 0;  // OpenDoc::generation when the job was made
};

using Waiter = std::function<void(const std::shared_ptr<const FileAnalysis>&)>;

struct OpenDoc {
  Document doc;
  std::unique_ptr<asio::steady_timer> timer;
  std::shared_ptr<std::atomic<bool>> running_cancel;  // of the analysis queued or running
  int64_t running_version = -1;
  std::shared_ptr<const FileAnalysis> analysis;  // the latest completed one
  std::vector<Waiter> waiters;                   // for the analysis of the current version
  std::string published;                         // last diagnostics sent (push), to skip repeats
  // Bumped by every schedule(): a change of the document, of a file it imports or of the
  // settings. Only an analysis of the latest generation is current (same version, other inputs).
  uint64_t generation = 0;
  uint64_t analysed_generation = 0;  // of `analysis`
  // window/workDoneProgress for an analysis still running after kProgressDelay.
  std::unique_ptr<asio::steady_timer> progress_timer;
  std::string progress_token;  // non-empty: a progress was created for this document
  bool progress_begun = false;
};

uint64_t progress_counter = 0;

}  // namespace

struct LanguageServer::Impl : std::enable_shared_from_this<Impl> {
  Impl(asio::io_context& io_, rpc::Dispatcher& rpc_, ServerOptions options_)
      : io(io_), rpc(rpc_), options(options_) {}

  asio::io_context& io;
  rpc::Dispatcher& rpc;
  ServerOptions options;

  enum class State { kUninitialized, kRunning, kShutDown } state = State::kUninitialized;
  bool exit_requested = false;
  bool shutdown_received = false;

  // Negotiated with the client.
  PositionEncoding encoding = PositionEncoding::kUtf16;
  ClientFeatures client;
  bool pull_diagnostics = false;
  bool diagnostic_refresh = false;
  bool work_done_progress = false;
  bool configuration_pull = false;
  bool watch_registration = false;
  std::string trace = "off";
  std::vector<std::string> roots;

  Settings client_settings;
  Settings project_settings;  // mindspore_config.json
  std::string config_file;    // the mindspore_config.json in use, if any

  std::map<std::string, OpenDoc> docs;  // by URI
  uint64_t seq = 0;

  // The analysis worker.
  std::thread worker;
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<std::function<void()>> tasks;
  bool stopping = false;

  WorkspaceIndex index;
  std::thread indexer;

  // The graph view's server (server/view/), started by the first cellscope.visualizeGraph. The
  // worker reads the pointer, hence the mutex.
  std::mutex view_mutex;
  std::shared_ptr<server::view::ViewServer> view_server;
  bool show_document = false;  // the client supports window/showDocument
  // The debugger's focus (cellscope.debugFocus, relayed by the editor from `cellscope dap`): kept
  // for a view server started while paused. Guarded by view_mutex.
  std::optional<protocol::DebugFocus> debug_focus;
  // Files parsed by earlier analyses (imports rarely change while the user types).
  std::shared_ptr<graphcore::ParseCache> parse_cache = std::make_shared<graphcore::ParseCache>();

  // ---- settings ----

  int debounce_ms() const {
    return client_settings.debounce_ms.value_or(
        project_settings.debounce_ms.value_or(options.debounce_ms));
  }
  std::string target() const {
    return client_settings.target.value_or(project_settings.target.value_or("cpu"));
  }
  graphcore::Version ms_version() const {
    return client_settings.mindspore_version.value_or(
        project_settings.mindspore_version.value_or(graphcore::kDefaultMindSporeVersion));
  }
  std::string root_of(const std::string& path) const {
    std::string best;
    for (const auto& r : roots) {
      if (path.starts_with(r + "/") && r.size() > best.size()) best = r;
    }
    return best;
  }
  std::vector<graphcore::TensorType> inputs_for(const std::string& path) const {
    const std::string root = root_of(path);
    const std::string rel = root.empty() ? path : path.substr(root.size() + 1);
    const std::string name = fs::path(path).filename().string();
    for (const Settings* s : {&client_settings, &project_settings}) {
      for (const std::string& key : {rel, path, name, std::string("*")}) {
        if (auto it = s->inputs.find(key); it != s->inputs.end()) return it->second;
      }
    }
    return {};
  }

  void log(int type, const std::string& message) {
    rpc.notify("window/logMessage", {{"type", type}, {"message", message}});
  }
  void log_trace(const std::string& message, const std::string& verbose = "") {
    if (trace == "off") return;
    Json p{{"message", message}};
    if (trace == "verbose" && !verbose.empty()) p["verbose"] = verbose;
    rpc.notify("$/logTrace", p);
  }

  // mindspore_config.json at the first workspace folder that has one (shared with the CLI:
  // server/project_config.h). Its problems are published as diagnostics of that file.
  void load_project_config() {
    project_settings = Settings{};
    std::string previous = config_file;
    config_file.clear();
    for (const auto& root : roots) {
      fs::path file = fs::path(root) / server::kProjectConfigName;
      std::ifstream in(file, std::ios::binary);
      if (!in) continue;
      std::stringstream ss;
      ss << in.rdbuf();
      const std::string text = ss.str();
      server::ProjectConfig config = server::parse_project_config(file.string(), text);
      config_file = file.string();
      PositionConverter conv(text, encoding);
      project_settings = config;
      Json diags = Json::array();
      for (const auto& d : config.diagnostics) {
        diags.push_back({{"range", conv.range(d.range)},
                         {"severity", static_cast<int>(d.severity)},
                         {"source", "cellscope"},
                         {"code", d.code},
                         {"message", d.message}});
        log(2, config_file + ":" + std::to_string(d.range.start.line + 1) + ": " + d.message);
      }
      if (!pull_diagnostics) {
        rpc.notify("textDocument/publishDiagnostics",
                   {{"uri", path_to_uri(config_file)}, {"diagnostics", std::move(diags)}});
      }
      break;  // the first folder's file wins
    }
    if (!previous.empty() && previous != config_file && !pull_diagnostics) {
      rpc.notify("textDocument/publishDiagnostics",
                 {{"uri", path_to_uri(previous)}, {"diagnostics", Json::array()}});
    }
  }

  // ---- worker ----

  void start_worker() {
    worker = std::thread([this] {
      for (;;) {
        std::function<void()> task;
        {
          std::unique_lock lock(mutex);
          cv.wait(lock, [&] { return stopping || !tasks.empty(); });
          if (stopping) return;
          task = std::move(tasks.front());
          tasks.pop_front();
        }
        try {
          task();
        } catch (const std::exception& e) {
          spdlog::error("analysis task failed: {}", e.what());
        }
      }
    });
  }
  void submit(std::function<void()> task) {
    {
      std::lock_guard lock(mutex);
      tasks.push_back(std::move(task));
    }
    cv.notify_one();
  }
  void stop_threads() {
    if (auto vs = current_view()) vs->stop();
    {
      std::lock_guard lock(mutex);
      stopping = true;
      tasks.clear();
    }
    cv.notify_all();
    index.cancel();
    if (worker.joinable()) worker.join();
    if (indexer.joinable()) indexer.join();
  }

  // ---- scheduling ----

  void schedule(const std::string& uri, bool immediate, bool from_dependency = false) {
    auto it = docs.find(uri);
    if (it == docs.end()) return;
    OpenDoc& d = it->second;
    ++d.generation;
    if (d.running_cancel && d.running_version != d.doc.version) d.running_cancel->store(true);
    if (!d.timer) d.timer = std::make_unique<asio::steady_timer>(io);
    int delay = immediate ? 0 : debounce_ms();
    d.timer->expires_after(std::chrono::milliseconds(delay));
    std::weak_ptr<Impl> weak = weak_from_this();
    d.timer->async_wait(
        [weak, uri, from_dependency, gen = d.generation](const boost::system::error_code& ec) {
          if (ec) return;  // restarted or cancelled
          if (auto self = weak.lock()) self->enqueue(uri, from_dependency, gen);
        });
  }

  void enqueue(const std::string& uri, bool from_dependency, uint64_t generation) {
    auto it = docs.find(uri);
    // A handler of an expired timer that was already queued when schedule() re-armed the timer
    // cannot be cancelled: it must not bypass the new delay (nor analyse twice).
    if (it == docs.end() || it->second.generation != generation) return;
    OpenDoc& d = it->second;
    if (d.running_cancel) d.running_cancel->store(true);
    auto job = std::make_shared<Job>();
    job->uri = uri;
    job->path = d.doc.path;
    job->version = d.doc.version;
    job->text = d.doc.text;
    for (const auto& [u, od] : docs) {
      job->overlay[od.doc.path] = od.doc.text;
      job->versions[od.doc.path] = od.doc.version;
    }
    job->cancel = std::make_shared<std::atomic<bool>>(false);
    job->from_dependency = from_dependency;
    job->generation = d.generation;
    auto& o = job->options;
    o.target = target();
    o.mindspore_version = ms_version();
    o.inputs = inputs_for(d.doc.path);
    for (const auto& c : project_settings.config_paths()) o.config_files.push_back(c);
    for (const auto& c : client_settings.configs) {
      fs::path p(c);
      if (p.is_relative() && !root_of(d.doc.path).empty()) p = fs::path(root_of(d.doc.path)) / p;
      o.config_files.push_back(p);
    }
    if (std::string root = root_of(d.doc.path); !root.empty()) o.workspace_root = root;
    o.record_facts = true;
    o.outline = true;
    o.parse_cache = parse_cache;
    o.cancel = job->cancel.get();
    d.running_cancel = job->cancel;
    d.running_version = d.doc.version;
    arm_progress(uri);
    std::weak_ptr<Impl> weak = weak_from_this();
    submit([weak, job] {
      if (job->cancel->load()) return;
      auto t0 = Clock::now();
      const double cpu0 = thread_cpu_ms();
      SnapshotSources sources(job->overlay);
      auto fa = std::make_shared<FileAnalysis>();
      try {
        fa->result = graphcore::analyze_file(job->path, job->options, sources);
      } catch (const std::exception& e) {
        // Never leave requests waiting: the failure becomes this version's diagnostic.
        spdlog::error("analysis of {} failed: {}", job->path, e.what());
        fa->result = graphcore::AnalysisResult{};
        fa->result.file = job->path;
        fa->result.diagnostics.push_back(graphcore::Diagnostic{
            job->path,
            {},
            graphcore::Severity::Error,
            "internal-error",
            "Cellscope could not analyse this file: " + rpc::describe_exception(e),
            {},
            {}});
      }
      if (fa->result.cancelled || job->cancel->load()) return;
      fa->outline = std::move(fa->result.outline);
      fa->uri = job->uri;
      fa->path = job->path;
      fa->version = job->version;
      fa->text = job->text;
      fa->versions_used = job->versions;
      fa->elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      fa->cpu_ms = thread_cpu_ms() - cpu0;
      auto self = weak.lock();
      if (!self) return;
      fa->conv = std::make_unique<PositionConverter>(*fa->text, self->encoding);
      asio::post(self->io, [weak, job, fa] {
        if (auto s = weak.lock()) s->finished(*job, fa);
      });
      // The graph view's layers after the diagnostics are on their way (the result is shared
      // read-only from here on; the I/O thread only stamps its sequence number).
      if (auto vs = self->current_view(); vs && vs->watching(job->path))
        self->publish_view(*vs, job->path, fa->result, job->options, sources);
    });
  }

  void finished(const Job& job, const std::shared_ptr<FileAnalysis>& fa) {
    auto it = docs.find(job.uri);
    // Stale: the document changed, or it (or a file it imports, or the settings) changed after
    // the job was made -- a newer job is scheduled.
    if (it == docs.end() || it->second.doc.version != job.version || job.cancel->load() ||
        it->second.generation != job.generation) {
      log_trace("dropped a stale analysis of " + job.path + " (version " +
                std::to_string(job.version) + ")");
      return;
    }
    OpenDoc& d = it->second;
    end_progress(d, "done");
    fa->seq = ++seq;
    d.analysis = fa;
    d.analysed_generation = job.generation;
    d.running_cancel.reset();
    d.running_version = -1;
    index.update(fa->path, *fa->text, fa->outline);
    char timing[96];
    std::snprintf(timing, sizeof timing, " in %.2f ms (cpu %.2f ms)", fa->elapsed_ms, fa->cpu_ms);
    log_trace("analysed " + fa->path + " v" + std::to_string(fa->version) + timing,
              std::to_string(fa->result.diagnostics.size()) + " diagnostics, " +
                  std::to_string(fa->result.cells.size()) + " Cells");
    auto waiters = std::move(d.waiters);
    d.waiters.clear();
    std::shared_ptr<const FileAnalysis> done = fa;
    for (auto& w : waiters) w(done);
    // Diagnostics of this file, and of other open files this analysis reported on.
    std::set<std::string> files{fa->path};
    for (const auto& diag : fa->result.diagnostics) files.insert(diag.file);
    for (auto& [uri, od] : docs) {
      if (files.count(od.doc.path)) publish(od, &od == &d);
    }
    if (pull_diagnostics && diagnostic_refresh && job.from_dependency) {
      rpc.call("workspace/diagnostic/refresh", nullptr, [](auto, auto) {});
    }
  }

  // Runs `fn` with the analysis of `uri`'s current version, now or when it is done.
  void with_analysis(const std::string& uri, Waiter fn) {
    auto it = docs.find(uri);
    if (it == docs.end()) {
      fn(nullptr);
      return;
    }
    OpenDoc& d = it->second;
    if (d.analysis && d.analysis->version == d.doc.version &&
        d.analysed_generation == d.generation) {
      fn(d.analysis);
      return;
    }
    d.waiters.push_back(std::move(fn));
  }

  // ---- the graph view ----

  std::shared_ptr<server::view::ViewServer> current_view() {
    std::lock_guard lock(view_mutex);
    return view_server;
  }

  // The view's document for an analysis of `path` (hardware layer: all three layers), on the
  // worker thread.
  static void publish_view(server::view::ViewServer& vs, const std::string& path,
                           const graphcore::AnalysisResult& result,
                           const graphcore::AnalysisOptions& analysis,
                           graphcore::SourceProvider& sources) {
    server::PipelineOptions pipeline;
    pipeline.layer = "hardware";
    try {
      auto built = server::graph_document_of(result, analysis, pipeline, sources);
      vs.update(path, std::move(built.document), built.compiled, built.ms);
    } catch (const std::exception& e) {
      spdlog::error("view: building the document of {} failed: {}", path, e.what());
      vs.publish_status(path, "failed",
                        "Cellscope could not build the graph: " + rpc::describe_exception(e));
    }
  }

  // Analysis options for `path` under the current settings.
  graphcore::AnalysisOptions analysis_options_for(const std::string& path) const {
    graphcore::AnalysisOptions o;
    o.target = target();
    o.mindspore_version = ms_version();
    o.inputs = inputs_for(path);
    if (std::string root = root_of(path); !root.empty()) o.workspace_root = root;
    return o;
  }

  // A view started following `path` (on the I/O thread): give it a document.
  void view_subscribed(const std::string& path) {
    auto vs = current_view();
    if (!vs) return;
    std::map<std::string, std::shared_ptr<const std::string>> overlay;
    for (const auto& [u, od] : docs) overlay[od.doc.path] = od.doc.text;
    for (auto& [uri, d] : docs) {
      if (d.doc.path != path) continue;
      if (d.analysis && d.analysis->version == d.doc.version &&
          d.analysed_generation == d.generation) {
        std::shared_ptr<const FileAnalysis> fa = d.analysis;
        auto options = analysis_options_for(path);
        submit([vs, fa, options, overlay] {
          SnapshotSources sources(overlay);
          publish_view(*vs, fa->path, fa->result, options, sources);
        });
      } else {
        schedule(uri, true);  // the analysis publishes to the view when it is done
      }
      return;
    }
    // Not open in the editor: from disk (and the open documents it imports).
    auto options = analysis_options_for(path);
    submit([vs, path, options, overlay] {
      SnapshotSources sources(overlay);
      server::PipelineOptions pipeline;
      pipeline.layer = "hardware";
      auto built = server::build_graph_document(path, options, pipeline, sources);
      vs->update(path, std::move(built.document), built.compiled, built.ms);
    });
  }

  // The view asked to show a source range (on the I/O thread).
  void view_reveal(const protocol::RevealRequest& reveal) {
    const auto& r = reveal.range();
    Json range{{"start", {{"line", r.start().line()}, {"character", r.start().character()}}},
               {"end", {{"line", r.end().line()}, {"character", r.end().character()}}}};
    if (!show_document) {
      log(3, "the graph view asked to show " + reveal.file() + ":" +
                 std::to_string(r.start().line() + 1) +
                 " (this editor does not support window/showDocument)");
      return;
    }
    rpc.call("window/showDocument",
             {{"uri", path_to_uri(reveal.file())}, {"takeFocus", true}, {"selection", range}},
             [](std::optional<Json>, std::optional<RpcError> err) {
               if (err) spdlog::warn("window/showDocument failed: {}", err->what());
             });
  }

  // Starts the view server on first use. Throws std::runtime_error when it cannot listen.
  std::shared_ptr<server::view::ViewServer> ensure_view() {
    if (auto vs = current_view()) return vs;
    server::view::ServerOptions options;
    options.editor = true;
    server::view::Handlers handlers;
    std::weak_ptr<Impl> weak = weak_from_this();
    handlers.allow_file = [](const std::string& file) -> std::string {
      const fs::path p(file);
      std::error_code ec;
      if (!p.is_absolute()) return "file= must be an absolute path";
      if (p.extension() != ".py") return file + " is not a Python file";
      if (!fs::is_regular_file(p, ec)) return "no such file: " + file;
      return "";
    };
    handlers.subscribed = [weak](const std::string& file) {
      if (auto self = weak.lock())
        asio::post(self->io, [weak, file] {
          if (auto s = weak.lock()) s->view_subscribed(file);
        });
    };
    handlers.reveal = [weak](const protocol::RevealRequest& reveal) {
      if (auto self = weak.lock())
        asio::post(self->io, [weak, reveal] {
          if (auto s = weak.lock()) s->view_reveal(reveal);
        });
    };
    auto vs = std::make_shared<server::view::ViewServer>(options, handlers);
    vs->start();
    log(3, "graph view server listening on 127.0.0.1:" + std::to_string(vs->port()));
    std::lock_guard lock(view_mutex);
    view_server = vs;
    if (debug_focus) vs->set_debug_focus(*debug_focus);
    return vs;
  }

  // The Cell of `fa` whose class definition contains `line` (0-based), else the first Cell.
  // The Cell "under the cursor": the innermost root whose definition holds the line (a factory
  // `def resnet50`, a class built with its defaults); else a root built from the class the
  // cursor is in (`class ResNet`, built by the factories); else the first root. Never a private
  // helper: those are not roots.
  static std::string cell_at(const FileAnalysis& fa, int64_t line) {
    if (fa.result.cells.empty()) return "";
    if (line < 0) return fa.result.cells.front().name;
    const auto l = static_cast<uint32_t>(line);
    auto holds = [l](const graphcore::SourceRange& r) {
      return l >= r.start.line && l <= r.end.line;
    };
    // A factory root (`resnet50()`): its own `def`, from the outline.
    for (const auto& c : fa.result.cells) {
      if (c.file != fa.path || !c.name.ends_with("()")) continue;
      const auto* fn = graphcore::find_symbol(
          fa.outline.symbols, std::string_view(c.name).substr(0, c.name.size() - 2));
      if (fn && holds(fn->range)) return c.name;
    }
    const graphcore::CellReport* best = nullptr;
    for (const auto& c : fa.result.cells) {
      if (c.file != fa.path || !holds(c.range)) continue;
      if (!best ||
          c.range.end.line - c.range.start.line < best->range.end.line - best->range.start.line)
        best = &c;
    }
    if (best) return best->name;
    for (const auto& sym : fa.outline.symbols) {
      if (!holds(sym.range)) continue;
      for (const auto& c : fa.result.cells) {
        if (c.class_name == sym.name) return c.name;
      }
    }
    return fa.result.cells.front().name;
  }

  // ---- diagnostics ----

  FeatureContext feature_context(
      const FileAnalysis& fa,
      std::shared_ptr<std::map<std::string, std::pair<std::shared_ptr<const std::string>,
                                                      std::unique_ptr<PositionConverter>>>>
          cache = nullptr) {
    if (!cache) {
      cache =
          std::make_shared<std::map<std::string, std::pair<std::shared_ptr<const std::string>,
                                                           std::unique_ptr<PositionConverter>>>>();
    }
    FeatureContext ctx{fa, ms_version(), encoding, client, nullptr};
    ctx.converter_for = [this, cache](const std::string& path) -> const PositionConverter* {
      auto it = cache->find(path);
      if (it != cache->end()) return it->second.second.get();
      std::shared_ptr<const std::string> text;
      for (const auto& [u, od] : docs) {
        if (od.doc.path == path) text = od.doc.text;
      }
      if (!text) {
        graphcore::DiskSourceProvider disk;
        auto t = disk.read(path);
        if (!t) {
          cache->emplace(path, std::make_pair(nullptr, nullptr));
          return nullptr;
        }
        text = std::make_shared<const std::string>(std::move(*t));
      }
      auto conv = std::make_unique<PositionConverter>(*text, encoding);
      auto* raw = conv.get();
      cache->emplace(path, std::make_pair(text, std::move(conv)));
      return raw;
    };
    return ctx;
  }

  // Diagnostics for open document `d`: its own analysis, plus those other open documents'
  // analyses located in it (when they read its current version). Deduplicated.
  Json diagnostics_for(const OpenDoc& d) {
    Json out = Json::array();
    std::set<std::string> seen;
    auto add_from = [&](const FileAnalysis& fa) {
      auto it = fa.versions_used.find(d.doc.path);
      if (&fa != d.analysis.get() && (it == fa.versions_used.end() || it->second != d.doc.version))
        return;
      FeatureContext ctx = feature_context(*d.analysis);
      for (const auto& diag : fa.result.diagnostics) {
        if (diag.file != d.doc.path) continue;
        Json j = diagnostic_json(ctx, diag);
        if (seen.insert(j["range"].dump() + j.value("code", "") + diag.message).second)
          out.push_back(std::move(j));
      }
    };
    if (!d.analysis || d.analysis->version != d.doc.version) return out;
    add_from(*d.analysis);
    for (const auto& [uri, od] : docs) {
      if (&od != &d && od.analysis) add_from(*od.analysis);
    }
    return out;
  }

  // `own`: `d` was just analysed (always published, so that the client learns that this version's
  // diagnostics are final); otherwise only a change is sent.
  void publish(OpenDoc& d, bool own) {
    if (pull_diagnostics) return;
    if (!d.analysis || d.analysis->version != d.doc.version) return;
    Json diags = diagnostics_for(d);
    std::string key = diags.dump();
    if (!own && key == d.published) return;
    d.published = key;
    rpc.notify("textDocument/publishDiagnostics",
               {{"uri", d.doc.uri}, {"version", d.doc.version}, {"diagnostics", std::move(diags)}});
  }

  // ---- dependencies ----

  // Re-analyses open documents (other than `except_path`) whose last analysis read `path`.
  void reschedule_dependents(const std::string& path, const std::string& except_path) {
    for (auto& [uri, od] : docs) {
      if (od.doc.path == except_path || !od.analysis) continue;
      const auto& files = od.analysis->result.files;
      if (std::find(files.begin(), files.end(), path) != files.end()) schedule(uri, false, true);
    }
  }

  // ---- lifecycle ----

  Json initialize(const Json& params) {
    const Json& caps = params.value("capabilities", Json::object());
    auto cap = [&](std::initializer_list<const char*> path) -> Json {
      const Json* j = &caps;
      for (const char* k : path) {
        if (!j->is_object() || !j->contains(k)) return nullptr;
        j = &(*j)[k];
      }
      return *j;
    };
    Json encodings = cap({"general", "positionEncodings"});
    encoding = PositionEncoding::kUtf16;
    if (encodings.is_array()) {
      for (const auto& e : encodings) {
        if (e == "utf-8") encoding = PositionEncoding::kUtf8;
      }
    }
    client.hierarchical_symbols =
        cap({"textDocument", "documentSymbol", "hierarchicalDocumentSymbolSupport"}) == true;
    Json formats = cap({"textDocument", "hover", "contentFormat"});
    client.markdown_hover = !formats.is_array() || formats.empty() ||
                            std::find(formats.begin(), formats.end(), "markdown") != formats.end();
    client.signature_label_offsets = cap({"textDocument", "signatureHelp", "signatureInformation",
                                          "parameterInformation", "labelOffsetSupport"}) == true;
    client.related_information =
        cap({"textDocument", "publishDiagnostics", "relatedInformation"}) != false;
    pull_diagnostics = cap({"textDocument", "diagnostic"}).is_object();
    diagnostic_refresh = cap({"workspace", "diagnostics", "refreshSupport"}) == true;
    work_done_progress = cap({"window", "workDoneProgress"}) == true;
    show_document = cap({"window", "showDocument", "support"}) == true;
    configuration_pull = cap({"workspace", "configuration"}) == true;
    watch_registration = cap({"workspace", "didChangeWatchedFiles", "dynamicRegistration"}) == true;
    if (params.contains("trace") && params["trace"].is_string()) trace = params["trace"];

    roots.clear();
    if (auto wf = params.find("workspaceFolders"); wf != params.end() && wf->is_array()) {
      for (const auto& f : *wf) {
        if (auto p = uri_to_path(f.value("uri", "")))
          roots.push_back(fs::path(*p).lexically_normal().string());
      }
    }
    if (roots.empty()) {
      if (auto ru = params.find("rootUri"); ru != params.end() && ru->is_string()) {
        if (auto p = uri_to_path(ru->get<std::string>()))
          roots.push_back(fs::path(*p).lexically_normal().string());
      } else if (auto rp = params.find("rootPath"); rp != params.end() && rp->is_string()) {
        roots.push_back(fs::path(rp->get<std::string>()).lexically_normal().string());
      }
    }
    for (auto& r : roots) {
      while (r.size() > 1 && r.back() == '/') r.pop_back();
    }
    std::vector<std::string> problems;
    if (auto io_ = params.find("initializationOptions"); io_ != params.end() && io_->is_object()) {
      client_settings =
          parse_settings(io_->contains("cellscope") ? (*io_)["cellscope"] : *io_, problems);
    }
    load_project_config();
    for (const auto& p : problems) log(2, "initializationOptions: " + p);
    state = State::kRunning;
    index.set_encoding(encoding);

    Json trigger_chars = Json::array({".", "(", ",", "="});
    Json capabilities = {
        {"positionEncoding", encoding == PositionEncoding::kUtf8 ? "utf-8" : "utf-16"},
        {"textDocumentSync",
         {{"openClose", true}, {"change", 2}, {"save", {{"includeText", false}}}}},
        {"hoverProvider", true},
        {"inlayHintProvider", true},
        {"codeLensProvider", {{"resolveProvider", false}}},
        {"documentSymbolProvider", true},
        {"workspaceSymbolProvider", true},
        {"codeActionProvider", {{"codeActionKinds", Json::array({"quickfix"})}}},
        {"completionProvider",
         {{"triggerCharacters", Json::array({".", "(", ","})}, {"resolveProvider", false}}},
        {"signatureHelpProvider",
         {{"triggerCharacters", Json::array({"(", ","})},
          {"retriggerCharacters", Json::array({"="})}}},
        {"definitionProvider", true},
        {"executeCommandProvider",
         {{"commands", Json::array({"cellscope.visualizeGraph", "cellscope.graphDocument",
                                    "cellscope.setTarget", "cellscope.debugFocus"})}}},
        {"workspace", {{"workspaceFolders", {{"supported", true}, {"changeNotifications", true}}}}},
    };
    (void)trigger_chars;
    if (pull_diagnostics) {
      capabilities["diagnosticProvider"] = {{"identifier", "cellscope"},
                                            {"interFileDependencies", true},
                                            {"workspaceDiagnostics", false}};
    }
    return {{"capabilities", capabilities},
            {"serverInfo",
             {{"name", "cellscope"}, {"version", std::string(protocol::tool_version())}}}};
  }

  void initialized() {
    log(3, "Cellscope " + std::string(protocol::tool_version()) + ": MindSpore API " +
               ms_version().str() + ", target " + target() + ", " + std::to_string(roots.size()) +
               " workspace folder(s), " +
               (encoding == PositionEncoding::kUtf8 ? "UTF-8" : "UTF-16") + " positions, " +
               (pull_diagnostics ? "pull" : "push") + " diagnostics");
    if (watch_registration) {
      Json reg = {
          {"registrations",
           Json::array({{{"id", "cellscope-watch"},
                         {"method", "workspace/didChangeWatchedFiles"},
                         {"registerOptions",
                          {{"watchers",
                            Json::array({{{"globPattern", "**/*.py"}},
                                         {{"globPattern", "**/mindspore_config.json"}}})}}}}})}};
      rpc.call("client/registerCapability", reg, [](auto, auto err) {
        if (err) spdlog::warn("client refused file watching: {}", err->what());
      });
    }
    if (configuration_pull) pull_configuration();
    start_indexing();
  }

  void pull_configuration() {
    std::weak_ptr<Impl> weak = weak_from_this();
    rpc.call("workspace/configuration", {{"items", Json::array({{{"section", "cellscope"}}})}},
             [weak](std::optional<Json> result, const std::optional<RpcError>&) {
               auto self = weak.lock();
               if (!self || !result || !result->is_array() || result->empty()) return;
               self->apply_client_settings((*result)[0]);
             });
  }

  void apply_client_settings(const Json& j) {
    if (!j.is_object()) return;
    std::vector<std::string> problems;
    Settings s = parse_settings(j, problems);
    for (const auto& p : problems) {
      rpc.notify("window/showMessage", {{"type", 2}, {"message", "Cellscope settings: " + p}});
    }
    client_settings = s;
    for (auto& [uri, od] : docs) schedule(uri, true);
  }

  void start_indexing() {
    if (roots.empty()) return;
    std::string token = "cellscope-index";
    std::weak_ptr<Impl> weak = weak_from_this();
    auto begin = [weak, token](bool use_progress) {
      auto self = weak.lock();
      if (!self) return;
      if (use_progress) {
        self->rpc.notify("$/progress", {{"token", token},
                                        {"value",
                                         {{"kind", "begin"},
                                          {"title", "Cellscope: indexing workspace"},
                                          {"cancellable", false},
                                          {"percentage", 0}}}});
      }
      auto roots_copy = self->roots;
      self->indexer = std::thread([weak, token, use_progress, roots_copy] {
        auto progress = [&](size_t done, size_t total) {
          if (!use_progress) return;
          auto s = weak.lock();
          if (!s) return;
          unsigned pct = total ? static_cast<unsigned>(done * 100 / total) : 100;
          s->rpc.notify(
              "$/progress",
              {{"token", token},
               {"value",
                {{"kind", "report"},
                 {"message", std::to_string(done) + "/" + std::to_string(total) + " files"},
                 {"percentage", pct}}}});
        };
        std::shared_ptr<Impl> s = weak.lock();
        if (!s) return;
        WorkspaceIndex& idx = s->index;
        s.reset();
        size_t files = idx.scan(roots_copy, progress);
        if (auto s2 = weak.lock()) {
          if (use_progress) {
            s2->rpc.notify("$/progress",
                           {{"token", token},
                            {"value",
                             {{"kind", "end"},
                              {"message", std::to_string(files) + " Python files indexed"}}}});
          }
        }
      });
    };
    if (work_done_progress) {
      rpc.call(
          "window/workDoneProgress/create", {{"token", token}},
          [begin](const std::optional<Json>&, const std::optional<RpcError>& err) { begin(!err); });
    } else {
      begin(false);
    }
  }

  // ---- handlers ----

  void attach() {
    rpc.set_gate([this](const std::string& method, bool is_request) -> std::optional<RpcError> {
      if (method == "exit") return std::nullopt;
      if (state == State::kUninitialized) {
        if (method == "initialize") return std::nullopt;
        return RpcError(ErrorCode::kServerNotInitialized,
                        "the server is not initialized yet (send `initialize` first)");
      }
      if (method == "initialize")
        return RpcError(ErrorCode::kInvalidRequest, "the server is already initialized");
      if (state == State::kShutDown && is_request)
        return RpcError(ErrorCode::kInvalidRequest, "the server is shutting down");
      return std::nullopt;
    });

    rpc.on_request("initialize", [this](const Json& p, const Context&) { return initialize(p); });
    rpc.on_notification("initialized", [this](const Json&) { initialized(); });
    rpc.on_request("shutdown", [this](const Json&, const Context&) {
      state = State::kShutDown;
      shutdown_received = true;
      for (auto& [uri, od] : docs) {
        if (od.running_cancel) od.running_cancel->store(true);
      }
      return Json(nullptr);
    });
    rpc.on_notification("exit", [this](const Json&) {
      exit_requested = true;
      wind_down();
      if (on_exit) on_exit();
    });
    rpc.on_notification("$/setTrace",
                        [this](const Json& p) { trace = p.at("value").get<std::string>(); });

    rpc.on_notification("textDocument/didOpen", [this](const Json& p) {
      const Json& td = p.at("textDocument");
      std::string uri = td.at("uri").get<std::string>();
      auto path = uri_to_path(uri);
      if (!path) {
        log(2, "ignoring " + uri + ": only file: URIs are analysed");
        return;
      }
      // Every field is read (and type-checked: a wrong type throws, and the notification is
      // dropped) before the document is touched: never a half-opened document without a text.
      std::string language_id = td.value("languageId", "python");
      const int64_t version = td.at("version").get<int64_t>();
      auto text = std::make_shared<const std::string>(td.at("text").get<std::string>());
      OpenDoc& d = docs[uri];
      d.doc.uri = uri;
      d.doc.path = fs::path(*path).lexically_normal().string();
      d.doc.language_id = std::move(language_id);
      d.doc.version = version;
      d.doc.text = std::move(text);
      d.published.clear();
      schedule(uri, true);
      reschedule_dependents(d.doc.path, d.doc.path);
    });
    rpc.on_notification("textDocument/didChange", [this](const Json& p) {
      const Json& td = p.at("textDocument");
      std::string uri = td.at("uri").get<std::string>();
      auto it = docs.find(uri);
      if (it == docs.end()) {
        log(2, "didChange for " + uri + ", which is not open: ignored");
        return;
      }
      OpenDoc& d = it->second;
      const int64_t version = td.at("version").get<int64_t>();
      std::string text = *d.doc.text;
      for (const auto& change : p.at("contentChanges")) text = apply_change(text, change, encoding);
      d.doc.text = std::make_shared<const std::string>(std::move(text));
      d.doc.version = version;
      schedule(uri, false);
      reschedule_dependents(d.doc.path, d.doc.path);
    });
    rpc.on_notification("textDocument/didSave", [this](const Json& p) {
      std::string uri = p.at("textDocument").at("uri").get<std::string>();
      if (auto t = p.find("text"); t != p.end() && t->is_string()) {
        auto it = docs.find(uri);
        if (it != docs.end() && *it->second.doc.text != t->get<std::string>()) {
          it->second.doc.text = std::make_shared<const std::string>(t->get<std::string>());
          schedule(uri, true);
        }
      }
    });
    rpc.on_notification("textDocument/didClose", [this](const Json& p) {
      std::string uri = p.at("textDocument").at("uri").get<std::string>();
      auto it = docs.find(uri);
      if (it == docs.end()) return;
      if (it->second.running_cancel) it->second.running_cancel->store(true);
      end_progress(it->second, "closed");
      for (auto& w : it->second.waiters) w(nullptr);
      std::string path = it->second.doc.path;
      docs.erase(it);
      if (!pull_diagnostics) {
        rpc.notify("textDocument/publishDiagnostics",
                   {{"uri", uri}, {"diagnostics", Json::array()}});
      }
      // Importers now read the file from disk.
      reschedule_dependents(path, path);
      index.refresh_from_disk(path);
    });
    rpc.on_notification("workspace/didChangeWatchedFiles", [this](const Json& p) {
      bool structure_changed = false;
      for (const auto& change : p.at("changes")) {
        auto path = uri_to_path(change.at("uri").get<std::string>());
        if (!path) continue;
        std::string norm = fs::path(*path).lexically_normal().string();
        int type = change.at("type").get<int>();
        if (fs::path(norm).filename() == "mindspore_config.json") {
          load_project_config();
          structure_changed = true;
          continue;
        }
        bool open = false;
        for (const auto& [u, od] : docs) open |= od.doc.path == norm;
        if (!open) {
          if (type == 3) {
            index.remove(norm);
          } else {
            submit_index_refresh(norm);
          }
        }
        if (type != 2) structure_changed = true;  // created / deleted: imports may resolve now
        if (!open) reschedule_dependents(norm, "");
      }
      if (structure_changed) {
        for (auto& [uri, od] : docs) schedule(uri, false, true);
      }
    });
    rpc.on_notification("workspace/didChangeConfiguration", [this](const Json& p) {
      auto s = p.find("settings");
      if (s != p.end() && s->is_object() && s->contains("cellscope")) {
        apply_client_settings((*s)["cellscope"]);
      } else if (configuration_pull) {
        pull_configuration();
      }
    });
    rpc.on_notification("workspace/didChangeWorkspaceFolders", [this](const Json& p) {
      const Json& ev = p.at("event");
      for (const auto& f : ev.at("removed")) {
        if (auto path = uri_to_path(f.at("uri").get<std::string>())) std::erase(roots, *path);
      }
      std::vector<std::string> added;
      for (const auto& f : ev.at("added")) {
        if (auto path = uri_to_path(f.at("uri").get<std::string>())) {
          roots.push_back(fs::path(*path).lexically_normal().string());
          added.push_back(roots.back());
        }
      }
      load_project_config();
      // Index the new folders (on the worker, between analyses).
      if (!added.empty()) {
        std::weak_ptr<Impl> weak = weak_from_this();
        submit([weak, added] {
          if (auto self = weak.lock()) self->index.scan(added, nullptr);
        });
      }
    });

    auto analysed = [this](const char* method,
                           std::function<Json(const FeatureContext&, const Json&)> fn) {
      rpc.on_async_request(method, [this, fn](const Json& p, const Context& request) {
        std::string uri = p.at("textDocument").at("uri").get<std::string>();
        // A request parked until the analysis is done is answered (RequestCancelled) as soon as
        // it is cancelled. The callback holds the request weakly: no cycle through the token.
        auto slot = std::make_shared<Context>(request);
        request.token().on_cancel([weak = std::weak_ptr<Context>(slot)] {
          if (auto parked = weak.lock()) parked->reply(nullptr);
        });
        with_analysis(uri, [this, fn, p, slot](const std::shared_ptr<const FileAnalysis>& fa) {
          const Context& ctx = *slot;
          if (ctx.replied()) return;  // cancelled while it waited
          if (!fa) {
            ctx.reply(nullptr);
            return;
          }
          try {
            ctx.reply(fn(feature_context(*fa), p));
          } catch (const RpcError& e) {
            ctx.error(e);
          } catch (const Json::exception& e) {
            ctx.error(RpcError(ErrorCode::kInvalidParams,
                               "invalid params: " + rpc::describe_exception(e, "params")));
          } catch (const std::exception& e) {
            ctx.error(RpcError(ErrorCode::kInternalError, rpc::describe_exception(e, "params")));
          }
        });
      });
    };
    analysed("textDocument/hover",
             [](const FeatureContext& c, const Json& p) { return hover(c, p.at("position")); });
    analysed("textDocument/inlayHint",
             [](const FeatureContext& c, const Json& p) { return inlay_hints(c, p.at("range")); });
    analysed("textDocument/codeLens",
             [](const FeatureContext& c, const Json&) { return code_lenses(c); });
    analysed("textDocument/documentSymbol",
             [](const FeatureContext& c, const Json&) { return document_symbols(c); });
    analysed("textDocument/codeAction",
             [](const FeatureContext& c, const Json& p) { return code_actions(c, p); });
    analysed("textDocument/definition", [](const FeatureContext& c, const Json& p) {
      return definition(c, p.at("position"));
    });
    analysed("textDocument/diagnostic", [this](const FeatureContext& c, const Json& p) {
      std::string id = std::to_string(c.fa.seq);
      if (p.value("previousResultId", "") == id)
        return Json{{"kind", "unchanged"}, {"resultId", id}};
      auto it = docs.find(c.fa.uri);
      Json items = it != docs.end() ? diagnostics_for(it->second) : file_diagnostics(c);
      return Json{{"kind", "full"}, {"resultId", id}, {"items", std::move(items)}};
    });

    // Typing must not wait: completion and signature help use the current text with the last
    // analysis (for imports and types), whatever its version.
    auto immediate =
        [this](const char* method,
               std::function<Json(const FeatureContext&, const std::string&, const Json&)> fn) {
          rpc.on_request(method, [this, fn](const Json& p, const Context&) -> Json {
            std::string uri = p.at("textDocument").at("uri").get<std::string>();
            auto it = docs.find(uri);
            if (it == docs.end()) return nullptr;
            std::shared_ptr<const FileAnalysis> fa = it->second.analysis;
            if (!fa) {
              auto empty = std::make_shared<FileAnalysis>();
              empty->uri = uri;
              empty->path = it->second.doc.path;
              empty->text = it->second.doc.text;
              empty->outline = graphcore::outline_python(empty->path, *empty->text);
              empty->conv = std::make_unique<PositionConverter>(*empty->text, encoding);
              fa = empty;
            }
            return fn(feature_context(*fa), *it->second.doc.text, p.at("position"));
          });
        };
    immediate("textDocument/completion", completion);
    immediate("textDocument/signatureHelp", signature_help);

    rpc.on_request("workspace/symbol", [this](const Json& p, const Context&) {
      return index.query(p.at("query").get<std::string>(), 256);
    });
    rpc.on_async_request("workspace/executeCommand", [this](const Json& p, const Context& ctx) {
      std::string command = p.at("command").get<std::string>();
      Json args = p.value("arguments", Json::array());
      if (command == "cellscope.setTarget") {
        if (args.empty() || !args[0].is_string()) {
          return ctx.error(
              RpcError(ErrorCode::kInvalidParams, "cellscope.setTarget needs a target name"));
        }
        auto t = normalize_target(args[0].get<std::string>());
        if (!t) {
          return ctx.error(RpcError(ErrorCode::kInvalidParams,
                                    "unknown target `" + args[0].get<std::string>() + "`"));
        }
        client_settings.target = *t;
        for (auto& [uri, od] : docs) schedule(uri, true);
        return ctx.reply({{"target", *t}});
      }
      if (command == "cellscope.visualizeGraph") {
        // arguments: [uri] | [uri, cellName] | [uri, {line, character}] (the cursor's Cell).
        if (args.empty() || !args[0].is_string()) {
          return ctx.error(
              RpcError(ErrorCode::kInvalidParams, "cellscope.visualizeGraph needs a document URI"));
        }
        std::string uri = args[0].get<std::string>();
        if (!docs.count(uri))
          return ctx.error(RpcError(ErrorCode::kInvalidParams, uri + " is not open"));
        std::string cell = args.size() > 1 && args[1].is_string() ? args[1].get<std::string>() : "";
        int64_t line = -1;
        if (args.size() > 1 && args[1].is_object() && args[1].contains("line") &&
            args[1]["line"].is_number_integer())
          line = args[1]["line"].get<int64_t>();
        std::shared_ptr<server::view::ViewServer> vs;
        try {
          vs = ensure_view();
        } catch (const std::exception& e) {
          return ctx.error(RpcError(ErrorCode::kRequestFailed,
                                    std::string("cannot start the graph view: ") + e.what()));
        }
        with_analysis(
            uri, [this, ctx, cell, line, vs](const std::shared_ptr<const FileAnalysis>& fa) {
              if (!fa)
                return ctx.error(RpcError(ErrorCode::kRequestFailed, "the document was closed"));
              const std::string chosen = !cell.empty() ? cell : cell_at(*fa, line);
              vs->set_focus(fa->path, chosen);
              ctx.reply({{"url", vs->url(fa->path, chosen)},
                         {"port", vs->port()},
                         {"token", vs->token()},
                         {"file", fa->path},
                         {"cell", chosen},
                         {"target", target()}});
            });
        return;
      }
      if (command == "cellscope.debugFocus") {
        // arguments: [DebugFocus as JSON] (the body of `cellscope dap`'s `cellscope.focus` event;
        // an empty node clears it). Passed to the graph views of its file.
        if (args.empty() || !args[0].is_object())
          return ctx.error(
              RpcError(ErrorCode::kInvalidParams,
                       "cellscope.debugFocus needs a focus object {file, cell, node}"));
        protocol::DebugFocus focus;
        std::string error;
        if (!protocol::from_json(args[0].dump(), &focus, &error))
          return ctx.error(RpcError(ErrorCode::kInvalidParams, "cellscope.debugFocus: " + error));
        if (!focus.node().empty() && !fs::path(focus.file()).is_absolute())
          return ctx.error(RpcError(ErrorCode::kInvalidParams,
                                    "cellscope.debugFocus: `file` must be an absolute path"));
        std::shared_ptr<server::view::ViewServer> vs;
        {
          std::lock_guard lock(view_mutex);
          if (focus.node().empty())
            debug_focus.reset();
          else
            debug_focus = focus;
          vs = view_server;
        }
        const size_t views = vs ? vs->set_debug_focus(focus) : 0;
        return ctx.reply({{"file", focus.file()}, {"node", focus.node()}, {"views", views}});
      }
      if (command == "cellscope.graphDocument") {
        // The semantic graph document of an open file as JSON (for clients without the view).
        if (args.empty() || !args[0].is_string()) {
          return ctx.error(
              RpcError(ErrorCode::kInvalidParams, "cellscope.graphDocument needs a document URI"));
        }
        std::string uri = args[0].get<std::string>();
        std::string cell = args.size() > 1 && args[1].is_string() ? args[1].get<std::string>() : "";
        if (!docs.count(uri))
          return ctx.error(RpcError(ErrorCode::kInvalidParams, uri + " is not open"));
        with_analysis(uri, [this, ctx, cell](const std::shared_ptr<const FileAnalysis>& fa) {
          if (!fa) return ctx.error(RpcError(ErrorCode::kRequestFailed, "the document was closed"));
          try {
            ctx.reply(graph_document_json(feature_context(*fa), cell, target()));
          } catch (const std::exception& e) {
            ctx.error(RpcError(ErrorCode::kInternalError, rpc::describe_exception(e, "params")));
          }
        });
        return;
      }
      ctx.error(RpcError(ErrorCode::kInvalidParams, "unknown command `" + command + "`"));
    });
  }

  // Shows "Cellscope: analysing FILE" when an analysis of `uri` is still running after
  // ServerOptions::progress_delay_ms (clients that support server-initiated work-done progress).
  void arm_progress(const std::string& uri) {
    if (!work_done_progress) return;
    auto it = docs.find(uri);
    if (it == docs.end() || it->second.progress_begun || !it->second.progress_token.empty()) return;
    OpenDoc& d = it->second;
    if (!d.progress_timer) d.progress_timer = std::make_unique<asio::steady_timer>(io);
    d.progress_timer->expires_after(std::chrono::milliseconds(options.progress_delay_ms));
    std::weak_ptr<Impl> weak = weak_from_this();
    d.progress_timer->async_wait([weak, uri](const boost::system::error_code& ec) {
      auto self = weak.lock();
      if (ec || !self) return;
      auto it2 = self->docs.find(uri);
      if (it2 == self->docs.end() || !it2->second.running_cancel ||
          !it2->second.progress_token.empty())
        return;
      std::string token = "cellscope-analysis-" + std::to_string(++progress_counter);
      it2->second.progress_token = token;
      self->rpc.call("window/workDoneProgress/create", {{"token", token}},
                     [weak, uri, token](std::optional<Json>, std::optional<RpcError> err) {
                       auto s2 = weak.lock();
                       if (!s2) return;
                       auto it3 = s2->docs.find(uri);
                       if (it3 == s2->docs.end() || it3->second.progress_token != token) return;
                       OpenDoc& od = it3->second;
                       if (err || !od.running_cancel) {  // refused, or already finished
                         od.progress_token.clear();
                         return;
                       }
                       od.progress_begun = true;
                       s2->rpc.notify(
                           "$/progress",
                           {{"token", token},
                            {"value",
                             {{"kind", "begin"},
                              {"title", "Cellscope"},
                              {"message", "analysing " + fs::path(od.doc.path).filename().string()},
                              {"cancellable", false}}}});
                     });
    });
  }

  void end_progress(OpenDoc& d, const std::string& message) {
    if (d.progress_timer) d.progress_timer->cancel();
    if (d.progress_begun) {
      rpc.notify("$/progress",
                 {{"token", d.progress_token}, {"value", {{"kind", "end"}, {"message", message}}}});
    }
    d.progress_begun = false;
    d.progress_token.clear();
  }

  // At exit or end of input: no timer may keep the io_context alive and no request may wait
  // for an analysis that will not come.
  void wind_down() {
    for (auto& [uri, od] : docs) {
      if (od.timer) od.timer->cancel();
      end_progress(od, "stopped");
      if (od.running_cancel) od.running_cancel->store(true);
      auto waiters = std::move(od.waiters);
      od.waiters.clear();
      for (auto& w : waiters) w(nullptr);
    }
  }

  void submit_index_refresh(const std::string& path) {
    std::weak_ptr<Impl> weak = weak_from_this();
    submit([weak, path] {
      if (auto s = weak.lock()) s->index.refresh_from_disk(path);
    });
  }

  std::function<void()> on_exit;
};

LanguageServer::LanguageServer(asio::io_context& io, rpc::Dispatcher& rpc, ServerOptions options)
    : impl_(std::make_shared<Impl>(io, rpc, options)) {}

LanguageServer::~LanguageServer() { impl_->stop_threads(); }

void LanguageServer::attach() {
  impl_->start_worker();
  impl_->attach();
}

void LanguageServer::stop() { impl_->stop_threads(); }

void LanguageServer::set_exit_handler(std::function<void()> on_exit) {
  impl_->on_exit = std::move(on_exit);
}

void LanguageServer::end_of_input() { impl_->wind_down(); }

bool LanguageServer::exit_requested() const { return impl_->exit_requested; }

int LanguageServer::exit_code() const { return impl_->shutdown_received ? 0 : 1; }

int run_stdio_server(const ServerOptions& options, const std::string& log_file) {
  int out_fd = rpc::isolate_stdio({log_file, true});
  asio::io_context io;
  rpc::StdioTransport::Options topts;
  topts.out_fd = out_fd;
  // A 50 MB message is refused (answered with an error), not buffered.
  topts.framing.max_message_bytes = 32u << 20;
  rpc::StdioTransport transport(io, topts);
  rpc::Dispatcher dispatcher([&](std::string body) { transport.send(std::move(body)); });
  LanguageServer server(io, dispatcher, options);
  server.set_exit_handler([&] { dispatcher.when_idle([&] { transport.close(); }); });
  server.attach();
  transport.start(
      [&](const rpc::Frame& f) {
        // One message's failure (e.g. out of memory) never ends the server.
        try {
          dispatcher.handle_frame(f);
        } catch (const std::exception& e) {
          spdlog::error("message dropped: {}", e.what());
        }
      },
      [&](const std::string& error) {
        if (!error.empty()) spdlog::error("input: {}", error);
        dispatcher.fail_pending_calls("the client went away");
        server.end_of_input();
        dispatcher.when_idle([&] { transport.close(); });
      });
  spdlog::info("cellscope lsp: serving on stdio");
  io.run();
  server.stop();
  return server.exit_code();
}

}  // namespace cellscope::lsp
