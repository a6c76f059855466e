// MindIR import: a `.mindir` file (a serialized MindIR ModelProto, written by MindSpore's
// `mindspore.export` or by `cellscope export`) read back into the semantic graph the evaluator
// builds from source, so that the optimization and hardware layers run on it unchanged
// (docs/export.md, "Import").
//
// Each `REF::<Primitive>` node becomes the operator whose OpDef's MindirDef names that primitive
// (a reverse lookup over the operator table: no second table); the primitive's attributes and
// Constant-node arguments become the node's recorded attributes by the same rows read backwards;
// weights become parameters. Shapes and FLOPs come from the MindSpore API registry's shape rule
// of `ops.<Primitive>`, cross-checked against the abstracts the file records. A primitive with no
// row is kept as an opaque node (named, shaped from the file's abstract) with a note; control
// flow (sub-graphs, Switch, Partial) is a note, not a failure. Bad bytes are an error message,
// never a crash: every size is checked.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graphcore/analysis.h"
#include "graphcore/diagnostic.h"
#include "graphcore/graph.h"
#include "graphcore/version.h"

namespace graphcore {

struct MindirImportOptions {
  std::string target = "cpu";  // the registry's shape rules are run for this target
  Version mindspore_version = kDefaultMindSporeVersion;
  // The .mindir's folder: split-layout weights (`external_data`) are checked against the files
  // there. Empty: external data is not looked at (only its declared size is checked).
  std::filesystem::path folder;
  // Keep a copy of each weight's inline bytes (MindirImport::weights), for a runtime that runs
  // the imported graph with the file's values (the deploy agent, server/agent/).
  bool keep_weights = false;
};

// A weight's values as the file stores them (little-endian, row-major, `type`'s element size).
struct MindirWeight {
  std::string name;  // as in CellReport::params
  TensorType type;
  std::string raw;  // empty when the file keeps it in external data
};

struct MindirImport {
  bool ok = false;
  std::string error;  // when !ok: what is wrong ("not a MindIR file: ...", "truncated: ...")
  // The header, in file order: ir_version, producer_name, producer_version, model_version,
  // mind_ir_version, little_endian, graphs (1 + functions).
  std::vector<std::pair<std::string, std::string>> header;
  CellReport report;                  // the main graph, as analyze_file would report a root Cell
  std::vector<Diagnostic> notes;      // information: opaque primitives, control flow, shape checks
  size_t file_nodes = 0;              // NodeProtos in the main graph (Constant and monads included)
  std::vector<MindirWeight> weights;  // with MindirImportOptions::keep_weights
};

// True when `path` names a MindIR file (the `.mindir` extension, as mindspore.load requires).
bool is_mindir_path(const std::filesystem::path& path);

// Imports the bytes of a .mindir; `file` names it in messages and in the report.
MindirImport import_mindir(std::string_view bytes, const std::string& file,
                           const MindirImportOptions& options = {});

// `cellscope graph` / `view` on a .mindir: reads the file and returns what analyze_file returns
// for a .py with one root Cell (the imported graph), the notes as Information diagnostics and
// `imported` set; an unreadable or invalid file is one error diagnostic (code mindir-invalid)
// naming the file and what is wrong, and no Cell.
AnalysisResult analyze_mindir_file(const std::filesystem::path& file,
                                   const AnalysisOptions& options);

}  // namespace graphcore
