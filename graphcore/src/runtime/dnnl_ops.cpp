// oneDNN primitives for the runtime (see dnnl_ops.h).
#include "runtime/dnnl_ops.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <new>
#include <oneapi/dnnl/dnnl.hpp>
#include <thread>
#include <unordered_map>

#include "graphcore/checked.h"
#include "runtime/internal.h"

// OpenMP's runtime API (libgomp: Debian's oneDNN threads with OpenMP), declared here because
// omp.h is on GCC's include path only (clang would need libomp-dev for the same two functions).
extern "C" {
int omp_get_max_threads();
void omp_set_num_threads(int n);
}

namespace graphcore::runtime::dnnl_ops {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using Dt = memory::data_type;

[[noreturn]] void fail(const std::string& msg) { throw RuntimeError(msg); }

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

// Grow-only 64-byte aligned buffers of the calling thread, one per role: the blocked copies of
// a primitive's operands and its scratchpad. Execution on a thread is sequential, so one buffer
// per role serves every primitive.
enum Role : uint8_t { kSrc, kWeights, kDst, kScratchpad, kRoles };

class Buffers {
 public:
  void* get(Role r, size_t bytes) {
    Slot& s = slots_[r];
    if (bytes > s.size) {
      s.ptr.reset();
      s.size = 0;
      const size_t rounded = (bytes + 63) / 64 * 64;
      void* p = std::aligned_alloc(64, rounded);
      if (p == nullptr) throw std::bad_alloc();
      s.ptr.reset(p);
      s.size = rounded;
    }
    return s.ptr.get();
  }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }  // NOLINT(cppcoreguidelines-no-malloc)
  };
  struct Slot {
    std::unique_ptr<void, Free> ptr;
    size_t size = 0;
  };
  std::array<Slot, kRoles> slots_;
};

Buffers& buffers() {
  thread_local Buffers b;
  return b;
}

// One operand as the caller holds it (plain row-major) and as the primitive wants it; a reorder
// between the two when they differ.
struct Operand {
  memory::desc user, inner;
  bool reorder = false;
  dnnl::reorder to_inner, from_inner;
};

enum class Dir : uint8_t { In, Out };

Operand make_operand(const memory::desc& user, const memory::desc& inner, Dir dir) {
  Operand o{user, inner, user != inner, {}, {}};
  if (o.reorder) {
    if (dir == Dir::In) {
      o.to_inner = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), user, engine(), inner));
    } else {
      o.from_inner = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), inner, engine(), user));
    }
  }
  return o;
}

// Memory for an input operand: the caller's data, or its reordered copy in buffer `role`.
memory bind_in(const Operand& o, const float* data, Role role) {
  // oneDNN never writes a source operand; its API takes non-const handles.
  memory user(o.user, engine(),
              const_cast<float*>(data));  // NOLINT(cppcoreguidelines-pro-type-const-cast)
  if (!o.reorder) return user;
  memory inner(o.inner, engine(), buffers().get(role, o.inner.get_size()));
  o.to_inner.execute(stream(), user, inner);
  return inner;
}

// Memory a primitive writes an output operand to: the caller's buffer, or a blocked buffer
// that finish_out() reorders into it.
memory bind_out(const Operand& o, float* data, Role role) {
  if (!o.reorder) return {o.user, engine(), data};
  return {o.inner, engine(), buffers().get(role, o.inner.get_size())};
}

void finish_out(const Operand& o, memory inner, float* data) {
  if (!o.reorder) return;
  memory user(o.user, engine(), data);
  o.from_inner.execute(stream(), inner, user);
}

struct Entry {
  dnnl::primitive prim;
  Operand a, b, out;  // conv: src, weights, dst (forward); each direction names its own
  memory::desc bias;  // zero desc when unused
  memory::desc scratchpad;
};

// The calling thread's primitives by shape. Bounded: a program of many shapes (a sweep in a
// long-lived debugger) starts over rather than growing without end.
class Cache {
 public:
  const Entry& get(const std::string& key, const std::function<Entry()>& make) {
    auto it = map_.find(key);
    if (it != map_.end()) return *it->second;
    if (map_.size() >= kMaxEntries) map_.clear();
    auto e = std::make_unique<Entry>(make());
    return *map_.emplace(key, std::move(e)).first->second;
  }
  [[nodiscard]] size_t size() const { return map_.size(); }

 private:
  static constexpr size_t kMaxEntries = 512;
  std::unordered_map<std::string, std::unique_ptr<Entry>> map_;
};

Cache& cache() {
  thread_local Cache c;
  return c;
}

memory::dims row_major_strides(const memory::dims& d) {
  memory::dims s(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;) s[i - 1] = s[i] * std::max<memory::dim>(d[i], 1);
  return s;
}

memory::desc plain(const memory::dims& d) { return {d, Dt::f32, row_major_strides(d)}; }

// ---- convolution --------------------------------------------------------------------------------
memory::dims weight_dims(const ConvGeometry& g) {
  if (g.groups == 1) return {g.out_channels, g.in_channels, g.kernel_h, g.kernel_w};
  return {g.groups, g.out_channels / g.groups, g.in_channels / g.groups, g.kernel_h, g.kernel_w};
}

struct ConvDims {
  memory::dims src, wei, dst, strides, dilates, pad_l, pad_r;
};

ConvDims conv_dims(const ConvGeometry& g) {
  g.validate();
  return {{g.batch, g.in_channels, g.in_h, g.in_w},
          weight_dims(g),
          {g.batch, g.out_channels, g.out_h(), g.out_w()},
          {g.stride[0], g.stride[1]},
          {g.dilation[0] - 1, g.dilation[1] - 1},  // oneDNN counts the gaps
          {g.pad_before[0], g.pad_before[1]},
          {g.pad_after[0], g.pad_after[1]}};
}

std::string conv_key(char kind, const ConvGeometry& g, bool bias) {
  std::string k(1, kind);
  for (int64_t v : {g.batch, g.in_channels, g.in_h, g.in_w, g.out_channels, g.kernel_h, g.kernel_w,
                    g.groups, g.stride[0], g.stride[1], g.dilation[0], g.dilation[1],
                    g.pad_before[0], g.pad_before[1], g.pad_after[0], g.pad_after[1],
                    static_cast<int64_t>(bias), static_cast<int64_t>(omp_get_max_threads())}) {
    k += ',';
    k += std::to_string(v);
  }
  return k;
}

// Layouts left to oneDNN: its fast kernels read blocked/channels-last data (nChw16c, nhwc)
// and the reorders to and from the runtime's NCHW cost less than its plain-layout (im2col + GEMM)
// kernels do (ResNet-50 batch 1, AVX-512: 115 ms against 200 ms per run with the reorders).
memory::desc any(const memory::dims& d) { return {d, Dt::f32, Tag::any}; }

dnnl::convolution_forward::primitive_desc forward_pd(const ConvDims& d, bool bias,
                                                     dnnl::prop_kind kind) {
  dnnl::convolution_forward::desc desc(kind, dnnl::algorithm::convolution_direct, any(d.src),
                                       any(d.wei), bias ? plain({d.dst[1]}) : memory::desc(),
                                       any(d.dst), d.strides, d.dilates, d.pad_l, d.pad_r);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return {desc, attr, engine()};
}

void check_tensor(const Tensor& t, const std::vector<int64_t>& shape, const char* what) {
  if (!t.is_float()) fail(std::string(what) + " must be float, got " + t.type_str());
  if (t.shape() != shape) {
    fail(std::string(what) + " has shape " + shape_str(t.shape()) + ", expected " +
         shape_str(shape));
  }
}

// Every element is written by the primitive (or the reorder after it): not zero-filled.
Tensor new_output(const std::vector<int64_t>& shape, const char* what) {
  (void)checked_buffer_elements(shape, sizeof(float), what);
  return Tensor::uninitialized(shape, DType::Float32);
}

// A weight operand bound for execution; `keep` holds a cached reordered copy alive meanwhile.
struct BoundWeights {
  memory mem;
  std::shared_ptr<const void> keep;
};

// The weight in the primitive's layout. With `cache`, the reordered copy is made once and kept
// with the weight's storage (Tensor::derived, under the primitive's key), so that inference
// stops paying the reorder on every run; it is dropped when the weight's elements are written
// (set_param gives a parameter new storage, and mutable access drops it) or freed.
BoundWeights bind_weights(const Operand& o, const Tensor& w, const std::string& key, bool cache) {
  if (!o.reorder || !cache) return {bind_in(o, w.data<float>(), kWeights), nullptr};
  std::shared_ptr<const void> copy = w.derived(key);
  if (!copy) {
    const size_t floats = (o.inner.get_size() + sizeof(float) - 1) / sizeof(float);
    auto holder = std::make_shared<Tensor>(
        Tensor::uninitialized({static_cast<int64_t>(floats)}, DType::Float32));
    memory user(o.user, engine(),
                const_cast<float*>(w.data<float>()));  // NOLINT: read only
    memory inner(o.inner, engine(), holder->data<float>());
    o.to_inner.execute(stream(), user, inner);
    stream().wait();
    copy = std::shared_ptr<const void>(holder, holder->data<float>());
    w.set_derived(key, copy);
  }
  // The primitive only reads its weights.
  return {memory(o.inner, engine(), const_cast<void*>(copy.get())),  // NOLINT: read only
          copy};
}

// A cache key: the tag, then each value, comma-separated.
std::string small_key_plain(char tag, std::initializer_list<int64_t> values) {
  std::string k(1, tag);
  for (int64_t v : values) {
    k += std::to_string(v);
    k += ',';
  }
  return k;
}

// A float pointer as oneDNN's (non-const) handle of a read-only operand.
void* handle_of(const float* p) { return const_cast<float*>(p); }  // NOLINT: read only

void* scratchpad(const Entry& e) {
  return e.scratchpad.get_size() == 0 ? nullptr
                                      : buffers().get(kScratchpad, e.scratchpad.get_size());
}

// Runs `f`, turning oneDNN's errors into RuntimeErrors that say which operation failed.
template <class F>
auto guarded(const char* what, F f) {
  try {
    return f();
  } catch (const dnnl::error& e) {
    throw RuntimeError(std::string(what) + ": oneDNN failed (" + e.what() + ")");
  }
}

}  // namespace

// ---- threads and facts
// ---------------------------------------------------------------------------
int resolve_threads(int n) {
  if (n > 0) return n;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

void set_threads(int n) {
  const int t = resolve_threads(n);
  if (omp_get_max_threads() != t) omp_set_num_threads(t);
}

std::string cpu_isa() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_mic:
      return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops:
      return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "isa#" + std::to_string(static_cast<int>(dnnl::get_effective_cpu_isa()));
  }
}

std::string version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

size_t cached_primitives() { return cache().size(); }

}  // namespace graphcore::runtime::dnnl_ops

namespace graphcore::runtime {
std::string kernel_library() {
  return "oneDNN " + dnnl_ops::version() + " (" + dnnl_ops::cpu_isa() + ")";
}
}  // namespace graphcore::runtime

namespace graphcore::runtime::dnnl_ops {

// ---- ConvGeometry
// --------------------------------------------------------------------------------
namespace {
int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pa,
                 const char* axis) {
  auto eff = checked_add<int64_t>(*checked_mul<int64_t>(k - 1, d), 1);  // k, d >= 1: no overflow
  auto padded = checked_add<int64_t>(in, pb);
  if (padded) padded = checked_add<int64_t>(*padded, pa);
  if (!eff || !padded)
    fail(std::string("convolution ") + axis + ": the padded size or the window overflows");
  if (*padded < *eff) {
    fail(std::string("convolution ") + axis + ": the window (" + std::to_string(*eff) +
         ") is larger than the padded input (" + std::to_string(*padded) + ")");
  }
  return (*padded - *eff) / s + 1;
}
}  // namespace

void ConvGeometry::validate() const {
  auto positive = [](int64_t v, const char* what) {
    if (v <= 0)
      fail(std::string("convolution: ") + what + " must be positive, got " + std::to_string(v));
  };
  positive(batch, "the batch");
  positive(in_channels, "the input channels");
  positive(in_h, "the input height");
  positive(in_w, "the input width");
  positive(out_channels, "the output channels");
  positive(kernel_h, "the kernel height");
  positive(kernel_w, "the kernel width");
  positive(groups, "group");
  for (size_t i = 0; i < 2; ++i) {
    positive(stride[i], "the stride");
    positive(dilation[i], "the dilation");
    if (pad_before[i] < 0 || pad_after[i] < 0) fail("convolution: a padding is negative");
  }
  if (in_channels % groups != 0 || out_channels % groups != 0) {
    fail("convolution: group=" + std::to_string(groups) + " does not divide the input (" +
         std::to_string(in_channels) + ") and output (" + std::to_string(out_channels) +
         ") channels");
  }
  (void)out_h();
  (void)out_w();
}

int64_t ConvGeometry::out_h() const {
  return out_size(in_h, kernel_h, stride[0], dilation[0], pad_before[0], pad_after[0], "height");
}
int64_t ConvGeometry::out_w() const {
  return out_size(in_w, kernel_w, stride[1], dilation[1], pad_before[1], pad_after[1], "width");
}
std::vector<int64_t> ConvGeometry::input_shape() const { return {batch, in_channels, in_h, in_w}; }
std::vector<int64_t> ConvGeometry::weight_shape() const {
  return {out_channels, in_channels / std::max<int64_t>(groups, 1), kernel_h, kernel_w};
}
std::vector<int64_t> ConvGeometry::output_shape() const {
  return {batch, out_channels, out_h(), out_w()};
}

// ---- convolution
// ---------------------------------------------------------------------------------
Tensor conv2d_forward(const ConvGeometry& g, const Tensor& x, const Tensor& w, const Tensor* bias,
                      bool cache_weights) {
  return guarded("Conv2D", [&] {
    const ConvDims d = conv_dims(g);
    check_tensor(x, g.input_shape(), "the convolution input");
    check_tensor(w, g.weight_shape(), "the convolution weight");
    if (bias) check_tensor(*bias, {g.out_channels}, "the convolution bias");
    Tensor y = new_output(g.output_shape(), "the convolution output");
    const std::string key = conv_key('f', g, bias != nullptr);
    const Entry& e = cache().get(key, [&] {
      auto pd = forward_pd(d, bias != nullptr, dnnl::prop_kind::forward_inference);
      Entry en;
      en.prim = dnnl::convolution_forward(pd);
      en.a = make_operand(plain(d.src), pd.src_desc(), Dir::In);
      en.b = make_operand(plain(d.wei), pd.weights_desc(), Dir::In);
      en.out = make_operand(plain(d.dst), pd.dst_desc(), Dir::Out);
      if (bias) en.bias = pd.bias_desc();
      en.scratchpad = pd.scratchpad_desc();
      return en;
    });
    memory src = bind_in(e.a, x.data<float>(), kSrc);
    const BoundWeights wei = bind_weights(e.b, w, key, cache_weights);
    memory dst = bind_out(e.out, y.data<float>(), kDst);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src},
        {DNNL_ARG_WEIGHTS, wei.mem},
        {DNNL_ARG_DST, dst},
        {DNNL_ARG_SCRATCHPAD, memory(e.scratchpad, engine(), scratchpad(e))}};
    if (bias) {
      args.emplace(DNNL_ARG_BIAS,
                   memory(e.bias, engine(),
                          const_cast<float*>(bias->data<float>())));  // NOLINT: read only
    }
    e.prim.execute(stream(), args);
    finish_out(e.out, dst, y.data<float>());
    stream().wait();
    return y;
  });
}

Tensor conv2d_backward_data(const ConvGeometry& g, const Tensor& dy, const Tensor& w) {
  return guarded("Conv2D backward (data)", [&] {
    const ConvDims d = conv_dims(g);
    check_tensor(dy, g.output_shape(), "the convolution output gradient");
    check_tensor(w, g.weight_shape(), "the convolution weight");
    Tensor dx = new_output(g.input_shape(), "the convolution input gradient");
    const Entry& e = cache().get(conv_key('d', g, false), [&] {
      auto hint = forward_pd(d, false, dnnl::prop_kind::forward_training);
      dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, any(d.src),
                                                 any(d.wei), any(d.dst), d.strides, d.dilates,
                                                 d.pad_l, d.pad_r);
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::convolution_backward_data::primitive_desc pd(desc, attr, engine(), hint);
      Entry en;
      en.prim = dnnl::convolution_backward_data(pd);
      en.a = make_operand(plain(d.dst), pd.diff_dst_desc(), Dir::In);
      en.b = make_operand(plain(d.wei), pd.weights_desc(), Dir::In);
      en.out = make_operand(plain(d.src), pd.diff_src_desc(), Dir::Out);
      en.scratchpad = pd.scratchpad_desc();
      return en;
    });
    memory ddst = bind_in(e.a, dy.data<float>(), kSrc);
    memory wei = bind_in(e.b, w.data<float>(), kWeights);
    memory dsrc = bind_out(e.out, dx.data<float>(), kDst);
    e.prim.execute(stream(),
                   {{DNNL_ARG_DIFF_DST, ddst},
                    {DNNL_ARG_WEIGHTS, wei},
                    {DNNL_ARG_DIFF_SRC, dsrc},
                    {DNNL_ARG_SCRATCHPAD, memory(e.scratchpad, engine(), scratchpad(e))}});
    finish_out(e.out, dsrc, dx.data<float>());
    stream().wait();
    return dx;
  });
}

Tensor conv2d_backward_weights(const ConvGeometry& g, const Tensor& x, const Tensor& dy,
                               Tensor* dbias) {
  return guarded("Conv2D backward (weights)", [&] {
    const ConvDims d = conv_dims(g);
    check_tensor(x, g.input_shape(), "the convolution input");
    check_tensor(dy, g.output_shape(), "the convolution output gradient");
    Tensor dw = new_output(g.weight_shape(), "the convolution weight gradient");
    Tensor db;
    if (dbias) db = new_output({g.out_channels}, "the convolution bias gradient");
    const Entry& e = cache().get(conv_key('w', g, dbias != nullptr), [&] {
      auto hint = forward_pd(d, dbias != nullptr, dnnl::prop_kind::forward_training);
      dnnl::convolution_backward_weights::desc desc(
          dnnl::algorithm::convolution_direct, any(d.src), any(d.wei),
          dbias ? plain({g.out_channels}) : memory::desc(), any(d.dst), d.strides, d.dilates,
          d.pad_l, d.pad_r);
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::convolution_backward_weights::primitive_desc pd(desc, attr, engine(), hint);
      Entry en;
      en.prim = dnnl::convolution_backward_weights(pd);
      en.a = make_operand(plain(d.src), pd.src_desc(), Dir::In);
      en.b = make_operand(plain(d.dst), pd.diff_dst_desc(), Dir::In);
      en.out = make_operand(plain(d.wei), pd.diff_weights_desc(), Dir::Out);
      if (dbias) en.bias = pd.diff_bias_desc();
      en.scratchpad = pd.scratchpad_desc();
      return en;
    });
    memory src = bind_in(e.a, x.data<float>(), kSrc);
    memory ddst = bind_in(e.b, dy.data<float>(), kWeights);
    memory dwei = bind_out(e.out, dw.data<float>(), kDst);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src},
        {DNNL_ARG_DIFF_DST, ddst},
        {DNNL_ARG_DIFF_WEIGHTS, dwei},
        {DNNL_ARG_SCRATCHPAD, memory(e.scratchpad, engine(), scratchpad(e))}};
    if (dbias) args.emplace(DNNL_ARG_DIFF_BIAS, memory(e.bias, engine(), db.data<float>()));
    e.prim.execute(stream(), args);
    finish_out(e.out, dwei, dw.data<float>());
    stream().wait();
    if (dbias) *dbias = std::move(db);
    return dw;
  });
}

// ---- matmul
// --------------------------------------------------------------------------------------
namespace {

// Both operands as rank-R matrices (numpy: a vector is a 1-row / 1-column matrix, batch dims
// padded with leading 1s), with the transposes applied to dims and strides.
struct MatmulDims {
  memory::dims a, a_strides, b, b_strides, y;
  std::vector<int64_t> out_shape;  // numpy's (vector dims dropped)
};

MatmulDims matmul_dims(const std::vector<int64_t>& sa0, const std::vector<int64_t>& sb0, bool ta,
                       bool tb) {
  if (sa0.empty() || sb0.empty()) fail("MatMul needs tensors of rank >= 1");
  const bool a_vec = sa0.size() == 1, b_vec = sb0.size() == 1;
  std::vector<int64_t> sa = sa0, sb = sb0;
  if (a_vec) sa.insert(sa.begin(), 1);
  if (b_vec) sb.push_back(1);
  const size_t rank = std::max(sa.size(), sb.size());
  if (rank > DNNL_MAX_NDIMS) {
    fail("MatMul: rank " + std::to_string(rank) + " is beyond oneDNN's " +
         std::to_string(DNNL_MAX_NDIMS));
  }
  auto pad = [&](std::vector<int64_t> s) {
    s.insert(s.begin(), rank - s.size(), 1);
    return s;
  };
  sa = pad(sa);
  sb = pad(sb);
  MatmulDims r;
  r.a = sa;
  r.b = sb;
  r.a_strides = row_major_strides(r.a);
  r.b_strides = row_major_strides(r.b);
  if (ta && !a_vec) {
    std::swap(r.a[rank - 1], r.a[rank - 2]);
    std::swap(r.a_strides[rank - 1], r.a_strides[rank - 2]);
  }
  if (tb && !b_vec) {
    std::swap(r.b[rank - 1], r.b[rank - 2]);
    std::swap(r.b_strides[rank - 1], r.b_strides[rank - 2]);
  }
  const int64_t m = r.a[rank - 2], k = r.a[rank - 1], kb = r.b[rank - 2], n = r.b[rank - 1];
  auto what = [&] {
    return shape_str(sa0) + " @ " + shape_str(sb0) + (ta || tb ? " (with transposes)" : "");
  };
  if (k != kb) fail("MatMul: inner dimensions differ: " + what());
  r.y.resize(rank);
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (r.a[i] != r.b[i] && r.a[i] != 1 && r.b[i] != 1)
      fail("MatMul: batch dimensions do not broadcast: " + what());
    r.y[i] = r.a[i] == 1 ? r.b[i] : r.a[i];
  }
  r.y[rank - 2] = m;
  r.y[rank - 1] = n;
  // numpy's result: the broadcast batch dims, then m and n unless that operand is a vector.
  r.out_shape.assign(r.y.begin(), r.y.end() - 2);
  if (!a_vec) r.out_shape.push_back(m);
  if (!b_vec) r.out_shape.push_back(n);
  return r;
}

void append_dims(std::string& k, const memory::dims& d) {
  for (auto v : d) {
    k += std::to_string(v);
    k += ',';
  }
  k += '|';
}

}  // namespace

std::vector<int64_t> matmul_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                  bool transpose_a, bool transpose_b) {
  return matmul_dims(a, b, transpose_a, transpose_b).out_shape;
}

Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b,
              const Tensor* bias) {
  return guarded("MatMul", [&] {
    if (!a.is_float() || !b.is_float())
      fail("MatMul operands must be float, got " + a.type_str() + " and " + b.type_str());
    const MatmulDims d = matmul_dims(a.shape(), b.shape(), transpose_a, transpose_b);
    const size_t rank = d.y.size();
    const int64_t n = d.y[rank - 1];
    if (bias && bias->numel() != n)
      fail("MatMul bias has " + bias->type_str() + ", expected (" + std::to_string(n) + ",)");
    Tensor y = new_output(d.out_shape, "the MatMul output");
    if (y.numel() == 0) return y;
    const int64_t k = d.a[rank - 1];
    if (k == 0) {  // an empty sum: zeros (plus the bias)
      std::fill_n(y.data<float>(), y.numel(), 0.0f);
      if (bias) {
        for (int64_t i = 0; i < y.numel(); ++i) y.data<float>()[i] = bias->data<float>()[i % n];
      }
      return y;
    }
    std::string key = "m";
    append_dims(key, d.a);
    append_dims(key, d.a_strides);
    append_dims(key, d.b);
    append_dims(key, d.b_strides);
    key += bias ? 'b' : '-';
    // A plain row-major second operand is reordered into oneDNN's layout before the product:
    // the kernels read it slowly when it is wide (BERT-base's FFN backward, (128, 768) @
    // (768, 3072): 6.6 ms in place, 4.0 ms reorder + product, at one AVX-512 thread).
    // Transposed (K-contiguous) ones, as Dense's weight, are read well as they are. (Keeping
    // Dense's reordered weight for inference, as the convolutions do, saved ~6 % of the product
    // time for +330 MiB on BERT-base: not done.)
    const bool b_any = rank == 2 && !transpose_b && n >= 64 && k >= 64;
    key += b_any ? 'A' : 'p';
    key += std::to_string(omp_get_max_threads());
    memory::dims bias_dims(rank, 1);
    bias_dims[rank - 1] = n;
    const Entry& e = cache().get(key, [&] {
      memory::desc amd(d.a, Dt::f32, d.a_strides), bmd(d.b, Dt::f32, d.b_strides);
      dnnl::matmul::desc desc(amd, b_any ? any(d.b) : bmd, bias ? plain(bias_dims) : memory::desc(),
                              plain(d.y));
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::matmul::primitive_desc pd(desc, attr, engine());
      Entry en;
      en.prim = dnnl::matmul(pd);
      en.a = make_operand(amd, pd.src_desc(), Dir::In);
      en.b = make_operand(bmd, pd.weights_desc(), Dir::In);
      en.out = make_operand(plain(d.y), pd.dst_desc(), Dir::Out);
      if (bias) en.bias = pd.bias_desc();
      en.scratchpad = pd.scratchpad_desc();
      return en;
    });
    memory src = bind_in(e.a, a.data<float>(), kSrc);
    memory wei = bind_in(e.b, b.data<float>(), kWeights);
    memory dst = bind_out(e.out, y.data<float>(), kDst);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src},
        {DNNL_ARG_WEIGHTS, wei},
        {DNNL_ARG_DST, dst},
        {DNNL_ARG_SCRATCHPAD, memory(e.scratchpad, engine(), scratchpad(e))}};
    if (bias) {
      args.emplace(DNNL_ARG_BIAS,
                   memory(e.bias, engine(),
                          const_cast<float*>(bias->data<float>())));  // NOLINT: read only
    }
    e.prim.execute(stream(), args);
    finish_out(e.out, dst, y.data<float>());
    stream().wait();
    return y;
  });
}

// ---- dense (inner product) backward
// ----------------------------------------------------------------------
namespace {

// (m, out, in) of a dense backward call, checked: x or dx (m, in), W (out, in), dy (m, out).
struct DenseDims {
  int64_t m, out, in;
};

void check_matrix(const Tensor& t, const char* what) {
  if (!t.is_float()) fail(std::string(what) + " must be float, got " + t.type_str());
  if (t.rank() != 2) fail(std::string(what) + " must be 2-D, got " + t.type_str());
}

// The forward primitive descriptor oneDNN's backward ones are built from (a hint: which
// implementation the forward would use). Plain layouts everywhere: nc for x and dy, oi for W.
dnnl::inner_product_forward::primitive_desc ip_forward_hint(const DenseDims& d, bool bias) {
  dnnl::inner_product_forward::desc desc(
      dnnl::prop_kind::forward_training, memory::desc({d.m, d.in}, Dt::f32, Tag::nc),
      memory::desc({d.out, d.in}, Dt::f32, Tag::oi),
      bias ? memory::desc({d.out}, Dt::f32, Tag::x) : memory::desc(),
      memory::desc({d.m, d.out}, Dt::f32, Tag::nc));
  return {desc, engine()};
}

std::string dense_key(char kind, const DenseDims& d, bool bias) {
  return small_key_plain(kind, {d.m, d.out, d.in, static_cast<int64_t>(bias),
                                static_cast<int64_t>(omp_get_max_threads())});
}

}  // namespace

Tensor dense_backward_data(const Tensor& dy, const Tensor& w) {
  return guarded("Dense backward (data)", [&] {
    check_matrix(dy, "the Dense output gradient");
    check_matrix(w, "the Dense weight");
    const DenseDims d{dy.shape()[0], w.shape()[0], w.shape()[1]};
    if (dy.shape()[1] != d.out) {
      fail("the Dense output gradient " + dy.type_str() + " does not match the weight " +
           w.type_str());
    }
    Tensor dx = new_output({d.m, d.in}, "the Dense input gradient");
    if (dx.numel() == 0) return dx;
    if (d.out == 0) {
      std::fill_n(dx.data<float>(), dx.numel(), 0.0f);
      return dx;
    }
    const Entry& e = cache().get(dense_key('D', d, false), [&] {
      auto hint = ip_forward_hint(d, false);
      dnnl::inner_product_backward_data::desc desc(memory::desc({d.m, d.in}, Dt::f32, Tag::nc),
                                                   memory::desc({d.out, d.in}, Dt::f32, Tag::oi),
                                                   memory::desc({d.m, d.out}, Dt::f32, Tag::nc));
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::inner_product_backward_data::primitive_desc pd(desc, attr, engine(), hint);
      Entry en;
      en.prim = dnnl::inner_product_backward_data(pd);
      en.a = make_operand(pd.diff_dst_desc(), pd.diff_dst_desc(), Dir::In);
      en.b = make_operand(pd.weights_desc(), pd.weights_desc(), Dir::In);
      en.out = make_operand(pd.diff_src_desc(), pd.diff_src_desc(), Dir::Out);
      en.scratchpad = pd.scratchpad_desc();
      return en;
    });
    e.prim.execute(stream(),
                   {{DNNL_ARG_DIFF_DST, memory(e.a.user, engine(), handle_of(dy.data<float>()))},
                    {DNNL_ARG_WEIGHTS, memory(e.b.user, engine(), handle_of(w.data<float>()))},
                    {DNNL_ARG_DIFF_SRC, memory(e.out.user, engine(), dx.data<float>())},
                    {DNNL_ARG_SCRATCHPAD, memory(e.scratchpad, engine(), scratchpad(e))}});
    stream().wait();
    return dx;
  });
}

Tensor dense_backward_weights(const Tensor& x, const Tensor& dy, Tensor* dbias) {
  return guarded("Dense backward (weights)", [&] {
    check_matrix(x, "the Dense input");
    check_matrix(dy, "the Dense output gradient");
    const DenseDims d{x.shape()[0], dy.shape()[1], x.shape()[1]};
    if (dy.shape()[0] != d.m) {
      fail("the Dense output gradient " + dy.type_str() + " does not match the input " +
           x.type_str());
    }
    Tensor dw = new_output({d.out, d.in}, "the Dense weight gradient");
    Tensor db;
    if (dbias) db = new_output({d.out}, "the Dense bias gradient");
    if (d.m == 0 || dw.numel() == 0) {  // an empty sum: zeros
      std::fill_n(dw.data<float>(), dw.numel(), 0.0f);
      if (dbias) {
        std::fill_n(db.data<float>(), db.numel(), 0.0f);
        *dbias = std::move(db);
      }
      return dw;
    }
    const bool bias = dbias != nullptr;
    const Entry& e = cache().get(dense_key('W', d, bias), [&] {
      auto hint = ip_forward_hint(d, bias);
      dnnl::inner_product_backward_weights::desc desc(
          memory::desc({d.m, d.in}, Dt::f32, Tag::nc),
          memory::desc({d.out, d.in}, Dt::f32, Tag::oi),
          bias ? memory::desc({d.out}, Dt::f32, Tag::x) : memory::desc(),
          memory::desc({d.m, d.out}, Dt::f32, Tag::nc));
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::inner_product_backward_weights::primitive_desc pd(desc, attr, engine(), hint);
      Entry en;
      en.prim = dnnl::inner_product_backward_weights(pd);
      en.a = make_operand(pd.src_desc(), pd.src_desc(), Dir::In);
      en.b = make_operand(pd.diff_dst_desc(), pd.diff_dst_desc(), Dir::In);
      en.out = make_operand(pd.diff_weights_desc(), pd.diff_weights_desc(), Dir::Out);
      if (bias) en.bias = pd.diff_bias_desc();
      en.scratchpad = pd.scratchpad_desc();
      return en;
    });
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, memory(e.a.user, engine(), handle_of(x.data<float>()))},
        {DNNL_ARG_DIFF_DST, memory(e.b.user, engine(), handle_of(dy.data<float>()))},
        {DNNL_ARG_DIFF_WEIGHTS, memory(e.out.user, engine(), dw.data<float>())},
        {DNNL_ARG_SCRATCHPAD, memory(e.scratchpad, engine(), scratchpad(e))}};
    if (bias) args.emplace(DNNL_ARG_DIFF_BIAS, memory(e.bias, engine(), db.data<float>()));
    e.prim.execute(stream(), args);
    stream().wait();
    if (dbias) *dbias = std::move(db);
    return dw;
  });
}

}  // namespace graphcore::runtime::dnnl_ops

// ---- eltwise and softmax
// -------------------------------------------------------------------------
namespace graphcore::runtime::dnnl_ops {

namespace {

dnnl::algorithm eltwise_alg(Eltwise f) {
  switch (f) {
    case Eltwise::GeluErf:
      return dnnl::algorithm::eltwise_gelu_erf;
    case Eltwise::GeluTanh:
      return dnnl::algorithm::eltwise_gelu_tanh;
    case Eltwise::Exp:
      return dnnl::algorithm::eltwise_exp;
  }
  return dnnl::algorithm::eltwise_exp;
}

// A cache key: the tag, then each value and the thread count, comma-separated.
std::string small_key(char tag, std::initializer_list<int64_t> values) {
  std::string k(1, tag);
  for (int64_t v : values) {
    k += std::to_string(v);
    k += ',';
  }
  k += std::to_string(omp_get_max_threads());
  return k;
}

// A float pointer as oneDNN's (non-const) handle of a read-only source.
void* handle(const float* p) { return const_cast<float*>(p); }  // NOLINT: read only

}  // namespace

void eltwise(Eltwise f, const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  guarded("eltwise", [&] {
    const memory::desc md = plain({n});
    const std::string key = small_key('e', {static_cast<int64_t>(f), n});
    const Entry& e = cache().get(key, [&] {
      dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_inference, eltwise_alg(f), md);
      Entry en;
      en.prim = dnnl::eltwise_forward(dnnl::eltwise_forward::primitive_desc(desc, engine()));
      return en;
    });
    e.prim.execute(stream(), {{DNNL_ARG_SRC, memory(md, engine(), handle(x))},
                              {DNNL_ARG_DST, memory(md, engine(), y)}});
    stream().wait();
  });
}

void eltwise_backward(Eltwise f, const float* x, const float* dy, float* dx, int64_t n) {
  if (n <= 0) return;
  guarded("eltwise backward", [&] {
    const memory::desc md = plain({n});
    const std::string key = small_key('E', {static_cast<int64_t>(f), n});
    const Entry& e = cache().get(key, [&] {
      dnnl::eltwise_forward::primitive_desc hint(
          dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, eltwise_alg(f), md),
          engine());
      dnnl::eltwise_backward::desc desc(eltwise_alg(f), md, md);
      Entry en;
      en.prim =
          dnnl::eltwise_backward(dnnl::eltwise_backward::primitive_desc(desc, engine(), hint));
      return en;
    });
    e.prim.execute(stream(), {{DNNL_ARG_SRC, memory(md, engine(), handle(x))},
                              {DNNL_ARG_DIFF_DST, memory(md, engine(), handle(dy))},
                              {DNNL_ARG_DIFF_SRC, memory(md, engine(), dx)}});
    stream().wait();
  });
}

void softmax(const float* x, float* y, int64_t outer, int64_t len, int64_t inner, bool log) {
  if (outer <= 0 || len <= 0 || inner <= 0) return;
  guarded(log ? "LogSoftmax" : "Softmax", [&] {
    const memory::desc md = plain({outer, len, inner});
    const std::string key = small_key(log ? 'L' : 'S', {outer, len, inner});
    const Entry& e = cache().get(key, [&] {
      Entry en;
      if (log) {
        dnnl::logsoftmax_forward::desc desc(dnnl::prop_kind::forward_inference, md, 1);
        en.prim =
            dnnl::logsoftmax_forward(dnnl::logsoftmax_forward::primitive_desc(desc, engine()));
      } else {
        dnnl::softmax_forward::desc desc(dnnl::prop_kind::forward_inference, md, 1);
        en.prim = dnnl::softmax_forward(dnnl::softmax_forward::primitive_desc(desc, engine()));
      }
      return en;
    });
    e.prim.execute(stream(), {{DNNL_ARG_SRC, memory(md, engine(), handle(x))},
                              {DNNL_ARG_DST, memory(md, engine(), y)}});
    stream().wait();
  });
}

}  // namespace graphcore::runtime::dnnl_ops
