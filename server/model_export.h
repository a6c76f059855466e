// Exporting one root Cell of a model file as MindIR or ONNX (docs/export.md): what `cellscope
// export` and the language server's `cellscope.export` command share. It compiles the Cell,
// refuses what the format cannot hold (located diagnostics, nothing written), binds the
// parameters on the CPU runtime (initialised from a seed, or a MindSpore checkpoint), serializes
// with graphcore's writers and writes the file atomically. No protocol and no printing: the
// callers say what happened (stderr for the CLI, diagnostics and a command result for the editor).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graphcore/analysis.h"
#include "graphcore/diagnostic.h"
#include "project_config.h"

namespace cellscope::server {

// Input types as messages show them: "(1, 3, 224, 224):float32, (1, 128):int32".
std::string types_string(const std::vector<graphcore::TensorType>& types);

// The format a file name's extension names ("mindir" for .mindir, "onnx" for .onnx), or "".
std::string export_format_of_name(const std::filesystem::path& path);

// The format to write `output` in: `format` ("mindir", "onnx" or "" for the one the name's
// extension says), checked against the name (a MindIR must end in .mindir, mindspore.load
// accepts no other name; an .onnx name is not written as MindIR and the reverse). nullopt with
// `why` set when they do not agree.
std::optional<std::string> resolve_export_format(const std::string& format,
                                                 const std::filesystem::path& output,
                                                 std::string* why);

// The file an export writes when the caller names none: `<Cell>.<format>` next to the model file
// (a factory root "resnet50()" gives resnet50.onnx).
std::filesystem::path default_export_path(const std::filesystem::path& model_file,
                                          const std::string& cell, const std::string& format);

// What a file's `ms.export(...)` call writes: the format and the file name as MindSpore
// completes it (file_name plus ".mindir" / ".onnx" unless it ends with it), as the call gives it
// (relative names stay relative). nullopt with `why` set when the call gives no export (it was
// not followed, or its file_format is AIR or unknown). Used by `cellscope export FILE` without
// options, by the LSP's "Export now" lens and by the debug adapter's end of a training session.
struct CallExport {
  std::string format;  // "mindir" / "onnx"
  std::string output;
};
std::optional<CallExport> export_of_call(const graphcore::ExportCall& call, std::string* why);

struct ModelExportRequest {
  std::filesystem::path file;  // the model file
  // The analysis (target, version, workspace root, configs, the Cell by `cell` / `entries`, its
  // `inputs`). record_facts and constant_values are set by export_model.
  graphcore::AnalysisOptions analysis;
  std::string format;  // "mindir" or "onnx" (resolve_export_format)
  std::filesystem::path output;
  std::string checkpoint;  // a MindSpore .ckpt / .safetensors; empty: initialised from `seed`
  uint64_t seed = 0;
  // Set by another thread to stop: checked between the stages and polled by the analysis. Once
  // the file is being written the export completes.
  const std::atomic<bool>* cancel = nullptr;
  // The project's mindspore_config.json, when there is one. When `inputs_given` (the inputs came
  // from --input or an ms.export call, not from the config) and the config names other inputs
  // for the exported Cell, the export is refused (export-input-mismatch), located at
  // `export_call` when the inputs came from one, else at the config's "inputs" key.
  std::shared_ptr<const ProjectConfig> project;
  bool inputs_given = false;
  std::optional<graphcore::PlanCall> export_call;
  // Called (on the exporting thread) as each stage starts, with a rough percentage.
  std::function<void(std::string_view stage, int percent)> progress;
};

struct ModelExportOutcome {
  enum class Status : uint8_t {
    kWritten,    // `output` holds the complete new file
    kRefused,    // nothing written: `diagnostics` and/or `errors` say why
    kUsage,      // nothing written: the request itself is wrong (several root Cells, ...)
    kCancelled,  // nothing written
  };
  Status status = Status::kRefused;
  std::string cell;    // the root Cell exported (or tried)
  std::string format;  // "mindir" / "onnx"
  // Located problems: compile errors of the analysis and the export's refusals (export-* codes).
  std::vector<graphcore::Diagnostic> diagnostics;
  std::vector<std::string> errors;  // what is not located ("no such directory ...")
  std::string checkpoint_summary;   // the checkpoint load's summary line, when one was loaded
  std::string summary;              // "MindIR, 18 nodes, 7 primitives, 8 weights"
  uint64_t nodes = 0;
  uint64_t bytes = 0;
  // The analysed file, for diagnostics located nowhere else.
  std::string analysed_file;
  std::string output;  // the file written (or that would have been); a split set's _graph.mindir
  // The data files written beside it (MindIR split layout above 1 GiB, ONNX external data above
  // 2 GiB), relative to its folder.
  std::vector<std::string> data_files;
};

// Runs one export, reading sources through `sources`. Never throws for bad input: every failure
// is an outcome.
ModelExportOutcome export_model(const ModelExportRequest& request,
                                graphcore::SourceProvider& sources);

}  // namespace cellscope::server
