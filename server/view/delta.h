// The documents the view server sends (protocol/view.proto): slimmed documents and node-level
// deltas between two of them. Pure functions, unit-tested in tests/unit/view_test.cpp.
#pragma once

#include <cstdint>
#include <string>

#include "protocol/graph.pb.h"
#include "protocol/view.pb.h"

namespace cellscope::server::view {

// `doc` without per-kernel detail (tiling, loops, dma, schedule): what live views receive. The
// detail of one node is sent on request (node_details).
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

// Deterministic serialisation (map fields sorted): equal messages give equal bytes.
std::string canonical_bytes(const google::protobuf::Message& message);

}  // namespace cellscope::server::view
