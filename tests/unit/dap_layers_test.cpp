// Unit tests of the debug adapter's layers (adapter/): the pure ones directly (the launch
// configuration, hit conditions, conditions and logpoints, line verification, the message
// helpers, the graph index), and the composition in process through `Session(send)`: a whole
// session on tests/dap/fixtures/nan_model.py and malformed requests. The real binary with a real
// DAP client is tests/dap/.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "breakpoints.h"
#include "dap_server.h"
#include "graph_index.h"
#include "graphcore/text.h"
#include "launch_config.h"
#include "protocol.h"
#include "variables.h"

namespace cellscope::dap {
namespace {

const std::string kNanModel = CELLSCOPE_SOURCE_DIR "/tests/dap/fixtures/nan_model.py";

// The message of the LaunchError `args` fails with ("" when it does not fail).
std::string launch_error(const json& args) {
  try {
    parse_launch_config(args);
  } catch (const LaunchError& e) {
    return e.what();
  }
  return "";
}

// ---- launch configuration -----------------------------------------------------------------------

TEST(DapLaunchConfig, ReadsEveryKey) {
  LaunchConfig c = parse_launch_config({{"program", kNanModel},
                                        {"cell", "NanNet"},
                                        {"inputs", {"2,4", "ones"}},
                                        {"input", "random:7"},
                                        {"seed", 3},
                                        {"precision", "target"},
                                        {"target", "ascend910"},
                                        {"stopOnEntry", true}});
  EXPECT_EQ(c.program, kNanModel);
  EXPECT_EQ(c.cell, "NanNet");
  EXPECT_EQ(c.value_specs, (std::vector<std::string>{"", "ones"}));
  ASSERT_EQ(c.analysis.inputs.size(), 1u);  // a value spec without a file gives no type
  EXPECT_EQ(c.analysis.inputs[0].str(), "(2, 4) f32");
  EXPECT_EQ(c.default_spec, "random:7");
  EXPECT_EQ(c.exec.seed, 3u);
  EXPECT_EQ(c.exec.precision, rt::Precision::Target);
  EXPECT_EQ(c.analysis.target, "ascend910");
  EXPECT_TRUE(c.analysis.record_facts);
  EXPECT_TRUE(c.stop_on_entry);
  EXPECT_FALSE(c.checkpoint);

  LaunchConfig d = parse_launch_config({{"program", kNanModel}});
  EXPECT_EQ(d.default_spec, "random");
  EXPECT_TRUE(d.value_specs.empty());
  EXPECT_EQ(d.exec.precision, rt::Precision::Float32);
  EXPECT_FALSE(d.stop_on_entry);
  EXPECT_FALSE(d.cell);
}

TEST(DapLaunchConfig, TrainingModesAndTheirKeys) {
  LaunchConfig d = parse_launch_config({{"program", kNanModel}});
  EXPECT_EQ(d.mode, Mode::Infer);
  EXPECT_EQ(d.stop_on_drift, DriftStop::BelowThreshold);
  EXPECT_EQ(d.drift_threshold, 0.99);
  for (const auto& [given, want] :
       std::vector<std::pair<json, DriftStop>>{{true, DriftStop::Always},
                                               {false, DriftStop::Never},
                                               {"always", DriftStop::Always},
                                               {"never", DriftStop::Never},
                                               {"belowThreshold", DriftStop::BelowThreshold}}) {
    const LaunchConfig j = parse_launch_config(
        {{"program", kNanModel}, {"mode", "joint"}, {"stopOnDrift", given}, {"driftThreshold", 1}});
    EXPECT_EQ(j.stop_on_drift, want) << given.dump();
    EXPECT_EQ(j.drift_threshold, 1.0);
  }
  LaunchConfig t = parse_launch_config({{"program", kNanModel},
                                        {"mode", "joint"},
                                        {"steps", 5},
                                        {"epochs", 2},
                                        {"batch", 8},
                                        {"evalBatches", 3},
                                        {"calibrationBatches", 2},
                                        {"precision", "int8"}});
  EXPECT_EQ(t.mode, Mode::Joint);
  EXPECT_EQ(t.steps, 5);
  EXPECT_EQ(t.epochs, 2);
  EXPECT_EQ(t.batch, 8);
  EXPECT_EQ(t.eval_batches, 3);
  EXPECT_EQ(t.calibration_batches, 2);
  EXPECT_EQ(t.precision, "int8");
  EXPECT_EQ(t.exec.precision, rt::Precision::Float32);  // training computes in fp32
  EXPECT_EQ(parse_launch_config({{"program", kNanModel}, {"mode", "train"}}).mode, Mode::Train);

  EXPECT_EQ(launch_error({{"program", kNanModel}, {"mode", "debug"}}),
            "launch: 'mode' must be \"infer\", \"train\" or \"joint\", not \"debug\"");
  EXPECT_EQ(launch_error({{"program", kNanModel}, {"mode", 1}}), "launch: 'mode' must be a string");
  EXPECT_EQ(launch_error({{"program", kNanModel}, {"steps", 3}}),
            "launch: 'steps' applies to mode \"train\" or \"joint\", not to mode \"infer\"");
  EXPECT_EQ(launch_error({{"program", kNanModel}, {"mode", "train"}, {"evalBatches", 3}}),
            "launch: 'evalBatches' applies to mode \"joint\", not to mode \"train\"");
  EXPECT_EQ(launch_error({{"program", kNanModel}, {"mode", "train"}, {"inputs", {"2,4"}}}),
            "launch: 'inputs' applies to mode \"infer\" (training reads the script's dataset), "
            "not to mode \"train\"");
  EXPECT_EQ(launch_error({{"program", kNanModel}, {"mode", "train"}, {"steps", 0}}),
            "launch: 'steps' must be a positive integer, not 0");
  EXPECT_EQ(launch_error({{"program", kNanModel}, {"mode", "train"}, {"epochs", 1.5}}),
            "launch: 'epochs' must be a positive integer, not 1.5");
  EXPECT_EQ(launch_error({{"program", kNanModel}, {"mode", "train"}, {"data", "/no/such/dir"}}),
            "launch: data directory '/no/such/dir' does not exist");
  EXPECT_EQ(launch_error({{"program", kNanModel}, {"mode", "train"}, {"precision", "target"}}),
            "launch: precision \"target\" is the inference half's (mode \"joint\"); training "
            "computes in fp32");
  EXPECT_EQ(launch_error({{"program", kNanModel}, {"mode", "joint"}, {"precision", "fp16"}}),
            "launch: precision must be \"fp32\", \"target\" or \"int8\", not \"fp16\"");
  EXPECT_EQ(launch_error({{"program", kNanModel}, {"mode", "joint"}, {"stopOnDrift", "often"}}),
            "launch: 'stopOnDrift' must be \"belowThreshold\", \"always\", \"never\" or a "
            "boolean, not \"often\"");
  EXPECT_EQ(launch_error({{"program", kNanModel}, {"mode", "joint"}, {"driftThreshold", 0}}),
            "launch: 'driftThreshold' must be a number in (0, 1], not 0");
  EXPECT_EQ(launch_error({{"program", kNanModel}, {"mode", "train"}, {"stopOnDrift", true}}),
            "launch: 'stopOnDrift' applies to mode \"joint\", not to mode \"train\"");
  EXPECT_EQ(launch_error({{"program", kNanModel}, {"precision", "int8"}})
                .rfind("launch: precision \"int8\" is the inference half's of mode \"joint\"", 0),
            0u);
}

TEST(DapFilters, TrainingFilterConditions) {
  std::string err;
  EXPECT_EQ(filter_condition_value("loss-spike", " 2.5 ", &err), 2.5);
  EXPECT_EQ(filter_condition_value("grad-explode", "1e4", &err), 1e4);
  EXPECT_FALSE(filter_condition_value("grad-vanish", "-1", &err));
  EXPECT_EQ(err,
            "the condition of 'grad-vanish' must be a positive number (the global-norm threshold, "
            "e.g. 1e-7), not \"-1\"");
  EXPECT_FALSE(filter_condition_value("grad-explode", "10x", &err));
  EXPECT_FALSE(filter_condition_value("nan", "3", &err));
  EXPECT_EQ(err, "the filter 'nan' takes no condition");
  EXPECT_EQ(exception_id("grad-explode: step 2: the global gradient norm 1e+09 is above 1000"),
            "grad-explode");
  EXPECT_EQ(exception_id("RuntimeError: node 'x'"), "RuntimeError");
  EXPECT_EQ(exception_id("precision-drift: at int8 the cosine of layer 'fc1' is 0.9"),
            "precision-drift");
  // kernel-error is the one filter on by default (a session's filters before
  // setExceptionBreakpoints, and the `default` initialize announces).
  EXPECT_EQ(default_filters(), std::set<std::string>{"kernel-error"});
  EXPECT_TRUE(is_exception_filter("kernel-error"));
  EXPECT_FALSE(filter_condition_value("kernel-error", "1", &err));
}

TEST(DapLaunchConfig, NamesTheKeyAtFault) {
  EXPECT_EQ(launch_error(json::object()), "launch: 'program' (the model file) is required");
  EXPECT_EQ(launch_error({{"program", 5}}), "launch: 'program' must be a string");
  EXPECT_EQ(launch_error({{"program", "/no/such/model.py"}}),
            "launch: program '/no/such/model.py' does not exist or is not a file");
  EXPECT_EQ(launch_error({{"program", kNanModel}, {"seed", -1}}),
            "launch: 'seed' must be a non-negative integer");
  EXPECT_EQ(launch_error({{"program", kNanModel}, {"seed", "1"}}),
            "launch: 'seed' must be a non-negative integer");
  EXPECT_EQ(launch_error({{"program", kNanModel}, {"precision", "fp8"}}),
            "launch: precision must be \"fp32\" or \"target\", not \"fp8\"");
  EXPECT_EQ(launch_error({{"program", kNanModel}, {"maxTensorBytes", 0}}),
            "launch: 'maxTensorBytes' must be a positive integer");
  EXPECT_EQ(launch_error({{"program", kNanModel}, {"checkpoint", ""}}),
            "launch: 'checkpoint' is an empty path");
  EXPECT_EQ(launch_error({{"program", kNanModel}, {"inputs", "2,4"}}),
            "launch: 'inputs' must be a list of strings");
  EXPECT_EQ(launch_error({{"program", kNanModel}, {"inputs", {"1,3,,224"}}})
                .rfind("launch: bad input shape \"1,3,,224\": ", 0),
            0u);
  EXPECT_EQ(launch_error({{"program", kNanModel}, {"input", "sevens"}}),
            "launch: 'input' must be random, random:SEED, ones, zeros or a .npy file, not "
            "\"sevens\"");
  EXPECT_EQ(launch_error({{"program", kNanModel}, {"input", 7}}),
            "launch: 'input' must be a string");
  EXPECT_EQ(launch_error({{"program", kNanModel}, {"cell", 1}}), "launch: 'cell' must be a string");
  const std::string unknown = launch_error({{"program", kNanModel}, {"target", "tpu9"}});
  EXPECT_EQ(unknown.rfind("launch: unknown target 'tpu9' (known: cpu, ", 0), 0u) << unknown;
  // The first problem wins, in the order of the keys: the program before the seed, the seed
  // before the inputs.
  EXPECT_EQ(launch_error({{"program", "/no/such/model.py"}, {"seed", -1}}),
            "launch: program '/no/such/model.py' does not exist or is not a file");
  EXPECT_EQ(launch_error({{"program", kNanModel}, {"seed", -1}, {"inputs", 3}}),
            "launch: 'seed' must be a non-negative integer");
  // A member of the wrong type that is not checked by hand is a JSON type error, not a crash.
  EXPECT_THROW(parse_launch_config({{"program", kNanModel}, {"stopOnEntry", "yes"}}),
               json::type_error);
}

TEST(DapLaunchConfig, LoadsTheModelOrSaysWhyNot) {
  std::vector<std::string> console;
  auto log = [&](const std::string& s) { console.push_back(s); };
  LaunchConfig c = parse_launch_config(
      {{"program", kNanModel}, {"cell", "NanNet"}, {"inputs", {"2,4"}}, {"input", "ones"}});
  auto ex = load_model(c, log);
  ASSERT_TRUE(ex);
  EXPECT_EQ(ex->report().name, "NanNet");
  EXPECT_EQ(ex->graph().nodes.size(), 8u);
  EXPECT_TRUE(console.empty());  // no checkpoint
  EXPECT_EQ(launch_summary(*ex, "nan_model.py"),
            "cellscope: NanNet from nan_model.py, 8 nodes, 0 parameters, inputs x(2, 4) f32");

  c.cell = "NoSuchCell";
  try {
    load_model(c, log);
    ADD_FAILURE() << "an unknown cell loaded";
  } catch (const LaunchError& e) {
    EXPECT_EQ(std::string(e.what()),
              "launch: unknown cell 'NoSuchCell' in " + kNanModel + " (cells: Inner, NanNet)");
  }
  c.cell = "NanNet";
  c.value_specs = {"ones", "zeros"};
  try {
    load_model(c, log);
    ADD_FAILURE() << "two inputs for one";
  } catch (const LaunchError& e) {
    EXPECT_EQ(std::string(e.what()), "launch: NanNet takes 1 input(s), 'inputs' gives 2");
  }
}

// ---- graph index --------------------------------------------------------------------------------

TEST(DapGraphIndex, FramesCallSitesLinesAndLocals) {
  LaunchConfig c = parse_launch_config(
      {{"program", kNanModel}, {"cell", "NanNet"}, {"inputs", {"2,4"}}, {"input", "ones"}});
  auto ex = load_model(c, [](const std::string&) {});
  GraphIndex index = index_graph(ex->report());
  const std::string file = canonical(kNanModel);
  ASSERT_EQ(index.nodes.size(), ex->graph().nodes.size());
  EXPECT_EQ(index.class_of.at(""), "NanNet");
  EXPECT_EQ(index.class_of.at("inner"), "Inner");
  // Inner's construct (lines 14-17) and NanNet's (26-28) produce the nodes.
  EXPECT_EQ(index.node_lines.at(file), (std::set<int>{14, 15, 16, 17, 26, 28}));
  ASSERT_TRUE(index.call_site.count("inner"));
  EXPECT_EQ(index.call_site.at("inner").line, 27);  // x = self.inner(x)
  EXPECT_EQ(index.call_site.at("inner").file, file);

  auto add = ex->find_node("inner/Add");
  ASSERT_TRUE(add);
  const NodeInfo& ni = index.nodes[*add];
  EXPECT_EQ(ni.frame, "inner");
  EXPECT_EQ(ni.chain, (std::vector<std::string>{"", "inner"}));
  EXPECT_EQ(ni.line, 15);
  EXPECT_TRUE(ni.stoppable);
  EXPECT_EQ(index.frames_of(*add), (std::vector<std::string>{"inner", ""}));
  std::vector<StackFrame> stack = index.stack(*add);
  ASSERT_EQ(stack.size(), 2u);
  EXPECT_EQ(stack[0].name, "inner (Inner).construct");
  EXPECT_EQ(stack[0].line, 15);
  EXPECT_EQ(stack[1].name, "NanNet.construct");
  EXPECT_EQ(stack[1].line, 27);
  EXPECT_EQ(stack[1].column, 1);
  EXPECT_FALSE(index.nodes[*ex->find_node("x")].stoppable);  // the graph input

  // The locals before the Add: Inner's `y` (ReLU of e), then its nodes by relative id.
  ASSERT_EQ(ex->run({}).kind, rt::RunStatus::Kind::Finished);
  Inspector inspector(*ex, index, *add);
  NamedTensors locals = inspector.locals("inner");
  ASSERT_FALSE(locals.empty());
  EXPECT_EQ(locals[0].first, "y");
  EXPECT_EQ(tensor_summary(locals[0].second),
            "Tensor(2, 4) float32 min=2.71828 max=2.71828 mean=2.71828");
  EXPECT_EQ(locals.back().first, "relu");
  std::string err;
  auto r = inspector.evaluate(" y.sum() ", "inner", &err);
  ASSERT_TRUE(r) << err;
  EXPECT_EQ(r->text, "21.7463");
  EXPECT_FALSE(inspector.evaluate("z", "inner", &err));  // not computed before the Add
  EXPECT_EQ(err, "'z' is not a computed tensor in this frame");
}

// `self.<path>` as written in construct: the frame's layer output or Parameter (the issue: the
// Debug Console could not evaluate `self.conv2.weight`).
TEST(DapVariables, SelfPathsNameTheFramesOwnLayersAndParameters) {
  LaunchConfig c =
      parse_launch_config({{"program", CELLSCOPE_SOURCE_DIR "/tests/corpus/models/lenet5.py"},
                           {"cell", "LeNet5"},
                           {"inputs", {"1,1,32,32"}},
                           {"input", "ones"}});
  auto ex = load_model(c, [](const std::string&) {});
  ASSERT_EQ(ex->run({}).kind, rt::RunStatus::Kind::Finished);
  GraphIndex index = index_graph(ex->report());
  Inspector inspector(*ex, index, ex->graph().nodes.size());
  std::string err;
  auto w = inspector.evaluate("self.conv2.weight", "", &err);
  ASSERT_TRUE(w) << err;
  EXPECT_EQ(w->text.substr(0, 29), "Tensor(16, 6, 5, 5) float32 m");
  auto shape = inspector.evaluate("self.conv2.weight.shape", "", &err);
  ASSERT_TRUE(shape) << err;
  EXPECT_EQ(shape->text, "(16, 6, 5, 5)");
  auto out = inspector.evaluate("self.conv2", "", &err);  // the layer's output
  ASSERT_TRUE(out) << err;
  EXPECT_EQ(out->text.substr(0, 27), "Tensor(1, 16, 10, 10) float");
  EXPECT_FALSE(inspector.evaluate("self.conv9.weight", "", &err));
  EXPECT_EQ(err, "'self.conv9.weight' is not a computed tensor in this frame");
}

// ---- breakpoints --------------------------------------------------------------------------------

TEST(DapBreakpoints, HitConditions) {
  auto h = parse_hit_condition(" >= 3 ");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->op, ">=");
  EXPECT_EQ(h->n, 3);
  EXPECT_EQ(parse_hit_condition("5")->op, "==");
  EXPECT_EQ(parse_hit_condition("=5")->op, "==");
  EXPECT_EQ(parse_hit_condition("%2")->n, 2);
  EXPECT_FALSE(parse_hit_condition("%0"));
  EXPECT_FALSE(parse_hit_condition("often"));
  EXPECT_FALSE(parse_hit_condition(">"));
  EXPECT_FALSE(parse_hit_condition("3x"));

  EXPECT_TRUE(hit_condition_met("", 1));
  EXPECT_TRUE(hit_condition_met("  ", 7));
  EXPECT_FALSE(hit_condition_met("2", 1));
  EXPECT_TRUE(hit_condition_met("2", 2));
  EXPECT_FALSE(hit_condition_met("2", 3));
  EXPECT_FALSE(hit_condition_met(">2", 2));
  EXPECT_TRUE(hit_condition_met(">2", 3));
  EXPECT_TRUE(hit_condition_met(">=2", 2));
  EXPECT_FALSE(hit_condition_met("%3", 4));
  EXPECT_TRUE(hit_condition_met("%3", 6));

  EXPECT_FALSE(hit_condition_error(""));
  EXPECT_FALSE(hit_condition_error(" "));
  EXPECT_FALSE(hit_condition_error("%2"));
  EXPECT_EQ(hit_condition_error("%0"),
            "invalid hit condition `%0`: expected a count N, =N, >N, >=N or %N (every N-th hit, "
            "N > 0)");
}

// An evaluator over fixed numbers: `x.max()` is 12, `x` a tensor (no number), others unknown.
std::optional<EvalResult> fake_eval(const std::string& expr, std::string* err) {
  const std::string e(graphcore::text::trim(expr));
  EvalResult r;
  if (e == "x.max()") {
    r.number = 12;
    r.text = "12";
    return r;
  }
  if (e == "x") {
    r.text = "Tensor(2,) float32";
    return r;
  }
  *err = "'" + e + "' is not a computed tensor in this frame";
  return std::nullopt;
}

TEST(DapBreakpoints, ConditionsAndLogpoints) {
  std::string err;
  EXPECT_TRUE(eval_condition("x.max() > 10", fake_eval, &err));
  EXPECT_FALSE(eval_condition("x.max() <= 10", fake_eval, &err));
  EXPECT_TRUE(eval_condition("x.max()==12", fake_eval, &err));
  EXPECT_TRUE(eval_condition("x.max() != 1e3", fake_eval, &err));
  EXPECT_TRUE(err.empty());
  EXPECT_FALSE(eval_condition("x > 1", fake_eval, &err));
  EXPECT_EQ(err, "the left side must be a number, e.g. x.max() or step");
  EXPECT_FALSE(eval_condition("x.max() > ten", fake_eval, &err));
  EXPECT_EQ(err, "the right side must be a number");
  EXPECT_FALSE(eval_condition("w.max() > 1", fake_eval, &err));
  EXPECT_EQ(err, "'w.max()' is not a computed tensor in this frame");
  // `EXPR % N`: the remainder (`step % 5 == 0`); the number sides are exact numbers.
  err.clear();
  EXPECT_TRUE(eval_condition("x.max() % 5 == 2", fake_eval, &err));
  EXPECT_FALSE(eval_condition("x.max() % 4 != 0", fake_eval, &err));
  EXPECT_TRUE(eval_condition("x.max()%7>=5", fake_eval, &err));
  EXPECT_TRUE(err.empty()) << err;
  EXPECT_FALSE(eval_condition("x.max() % 0 == 0", fake_eval, &err));
  EXPECT_EQ(err, "the right side of % must be a non-zero number");
  EXPECT_FALSE(eval_condition("x.max() % y == 0", fake_eval, &err));
  EXPECT_EQ(err, "the right side of % must be a non-zero number");
  EXPECT_FALSE(eval_condition("x.max() > 10abc", fake_eval, &err));
  EXPECT_EQ(err, "the right side must be a number");
  EXPECT_FALSE(eval_condition("garbage", fake_eval, &err));
  EXPECT_EQ(err, "unsupported condition (use e.g. `x.max() > 10`)");

  EXPECT_EQ(interpolate("max={x.max()} t={x} w={w} {unclosed", fake_eval),
            "max=12 t=Tensor(2,) float32 w=<'w' is not a computed tensor in this frame> "
            "{unclosed");

  // A breakpoint counts a hit when its condition holds (or cannot be evaluated), then applies
  // its hit condition; a logpoint logs instead of stopping.
  Breakpoint bp;
  bp.condition = "x.max() > 100";
  Reached r = reach(bp, fake_eval);
  EXPECT_FALSE(r.stop);
  EXPECT_EQ(bp.hits, 0);
  bp.condition = "x.max() > 10";
  bp.hit_condition = "%2";
  EXPECT_FALSE(reach(bp, fake_eval).stop);
  EXPECT_TRUE(reach(bp, fake_eval).stop);
  EXPECT_EQ(bp.hits, 2);
  bp.condition = "garbage";
  bp.hit_condition.clear();
  bp.log_message = "x is {x.max()}";
  r = reach(bp, fake_eval);
  EXPECT_EQ(r.condition_error,
            "breakpoint condition \"garbage\": unsupported condition (use e.g. `x.max() > 10`)");
  EXPECT_FALSE(r.stop);
  EXPECT_EQ(r.log, "x is 12");
  EXPECT_EQ(bp.hits, 3);
}

TEST(DapBreakpoints, LineVerification) {
  const std::set<int> nodes = {14, 15, 16, 17, 26, 28};
  const std::set<int> defs = {8, 9, 13, 20, 21, 25};
  LineVerdict v = verify_line(&nodes, defs, 15, "NanNet", "nan_model.py");
  EXPECT_EQ(v.line, 15);
  EXPECT_EQ(v.message, "");
  v = verify_line(&nodes, defs, 13, "NanNet", "nan_model.py");  // `def construct`: moved in
  EXPECT_EQ(v.line, 14);
  EXPECT_EQ(v.message, "moved from line 13 to the next line that produces a graph node");
  v = verify_line(&nodes, defs, 27, "NanNet", "nan_model.py");  // a call of a sub-Cell
  EXPECT_EQ(v.line, 28);
  v = verify_line(&nodes, defs, 18, "NanNet", "nan_model.py");  // the next node is in NanNet
  EXPECT_EQ(v.line, 0);
  EXPECT_EQ(v.message,
            "line 18 produces no graph node (not in construct of a compiled Cell, or no tensor "
            "operation follows it in that function)");
  EXPECT_EQ(verify_line(&nodes, defs, 29, "NanNet", "nan_model.py").line, 0);
  v = verify_line(nullptr, defs, 3, "NanNet", "other.py");
  EXPECT_EQ(v.line, 0);
  EXPECT_EQ(v.message, "no graph node of NanNet comes from other.py");

  BreakpointTable table;
  EXPECT_EQ(table.id_for(table.take("/m.py"), 14), 1);
  Breakpoint bp;
  bp.id = 1;
  bp.line = 14;
  table.add("/m.py", bp);
  ASSERT_TRUE(table.find("/m.py", 14));
  EXPECT_FALSE(table.find("/m.py", 15));
  EXPECT_FALSE(table.find("/other.py", 14));
  // Setting the file's breakpoints again keeps the id of a line; a new line gets a new id.
  auto old = table.take("/m.py");
  EXPECT_FALSE(table.find("/m.py", 14));
  EXPECT_EQ(table.id_for(old, 14), 1);
  EXPECT_EQ(table.id_for(old, 16), 2);
}

TEST(DapBreakpoints, ExceptionFilters) {
  std::vector<std::string> ids;
  for (const ExceptionFilter& f : exception_filters()) ids.emplace_back(f.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"nan", "inf", "fp16-overflow", "all-zero", "loss-nan",
                                           "loss-spike", "grad-nan", "grad-inf", "grad-explode",
                                           "grad-vanish", "weight-unchanged", "kernel-error"}));
  EXPECT_TRUE(is_exception_filter("fp16-overflow"));
  EXPECT_FALSE(is_exception_filter("NaN"));
  EXPECT_EQ(exception_id("NaN in the output of node 'Log' (Log) at m.py:3: ..."), "NaN");
  EXPECT_EQ(exception_id("fp16 overflow in the output 1 of node 'x'"), "fp16 overflow");
  EXPECT_EQ(exception_id("RuntimeError: node 'Gather' (Gather) at m.py:16: index 8"),
            "RuntimeError");
}

// ---- variables and messages ---------------------------------------------------------------------

TEST(DapVariables, NamesAndNumbers) {
  EXPECT_EQ(relative_name("layer1.0.conv1", "layer1.0"), "conv1");
  EXPECT_EQ(relative_name("inner/Add", "inner"), "Add");
  EXPECT_EQ(relative_name("inner2/Add", "inner"), "inner2/Add");
  EXPECT_EQ(relative_name("conv1", ""), "conv1");
  EXPECT_EQ(num(2.718281828), "2.71828");
  EXPECT_EQ(num(1e20), "1e+20");
  VarRefs refs;
  EXPECT_FALSE(refs.find(1));
  EXPECT_EQ(refs.add({VarRef::Kind::Params, "inner", {}}), 1);
  ASSERT_TRUE(refs.find(1));
  EXPECT_EQ(refs.find(1)->frame, "inner");
  EXPECT_FALSE(refs.find(0));
  refs.clear();
  EXPECT_FALSE(refs.find(1));
}

TEST(DapProtocol, RequestMembersNeverThrow) {
  EXPECT_EQ(request_seq(json::parse(R"({"seq": "1", "command": 7})")), 0);
  EXPECT_EQ(request_command(json::parse(R"({"seq": "1", "command": 7})")), "");
  EXPECT_EQ(request_seq(json::parse(R"({"seq": 4, "command": "threads"})")), 4);
  EXPECT_EQ(request_command(json::parse(R"({"seq": 4, "command": "threads"})")), "threads");

  EXPECT_EQ(read_message("not json").kind, Incoming::Kind::Ignored);
  EXPECT_EQ(read_message("[1]").kind, Incoming::Kind::Ignored);
  EXPECT_EQ(read_message(R"({"seq": 1, "type": "event", "event": "x"})").kind,
            Incoming::Kind::Ignored);
  EXPECT_EQ(read_message(R"({"seq": null, "type": "request", "command": "threads"})").kind,
            Incoming::Kind::Ignored);
  EXPECT_EQ(read_message(R"({"seq": 2, "type": "request", "command": 7})").kind,
            Incoming::Kind::Invalid);
  Incoming in = read_message(R"({"seq": 3, "type": "request", "command": "x", "arguments": 5})");
  EXPECT_EQ(in.kind, Incoming::Kind::Request);
  EXPECT_EQ(in.command, "x");
  EXPECT_EQ(in.request["arguments"], json::object());

  json fail = error_response_message(9, json{{"seq", 3}, {"command", "evaluate"}}, "no");
  EXPECT_EQ(fail.dump(), R"({"body":{"error":{"format":"no","id":1,"showUser":true}},)"
                         R"("command":"evaluate","message":"no","request_seq":3,"seq":9,)"
                         R"("success":false,"type":"response"})");
}

// ---- the session, in process --------------------------------------------------------------------

// The messages a Session sends, with waits for the ones its worker sends later.
class Client {
 public:
  Client()
      : session_([this](const std::string& body) {
          std::lock_guard lock(m_);
          messages_.push_back(json::parse(body));
          cv_.notify_all();
        }) {}

  // Sends a request; returns its response (requests are answered before handle() returns).
  json request(const std::string& command, const json& arguments = json::object()) {
    const int seq = next_seq_++;
    session_.handle(
        json{{"seq", seq}, {"type", "request"}, {"command", command}, {"arguments", arguments}}
            .dump());
    return response_to(seq);
  }
  json response_to(int seq) {
    std::lock_guard lock(m_);
    for (const json& m : messages_)
      if (m["type"] == "response" && m["request_seq"] == seq) return m;
    return nullptr;
  }
  void send_raw(const std::string& body) { session_.handle(body); }
  // How many responses answer request `seq` (exactly one, always).
  size_t responses_to(int seq) {
    std::lock_guard lock(m_);
    size_t n = 0;
    for (const json& m : messages_) n += m["type"] == "response" && m["request_seq"] == seq ? 1 : 0;
    return n;
  }

  // The next event named `name` after the ones already waited for, or null after 60 s.
  json wait_event(const std::string& name) {
    std::unique_lock lock(m_);
    json found;
    cv_.wait_for(lock, std::chrono::seconds(60), [&] {
      for (; waited_ < messages_.size(); ++waited_) {
        if (messages_[waited_]["type"] == "event" && messages_[waited_]["event"] == name) {
          found = messages_[waited_++];
          return true;
        }
      }
      return false;
    });
    return found;
  }
  std::vector<json> events(const std::string& name) {
    std::lock_guard lock(m_);
    std::vector<json> out;
    for (const json& m : messages_)
      if (m["type"] == "event" && m["event"] == name) out.push_back(m);
    return out;
  }
  size_t count() {
    std::lock_guard lock(m_);
    return messages_.size();
  }
  Session& session() { return session_; }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<json> messages_;
  size_t waited_ = 0;
  int next_seq_ = 1;
  Session session_;  // last: destroyed (its worker joined) before the messages
};

TEST(DapSession, BreakpointStackVariablesEvaluateToTheEnd) {
  Client c;
  json init = c.request("initialize", {{"adapterID", "test"}});
  EXPECT_EQ(init["success"], true);
  EXPECT_EQ(init["body"]["exceptionBreakpointFilters"].size(), 12u);
  EXPECT_TRUE(c.wait_event("initialized").is_object());

  json launch = c.request(
      "launch",
      {{"program", kNanModel}, {"cell", "NanNet"}, {"inputs", {"2,4"}}, {"input", "ones"}});
  ASSERT_EQ(launch["success"], true) << launch.dump();
  json summary = c.wait_event("output");
  EXPECT_EQ(summary["body"]["output"], "cellscope: NanNet from " + kNanModel +
                                           ", 8 nodes, 0 parameters, inputs x(2, 4) f32\n");

  // Line 15 (y = y + y) stops; line 16's condition is false (y is 2e there); line 18 is blank
  // between two classes.
  json bps = c.request(
      "setBreakpoints",
      {{"source", {{"path", kNanModel}}},
       {"breakpoints",
        {{{"line", 15}}, {{"line", 16}, {"condition", "y.max() > 100"}}, {{"line", 18}}}}});
  const json& b = bps["body"]["breakpoints"];
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0]["verified"], true);
  EXPECT_EQ(b[0]["line"], 15);
  EXPECT_EQ(b[1]["verified"], true);
  EXPECT_EQ(b[2]["verified"], false);
  EXPECT_EQ(c.request("setExceptionBreakpoints", {{"filters", json::array()}})["success"], true);
  EXPECT_EQ(c.request("stackTrace", {{"threadId", 1}})["message"], "not stopped");

  EXPECT_EQ(c.request("configurationDone")["success"], true);
  json stopped = c.wait_event("stopped");
  ASSERT_TRUE(stopped.is_object());
  EXPECT_EQ(stopped["body"]["reason"], "breakpoint");
  EXPECT_EQ(stopped["body"]["hitBreakpointIds"], json::array({b[0]["id"]}));
  json focus = c.events("cellscope.focus").back();
  EXPECT_EQ(focus["body"]["node"], "inner/Add");
  EXPECT_EQ(focus["body"]["line"], 15);

  json st = c.request("stackTrace", {{"threadId", 1}});
  const json& frames = st["body"]["stackFrames"];
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0]["name"], "inner (Inner).construct");
  EXPECT_EQ(frames[0]["line"], 15);
  EXPECT_EQ(frames[0]["source"]["path"], canonical(kNanModel));
  EXPECT_EQ(frames[1]["name"], "NanNet.construct");
  EXPECT_EQ(frames[1]["line"], 27);

  json sc = c.request("scopes", {{"frameId", 1}})["body"]["scopes"];
  ASSERT_EQ(sc.size(), 2u);
  EXPECT_EQ(sc[0]["name"], "Locals");
  EXPECT_EQ(sc[1]["name"], "Parameters");
  json locals = c.request("variables", {{"variablesReference", sc[0]["variablesReference"]}});
  const json& vars = locals["body"]["variables"];
  ASSERT_FALSE(vars.empty());
  EXPECT_EQ(vars[0]["name"], "y");
  EXPECT_EQ(vars[0]["value"], "Tensor(2, 4) float32 min=2.71828 max=2.71828 mean=2.71828");
  json kids = c.request("variables", {{"variablesReference", vars[0]["variablesReference"]}});
  EXPECT_EQ(kids["body"]["variables"][0]["name"], "shape");
  EXPECT_EQ(kids["body"]["variables"][0]["value"], "(2, 4)");

  EXPECT_EQ(c.request("evaluate", {{"expression", "y.max()"}})["body"]["result"], "2.71828");
  json outer = c.request("evaluate", {{"expression", "x.shape"}, {"frameId", 2}});
  EXPECT_EQ(outer["body"]["result"], "(2, 4)");
  json missing = c.request("evaluate", {{"expression", "z"}});
  EXPECT_EQ(missing["success"], false);
  EXPECT_EQ(missing["message"], "'z' is not a computed tensor in this frame");
  EXPECT_EQ(c.request("exceptionInfo")["message"], "no exception");

  json cont = c.request("continue", {{"threadId", 1}});
  EXPECT_EQ(cont["body"]["allThreadsContinued"], true);
  json exited = c.wait_event("exited");
  ASSERT_TRUE(exited.is_object());
  EXPECT_EQ(exited["body"]["exitCode"], 0);
  EXPECT_TRUE(c.wait_event("terminated").is_object());
  EXPECT_EQ(c.events("stopped").size(), 1u);  // line 16's condition did not hold
  bool ran = false;
  for (const json& o : c.events("output"))
    ran |= o["body"]["output"].get<std::string>().rfind("cellscope: ran 8 nodes in ", 0) == 0;
  EXPECT_TRUE(ran);
  EXPECT_EQ(c.events("cellscope.focus").back()["body"]["node"], "");  // cleared on continue
  EXPECT_EQ(c.request("continue", {{"threadId", 1}})["message"], "not stopped");
}

TEST(DapSession, MalformedRequestsAreAnsweredOrDroppedNeverFatal) {
  Client c;
  // A string seq cannot be answered: dropped.
  c.send_raw(R"({"seq": "1", "type": "request", "command": "initialize"})");
  EXPECT_EQ(c.count(), 0u);
  // A numeric command is answered with an error.
  c.send_raw(R"({"seq": 2, "type": "request", "command": 7})");
  json bad = c.response_to(2);
  ASSERT_TRUE(bad.is_object());
  EXPECT_EQ(bad["success"], false);
  EXPECT_EQ(bad["command"], "");
  EXPECT_EQ(bad["message"], "invalid request: 'command' must be a string");
  c.send_raw("{not json");
  c.send_raw(R"({"seq": 3, "type": "request", "command": "setExceptionBreakpoints",
                 "arguments": {"filters": "nan"}})");
  EXPECT_EQ(c.response_to(3)["message"],
            "setExceptionBreakpoints failed: arguments.filters must be an array, but is a string");
  c.send_raw(R"({"seq": 4, "type": "request", "command": "restart"})");
  EXPECT_EQ(c.response_to(4)["message"], "unsupported request 'restart'");
  // The session still serves.
  json threads = c.request("threads");
  EXPECT_EQ(threads["success"], true);
  EXPECT_EQ(threads["body"]["threads"][0]["name"], "construct");
}

TEST(DapSession, ABadLaunchFailsAndTerminates) {
  Client c;
  c.request("initialize");
  // A setBreakpoints before the launch is answered once the launch is done: here, unverified.
  c.send_raw(
      json{{"seq", 50},
           {"type", "request"},
           {"command", "setBreakpoints"},
           {"arguments", {{"source", {{"path", kNanModel}}}, {"breakpoints", {{{"line", 15}}}}}}}
          .dump());
  EXPECT_TRUE(c.response_to(50).is_null());
  json r = c.request("launch", {{"program", kNanModel}, {"cell", "NoSuchCell"}});
  EXPECT_EQ(r["success"], false);
  EXPECT_EQ(r["message"],
            "launch: unknown cell 'NoSuchCell' in " + kNanModel + " (cells: Inner, NanNet)");
  json bps = c.response_to(50);
  ASSERT_TRUE(bps.is_object());
  EXPECT_EQ(bps["body"]["breakpoints"][0]["verified"], false);
  EXPECT_EQ(bps["body"]["breakpoints"][0]["message"], r["message"]);
  EXPECT_TRUE(c.wait_event("terminated").is_object());
  // After the failed launch a setBreakpoints is answered at once (it used to wait forever),
  // whatever its members hold.
  json late = c.request("setBreakpoints", {{"source", {{"path", kNanModel}}},
                                           {"breakpoints", {{{"line", "x"}}, {{"line", 16}}}}});
  EXPECT_EQ(late["success"], true);
  ASSERT_EQ(late["body"]["breakpoints"].size(), 2U);
  EXPECT_EQ(late["body"]["breakpoints"][0]["line"], 0);
  EXPECT_EQ(late["body"]["breakpoints"][1]["line"], 16);
  EXPECT_EQ(late["body"]["breakpoints"][1]["message"], r["message"]);
  EXPECT_EQ(c.request("launch", {{"program", kNanModel}})["message"],
            "launch: the session was already launched");
  bool disconnected = false;
  c.session().set_disconnect_handler([&] { disconnected = true; });
  EXPECT_EQ(c.request("disconnect")["success"], true);
  EXPECT_TRUE(disconnected);
}

// A held setBreakpoints that cannot be read fails alone: the launch succeeds once and the run
// starts (it used to answer the launch a second time, failed, and never run).
TEST(DapSession, AnUnreadableHeldRequestDoesNotFailTheLaunch) {
  Client c;
  c.request("initialize");
  c.send_raw(
      json{{"seq", 60},
           {"type", "request"},
           {"command", "setBreakpoints"},
           {"arguments", {{"source", {{"path", kNanModel}}}, {"breakpoints", {{{"line", "x"}}}}}}}
          .dump());
  json r = c.request("launch", {{"program", kNanModel}, {"cell", "NanNet"}, {"inputs", {"2,4"}}});
  ASSERT_EQ(r["success"], true) << r.dump();
  json held = c.response_to(60);
  ASSERT_TRUE(held.is_object());
  EXPECT_EQ(held["success"], false);
  EXPECT_NE(held["message"].get<std::string>().find("setBreakpoints failed"), std::string::npos);
  EXPECT_EQ(c.responses_to(r["request_seq"].get<int>()), 1U);
  c.request("configurationDone");
  EXPECT_TRUE(c.wait_event("terminated").is_object());
  EXPECT_EQ(c.events("exited").size(), 1U);
}

}  // namespace
}  // namespace cellscope::dap
