// The DAP protocol layer of `cellscope dap`: see protocol.h.
#include "protocol.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>

#include "breakpoints.h"
#include "graph_index.h"
#include "launch_config.h"
#include "rpc/jsonrpc.h"
#include "session.h"
#include "variables.h"

namespace cellscope::dap {

namespace fs = std::filesystem;

namespace {

// At most the first 40 characters of `s`, for logs.
std::string excerpt(std::string s) {
  if (s.size() > 40) s = s.substr(0, 40) + "...";
  return s;
}

// The member `key` of `args` that must be an array when present (null counts as absent):
// by reference into the request, so that a member of the wrong type is named in full
// ("arguments.breakpoints[0].line must be a number, but is a string").
const json& array_member(const json& args, const char* key) {
  static const json kNone = json::array();
  const auto it = args.find(key);
  const json& a = it != args.end() && !it->is_null() ? *it : kNone;
  if (!a.is_array()) {
    throw json::type_error::create(302, "type must be array, but is " + std::string(a.type_name()),
                                   &a);
  }
  return a;
}

json source_json(const std::string& file) {
  return {{"name", fs::path(file).filename().string()}, {"path", file}};
}

// Frame `frame_id` (1: innermost) of the stop at `node`, or nullopt.
std::optional<std::string> frame_path(const GraphIndex& index, size_t node, int frame_id) {
  auto chain = index.frames_of(node);
  if (frame_id < 1 || frame_id > static_cast<int>(chain.size())) return std::nullopt;
  return chain[static_cast<size_t>(frame_id - 1)];
}

}  // namespace

// ---- messages -----------------------------------------------------------------------------------

json request_seq(const json& req) {
  auto it = req.find("seq");
  return it != req.end() && it->is_number_integer() ? *it : json(0);
}

std::string request_command(const json& req) {
  auto it = req.find("command");
  return it != req.end() && it->is_string() ? it->get<std::string>() : std::string();
}

json event_message(int seq, const std::string& name, json body) {
  return {{"seq", seq}, {"type", "event"}, {"event", name}, {"body", std::move(body)}};
}

json response_message(int seq, const json& req, json body) {
  return {{"seq", seq},
          {"type", "response"},
          {"request_seq", request_seq(req)},
          {"success", true},
          {"command", request_command(req)},
          {"body", std::move(body)}};
}

json error_response_message(int seq, const json& req, const std::string& message) {
  return {{"seq", seq},
          {"type", "response"},
          {"request_seq", request_seq(req)},
          {"success", false},
          {"command", request_command(req)},
          {"message", message},
          {"body", {{"error", {{"id", 1}, {"format", message}, {"showUser", true}}}}}};
}

Incoming read_message(const std::string& body) {
  Incoming in;
  // Lone surrogate escapes (JSON.stringify's output for unpaired surrogates) read as U+FFFD.
  json req = rpc::parse_message(body);
  if (req.is_discarded()) {
    spdlog::error("dap: a message that is not valid JSON was dropped ({} bytes)", body.size());
    return in;
  }
  // Members of the wrong JSON type never throw here: a message that cannot be answered (no
  // integer seq to put in request_seq) is dropped with a warning, one that can is answered
  // with an error response.
  if (!req.is_object()) {
    spdlog::warn("dap: ignoring a message that is not a JSON object");
    return in;
  }
  auto type = req.find("type");
  if (type == req.end() || !type->is_string()) {
    spdlog::warn("dap: ignoring a message without a string 'type'");
    return in;
  }
  if (*type != "request") return in;
  auto seq_it = req.find("seq");
  if (seq_it == req.end() || !seq_it->is_number_integer()) {
    spdlog::warn("dap: ignoring a request whose 'seq' is not an integer ({})",
                 seq_it == req.end() ? std::string("missing") : excerpt(seq_it->dump()));
    return in;
  }
  auto command = req.find("command");
  if (command == req.end() || !command->is_string()) {
    spdlog::warn("dap: request {} has no string 'command'", seq_it->dump());
    in.kind = Incoming::Kind::Invalid;
    in.request = std::move(req);
    return in;
  }
  in.kind = Incoming::Kind::Request;
  in.command = command->get<std::string>();
  if (!req.contains("arguments") || !req["arguments"].is_object())
    req["arguments"] = json::object();
  in.request = std::move(req);
  return in;
}

void Channel::send(const json& msg) {
  send_(msg.dump(-1, ' ', false, json::error_handler_t::replace));
}

void Channel::event(const std::string& name, json body) {
  send(event_message(seq_++, name, std::move(body)));
}

void Channel::respond(const json& req, json body) {
  send(response_message(seq_++, req, std::move(body)));
}

void Channel::fail(const json& req, const std::string& message) {
  send(error_response_message(seq_++, req, message));
}

void Channel::output(const std::string& text, const std::string& category) {
  event("output", {{"category", category}, {"output", text + "\n"}});
}

json capabilities() {
  json filters = json::array();
  for (const ExceptionFilter& f : exception_filters()) {
    json j = {{"filter", f.id},
              {"label", f.label},
              {"description", f.description},
              {"default", f.on_by_default}};
    if (f.condition) {
      j["supportsCondition"] = true;
      j["conditionDescription"] = f.condition;
    }
    filters.push_back(j);
  }
  return {{"supportsConfigurationDoneRequest", true},  {"supportsConditionalBreakpoints", true},
          {"supportsHitConditionalBreakpoints", true}, {"supportsLogPoints", true},
          {"supportsEvaluateForHovers", true},         {"supportsTerminateRequest", true},
          {"supportsExceptionInfoRequest", true},      {"supportsExceptionFilterOptions", true},
          {"supportsSteppingGranularity", false},      {"supportsSetVariable", false},
          {"supportsRestartRequest", false},           {"supportsStepBack", false},
          {"supportsFunctionBreakpoints", false},      {"supportsDelayedStackTraceLoading", false},
          {"exceptionBreakpointFilters", filters}};
}

// ---- dispatch -----------------------------------------------------------------------------------

void DebugProtocol::handle(const std::string& body) {
  Incoming in = read_message(body);
  if (in.kind == Incoming::Kind::Ignored) return;
  if (in.kind == Incoming::Kind::Invalid)
    return channel_.fail(in.request, "invalid request: 'command' must be a string");
  const std::string& cmd = in.command;
  spdlog::debug("dap: request {}", cmd);
  try {
    dispatch(in.request, cmd);
  } catch (const std::exception& e) {
    spdlog::error("dap: {} failed: {}", cmd, e.what());
    channel_.fail(in.request, cmd + " failed: " + rpc::describe_exception(e));
  }
}

void DebugProtocol::dispatch(const json& req, const std::string& cmd) {
  if (cmd == "initialize") return on_initialize(req);
  if (cmd == "launch") return on_launch(req);
  if (cmd == "attach") return channel_.fail(req, "cellscope dap supports launch only");
  if (cmd == "setBreakpoints") return on_set_breakpoints(req);
  if (cmd == "setExceptionBreakpoints") return on_set_exception_breakpoints(req);
  if (cmd == "setFunctionBreakpoints")
    return channel_.respond(req, {{"breakpoints", json::array()}});
  if (cmd == "configurationDone") return on_configuration_done(req);
  if (cmd == "threads")
    return channel_.respond(req, {{"threads", {{{"id", kThreadId}, {"name", "construct"}}}}});
  if (cmd == "stackTrace") return on_stack_trace(req);
  if (cmd == "scopes") return on_scopes(req);
  if (cmd == "variables") return on_variables(req);
  if (cmd == "evaluate") return on_evaluate(req);
  if (cmd == "exceptionInfo") return on_exception_info(req);
  if (cmd == "continue" || cmd == "next" || cmd == "stepIn" || cmd == "stepOut")
    return on_resume(req, cmd);
  if (cmd == "pause") return on_pause(req);
  if (cmd == "cellscope.stepTraining") return on_step_training(req);
  if (cmd == "terminate") return on_terminate(req);
  if (cmd == "disconnect") return on_disconnect_request(req);
  channel_.fail(req, "unsupported request '" + cmd + "'");
}

void DebugProtocol::on_initialize(const json& req) {
  {
    std::unique_lock lock(runner_.mutex());
    const json& args = req["arguments"];
    auto p = args.find("supportsProgressReporting");
    runner_.set_progress_support(p != args.end() && p->is_boolean() && p->get<bool>());
  }
  channel_.respond(req, capabilities());
  channel_.event("initialized");
}

// ---- launch -------------------------------------------------------------------------------------

void DebugProtocol::on_launch(const json& req) {
  json args = req.value("arguments", json::object());
  std::unique_lock lock(runner_.mutex());
  if (launched_ || runner_.state() != RunState::Idle)
    return channel_.fail(req, "launch: the session was already launched");
  try {
    launch(args);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    spdlog::warn("dap: launch failed: {}", msg);
    launch_error_ = msg;
    for (const json& p : pending_set_breakpoints_) set_breakpoints_unlaunched(p, msg);
    pending_set_breakpoints_.clear();
    channel_.fail(req, msg);
    channel_.output(msg, "stderr");
    runner_.finish();
    channel_.event("terminated");
    return;
  }
  launched_ = true;
  channel_.respond(req);
  // Each held request gets its own answer: one that cannot be read fails alone, not the launch.
  for (const json& p : pending_set_breakpoints_) {
    try {
      set_breakpoints(p);
    } catch (const std::exception& e) {
      channel_.fail(p, "setBreakpoints failed: " + rpc::describe_exception(e));
    }
  }
  pending_set_breakpoints_.clear();
  if (configured_) runner_.start();
}

void DebugProtocol::launch(const json& args) {
  LaunchConfig config = parse_launch_config(args);
  Program& program = runner_.program();
  program.path = config.program;
  program.stop_on_entry = config.stop_on_entry;
  program.config = config;
  if (config.mode != Mode::Infer) {
    // train / joint: the file's training plan on the Trainer, with this session's hooks.
    program.training = load_training(config, runner_.train_options());
    const graphcore::runtime::Trainer& t = *program.training->trainer;
    program.executor = &t.step_executor();
    program.forward_count = t.forward_count();
    program.index = index_graph(program.executor->report(), program.training->network);
    channel_.output("cellscope: " + t.summary());
    for (const std::string& n : t.notes()) channel_.output("note: " + n);
    return;
  }
  program.owned = load_model(config, [this](const std::string& text) { channel_.output(text); });
  program.executor = program.owned.get();
  program.index = index_graph(program.executor->report());
  channel_.output(launch_summary(*program.executor, config.program));
}

// ---- breakpoints --------------------------------------------------------------------------------

// Never throws, whatever the request holds: it answers on paths that must not fail (a failed
// launch answering the requests it held).
void DebugProtocol::set_breakpoints_unlaunched(const json& req, const std::string& why) {
  json out = json::array();
  const json* args = req.contains("arguments") ? &req["arguments"] : nullptr;
  if (args && args->is_object() && args->contains("breakpoints") &&
      (*args)["breakpoints"].is_array()) {
    for (const json& b : (*args)["breakpoints"]) {
      const bool has_line = b.is_object() && b.contains("line") && b["line"].is_number_integer();
      out.push_back({{"verified", false},
                     {"line", has_line ? b["line"].get<int64_t>() : 0},
                     {"message", why}});
    }
  }
  channel_.respond(req, {{"breakpoints", out}});
}

void DebugProtocol::on_set_breakpoints(const json& req) {
  std::unique_lock lock(runner_.mutex());
  if (!launched_) {
    // A failed launch answers at once (nothing will compile); else once launch compiled.
    if (!launch_error_.empty()) return set_breakpoints_unlaunched(req, launch_error_);
    pending_set_breakpoints_.push_back(req);
    return;
  }
  set_breakpoints(req);
}

void DebugProtocol::set_breakpoints(const json& req) {
  const json& args = req["arguments"];
  std::string path = args.contains("source") ? args["source"].value("path", "") : "";
  std::string file = canonical(path);
  BreakpointTable& table = runner_.breakpoints();
  const std::map<int, Breakpoint> old = table.take(file);
  json out = json::array();
  const json& bps = array_member(args, "breakpoints");
  const Program& program = runner_.program();
  const std::string cell = program_cell(program);
  const std::string file_name = fs::path(path).filename().string();
  for (const json& b : bps) {
    int line = b.value("line", 0);
    json r = {{"verified", false}, {"line", line}};
    const LineVerdict verdict = table.verify(program.index, file, line, cell, file_name);
    if (verdict.line == 0) {
      r["message"] = verdict.message;
      out.push_back(r);
      continue;
    }
    Breakpoint bp;
    bp.line = verdict.line;
    bp.id = table.id_for(old, bp.line);
    bp.condition = b.value("condition", "");
    bp.hit_condition = b.value("hitCondition", "");
    bp.log_message = b.value("logMessage", "");
    if (auto error = hit_condition_error(bp.hit_condition)) {
      r["message"] = *error;
      out.push_back(r);
      continue;
    }
    r = {{"id", bp.id}, {"verified", true}, {"line", bp.line}};
    if (!verdict.message.empty()) r["message"] = verdict.message;  // moved
    table.add(file, bp);
    out.push_back(r);
  }
  channel_.respond(req, {{"breakpoints", out}});
}

void DebugProtocol::on_set_exception_breakpoints(const json& req) {
  std::unique_lock lock(runner_.mutex());
  std::set<std::string>& filters = runner_.filters();
  std::map<std::string, double>& values = runner_.filter_values();
  filters.clear();
  values.clear();
  json out = json::array();
  for (const json& f : array_member(req["arguments"], "filters")) {
    std::string id = f.get<std::string>();
    bool ok = is_exception_filter(id);
    if (ok) filters.insert(id);
    out.push_back({{"verified", ok}});
  }
  // filterOptions: a filter with a condition (loss-spike's factor, a norm threshold).
  for (const json& f : array_member(req["arguments"], "filterOptions")) {
    const std::string id = f.at("filterId").get<std::string>();
    const std::string condition = f.value("condition", "");
    json r = {{"verified", false}};
    std::string err;
    if (!is_exception_filter(id)) {
      r["message"] = "unknown exception filter '" + id + "'";
    } else if (condition.empty()) {
      filters.insert(id);
      r["verified"] = true;
    } else if (auto v = filter_condition_value(id, condition, &err)) {
      filters.insert(id);
      values[id] = *v;
      r["verified"] = true;
    } else {
      r["message"] = err;
    }
    out.push_back(r);
  }
  channel_.respond(req, {{"breakpoints", out}});
}

// ---- execution ----------------------------------------------------------------------------------

void DebugProtocol::on_configuration_done(const json& req) {
  std::unique_lock lock(runner_.mutex());
  channel_.respond(req);
  configured_ = true;
  if (launched_ && runner_.state() == RunState::Idle) runner_.start();
}

void DebugProtocol::on_resume(const json& req, const std::string& cmd) {
  std::unique_lock lock(runner_.mutex());
  if (runner_.state() != RunState::Stopped) return channel_.fail(req, "not stopped");
  if (cmd == "continue") {
    channel_.respond(req, {{"allThreadsContinued", true}});
  } else {
    channel_.respond(req);
  }
  // The worker waits for the mutex: it goes on once the response is sent.
  runner_.resume(cmd == "next"      ? StepMode::Over
                 : cmd == "stepIn"  ? StepMode::In
                 : cmd == "stepOut" ? StepMode::Out
                                    : StepMode::None);
}

void DebugProtocol::on_step_training(const json& req) {
  std::unique_lock lock(runner_.mutex());
  if (!runner_.program().training) {
    return channel_.fail(req,
                         "cellscope.stepTraining: the session does not train (mode \"infer\")");
  }
  if (runner_.state() != RunState::Stopped) return channel_.fail(req, "not stopped");
  channel_.respond(req);
  runner_.step_training();
}

void DebugProtocol::on_pause(const json& req) {
  channel_.respond(req);
  runner_.pause();
}

void DebugProtocol::on_terminate(const json& req) {
  runner_.stop();
  channel_.respond(req);
  {
    std::unique_lock lock(runner_.mutex());
    runner_.finish();
    runner_.clear_focus();
  }
  channel_.event("terminated");
}

void DebugProtocol::on_disconnect_request(const json& req) {
  runner_.stop();
  channel_.respond(req);
  if (on_disconnect) on_disconnect();
}

// ---- inspection ---------------------------------------------------------------------------------

void DebugProtocol::on_stack_trace(const json& req) {
  std::unique_lock lock(runner_.mutex());
  if (runner_.state() != RunState::Stopped) return channel_.fail(req, "not stopped");
  const Program& program = runner_.program();
  const size_t node = runner_.stopped_at().node;
  json frames = json::array();
  const std::vector<StackFrame> stack = program.index.stack(node);
  for (size_t k = 0; k < stack.size(); ++k) {
    const StackFrame& s = stack[k];
    json fr = {
        {"id", static_cast<int>(k) + 1}, {"name", s.name}, {"line", s.line}, {"column", s.column}};
    if (s.line > 0) fr["source"] = source_json(s.file);
    if (k == 0) fr["instructionPointerReference"] = program.executor->graph().nodes[node].id;
    frames.push_back(fr);
  }
  int start = req["arguments"].value("startFrame", 0);
  int levels = req["arguments"].value("levels", 0);
  json page = json::array();
  for (int i = start; i < static_cast<int>(frames.size()) && (levels <= 0 || i < start + levels);
       ++i)
    page.push_back(frames[static_cast<size_t>(i)]);
  channel_.respond(req, {{"stackFrames", page}, {"totalFrames", frames.size()}});
}

void DebugProtocol::on_scopes(const json& req) {
  std::unique_lock lock(runner_.mutex());
  if (runner_.state() != RunState::Stopped) return channel_.fail(req, "not stopped");
  auto f = frame_path(runner_.program().index, runner_.stopped_at().node,
                      req["arguments"].value("frameId", 0));
  if (!f) return channel_.fail(req, "unknown frame");
  channel_.respond(req, {{"scopes", scopes(*f, runner_.refs(), runner_.train_view())}});
}

void DebugProtocol::on_variables(const json& req) {
  std::unique_lock lock(runner_.mutex());
  if (runner_.state() != RunState::Stopped) return channel_.fail(req, "not stopped");
  const json& args = req["arguments"];
  const VarRef* found = runner_.refs().find(args.value("variablesReference", 0));
  if (!found) return channel_.fail(req, "unknown variables");
  const VarRef r = *found;  // a copy: listing adds references
  channel_.respond(req, {{"variables", variables(r, args, runner_.inspector(), runner_.refs(),
                                                 runner_.train_view())}});
}

void DebugProtocol::on_evaluate(const json& req) {
  std::unique_lock lock(runner_.mutex());
  const json& args = req["arguments"];
  if (runner_.state() != RunState::Stopped) return channel_.fail(req, "not stopped");
  const GraphIndex& index = runner_.program().index;
  const size_t node = runner_.stopped_at().node;
  std::string frame = index.nodes[node].frame;
  if (args.contains("frameId")) {
    auto f = frame_path(index, node, args["frameId"].get<int>());
    if (f) frame = *f;
  }
  std::string err;
  auto r = runner_.inspector().evaluate(args.value("expression", ""), frame, &err);
  if (!r) return channel_.fail(req, err);
  int ref = 0;
  if (r->tensor) ref = runner_.refs().add({VarRef::Kind::Tensor, "", *r->tensor});
  channel_.respond(req, {{"result", r->text}, {"variablesReference", ref}});
}

void DebugProtocol::on_exception_info(const json& req) {
  std::unique_lock lock(runner_.mutex());
  const Stop& stop = runner_.stopped_at();
  if (runner_.state() != RunState::Stopped || stop.reason != "exception")
    return channel_.fail(req, "no exception");
  channel_.respond(req, {{"exceptionId", exception_id(stop.text)},
                         {"description", stop.text},
                         {"breakMode", "always"}});
}

}  // namespace cellscope::dap
