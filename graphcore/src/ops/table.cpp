// The operator table: every family's rows, sorted by name, looked up by binary search.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/families.h"

namespace graphcore {

const ShardRule kShardBroadcast{};

namespace {

std::vector<OpDef> build_table() {
  std::vector<OpDef> all;
  for (auto family : {ops::elementwise_ops(), ops::activation_ops(), ops::nn_ops(),
                      ops::tensor_ops(), ops::grad_ops(), ops::loss_ops()})
    all.insert(all.end(), family.begin(), family.end());
  std::ranges::sort(all, {}, &OpDef::name);
  // Two rows for one operator would make its facts depend on which one a lookup finds.
  auto dup = std::ranges::adjacent_find(all, {}, &OpDef::name);
  if (dup != all.end())
    throw std::logic_error("operator " + std::string(dup->name) + " is defined twice");
  return all;
}

const std::vector<OpDef>& table() {
  static const std::vector<OpDef> t = build_table();
  return t;
}

}  // namespace

const OpDef* find_op(std::string_view op) {
  const auto& t = table();
  auto it = std::ranges::lower_bound(t, op, {}, &OpDef::name);
  return it != t.end() && it->name == op ? &*it : nullptr;
}

std::span<const OpDef> all_ops() { return table(); }

bool op_has(std::string_view op, OpTrait t) {
  const OpDef* d = find_op(op);
  return d != nullptr && d->has(t);
}

std::optional<OpCategory> op_category(std::string_view op) {
  const OpDef* d = find_op(op);
  if (d == nullptr) return std::nullopt;
  return d->category;
}

std::string_view category_name(OpCategory c) {
  switch (c) {
    case OpCategory::Elementwise:
      return "elementwise";
    case OpCategory::Activation:
      return "activation";
    case OpCategory::Normalization:
      return "normalization";
    case OpCategory::Softmax:
      return "softmax";
    case OpCategory::Convolution:
      return "convolution";
    case OpCategory::MatMul:
      return "matmul";
    case OpCategory::Attention:
      return "attention";
    case OpCategory::Recurrent:
      return "recurrent";
    case OpCategory::Pooling:
      return "pooling";
    case OpCategory::Reduction:
      return "reduction";
    case OpCategory::Shape:
      return "shape";
    case OpCategory::Index:
      return "index";
    case OpCategory::Creation:
      return "creation";
    case OpCategory::Random:
      return "random";
    case OpCategory::Cast:
      return "cast";
    case OpCategory::DataMove:
      return "data-move";
    case OpCategory::Other:
      return "other";
  }
  return "other";
}

}  // namespace graphcore
