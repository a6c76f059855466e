// The dataset reader (graphcore/dataset.h): mindspore.dataset's sources, transforms and pipeline
// operations over real files. Every fact here was checked against MindSpore 2.10 on CPU
// (tests/training/check_dataset.py compares batch by batch).
#include "graphcore/dataset.h"

#include <jpeglib.h>
#include <png.h>
#include <zlib.h>

#include <Eigen/Core>
#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <new>
#include <span>
#include <system_error>
#include <utility>

#include <unistd.h>

#include "graphcore/checked.h"
#include "internal.h"

namespace graphcore::runtime {

namespace fs = std::filesystem;

// ---- Element types ------------------------------------------------------------------------------

std::string_view data_type_name(DataType t) {
  switch (t) {
    case DataType::Bool:
      return "bool";
    case DataType::Int8:
      return "int8";
    case DataType::UInt8:
      return "uint8";
    case DataType::Int16:
      return "int16";
    case DataType::UInt16:
      return "uint16";
    case DataType::Int32:
      return "int32";
    case DataType::UInt32:
      return "uint32";
    case DataType::Int64:
      return "int64";
    case DataType::UInt64:
      return "uint64";
    case DataType::Float16:
      return "float16";
    case DataType::Float32:
      return "float32";
    case DataType::Float64:
      return "float64";
  }
  return "?";
}

std::optional<DataType> data_type_from_name(std::string_view name) {
  for (std::string_view prefix :
       {"mindspore.common.dtype.", "mindspore.", "mstype.", "ms.", "numpy.", "np.", "dtype."}) {
    if (name.starts_with(prefix)) {
      name.remove_prefix(prefix.size());
      break;
    }
  }
  static const std::pair<std::string_view, DataType> kNames[] = {
      {"bool", DataType::Bool},      {"bool_", DataType::Bool},      {"int8", DataType::Int8},
      {"uint8", DataType::UInt8},    {"int16", DataType::Int16},     {"uint16", DataType::UInt16},
      {"int32", DataType::Int32},    {"int", DataType::Int32},       {"uint32", DataType::UInt32},
      {"int64", DataType::Int64},    {"uint64", DataType::UInt64},   {"float16", DataType::Float16},
      {"half", DataType::Float16},   {"float32", DataType::Float32}, {"float", DataType::Float32},
      {"single", DataType::Float32}, {"float64", DataType::Float64}, {"double", DataType::Float64},
  };
  for (const auto& [n, t] : kNames) {
    if (n == name) return t;
  }
  return std::nullopt;
}

size_t data_type_size(DataType t) {
  switch (t) {
    case DataType::Bool:
    case DataType::Int8:
    case DataType::UInt8:
      return 1;
    case DataType::Int16:
    case DataType::UInt16:
    case DataType::Float16:
      return 2;
    case DataType::Int32:
    case DataType::UInt32:
    case DataType::Float32:
      return 4;
    case DataType::Int64:
    case DataType::UInt64:
    case DataType::Float64:
      return 8;
  }
  return 1;
}

bool is_float(DataType t) {
  return t == DataType::Float16 || t == DataType::Float32 || t == DataType::Float64;
}

namespace {

template <class T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <class T>
void store(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

// numpy's astype from a double: integers wrap modulo 2^bits (through int64, which truncates a
// float toward zero); out-of-range floats are a platform matter in numpy, here they saturate to
// int64 first.
int64_t to_int64_wrapping(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(v);
}

}  // namespace

HostArray HostArray::make(DataType dtype, std::vector<int64_t> shape) {
  auto n = checked_numel(shape);
  std::optional<size_t> bytes = n ? checked_bytes(*n, data_type_size(dtype)) : std::nullopt;
  HostArray a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  if (!bytes) {
    throw RuntimeError("array of shape " + shape_str(a.shape) + " is too large");
  }
  check_tensor_bytes(*bytes, "dataset array " + a.type_str());
  try {
    a.bytes.assign(*bytes, 0);
  } catch (const std::bad_alloc&) {
    throw RuntimeError("out of memory allocating dataset array " + a.type_str());
  }
  return a;
}

int64_t HostArray::numel() const { return checked_numel(shape).value_or(0); }

double HostArray::at(int64_t flat) const {
  const uint8_t* p = bytes.data() + static_cast<size_t>(flat) * data_type_size(dtype);
  switch (dtype) {
    case DataType::Bool:
      return *p != 0 ? 1.0 : 0.0;
    case DataType::Int8:
      return load<int8_t>(p);
    case DataType::UInt8:
      return *p;
    case DataType::Int16:
      return load<int16_t>(p);
    case DataType::UInt16:
      return load<uint16_t>(p);
    case DataType::Int32:
      return load<int32_t>(p);
    case DataType::UInt32:
      return load<uint32_t>(p);
    case DataType::Int64:
      return static_cast<double>(load<int64_t>(p));
    case DataType::UInt64:
      return static_cast<double>(load<uint64_t>(p));
    case DataType::Float16:
      return static_cast<float>(std::bit_cast<Eigen::half>(load<uint16_t>(p)));
    case DataType::Float32:
      return load<float>(p);
    case DataType::Float64:
      return load<double>(p);
  }
  return 0;
}

void HostArray::set(int64_t flat, double v) {
  uint8_t* p = bytes.data() + static_cast<size_t>(flat) * data_type_size(dtype);
  const auto i = static_cast<uint64_t>(to_int64_wrapping(v));
  switch (dtype) {
    case DataType::Bool:
      *p = v != 0 ? 1 : 0;
      break;
    case DataType::Int8:
    case DataType::UInt8:
      *p = static_cast<uint8_t>(i);
      break;
    case DataType::Int16:
    case DataType::UInt16:
      store(p, static_cast<uint16_t>(i));
      break;
    case DataType::Int32:
    case DataType::UInt32:
      store(p, static_cast<uint32_t>(i));
      break;
    case DataType::Int64:
    case DataType::UInt64:
      store(p, i);
      break;
    case DataType::Float16:
      store(p, std::bit_cast<uint16_t>(Eigen::half(static_cast<float>(v))));
      break;
    case DataType::Float32:
      store(p, static_cast<float>(v));
      break;
    case DataType::Float64:
      store(p, v);
      break;
  }
}

std::string HostArray::type_str() const {
  return shape_str(shape) + " " + std::string(data_type_name(dtype));
}

Tensor to_tensor(const HostArray& a) {
  DType t = DType::Float32;
  switch (a.dtype) {
    case DataType::Bool:
      t = DType::Bool;
      break;
    case DataType::Int8:
    case DataType::UInt8:
    case DataType::Int16:
    case DataType::UInt16:
    case DataType::Int32:
      t = DType::Int32;
      break;
    case DataType::UInt32:
    case DataType::Int64:
    case DataType::UInt64:
      t = DType::Int64;
      break;
    case DataType::Float16:
      t = DType::Float16;
      break;
    case DataType::Float32:
    case DataType::Float64:
      t = DType::Float32;
      break;
  }
  Tensor out(a.shape, t);
  const int64_t n = a.numel();
  if (a.dtype == DataType::Float32) {
    std::memcpy(out.data<float>(), a.bytes.data(), static_cast<size_t>(n) * sizeof(float));
  } else if (a.dtype == DataType::UInt8) {
    auto* o = out.data<int32_t>();
    for (int64_t i = 0; i < n; ++i) o[i] = a.bytes[static_cast<size_t>(i)];
  } else if (a.dtype == DataType::UInt64) {
    auto* o = out.data<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      const auto v = load<uint64_t>(a.bytes.data() + static_cast<size_t>(i) * 8);
      if (v > static_cast<uint64_t>(INT64_MAX)) {
        throw RuntimeError("uint64 value " + std::to_string(v) + " of " + a.type_str() +
                           " does not fit the runtime's int64");
      }
      o[i] = static_cast<int64_t>(v);
    }
  } else if (a.dtype == DataType::Int64) {
    std::memcpy(out.data<int64_t>(), a.bytes.data(), static_cast<size_t>(n) * 8);
  } else {
    for (int64_t i = 0; i < n; ++i) out.set(i, a.at(i));
  }
  return out;
}

namespace {

std::string npy_descr(DataType t) {
  switch (t) {
    case DataType::Bool:
      return "|b1";
    case DataType::Int8:
      return "|i1";
    case DataType::UInt8:
      return "|u1";
    case DataType::Int16:
      return "<i2";
    case DataType::UInt16:
      return "<u2";
    case DataType::Int32:
      return "<i4";
    case DataType::UInt32:
      return "<u4";
    case DataType::Int64:
      return "<i8";
    case DataType::UInt64:
      return "<u8";
    case DataType::Float16:
      return "<f2";
    case DataType::Float32:
      return "<f4";
    case DataType::Float64:
      return "<f8";
  }
  return "|u1";
}

std::optional<DataType> data_type_from_descr(std::string_view d) {
  if (d.size() < 3 || d[0] == '>') return std::nullopt;
  d.remove_prefix(1);
  static const std::pair<std::string_view, DataType> kDescr[] = {
      {"b1", DataType::Bool},    {"i1", DataType::Int8},    {"u1", DataType::UInt8},
      {"i2", DataType::Int16},   {"u2", DataType::UInt16},  {"i4", DataType::Int32},
      {"u4", DataType::UInt32},  {"i8", DataType::Int64},   {"u8", DataType::UInt64},
      {"f2", DataType::Float16}, {"f4", DataType::Float32}, {"f8", DataType::Float64},
  };
  for (const auto& [n, t] : kDescr) {
    if (n == d) return t;
  }
  return std::nullopt;
}

}  // namespace

std::string encode_array_npy(const HostArray& a) {
  std::string shape = "(";
  for (int64_t d : a.shape) shape += std::to_string(d) + ", ";
  if (a.shape.size() > 1) shape.resize(shape.size() - 2);
  if (a.shape.size() == 1) shape.pop_back();
  shape += ")";
  std::string header =
      "{'descr': '" + npy_descr(a.dtype) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Magic (6) + version (2) + length (2) + header + '\n', padded to a multiple of 64.
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string prefix = "\x93NUMPY\x01";
  prefix += '\0';
  prefix += static_cast<char>(header.size() & 0xff);
  prefix += static_cast<char>((header.size() >> 8) & 0xff);
  std::string out = prefix + header;
  out.append(reinterpret_cast<const char*>(a.bytes.data()), a.bytes.size());
  return out;
}

std::string encode_array_npz(const std::vector<std::pair<std::string, HostArray>>& arrays) {
  // A zip of stored (uncompressed) members NAME.npy, as np.savez writes: local headers, the
  // central directory, the end record. Sizes and offsets must fit 32 bits (no zip64).
  auto put16 = [](std::string& o, uint32_t v) {
    o += static_cast<char>(v & 0xff);
    o += static_cast<char>((v >> 8) & 0xff);
  };
  auto put32 = [&](std::string& o, uint32_t v) {
    put16(o, v & 0xffff);
    put16(o, v >> 16);
  };
  if (arrays.size() > 0xfffe) throw RuntimeError("a .npz holds at most 65534 arrays");
  std::string zip;
  std::string central;
  for (const auto& [name, a] : arrays) {
    const std::string member = name + ".npy";
    const std::string data = encode_array_npy(a);
    if (data.size() >= 0xffffffffULL ||
        zip.size() >= 0xffffffffULL - data.size() - 30 - member.size())
      throw RuntimeError("a .npz above 4 GiB is not written (zip64)");
    const auto crc = static_cast<uint32_t>(
        crc32(0L, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
    const auto offset = static_cast<uint32_t>(zip.size());
    const auto size = static_cast<uint32_t>(data.size());
    const auto name_len = static_cast<uint32_t>(member.size());
    // Local file header: version 2.0, no flags, stored, no time (1980-01-01), crc, sizes, name.
    put32(zip, 0x04034b50);
    put16(zip, 20);
    put16(zip, 0);
    put16(zip, 0);
    put16(zip, 0);
    put16(zip, 0x21);
    put32(zip, crc);
    put32(zip, size);
    put32(zip, size);
    put16(zip, name_len);
    put16(zip, 0);
    zip += member;
    zip += data;
    put32(central, 0x02014b50);
    put16(central, 20);
    put16(central, 20);
    put16(central, 0);
    put16(central, 0);
    put16(central, 0);
    put16(central, 0x21);
    put32(central, crc);
    put32(central, size);
    put32(central, size);
    put16(central, name_len);
    put16(central, 0);  // extra
    put16(central, 0);  // comment
    put16(central, 0);  // disk
    put16(central, 0);  // internal attributes
    put32(central, 0);  // external attributes
    put32(central, offset);
    central += member;
  }
  const auto cd_offset = static_cast<uint32_t>(zip.size());
  zip += central;
  put32(zip, 0x06054b50);
  put16(zip, 0);
  put16(zip, 0);
  put16(zip, static_cast<uint32_t>(arrays.size()));
  put16(zip, static_cast<uint32_t>(arrays.size()));
  put32(zip, static_cast<uint32_t>(central.size()));
  put32(zip, cd_offset);
  put16(zip, 0);
  return zip;
}

void write_array_npy(const fs::path& path, const HostArray& a) {
  const std::string bytes = encode_array_npy(a);
  fs::path tmp = path;
  tmp += ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      out.close();
      std::error_code ec;
      fs::remove(tmp, ec);
      throw RuntimeError("cannot write " + path.string());
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw RuntimeError("cannot write " + path.string() + ": " + ec.message());
  }
}

// ---- Plan calls and their arguments -------------------------------------------------------------
namespace {

std::string where(const PlanCall& c) {
  std::string s;
  if (!c.file.empty()) {
    s = c.file + ":" + std::to_string(c.range.start.line + 1) + ": ";
  }
  return s + c.api;
}

[[noreturn]] void fail(const PlanCall& c, const std::string& msg) {
  throw DatasetError(where(c) + ": " + msg);
}

const AttrValue* find_arg(const PlanCall& c, std::string_view name) {
  for (const Attr& a : c.args) {
    if (a.name == name) {
      return std::holds_alternative<std::monostate>(a.value) ? nullptr : &a.value;
    }
  }
  return nullptr;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

// "[a, b]", "(a, b)", "a": the items, brackets and quotes removed.
std::vector<std::string> split_list(std::string_view s) {
  s = trim(s);
  if (s.size() >= 2 &&
      ((s.front() == '[' && s.back() == ']') || (s.front() == '(' && s.back() == ')'))) {
    s = s.substr(1, s.size() - 2);
  }
  std::vector<std::string> out;
  while (true) {
    const size_t comma = s.find(',');
    std::string_view item = trim(s.substr(0, comma));
    if (item.size() >= 2 && (item.front() == '\'' || item.front() == '"') &&
        item.back() == item.front()) {
      item = item.substr(1, item.size() - 2);
    }
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

std::optional<double> parse_number(std::string_view s) {
  s = trim(s);
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<int64_t> arg_int(const PlanCall& c, std::string_view name) {
  const AttrValue* v = find_arg(c, name);
  if (!v) return std::nullopt;
  if (const auto* i = std::get_if<int64_t>(v)) return *i;
  if (const auto* d = std::get_if<double>(v)) {
    if (auto w = checked_whole<int64_t>(*d)) return *w;
  }
  fail(c, std::string(name) + " must be an integer, got " + attr_to_string(*v));
}

std::optional<double> arg_double(const PlanCall& c, std::string_view name) {
  const AttrValue* v = find_arg(c, name);
  if (!v) return std::nullopt;
  if (const auto* i = std::get_if<int64_t>(v)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(v)) return *d;
  if (const auto* s = std::get_if<std::string>(v)) {
    if (auto n = parse_number(*s)) return *n;
  }
  fail(c, std::string(name) + " must be a number, got " + attr_to_string(*v));
}

std::optional<bool> arg_bool(const PlanCall& c, std::string_view name) {
  const AttrValue* v = find_arg(c, name);
  if (!v) return std::nullopt;
  if (const auto* b = std::get_if<bool>(v)) return *b;
  fail(c, std::string(name) + " must be True or False, got " + attr_to_string(*v));
}

std::optional<std::string> arg_str(const PlanCall& c, std::string_view name) {
  const AttrValue* v = find_arg(c, name);
  if (!v) return std::nullopt;
  if (const auto* s = std::get_if<std::string>(v)) return *s;
  fail(c, std::string(name) + " must be a string, got " + attr_to_string(*v));
}

// A number or a list of numbers (ints, or a string in list syntax).
std::optional<std::vector<double>> arg_numbers(const PlanCall& c, std::string_view name) {
  const AttrValue* v = find_arg(c, name);
  if (!v) return std::nullopt;
  if (const auto* i = std::get_if<int64_t>(v)) return std::vector<double>{static_cast<double>(*i)};
  if (const auto* d = std::get_if<double>(v)) return std::vector<double>{*d};
  if (const auto* xs = std::get_if<std::vector<int64_t>>(v)) {
    return std::vector<double>(xs->begin(), xs->end());
  }
  if (const auto* s = std::get_if<std::string>(v)) {
    std::vector<double> out;
    for (const std::string& item : split_list(*s)) {
      auto n = parse_number(item);
      if (!n) fail(c, std::string(name) + ": '" + item + "' is not a number");
      out.push_back(*n);
    }
    return out;
  }
  fail(c, std::string(name) + " must be a number or a list of numbers, got " + attr_to_string(*v));
}

std::optional<std::vector<int64_t>> arg_ints(const PlanCall& c, std::string_view name) {
  auto xs = arg_numbers(c, name);
  if (!xs) return std::nullopt;
  std::vector<int64_t> out;
  for (double x : *xs) {
    auto w = checked_whole<int64_t>(x);
    if (!w)
      fail(c, std::string(name) + " must be integers, got " + attr_to_string(*find_arg(c, name)));
    out.push_back(*w);
  }
  return out;
}

std::optional<std::vector<std::string>> arg_strings(const PlanCall& c, std::string_view name) {
  const AttrValue* v = find_arg(c, name);
  if (!v) return std::nullopt;
  if (const auto* s = std::get_if<std::string>(v)) return split_list(*s);
  fail(c, std::string(name) + " must be a string or a list of strings, got " + attr_to_string(*v));
}

// Arguments this reader does not implement must keep their defaults.
void require_default(const PlanCall& c, std::string_view name, std::string_view why) {
  if (find_arg(c, name)) {
    fail(c, std::string(name) + "=" + attr_to_string(*find_arg(c, name)) + " is not supported (" +
                std::string(why) + ")");
  }
}

uint64_t mix(uint64_t a, uint64_t b) {
  Rng r(a ^ (b * 0x9E3779B97F4A7C15ull));
  return r.next();
}

// Uniform integer in [0, n).
int64_t uniform_int(Rng& rng, int64_t n) {
  return n <= 1 ? 0 : static_cast<int64_t>(rng.next() % static_cast<uint64_t>(n));
}

// ---- Files --------------------------------------------------------------------------------------

std::vector<uint8_t> read_whole_file(const fs::path& p, const std::string& what) {
  std::ifstream in(p, std::ios::binary | std::ios::ate);
  if (!in) throw DatasetError(what + ": cannot open " + p.string());
  const std::streamoff size = in.tellg();
  if (size < 0) throw DatasetError(what + ": cannot read " + p.string());
  check_tensor_bytes(static_cast<size_t>(size), p.string());
  std::vector<uint8_t> data;
  try {
    data.resize(static_cast<size_t>(size));
  } catch (const std::bad_alloc&) {
    throw DatasetError(what + ": out of memory reading " + p.string());
  }
  in.seekg(0);
  if (size > 0 && !in.read(reinterpret_cast<char*>(data.data()), size)) {
    throw DatasetError(what + ": cannot read " + p.string());
  }
  return data;
}

uint32_t be32(const uint8_t* p) {
  return (static_cast<uint32_t>(p[0]) << 24) | (static_cast<uint32_t>(p[1]) << 16) |
         (static_cast<uint32_t>(p[2]) << 8) | p[3];
}
uint32_t le32(const uint8_t* p) {
  return p[0] | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}
uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

// ---- .npy / .npz --------------------------------------------------------------------------------

// The header of a .npy: its element type and shape, and where the data starts.
struct NpyHeader {
  DataType dtype = DataType::Float32;
  std::vector<int64_t> shape;
  size_t data_offset = 0;
};

NpyHeader parse_npy_header(const uint8_t* data, size_t size, const std::string& name) {
  auto bad = [&](const std::string& why) -> DatasetError {
    return DatasetError(name + ": not a readable .npy array: " + why);
  };
  if (size < 10 || std::memcmp(data, "\x93NUMPY", 6) != 0) throw bad("bad magic");
  size_t header_len = 0;
  size_t pos = 0;
  if (data[6] == 1) {
    header_len = le16(data + 8);
    pos = 10;
  } else if (data[6] == 2 || data[6] == 3) {
    if (size < 12) throw bad("truncated header");
    header_len = le32(data + 8);
    pos = 12;
  } else {
    throw bad("version " + std::to_string(data[6]));
  }
  if (header_len > size - pos) throw bad("truncated header");
  const std::string header(reinterpret_cast<const char*>(data + pos), header_len);
  pos += header_len;
  auto field = [&](const std::string& key) -> std::string {
    const size_t k = header.find("'" + key + "'");
    if (k == std::string::npos) throw bad("no '" + key + "' in the header");
    const size_t colon = header.find(':', k);
    const size_t b = colon == std::string::npos ? colon : header.find_first_not_of(' ', colon + 1);
    if (b == std::string::npos) throw bad("no value for '" + key + "'");
    if (header[b] == '\'') return header.substr(b + 1, header.find('\'', b + 1) - b - 1);
    if (header[b] == '(') return header.substr(b + 1, header.find(')', b) - b - 1);
    return header.substr(b, header.find_first_of(",}", b) - b);
  };
  const std::string descr = field("descr");
  const auto dtype = data_type_from_descr(descr);
  if (!dtype) throw bad("unsupported dtype '" + descr + "'");
  if (field("fortran_order").starts_with("True")) throw bad("Fortran order is not supported");
  std::vector<int64_t> shape;
  for (const std::string& item : split_list(field("shape"))) {
    int64_t d = -1;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), d);
    if (ec != std::errc() || end != item.data() + item.size() || d < 0) {
      throw bad("bad dimension '" + item + "'");
    }
    shape.push_back(d);
  }
  return NpyHeader{*dtype, std::move(shape), pos};
}

HostArray parse_npy(const uint8_t* data, size_t size, const std::string& name) {
  NpyHeader h = parse_npy_header(data, size, name);
  const size_t pos = h.data_offset;
  // The header's size against the bytes there, before anything is allocated (checked
  // arithmetic: a header may claim any shape).
  std::optional<uint64_t> bytes_needed = data_type_size(h.dtype);
  for (const int64_t d : h.shape) {
    if (bytes_needed) bytes_needed = checked_mul<uint64_t>(*bytes_needed, static_cast<uint64_t>(d));
  }
  const bool overflow = !bytes_needed;
  const uint64_t want = bytes_needed.value_or(0);
  if (overflow || want != size - pos) {
    HostArray shape_only;
    shape_only.dtype = h.dtype;
    shape_only.shape = h.shape;
    throw DatasetError(name + ": not a readable .npy array: expected " +
                       (overflow ? std::string("more than 2^64") : std::to_string(want)) +
                       " data bytes for " + shape_only.type_str() + ", found " +
                       std::to_string(size - pos));
  }
  HostArray a = HostArray::make(h.dtype, std::move(h.shape));
  if (!a.bytes.empty()) std::memcpy(a.bytes.data(), data + pos, a.bytes.size());
  return a;
}

// The arrays of a .npz (a zip of .npy members, stored or deflated), in the archive's order;
// `name` starts every message.
std::vector<std::pair<std::string, HostArray>> parse_npz(std::span<const uint8_t> zip,
                                                         const std::string& name,
                                                         size_t max_bytes) {
  size_t total = 0;  // the members' uncompressed bytes so far
  auto bad = [&](const std::string& why) -> DatasetError {
    return DatasetError(name + " is not a readable .npz archive: " + why);
  };
  // The end-of-central-directory record: 22 bytes plus a comment of up to 64 KiB, at the end.
  if (zip.size() < 22) throw bad("too short (" + std::to_string(zip.size()) + " bytes)");
  size_t eocd = std::string::npos;
  for (size_t i = zip.size() - 22;; --i) {
    if (le32(zip.data() + i) == 0x06054b50) {
      eocd = i;
      break;
    }
    if (i == 0 || zip.size() - i > 22 + 65535) break;
  }
  if (eocd == std::string::npos) throw bad("no end-of-central-directory record");
  const uint16_t entries = le16(zip.data() + eocd + 10);
  const uint32_t cd_offset = le32(zip.data() + eocd + 16);
  if (cd_offset == 0xFFFFFFFFu || entries == 0xFFFF) throw bad("zip64 archives are not supported");
  std::vector<std::pair<std::string, HostArray>> out;
  size_t p = cd_offset;
  for (uint16_t e = 0; e < entries; ++e) {
    if (p > zip.size() || zip.size() - p < 46 || le32(zip.data() + p) != 0x02014b50) {
      throw bad("corrupt central directory");
    }
    const uint16_t method = le16(zip.data() + p + 10);
    const uint32_t csize = le32(zip.data() + p + 20);
    const uint32_t usize = le32(zip.data() + p + 24);
    const uint16_t name_len = le16(zip.data() + p + 28);
    const uint16_t extra_len = le16(zip.data() + p + 30);
    const uint16_t comment_len = le16(zip.data() + p + 32);
    const uint32_t local = le32(zip.data() + p + 42);
    if (zip.size() - p - 46 < name_len) throw bad("corrupt central directory");
    std::string member(reinterpret_cast<const char*>(zip.data() + p + 46), name_len);
    p += 46ull + name_len + extra_len + comment_len;
    if (csize == 0xFFFFFFFFu || usize == 0xFFFFFFFFu || local == 0xFFFFFFFFu) {
      throw bad("zip64 members are not supported");
    }
    if (local > zip.size() || zip.size() - local < 30 || le32(zip.data() + local) != 0x04034b50) {
      throw bad("corrupt local header of " + member);
    }
    const size_t data_at =
        local + 30ull + le16(zip.data() + local + 26) + le16(zip.data() + local + 28);
    if (data_at > zip.size() || zip.size() - data_at < csize) {
      throw bad(member + ": expected " + std::to_string(csize) + " compressed bytes, found " +
                std::to_string(data_at > zip.size() ? 0 : zip.size() - data_at));
    }
    // Checked before anything is allocated or inflated: a small archive may claim a huge member.
    if (usize > max_bytes - total) {
      throw bad(member + ": " + std::to_string(usize) + " bytes uncompressed, above the " +
                std::to_string(max_bytes) + " allowed");
    }
    total += usize;
    std::vector<uint8_t> raw;
    const uint8_t* bytes = zip.data() + data_at;
    size_t nbytes = csize;
    if (method == 8) {
      check_tensor_bytes(usize, member);
      raw.resize(usize);
      z_stream zs{};
      if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) throw bad("zlib initialisation failed");
      zs.next_in = const_cast<Bytef*>(bytes);
      zs.avail_in = csize;
      zs.next_out = raw.data();
      zs.avail_out = usize;
      const int rc = inflate(&zs, Z_FINISH);
      const auto produced = zs.total_out;
      inflateEnd(&zs);
      if (rc != Z_STREAM_END || produced != usize) {
        throw bad(member + ": corrupt deflate data (" + std::to_string(produced) + " of " +
                  std::to_string(usize) + " bytes inflated)");
      }
      bytes = raw.data();
      nbytes = usize;
    } else if (method != 0) {
      throw bad(member + ": compression method " + std::to_string(method) +
                " (only stored and deflated members are read)");
    }
    if (member.ends_with(".npy")) member.resize(member.size() - 4);
    std::string label = name;
    label.append(" member ").append(member);
    out.emplace_back(member, parse_npy(bytes, nbytes, label));
  }
  return out;
}

std::vector<std::pair<std::string, HostArray>> read_npz(const fs::path& path,
                                                        const std::string& what) {
  const std::vector<uint8_t> zip = read_whole_file(path, what);
  return parse_npz(zip, what + ": " + path.string(), max_tensor_bytes());
}

// ---- Image decoding -----------------------------------------------------------------------------
// libjpeg and libpng report errors by longjmp: the functions that call setjmp hold only trivially
// destructible locals, and the pixel buffer is allocated by the caller between the header and the
// pixel phase.

struct PngState {
  png_structp png = nullptr;
  png_infop info = nullptr;
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t pos = 0;
  uint32_t width = 0, height = 0;
  size_t rowbytes = 0;
  char error[200] = {};
};

void png_read_mem(png_structp png, png_bytep out, png_size_t n) {
  auto* s = static_cast<PngState*>(png_get_io_ptr(png));
  if (s->size - s->pos < n) png_error(png, "truncated file");
  std::memcpy(out, s->data + s->pos, n);
  s->pos += n;
}
void png_on_error(png_structp png, png_const_charp msg) {
  auto* s = static_cast<PngState*>(png_get_error_ptr(png));
  std::snprintf(s->error, sizeof(s->error), "%s", msg);
  png_longjmp(png, 1);
}
void png_on_warning(png_structp /*png*/, png_const_charp /*msg*/) {}

// Header and transforms to 8-bit RGB (palette expanded, gray replicated, alpha dropped, 16-bit
// reduced to its high byte), as OpenCV's IMREAD_COLOR read gives MindSpore.
bool png_begin(PngState* s) {
  s->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, s, png_on_error, png_on_warning);
  if (!s->png) return false;
  s->info = png_create_info_struct(s->png);
  if (!s->info) return false;
  if (setjmp(png_jmpbuf(s->png))) return false;
  png_set_read_fn(s->png, s, png_read_mem);
  png_read_info(s->png, s->info);
  const int color = png_get_color_type(s->png, s->info);
  if (png_get_bit_depth(s->png, s->info) == 16) png_set_strip_16(s->png);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(s->png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) {
    png_set_expand_gray_1_2_4_to_8(s->png);
    png_set_gray_to_rgb(s->png);
  }
  if (png_get_valid(s->png, s->info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(s->png);
  png_set_strip_alpha(s->png);
  png_set_interlace_handling(s->png);
  png_read_update_info(s->png, s->info);
  s->width = png_get_image_width(s->png, s->info);
  s->height = png_get_image_height(s->png, s->info);
  s->rowbytes = png_get_rowbytes(s->png, s->info);
  return true;
}

bool png_pixels(PngState* s, png_bytepp rows) {
  if (setjmp(png_jmpbuf(s->png))) return false;
  png_read_image(s->png, rows);
  png_read_end(s->png, nullptr);
  return true;
}

HostArray decode_png(const std::vector<uint8_t>& file, const std::string& name) {
  PngState s;
  s.data = file.data();
  s.size = file.size();
  struct Cleanup {
    PngState& s;
    ~Cleanup() {
      if (s.png) png_destroy_read_struct(&s.png, s.info ? &s.info : nullptr, nullptr);
    }
  } cleanup{s};
  if (!png_begin(&s)) {
    throw DatasetError("cannot decode PNG image " + name + ": " +
                       (s.error[0] ? s.error : "libpng failed"));
  }
  if (s.rowbytes != static_cast<size_t>(s.width) * 3) {
    throw DatasetError("cannot decode PNG image " + name + ": unexpected row size");
  }
  HostArray a = HostArray::make(DataType::UInt8, {s.height, s.width, 3});
  std::vector<png_bytep> rows(s.height);
  for (uint32_t y = 0; y < s.height; ++y) rows[y] = a.bytes.data() + y * s.rowbytes;
  if (!png_pixels(&s, rows.data())) {
    throw DatasetError("cannot decode PNG image " + name + ": " +
                       (s.error[0] ? s.error : "libpng failed"));
  }
  return a;
}

struct JpegState {
  jpeg_decompress_struct cinfo{};
  jpeg_error_mgr jerr{};
  std::jmp_buf jump{};
  char error[JMSG_LENGTH_MAX] = {};
  bool created = false;
};

void jpeg_on_error(j_common_ptr cinfo) {
  auto* s = static_cast<JpegState*>(cinfo->client_data);
  (*cinfo->err->format_message)(cinfo, s->error);
  std::longjmp(s->jump, 1);
}
// Level -1 is corrupt data libjpeg decodes around (a truncated file comes out padded with gray):
// kept, and reported as an error, so that damaged data never trains silently.
void jpeg_on_message(j_common_ptr cinfo, int level) {
  if (level != -1) return;
  auto* s = static_cast<JpegState*>(cinfo->client_data);
  ++cinfo->err->num_warnings;
  if (s->error[0] == '\0') (*cinfo->err->format_message)(cinfo, s->error);
}

bool jpeg_begin(JpegState* s, const uint8_t* data, size_t size) {
  s->cinfo.err = jpeg_std_error(&s->jerr);
  s->jerr.error_exit = jpeg_on_error;
  s->jerr.emit_message = jpeg_on_message;
  s->cinfo.client_data = s;
  if (setjmp(s->jump)) return false;
  jpeg_create_decompress(&s->cinfo);
  s->created = true;
  jpeg_mem_src(&s->cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&s->cinfo, TRUE);
  s->cinfo.out_color_space = JCS_RGB;  // grayscale replicated; CMYK/YCCK fail here
  jpeg_start_decompress(&s->cinfo);
  return true;
}

bool jpeg_pixels(JpegState* s, uint8_t* out, size_t rowbytes) {
  if (setjmp(s->jump)) return false;
  while (s->cinfo.output_scanline < s->cinfo.output_height) {
    JSAMPROW row = out + static_cast<size_t>(s->cinfo.output_scanline) * rowbytes;
    jpeg_read_scanlines(&s->cinfo, &row, 1);
  }
  jpeg_finish_decompress(&s->cinfo);
  return true;
}

HostArray decode_jpeg(const std::vector<uint8_t>& file, const std::string& name) {
  auto s = std::make_unique<JpegState>();
  struct Cleanup {
    JpegState& s;
    ~Cleanup() {
      if (s.created) jpeg_destroy_decompress(&s.cinfo);
    }
  } cleanup{*s};
  if (!jpeg_begin(s.get(), file.data(), file.size())) {
    throw DatasetError("cannot decode JPEG image " + name + ": " + s->error);
  }
  if (s->cinfo.output_components != 3) {
    throw DatasetError("cannot decode JPEG image " + name + ": " +
                       std::to_string(s->cinfo.output_components) + " output components");
  }
  HostArray a =
      HostArray::make(DataType::UInt8, {s->cinfo.output_height, s->cinfo.output_width, 3});
  if (!jpeg_pixels(s.get(), a.bytes.data(), static_cast<size_t>(s->cinfo.output_width) * 3) ||
      s->jerr.num_warnings > 0) {
    throw DatasetError("cannot decode JPEG image " + name + ": " + s->error);
  }
  return a;
}

HostArray decode_image(const fs::path& path) {
  const std::vector<uint8_t> file = read_whole_file(path, "ImageFolderDataset");
  const std::string name = path.string();
  if (file.size() >= 8 && std::memcmp(file.data(), "\x89PNG\r\n\x1a\n", 8) == 0) {
    return decode_png(file, name);
  }
  if (file.size() >= 3 && file[0] == 0xFF && file[1] == 0xD8 && file[2] == 0xFF) {
    return decode_jpeg(file, name);
  }
  throw DatasetError("cannot decode image " + name +
                     ": not a JPEG or PNG file (the formats the reader decodes)");
}

// ---- Transforms ---------------------------------------------------------------------------------

using Row = std::vector<HostArray>;

struct TransformCtx {
  const PlanCall& call;
  const std::string& column;
  Rng& rng;
};

[[noreturn]] void transform_fail(const TransformCtx& t, const HostArray& in,
                                 const std::string& why) {
  fail(t.call, "column '" + t.column + "' (" + in.type_str() + "): " + why);
}

// (H, W, C) of an image: rank 2 is (H, W) with one channel, rank 3 is HWC.
struct ImageDims {
  int64_t h, w, c;
};
ImageDims image_dims(const TransformCtx& t, const HostArray& in) {
  if (in.shape.size() == 2) return {in.shape[0], in.shape[1], 1};
  if (in.shape.size() == 3) return {in.shape[0], in.shape[1], in.shape[2]};
  transform_fail(t, in, "expects an image of rank 2 (H, W) or 3 (H, W, C)");
}
std::vector<int64_t> image_shape(const HostArray& in, int64_t h, int64_t w) {
  if (in.shape.size() == 2) return {h, w};
  return {h, w, in.shape[2]};
}

// A (height, width) size argument: one int (square, or for Resize the shorter side) or two.
std::vector<int64_t> size_arg(const PlanCall& c, std::string_view name) {
  auto s = arg_ints(c, name);
  if (!s || s->empty() || s->size() > 2)
    fail(c, std::string(name) + " must be an int or (height, width)");
  for (int64_t d : *s) {
    if (d <= 0) fail(c, std::string(name) + " must be positive, got " + std::to_string(d));
  }
  return *s;
}

HostArray t_rescale(const TransformCtx& t, const HostArray& in) {
  const auto scale = static_cast<float>(arg_double(t.call, "rescale").value_or(1.0));
  const auto shift = static_cast<float>(arg_double(t.call, "shift").value_or(0.0));
  HostArray out = HostArray::make(DataType::Float32, in.shape);
  auto* o = reinterpret_cast<float*>(out.bytes.data());
  for (int64_t i = 0; i < in.numel(); ++i) {
    o[i] = static_cast<float>(in.at(i)) * scale + shift;
  }
  return out;
}

HostArray t_normalize(const TransformCtx& t, const HostArray& in) {
  const auto mean = arg_numbers(t.call, "mean");
  const auto std_ = arg_numbers(t.call, "std");
  if (!mean || !std_) fail(t.call, "mean and std are required");
  if (mean->size() != std_->size()) {
    fail(t.call, "mean has " + std::to_string(mean->size()) + " values and std " +
                     std::to_string(std_->size()));
  }
  for (double s : *std_) {
    if (!(s > 0)) fail(t.call, "std values must be positive");
  }
  const bool hwc = arg_bool(t.call, "is_hwc").value_or(true);
  if (in.shape.size() < 2) transform_fail(t, in, "expects an image of rank 2 or more");
  // Channels are the last dim (HWC) or the first of the last three (CHW); rank 2 is one channel.
  int64_t channels = 1;
  if (in.shape.size() >= 3) channels = hwc ? in.shape.back() : in.shape[in.shape.size() - 3];
  if (mean->size() != 1 && static_cast<int64_t>(mean->size()) != channels) {
    transform_fail(t, in,
                   "number of channels (" + std::to_string(channels) + ") does not match the " +
                       std::to_string(mean->size()) + " values of mean and std");
  }
  HostArray out = HostArray::make(DataType::Float32, in.shape);
  auto* o = reinterpret_cast<float*>(out.bytes.data());
  const int64_t n = in.numel();
  int64_t plane = 1;  // CHW: elements per channel plane
  if (!hwc && in.shape.size() >= 3) plane = in.shape[in.shape.size() - 2] * in.shape.back();
  for (int64_t i = 0; i < n; ++i) {
    int64_t ch = 0;
    if (mean->size() > 1) ch = hwc ? i % channels : (i / plane) % channels;
    const auto m = static_cast<float>((*mean)[static_cast<size_t>(ch)]);
    const auto s = static_cast<float>((*std_)[static_cast<size_t>(ch)]);
    o[i] = (static_cast<float>(in.at(i)) - m) / s;
  }
  return out;
}

HostArray t_hwc2chw(const TransformCtx& t, const HostArray& in) {
  if (in.shape.size() == 2) return in;  // MindSpore passes (H, W) through unchanged
  if (in.shape.size() != 3) transform_fail(t, in, "expects an image of rank 3 (H, W, C)");
  const int64_t h = in.shape[0], w = in.shape[1], c = in.shape[2];
  HostArray out = HostArray::make(in.dtype, {c, h, w});
  const size_t es = data_type_size(in.dtype);
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      for (int64_t k = 0; k < c; ++k) {
        std::memcpy(out.bytes.data() + static_cast<size_t>((k * h + y) * w + x) * es,
                    in.bytes.data() + static_cast<size_t>((y * w + x) * c + k) * es, es);
      }
    }
  }
  return out;
}

// Bilinear resizing as OpenCV's INTER_LINEAR computes it (MindSpore's CPU Resize runs it): source
// coordinates with half-pixel centres; columns clamped at the borders (weight 0 past them), rows
// not (the row index is clipped, the weights kept); each weight rounded to 11-bit fixed point on
// its own (half to even). Checked pixel for pixel against MindSpore on random sizes.
struct LinearTap {
  int64_t i0, i1;
  float w0, w1;    // float weights
  int32_t a0, a1;  // fixed point (2048 = 1)
};
// OpenCV's scale, the reciprocal of dst/src: it differs from src/dst in the last bit for some
// sizes, which moves a nearest-neighbour tap at exact boundaries (27 -> 33 rows).
double resize_scale(int64_t src, int64_t dst) {
  return 1.0 / (static_cast<double>(dst) / static_cast<double>(src));
}

std::vector<LinearTap> linear_taps(int64_t src, int64_t dst, bool clamp) {
  std::vector<LinearTap> taps(static_cast<size_t>(dst));
  const double scale = resize_scale(src, dst);
  for (int64_t d = 0; d < dst; ++d) {
    auto fx = static_cast<float>((static_cast<double>(d) + 0.5) * scale - 0.5);
    auto sx = static_cast<int64_t>(std::floor(fx));
    fx -= static_cast<float>(sx);
    if (clamp && sx < 0) {
      fx = 0;
      sx = 0;
    }
    if (clamp && sx >= src - 1) {
      fx = 0;
      sx = src - 1;
    }
    LinearTap& t = taps[static_cast<size_t>(d)];
    t.i0 = std::clamp<int64_t>(sx, 0, src - 1);
    t.i1 = std::clamp<int64_t>(sx + 1, 0, src - 1);
    t.w0 = 1.0f - fx;
    t.w1 = fx;
    t.a0 = static_cast<int32_t>(std::nearbyint(t.w0 * 2048.0f));
    t.a1 = static_cast<int32_t>(std::nearbyint(t.w1 * 2048.0f));
  }
  return taps;
}

HostArray t_resize(const TransformCtx& t, const HostArray& in) {
  const std::vector<int64_t> size = size_arg(t.call, "size");
  const ImageDims dims = image_dims(t, in);
  const int64_t h = dims.h, w = dims.w, c = dims.c;
  if (h == 0 || w == 0) transform_fail(t, in, "cannot resize an empty image");
  int64_t oh = 0, ow = 0;
  if (size.size() == 2) {
    oh = size[0];
    ow = size[1];
  } else if (h <= w) {  // one int: the shorter side becomes size, the other keeps the ratio
    oh = size[0];
    ow = static_cast<int64_t>(
        std::floor(static_cast<double>(w) * static_cast<double>(size[0]) / static_cast<double>(h)));
  } else {
    ow = size[0];
    oh = static_cast<int64_t>(
        std::floor(static_cast<double>(h) * static_cast<double>(size[0]) / static_cast<double>(w)));
  }
  if (oh <= 0 || ow <= 0 || oh > 1 << 20 || ow > 1 << 20) {
    transform_fail(
        t, in,
        "output size (" + std::to_string(oh) + ", " + std::to_string(ow) + ") is out of range");
  }
  std::string interp = "bilinear";
  if (const AttrValue* v = find_arg(t.call, "interpolation")) {
    if (const auto* s = std::get_if<std::string>(v)) {
      interp = *s;
      if (auto dot = interp.rfind('.'); dot != std::string::npos) interp = interp.substr(dot + 1);
      std::transform(interp.begin(), interp.end(), interp.begin(),
                     [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
      if (interp == "linear") interp = "bilinear";
    } else if (const auto* i = std::get_if<int64_t>(v)) {
      interp = *i == 2 ? "bilinear" : *i == 0 ? "nearest" : "#" + std::to_string(*i);
    }
  }
  if (interp != "bilinear" && interp != "nearest") {
    fail(t.call, "interpolation " + interp + " is not supported (Inter.BILINEAR, Inter.NEAREST)");
  }
  if (in.dtype != DataType::UInt8 && in.dtype != DataType::Float32) {
    transform_fail(t, in, "Resize reads uint8 or float32 images");
  }
  HostArray out = HostArray::make(in.dtype, image_shape(in, oh, ow));
  if (interp == "nearest") {
    const size_t es = data_type_size(in.dtype);
    for (int64_t y = 0; y < oh; ++y) {
      const int64_t sy = std::min(
          h - 1, static_cast<int64_t>(std::floor(static_cast<double>(y) * resize_scale(h, oh))));
      for (int64_t x = 0; x < ow; ++x) {
        const int64_t sx = std::min(
            w - 1, static_cast<int64_t>(std::floor(static_cast<double>(x) * resize_scale(w, ow))));
        std::memcpy(out.bytes.data() + static_cast<size_t>((y * ow + x) * c) * es,
                    in.bytes.data() + static_cast<size_t>((sy * w + sx) * c) * es,
                    static_cast<size_t>(c) * es);
      }
    }
    return out;
  }
  const std::vector<LinearTap> xs = linear_taps(w, ow, true);
  const std::vector<LinearTap> ys = linear_taps(h, oh, false);
  if (in.dtype == DataType::UInt8) {
    // OpenCV's 8-bit path: horizontal taps in fixed point into int rows, then the vertical blend
    // as its SIMD kernel computes it (each row >> 4, times the weight, >> 16, summed, + 2, >> 2).
    const uint8_t* src = in.bytes.data();
    std::vector<int32_t> r0(static_cast<size_t>(ow * c)), r1(static_cast<size_t>(ow * c));
    auto hrow = [&](int64_t sy, std::vector<int32_t>& row) {
      for (int64_t x = 0; x < ow; ++x) {
        const LinearTap& tx = xs[static_cast<size_t>(x)];
        for (int64_t k = 0; k < c; ++k) {
          row[static_cast<size_t>(x * c + k)] =
              src[(sy * w + tx.i0) * c + k] * tx.a0 + src[(sy * w + tx.i1) * c + k] * tx.a1;
        }
      }
    };
    for (int64_t y = 0; y < oh; ++y) {
      const LinearTap& ty = ys[static_cast<size_t>(y)];
      hrow(ty.i0, r0);
      hrow(ty.i1, r1);
      uint8_t* dst = out.bytes.data() + static_cast<size_t>(y * ow * c);
      for (int64_t i = 0; i < ow * c; ++i) {
        const int32_t v = (((r0[static_cast<size_t>(i)] >> 4) * ty.a0) >> 16) +
                          (((r1[static_cast<size_t>(i)] >> 4) * ty.a1) >> 16);
        dst[i] = static_cast<uint8_t>(std::clamp((v + 2) >> 2, 0, 255));
      }
    }
  } else {
    const auto* src = reinterpret_cast<const float*>(in.bytes.data());
    auto* dst = reinterpret_cast<float*>(out.bytes.data());
    for (int64_t y = 0; y < oh; ++y) {
      const LinearTap& ty = ys[static_cast<size_t>(y)];
      for (int64_t x = 0; x < ow; ++x) {
        const LinearTap& tx = xs[static_cast<size_t>(x)];
        for (int64_t k = 0; k < c; ++k) {
          auto px = [&](int64_t sy, int64_t sx) { return src[(sy * w + sx) * c + k]; };
          const float top = px(ty.i0, tx.i0) * tx.w0 + px(ty.i0, tx.i1) * tx.w1;
          const float bottom = px(ty.i1, tx.i0) * tx.w0 + px(ty.i1, tx.i1) * tx.w1;
          dst[(y * ow + x) * c + k] = top * ty.w0 + bottom * ty.w1;
        }
      }
    }
  }
  return out;
}

// Copies the window of `in` at (top, left) of size (oh, ow); parts outside `in` are `fill`.
HostArray crop_padded(const HostArray& in, int64_t h, int64_t w, int64_t c, int64_t top,
                      int64_t left, int64_t oh, int64_t ow, double fill) {
  HostArray out = HostArray::make(in.dtype, image_shape(in, oh, ow));
  const size_t es = data_type_size(in.dtype);
  if (fill != 0) {
    for (int64_t i = 0; i < out.numel(); ++i) out.set(i, fill);
  }
  for (int64_t y = 0; y < oh; ++y) {
    const int64_t sy = y + top;
    if (sy < 0 || sy >= h) continue;
    const int64_t x0 = std::max<int64_t>(0, -left);
    const int64_t x1 = std::min(ow, w - left);
    if (x1 <= x0) continue;
    std::memcpy(out.bytes.data() + static_cast<size_t>((y * ow + x0) * c) * es,
                in.bytes.data() + static_cast<size_t>((sy * w + x0 + left) * c) * es,
                static_cast<size_t>((x1 - x0) * c) * es);
  }
  return out;
}

HostArray t_center_crop(const TransformCtx& t, const HostArray& in) {
  std::vector<int64_t> size = size_arg(t.call, "size");
  if (size.size() == 1) size.push_back(size[0]);
  const auto [h, w, c] = image_dims(t, in);
  // Offsets round down; a crop larger than the image pads it with zeros around it.
  const auto top = static_cast<int64_t>(std::floor(static_cast<double>(h - size[0]) / 2.0));
  const auto left = static_cast<int64_t>(std::floor(static_cast<double>(w - size[1]) / 2.0));
  return crop_padded(in, h, w, c, top, left, size[0], size[1], 0);
}

HostArray t_random_crop(const TransformCtx& t, const HostArray& in) {
  std::vector<int64_t> size = size_arg(t.call, "size");
  if (size.size() == 1) size.push_back(size[0]);
  if (auto mode = arg_str(t.call, "padding_mode")) {
    if (mode->find("CONSTANT") == std::string::npos &&
        mode->find("constant") == std::string::npos) {
      fail(t.call, "padding_mode " + *mode + " is not supported (Border.CONSTANT)");
    }
  }
  // padding: one value for every side, (left/right, top/bottom), or (left, top, right, bottom).
  int64_t pl = 0, pt = 0, pr = 0, pb = 0;
  if (auto p = arg_ints(t.call, "padding")) {
    if (p->size() == 1) {
      pl = pt = pr = pb = (*p)[0];
    } else if (p->size() == 2) {
      pl = pr = (*p)[0];
      pt = pb = (*p)[1];
    } else if (p->size() == 4) {
      pl = (*p)[0];
      pt = (*p)[1];
      pr = (*p)[2];
      pb = (*p)[3];
    } else {
      fail(t.call, "padding must have 1, 2 or 4 values");
    }
    if (pl < 0 || pt < 0 || pr < 0 || pb < 0 || pl > 1 << 20 || pt > 1 << 20 || pr > 1 << 20 ||
        pb > 1 << 20) {
      fail(t.call, "padding values must be in [0, 2^20]");
    }
  }
  double fill = 0;
  if (auto f = arg_ints(t.call, "fill_value")) {
    if (f->size() != 1) fail(t.call, "fill_value with one value per channel is not supported");
    fill = static_cast<double>((*f)[0]);
  }
  const auto [h, w, c] = image_dims(t, in);
  int64_t ph = h + pt + pb, pw = w + pl + pr;
  if (arg_bool(t.call, "pad_if_needed").value_or(false)) {
    // Pads both sides of a dimension by the missing amount.
    if (ph < size[0]) {
      const int64_t extra = size[0] - ph;
      pt += extra;
      pb += extra;
      ph += 2 * extra;
    }
    if (pw < size[1]) {
      const int64_t extra = size[1] - pw;
      pl += extra;
      pr += extra;
      pw += 2 * extra;
    }
  }
  if (ph < size[0] || pw < size[1]) {
    transform_fail(t, in,
                   "crop size (" + std::to_string(size[0]) + ", " + std::to_string(size[1]) +
                       ") is larger than the padded image (" + std::to_string(ph) + ", " +
                       std::to_string(pw) + ")");
  }
  const int64_t y = uniform_int(t.rng, ph - size[0] + 1);
  const int64_t x = uniform_int(t.rng, pw - size[1] + 1);
  return crop_padded(in, h, w, c, y - pt, x - pl, size[0], size[1], fill);
}

HostArray t_random_flip(const TransformCtx& t, const HostArray& in) {
  const double prob = arg_double(t.call, "prob").value_or(0.5);
  if (prob < 0 || prob > 1) fail(t.call, "prob must be in [0, 1]");
  const auto [h, w, c] = image_dims(t, in);
  if (!(t.rng.uniform() < prob)) return in;
  HostArray out = HostArray::make(in.dtype, in.shape);
  const size_t px = static_cast<size_t>(c) * data_type_size(in.dtype);
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      std::memcpy(out.bytes.data() + static_cast<size_t>(y * w + x) * px,
                  in.bytes.data() + static_cast<size_t>(y * w + (w - 1 - x)) * px, px);
    }
  }
  return out;
}

HostArray t_type_cast(const TransformCtx& t, const HostArray& in) {
  auto name = arg_str(t.call, "data_type");
  if (!name) fail(t.call, "data_type is required");
  auto to = data_type_from_name(*name);
  if (!to) fail(t.call, "unknown data_type '" + *name + "'");
  if (*to == in.dtype) return in;
  HostArray out = HostArray::make(*to, in.shape);
  for (int64_t i = 0; i < in.numel(); ++i) out.set(i, in.at(i));
  return out;
}

HostArray t_one_hot(const TransformCtx& t, const HostArray& in) {
  auto n = arg_int(t.call, "num_classes");
  if (!n || *n <= 0 || *n > 1 << 24) fail(t.call, "num_classes must be a positive integer");
  if (arg_double(t.call, "smoothing_rate").value_or(0.0) != 0.0) {
    fail(t.call, "smoothing_rate is not supported");
  }
  if (is_float(in.dtype) || in.dtype == DataType::Bool) {
    transform_fail(t, in, "OneHot reads integer labels");
  }
  if (in.shape.size() > 1) transform_fail(t, in, "OneHot reads a scalar or 1-D label");
  std::vector<int64_t> shape = in.shape;
  shape.push_back(*n);
  HostArray out = HostArray::make(in.dtype, shape);  // MindSpore keeps the label's dtype
  for (int64_t i = 0; i < in.numel(); ++i) {
    const double v = in.at(i);
    if (v < 0 || v >= static_cast<double>(*n)) {
      transform_fail(t, in,
                     "label " + std::to_string(static_cast<int64_t>(v)) + " is outside [0, " +
                         std::to_string(*n) + ")");
    }
    out.set(i * *n + static_cast<int64_t>(v), 1);
  }
  return out;
}

using TransformFn = HostArray (*)(const TransformCtx&, const HostArray&);

// The transform's name without its namespace ("vision.Resize", "c_transforms.Resize" -> Resize).
std::string_view base_name(std::string_view api) {
  const size_t dot = api.rfind('.');
  return dot == std::string_view::npos ? api : api.substr(dot + 1);
}

TransformFn find_transform(const PlanCall& c) {
  static const std::pair<std::string_view, TransformFn> kTransforms[] = {
      {"Rescale", t_rescale},
      {"Normalize", t_normalize},
      {"HWC2CHW", t_hwc2chw},
      {"Resize", t_resize},
      {"CenterCrop", t_center_crop},
      {"RandomCrop", t_random_crop},
      {"RandomHorizontalFlip", t_random_flip},
      {"TypeCast", t_type_cast},
      {"OneHot", t_one_hot},
  };
  for (const auto& [n, f] : kTransforms) {
    if (n == base_name(c.api)) return f;
  }
  fail(c,
       "transform not supported by the runtime's dataset reader (Rescale, Normalize, HWC2CHW, "
       "Resize, CenterCrop, RandomCrop, RandomHorizontalFlip, TypeCast, OneHot)");
}

// Checks a transform's arguments once, before any data is read.
void validate_transform(const PlanCall& c) {
  const std::string_view n = base_name(c.api);
  if (n == "Rescale") {
    if (!arg_double(c, "rescale") || !arg_double(c, "shift"))
      fail(c, "rescale and shift are required");
  } else if (n == "Resize" || n == "CenterCrop" || n == "RandomCrop") {
    (void)size_arg(c, "size");
  } else if (n == "TypeCast") {
    auto name = arg_str(c, "data_type");
    if (!name || !data_type_from_name(*name)) {
      fail(c, "data_type must name a dtype (mstype.int32 ...)");
    }
  } else if (n == "OneHot") {
    auto k = arg_int(c, "num_classes");
    if (!k || *k <= 0) fail(c, "num_classes must be a positive integer");
  } else if (n == "Normalize") {
    if (!arg_numbers(c, "mean") || !arg_numbers(c, "std")) fail(c, "mean and std are required");
  }
}

// ---- Pipeline nodes ----------------------------------------------------------------------------

class Node {
 public:
  virtual ~Node() = default;
  // Rewinds to the start of an epoch; `seed` already mixes the reader's seed and the epoch.
  virtual void reset(uint64_t seed) = 0;
  virtual std::optional<Row> next() = 0;
  // Rows (or batches) per pass; nullopt when infinite.
  [[nodiscard]] virtual std::optional<int64_t> size() const = 0;
  std::vector<std::string> columns;
};

// A source of `count` rows addressed by index, with MindSpore's sampler: the first num_samples
// of the order (a fresh permutation per epoch when shuffled).
class IndexedSource : public Node {
 public:
  void configure(const PlanCall& c, int64_t count) {
    count_ = count;
    shuffle_ = arg_bool(c, "shuffle").value_or(true);
    if (auto n = arg_int(c, "num_samples")) {
      if (*n < 0) fail(c, "num_samples must be >= 0");
      samples_ = *n == 0 ? count : std::min(*n, count);
    } else {
      samples_ = count;
    }
    require_default(c, "sampler", "the reader samples sequentially or shuffled");
    require_default(c, "num_shards", "sharding");
    require_default(c, "shard_id", "sharding");
    require_default(c, "cache", "dataset cache");
  }
  void reset(uint64_t seed) override {
    order_.resize(static_cast<size_t>(count_));
    for (int64_t i = 0; i < count_; ++i) order_[static_cast<size_t>(i)] = i;
    if (shuffle_) {
      Rng rng(mix(seed, 0x5A4D));
      for (int64_t i = count_ - 1; i > 0; --i) {
        std::swap(order_[static_cast<size_t>(i)],
                  order_[static_cast<size_t>(uniform_int(rng, i + 1))]);
      }
    }
    pos_ = 0;
  }
  std::optional<Row> next() override {
    if (pos_ >= samples_) return std::nullopt;
    return row(order_[static_cast<size_t>(pos_++)]);
  }
  [[nodiscard]] std::optional<int64_t> size() const override { return samples_; }

 protected:
  virtual Row row(int64_t index) = 0;

 private:
  int64_t count_ = 0, samples_ = 0, pos_ = 0;
  bool shuffle_ = true;
  std::vector<int64_t> order_;
};

fs::path resolve(const PlanCall& c, const std::string& p, const std::optional<fs::path>& base) {
  fs::path path(p);
  if (path.is_absolute()) return path;
  if (base) return *base / path;
  if (!c.file.empty()) return fs::path(c.file).parent_path() / path;
  return path;
}

fs::path dataset_dir(const PlanCall& c, const std::optional<fs::path>& override_dir) {
  if (override_dir) return *override_dir;
  auto d = arg_str(c, "dataset_dir");
  if (!d) fail(c, "dataset_dir is required (or give the data directory explicitly)");
  return resolve(c, *d, std::nullopt);
}

std::vector<std::string> usages(const PlanCall& c) {
  const std::string usage = arg_str(c, "usage").value_or("all");
  if (usage == "train") return {"train"};
  if (usage == "test") return {"test"};
  if (usage == "all") return {"test", "train"};  // MindSpore reads t10k (test) first
  fail(c, "usage must be 'train', 'test' or 'all', got '" + usage + "'");
}

class MnistSource : public IndexedSource {
 public:
  MnistSource(const PlanCall& c, const std::optional<fs::path>& override_dir) {
    columns = {"image", "label"};
    const fs::path dir = dataset_dir(c, override_dir);
    std::vector<std::string> expected;
    const std::vector<std::string> us = usages(c);
    for (const std::string& u : us) {
      const std::string prefix = u == "train" ? "train" : "t10k";
      expected.push_back(prefix + "-images-idx3-ubyte");
      expected.push_back(prefix + "-labels-idx1-ubyte");
    }
    std::string missing;
    for (const std::string& f : expected) {
      if (!fs::is_regular_file(dir / f)) missing += (missing.empty() ? "" : ", ") + f;
    }
    if (!missing.empty()) {
      std::string all;
      for (const std::string& f : expected) all += (all.empty() ? "" : ", ") + f;
      fail(c, "MNIST files missing in " + dir.string() + ": " + missing +
                  " (MnistDataset with usage='" + arg_str(c, "usage").value_or("all") + "' reads " +
                  all + ")");
    }
    for (size_t i = 0; i < expected.size(); i += 2) {
      load(c, dir / expected[i], dir / expected[i + 1]);
    }
    configure(c, count_);
  }

 protected:
  Row row(int64_t index) override {
    int64_t base = 0;
    for (const Part& p : parts_) {
      if (index < base + p.count) {
        const int64_t i = index - base;
        HostArray img = HostArray::make(DataType::UInt8, {p.rows, p.cols, 1});
        const auto px = static_cast<size_t>(p.rows * p.cols);
        std::memcpy(img.bytes.data(), p.images.data() + 16 + static_cast<size_t>(i) * px, px);
        HostArray label = HostArray::make(DataType::UInt32, {});
        label.set(0, p.labels[8 + static_cast<size_t>(i)]);
        return {std::move(img), std::move(label)};
      }
      base += p.count;
    }
    throw DatasetError("MnistDataset: row " + std::to_string(index) + " out of range");
  }

 private:
  struct Part {
    std::vector<uint8_t> images, labels;
    int64_t count = 0, rows = 0, cols = 0;
  };
  void load(const PlanCall& c, const fs::path& images, const fs::path& labels) {
    Part p;
    p.images = read_whole_file(images, where(c));
    p.labels = read_whole_file(labels, where(c));
    if (p.images.size() < 16) {
      fail(c, images.string() + ": truncated idx header (" + std::to_string(p.images.size()) +
                  " bytes, expected at least 16)");
    }
    if (be32(p.images.data()) != 2051) {
      fail(c, images.string() + ": bad magic number " + std::to_string(be32(p.images.data())) +
                  " (an idx3 image file starts with 2051)");
    }
    if (p.labels.size() < 8) {
      fail(c, labels.string() + ": truncated idx header (" + std::to_string(p.labels.size()) +
                  " bytes, expected at least 8)");
    }
    if (be32(p.labels.data()) != 2049) {
      fail(c, labels.string() + ": bad magic number " + std::to_string(be32(p.labels.data())) +
                  " (an idx1 label file starts with 2049)");
    }
    p.count = be32(p.images.data() + 4);
    p.rows = be32(p.images.data() + 8);
    p.cols = be32(p.images.data() + 12);
    const auto px = checked_mul(checked_mul(p.count, p.rows).value_or(-1), p.cols);
    const auto want = px && *px >= 0 ? checked_add<int64_t>(*px, 16) : std::nullopt;
    if (!want || static_cast<uint64_t>(*want) != p.images.size()) {
      fail(c, images.string() + ": expected " + (want ? std::to_string(*want) : "too many") +
                  " bytes (" + std::to_string(p.count) + " images of " + std::to_string(p.rows) +
                  "x" + std::to_string(p.cols) + " after a 16-byte header), found " +
                  std::to_string(p.images.size()));
    }
    const int64_t nlabels = be32(p.labels.data() + 4);
    if (static_cast<uint64_t>(nlabels) + 8 != p.labels.size()) {
      fail(c, labels.string() + ": expected " + std::to_string(nlabels + 8) + " bytes (" +
                  std::to_string(nlabels) + " labels after an 8-byte header), found " +
                  std::to_string(p.labels.size()));
    }
    if (nlabels != p.count) {
      fail(c, labels.string() + " has " + std::to_string(nlabels) + " labels but " +
                  images.string() + " has " + std::to_string(p.count) + " images");
    }
    count_ += p.count;
    parts_.push_back(std::move(p));
  }
  std::vector<Part> parts_;
  int64_t count_ = 0;
};

// CIFAR-10 binary version: files of exactly 10,000 records (MindSpore's fixed count) of a label
// byte and a 32x32 RGB image stored as three planes. Records are read from the files on demand.
class Cifar10Source : public IndexedSource {
 public:
  static constexpr int64_t kRecord = 1 + 3 * 32 * 32;
  static constexpr int64_t kPerFile = 10000;

  Cifar10Source(const PlanCall& c, const std::optional<fs::path>& override_dir) {
    columns = {"image", "label"};
    const fs::path dir = dataset_dir(c, override_dir);
    const std::vector<std::string> us = usages(c);
    std::error_code ec;
    if (fs::is_directory(dir, ec)) {
      for (const auto& e : fs::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        const bool train = name.find("data_batch") != std::string::npos;
        const bool test = name.find("test_batch") != std::string::npos;
        if (!e.is_regular_file() || !(train || test)) continue;
        if (std::find(us.begin(), us.end(), train ? "train" : "test") == us.end()) continue;
        files_.push_back(e.path());
      }
    }
    std::sort(files_.begin(), files_.end());
    if (files_.empty()) {
      const std::string usage = arg_str(c, "usage").value_or("all");
      fail(c, "no CIFAR-10 binary files in " + dir.string() + " (Cifar10Dataset with usage='" +
                  usage + "' reads " +
                  (usage == "train"  ? "data_batch_1.bin ... data_batch_5.bin"
                   : usage == "test" ? "test_batch.bin"
                                     : "data_batch_1.bin ... data_batch_5.bin and test_batch.bin") +
                  ")");
    }
    for (const fs::path& f : files_) {
      const auto size = fs::file_size(f, ec);
      if (ec || size != static_cast<uintmax_t>(kRecord * kPerFile)) {
        fail(c, f.string() + ": expected " + std::to_string(kRecord * kPerFile) + " bytes (" +
                    std::to_string(kPerFile) + " records of " + std::to_string(kRecord) +
                    "), found " + (ec ? "an unreadable file" : std::to_string(size)));
      }
    }
    streams_.resize(files_.size());
    configure(c, static_cast<int64_t>(files_.size()) * kPerFile);
  }

 protected:
  Row row(int64_t index) override {
    const auto f = static_cast<size_t>(index / kPerFile);
    auto& in = streams_[f];
    if (!in) in = std::make_unique<std::ifstream>(files_[f], std::ios::binary);
    uint8_t rec[kRecord];
    in->seekg((index % kPerFile) * kRecord);
    if (!*in || !in->read(reinterpret_cast<char*>(rec), kRecord)) {
      throw DatasetError("Cifar10Dataset: cannot read record " + std::to_string(index % kPerFile) +
                         " of " + files_[f].string());
    }
    HostArray img = HostArray::make(DataType::UInt8, {32, 32, 3});
    for (int64_t k = 0; k < 3; ++k) {
      for (int64_t p = 0; p < int64_t{32} * 32; ++p)
        img.bytes[static_cast<size_t>(p * 3 + k)] = rec[1 + k * 1024 + p];
    }
    HostArray label = HostArray::make(DataType::UInt32, {});
    label.set(0, rec[0]);
    return {std::move(img), std::move(label)};
  }

 private:
  std::vector<fs::path> files_;
  std::vector<std::unique_ptr<std::ifstream>> streams_;
};

// One sub-directory per class, classes indexed in sorted order; images decoded when read.
class ImageFolderSource : public IndexedSource {
 public:
  ImageFolderSource(const PlanCall& c, const std::optional<fs::path>& override_dir) {
    columns = {"image", "label"};
    decode_ = arg_bool(c, "decode").value_or(false);
    require_default(c, "class_indexing", "classes are indexed in sorted order");
    require_default(c, "decrypt", "encrypted images");
    std::vector<std::string> extensions;
    if (auto e = arg_strings(c, "extensions")) extensions = *e;
    const fs::path dir = dataset_dir(c, override_dir);
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      fail(c, "image folder " + dir.string() +
                  " does not exist (ImageFolderDataset reads DIR/<class>/<image> files)");
    }
    std::vector<fs::path> classes;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.is_directory()) classes.push_back(e.path());
    }
    std::sort(classes.begin(), classes.end());
    for (size_t k = 0; k < classes.size(); ++k) {
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(classes[k], ec)) {
        if (!e.is_regular_file()) continue;
        if (!extensions.empty()) {
          const std::string ext = e.path().extension().string();
          if (std::find(extensions.begin(), extensions.end(), ext) == extensions.end()) continue;
        }
        files.push_back(e.path());
      }
      std::sort(files.begin(), files.end());
      for (fs::path& f : files) items_.emplace_back(std::move(f), static_cast<int32_t>(k));
    }
    if (items_.empty()) {
      fail(c, "no images in " + dir.string() + " (ImageFolderDataset reads DIR/<class>/<image>)");
    }
    configure(c, static_cast<int64_t>(items_.size()));
  }

 protected:
  Row row(int64_t index) override {
    const auto& [path, label] = items_[static_cast<size_t>(index)];
    HostArray img;
    if (decode_) {
      img = decode_image(path);
    } else {
      const std::vector<uint8_t> raw = read_whole_file(path, "ImageFolderDataset");
      img = HostArray::make(DataType::UInt8, {static_cast<int64_t>(raw.size())});
      if (!raw.empty()) std::memcpy(img.bytes.data(), raw.data(), raw.size());
    }
    HostArray l = HostArray::make(DataType::Int32, {});
    l.set(0, label);
    return {std::move(img), std::move(l)};
  }

 private:
  bool decode_ = false;
  std::vector<std::pair<fs::path, int32_t>> items_;
};

class NumpySlicesSource : public IndexedSource {
 public:
  NumpySlicesSource(const PlanCall& c, const std::optional<fs::path>& base) {
    auto data = arg_str(c, "data");
    if (!data) fail(c, "data must be the path of a .npy or .npz file");
    std::vector<std::string> names;
    for (const std::string& part : split_list_semicolon(*data)) {
      const fs::path p = resolve(c, part, base);
      if (!fs::is_regular_file(p)) fail(c, "data file " + p.string() + " does not exist");
      if (p.extension() == ".npz") {
        for (auto& [name, a] : read_npz(p, where(c))) {
          names.push_back(name);
          arrays_.push_back(std::move(a));
        }
      } else {
        const std::vector<uint8_t> bytes = read_whole_file(p, where(c));
        arrays_.push_back(parse_npy(bytes.data(), bytes.size(), where(c) + ": " + p.string()));
        names.push_back("column_" + std::to_string(names.size()));
      }
    }
    if (auto given = arg_strings(c, "column_names")) {
      if (given->size() != arrays_.size()) {
        fail(c, "column_names has " + std::to_string(given->size()) + " names for " +
                    std::to_string(arrays_.size()) + " arrays");
      }
      names = *given;
    }
    columns = names;
    int64_t rows = -1;
    for (size_t i = 0; i < arrays_.size(); ++i) {
      if (arrays_[i].shape.empty()) fail(c, "column '" + names[i] + "' is a scalar, not slices");
      if (rows >= 0 && arrays_[i].shape[0] != rows) {
        fail(c, "column '" + names[i] + "' has " + std::to_string(arrays_[i].shape[0]) +
                    " rows, the first column " + std::to_string(rows));
      }
      rows = arrays_[i].shape[0];
    }
    configure(c, std::max<int64_t>(rows, 0));
  }

 protected:
  Row row(int64_t index) override {
    Row r;
    for (const HostArray& a : arrays_) {
      HostArray s =
          HostArray::make(a.dtype, std::vector<int64_t>(a.shape.begin() + 1, a.shape.end()));
      std::memcpy(s.bytes.data(), a.bytes.data() + static_cast<size_t>(index) * s.bytes.size(),
                  s.bytes.size());
      r.push_back(std::move(s));
    }
    return r;
  }

 private:
  static std::vector<std::string> split_list_semicolon(const std::string& s) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= s.size()) {
      const size_t semi = s.find(';', start);
      std::string part(trim(std::string_view(s).substr(start, semi - start)));
      if (!part.empty()) out.push_back(part);
      if (semi == std::string::npos) break;
      start = semi + 1;
    }
    return out;
  }
  std::vector<HostArray> arrays_;
};

size_t column_index(const PlanCall& c, const std::vector<std::string>& columns,
                    const std::string& name) {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i] == name) return i;
  }
  std::string have;
  for (const std::string& col : columns) have += (have.empty() ? "" : ", ") + col;
  fail(c, "no column '" + name + "' (columns: " + have + ")");
}

class MapNode : public Node {
 public:
  MapNode(std::unique_ptr<Node> child, const DatasetOp& op) : child_(std::move(child)), op_(op) {
    columns = child_->columns;
    if (op.input_columns.size() > 1) {
      fail(op.call, "map over " + std::to_string(op.input_columns.size()) +
                        " input columns: the supported transforms take one column each");
    }
    column_ = op.input_columns.empty() ? 0 : column_index(op.call, columns, op.input_columns[0]);
    if (auto out = arg_strings(op.call, "output_columns")) {
      if (out->size() != 1 || (*out)[0] != columns[column_]) {
        fail(op.call, "output_columns other than the input column are not supported");
      }
    }
    for (const PlanCall& t : op.transforms) {
      fns_.push_back(find_transform(t));
      validate_transform(t);
    }
  }
  void reset(uint64_t seed) override {
    child_->reset(seed);
    rng_ = Rng(mix(seed, 0x4D4150));
  }
  std::optional<Row> next() override {
    auto r = child_->next();
    if (!r) return r;
    for (size_t i = 0; i < fns_.size(); ++i) {
      const TransformCtx ctx{op_.transforms[i], columns[column_], rng_};
      (*r)[column_] = fns_[i](ctx, (*r)[column_]);
    }
    return r;
  }
  [[nodiscard]] std::optional<int64_t> size() const override { return child_->size(); }

 private:
  std::unique_ptr<Node> child_;
  const DatasetOp& op_;
  size_t column_ = 0;
  std::vector<TransformFn> fns_;
  Rng rng_{0};
};

class BatchNode : public Node {
 public:
  BatchNode(std::unique_ptr<Node> child, const DatasetOp& op) : child_(std::move(child)), op_(op) {
    columns = child_->columns;
    auto n = arg_int(op.call, "batch_size");
    if (!n || *n <= 0) fail(op.call, "batch_size must be a positive integer");
    batch_ = *n;
    drop_ = arg_bool(op.call, "drop_remainder").value_or(false);
    for (std::string_view a : {"per_batch_map", "input_columns", "output_columns", "pad_info"}) {
      require_default(op.call, a, "not implemented by the reader");
    }
  }
  void reset(uint64_t seed) override { child_->reset(seed); }
  std::optional<Row> next() override {
    std::vector<Row> rows;
    while (static_cast<int64_t>(rows.size()) < batch_) {
      auto r = child_->next();
      if (!r) break;
      rows.push_back(std::move(*r));
    }
    if (rows.empty() || (drop_ && static_cast<int64_t>(rows.size()) < batch_)) return std::nullopt;
    Row out;
    for (size_t col = 0; col < columns.size(); ++col) {
      const HostArray& first = rows[0][col];
      for (size_t i = 1; i < rows.size(); ++i) {
        const HostArray& a = rows[i][col];
        if (a.shape != first.shape || a.dtype != first.dtype) {
          fail(op_.call, "cannot batch column '" + columns[col] + "': row " + std::to_string(i) +
                             " is " + a.type_str() + ", row 0 is " + first.type_str() +
                             " (resize or crop to one shape before batch)");
        }
      }
      std::vector<int64_t> shape{static_cast<int64_t>(rows.size())};
      shape.insert(shape.end(), first.shape.begin(), first.shape.end());
      HostArray b = HostArray::make(first.dtype, shape);
      const size_t each = first.bytes.size();
      for (size_t i = 0; i < rows.size(); ++i) {
        if (each) std::memcpy(b.bytes.data() + i * each, rows[i][col].bytes.data(), each);
      }
      out.push_back(std::move(b));
    }
    return out;
  }
  [[nodiscard]] std::optional<int64_t> size() const override {
    auto n = child_->size();
    if (!n) return n;
    return drop_ ? *n / batch_ : (*n + batch_ - 1) / batch_;
  }

 private:
  std::unique_ptr<Node> child_;
  const DatasetOp& op_;
  int64_t batch_ = 1;
  bool drop_ = false;
};

// MindSpore's buffered shuffle: a buffer of buffer_size rows; each output is a random buffer slot,
// refilled from the input.
class ShuffleNode : public Node {
 public:
  ShuffleNode(std::unique_ptr<Node> child, const DatasetOp& op) : child_(std::move(child)) {
    columns = child_->columns;
    auto n = arg_int(op.call, "buffer_size");
    if (!n || *n < 2 || *n > 1 << 24) fail(op.call, "buffer_size must be an integer in [2, 2^24]");
    buffer_size_ = *n;
  }
  void reset(uint64_t seed) override {
    child_->reset(seed);
    rng_ = Rng(mix(seed, 0x5348));
    buffer_.clear();
    filled_ = false;
  }
  std::optional<Row> next() override {
    if (!filled_) {
      while (static_cast<int64_t>(buffer_.size()) < buffer_size_) {
        auto r = child_->next();
        if (!r) break;
        buffer_.push_back(std::move(*r));
      }
      filled_ = true;
    }
    if (buffer_.empty()) return std::nullopt;
    const auto k = static_cast<size_t>(uniform_int(rng_, static_cast<int64_t>(buffer_.size())));
    Row out = std::move(buffer_[k]);
    if (auto r = child_->next()) {
      buffer_[k] = std::move(*r);
    } else {
      buffer_[k] = std::move(buffer_.back());
      buffer_.pop_back();
    }
    return out;
  }
  [[nodiscard]] std::optional<int64_t> size() const override { return child_->size(); }

 private:
  std::unique_ptr<Node> child_;
  int64_t buffer_size_ = 2;
  std::vector<Row> buffer_;
  bool filled_ = false;
  Rng rng_{0};
};

class RepeatNode : public Node {
 public:
  RepeatNode(std::unique_ptr<Node> child, const DatasetOp& op) : child_(std::move(child)) {
    columns = child_->columns;
    count_ = arg_int(op.call, "count").value_or(-1);
    if (count_ == 0 || count_ < -1) fail(op.call, "count must be positive or -1 (forever)");
  }
  void reset(uint64_t seed) override {
    seed_ = seed;
    done_ = 0;
    child_->reset(mix(seed_, 0));
  }
  std::optional<Row> next() override {
    while (true) {
      if (auto r = child_->next()) return r;
      ++done_;
      if (count_ != -1 && done_ >= count_) return std::nullopt;
      // Each repetition reshuffles, as MindSpore's samplers do.
      child_->reset(mix(seed_, static_cast<uint64_t>(done_)));
      if (child_->size() == 0) return std::nullopt;
    }
  }
  [[nodiscard]] std::optional<int64_t> size() const override {
    auto n = child_->size();
    if (!n || count_ == -1) return count_ == -1 && n == 0 ? n : std::nullopt;
    return checked_mul(*n, count_);
  }

 private:
  std::unique_ptr<Node> child_;
  int64_t count_ = -1, done_ = 0;
  uint64_t seed_ = 0;
};

class TakeNode : public Node {
 public:
  TakeNode(std::unique_ptr<Node> child, const DatasetOp& op) : child_(std::move(child)) {
    columns = child_->columns;
    count_ = arg_int(op.call, "count").value_or(-1);
    if (count_ == 0 || count_ < -1) fail(op.call, "count must be positive or -1 (all)");
  }
  void reset(uint64_t seed) override {
    child_->reset(seed);
    taken_ = 0;
  }
  std::optional<Row> next() override {
    if (count_ != -1 && taken_ >= count_) return std::nullopt;
    auto r = child_->next();
    if (r) ++taken_;
    return r;
  }
  [[nodiscard]] std::optional<int64_t> size() const override {
    auto n = child_->size();
    if (count_ == -1) return n;
    return n ? std::min(*n, count_) : count_;
  }

 private:
  std::unique_ptr<Node> child_;
  int64_t count_ = -1, taken_ = 0;
};

class ProjectNode : public Node {
 public:
  ProjectNode(std::unique_ptr<Node> child, const DatasetOp& op) : child_(std::move(child)) {
    std::vector<std::string> keep = op.columns;
    if (keep.empty()) {
      if (auto c = arg_strings(op.call, "columns")) keep = *c;
    }
    if (keep.empty()) fail(op.call, "columns is required");
    for (const std::string& k : keep) index_.push_back(column_index(op.call, child_->columns, k));
    columns = keep;
  }
  void reset(uint64_t seed) override { child_->reset(seed); }
  std::optional<Row> next() override {
    auto r = child_->next();
    if (!r) return r;
    Row out;
    for (size_t i : index_) out.push_back((*r)[i]);
    return out;
  }
  [[nodiscard]] std::optional<int64_t> size() const override { return child_->size(); }

 private:
  std::unique_ptr<Node> child_;
  std::vector<size_t> index_;
};

std::unique_ptr<Node> make_source(const PlanCall& c, const std::optional<fs::path>& dir) {
  const std::string_view n = base_name(c.api);
  if (n == "MnistDataset") return std::make_unique<MnistSource>(c, dir);
  if (n == "Cifar10Dataset") return std::make_unique<Cifar10Source>(c, dir);
  if (n == "ImageFolderDataset") return std::make_unique<ImageFolderSource>(c, dir);
  if (n == "NumpySlicesDataset") return std::make_unique<NumpySlicesSource>(c, dir);
  fail(c,
       "dataset source not read by the runtime (MnistDataset, Cifar10Dataset, "
       "ImageFolderDataset, NumpySlicesDataset)");
}

}  // namespace

std::optional<NpyInfo> read_npy_header(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  // Magic, version, header length: 10 or 12 bytes; the header is at most a few hundred bytes
  // (4 GiB by the format: bounded here, a larger one is not a file numpy wrote).
  std::vector<uint8_t> head(12);
  f.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
  if (f.gcount() < 10) return std::nullopt;
  head.resize(static_cast<size_t>(f.gcount()));
  const size_t len_end = head[6] == 1 ? 10 : 12;
  if (head.size() < len_end) return std::nullopt;
  const size_t header_len = head[6] == 1 ? le16(head.data() + 8) : le32(head.data() + 8);
  if (header_len > (size_t{1} << 20)) return std::nullopt;
  head.resize(len_end + header_len);
  f.clear();
  f.seekg(static_cast<std::streamoff>(len_end));
  f.read(reinterpret_cast<char*>(head.data() + len_end), static_cast<std::streamsize>(header_len));
  if (static_cast<size_t>(f.gcount()) != header_len) return std::nullopt;
  try {
    NpyHeader h = parse_npy_header(head.data(), head.size(), path.string());
    return NpyInfo{h.dtype, std::move(h.shape)};
  } catch (const RuntimeError&) {
    return std::nullopt;
  }
}

struct DatasetReader::Impl {
  DatasetPlan plan;  // owned: nodes keep references to its calls
  std::unique_ptr<Node> root;
  uint64_t seed = 0;
  bool started = false;
};

DatasetReader::DatasetReader(const DatasetPlan& plan,
                             const std::optional<fs::path>& data_dir_override, uint64_t seed)
    : impl_(std::make_unique<Impl>()) {
  impl_->plan = plan;
  impl_->seed = seed;
  const DatasetPlan& p = impl_->plan;
  if (!p.opaque_reason.empty()) {
    fail(p.source, "the dataset cannot be read: " + p.opaque_reason);
  }
  std::unique_ptr<Node> node = make_source(p.source, data_dir_override);
  for (const DatasetOp& op : p.ops) {
    switch (op.kind) {
      case DatasetOp::Kind::Map:
        node = std::make_unique<MapNode>(std::move(node), op);
        break;
      case DatasetOp::Kind::Batch:
        node = std::make_unique<BatchNode>(std::move(node), op);
        break;
      case DatasetOp::Kind::Shuffle:
        node = std::make_unique<ShuffleNode>(std::move(node), op);
        break;
      case DatasetOp::Kind::Repeat:
        node = std::make_unique<RepeatNode>(std::move(node), op);
        break;
      case DatasetOp::Kind::Take:
        node = std::make_unique<TakeNode>(std::move(node), op);
        break;
      case DatasetOp::Kind::Project:
        node = std::make_unique<ProjectNode>(std::move(node), op);
        break;
    }
  }
  impl_->root = std::move(node);
}

DatasetReader::~DatasetReader() = default;

const std::vector<std::string>& DatasetReader::column_names() const { return impl_->root->columns; }

void DatasetReader::start_epoch(int64_t epoch) {
  impl_->root->reset(mix(impl_->seed, static_cast<uint64_t>(epoch) + 1));
  impl_->started = true;
}

std::optional<std::vector<HostArray>> DatasetReader::next_arrays() {
  if (!impl_->started) start_epoch(0);
  return impl_->root->next();
}

std::optional<std::vector<Tensor>> DatasetReader::next() {
  auto row = next_arrays();
  if (!row) return std::nullopt;
  std::vector<Tensor> out;
  out.reserve(row->size());
  for (const HostArray& a : *row) out.push_back(to_tensor(a));
  return out;
}

std::optional<int64_t> DatasetReader::batches_per_epoch() const { return impl_->root->size(); }

HostArray parse_array_npy(std::string_view bytes, const std::string& name) {
  return parse_npy(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), name);
}

std::vector<std::pair<std::string, HostArray>> parse_array_npz(std::string_view bytes,
                                                               const std::string& name,
                                                               size_t max_bytes) {
  return parse_npz({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, name,
                   max_bytes == 0 ? max_tensor_bytes() : max_bytes);
}

}  // namespace graphcore::runtime
