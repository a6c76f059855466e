// The debug adapter: see dap_server.h and docs/dap.md.
#include "dap_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "graphcore/analysis.h"
#include "graphcore/optimize.h"
#include "graphcore/outline.h"
#include "graphcore/runtime.h"
#include "graphcore/text.h"
#include "pipeline.h"
#include "rpc/jsonrpc.h"
#include "rpc/stdio_transport.h"

namespace cellscope::dap {

namespace fs = std::filesystem;
namespace rt = graphcore::runtime;
using nlohmann::json;

namespace {

constexpr int kThreadId = 1;

// At most the first 40 characters of `s`, for logs.
std::string excerpt(std::string s) {
  if (s.size() > 40) s = s.substr(0, 40) + "...";
  return s;
}

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string canonical(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? path : p.string();
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) s += ",";
  return s + ")";
}

// "Tensor(1, 64, 56, 56) float32 min=.. max=.." for a variable's value.
std::string tensor_summary(const rt::Tensor& t) {
  std::string s =
      "Tensor" + shape_str(t.shape()) + " " + std::string(graphcore::dtype_name(t.dtype()));
  if (t.numel() == 0) return s;
  rt::TensorStats st = rt::compute_stats(t);
  s += " min=" + num(st.min) + " max=" + num(st.max) + " mean=" + num(st.mean);
  if (st.nan_count) s += " nan=" + std::to_string(st.nan_count);
  if (st.inf_count) s += " inf=" + std::to_string(st.inf_count);
  return s;
}

// The lines (1-based) on which a class or function definition starts, per file, from the file's
// syntactic outline (graphcore/outline.h): where a breakpoint would leave its function.
class DefinitionLines {
 public:
  const std::set<int>& of(const std::string& file) {
    auto it = files_.find(file);
    if (it != files_.end()) return it->second;
    std::ifstream in(file, std::ios::binary);
    std::ostringstream os;
    os << in.rdbuf();
    std::set<int> lines;
    collect(graphcore::outline_python(file, os.str()).symbols, lines);
    return files_.emplace(file, std::move(lines)).first->second;
  }

 private:
  static void collect(const std::vector<graphcore::OutlineSymbol>& symbols, std::set<int>& out) {
    using K = graphcore::OutlineSymbol::Kind;
    for (const auto& sym : symbols) {
      if (sym.kind == K::Class || sym.kind == K::Function || sym.kind == K::Method)
        out.insert(static_cast<int>(sym.selection.start.line) + 1);
      collect(sym.children, out);
    }
  }
  std::map<std::string, std::set<int>> files_;
};

struct NodeInfo {
  std::string frame;               // Cell instance path whose construct produced the node
  std::vector<std::string> chain;  // user-Cell frames, root first, ending with `frame`
  std::string file;                // canonical
  int line = 0;                    // 1-based
  int column = 1;
  bool stoppable = false;  // an operation (not an input/parameter/constant)
};

struct FrameSite {
  std::string file;
  int line = 0;
};

struct Breakpoint {
  int id = 0;
  int line = 0;  // verified line
  std::string condition, hit_condition, log_message;
  int hits = 0;
};

enum class StepMode { None, In, Over, Out };

// What a variablesReference stands for.
struct VarRef {
  enum class Kind { Locals, Params, Tensor, Values } kind = Kind::Locals;
  std::string frame;
  rt::Tensor tensor;
};

struct LaunchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace

struct Session::Impl {
  std::function<void(std::string)> send;
  std::function<void()> disconnect_handler;
  std::atomic<int> seq{1};

  std::mutex m;
  std::condition_variable cv;

  // Launch results.
  std::unique_ptr<rt::Executor> ex;
  std::vector<NodeInfo> info;
  std::map<std::string, std::string> class_of;      // instance path -> class name
  std::map<std::string, FrameSite> call_site;       // frame path -> call line in its parent
  std::map<std::string, std::set<int>> node_lines;  // canonical file -> lines with nodes
  std::map<std::string, std::vector<std::pair<int, std::string>>>
      assigned;  // frame -> (line, name)
  std::string program;
  bool stop_on_entry = false;
  bool launched = false;
  bool configured = false;
  std::vector<json> pending_set_breakpoints;
  DefinitionLines definitions;

  // Breakpoints and filters.
  std::map<std::string, std::map<int, Breakpoint>> breakpoints;  // canonical file -> line
  int next_bp_id = 1;
  std::set<std::string> filters;

  // Execution state (guarded by m).
  enum class State { Idle, Running, Stopped, Done } state = State::Idle;
  std::thread worker;
  std::atomic<bool> interrupt{false};
  std::atomic<bool> terminate{false};
  bool resume = false;
  StepMode step = StepMode::None;
  std::string step_frame;
  int step_line = 0;
  std::string step_file;
  bool entry_pending = false;
  std::optional<size_t> prev_node;  // last stoppable node whose `before` ran
  std::string stop_reason, stop_text;
  std::vector<int> hit_ids;
  size_t stop_node = 0;
  bool stop_after = false;
  std::vector<VarRef> refs;
  bool focus_sent = false;  // a `cellscope.focus` event names the paused node

  explicit Impl(std::function<void(std::string)> s) : send(std::move(s)) {}

  // ---- messages -------------------------------------------------------------------------------
  void event(const std::string& name, json body = json::object()) {
    json msg = {{"seq", seq++}, {"type", "event"}, {"event", name}, {"body", std::move(body)}};
    send(msg.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  // The request's seq and command, as sent when they have the right types (handle() answers
  // only requests with an integer seq); never throws, whatever the request holds.
  static json request_seq(const json& req) {
    auto it = req.find("seq");
    return it != req.end() && it->is_number_integer() ? *it : json(0);
  }
  static std::string request_command(const json& req) {
    auto it = req.find("command");
    return it != req.end() && it->is_string() ? it->get<std::string>() : std::string();
  }
  void respond(const json& req, json body = json::object()) {
    json msg = {{"seq", seq++},
                {"type", "response"},
                {"request_seq", request_seq(req)},
                {"success", true},
                {"command", request_command(req)},
                {"body", std::move(body)}};
    send(msg.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  void fail(const json& req, const std::string& message) {
    json msg = {{"seq", seq++},
                {"type", "response"},
                {"request_seq", request_seq(req)},
                {"success", false},
                {"command", request_command(req)},
                {"message", message},
                {"body", {{"error", {{"id", 1}, {"format", message}, {"showUser", true}}}}}};
    send(msg.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  void output(const std::string& text, const std::string& category = "console") {
    event("output", {{"category", category}, {"output", text + "\n"}});
  }

  // ---- dispatch -------------------------------------------------------------------------------
  void handle(const std::string& body) {
    // Lone surrogate escapes (JSON.stringify's output for unpaired surrogates) read as U+FFFD.
    json req = rpc::parse_message(body);
    if (req.is_discarded()) {
      spdlog::error("dap: a message that is not valid JSON was dropped ({} bytes)", body.size());
      return;
    }
    // Members of the wrong JSON type never throw here: a message that cannot be answered (no
    // integer seq to put in request_seq) is dropped with a warning, one that can is answered
    // with an error response.
    if (!req.is_object()) {
      spdlog::warn("dap: ignoring a message that is not a JSON object");
      return;
    }
    auto type = req.find("type");
    if (type == req.end() || !type->is_string()) {
      spdlog::warn("dap: ignoring a message without a string 'type'");
      return;
    }
    if (*type != "request") return;
    auto seq_it = req.find("seq");
    if (seq_it == req.end() || !seq_it->is_number_integer()) {
      spdlog::warn("dap: ignoring a request whose 'seq' is not an integer ({})",
                   seq_it == req.end() ? std::string("missing") : excerpt(seq_it->dump()));
      return;
    }
    auto command = req.find("command");
    if (command == req.end() || !command->is_string()) {
      spdlog::warn("dap: request {} has no string 'command'", seq_it->dump());
      return fail(req, "invalid request: 'command' must be a string");
    }
    if (!req.contains("arguments") || !req["arguments"].is_object())
      req["arguments"] = json::object();
    const std::string cmd = command->get<std::string>();
    spdlog::debug("dap: request {}", cmd);
    try {
      if (cmd == "initialize") return on_initialize(req);
      if (cmd == "launch") return on_launch(req);
      if (cmd == "attach") return fail(req, "cellscope dap supports launch only");
      if (cmd == "setBreakpoints") return on_set_breakpoints(req);
      if (cmd == "setExceptionBreakpoints") return on_set_exception_breakpoints(req);
      if (cmd == "setFunctionBreakpoints") return respond(req, {{"breakpoints", json::array()}});
      if (cmd == "configurationDone") return on_configuration_done(req);
      if (cmd == "threads")
        return respond(req, {{"threads", {{{"id", kThreadId}, {"name", "construct"}}}}});
      if (cmd == "stackTrace") return on_stack_trace(req);
      if (cmd == "scopes") return on_scopes(req);
      if (cmd == "variables") return on_variables(req);
      if (cmd == "evaluate") return on_evaluate(req);
      if (cmd == "exceptionInfo") return on_exception_info(req);
      if (cmd == "continue" || cmd == "next" || cmd == "stepIn" || cmd == "stepOut")
        return on_resume(req, cmd);
      if (cmd == "pause") return on_pause(req);
      if (cmd == "terminate") return on_terminate(req);
      if (cmd == "disconnect") return on_disconnect(req);
      fail(req, "unsupported request '" + cmd + "'");
    } catch (const std::exception& e) {
      spdlog::error("dap: {} failed: {}", cmd, e.what());
      fail(req, cmd + " failed: " + rpc::describe_exception(e));
    }
  }

  void on_initialize(const json& req) {
    json filters_json = json::array();
    auto filter = [&](const char* id, const char* label, const char* desc) {
      filters_json.push_back(
          {{"filter", id}, {"label", label}, {"description", desc}, {"default", false}});
    };
    filter("nan", "NaN", "Stop after a node whose output has a NaN");
    filter("inf", "Inf", "Stop after a node whose output has an infinity");
    filter("fp16-overflow", "fp16 overflow",
           "Stop after a node whose output has a finite value beyond the fp16 range (|v| > 65504)");
    filter("all-zero", "All zero", "Stop after a node whose output is all zeros");
    respond(req, {{"supportsConfigurationDoneRequest", true},
                  {"supportsConditionalBreakpoints", true},
                  {"supportsHitConditionalBreakpoints", true},
                  {"supportsLogPoints", true},
                  {"supportsEvaluateForHovers", true},
                  {"supportsTerminateRequest", true},
                  {"supportsExceptionInfoRequest", true},
                  {"supportsSteppingGranularity", false},
                  {"supportsSetVariable", false},
                  {"supportsRestartRequest", false},
                  {"supportsStepBack", false},
                  {"supportsFunctionBreakpoints", false},
                  {"supportsDelayedStackTraceLoading", false},
                  {"exceptionBreakpointFilters", filters_json}});
    event("initialized");
  }

  // ---- launch ---------------------------------------------------------------------------------
  void on_launch(const json& req) {
    json args = req.value("arguments", json::object());
    std::unique_lock lock(m);
    if (launched || state != State::Idle)
      return fail(req, "launch: the session was already launched");
    try {
      launch(args);
    } catch (const std::exception& e) {
      std::string msg = e.what();
      spdlog::warn("dap: launch failed: {}", msg);
      for (const json& p : pending_set_breakpoints) set_breakpoints_unlaunched(p, msg);
      pending_set_breakpoints.clear();
      fail(req, msg);
      output(msg, "stderr");
      state = State::Done;
      event("terminated");
      return;
    }
    launched = true;
    respond(req);
    for (const json& p : pending_set_breakpoints) set_breakpoints(p);
    pending_set_breakpoints.clear();
    if (configured) start_worker();
  }

  void launch(const json& args) {
    auto str_arg = [&](const char* key) -> std::optional<std::string> {
      if (!args.contains(key) || args[key].is_null()) return std::nullopt;
      if (!args[key].is_string()) throw LaunchError(std::string("'") + key + "' must be a string");
      return args[key].get<std::string>();
    };
    auto prog = str_arg("program");
    if (!prog || prog->empty()) throw LaunchError("launch: 'program' (the model file) is required");
    program = *prog;
    std::error_code ec;
    if (!fs::is_regular_file(program, ec))
      throw LaunchError("launch: program '" + program + "' does not exist or is not a file");

    graphcore::AnalysisOptions opts;
    opts.record_facts = true;
    opts.constant_values = true;  // numpy-computed constants' elements, for the runtime
    if (auto t = str_arg("target")) {
      bool known = false;
      std::string names;
      for (const auto& ti : graphcore::targets()) {
        known |= ti.name == *t;
        names += (names.empty() ? "" : ", ") + std::string(ti.name);
      }
      if (!known) throw LaunchError("launch: unknown target '" + *t + "' (known: " + names + ")");
      opts.target = *t;
    }
    rt::ExecOptions eo;
    if (args.contains("seed")) {
      if (!args["seed"].is_number_integer() || args["seed"].get<int64_t>() < 0)
        throw LaunchError("launch: 'seed' must be a non-negative integer");
      eo.seed = args["seed"].get<uint64_t>();
    }
    if (auto p = str_arg("precision")) {
      if (*p == "target")
        eo.precision = rt::Precision::Target;
      else if (*p != "fp32")
        throw LaunchError("launch: precision must be \"fp32\" or \"target\", not \"" + *p + "\"");
    }
    // The largest tensor the runtime may allocate; larger inputs, parameters or outputs fail with
    // their shape and size instead of exhausting the machine (default: its physical memory).
    size_t max_tensor_bytes = 0;
    if (args.contains("maxTensorBytes")) {
      const json& m = args["maxTensorBytes"];
      if (!m.is_number_unsigned() || m.get<uint64_t>() == 0)
        throw LaunchError("launch: 'maxTensorBytes' must be a positive integer");
      max_tensor_bytes = static_cast<size_t>(m.get<uint64_t>());
    }
    rt::set_max_tensor_bytes(max_tensor_bytes);
    stop_on_entry = args.value("stopOnEntry", false);
    // checkpoint: a MindSpore .ckpt (or .safetensors) loaded into the parameters after they are
    // initialised. Checked here, before the analysis, so a wrong path fails fast.
    auto checkpoint = str_arg("checkpoint");
    if (checkpoint) {
      if (checkpoint->empty()) throw LaunchError("launch: 'checkpoint' is an empty path");
      if (!fs::is_regular_file(*checkpoint, ec))
        throw LaunchError("launch: checkpoint '" + *checkpoint +
                          "' does not exist or is not a file");
    }

    // inputs: shapes ("1,3,224,224[:dtype]") or value specs (random[:seed], ones, zeros, .npy).
    std::vector<std::string> value_specs;
    auto is_value_spec = [](const std::string& s) {
      return s == "random" || s.rfind("random:", 0) == 0 || s == "ones" || s == "zeros" ||
             (s.size() > 4 && s.substr(s.size() - 4) == ".npy");
    };
    if (args.contains("inputs")) {
      if (!args["inputs"].is_array())
        throw LaunchError("launch: 'inputs' must be a list of strings");
      for (const json& j : args["inputs"]) {
        if (!j.is_string()) throw LaunchError("launch: 'inputs' must be a list of strings");
        std::string s = j.get<std::string>();
        if (is_value_spec(s)) {
          value_specs.push_back(s);
          if (s.size() > 4 && s.substr(s.size() - 4) == ".npy") {
            try {
              rt::Tensor t = rt::read_npy(s);
              graphcore::TensorType tt;
              tt.dtype = t.dtype();
              std::string spec;
              for (int64_t d : t.shape()) spec += (spec.empty() ? "" : ",") + std::to_string(d);
              std::string err;
              auto parsed = graphcore::parse_input_spec(
                  spec + ":" + std::string(graphcore::dtype_name(t.dtype())), &err);
              if (parsed) opts.inputs.push_back(*parsed);
            } catch (const std::exception& e) {
              throw LaunchError("launch: cannot read input " + s + ": " + e.what());
            }
          }
          continue;
        }
        std::string err;
        auto t = graphcore::parse_input_spec(s, &err);
        if (!t) throw LaunchError("launch: bad input shape \"" + s + "\": " + err);
        opts.inputs.push_back(*t);
        value_specs.emplace_back();
      }
    }
    std::string default_spec = "random";
    if (args.contains("input")) {
      if (args["input"].is_string()) {
        default_spec = args["input"].get<std::string>();
        if (!is_value_spec(default_spec))
          throw LaunchError(
              "launch: 'input' must be random, random:SEED, ones, zeros or a .npy "
              "file, not \"" +
              default_spec + "\"");
      } else {
        throw LaunchError("launch: 'input' must be a string");
      }
    }

    // The pipeline's first stage, as the CLI and the language server run it (an internal error
    // becomes an error diagnostic); both analyses read each file once.
    cellscope::server::CachingSourceProvider sources;
    auto cell = str_arg("cell");
    graphcore::AnalysisResult res = cellscope::server::analyze_guarded(program, opts, sources);
    const graphcore::CellReport* report = nullptr;
    auto pick = [&](const graphcore::AnalysisResult& r) -> const graphcore::CellReport* {
      for (const auto& c : r.cells)
        if (!cell || c.name == *cell || c.class_name == *cell) return &c;
      return nullptr;
    };
    report = pick(res);
    graphcore::AnalysisResult res2;
    if (!report && cell) {
      opts.cell = *cell;
      res2 = cellscope::server::analyze_guarded(program, opts, sources);
      report = pick(res2);
      if (!report) {
        std::string names;
        for (const auto& c : res.cells) names += (names.empty() ? "" : ", ") + c.name;
        throw LaunchError(
            "launch: unknown cell '" + *cell + "' in " + program +
            (names.empty() ? std::string(" (no Cell found)") : " (cells: " + names + ")"));
      }
    }
    const auto& diags = res2.cells.empty() ? res.diagnostics : res2.diagnostics;
    if (!report) {
      std::string msg = "launch: no Cell could be analysed in " + program;
      for (const auto& d : diags)
        if (d.severity == graphcore::Severity::Error)
          msg += "\n  line " + std::to_string(d.range.start.line + 1) + ": " + d.message;
      throw LaunchError(msg);
    }
    std::string errors;
    for (const auto& d : diags)
      if (d.severity == graphcore::Severity::Error)
        errors += "\n  " + fs::path(d.file.empty() ? program : d.file).filename().string() + ":" +
                  std::to_string(d.range.start.line + 1) + ": " + d.message;
    if (!report->compiled || !errors.empty())
      throw LaunchError("launch: " + report->name + " does not compile with the given inputs" +
                        (errors.empty() ? std::string() : ":" + errors));

    try {
      ex = std::make_unique<rt::Executor>(*report, eo);
      if (!value_specs.empty() && value_specs.size() != ex->num_inputs())
        throw LaunchError("launch: " + report->name + " takes " + std::to_string(ex->num_inputs()) +
                          " input(s), 'inputs' gives " + std::to_string(value_specs.size()));
      for (size_t i = 0; i < ex->num_inputs(); ++i) {
        std::string spec =
            i < value_specs.size() && !value_specs[i].empty() ? value_specs[i] : default_spec;
        ex->set_input_spec(i, spec, eo.seed);
      }
      if (checkpoint) {
        rt::CheckpointLoad loaded = ex->load_checkpoint(*checkpoint);
        spdlog::info("dap: {}", loaded.summary());
        output("cellscope: " + loaded.summary());
      }
    } catch (const LaunchError&) {
      ex.reset();
      throw;
    } catch (const std::exception& e) {
      ex.reset();
      throw LaunchError("launch: " + std::string(e.what()));
    }
    index_graph();
    output("cellscope: " + report->name + " from " + program + ", " +
           std::to_string(ex->graph().nodes.size()) + " nodes, " +
           std::to_string(ex->params().size()) + " parameters, inputs " + input_desc());
  }

  std::string input_desc() const {
    std::string s;
    for (size_t i = 0; i < ex->num_inputs(); ++i) {
      const rt::Tensor* t = ex->value(*ex->find_node(ex->input_name(i)));
      s += (s.empty() ? "" : ", ") + ex->input_name(i) + (t ? t->type_str() : "");
    }
    return s;
  }

  // Frames, call sites and lines of the compiled graph.
  void index_graph() {
    const graphcore::CellReport& rep = ex->report();
    std::set<std::string> user_cells = {""};
    class_of[""] = rep.class_name.empty() ? rep.name : rep.class_name;
    for (const auto& ci : rep.instances) {
      class_of[ci.path] = ci.class_name;
      // User classes (defined in a source file) have a construct to stop in; MindSpore's own
      // layers and containers (nn.Conv2d, nn.SequentialCell) do not.
      if (ci.api.empty() && !ci.class_file.empty()) user_cells.insert(ci.path);
    }
    auto parent = [](const std::string& p) {
      auto k = p.rfind('.');
      return k == std::string::npos ? std::string() : p.substr(0, k);
    };
    auto frame_of = [&](std::string scope) {
      while (!scope.empty() && !user_cells.count(scope)) scope = parent(scope);
      return scope;
    };
    const auto& nodes = ex->graph().nodes;
    info.assign(nodes.size(), {});
    std::map<std::string, std::string> canon;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const auto& n = nodes[i];
      NodeInfo& ni = info[i];
      ni.frame = frame_of(std::string(n.scope));
      for (std::string f = ni.frame;; f = frame_of(parent(f))) {
        ni.chain.insert(ni.chain.begin(), f);
        if (f.empty()) break;
      }
      std::string file = n.file.empty() ? rep.file : std::string(n.file);
      auto it = canon.find(file);
      if (it == canon.end()) it = canon.emplace(file, canonical(file)).first;
      ni.file = it->second;
      ni.line = static_cast<int>(n.range.start.line) + 1;
      ni.column = static_cast<int>(n.range.start.column) + 1;
      ni.stoppable = n.kind == graphcore::NodeKind::Op;
      if (ni.stoppable) node_lines[ni.file].insert(ni.line);
    }
    // Call sites: where a construct first called each user Cell, as the analysis recorded it.
    // A Cell inside a MindSpore container (nn.SequentialCell) is called by the container: the
    // call of the container in the user frame's construct stands for it.
    std::map<std::string, const graphcore::CellInstance*> by_path;
    for (const auto& ci : rep.instances) by_path[ci.path] = &ci;
    for (const auto& path : user_cells) {
      if (path.empty()) continue;
      const std::string frame = frame_of(parent(path));
      for (std::string p = path; p != frame && !p.empty(); p = parent(p)) {
        auto it = by_path.find(p);
        if (it == by_path.end() || it->second->call_file.empty()) continue;
        call_site[path] = {canonical(it->second->call_file),
                           static_cast<int>(it->second->call_range.start.line) + 1};
        break;
      }
    }
    // Variable names assigned on each line of each frame's construct.
    for (const auto& f : rep.facts) {
      if (f.kind == graphcore::TypeFact::Kind::Assignment && !f.name.empty())
        assigned[f.scope].emplace_back(static_cast<int>(f.range.start.line) + 1, f.name);
    }
  }

  // ---- breakpoints ----------------------------------------------------------------------------
  void set_breakpoints_unlaunched(const json& req, const std::string& why) {
    json out = json::array();
    for (const json& b : req["arguments"].value("breakpoints", json::array()))
      out.push_back({{"verified", false}, {"line", b.value("line", 0)}, {"message", why}});
    respond(req, {{"breakpoints", out}});
  }

  void on_set_breakpoints(const json& req) {
    std::unique_lock lock(m);
    if (!launched) {
      pending_set_breakpoints.push_back(req);  // answered once launch compiled the model
      return;
    }
    set_breakpoints(req);
  }

  // Whether a `def`/`class` starts in (from, to): the breakpoint would leave its function.
  bool crosses_definition(const std::string& file, int from, int to) {
    const std::set<int>& defs = definitions.of(file);
    auto it = defs.upper_bound(from);
    return it != defs.end() && *it < to;
  }

  void set_breakpoints(const json& req) {
    const json& args = req["arguments"];
    std::string path = args.contains("source") ? args["source"].value("path", "") : "";
    std::string file = canonical(path);
    auto& table = breakpoints[file];
    std::map<int, Breakpoint> old = std::move(table);
    table.clear();
    json out = json::array();
    const auto lines_it = node_lines.find(file);
    // By reference into the request, so that a member of the wrong type is named in full
    // ("arguments.breakpoints[0].line must be a number, but is a string").
    static const json kNone = json::array();
    const auto bps_it = args.find("breakpoints");
    const json& bps = bps_it != args.end() && !bps_it->is_null() ? *bps_it : kNone;
    if (!bps.is_array())
      throw json::type_error::create(
          302, "type must be array, but is " + std::string(bps.type_name()), &bps);
    for (const json& b : bps) {
      int line = b.value("line", 0);
      json r = {{"verified", false}, {"line", line}};
      if (lines_it == node_lines.end()) {
        r["message"] = "no graph node of " + ex->report().name + " comes from " +
                       fs::path(path).filename().string();
        out.push_back(r);
        continue;
      }
      auto it = lines_it->second.lower_bound(line);
      if (it == lines_it->second.end() || crosses_definition(file, line, *it)) {
        r["message"] = "line " + std::to_string(line) +
                       " produces no graph node (not in construct of a compiled Cell, or no "
                       "tensor operation follows it in that function)";
        out.push_back(r);
        continue;
      }
      Breakpoint bp;
      bp.line = *it;
      auto prev = old.find(bp.line);
      bp.id = prev != old.end() ? prev->second.id : next_bp_id++;
      bp.condition = b.value("condition", "");
      bp.hit_condition = b.value("hitCondition", "");
      bp.log_message = b.value("logMessage", "");
      if (bp.hit_condition.find_first_not_of(' ') != std::string::npos &&
          !parse_hit_condition(bp.hit_condition)) {
        r["message"] = "invalid hit condition `" + bp.hit_condition +
                       "`: expected a count N, =N, >N, >=N or %N (every N-th hit, N > 0)";
        out.push_back(r);
        continue;
      }
      r = {{"id", bp.id}, {"verified", true}, {"line", bp.line}};
      if (bp.line != line)
        r["message"] = "moved from line " + std::to_string(line) +
                       " to the next line that produces a graph node";
      table[bp.line] = bp;
      out.push_back(r);
    }
    respond(req, {{"breakpoints", out}});
  }

  void on_set_exception_breakpoints(const json& req) {
    std::unique_lock lock(m);
    filters.clear();
    json out = json::array();
    static const json kNone = json::array();
    const json& args = req["arguments"];
    const auto filters_it = args.find("filters");
    const json& fs = filters_it != args.end() && !filters_it->is_null() ? *filters_it : kNone;
    if (!fs.is_array())
      throw json::type_error::create(
          302, "type must be array, but is " + std::string(fs.type_name()), &fs);
    for (const json& f : fs) {
      std::string id = f.get<std::string>();
      bool ok = id == "nan" || id == "inf" || id == "fp16-overflow" || id == "all-zero";
      if (ok) filters.insert(id);
      out.push_back({{"verified", ok}});
    }
    respond(req, {{"breakpoints", out}});
  }

  // ---- execution ------------------------------------------------------------------------------
  void on_configuration_done(const json& req) {
    std::unique_lock lock(m);
    respond(req);
    configured = true;
    if (launched && state == State::Idle) start_worker();
  }

  void start_worker() {
    state = State::Running;
    entry_pending = stop_on_entry;
    worker = std::thread([this] { run_worker(); });
  }

  // A hit condition: `N`, `=N`, `==N`, `>N`, `>=N` or `%N` (every N-th hit), spaces ignored.
  struct HitCondition {
    std::string op;
    int n = 0;
  };
  static std::optional<HitCondition> parse_hit_condition(const std::string& cond) {
    std::string c;
    for (char ch : cond)
      if (ch != ' ') c += ch;
    HitCondition h;
    for (const char* op : {">=", "==", "%", ">", "="}) {
      if (c.rfind(op, 0) == 0) {
        h.op = op;
        break;
      }
    }
    const char* b = c.data() + h.op.size();
    const char* e = c.data() + c.size();
    auto [end, ec] = std::from_chars(b, e, h.n);
    if (b == e || ec != std::errc() || end != e || (h.op == "%" && h.n <= 0)) return std::nullopt;
    if (h.op.empty() || h.op == "=") h.op = "==";
    return h;
  }
  static bool hit_condition_met(const std::string& cond, int hits) {
    if (cond.find_first_not_of(' ') == std::string::npos) return true;
    auto h = parse_hit_condition(cond);
    if (!h) return true;  // refused when the breakpoint was set
    if (h->op == "%") return hits % h->n == 0;
    if (h->op == ">=") return hits >= h->n;
    if (h->op == ">") return hits > h->n;
    return hits == h->n;
  }

  // Called with m held, from a hook: whether to stop before node `i`.
  rt::HookAction before(size_t i) {
    const NodeInfo& ni = info[i];
    if (!ni.stoppable) return rt::HookAction::Continue;
    bool new_line = true;
    if (prev_node) {
      const NodeInfo& p = info[*prev_node];
      new_line = !(p.frame == ni.frame && p.line == ni.line && p.file == ni.file);
    }
    prev_node = i;
    if (entry_pending) {
      entry_pending = false;
      return pause("entry", "");
    }
    if (!new_line) return rt::HookAction::Continue;
    auto bf = breakpoints.find(ni.file);
    if (bf != breakpoints.end()) {
      auto bi = bf->second.find(ni.line);
      if (bi != bf->second.end()) {
        Breakpoint& bp = bi->second;
        bool cond_ok = true;
        if (!bp.condition.empty()) {
          std::string err;
          cond_ok = eval_condition(bp.condition, ni.frame, i, &err);
          if (!err.empty()) {
            output("breakpoint condition \"" + bp.condition + "\": " + err, "stderr");
            cond_ok = true;
          }
        }
        if (cond_ok) {
          ++bp.hits;
          if (hit_condition_met(bp.hit_condition, bp.hits)) {
            if (!bp.log_message.empty()) {
              output(interpolate(bp.log_message, ni.frame, i));
            } else {
              hit_ids = {bp.id};
              return pause("breakpoint", "");
            }
          }
        }
      }
    }
    switch (step) {
      case StepMode::None:
        break;
      case StepMode::In:
        return pause("step", "");
      case StepMode::Over: {
        bool inside = std::find(ni.chain.begin(), ni.chain.end(), step_frame) != ni.chain.end();
        if (!inside || (ni.frame == step_frame && (ni.line != step_line || ni.file != step_file)))
          return pause("step", "");
        break;
      }
      case StepMode::Out:
        if (std::find(ni.chain.begin(), ni.chain.end(), step_frame) == ni.chain.end())
          return pause("step", "");
        break;
    }
    return rt::HookAction::Continue;
  }

  rt::HookAction pause(const std::string& reason, const std::string& text) {
    stop_reason = reason;
    stop_text = text;
    return rt::HookAction::Pause;
  }

  // Called with m held, from the `after` hook: the exception filters.
  rt::HookAction after(const rt::NodeEvent& e) {
    if (filters.empty() || !info[e.index].stoppable) return rt::HookAction::Continue;
    for (size_t k = 0; k < e.outputs.size(); ++k) {
      const rt::Tensor& t = e.outputs[k];
      if (!t.defined() || !t.is_float() || t.numel() == 0) continue;
      rt::TensorStats st = rt::compute_stats(t);
      std::string what;
      int64_t at = -1;
      if (filters.count("nan") && st.nan_count) {
        what = "NaN";
        at = st.first_nan;
      } else if (filters.count("inf") && st.inf_count) {
        what = "Inf";
        at = st.first_inf;
      } else if (filters.count("fp16-overflow") && st.fp16_overflow_count) {
        what = "fp16 overflow";
        at = st.first_fp16_overflow;
      } else if (filters.count("all-zero") && st.all_zero()) {
        what = "all-zero output";
        at = 0;
      }
      if (what.empty()) continue;
      const graphcore::Node& n = e.node;
      std::string count = what == "NaN"             ? std::to_string(st.nan_count)
                          : what == "Inf"           ? std::to_string(st.inf_count)
                          : what == "fp16 overflow" ? std::to_string(st.fp16_overflow_count)
                                                    : std::to_string(st.count);
      std::string text = what + " in the output" +
                         (e.outputs.size() > 1 ? " " + std::to_string(k) : std::string()) +
                         " of node '" + n.id + "' (" + std::string(n.op) + ") at " +
                         ex->node_location(e.index) + ": " + count + " of " +
                         std::to_string(st.count) + " elements, first at index " +
                         rt::index_str(t.shape(), at) + " (flat " + std::to_string(at) + ")";
      return pause("exception", text);
    }
    return rt::HookAction::Continue;
  }

  // ---- graph view focus ----------------------------------------------------------------------
  // The custom event `cellscope.focus` tells the editor which graph node the run is paused on
  // (the extension relays it to the graph view, docs/dap.md): sent with every stop (just before
  // `stopped`), cleared (an empty `node`) when the run resumes or ends. Called with m held.
  json focus_body() const {
    const graphcore::Node& n = ex->graph().nodes[stop_node];
    const NodeInfo& ni = info[stop_node];
    json b = {{"file", canonical(program)},
              {"cell", ex->report().name},
              {"node", n.id},
              {"op", std::string(n.op)},
              {"scope", std::string(n.scope)},
              {"source", ni.file},
              {"line", ni.line},
              {"reason", stop_reason},
              {"ran", stop_after}};
    if (!stop_text.empty()) b["description"] = stop_text;
    // The live tensor: the node's output once it ran, else the first tensor flowing into it.
    const rt::Tensor* t = nullptr;
    std::string tensor;
    if (stop_after) {
      t = ex->value(stop_node, 0);
      tensor = n.id;
    } else {
      for (const graphcore::ValueRef& in : n.inputs) {
        t = ex->value(in);
        if (t && t->defined()) {
          tensor = ex->graph().nodes[in.node].id;
          if (in.output) tensor += "[" + std::to_string(in.output) + "]";
          break;
        }
      }
    }
    if (!t || !t->defined()) return b;
    b["tensor"] = tensor;
    b["shape"] = t->shape();
    b["dtype"] = std::string(graphcore::dtype_name(t->dtype()));
    json stats = {{"numel", t->numel()}};
    if (t->numel() > 0) {
      rt::TensorStats st = rt::compute_stats(*t);
      // JSON has no NaN/Inf: statistics over no finite value are left out.
      for (auto [k, v] : {std::pair<const char*, double>{"min", st.min},
                          {"max", st.max},
                          {"mean", st.mean},
                          {"std", st.std}})
        if (std::isfinite(v) && st.count > st.nan_count + st.inf_count) stats[k] = v;
      stats["nan"] = st.nan_count;
      stats["inf"] = st.inf_count;
      stats["zeros"] = st.zero_count;
    }
    b["stats"] = stats;
    return b;
  }
  void send_focus() {
    event("cellscope.focus", focus_body());
    focus_sent = true;
  }
  void clear_focus() {
    if (!focus_sent) return;
    focus_sent = false;
    event("cellscope.focus",
          {{"file", canonical(program)}, {"cell", ex ? ex->report().name : ""}, {"node", ""}});
  }

  void run_worker() {
    rt::Hooks hooks;
    hooks.before = [this](const rt::NodeEvent& e) {
      if (terminate) return rt::HookAction::Abort;
      std::lock_guard lock(m);
      return before(e.index);
    };
    hooks.after = [this](const rt::NodeEvent& e) {
      if (terminate) return rt::HookAction::Abort;
      std::lock_guard lock(m);
      return after(e);
    };
    hooks.interrupt = &interrupt;
    double run_ms = 0;
    size_t ran = 0;
    for (;;) {
      auto t0 = std::chrono::steady_clock::now();
      rt::RunStatus s = ex->run(hooks);
      run_ms +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      std::unique_lock lock(m);
      // A kernel error stops at the failing node (not run) so that its inputs and the stack can
      // be inspected; any resume then ends the session.
      const bool fatal = s.kind == rt::RunStatus::Kind::Error;
      if (fatal && !terminate) {
        output("cellscope: runtime error: " + s.message, "stderr");
        stop_reason = "exception";
        stop_text = "RuntimeError: " + s.message;
      }
      if (s.kind == rt::RunStatus::Kind::Paused || (fatal && s.node < info.size())) {
        if (terminate) break;
        state = State::Stopped;
        stop_node = s.node;
        stop_after = s.after;
        if (stop_reason.empty()) stop_reason = "pause";
        json body = {{"reason", stop_reason},
                     {"threadId", kThreadId},
                     {"allThreadsStopped", true},
                     {"preserveFocusHint", false}};
        if (!stop_text.empty()) {
          body["description"] = stop_text;
          body["text"] = stop_text;
        }
        if (stop_reason == "breakpoint") body["hitBreakpointIds"] = hit_ids;
        step = StepMode::None;
        resume = false;
        send_focus();
        event("stopped", body);
        cv.wait(lock, [this] { return resume || terminate; });
        if (terminate) break;
        clear_focus();
        if (fatal) {
          state = State::Done;
          event("exited", {{"exitCode", 1}});
          event("terminated");
          return;
        }
        stop_reason.clear();
        stop_text.clear();
        hit_ids.clear();
        refs.clear();
        state = State::Running;
        continue;
      }
      state = State::Done;
      if (s.kind == rt::RunStatus::Kind::Finished) {
        ran = ex->graph().nodes.size();
        output("cellscope: ran " + std::to_string(ran) + " nodes in " + num(run_ms) + " ms");
        auto outs = ex->outputs();
        for (size_t i = 0; i < outs.size(); ++i)
          output("output " + std::to_string(i) + ": " + tensor_summary(outs[i]) + " " +
                 outs[i].preview(6));
        event("exited", {{"exitCode", 0}});
      } else if (fatal) {
        event("exited", {{"exitCode", 1}});
      }
      if (!terminate) event("terminated");
      return;
    }
    state = State::Done;
  }

  void on_resume(const json& req, const std::string& cmd) {
    std::unique_lock lock(m);
    if (state != State::Stopped) return fail(req, "not stopped");
    const NodeInfo& ni = info[stop_node];
    step = cmd == "next"      ? StepMode::Over
           : cmd == "stepIn"  ? StepMode::In
           : cmd == "stepOut" ? StepMode::Out
                              : StepMode::None;
    step_frame = ni.frame;
    step_line = ni.line;
    step_file = ni.file;
    // The paused-at node counts as "seen": a step does not stop on its own line again.
    prev_node = stop_node;
    if (step == StepMode::Out && ni.frame.empty()) step = StepMode::None;  // out of the root
    if (cmd == "continue")
      respond(req, {{"allThreadsContinued", true}});
    else
      respond(req);
    resume = true;
    cv.notify_all();
  }

  void on_pause(const json& req) {
    respond(req);
    interrupt = true;
  }

  void stop_worker() {
    {
      std::unique_lock lock(m);
      terminate = true;
      cv.notify_all();
    }
    if (worker.joinable()) worker.join();
  }

  void on_terminate(const json& req) {
    bool had_worker = worker.joinable();
    stop_worker();
    respond(req);
    {
      std::unique_lock lock(m);
      if (had_worker || state != State::Done) state = State::Done;
      clear_focus();
    }
    event("terminated");
  }

  void on_disconnect(const json& req) {
    stop_worker();
    respond(req);
    if (disconnect_handler) disconnect_handler();
  }

  // ---- inspection -----------------------------------------------------------------------------
  // Frames of the stop, innermost first.
  std::vector<std::string> stop_chain() const {
    const auto& c = info[stop_node].chain;
    return {c.rbegin(), c.rend()};
  }

  json source_json(const std::string& file) const {
    return {{"name", fs::path(file).filename().string()}, {"path", file}};
  }

  void on_stack_trace(const json& req) {
    std::unique_lock lock(m);
    if (state != State::Stopped) return fail(req, "not stopped");
    json frames = json::array();
    auto chain = stop_chain();
    const NodeInfo& top = info[stop_node];
    for (size_t k = 0; k < chain.size(); ++k) {
      const std::string& f = chain[k];
      std::string cls = class_of.count(f) ? class_of.at(f) : "Cell";
      std::string name = f.empty() ? cls + ".construct" : f + " (" + cls + ").construct";
      std::string file = top.file;
      int line = top.line, column = top.column;
      if (k > 0) {
        column = 1;
        auto cs = call_site.find(chain[k - 1]);
        if (cs != call_site.end()) {
          file = cs->second.file;
          line = cs->second.line;
        } else {
          line = 0;
        }
      }
      json fr = {
          {"id", static_cast<int>(k) + 1}, {"name", name}, {"line", line}, {"column", column}};
      if (line > 0) fr["source"] = source_json(file);
      if (k == 0) fr["instructionPointerReference"] = ex->graph().nodes[stop_node].id;
      frames.push_back(fr);
    }
    int start = req["arguments"].value("startFrame", 0);
    int levels = req["arguments"].value("levels", 0);
    json page = json::array();
    for (int i = start; i < static_cast<int>(frames.size()) && (levels <= 0 || i < start + levels);
         ++i)
      page.push_back(frames[static_cast<size_t>(i)]);
    respond(req, {{"stackFrames", page}, {"totalFrames", frames.size()}});
  }

  std::optional<std::string> frame_path(int frame_id) const {
    auto chain = stop_chain();
    if (frame_id < 1 || frame_id > static_cast<int>(chain.size())) return std::nullopt;
    return chain[static_cast<size_t>(frame_id - 1)];
  }

  int add_ref(VarRef r) {
    refs.push_back(std::move(r));
    return static_cast<int>(refs.size());
  }

  void on_scopes(const json& req) {
    std::unique_lock lock(m);
    if (state != State::Stopped) return fail(req, "not stopped");
    auto f = frame_path(req["arguments"].value("frameId", 0));
    if (!f) return fail(req, "unknown frame");
    int locals = add_ref({VarRef::Kind::Locals, *f, {}});
    int params = add_ref({VarRef::Kind::Params, *f, {}});
    respond(req,
            {{"scopes",
              {{{"name", "Locals"}, {"variablesReference", locals}, {"expensive", false}},
               {{"name", "Parameters"}, {"variablesReference", params}, {"expensive", false}}}}});
  }

  // Nodes computed so far (in execution order) at the stop.
  size_t computed_end() const { return stop_after ? stop_node + 1 : stop_node; }

  static std::string relative(const std::string& id, const std::string& frame) {
    if (frame.empty()) return id;
    if (id.size() > frame.size() && id.compare(0, frame.size(), frame) == 0 &&
        (id[frame.size()] == '.' || id[frame.size()] == '/'))
      return id.substr(frame.size() + 1);
    return id;
  }

  // The locals of `frame`: source variables (the last value assigned on a line of the frame's
  // construct that has run), then every computed node of the frame by id.
  std::vector<std::pair<std::string, rt::Tensor>> locals(const std::string& frame,
                                                         std::optional<size_t> upto = {}) const {
    std::vector<std::pair<std::string, rt::Tensor>> vars, nodes_out;
    std::map<std::string, size_t> var_index;
    std::set<std::string> input_names;
    const auto& nodes = ex->graph().nodes;
    size_t end = upto ? *upto : computed_end();
    auto as = assigned.find(frame);
    for (size_t i = 0; i < end && i < nodes.size(); ++i) {
      const NodeInfo& ni = info[i];
      if (ni.frame != frame) continue;
      if (nodes[i].kind != graphcore::NodeKind::Op && nodes[i].kind != graphcore::NodeKind::Input)
        continue;
      for (size_t k = 0; k < nodes[i].outputs.size(); ++k) {
        const rt::Tensor* t = ex->value(i, k);
        if (!t) continue;
        std::string name = nodes[i].kind == graphcore::NodeKind::Input
                               ? nodes[i].id
                               : relative(nodes[i].id, frame);
        if (nodes[i].outputs.size() > 1) name += "[" + std::to_string(k) + "]";
        nodes_out.emplace_back(name, *t);
        if (nodes[i].kind == graphcore::NodeKind::Input) input_names.insert(name);
      }
      if (nodes[i].kind == graphcore::NodeKind::Input) continue;
      if (as != assigned.end() && nodes[i].outputs.size() == 1) {
        for (const auto& [line, var] : as->second) {
          if (line != ni.line) continue;
          const rt::Tensor* t = ex->value(i, 0);
          if (!t) continue;
          auto vi = var_index.find(var);
          if (vi == var_index.end()) {
            var_index[var] = vars.size();
            vars.emplace_back(var, *t);
          } else {
            vars[vi->second].second = *t;
          }
        }
      }
    }
    std::set<std::string> var_names;
    for (const auto& v : vars) var_names.insert(v.first);
    for (auto& n : nodes_out) {
      // A graph input whose name was reassigned in construct stays visible as "x (input)".
      if (var_names.count(n.first) && input_names.count(n.first)) n.first += " (input)";
      if (!var_names.count(n.first)) vars.push_back(std::move(n));
    }
    return vars;
  }

  std::vector<std::pair<std::string, rt::Tensor>> params_of(const std::string& frame) const {
    std::vector<std::pair<std::string, rt::Tensor>> out;
    for (const auto& p : ex->params())
      if (frame.empty() || p.name.rfind(frame + ".", 0) == 0)
        out.emplace_back(relative(p.name, frame), p.value);
    return out;
  }

  json tensor_var(const std::string& name, const rt::Tensor& t, const std::string& evaluate_name) {
    int ref = add_ref({VarRef::Kind::Tensor, "", t});
    json v = {{"name", name},
              {"value", tensor_summary(t)},
              {"type", "Tensor"},
              {"variablesReference", ref},
              {"evaluateName", evaluate_name}};
    return v;
  }

  void on_variables(const json& req) {
    std::unique_lock lock(m);
    if (state != State::Stopped) return fail(req, "not stopped");
    const json& args = req["arguments"];
    int ref = args.value("variablesReference", 0);
    if (ref < 1 || ref > static_cast<int>(refs.size())) return fail(req, "unknown variables");
    VarRef r = refs[static_cast<size_t>(ref - 1)];
    json vars = json::array();
    auto simple = [&](const std::string& name, const std::string& value) {
      vars.push_back({{"name", name}, {"value", value}, {"variablesReference", 0}});
    };
    switch (r.kind) {
      case VarRef::Kind::Locals:
        for (const auto& [name, t] : locals(r.frame)) vars.push_back(tensor_var(name, t, name));
        break;
      case VarRef::Kind::Params:
        for (const auto& [name, t] : params_of(r.frame)) vars.push_back(tensor_var(name, t, name));
        break;
      case VarRef::Kind::Tensor: {
        const rt::Tensor& t = r.tensor;
        rt::TensorStats st = rt::compute_stats(t);
        simple("shape", shape_str(t.shape()));
        simple("dtype", std::string(graphcore::dtype_name(t.dtype())));
        simple("numel", std::to_string(t.numel()));
        simple("min", num(st.min));
        simple("max", num(st.max));
        simple("mean", num(st.mean));
        simple("std", num(st.std));
        simple("nan", std::to_string(st.nan_count));
        simple("inf", std::to_string(st.inf_count));
        simple("zeros", std::to_string(st.zero_count));
        simple("first values", t.preview(8));
        int vref = add_ref({VarRef::Kind::Values, "", t});
        vars.push_back({{"name", "values"},
                        {"value", "[" + std::to_string(t.numel()) + " values, row-major]"},
                        {"variablesReference", vref},
                        {"indexedVariables", t.numel()}});
        break;
      }
      case VarRef::Kind::Values: {
        if (args.value("filter", "") == "named") break;  // only indexed children
        const rt::Tensor& t = r.tensor;
        int64_t start = std::max<int64_t>(0, args.value("start", 0));
        int64_t count = args.value("count", 0);
        if (count <= 0) count = std::min<int64_t>(t.numel() - start, 100);
        for (int64_t i = start; i < start + count && i < t.numel(); ++i)
          simple("[" + std::to_string(i) + "]", num(t.at(i)));
        break;
      }
    }
    respond(req, {{"variables", vars}});
  }

  // A name in `frame` (a source variable, a node id relative to the frame or absolute, a
  // parameter), optionally followed by .min() .max() .mean() .std() .shape .sum().
  struct EvalResult {
    std::optional<rt::Tensor> tensor;
    std::optional<double> number;
    std::string text;
  };
  std::optional<EvalResult> eval_name(std::string expr, const std::string& frame,
                                      std::optional<size_t> upto, std::string* err) const {
    expr = std::string(graphcore::text::trim(expr));
    std::string method;
    for (const char* m_ : {".max()", ".min()", ".mean()", ".std()", ".shape", ".sum()",
                           ".nan_count()", ".inf_count()"}) {
      std::string s = m_;
      if (expr.size() > s.size() && expr.compare(expr.size() - s.size(), s.size(), s) == 0) {
        method = s;
        expr = std::string(
            graphcore::text::trim(std::string_view(expr).substr(0, expr.size() - s.size())));
        break;
      }
    }
    std::optional<rt::Tensor> t;
    for (const auto& [name, v] : locals(frame, upto))
      if (name == expr) t = v;
    if (!t) {
      std::string id = expr;
      auto n = ex->find_node(id);
      if (!n && !frame.empty()) n = ex->find_node(frame + "." + id);
      if (!n && !frame.empty()) n = ex->find_node(frame + "/" + id);
      if (n && *n < (upto ? *upto : computed_end()))
        if (const rt::Tensor* v = ex->value(*n)) t = *v;
    }
    if (!t) {
      const rt::ParamState* p = ex->param(expr);
      if (!p && !frame.empty()) p = ex->param(frame + "." + expr);
      if (p) t = p->value;
    }
    if (!t) {
      *err = "'" + expr + "' is not a computed tensor in this frame";
      return std::nullopt;
    }
    EvalResult r;
    if (method.empty()) {
      r.tensor = t;
      r.text = tensor_summary(*t);
      return r;
    }
    if (method == ".shape") {
      r.text = shape_str(t->shape());
      return r;
    }
    rt::TensorStats st = rt::compute_stats(*t);
    double v = method == ".max()"         ? st.max
               : method == ".min()"       ? st.min
               : method == ".mean()"      ? st.mean
               : method == ".std()"       ? st.std
               : method == ".sum()"       ? st.mean * static_cast<double>(st.count)
               : method == ".nan_count()" ? static_cast<double>(st.nan_count)
                                          : static_cast<double>(st.inf_count);
    r.number = v;
    r.text = num(v);
    return r;
  }

  // Conditions: `EXPR OP NUMBER` with OP in < <= > >= == !=, EXPR a name with a statistic.
  bool eval_condition(const std::string& cond, const std::string& frame, size_t node,
                      std::string* err) const {
    static const char* ops[] = {"<=", ">=", "==", "!=", "<", ">"};
    for (const char* op : ops) {
      auto k = cond.find(op);
      if (k == std::string::npos) continue;
      std::string lhs = cond.substr(0, k), rhs = cond.substr(k + std::string(op).size());
      auto l = eval_name(lhs, frame, node, err);
      if (!l) return false;
      if (!l->number) {
        *err = "the left side must be a number, e.g. x.max()";
        return false;
      }
      double b = 0;
      try {
        b = std::stod(rhs);
      } catch (const std::exception&) {
        *err = "the right side must be a number";
        return false;
      }
      double a = *l->number;
      std::string o = op;
      return o == "<="   ? a <= b
             : o == ">=" ? a >= b
             : o == "==" ? a == b
             : o == "!=" ? a != b
             : o == "<"  ? a < b
                         : a > b;
    }
    *err = "unsupported condition (use e.g. `x.max() > 10`)";
    return false;
  }

  std::string interpolate(const std::string& msg, const std::string& frame, size_t node) const {
    std::string out;
    for (size_t i = 0; i < msg.size(); ++i) {
      if (msg[i] == '{') {
        auto j = msg.find('}', i);
        if (j != std::string::npos) {
          std::string err;
          auto r = eval_name(msg.substr(i + 1, j - i - 1), frame, node, &err);
          out += r ? r->text : "<" + err + ">";
          i = j;
          continue;
        }
      }
      out += msg[i];
    }
    return out;
  }

  void on_evaluate(const json& req) {
    std::unique_lock lock(m);
    const json& args = req["arguments"];
    if (state != State::Stopped) return fail(req, "not stopped");
    std::string frame = info[stop_node].frame;
    if (args.contains("frameId")) {
      auto f = frame_path(args["frameId"].get<int>());
      if (f) frame = *f;
    }
    std::string err;
    auto r = eval_name(args.value("expression", ""), frame, std::nullopt, &err);
    if (!r) return fail(req, err);
    int ref = 0;
    if (r->tensor) ref = add_ref({VarRef::Kind::Tensor, "", *r->tensor});
    respond(req, {{"result", r->text}, {"variablesReference", ref}});
  }

  void on_exception_info(const json& req) {
    std::unique_lock lock(m);
    if (state != State::Stopped || stop_reason != "exception") return fail(req, "no exception");
    std::string id = stop_text.rfind("RuntimeError: ", 0) == 0
                         ? "RuntimeError"
                         : stop_text.substr(0, stop_text.find(" in the output"));
    respond(req, {{"exceptionId", id}, {"description", stop_text}, {"breakMode", "always"}});
  }
};

Session::Session(std::function<void(std::string)> send)
    : impl_(std::make_unique<Impl>(std::move(send))) {}
Session::~Session() { stop(); }
void Session::handle(const std::string& body) { impl_->handle(body); }
void Session::set_disconnect_handler(std::function<void()> f) {
  impl_->disconnect_handler = std::move(f);
}
void Session::stop() { impl_->stop_worker(); }

int run_stdio_server(const std::string& log_file) {
  int out_fd = rpc::isolate_stdio({log_file, true});
  boost::asio::io_context io;
  rpc::StdioTransport::Options topts;
  topts.out_fd = out_fd;
  rpc::StdioTransport transport(io, topts);
  Session session([&](std::string body) { transport.send(std::move(body)); });
  session.set_disconnect_handler([&] { transport.close(); });
  transport.start(
      [&](const rpc::Frame& f) {
        if (!f.ok()) {
          spdlog::error("dap: {}", f.error);
          return;
        }
        // One message's failure (e.g. out of memory) never ends the session.
        try {
          session.handle(f.body);
        } catch (const std::exception& e) {
          spdlog::error("dap: message dropped: {}", e.what());
        }
      },
      [&](const std::string& error) {
        if (!error.empty()) spdlog::error("dap: input: {}", error);
        session.stop();
        transport.close();
      });
  spdlog::info("cellscope dap: serving on stdio");
  io.run();
  session.stop();
  return 0;
}

}  // namespace cellscope::dap
