#include "graphcore/diagnostic_codes.h"

namespace graphcore {

namespace {
constexpr DiagnosticCodeInfo kCodes[] = {
    {"syntax-error", "error",
     "tree-sitter could not parse this (unexpected token or missing one); other Cells still "
     "compile"},
    {"invalid-encoding", "error",
     "the file is not valid UTF-8 (first bad byte located; the rest is analysed with ? in its "
     "place)"},
    {"file-too-large", "error", "the file exceeds max_file_bytes (4 MiB) and is not analysed"},
    {"nesting-too-deep", "error", "expressions or blocks nested deeper than 400 levels"},
    {"file-not-found", "error", "the file given on the command line cannot be read"},
    {"unknown-api", "error",
     "nn.X / ops.X does not exist in the configured MindSpore version; \"did you mean\" lists the "
     "closest APIs (also across nn/ops), a quick fix rewrites it, and analysis continues with the "
     "best match"},
    {"import-error", "error",
     "from mindspore.ops import X of a name that does not exist, a relative import with no file, "
     "an absolute import of a workspace package module that is missing"},
    {"cyclic-import", "error",
     "a name imported from a module that is still being initialised (the modules import each "
     "other)"},
    {"undefined-name", "error",
     "a name that is not defined in any enclosing scope, the module, or builtins"},
    {"unknown-attribute", "error",
     "an attribute that the object does not have (e.g. self.fc3 never assigned in __init__)"},
    {"unknown-keyword", "error",
     "a keyword argument the API/function does not take (says when another MindSpore version has "
     "it; suggests the closest parameter)"},
    {"missing-argument", "error", "a required argument is not given"},
    {"too-many-arguments", "error", "more positional arguments than the signature takes"},
    {"invalid-argument", "error",
     "an argument value the API rejects (e.g. nn.Dropout(p=1.5), bad pad_mode), or one given "
     "twice"},
    {"deprecated-argument", "warning",
     "an argument deprecated in the configured version (nn.Dropout(keep_prob=...), with a quick "
     "fix to p=1-keep_prob)"},
    {"shape-mismatch", "error",
     "a layer's expectation does not match its input (Dense in_channels vs the features it "
     "receives, Conv in_channels, ...)"},
    {"rank-error", "error", "an input of the wrong rank (Conv2d given a 2-D tensor)"},
    {"broadcast-error", "error",
     "elementwise operands that cannot be broadcast (residual add of 28x28 onto 56x56)"},
    {"matmul-dim", "error", "matrix-multiply inner dimensions differ"},
    {"reshape-size", "error", "reshape to a shape with a different element count"},
    {"concat-dim", "error", "concatenated tensors differ outside the concatenation axis"},
    {"axis-error", "error", "an axis out of range for the tensor's rank"},
    {"dtype-error", "error", "a dtype the operation rejects (e.g. exp of an int tensor)"},
    {"index-error", "error", "a constant index out of range (tensor axis, tuple, list)"},
    {"key-error", "error", "a missing key in a dict built by model code"},
    {"type-error", "error",
     "an operation on values of the wrong Python type (calling a non-callable, range() of a "
     "string, ...)"},
    {"value-error", "error", "list.index of a missing value and similar"},
    {"unpack-error", "error", "tuple unpacking with the wrong number of values"},
    {"zero-division", "error", "division by zero in model-building code"},
    {"assertion-failed", "error",
     "an assert in model-building code that fails for these arguments"},
    {"raises", "error/warning",
     "model-building code reaches a raise (error when building the analysed Cell; warning at "
     "module level)"},
    {"no-construct", "error", "a Cell that is analysed has no construct"},
    {"no-return", "warning",
     "construct returns nothing: no graph output (MindSpore's export says \"No output node "
     "found\")"},
    {"unused-result", "warning",
     "an operation in construct whose result is never used (the last node of a dead chain)"},
    {"branch-shape", "warning",
     "the branches of an if on a tensor value give a variable different shapes (dynamic shape)"},
    {"graph-mode-unsupported", "error/warning",
     "syntax that GRAPH_MODE rejects in construct (yield, await, import, try, del, class "
     "definitions; global and nonlocal as warnings); an error only where the program selects "
     "GRAPH_MODE, a warning otherwise (PYNATIVE_MODE is the default)"},
    {"recursion", "error", "a Cell whose construct calls itself"},
    {"budget-exceeded", "error/information",
     "evaluation exhausted the step budget in a loop that does not end (while True: in "
     "__init__) or the call-depth limit (runaway recursion): an error; a bounded computation "
     "larger than the budget: information, and what it builds is unknown; a while True: "
     "outside construct whose body calls something (it may end by an exception the call "
     "raises: sys.exit(), Ctrl+C): information, and what follows is not analysed"},
    {"config-error", "error",
     "a config file named in mindspore_config.json (or --config) that the program loads cannot "
     "be read or is not valid YAML/JSON"},
    {"not-analysed", "information",
     "a Cell class or public factory tried with its default arguments raised (a failed assert, "
     "a missing argument, an attribute its subclasses set): it is analysed through its users "
     "or --entry instead, and what it reported is dropped"},
    {"shape-unknown", "hint",
     "shapes are unknown from here: a known tensor went into something the analyser cannot "
     "follow (a value only known at run time, code it does not model); said once, where"},
    {"needs-arguments", "information",
     "a Cell class whose constructor needs arguments that nothing in the file supplies: analysed "
     "only through its uses or --entry"},
    {"training-not-followed", "information",
     "a part of a training script the training plan cannot follow statically (a dataset from "
     "GeneratorDataset or user code, a map operation that is not a MindSpore transform, an "
     "optimizer or network not built in the program): what and why, where; never an error"},
    {"unmodelled-api", "information",
     "a real MindSpore API that Cellscope has no shape rule for: shapes after it are unknown"},
    {"invalid-entry", "error",
     "an --entry expression that does not parse or does not build a Cell"},
    {"unknown-cell", "error",
     "--cell NAME names no analysed Cell (the message lists the analysed ones)"},
    {"unsupported-on-target", "error",
     "the hardware layer's target cannot run this operator (e.g. ops.Custom with "
     "func_type='pyfunc' on an Ascend target, or 'tbe'/'aicpu' on cpu); located on its source "
     "line"},
    {"invalid-config", "error",
     "a value in mindspore_config.json that Cellscope cannot use (not JSON, an unknown backend or "
     "target, a bad version or input shape); located at its key, the rest of the file applies"},
    {"mindir-invalid", "error",
     "cellscope graph / view of a .mindir that cannot be imported: not a MindIR file, truncated, "
     "corrupt, a node referencing an unknown input, a tensor whose size overflows or whose data "
     "is shorter than its dims say, external data outside its file"},
    {"mindir-import-note", "information",
     "importing a .mindir: a primitive with no operator row (kept as an opaque node), control "
     "flow (sub-graphs are not imported), a shape rule that disagrees with the file's abstract"},
    {"export-unsupported-op", "error",
     "cellscope export refuses: an operator with no mapping in the chosen format (MindIR, ONNX), "
     "or an attribute combination its form there cannot express; named, at its line; nothing is "
     "written"},
    {"export-dynamic-shape", "error",
     "cellscope export refuses: an input or output dimension is not a number (give --input); "
     "reported at the input; nothing is written"},
    {"export-unsupported-value", "error",
     "cellscope export refuses: a weight or constant whose dtype or values the exported file "
     "cannot hold, or a model above protobuf's 2 GiB limit; nothing is written"},
    {"export-no-output", "error",
     "cellscope export refuses: the Cell's construct did not compile or returns no tensor"},
    {"parallel-context", "error",
     "set_auto_parallel_context(...) with a key MindSpore does not know, a parallel_mode other "
     "than its five, device_num or pipeline_stages below 1, a search_mode other than its three "
     "(MindSpore's Python wording); AutoParallel with an unknown parallel_mode; a pipeline under "
     "auto_parallel with search_mode dynamic_programming (P1b); Cell.shard under auto_parallel "
     "without search_mode sharding_propagation (C7)"},
    {"parallel-api", "error",
     "ms.ops.auto_parallel(...) is not a MindSpore API: the message names Primitive.shard / "
     "Cell.shard / mindspore.parallel.shard and cell.pipeline_stage, a quick fix keeps the tensor "
     "argument"},
    {"parallel-strategy-count", "error",
     "a .shard(...) strategy with a number of tuples other than the operator's inputs (S1), or a "
     "Cell.shard / mindspore.shard in_strategy with a number other than the construct's or "
     "function's inputs (C3)"},
    {"parallel-strategy-rank", "error",
     "a strategy tuple with a length other than its input's rank (S2, C4), a parameter_plan "
     "strategy with a length other than its Parameter's rank (C2)"},
    {"parallel-strategy-type", "error",
     "Cell.shard / mindspore.shard arguments MindSpore's Python refuses at the call: in_strategy "
     "not a tuple, an entry neither a tuple of ints nor a Layout (None included), tuples and "
     "Layouts mixed, out_strategy or parameter_plan of the wrong type (C1)"},
    {"parallel-parameter-plan", "warning",
     "a Cell.shard parameter_plan key that names no trainable Parameter of the Cell as MindSpore "
     "names it at the call: MindSpore logs a warning and ignores the entry (C2)"},
    {"parallel-split-value", "error",
     "a split below 1 (S3), or not a power of 2 when device_num is one (S5)"},
    {"parallel-not-divisible", "error",
     "a dimension its split does not divide, naming the input and dimension (S4); the same for "
     "a Cell.shard / mindspore.shard input (C6) or a parameter_plan Parameter (C2)"},
    {"parallel-devices", "error",
     "a strategy whose device matrix does not divide the devices of a pipeline stage (S6, C5), or "
     "a device_num that pipeline_stages does not divide (P1)"},
    {"parallel-split-mismatch", "error",
     "dimensions the operator's sharding rule ties split differently: MatMul's contracted "
     "dimension (S7), broadcast dimensions, a Softmax axis that is split, MatMul's out_strategy "
     "(S8)"},
    {"parallel-stage", "error",
     "cell.pipeline_stage set to a negative number or a non-int (MindSpore's Python setter, P2)"},
    {"parallel-stage-order", "error",
     "a Cell in a pipeline stage fed by a later stage (P4), at its pipeline_stage assignment"},
    {"parallel-stage-parameters", "error",
     "pipeline training (nn.PipelineCell) with a stage that holds no parameter to train, at the "
     "call that set pipeline_stages (P5)"},
    {"parallel-stage-missing", "warning",
     "a layer without pipeline_stage between staged layers: MindSpore runs it in the stage of its "
     "producer (named) although its output goes on to a later stage (P3)"},
    {"parallel-micro-size", "error",
     "nn.PipelineCell's micro_size below 1, or below pipeline_stages (P6)"},
    {"parallel-layout", "error",
     "Layout(device_matrix, alias_name) with repeated or 'None' aliases or lengths that differ, a "
     "layout call with an alias it does not declare or one used twice (L1)"},
    {"parallel-redistribution", "warning",
     "an operator asks for its input split otherwise than its producer splits it: the "
     "communication MindSpore inserts (AllGather over N devices) is named (R1)"},
    {"internal-error", "error",
     "an unexpected failure inside Cellscope for this file (a bug: please report it); other files "
     "continue"},
};
}  // namespace

std::span<const DiagnosticCodeInfo> diagnostic_codes() { return kCodes; }

const DiagnosticCodeInfo* find_diagnostic_code(std::string_view code) {
  for (const auto& c : kCodes) {
    if (c.code == code) return &c;
  }
  return nullptr;
}

}  // namespace graphcore
