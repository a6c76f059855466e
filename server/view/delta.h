// The documents the view server sends (protocol/view.proto): slimmed documents and node-level
// deltas between two of them. Pure functions, unit-tested in tests/unit/view_test.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "protocol/graph.pb.h"
#include "protocol/view.pb.h"

namespace cellscope::server::view {

// `doc` without per-kernel detail (tiling, loops, schedule; the DMA transfers stay, for the core
// timeline): what live views receive. The detail of one node is sent on request (node_details).
protocol::GraphDocument slim_document(const protocol::GraphDocument& doc);

// The kernels of optimized node `node` of Cell `cell` in `doc`, in full; `error` set when the
// Cell or node does not exist.
protocol::NodeDetails node_details(const protocol::GraphDocument& doc, const std::string& cell,
                                   const std::string& node);

// The delta that turns `before` into `after` (see view.proto's CellDelta for how it applies).
protocol::GraphDelta diff_documents(const protocol::GraphDocument& before,
                                    const protocol::GraphDocument& after, uint32_t base);

// Applies `delta` to `doc` (the view does the same in TypeScript). Returns false when the delta
// does not fit the document (a node order naming an unknown id).
bool apply_delta(const protocol::GraphDelta& delta, protocol::GraphDocument* doc);

// ---------------------------------------------------------------------------------------------
// Lazy documents (view.proto's CellSkeleton): Cells too large to send whole.

// Cells with more semantic nodes than this are sent lazily by default (ServerOptions::
// lazy_threshold): the 100k-node benchmark model's document is 94 MB of JSON, which the page
// takes ~4.5 s to receive and parse, while the view first shows only a few dozen collapsed groups.
// Below it (ResNet-50: ~500 nodes; a 10k-node model: ~4 MB) the whole document is sent as before.
constexpr size_t kLazyThreshold = 20000;

// The group path (view.proto's ScopeSummary.scope) of every node of `cell`, by position: for
// semantic nodes their scope (or its parent for a leaf-Cell call), for optimized nodes the group
// of their first origin (or of their first input's producer, for inserted nodes). The same rule
// as the view's (webview/src/model.ts).
struct CellGroups {
  std::vector<std::string> semantic;
  std::vector<std::string> optimized;
};
CellGroups cell_groups(const protocol::Cell& cell);

// Whether `cell` is sent lazily.
bool is_lazy(const protocol::Cell& cell, size_t threshold);

// The skeleton of `cell`: scope summaries, edges between scopes, and the nodes of scope "".
protocol::CellSkeleton cell_skeleton(const protocol::Cell& cell, const CellGroups& groups);

// The nodes of `cell` whose group is `scope`, with the edges that cross its boundary.
protocol::ScopeNodes scope_nodes(const protocol::Cell& cell, const CellGroups& groups,
                                 const std::string& scope);

// The full update of `doc` (already slimmed) when it has lazy Cells: the document with Cells above
// `threshold` without their node lists, plus their skeletons. `doc` is left as it was (its node
// lists are set aside while it is copied). Returns false (and leaves `update` alone) when no Cell
// is above the threshold. The groups computed for the skeletons are stored in `groups` (by Cell
// name) when it is not null, for answering NodesRequests later.
bool lazy_update(protocol::GraphDocument* doc, size_t threshold, protocol::ViewUpdate* update,
                 std::map<std::string, CellGroups>* groups = nullptr);

// Deterministic serialisation (map fields sorted): equal messages give equal bytes.
std::string canonical_bytes(const google::protobuf::Message& message);

}  // namespace cellscope::server::view
