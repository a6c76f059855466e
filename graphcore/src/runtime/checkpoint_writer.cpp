// The checkpoint writer (graphcore/optim.h): the bytes mindspore.save_checkpoint(format="ckpt")
// writes, checked against MindSpore 2.10 (tests/training/check_optim.py loads our files with
// load_checkpoint). Each entry is one serialized one-value Checkpoint message (tag, dims unpacked,
// tensor_type, tensor_content), written straight from the tensor's storage with protobuf's
// CodedOutputStream: no copy of the tensor into a message. A tensor over 512 MiB is split into
// 512 MiB chunks of bytes, one message each with the full dims, as _write_parameter_bytes_data
// does (the readers join them).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>
#include <Eigen/Core>
#include <bit>
#include <cerrno>
#include <cstring>
#include <set>

#include "graphcore/checked.h"
#include "graphcore/optim.h"
#include "graphcore_proto/mindspore_checkpoint.pb.h"

namespace graphcore::runtime {

namespace {

namespace pb = graphcore::mindspore_ckpt;
using google::protobuf::internal::WireFormatLite;

constexpr size_t kSliceBytes = size_t{512} * 1024 * 1024;  // SLICE_SIZE * 1024

// The stored element type of an entry: MindSpore's name and the bytes of one element.
struct StoredType {
  std::string name;
  size_t size;
};

StoredType stored_type_of(const CheckpointTensor& e) {
  switch (e.value.dtype()) {
    case DType::Float32:
      return {"Float32", 4};
    case DType::Float16:
      return {"Float16", 2};
    case DType::Int32:
      return {"Int32", 4};
    case DType::Int64:
      return {"Int64", 8};
    case DType::Bool:
      return {"Bool", 1};
    default:
      throw RuntimeError("cannot write checkpoint entry '" + e.name + "' of type " +
                         e.value.type_str());
  }
}

// The little-endian bytes of a tensor's elements (Float16 storage is float32: converted).
std::string_view raw_bytes(const Tensor& t, std::string& scratch) {
  if (t.dtype() == DType::Float16) {
    scratch.resize(static_cast<size_t>(t.numel()) * 2);
    const auto* d = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      const auto h = std::bit_cast<uint16_t>(Eigen::half(d[i]));
      std::memcpy(scratch.data() + i * 2, &h, 2);
    }
    return scratch;
  }
  const void* p = nullptr;
  switch (t.dtype()) {
    case DType::Float32:
      p = t.data<float>();
      break;
    case DType::Int32:
      p = t.data<int32_t>();
      break;
    case DType::Int64:
      p = t.data<int64_t>();
      break;
    default:
      p = t.data<uint8_t>();
      break;
  }
  return {static_cast<const char*>(p), static_cast<size_t>(t.numel()) * t.element_size()};
}

// One Checkpoint message holding one Value: its serialized header (everything before the
// tensor_content bytes) and the content's length.
std::string message_header(const std::string& tag, const std::vector<int64_t>& dims,
                           const std::string& type, size_t content_bytes) {
  // TensorProto: dims (field 1, varint, unpacked), tensor_type (2), tensor_content (3).
  std::string tensor;
  {
    google::protobuf::io::StringOutputStream so(&tensor);
    google::protobuf::io::CodedOutputStream out(&so);
    for (int64_t d : dims) WireFormatLite::WriteInt64(pb::TensorProto::kDimsFieldNumber, d, &out);
    WireFormatLite::WriteString(pb::TensorProto::kTensorTypeFieldNumber, type, &out);
    out.WriteTag(WireFormatLite::MakeTag(pb::TensorProto::kTensorContentFieldNumber,
                                         WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
    out.WriteVarint64(content_bytes);
  }
  const size_t tensor_len = tensor.size() + content_bytes;
  std::string value;  // Checkpoint.Value: tag (1), tensor (2)
  {
    google::protobuf::io::StringOutputStream so(&value);
    google::protobuf::io::CodedOutputStream out(&so);
    WireFormatLite::WriteString(pb::Checkpoint_Value::kTagFieldNumber, tag, &out);
    out.WriteTag(WireFormatLite::MakeTag(pb::Checkpoint_Value::kTensorFieldNumber,
                                         WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
    out.WriteVarint64(tensor_len);
  }
  const size_t value_len = value.size() + tensor.size() + content_bytes;
  std::string head;  // Checkpoint: value (1)
  {
    google::protobuf::io::StringOutputStream so(&head);
    google::protobuf::io::CodedOutputStream out(&so);
    out.WriteTag(WireFormatLite::MakeTag(pb::Checkpoint::kValueFieldNumber,
                                         WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
    out.WriteVarint64(value_len);
  }
  head.append(value);
  head.append(tensor);
  return head;
}

// A temporary file in the target's directory, removed unless committed.
class TempFile {
 public:
  explicit TempFile(const std::filesystem::path& target) : target_(target) {
    const std::filesystem::path dir =
        target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
    std::string leaf = ".";
    leaf.append(target.filename().string());
    leaf.append(".tmp.XXXXXX");
    path_ = (dir / leaf).string();
    fd_ = ::mkstemp(path_.data());
    if (fd_ < 0) fail("cannot create a temporary file in " + dir.string());
    // mkstemp makes 0600; a checkpoint gets the usual 0666 minus the umask.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    if (::fchmod(fd_, 0666 & ~mask) != 0) {
      const int err = errno;
      ::close(fd_);
      ::unlink(path_.c_str());
      errno = err;
      fail("cannot set the permissions of " + path_);
    }
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  void write(std::string_view data) {
    crc_ = crc32_z(crc_, reinterpret_cast<const Bytef*>(data.data()), data.size());
    while (!data.empty()) {
      const ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        fail("cannot write " + path_);
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
  }
  [[nodiscard]] uLong crc() const { return crc_; }

  void commit() {
    if (::fsync(fd_) != 0) fail("cannot flush " + path_);
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail("cannot close " + path_);
    if (::rename(path_.c_str(), target_.c_str()) != 0) fail("cannot rename it onto the target");
    committed_ = true;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw RuntimeError("cannot write checkpoint " + target_.string() + ": " + what + ": " +
                       std::strerror(errno));
  }
  std::filesystem::path target_;
  std::string path_;
  int fd_ = -1;
  bool committed_ = false;
  uLong crc_ = crc32(0L, Z_NULL, 0);
};

}  // namespace

CheckpointTensor checkpoint_entry(std::string name, Tensor value) {
  CheckpointTensor e;
  e.name = std::move(name);
  e.shape = value.shape();
  e.value = std::move(value);
  e.stored_type = stored_type_of(e).name;
  return e;
}

void write_checkpoint(const std::filesystem::path& file, std::span<const CheckpointTensor> entries,
                      bool crc_check) {
  const std::string fname = file.string();
  // Check every entry before creating anything.
  std::set<std::string_view> names;
  for (size_t i = 0; i < entries.size(); ++i) {
    const CheckpointTensor& e = entries[i];
    const std::string what = "cannot write checkpoint " + fname + ": entry " + std::to_string(i);
    if (e.name.empty()) throw RuntimeError(what + " has no name");
    if (!e.skipped.empty() || !e.value.defined()) {
      throw RuntimeError(what + " ('" + e.name + "') has no tensor" +
                         (e.skipped.empty() ? "" : " (" + e.skipped + ")"));
    }
    if (!names.insert(e.name).second)
      throw RuntimeError(what + ": the name '" + e.name + "' appears twice");
    const StoredType st = stored_type_of(e);
    if (!checked_bytes(e.value.numel(), st.size))
      throw RuntimeError(what + " ('" + e.name + "') is too large");
  }
  if (entries.empty()) {
    throw RuntimeError("cannot write checkpoint " + fname +
                       ": no entries (MindSpore cannot load an empty checkpoint)");
  }

  TempFile out(file);
  std::string scratch;
  for (const CheckpointTensor& e : entries) {
    const StoredType st = stored_type_of(e);
    const std::string_view bytes = raw_bytes(e.value, scratch);
    // save_checkpoint writes the Tensor's shape: a scalar has no dims.
    const std::vector<int64_t>& dims = e.value.shape();
    size_t at = 0;
    do {
      const size_t n = std::min(kSliceBytes, bytes.size() - at);
      out.write(message_header(e.name, dims, st.name, n));
      out.write(bytes.substr(at, n));
      at += n;
    } while (at < bytes.size());
  }
  if (crc_check) {
    // "crc_num" + the CRC-32 of everything before as a 10-byte big-endian integer.
    std::string trailer = "crc_num";
    const uint64_t crc = out.crc();
    for (int i = 9; i >= 0; --i)
      trailer.push_back(static_cast<char>(i >= 8 ? 0 : (crc >> (8 * i)) & 0xff));
    out.write(trailer);
  }
  out.commit();
}

}  // namespace graphcore::runtime
