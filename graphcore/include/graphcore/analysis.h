// graphcore's entry point: analyse a model file (and the workspace files it imports) into
// per-Cell graphs and located diagnostics, without executing any user code.
#pragma once

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graphcore/diagnostic.h"
#include "graphcore/graph.h"
#include "graphcore/outline.h"
#include "graphcore/shape.h"
#include "graphcore/training.h"
#include "graphcore/version.h"

namespace graphcore {

// Where source text comes from: the disk, or an editor's unsaved buffers layered over it.
class SourceProvider {
 public:
  virtual ~SourceProvider() = default;
  // The text of `path`, or nullopt if it does not exist / cannot be read.
  virtual std::optional<std::string> read(const std::filesystem::path& path) = 0;
};

class DiskSourceProvider : public SourceProvider {
 public:
  std::optional<std::string> read(const std::filesystem::path& path) override;
};

// Texts held in memory by lexically normalised path (tests, fuzzing, embedders); any other path
// does not exist.
class MemorySourceProvider : public SourceProvider {
 public:
  MemorySourceProvider() = default;
  MemorySourceProvider(const std::filesystem::path& path, std::string text) {
    add(path, std::move(text));
  }
  void add(const std::filesystem::path& path, std::string text);
  std::optional<std::string> read(const std::filesystem::path& path) override;

 private:
  std::map<std::string, std::string> files_;
};

// Parsed files kept between analyses: an editor re-analyses on every keystroke, and the files a
// model imports rarely change. A file is reused while its text is the same (compared in full);
// the least recently used ones are dropped beyond `capacity`. Thread-safe; share one per session.
class ParseCache {
 public:
  explicit ParseCache(size_t capacity = 256);
  ~ParseCache();
  ParseCache(const ParseCache&) = delete;
  ParseCache& operator=(const ParseCache&) = delete;
  [[nodiscard]] size_t hits() const;
  [[nodiscard]] size_t misses() const;
  // Misses re-parsed incrementally from an earlier version of the same file.
  [[nodiscard]] size_t incremental_reparses() const;
  // Misses with an earlier version parsed from scratch all the same, because that version or
  // the new text has syntax errors (tree-sitter's recovery from an old tree is not that of a
  // fresh parse, so the result would depend on the earlier text).
  [[nodiscard]] size_t reparses_from_scratch() const;

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

struct AnalysisOptions {
  std::string target = "cpu";  // "cpu", "ascend910", "ascend910b", "ascend310p", "ascend310", "gpu"
  Version mindspore_version = kDefaultMindSporeVersion;
  // Restrict the analysis to the root Cell with this class name (or entry name).
  std::optional<std::string> cell;
  // Python expressions evaluated in the file's namespace that build the Cells to analyse,
  // e.g. "resnet50(num_classes=10)". When non-empty, only these are analysed.
  std::vector<std::string> entries;
  // false: the analysed file is evaluated as an import runs it: its `__name__` is the file's
  // module name, so an `if __name__ == "__main__":` block does not run. `cellscope export
  // --entry` calls the entry on the module as `from repmlp import repmlp_t224` would; a mistake
  // in the file's demo block is not part of what it exports.
  bool as_script = true;
  // Input types for the analysed Cell's construct, overriding call sites found in the file.
  std::vector<TensorType> inputs;
  // Input types by root Cell class name (mindspore_config.json's `inputs` keyed by a Cell), used
  // for a root whose class is named here when `inputs` is empty; they override call sites too.
  std::map<std::string, std::vector<TensorType>> cell_inputs;
  // Workspace root for absolute imports (`from src.resnet import ...`); defaults to the
  // analysed file's directory and its ancestors.
  std::optional<std::filesystem::path> workspace_root;
  // Budgets: evaluation steps per root Cell and Python call depth.
  size_t step_budget = 5'000'000;
  // Bytes of Python values (strings, list/tuple/dict items) the evaluation of one root may build,
  // counted as they are built (an estimate; freed values still count). Past it the evaluation
  // stops as for the step budget: what it was computing is unknown, never an error. Keeps a
  // model that builds 10^10 list items in __init__ from exhausting the machine.
  size_t max_value_bytes = size_t{512} << 20;
  size_t max_call_depth = 120;
  size_t max_file_bytes = 4u << 20;
  bool include_nodes =
      true;  // false: reports without node lists (faster for diagnostics-only runs)
  // true: CellReport::facts gets the type of every tensor expression of construct,
  // CellReport::instances the Cell tree, and AnalysisResult::references what names refer to.
  bool record_facts = false;
  // true: the elements of small constants computed by numpy code in __init__ (position tables,
  // masks; at most 1M elements each) are computed and recorded on their Constant nodes
  // (Node::constant_values), as the CPU runtime needs. Off by default: an analysis that does not
  // execute the graph does not pay for them (uniform constants such as np.ones always have
  // their `value` attribute).
  bool constant_values = false;
  // The batch size of training plans' dataset pipelines (`cellscope train --batch`, or the last,
  // smaller batch of `batch(n, drop_remainder=False)`): the loss graph is compiled for it instead
  // of the script's batch_size.
  std::optional<int64_t> training_batch;
  // The types of the batch's columns, batch dimension included (`cellscope train --synthetic
  // --input ...`): they replace what the dataset pipeline says, for a pipeline whose rows the
  // analyser cannot follow (GeneratorDataset over user code). Empty: the pipeline's own types.
  std::vector<TensorType> training_inputs;
  // The command line the analysed script runs with (sys.argv[1:]; `cellscope train FILE -- ARGS`):
  // argparse's parse_args parses it against the script's add_argument calls. Empty: no
  // arguments, every option at its default, as `python FILE` runs.
  std::vector<std::string> script_args;
  // The training data directory (`cellscope train --data DIR`): a file the program np.load()s is
  // looked for there by its name (as a dataset source's directory is replaced), otherwise where
  // the program names it (relative to the program's directory).
  std::optional<std::filesystem::path> data_dir;
  // Polled during evaluation; when it becomes true the analysis stops and returns a result with
  // `cancelled` set (an editor abandons an analysis of a superseded version this way).
  const std::atomic<bool>* cancel = nullptr;
  // Reuse parsed files across analyses (optional).
  std::shared_ptr<ParseCache> parse_cache;
  // true: AnalysisResult::outline gets the analysed file's outline (from the same parse).
  bool outline = false;
  // Config files (YAML or JSON) the user names (mindspore_config.json `configs`, `--config`):
  // when the program loads one (`yaml.safe_load(open(path))`, `json.load(f)`), its contents
  // are known constants instead of run-time data. Read through the SourceProvider.
  std::vector<std::filesystem::path> config_files;
  // Devices of the parallel job when the script sets no `device_num` (mindspore_config.json's
  // `device_num`); 0: not known (MindSpore would take the launcher's).
  int64_t device_num = 0;
};

// What a name or attribute used in the analysed code refers to (recorded with record_facts).
struct Reference {
  enum class Kind : uint8_t {
    Api,         // a MindSpore API: `name` is its registry name ("nn.Conv2d", "ops.relu")
    Definition,  // user code: a class, a function, or a Cell attribute set in __init__
  };
  Kind kind = Kind::Api;
  std::string file;  // the use
  SourceRange range;
  std::string name;         // registry name, or the defined name ("Bottleneck", "conv1")
  std::string what;         // Definition: "class", "function" or "cell" (a Cell instance)
  std::string target_file;  // Definition: where it is defined (a Cell: where it was constructed)
  SourceRange target_range;
};

// Where the time went, for benchmarks (milliseconds, wall clock).
struct AnalysisTimings {
  double parse_ms = 0;     // tree-sitter parse + lowering of every file read
  double evaluate_ms = 0;  // module code, __init__s, factories (excluding parse)
  double compile_ms = 0;   // construct compilation and shape inference of every root
};

// An `ms.export(net, *inputs, file_name=..., file_format=...)` call of the file, as the evaluator
// followed it when it ran the module (its `__main__` block included): `cellscope export FILE`'s
// options when none are given (docs/export.md).
struct ExportCall {
  PlanCall call;                   // where, and its arguments as written (the training plan's form)
  std::string cell;                // the root Cell `net` is (a CellReport's name); empty: unknown
  std::vector<TensorType> inputs;  // the input tensors' types, each static
  std::string file_name;           // as given: MindSpore appends the format's extension
  std::string file_format;         // as given: "MINDIR", "ONNX" or "AIR"
  std::string unfollowed;          // why the call does not give the options; empty: it does
};

// A model file imported rather than analysed (graphcore/mindir_import.h).
struct ImportedModel {
  std::string format;                                       // "mindir"
  std::vector<std::pair<std::string, std::string>> header;  // in file order
  size_t file_nodes = 0;
};

struct AnalysisResult {
  std::string file;                     // the analysed file
  std::vector<CellReport> cells;        // analysed root Cells
  std::vector<Diagnostic> diagnostics;  // for the file and, located there, files it imports
  std::vector<std::string> files;       // every file read (the analysed file first)
  AnalysisTimings timings;
  std::vector<Reference> references;  // only with AnalysisOptions::record_facts; sorted, unique
  FileOutline outline;                // only with AnalysisOptions::outline
  // The file's training idioms (Model.train, value_and_grad + a dataset loop, TrainOneStepCell
  // in a dataset loop), one plan each in program order; empty when it trains nothing.
  std::vector<TrainingPlan> training;
  std::vector<ExportCall> exports;  // the file's ms.export(...) calls, in program order
  // The program's parallel configuration (set_auto_parallel_context, AutoParallel,
  // nn.PipelineCell; docs/parallel.md). Per-operator strategies are on the nodes.
  ParallelContext parallel;
  bool cancelled = false;                 // AnalysisOptions::cancel was set: the result is partial
  std::optional<ImportedModel> imported;  // set for an imported model file (.mindir)

  [[nodiscard]] size_t error_count() const;
};

AnalysisResult analyze_file(const std::filesystem::path& file, const AnalysisOptions& options,
                            SourceProvider& sources);

// Objects of the static evaluator alive in this process, on every thread: an analysis frees all
// it made, cycles included (tests; the soak reports it).
int64_t evaluator_objects_alive();

// Parses an input spec such as "1,3,224,224", "8,128:int32" or "N,3,224,224:float16".
std::optional<TensorType> parse_input_spec(std::string_view spec, std::string* error);

}  // namespace graphcore
