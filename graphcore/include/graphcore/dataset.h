// The runtime's dataset reader (issue 17): executes a DatasetPlan (graphcore/training.h) on real
// files as mindspore.dataset 2.10 does, and yields batches as runtime Tensors. See
// docs/runtime.md ("Datasets").
//
//   DatasetReader reader(*plan.dataset, std::nullopt, /*seed=*/1);  // validates; throws
//   for (int64_t epoch = 0; epoch < epochs; ++epoch) {
//     reader.start_epoch(epoch);
//     while (auto batch = reader.next()) train_step((*batch)[0], (*batch)[1]);
//   }
//
// Sources: MnistDataset, Cifar10Dataset, ImageFolderDataset (JPEG, PNG), NumpySlicesDataset (.npy,
// .npz). Operations: map (Rescale, Normalize, HWC2CHW, Resize, CenterCrop, RandomCrop,
// RandomHorizontalFlip, TypeCast, OneHot), batch, shuffle, repeat, take, project. Every value is
// what MindSpore yields (dtype, shape, order) except where randomness is involved: shuffles and
// random transforms draw from the reader's seed (reproducible, not MindSpore's numbers).
//
// A PlanCall's arguments are AttrValues, which hold no list of floats or strings: such an argument
// (Normalize's mean, column_names, extensions) may be given as a string in Python's list syntax
// ("[0.4914, 0.4822, 0.4465]", "['image', 'label']") or as one value; dtypes as names ("int32",
// "mstype.int32"); interpolation as a name ("Inter.BILINEAR", "bilinear") or its enum value.
// NumpySlicesDataset's `data` is the path of a .npz (one column per array, archive order) or .npy
// file (one column), or several .npy paths separated by ';' (one column each).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graphcore/runtime.h"
#include "graphcore/training.h"

namespace graphcore::runtime {

// The element types mindspore.dataset yields (its numpy arrays' dtypes).
enum class DataType : uint8_t {
  Bool,
  Int8,
  UInt8,
  Int16,
  UInt16,
  Int32,
  UInt32,
  Int64,
  UInt64,
  Float16,
  Float32,
  Float64,
};
std::string_view data_type_name(DataType t);  // "uint8"
// "uint8", "mstype.uint8", "mindspore.uint8", "ms.int32", "np.float32", "float" (float32)...
std::optional<DataType> data_type_from_name(std::string_view name);
size_t data_type_size(DataType t);
bool is_float(DataType t);

// One value of one column as mindspore.dataset yields it: a dense row-major array.
struct HostArray {
  DataType dtype = DataType::UInt8;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;  // numel * data_type_size(dtype), native (little-endian) order

  // Zero-filled; throws RuntimeError when the size overflows or exceeds max_tensor_bytes().
  static HostArray make(DataType dtype, std::vector<int64_t> shape);
  [[nodiscard]] int64_t numel() const;
  [[nodiscard]] double at(int64_t flat) const;  // any dtype, as double (float16 decoded)
  // Stores `v` converted as numpy's astype does (floats truncate toward zero, integers wrap).
  void set(int64_t flat, double v);
  [[nodiscard]] std::string type_str() const;  // "(28, 28, 1) uint8"
};

// The runtime tensor holding `a`'s values exactly where it can: bool -> Bool; int8, uint8, int16,
// uint16, int32 -> Int32; uint32, int64, uint64 -> Int64 (uint64 past 2^63-1 is an error);
// float16 -> Float16; float32, float64 -> Float32.
Tensor to_tensor(const HostArray& a);
// Writes `a` as a NumPy .npy file with its own dtype (atomically: temp file + rename).
void write_array_npy(const std::filesystem::path& path, const HostArray& a);

// The element type and shape of a .npy file, from its header alone (the static evaluator's
// np.load: the types a training plan's NumpySlicesDataset yields). nullopt when the file cannot
// be read or is not a C-order .npy of a type above.
struct NpyInfo {
  DataType dtype = DataType::Float32;
  std::vector<int64_t> shape;
};
std::optional<NpyInfo> read_npy_header(const std::filesystem::path& path);
// A whole C-order .npy file (its bytes: `name` is for messages). Throws DatasetError naming
// `name` when the header is bad or the data's length does not match its shape (sizes checked).
HostArray parse_array_npy(std::string_view bytes, const std::string& name);
// A whole .npz archive (np.savez / np.savez_compressed: a zip of .npy members, stored or
// deflated; zip64 is refused): its arrays in the archive's order, each named as its member
// without ".npy". Throws DatasetError naming `name` (and the member) when it is not readable,
// or when its members hold more than `max_bytes` uncompressed (checked before inflating;
// 0: max_tensor_bytes()).
std::vector<std::pair<std::string, HostArray>> parse_array_npz(std::string_view bytes,
                                                               const std::string& name,
                                                               size_t max_bytes = 0);
// `a` as the bytes of a .npy file (version 1.0, C order, its own dtype).
std::string encode_array_npy(const HostArray& a);
// Arrays as the bytes of a .npz (stored members NAME.npy, as np.savez writes; below 4 GiB).
std::string encode_array_npz(const std::vector<std::pair<std::string, HostArray>>& arrays);

// A bad plan or bad data: the message names the call (file:line: api), the file, the column.
class DatasetError : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};

class DatasetReader {
 public:
  // Builds and validates the pipeline: every call's arguments, that every file the source needs
  // is there with the right size and header, that the columns map/project name exist. Throws
  // DatasetError. `data_dir_override` replaces the source's dataset_dir (NumpySlicesDataset:
  // relative data paths are resolved against it); otherwise a relative path is resolved against
  // the directory of the file the source call is in. `seed` drives every random choice.
  DatasetReader(const DatasetPlan& plan,
                const std::optional<std::filesystem::path>& data_dir_override, uint64_t seed);
  ~DatasetReader();
  DatasetReader(const DatasetReader&) = delete;
  DatasetReader& operator=(const DatasetReader&) = delete;

  // The columns of a batch, in order ("image", "label").
  [[nodiscard]] const std::vector<std::string>& column_names() const;
  // Restarts the pipeline for `epoch` (its shuffles and random transforms depend on the seed and
  // the epoch). Without a call, the first next() starts epoch 0.
  void start_epoch(int64_t epoch);
  // The next batch (or row, when the pipeline has no batch), nullopt at the end of the epoch.
  // Throws DatasetError for data that cannot be read (a corrupt image, a transform given a
  // wrong rank or dtype, rows that batch cannot stack).
  std::optional<std::vector<Tensor>> next();
  // The same as MindSpore's numpy arrays, with their own dtypes (uint8 images, uint32 labels).
  std::optional<std::vector<HostArray>> next_arrays();
  // MindSpore's get_dataset_size(): outputs per epoch; nullopt when infinite (repeat()).
  [[nodiscard]] std::optional<int64_t> batches_per_epoch() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace graphcore::runtime
