// ModelFile (graphcore/model_file.h): a model file as owned bytes and views of runtime tensors,
// written piece by piece so the weights are never copied into the file's image.
#include "graphcore/model_file.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "graphcore/checked.h"

namespace graphcore {

namespace {

// The storage bytes of a tensor written as is (every dtype but Float16-as-half).
std::string_view storage_view(const runtime::Tensor& t) {
  const auto n = static_cast<size_t>(t.numel());
  switch (t.dtype()) {
    case DType::Float32:
      return {reinterpret_cast<const char*>(t.data<float>()), n * sizeof(float)};
    case DType::Int32:
      return {reinterpret_cast<const char*>(t.data<int32_t>()), n * sizeof(int32_t)};
    case DType::Int64:
      return {reinterpret_cast<const char*>(t.data<int64_t>()), n * sizeof(int64_t)};
    case DType::Bool:
      return {reinterpret_cast<const char*>(t.data<uint8_t>()), n};
    default:
      throw std::logic_error("ModelFile: a tensor of dtype " +
                             std::string(dtype_short_name(t.dtype())) + " has no raw layout");
  }
}

}  // namespace

uint16_t binary16_bits(float v) {
  uint32_t x = 0;
  std::memcpy(&x, &v, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff)
    return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - exp;
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

uint64_t ModelFile::tensor_bytes(const runtime::Tensor& tensor, bool as_half) {
  if (as_half) {
    auto b = checked_bytes(tensor.numel(), 2);
    if (!b) throw std::overflow_error("ModelFile: tensor size overflows");
    return *b;
  }
  auto b = checked_bytes(tensor.numel(), tensor.element_size());
  if (!b) throw std::overflow_error("ModelFile: tensor size overflows");
  return *b;
}

void ModelFile::append(std::string_view bytes) {
  if (bytes.empty()) return;
  if (pieces_.empty() || pieces_.back().tensor.defined()) pieces_.emplace_back();
  pieces_.back().bytes.append(bytes);
  size_ += bytes.size();
}

void ModelFile::append_tensor(const runtime::Tensor& tensor, bool as_half) {
  if (as_half && tensor.dtype() != DType::Float16) {
    throw std::logic_error("ModelFile: only Float16 tensors are written as binary16");
  }
  if (!as_half) (void)storage_view(tensor);  // refuses a dtype without a raw layout now
  const uint64_t n = tensor_bytes(tensor, as_half);
  if (n == 0) return;
  Piece p;
  p.tensor = tensor;
  p.as_half = as_half;
  pieces_.push_back(std::move(p));
  size_ += n;
}

uint64_t ModelFile::owned_bytes() const {
  uint64_t n = 0;
  for (const Piece& p : pieces_)
    if (!p.tensor.defined()) n += p.bytes.size();
  return n;
}

void ModelFile::write(const std::function<void(std::string_view)>& sink) const {
  constexpr size_t kChunk = 1 << 19;  // floats per converted chunk (1 MiB of binary16)
  std::vector<uint16_t> buffer;
  for (const Piece& p : pieces_) {
    if (!p.tensor.defined()) {
      sink(p.bytes);
      continue;
    }
    if (!p.as_half) {
      sink(storage_view(p.tensor));
      continue;
    }
    const auto* src = p.tensor.data<float>();
    const auto n = static_cast<size_t>(p.tensor.numel());
    buffer.resize(std::min(n, kChunk));
    for (size_t start = 0; start < n; start += kChunk) {
      const size_t count = std::min(kChunk, n - start);
      for (size_t i = 0; i < count; ++i) buffer[i] = binary16_bits(src[start + i]);
      sink({reinterpret_cast<const char*>(buffer.data()), count * sizeof(uint16_t)});
    }
  }
}

std::string ModelFile::to_string() const {
  std::string out;
  out.reserve(static_cast<size_t>(size_));
  write([&](std::string_view s) { out.append(s); });
  return out;
}

namespace wire {

std::string varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}

size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

std::string length_delimited(uint32_t field, uint64_t length) {
  return varint((static_cast<uint64_t>(field) << 3) | 2u) + varint(length);
}

uint64_t framed_size(uint32_t field, uint64_t length) {
  return varint_size((static_cast<uint64_t>(field) << 3) | 2u) + varint_size(length) + length;
}

}  // namespace wire

}  // namespace graphcore
