// The process-wide pool behind IStr.
#include "graphcore/istr.h"

#include <mutex>
#include <ostream>
#include <unordered_set>

namespace graphcore {

namespace {

struct Hash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>()(s); }
};
struct Eq {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const noexcept { return a == b; }
};

struct Pool {
  std::mutex mu;
  std::unordered_set<std::string, Hash, Eq> strings;  // node-based: addresses are stable
};

Pool& pool() {
  static auto* p = new Pool();  // never destroyed: IStrs may outlive static destructors
  return *p;
}

}  // namespace

const std::string& IStr::empty_string() noexcept {
  static const std::string* empty = intern({});
  return *empty;
}

const std::string* IStr::intern(std::string_view s) {
  Pool& p = pool();
  std::lock_guard lock(p.mu);
  auto it = p.strings.find(s);
  if (it == p.strings.end()) it = p.strings.emplace(s).first;
  return &*it;
}

size_t IStr::pool_size() {
  Pool& p = pool();
  std::lock_guard lock(p.mu);
  return p.strings.size();
}

std::ostream& operator<<(std::ostream& os, const IStr& s) { return os << s.str(); }

}  // namespace graphcore
