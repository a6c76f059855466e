#include "known_names.h"

#include "graphcore/registry.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

namespace graphcore {

namespace {
struct NameEntry {
  const char* ns;
  const char* name;
  Version since;  // inclusive
  Version until;  // exclusive
};
constexpr NameEntry kNames[] = {
#include "known_names.inc"
};
}  // namespace

bool known_mindspore_name(std::string_view ns, std::string_view name, const Version& version) {
  static const std::unordered_map<std::string, std::vector<VersionRange>> kMap = [] {
    std::unordered_map<std::string, std::vector<VersionRange>> m;
    for (const auto& e : kNames) m[std::string(e.ns) + "." + e.name].push_back({e.since, e.until});
    return m;
  }();
  auto it = kMap.find(std::string(ns) + "." + std::string(name));
  if (it == kMap.end()) return false;
  for (const VersionRange& r : it->second)
    if (r.contains(version)) return true;
  return false;
}

std::vector<std::string> mindspore_public_names(std::string_view ns, const Version& version) {
  std::vector<std::string> out;
  for (const auto& e : kNames) {
    if (ns == e.ns && VersionRange{e.since, e.until}.contains(version)) out.emplace_back(e.name);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace graphcore
