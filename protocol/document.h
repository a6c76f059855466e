// Conversion from graphcore's results to the protocol's graph document, and (de)serialisation.
//
// graphcore positions count UTF-8 bytes within a line; the protocol counts UTF-16 code units (as
// LSP and SARIF do). The conversion therefore needs the text of every file a position refers to:
// a PositionMapper reads each file once (through a callback or a graphcore::SourceProvider) and
// caches its line index.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "graphcore/analysis.h"
#include "graphcore/diagnostic.h"
#include "graphcore/graph.h"
#include "graphcore/hardware.h"
#include "graphcore/optimize.h"
#include "graphcore/shape.h"
#include "graphcore/source.h"
#include "protocol/graph.pb.h"

namespace cellscope::protocol {

// Cellscope's version ("0.1.0").
std::string_view tool_version();

// The text of a file by the name graphcore used for it, or nullopt when it cannot be read.
using TextProvider = std::function<std::optional<std::string>(const std::string& file)>;

// Maps graphcore byte positions to UTF-16 positions, file by file.
class PositionMapper {
 public:
  explicit PositionMapper(TextProvider provider);
  // Reads through `sources` (which must outlive the mapper).
  explicit PositionMapper(graphcore::SourceProvider& sources);
  ~PositionMapper();
  PositionMapper(const PositionMapper&) = delete;
  PositionMapper& operator=(const PositionMapper&) = delete;

  // Positions in a file whose text is unavailable keep their byte columns.
  Position position(const std::string& file, const graphcore::Position& pos);
  Range range(const std::string& file, const graphcore::SourceRange& range);

  // The (UTF-8 sanitised) text of `file`, or nullptr; for rendering source snippets.
  const std::string* text(const std::string& file);
  // Line `line` (0-based) of `file` without its line terminator; empty if unavailable.
  std::string_view line_text(const std::string& file, uint32_t line);

 private:
  struct Entry;
  Entry* entry(const std::string& file);
  TextProvider provider_;
  std::unordered_map<std::string, std::unique_ptr<Entry>> cache_;
};

// Metadata stamped on documents.
struct DocumentInfo {
  std::string target = "cpu";
  std::string mindspore_version;   // empty: graphcore::kDefaultMindSporeVersion
  std::string layer = "semantic";  // "semantic" | "optimized" | "hardware"
};

// Leaf conversions.
google::protobuf::Value dim_value(const graphcore::Dim& dim);
void set_shape(const graphcore::Shape& shape,
               google::protobuf::RepeatedPtrField<google::protobuf::Value>* out);
Tensor tensor(std::string name, const graphcore::TensorType& type);
google::protobuf::Value attr_value(const graphcore::AttrValue& value);
std::string_view node_kind_name(graphcore::NodeKind kind);
Diagnostic diagnostic(const graphcore::Diagnostic& diag, PositionMapper& positions);
// A sharded node's strategy, per-device shapes and communication (Node.sharding).
Sharding sharding(const graphcore::NodeParallel& par, PositionMapper& positions);
// The program's parallel configuration (GraphDocument.parallel).
ParallelSummary parallel_summary(const graphcore::ParallelContext& ctx);
Cell cell(const graphcore::CellReport& report, PositionMapper& positions,
          bool include_nodes = true);

// The optimization layer of a Cell whose semantic graph is `semantic` (origins and removed nodes
// name semantic node ids).
OptimizedLayer optimized_layer(const graphcore::OptimizedGraph& graph,
                               const graphcore::Graph& semantic);

// The hardware layer of `graph` (already converted into `cell->optimized()`): fills
// `cell->hardware` and each optimized node's `hardware` kernels.
void add_hardware_layer(const graphcore::HardwareGraph& hw, const graphcore::OptimizedGraph& graph,
                        const graphcore::HardwareTarget& target, Cell* cell);
HardwareTarget hardware_target_spec(const graphcore::HardwareTarget& target);

// The whole document for one analysed file.
GraphDocument graph_document(const graphcore::AnalysisResult& result, PositionMapper& positions,
                             const DocumentInfo& info, bool include_nodes = true);

// Serialisation. JSON is the canonical proto3 form, with fields at their default values printed
// (so a 0 line is present) and lowerCamelCase names.
struct JsonOptions {
  bool pretty = true;
  // Print fields that hold their default value (0, "", false, empty lists). Off for the view's
  // WebSocket messages, whose reader supplies the defaults: documents shrink by about half.
  bool defaults = true;
};
std::string to_json(const google::protobuf::Message& message, const JsonOptions& options = {});
// Parses JSON into `message`; unknown fields are ignored. On failure returns false and sets
// `error` (when non-null).
bool from_json(std::string_view json, google::protobuf::Message* message,
               std::string* error = nullptr);
std::string to_binary(const google::protobuf::Message& message);
bool from_binary(std::string_view bytes, google::protobuf::Message* message);

}  // namespace cellscope::protocol
