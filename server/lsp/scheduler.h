// The scheduling of analyses for the language server: the open documents, their debounce timers,
// the analysis worker thread, cancellation, versions, and the requests waiting for an analysis.
// It knows no protocol: what the client is told (diagnostics, progress, traces) is decided by the
// hooks the composition (server.cpp) installs.
//
// Thread-safety: the documents and every member function except submit() belong to the I/O thread
// (the thread running the io_context). Analyses run on one worker thread over an immutable
// snapshot (the text of every open document at one moment, shared, never edited); their results
// come back to the I/O thread by asio::post. A change to a document cancels its running analysis
// (graphcore polls the flag) and restarts its debounce timer; a result for a version or a
// generation that is no longer current is dropped, never made current. submit() may be called
// from any thread. Hooks run on the I/O thread, except SchedulerHooks::worker_analysed (worker).
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "graphcore/analysis.h"
#include "lsp/convert.h"
#include "lsp/document.h"
#include "lsp/features.h"

namespace cellscope::lsp {

// The texts of open documents by normalised path: what a snapshot reads instead of the disk.
using Overlay = std::map<std::string, std::shared_ptr<const std::string>>;

// Reads text through the open documents of a snapshot, then the disk.
class SnapshotSources : public graphcore::SourceProvider {
 public:
  explicit SnapshotSources(Overlay overlay) : overlay_(std::move(overlay)) {}
  std::optional<std::string> read(const std::filesystem::path& path) override;

 private:
  Overlay overlay_;
  graphcore::DiskSourceProvider disk_;
};

// One analysis to run: a snapshot of the open documents and the options to analyse `path` with.
struct Job {
  std::string uri;
  std::string path;
  int64_t version = 0;
  std::shared_ptr<const std::string> text;
  Overlay overlay;
  std::map<std::string, int64_t> versions;
  graphcore::AnalysisOptions options;
  PositionEncoding encoding = PositionEncoding::kUtf16;  // of the result's PositionConverter
  std::shared_ptr<std::atomic<bool>> cancel;
  bool from_dependency = false;
  uint64_t generation = 0;  // OpenDoc::generation when the job was made
};

using Waiter = std::function<void(const std::shared_ptr<const FileAnalysis>&)>;

// How long to wait after an edit before analysing, when nobody fixed it: as clangd sizes its own
// debounce, `ratio` times the longest of the document's last `history` analyses (wall time),
// within [min_ms, max_ms]. A cheap file is analysed almost at once (ResNet-50: ~6 ms analyses,
// a 10 ms wait); a slow one waits about as long as an analysis takes, so a burst of keystrokes
// does not start analyses that the next keystroke cancels. Before the first measured analysis:
// `initial_ms`. Pure.
struct DebouncePolicy {
  int min_ms = 10;
  int max_ms = 500;
  int initial_ms = 50;
  double ratio = 1.0;
  size_t history = 4;

  [[nodiscard]] int compute(const std::deque<double>& recent_ms) const;
  // Remembers one analysis's wall time in `recent_ms` (keeps the last `history`).
  void record(std::deque<double>& recent_ms, double ms) const;
};

// An open document and the state of its analyses (I/O thread).
struct OpenDoc {
  Document doc;
  std::unique_ptr<boost::asio::steady_timer> timer;   // the debounce timer
  std::shared_ptr<std::atomic<bool>> running_cancel;  // of the analysis queued or running
  int64_t running_version = -1;
  std::shared_ptr<const FileAnalysis> analysis;  // the latest completed one
  std::vector<Waiter> waiters;                   // for the analysis of the current version
  // Bumped by every schedule(): a change of the document, of a file it imports or of the
  // settings. Only an analysis of the latest generation is current (same version, other inputs).
  uint64_t generation = 0;
  uint64_t analysed_generation = 0;       // of `analysis`
  std::deque<double> recent_analysis_ms;  // wall times of the last analyses (DebouncePolicy)
  int last_debounce_ms = 0;               // the delay the last schedule() used

  // `analysis` is of the current version and generation.
  [[nodiscard]] bool up_to_date() const {
    return analysis && analysis->version == doc.version && analysed_generation == generation;
  }
};

// What the scheduler asks of, and tells, the rest of the server. Installed before start().
struct SchedulerHooks {
  // The options to analyse `path` with under the current settings (the scheduler adds its own:
  // facts, outline, parse cache, cancellation).
  std::function<graphcore::AnalysisOptions(const std::string& path)> options_for;
  // The debounce after an edit in milliseconds when someone fixed it; nullopt: DebouncePolicy.
  std::function<std::optional<int>()> debounce_ms;
  // A job for `uri` was queued.
  std::function<void(const std::string& uri)> queued;
  // A finished job was stale (the document, a file it imports or the settings changed since).
  std::function<void(const Job& job)> dropped;
  // `fa` just became the current analysis of `d`; requests waiting for it are answered next.
  std::function<void(OpenDoc& d, const FileAnalysis& fa)> analysed;
  // After the requests waiting for `fa` were answered.
  std::function<void(OpenDoc& d, const FileAnalysis& fa, bool from_dependency)> settled;
  // On the worker thread, once the result is posted to the I/O thread: `sources` reads the
  // job's snapshot. The result is shared read-only from here on.
  std::function<void(const Job& job, const FileAnalysis& fa, graphcore::SourceProvider& sources)>
      worker_analysed;
};

class AnalysisScheduler : public std::enable_shared_from_this<AnalysisScheduler> {
 public:
  explicit AnalysisScheduler(boost::asio::io_context& io);
  ~AnalysisScheduler();
  AnalysisScheduler(const AnalysisScheduler&) = delete;
  AnalysisScheduler& operator=(const AnalysisScheduler&) = delete;

  // Installs the hooks (before start()).
  void set_hooks(SchedulerHooks hooks) { hooks_ = std::move(hooks); }
  // Starts the worker thread.
  void start();
  // Stops the worker thread (queued tasks are dropped; a running one finishes). Idempotent.
  void stop();
  // Runs `task` on the worker thread, after the tasks queued before it. Any thread.
  void submit(std::function<void()> task);

  // The encoding of the results' position converters (negotiated by `initialize`).
  void set_encoding(PositionEncoding encoding) { encoding_ = encoding; }
  void set_debounce_policy(DebouncePolicy policy) { policy_ = policy; }

  // The open documents, by URI. Handlers add and edit them, then call schedule().
  std::map<std::string, OpenDoc>& documents() { return docs_; }
  const std::map<std::string, OpenDoc>& documents() const { return docs_; }
  OpenDoc* find(const std::string& uri);
  // The text of the open document at `path`, or nullptr.
  [[nodiscard]] std::shared_ptr<const std::string> text_of(const std::string& path) const;
  // Every open document's text by path (the snapshot an analysis reads).
  [[nodiscard]] Overlay overlay() const;

  // Re-analyses `uri` after the debounce (now if `immediate`), cancelling its running analysis
  // if that is of an older version.
  void schedule(const std::string& uri, bool immediate, bool from_dependency = false);
  // Re-analyses open documents (other than `except_path`) whose last analysis read `path`.
  void reschedule_dependents(const std::string& path, const std::string& except_path);
  // Runs `fn` with the analysis of `uri`'s current version, now or when it is done (nullptr when
  // the document is not open, or closes or the server stops first).
  void with_analysis(const std::string& uri, Waiter fn);

  // Closes `uri`: cancels its analysis, answers its waiters with nullptr, forgets it. Returns its
  // path, or nullopt when it was not open.
  std::optional<std::string> close(const std::string& uri);
  // Cancels every running analysis (shutdown).
  void cancel_all();
  // At exit or end of input: no timer may keep the io_context alive and no request may wait for
  // an analysis that will not come. `each` runs for every document after its timer is cancelled.
  void wind_down(const std::function<void(OpenDoc&)>& each);

 private:
  void enqueue(const std::string& uri, bool from_dependency, uint64_t generation);
  void finished(const Job& job, const std::shared_ptr<FileAnalysis>& fa);

  boost::asio::io_context& io_;
  SchedulerHooks hooks_;
  PositionEncoding encoding_ = PositionEncoding::kUtf16;
  DebouncePolicy policy_;
  std::map<std::string, OpenDoc> docs_;  // by URI
  uint64_t seq_ = 0;
  // Files parsed by earlier analyses (imports rarely change while the user types).
  std::shared_ptr<graphcore::ParseCache> parse_cache_ = std::make_shared<graphcore::ParseCache>();

  // The worker.
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
};

}  // namespace cellscope::lsp
