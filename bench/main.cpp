// cellscope-bench: how fast graphcore turns model source into shape-checked graphs, and how much
// memory that takes. For every corpus model and for generated models of ~1k, ~10k and ~100k graph
// nodes it reports nodes, parse / evaluate / compile (shape inference) time, total time, peak RSS
// and heap figures, and the goals of issue 2 next to the measured figures (informational: exit 0).
//
// Each model is measured in a fresh child process (this binary re-executed with `--one FILE`) so
// that peak RSS belongs to that model alone: the child records its RSS, resets the high-water mark
// (/proc/self/clear_refs), analyses the file once (cold; also the warm-up), reads VmHWM and the
// heap counters below, then times N more analyses and prints one JSON line.
//
// Usage: cellscope-bench [--corpus DIR] [--runs N] [--runs-large N] [--sizes 1000,10000,100000]
//                        [--filter TEXT] [--no-corpus] [--no-generated] [--keep DIR]
//                        [--check-linear] [--format text|markdown|json] [--json] [--json-out FILE]
//        cellscope-bench --one FILE [--entry EXPR] [--runs N] [--runs-large N]
//                                                           (one model, one JSON line)
//        cellscope-bench --generate KIND NODES OUT.py               (write a generated model)
#include <malloc.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "graphcore/analysis.h"
#include "graphcore/hardware.h"
#include "graphcore/optimize.h"

extern char** environ;

#ifndef CELLSCOPE_CORPUS_MODELS_DIR
#define CELLSCOPE_CORPUS_MODELS_DIR "tests/corpus/models"
#endif
#ifndef CELLSCOPE_BUILD_TYPE
#define CELLSCOPE_BUILD_TYPE "unknown"
#endif
#ifndef CELLSCOPE_CXX_FLAGS
#define CELLSCOPE_CXX_FLAGS ""
#endif

// ---------------------------------------------------------------------------------------------
// Heap accounting: every C++ allocation goes through these replacements. Counting is switched on
// only around the measured (cold) analysis in `--one` mode; otherwise the cost is one relaxed
// load. tree-sitter's C allocations (malloc) are not seen here; mallinfo2() covers them in the
// retained-heap figure.
namespace heap {
std::atomic<bool> tracking{false};
std::atomic<int64_t> live{0};
std::atomic<int64_t> peak{0};
std::atomic<uint64_t> total{0};
std::atomic<uint64_t> count{0};
std::atomic<uint64_t> max_single{0};

inline void on_alloc(void* p, size_t n) {
  if (p == nullptr || !tracking.load(std::memory_order_relaxed)) return;
  const auto usable = static_cast<int64_t>(malloc_usable_size(p));
  const int64_t now = live.fetch_add(usable, std::memory_order_relaxed) + usable;
  int64_t pk = peak.load(std::memory_order_relaxed);
  while (now > pk && !peak.compare_exchange_weak(pk, now, std::memory_order_relaxed)) {
  }
  total.fetch_add(n, std::memory_order_relaxed);
  count.fetch_add(1, std::memory_order_relaxed);
  uint64_t mx = max_single.load(std::memory_order_relaxed);
  while (n > mx && !max_single.compare_exchange_weak(mx, n, std::memory_order_relaxed)) {
  }
}
inline void on_free(void* p) {
  if (p == nullptr || !tracking.load(std::memory_order_relaxed)) return;
  live.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
}
inline void* alloc(size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  on_alloc(p, n);
  return p;
}
inline void* alloc_aligned(size_t n, std::align_val_t al) {
  const auto a = static_cast<size_t>(al);
  void* p = std::aligned_alloc(a, ((n == 0 ? 1 : n) + a - 1) / a * a);
  if (p == nullptr) throw std::bad_alloc();
  on_alloc(p, n);
  return p;
}
inline void release(void* p) {
  on_free(p);
  std::free(p);
}
void reset() {
  live = 0;
  peak = 0;
  total = 0;
  count = 0;
  max_single = 0;
}
}  // namespace heap

void* operator new(size_t n) { return heap::alloc(n); }
void* operator new[](size_t n) { return heap::alloc(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  try {
    return heap::alloc(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept {
  try {
    return heap::alloc(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new(size_t n, std::align_val_t a) { return heap::alloc_aligned(n, a); }
void* operator new[](size_t n, std::align_val_t a) { return heap::alloc_aligned(n, a); }
void operator delete(void* p) noexcept { heap::release(p); }
void operator delete[](void* p) noexcept { heap::release(p); }
void operator delete(void* p, size_t) noexcept { heap::release(p); }
void operator delete[](void* p, size_t) noexcept { heap::release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { heap::release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { heap::release(p); }
void operator delete(void* p, std::align_val_t) noexcept { heap::release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { heap::release(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { heap::release(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { heap::release(p); }

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------------
// Process memory.

// A field of /proc/self/status in kB ("VmRSS", "VmHWM"), or -1.
int64_t proc_status_kb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t len = std::strlen(field);
  while (std::getline(in, line)) {
    if (line.compare(0, len, field) == 0 && line.size() > len && line[len] == ':') {
      return std::strtoll(line.c_str() + len + 1, nullptr, 10);
    }
  }
  return -1;
}

// Resets VmHWM to the current RSS (Linux >= 4.0). False when not permitted.
bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  if (!out) return false;
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

int64_t malloc_in_use() {
  const struct mallinfo2 mi = mallinfo2();
  return static_cast<int64_t>(mi.uordblks + mi.hblkhd);
}

// CPU time of this thread: unlike wall time, barely affected by other load on the machine.
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

graphcore::AnalysisOptions bench_options() {
  graphcore::AnalysisOptions options;
  // Generated 100k-node models are larger than the 4 MiB an editor session accepts.
  options.max_file_bytes = 64u << 20;
  return options;
}

// ---------------------------------------------------------------------------------------------
// `--one FILE`: measure one model in this (fresh) process and print one JSON line.
// The optimization and hardware layers of every compiled Cell, on an Ascend target; adds their
// wall times to *optimize_ms and *hardware_ms.
void later_layers(const graphcore::AnalysisResult& result, double* optimize_ms,
                  double* hardware_ms) {
  for (const auto& cell : result.cells) {
    if (!cell.compiled) continue;
    graphcore::OptimizeOptions oo;
    oo.target = "ascend910b";
    const auto o0 = Clock::now();
    const auto graph = graphcore::optimize(cell, oo);
    const auto o1 = Clock::now();
    graphcore::HardwareOptions ho;
    ho.target = "ascend910b";
    const auto hw = graphcore::estimate_hardware(cell, graph, ho);
    const auto o2 = Clock::now();
    *optimize_ms += std::chrono::duration<double, std::milli>(o1 - o0).count();
    *hardware_ms += std::chrono::duration<double, std::milli>(o2 - o1).count();
  }
}

int run_one(const fs::path& file, const std::string& entry, int runs, int runs_large) {
  graphcore::DiskSourceProvider sources;
  graphcore::AnalysisOptions options = bench_options();
  if (!entry.empty()) options.entries.push_back(entry);

  json out;
  out["file"] = file.string();
  const int64_t rss_base_kb = proc_status_kb("VmRSS");
  const bool hwm_reset = reset_peak_rss();
  const int64_t hwm_before_kb = proc_status_kb("VmHWM");
  const int64_t malloc_before = malloc_in_use();

  heap::reset();
  heap::tracking = true;
  const auto t0 = Clock::now();
  std::optional<graphcore::AnalysisResult> result;
  try {
    result = graphcore::analyze_file(file, options, sources);
  } catch (const std::exception& e) {
    heap::tracking = false;
    out["exception"] = e.what();
    std::cout << out.dump() << "\n";
    return 0;
  }
  const auto t1 = Clock::now();
  heap::tracking = false;
  const int64_t hwm_after_kb = proc_status_kb("VmHWM");
  const int64_t malloc_after = malloc_in_use();

  size_t nodes = 0;
  size_t max_cell_nodes = 0;
  int64_t total_params = 0;
  double largest_param_bytes = 0;
  int compiled = 0;
  for (const auto& cell : result->cells) {
    nodes += cell.graph.nodes.size();
    max_cell_nodes = std::max(max_cell_nodes, cell.graph.nodes.size());
    total_params = std::max(total_params, cell.total_params);
    compiled += cell.compiled ? 1 : 0;
    for (const auto& p : cell.params) {
      const graphcore::Dim n = p.shape.num_elements();
      if (n.is_known()) {
        largest_param_bytes =
            std::max(largest_param_bytes, static_cast<double>(n.value()) *
                                              static_cast<double>(graphcore::dtype_size(p.dtype)));
      }
    }
  }
  int errors = 0;
  int warnings = 0;
  std::string first_error;
  for (const auto& d : result->diagnostics) {
    if (d.severity == graphcore::Severity::Error) {
      if (errors++ == 0) {
        first_error =
            std::to_string(d.range.start.line + 1) + ": " + d.message + " [" + d.code + "]";
      }
    } else if (d.severity == graphcore::Severity::Warning) {
      ++warnings;
    }
  }
  out["files"] = result->files.size();
  json cell_nodes = json::object();
  for (const auto& cell : result->cells) cell_nodes[cell.name] = cell.graph.nodes.size();
  out["cell_nodes"] = cell_nodes;
  out["cells"] = result->cells.size();
  out["compiled"] = compiled;
  out["nodes"] = nodes;
  out["max_cell_nodes"] = max_cell_nodes;
  out["errors"] = errors;
  out["warnings"] = warnings;
  if (!first_error.empty()) out["first_error"] = first_error;
  out["params"] = total_params;
  out["weight_bytes_f32"] = static_cast<double>(total_params) * 4.0;
  out["largest_param_bytes"] = largest_param_bytes;
  out["rss_base_kb"] = rss_base_kb;
  out["hwm_reset"] = hwm_reset;
  out["rss_peak_kb"] = hwm_after_kb;
  out["rss_peak_delta_kb"] = hwm_after_kb - (hwm_reset ? rss_base_kb : hwm_before_kb);
  out["heap_alloc_bytes"] = heap::total.load();
  out["heap_alloc_count"] = heap::count.load();
  out["heap_peak_live_bytes"] = heap::peak.load();
  out["heap_retained_bytes"] = heap::live.load();  // C++ heap still held by the result
  out["malloc_retained_bytes"] = malloc_after - malloc_before;
  out["max_alloc_bytes"] = heap::max_single.load();
  const double cold_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  out["cold_ms"] = cold_ms;
  // The optimization and hardware layers of every compiled Cell, on an Ascend target.
  double optimize_ms = 0, hardware_ms = 0;
  later_layers(*result, &optimize_ms, &hardware_ms);
  out["optimize_ms"] = optimize_ms;
  out["hardware_ms"] = hardware_ms;
  // The cold run counts every allocation (see `heap`) and touches fresh pages; the warm figure
  // below is the steady state an editor sees on every re-analysis.
  out["all_layers_ms"] = cold_ms + optimize_ms + hardware_ms;
  result.reset();

  // Timed runs (the cold run above was the warm-up).
  int n = nodes >= 50'000 ? runs_large : runs;
  if (cold_ms > 5'000) n = std::min(n, 1);
  std::vector<double> parse, eval, compile, total, cpu, all_layers, all_layers_cpu;
  for (int i = 0; i < n; ++i) {
    const double ca = thread_cpu_ms();
    const auto a = Clock::now();
    graphcore::AnalysisResult r = graphcore::analyze_file(file, options, sources);
    const auto b = Clock::now();
    cpu.push_back(thread_cpu_ms() - ca);
    double opt_ms = 0, hw_ms = 0;
    later_layers(r, &opt_ms, &hw_ms);
    all_layers.push_back(std::chrono::duration<double, std::milli>(b - a).count() + opt_ms + hw_ms);
    all_layers_cpu.push_back(thread_cpu_ms() - ca);
    parse.push_back(r.timings.parse_ms);
    eval.push_back(r.timings.evaluate_ms);
    compile.push_back(r.timings.compile_ms);
    total.push_back(std::chrono::duration<double, std::milli>(b - a).count());
  }
  out["runs"] = n;
  out["parse_ms"] = median(parse);
  out["evaluate_ms"] = median(eval);
  out["compile_ms"] = median(compile);
  out["total_ms"] = median(total);
  out["all_layers_warm_ms"] = median(all_layers);  // analysis + optimization + hardware
  out["all_layers_warm_cpu_ms"] = median(all_layers_cpu);
  out["cpu_ms"] = median(cpu);
  out["cpu_min_ms"] = cpu.empty() ? 0.0 : *std::min_element(cpu.begin(), cpu.end());
  out["total_min_ms"] = total.empty() ? 0.0 : *std::min_element(total.begin(), total.end());
  out["total_max_ms"] = total.empty() ? 0.0 : *std::max_element(total.begin(), total.end());
  std::cout << out.dump() << "\n";
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Generated models. `size` is the repetition parameter (blocks for "deep", lines for "flat");
// main() calibrates it against the node count graphcore reports.

// A ResNet-style stack of residual blocks built in a loop into an nn.SequentialCell.
std::string gen_deep(int blocks) {
  std::ostringstream s;
  s << R"("""Generated by cellscope-bench: a deep residual stack built with a loop.""")"
    << "\n";
  s << R"(import numpy as np
import mindspore as ms
from mindspore import nn, ops


class Block(nn.Cell):
    """Basic residual block: conv-bn-relu-conv-bn, identity shortcut, relu."""

    def __init__(self, channels: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, kernel_size=3, stride=stride)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(channels, channels, kernel_size=3)
        self.bn2 = nn.BatchNorm2d(channels)

    def construct(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        out = out + identity
        return self.relu(out)


class DeepNet(nn.Cell):
    def __init__(self, depth: int = )"
    << blocks << R"(, channels: int = 16, num_classes: int = 10):
        super().__init__()
        self.stem = nn.Conv2d(3, channels, kernel_size=3)
        layers = []
        for i in range(depth):
            layers.append(Block(channels))
        self.body = nn.SequentialCell(layers)
        self.mean = ops.ReduceMean(keep_dims=False)
        self.fc = nn.Dense(channels, num_classes)

    def construct(self, x):
        x = self.stem(x)
        x = self.body(x)
        x = self.mean(x, (2, 3))
        return self.fc(x)


net = DeepNet()
out = net(ms.Tensor(np.ones((1, 3, 32, 32)), ms.float32))
)";
  return s.str();
}

// One Cell whose __init__ and construct are unrolled: thousands of `x = self.lN(x)` lines.
std::string gen_flat(int lines) {
  std::ostringstream s;
  s << R"("""Generated by cellscope-bench: a flat, unrolled construct.""")"
    << "\n";
  s << R"(import numpy as np
import mindspore as ms
from mindspore import nn, ops


class FlatNet(nn.Cell):
    def __init__(self):
        super().__init__()
)";
  for (int i = 0; i < lines; ++i) {
    switch (i % 4) {
      case 0:
        s << "        self.l" << i << " = nn.Dense(64, 64)\n";
        break;
      case 2:
        s << "        self.l" << i << " = nn.LayerNorm((64,))\n";
        break;
      default:
        break;
    }
  }
  s << "\n    def construct(self, x):\n";
  for (int i = 0; i < lines; ++i) {
    switch (i % 4) {
      case 0:
      case 2:
        s << "        x = self.l" << i << "(x)\n";
        break;
      case 1:
        s << "        x = ops.relu(x)\n";
        break;
      default:
        s << "        x = x * 0.5\n";
        break;
    }
  }
  s << R"(        return x


net = FlatNet()
out = net(ms.Tensor(np.ones((8, 64)), ms.float32))
)";
  return s.str();
}

std::string generate(const std::string& kind, int size) {
  return kind == "deep" ? gen_deep(size) : gen_flat(size);
}

// ---------------------------------------------------------------------------------------------
// Parent side: run children, collect, report.

struct ChildResult {
  json data;              // the child's JSON line (empty on failure)
  std::string failure;    // "signal 11", "exit 1", "no output"
  int64_t maxrss_kb = 0;  // ru_maxrss of the child (whole run, including timed runs)
};

fs::path self_exe() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path("cellscope-bench") : p;
}

ChildResult run_child(const fs::path& file, int runs, int runs_large,
                      const std::string& entry = "") {
  ChildResult res;
  int pipefd[2];
  if (pipe(pipefd) != 0) {
    res.failure = "pipe failed";
    return res;
  }
  const std::string exe = self_exe().string();
  std::vector<std::string> args = {exe,
                                   "--one",
                                   file.string(),
                                   "--runs",
                                   std::to_string(runs),
                                   "--runs-large",
                                   std::to_string(runs_large)};
  if (!entry.empty()) {
    args.emplace_back("--entry");
    args.push_back(entry);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipefd[0]);
  posix_spawn_file_actions_addclose(&actions, pipefd[1]);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipefd[1]);
  if (rc != 0) {
    close(pipefd[0]);
    res.failure = std::string("spawn failed: ") + std::strerror(rc);
    return res;
  }
  std::string output;
  char buf[4096];
  ssize_t got = 0;
  while ((got = read(pipefd[0], buf, sizeof buf)) > 0) output.append(buf, static_cast<size_t>(got));
  close(pipefd[0]);
  int status = 0;
  struct rusage ru {};
  wait4(pid, &status, 0, &ru);
  res.maxrss_kb = ru.ru_maxrss;
  if (WIFSIGNALED(status)) {
    res.failure = "crashed (signal " + std::to_string(WTERMSIG(status)) + ")";
  } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    res.failure = "exit " + std::to_string(WEXITSTATUS(status));
  }
  const auto nl = output.find('\n');
  if (res.failure.empty()) {
    try {
      res.data = json::parse(output.substr(0, nl));
    } catch (const std::exception&) {
      res.failure = "no output";
    }
    if (res.data.contains("exception")) {
      res.failure = "exception: " + res.data["exception"].get<std::string>();
    }
  }
  return res;
}

struct Model {
  std::string name;    // "resnet50", "deep-10k"
  std::string group;   // "corpus" or "generated"
  std::string kind;    // generated: "deep" / "flat"
  int64_t target = 0;  // generated: intended node count
  int size = 0;        // generated: repetition parameter
  fs::path file;
  ChildResult r;
  std::string entry;  // analyse only this expression (AnalysisOptions::entries)
};

std::string human_count(int64_t n) {
  if (n % 1000 == 0 && n >= 1000) {
    return n % 1'000'000 == 0 ? std::to_string(n / 1'000'000) + "M"
                              : std::to_string(n / 1000) + "k";
  }
  return std::to_string(n);
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string bytes_h(double b) {
  if (b >= 1024.0 * 1024.0) return fmt("%.1f MB", b / (1024.0 * 1024.0));
  if (b >= 1024.0) return fmt("%.1f KB", b / 1024.0);
  return fmt("%.0f B", b);
}

double num(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
}

double load_average() {
  double l[1] = {0};
  return getloadavg(l, 1) == 1 ? l[0] : 0.0;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto c = line.find(':');
      return c == std::string::npos ? line : line.substr(c + 2);
    }
  }
  return "unknown";
}

// Table output in plain text or Markdown.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void row(std::vector<std::string> r) { rows_.push_back(std::move(r)); }
  void print(bool markdown) const {
    std::vector<size_t> w(header_.size(), 0);
    auto widen = [&](const std::vector<std::string>& r) {
      for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
    };
    widen(header_);
    for (const auto& r : rows_) widen(r);
    auto line = [&](const std::vector<std::string>& r) {
      std::string s = markdown ? "| " : "";
      for (size_t i = 0; i < w.size(); ++i) {
        const std::string& c = i < r.size() ? r[i] : std::string();
        const bool left = i == 0;
        const std::string pad(w[i] - std::min(w[i], c.size()), ' ');
        s += left ? c + pad : pad + c;
        s += markdown ? " |" : "  ";
        if (markdown && i + 1 < w.size()) s += " ";
      }
      while (!markdown && !s.empty() && s.back() == ' ') s.pop_back();
      std::cout << s << "\n";
    };
    line(header_);
    if (markdown) {
      std::string s = "|";
      for (size_t i = 0; i < w.size(); ++i) {
        s += i == 0 ? " :" + std::string(w[i] - 1, '-') + " |"
                    : " " + std::string(w[i] - 1, '-') + ": |";
      }
      std::cout << s << "\n";
    } else {
      size_t total = 0;
      for (size_t x : w) total += x + 2;
      std::cout << std::string(total, '-') << "\n";
    }
    for (const auto& r : rows_) line(r);
  }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

struct Goal {
  std::string goal;
  std::string measured;
  std::string verdict;  // PASS / MISS / n/a
};

void usage() {
  std::cerr
      << "usage: cellscope-bench [--corpus DIR] [--runs N] [--runs-large N]\n"
         "                       [--sizes 1000,10000,100000] [--kinds deep,flat] [--filter TEXT]\n"
         "                       [--no-corpus] [--no-generated] [--keep DIR] [--check-linear]\n"
         "                       [--format text|markdown|json] [--json] [--json-out FILE]\n"
         "       cellscope-bench --one FILE [--entry EXPR] [--runs N] [--runs-large N]\n"
         "       cellscope-bench --generate deep|flat NODES OUT.py\n";
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

int64_t parse_count(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != nullptr && (*end == 'k' || *end == 'K')) v *= 1000;
  if (end != nullptr && (*end == 'm' || *end == 'M')) v *= 1'000'000;
  return static_cast<int64_t>(v);
}

// Finds the repetition parameter giving ~`target` nodes: nodes = a + b * size, fitted on two
// small instances measured by child processes.
std::optional<int> calibrate(const std::string& kind, int64_t target, const fs::path& dir,
                             std::map<std::string, std::pair<double, double>>& fits,
                             std::string* error) {
  if (!fits.count(kind)) {
    const int s1 = kind == "deep" ? 8 : 40;
    const int s2 = kind == "deep" ? 16 : 80;
    double n[2] = {0, 0};
    int i = 0;
    for (int s : {s1, s2}) {
      const fs::path f = dir / ("calibrate-" + kind + "-" + std::to_string(s) + ".py");
      std::ofstream(f) << generate(kind, s);
      ChildResult r = run_child(f, 0, 0);
      if (!r.failure.empty() || num(r.data, "nodes") <= 0) {
        *error = "calibration of '" + kind + "' failed: " +
                 (r.failure.empty()
                      ? "no nodes (" + r.data.value("first_error", std::string("no error")) + ")"
                      : r.failure);
        return std::nullopt;
      }
      n[i++] = num(r.data, "nodes");
      std::error_code ec;
      fs::remove(f, ec);
    }
    const double b = (n[1] - n[0]) / (s2 - s1);
    const double a = n[0] - b * s1;
    if (b <= 0) {
      *error = "calibration of '" + kind + "': node count does not grow with size";
      return std::nullopt;
    }
    fits[kind] = {a, b};
  }
  const auto [a, b] = fits[kind];
  int size = static_cast<int>(std::lround((static_cast<double>(target) - a) / b));
  if (kind == "flat") size = (size + 3) / 4 * 4;  // whole Dense/relu/LayerNorm/mul groups
  return std::max(size, 1);
}

}  // namespace

int main(int argc, char** argv) {
  fs::path corpus = CELLSCOPE_CORPUS_MODELS_DIR;
  int runs = 10;
  int runs_large = 3;
  std::vector<int64_t> sizes = {1000, 10000, 100000};
  std::vector<std::string> kinds = {"deep", "flat"};
  std::string filter;
  bool with_corpus = true;
  bool with_generated = true;
  bool check_linear = false;
  std::string format = "text";
  std::optional<fs::path> keep;
  std::optional<fs::path> one;
  std::string entry;
  std::optional<fs::path> json_out;

  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) {
        std::cerr << "cellscope-bench: " << a << " needs a value\n";
        std::exit(2);
      }
      return args[++i];
    };
    if (a == "--corpus")
      corpus = value();
    else if (a == "--runs")
      runs = std::max(0, std::atoi(value().c_str()));
    else if (a == "--runs-large")
      runs_large = std::max(0, std::atoi(value().c_str()));
    else if (a == "--sizes") {
      sizes.clear();
      for (const auto& s : split(value(), ',')) sizes.push_back(parse_count(s));
    } else if (a == "--kinds")
      kinds = split(value(), ',');
    else if (a == "--filter")
      filter = value();
    else if (a == "--no-corpus")
      with_corpus = false;
    else if (a == "--no-generated")
      with_generated = false;
    else if (a == "--check-linear")
      check_linear = true;
    else if (a == "--keep")
      keep = fs::path(value());
    else if (a == "--json")
      format = "json";
    else if (a == "--json-out")
      json_out = fs::path(value());
    else if (a == "--format")
      format = value();
    else if (a == "--markdown")
      format = "markdown";
    else if (a == "--one")
      one = fs::path(value());
    else if (a == "--entry")
      entry = value();
    else if (a == "--generate") {
      if (i + 3 >= args.size()) {
        usage();
        return 2;
      }
      const std::string kind = args[i + 1];
      const int64_t target = parse_count(args[i + 2]);
      const fs::path out = args[i + 3];
      std::map<std::string, std::pair<double, double>> fits;
      std::string error;
      const fs::path tmp = fs::temp_directory_path();
      auto size = calibrate(kind, target, tmp, fits, &error);
      if (!size) {
        std::cerr << "cellscope-bench: " << error << "\n";
        return 1;
      }
      std::ofstream(out) << generate(kind, *size);
      std::cerr << "wrote " << out << " (" << kind << ", size " << *size << ")\n";
      return 0;
    } else if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else {
      std::cerr << "cellscope-bench: unknown argument " << a << "\n";
      usage();
      return 2;
    }
  }
  if (format != "text" && format != "markdown" && format != "json") {
    usage();
    return 2;
  }
  if (one) return run_one(*one, entry, runs, runs_large);

  const bool text = format != "json";
  const double load_start = load_average();
  const bool md = format == "markdown";
  std::vector<Model> models;
  if (with_corpus) {
    std::error_code ec;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(corpus, ec)) {
      if (e.path().extension() == ".py") files.push_back(e.path());
    }
    if (ec)
      std::cerr << "cellscope-bench: cannot read corpus " << corpus << ": " << ec.message() << "\n";
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      models.push_back({f.stem().string(), "corpus", "", 0, 0, f, {}, ""});
      // resnet50.py also defines resnet101(); the ResNet-50 goal is judged on resnet50() alone.
      if (f.stem() == "resnet50") {
        models.push_back({"resnet50:resnet50()", "corpus", "", 0, 0, f, {}, "resnet50()"});
      }
    }
  }

  fs::path gen_dir;
  bool remove_gen_dir = false;
  if (with_generated) {
    if (keep) {
      gen_dir = *keep;
      fs::create_directories(gen_dir);
    } else {
      std::string tmpl = (fs::temp_directory_path() / "cellscope-bench-XXXXXX").string();
      if (mkdtemp(tmpl.data()) == nullptr) {
        std::cerr << "cellscope-bench: mkdtemp failed\n";
        return 1;
      }
      gen_dir = tmpl;
      remove_gen_dir = true;
    }
    std::map<std::string, std::pair<double, double>> fits;
    for (const auto& kind : kinds) {
      if (kind != "deep" && kind != "flat") {
        std::cerr << "cellscope-bench: unknown generated kind " << kind << " (deep, flat)\n";
        continue;
      }
      for (int64_t target : sizes) {
        const std::string name = kind + "-" + human_count(target);
        if (!filter.empty() && name.find(filter) == std::string::npos) continue;
        std::string error;
        auto size = calibrate(kind, target, gen_dir, fits, &error);
        Model m{name, "generated", kind, target, size.value_or(0), gen_dir / (name + ".py"),
                {},   ""};
        if (!size) {
          m.r.failure = error;
        } else {
          std::ofstream(m.file) << generate(kind, *size);
        }
        models.push_back(std::move(m));
      }
    }
  }
  if (!filter.empty()) {
    std::erase_if(models, [&](const Model& m) { return m.name.find(filter) == std::string::npos; });
  }

  if (text) {
    std::cout << "cellscope-bench: " << models.size() << " models, median of " << runs
              << " runs after a warm-up (" << runs_large << " for >= 50k nodes); build "
              << CELLSCOPE_BUILD_TYPE << " [" << CELLSCOPE_CXX_FLAGS << "]\n";
    std::cout << "machine: " << cpu_model() << ", " << sysconf(_SC_NPROCESSORS_ONLN)
              << " CPUs, load average " << fmt("%.2f", load_average()) << "\n";
    if (load_average() > 0.5 * static_cast<double>(sysconf(_SC_NPROCESSORS_ONLN))) {
      std::cout << "warning: the machine is busy; wall times are inflated; goals are judged on CPU "
                   "time\n";
    }
    std::cout << "\n";
    std::cout.flush();
  }
  for (auto& m : models) {
    if (!m.r.failure.empty()) continue;
    m.r = run_child(m.file, runs, runs_large, m.entry);
    if (text) std::cerr << "  measured " << m.name << "\n";
  }

  // ---- Table.
  Table table({"model", "cells", "nodes", "parse ms", "eval ms", "compile ms", "total ms", "cpu ms",
               "us/node", "peak RSS", "dRSS", "dRSS/node", "heap peak", "heap/node", "allocated",
               "max alloc", "errors"});
  json jmodels = json::array();
  for (const auto& m : models) {
    const json& d = m.r.data;
    json jm = d.is_object() ? d : json::object();
    jm["name"] = m.name;
    jm["group"] = m.group;
    if (m.group == "generated") {
      jm["kind"] = m.kind;
      jm["target_nodes"] = m.target;
      jm["size_param"] = m.size;
    }
    jm["child_maxrss_kb"] = m.r.maxrss_kb;
    if (!m.r.failure.empty()) {
      jm["failure"] = m.r.failure;
      table.row({m.name, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-",
                 m.r.failure});
      jmodels.push_back(jm);
      continue;
    }
    const double nodes = num(d, "nodes");
    const double total = num(d, "total_ms");
    const double cpu = num(d, "cpu_ms");
    const double drss = num(d, "rss_peak_delta_kb") * 1024.0;
    const double hpeak = num(d, "heap_peak_live_bytes");
    jm["us_per_node"] = nodes > 0 ? cpu * 1000.0 / nodes : 0.0;
    jm["rss_bytes_per_node"] = nodes > 0 ? drss / nodes : 0.0;
    jm["heap_peak_bytes_per_node"] = nodes > 0 ? hpeak / nodes : 0.0;
    jmodels.push_back(jm);
    table.row({m.name, fmt("%.0f", num(d, "cells")), fmt("%.0f", nodes),
               fmt("%.2f", num(d, "parse_ms")), fmt("%.2f", num(d, "evaluate_ms")),
               fmt("%.2f", num(d, "compile_ms")), fmt("%.2f", total), fmt("%.2f", cpu),
               nodes > 0 ? fmt("%.2f", cpu * 1000.0 / nodes) : "-",
               bytes_h(num(d, "rss_peak_kb") * 1024.0), bytes_h(drss),
               nodes > 0 ? bytes_h(drss / nodes) : "-", bytes_h(hpeak),
               nodes > 0 ? bytes_h(hpeak / nodes) : "-", bytes_h(num(d, "heap_alloc_bytes")),
               bytes_h(num(d, "max_alloc_bytes")), fmt("%.0f", num(d, "errors"))});
  }

  // ---- Goals (issue 2, "Speed and memory"). Informational.
  std::vector<Goal> goals;
  auto find = [&](const std::string& name) -> const Model* {
    for (const auto& m : models) {
      if (m.name == name && m.r.failure.empty()) return &m;
    }
    return nullptr;
  };
  auto verdict = [](bool ok) { return std::string(ok ? "PASS" : "MISS"); };
  // Time goals are judged on the analysing thread's CPU time (median), which equals wall time on
  // an idle machine and is not inflated when other jobs share the CPUs; wall time is shown too.
  auto timing = [](const json& d) {
    return fmt("%.1f ms", num(d, "cpu_ms")) + " (wall " + fmt("%.1f", num(d, "total_ms")) + ")";
  };
  if (const Model* m = find("resnet50:resnet50()")) {
    const double t = num(m->r.data, "cpu_ms");
    goals.push_back({"ResNet-50 source to full graph < 5 ms (resnet50.py, entry resnet50())",
                     timing(m->r.data), verdict(t < 5)});
  } else if (with_corpus) {
    goals.push_back({"ResNet-50 source to full graph < 5 ms", "not measured", "n/a"});
  }
  for (const auto& m : models) {
    if (m.group != "generated" || !m.r.failure.empty()) continue;
    const double nodes = num(m.r.data, "nodes");
    const double t = num(m.r.data, "cpu_ms");
    if (m.target == 10000) {
      goals.push_back({"10k nodes < 50 ms (" + m.name + ", " + fmt("%.0f", nodes) + " nodes)",
                       timing(m.r.data), verdict(t < 50)});
    } else if (m.target == 100000) {
      goals.push_back({"100k nodes < 0.5 s (" + m.name + ", " + fmt("%.0f", nodes) + " nodes)",
                       timing(m.r.data), verdict(t < 500)});
    }
  }
  // Linearity: time per node at the largest size vs the middle one (fixed costs excluded by
  // using the two largest sizes).
  json jlinear = json::object();
  for (const auto& kind : kinds) {
    std::vector<const Model*> ms;
    for (const auto& m : models) {
      if (m.kind == kind && m.group == "generated" && m.r.failure.empty() &&
          num(m.r.data, "nodes") > 0) {
        ms.push_back(&m);
      }
    }
    if (ms.size() < 2) continue;
    std::sort(ms.begin(), ms.end(), [](const Model* a, const Model* b) {
      return num(a->r.data, "nodes") < num(b->r.data, "nodes");
    });
    const Model* lo = ms[ms.size() - 2];
    const Model* hi = ms.back();
    auto per_node = [](const Model* m) {
      return num(m->r.data, "cpu_ms") / num(m->r.data, "nodes");
    };
    const double ratio = per_node(hi) / per_node(lo);
    goals.push_back({"cost linear in nodes (" + kind + ": time/node " + lo->name + " -> " +
                         hi->name + " within 1.5x)",
                     fmt("x%.2f", ratio), verdict(ratio <= 1.5)});
    json jk = json::array();
    for (const Model* m : ms) {
      const double nodes = num(m->r.data, "nodes");
      jk.push_back({{"name", m->name},
                    {"nodes", nodes},
                    {"total_ms", num(m->r.data, "total_ms")},
                    {"cpu_ms", num(m->r.data, "cpu_ms")},
                    {"us_per_node", per_node(m) * 1000.0},
                    {"rss_bytes_per_node", num(m->r.data, "rss_peak_delta_kb") * 1024.0 / nodes},
                    {"heap_peak_bytes_per_node", num(m->r.data, "heap_peak_live_bytes") / nodes},
                    {"heap_alloc_bytes_per_node", num(m->r.data, "heap_alloc_bytes") / nodes}});
    }
    jlinear[kind] = jk;
  }
  for (const auto& m : models) {
    if (m.group != "generated" || m.target < 10000 || !m.r.failure.empty()) continue;
    const double nodes = num(m.r.data, "nodes");
    const double b = num(m.r.data, "rss_peak_delta_kb") * 1024.0 / nodes;
    goals.push_back({"< 2 KB memory per node (" + m.name + ", peak RSS growth / nodes)", bytes_h(b),
                     verdict(b < 2048)});
  }
  if (const Model* m = find("bert_base")) {
    const double rss = num(m->r.data, "rss_peak_kb") * 1024.0;
    goals.push_back({"BERT-base analysis well under 100 MB RSS (process peak)", bytes_h(rss),
                     verdict(rss < 100.0 * 1024 * 1024)});
  }
  // No weight data: no single allocation as large as the model's largest parameter tensor, and
  // peak heap far below the model's f32 weight bytes. Judged where weights are >= 1 MB.
  {
    int judged = 0;
    std::string worst;
    bool ok = true;
    for (const auto& m : models) {
      if (m.group != "corpus" || !m.r.failure.empty()) continue;
      const double largest = num(m.r.data, "largest_param_bytes");
      const double weights = num(m.r.data, "weight_bytes_f32");
      if (largest < 1024.0 * 1024.0) continue;
      ++judged;
      const double mx = num(m.r.data, "max_alloc_bytes");
      const double peak = num(m.r.data, "heap_peak_live_bytes");
      if (mx >= largest || peak >= weights / 4) {
        ok = false;
        worst += (worst.empty() ? "" : ", ") + m.name;
      }
    }
    if (judged > 0) {
      goals.push_back(
          {"no weight data allocated (max allocation < largest weight, heap peak < "
           "1/4 of weights; " +
               std::to_string(judged) + " corpus models)",
           ok ? "none seen" : "suspect: " + worst, verdict(ok)});
    }
  }

  json doc;
  {
    doc["build_type"] = CELLSCOPE_BUILD_TYPE;
    doc["cxx_flags"] = CELLSCOPE_CXX_FLAGS;
    doc["cpu"] = cpu_model();
    doc["nproc"] = sysconf(_SC_NPROCESSORS_ONLN);
    doc["load_average_start"] = load_start;
    doc["load_average_end"] = load_average();
    doc["runs"] = runs;
    doc["runs_large"] = runs_large;
    doc["models"] = jmodels;
    json jg = json::array();
    for (const auto& g : goals) {
      jg.push_back({{"goal", g.goal}, {"measured", g.measured}, {"verdict", g.verdict}});
    }
    doc["goals"] = jg;
    doc["linear"] = jlinear;
  }
  if (json_out) std::ofstream(*json_out) << doc.dump(2) << "\n";
  if (format == "json") {
    std::cout << doc.dump(2) << "\n";
  } else {
    table.print(md);
    std::cout << "\nparse/eval/compile: AnalysisTimings medians (wall); total: wall time of "
                 "analyze_file (median); cpu: its thread\nCPU time (median), us/node from cpu. "
                 "dRSS: peak RSS of a fresh\nprocess during one cold analysis minus its "
                 "RSS before. heap peak: peak live C++ heap during that analysis;\nallocated: all "
                 "C++ heap bytes requested; max alloc: the largest single C++ allocation.\n";
    for (const auto& m : models) {
      if (m.r.failure.empty() && m.r.data.contains("first_error")) {
        std::cout << "  " << m.name << ": first error at line "
                  << m.r.data["first_error"].get<std::string>() << "\n";
      }
    }
    std::cout << "\nGoals (issue 2, informational; time goals judged on CPU time):\n";
    Table gt({"goal", "measured", "verdict"});
    for (const auto& g : goals) gt.row({g.goal, g.measured, g.verdict});
    gt.print(md);
    std::cout << "\nload average at the end: " << fmt("%.2f", load_average()) << "\n";
    if (check_linear) {
      std::cout << "\nLinearity (--check-linear):\n";
      Table lt({"model", "nodes", "total ms", "cpu ms", "us/node (cpu)", "dRSS/node",
                "heap peak/node", "allocated/node"});
      for (const auto& [kind, arr] : jlinear.items()) {
        for (const auto& e : arr) {
          lt.row({e["name"].get<std::string>(), fmt("%.0f", e["nodes"].get<double>()),
                  fmt("%.2f", e["total_ms"].get<double>()), fmt("%.2f", e["cpu_ms"].get<double>()),
                  fmt("%.2f", e["us_per_node"].get<double>()),
                  bytes_h(e["rss_bytes_per_node"].get<double>()),
                  bytes_h(e["heap_peak_bytes_per_node"].get<double>()),
                  bytes_h(e["heap_alloc_bytes_per_node"].get<double>())});
        }
      }
      lt.print(md);
    }
  }
  if (remove_gen_dir) {
    std::error_code ec;
    fs::remove_all(gen_dir, ec);
  }
  return 0;
}
