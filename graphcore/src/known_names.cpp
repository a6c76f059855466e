#include "known_names.h"

#include <algorithm>
#include <string>
#include <unordered_set>

namespace graphcore {

namespace {
struct NameEntry {
  const char* ns;
  const char* name;
};
constexpr NameEntry kNames[] = {
#include "known_names.inc"
};
}  // namespace

bool known_mindspore_name(std::string_view ns, std::string_view name) {
  static const std::unordered_set<std::string> kSet = [] {
    std::unordered_set<std::string> s;
    for (const auto& e : kNames) s.insert(std::string(e.ns) + "." + e.name);
    return s;
  }();
  return kSet.count(std::string(ns) + "." + std::string(name)) > 0;
}

}  // namespace graphcore
