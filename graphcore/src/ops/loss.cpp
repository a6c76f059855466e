// Operator definitions of losses (MindSpore's nn.*Loss Cells and ops.*_loss functions) and of
// their backward operators, with the gradient rules (graphcore/autodiff.h) that emit them.
// Columns (graphcore/opdef.h): name, category, traits, unit, vector instructions per element (the
// hardware model's cost), precision under amp O2, CPU kernel, produced only by a pass, gradient.
// Losses stay float32 under amp O2: MindSpore's amp casts the network's output back to float32
// before the loss (amp._add_loss_network), so the loss never runs in float16.
#include <string>
#include <vector>

#include "graphcore/autodiff.h"
#include "ops/families.h"

namespace graphcore::ops {

namespace {

// The backward operator of a loss, run on the forward node's inputs and the loss's gradient: its
// outputs are the gradients of the first `differentiable` inputs (the input; for the regression
// losses also the target, which a distillation loss computes). Labels of the class losses and
// weights are constants of the training step and get none.
void loss_grad(autodiff::GradBuilder& g, size_t differentiable) {
  const std::optional<ValueRef> dout = g.dout(0);
  if (!dout) return;
  bool needed = false;
  for (size_t i = 0; i < differentiable; ++i) needed |= g.needs_input_grad(i);
  if (!needed) return;
  const Node& n = g.node();
  std::vector<ValueRef> inputs = n.inputs;
  inputs.push_back(*dout);
  std::vector<TensorType> outputs;
  for (size_t i = 0; i < differentiable; ++i) {
    TensorType t = g.type_of(g.input(i));
    if (!is_floating(t.dtype)) t.dtype = DType::Float32;
    outputs.push_back(std::move(t));
  }
  const uint32_t k = g.emit(std::string(n.op) + "Grad", std::move(inputs), std::move(outputs),
                            n.attrs, {}, /*layer_attrs=*/true);
  for (size_t i = 0; i < differentiable; ++i) {
    if (g.needs_input_grad(i)) g.grad_input(i, ValueRef{k, static_cast<uint32_t>(i)});
  }
}

void grad_of_input(autodiff::GradBuilder& g) { loss_grad(g, 1); }
void grad_of_input_and_target(autodiff::GradBuilder& g) { loss_grad(g, 2); }

}  // namespace

std::span<const OpDef> loss_ops() {
  using C = OpCategory;
  using U = OpUnit;
  using P = OpPrecision;
  static const OpDef kRows[] = {
      // Inputs: logits, labels (class indices, or probabilities of the logits' shape), and the
      // class weights when the `has_weight` attribute is set.
      {"CrossEntropyLoss", C::Other, kTraitNone, U::Vector, 6, P::KeepFloat32,
       &kernels::k_class_loss, false, &grad_of_input},
      {"CrossEntropyLossGrad", C::Other, kTraitNone, U::Vector, 6, P::KeepFloat32,
       &kernels::k_class_loss_grad, false, nullptr, true},
      {"NLLLoss", C::Other, kTraitNone, U::Vector, 2, P::KeepFloat32, &kernels::k_class_loss, false,
       &grad_of_input},
      {"NLLLossGrad", C::Other, kTraitNone, U::Vector, 2, P::KeepFloat32,
       &kernels::k_class_loss_grad, false, nullptr, true},
      {"SoftmaxCrossEntropyWithLogits", C::Other, kTraitNone, U::Vector, 6, P::KeepFloat32,
       &kernels::k_class_loss, false, &grad_of_input},
      {"SoftmaxCrossEntropyWithLogitsGrad", C::Other, kTraitNone, U::Vector, 6, P::KeepFloat32,
       &kernels::k_class_loss_grad, false, nullptr, true},
      // Inputs: input, target (broadcast for MSE and L1, one shape for SmoothL1).
      {"MSELoss", C::Other, kTraitNone, U::Vector, 3, P::KeepFloat32, &kernels::k_pointwise_loss,
       false, &grad_of_input_and_target},
      {"MSELossGrad", C::Other, kTraitNone, U::Vector, 3, P::KeepFloat32,
       &kernels::k_pointwise_loss_grad, false, nullptr, true},
      {"L1Loss", C::Other, kTraitNone, U::Vector, 3, P::KeepFloat32, &kernels::k_pointwise_loss,
       false, &grad_of_input_and_target},
      {"L1LossGrad", C::Other, kTraitNone, U::Vector, 3, P::KeepFloat32,
       &kernels::k_pointwise_loss_grad, false, nullptr, true},
      {"SmoothL1Loss", C::Other, kTraitNone, U::Vector, 5, P::KeepFloat32,
       &kernels::k_pointwise_loss, false, &grad_of_input_and_target},
      {"SmoothL1LossGrad", C::Other, kTraitNone, U::Vector, 5, P::KeepFloat32,
       &kernels::k_pointwise_loss_grad, false, nullptr, true},
      // Inputs: input, target, then weight and pos_weight when `has_weight` / `has_pos_weight`.
      {"BCEWithLogitsLoss", C::Other, kTraitNone, U::Vector, 8, P::KeepFloat32,
       &kernels::k_bce_with_logits, false, &grad_of_input},
      {"BCEWithLogitsLossGrad", C::Other, kTraitNone, U::Vector, 8, P::KeepFloat32,
       &kernels::k_bce_with_logits_grad, false, nullptr, true},
  };
  return kRows;
}

}  // namespace graphcore::ops
