// Synthetic training batches (`cellscope train --synthetic`): for a pipeline whose rows exist
// only when the user's Python runs (GeneratorDataset), seeded random batches of the types the
// loss graph takes, so the network, its loss, its gradients and its optimizer can be run and
// timed. The numbers mean nothing about the user's data; the trainer says so in its notes.
#pragma once
#include <cstdint>
#include <vector>

#include "graphcore/graph.h"
#include "graphcore/runtime.h"

namespace graphcore::runtime {

// One batch for `loss_graph` (compiled with known input shapes): float inputs N(0, 1); integer
// inputs uniform over the range their first consumer accepts (a loss's classes, an embedding
// table's rows; 2 when nothing says), booleans fair coins. Deterministic in (seed, step).
// Throws RuntimeError naming an input whose shape or dtype is not known.
std::vector<Tensor> synthetic_batch(const CellReport& loss_graph, uint64_t seed, int64_t step);

// The exclusive upper bound synthetic_batch draws graph input `input` (0-based) from when it is
// an integer input.
int64_t synthetic_label_range(const CellReport& loss_graph, size_t input);

}  // namespace graphcore::runtime
