// ONNX export of a compiled Cell (CellReport) with the values of its parameters: a ModelProto at
// opset kOnnxOpset (ai.onnx), weights as initializers (raw_data, little-endian), inputs and
// outputs with their shapes, nodes in topological order. Each operator's ONNX form is its
// OpDef::onnx rule (graphcore/opdef.h); an operator without one is a located refusal and nothing
// is written. No protocol knowledge: the CLI (`cellscope export --format onnx`) calls this and
// writes the bytes atomically.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "graphcore/diagnostic.h"
#include "graphcore/graph.h"
#include "graphcore/model_file.h"
#include "graphcore/runtime.h"

namespace graphcore {

// The highest opset both onnx 1.23's checker and onnxruntime 1.32 accept (docs/export.md), and
// the IR version onnx pairs with it.
inline constexpr int64_t kOnnxOpset = 28;
inline constexpr int64_t kOnnxIrVersion = 14;

struct OnnxExportOptions {
  int64_t opset = kOnnxOpset;
  std::string producer_version;  // ModelProto.producer_version ("cellscope X.Y")
  // The weights are not copied: the result's `file` streams them from the runtime tensors
  // (which must outlive it) and `bytes` stays empty.
  bool stream_weights = false;
  // stream_weights only: a model of more bytes than this (at most protobuf's 2 GiB limit) keeps
  // its weights in ONNX external data, one file at `external_location` (relative to the model
  // file's folder, e.g. "big.onnx.data"); without a location such a model is refused.
  uint64_t external_threshold = UINT64_MAX;
  std::string external_location;
};

struct OnnxExportResult {
  // Non-empty: the export was refused (an operator with no ONNX mapping, an unknown dim, a dtype
  // ONNX export does not write), each located at the node's line; nothing was written.
  std::vector<Diagnostic> diagnostics;
  std::string bytes;          // the serialised ModelProto (when not refused, not streamed)
  ModelFile file;             // stream_weights: the same bytes, weights as runtime tensor views
  ModelFile data_file;        // external data: the weights (file.size() is the structure only)
  std::string data_location;  // external data: data_file's location, "" when not external
  size_t nodes = 0;           // ONNX nodes
  size_t initializers = 0;    // weights and constants
  [[nodiscard]] bool ok() const { return diagnostics.empty(); }
};

// Builds the model. `params`: a value for every entry of report.params (Executor::params()).
OnnxExportResult build_onnx(const CellReport& report, std::span<const runtime::ParamState> params,
                            const OnnxExportOptions& options = {});

// The refusals build_onnx would give, without weights: an operator with no ONNX mapping, a
// dimension that is not a number, a dtype ONNX export does not write. Empty: exportable.
std::vector<Diagnostic> check_onnx_export(const CellReport& report,
                                          const OnnxExportOptions& options = {});

}  // namespace graphcore
