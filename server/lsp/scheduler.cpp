#include "lsp/scheduler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <chrono>
#include <cmath>
#include <ctime>

#include "rpc/jsonrpc.h"

namespace cellscope::lsp {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double thread_cpu_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

}  // namespace

std::optional<std::string> SnapshotSources::read(const fs::path& path) {
  auto it = overlay_.find(path.lexically_normal().string());
  if (it != overlay_.end()) return *it->second;
  return disk_.read(path);
}

AnalysisScheduler::AnalysisScheduler(asio::io_context& io) : io_(io) {}

AnalysisScheduler::~AnalysisScheduler() = default;

// ---- the worker ----

void AnalysisScheduler::start() {
  worker_ = std::thread([this] {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
        if (stopping_) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      try {
        task();
      } catch (const std::exception& e) {
        spdlog::error("analysis task failed: {}", e.what());
      }
    }
  });
}

void AnalysisScheduler::submit(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void AnalysisScheduler::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    tasks_.clear();
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

// ---- the documents ----

OpenDoc* AnalysisScheduler::find(const std::string& uri) {
  auto it = docs_.find(uri);
  return it == docs_.end() ? nullptr : &it->second;
}

std::shared_ptr<const std::string> AnalysisScheduler::text_of(const std::string& path) const {
  std::shared_ptr<const std::string> text;
  for (const auto& [u, od] : docs_) {
    if (od.doc.path == path) text = od.doc.text;
  }
  return text;
}

Overlay AnalysisScheduler::overlay() const {
  Overlay overlay;
  for (const auto& [u, od] : docs_) overlay[od.doc.path] = od.doc.text;
  return overlay;
}

// ---- scheduling ----

int DebouncePolicy::compute(const std::deque<double>& recent_ms) const {
  if (recent_ms.empty()) return std::clamp(initial_ms, min_ms, max_ms);
  const double longest = *std::max_element(recent_ms.begin(), recent_ms.end());
  return static_cast<int>(std::clamp(std::ceil(ratio * longest), static_cast<double>(min_ms),
                                     static_cast<double>(max_ms)));
}

void DebouncePolicy::record(std::deque<double>& recent_ms, double ms) const {
  recent_ms.push_back(ms);
  while (recent_ms.size() > std::max<size_t>(history, 1)) recent_ms.pop_front();
}

void AnalysisScheduler::schedule(const std::string& uri, bool immediate, bool from_dependency) {
  auto it = docs_.find(uri);
  if (it == docs_.end()) return;
  OpenDoc& d = it->second;
  ++d.generation;
  if (d.running_cancel && d.running_version != d.doc.version) d.running_cancel->store(true);
  if (!d.timer) d.timer = std::make_unique<asio::steady_timer>(io_);
  const std::optional<int> fixed = hooks_.debounce_ms ? hooks_.debounce_ms() : std::nullopt;
  const int delay = immediate ? 0 : fixed.value_or(policy_.compute(d.recent_analysis_ms));
  d.last_debounce_ms = delay;
  d.timer->expires_after(std::chrono::milliseconds(delay));
  std::weak_ptr<AnalysisScheduler> weak = weak_from_this();
  d.timer->async_wait(
      [weak, uri, from_dependency, gen = d.generation](const boost::system::error_code& ec) {
        if (ec) return;  // restarted or cancelled
        if (auto self = weak.lock()) self->enqueue(uri, from_dependency, gen);
      });
}

void AnalysisScheduler::enqueue(const std::string& uri, bool from_dependency, uint64_t generation) {
  auto it = docs_.find(uri);
  // A handler of an expired timer that was already queued when schedule() re-armed the timer
  // cannot be cancelled: it must not bypass the new delay (nor analyse twice).
  if (it == docs_.end() || it->second.generation != generation) return;
  OpenDoc& d = it->second;
  if (d.running_cancel) d.running_cancel->store(true);
  auto job = std::make_shared<Job>();
  job->uri = uri;
  job->path = d.doc.path;
  job->version = d.doc.version;
  job->text = d.doc.text;
  for (const auto& [u, od] : docs_) {
    job->overlay[od.doc.path] = od.doc.text;
    job->versions[od.doc.path] = od.doc.version;
  }
  job->encoding = encoding_;
  job->cancel = std::make_shared<std::atomic<bool>>(false);
  job->from_dependency = from_dependency;
  job->generation = d.generation;
  auto& o = job->options;
  o = hooks_.options_for(d.doc.path);
  o.record_facts = true;
  o.outline = true;
  o.parse_cache = parse_cache_;
  o.cancel = job->cancel.get();
  d.running_cancel = job->cancel;
  d.running_version = d.doc.version;
  if (hooks_.queued) hooks_.queued(uri);
  std::weak_ptr<AnalysisScheduler> weak = weak_from_this();
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
    fa->conv = std::make_unique<PositionConverter>(*fa->text, job->encoding);
    asio::post(self->io_, [weak, job, fa] {
      if (auto s = weak.lock()) s->finished(*job, fa);
    });
    if (self->hooks_.worker_analysed) self->hooks_.worker_analysed(*job, *fa, sources);
  });
}

void AnalysisScheduler::finished(const Job& job, const std::shared_ptr<FileAnalysis>& fa) {
  auto it = docs_.find(job.uri);
  // Stale or not, it measured what an analysis of this document costs.
  if (it != docs_.end()) policy_.record(it->second.recent_analysis_ms, fa->elapsed_ms);
  // Stale: the document changed, or it (or a file it imports, or the settings) changed after
  // the job was made -- a newer job is scheduled.
  if (it == docs_.end() || it->second.doc.version != job.version || job.cancel->load() ||
      it->second.generation != job.generation) {
    if (hooks_.dropped) hooks_.dropped(job);
    return;
  }
  OpenDoc& d = it->second;
  fa->seq = ++seq_;
  d.analysis = fa;
  d.analysed_generation = job.generation;
  d.running_cancel.reset();
  d.running_version = -1;
  if (hooks_.analysed) hooks_.analysed(d, *fa);
  auto waiters = std::move(d.waiters);
  d.waiters.clear();
  std::shared_ptr<const FileAnalysis> done = fa;
  for (auto& w : waiters) w(done);
  if (hooks_.settled) hooks_.settled(d, *fa, job.from_dependency);
}

void AnalysisScheduler::with_analysis(const std::string& uri, Waiter fn) {
  auto it = docs_.find(uri);
  if (it == docs_.end()) {
    fn(nullptr);
    return;
  }
  OpenDoc& d = it->second;
  if (d.up_to_date()) {
    fn(d.analysis);
    return;
  }
  d.waiters.push_back(std::move(fn));
}

void AnalysisScheduler::reschedule_dependents(const std::string& path,
                                              const std::string& except_path) {
  for (auto& [uri, od] : docs_) {
    if (od.doc.path == except_path || !od.analysis) continue;
    const auto& files = od.analysis->result.files;
    if (std::find(files.begin(), files.end(), path) != files.end()) schedule(uri, false, true);
  }
}

// ---- closing and stopping ----

std::optional<std::string> AnalysisScheduler::close(const std::string& uri) {
  auto it = docs_.find(uri);
  if (it == docs_.end()) return std::nullopt;
  if (it->second.running_cancel) it->second.running_cancel->store(true);
  for (auto& w : it->second.waiters) w(nullptr);
  std::string path = it->second.doc.path;
  docs_.erase(it);
  return path;
}

void AnalysisScheduler::cancel_all() {
  for (auto& [uri, od] : docs_) {
    if (od.running_cancel) od.running_cancel->store(true);
  }
}

void AnalysisScheduler::wind_down(const std::function<void(OpenDoc&)>& each) {
  for (auto& [uri, od] : docs_) {
    if (od.timer) od.timer->cancel();
    each(od);
    if (od.running_cancel) od.running_cancel->store(true);
    auto waiters = std::move(od.waiters);
    od.waiters.clear();
    for (auto& w : waiters) w(nullptr);
  }
}

}  // namespace cellscope::lsp
