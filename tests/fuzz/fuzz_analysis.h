// The analysis every source harness runs: the fuzzed file(s) in memory (any other path does not
// exist), then the optimizer and the hardware model.
#pragma once

#include <filesystem>
#include <string>

#include "graphcore/analysis.h"

namespace cellscope::fuzz {

// Analyses `file` (in `sources`) with budgets small enough for fuzzing, then runs the optimizer
// and the hardware model on every Cell that compiled, for `target`.
void analyse_everything(const std::filesystem::path& file, graphcore::MemorySourceProvider& sources,
                        graphcore::AnalysisOptions options, const std::string& target);

}  // namespace cellscope::fuzz
