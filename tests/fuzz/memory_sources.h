// Source text for the harnesses: the fuzzed file(s) in memory; any other path does not exist.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "graphcore/analysis.h"

namespace cellscope::fuzz {

class MemorySources : public graphcore::SourceProvider {
 public:
  void add(const std::filesystem::path& path, std::string text) { files_[path] = std::move(text); }
  std::optional<std::string> read(const std::filesystem::path& path) override {
    auto it = files_.find(path.lexically_normal());
    if (it == files_.end()) return std::nullopt;
    return it->second;
  }

 private:
  std::map<std::filesystem::path, std::string> files_;
};

// Analyses `file` (in `sources`) with budgets small enough for fuzzing, then runs the optimizer
// and the hardware model on every Cell that compiled, for `target`.
void analyse_everything(const std::filesystem::path& file, MemorySources& sources,
                        graphcore::AnalysisOptions options, const std::string& target);

}  // namespace cellscope::fuzz
