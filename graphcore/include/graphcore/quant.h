// Post-training int8 quantisation (issues 19 and 20): ONE implementation that the precision
// drift (graphcore/drift.h, `cellscope train --drift int8`) and a deploy bundle's device side
// share. docs/precision.md states every rule and its source.
//
//   quant::Calibrator cal(graph, {.method = quant::Calibration::KL});
//   for (int pass = 0; pass < cal.passes(); ++pass) {       // KL, percentile: two passes
//     cal.begin_pass(pass);
//     for (batch : calibration) { run fp32 executor `ex` with cal.hooks() }
//   }
//   quant::QuantTable table = cal.finish(ex);               // scales, zero points, weight scales
//   std::string json = quant::write_quant_table(table);     // versioned JSON
//
//   // device: the imported MindIR's graph, the table read back
//   quant::QuantTable t = quant::read_quant_table(text, "bundle/quant.json");   // validates
//   quant::Int8Runner int8(graph, t, ex);                   // weights quantised once
//   Hooks h; h.compute = int8.compute_hook();               // Conv2D/MatMul/Dense on int8
//   ex.run(h);
//
// The table is keyed so that it survives a MindIR export + import: a node that reads a weight
// Parameter by that Parameter's name ("conv1.weight", the name the MindIR file stores), a
// product of two activations by its Node::id.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graphcore/graph.h"
#include "graphcore/runtime.h"

namespace graphcore::runtime::quant {

// How an activation tensor's clipping range is chosen from the calibration batches.
enum class Calibration : uint8_t {
  MinMax,      // the smallest and largest value seen
  Percentile,  // the values between the (100 - p) % and p % points of the histogram
  KL,          // the threshold minimising the KL divergence (TensorRT, MindSpore Lite)
};
std::string_view calibration_name(Calibration c);  // "minmax", "percentile", "kl"
std::optional<Calibration> calibration_from_name(std::string_view name);

struct CalibrationOptions {
  Calibration method = Calibration::MinMax;
  double percentile = 99.99;  // Percentile: the kept share in percent, in (50, 100]
  int64_t bins = 2048;        // Percentile and KL: histogram bins (KL needs more than 128)
};

// ---- the numeric rules ------------------------------------------------------------------------

// Per-tensor asymmetric int8 (levels -128..127) of a range widened to hold 0: scale = (hi - lo)
// / 255, zero point = clamp(round(-128 - lo / scale), -128, 127). scale 0 (a range of zero
// width or not finite): the tensor is not quantised.
struct ActivationParams {
  double scale = 0;
  int32_t zero_point = 0;
};
ActivationParams activation_params(double lo, double hi);
// clamp(round(x / scale) + zp, -128, 127), rounding half away from zero; NaN gives zp.
int32_t quantize_level(double x, const ActivationParams& q);
// The dequantised (level - zp) * scale of every element: what the int8 tensor stands for.
Tensor fake_quantize(const Tensor& x, const ActivationParams& q);

// Symmetric per-output-channel (axis 0) int8 of a weight: scale_c = max|w_c| / 127, q =
// clamp(round(w / scale_c), -127, 127) (round half away from zero; a zero channel has scale 0
// and levels 0).
struct WeightQuant {
  std::vector<int64_t> shape;
  std::vector<int8_t> levels;  // row-major, as the weight
  std::vector<double> scales;  // one per output channel
};
WeightQuant quantize_weight(const Tensor& w);
Tensor dequantize_weight(const WeightQuant& w);

// MindSpore Lite's / TensorRT's entropy calibration on a histogram of |x| (bin i covers [i w,
// (i + 1) w)): the bin count i in [128, bins] whose clipped reference distribution P and its
// 128-level quantisation Q have the smallest KL(P || Q); the threshold is (i + 0.5) w. Needs
// more than 128 bins; a histogram with fewer than 128 non-empty bins gives bins (no clipping).
int64_t kl_threshold_bins(std::span<const double> abs_histogram);
// The range that keeps `percent` % of a histogram's mass on each side: over bins of width w
// from `lo`, hi = the upper edge of the first bin where the count from below reaches percent %
// of the total, lo' = the lower edge of the last bin where the count from above does.
std::pair<double, double> percentile_range(std::span<const double> histogram, double lo, double hi,
                                           double percent);

// ---- observers ----------------------------------------------------------------------------------

// One activation tensor's calibration. Pass 0 records min and max; the histogram methods then
// need pass 1 over the same batches (the histogram's range is pass 0's: TensorRT's two-pass
// calibration), which fills the histogram.
class Observer {
 public:
  explicit Observer(CalibrationOptions o = {});
  void observe(const Tensor& t, int pass);
  [[nodiscard]] double min() const { return min_; }
  [[nodiscard]] double max() const { return max_; }
  [[nodiscard]] int64_t count() const { return count_; }
  [[nodiscard]] const std::vector<double>& histogram() const { return hist_; }
  // The calibrated range (before it is widened to hold 0). Nothing observed: (0, 0).
  [[nodiscard]] std::pair<double, double> range() const;

 private:
  CalibrationOptions opt_;
  double min_, max_;
  int64_t count_ = 0;
  std::vector<double> hist_;
};

// ---- the table ----------------------------------------------------------------------------------

struct TensorQuant {
  double min = 0, max = 0;  // the calibrated range
  ActivationParams params;
};

struct NodeQuant {
  std::string node;    // Node::id where the table was made
  std::string op;      // "Conv2D"
  std::string weight;  // the weight Parameter's name; "" for a product of two activations
  std::vector<TensorQuant> inputs;    // the quantised activation inputs, in input order
  TensorQuant output;                 // the node's float output (for an engine that requantises)
  std::vector<double> weight_scales;  // per output channel; empty when weight is ""
  // The key the table is looked up by: the weight's name, else the node id.
  [[nodiscard]] const std::string& key() const { return weight.empty() ? node : weight; }
};

struct QuantTable {
  static constexpr int kVersion = 1;
  CalibrationOptions calibration;
  int64_t calibration_samples = 0;
  std::vector<NodeQuant> nodes;  // graph order
  // The entry of `n` (by its weight Parameter's name, else its id); nullptr if none.
  [[nodiscard]] const NodeQuant* find(const Node& n) const;
};

// The versioned JSON ("format": "cellscope-quant-table", "version": 1; docs/precision.md).
std::string write_quant_table(const QuantTable& t);
// Reads and validates; throws RuntimeError "FILE: nodes[2].inputs[0].scale: ..." on bad input
// (not JSON, another format, a newer version, a missing or out-of-range field, a duplicate key).
QuantTable read_quant_table(std::string_view json, const std::string& file);

// ---- which nodes, calibration, int8 execution --------------------------------------------------

// Conv2D (and nn.Conv1d's), MatMul, BatchMatMul and Dense: the operators an int8 engine runs on
// int8 operands with int32 sums. Other operators stay float32.
bool quantizable(const Node& n);
// The node's weight Parameter ("conv1.weight"); "" when the weight is an input.
std::string weight_param(const Node& n);
// The activation inputs quantised per tensor: the data input, and the second operand when the
// weight is not a Parameter (ops.matmul of two activations, ops.dense(x, w, b)).
size_t activation_inputs(const Node& n);

// Observes the quantizable nodes of `graph` (those in `only` when it is not empty) on fp32 runs.
class Calibrator {
 public:
  Calibrator(const Graph& graph, CalibrationOptions o, std::vector<size_t> only = {});
  [[nodiscard]] int passes() const;
  void begin_pass(int pass) { pass_ = pass; }
  // Hooks for the fp32 run of one calibration batch (rewrite_inputs and rewrite_outputs).
  Hooks hooks();
  void add_samples(int64_t n) { samples_ += pass_ == 0 ? n : 0; }
  // The table: ranges from the observers, weight scales from `weights` (the executor's values).
  QuantTable finish(const Executor& weights) const;
  [[nodiscard]] const std::vector<size_t>& nodes() const { return nodes_; }

 private:
  const Graph& g_;
  CalibrationOptions opt_;
  std::vector<size_t> nodes_;
  std::map<std::pair<size_t, size_t>, Observer> in_, out_;  // (node, input) / (node, 0)
  int pass_ = 0;
  int64_t samples_ = 0;
};

// Runs the table's nodes on int8 operands: the activations quantised per tensor, the weights per
// channel (once, from `weights`), int32 sums (exact), the bias added as int32 at scale s_x * s_w,
// the sum dequantised to float32 and a fused activation applied.
class Int8Runner {
 public:
  Int8Runner(const Graph& graph, const QuantTable& table, const Executor& weights);
  // For Hooks::compute: true when the node was computed here.
  bool compute(const Node& n, size_t index, const std::vector<Tensor>& inputs,
               std::vector<Tensor>& outputs) const;
  [[nodiscard]] bool quantized(size_t index) const {
    return index < plan_.size() && plan_[index].entry != nullptr;
  }
  // Nodes of the table the graph has no node for, or whose shapes the kernels cannot take.
  [[nodiscard]] const std::vector<std::string>& notes() const { return notes_; }

 private:
  struct Planned {
    const NodeQuant* entry = nullptr;
    WeightQuant weight;
    std::vector<int16_t> levels;    // the weight's levels, as the kernels read them
    std::vector<int32_t> bias;      // at scale s_x * s_w[c]; empty: no bias
    std::vector<float> bias_float;  // for channels of scale 0
  };
  std::vector<Planned> plan_;
  std::vector<std::string> notes_;
};

// The exact integer kernels, exposed for tests. Levels are (q - zero_point) for activations
// (-255..255) and q for weights (-127..127); sums are int32, checked beforehand not to overflow
// (max|a| * max|b| * k must fit, a RuntimeError otherwise).
// x (n, c, h, w) levels, w (o, c / groups, kh, kw) levels; zero padding is level 0.
struct ConvShape {
  int64_t n = 0, c = 0, h = 0, w = 0, o = 0, kh = 0, kw = 0, groups = 1;
  int64_t stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1, pad_top = 0, pad_left = 0;
  int64_t out_h = 0, out_w = 0;
};
std::vector<int32_t> conv2d_int32(const ConvShape& s, std::span<const int16_t> x,
                                  std::span<const int16_t> w);
// a (m, k) levels, b (n, k) levels (b transposed, as a Dense weight): (m, n) int32 sums.
std::vector<int32_t> gemm_int32(int64_t m, int64_t n, int64_t k, std::span<const int16_t> a,
                                std::span<const int16_t> b);

}  // namespace graphcore::runtime::quant
