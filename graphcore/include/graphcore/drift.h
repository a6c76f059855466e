// Precision drift (issue 19, "the inference half"): the trained network's forward graph run in
// eval mode on held-out batches twice, at float32 and at the precision the device computes in
// (fp16 storage with fp32 accumulation as Ascend's Cube unit does, or int8 post-training
// quantisation), and compared node by node. See docs/precision.md for the rules and their
// sources.
//
//   Trainer t(plan, {...});
//   while (t.step()) {}
//   DriftReport r = measure_drift(plan, t.checkpoint(), {.precision = EvalPrecision::Int8});
//   std::cout << drift_table_text(r);
//
// Nothing here knows a protocol: the CLI (`cellscope train --drift`) and the debug adapter print
// and present the report.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "graphcore/quant.h"
#include "graphcore/runtime.h"
#include "graphcore/training.h"

namespace graphcore::runtime {

enum class EvalPrecision : uint8_t {
  Fp32,    // float32 against itself: every drift is 0 (a check of the harness)
  Target,  // fp16 storage between nodes and for weights, fp32 accumulation, then rounded to fp16
  Int8,    // post-training quantisation (graphcore/quant.h): per-channel symmetric int8 weights,
           // per-tensor asymmetric int8 activations, Conv2D/MatMul/Dense on int8 operands with
           // int32 sums, calibrated by DriftOptions::calibration
};
std::string_view eval_precision_name(EvalPrecision p);  // "fp32", "target", "int8"
std::optional<EvalPrecision> eval_precision_from_name(std::string_view name);

struct DriftOptions {
  EvalPrecision precision = EvalPrecision::Target;
  int64_t eval_batches = 4;               // batches compared
  int64_t calibration_batches = 4;        // int8: batches that calibrate the activation ranges
  quant::CalibrationOptions calibration;  // int8: min/max, percentile or KL
  double cosine_threshold = 0.99;         // first_below: the first node whose cosine is under this
  uint64_t seed = 0;  // random transforms of the pipeline (its order is file order)
  // Replaces the dataset source's directory (as TrainOptions::data_dir).
  std::optional<std::filesystem::path> data_dir;
  // Overrides the pipeline's batch size; the plan's loss graph must be compiled for it
  // (AnalysisOptions::training_batch), as for training.
  std::optional<int64_t> batch;
};

// One node of the network's forward graph.
struct LayerDrift {
  std::string node;   // the forward graph's Node::id ("conv1", "layer1.0/Add_1")
  std::string op;     // "Conv2D"
  std::string scope;  // "layer1.0.conv1"
  std::string file;   // where the node's expression is
  int64_t line = 0;   // 1-based
  // Over every element of every evaluated batch, precision run `p` against float32 run `r`:
  double max_abs = 0;  // max |p - r|
  // max |p - r| / max(|r|, g), where the guard g is 1e-3 times the largest |r| of that node's
  // output in that batch (1e-30 if it is all zero): near-zero references do not dominate.
  double max_rel = 0;
  // sum(p*r) / sqrt(sum(p^2) * sum(r^2)) over all the elements together, in double; 1 when both
  // are all zero, 0 when one is, and 0 when a value of p is not finite where r is.
  double cosine = 1;
  int64_t nonfinite = 0;  // values inf/NaN in the precision run that are finite at float32
  // Target: values of this node's fp32-accumulated result that fp16 cannot hold (|v| >= 65520,
  // which round-to-nearest-even makes inf); 0 for Int8 and Fp32.
  int64_t fp16_overflows = 0;
  bool quantized = false;  // Int8: its activation inputs and weights were quantised
};

struct DriftReport {
  EvalPrecision precision = EvalPrecision::Target;
  double threshold = 0.99;
  std::vector<LayerDrift> layers;  // graph order
  std::string first_below;         // the first layer whose cosine < threshold; "" if none
  std::string logits;              // the node whose output is the network's (the loss's input)
  // Fraction of samples whose argmax of the logits is the same in both runs (NaN when the
  // network's output was not found).
  double top1_agreement = 0;
  std::optional<double> accuracy_fp32, accuracy_precision;  // when the batches carry labels
  int64_t samples = 0;                                      // rows evaluated
  int64_t batches = 0;
  int64_t calibration_samples = 0;  // Int8
  // Int8: the table the quantised run used (graphcore/quant.h; write_quant_table writes it).
  std::optional<quant::QuantTable> quant_table;
  std::string data;  // which data: "the test split (usage='test') of ..."
  std::vector<std::string> notes;
};

// Runs the plan's network (its loss graph in eval mode: BatchNorm's moving statistics, Dropout
// off) with `params` (a Trainer's checkpoint(), or a read_checkpoint(); entries that are no
// parameter are ignored, parameters without an entry keep their initializer and are named in a
// note). Throws RuntimeError naming what is missing (no dataset, an uncompiled loss graph, a
// pipeline with fewer batches than asked).
DriftReport measure_drift(const TrainingPlan& plan, std::span<const CheckpointTensor> params,
                          const DriftOptions& options);

// The table the Debug Console and `cellscope train --drift` print.
std::string drift_table_text(const DriftReport& report);

// The numeric rules, exposed for tests.
namespace drift {
// (int8's rules are graphcore/quant.h's.)
// Values that fp16 storage turns into inf (|v| >= 65520).
int64_t count_fp16_overflows(const Tensor& t);
// Cosine as LayerDrift::cosine defines it, of two equally sized tensors.
double cosine(const Tensor& a, const Tensor& b);
// The top-1 class of each row of `logits` (the last axis is the class axis; a NaN wins, so a
// row gone NaN disagrees with a finite one): what top-1 agreement and accuracy compare.
std::vector<int64_t> argmax_rows(const Tensor& logits);
}  // namespace drift

}  // namespace graphcore::runtime
