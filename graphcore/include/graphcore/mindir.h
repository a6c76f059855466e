// MindIR export: a compiled Cell (its semantic graph) and its parameter values written as the
// ModelProto MindSpore's `mindspore.load` reads (graphcore/proto/mind_ir.proto, docs/export.md).
// Every operator is written from its OpDef's MindirDef (graphcore/opdef.h); an operator without
// one, or a form of it MindSpore exports differently, refuses the export with a located
// diagnostic. Writing the bytes (atomically) is the caller's.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "graphcore/diagnostic.h"
#include "graphcore/graph.h"
#include "graphcore/runtime.h"

namespace graphcore {

struct MindirExport {
  std::string bytes;               // the serialized ModelProto; empty when `errors` is not
  std::vector<Diagnostic> errors;  // why the graph cannot be exported (export-* codes)
  size_t nodes = 0;                // nodes written (Constant nodes included)
  size_t primitives = 0;
  size_t weights = 0;
};

// `params`: the value of every parameter of `report` (Executor::params(): initialised, or
// loaded from a checkpoint). The report must be compiled with fully known input shapes.
MindirExport export_mindir(const CellReport& report, std::span<const runtime::ParamState> params);

}  // namespace graphcore
