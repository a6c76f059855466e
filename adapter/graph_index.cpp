// The debug adapter's index of a compiled graph: see graph_index.h.
#include "graph_index.h"

#include <filesystem>

namespace cellscope::dap {

namespace fs = std::filesystem;

std::string canonical(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? path : p.string();
}

std::vector<std::string> GraphIndex::frames_of(size_t node) const {
  const auto& c = nodes[node].chain;
  return {c.rbegin(), c.rend()};
}

std::vector<StackFrame> GraphIndex::stack(size_t node) const {
  std::vector<StackFrame> out;
  const std::vector<std::string> chain = frames_of(node);
  const NodeInfo& top = nodes[node];
  for (size_t k = 0; k < chain.size(); ++k) {
    const std::string& f = chain[k];
    auto cls_it = class_of.find(f);
    const std::string cls = cls_it != class_of.end() ? cls_it->second : "Cell";
    StackFrame fr;
    if (!f.empty()) fr.name = f + " (";
    fr.name += cls;
    if (!f.empty()) fr.name += ")";
    fr.name += ".construct";
    fr.file = top.file;
    fr.line = top.line;
    fr.column = top.column;
    if (k > 0) {
      fr.column = 1;
      auto cs = call_site.find(chain[k - 1]);
      if (cs != call_site.end()) {
        fr.file = cs->second.file;
        fr.line = cs->second.line;
      } else {
        fr.line = 0;
      }
    }
    out.push_back(std::move(fr));
  }
  return out;
}

GraphIndex index_graph(const graphcore::CellReport& rep, const graphcore::CellReport* network) {
  GraphIndex index;
  std::set<std::string> user_cells = {""};
  index.class_of[""] = rep.class_name.empty() ? rep.name : rep.class_name;
  for (const auto& ci : network ? network->instances : rep.instances) {
    index.class_of[ci.path] = ci.class_name;
    // User classes (defined in a source file) have a construct to stop in; MindSpore's own
    // layers and containers (nn.Conv2d, nn.SequentialCell) do not.
    if (ci.api.empty() && !ci.class_file.empty()) user_cells.insert(ci.path);
  }
  auto parent = [](const std::string& p) {
    auto k = p.rfind('.');
    return k == std::string::npos ? std::string() : p.substr(0, k);
  };
  auto frame_of = [&](std::string scope) {
    while (!scope.empty() && !user_cells.count(scope)) scope = parent(scope);
    return scope;
  };
  const auto& nodes = rep.graph.nodes;
  index.nodes.assign(nodes.size(), {});
  std::map<std::string, std::string> canon;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto& n = nodes[i];
    NodeInfo& ni = index.nodes[i];
    ni.frame = frame_of(std::string(n.scope));
    for (std::string f = ni.frame;; f = frame_of(parent(f))) {
      ni.chain.insert(ni.chain.begin(), f);
      if (f.empty()) break;
    }
    std::string file = n.file.empty() ? rep.file : std::string(n.file);
    auto it = canon.find(file);
    if (it == canon.end()) it = canon.emplace(file, canonical(file)).first;
    ni.file = it->second;
    ni.line = static_cast<int>(n.range.start.line) + 1;
    ni.column = static_cast<int>(n.range.start.column) + 1;
    ni.stoppable = n.kind == graphcore::NodeKind::Op;
    if (ni.stoppable) index.node_lines[ni.file].insert(ni.line);
  }
  // Call sites: where a construct first called each user Cell, as the analysis recorded it.
  // A Cell inside a MindSpore container (nn.SequentialCell) is called by the container: the
  // call of the container in the user frame's construct stands for it.
  std::map<std::string, const graphcore::CellInstance*> by_path;
  for (const auto& ci : rep.instances) by_path[ci.path] = &ci;
  for (const auto& path : user_cells) {
    if (path.empty()) continue;
    const std::string frame = frame_of(parent(path));
    for (std::string p = path; p != frame && !p.empty(); p = parent(p)) {
      auto it = by_path.find(p);
      if (it == by_path.end() || it->second->call_file.empty()) continue;
      index.call_site[path] = {canonical(it->second->call_file),
                               static_cast<int>(it->second->call_range.start.line) + 1};
      break;
    }
  }
  // Variable names assigned on each line of each frame's construct.
  for (const auto& f : network ? network->facts : rep.facts) {
    if (f.kind == graphcore::TypeFact::Kind::Assignment && !f.name.empty())
      index.assigned[f.scope].emplace_back(static_cast<int>(f.range.start.line) + 1, f.name);
  }
  return index;
}

}  // namespace cellscope::dap
