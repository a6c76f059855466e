// graphcore's CPU runtime: executes a compiled semantic graph (CellReport::graph) with real
// numerics, node by node, with hooks before and after every node for a debugger. See
// docs/runtime.md.
//
//   Executor ex(report, {.seed = 1});
//   ex.set_input(0, Tensor::random({1, 3, 224, 224}, DType::Float32, 7));
//   Hooks hooks;
//   hooks.before = [&](const NodeEvent& e) {
//     return e.node.range.start.line == bp_line ? HookAction::Pause : HookAction::Continue;
//   };
//   RunStatus s = ex.run(hooks);       // Paused at a node: inspect ex.value(...), then
//   s = ex.run(hooks);                 // resume (the paused node's `before` is not repeated)
//
// Everything here is single-threaded; an Executor is not thread-safe (pause/abort from another
// thread goes through Hooks::interrupt, an atomic the run polls between nodes).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "graphcore/graph.h"
#include "graphcore/initializer.h"
#include "graphcore/shape.h"

namespace graphcore::runtime {

// ---- Tensor -------------------------------------------------------------------------------------
// A dense, contiguous, row-major tensor. Supported dtypes: Float32, Float16 (emulated: float32
// storage holding values exactly representable in IEEE binary16), Int32, Int64, Bool (one byte).
// Copies share storage (a Tensor is a handle); kernels never write into their inputs. Use clone()
// for a private copy.
class Tensor {
 public:
  Tensor() = default;
  // Zero-filled.
  Tensor(std::vector<int64_t> shape, DType dtype);
  // Elements not initialised: for a kernel that writes every element of its output.
  static Tensor uninitialized(std::vector<int64_t> shape, DType dtype);

  static Tensor zeros(std::vector<int64_t> shape, DType dtype = DType::Float32);
  static Tensor ones(std::vector<int64_t> shape, DType dtype = DType::Float32);
  static Tensor full(std::vector<int64_t> shape, double value, DType dtype = DType::Float32);
  // Floats: standard normal; ints: uniform in [0, 10); bool: fair coin. Reproducible from seed.
  static Tensor random(std::vector<int64_t> shape, DType dtype, uint64_t seed);
  static Tensor from_floats(std::vector<int64_t> shape, const std::vector<float>& values);
  static Tensor from_ints(std::vector<int64_t> shape, const std::vector<int64_t>& values,
                          DType dtype = DType::Int64);
  static bool supported(DType dtype);

  [[nodiscard]] bool defined() const { return storage_ != nullptr; }
  // No other Tensor shares this one's storage (a write through it changes nothing else).
  [[nodiscard]] bool sole_owner() const { return storage_ != nullptr && storage_.use_count() == 1; }
  [[nodiscard]] const std::vector<int64_t>& shape() const { return shape_; }
  [[nodiscard]] size_t rank() const { return shape_.size(); }
  [[nodiscard]] int64_t dim(int64_t axis) const;  // Python-style index
  [[nodiscard]] DType dtype() const { return dtype_; }
  [[nodiscard]] int64_t numel() const { return numel_; }
  [[nodiscard]] size_t element_size() const;  // storage bytes per element (Float16: 4)
  [[nodiscard]] bool is_float() const {
    return dtype_ == DType::Float32 || dtype_ == DType::Float16;
  }
  [[nodiscard]] std::string type_str() const;  // "(1, 3, 224, 224) f32"

  // Typed storage access; the type must match the storage (float for Float32/Float16, int32_t,
  // int64_t, uint8_t for Bool), else std::logic_error.
  template <class T>
  T* data();
  template <class T>
  const T* data() const;
  // Element `flat` (row-major) converted to double, for any dtype.
  [[nodiscard]] double at(int64_t flat) const;
  void set(int64_t flat, double v);

  // Same storage, new shape (numel must match; one -1 is inferred).
  [[nodiscard]] Tensor reshape(std::vector<int64_t> shape) const;
  [[nodiscard]] Tensor clone() const;
  // Converts (float->int truncates toward zero, like MindSpore's Cast); Float16 rounds.
  [[nodiscard]] Tensor cast(DType dtype) const;
  // The first `max_items` values, numpy-like ("[0.1, -2, ...]").
  [[nodiscard]] std::string preview(size_t max_items = 8) const;

  // A value computed from this tensor's elements, kept with its storage and shared by every
  // Tensor viewing it (oneDNN's reordered copy of a convolution weight): the one stored under
  // `key`, or nullptr. Taking mutable access to the elements (non-const data<T>(), set) drops it,
  // so it never describes elements that changed after it was stored -- as long as nobody writes
  // through a pointer obtained before set_derived (kernels never write into their inputs).
  [[nodiscard]] std::shared_ptr<const void> derived(std::string_view key) const;
  void set_derived(std::string key, std::shared_ptr<const void> value) const;

  struct Storage;  // tensor.cpp: the bytes (recycled through a pool) and the derived value

 private:
  [[nodiscard]] std::byte* bytes() const;
  std::shared_ptr<Storage> storage_;
  std::vector<int64_t> shape_;
  DType dtype_ = DType::Float32;
  int64_t numel_ = 0;
};

// The largest tensor the runtime allocates, in bytes. A larger one (a huge input shape, a forged
// .npy header, a kernel output) fails with a RuntimeError naming its type before anything is
// allocated, and an allocation that fails anyway is a RuntimeError ("out of memory ..."), never
// std::bad_alloc. Process-wide; the default (or 0) is the machine's physical memory.
size_t max_tensor_bytes();
void set_max_tensor_bytes(size_t bytes);

// Tensor storage of 64 KiB and more is recycled: a freed block is kept, by size, for the next
// tensor of that size (an executor frees each activation after its last reader, so a run reuses
// the blocks of the one before without page faults). The pool keeps at most this many bytes
// (default 1 GiB; 0 turns it off and frees what it holds); release_tensor_pool() frees them all.
size_t tensor_pool_limit();
void set_tensor_pool_limit(size_t bytes);
size_t tensor_pool_bytes();  // held now
void release_tensor_pool();

// Rounds every value of a float tensor to binary16 in place (round to nearest even; values
// beyond 65504 become +-inf, as fp16 storage would make them).
void round_to_half(Tensor& t);
float round_to_half(float v);
inline constexpr double kFloat16Max = 65504.0;

// ---- Statistics ---------------------------------------------------------------------------------
struct TensorStats {
  int64_t count = 0;
  double min = 0, max = 0, mean = 0, std = 0;  // over finite values (population std)
  int64_t nan_count = 0, inf_count = 0, zero_count = 0;
  int64_t fp16_overflow_count = 0;  // finite values with |v| > 65504
  int64_t first_nan = -1, first_inf = -1, first_fp16_overflow = -1;  // flat indices
  [[nodiscard]] bool all_zero() const { return count > 0 && zero_count == count; }
  [[nodiscard]] std::string str() const;
};
TensorStats compute_stats(const Tensor& t);
// "(1, 3, 224, 224)", "(8,)", "()".
std::string shape_str(const std::vector<int64_t>& shape);
// Flat index -> multi-index ("[0, 3, 1, 2]").
std::string index_str(const std::vector<int64_t>& shape, int64_t flat);

// ---- .npy ---------------------------------------------------------------------------------------
// Reads NumPy .npy v1/v2/v3 files: little-endian <f4 <f2 <f8 <i4 <i8 <i2 |i1 |u1 |b1, C order.
// f8 becomes Float32, f2 Float16, i1/i2/u1 Int32. Throws std::runtime_error with the reason.
Tensor read_npy(const std::filesystem::path& path);
void write_npy(const std::filesystem::path& path, const Tensor& t);  // f4/f2/i4/i8/b1

// ---- Parameter initialisation -------------------------------------------------------------------
// Initializers are facts of the analysed program (graphcore/initializer.h): ParamInfo::init.
using graphcore::InitSpec;

// Fills `t` (float) as MindSpore's initializer would (fans from its shape), from `seed`.
void fill_init(Tensor& t, const InitSpec& spec, uint64_t seed);

// Where a parameter's initializer came from, for the debugger to show.
enum class InitSource : uint8_t {
  Override,      // ExecOptions::param_inits
  Argument,      // what the program passed (`weight_init=...`, `initializer(...)`): ParamInfo::init
  LayerDefault,  // MindSpore's default for this layer and parameter: ParamInfo::init
  Unknown,       // nothing known (a Parameter from a tensor of unknown values): zeros, with a note
  Loaded,        // set_param / load_params_npy / load_checkpoint
};
std::string_view init_source_name(InitSource s);

struct ParamState {
  std::string name;  // "layer1.0.conv1.weight"
  Tensor value;
  InitSpec init;
  InitSource source = InitSource::LayerDefault;
  std::string note;  // where the initializer came from ("weight_init=Normal(sigma=0.02, mean=0)")
  // Allocated but not initialised yet (ExecOptions::defer_init): load_checkpoint, set_param or
  // Executor::init_pending gives it its value.
  bool pending = false;
};

// ---- MindSpore checkpoints ----------------------------------------------------------------------
// Files written by mindspore.save_checkpoint: the protobuf .ckpt format (format="ckpt", the
// default; graphcore/proto/mindspore_checkpoint.proto), including tensors split into slices and
// the CRC-32 trailer of crc_check=True, and format="safetensors". Encrypted checkpoints
// (enc_key) are not supported and are reported as such. Files are memory-mapped: a tensor's
// bytes are copied once, from the mapping into its Tensor (converting the dtype on the way).
enum class CheckpointFormat : uint8_t { Ckpt, Safetensors };
std::string_view checkpoint_format_name(CheckpointFormat f);  // "ckpt", "safetensors"

// One entry of a checkpoint file.
struct CheckpointTensor {
  std::string name;         // the tag: "conv1.weight", "moments.fc1.bias", "epoch_num"
  std::string stored_type;  // as written: "Float32", "BFloat16", "Int64", "str" (.ckpt),
                            // "F32", "BF16" (.safetensors)
  std::vector<int64_t> shape;
  // Converted to the runtime dtype that holds it exactly or as closely as it can: Float16 stays
  // Float16; Float32/Float64/BFloat16 become Float32; Int8/Int16/Int32/UInt8/UInt16 Int32;
  // Int64/UInt32/UInt64 Int64; Bool Bool. Undefined when `skipped` is set.
  Tensor value;
  std::string skipped;  // why there is no tensor: a string value, a MapParameter, a packed 4-bit
                        // type (qint4x2), a type the runtime does not know
};

// Reads every entry of a checkpoint (format detected from the content, not the extension).
// Throws RuntimeError with the file and the reason for a missing, empty, truncated, corrupt,
// encrypted or CRC-mismatching file, and names what a file is when it is not a checkpoint.
std::vector<CheckpointTensor> read_checkpoint(const std::filesystem::path& file,
                                              CheckpointFormat* format = nullptr);

// What Executor::load_checkpoint did.
struct CheckpointLoad {
  std::filesystem::path file;
  CheckpointFormat format = CheckpointFormat::Ckpt;
  std::vector<std::string> loaded;      // parameters set from the file (report order)
  std::vector<std::string> missing;     // parameters the file lacks: kept at their initializer
  std::vector<std::string> unexpected;  // entries that are no parameter of the Cell: ignored
                                        // (optimizer moments, append_dict values, other Cells)
  std::vector<std::string> notes;       // dtype conversions, skipped entries, CRC verified
  // "loaded 10 of 10 parameters from lenet.ckpt (ckpt); ignored 2 entries ..." (one line per
  // category; `max_names` names at most per list).
  [[nodiscard]] std::string summary(size_t max_names = 8) const;
};

// ---- Execution ----------------------------------------------------------------------------------
enum class Precision : uint8_t {
  Float32,  // plain float32 everywhere
  Target,   // fp16 storage between ops (every float output rounded to half after its node),
            // fp32 accumulation inside MatMul/Conv/reductions, as Ascend's Cube unit does
};

struct ExecOptions {
  uint64_t seed = 0;
  Precision precision = Precision::Float32;
  // Initializers by parameter name, overriding everything else.
  std::map<std::string, InitSpec> param_inits;
  // Keep every node's outputs after they are last used (a debugger inspects earlier locals; a
  // backward pass needs them). false frees values once their last consumer ran.
  bool keep_values = true;
  // Training semantics (Cell.set_train(True)): BatchNorm normalises with the batch's statistics
  // (its moving mean and variance are new outputs the trainer writes back, autodiff.h
  // state_updates), Dropout drops. false: inference (moving statistics, Dropout is identity).
  bool training = false;
  // Threads of oneDNN's convolutions and products and of the runtime's own loops (parallel.h,
  // the same bits at any count). 1 by default: the runtime mostly serves the debugger and the
  // language server's process on a user's machine beside the editor, and one thread gives the same
  // numbers on every machine (oneDNN's backward-weights reductions split by thread count).
  // 0: every hardware thread.
  int threads = 1;
  // Allocate the parameters without running their initializers: the caller loads what it has
  // (load_checkpoint, set_param) and then calls Executor::init_pending, which initialises the
  // rest exactly as the constructor would have (same seed, same values). `cellscope export
  // --checkpoint` uses it so the weights the checkpoint provides are not initialised first.
  // Running (run, step) with parameters still pending throws.
  bool defer_init = false;
};

// The library behind the convolutions and matrix products and the instruction set it picked for
// this CPU: "oneDNN 2.6.3 (avx512_core_amx)".
std::string kernel_library();

enum class HookAction : uint8_t { Continue, Pause, Abort };

// What a hook sees. `inputs` are the node's input tensors (for layer nodes, the activation
// inputs; weights are in `params`); `outputs` are empty in `before`.
struct NodeEvent {
  size_t index;  // into Graph::nodes
  const Node& node;
  std::span<const Tensor> inputs;
  std::span<const Tensor> outputs;
  std::span<const ParamState* const> params;
};

struct Hooks {
  std::function<HookAction(const NodeEvent&)> before;
  std::function<HookAction(const NodeEvent&)> after;
  // Polled before every node; when set (e.g. by a DAP `pause` from another thread) the run stops
  // as if `before` returned Pause, and the flag is cleared.
  std::atomic<bool>* interrupt = nullptr;
  // Numeric emulation (graphcore/drift.h): an Op node's input values as its kernel will read
  // them (replace a handle to change one; never write into a tensor, which other nodes share),
  // called after `before`; and its kernel's outputs before the executor casts them to the
  // graph's dtypes and, in Precision::Target, rounds them to fp16.
  std::function<void(const Node&, size_t index, std::vector<Tensor>& inputs)> rewrite_inputs;
  std::function<void(const Node&, size_t index, std::vector<Tensor>& outputs)> rewrite_outputs;
  // Another implementation of an Op node (int8 execution, graphcore/quant.h): called after
  // rewrite_inputs; when it returns true it has filled `outputs` and the kernel is not run.
  std::function<bool(const Node&, size_t index, const std::vector<Tensor>& inputs,
                     std::vector<Tensor>& outputs)>
      compute;
};

struct RunStatus {
  enum class Kind : uint8_t {
    Finished,  // every node ran; outputs() is valid
    Paused,    // by a hook: `node` is the node paused at (before: not yet run; after: just ran)
    Aborted,   // by a hook
    Error,     // a kernel failed: `message` names the node and its source line
  };
  Kind kind = Kind::Finished;
  size_t node = 0;
  bool after = false;  // Paused/Aborted from an `after` hook
  std::string message;
};

// Thrown by the Executor constructor and kernels; carries the node when there is one.
class RuntimeError : public std::runtime_error {
 public:
  explicit RuntimeError(const std::string& what, std::optional<size_t> node = std::nullopt)
      : std::runtime_error(what), node_(node) {}
  [[nodiscard]] std::optional<size_t> node() const { return node_; }

 private:
  std::optional<size_t> node_;
};

class Executor {
 public:
  // Binds the graph and initialises every parameter (CellReport::params) from opts.seed. The
  // report must be compiled, with fully known input shapes. Throws RuntimeError.
  Executor(const CellReport& report, ExecOptions opts = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  [[nodiscard]] const CellReport& report() const { return report_; }
  [[nodiscard]] const Graph& graph() const { return report_.graph; }
  [[nodiscard]] const ExecOptions& options() const { return opts_; }
  // The seed random operators (Dropout's mask, samplers) draw from from the next run on; a
  // trainer sets one per step. Parameters keep their values.
  void set_seed(uint64_t seed) { opts_.seed = seed; }

  // Graph inputs (NodeKind::Input nodes in order). Shapes and dtypes must match the graph's
  // known dims (the dtype is converted when it differs); throws RuntimeError otherwise.
  [[nodiscard]] size_t num_inputs() const;
  [[nodiscard]] TensorType input_type(size_t i) const;
  [[nodiscard]] std::string input_name(size_t i) const;
  void set_input(size_t i, Tensor t);
  // Input from a launch-configuration spec: "random", "random:SEED", "ones", "zeros", or a path
  // to a .npy file. Random inputs use `seed` unless the spec gives one.
  void set_input_spec(size_t i, std::string_view spec, uint64_t seed);

  // Parameters (every entry of CellReport::params, in order).
  [[nodiscard]] const std::vector<ParamState>& params() const { return params_; }
  [[nodiscard]] const ParamState* param(std::string_view name) const;
  void set_param(std::string_view name, Tensor value);  // shape must match; throws
  // Parameter `name`'s value to update in place (the trainer's optimizer step): copied first
  // when its storage is shared (an output, another executor), so the write changes nothing else.
  // Throws for an unknown name.
  Tensor& mutable_param(std::string_view name);
  // Loads `<dir>/<param name>.npy` for every parameter that has one; returns how many.
  size_t load_params_npy(const std::filesystem::path& dir);
  void save_params_npy(const std::filesystem::path& dir) const;
  // Loads a MindSpore checkpoint (see read_checkpoint) into the parameters by name, as
  // MindSpore's load_param_into_net(strict_load=False) does: an entry whose name is no parameter
  // is ignored and a parameter the file lacks keeps its initializer (both listed in the result);
  // float types convert among themselves (Float16 <-> Float32 <-> BFloat16 ...), integer types
  // among themselves. Nothing is changed, and RuntimeError lists every offending parameter, when
  // a shape or dtype does not match (both shapes / dtypes named) or the file cannot be read.
  // Loaded parameters get InitSource::Loaded and a note naming the file.
  CheckpointLoad load_checkpoint(const std::filesystem::path& file);
  // Runs the initializer of every parameter still pending (ExecOptions::defer_init); returns
  // how many. The values equal what the constructor gives without defer_init.
  size_t init_pending();

  // Runs from the current position until the end, a pause, an abort or an error. Call again to
  // resume after a pause. After Finished/Aborted/Error, call reset() to run again.
  RunStatus run(const Hooks& hooks = {});
  // Runs exactly one node (the hooks still apply). Returns Finished once past the last node.
  RunStatus step(const Hooks& hooks = {});
  // Back to the first node; computed values are dropped (inputs and parameters are kept).
  void reset();
  [[nodiscard]] size_t position() const { return pos_; }  // next node to run
  [[nodiscard]] bool finished() const { return pos_ >= report_.graph.nodes.size(); }

  // The tensor on an edge, or nullptr if not computed yet (or freed).
  [[nodiscard]] const Tensor* value(ValueRef ref) const;
  [[nodiscard]] const Tensor* value(size_t node, size_t output = 0) const {
    return value(ValueRef{static_cast<uint32_t>(node), static_cast<uint32_t>(output)});
  }
  // The graph outputs (after Finished).
  [[nodiscard]] std::vector<Tensor> outputs() const;
  // Node index by id ("layer1.0.conv1"), or nullopt.
  [[nodiscard]] std::optional<size_t> find_node(std::string_view id) const;
  // "lenet5.py:35" for messages.
  [[nodiscard]] std::string node_location(size_t node) const;

  // Per-node wall time of the last run (milliseconds), for profiling.
  [[nodiscard]] const std::vector<double>& node_times_ms() const { return node_ms_; }

  struct Impl;

 private:
  RunStatus run_one(const Hooks& hooks, bool* stop);
  void require_initialised() const;  // throws when a parameter is still pending

  CellReport report_;
  ExecOptions opts_;
  std::vector<ParamState> params_;
  std::vector<std::vector<Tensor>> values_;                  // per node, per output
  std::vector<std::vector<const ParamState*>> node_params_;  // per node
  std::vector<uint32_t> last_use_;                           // per node: last consumer index
  std::vector<double> node_ms_;
  size_t pos_ = 0;
  bool skip_before_ = false;  // resume after a `before` pause: do not call it again
  bool done_ = false;
};

}  // namespace graphcore::runtime
