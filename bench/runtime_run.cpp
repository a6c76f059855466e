// cellscope-run: runs one Cell of a model file on graphcore's CPU runtime (docs/runtime.md), for
// the PyTorch comparison tier (tests/runtime/check_torch.py) and the runtime benchmark.
//
// Usage: cellscope-run FILE [--cell NAME] [--entry EXPR] [--input-shape SPEC]... [--input SPEC]...
//                           [--seed N] [--precision fp32|target] [--out DIR] [--dump-all]
//                           [--load-params DIR] [--ckpt FILE] [--output-npy FILE] [--bench N]
//                           [--list-params] [--grad] [--train-mode] [--train-step]
//                           [--threads N] [--profile N]
//   --input-shape  as `cellscope graph --input` ("1,3,224,224", "8,128:int32")
//   --input        random | random:SEED | ones | zeros | path.npy (one per graph input; default
//                  random)
//   --out DIR      writes DIR/graph.json, DIR/params/<name>.npy, DIR/inputs/<i>.npy,
//                  DIR/outputs/<i>.npy and, with --dump-all, DIR/values/<node>_<output>.npy
//   --ckpt FILE    loads a MindSpore checkpoint (.ckpt as save_checkpoint writes it, or
//                  .safetensors) into the parameters by name; what was loaded, missing or
//                  ignored is logged on stderr. A mismatch or unreadable file: exit 2
//   --output-npy FILE  writes the first output to FILE (output i > 0 to FILE's stem + ".i.npy")
//   --timing       prints `timing {"analysis_ms", "bind_ms", "run_ms"}` after the outputs: the
//                  analysis, the binding (parameters, inputs, checkpoint) and the one run of this
//                  process (tests/dap/bench-overhead.mjs compares it with a debug session)
//   --threads N    threads of the convolutions and matrix products (ExecOptions::threads;
//                  default 1, 0 = every hardware thread)
//   --bench N      times N runs (after one warm-up) without hooks, and with no-op hooks that
//                  check a breakpoint table and compute nothing (debugger with no breakpoint),
//                  then prints one JSON line
//   --grad         differentiates the Cell, whose one output must be a scalar loss
//                  (graphcore/autodiff.h): runs forward + backward and, with --out DIR, writes
//                  DIR/loss.npy, DIR/grads/<param>.npy for every trainable parameter (zeros for
//                  one with no path to the loss) and DIR/state/<param>.npy (BatchNorm's moving
//                  statistics after the step, in --train-mode); prints the loss and each gradient
//   --train-mode   training semantics (Cell.set_train(True)): BatchNorm on batch statistics,
//                  Dropout active
//   --train-step   with --grad and --bench: every timed run is a whole training step, forward +
//                  backward + nn.Momentum(lr=0.01, momentum=0.9) updating the parameters as
//                  `cellscope train` does (BatchNorm's moving statistics written back too)
//   --profile N    after one warm-up, N runs (training steps with --train-step) with hooks that
//                  read the calling thread's CPU time around every node; prints to stderr each
//                  operator's CPU ms per run (summed over its nodes), its share, and the update's.
//                  At --threads 1 every kernel runs on that thread, so the figures hardly depend
//                  on the machine's load; with more threads they count the calling thread only
// Exit status: 0 on success, 1 on a runtime error (the message names the node and line), 2 on
// bad usage or an analysis failure.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include "graphcore/analysis.h"
#include "graphcore/autodiff.h"
#include "graphcore/optim.h"
#include "graphcore/runtime.h"
#include "graphcore/trainer.h"

namespace fs = std::filesystem;
namespace rt = graphcore::runtime;
using nlohmann::json;

namespace {

json attr_json(const graphcore::AttrValue& v) {
  return std::visit(
      [](const auto& x) -> json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return nullptr;
        } else if constexpr (std::is_same_v<T, double>) {
          // JSON has no infinity or NaN (nlohmann writes null): the names Python's float() reads.
          if (std::isnan(x)) return "nan";
          if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
          return x;
        } else {
          return x;
        }
      },
      v);
}

json graph_json(const rt::Executor& ex) {
  const graphcore::Graph& g = ex.graph();
  json nodes = json::array();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const graphcore::Node& n = g.nodes[i];
    json attrs = json::object();
    n.for_each_attr([&](const graphcore::Attr& a) { attrs[a.name] = attr_json(a.value); });
    json ins = json::array();
    for (const auto& r : n.inputs) ins.push_back({r.node, r.output});
    json outs = json::array();
    for (const auto& t : n.outputs) {
      json dims = json::array();
      for (const auto& d : t.shape.dims)
        dims.push_back(d.is_known() ? json(d.value()) : json(nullptr));
      outs.push_back({{"shape", dims}, {"dtype", std::string(graphcore::dtype_name(t.dtype))}});
    }
    const char* kind = n.kind == graphcore::NodeKind::Input       ? "input"
                       : n.kind == graphcore::NodeKind::Parameter ? "parameter"
                       : n.kind == graphcore::NodeKind::Constant  ? "constant"
                                                                  : "op";
    nodes.push_back({{"index", i},
                     {"id", n.id},
                     {"kind", kind},
                     {"op", std::string(n.op)},
                     {"api", std::string(n.api)},
                     {"scope", std::string(n.scope)},
                     {"inputs", ins},
                     {"outputs", outs},
                     {"attrs", attrs},
                     {"params", n.params},
                     {"line", n.range.start.line + 1}});
  }
  json outputs = json::array();
  for (const auto& r : g.outputs) outputs.push_back({r.node, r.output});
  json params = json::array();
  for (const auto& p : ex.params()) {
    params.push_back({{"name", p.name},
                      {"init", p.init.str()},
                      {"source", std::string(rt::init_source_name(p.source))},
                      {"note", p.note}});
  }
  return {{"cell", ex.report().name}, {"nodes", nodes}, {"outputs", outputs}, {"params", params}};
}

// CPU time the calling thread has used, in ms.
// CPU time of the whole process (every thread), ms.
double process_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

int usage() {
  std::cerr
      << "usage: cellscope-run FILE [--cell NAME] [--entry EXPR] [--input-shape SPEC]... "
         "[--input SPEC]... [--seed N] [--precision fp32|target] [--out DIR] [--dump-all] "
         "[--load-params DIR] [--ckpt FILE] [--output-npy FILE] [--bench N] "
         "[--list-params] [--grad] [--train-mode] [--train-step] [--threads N] [--profile N]\n";
  return 2;
}

// Writes through a temporary file in the same directory, renamed over `path`.
void write_npy_atomic(const fs::path& path, const rt::Tensor& t) {
  fs::path tmp = path;
  tmp += ".tmp" + std::to_string(::getpid()) + ".npy";
  rt::write_npy(tmp, t);
  fs::rename(tmp, path);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  spdlog::set_default_logger(spdlog::stderr_color_mt("cellscope-run"));
  std::string file, out_dir, load_dir, ckpt, output_npy;
  std::vector<std::string> input_specs;
  graphcore::AnalysisOptions opts;
  opts.record_facts = true;     // CellReport::instances: initializers at constructor sites
  opts.constant_values = true;  // elements of constants computed by numpy code
  rt::ExecOptions eo;
  bool dump_all = false, list_params = false, timing = false, grad = false, train_step = false;
  int bench = 0;
  int profile = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= args.size()) {
        std::cerr << "cellscope-run: " << a << " needs a value\n";
        std::exit(2);
      }
      return args[++i];
    };
    if (a == "--cell") {
      opts.cell = next();
    } else if (a == "--entry") {
      opts.entries.push_back(next());
    } else if (a == "--input-shape") {
      std::string err;
      auto t = graphcore::parse_input_spec(next(), &err);
      if (!t) {
        std::cerr << "cellscope-run: bad --input-shape: " << err << "\n";
        return 2;
      }
      opts.inputs.push_back(*t);
    } else if (a == "--input") {
      input_specs.push_back(next());
    } else if (a == "--seed") {
      eo.seed = std::stoull(next());
    } else if (a == "--precision") {
      std::string p = next();
      if (p == "target") {
        eo.precision = rt::Precision::Target;
      } else if (p != "fp32") {
        return usage();
      }
    } else if (a == "--out") {
      out_dir = next();
    } else if (a == "--load-params") {
      load_dir = next();
    } else if (a == "--ckpt") {
      ckpt = next();
    } else if (a == "--output-npy") {
      output_npy = next();
    } else if (a == "--dump-all") {
      dump_all = true;
    } else if (a == "--bench") {
      bench = std::stoi(next());
    } else if (a == "--profile") {
      profile = std::stoi(next());
      if (profile <= 0) return usage();
    } else if (a == "--threads") {
      eo.threads = std::stoi(next());
      if (eo.threads < 0) return usage();
    } else if (a == "--timing") {
      timing = true;
    } else if (a == "--list-params") {
      list_params = true;
    } else if (a == "--grad") {
      grad = true;
    } else if (a == "--train-mode") {
      eo.training = true;
    } else if (a == "--train-step") {
      train_step = true;
    } else if (!a.empty() && a[0] != '-' && file.empty()) {
      file = a;
    } else {
      return usage();
    }
  }
  if (file.empty()) return usage();
  if (train_step && (!grad || (bench <= 0 && profile <= 0))) {
    std::cerr << "cellscope-run: --train-step needs --grad and --bench N or --profile N\n";
    return 2;
  }

  using clock = std::chrono::steady_clock;
  auto ms_since = [](clock::time_point t) {
    return std::chrono::duration<double, std::milli>(clock::now() - t).count();
  };
  auto t_start = clock::now();
  graphcore::DiskSourceProvider disk;
  graphcore::AnalysisResult res = graphcore::analyze_file(file, opts, disk);
  double analysis_ms = ms_since(t_start);
  if (res.cells.empty()) {
    std::cerr << "cellscope-run: no Cell analysed in " << file << "\n";
    for (const auto& d : res.diagnostics) std::cerr << "  " << d.message << "\n";
    return 2;
  }
  for (const auto& d : res.diagnostics) {
    if (d.severity == graphcore::Severity::Error) {
      std::cerr << "cellscope-run: warning: analysis error at line " << d.range.start.line + 1
                << ": " << d.message << "\n";
    }
  }
  const graphcore::CellReport& analysed = res.cells.front();
  // --grad: the gradient graph (forward + backward) is what runs.
  std::optional<graphcore::autodiff::GradGraph> grad_graph;
  if (grad) {
    graphcore::autodiff::GradResult g = graphcore::autodiff::build_backward(analysed);
    if (!g.ok()) {
      std::cerr << "cellscope-run: cannot differentiate: " << g.error << "\n";
      return 2;
    }
    grad_graph = std::move(g.grad);
  }
  const graphcore::CellReport& report = grad_graph ? grad_graph->report : analysed;
  try {
    auto t_bind = clock::now();
    rt::Executor ex(report, eo);
    for (size_t i = 0; i < ex.num_inputs(); ++i)
      ex.set_input_spec(i, i < input_specs.size() ? input_specs[i] : "random", eo.seed);
    if (!load_dir.empty()) ex.load_params_npy(load_dir);
    if (!ckpt.empty()) {
      try {
        rt::CheckpointLoad r = ex.load_checkpoint(ckpt);
        spdlog::info("{}", r.summary());
      } catch (const rt::RuntimeError& e) {
        spdlog::error("{}", e.what());
        return 2;
      }
    }
    if (list_params) {
      for (const auto& p : ex.params()) {
        std::cout << p.name << " " << p.value.type_str() << " " << p.init.str() << " ["
                  << rt::init_source_name(p.source) << "] " << p.note << "\n";
      }
    }
    double bind_ms = ms_since(t_bind);
    if (bench > 0 || profile > 0) {
      // --train-step: the optimizer update after each run, with the Trainer's own update
      // functions (graphcore/trainer.h): the executor's parameters updated in place, then
      // BatchNorm's moving statistics written back.
      std::unique_ptr<rt::Optimizer> optimizer;
      if (train_step) {
        rt::OptimizerConfig cfg = rt::OptimizerConfig::defaults(rt::OptimizerKind::Momentum);
        cfg.learning_rate = rt::LrSchedule::constant(0.01);
        cfg.momentum = 0.9;
        optimizer = rt::step_optimizer(cfg, *grad_graph, ex);
      }
      auto update = [&] {
        const std::vector<rt::Tensor> outs = ex.outputs();
        rt::apply_gradients(*optimizer, ex, *grad_graph, rt::step_gradients(*grad_graph, outs));
        rt::write_back_state(ex, *grad_graph, outs);
      };
      // Wall ms of each run after a warm-up, sorted; each run's process CPU ms (every thread)
      // appended to `cpu` when given.
      auto time_runs = [&](const rt::Hooks& hooks, std::vector<double>* cpu = nullptr) {
        std::vector<double> ms;
        for (int r = 0; r <= bench; ++r) {
          ex.reset();
          const double c0 = process_cpu_ms();
          auto t0 = clock::now();
          rt::RunStatus s = ex.run(hooks);
          if (s.kind == rt::RunStatus::Kind::Finished && optimizer) update();
          double d = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
          const double c = process_cpu_ms() - c0;
          if (s.kind != rt::RunStatus::Kind::Finished) throw rt::RuntimeError(s.message);
          if (r > 0) {  // run 0 is the warm-up
            ms.push_back(d);
            if (cpu != nullptr) cpu->push_back(c);
          }
        }
        std::sort(ms.begin(), ms.end());
        return ms;
      };
      if (profile > 0) {
        // CPU time of this thread per operator (the graph's op name), accumulated between a
        // node's before and after hooks.
        std::map<std::string, std::pair<double, size_t>> by_op;
        double node_start = 0, total = 0, update_ms = 0;
        rt::Hooks ph;
        ph.before = [&](const rt::NodeEvent&) {
          node_start = thread_cpu_ms();
          return rt::HookAction::Continue;
        };
        ph.after = [&](const rt::NodeEvent& e) {
          auto& [ms, calls] = by_op[std::string(e.node.op)];
          ms += thread_cpu_ms() - node_start;
          ++calls;
          return rt::HookAction::Continue;
        };
        for (int r = 0; r <= profile; ++r) {
          if (r == 1) by_op.clear();  // run 0 is the warm-up
          ex.reset();
          const double t0 = thread_cpu_ms();
          rt::RunStatus s = ex.run(ph);
          if (s.kind != rt::RunStatus::Kind::Finished) throw rt::RuntimeError(s.message);
          const double t1 = thread_cpu_ms();
          if (optimizer) update();
          if (r > 0) {
            total += thread_cpu_ms() - t0;
            update_ms += thread_cpu_ms() - t1;
          }
        }
        std::vector<std::pair<double, std::string>> rows;
        rows.reserve(by_op.size() + 1);
        for (const auto& [op, v] : by_op) rows.emplace_back(v.first, op);
        std::sort(rows.rbegin(), rows.rend());
        if (optimizer) rows.emplace_back(update_ms, "(optimizer update)");
        const double runs = profile;
        std::fprintf(stderr,
                     "profile: CPU ms of the calling thread per run, %d runs, %.1f ms/run\n",
                     profile, total / runs);
        for (const auto& [ms, op] : rows) {
          const size_t calls = by_op.count(op) ? by_op[op].second : static_cast<size_t>(profile);
          std::fprintf(stderr, "%10.2f ms %5.1f%% %6.1f calls  %s\n", ms / runs,
                       100.0 * ms / std::max(total, 1e-9), static_cast<double>(calls) / runs,
                       op.c_str());
        }
        if (bench <= 0) return 0;
      }
      // A debugger with no breakpoints: both hooks look the node's line up in an (empty)
      // breakpoint set and continue.
      std::set<uint32_t> breakpoints;
      size_t calls = 0;
      rt::Hooks hooks;
      hooks.before = [&](const rt::NodeEvent& e) {
        ++calls;
        return breakpoints.count(e.node.range.start.line) ? rt::HookAction::Pause
                                                          : rt::HookAction::Continue;
      };
      hooks.after = hooks.before;
      std::vector<double> plain, hooked, plain_cpu;
      // Interleave to share thermal/cache conditions.
      for (int rep = 0; rep < 2; ++rep) {
        auto a = time_runs({}, &plain_cpu);
        auto b = time_runs(hooks);
        plain.insert(plain.end(), a.begin(), a.end());
        hooked.insert(hooked.end(), b.begin(), b.end());
      }
      std::sort(plain.begin(), plain.end());
      std::sort(hooked.begin(), hooked.end());
      std::sort(plain_cpu.begin(), plain_cpu.end());
      auto median = [](const std::vector<double>& v) { return v[v.size() / 2]; };
      json j = {{"file", file},
                {"cell", report.name},
                {"nodes", report.graph.nodes.size()},
                {"runs", plain.size()},
                {"plain_ms_median", median(plain)},
                {"plain_ms_min", plain.front()},
                {"plain_cpu_ms_median", median(plain_cpu)},
                {"hooked_ms_median", median(hooked)},
                {"hooked_ms_min", hooked.front()},
                {"hook_calls", calls},
                {"threads", eo.threads},
                {"train_step", train_step},
                {"kernels", rt::kernel_library()},
                {"hook_overhead_pct", 100.0 * (median(hooked) / median(plain) - 1.0)}};
      std::cout << j.dump() << "\n";
      return 0;
    }
    auto t_run = clock::now();
    rt::RunStatus s = ex.run();
    double run_ms = ms_since(t_run);
    if (s.kind != rt::RunStatus::Kind::Finished) {
      std::cerr << "cellscope-run: " << s.message << "\n";
      return 1;
    }
    if (!out_dir.empty()) {
      fs::create_directories(fs::path(out_dir) / "outputs");
      fs::create_directories(fs::path(out_dir) / "inputs");
      ex.save_params_npy(fs::path(out_dir) / "params");
      std::ofstream(fs::path(out_dir) / "graph.json") << graph_json(ex).dump(1) << "\n";
      for (size_t i = 0; i < ex.num_inputs(); ++i) {
        rt::write_npy(fs::path(out_dir) / "inputs" / (std::to_string(i) + ".npy"),
                      *ex.value(*ex.find_node(ex.input_name(i))));
      }
      auto outs = ex.outputs();
      for (size_t i = 0; i < outs.size(); ++i)
        rt::write_npy(fs::path(out_dir) / "outputs" / (std::to_string(i) + ".npy"), outs[i]);
      if (dump_all) {
        fs::create_directories(fs::path(out_dir) / "values");
        for (size_t i = 0; i < ex.graph().nodes.size(); ++i) {
          for (size_t k = 0; k < ex.graph().nodes[i].outputs.size(); ++k) {
            if (const rt::Tensor* t = ex.value(i, k)) {
              rt::write_npy(fs::path(out_dir) / "values" /
                                (std::to_string(i) + "_" + std::to_string(k) + ".npy"),
                            *t);
            }
          }
        }
      }
    }
    auto outs = ex.outputs();
    if (grad_graph) {
      const auto& gg = *grad_graph;
      std::map<std::string, rt::Tensor> grads;
      for (size_t k = 0; k < gg.param_grads.size(); ++k) {
        grads[gg.param_grads[k].first] = outs.at(1 + k);
      }
      for (const std::string& name : gg.unused_params) {
        const rt::ParamState* p = ex.param(name);
        if (p) grads[name] = rt::Tensor::zeros(p->value.shape(), p->value.dtype());
      }
      std::cout << "loss: " << outs.at(0).at(0) << "\n";
      for (const auto& [name, t] : grads) {
        std::cout << "grad " << name << ": " << t.type_str() << " " << rt::compute_stats(t).str()
                  << "\n";
      }
      if (!out_dir.empty()) {
        fs::create_directories(fs::path(out_dir) / "grads");
        write_npy_atomic(fs::path(out_dir) / "loss.npy", outs.at(0));
        for (const auto& [name, t] : grads) {
          write_npy_atomic(fs::path(out_dir) / "grads" / (name + ".npy"), t);
        }
        if (!gg.state_updates.empty()) fs::create_directories(fs::path(out_dir) / "state");
        for (size_t k = 0; k < gg.state_updates.size(); ++k) {
          write_npy_atomic(fs::path(out_dir) / "state" / (gg.state_updates[k].first + ".npy"),
                           outs.at(1 + gg.param_grads.size() + k));
        }
      }
      if (timing) {
        std::cout
            << "timing "
            << json{{"analysis_ms", analysis_ms}, {"bind_ms", bind_ms}, {"run_ms", run_ms}}.dump()
            << "\n";
      }
      return 0;
    }
    if (!output_npy.empty()) {
      for (size_t i = 0; i < outs.size(); ++i) {
        fs::path p = output_npy;
        if (i > 0) p = p.parent_path() / (p.stem().string() + "." + std::to_string(i) + ".npy");
        write_npy_atomic(p, outs[i]);
      }
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      std::cout << "output " << i << ": " << outs[i].type_str() << " "
                << rt::compute_stats(outs[i]).str() << " " << outs[i].preview(6) << "\n";
    }
    if (timing) {
      std::cout
          << "timing "
          << json{{"analysis_ms", analysis_ms}, {"bind_ms", bind_ms}, {"run_ms", run_ms}}.dump()
          << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "cellscope-run: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
