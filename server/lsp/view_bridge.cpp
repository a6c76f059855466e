#include "lsp/view_bridge.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <filesystem>
#include <map>

#include "compare_base.h"
#include "graphcore/mindir_import.h"
#include "graphcore/outline.h"
#include "pipeline.h"
#include "rpc/jsonrpc.h"

namespace cellscope::lsp {

namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace {

// What every view shows: the hardware layer (so all three layers).
server::PipelineOptions view_pipeline() {
  server::PipelineOptions pipeline;
  pipeline.layer = "hardware";
  return pipeline;
}

// The view's document for an analysis of `path` (hardware layer: all three layers), on the
// worker thread.
void publish_view(server::view::ViewServer& vs, const std::string& path,
                  const graphcore::AnalysisResult& result,
                  const graphcore::AnalysisOptions& analysis, graphcore::SourceProvider& sources) {
  try {
    auto built = server::graph_document_of(result, analysis, view_pipeline(), sources);
    vs.update(path, std::move(built.document), built.compiled, built.ms);
  } catch (const std::exception& e) {
    spdlog::error("view: building the document of {} failed: {}", path, e.what());
    vs.publish_status(path, "failed",
                      "Cellscope could not build the graph: " + rpc::describe_exception(e));
  }
}

// The view's document for a fresh analysis of `path` with `options` (a file not open in the
// editor, or one whose views set their own input shapes), on the worker thread.
void publish_analysis(server::view::ViewServer& vs, const std::string& path,
                      const graphcore::AnalysisOptions& options,
                      graphcore::SourceProvider& sources) {
  auto built = server::build_graph_document(path, options, view_pipeline(), sources);
  vs.update(path, std::move(built.document), built.compiled, built.ms);
}

}  // namespace

ViewBridge::ViewBridge(asio::io_context& io, AnalysisScheduler& scheduler)
    : io_(io), scheduler_(scheduler) {}

std::shared_ptr<server::view::ViewServer> ViewBridge::current() {
  std::lock_guard lock(mutex_);
  return view_server_;
}

void ViewBridge::stop() {
  if (auto vs = current()) vs->stop();
}

void ViewBridge::worker_analysed(const Job& job, const FileAnalysis& fa,
                                 graphcore::SourceProvider& sources) {
  auto vs = current();
  if (!vs || !vs->watching(job.path)) return;
  auto inputs = input_override(job.path);
  if (!inputs) return publish_view(*vs, job.path, fa.result, job.options, sources);
  // The views set their own input shapes: their document is an analysis of the same snapshot
  // with those (the editor's diagnostics keep the settings').
  graphcore::AnalysisOptions options = job.options;
  options.inputs = std::move(*inputs);
  options.record_facts = false;
  options.outline = false;
  publish_analysis(*vs, job.path, options, sources);
}

graphcore::AnalysisOptions ViewBridge::view_options(const std::string& path) {
  graphcore::AnalysisOptions options = hooks_.options_for(path);
  if (auto inputs = input_override(path)) options.inputs = std::move(*inputs);
  return options;
}

std::optional<std::vector<graphcore::TensorType>> ViewBridge::input_override(
    const std::string& path) {
  std::lock_guard lock(mutex_);
  auto it = input_overrides_.find(path);
  if (it == input_overrides_.end()) return std::nullopt;
  return it->second;
}

void ViewBridge::set_inputs(const std::string& path, std::vector<graphcore::TensorType> inputs) {
  {
    std::lock_guard lock(mutex_);
    if (inputs.empty()) {
      input_overrides_.erase(path);
    } else {
      input_overrides_[path] = std::move(inputs);
    }
  }
  auto vs = current();
  if (!vs) return;
  hooks_.log(3, "graph view: input shapes of " + path + " set from the view");
  Overlay overlay = scheduler_.overlay();
  rebuild_from_disk(vs, path, overlay);
  // The last commit's graph with the same input shapes (another file keeps its own).
  if (auto it = compares_.find(path); it != compares_.end() && server::is_head_spec(it->second))
    rebuild_base(vs, path, overlay);
}

void ViewBridge::set_compare(const std::string& path, const std::string& spec) {
  auto vs = current();
  if (!vs) return;
  if (spec.empty()) {
    if (compares_.erase(path) > 0) hooks_.log(3, "graph view: stopped comparing " + path);
    vs->stop_comparing(path);
    return;
  }
  compares_[path] = spec;
  hooks_.log(3, "graph view: comparing " + path + " with " + spec);
  rebuild_base(vs, path, scheduler_.overlay());
}

void ViewBridge::rebuild_base(const std::shared_ptr<server::view::ViewServer>& vs,
                              const std::string& path, const Overlay& overlay) {
  const auto it = compares_.find(path);
  if (it == compares_.end()) return;
  const std::string spec = it->second;
  const protocol::CompareBase base = server::describe_base(spec, path);
  const uint64_t generation = vs->compare_pending(path, base);
  // The options are the settings' (read here, on the I/O thread): for HEAD the file's own, with
  // the views' input shapes; for another file that file's.
  graphcore::AnalysisOptions own = view_options(path);
  graphcore::AnalysisOptions other;
  if (base.kind() == "file") other = hooks_.options_for(base.file());
  scheduler_.submit(
      [vs, path, spec, generation, own = std::move(own), other = std::move(other), overlay] {
        SnapshotSources sources(overlay);
        auto built = server::build_base_document(
            spec, path, [&](const std::string& p) { return p == path ? own : other; },
            view_pipeline(), sources);
        if (built.error.empty()) {
          spdlog::info("view: the base {} of {} analysed in {:.1f} ms", built.base.label(), path,
                       built.ms);
        }
        vs->set_compare_base(path, generation, built.base, std::move(built.document), built.error);
      });
}

void ViewBridge::subscribed(const std::string& path) {
  auto vs = current();
  if (!vs) return;
  Overlay overlay = scheduler_.overlay();
  for (auto& [uri, d] : scheduler_.documents()) {
    if (d.doc.path != path) continue;
    // Input shapes the views set: an analysis of the snapshot with them.
    if (input_override(path)) return rebuild_from_disk(vs, path, std::move(overlay));
    if (d.up_to_date()) {
      std::shared_ptr<const FileAnalysis> fa = d.analysis;
      auto options = hooks_.options_for(path);
      scheduler_.submit([vs, fa, options, overlay] {
        SnapshotSources sources(overlay);
        publish_view(*vs, fa->path, fa->result, options, sources);
      });
    } else {
      scheduler_.schedule(uri, true);  // the analysis publishes to the view when it is done
    }
    return;
  }
  rebuild_from_disk(vs, path, std::move(overlay));
}

// From the snapshot of the open documents, else the disk, on the worker (a file not open in the
// editor, or one whose views set their own input shapes).
void ViewBridge::rebuild_from_disk(const std::shared_ptr<server::view::ViewServer>& vs,
                                   const std::string& path, Overlay overlay) {
  auto options = view_options(path);
  scheduler_.submit([vs, path, options, overlay = std::move(overlay)] {
    SnapshotSources sources(overlay);
    publish_analysis(*vs, path, options, sources);
  });
}

void ViewBridge::settings_changed() {
  auto vs = current();
  if (!vs) return;
  Overlay overlay = scheduler_.overlay();
  for (const std::string& file : vs->watched_files()) {
    // An open file is re-analysed by the scheduler, which publishes to its views.
    if (!scheduler_.text_of(file)) rebuild_from_disk(vs, file, overlay);
  }
  // The bases follow the settings (the target, the MindSpore version, the input shapes).
  for (const auto& [file, spec] : compares_) rebuild_base(vs, file, overlay);
}

std::shared_ptr<server::view::ViewServer> ViewBridge::ensure() {
  if (auto vs = current()) return vs;
  server::view::ServerOptions options;
  options.editor = true;
  server::view::Handlers handlers;
  std::weak_ptr<ViewBridge> weak = weak_from_this();
  handlers.allow_file = [](const std::string& file) -> std::string {
    const fs::path p(file);
    std::error_code ec;
    if (!p.is_absolute()) return "file= must be an absolute path";
    // Python models, and model files the view imports (.mindir: an editor opened one).
    if (p.extension() != ".py" && !graphcore::is_mindir_path(p))
      return file + " is neither a Python file nor a .mindir";
    if (!fs::is_regular_file(p, ec)) return "no such file: " + file;
    return "";
  };
  handlers.subscribed = [weak](const std::string& file) {
    if (auto self = weak.lock()) {
      asio::post(self->io_, [weak, file] {
        if (auto s = weak.lock()) s->subscribed(file);
      });
    }
  };
  handlers.reveal = [weak](const protocol::RevealRequest& reveal) {
    if (auto self = weak.lock()) {
      asio::post(self->io_, [weak, reveal] {
        if (auto s = weak.lock()) s->hooks_.reveal(reveal);
      });
    }
  };
  handlers.inputs = [weak](const std::string& file, std::vector<graphcore::TensorType> inputs) {
    if (auto self = weak.lock()) {
      asio::post(self->io_, [weak, file, inputs = std::move(inputs)]() mutable {
        if (auto s = weak.lock()) s->set_inputs(file, std::move(inputs));
      });
    }
  };
  handlers.compare = [weak](const std::string& file, const std::string& base) {
    if (auto self = weak.lock()) {
      asio::post(self->io_, [weak, file, base] {
        if (auto s = weak.lock()) s->set_compare(file, base);
      });
    }
  };
  auto vs = std::make_shared<server::view::ViewServer>(options, handlers);
  vs->start();
  hooks_.log(3, "graph view server listening on 127.0.0.1:" + std::to_string(vs->port()));
  std::lock_guard lock(mutex_);
  view_server_ = vs;
  if (debug_focus_) vs->set_debug_focus(*debug_focus_);
  return vs;
}

size_t ViewBridge::set_debug_focus(const protocol::DebugFocus& focus) {
  std::shared_ptr<server::view::ViewServer> vs;
  {
    std::lock_guard lock(mutex_);
    if (focus.node().empty()) {
      debug_focus_.reset();
    } else {
      debug_focus_ = focus;
    }
    vs = view_server_;
  }
  return vs ? vs->set_debug_focus(focus) : 0;
}

size_t ViewBridge::train_step(const protocol::TrainStep& step, const std::string& session) {
  return ensure()->train_step(step, session);
}

size_t ViewBridge::train_drift(const protocol::PrecisionDrift& drift, const std::string& session) {
  return ensure()->train_drift(drift, session);
}

size_t ViewBridge::train_reset(const std::string& file, const std::string& session) {
  return ensure()->train_reset(file, session);
}

size_t ViewBridge::device_sample(const protocol::DeviceSample& sample, const std::string& session) {
  return ensure()->device_sample(sample, session);
}

std::string cell_at(const FileAnalysis& fa, int64_t line) {
  if (fa.result.cells.empty()) return "";
  if (line < 0) return fa.result.cells.front().name;
  const auto l = static_cast<uint32_t>(line);
  auto holds = [l](const graphcore::SourceRange& r) {
    return l >= r.start.line && l <= r.end.line;
  };
  // A factory root (`resnet50()`): its own `def`, from the outline.
  for (const auto& c : fa.result.cells) {
    if (c.file != fa.path || !c.name.ends_with("()")) continue;
    const auto* fn = graphcore::find_symbol(fa.outline.symbols,
                                            std::string_view(c.name).substr(0, c.name.size() - 2));
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

}  // namespace cellscope::lsp
