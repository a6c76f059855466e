#include "view/delta.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace cellscope::server::view {

namespace pb = google::protobuf;

std::string canonical_bytes(const pb::Message& message) {
  std::string out;
  {
    pb::io::StringOutputStream raw(&out);
    pb::io::CodedOutputStream coded(&raw);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return out;
}

namespace {

// Keeps `dma` (a few transfers per kernel, ~3% of a document): the view's core timeline draws a
// row per DMA channel from it.
void slim_kernel(protocol::HardwareKernel* kernel) {
  kernel->clear_tiling();
  kernel->clear_loops();
  kernel->clear_schedule();
}

const protocol::Cell* find_cell(const protocol::GraphDocument& doc, const std::string& name) {
  for (const auto& c : doc.cells())
    if (c.name() == name) return &c;
  return nullptr;
}

// The node-list part of a CellDelta, for either node type (Node or OptimizedNode).
template <typename NodeT>
void diff_nodes(const pb::RepeatedPtrField<NodeT>& before, const pb::RepeatedPtrField<NodeT>& after,
                pb::RepeatedPtrField<NodeT>* upserts, pb::RepeatedPtrField<std::string>* removed,
                pb::RepeatedPtrField<std::string>* order) {
  std::unordered_map<std::string_view, const NodeT*> old_by_id;
  old_by_id.reserve(static_cast<size_t>(before.size()));
  for (const auto& n : before) old_by_id.emplace(n.id(), &n);
  std::unordered_set<std::string_view> new_ids;
  new_ids.reserve(static_cast<size_t>(after.size()));
  std::vector<std::string_view> appended;
  for (const auto& n : after) {
    new_ids.insert(n.id());
    const auto it = old_by_id.find(n.id());
    if (it == old_by_id.end()) {
      *upserts->Add() = n;
      appended.push_back(n.id());
    } else if (canonical_bytes(*it->second) != canonical_bytes(n)) {
      *upserts->Add() = n;
    }
  }
  for (const auto& n : before)
    if (!new_ids.count(n.id())) removed->Add(std::string(n.id()));
  // The order the view gets without `order`: kept nodes in their old order, then new ones.
  std::vector<std::string_view> implied;
  implied.reserve(static_cast<size_t>(after.size()));
  for (const auto& n : before)
    if (new_ids.count(n.id())) implied.push_back(n.id());
  implied.insert(implied.end(), appended.begin(), appended.end());
  bool same = implied.size() == static_cast<size_t>(after.size());
  for (size_t i = 0; same && i < implied.size(); ++i)
    same = implied[i] == after[static_cast<int>(i)].id();
  if (!same)
    for (const auto& n : after) order->Add(std::string(n.id()));
}

template <typename NodeT>
bool apply_nodes(pb::RepeatedPtrField<NodeT>* nodes, const pb::RepeatedPtrField<NodeT>& upserts,
                 const pb::RepeatedPtrField<std::string>& removed,
                 const pb::RepeatedPtrField<std::string>& order) {
  std::unordered_set<std::string> gone(removed.begin(), removed.end());
  std::vector<NodeT> result;
  result.reserve(static_cast<size_t>(nodes->size() + upserts.size()));
  std::unordered_map<std::string, size_t> index;
  for (auto& n : *nodes) {
    if (gone.count(n.id())) continue;
    index.emplace(n.id(), result.size());
    result.push_back(std::move(n));
  }
  for (const auto& n : upserts) {
    if (auto it = index.find(n.id()); it != index.end()) {
      result[it->second] = n;
    } else {
      index.emplace(n.id(), result.size());
      result.push_back(n);
    }
  }
  nodes->Clear();
  if (order.empty()) {
    for (auto& n : result) *nodes->Add() = std::move(n);
    return true;
  }
  if (static_cast<size_t>(order.size()) != result.size()) return false;
  for (const auto& id : order) {
    const auto it = index.find(id);
    if (it == index.end()) return false;
    *nodes->Add() = std::move(result[it->second]);
  }
  return true;
}

}  // namespace

protocol::GraphDocument slim_document(const protocol::GraphDocument& doc) {
  protocol::GraphDocument out = doc;
  for (auto& cell : *out.mutable_cells()) {
    for (auto& node : *cell.mutable_optimized()->mutable_nodes())
      for (auto& k : *node.mutable_hardware()) slim_kernel(&k);
    for (auto& k : *cell.mutable_hardware()->mutable_optimizer()) slim_kernel(&k);
  }
  return out;
}

protocol::NodeDetails node_details(const protocol::GraphDocument& doc, const std::string& cell,
                                   const std::string& node) {
  protocol::NodeDetails out;
  out.set_cell(cell);
  out.set_node(node);
  const auto* c = find_cell(doc, cell);
  if (c == nullptr) {
    out.set_error("no Cell named '" + cell + "'");
    return out;
  }
  for (const auto& n : c->optimized().nodes()) {
    if (n.id() != node) continue;
    *out.mutable_kernels() = n.hardware();
    return out;
  }
  out.set_error("Cell '" + cell + "' has no optimized node '" + node + "'");
  return out;
}

protocol::GraphDelta diff_documents(const protocol::GraphDocument& before,
                                    const protocol::GraphDocument& after, uint32_t base) {
  protocol::GraphDelta delta;
  delta.set_base(base);
  *delta.mutable_header() = after;
  delta.mutable_header()->clear_cells();
  for (const auto& cell : after.cells()) {
    auto* cd = delta.add_cells();
    cd->set_name(cell.name());
    *cd->mutable_header() = cell;
    cd->mutable_header()->clear_nodes();
    cd->mutable_header()->mutable_optimized()->clear_nodes();
    if (!cell.has_optimized()) cd->mutable_header()->clear_optimized();
    static const protocol::Cell kEmpty;
    const auto* old = find_cell(before, cell.name());
    if (old == nullptr) old = &kEmpty;
    diff_nodes(old->nodes(), cell.nodes(), cd->mutable_nodes(), cd->mutable_removed(),
               cd->mutable_order());
    diff_nodes(old->optimized().nodes(), cell.optimized().nodes(), cd->mutable_optimized_nodes(),
               cd->mutable_optimized_removed(), cd->mutable_optimized_order());
  }
  return delta;
}

bool apply_delta(const protocol::GraphDelta& delta, protocol::GraphDocument* doc) {
  protocol::GraphDocument out = delta.header();
  for (const auto& cd : delta.cells()) {
    protocol::Cell cell;
    for (auto& c : *doc->mutable_cells())
      if (c.name() == cd.name()) {
        cell = std::move(c);
        break;
      }
    auto nodes = std::move(*cell.mutable_nodes());
    auto opt_nodes = std::move(*cell.mutable_optimized()->mutable_nodes());
    cell = cd.header();
    if (!apply_nodes(&nodes, cd.nodes(), cd.removed(), cd.order())) return false;
    if (!apply_nodes(&opt_nodes, cd.optimized_nodes(), cd.optimized_removed(),
                     cd.optimized_order()))
      return false;
    *cell.mutable_nodes() = std::move(nodes);
    if (cell.has_optimized() || !opt_nodes.empty())
      *cell.mutable_optimized()->mutable_nodes() = std::move(opt_nodes);
    *out.add_cells() = std::move(cell);
  }
  *doc = std::move(out);
  return true;
}

}  // namespace cellscope::server::view

// ---------------------------------------------------------------------------------------------
// Lazy documents.

namespace cellscope::server::view {

namespace {

// model.ts's scopeGroupPath.
std::string scope_group_path(const protocol::Node& n) {
  const std::string& scope = n.scope();
  if (scope.empty()) return {};
  const std::string& id = n.id();
  if (id == scope || (id.size() > scope.size() && id.compare(0, scope.size(), scope) == 0 &&
                      id[scope.size()] == '#')) {
    const auto dot = scope.rfind('.');
    return dot == std::string::npos ? std::string() : scope.substr(0, dot);
  }
  return scope;
}

// The parent group path: "a.b" -> "a", "a" -> "".
std::string parent_path(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? std::string() : path.substr(0, dot);
}

template <typename NodeT>
void add_boundary(const pb::RepeatedPtrField<NodeT>& nodes, const std::vector<std::string>& groups,
                  const std::string& scope, pb::RepeatedPtrField<protocol::BoundaryEdge>* out) {
  std::unordered_map<std::string_view, size_t> index;
  index.reserve(static_cast<size_t>(nodes.size()));
  for (int i = 0; i < nodes.size(); ++i) index.emplace(nodes[i].id(), static_cast<size_t>(i));
  for (int i = 0; i < nodes.size(); ++i) {
    const std::string& tgt_scope = groups[static_cast<size_t>(i)];
    for (const auto& e : nodes[i].inputs()) {
      const auto it = index.find(e.node());
      if (it == index.end()) continue;
      const std::string& src_scope = groups[it->second];
      if (src_scope == tgt_scope || (src_scope != scope && tgt_scope != scope)) continue;
      auto* b = out->Add();
      b->set_src(e.node());
      b->set_output(e.output());
      b->set_tgt(nodes[i].id());
      b->set_src_scope(src_scope);
      b->set_tgt_scope(tgt_scope);
    }
  }
}

template <typename NodeT>
void add_scope_edges(const pb::RepeatedPtrField<NodeT>& nodes,
                     const std::vector<std::string>& groups,
                     pb::RepeatedPtrField<protocol::ScopeEdge>* out) {
  std::unordered_map<std::string_view, size_t> index;
  index.reserve(static_cast<size_t>(nodes.size()));
  for (int i = 0; i < nodes.size(); ++i) index.emplace(nodes[i].id(), static_cast<size_t>(i));
  std::map<std::pair<std::string_view, std::string_view>, uint32_t> counts;
  for (int i = 0; i < nodes.size(); ++i) {
    const std::string& to = groups[static_cast<size_t>(i)];
    for (const auto& e : nodes[i].inputs()) {
      const auto it = index.find(e.node());
      if (it == index.end()) continue;
      const std::string& from = groups[it->second];
      if (from != to) ++counts[{from, to}];
    }
  }
  for (const auto& [key, count] : counts) {
    auto* s = out->Add();
    s->set_from(std::string(key.first));
    s->set_to(std::string(key.second));
    s->set_count(count);
  }
}

}  // namespace

CellGroups cell_groups(const protocol::Cell& cell) {
  CellGroups out;
  out.semantic.reserve(static_cast<size_t>(cell.nodes_size()));
  std::unordered_map<std::string_view, size_t> semantic;
  semantic.reserve(static_cast<size_t>(cell.nodes_size()));
  for (int i = 0; i < cell.nodes_size(); ++i) {
    out.semantic.push_back(scope_group_path(cell.nodes(i)));
    semantic.emplace(cell.nodes(i).id(), static_cast<size_t>(i));
  }
  const auto& opt = cell.optimized().nodes();
  out.optimized.reserve(static_cast<size_t>(opt.size()));
  std::unordered_map<std::string_view, size_t> optimized;
  for (int i = 0; i < opt.size(); ++i) {
    const auto& n = opt[i];
    std::string group;
    const auto main = n.origins_size() > 0 ? semantic.find(n.origins(0)) : semantic.end();
    if (main != semantic.end()) {
      group = out.semantic[main->second];
    } else if (n.inputs_size() > 0) {
      // Inserted nodes (TransData, Cast): where their producer lives.
      const auto src = optimized.find(n.inputs(0).node());
      if (src != optimized.end()) group = out.optimized[src->second];
    }
    out.optimized.push_back(std::move(group));
    optimized.emplace(n.id(), static_cast<size_t>(i));
  }
  return out;
}

bool is_lazy(const protocol::Cell& cell, size_t threshold) {
  return static_cast<size_t>(cell.nodes_size()) > threshold;
}

protocol::CellSkeleton cell_skeleton(const protocol::Cell& cell, const CellGroups& groups) {
  protocol::CellSkeleton out;
  out.set_name(cell.name());
  out.set_nodes(static_cast<uint32_t>(cell.nodes_size()));
  out.set_optimized_nodes(static_cast<uint32_t>(cell.optimized().nodes_size()));
  std::map<std::string, protocol::ScopeSummary> scopes;
  const auto summary = [&](const std::string& path) -> protocol::ScopeSummary& {
    auto [it, fresh] = scopes.try_emplace(path);
    if (fresh) {
      it->second.set_scope(path);
      it->second.set_first(UINT32_MAX);
      it->second.set_optimized_first(UINT32_MAX);
    }
    return it->second;
  };
  const auto count = [&](const std::string& group, uint32_t index, bool optimized) {
    auto& direct = summary(group);
    if (optimized)
      direct.set_optimized_nodes(direct.optimized_nodes() + 1);
    else
      direct.set_nodes(direct.nodes() + 1);
    std::string path = group;
    for (;;) {
      auto& s = summary(path);
      if (optimized) {
        s.set_total_optimized_nodes(s.total_optimized_nodes() + 1);
        s.set_optimized_first(std::min(s.optimized_first(), index));
      } else {
        s.set_total_nodes(s.total_nodes() + 1);
        s.set_first(std::min(s.first(), index));
      }
      if (path.empty()) break;
      path = parent_path(path);
    }
  };
  for (size_t i = 0; i < groups.semantic.size(); ++i)
    count(groups.semantic[i], static_cast<uint32_t>(i), false);
  for (size_t i = 0; i < groups.optimized.size(); ++i)
    count(groups.optimized[i], static_cast<uint32_t>(i), true);
  summary("");
  for (auto& [path, s] : scopes) {
    if (s.first() == UINT32_MAX) s.set_first(0);
    if (s.optimized_first() == UINT32_MAX) s.set_optimized_first(0);
    *out.add_scopes() = std::move(s);
  }
  add_scope_edges(cell.nodes(), groups.semantic, out.mutable_edges());
  add_scope_edges(cell.optimized().nodes(), groups.optimized, out.mutable_optimized_edges());
  *out.mutable_root() = scope_nodes(cell, groups, "");
  return out;
}

protocol::ScopeNodes scope_nodes(const protocol::Cell& cell, const CellGroups& groups,
                                 const std::string& scope) {
  protocol::ScopeNodes out;
  out.set_cell(cell.name());
  out.set_scope(scope);
  for (size_t i = 0; i < groups.semantic.size(); ++i) {
    if (groups.semantic[i] != scope) continue;
    *out.add_nodes() = cell.nodes(static_cast<int>(i));
    out.add_index(static_cast<uint32_t>(i));
  }
  for (size_t i = 0; i < groups.optimized.size(); ++i) {
    if (groups.optimized[i] != scope) continue;
    *out.add_optimized_nodes() = cell.optimized().nodes(static_cast<int>(i));
    out.add_optimized_index(static_cast<uint32_t>(i));
  }
  add_boundary(cell.nodes(), groups.semantic, scope, out.mutable_boundary());
  add_boundary(cell.optimized().nodes(), groups.optimized, scope, out.mutable_optimized_boundary());
  return out;
}

bool lazy_update(protocol::GraphDocument* doc, size_t threshold, protocol::ViewUpdate* update,
                 std::map<std::string, CellGroups>* groups) {
  bool any = false;
  for (const auto& c : doc->cells()) any = any || is_lazy(c, threshold);
  if (!any) return false;
  // The node lists of lazy Cells are set aside while the rest of the document is copied.
  struct Aside {
    pb::RepeatedPtrField<protocol::Node> nodes;
    pb::RepeatedPtrField<protocol::OptimizedNode> optimized;
  };
  std::vector<Aside> aside(static_cast<size_t>(doc->cells_size()));
  for (int i = 0; i < doc->cells_size(); ++i) {
    auto* c = doc->mutable_cells(i);
    if (!is_lazy(*c, threshold)) continue;
    CellGroups g = cell_groups(*c);
    *update->add_skeletons() = cell_skeleton(*c, g);
    if (groups != nullptr) groups->try_emplace(c->name(), std::move(g));
    auto& a = aside[static_cast<size_t>(i)];
    a.nodes.Swap(c->mutable_nodes());
    if (c->has_optimized()) a.optimized.Swap(c->mutable_optimized()->mutable_nodes());
  }
  *update->mutable_document() = *doc;
  for (int i = 0; i < doc->cells_size(); ++i) {
    auto* c = doc->mutable_cells(i);
    auto& a = aside[static_cast<size_t>(i)];
    if (a.nodes.empty() && a.optimized.empty()) continue;
    a.nodes.Swap(c->mutable_nodes());
    if (c->has_optimized()) a.optimized.Swap(c->mutable_optimized()->mutable_nodes());
  }
  return true;
}

}  // namespace cellscope::server::view
