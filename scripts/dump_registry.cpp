// Prints the Cellscope API registry as JSON (names, kinds, version ranges, parameters) for
// scripts/dump_signatures.py. Build it against libgraphcore.a:
//   c++ -std=c++20 -I graphcore/include scripts/dump_registry.cpp BUILD/graphcore/libgraphcore.a \
//       BUILD/libtree_sitter_python.a $(pkg-config --libs tree-sitter) -o /tmp/dump_registry
#include <iostream>
#include <string>

#include "graphcore/registry.h"

namespace {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

const char* kind_name(graphcore::ApiKind k) {
  switch (k) {
    case graphcore::ApiKind::CellClass: return "CellClass";
    case graphcore::ApiKind::PrimitiveClass: return "PrimitiveClass";
    case graphcore::ApiKind::Function: return "Function";
    case graphcore::ApiKind::TensorMethod: return "TensorMethod";
  }
  return "?";
}

const char* param_kind(graphcore::ParamKind k) {
  switch (k) {
    case graphcore::ParamKind::PositionalOrKeyword: return "POSITIONAL_OR_KEYWORD";
    case graphcore::ParamKind::KeywordOnly: return "KEYWORD_ONLY";
    case graphcore::ParamKind::VarPositional: return "VAR_POSITIONAL";
    case graphcore::ParamKind::VarKeyword: return "VAR_KEYWORD";
  }
  return "?";
}

std::string range(const graphcore::VersionRange& r) {
  return "{\"since\": " + quote(r.since.str()) + ", \"until\": " + quote(r.until.str()) + "}";
}

void params(const std::vector<graphcore::ParamSpec>& ps) {
  std::cout << "[";
  for (size_t i = 0; i < ps.size(); ++i) {
    const auto& p = ps[i];
    std::cout << (i ? ", " : "") << "{\"name\": " << quote(p.name)
              << ", \"default\": " << (p.default_src.empty() ? "null" : quote(p.default_src))
              << ", \"kind\": " << quote(param_kind(p.kind)) << ", \"versions\": " << range(p.versions)
              << "}";
  }
  std::cout << "]";
}

}  // namespace

int main() {
  const auto& entries = graphcore::Registry::instance().entries();
  std::cout << "[\n";
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = *entries[i];
    std::cout << (i ? ",\n" : "") << "{\"name\": " << quote(e.name) << ", \"kind\": " << quote(kind_name(e.kind))
              << ", \"versions\": " << range(e.versions) << ", \"replacement\": " << quote(e.replacement)
              << ", \"init_params\": ";
    params(e.init_params);
    std::cout << ", \"call_params\": ";
    params(e.call_params);
    std::cout << "}";
  }
  std::cout << "\n]\n";
}
