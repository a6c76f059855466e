#include "view/delta.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

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

void slim_kernel(protocol::HardwareKernel* kernel) {
  kernel->clear_tiling();
  kernel->clear_loops();
  kernel->clear_dma();
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
