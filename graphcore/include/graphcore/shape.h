// Abstract tensor types: dtypes, dimensions that may be symbolic, shapes and broadcasting.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace graphcore {

enum class DType : uint8_t {
  Unknown,
  Bool,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  Float16,
  BFloat16,
  Float32,
  Float64,
  Complex64,
  UInt32,  // MindSpore's dataset labels (MnistDataset, Cifar10Dataset)
};

std::string_view dtype_name(DType t);  // "float32"
std::optional<DType> dtype_from_name(
    std::string_view name);  // accepts "float32", "fp32", "float"...
bool is_floating(DType t);
bool is_integral(DType t);   // includes bool
size_t dtype_size(DType t);  // bytes per element, 0 for Unknown
// Result type of a binary arithmetic op (NumPy/MindSpore style promotion).
DType promote(DType a, DType b);

// Three-valued logic for comparisons of possibly-symbolic dimensions.
enum class Tri { No, Yes, Maybe };

// A dimension: a known size, an affine symbolic term `coef * sym + offset` where `sym` is a
// monomial of named symbols (e.g. N, 2*N, N*L, H-4), or unknown. Symbols are interned in a
// process-wide table; other expressions become new atoms named by their text, e.g. "(H-6)//2".
class Dim {
 public:
  constexpr Dim() = default;
  static constexpr Dim known(int64_t v) { return Dim(v, 0); }
  static constexpr Dim unknown() { return Dim(-1, 0); }
  static Dim symbol(std::string_view name);  // atom named `name`

  [[nodiscard]] bool is_known() const { return sym_ == 0 && coef_ >= 0; }
  [[nodiscard]] bool is_unknown() const { return sym_ == 0 && coef_ < 0; }
  [[nodiscard]] bool is_symbolic() const { return sym_ != 0; }
  [[nodiscard]] int64_t value() const { return coef_; }  // meaningful when is_known()
  [[nodiscard]] int64_t coefficient() const { return coef_; }
  [[nodiscard]] int64_t offset() const { return offset_; }
  [[nodiscard]] uint32_t symbol_id() const { return sym_; }
  [[nodiscard]] std::string str() const;

  friend bool operator==(const Dim&, const Dim&) = default;

  friend Dim operator+(Dim a, Dim b);
  friend Dim operator-(Dim a, Dim b);
  friend Dim operator*(Dim a, Dim b);
  // Exact division when it can be proven (known, or monomial divisible); otherwise unknown.
  static std::optional<Dim> exact_div(Dim a, Dim b);
  static Dim floor_div(Dim a, Dim b);
  static Dim ceil_div(Dim a, Dim b);

 private:
  constexpr Dim(int64_t c, uint32_t s, int64_t o = 0) : coef_(c), sym_(s), offset_(o) {}
  int64_t coef_ = -1;
  uint32_t sym_ = 0;
  int64_t offset_ = 0;  // only for symbolic dims
  friend struct DimBuilder;
};

Tri dims_equal(Dim a, Dim b);

struct Shape {
  bool ranked = true;
  std::vector<Dim> dims;

  Shape() = default;
  explicit Shape(std::vector<Dim> d) : dims(std::move(d)) {}
  static Shape unranked() {
    Shape s;
    s.ranked = false;
    return s;
  }
  static Shape of(std::initializer_list<int64_t> v);
  static Shape of(const std::vector<int64_t>& v);

  [[nodiscard]] size_t rank() const { return dims.size(); }
  [[nodiscard]] bool fully_known() const;
  // Number of elements (known, symbolic monomial, or unknown).
  [[nodiscard]] Dim num_elements() const;
  // Dim at a Python-style index (negative counts from the end). Requires ranked and in range.
  [[nodiscard]] const Dim& at(int64_t axis) const;
  [[nodiscard]] std::string str() const;  // "(1, 3, 224, 224)", "(N, 64, H-2, W-2)", "(?)" unranked
  friend bool operator==(const Shape&, const Shape&) = default;
};

// Normalises a Python-style axis for `rank`; nullopt when out of range.
std::optional<size_t> normalize_axis(int64_t axis, size_t rank);

struct TensorType {
  Shape shape;
  DType dtype = DType::Float32;
  [[nodiscard]] std::string str() const;  // "(32, 6, 28, 28) f32"
  friend bool operator==(const TensorType&, const TensorType&) = default;
};

std::string_view dtype_short_name(DType t);  // "f32", "i32", "bool"

// NumPy broadcasting of two shapes. On failure returns nullopt and sets `why` to a message
// naming the axis and both sizes.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b, std::string* why);

}  // namespace graphcore
