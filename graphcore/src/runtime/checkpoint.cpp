// MindSpore checkpoints: the protobuf .ckpt format of mindspore.save_checkpoint (messages in
// graphcore/proto/mindspore_checkpoint.proto) and format="safetensors", read from a read-only
// memory mapping. The .ckpt reader walks the protobuf wire format with libprotobuf's
// CodedInputStream (field numbers from the generated classes) instead of parsing into messages:
// a parsed message would copy every tensor_content into a std::string, and the whole file into
// one Checkpoint message (MindSpore's own reader needs the file's size twice over). Here an entry
// is a span of the mapping; Executor::load_checkpoint checks every entry against the parameters
// before touching any, then copies each matched tensor once, converting its dtype on the way.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <Eigen/Core>
#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>

#include "graphcore/checked.h"
#include "graphcore_proto/mindspore_checkpoint.pb.h"
#include "internal.h"

namespace graphcore::runtime {

static_assert(std::endian::native == std::endian::little,
              "checkpoint data is little-endian; a big-endian host would need byte swapping");

namespace {

namespace pb = graphcore::mindspore_ckpt;
using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

// ---- the file -----------------------------------------------------------------------------------
class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path) : path_(path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      fail("not a regular file");
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ == 0) {
      ::close(fd);
      fail("the file is empty");
    }
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) fail(std::string("cannot map it: ") + std::strerror(errno));
    ::madvise(p, size_, MADV_SEQUENTIAL);
    data_ = static_cast<const uint8_t*>(p);
  }
  ~MappedFile() {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  [[nodiscard]] const uint8_t* data() const { return data_; }
  [[nodiscard]] size_t size() const { return size_; }
  // Drops the pages of `range` (a span of the mapping) from the process's resident set once
  // they were copied: a read-only file mapping re-reads them from the file if touched again, so
  // the values are unchanged, but the peak RSS of a load is the weights plus one tensor, not
  // the weights plus the whole file.
  void release(std::span<const uint8_t> range) const {
    const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const size_t head = (page - reinterpret_cast<uintptr_t>(range.data()) % page) % page;
    if (range.size() <= head) return;
    const size_t length = (range.size() - head) / page * page;
    if (length > 0) {
      // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): madvise takes a non-const pointer
      ::madvise(const_cast<uint8_t*>(range.data()) + head, length, MADV_DONTNEED);
    }
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw RuntimeError("cannot read checkpoint " + path_.string() + ": " + why);
  }
  std::filesystem::path path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// ---- stored element types -----------------------------------------------------------------------
enum class Stored : uint8_t {
  F32,
  F16,
  BF16,
  F64,
  I8,
  I16,
  I32,
  I64,
  U8,
  U16,
  U32,
  U64,
  Bool,
  Str,   // append_dict string values (.ckpt "str": numpy unicode)
  Int4,  // qint4x2: two 4-bit values per byte
  Other,
};

struct StoredInfo {
  Stored type;
  size_t size;                 // bytes per element (0: not a plain element type)
  std::optional<DType> dtype;  // the MindSpore dtype it is, for matching against parameters
};

StoredInfo stored_info(std::string_view name, CheckpointFormat fmt) {
  struct Row {
    std::string_view ckpt, safetensors;
    StoredInfo info;
  };
  static const Row kRows[] = {
      {"Float32", "F32", {Stored::F32, 4, DType::Float32}},
      {"Float16", "F16", {Stored::F16, 2, DType::Float16}},
      {"BFloat16", "BF16", {Stored::BF16, 2, DType::BFloat16}},
      {"Float64", "F64", {Stored::F64, 8, DType::Float64}},
      {"Int8", "I8", {Stored::I8, 1, DType::Int8}},
      {"Int16", "I16", {Stored::I16, 2, DType::Int16}},
      {"Int32", "I32", {Stored::I32, 4, DType::Int32}},
      {"Int64", "I64", {Stored::I64, 8, DType::Int64}},
      {"UInt8", "U8", {Stored::U8, 1, DType::UInt8}},
      {"UInt16", "U16", {Stored::U16, 2, std::nullopt}},
      {"UInt32", "U32", {Stored::U32, 4, std::nullopt}},
      {"UInt64", "U64", {Stored::U64, 8, std::nullopt}},
      {"Bool", "BOOL", {Stored::Bool, 1, DType::Bool}},
      {"str", "", {Stored::Str, 0, std::nullopt}},
      {"Int4", "", {Stored::Int4, 0, std::nullopt}},
  };
  for (const Row& r : kRows) {
    if ((fmt == CheckpointFormat::Ckpt ? r.ckpt : r.safetensors) == name && !name.empty())
      return r.info;
  }
  return {Stored::Other, 0, std::nullopt};
}

// The runtime dtype an entry reads into by default (CheckpointTensor::value).
DType natural_dtype(Stored s) {
  switch (s) {
    case Stored::F16:
      return DType::Float16;
    case Stored::F32:
    case Stored::F64:
    case Stored::BF16:
      return DType::Float32;
    case Stored::I64:
    case Stored::U32:
    case Stored::U64:
      return DType::Int64;
    case Stored::Bool:
      return DType::Bool;
    default:
      return DType::Int32;
  }
}

// ---- entries ------------------------------------------------------------------------------------
struct Entry {
  std::string name;
  std::string type_name;
  StoredInfo info{Stored::Other, 0, std::nullopt};
  std::vector<int64_t> shape;
  std::vector<std::span<const uint8_t>> chunks;  // in the mapping; several for sliced tensors
  size_t offset = 0;                             // of the first chunk, for messages
  std::string skipped;
  [[nodiscard]] size_t bytes() const {
    size_t n = 0;
    for (const auto& c : chunks) n += c.size();
    return n;
  }
};

struct Parsed {
  CheckpointFormat format = CheckpointFormat::Ckpt;
  std::vector<Entry> entries;  // one per name, in file order (a repeated name: the last wins)
  std::vector<std::string> notes;
};

// Checks an entry's byte count against its shape and type; sets `skipped` for entries the
// runtime cannot hold.
void finish_entry(Entry& e, const std::string& file) {
  if (e.info.type == Stored::Str) {
    e.skipped = "a string value (append_dict)";
    return;
  }
  if (e.info.type == Stored::Int4) {
    e.skipped = "packed 4-bit integers (qint4x2), which the runtime does not support";
    return;
  }
  if (e.info.size == 0) {
    e.skipped = "element type '" + e.type_name + "', which the runtime does not know";
    return;
  }
  // MindSpore writes a Python scalar from append_dict with dims [0] (load_checkpoint reads it
  // back as shape ()).
  if (e.shape == std::vector<int64_t>{0} && e.bytes() == e.info.size) e.shape.clear();
  auto n = checked_numel(e.shape);
  auto bytes = n ? checked_bytes(*n, e.info.size) : std::nullopt;
  if (!bytes) {
    throw RuntimeError("checkpoint " + file + " is corrupt: entry '" + e.name + "' has shape " +
                       shape_str(e.shape));
  }
  if (*bytes != e.bytes()) {
    throw RuntimeError("checkpoint " + file + " is corrupt: entry '" + e.name + "' (" +
                       e.type_name + " " + shape_str(e.shape) + ") needs " +
                       std::to_string(*bytes) + " bytes of data, the file has " +
                       std::to_string(e.bytes()) + " (at byte " + std::to_string(e.offset) + ")");
  }
}

// What a file that is not a MindSpore checkpoint is, from its first bytes; empty if unknown.
std::string sniff_other(const uint8_t* d, size_t n) {
  auto starts = [&](std::string_view m) {
    return n >= m.size() && std::memcmp(d, m.data(), m.size()) == 0;
  };
  if (starts("\x93NUMPY"))
    return "a NumPy .npy file (load a directory of <param>.npy with --load-params)";
  if (starts("PK\x03\x04")) return "a zip archive (a PyTorch .pt/.pth checkpoint or a .npz?)";
  if (starts("\x89HDF")) return "an HDF5 file (a Keras checkpoint?)";
  if (starts("\x80\x02") || starts("\x80\x03") || starts("\x80\x04") || starts("\x80\x05"))
    return "a Python pickle";
  return {};
}

// ---- .ckpt --------------------------------------------------------------------------------------
// Reads a varint at `pos` of [d, d+end); false if it runs past the end or over 10 bytes.
bool read_varint(const uint8_t* d, size_t end, size_t& pos, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= end) return false;
    uint8_t b = d[pos++];
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

// Parses one serialized Checkpoint.Value (the bytes of field `value`) at file offset `base`.
// Returns false when the bytes are not a valid Value.
// Reads a length-delimited string that must lie within the current limit (a corrupt length
// never makes the stream reserve memory for it).
bool read_bounded_string(CodedInputStream& in, std::string* out) {
  uint32_t n = 0;
  return in.ReadVarint32(&n) && static_cast<int64_t>(n) <= in.BytesUntilLimit() &&
         in.ReadString(out, static_cast<int>(n));
}

bool parse_value(const uint8_t* d, size_t len, size_t base, Entry& e, bool& is_map) {
  if (len > static_cast<size_t>(std::numeric_limits<int>::max())) return false;
  CodedInputStream in(d, static_cast<int>(len));
  in.PushLimit(static_cast<int>(len));  // BytesUntilLimit() bounds every length below
  bool has_tag = false, has_tensor = false, has_type = false, has_content = false;
  is_map = false;
  while (uint32_t key = in.ReadTag()) {
    int field = WireFormatLite::GetTagFieldNumber(key);
    auto wt = WireFormatLite::GetTagWireType(key);
    bool delimited = wt == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
    if (field == pb::Checkpoint_Value::kTagFieldNumber && delimited) {
      if (!read_bounded_string(in, &e.name)) return false;
      has_tag = true;
    } else if (field == pb::Checkpoint_Value::kTensorFieldNumber && delimited) {
      uint32_t n = 0;
      if (!in.ReadVarint32(&n) || static_cast<int64_t>(n) > in.BytesUntilLimit()) return false;
      auto lim = in.PushLimit(static_cast<int>(n));
      has_tensor = true;
      e.shape.clear();
      e.chunks.clear();
      while (uint32_t tk = in.ReadTag()) {
        int tf = WireFormatLite::GetTagFieldNumber(tk);
        auto twt = WireFormatLite::GetTagWireType(tk);
        if (tf == pb::TensorProto::kDimsFieldNumber && twt == WireFormatLite::WIRETYPE_VARINT) {
          uint64_t v = 0;
          if (!in.ReadVarint64(&v)) return false;
          e.shape.push_back(static_cast<int64_t>(v));
        } else if (tf == pb::TensorProto::kDimsFieldNumber &&
                   twt == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {  // packed
          uint32_t pn = 0;
          if (!in.ReadVarint32(&pn) || static_cast<int64_t>(pn) > in.BytesUntilLimit())
            return false;
          auto plim = in.PushLimit(static_cast<int>(pn));
          while (in.BytesUntilLimit() > 0) {
            uint64_t v = 0;
            if (!in.ReadVarint64(&v)) return false;
            e.shape.push_back(static_cast<int64_t>(v));
          }
          in.PopLimit(plim);
        } else if (tf == pb::TensorProto::kTensorTypeFieldNumber &&
                   twt == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
          if (!read_bounded_string(in, &e.type_name)) return false;
          has_type = true;
        } else if (tf == pb::TensorProto::kTensorContentFieldNumber &&
                   twt == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
          uint32_t cn = 0;
          if (!in.ReadVarint32(&cn) || static_cast<int64_t>(cn) > in.BytesUntilLimit())
            return false;
          auto at = static_cast<size_t>(in.CurrentPosition());
          e.chunks.assign(1, std::span<const uint8_t>(d + at, cn));
          e.offset = base + at;
          if (!in.Skip(static_cast<int>(cn))) return false;
          has_content = true;
        } else if (!WireFormatLite::SkipField(&in, tk)) {
          return false;
        }
      }
      if (!in.ConsumedEntireMessage()) return false;
      in.PopLimit(lim);
    } else if (field == pb::Checkpoint_Value::kMaptensorFieldNumber && delimited) {
      is_map = true;
      if (!WireFormatLite::SkipField(&in, key)) return false;
    } else if (!WireFormatLite::SkipField(&in, key)) {
      return false;
    }
  }
  if (!in.ConsumedEntireMessage() || in.CurrentPosition() != static_cast<int>(len)) return false;
  if (!has_tag) return false;
  if (is_map) return true;
  return has_tensor && has_type && has_content;
}

void parse_ckpt(const MappedFile& f, const std::string& file, Parsed& out) {
  const uint8_t* d = f.data();
  size_t end = f.size();
  // save_checkpoint(crc_check=True) appends "crc_num" and a 10-byte big-endian CRC-32.
  constexpr size_t kTrailer = 17;
  if (end >= kTrailer && std::memcmp(d + end - kTrailer, "crc_num", 7) == 0) {
    uint64_t stored = 0;
    for (size_t i = end - 10; i < end; ++i) stored = (stored << 8) | d[i];
    end -= kTrailer;
    uLong crc = crc32(0L, Z_NULL, 0);
    for (size_t at = 0; at < end;) {
      size_t n = std::min<size_t>(end - at, size_t{1} << 30);
      crc = crc32(crc, d + at, static_cast<uInt>(n));
      at += n;
    }
    if (crc != stored) {
      throw RuntimeError("checkpoint " + file +
                         " is damaged: its CRC-32 does not match the one save_checkpoint "
                         "(crc_check=True) recorded");
    }
    out.notes.emplace_back("CRC-32 verified");
  }

  std::map<std::string, size_t> index;  // name -> entries
  size_t pos = 0, count = 0, unknown_fields = 0;
  std::string prev;  // tag of the previous entry: equal tags in a row are slices of one tensor
  auto corrupt = [&](size_t at, const std::string& why) {
    std::string msg = "checkpoint " + file + " is not a readable MindSpore checkpoint: " + why +
                      " at byte " + std::to_string(at) + " of " + std::to_string(f.size());
    if (count == 0) {
      std::string other = sniff_other(d, f.size());
      msg += other.empty()
                 ? " (a corrupt file, or one encrypted with save_checkpoint(enc_key=...), which is "
                   "not supported)"
                 : " (it looks like " + other + ")";
    } else {
      msg += " (after " + std::to_string(count) + " entries; the file is corrupt or truncated)";
    }
    throw RuntimeError(msg);
  };
  while (pos < end) {
    size_t at = pos;
    uint64_t key = 0, len = 0;
    if (!read_varint(d, end, pos, key)) corrupt(at, "a field key runs past the end");
    auto field = static_cast<uint32_t>(key >> 3);
    auto wt = static_cast<uint32_t>(key & 7);
    if (field == static_cast<uint32_t>(pb::Checkpoint::kValueFieldNumber) && wt == 2) {
      if (!read_varint(d, end, pos, len)) corrupt(at, "an entry's length runs past the end");
      if (len > end - pos) {
        corrupt(at, "entry " + std::to_string(count + 1) + " declares " + std::to_string(len) +
                        " bytes but only " + std::to_string(end - pos) + " remain (truncated)");
      }
      Entry e;
      bool is_map = false;
      if (!parse_value(d + pos, len, pos, e, is_map)) {
        corrupt(at, "entry " + std::to_string(count + 1) + " is not a valid Checkpoint.Value" +
                        (e.name.empty() ? std::string() : " ('" + e.name + "')"));
      }
      pos += len;
      ++count;
      if (is_map) {
        e.skipped = "a MapParameter (maptensor), which the runtime does not support";
        e.type_name = "maptensor";
      } else {
        e.info = stored_info(e.type_name, CheckpointFormat::Ckpt);
      }
      std::string name = e.name;
      auto it = index.find(name);
      if (it != index.end() && prev == name && !is_map && e.skipped.empty()) {
        Entry& first = out.entries[it->second];  // the next slice of a split tensor
        if (first.type_name != e.type_name || first.shape != e.shape)
          corrupt(at, "slice of '" + e.name + "' with a different type or shape than the first");
        first.chunks.push_back(e.chunks.front());
      } else if (it != index.end()) {
        out.notes.push_back("entry '" + e.name + "' appears twice; the later one is used");
        out.entries[it->second] = std::move(e);
      } else {
        index.emplace(e.name, out.entries.size());
        out.entries.push_back(std::move(e));
      }
      prev = std::move(name);
      continue;
    }
    // A field this reader does not know (a newer MindSpore): skipped.
    if (field == 0) corrupt(at, "invalid protobuf field number 0");
    ++unknown_fields;
    switch (wt) {
      case 0:
        if (!read_varint(d, end, pos, len)) corrupt(at, "a varint runs past the end");
        break;
      case 1:
        if (end - pos < 8) corrupt(at, "a fixed64 field runs past the end");
        pos += 8;
        break;
      case 2:
        if (!read_varint(d, end, pos, len) || len > end - pos)
          corrupt(at, "a length-delimited field runs past the end");
        pos += len;
        break;
      case 5:
        if (end - pos < 4) corrupt(at, "a fixed32 field runs past the end");
        pos += 4;
        break;
      default:
        corrupt(at, "invalid protobuf wire type " + std::to_string(wt));
    }
  }
  if (count == 0) corrupt(pos, "no Checkpoint.Value entry");
  if (unknown_fields) {
    out.notes.push_back("skipped " + std::to_string(unknown_fields) +
                        " top-level field(s) this reader does not know");
  }
  for (Entry& e : out.entries)
    if (e.skipped.empty()) finish_entry(e, file);
}

// ---- .safetensors -------------------------------------------------------------------------------
bool looks_like_safetensors(const MappedFile& f) {
  if (f.size() < 10) return false;
  uint64_t n = 0;
  std::memcpy(&n, f.data(), 8);
  return n >= 2 && n <= f.size() - 8 && f.data()[8] == '{';
}

void parse_safetensors(const MappedFile& f, const std::string& file, Parsed& out) {
  out.format = CheckpointFormat::Safetensors;
  uint64_t hlen = 0;
  std::memcpy(&hlen, f.data(), 8);
  const char* h = reinterpret_cast<const char*>(f.data() + 8);
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(h, h + hlen);
  } catch (const std::exception& e) {
    throw RuntimeError("checkpoint " + file + " is a corrupt safetensors file: " + e.what());
  }
  if (!header.is_object())
    throw RuntimeError("checkpoint " + file + " is a corrupt safetensors file: no header object");
  size_t data_start = 8 + hlen, data_size = f.size() - data_start;
  nlohmann::json meta = header.value("__metadata__", nlohmann::json::object());
  for (const auto& item : header.items()) {
    // Not a structured binding: clang 14 cannot capture one in the lambda below.
    const std::string& name = item.key();
    const nlohmann::json& v = item.value();
    if (name == "__metadata__") continue;
    auto bad = [&](const std::string& why) {
      std::string msg = "checkpoint ";
      msg.append(file).append(" is a corrupt safetensors file: tensor '").append(name);
      msg.append("' ").append(why);
      throw RuntimeError(msg);
    };
    if (!v.is_object() || !v.contains("dtype") || !v["dtype"].is_string() || !v.contains("shape") ||
        !v["shape"].is_array() || !v.contains("data_offsets") || !v["data_offsets"].is_array() ||
        v["data_offsets"].size() != 2)
      bad("has no dtype, shape and data_offsets");
    Entry e;
    e.name = name;
    e.type_name = v["dtype"].get<std::string>();
    e.info = stored_info(e.type_name, CheckpointFormat::Safetensors);
    if (meta.is_object() && meta.contains(name) && meta[name] == "Int4") {
      e.info = stored_info("Int4", CheckpointFormat::Ckpt);
      e.type_name = "Int4";
    }
    for (const auto& d : v["shape"]) {
      if (!d.is_number_integer()) bad("has a non-integer dimension");
      e.shape.push_back(d.get<int64_t>());
    }
    const auto& off = v["data_offsets"];
    if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned()) bad("has bad data_offsets");
    uint64_t b = off[0].get<uint64_t>(), en = off[1].get<uint64_t>();
    if (b > en || en > data_size) {
      bad("has data_offsets [" + std::to_string(b) + ", " + std::to_string(en) +
          "] beyond the file's " + std::to_string(data_size) + " data bytes (truncated?)");
    }
    e.chunks.emplace_back(f.data() + data_start + b, en - b);
    e.offset = data_start + b;
    finish_entry(e, file);
    out.entries.push_back(std::move(e));
  }
  // File order (the header is a JSON object; nlohmann sorts it by name).
  std::stable_sort(out.entries.begin(), out.entries.end(),
                   [](const Entry& a, const Entry& b) { return a.offset < b.offset; });
}

Parsed parse_file(const MappedFile& f, const std::string& file) {
  Parsed p;
  // save_checkpoint(enc_key=...) writes blocks that start with MindSpore's cipher magic number
  // (mindspore/core/utils/crypto: 0x7F3A5ED8 AES-GCM, 0x7F3A5ED9 AES-CBC, 0x7F3A5EDA SM4-CBC).
  if (f.size() >= 4) {
    uint32_t magic = 0;
    std::memcpy(&magic, f.data(), 4);
    if (magic >= 0x7F3A5ED8u && magic <= 0x7F3A5EDAu) {
      const char* mode = magic == 0x7F3A5ED8u   ? "AES-GCM"
                         : magic == 0x7F3A5ED9u ? "AES-CBC"
                                                : "SM4-CBC";
      throw RuntimeError("checkpoint " + file +
                         " is encrypted (save_checkpoint(enc_key=..., enc_mode='" + mode +
                         "')), which is not supported: decrypt it in MindSpore "
                         "(load_checkpoint(..., dec_key=...)) and save it again without enc_key");
    }
  }
  if (looks_like_safetensors(f)) {
    parse_safetensors(f, file, p);
  } else {
    parse_ckpt(f, file, p);
  }
  return p;
}

// ---- conversion ---------------------------------------------------------------------------------
template <class Src>
Src load(const uint8_t* p) {
  Src v;
  std::memcpy(&v, p, sizeof(Src));
  return v;
}

template <class Dst>
Dst convert_one(Stored s, const uint8_t* p) {
  switch (s) {
    case Stored::F32:
      return static_cast<Dst>(load<float>(p));
    case Stored::F16:
      return static_cast<Dst>(static_cast<float>(std::bit_cast<Eigen::half>(load<uint16_t>(p))));
    case Stored::BF16:
      return static_cast<Dst>(
          static_cast<float>(std::bit_cast<Eigen::bfloat16>(load<uint16_t>(p))));
    case Stored::F64:
      return static_cast<Dst>(load<double>(p));
    case Stored::I8:
      return static_cast<Dst>(load<int8_t>(p));
    case Stored::I16:
      return static_cast<Dst>(load<int16_t>(p));
    case Stored::I32:
      return static_cast<Dst>(load<int32_t>(p));
    case Stored::I64:
      return static_cast<Dst>(load<int64_t>(p));
    case Stored::U8:
      return static_cast<Dst>(load<uint8_t>(p));
    case Stored::U16:
      return static_cast<Dst>(load<uint16_t>(p));
    case Stored::U32:
      return static_cast<Dst>(load<uint32_t>(p));
    case Stored::U64:
      return static_cast<Dst>(load<uint64_t>(p));
    case Stored::Bool:
      return static_cast<Dst>(p[0] != 0);
    default:
      return Dst{};
  }
}

// Called with each chunk of the mapping once its elements are copied (to drop its pages).
using ChunkDone = std::function<void(std::span<const uint8_t>)>;

// Copies the entry's elements into `dst` (whose shape has the entry's numel).
template <class Dst>
void convert_into(Dst* dst, const Entry& e, const ChunkDone& done) {
  const size_t es = e.info.size;
  // Same representation: one memcpy per chunk.
  bool same = (std::is_same_v<Dst, float> && e.info.type == Stored::F32) ||
              (std::is_same_v<Dst, int32_t> && e.info.type == Stored::I32) ||
              (std::is_same_v<Dst, int64_t> && e.info.type == Stored::I64) ||
              (std::is_same_v<Dst, uint8_t> && e.info.type == Stored::Bool);
  auto* out = reinterpret_cast<uint8_t*>(dst);
  std::vector<uint8_t> joined;  // only when a slice boundary splits an element
  std::vector<std::span<const uint8_t>> chunks = e.chunks;
  for (const auto& c : chunks) {
    if (c.size() % es) {
      joined.reserve(e.bytes());
      for (const auto& k : e.chunks) joined.insert(joined.end(), k.begin(), k.end());
      chunks.assign(1, std::span<const uint8_t>(joined));
      break;
    }
  }
  size_t k = 0;
  for (const auto& c : chunks) {
    if (same) {
      if (!c.empty()) std::memcpy(out + k * sizeof(Dst), c.data(), c.size());
      k += c.size() / es;
      if (done && joined.empty()) done(c);
      continue;
    }
    const size_t n = c.size() / es;
    for (size_t i = 0; i < n; ++i, ++k) {
      if constexpr (std::is_same_v<Dst, uint8_t>) {
        dst[k] = convert_one<double>(e.info.type, c.data() + i * es) != 0 ? 1 : 0;
      } else {
        dst[k] = convert_one<Dst>(e.info.type, c.data() + i * es);
      }
    }
    if (done && joined.empty()) done(c);
  }
}

Tensor to_tensor(const Entry& e, std::vector<int64_t> shape, DType dt, const ChunkDone& done = {}) {
  Tensor t(std::move(shape), dt);
  switch (dt) {
    case DType::Float32:
    case DType::Float16:
      convert_into(t.data<float>(), e, done);
      if (dt == DType::Float16 && e.info.type != Stored::F16) round_to_half(t);
      break;
    case DType::Int32:
      convert_into(t.data<int32_t>(), e, done);
      break;
    case DType::Int64:
      convert_into(t.data<int64_t>(), e, done);
      break;
    case DType::Bool:
      convert_into(t.data<uint8_t>(), e, done);
      break;
    default:
      throw RuntimeError("cannot hold dtype " + std::string(dtype_name(dt)));
  }
  return t;
}

// MindSpore's _type_convert (load_param_into_net, strict_load=False): float <-> float and
// int <-> int convert; anything else is a mismatch.
bool convertible(DType param, DType stored) {
  if (param == stored) return true;
  auto is_float = [](DType d) {
    return d == DType::Float16 || d == DType::Float32 || d == DType::Float64 ||
           d == DType::BFloat16;
  };
  auto is_int = [](DType d) {
    return d == DType::Int8 || d == DType::Int16 || d == DType::Int32 || d == DType::Int64;
  };
  return (is_float(param) && is_float(stored)) || (is_int(param) && is_int(stored));
}

std::string join_names(const std::vector<std::string>& names, size_t max) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < max; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > max) s += ", ... (" + std::to_string(names.size() - max) + " more)";
  return s;
}

}  // namespace

std::string_view checkpoint_format_name(CheckpointFormat f) {
  return f == CheckpointFormat::Safetensors ? "safetensors" : "ckpt";
}

std::vector<CheckpointTensor> read_checkpoint(const std::filesystem::path& file,
                                              CheckpointFormat* format) {
  MappedFile f(file);
  Parsed p = parse_file(f, file.string());
  if (format) *format = p.format;
  std::vector<CheckpointTensor> out;
  out.reserve(p.entries.size());
  for (const Entry& e : p.entries) {
    CheckpointTensor ct;
    ct.name = e.name;
    ct.stored_type = e.type_name;
    ct.shape = e.shape;
    ct.skipped = e.skipped;
    if (e.skipped.empty()) ct.value = to_tensor(e, e.shape, natural_dtype(e.info.type));
    out.push_back(std::move(ct));
  }
  return out;
}

std::string CheckpointLoad::summary(size_t max_names) const {
  std::string s = "loaded " + std::to_string(loaded.size()) + " of " +
                  std::to_string(loaded.size() + missing.size()) + " parameters from " +
                  file.string() + " (" + std::string(checkpoint_format_name(format)) + ")";
  if (!missing.empty()) {
    s += "\n  " + std::to_string(missing.size()) +
         " parameter(s) not in the file, kept at their initializer: " +
         join_names(missing, max_names);
  }
  if (!unexpected.empty()) {
    s += "\n  " + std::to_string(unexpected.size()) + " entr" +
         (unexpected.size() == 1 ? "y" : "ies") +
         " of the file that are no parameter of the Cell, ignored: " +
         join_names(unexpected, max_names);
  }
  for (const std::string& n : notes) s += "\n  note: " + n;
  return s;
}

CheckpointLoad Executor::load_checkpoint(const std::filesystem::path& file) {
  MappedFile f(file);
  const std::string fname = file.string();
  Parsed p = parse_file(f, fname);
  CheckpointLoad r;
  r.file = file;
  r.format = p.format;
  r.notes = p.notes;

  std::map<std::string_view, const Entry*> by_name;
  for (const Entry& e : p.entries) by_name[e.name] = &e;

  // Check everything before changing anything.
  std::vector<std::pair<size_t, const Entry*>> plan;  // params_ index, entry
  std::vector<std::string> errors;
  std::set<std::string_view> matched;
  for (size_t i = 0; i < params_.size(); ++i) {
    const ParamState& ps = params_[i];
    auto it = by_name.find(ps.name);
    if (it == by_name.end()) {
      r.missing.push_back(ps.name);
      continue;
    }
    const Entry& e = *it->second;
    matched.insert(e.name);
    DType declared = i < report_.params.size() ? report_.params[i].dtype : ps.value.dtype();
    if (!e.skipped.empty()) {
      errors.push_back("parameter '" + ps.name + "': the checkpoint stores " + e.skipped);
      continue;
    }
    bool shape_ok = e.shape == ps.value.shape();
    bool dtype_ok = e.info.dtype && convertible(declared, *e.info.dtype);
    if (!shape_ok || !dtype_ok) {
      std::string msg = "parameter '" + ps.name + "': ";
      if (!shape_ok) {
        msg += "shape " + shape_str(ps.value.shape()) + " in the model, " + shape_str(e.shape) +
               " in the checkpoint";
      }
      if (!dtype_ok) {
        msg += std::string(shape_ok ? "" : "; ") + "dtype " + std::string(dtype_name(declared)) +
               " in the model, " + e.type_name +
               " in the checkpoint (load_param_into_net converts only between float types or "
               "between integer types)";
      }
      errors.push_back(msg);
      continue;
    }
    plan.emplace_back(i, &e);
  }
  if (!errors.empty()) {
    std::string msg = "cannot load checkpoint " + fname + ": " + std::to_string(errors.size()) +
                      " parameter(s) of " + report_.name + " do not match it";
    for (size_t k = 0; k < errors.size() && k < 20; ++k) msg += "\n  " + errors[k];
    if (errors.size() > 20) msg += "\n  ... (" + std::to_string(errors.size() - 20) + " more)";
    throw RuntimeError(msg);
  }
  for (const Entry& e : p.entries)
    if (!matched.count(e.name)) r.unexpected.push_back(e.name);

  std::map<std::string, size_t> conversions;  // "Float16 -> float32" -> count
  for (auto [i, e] : plan) {
    ParamState& ps = params_[i];
    DType declared = i < report_.params.size() ? report_.params[i].dtype : ps.value.dtype();
    DType runtime_dtype = ps.value.dtype();  // Float16 for float32 parameters in Target precision
    ps.value = Tensor();  // release the initial value before allocating the loaded one
    // In slices of at most 16 MiB (whole elements), each slice's mapped pages dropped once
    // copied: the load's peak is the weights plus a constant, not plus the largest tensor.
    Entry sliced = *e;
    sliced.chunks.clear();
    const size_t step = std::max<size_t>(
        e->info.size, (size_t{16} << 20) / std::max<size_t>(e->info.size, 1) * e->info.size);
    for (const auto& chunk : e->chunks) {
      if (chunk.size() % std::max<size_t>(e->info.size, 1) != 0) {
        sliced.chunks = e->chunks;  // an element split across slices: copied as the reader joins it
        break;
      }
      for (size_t at = 0; at < chunk.size(); at += step) {
        sliced.chunks.push_back(chunk.subspan(at, std::min(step, chunk.size() - at)));
      }
    }
    ps.value = to_tensor(sliced, e->shape, runtime_dtype,
                         [&](std::span<const uint8_t> done) { f.release(done); });
    for (const auto& chunk : e->chunks) f.release(chunk);
    ps.source = InitSource::Loaded;
    ps.pending = false;
    ps.note = "loaded from " + fname;
    if (*e->info.dtype != declared) {
      ps.note += " (" + e->type_name + " converted to " + std::string(dtype_name(declared)) + ")";
      ++conversions[e->type_name + " -> " + std::string(dtype_name(declared))];
    }
    r.loaded.push_back(ps.name);
  }
  for (const auto& [what, n] : conversions) {
    r.notes.push_back(std::to_string(n) + " parameter(s) converted " + what +
                      " (as load_param_into_net does)");
  }
  return r;
}

}  // namespace graphcore::runtime
