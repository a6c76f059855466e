// MindIR export: a compiled Cell (its semantic graph) and its parameter values written as the
// ModelProto MindSpore's `mindspore.load` reads (graphcore/proto/mind_ir.proto, docs/export.md).
// Every operator is written from its OpDef's MindirDef (graphcore/opdef.h); an operator without
// one, or a form of it MindSpore exports differently, refuses the export with a located
// diagnostic. Writing the bytes (atomically) is the caller's: the weights are not copied into
// the result, it holds views of the runtime's tensors (graphcore/model_file.h).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "graphcore/diagnostic.h"
#include "graphcore/graph.h"
#include "graphcore/model_file.h"
#include "graphcore/runtime.h"

namespace graphcore {

struct MindirOptions {
  // Weights of more bytes than this go to MindSpore's split layout (mindspore.export's
  // TOTAL_SAVE, 1 GiB): the graph file with external_data + one data file.
  uint64_t split_threshold = uint64_t{1} << 30;
  // The file name without ".mindir" ("net" for net.mindir): names the data file
  // "<stem>_variables/data_0" as MindSpore does.
  std::string file_stem;
  // Overrides the data file's location (relative to the graph file's folder) for data file
  // `index`; the CLI gives a name the previous set does not use, so the old set stays valid
  // until the new graph file replaces the old one.
  std::function<std::string(size_t index)> data_location;
};

struct MindirExport {
  // The ModelProto (split: the `_graph.mindir`), weights as views of the runtime's tensors.
  ModelFile file;
  // Split layout only: the data files, location relative to the graph file's folder.
  struct DataFile {
    std::string location;
    ModelFile file;
  };
  std::vector<DataFile> data_files;
  bool split = false;
  // The two-argument export_mindir only: the whole single file in memory. Empty when `errors`
  // is not.
  std::string bytes;
  std::vector<Diagnostic> errors;  // why the graph cannot be exported (export-* codes)
  size_t nodes = 0;                // nodes written (Constant nodes included)
  size_t primitives = 0;
  size_t weights = 0;
};

// `params`: the value of every parameter of `report` (Executor::params(): initialised, or
// loaded from a checkpoint). The report must be compiled with fully known input shapes.
// Streamed: `file` (and `data_files`) reference the tensors of `params`, which must outlive it.
MindirExport export_mindir(const CellReport& report, std::span<const runtime::ParamState> params,
                           const MindirOptions& options);
// The single-file form in memory (`bytes`; never split): tests and small models.
MindirExport export_mindir(const CellReport& report, std::span<const runtime::ParamState> params);

// "<stem>_variables/data_<index>", MindSpore's data file name.
std::string default_data_location(const MindirOptions& options, size_t index);

}  // namespace graphcore
