// Inference rules shared by ops functions, primitives and Tensor methods. Each builder takes the
// API name (for messages) and the names of the call parameters it reads, so that ops.sum(input,
// dim) and Tensor.sum(self, dim) are one rule.
#pragma once

#include <string>
#include <vector>

#include "registry/rules.h"

namespace graphcore::rules {

using Names = std::vector<std::string>;  // aliases of one parameter, first present wins

enum class UnaryDType {
  Keep,       // relu, abs, neg: any dtype, unchanged
  FloatOnly,  // exp, sigmoid, softmax: MindSpore rejects integer/bool inputs
  ToFloat,    // sqrt: integer inputs give float32
  ToBool,     // logical_not
};
// One tensor in, same shape out. `flops` per element.
InferFn unary_rule(std::string api, std::string x, UnaryDType rule, double flops = 1);

enum class BinaryDType { Promote, TrueDiv, Compare };
// Tensor-or-scalar operands, broadcast. A Python scalar operand is recorded as the node
// attributes `scalar` and `scalar_index` (its operand position, counted from `first_operand` for
// `a`: Select()(cond, x, 0.0) reads (input, other) as operands 1 and 2).
InferFn binary_rule(std::string api, std::string a, std::string b, BinaryDType rule,
                    int64_t first_operand = 0);

enum class ReduceDType { Keep, SumInt64, ToInt64, ToInt32 };
struct ReduceNames {
  Names axis;
  Names keep;
  Names dtype;  // optional dtype= override
};
// Reduction; `with_indices` adds an int64 indices output (ops.max(x, axis) -> (values, indices)).
InferFn reduce_rule(std::string api, std::string x, ReduceNames names, ReduceDType rule,
                    bool with_indices = false);
// Primitive reductions: keep_dims from the constructor, axis from the call.
InferFn reduce_prim_rule(std::string api, std::string x, std::string axis, ReduceDType rule);
// A primitive reducing over an axis given at construction (`LpNorm(axis=[1, 2])(x)`).
InferFn reduce_init_axis_rule(std::string api, std::string x, std::string axis, ReduceDType rule);

// reshape: the shape is a sequence argument or the call's varargs (x.reshape(2, 3)).
InferFn reshape_rule(std::string api, std::string x, std::string shape);
// permute/transpose with a full permutation (sequence or varargs).
InferFn permute_rule(std::string api, std::string x, std::string perm);
InferFn swap_rule(std::string api, std::string x, std::string a, std::string b);
InferFn concat_rule(std::string api, std::string tensors, Names axis, bool from_init = false);
InferFn stack_rule(std::string api, std::string tensors, Names axis, bool from_init = false);
// split(x, size_or_sections, axis) / chunk(x, n, axis): tuple outputs.
InferFn split_rule(std::string api, std::string x, std::string sizes, Names axis);
InferFn chunk_rule(std::string api, std::string x, std::string chunks, Names axis);
// mindspore.numpy.split(x, indices_or_sections, axis): an int is that many equal pieces, a list
// the split points (numpy's meaning), recorded as the pieces' sizes.
InferFn numpy_split_rule();
InferFn squeeze_rule(std::string api, std::string x, Names axis, bool from_init = false);
InferFn unsqueeze_rule(std::string api, std::string x, Names axis);
InferFn flatten_rule(std::string api, std::string x, int64_t default_start);
InferFn cast_rule(std::string api, std::string x, std::string dtype);
InferFn to_dtype_rule(std::string api, std::string x, DType dtype);  // x.float()
InferFn tile_rule(std::string api, std::string x, std::string reps);
InferFn broadcast_to_rule(std::string api, std::string x, std::string shape);
InferFn matmul_rule(std::string api, std::string a, std::string b, MatMulKind kind,
                    bool flags_from_init = false);
InferFn masked_fill_rule(std::string api, std::string x, std::string mask, std::string value);
InferFn clamp_rule(std::string api, std::string x, std::string lo, std::string hi);
InferFn topk_rule(std::string api, std::string x, std::string k, Names dim);
InferFn gather_rule(std::string api, std::string params, std::string indices, std::string axis,
                    bool batch_dims_from_init);
InferFn norm_rule(std::string api, std::string x, Names dim, Names keep);
InferFn same_as_rule(std::string api, std::string x, std::string other);  // expand_as etc.

}  // namespace graphcore::rules
