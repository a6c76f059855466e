// The proto3 JSON form of a message, built by walking its reflection: lowerCamelCase names,
// 64-bit integers as strings, enums by name, non-finite floats as "NaN"/"Infinity", map entries in
// key order, google.protobuf.Value/Struct/ListValue as the JSON they stand for. Fields are written
// in declaration order.
//
// It replaces protobuf's own converter (serialise to binary, resolve types, convert), which cost
// three quarters of a `cellscope graph --format json` run and sat on the path of every view update.
// tests/unit/protocol_document_test.cpp checks it against protobuf's converter field for field.
#pragma once

#include <google/protobuf/message.h>

#include <nlohmann/json.hpp>

namespace cellscope::protocol {

// `defaults`: also fields at their default value (0, "", false, the first enum value, empty
// lists and maps); sub-messages, oneof members and `optional` fields only when set, as protobuf's
// always_print_primitive_fields does.
nlohmann::ordered_json message_to_json(const google::protobuf::Message& message, bool defaults);

}  // namespace cellscope::protocol
