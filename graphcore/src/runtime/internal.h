// Runtime internals shared by tensor.cpp, init.cpp, kernels*.cpp and executor.cpp.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "graphcore/runtime.h"

namespace graphcore::runtime {

// "512 bytes", "1.5 GiB".
std::string byte_size_str(size_t bytes);
// Throws RuntimeError when `bytes` exceed max_tensor_bytes(); `what` names the tensor.
void check_tensor_bytes(size_t bytes, const std::string& what);
// The element count of a scratch buffer of these dims (im2col columns...), checked for overflow
// and against max_tensor_bytes() as a tensor would be; throws RuntimeError naming `what`.
size_t checked_buffer_elements(std::span<const int64_t> dims, size_t element_size,
                               const std::string& what);

// splitmix64-based generator: the same numbers on every platform and standard library.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed ^ 0x9E3779B97F4A7C15ull) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  // The k-th (0-based) uniform() of a generator made with `seed`, without drawing the k before
  // it: splitmix64's state after k + 1 steps is seed' + (k + 1) * gamma, so blocks of a stream
  // can be drawn on several threads and give the sequential stream's bits.
  static double uniform_at(uint64_t seed, uint64_t k) {
    Rng r(seed);
    r.state_ += k * 0x9E3779B97F4A7C15ull;
    return r.uniform();
  }
  double normal() {  // Box-Muller
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1 = 0;
    while (u1 <= 0) u1 = uniform();
    double u2 = uniform();
    double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2 * M_PI * u2);
    has_spare_ = true;
    return r * std::cos(2 * M_PI * u2);
  }

 private:
  uint64_t state_;
  double spare_ = 0;
  bool has_spare_ = false;
};

uint64_t hash_name(uint64_t seed, std::string_view name);

// A kernel call: the node, its input tensors, its parameters (in Node::params order), and the
// graph's output types (shapes may be symbolic: kernels compute their own shapes and the executor
// checks them against the known dims).
struct KernelCall {
  const Node& node;
  const std::vector<Tensor>& inputs;
  const std::vector<const ParamState*>& params;
  std::vector<Tensor>& outputs;
  uint64_t run_seed = 0;  // ExecOptions::seed (random operators mix in the node's id)
  bool training = false;  // ExecOptions::training
};

using KernelFn = void (*)(KernelCall&);
// nullptr when there is no kernel for `op`.
KernelFn find_kernel(std::string_view op);
std::vector<std::string> kernel_names();

// Finds the parameter whose name ends with `.suffix` (or equals it); nullptr if none.
const Tensor* find_param(const KernelCall& c, std::string_view suffix);

// Attributes (layer constructor attributes and this application's).
std::optional<int64_t> attr_int(const Node& n, std::string_view name);
std::optional<double> attr_float(const Node& n, std::string_view name);
std::optional<bool> attr_bool(const Node& n, std::string_view name);
std::optional<std::string> attr_str(const Node& n, std::string_view name);
// An int expanded to `count` copies, or a list of ints.
std::optional<std::vector<int64_t>> attr_ints(const Node& n, std::string_view name,
                                              size_t count = 0);

// A ClipByValue bound (`name`: "min" / "max") as the registry's clamp_rule records it: a number
// attribute, None (recorded as None: no bound, no input), or not recorded: the node's next bound
// input (lower bound first), input `*next` when `*next < end` (then `*next` advances). The
// kernel, its gradient and both exporters read the bounds through this one function.
struct ClipBound {
  enum class Kind {
    None,       // recorded as None
    Number,     // a number attribute: `number`
    NotNumber,  // an attribute that is not a number: `attr`
    Input,      // the node's input `input`
    Missing,    // not recorded, and no bound input left
  } kind = Kind::None;
  double number = 0;
  const AttrValue* attr = nullptr;
  size_t input = 0;
};
ClipBound clip_bound(const Node& n, std::string_view name, size_t* next, size_t end);

// Roll as the exporters write it (mindspore.numpy.roll's order): the dims it shifts over (the
// input's `dims`, or, with no axis recorded, one dim of all the elements: `flattened`) and, per
// recorded (shift, axis) pair in order, the axis made non-negative and the shift made k in
// [1, len); a pair that moves nothing (k = 0, an empty axis) is left out. nullopt with `why`
// (and `*overflow` for an element count past int64) when the shift and axis are not recorded,
// differ in length or name an axis out of range.
struct RollSteps {
  bool flattened = false;
  std::vector<int64_t> dims;
  std::vector<std::pair<size_t, int64_t>> steps;  // (axis, k)
};
std::optional<RollSteps> roll_steps(const Node& n, std::vector<int64_t> dims, std::string* why,
                                    bool* overflow);

// The known dims of a graph type, or nullopt if some dim is symbolic/unknown.
std::optional<std::vector<int64_t>> known_dims(const TensorType& t);

// The graph's Input nodes in order: input i of an Executor is node graph_inputs(g)[i].
std::vector<uint32_t> graph_inputs(const Graph& g);

}  // namespace graphcore::runtime
