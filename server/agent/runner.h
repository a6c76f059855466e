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
#include <utility>
#include <vector>

#include "agent/mindspore_backend.h"
#include "graphcore/quant.h"

namespace graphcore {
struct CellReport;
}
namespace graphcore::runtime {
class Executor;
struct HostArray;
}  // namespace graphcore::runtime

namespace cellscope::agent {

// How a bundle is built (docs/deploy.md, "INT8 bundles", "Target bundles"): fp32; int8 with a
// quantisation table calibrated on the device from `calibration_data` (a .npy of inputs), or read
// back from `quant_table` (the bundle's quant.json, when the agent restarts); or "target": the
// CPU runtime's Precision::Target (fp16 storage between ops, fp32 accumulation), the same
// emulation as `cellscope train --drift target`, its quality measured on `calibration_data`
// when given, else on seeded random inputs.
struct BuildOptions {
  std::string precision = "fp32";  // "fp32" | "int8" | "target"
  graphcore::runtime::quant::CalibrationOptions calibration;
  // .npy: (N, ...) with the input's shape after axis 0; or .npz: one such array per input, named
  // after the inputs or in their order (every array the same N).
  std::filesystem::path calibration_data;
  std::filesystem::path labels;  // optional .npy of N integer labels
  // Threads of the CPU runtime's kernels (ExecOptions::threads; 0: every hardware thread).
  int threads = 1;
  std::string quant_table;  // non-empty: this table, not a new calibration
  // "cellscope-cpu", or "mindspore": /v1/infer runs MindSpore (mindspore.load + nn.GraphCell)
  // in a subprocess of `python` (fp32 only); the CPU runtime still checks the bundle first.
  std::string backend = "cellscope-cpu";
  std::string python = "python3";
};

// Arrays of a .npz given for a model's inputs, in input order: by the inputs' names when any
// member is named after one (then every member must be, and every input have one), else one per
// input in the archive's order. Throws std::invalid_argument naming `name` and the member;
// `what` says what needs them ("int8 calibration").
std::vector<graphcore::runtime::HostArray> arrays_for_inputs(
    std::vector<std::pair<std::string, graphcore::runtime::HostArray>> members,
    const std::vector<std::string>& inputs, const std::string& name, const std::string& what);

class LoadedModel {
 public:
  ~LoadedModel();
  LoadedModel(const LoadedModel&) = delete;
  LoadedModel& operator=(const LoadedModel&) = delete;

  // Loads and sanity-checks `model`; nullptr with `error` set when it cannot serve.
  // int8: the table is calibrated (or read), the int8 path run on every calibration batch (each
  // output finite) and compared with fp32 (quality()).
  static std::shared_ptr<LoadedModel> load(const std::filesystem::path& model, std::string* error,
                                           const BuildOptions& build = {});

  // {"inputs": [{"shape": [...], "data": [...]}] | "fill": "zeros"|"ones", "precision"?,
  // "compare"?} -> {"outputs": [{"shape", "dtype", "data"}], "ms", "precision"}; with "compare":
  // true on an int8 bundle also "agreement" (fp32 vs int8 on this input). On a mindspore
  // bundle "backend": "cellscope-cpu" runs the CPU runtime instead. Throws
  // std::invalid_argument for an input that does not fit (the message says which and why),
  // std::runtime_error for a failed run.
  nlohmann::json infer(const nlohmann::json& request);

  // The same with the inputs given as arrays (a binary /v1/infer: one per input, in order, each
  // of the input's shape, any numeric dtype) instead of "inputs"; with `raw`, the outputs come
  // back as arrays there (their "data" left out of the JSON).
  nlohmann::json infer(const nlohmann::json& request,
                       const std::vector<graphcore::runtime::HostArray>* arrays,
                       std::vector<graphcore::runtime::HostArray>* raw);
  // The model's input names, in order (the MindIR's).
  [[nodiscard]] std::vector<std::string> input_names() const;

  // Inputs, outputs, nodes, parameters, the warm-up's time: the manifest's "check".
  [[nodiscard]] const nlohmann::json& summary() const { return summary_; }
  // "fp32", "int8" or "target": what /v1/infer answers at unless asked otherwise.
  [[nodiscard]] const std::string& precision() const { return precision_; }
  // The int8 table as written to the bundle's quant.json ("" for fp32).
  [[nodiscard]] const std::string& quant_table_text() const { return table_text_; }
  // fp32 vs int8 (or target) at load, on the calibration inputs (target: those, else seeded
  // random ones): {on, samples, top1_agreement, cosine, accuracy: {fp32, int8|target} | "n/a"};
  // null for fp32.
  [[nodiscard]] const nlohmann::json& quality() const { return quality_; }

 private:
  LoadedModel() = default;
  std::vector<graphcore::runtime::Tensor> set_inputs(
      const nlohmann::json& request, const std::vector<graphcore::runtime::HostArray>* arrays);
  // Runs the inputs set by set_inputs (or set on exec_) at fp32, int8 or target.
  std::vector<graphcore::runtime::Tensor> run(const std::string& precision,
                                              const std::vector<graphcore::runtime::Tensor>& given,
                                              double* ms);
  // The calibration (or, for target, evaluation) inputs in batches of the input's shape, and
  // their labels (empty when none were sent).
  // A batch holds one tensor per model input.
  std::vector<std::vector<graphcore::runtime::Tensor>> read_batches(const BuildOptions& build,
                                                                    std::vector<int64_t>* labels,
                                                                    int64_t* unused);
  // The calibration file's arrays in input order: a .npy (one input) or a .npz (by input name,
  // else in order); `what` names the build in messages.
  [[nodiscard]] std::vector<graphcore::runtime::HostArray> calibration_arrays(
      const std::filesystem::path& file, const std::string& what) const;
  // fp32 against precision_ on `inputs` (every output finite): quality_.
  void measure_quality(const std::vector<std::vector<graphcore::runtime::Tensor>>& inputs,
                       const std::vector<int64_t>& labels, const std::string& on);
  void build_int8(const BuildOptions& build);
  void build_target(const BuildOptions& build, const graphcore::CellReport& report,
                    const std::vector<std::pair<std::string, graphcore::runtime::Tensor>>& weights);
  std::unique_ptr<graphcore::runtime::Executor> exec_;
  // Precision::Target: the same graph and weights, fp16 between ops.
  std::unique_ptr<graphcore::runtime::Executor> target_;
  std::string precision_ = "fp32";
  std::unique_ptr<graphcore::runtime::quant::QuantTable> table_;
  std::unique_ptr<graphcore::runtime::quant::Int8Runner> int8_;
  std::string table_text_;
  nlohmann::json quality_;
  std::unique_ptr<MindSporeWorker> mindspore_;
  std::mutex mu_;
  nlohmann::json summary_;
};

}  // namespace cellscope::agent
