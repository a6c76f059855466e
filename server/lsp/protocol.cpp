#include "lsp/protocol.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <set>

#include "graphcore/mindir_import.h"
#include "graphcore/outline.h"
#include "lsp/document.h"
#include "model_export.h"
#include "pipeline.h"
#include "protocol/document.h"

namespace cellscope::lsp {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using rpc::Context;
using rpc::ErrorCode;
using rpc::RpcError;
using server::normalize_target;

namespace {

uint64_t progress_counter = 0;

// JSON writers (nlohmann's, JavaScript's) write a number that is not finite as null: in a training
// message that is a NaN (a diverged loss), which proto JSON spells "NaN". Fields of `body` (and of
// each element of its `list` array) named in `fields` that are null become "NaN".
void nan_for_null(Json* body, std::initializer_list<const char*> fields, const char* list = nullptr,
                  std::initializer_list<const char*> item_fields = {}) {
  for (const char* f : fields)
    if (auto it = body->find(f); it != body->end() && it->is_null()) *it = "NaN";
  if (list == nullptr) return;
  auto items = body->find(list);
  if (items == body->end() || !items->is_array()) return;
  for (auto& item : *items) {
    if (!item.is_object()) continue;
    for (const char* f : item_fields)
      if (auto it = item.find(f); it != item.end() && it->is_null()) *it = "NaN";
  }
}

// The debug session a training command names (its second argument: {"session": id}), or "".
std::string session_of(const Json& args) {
  if (args.size() < 2 || !args[1].is_object()) return "";
  const auto it = args[1].find("session");
  return it != args[1].end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

ProtocolServer::ProtocolServer(asio::io_context& io, rpc::Dispatcher& rpc, ServerOptions options,
                               AnalysisScheduler& scheduler, ViewBridge& view)
    : io_(io),
      rpc_(rpc),
      options_(options),
      scheduler_(scheduler),
      view_(view),
      settings_(options.debounce_ms >= 0 ? std::optional<int>(options.debounce_ms) : std::nullopt) {
}

void ProtocolServer::join_indexer() {
  if (indexer_.joinable()) indexer_.join();
}

// ---- messages to the client ----

void ProtocolServer::log(int type, const std::string& message) {
  rpc_.notify("window/logMessage", {{"type", type}, {"message", message}});
}

void ProtocolServer::log_trace(const std::string& message, const std::string& verbose) {
  if (trace_ == "off") return;
  Json p{{"message", message}};
  if (trace_ == "verbose" && !verbose.empty()) p["verbose"] = verbose;
  rpc_.notify("$/logTrace", p);
}

// ---- settings ----

// mindspore_config.json at the first workspace folder that has one (shared with the CLI:
// server/project_config.h). Its problems are published as diagnostics of that file.
void ProtocolServer::load_project_config() {
  std::string previous = settings_.config_file();
  if (std::optional<std::string> text = settings_.reload_project_config()) {
    const std::string& config_file = settings_.config_file();
    PositionConverter conv(*text, client_.encoding);
    Json diags = Json::array();
    for (const auto& d : settings_.project().diagnostics) {
      diags.push_back({{"range", conv.range(d.range)},
                       {"severity", static_cast<int>(d.severity)},
                       {"source", "cellscope"},
                       {"code", d.code},
                       {"message", d.message}});
      log(2, config_file + ":" + std::to_string(d.range.start.line + 1) + ": " + d.message);
    }
    if (!client_.pull_diagnostics) {
      rpc_.notify("textDocument/publishDiagnostics",
                  {{"uri", path_to_uri(config_file)}, {"diagnostics", std::move(diags)}});
    }
  }
  if (!previous.empty() && previous != settings_.config_file() && !client_.pull_diagnostics) {
    rpc_.notify("textDocument/publishDiagnostics",
                {{"uri", path_to_uri(previous)}, {"diagnostics", Json::array()}});
  }
}

void ProtocolServer::pull_configuration() {
  std::weak_ptr<ProtocolServer> weak = weak_from_this();
  rpc_.call("workspace/configuration", {{"items", Json::array({{{"section", "cellscope"}}})}},
            [weak](std::optional<Json> result, const std::optional<RpcError>&) {
              auto self = weak.lock();
              if (!self || !result || !result->is_array() || result->empty()) return;
              self->apply_client_settings((*result)[0]);
            });
}

void ProtocolServer::apply_client_settings(const Json& j) {
  if (!j.is_object()) return;
  std::vector<std::string> problems;
  Settings s = parse_settings(j, problems);
  for (const auto& p : problems) {
    rpc_.notify("window/showMessage", {{"type", 2}, {"message", "Cellscope settings: " + p}});
  }
  settings_.client = s;
  for (auto& [uri, od] : scheduler_.documents()) scheduler_.schedule(uri, true);
  view_.settings_changed();
}

// ---- the scheduler's hooks ----

// Shows "Cellscope: analysing FILE" when an analysis of `uri` is still running after
// ServerOptions::progress_delay_ms (clients that support server-initiated work-done progress).
void ProtocolServer::analysis_queued(const std::string& uri) {
  const OpenDoc* queued = scheduler_.find(uri);
  if (!queued) return;
  log_trace("queued " + queued->doc.path + " v" + std::to_string(queued->doc.version) + " after " +
            std::to_string(queued->last_debounce_ms) + " ms");
  if (!client_.work_done_progress) return;
  DocumentFeedback& f = feedback_[uri];
  if (f.progress_begun || !f.progress_token.empty()) return;
  if (!f.progress_timer) f.progress_timer = std::make_unique<asio::steady_timer>(io_);
  f.progress_timer->expires_after(std::chrono::milliseconds(options_.progress_delay_ms));
  std::weak_ptr<ProtocolServer> weak = weak_from_this();
  f.progress_timer->async_wait([weak, uri](const boost::system::error_code& ec) {
    auto self = weak.lock();
    if (ec || !self) return;
    OpenDoc* d = self->scheduler_.find(uri);
    if (!d || !d->running_cancel || !self->feedback_[uri].progress_token.empty()) return;
    std::string token = "cellscope-analysis-" + std::to_string(++progress_counter);
    self->feedback_[uri].progress_token = token;
    self->rpc_.call(
        "window/workDoneProgress/create", {{"token", token}},
        [weak, uri, token](const std::optional<Json>&, const std::optional<RpcError>& err) {
          auto s2 = weak.lock();
          if (!s2) return;
          OpenDoc* od = s2->scheduler_.find(uri);
          if (!od) return;
          DocumentFeedback& f2 = s2->feedback_[uri];
          if (f2.progress_token != token) return;
          if (err || !od->running_cancel) {  // refused, or already finished
            f2.progress_token.clear();
            return;
          }
          f2.progress_begun = true;
          s2->rpc_.notify("$/progress",
                          {{"token", token},
                           {"value",
                            {{"kind", "begin"},
                             {"title", "Cellscope"},
                             {"message", "analysing " + fs::path(od->doc.path).filename().string()},
                             {"cancellable", false}}}});
        });
  });
}

void ProtocolServer::end_progress(DocumentFeedback& f, const std::string& message) {
  if (f.progress_timer) f.progress_timer->cancel();
  if (f.progress_begun) {
    rpc_.notify("$/progress",
                {{"token", f.progress_token}, {"value", {{"kind", "end"}, {"message", message}}}});
  }
  f.progress_begun = false;
  f.progress_token.clear();
}

void ProtocolServer::analysis_dropped(const Job& job) {
  log_trace("dropped a stale analysis of " + job.path + " (version " + std::to_string(job.version) +
            ")");
}

void ProtocolServer::analysis_done(OpenDoc& d, const FileAnalysis& fa) {
  end_progress(feedback_[d.doc.uri], "done");
  index_.update(fa.path, *fa.text, fa.outline);
  char timing[96];
  std::snprintf(timing, sizeof timing, " in %.2f ms (cpu %.2f ms)", fa.elapsed_ms, fa.cpu_ms);
  log_trace("analysed " + fa.path + " v" + std::to_string(fa.version) + timing,
            std::to_string(fa.result.diagnostics.size()) + " diagnostics, " +
                std::to_string(fa.result.cells.size()) + " Cells");
}

void ProtocolServer::analysis_settled(OpenDoc& d, const FileAnalysis& fa, bool from_dependency) {
  // Diagnostics of this file, and of other open files this analysis reported on.
  std::set<std::string> files{fa.path};
  for (const auto& diag : fa.result.diagnostics) files.insert(diag.file);
  for (auto& [uri, od] : scheduler_.documents()) {
    if (files.count(od.doc.path)) publish(od, &od == &d);
  }
  if (client_.pull_diagnostics && client_.diagnostic_refresh && from_dependency) {
    rpc_.call("workspace/diagnostic/refresh", nullptr, [](auto, auto) {});
  }
}

void ProtocolServer::wind_down() {
  for (auto& [id, job] : exports_) job.cancel->store(true);
  scheduler_.wind_down([this](OpenDoc& od) { end_progress(feedback_[od.doc.uri], "stopped"); });
}

// ---- the graph view's hooks ----

void ProtocolServer::reveal_in_editor(const protocol::RevealRequest& reveal) {
  const auto& r = reveal.range();
  Json range{{"start", {{"line", r.start().line()}, {"character", r.start().character()}}},
             {"end", {{"line", r.end().line()}, {"character", r.end().character()}}}};
  if (!client_.show_document) {
    log(3, "the graph view asked to show " + reveal.file() + ":" +
               std::to_string(r.start().line() + 1) +
               " (this editor does not support window/showDocument)");
    return;
  }
  rpc_.call("window/showDocument",
            {{"uri", path_to_uri(reveal.file())}, {"takeFocus", true}, {"selection", range}},
            [](const std::optional<Json>&, const std::optional<RpcError>& err) {
              if (err) spdlog::warn("window/showDocument failed: {}", err->what());
            });
}

// ---- diagnostics ----

FeatureContext ProtocolServer::feature_context(const FileAnalysis& fa,
                                               std::shared_ptr<ConverterCache> cache) {
  if (!cache) cache = std::make_shared<ConverterCache>();
  FeatureContext ctx{fa, settings_.ms_version(), client_.encoding, client_.features, nullptr};
  ctx.converter_for = [this, cache](const std::string& path) -> const PositionConverter* {
    auto it = cache->find(path);
    if (it != cache->end()) return it->second.second.get();
    std::shared_ptr<const std::string> text = scheduler_.text_of(path);
    if (!text) {
      graphcore::DiskSourceProvider disk;
      auto t = disk.read(path);
      if (!t) {
        cache->emplace(path, std::make_pair(nullptr, nullptr));
        return nullptr;
      }
      text = std::make_shared<const std::string>(std::move(*t));
    }
    auto conv = std::make_unique<PositionConverter>(*text, client_.encoding);
    auto* raw = conv.get();
    cache->emplace(path, std::make_pair(text, std::move(conv)));
    return raw;
  };
  return ctx;
}

// Diagnostics for open document `d`: its own analysis, plus those other open documents'
// analyses located in it (when they read its current version). Deduplicated.
Json ProtocolServer::diagnostics_for(const OpenDoc& d) {
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
  for (const auto& [uri, od] : scheduler_.documents()) {
    if (&od != &d && od.analysis) add_from(*od.analysis);
  }
  // The last export's refusals, while the document is unchanged since.
  if (auto f = feedback_.find(d.doc.uri);
      f != feedback_.end() && f->second.export_version == d.doc.version) {
    FeatureContext ctx = feature_context(*d.analysis);
    for (const auto& diag : f->second.export_diagnostics) {
      Json j = diagnostic_json(ctx, diag);
      if (seen.insert(j["range"].dump() + j.value("code", "") + diag.message).second)
        out.push_back(std::move(j));
    }
  }
  return out;
}

// `own`: `d` was just analysed (always published, so that the client learns that this version's
// diagnostics are final); otherwise only a change is sent.
void ProtocolServer::publish(OpenDoc& d, bool own) {
  if (client_.pull_diagnostics) return;
  if (!d.analysis || d.analysis->version != d.doc.version) return;
  Json diags = diagnostics_for(d);
  std::string key = diags.dump();
  std::string& published = feedback_[d.doc.uri].published;
  if (!own && key == published) return;
  published = key;
  rpc_.notify("textDocument/publishDiagnostics",
              {{"uri", d.doc.uri}, {"version", d.doc.version}, {"diagnostics", std::move(diags)}});
}

// ---- lifecycle ----

Json ProtocolServer::initialize(const Json& params) {
  client_ = negotiate(params);
  if (params.contains("trace") && params["trace"].is_string()) trace_ = params["trace"];
  settings_.roots = workspace_roots(params);
  std::vector<std::string> problems;
  if (auto io_ = params.find("initializationOptions"); io_ != params.end() && io_->is_object()) {
    settings_.client =
        parse_settings(io_->contains("cellscope") ? (*io_)["cellscope"] : *io_, problems);
  }
  load_project_config();
  for (const auto& p : problems) log(2, "initializationOptions: " + p);
  state_ = State::kRunning;
  index_.set_encoding(client_.encoding);
  scheduler_.set_encoding(client_.encoding);
  return {
      {"capabilities", server_capabilities(client_.encoding, client_.pull_diagnostics)},
      {"serverInfo", {{"name", "cellscope"}, {"version", std::string(protocol::tool_version())}}}};
}

void ProtocolServer::initialized() {
  log(3, "Cellscope " + std::string(protocol::tool_version()) + ": MindSpore API " +
             settings_.ms_version().str() + ", target " + settings_.target() + ", " +
             std::to_string(settings_.roots.size()) + " workspace folder(s), " +
             (client_.encoding == PositionEncoding::kUtf8 ? "UTF-8" : "UTF-16") + " positions, " +
             (client_.pull_diagnostics ? "pull" : "push") + " diagnostics");
  if (client_.watch_registration) {
    Json reg = {
        {"registrations",
         Json::array(
             {{{"id", "cellscope-watch"},
               {"method", "workspace/didChangeWatchedFiles"},
               {"registerOptions",
                {{"watchers", Json::array({{{"globPattern", "**/*.py"}},
                                           {{"globPattern", "**/mindspore_config.json"}}})}}}}})}};
    rpc_.call("client/registerCapability", reg, [](auto, auto err) {
      if (err) spdlog::warn("client refused file watching: {}", err->what());
    });
  }
  if (client_.configuration_pull) pull_configuration();
  start_indexing();
}

// ---- the workspace index ----

void ProtocolServer::start_indexing() {
  if (settings_.roots.empty()) return;
  std::string token = "cellscope-index";
  std::weak_ptr<ProtocolServer> weak = weak_from_this();
  auto begin = [weak, token](bool use_progress) {
    auto self = weak.lock();
    if (!self) return;
    if (use_progress) {
      self->rpc_.notify("$/progress", {{"token", token},
                                       {"value",
                                        {{"kind", "begin"},
                                         {"title", "Cellscope: indexing workspace"},
                                         {"cancellable", false},
                                         {"percentage", 0}}}});
    }
    auto roots_copy = self->settings_.roots;
    self->indexer_ = std::thread([weak, token, use_progress, roots_copy] {
      auto progress = [&](size_t done, size_t total) {
        if (!use_progress) return;
        auto s = weak.lock();
        if (!s) return;
        unsigned pct = total ? static_cast<unsigned>(done * 100 / total) : 100;
        s->rpc_.notify(
            "$/progress",
            {{"token", token},
             {"value",
              {{"kind", "report"},
               {"message", std::to_string(done) + "/" + std::to_string(total) + " files"},
               {"percentage", pct}}}});
      };
      std::shared_ptr<ProtocolServer> s = weak.lock();
      if (!s) return;
      WorkspaceIndex& idx = s->index_;
      s.reset();
      size_t files = idx.scan(roots_copy, progress);
      if (auto s2 = weak.lock()) {
        if (use_progress) {
          s2->rpc_.notify(
              "$/progress",
              {{"token", token},
               {"value",
                {{"kind", "end"}, {"message", std::to_string(files) + " Python files indexed"}}}});
        }
      }
    });
  };
  if (client_.work_done_progress) {
    rpc_.call(
        "window/workDoneProgress/create", {{"token", token}},
        [begin](const std::optional<Json>&, const std::optional<RpcError>& err) { begin(!err); });
  } else {
    begin(false);
  }
}

void ProtocolServer::submit_index_refresh(const std::string& path) {
  std::weak_ptr<ProtocolServer> weak = weak_from_this();
  scheduler_.submit([weak, path] {
    if (auto s = weak.lock()) s->index_.refresh_from_disk(path);
  });
}

// ---- handlers ----

void ProtocolServer::attach() {
  rpc_.set_gate([this](const std::string& method, bool is_request) -> std::optional<RpcError> {
    if (method == "exit") return std::nullopt;
    if (state_ == State::kUninitialized) {
      if (method == "initialize") return std::nullopt;
      return RpcError(ErrorCode::kServerNotInitialized,
                      "the server is not initialized yet (send `initialize` first)");
    }
    if (method == "initialize")
      return RpcError(ErrorCode::kInvalidRequest, "the server is already initialized");
    if (state_ == State::kShutDown && is_request)
      return RpcError(ErrorCode::kInvalidRequest, "the server is shutting down");
    return std::nullopt;
  });

  rpc_.on_request("initialize", [this](const Json& p, const Context&) { return initialize(p); });
  rpc_.on_notification("initialized", [this](const Json&) { initialized(); });
  rpc_.on_request("shutdown", [this](const Json&, const Context&) {
    state_ = State::kShutDown;
    shutdown_received_ = true;
    scheduler_.cancel_all();
    return Json(nullptr);
  });
  rpc_.on_notification("exit", [this](const Json&) {
    exit_requested_ = true;
    wind_down();
    if (on_exit) on_exit();
  });
  rpc_.on_notification("$/setTrace",
                       [this](const Json& p) { trace_ = p.at("value").get<std::string>(); });

  attach_documents();
  attach_workspace();
  attach_features();
  attach_commands();
}

void ProtocolServer::attach_documents() {
  rpc_.on_notification("textDocument/didOpen", [this](const Json& p) {
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
    OpenDoc& d = scheduler_.documents()[uri];
    d.doc.uri = uri;
    d.doc.path = fs::path(*path).lexically_normal().string();
    d.doc.language_id = std::move(language_id);
    d.doc.version = version;
    d.doc.text = std::move(text);
    feedback_[uri].published.clear();
    scheduler_.schedule(uri, true);
    scheduler_.reschedule_dependents(d.doc.path, d.doc.path);
  });
  rpc_.on_notification("textDocument/didChange", [this](const Json& p) {
    const Json& td = p.at("textDocument");
    std::string uri = td.at("uri").get<std::string>();
    OpenDoc* d = scheduler_.find(uri);
    if (!d) {
      log(2, "didChange for " + uri + ", which is not open: ignored");
      return;
    }
    const int64_t version = td.at("version").get<int64_t>();
    std::string text = *d->doc.text;
    for (const auto& change : p.at("contentChanges"))
      text = apply_change(text, change, client_.encoding);
    d->doc.text = std::make_shared<const std::string>(std::move(text));
    d->doc.version = version;
    scheduler_.schedule(uri, false);
    scheduler_.reschedule_dependents(d->doc.path, d->doc.path);
  });
  rpc_.on_notification("textDocument/didSave", [this](const Json& p) {
    std::string uri = p.at("textDocument").at("uri").get<std::string>();
    if (auto t = p.find("text"); t != p.end() && t->is_string()) {
      OpenDoc* d = scheduler_.find(uri);
      if (d && *d->doc.text != t->get<std::string>()) {
        d->doc.text = std::make_shared<const std::string>(t->get<std::string>());
        scheduler_.schedule(uri, true);
      }
    }
  });
  rpc_.on_notification("textDocument/didClose", [this](const Json& p) {
    std::string uri = p.at("textDocument").at("uri").get<std::string>();
    if (!scheduler_.find(uri)) return;
    end_progress(feedback_[uri], "closed");
    feedback_.erase(uri);
    std::string path = scheduler_.close(uri).value_or("");
    if (!client_.pull_diagnostics) {
      rpc_.notify("textDocument/publishDiagnostics",
                  {{"uri", uri}, {"diagnostics", Json::array()}});
    }
    // Importers now read the file from disk.
    scheduler_.reschedule_dependents(path, path);
    index_.refresh_from_disk(path);
  });
}

void ProtocolServer::attach_workspace() {
  rpc_.on_notification("workspace/didChangeWatchedFiles", [this](const Json& p) {
    bool structure_changed = false;
    for (const auto& change : p.at("changes")) {
      auto path = uri_to_path(change.at("uri").get<std::string>());
      if (!path) continue;
      std::string norm = fs::path(*path).lexically_normal().string();
      int type = change.at("type").get<int>();
      if (fs::path(norm).filename() == "mindspore_config.json") {
        load_project_config();
        view_.settings_changed();
        structure_changed = true;
        continue;
      }
      bool open = false;
      for (const auto& [u, od] : scheduler_.documents()) open |= od.doc.path == norm;
      if (!open) {
        if (type == 3) {
          index_.remove(norm);
        } else {
          submit_index_refresh(norm);
        }
      }
      if (type != 2) structure_changed = true;  // created / deleted: imports may resolve now
      if (!open) scheduler_.reschedule_dependents(norm, "");
    }
    if (structure_changed) {
      for (auto& [uri, od] : scheduler_.documents()) scheduler_.schedule(uri, false, true);
    }
  });
  rpc_.on_notification("workspace/didChangeConfiguration", [this](const Json& p) {
    auto s = p.find("settings");
    if (s != p.end() && s->is_object() && s->contains("cellscope")) {
      apply_client_settings((*s)["cellscope"]);
    } else if (client_.configuration_pull) {
      pull_configuration();
    }
  });
  rpc_.on_notification("workspace/didChangeWorkspaceFolders", [this](const Json& p) {
    const Json& ev = p.at("event");
    std::vector<std::string>& roots = settings_.roots;
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
      std::weak_ptr<ProtocolServer> weak = weak_from_this();
      scheduler_.submit([weak, added] {
        if (auto self = weak.lock()) self->index_.scan(added, nullptr);
      });
    }
  });
  rpc_.on_request("workspace/symbol", [this](const Json& p, const Context&) {
    return index_.query(p.at("query").get<std::string>(), 256);
  });
}

void ProtocolServer::attach_features() {
  auto analysed = [this](const char* method,
                         std::function<Json(const FeatureContext&, const Json&)> fn) {
    rpc_.on_async_request(method, [this, fn](const Json& p, const Context& request) {
      std::string uri = p.at("textDocument").at("uri").get<std::string>();
      // A request parked until the analysis is done is answered (RequestCancelled) as soon as
      // it is cancelled. The callback holds the request weakly: no cycle through the token.
      auto slot = std::make_shared<Context>(request);
      request.token().on_cancel([weak = std::weak_ptr<Context>(slot)] {
        if (auto parked = weak.lock()) parked->reply(nullptr);
      });
      scheduler_.with_analysis(
          uri, [this, fn, p, slot](const std::shared_ptr<const FileAnalysis>& fa) {
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
  analysed("textDocument/definition",
           [](const FeatureContext& c, const Json& p) { return definition(c, p.at("position")); });
  analysed("textDocument/diagnostic", [this](const FeatureContext& c, const Json& p) {
    // The analysis, and the export refusals shown with it (a refused export changes the result).
    std::string id = std::to_string(c.fa.seq);
    if (auto f = feedback_.find(c.fa.uri); f != feedback_.end() && f->second.export_seq > 0)
      id += "." + std::to_string(f->second.export_seq);
    if (p.value("previousResultId", "") == id) return Json{{"kind", "unchanged"}, {"resultId", id}};
    const OpenDoc* d = scheduler_.find(c.fa.uri);
    Json items = d ? diagnostics_for(*d) : file_diagnostics(c);
    return Json{{"kind", "full"}, {"resultId", id}, {"items", std::move(items)}};
  });

  // Typing must not wait: completion and signature help use the current text with the last
  // analysis (for imports and types), whatever its version.
  auto immediate =
      [this](const char* method,
             std::function<Json(const FeatureContext&, const std::string&, const Json&)> fn) {
        rpc_.on_request(method, [this, fn](const Json& p, const Context&) -> Json {
          std::string uri = p.at("textDocument").at("uri").get<std::string>();
          const OpenDoc* d = scheduler_.find(uri);
          if (!d) return nullptr;
          std::shared_ptr<const FileAnalysis> fa = d->analysis;
          if (!fa) {
            auto empty = std::make_shared<FileAnalysis>();
            empty->uri = uri;
            empty->path = d->doc.path;
            empty->text = d->doc.text;
            empty->outline = graphcore::outline_python(empty->path, *empty->text);
            empty->conv = std::make_unique<PositionConverter>(*empty->text, client_.encoding);
            fa = empty;
          }
          return fn(feature_context(*fa), *d->doc.text, p.at("position"));
        });
      };
  immediate("textDocument/completion", completion);
  immediate("textDocument/signatureHelp", signature_help);
}

void ProtocolServer::attach_commands() {
  rpc_.on_async_request("workspace/executeCommand", [this](const Json& p, const Context& ctx) {
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
      settings_.client.target = *t;
      for (auto& [uri, od] : scheduler_.documents()) scheduler_.schedule(uri, true);
      return ctx.reply({{"target", *t}});
    }
    if (command == "cellscope.visualizeGraph") {
      // arguments: [uri] | [uri, cellName] | [uri, {line, character}] (the cursor's Cell).
      if (args.empty() || !args[0].is_string()) {
        return ctx.error(
            RpcError(ErrorCode::kInvalidParams, "cellscope.visualizeGraph needs a document URI"));
      }
      std::string uri = args[0].get<std::string>();
      std::string cell = args.size() > 1 && args[1].is_string() ? args[1].get<std::string>() : "";
      // The graph view's server, started on first use; nullptr (the request failed) when it
      // cannot start.
      auto start_view = [&]() -> std::shared_ptr<server::view::ViewServer> {
        try {
          return view_.ensure();
        } catch (const std::exception& e) {
          ctx.error(RpcError(ErrorCode::kRequestFailed,
                             std::string("cannot start the graph view: ") + e.what()));
          return nullptr;
        }
      };
      // A model file (.mindir) is not a text document: the view imports it from the disk.
      if (!scheduler_.find(uri)) {
        std::string model;
        if (std::string why; !model_file_of(uri, &model, &why))
          return ctx.error(RpcError(ErrorCode::kInvalidParams, why));
        auto vs = start_view();
        if (!vs) return;
        vs->set_focus(model, cell);
        return ctx.reply({{"url", vs->url(model, cell)},
                          {"port", vs->port()},
                          {"token", vs->token()},
                          {"file", model},
                          {"cell", cell},
                          {"target", settings_.target()}});
      }
      int64_t line = -1;
      if (args.size() > 1 && args[1].is_object() && args[1].contains("line") &&
          args[1]["line"].is_number_integer())
        line = args[1]["line"].get<int64_t>();
      auto vs = start_view();
      if (!vs) return;
      scheduler_.with_analysis(
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
                       {"target", settings_.target()}});
          });
      return;
    }
    if (command == "cellscope.debugFocus") {
      // arguments: [DebugFocus as JSON] (the body of `cellscope dap`'s `cellscope.focus` event;
      // an empty node clears it). Passed to the graph views of its file.
      if (args.empty() || !args[0].is_object()) {
        return ctx.error(RpcError(ErrorCode::kInvalidParams,
                                  "cellscope.debugFocus needs a focus object {file, cell, node}"));
      }
      protocol::DebugFocus focus;
      std::string error;
      if (!protocol::from_json(args[0].dump(), &focus, &error))
        return ctx.error(RpcError(ErrorCode::kInvalidParams, "cellscope.debugFocus: " + error));
      if (!focus.node().empty() && !fs::path(focus.file()).is_absolute()) {
        return ctx.error(RpcError(ErrorCode::kInvalidParams,
                                  "cellscope.debugFocus: `file` must be an absolute path"));
      }
      const size_t views = view_.set_debug_focus(focus);
      return ctx.reply({{"file", focus.file()}, {"node", focus.node()}, {"views", views}});
    }
    if (command == "cellscope.trainStep" || command == "cellscope.drift" ||
        command == "cellscope.trainReset") {
      // arguments: [body, {session}]: the body of `cellscope dap`'s `cellscope.trainStep` event
      // (view.proto's TrainStep), of its `cellscope.drift` event (PrecisionDrift), or {file} for
      // trainReset (a debug session of the file started). Passed to the graph views of the file;
      // the view server is started if need be, so that a view opened later gets the run.
      if (args.empty() || !args[0].is_object()) {
        return ctx.error(
            RpcError(ErrorCode::kInvalidParams, command + " needs an object with `file`"));
      }
      Json body = args[0];
      const std::string session = session_of(args);
      const auto file_it = body.find("file");
      if (file_it == body.end() || !file_it->is_string() ||
          !fs::path(file_it->get<std::string>()).is_absolute()) {
        return ctx.error(
            RpcError(ErrorCode::kInvalidParams, command + ": `file` must be an absolute path"));
      }
      try {
        size_t views = 0;
        if (command == "cellscope.trainReset") {
          views = view_.train_reset(file_it->get<std::string>(), session);
        } else if (command == "cellscope.trainStep") {
          nan_for_null(&body, {"loss", "lr", "gradNorm", "lossScale", "stepMs", "samplesPerSec"});
          protocol::TrainStep step;
          if (std::string error; !protocol::from_json(body.dump(), &step, &error))
            return ctx.error(RpcError(ErrorCode::kInvalidParams, command + ": " + error));
          views = view_.train_step(step, session);
        } else {
          nan_for_null(&body, {"threshold", "top1Agreement", "accuracyFp32", "accuracyPrecision"},
                       "layers", {"maxAbs", "maxRel", "cosine"});
          protocol::PrecisionDrift drift;
          if (std::string error; !protocol::from_json(body.dump(), &drift, &error))
            return ctx.error(RpcError(ErrorCode::kInvalidParams, command + ": " + error));
          views = view_.train_drift(drift, session);
        }
        return ctx.reply({{"file", file_it->get<std::string>()}, {"views", views}});
      } catch (const std::exception& e) {
        return ctx.error(RpcError(ErrorCode::kRequestFailed,
                                  std::string("cannot start the graph view: ") + e.what()));
      }
    }
    if (command == "cellscope.deviceTelemetry") {
      // arguments: [DeviceSample as JSON, {session}]: one telemetry line of `cellscope deploy
      // --watch` of the model deployed from `file`, with the watch's id. Passed to the graph views
      // of the file; the view server is started if need be, so that a view opened later gets it.
      if (args.empty() || !args[0].is_object()) {
        return ctx.error(
            RpcError(ErrorCode::kInvalidParams, command + " needs an object with `file`"));
      }
      protocol::DeviceSample sample;
      if (std::string error; !protocol::from_json(args[0].dump(), &sample, &error))
        return ctx.error(RpcError(ErrorCode::kInvalidParams, command + ": " + error));
      if (!fs::path(sample.file()).is_absolute()) {
        return ctx.error(
            RpcError(ErrorCode::kInvalidParams, command + ": `file` must be an absolute path"));
      }
      try {
        const size_t views = view_.device_sample(sample, session_of(args));
        return ctx.reply({{"file", sample.file()}, {"views", views}});
      } catch (const std::exception& e) {
        return ctx.error(RpcError(ErrorCode::kRequestFailed,
                                  std::string("cannot start the graph view: ") + e.what()));
      }
    }
    if (command == "cellscope.graphDocument") {
      // The semantic graph document of an open file as JSON (for clients without the view).
      if (args.empty() || !args[0].is_string()) {
        return ctx.error(
            RpcError(ErrorCode::kInvalidParams, "cellscope.graphDocument needs a document URI"));
      }
      std::string uri = args[0].get<std::string>();
      std::string cell = args.size() > 1 && args[1].is_string() ? args[1].get<std::string>() : "";
      if (!scheduler_.find(uri)) {
        // A model file (.mindir): imported from the disk on a worker, as `cellscope graph` does.
        std::string model;
        if (std::string why; !model_file_of(uri, &model, &why))
          return ctx.error(RpcError(ErrorCode::kInvalidParams, why));
        graphcore::AnalysisOptions options = settings_.options_for(model);
        if (!cell.empty()) options.cell = cell;
        std::weak_ptr<ProtocolServer> weak = weak_from_this();
        scheduler_.submit([weak, ctx, model, options, &io = io_] {
          std::shared_ptr<Json> out;
          std::string error;
          try {
            graphcore::DiskSourceProvider disk;
            auto built =
                server::build_graph_document(model, options, server::PipelineOptions{}, disk);
            out = std::make_shared<Json>(
                Json::parse(protocol::to_json(built.document, {.pretty = false})));
          } catch (const std::exception& e) {
            error = rpc::describe_exception(e);
          }
          asio::post(io, [weak, ctx, out, error] {
            if (!weak.lock() || ctx.replied()) return;
            if (out) return ctx.reply(std::move(*out));
            ctx.error(RpcError(ErrorCode::kRequestFailed, error));
          });
        });
        return;
      }
      scheduler_.with_analysis(
          uri, [this, ctx, cell](const std::shared_ptr<const FileAnalysis>& fa) {
            if (!fa)
              return ctx.error(RpcError(ErrorCode::kRequestFailed, "the document was closed"));
            try {
              ctx.reply(graph_document_json(feature_context(*fa), cell, settings_.target()));
            } catch (const std::exception& e) {
              ctx.error(RpcError(ErrorCode::kInternalError, rpc::describe_exception(e, "params")));
            }
          });
      return;
    }
    if (command == "cellscope.export") return start_export(p, ctx);
    ctx.error(RpcError(ErrorCode::kInvalidParams, "unknown command `" + command + "`"));
  });
  // The user pressed Cancel on an export's progress notification.
  rpc_.on_notification("window/workDoneProgress/cancel", [this](const Json& p) {
    const Json& token = p.at("token");
    const std::string key = token.is_string() ? token.get<std::string>() : token.dump();
    for (auto& [id, job] : exports_) {
      if (!job.progress_token.empty() && job.progress_token == key) job.cancel->store(true);
    }
  });
}

// ---- model files ----

// The path of a model file `uri` names that the graph commands import from the disk instead of
// an open document (a .mindir: graphcore/mindir_import.h); false with `why` for anything else.
bool ProtocolServer::model_file_of(const std::string& uri, std::string* path, std::string* why) {
  auto p = uri_to_path(uri);
  if (!p || !graphcore::is_mindir_path(*p)) {
    *why = uri + " is not open";
    return false;
  }
  std::error_code ec;
  if (!fs::is_regular_file(*p, ec)) {
    *why = *p + ": no such model file";
    return false;
  }
  *path = fs::path(*p).lexically_normal().string();
  return true;
}

// ---- cellscope.export ----

namespace {

// "file:line:col: message [code]" for a command result (1-based, byte columns as the CLI prints).
std::string located_text(const graphcore::Diagnostic& d, const std::string& fallback) {
  return (d.file.empty() ? fallback : d.file) + ":" + std::to_string(d.range.start.line + 1) + ":" +
         std::to_string(d.range.start.column + 1) + ": " + d.message +
         (d.code.empty() ? "" : " [" + d.code + "]");
}

const char* format_title(const std::string& format) {
  return format == "onnx" ? "Export ONNX" : "Export MindIR";
}

}  // namespace

// arguments: [{uri, format: "mindir"|"onnx", position?: {line, character} | cell?: NAME,
// output?: PATH (absolute, or relative to the file's folder), checkpoint?: PATH}]. The Cell is
// `cell`, else the root Cell at `position`, else the file's first root (the one
// mindspore_config.json's inputs name when it names one). Answers {status: "written", path,
// format, cell, nodes, bytes, summary} | {status: "refused", format, cell, messages, diagnostics}
// | {status: "cancelled"}; refusals are also published as the file's diagnostics.
void ProtocolServer::start_export(const Json& params, const Context& ctx) {
  Json args = params.value("arguments", Json::array());
  if (args.empty() || !args[0].is_object() || !args[0].contains("uri") ||
      !args[0]["uri"].is_string()) {
    return ctx.error(RpcError(ErrorCode::kInvalidParams,
                              "cellscope.export needs {uri, format, position | cell, output}"));
  }
  const Json a = args[0];
  const std::string uri = a["uri"].get<std::string>();
  const std::string format = a.contains("format") && a["format"].is_string()
                                 ? a["format"].get<std::string>()
                                 : std::string("mindir");
  if (format != "mindir" && format != "onnx") {
    return ctx.error(RpcError(ErrorCode::kInvalidParams,
                              "cellscope.export: format must be mindir or onnx, not " + format));
  }
  auto string_arg = [&a](const char* key) {
    return a.contains(key) && a[key].is_string() ? a[key].get<std::string>() : std::string();
  };
  const std::string cell_arg = string_arg("cell");
  const std::string output_arg = string_arg("output");
  const std::string checkpoint = string_arg("checkpoint");
  int64_t line = -1;
  if (a.contains("position") && a["position"].is_object() && a["position"].contains("line") &&
      a["position"]["line"].is_number_integer())
    line = a["position"]["line"].get<int64_t>();
  if (!scheduler_.find(uri))
    return ctx.error(RpcError(ErrorCode::kInvalidParams, uri + " is not open"));
  // `call`: the position of an ms.export call (the "Export now" lens): its recorded inputs.
  std::optional<Json> call_position;
  if (a.contains("call") && a["call"].is_object()) call_position = a["call"];
  std::optional<Json> client_token;
  if (params.contains("workDoneToken")) client_token = params["workDoneToken"];

  scheduler_.with_analysis(uri, [this, ctx, uri, format, cell_arg, output_arg, checkpoint, line,
                                 call_position,
                                 client_token](const std::shared_ptr<const FileAnalysis>& fa) {
    if (!fa) return ctx.error(RpcError(ErrorCode::kRequestFailed, "the document was closed"));
    if (ctx.replied()) return;
    const graphcore::ExportCall* export_call = nullptr;
    if (call_position) {
      const graphcore::Position at = fa->conv->from_lsp(*call_position);
      for (const auto& e : fa->result.exports) {
        if (e.call.file == fa->path && e.call.range.start == at) export_call = &e;
      }
      std::string why;
      if (!export_call) {
        why = "no ms.export call is at line " + std::to_string(at.line + 1) + " of " +
              fs::path(fa->path).filename().string() + " any more";
      } else if (!export_call->unfollowed.empty()) {
        why = "the ms.export call at line " + std::to_string(at.line + 1) +
              " cannot be followed: " + export_call->unfollowed;
      }
      if (!why.empty()) {
        return ctx.reply({{"status", "refused"},
                          {"format", format},
                          {"cell", cell_arg},
                          {"messages", Json::array({why})}});
      }
    }
    // The Cell: named; under the cursor; without a position, the root whose inputs
    // mindspore_config.json gives by Cell name; else the file's first root.
    std::string cell = cell_arg;
    if (cell.empty() && export_call) cell = export_call->cell;
    if (cell.empty() && line < 0) {
      for (const auto& c : fa->result.cells) {
        const auto& named = settings_.project().inputs;
        if (named.count(c.class_name) || named.count(c.name)) {
          cell = c.name;
          break;
        }
      }
    }
    if (cell.empty()) cell = cell_at(*fa, line);
    if (cell.empty()) {
      return ctx.reply({{"status", "refused"},
                        {"format", format},
                        {"messages", Json::array({"no Cell to export in " +
                                                  fs::path(fa->path).filename().string()})}});
    }
    const fs::path file(fa->path);
    fs::path output =
        output_arg.empty() ? server::default_export_path(file, cell, format) : fs::path(output_arg);
    if (output.is_relative()) output = file.parent_path() / output;
    std::string why;
    if (!server::resolve_export_format(format, output, &why)) {
      return ctx.reply({{"status", "refused"},
                        {"format", format},
                        {"cell", cell},
                        {"messages", Json::array({why})}});
    }
    server::ModelExportRequest request;
    request.file = file;
    request.format = format;
    request.output = output.lexically_normal();
    request.checkpoint = checkpoint;
    request.analysis = settings_.options_with_configs_for(fa->path);
    request.analysis.cell = cell;
    if (export_call) {
      // The call's inputs, as `cellscope export FILE` takes them; the config's must agree.
      request.analysis.inputs = export_call->inputs;
      request.inputs_given = true;
      request.export_call = export_call->call;
      if (!settings_.config_file().empty())
        request.project = std::make_shared<const server::ProjectConfig>(settings_.project());
    }
    if (request.analysis.inputs.empty()) {
      request.analysis.inputs = settings_.project().inputs_for(cell, fa->path);
    }

    const uint64_t id = ++export_counter_;
    ExportJob& job = exports_[id];
    std::shared_ptr<std::atomic<bool>> cancel = job.cancel;
    request.cancel = cancel.get();
    ctx.token().on_cancel([cancel] { cancel->store(true); });
    const std::string title = std::string("Cellscope: ") + format_title(format);
    const std::string begin_message = cell + " → " + request.output.filename().string();
    std::weak_ptr<ProtocolServer> weak = weak_from_this();
    // Progress reports are posted to the I/O thread; they are sent once `begin` was.
    request.progress = [weak, id, &io = io_](std::string_view stage, int percent) {
      asio::post(io, [weak, id, what = std::string(stage), percent] {
        if (auto self = weak.lock()) {
          self->export_progress(id,
                                {{"kind", "report"}, {"message", what}, {"percentage", percent}});
        }
      });
    };
    auto begin = [this, id, title, begin_message](const std::string& token) {
      auto it = exports_.find(id);
      if (it == exports_.end()) return;
      it->second.progress_token = token;
      it->second.progress_begun = true;
      rpc_.notify("$/progress", {{"token", token},
                                 {"value",
                                  {{"kind", "begin"},
                                   {"title", title},
                                   {"message", begin_message},
                                   {"cancellable", true},
                                   {"percentage", 0}}}});
      if (!it->second.last_report.is_null()) export_progress(id, it->second.last_report);
    };
    if (client_token) {
      begin(client_token->is_string() ? client_token->get<std::string>() : client_token->dump());
    } else if (client_.work_done_progress) {
      const std::string token = "cellscope-export-" + std::to_string(id);
      rpc_.call(
          "window/workDoneProgress/create", {{"token", token}},
          [weak, begin, token](const std::optional<Json>&, const std::optional<RpcError>& err) {
            if (auto self = weak.lock(); self && !err) begin(token);
          });
    }

    // What the client is told at the end (I/O thread).
    job.finish = [this, ctx, uri, format, cell](const server::ModelExportOutcome& o) {
      OpenDoc* d = scheduler_.find(uri);
      DocumentFeedback& f = feedback_[uri];
      const bool had = !f.export_diagnostics.empty();
      f.export_diagnostics.clear();
      Json result;
      if (o.status == server::ModelExportOutcome::Status::kWritten) {
        result = {{"status", "written"}, {"path", o.output}, {"format", format},
                  {"cell", o.cell},      {"nodes", o.nodes}, {"bytes", o.bytes},
                  {"summary", o.summary}};
      } else if (o.status == server::ModelExportOutcome::Status::kCancelled) {
        result = {{"status", "cancelled"}, {"format", format}, {"cell", cell}};
      } else {
        Json messages = Json::array();
        for (const auto& diag : o.diagnostics)
          messages.push_back(located_text(diag, o.analysed_file));
        for (const auto& e : o.errors) messages.push_back(e);
        size_t shown = 0;
        for (const auto& diag : o.diagnostics) {
          if (d && (diag.file.empty() ? o.analysed_file : diag.file) == d->doc.path) {
            f.export_diagnostics.push_back(diag);
            if (f.export_diagnostics.back().file.empty())
              f.export_diagnostics.back().file = d->doc.path;
            ++shown;
          }
        }
        f.export_version = d ? d->doc.version : -1;
        result = {{"status", "refused"},
                  {"format", format},
                  {"cell", o.cell.empty() ? cell : o.cell},
                  {"messages", std::move(messages)},
                  {"diagnostics", shown}};
      }
      if (had || !f.export_diagnostics.empty()) ++f.export_seq;
      if (d && (had || !f.export_diagnostics.empty())) {
        publish(*d, false);
        if (client_.pull_diagnostics && client_.diagnostic_refresh)
          rpc_.call("workspace/diagnostic/refresh", nullptr, [](auto, auto) {});
      }
      if (!ctx.replied()) ctx.reply(std::move(result));
    };

    // The export runs on its own thread (an export of ResNet-50 takes about a second; the
    // analysis worker and the I/O thread go on), over a snapshot of the open documents.
    job.thread = std::thread([weak, id, &io = io_, request = std::move(request),
                              overlay = scheduler_.overlay()]() mutable {
      SnapshotSources sources(std::move(overlay));
      auto outcome =
          std::make_shared<server::ModelExportOutcome>(server::export_model(request, sources));
      asio::post(io, [weak, id, outcome] {
        if (auto self = weak.lock()) self->finish_export(id, *outcome);
      });
    });
  });
}

void ProtocolServer::export_progress(uint64_t id, const Json& value) {
  auto it = exports_.find(id);
  if (it == exports_.end()) return;
  if (!it->second.progress_begun) {
    it->second.last_report = value;  // sent after `begin` (the client may answer create late)
    return;
  }
  rpc_.notify("$/progress", {{"token", it->second.progress_token}, {"value", value}});
}

void ProtocolServer::finish_export(uint64_t id, const server::ModelExportOutcome& outcome) {
  auto it = exports_.find(id);
  if (it == exports_.end()) return;
  ExportJob job = std::move(it->second);
  exports_.erase(it);
  if (job.thread.joinable()) job.thread.join();  // it has posted its last message
  if (job.progress_begun) {
    std::string message;
    switch (outcome.status) {
      case server::ModelExportOutcome::Status::kWritten:
        message = "wrote " + fs::path(outcome.output).filename().string();
        break;
      case server::ModelExportOutcome::Status::kCancelled:
        message = "cancelled";
        break;
      default:
        message = "refused: nothing written";
    }
    rpc_.notify("$/progress", {{"token", job.progress_token},
                               {"value", {{"kind", "end"}, {"message", message}}}});
  }
  if (job.finish) job.finish(outcome);
}

void ProtocolServer::stop_exports() {
  for (auto& [id, job] : exports_) job.cancel->store(true);
  for (auto& [id, job] : exports_) {
    if (job.thread.joinable()) job.thread.join();
  }
  exports_.clear();
}

}  // namespace cellscope::lsp
