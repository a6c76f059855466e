// The parallel-strategy checks (parallel_check.cpp), run by analyze_file after every root is
// compiled: they read the facts the evaluator recorded and report through `report`.
#pragma once

#include <functional>
#include <string>

#include "graphcore/diagnostic.h"
#include "graphcore/graph.h"
#include "graphcore/parallel.h"

namespace graphcore {

using ParallelReport = std::function<void(const std::string& file, SourceRange range, Severity sev,
                                          std::string code, std::string message)>;

// The program-wide rules (P1: device_num divisible by pipeline_stages), once per analysis.
void check_parallel_context(const ParallelContext& ctx, const ParallelReport& report);
// The rules of one compiled graph against `ctx`; fills each sharded node's per-device slices,
// output split and communication (NodeParallel). Run before a diagnostics-only analysis drops
// the nodes.
void check_parallel_graph(Graph& g, const ParallelContext& ctx, const ParallelReport& report);

}  // namespace graphcore
