// Training-step arithmetic of MindSpore 2.10 on graphcore's CPU runtime (issue 17): the
// optimizers (nn.SGD, nn.Momentum, nn.Adam, nn.AdamWeightDecay) with their CPU kernels' update
// formulas, order of operations and float32 arithmetic; learning-rate schedules (a number, a
// per-step list, the nn.dynamic_lr list builders, the LearningRateSchedule cells); loss scaling
// (FixedLossScaleManager, DynamicLossScaleManager: TrainOneStepWithLossScaleCell's unscale,
// overflow check and DynamicLossScaleUpdateCell's rule); ops.clip_by_global_norm; and the
// checkpoint writer (what mindspore.save_checkpoint writes). See docs/runtime.md, "Training".
//
//   OptimizerConfig cfg = OptimizerConfig::defaults(OptimizerKind::Momentum);
//   cfg.learning_rate = LrSchedule::constant(0.01);
//   cfg.momentum = 0.9;
//   Optimizer opt(cfg, names, shapes);       // the trainable parameters, in the network's order
//   opt.step(param_ptrs, grads);             // updates the parameters in place
//   write_checkpoint("net.ckpt", entries + opt.state());
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "graphcore/runtime.h"
#include "graphcore/training.h"

namespace graphcore::runtime {

// ---- learning rate ------------------------------------------------------------------------------
// The learning rate as a function of the optimizer's global step (the number of updates done
// before this one), evaluated as MindSpore evaluates it: a per-step list is stored as float32 and
// indexed by the step (past its end MindSpore's Gather fails, and so does at()); the
// LearningRateSchedule cells compute in float32 from the step cast to float32.
struct LrSchedule {
  enum class Kind : uint8_t {
    Constant,          // a number (stored as a float32 Parameter)
    List,              // a list / 1-D Tensor / nn.dynamic_lr result, one value per step
    ExponentialDecay,  // nn.ExponentialDecayLR(learning_rate, decay_rate, decay_steps, is_stair)
    NaturalExpDecay,   // nn.NaturalExpDecayLR(learning_rate, decay_rate, decay_steps, is_stair)
    InverseDecay,      // nn.InverseDecayLR(learning_rate, decay_rate, decay_steps, is_stair)
    CosineDecay,       // nn.CosineDecayLR(min_lr, max_lr, decay_steps)
    PolynomialDecay,   // nn.PolynomialDecayLR(learning_rate, end_learning_rate, decay_steps,
                       //                      power, update_decay_steps)
    WarmUp,            // nn.WarmUpLR(learning_rate, warmup_steps)
    Graph,             // a user's LearningRateSchedule subclass: its construct, compiled by the
                       // static evaluator (TrainingPlan::lr_graph), run on the CPU runtime
  };
  Kind kind = Kind::Constant;
  double learning_rate = 0.1;  // Constant; the schedules' learning_rate
  std::vector<float> values;   // List
  double decay_rate = 0, min_lr = 0, max_lr = 0, end_learning_rate = 0, power = 1;
  int64_t decay_steps = 1;                     // also WarmUp's warmup_steps
  bool is_stair = false;                       // also PolynomialDecay's update_decay_steps
  std::shared_ptr<const CellReport> graph;     // Graph: global_step (int32, (1,)) -> the lr
  mutable std::shared_ptr<Executor> executor;  // Graph: made on first use, shared by copies

  static LrSchedule constant(double lr);
  static LrSchedule list(const std::vector<double>& per_step);  // rounded to float32
  static LrSchedule exponential_decay(double lr, double decay_rate, int64_t decay_steps,
                                      bool is_stair = false);
  static LrSchedule natural_exp_decay(double lr, double decay_rate, int64_t decay_steps,
                                      bool is_stair = false);
  static LrSchedule inverse_decay(double lr, double decay_rate, int64_t decay_steps,
                                  bool is_stair = false);
  static LrSchedule cosine_decay(double min_lr, double max_lr, int64_t decay_steps);
  static LrSchedule polynomial_decay(double lr, double end_lr, int64_t decay_steps, double power,
                                     bool update_decay_steps = false);
  static LrSchedule warmup(double lr, int64_t warmup_steps);
  // A compiled schedule (TrainingPlan::lr_graph): one int32 input of shape (1,), one float
  // output of one element, no parameters. Throws RuntimeError otherwise.
  static LrSchedule from_graph(const CellReport& report);

  // The learning rate at `global_step` (float32). Throws RuntimeError past a List's end, and
  // when a Graph's kernels fail.
  [[nodiscard]] float at(int64_t global_step) const;
  // "CosineDecayLR(min_lr=0, max_lr=0.1, decay_steps=100)", "list of 300 values", "0.01".
  [[nodiscard]] std::string str() const;
  // Is it a Parameter in MindSpore's optimizer (Constant, List), hence in its checkpoint?
  [[nodiscard]] bool is_parameter() const { return kind == Kind::Constant || kind == Kind::List; }
};

// mindspore.nn's dynamic_lr functions: the same lists (Python floats, double precision, with
// the same expressions, so the values are bit-identical). Arguments are validated as MindSpore
// validates them; a bad one throws RuntimeError naming the function and the argument.
std::vector<double> piecewise_constant_lr(const std::vector<int64_t>& milestone,
                                          const std::vector<double>& learning_rates);
std::vector<double> exponential_decay_lr(double learning_rate, double decay_rate,
                                         int64_t total_step, int64_t step_per_epoch,
                                         int64_t decay_epoch, bool is_stair = false);
std::vector<double> natural_exp_decay_lr(double learning_rate, double decay_rate,
                                         int64_t total_step, int64_t step_per_epoch,
                                         int64_t decay_epoch, bool is_stair = false);
std::vector<double> inverse_decay_lr(double learning_rate, double decay_rate, int64_t total_step,
                                     int64_t step_per_epoch, int64_t decay_epoch,
                                     bool is_stair = false);
std::vector<double> cosine_decay_lr(double min_lr, double max_lr, int64_t total_step,
                                    int64_t step_per_epoch, int64_t decay_epoch);
std::vector<double> polynomial_decay_lr(double learning_rate, double end_learning_rate,
                                        int64_t total_step, int64_t step_per_epoch,
                                        int64_t decay_epoch, double power,
                                        bool update_decay_epoch = false);
std::vector<double> warmup_lr(double learning_rate, int64_t total_step, int64_t step_per_epoch,
                              int64_t warmup_epoch);

// ---- optimizers ---------------------------------------------------------------------------------
enum class OptimizerKind : uint8_t { SGD, Momentum, Adam, AdamWeightDecay };
std::string_view optimizer_kind_name(OptimizerKind k);  // "SGD", "Momentum", ...
std::optional<OptimizerKind> optimizer_kind_from_name(std::string_view name);  // "nn.Adam", "Adam"

// One dict of a grouped `params` list: {'params': [...], 'weight_decay': wd, 'lr': lr,
// 'grad_centralization': True}. Unset keys take the optimizer's arguments.
struct ParamGroupConfig {
  std::vector<std::string> params;
  std::optional<LrSchedule> lr;
  std::optional<double> weight_decay;
  std::optional<bool> grad_centralization;
};

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::Momentum;
  LrSchedule learning_rate;
  double weight_decay = 0.0;
  double loss_scale = 1.0;  // the optimizer's loss_scale (not AdamWeightDecay's: it has none)
  // SGD(momentum, dampening, nesterov), Momentum(momentum, use_nesterov). MindSpore 2.10's CPU
  // ApplyMomentum kernel ignores use_nesterov (checked: equal results), and so does Momentum here.
  double momentum = 0.0;
  double dampening = 0.0;
  bool nesterov = false;
  // Adam(beta1, beta2, eps, use_nesterov = `nesterov`, use_amsgrad), AdamWeightDecay.
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  bool use_amsgrad = false;
  // Grouped parameters; empty: one list (the constructor's names), with MindSpore's default
  // weight-decay filter (parameters whose name contains neither "beta" nor "gamma"). With groups,
  // a group decays when its weight_decay > 0, and only the grouped parameters are optimized.
  // Group i's own lr is the Parameter "learning_rate_group_<i>" (i counts the dicts of the list
  // as written: keep an order_params dict last, as mindcv does, for the names to agree).
  std::vector<ParamGroupConfig> groups;
  std::vector<std::string> order_params;  // {'order_params': ...}: the optimizer's order

  // MindSpore's defaults for `kind` (SGD: lr 0.1; Adam: lr 1e-3, eps 1e-8; AdamWeightDecay: lr
  // 1e-3, eps 1e-6; Momentum has no default lr or momentum: 0.1 / 0.9 placeholders).
  static OptimizerConfig defaults(OptimizerKind kind);
  // Throws RuntimeError for what MindSpore's constructor rejects (negative values, beta outside
  // (0, 1), nesterov SGD without momentum or with dampening, loss_scale <= 0 ...).
  void validate() const;
  [[nodiscard]] std::string str() const;  // "Momentum(learning_rate=0.01, momentum=0.9)"
};

// One optimizer over a fixed set of parameters. Not thread-safe.
class Optimizer {
 public:
  // `names` / `shapes`: the trainable parameters in the network's order (net.trainable_params()).
  // Throws RuntimeError for an invalid config, a group naming an unknown or repeated parameter,
  // or order_params that are not the grouped parameters.
  Optimizer(OptimizerConfig cfg, std::vector<std::string> names,
            std::vector<std::vector<int64_t>> shapes);

  [[nodiscard]] const OptimizerConfig& config() const { return cfg_; }
  // The optimized parameters' names in the optimizer's order (order_params, else the groups'
  // concatenation, else the constructor's order).
  [[nodiscard]] std::vector<std::string> parameters() const;

  // One update, as calling the MindSpore optimizer Cell with the gradients does: weight decay
  // (g + w * wd * loss_scale), gradient centralization, unscaling by 1 / loss_scale, the learning
  // rate at global_step, global_step + 1, then the kernel. `params` and `grads` are in the
  // constructor's order (one per name); parameters are updated in place (their storage is
  // written: pass private tensors). Gradients of parameters the optimizer does not own are
  // ignored. Throws RuntimeError (nothing changed) for a missing, misshapen or non-float tensor
  // or a learning-rate list that has run out.
  void step(std::span<Tensor* const> params, std::span<const Tensor> grads);

  [[nodiscard]] int64_t global_step() const { return global_step_; }
  // The learning rate the next step uses (of the first parameter's group).
  [[nodiscard]] double current_lr() const;
  // The learning rate `step` used for the parameter `name` (for checks): its group's schedule.
  [[nodiscard]] double lr_at(std::string_view name, int64_t step) const;

  // The optimizer's Parameters as MindSpore names them in a checkpoint of the training Cell, in
  // its order: global_step (Int32 (1,)), learning_rate (when a number or list), momentum,
  // beta1_power/beta2_power, then per parameter moments./accum./stat./moment1./moment2./vhat./
  // adam_m./adam_v. + name.
  [[nodiscard]] std::vector<CheckpointTensor> state() const;
  // Restores global_step and the moments from checkpoint entries (ours or MindSpore's; other
  // entries are ignored). Every state tensor must be present with its shape (else RuntimeError
  // naming them, nothing changed), except learning-rate and momentum Parameters, which the
  // config defines. Returns the number of entries used.
  size_t load_state(std::span<const CheckpointTensor> entries);

 private:
  struct Slot {
    size_t index;  // into the constructor's order
    std::string name;
    std::vector<int64_t> shape;
    int64_t numel = 0;
    size_t group = 0;  // into lrs_
    bool decay = false;
    float weight_decay = 0;  // float32(wd * loss_scale) (AdamWeightDecay: float32(wd))
    bool centralize = false;
    std::vector<float> m, v, vhat;  // moments / accum, moment2 / stat, vhat
  };
  struct GroupLr {
    LrSchedule schedule;
    std::string param_name;  // "learning_rate", "learning_rate_group_1"
  };
  void allocate_state();

  OptimizerConfig cfg_;
  std::vector<std::string> names_;
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<Slot> slots_;  // the optimizer's order
  std::vector<GroupLr> lrs_;
  int64_t global_step_ = 0;
  float beta1_power_ = 1.0f, beta2_power_ = 1.0f;
};

// ---- loss scaling -------------------------------------------------------------------------------
// FixedLossScaleManager(loss_scale, drop_overflow_update) and DynamicLossScaleManager(
// init_loss_scale, scale_factor, scale_window), as Model's training cells apply them: with an
// update cell (Dynamic, or Fixed with drop_overflow_update=True) TrainOneStepWithLossScaleCell
// seeds the backward with scale(), multiplies every gradient by float32(1 / scale), skips the
// optimizer when a gradient is not finite and updates the scale (DynamicLossScaleUpdateCell);
// Fixed with drop_overflow_update=False is a TrainOneStepCell with sens=loss_scale: the gradients
// stay scaled (the optimizer's loss_scale unscales them) and no step is skipped.
// Note: MindSpore 2.10 on CPU runs only the latter (Model rejects an update cell on CPU and
// TrainOneStepWithLossScaleCell needs NPUGetFloatStatusV2); the rest follows its GPU semantics.
struct LossScaleConfig {
  enum class Kind : uint8_t { None, Fixed, Dynamic };
  Kind kind = Kind::None;
  double loss_scale = 128.0;            // Fixed
  bool drop_overflow_update = true;     // Fixed
  double init_loss_scale = 16777216.0;  // Dynamic (2**24)
  double scale_factor = 2.0;
  int64_t scale_window = 2000;
  // Dynamic: mindspore.amp.DynamicLossScaler's adjust() (a counter of finite steps modulo the
  // window, the scale grown on its last one and only to a finite value) instead of
  // DynamicLossScaleUpdateCell's rule (grown when `scale_window` steps passed since the last
  // overflow).
  bool amp_scaler = false;
};

class LossScaler {
 public:
  explicit LossScaler(LossScaleConfig cfg = {});  // throws RuntimeError for invalid values
  [[nodiscard]] const LossScaleConfig& config() const { return cfg_; }
  // The sensitivity the backward pass starts from (1 for None).
  [[nodiscard]] float scale() const { return scale_; }
  // Does the training cell unscale and check the gradients (an update cell exists)?
  [[nodiscard]] bool has_update_cell() const;
  // After the backward pass: unscales `grads` in place when there is an update cell, checks them
  // for non-finite values and updates the scale. Returns true when the optimizer should step
  // (false: overflow with an update cell, the step is skipped).
  bool unscale_and_update(std::span<Tensor> grads);
  [[nodiscard]] int64_t overflow_count() const { return overflows_; }
  // scale_sense, current_iterator_step, last_overflow_iterator_step (the Parameters of
  // TrainOneStepWithLossScaleCell and DynamicLossScaleUpdateCell); empty without an update cell.
  [[nodiscard]] std::vector<CheckpointTensor> state() const;
  size_t load_state(std::span<const CheckpointTensor> entries);

 private:
  LossScaleConfig cfg_;
  float scale_ = 1.0f;
  int32_t cur_iter_ = 1, last_overflow_iter_ = 0;
  int64_t overflows_ = 0;
};

// True when every element of every float tensor is finite.
bool all_finite(std::span<const Tensor> tensors);

// ops.clip_by_global_norm(x, clip_norm): global_norm = sqrt(sum of each tensor's float32 sum of
// squares); every tensor becomes x * clip_norm / max(global_norm, clip_norm) (always applied, as
// MindSpore does). In place; returns the global norm. clip_norm must be > 0.
float clip_by_global_norm(std::span<Tensor> grads, double clip_norm);

// ---- from a training plan (graphcore/training.h) -----------------------------------------------
// The configs of what the static evaluator read from the script. Arguments are taken by
// MindSpore's parameter names (the plan binds positional ones); a value that is not a constant
// the runtime can use (a Cell as weight_decay, a learning rate computed at run time) is a
// RuntimeError naming the call, its file and line. A ParamGroup whose overrides contain
// `order_params` is the {'order_params': ...} dict.
OptimizerConfig optimizer_config_from_plan(const TrainingPlan& plan);
// nn.cosine_decay_lr(...) and the other dynamic_lr functions (a List), or the
// LearningRateSchedule classes (nn.CosineDecayLR(...) ...).
LrSchedule lr_schedule_from_call(const PlanCall& call);
// FixedLossScaleManager(...) / DynamicLossScaleManager(...) (also as amp.* / train.*).
LossScaleConfig loss_scale_from_call(const PlanCall& call);

// ---- checkpoint writer --------------------------------------------------------------------------
// Writes entries as mindspore.save_checkpoint(format="ckpt") does: one serialized Checkpoint
// message per entry (a tensor over 512 MiB in several, each with the full dims), tensor_type
// "Float32"/"Float16"/"Int32"/"Int64"/"Bool" from the value's dtype (`stored_type` is not
// read), dims as the value's shape (none for a scalar), raw little-endian data; with
// `crc_check`, the "crc_num" trailer. Atomic: written to a temporary file in the same directory,
// flushed, then renamed over `file`; on any failure (an undefined or skipped entry, an empty
// name, a repeated name, a full disk) nothing is left and an existing file is untouched.
// Throws RuntimeError naming the file and the entry.
void write_checkpoint(const std::filesystem::path& file, std::span<const CheckpointTensor> entries,
                      bool crc_check = false);

// A CheckpointTensor for a value (stored_type from its dtype).
CheckpointTensor checkpoint_entry(std::string name, Tensor value);

}  // namespace graphcore::runtime
