#include "view/view_command.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "compare_base.h"
#include "files.h"
#include "graphcore/analysis.h"
#include "project_config.h"
#include "view/view_server.h"

namespace cellscope::server::view {

namespace fs = std::filesystem;

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int /*signal*/) { g_stop = 1; }

// Watches the directories of a set of files with inotify (editors often save by writing a new
// file and renaming it over the old one, so the directory is watched, not the file).
class DirectoryWatcher {
 public:
  DirectoryWatcher() : fd_(inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    if (fd_ < 0) spdlog::warn("view: inotify unavailable; changes on disk will not be followed");
  }
  ~DirectoryWatcher() {
    if (fd_ >= 0) close(fd_);
  }
  DirectoryWatcher(const DirectoryWatcher&) = delete;
  DirectoryWatcher& operator=(const DirectoryWatcher&) = delete;

  void watch(const std::vector<std::string>& files) {
    files_.clear();
    for (const auto& f : files) {
      std::error_code ec;
      auto path = fs::absolute(f, ec);
      if (ec) continue;
      files_.insert(path.lexically_normal().string());
      const auto dir = path.parent_path().lexically_normal().string();
      if (fd_ < 0 || dirs_.count(dir)) continue;
      const int wd = inotify_add_watch(
          fd_, dir.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MODIFY);
      if (wd >= 0) {
        dirs_[dir] = wd;
        wd_dirs_[wd] = dir;
      } else {
        spdlog::warn("view: cannot watch {}", dir);
      }
    }
  }

  // Waits up to `timeout_ms`; true when a watched file changed.
  bool wait(int timeout_ms) {
    if (fd_ < 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
      return false;
    }
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return false;
    bool changed = false;
    alignas(inotify_event) char buf[16 * 1024];
    for (;;) {
      const ssize_t n = read(fd_, buf, sizeof buf);
      if (n <= 0) break;
      for (ssize_t off = 0; off < n;) {
        const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
        off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
        if (ev->len == 0) continue;
        const auto it = wd_dirs_.find(ev->wd);
        if (it == wd_dirs_.end()) continue;
        const auto path = (fs::path(it->second) / ev->name).lexically_normal().string();
        if (files_.count(path)) changed = true;
      }
    }
    return changed;
  }

 private:
  int fd_;
  std::set<std::string> files_;
  std::map<std::string, int> dirs_;
  std::map<int, std::string> wd_dirs_;
};

void open_in_browser(const std::string& url) {
  if (std::system("command -v xdg-open >/dev/null 2>&1") != 0) {
    std::cerr << "cellscope: --open: xdg-open is not installed; open the URL yourself\n";
    return;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    execlp("xdg-open", "xdg-open", url.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
}

// The options of another model file compared with the served one: the command line's target,
// MindSpore version, root and config files, but that file's own Cell, entry and inputs (its
// mindspore_config.json's, else what the analysis finds).
graphcore::AnalysisOptions other_file_options(const graphcore::AnalysisOptions& served,
                                              const std::string& root, const std::string& file) {
  graphcore::AnalysisOptions o = served;
  o.cell.reset();
  o.entries.clear();
  o.inputs.clear();
  std::optional<fs::path> stop;
  if (!root.empty()) stop = fs::path(root);
  const fs::path dir = fs::path(file).parent_path();
  const ProjectConfig config = load_project_config(dir.empty() ? fs::path(".") : dir, stop);
  o.inputs = config.inputs_for("", file);
  o.cell_inputs = config.inputs;
  return o;
}

}  // namespace

int run_view(const ViewCommandOptions& options) {
  GraphOptions graph = options.graph;
  graph.pipeline.layer = "hardware";
  graphcore::AnalysisOptions analysis;
  if (!graph_analysis_options(graph, &analysis)) return kExitUsage;
  analysis.parse_cache = std::make_shared<graphcore::ParseCache>();

  const std::string served = graph.file;
  ServerOptions server_options;
  server_options.port = options.port;
  server_options.max_connections = options.max_connections;
  server_options.focus_cell = graph.cell.value_or("");
  // Tests lower the size above which Cells are sent lazily (view/delta.h's kLazyThreshold).
  if (const char* lazy = std::getenv("CELLSCOPE_VIEW_LAZY_THRESHOLD"); lazy != nullptr && *lazy)
    server_options.lazy_threshold = std::strtoull(lazy, nullptr, 10);
  Handlers handlers;
  handlers.allow_file = [served](const std::string& file) -> std::string {
    return file == served ? "" : "this server shows " + served + " only";
  };
  // Input shapes a view set (view.proto's InputsRequest), taken by the loop below.
  std::mutex inputs_mutex;
  std::optional<std::vector<graphcore::TensorType>> view_inputs;
  handlers.inputs = [&](const std::string&, std::vector<graphcore::TensorType> inputs) {
    std::lock_guard lock(inputs_mutex);
    view_inputs = std::move(inputs);
  };
  const std::vector<graphcore::TensorType> command_inputs = analysis.inputs;
  // A view's CompareRequest ("" stops comparing), taken by the loop below.
  std::optional<std::string> view_compare;
  handlers.compare = [&](const std::string&, const std::string& base) {
    std::lock_guard lock(inputs_mutex);
    view_compare = base;
  };
  ViewServer server(server_options, handlers);
  try {
    server.start();
  } catch (const std::exception& e) {
    std::cerr << "cellscope: error: " << e.what() << "\n";
    return kExitUsage;
  }

  graphcore::DiskSourceProvider disk;
  const PipelineOptions pipeline = pipeline_options(graph);
  auto build = build_graph_document(graph.file, analysis, pipeline, disk);
  std::vector<std::string> files(build.document.files().begin(), build.document.files().end());
  server.update(served, std::move(build.document), build.compiled, build.ms);
  spdlog::info("view: {} analysed in {:.1f} ms", served, build.ms);

  // The comparison's base (--compare-with, or a view's CompareRequest), analysed once: HEAD with
  // the served file's options (the view's input shapes included), another file with its own.
  // Two steps: the views show the comparison pending (and no document is compared with the old
  // base meanwhile), then the base is analysed and compared.
  std::string compare_spec = options.compare_with;
  // A stop asked for from here on (Ctrl+C, SIGTERM) ends the loop below cleanly, also one that
  // comes as soon as the URL is printed, before the loop has started.
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  const auto start_base = [&] {
    return server.compare_pending(served, describe_base(compare_spec, served));
  };
  const auto finish_base = [&](uint64_t generation) {
    auto built = build_base_document(
        compare_spec, served,
        [&](const std::string& p) {
          return p == served ? analysis : other_file_options(analysis, graph.common.root, p);
        },
        pipeline, disk);
    if (built.error.empty()) {
      spdlog::info("view: comparing with {} (analysed in {:.1f} ms)", built.base.label(), built.ms);
    } else {
      std::cerr << "cellscope: cannot compare with " << compare_spec << ": " << built.error << "\n";
    }
    server.set_compare_base(served, generation, built.base, std::move(built.document), built.error);
  };
  if (!compare_spec.empty()) finish_base(start_base());

  const std::string url = server.url(served, graph.cell.value_or(""));
  std::cout << "Cellscope view of " << display_path(served) << ": " << url << "\n"
            << "Serving on 127.0.0.1 only; the token in the URL is required. Press Ctrl+C to "
               "stop.\n";
  std::cout.flush();
  if (options.open) open_in_browser(url);

  DirectoryWatcher watcher;
  if (files.empty()) files.push_back(served);
  watcher.watch(files);
  while (g_stop == 0) {
    bool changed = watcher.wait(200);
    bool inputs_changed = false;
    std::optional<std::string> compare;
    {
      std::lock_guard lock(inputs_mutex);
      compare.swap(view_compare);
      if (view_inputs) {
        // An empty list: back to the command line's inputs.
        if (view_inputs->empty()) {
          analysis.inputs = command_inputs;
        } else {
          analysis.inputs = std::move(*view_inputs);
        }
        view_inputs.reset();
        changed = inputs_changed = true;
      }
    }
    // A HEAD base is analysed again with the new input shapes (after the new document).
    std::optional<uint64_t> base_changed;
    if (inputs_changed && !compare_spec.empty() && is_head_spec(compare_spec))
      base_changed = start_base();
    if (compare) {
      compare_spec = *compare;
      if (compare_spec.empty()) {
        server.stop_comparing(served);
      } else {
        finish_base(start_base());
      }
    }
    if (!changed) continue;
    // Coalesce the burst of events one save makes.
    while (watcher.wait(15)) {
    }
    server.publish_status(served, "analysing");
    build = build_graph_document(graph.file, analysis, pipeline, disk);
    spdlog::info("view: {} re-analysed in {:.1f} ms", served, build.ms);
    std::vector<std::string> now(build.document.files().begin(), build.document.files().end());
    server.update(served, std::move(build.document), build.compiled, build.ms);
    if (now.empty()) now.push_back(served);
    watcher.watch(now);
    if (base_changed) finish_base(*base_changed);
  }
  std::cout << "Stopped.\n";
  server.stop();
  return kExitOk;
}

}  // namespace cellscope::server::view
