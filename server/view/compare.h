// The comparison of a graph document with a fixed base (protocol/view.proto's Comparison): the
// file as of the last commit, or another model file. A pure function of the two documents (no
// source is read or parsed here), unit-tested in tests/unit/compare_test.cpp; the view server
// calls it for every new document of a file being compared (view_server.cpp).
#pragma once

#include <string>

#include "protocol/graph.pb.h"
#include "protocol/view.pb.h"

namespace cellscope::server::view {

// Compares `current` with `base`, Cell by Cell: each Cell of `current` is matched with the Cell
// of `base` of the same name, else of the same class, else with the only Cell left unmatched on
// each side (two files with one model each). Within a pair, semantic nodes and optimized nodes
// are matched by id: added, removed (the base's node as it was) and changed (op, api, kind,
// attributes, output shapes/dtypes/formats, the Parameter elements read, FLOPs, inputs; optimized
// nodes: op, pattern, origins, outputs, and the kernels' time in the hardware layer), plus the
// Cells' totals (parameters, FLOPs, nodes, kernels, latency, throughput, memory). Positions are
// not compared: a node that only moved in the file is unchanged. `base` and `seq` of the result
// are left for the caller.
protocol::Comparison compare_documents(const protocol::GraphDocument& base,
                                       const protocol::GraphDocument& current);

// The totals of one Cell (CellTotals).
protocol::CellTotals cell_totals(const protocol::Cell& cell);

}  // namespace cellscope::server::view
