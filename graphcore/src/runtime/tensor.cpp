// Tensor storage, binary16 rounding, statistics and .npy files.
#include <unistd.h>

#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <new>
#include <sstream>
#include <unordered_map>

#include "graphcore/checked.h"
#include "graphcore/runtime.h"
#include "runtime/internal.h"

namespace graphcore::runtime {

// A tensor's bytes and what was derived from them (runtime.h: Tensor::derived).
struct Tensor::Storage {
  Storage(std::byte* b, size_t c) : bytes(b), capacity(c) {}
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  Storage(Storage&&) = delete;
  Storage& operator=(Storage&&) = delete;

  void drop_derived() {
    std::lock_guard<std::mutex> lock(mu);
    derived.reset();
    derived_key.clear();
    has_derived.store(false, std::memory_order_release);
  }

  std::byte* bytes;
  size_t capacity;  // bytes allocated (the pool's size class)
  std::atomic<bool> has_derived{false};
  std::mutex mu;  // guards derived_key, derived
  std::string derived_key;
  std::shared_ptr<const void> derived;
};

namespace {

std::atomic<size_t> g_max_tensor_bytes{0};  // 0: not set, default_max_tensor_bytes()

size_t default_max_tensor_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_size > 0) {
    if (auto b = checked_mul(static_cast<size_t>(pages), static_cast<size_t>(page_size))) return *b;
  }
  return size_t{16} << 30;
}

void free_block(std::byte* p) { ::operator delete[](p, std::align_val_t(64)); }

// Blocks of at least kPoolMin bytes are recycled, their sizes rounded up to kPoolGrain so that
// tensors of nearly the same size share a class.
constexpr size_t kPoolMin = size_t{64} << 10;
constexpr size_t kPoolGrain = 4096;

// Freed blocks by size (tensor_pool_limit() in runtime.h). Process-wide and locked: a Tensor may
// be freed on any thread.
class Pool {
 public:
  std::byte* take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(bytes);
    if (it == free_.end() || it->second.empty()) return nullptr;
    std::byte* p = it->second.back();
    it->second.pop_back();
    held_ -= bytes;
    return p;
  }
  void give(std::byte* p, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (bytes <= limit_ && held_ <= limit_ - bytes) {
        free_[bytes].push_back(p);
        held_ += bytes;
        return;
      }
    }
    free_block(p);
  }
  void set_limit(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    limit_ = bytes;
    if (held_ > limit_) release_locked();
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    release_locked();
  }
  size_t limit() {
    std::lock_guard<std::mutex> lock(mu_);
    return limit_;
  }
  size_t held() {
    std::lock_guard<std::mutex> lock(mu_);
    return held_;
  }

 private:
  void release_locked() {
    for (auto& [size, blocks] : free_)
      for (std::byte* p : blocks) free_block(p);
    free_.clear();
    held_ = 0;
  }
  std::mutex mu_;
  std::unordered_map<size_t, std::vector<std::byte*>> free_;
  size_t held_ = 0;
  size_t limit_ = size_t{1} << 30;
};

// Never destroyed: a Tensor freed during static destruction still returns its block.
Pool& pool() {
  static Pool* p = new Pool;  // NOLINT(cppcoreguidelines-owning-memory)
  return *p;
}

// `what`: the tensor's type ("(2, 3) f32"), for the messages.
std::shared_ptr<Tensor::Storage> allocate(size_t bytes, const std::string& what, bool zero) {
  check_tensor_bytes(bytes, what);
  // 64-byte aligned for vector loads.
  const size_t n = std::max<size_t>(bytes, 1);
  size_t capacity = n;
  if (n >= kPoolMin) {
    // n <= max_tensor_bytes() <= the machine's memory: rounding up cannot overflow.
    capacity = (n + kPoolGrain - 1) / kPoolGrain * kPoolGrain;
  }
  std::byte* p = capacity >= kPoolMin ? pool().take(capacity) : nullptr;
  if (p == nullptr) {
    try {
      p = static_cast<std::byte*>(::operator new[](capacity, std::align_val_t(64)));
    } catch (const std::bad_alloc&) {
      throw RuntimeError("out of memory: cannot allocate " + byte_size_str(bytes) + " for tensor " +
                         what);
    }
  }
  if (zero) std::memset(p, 0, n);
  try {
    return std::make_shared<Tensor::Storage>(p, capacity);
  } catch (...) {
    free_block(p);
    throw;
  }
}

int64_t product(const std::vector<int64_t>& s) {
  for (int64_t d : s)
    if (d < 0) throw RuntimeError("negative dimension in tensor shape " + shape_str(s));
  auto n = checked_numel(s);
  if (!n)
    throw RuntimeError("tensor shape " + shape_str(s) +
                       " has more elements than fit in int64 (2**63 - 1)");
  return *n;
}

}  // namespace

std::string byte_size_str(size_t bytes) {
  static constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  double v = static_cast<double>(bytes);
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(kUnits)) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[u]);
  return buf;
}

size_t max_tensor_bytes() {
  size_t v = g_max_tensor_bytes.load(std::memory_order_relaxed);
  return v ? v : default_max_tensor_bytes();
}

void set_max_tensor_bytes(size_t bytes) { g_max_tensor_bytes.store(bytes); }

void check_tensor_bytes(size_t bytes, const std::string& what) {
  const size_t limit = max_tensor_bytes();
  if (bytes > limit)
    throw RuntimeError("tensor " + what + " needs " + byte_size_str(bytes) +
                       ", more than the runtime's limit of " + byte_size_str(limit) +
                       " for one tensor");
}

size_t checked_buffer_elements(std::span<const int64_t> dims, size_t element_size,
                               const std::string& what) {
  auto n = checked_numel(dims);
  auto bytes = n ? checked_bytes(*n, element_size) : std::nullopt;
  if (!bytes) throw RuntimeError("the size of " + what + " overflows");
  check_tensor_bytes(*bytes, what);
  return static_cast<size_t>(*n);
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ", ";
    r += std::to_string(s[i]);
  }
  if (s.size() == 1) r += ",";
  return r + ")";
}

bool Tensor::supported(DType d) {
  return d == DType::Float32 || d == DType::Float16 || d == DType::Int32 || d == DType::Int64 ||
         d == DType::Bool;
}

Tensor::Tensor(std::vector<int64_t> shape, DType dtype) : shape_(std::move(shape)), dtype_(dtype) {
  if (!supported(dtype))
    throw RuntimeError("the runtime does not support dtype " + std::string(dtype_name(dtype)));
  numel_ = product(shape_);
  auto bytes = checked_bytes(numel_, element_size());
  if (!bytes)
    throw RuntimeError("tensor " + type_str() + " has more bytes than fit in the address space");
  storage_ = allocate(*bytes, type_str(), true);
}

Tensor Tensor::uninitialized(std::vector<int64_t> shape, DType dtype) {
  if (!supported(dtype))
    throw RuntimeError("the runtime does not support dtype " + std::string(dtype_name(dtype)));
  Tensor t;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.numel_ = product(t.shape_);
  auto bytes = checked_bytes(t.numel_, t.element_size());
  if (!bytes)
    throw RuntimeError("tensor " + t.type_str() + " has more bytes than fit in the address space");
  t.storage_ = allocate(*bytes, t.type_str(), false);
  return t;
}

Tensor::Storage::~Storage() {
  if (capacity >= kPoolMin) {
    pool().give(bytes, capacity);
  } else {
    free_block(bytes);
  }
}

size_t tensor_pool_limit() { return pool().limit(); }
void set_tensor_pool_limit(size_t bytes) { pool().set_limit(bytes); }
size_t tensor_pool_bytes() { return pool().held(); }
void release_tensor_pool() { pool().release(); }

std::byte* Tensor::bytes() const { return storage_ ? storage_->bytes : nullptr; }

std::shared_ptr<const void> Tensor::derived(std::string_view key) const {
  if (!storage_ || !storage_->has_derived.load(std::memory_order_acquire)) return nullptr;
  std::lock_guard<std::mutex> lock(storage_->mu);
  return storage_->derived_key == key ? storage_->derived : nullptr;
}

void Tensor::set_derived(std::string key, std::shared_ptr<const void> value) const {
  if (!storage_) return;
  std::lock_guard<std::mutex> lock(storage_->mu);
  storage_->derived_key = std::move(key);
  storage_->derived = std::move(value);
  storage_->has_derived.store(storage_->derived != nullptr, std::memory_order_release);
}

size_t Tensor::element_size() const {
  switch (dtype_) {
    case DType::Int64:
      return 8;
    case DType::Bool:
      return 1;
    default:
      return 4;
  }
}

int64_t Tensor::dim(int64_t axis) const {
  auto a = normalize_axis(axis, shape_.size());
  if (!a) throw RuntimeError("axis " + std::to_string(axis) + " out of range for " + type_str());
  return shape_[*a];
}

std::string Tensor::type_str() const {
  return shape_str(shape_) + " " + std::string(dtype_short_name(dtype_));
}

template <class T>
static bool storage_is(DType d) {
  if constexpr (std::is_same_v<T, float>) return d == DType::Float32 || d == DType::Float16;
  if constexpr (std::is_same_v<T, int32_t>) return d == DType::Int32;
  if constexpr (std::is_same_v<T, int64_t>) return d == DType::Int64;
  if constexpr (std::is_same_v<T, uint8_t>) return d == DType::Bool;
  return false;
}

template <class T>
T* Tensor::data() {
  if (!storage_is<T>(dtype_)) throw std::logic_error("Tensor::data: wrong storage type");
  // Mutable access: whatever was derived from the elements may no longer hold.
  if (storage_ && storage_->has_derived.load(std::memory_order_acquire)) storage_->drop_derived();
  return reinterpret_cast<T*>(bytes());
}
template <class T>
const T* Tensor::data() const {
  if (!storage_is<T>(dtype_)) throw std::logic_error("Tensor::data: wrong storage type");
  return reinterpret_cast<const T*>(bytes());
}
template float* Tensor::data<float>();
template const float* Tensor::data<float>() const;
template int32_t* Tensor::data<int32_t>();
template const int32_t* Tensor::data<int32_t>() const;
template int64_t* Tensor::data<int64_t>();
template const int64_t* Tensor::data<int64_t>() const;
template uint8_t* Tensor::data<uint8_t>();
template const uint8_t* Tensor::data<uint8_t>() const;

double Tensor::at(int64_t i) const {
  switch (dtype_) {
    case DType::Float32:
    case DType::Float16:
      return data<float>()[i];
    case DType::Int32:
      return data<int32_t>()[i];
    case DType::Int64:
      return static_cast<double>(data<int64_t>()[i]);
    case DType::Bool:
      return data<uint8_t>()[i] ? 1.0 : 0.0;
    default:
      return 0;
  }
}

void Tensor::set(int64_t i, double v) {
  switch (dtype_) {
    case DType::Float32:
      data<float>()[i] = static_cast<float>(v);
      break;
    case DType::Float16:
      data<float>()[i] = round_to_half(static_cast<float>(v));
      break;
    case DType::Int32:
      data<int32_t>()[i] = static_cast<int32_t>(v);
      break;
    case DType::Int64:
      data<int64_t>()[i] = static_cast<int64_t>(v);
      break;
    case DType::Bool:
      data<uint8_t>()[i] = v != 0 ? 1 : 0;
      break;
    default:
      break;
  }
}

Tensor Tensor::zeros(std::vector<int64_t> shape, DType dtype) {
  return Tensor(std::move(shape), dtype);
}
Tensor Tensor::ones(std::vector<int64_t> shape, DType dtype) {
  return full(std::move(shape), 1.0, dtype);
}
Tensor Tensor::full(std::vector<int64_t> shape, double value, DType dtype) {
  Tensor t(std::move(shape), dtype);
  if (t.is_float()) {
    float v = dtype == DType::Float16 ? round_to_half(static_cast<float>(value))
                                      : static_cast<float>(value);
    std::fill_n(t.data<float>(), t.numel(), v);
  } else {
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, value);
  }
  return t;
}

Tensor Tensor::random(std::vector<int64_t> shape, DType dtype, uint64_t seed) {
  Tensor t(std::move(shape), dtype);
  Rng rng(seed);
  if (t.is_float()) {
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(rng.normal());
    if (dtype == DType::Float16) round_to_half(t);
  } else if (dtype == DType::Bool) {
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, rng.uniform() < 0.5 ? 0 : 1);
  } else {
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, std::floor(rng.uniform() * 10));
  }
  return t;
}

Tensor Tensor::from_floats(std::vector<int64_t> shape, const std::vector<float>& values) {
  Tensor t(std::move(shape), DType::Float32);
  if (static_cast<int64_t>(values.size()) != t.numel())
    throw RuntimeError("from_floats: " + std::to_string(values.size()) + " values for shape " +
                       shape_str(t.shape()));
  std::copy(values.begin(), values.end(), t.data<float>());
  return t;
}

Tensor Tensor::from_ints(std::vector<int64_t> shape, const std::vector<int64_t>& values,
                         DType dtype) {
  Tensor t(std::move(shape), dtype);
  if (static_cast<int64_t>(values.size()) != t.numel())
    throw RuntimeError("from_ints: " + std::to_string(values.size()) + " values for shape " +
                       shape_str(t.shape()));
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(values[i]));
  return t;
}

Tensor Tensor::reshape(std::vector<int64_t> shape) const {
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && infer < 0) {
      infer = static_cast<int>(i);
    } else if (shape[i] < 0) {
      throw RuntimeError("cannot reshape " + type_str() + " to " + shape_str(shape) +
                         ": negative dimension");
    } else if (auto k = checked_mul(known, shape[i])) {
      known = *k;
    } else {
      throw RuntimeError("cannot reshape " + type_str() + " to " + shape_str(shape) +
                         ": its element count overflows int64");
    }
  }
  if (infer >= 0 && known > 0) shape[infer] = numel_ / known;
  if (product(shape) != numel_)
    throw RuntimeError("cannot reshape " + type_str() + " to " + shape_str(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = uninitialized(shape_, dtype_);
  std::memcpy(t.bytes(), bytes(), numel_ * element_size());
  return t;
}

Tensor Tensor::cast(DType to) const {
  if (to == dtype_) return *this;
  Tensor t(shape_, to);
  if (is_float() && t.is_float()) {
    std::memcpy(t.data<float>(), data<float>(), numel_ * sizeof(float));
    if (to == DType::Float16) round_to_half(t);
    return t;
  }
  if (is_float() && to == DType::Int32) {
    const float* s = data<float>();
    int32_t* d = t.data<int32_t>();
    for (int64_t i = 0; i < numel_; ++i)
      d[i] = std::isfinite(s[i]) ? static_cast<int32_t>(s[i]) : 0;
    return t;
  }
  for (int64_t i = 0; i < numel_; ++i) {
    double v = at(i);
    if (!t.is_float() && !std::isfinite(v)) v = 0;
    t.set(i, v);
  }
  return t;
}

std::string Tensor::preview(size_t max_items) const {
  std::ostringstream os;
  os << "[";
  int64_t n = std::min<int64_t>(numel_, static_cast<int64_t>(max_items));
  for (int64_t i = 0; i < n; ++i) {
    if (i) os << ", ";
    if (dtype_ == DType::Bool)
      os << (at(i) != 0 ? "True" : "False");
    else
      os << at(i);
  }
  if (n < numel_) os << ", ...";
  os << "]";
  return os.str();
}

// ---- binary16 ----------------------------------------------------------------------------------
float round_to_half(float v) { return static_cast<float>(Eigen::half(v)); }

void round_to_half(Tensor& t) {
  if (!t.is_float()) return;
  float* p = t.data<float>();
  int64_t n = t.numel();
  Eigen::Map<Eigen::ArrayXf> a(p, n);
  a = a.cast<Eigen::half>().cast<float>();
}

// ---- statistics --------------------------------------------------------------------------------
std::string index_str(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    int64_t d = std::max<int64_t>(shape[i], 1);
    idx[i] = flat % d;
    flat /= d;
  }
  std::string r = "[";
  for (size_t i = 0; i < idx.size(); ++i) {
    if (i) r += ", ";
    r += std::to_string(idx[i]);
  }
  return r + "]";
}

TensorStats compute_stats(const Tensor& t) {
  TensorStats s;
  s.count = t.numel();
  if (!t.defined() || s.count == 0) return s;
  double mn = std::numeric_limits<double>::infinity(), mx = -mn;
  double sum = 0, sum2 = 0;
  int64_t finite = 0;
  auto visit = [&](int64_t i, double v) {
    if (std::isnan(v)) {
      if (s.nan_count++ == 0) s.first_nan = i;
      return;
    }
    if (std::isinf(v)) {
      if (s.inf_count++ == 0) s.first_inf = i;
      return;
    }
    if (v == 0) ++s.zero_count;
    if (std::fabs(v) > kFloat16Max && s.fp16_overflow_count++ == 0) s.first_fp16_overflow = i;
    mn = std::min(mn, v);
    mx = std::max(mx, v);
    sum += v;
    ++finite;
  };
  if (t.is_float()) {
    const float* p = t.data<float>();
    for (int64_t i = 0; i < s.count; ++i) visit(i, p[i]);
  } else {
    for (int64_t i = 0; i < s.count; ++i) visit(i, t.at(i));
  }
  if (finite) {
    s.min = mn;
    s.max = mx;
    s.mean = sum / static_cast<double>(finite);
    // Second pass for a numerically stable variance.
    for (int64_t i = 0; i < s.count; ++i) {
      double v = t.at(i);
      if (std::isfinite(v)) sum2 += (v - s.mean) * (v - s.mean);
    }
    s.std = std::sqrt(sum2 / static_cast<double>(finite));
  }
  return s;
}

std::string TensorStats::str() const {
  std::ostringstream os;
  os << "min=" << min << " max=" << max << " mean=" << mean << " std=" << std;
  if (nan_count) os << " nan=" << nan_count;
  if (inf_count) os << " inf=" << inf_count;
  if (fp16_overflow_count) os << " fp16_overflow=" << fp16_overflow_count;
  if (all_zero()) os << " all-zero";
  return os.str();
}

// ---- .npy --------------------------------------------------------------------------------------
Tensor read_npy(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  auto fail = [&](const std::string& why) {
    throw std::runtime_error(path.string() + ": not a supported .npy file: " + why);
  };
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) fail("bad magic");
  uint32_t header_len = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) fail("truncated header");
    header_len = b[0] | (b[1] << 8);
  } else if (magic[6] == 2 || magic[6] == 3) {
    unsigned char b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) fail("truncated header");
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  } else {
    fail("version " + std::to_string(magic[6]));
  }
  if (header_len > (1u << 20)) fail("header too large");
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) fail("truncated header");
  auto field = [&](const std::string& key) -> std::string {
    size_t k = header.find("'" + key + "'");
    if (k == std::string::npos) fail("no '" + key + "' in header");
    size_t colon = header.find(':', k);
    size_t b = colon == std::string::npos ? colon : header.find_first_not_of(' ', colon + 1);
    if (b == std::string::npos) fail("no value for '" + key + "' in header");
    if (header[b] == '\'') return header.substr(b + 1, header.find('\'', b + 1) - b - 1);
    if (header[b] == '(') return header.substr(b + 1, header.find(')', b) - b - 1);
    size_t e = header.find_first_of(",}", b);
    return header.substr(b, e - b);
  };
  std::string descr = field("descr");
  if (field("fortran_order").starts_with("True")) fail("Fortran order");
  std::vector<int64_t> shape;
  {
    std::string dims = field("shape");
    std::istringstream ds(dims);
    std::string tok;
    while (std::getline(ds, tok, ',')) {
      size_t b = tok.find_first_not_of(' ');
      if (b == std::string::npos) continue;
      size_t e = tok.find_last_not_of(' ') + 1;
      int64_t d = -1;
      auto [end, ec] = std::from_chars(tok.data() + b, tok.data() + e, d);
      if (ec != std::errc() || end != tok.data() + e || d < 0)
        fail("bad dimension '" + tok.substr(b, e - b) + "' in shape (" + dims + ")");
      shape.push_back(d);
    }
  }
  if (descr.size() < 3 || descr[0] == '>') fail("big-endian or unknown dtype '" + descr + "'");
  std::string code = descr.substr(1);
  auto count = checked_numel(shape);
  if (!count) fail("shape " + shape_str(shape) + " has more elements than fit in int64");
  const int64_t n = *count;
  // The data the header announces must be in the file: checked before allocating anything, so
  // that a forged header cannot ask for more memory than the file holds.
  static const std::map<std::string, size_t> kItemSizes = {{"f4", 4}, {"f8", 8}, {"f2", 2},
                                                           {"i4", 4}, {"i8", 8}, {"i2", 2},
                                                           {"i1", 1}, {"u1", 1}, {"b1", 1}};
  auto item = kItemSizes.find(code);
  if (item == kItemSizes.end()) fail("dtype '" + descr + "'");
  const std::streamoff data_start = in.tellg();
  in.seekg(0, std::ios::end);
  const std::streamoff file_end = in.tellg();
  in.seekg(data_start);
  if (data_start < 0 || file_end < data_start) fail("cannot determine the data size");
  const auto available = static_cast<uint64_t>(file_end - data_start);
  auto data_bytes = checked_bytes(n, item->second);
  if (!data_bytes || *data_bytes > available)
    fail("truncated data: shape " + shape_str(shape) + " needs " +
         (data_bytes ? byte_size_str(*data_bytes) : std::string("more bytes than fit in memory")) +
         ", the file has " + byte_size_str(static_cast<size_t>(available)));
  check_tensor_bytes(*data_bytes, shape_str(shape) + " " + descr + " in " + path.string());
  auto read_raw = [&](size_t bytes) {
    std::vector<char> buf;
    try {
      buf.resize(static_cast<size_t>(n) * bytes);  // checked above
    } catch (const std::bad_alloc&) {
      fail("out of memory reading " + byte_size_str(*data_bytes));
    }
    if (!in.read(buf.data(), static_cast<std::streamsize>(buf.size()))) fail("truncated data");
    return buf;
  };
  auto convert = [&]<class S>(DType to, size_t) {
    auto buf = read_raw(sizeof(S));
    Tensor t(shape, to);
    for (int64_t i = 0; i < n; ++i) {
      S v;
      std::memcpy(&v, buf.data() + i * sizeof(S), sizeof(S));
      t.set(i, static_cast<double>(v));
    }
    return t;
  };
  if (code == "f4") {
    Tensor t(shape, DType::Float32);
    auto buf = read_raw(4);
    std::memcpy(t.data<float>(), buf.data(), buf.size());
    return t;
  }
  if (code == "f8") return convert.operator()<double>(DType::Float32, 8);
  if (code == "f2") {
    auto buf = read_raw(2);
    Tensor t(shape, DType::Float16);
    for (int64_t i = 0; i < n; ++i) {
      uint16_t bits;
      std::memcpy(&bits, buf.data() + i * 2, 2);
      t.data<float>()[i] = static_cast<float>(std::bit_cast<Eigen::half>(bits));
    }
    return t;
  }
  if (code == "i4") return convert.operator()<int32_t>(DType::Int32, 4);
  if (code == "i8") return convert.operator()<int64_t>(DType::Int64, 8);
  if (code == "i2") return convert.operator()<int16_t>(DType::Int32, 2);
  if (code == "i1") return convert.operator()<int8_t>(DType::Int32, 1);
  if (code == "u1") return convert.operator()<uint8_t>(DType::Int32, 1);
  if (code == "b1") return convert.operator()<uint8_t>(DType::Bool, 1);
  fail("dtype '" + descr + "'");
  return {};
}

void write_npy(const std::filesystem::path& path, const Tensor& t) {
  std::string descr;
  switch (t.dtype()) {
    case DType::Float32:
      descr = "<f4";
      break;
    case DType::Float16:
      descr = "<f2";
      break;
    case DType::Int32:
      descr = "<i4";
      break;
    case DType::Int64:
      descr = "<i8";
      break;
    case DType::Bool:
      descr = "|b1";
      break;
    default:
      throw std::runtime_error("write_npy: unsupported dtype");
  }
  std::string shape;
  for (int64_t d : t.shape()) shape += std::to_string(d) + ", ";
  if (t.rank() > 1) shape.resize(shape.size() - 1), shape.back() = ' ', shape.pop_back();
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("cannot write " + path.string());
  out.write("\x93NUMPY\x01\x00", 8);
  auto len = static_cast<uint16_t>(header.size());
  char lb[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(lb, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  if (t.dtype() == DType::Float16) {
    for (int64_t i = 0; i < t.numel(); ++i) {
      auto bits = std::bit_cast<uint16_t>(Eigen::half(t.data<float>()[i]));
      out.write(reinterpret_cast<const char*>(&bits), 2);
    }
  } else if (t.numel()) {
    const void* p = nullptr;
    if (t.is_float())
      p = t.data<float>();
    else if (t.dtype() == DType::Int32)
      p = t.data<int32_t>();
    else if (t.dtype() == DType::Int64)
      p = t.data<int64_t>();
    else
      p = t.data<uint8_t>();
    out.write(static_cast<const char*>(p),
              static_cast<std::streamsize>(t.numel() * t.element_size()));
  }
  if (!out) throw std::runtime_error("error writing " + path.string());
}

}  // namespace graphcore::runtime
