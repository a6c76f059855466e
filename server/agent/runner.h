// The model a deploy agent serves (docs/deploy.md, "Loading"): a bundle's MindIR imported by
// graphcore's MindIR reader (the graph `cellscope graph x.mindir` shows), its weights bound to
// the CPU runtime's Executor from the file's values, and one run on a zero input of the declared
// shape before it may serve. The backend seam: a later MindSpore / MindSpore Lite backend is
// another LoadedModel maker with the same load / infer contract.
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

namespace graphcore::runtime {
class Executor;
}

namespace cellscope::agent {

class LoadedModel {
 public:
  ~LoadedModel();
  LoadedModel(const LoadedModel&) = delete;
  LoadedModel& operator=(const LoadedModel&) = delete;

  // Loads and sanity-checks `model`; nullptr with `error` set when it cannot serve.
  static std::shared_ptr<LoadedModel> load(const std::filesystem::path& model, std::string* error);

  // {"inputs": [{"shape": [...], "data": [...]}] | "fill": "zeros"|"ones"} ->
  // {"outputs": [{"shape", "dtype", "data"}], "ms"}. Throws std::invalid_argument for an input
  // that does not fit (the message says which and why), std::runtime_error for a failed run.
  nlohmann::json infer(const nlohmann::json& request);

  // Inputs, outputs, nodes, parameters, the warm-up's time: the manifest's "check".
  [[nodiscard]] const nlohmann::json& summary() const { return summary_; }

 private:
  LoadedModel() = default;
  std::unique_ptr<graphcore::runtime::Executor> exec_;
  std::mutex mu_;
  nlohmann::json summary_;
};

}  // namespace cellscope::agent
