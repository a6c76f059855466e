// A model file the exporters produce without copying its weights: a sequence of pieces, each
// either bytes the exporter built (the protobuf structure) or a runtime tensor whose storage is
// written as is (or converted in bounded chunks: float16 kept in float32 storage) when the file
// is written. Peak memory while writing is the runtime's weights plus the structure, not twice
// the weights (docs/export.md, "Memory"). graphcore writes nothing to disk: the caller gives a
// sink (the CLI's atomic writer) -- and the protobuf wire helpers the exporters use to frame a
// length-delimited field whose payload is such a tensor.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "graphcore/runtime.h"

namespace graphcore {

class ModelFile {
 public:
  // Appends bytes (merged into the previous owned piece when there is one).
  void append(std::string_view bytes);
  // Appends a tensor's elements in C order, host byte order: its storage bytes, or, with
  // `as_half`, each float of a Float16 tensor's storage as IEEE binary16 (2 bytes).
  void append_tensor(const runtime::Tensor& tensor, bool as_half);
  // Bytes a tensor appended with `as_half` occupies.
  static uint64_t tensor_bytes(const runtime::Tensor& tensor, bool as_half);

  [[nodiscard]] uint64_t size() const { return size_; }
  // Bytes held by the ModelFile itself (the structure): size() minus the tensors' bytes.
  [[nodiscard]] uint64_t owned_bytes() const;
  [[nodiscard]] bool empty() const { return size_ == 0; }
  // Calls `sink` with consecutive byte ranges making up the file (tensor storage directly;
  // converted values through a buffer of at most 1 MiB).
  void write(const std::function<void(std::string_view)>& sink) const;
  // The whole file in memory (tests, small files).
  [[nodiscard]] std::string to_string() const;

 private:
  struct Piece {
    std::string bytes;       // when !tensor.defined()
    runtime::Tensor tensor;  // shares the runtime's storage
    bool as_half = false;
  };
  std::vector<Piece> pieces_;
  uint64_t size_ = 0;
};

// IEEE binary16 bits of a float (round to nearest even; overflow to infinity).
uint16_t binary16_bits(float v);

// Protobuf wire format, for fields emitted by hand around a streamed payload.
namespace wire {
// The varint encoding of `v`.
std::string varint(uint64_t v);
size_t varint_size(uint64_t v);
// The key of a length-delimited field (wire type 2) followed by the varint length `length`.
std::string length_delimited(uint32_t field, uint64_t length);
// Bytes length_delimited(field, length) takes, plus `length`.
uint64_t framed_size(uint32_t field, uint64_t length);
}  // namespace wire

}  // namespace graphcore
