// MindSpore versions, for registry rules whose signature changed across releases.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>

namespace graphcore {

struct Version {
  int major = 2;
  int minor = 10;
  int patch = 0;
  friend auto operator<=>(const Version&, const Version&) = default;
  [[nodiscard]] std::string str() const;
  static std::optional<Version> parse(std::string_view text);  // "2.10", "2.10.0"
};

// The MindSpore version the registry defaults to: the one the ground-truth test tier runs.
inline constexpr Version kDefaultMindSporeVersion{2, 10, 0};

struct VersionRange {
  Version since{0, 0, 0};   // inclusive
  Version until{99, 0, 0};  // exclusive
  [[nodiscard]] bool contains(const Version& v) const { return since <= v && v < until; }
};

}  // namespace graphcore
