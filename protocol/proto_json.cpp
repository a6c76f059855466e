#include "protocol/proto_json.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/reflection.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cellscope::protocol {

namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using Json = nlohmann::ordered_json;

// 2^53: every integer up to it is exact in a double.
constexpr double kExactIntegerLimit = 9007199254740992.0;

// A double as protobuf's converter writes it: an integral value as an integer ("224", never
// "224.0": dims are numbers in google.protobuf.Value), a non-finite one as its proto3 string.
Json double_json(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  if (std::trunc(v) == v && std::fabs(v) < kExactIntegerLimit) {
    return static_cast<int64_t>(v);
  }
  return v;
}

// A float by its shortest decimal form (0.1f is "0.1", not 0.10000000149011612).
Json float_json(float v) {
  if (std::isnan(v) || std::isinf(v)) return double_json(static_cast<double>(v));
  std::array<char, 32> buf{};
  const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  if (res.ec != std::errc{}) return double_json(static_cast<double>(v));
  *res.ptr = '\0';
  return double_json(std::strtod(buf.data(), nullptr));
}

Json base64(const std::string& bytes) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t n = (static_cast<uint8_t>(bytes[i]) << 16U) |
                       (static_cast<uint8_t>(bytes[i + 1]) << 8U) |
                       static_cast<uint8_t>(bytes[i + 2]);
    out += kAlphabet[(n >> 18U) & 63U];
    out += kAlphabet[(n >> 12U) & 63U];
    out += kAlphabet[(n >> 6U) & 63U];
    out += kAlphabet[n & 63U];
  }
  if (i < bytes.size()) {
    uint32_t n = static_cast<uint8_t>(bytes[i]) << 16U;
    if (i + 1 < bytes.size()) n |= static_cast<uint8_t>(bytes[i + 1]) << 8U;
    out += kAlphabet[(n >> 18U) & 63U];
    out += kAlphabet[(n >> 12U) & 63U];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6U) & 63U] : '=';
    out += '=';
  }
  return out;
}

// The entries of a message's map fields, by field number, read from the message's own wire form.
// Not through reflection: reading a map by reflection makes libprotobuf sync the map's internal
// repeated field, and under ThreadSanitizer the headers' MapFieldBase has members that Debian's
// libprotobuf (built without it) does not: the two disagree on its layout and the sync crashes.
// The generated code's serialisation stays on one side of that line.
using MapEntries = std::map<int, std::vector<std::unique_ptr<Message>>>;

MapEntries map_entries(const Message& m) {
  MapEntries out;
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    if (!m.SerializeToCodedStream(&coded)) return out;
  }
  using google::protobuf::internal::WireFormatLite;
  const Descriptor* d = m.GetDescriptor();
  auto* factory = google::protobuf::MessageFactory::generated_factory();
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetRecursionLimit(1000);
  while (const uint32_t tag = in.ReadTag()) {
    const FieldDescriptor* f = d->FindFieldByNumber(WireFormatLite::GetTagFieldNumber(tag));
    if (f == nullptr || !f->is_map() ||
        WireFormatLite::GetTagWireType(tag) != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      if (!WireFormatLite::SkipField(&in, tag)) break;
      continue;
    }
    uint32_t length = 0;
    std::string entry;
    if (!in.ReadVarint32(&length) || !in.ReadString(&entry, static_cast<int>(length))) break;
    std::unique_ptr<Message> e(factory->GetPrototype(f->message_type())->New());
    if (e->ParseFromString(entry)) out[f->number()].push_back(std::move(e));
  }
  return out;
}

class Writer {
 public:
  explicit Writer(bool defaults) : defaults_(defaults) {}

  Json message(const Message& m) const {
    const Descriptor* d = m.GetDescriptor();
    const std::string& name = d->full_name();
    if (name == "google.protobuf.Value") return value(m);
    if (name == "google.protobuf.Struct") return struct_fields(m);
    if (name == "google.protobuf.ListValue") return list_values(m);
    const Reflection* r = m.GetReflection();
    Json out = Json::object();
    bool has_maps = false;
    for (int i = 0; i < d->field_count() && !has_maps; ++i) has_maps = d->field(i)->is_map();
    const MapEntries maps = has_maps ? map_entries(m) : MapEntries{};
    for (int i = 0; i < d->field_count(); ++i) {
      const FieldDescriptor* f = d->field(i);
      if (f->is_map()) {
        const auto it = maps.find(f->number());
        const bool empty = it == maps.end() || it->second.empty();
        if (!empty || defaults_) out[f->json_name()] = map(f, empty ? nullptr : &it->second);
      } else if (f->is_repeated()) {
        const int n = r->FieldSize(m, f);
        if (n == 0 && !defaults_) continue;
        Json list = Json::array();
        for (int k = 0; k < n; ++k) list.push_back(element(m, f, k));
        out[f->json_name()] = std::move(list);
      } else if (r->HasField(m, f) || (defaults_ && !f->has_presence())) {
        out[f->json_name()] = singular(m, f);
      }
    }
    return out;
  }

 private:
  Json value(const Message& m) const {
    const Descriptor* d = m.GetDescriptor();
    const Reflection* r = m.GetReflection();
    const FieldDescriptor* set = nullptr;
    if (d->oneof_decl_count() > 0) set = r->GetOneofFieldDescriptor(m, d->oneof_decl(0));
    if (set == nullptr) return nullptr;
    switch (set->cpp_type()) {
      case FieldDescriptor::CPPTYPE_DOUBLE:
        return double_json(r->GetDouble(m, set));
      case FieldDescriptor::CPPTYPE_STRING:
        return r->GetString(m, set);
      case FieldDescriptor::CPPTYPE_BOOL:
        return r->GetBool(m, set);
      case FieldDescriptor::CPPTYPE_MESSAGE:
        return message(r->GetMessage(m, set));
      default:
        return nullptr;  // null_value
    }
  }

  Json struct_fields(const Message& m) const {
    const FieldDescriptor* fields = m.GetDescriptor()->FindFieldByName("fields");
    if (fields == nullptr) return Json::object();
    const MapEntries maps = map_entries(m);
    const auto it = maps.find(fields->number());
    return map(fields, it == maps.end() ? nullptr : &it->second);
  }

  Json list_values(const Message& m) const {
    const FieldDescriptor* values = m.GetDescriptor()->FindFieldByName("values");
    Json out = Json::array();
    if (values == nullptr) return out;
    const Reflection* r = m.GetReflection();
    for (int k = 0; k < r->FieldSize(m, values); ++k) {
      out.push_back(message(r->GetRepeatedMessage(m, values, k)));
    }
    return out;
  }

  // A map field, entries in key order (the order the deterministic binary form has).
  Json map(const FieldDescriptor* f, const std::vector<std::unique_ptr<Message>>* list) const {
    const FieldDescriptor* key = f->message_type()->map_key();
    const FieldDescriptor* val = f->message_type()->map_value();
    std::vector<std::pair<std::string, const Message*>> entries;
    if (list != nullptr) {
      entries.reserve(list->size());
      for (const auto& entry : *list) entries.emplace_back(key_text(*entry, key), entry.get());
    }
    const bool numeric = key->cpp_type() != FieldDescriptor::CPPTYPE_STRING &&
                         key->cpp_type() != FieldDescriptor::CPPTYPE_BOOL;
    std::stable_sort(entries.begin(), entries.end(), [numeric](const auto& a, const auto& b) {
      if (numeric) {
        const bool neg_a = a.first.starts_with('-');
        const bool neg_b = b.first.starts_with('-');
        if (neg_a != neg_b) return neg_a;
        if (a.first.size() != b.first.size()) return (a.first.size() < b.first.size()) != neg_a;
        return (a.first < b.first) != neg_a;
      }
      return a.first < b.first;
    });
    Json out = Json::object();
    for (const auto& [k, entry] : entries) out[k] = singular(*entry, val);
    return out;
  }

  static std::string key_text(const Message& entry, const FieldDescriptor* key) {
    const Reflection* r = entry.GetReflection();
    switch (key->cpp_type()) {
      case FieldDescriptor::CPPTYPE_STRING:
        return r->GetString(entry, key);
      case FieldDescriptor::CPPTYPE_BOOL:
        return r->GetBool(entry, key) ? "true" : "false";
      case FieldDescriptor::CPPTYPE_INT32:
        return std::to_string(r->GetInt32(entry, key));
      case FieldDescriptor::CPPTYPE_INT64:
        return std::to_string(r->GetInt64(entry, key));
      case FieldDescriptor::CPPTYPE_UINT32:
        return std::to_string(r->GetUInt32(entry, key));
      case FieldDescriptor::CPPTYPE_UINT64:
        return std::to_string(r->GetUInt64(entry, key));
      default:
        return {};
    }
  }

  static Json enum_json(const google::protobuf::EnumDescriptor* type, int number) {
    const auto* v = type->FindValueByNumber(number);
    if (v != nullptr) return v->name();
    return number;
  }

  Json singular(const Message& m, const FieldDescriptor* f) const {
    const Reflection* r = m.GetReflection();
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        return r->GetInt32(m, f);
      case FieldDescriptor::CPPTYPE_UINT32:
        return r->GetUInt32(m, f);
      case FieldDescriptor::CPPTYPE_INT64:
        return std::to_string(r->GetInt64(m, f));
      case FieldDescriptor::CPPTYPE_UINT64:
        return std::to_string(r->GetUInt64(m, f));
      case FieldDescriptor::CPPTYPE_DOUBLE:
        return double_json(r->GetDouble(m, f));
      case FieldDescriptor::CPPTYPE_FLOAT:
        return float_json(r->GetFloat(m, f));
      case FieldDescriptor::CPPTYPE_BOOL:
        return r->GetBool(m, f);
      case FieldDescriptor::CPPTYPE_ENUM:
        return enum_json(f->enum_type(), r->GetEnumValue(m, f));
      case FieldDescriptor::CPPTYPE_STRING:
        if (f->type() == FieldDescriptor::TYPE_BYTES) return base64(r->GetString(m, f));
        return r->GetString(m, f);
      case FieldDescriptor::CPPTYPE_MESSAGE:
        return message(r->GetMessage(m, f));
    }
    return nullptr;
  }

  Json element(const Message& m, const FieldDescriptor* f, int k) const {
    const Reflection* r = m.GetReflection();
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        return r->GetRepeatedInt32(m, f, k);
      case FieldDescriptor::CPPTYPE_UINT32:
        return r->GetRepeatedUInt32(m, f, k);
      case FieldDescriptor::CPPTYPE_INT64:
        return std::to_string(r->GetRepeatedInt64(m, f, k));
      case FieldDescriptor::CPPTYPE_UINT64:
        return std::to_string(r->GetRepeatedUInt64(m, f, k));
      case FieldDescriptor::CPPTYPE_DOUBLE:
        return double_json(r->GetRepeatedDouble(m, f, k));
      case FieldDescriptor::CPPTYPE_FLOAT:
        return float_json(r->GetRepeatedFloat(m, f, k));
      case FieldDescriptor::CPPTYPE_BOOL:
        return r->GetRepeatedBool(m, f, k);
      case FieldDescriptor::CPPTYPE_ENUM:
        return enum_json(f->enum_type(), r->GetRepeatedEnumValue(m, f, k));
      case FieldDescriptor::CPPTYPE_STRING:
        if (f->type() == FieldDescriptor::TYPE_BYTES) return base64(r->GetRepeatedString(m, f, k));
        return r->GetRepeatedString(m, f, k);
      case FieldDescriptor::CPPTYPE_MESSAGE:
        return message(r->GetRepeatedMessage(m, f, k));
    }
    return nullptr;
  }

  bool defaults_;
};

}  // namespace

nlohmann::ordered_json message_to_json(const google::protobuf::Message& message, bool defaults) {
  return Writer(defaults).message(message);
}

}  // namespace cellscope::protocol
