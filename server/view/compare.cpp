#include "view/compare.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "view/delta.h"

namespace cellscope::server::view {

namespace pb = google::protobuf;

namespace {

pb::Value null_value() {
  pb::Value v;
  v.set_null_value(pb::NULL_VALUE);
  return v;
}

pb::Value string_value(const std::string& s) {
  pb::Value v;
  v.set_string_value(s);
  return v;
}

pb::Value number_value(double d) {
  pb::Value v;
  v.set_number_value(d);
  return v;
}

pb::Value list_value(const std::vector<std::string>& items) {
  pb::Value v;
  auto* list = v.mutable_list_value();
  for (const auto& s : items) list->add_values()->set_string_value(s);
  return v;
}

// A tensor's shape as graph.proto writes it (a list of dims); null when even the rank is unknown.
pb::Value shape_value(const protocol::Tensor& t) {
  if (t.has_unranked() && t.unranked()) return null_value();
  pb::Value v;
  auto* list = v.mutable_list_value();
  for (const auto& d : t.shape()) *list->add_values() = d;
  return v;
}

bool same_value(const pb::Value& a, const pb::Value& b) {
  return canonical_bytes(a) == canonical_bytes(b);
}

void add_change(protocol::NodeChange* change, std::string field, pb::Value before,
                pb::Value after) {
  if (same_value(before, after)) return;
  auto* c = change->add_changes();
  c->set_field(std::move(field));
  *c->mutable_before() = std::move(before);
  *c->mutable_after() = std::move(after);
}

void add_string_change(protocol::NodeChange* change, const char* field, const std::string& before,
                       const std::string& after) {
  if (before != after) add_change(change, field, string_value(before), string_value(after));
}

void compare_attrs(const pb::Map<std::string, pb::Value>& before,
                   const pb::Map<std::string, pb::Value>& after, protocol::NodeChange* change) {
  std::set<std::string> keys;
  for (const auto& [k, v] : before) keys.insert(k);
  for (const auto& [k, v] : after) keys.insert(k);
  for (const auto& k : keys) {
    const auto b = before.find(k);
    const auto a = after.find(k);
    add_change(change, "attrs." + k, b == before.end() ? null_value() : b->second,
               a == after.end() ? null_value() : a->second);
  }
}

void compare_outputs(const pb::RepeatedPtrField<protocol::Tensor>& before,
                     const pb::RepeatedPtrField<protocol::Tensor>& after, bool formats,
                     protocol::NodeChange* change) {
  const int n = std::max(before.size(), after.size());
  for (int i = 0; i < n; ++i) {
    const protocol::Tensor* b = i < before.size() ? &before[i] : nullptr;
    const protocol::Tensor* a = i < after.size() ? &after[i] : nullptr;
    const std::string prefix = "outputs[" + std::to_string(i) + "].";
    add_change(change, prefix + "shape", b ? shape_value(*b) : null_value(),
               a ? shape_value(*a) : null_value());
    add_change(change, prefix + "dtype", b ? string_value(b->dtype()) : null_value(),
               a ? string_value(a->dtype()) : null_value());
    if (formats) {
      const auto format = [](const protocol::Tensor* t) {
        return t && t->has_format() ? string_value(t->format()) : null_value();
      };
      add_change(change, prefix + "format", format(b), format(a));
    }
  }
}

std::vector<std::string> edge_texts(const pb::RepeatedPtrField<protocol::Edge>& edges) {
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(edges.size()));
  for (const auto& e : edges) out.push_back(e.node() + ":" + std::to_string(e.output()));
  return out;
}

void compare_inputs(const pb::RepeatedPtrField<protocol::Edge>& before,
                    const pb::RepeatedPtrField<protocol::Edge>& after,
                    protocol::NodeChange* change) {
  auto b = edge_texts(before);
  auto a = edge_texts(after);
  if (a != b) add_change(change, "inputs", list_value(b), list_value(a));
}

// Parameter element counts by full name, for a node's "params" figure.
using ParamSizes = std::unordered_map<std::string_view, double>;

ParamSizes param_sizes(const protocol::Cell& cell) {
  ParamSizes out;
  for (const auto& p : cell.parameters()) out.emplace(p.name(), p.size());
  return out;
}

double node_params(const protocol::Node& n, const ParamSizes& sizes) {
  double total = 0;
  for (const auto& name : n.params()) {
    const auto it = sizes.find(name);
    if (it != sizes.end()) total += it->second;
  }
  return total;
}

protocol::NodeChange semantic_change(const protocol::Node& before, const ParamSizes& before_sizes,
                                     const protocol::Node& after, const ParamSizes& after_sizes) {
  protocol::NodeChange c;
  c.set_id(after.id());
  add_string_change(&c, "kind", before.kind(), after.kind());
  add_string_change(&c, "op", before.op(), after.op());
  add_string_change(&c, "api", before.api(), after.api());
  compare_attrs(before.attrs(), after.attrs(), &c);
  compare_outputs(before.outputs(), after.outputs(), false, &c);
  add_change(&c, "params", number_value(node_params(before, before_sizes)),
             number_value(node_params(after, after_sizes)));
  add_change(&c, "flops", number_value(before.flops()), number_value(after.flops()));
  compare_inputs(before.inputs(), after.inputs(), &c);
  return c;
}

double kernel_time(const protocol::OptimizedNode& n) {
  double t = 0;
  for (const auto& k : n.hardware()) t += k.time_us();
  return t;
}

protocol::NodeChange optimized_change(const protocol::OptimizedNode& before,
                                      const protocol::OptimizedNode& after, bool hardware) {
  protocol::NodeChange c;
  c.set_id(after.id());
  add_string_change(&c, "kind", before.kind(), after.kind());
  add_string_change(&c, "op", before.op(), after.op());
  add_string_change(&c, "pattern", before.pattern(), after.pattern());
  const std::vector<std::string> bo(before.origins().begin(), before.origins().end());
  const std::vector<std::string> ao(after.origins().begin(), after.origins().end());
  if (bo != ao) add_change(&c, "origins", list_value(bo), list_value(ao));
  compare_attrs(before.attrs(), after.attrs(), &c);
  compare_outputs(before.outputs(), after.outputs(), true, &c);
  add_change(&c, "flops", number_value(before.flops()), number_value(after.flops()));
  compare_inputs(before.inputs(), after.inputs(), &c);
  if (hardware)
    add_change(&c, "time_us", number_value(kernel_time(before)), number_value(kernel_time(after)));
  return c;
}

// Matches two node lists by id: `added` (ids of `after` in its order), `changed` (by `diff`),
// and calls `gone` for each node of `before` whose id `after` lacks, in `before`'s order.
template <typename NodeT, typename Diff, typename Gone>
void match_nodes(const pb::RepeatedPtrField<NodeT>& before,
                 const pb::RepeatedPtrField<NodeT>& after, pb::RepeatedPtrField<std::string>* added,
                 pb::RepeatedPtrField<protocol::NodeChange>* changed, Diff diff, Gone gone) {
  std::unordered_map<std::string_view, const NodeT*> old_by_id;
  old_by_id.reserve(static_cast<size_t>(before.size()));
  for (const auto& n : before) old_by_id.emplace(n.id(), &n);
  std::unordered_set<std::string_view> now;
  now.reserve(static_cast<size_t>(after.size()));
  for (const auto& n : after) {
    now.insert(n.id());
    const auto it = old_by_id.find(n.id());
    if (it == old_by_id.end()) {
      added->Add(std::string(n.id()));
      continue;
    }
    protocol::NodeChange c = diff(*it->second, n);
    if (c.changes_size() > 0) *changed->Add() = std::move(c);
  }
  for (const auto& n : before)
    if (!now.count(n.id())) gone(n);
}

bool has_hardware(const protocol::Cell& cell) {
  return cell.has_hardware() && cell.hardware().has_estimate();
}

void compare_cells(const protocol::Cell* base, const protocol::Cell& current,
                   protocol::CellComparison* out) {
  static const protocol::Cell kEmpty;
  const protocol::Cell& before = base != nullptr ? *base : kEmpty;
  out->set_cell(current.name());
  out->set_base_cell(base != nullptr ? base->name() : "");
  const ParamSizes before_sizes = param_sizes(before);
  const ParamSizes after_sizes = param_sizes(current);
  match_nodes(
      before.nodes(), current.nodes(), out->mutable_added(), out->mutable_changed(),
      [&](const protocol::Node& b, const protocol::Node& a) {
        return semantic_change(b, before_sizes, a, after_sizes);
      },
      [&](const protocol::Node& n) { *out->add_removed() = n; });
  const bool hardware = has_hardware(before) && has_hardware(current);
  match_nodes(
      before.optimized().nodes(), current.optimized().nodes(), out->mutable_optimized_added(),
      out->mutable_optimized_changed(),
      [&](const protocol::OptimizedNode& b, const protocol::OptimizedNode& a) {
        return optimized_change(b, a, hardware);
      },
      [&](const protocol::OptimizedNode& n) { out->add_optimized_removed(n.id()); });
  if (base != nullptr) *out->mutable_before() = cell_totals(before);
  *out->mutable_after() = cell_totals(current);
}

}  // namespace

protocol::CellTotals cell_totals(const protocol::Cell& cell) {
  protocol::CellTotals t;
  t.set_params(cell.params());
  t.set_total_params(cell.total_params());
  t.set_flops(cell.flops());
  t.set_nodes(static_cast<uint32_t>(cell.nodes_size()));
  t.set_kernels(cell.optimized().kernels());
  t.set_compiled(cell.compiled());
  if (has_hardware(cell)) {
    const auto& e = cell.hardware().estimate();
    t.set_hardware(true);
    t.set_latency_ms(e.latency_ms());
    t.set_throughput_per_sec(e.throughput_per_sec());
    t.set_memory_peak_bytes(e.memory_peak_bytes());
  } else {
    t.set_memory_peak_bytes(cell.optimized().memory().peak_bytes());
  }
  return t;
}

protocol::Comparison compare_documents(const protocol::GraphDocument& base,
                                       const protocol::GraphDocument& current) {
  protocol::Comparison out;
  const int nb = base.cells_size();
  const int nc = current.cells_size();
  std::vector<const protocol::Cell*> match(static_cast<size_t>(nc), nullptr);
  std::vector<bool> used(static_cast<size_t>(nb), false);
  const auto pick = [&](auto&& same) {
    for (int i = 0; i < nc; ++i) {
      if (match[static_cast<size_t>(i)] != nullptr) continue;
      for (int j = 0; j < nb; ++j) {
        if (used[static_cast<size_t>(j)] || !same(base.cells(j), current.cells(i))) continue;
        match[static_cast<size_t>(i)] = &base.cells(j);
        used[static_cast<size_t>(j)] = true;
        break;
      }
    }
  };
  pick([](const protocol::Cell& b, const protocol::Cell& c) { return b.name() == c.name(); });
  pick([](const protocol::Cell& b, const protocol::Cell& c) {
    return !c.class_name().empty() && b.class_name() == c.class_name();
  });
  // One model left on each side (two files with one model each, a renamed class): the same one.
  const auto unmatched_current = std::count(match.begin(), match.end(), nullptr);
  const auto unmatched_base = std::count(used.begin(), used.end(), false);
  if (unmatched_current == 1 && unmatched_base == 1)
    pick([](const protocol::Cell&, const protocol::Cell&) { return true; });
  for (int i = 0; i < nc; ++i)
    compare_cells(match[static_cast<size_t>(i)], current.cells(i), out.add_cells());
  for (int j = 0; j < nb; ++j)
    if (!used[static_cast<size_t>(j)]) out.add_removed_cells(base.cells(j).name());
  for (const auto& d : base.diagnostics()) {
    if (d.severity() != "error") continue;
    if (out.base_errors() == 0) {
      const std::string name = std::filesystem::path(d.file()).filename().string();
      out.set_base_error((name.empty() ? "" : name + ":") +
                         std::to_string(d.range().start().line() + 1) + ": " + d.message());
    }
    out.set_base_errors(out.base_errors() + 1);
  }
  return out;
}

}  // namespace cellscope::server::view
