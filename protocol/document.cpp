#include "protocol/document.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/json_util.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <variant>

#include "graphcore/opdef.h"
#include "protocol/proto_json.h"

namespace cellscope::protocol {

#ifndef CELLSCOPE_VERSION
#define CELLSCOPE_VERSION "0.0.0"
#endif

std::string_view tool_version() { return CELLSCOPE_VERSION; }

// ---------------------------------------------------------------------------------------------
// PositionMapper

struct PositionMapper::Entry {
  std::string text;  // owns the bytes the index views
  std::optional<graphcore::LineIndex> index;
};

PositionMapper::PositionMapper(TextProvider provider) : provider_(std::move(provider)) {}

PositionMapper::PositionMapper(graphcore::SourceProvider& sources)
    : provider_([&sources](const std::string& file) { return sources.read(file); }) {}

PositionMapper::~PositionMapper() = default;

PositionMapper::Entry* PositionMapper::entry(const std::string& file) {
  auto it = cache_.find(file);
  if (it == cache_.end()) {
    auto e = std::make_unique<Entry>();
    if (!file.empty() && provider_) {
      if (auto text = provider_(file)) {
        e->text = std::move(*text);
        // graphcore parses sanitised text (same byte offsets); index the same bytes.
        graphcore::sanitize_utf8(e->text);
        e->index.emplace(e->text);
      }
    }
    it = cache_.emplace(file, std::move(e)).first;
  }
  return it->second.get();
}

Position PositionMapper::position(const std::string& file, const graphcore::Position& pos) {
  Position out;
  out.set_line(pos.line);
  out.set_character(pos.column);
  Entry* e = entry(file);
  if (e->index && pos.line < e->index->line_count()) {
    const auto line = e->index->line_text(pos.line);
    graphcore::Position clamped = pos;
    if (clamped.column > line.size()) clamped.column = static_cast<uint32_t>(line.size());
    out.set_character(e->index->utf16_column(clamped));
  }
  return out;
}

Range PositionMapper::range(const std::string& file, const graphcore::SourceRange& range) {
  Range out;
  *out.mutable_start() = position(file, range.start);
  *out.mutable_end() = position(file, range.end);
  return out;
}

const std::string* PositionMapper::text(const std::string& file) {
  Entry* e = entry(file);
  return e->index ? &e->text : nullptr;
}

std::string_view PositionMapper::line_text(const std::string& file, uint32_t line) {
  Entry* e = entry(file);
  if (!e->index || line >= e->index->line_count()) return {};
  std::string_view text = e->index->line_text(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  return text;
}

// ---------------------------------------------------------------------------------------------
// Leaf conversions

google::protobuf::Value dim_value(const graphcore::Dim& dim) {
  google::protobuf::Value v;
  if (dim.is_known()) {
    v.set_number_value(static_cast<double>(dim.value()));
  } else if (dim.is_symbolic()) {
    v.set_string_value(dim.str());
  } else {
    v.set_null_value(google::protobuf::NULL_VALUE);
  }
  return v;
}

void set_shape(const graphcore::Shape& shape,
               google::protobuf::RepeatedPtrField<google::protobuf::Value>* out) {
  out->Clear();
  if (!shape.ranked) return;
  out->Reserve(static_cast<int>(shape.dims.size()));
  for (const auto& d : shape.dims) *out->Add() = dim_value(d);
}

Tensor tensor(std::string name, const graphcore::TensorType& type) {
  Tensor t;
  t.set_name(std::move(name));
  set_shape(type.shape, t.mutable_shape());
  t.set_dtype(std::string(graphcore::dtype_name(type.dtype)));
  if (!type.shape.ranked) t.set_unranked(true);
  return t;
}

google::protobuf::Value attr_value(const graphcore::AttrValue& value) {
  google::protobuf::Value v;
  std::visit(
      [&v](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          v.set_null_value(google::protobuf::NULL_VALUE);
        } else if constexpr (std::is_same_v<T, bool>) {
          v.set_bool_value(x);
        } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
          v.set_number_value(static_cast<double>(x));
        } else if constexpr (std::is_same_v<T, std::string>) {
          v.set_string_value(x);
        } else {  // std::vector<int64_t>
          auto* list = v.mutable_list_value();
          for (int64_t i : x) list->add_values()->set_number_value(static_cast<double>(i));
        }
      },
      value);
  return v;
}

std::string_view node_kind_name(graphcore::NodeKind kind) {
  switch (kind) {
    case graphcore::NodeKind::Input:
      return "input";
    case graphcore::NodeKind::Parameter:
      return "parameter";
    case graphcore::NodeKind::Constant:
      return "constant";
    case graphcore::NodeKind::Op:
      return "op";
  }
  return "op";
}

namespace {

// Node.category: the category of an operator node's definition; "" for the other kinds.
std::string category_of(graphcore::NodeKind kind, std::string_view op) {
  if (kind != graphcore::NodeKind::Op) return {};
  const auto c = graphcore::op_category(op);
  return c ? std::string(graphcore::category_name(*c)) : std::string();
}

}  // namespace

Diagnostic diagnostic(const graphcore::Diagnostic& diag, PositionMapper& positions) {
  Diagnostic d;
  d.set_file(diag.file);
  *d.mutable_range() = positions.range(diag.file, diag.range);
  d.set_severity(graphcore::severity_name(diag.severity));
  d.set_code(diag.code);
  d.set_message(diag.message);
  for (const auto& r : diag.related) {
    auto* out = d.add_related();
    out->set_file(r.file);
    *out->mutable_range() = positions.range(r.file, r.range);
    out->set_message(r.message);
  }
  for (const auto& f : diag.fixes) {
    auto* out = d.add_fixes();
    out->set_title(f.title);
    for (const auto& e : f.edits) {
      auto* edit = out->add_edits();
      edit->set_file(e.file);
      *edit->mutable_range() = positions.range(e.file, e.range);
      edit->set_new_text(e.new_text);
    }
  }
  return d;
}

namespace {

double element_count(const graphcore::Shape& shape) {
  if (!shape.ranked) return 0;
  double n = 1;
  for (const auto& d : shape.dims) {
    if (!d.is_known()) return 0;
    n *= static_cast<double>(d.value());
  }
  return n;
}

}  // namespace

namespace {

// A split as an int32 field holds it (strategies are small; MindSpore's are C int64, a value past
// int32 is clamped, and the checks already report it).
int32_t small_split(int64_t v) {
  return static_cast<int32_t>(std::clamp<int64_t>(v, std::numeric_limits<int32_t>::min(),
                                                  std::numeric_limits<int32_t>::max()));
}

// A count that fits a uint32 field; larger (never from a valid strategy) is 0, "unknown".
uint32_t small_count(int64_t v) {
  return v > 0 && v <= int64_t{std::numeric_limits<uint32_t>::max()} ? static_cast<uint32_t>(v) : 0;
}

void add_rows(const graphcore::Strategy& rows,
              google::protobuf::RepeatedPtrField<ShardingRow>* out) {
  for (const auto& row : rows) {
    auto* r = out->Add();
    for (int64_t v : row) r->add_splits(small_split(v));
  }
}

}  // namespace

Sharding sharding(const graphcore::NodeParallel& par, PositionMapper& positions) {
  Sharding s;
  add_rows(par.in_strategy, s.mutable_strategy());
  if (par.out_strategy) add_rows(*par.out_strategy, s.mutable_out_strategy());
  const bool propagated = !par.propagated_from.empty();
  const std::string file(propagated ? par.from_file.str() : par.shard_file.str());
  s.set_file(file);
  if (!file.empty())
    *s.mutable_range() = positions.range(file, propagated ? par.from_range : par.shard_range);
  s.set_propagated_from(par.propagated_from);
  s.set_attr(par.attr);
  auto add_shapes = [](const std::vector<graphcore::Shape>& shapes,
                       google::protobuf::RepeatedPtrField<Tensor>* out) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      auto* t = out->Add();
      t->set_name(std::to_string(i));
      set_shape(shapes[i], t->mutable_shape());
      if (!shapes[i].ranked) t->set_unranked(true);
    }
  };
  add_shapes(par.per_device_inputs, s.mutable_device_inputs());
  add_shapes(par.per_device_outputs, s.mutable_device_outputs());
  for (int64_t v : par.output_split) s.add_output_split(small_split(v));
  s.set_device_matrix(small_count(par.device_matrix));
  for (const auto& c : par.comms) {
    auto* o = s.add_comms();
    o->set_kind(c.kind);
    o->set_group(small_count(c.group));
    o->set_input(c.input);
    o->set_why(c.why);
  }
  return s;
}

ParallelSummary parallel_summary(const graphcore::ParallelContext& ctx) {
  ParallelSummary p;
  p.set_mode(ctx.parallel_mode);
  p.set_device_num(small_count(ctx.device_num));
  p.set_device_num_from(ctx.device_num_from);
  p.set_pipeline_stages(small_count(ctx.pipeline_stages));
  p.set_micro_batches(small_count(ctx.micro_size));
  p.set_sharding(ctx.sharding());
  p.set_search_mode(ctx.search_mode);
  return p;
}

Cell cell(const graphcore::CellReport& report, PositionMapper& positions, bool include_nodes) {
  Cell c;
  c.set_name(report.name);
  c.set_class_name(report.class_name);
  c.set_file(report.file);
  *c.mutable_range() = positions.range(report.file, report.range);
  for (const auto& in : report.inputs) *c.add_inputs() = tensor(in.name, in.type);
  for (const auto& out : report.outputs) *c.add_outputs() = tensor(out.name, out.type);
  c.set_params(static_cast<double>(report.trainable_params));
  c.set_total_params(static_cast<double>(report.total_params));
  c.set_flops(std::isfinite(report.flops) ? report.flops : 0.0);
  c.set_compiled(report.compiled);
  for (const auto& p : report.params) {
    auto* out = c.add_parameters();
    out->set_name(p.name);
    set_shape(p.shape, out->mutable_shape());
    out->set_dtype(std::string(graphcore::dtype_name(p.dtype)));
    out->set_trainable(p.trainable);
    out->set_size(element_count(p.shape));
  }

  const auto& nodes = report.graph.nodes;
  auto set_edge = [&nodes](Edge* e, const graphcore::ValueRef& ref) {
    e->set_node(ref.node < nodes.size() ? nodes[ref.node].id : std::string());
    e->set_output(ref.output);
  };
  for (const auto& ref : report.graph.outputs) set_edge(c.add_results(), ref);
  for (const auto& [scope, cls] : report.graph.scope_classes)
    (*c.mutable_scope_classes())[scope] = cls;
  for (const auto& f : report.graph.failures) {
    auto* out = c.add_failures();
    out->set_id(f.id);
    out->set_api(f.api);
    out->set_op(f.op);
    out->set_scope(f.scope);
    for (const auto& ref : f.inputs) set_edge(out->add_inputs(), ref);
    out->set_file(f.file);
    *out->mutable_range() = positions.range(f.file.empty() ? report.file : f.file, f.range);
    out->set_code(f.code);
    out->set_message(f.message);
  }
  if (!include_nodes) return c;

  c.mutable_nodes()->Reserve(static_cast<int>(nodes.size()));
  for (const auto& n : nodes) {
    auto* out = c.add_nodes();
    out->set_id(n.id);
    out->set_kind(std::string(node_kind_name(n.kind)));
    out->set_op(n.op);
    out->set_category(category_of(n.kind, n.op));
    out->set_api(n.api);
    out->set_scope(n.scope);
    for (const auto& ref : n.inputs) set_edge(out->add_inputs(), ref);
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      *out->add_outputs() =
          tensor(n.outputs.size() == 1 ? std::string() : std::to_string(i), n.outputs[i]);
    }
    auto* attrs = out->mutable_attrs();
    n.for_each_attr([&](const graphcore::Attr& a) { (*attrs)[a.name] = attr_value(a.value); });
    for (const auto& p : n.params) out->add_params(p);
    out->set_file(n.file);
    *out->mutable_range() = positions.range(n.file.empty() ? report.file : n.file, n.range);
    out->set_flops(std::isfinite(n.flops) ? n.flops : 0.0);
    if (n.parallel) {
      const graphcore::NodeParallel& par = *n.parallel;
      if (par.stage >= 0) out->set_stage(static_cast<int32_t>(par.stage));
      if (!par.in_strategy.empty()) {
        Sharding* s = out->mutable_sharding();
        *s = sharding(par, positions);
        // The slices have the global tensors' dtypes.
        for (int i = 0; i < s->device_inputs_size(); ++i) {
          const auto k = static_cast<size_t>(i);
          if (k >= n.inputs.size()) break;
          const graphcore::ValueRef& ref = n.inputs[k];
          if (ref.node < nodes.size() && ref.output < nodes[ref.node].outputs.size()) {
            s->mutable_device_inputs(i)->set_dtype(
                std::string(graphcore::dtype_name(nodes[ref.node].outputs[ref.output].dtype)));
          }
        }
        for (int i = 0; i < s->device_outputs_size(); ++i) {
          const auto k = static_cast<size_t>(i);
          if (k < n.outputs.size()) {
            s->mutable_device_outputs(i)->set_dtype(
                std::string(graphcore::dtype_name(n.outputs[k].dtype)));
          }
        }
      }
    }
  }
  return c;
}

OptimizedLayer optimized_layer(const graphcore::OptimizedGraph& graph,
                               const graphcore::Graph& semantic) {
  OptimizedLayer out;
  out.set_target(graph.target);
  const auto& nodes = graph.nodes;
  auto sem_id = [&semantic](uint32_t i) -> const std::string& {
    static const std::string kNone;
    return i < semantic.nodes.size() ? semantic.nodes[i].id : kNone;
  };
  auto set_edge = [&nodes](Edge* e, const graphcore::ValueRef& r) {
    e->set_node(r.node < nodes.size() ? nodes[r.node].id : std::string());
    e->set_output(r.output);
  };
  // Fusion reasons by kernel id, and placements by node.
  std::unordered_map<std::string_view, const std::string*> reasons;
  for (const auto& d : graph.decisions) {
    if (d.fused && !d.kernel.empty()) reasons.emplace(d.kernel, &d.reason);
  }
  std::vector<std::vector<uint32_t>> placed(nodes.size());
  for (uint32_t k = 0; k < graph.memory.tensors.size(); ++k) {
    const auto& t = graph.memory.tensors[k];
    if (t.size != 0 && t.node < nodes.size()) placed[t.node].push_back(k);
  }
  uint32_t kernels = 0, fused = 0, transdata = 0, casts = 0, comms = 0;
  out.mutable_nodes()->Reserve(static_cast<int>(nodes.size()));
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    const auto& n = nodes[i];
    auto* o = out.add_nodes();
    o->set_id(n.id);
    o->set_kind(std::string(node_kind_name(n.kind)));
    o->set_op(n.op);
    o->set_category(category_of(n.kind, n.op));
    o->set_pattern(n.pattern);
    for (const auto& r : n.inputs) set_edge(o->add_inputs(), r);
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      auto* t = o->add_outputs();
      *t = tensor(n.outputs.size() == 1 ? std::string() : std::to_string(k), n.outputs[k]);
      const auto f = k < n.formats.size() ? n.formats[k]
                                          : graphcore::default_format(n.outputs[k].shape.rank());
      t->set_format(std::string(graphcore::format_name(f)));
    }
    for (uint32_t origin : n.origins) o->add_origins(sem_id(origin));
    o->set_pass(n.pass);
    for (const auto& p : n.params) o->add_params(p);
    auto* attrs = o->mutable_attrs();
    for (const auto& a : n.attrs) (*attrs)[a.name] = attr_value(a.value);
    o->set_flops(std::isfinite(n.flops) ? n.flops : 0.0);
    if (auto it = reasons.find(n.id); it != reasons.end()) o->set_reason(*it->second);
    if (!n.reason.empty()) o->set_reason(n.reason);
    for (uint32_t k : placed[i]) {
      const auto& t = graph.memory.tensors[k];
      auto* p = o->add_memory();
      p->set_output(t.output);
      p->set_bytes(static_cast<double>(t.bytes));
      p->set_size(static_cast<double>(t.size));
      p->set_first(t.first);
      p->set_last(t.last);
      p->set_offset(static_cast<double>(t.offset));
      p->set_buffer(t.buffer);
    }
    if (n.kind == graphcore::NodeKind::Op) ++kernels;
    if (!n.pattern.empty()) ++fused;
    if (n.op == "TransData") ++transdata;
    if (n.op == "Cast" && n.pass == "amp") ++casts;
    if (n.pass == "comm") ++comms;
  }
  for (const auto& r : graph.outputs) set_edge(out.add_results(), r);
  for (const auto& r : graph.removed) {
    auto* o = out.add_removed();
    o->set_node(sem_id(r.node));
    o->set_pass(r.pass);
    o->set_reason(r.reason);
  }
  for (const auto& e : graph.eliminated) {
    auto* o = out.add_eliminated();
    for (const auto& id : e.ids) o->add_ids(id);
    o->set_value(e.value);
    o->set_reason(e.reason);
  }
  out.set_precision(graph.precision);
  for (const auto& d : graph.decisions) {
    auto* o = out.add_fusions();
    o->set_pass(d.pass);
    o->set_pattern(d.pattern);
    for (uint32_t n : d.nodes) o->add_nodes(sem_id(n));
    o->set_fused(d.fused);
    o->set_reason(d.reason);
    o->set_kernel(d.kernel);
  }
  const auto& plan = graph.memory;
  if (plan.planned) {
    auto* m = out.mutable_memory();
    m->set_algorithm("greedy-by-size");
    m->set_alignment(plan.alignment);
    m->set_peak_bytes(static_cast<double>(plan.peak));
    m->set_naive_bytes(static_cast<double>(plan.naive));
    m->set_lower_bound_bytes(static_cast<double>(plan.lower_bound));
    m->set_weight_bytes(static_cast<double>(plan.weight_bytes));
    m->set_constant_bytes(static_cast<double>(plan.constant_bytes));
    uint32_t planned = 0;
    for (const auto& t : plan.tensors) planned += t.size != 0 ? 1 : 0;
    m->set_tensors(planned);
    for (const auto& b : plan.buffers) {
      auto* o = m->add_buffers();
      o->set_offset(static_cast<double>(b.offset));
      o->set_size(static_cast<double>(b.size));
      for (uint32_t k : b.tensors) {
        const auto& t = plan.tensors[k];
        o->add_tensors((t.node < nodes.size() ? nodes[t.node].id : std::string()) + ":" +
                       std::to_string(t.output));
      }
    }
    for (const auto& u : plan.unsized) m->add_unsized(u);
  }
  for (const auto& p : graph.passes) {
    auto* o = out.add_passes();
    o->set_name(p.name);
    o->set_description(p.description);
    o->set_nodes_before(static_cast<uint32_t>(p.nodes_before));
    o->set_nodes_after(static_cast<uint32_t>(p.nodes_after));
    o->set_changes(static_cast<uint32_t>(p.changes));
    o->set_ms(p.ms);
  }
  uint32_t semantic_ops = 0;
  for (const auto& n : semantic.nodes) semantic_ops += n.kind == graphcore::NodeKind::Op ? 1 : 0;
  out.set_semantic_ops(semantic_ops);
  out.set_kernels(kernels);
  out.set_fusion_groups(fused);
  out.set_transdata(transdata);
  out.set_casts(casts);
  out.set_comms(comms);
  return out;
}

namespace {

void fill_kernel(const graphcore::KernelEstimate& k, const graphcore::OptimizedGraph& graph,
                 HardwareKernel* o) {
  o->set_node(k.node < graph.nodes.size() ? graph.nodes[k.node].id : std::string());
  o->set_phase(k.phase);
  o->set_name(k.name);
  o->set_unit(std::string(graphcore::unit_name(k.unit)));
  o->set_block_dim(k.block_dim);
  for (uint32_t c : k.core_ids) o->add_core_ids(c);
  o->set_compute_cycles(std::round(k.compute_cycles));
  o->set_movement_cycles(std::round(k.movement_cycles));
  o->set_cycles(std::round(k.cycles));
  o->set_start_us(k.start_us);
  o->set_time_us(k.time_us);
  o->set_gm_read_bytes(std::round(k.gm_read_bytes));
  o->set_gm_write_bytes(std::round(k.gm_write_bytes));
  o->set_bandwidth_gbps(k.bandwidth_gbps);
  o->set_macs(k.macs);
  o->set_bound(k.bound);
  o->set_tiles(static_cast<double>(k.tiles));
  o->set_comm_bytes(k.comm_bytes);
  if (!k.detail) return;
  const auto& detail = *k.detail;
  for (const auto& t : detail.tiling) {
    auto* x = o->add_tiling();
    x->set_buffer(t.buffer);
    x->set_tile(t.tile);
    x->set_bytes(static_cast<double>(t.bytes));
    x->set_copies(t.copies);
    x->set_capacity(static_cast<double>(t.capacity));
  }
  for (const auto& l : detail.loops) {
    auto* x = o->add_loops();
    x->set_var(l.var);
    x->set_trips(static_cast<double>(l.trips));
    x->set_what(l.what);
  }
  for (const auto& d : detail.dma) {
    auto* x = o->add_dma();
    x->set_channel(d.channel);
    x->set_from(d.from);
    x->set_to(d.to);
    x->set_bytes(std::round(d.bytes));
  }
  for (const auto& s : detail.schedule) {
    auto* x = o->add_schedule();
    x->set_op(s.op);
    x->set_unit(s.unit);
    x->set_count(static_cast<double>(s.count));
    x->set_cycles(std::round(s.cycles));
  }
}

}  // namespace

HardwareTarget hardware_target_spec(const graphcore::HardwareTarget& t) {
  HardwareTarget o;
  o.set_name(t.name);
  o.set_display_name(t.display_name);
  o.set_kind(t.ascend ? "ascend" : "cpu");
  if (t.ascend) {
    o.set_organisation(t.separated ? "separated" : "coupled");
    o.set_ai_cores(t.ai_cores);
    o.set_vector_cores(t.vector_cores);
    o.set_peak_tflops_fp16(t.ai_cores * t.cube_macs_fp16 * 2 * t.frequency_mhz / 1e6);
    o.set_l1_bytes(static_cast<double>(t.l1_bytes));
    o.set_l0a_bytes(static_cast<double>(t.l0a_bytes));
    o.set_l0b_bytes(static_cast<double>(t.l0b_bytes));
    o.set_l0c_bytes(static_cast<double>(t.l0c_bytes));
    o.set_ub_bytes(static_cast<double>(t.ub_bytes));
    o.set_l2_bytes(static_cast<double>(t.l2_bytes));
    o.set_gm_bandwidth_gbps(t.gm_bandwidth_gbps);
    for (const auto& c : t.dma_channels) o.add_dma_channels(c);
    o.set_ai_cpu_cores(t.ai_cpu_cores);
  } else {
    o.set_ai_cores(t.cores);
    o.set_peak_tflops_fp16(t.cores * t.flops_per_cycle_fp32 * t.frequency_mhz / 1e6);
    o.set_gm_bandwidth_gbps(t.dram_bandwidth_gbps);
  }
  o.set_frequency_mhz(t.frequency_mhz);
  o.set_interconnect_gbps(t.interconnect_gbps);
  o.set_interconnect_latency_us(t.interconnect_latency_us);
  for (const auto& s : t.sources) {
    auto* x = o.add_sources();
    x->set_field(s.field);
    x->set_confidence(s.confidence);
    x->set_source(s.source);
  }
  return o;
}

void add_hardware_layer(const graphcore::HardwareGraph& hw, const graphcore::OptimizedGraph& graph,
                        const graphcore::HardwareTarget& target, Cell* cell) {
  auto* layer = cell->mutable_hardware();
  layer->set_target(hw.target);
  layer->set_mode(hw.estimate.mode);
  layer->set_ascend(hw.ascend);
  layer->set_statement(hw.statement);
  *layer->mutable_spec() = hardware_target_spec(target);
  const auto& e = hw.estimate;
  auto* est = layer->mutable_estimate();
  est->set_latency_ms(e.latency_ms);
  est->set_throughput_per_sec(e.throughput_per_sec);
  est->set_batch(static_cast<double>(e.batch));
  est->set_analytical(e.analytical);
  est->set_target(e.target);
  est->set_mode(e.mode);
  est->set_forward_ms(e.forward_ms);
  est->set_backward_ms(e.backward_ms);
  est->set_optimizer_ms(e.optimizer_ms);
  est->set_cube_ms(e.cube_ms);
  est->set_vector_ms(e.vector_ms);
  est->set_aicpu_ms(e.aicpu_ms);
  est->set_cpu_ms(e.cpu_ms);
  est->set_dispatch_ms(e.dispatch_ms);
  est->set_macs(e.macs);
  est->set_gm_bytes(std::round(e.gm_bytes));
  est->set_cube_utilization(e.cube_utilization);
  est->set_memory_peak_bytes(static_cast<double>(e.memory_peak_bytes));
  est->set_weight_bytes(static_cast<double>(e.weight_bytes));
  for (const auto& n : e.notes) est->add_notes(n);
  est->set_comm_ms(e.comm_ms);
  est->set_comm_bytes(e.comm_bytes);
  est->set_comm_timed(e.comm_timed);
  est->set_pipeline_stages(static_cast<uint32_t>(e.pipeline_stages));
  est->set_micro_batches(static_cast<uint32_t>(e.micro_batches));
  est->set_bubble_fraction(e.bubble_fraction);
  est->set_pipeline_step_ms(e.pipeline_step_ms);
  for (const auto& s : e.stages) {
    auto* x = est->add_stages();
    x->set_stage(static_cast<uint32_t>(s.stage));
    x->set_compute_ms(s.compute_ms);
    x->set_comm_ms(s.comm_ms);
  }
  layer->set_kernels(static_cast<uint32_t>(hw.kernels.size()));
  auto* nodes = cell->mutable_optimized()->mutable_nodes();
  for (const auto& k : hw.kernels) {
    HardwareKernel* o = k.node < static_cast<uint32_t>(nodes->size())
                            ? nodes->Mutable(static_cast<int>(k.node))->add_hardware()
                            : layer->add_optimizer();
    fill_kernel(k, graph, o);
  }
}

namespace {

PlanCall plan_call(const graphcore::PlanCall& c, PositionMapper& positions) {
  PlanCall out;
  out.set_api(c.api);
  for (const auto& a : c.args) {
    PlanArg* arg = out.add_args();
    arg->set_name(a.name);
    *arg->mutable_value() = attr_value(a.value);
  }
  out.set_file(c.file);
  if (!c.file.empty()) *out.mutable_range() = positions.range(c.file, c.range);
  return out;
}

std::string_view dataset_op_kind(graphcore::DatasetOp::Kind k) {
  using K = graphcore::DatasetOp::Kind;
  switch (k) {
    case K::Map:
      return "map";
    case K::Batch:
      return "batch";
    case K::Shuffle:
      return "shuffle";
    case K::Repeat:
      return "repeat";
    case K::Take:
      return "take";
    case K::Project:
      return "project";
  }
  return "map";
}

std::string_view idiom_name(graphcore::TrainingPlan::Idiom i) {
  using I = graphcore::TrainingPlan::Idiom;
  switch (i) {
    case I::ModelTrain:
      return "model_train";
    case I::Functional:
      return "functional";
    case I::TrainOneStepCell:
      return "train_one_step_cell";
  }
  return "model_train";
}

DatasetPlan dataset_plan(const graphcore::DatasetPlan& p, PositionMapper& positions) {
  DatasetPlan d;
  *d.mutable_source() = plan_call(p.source, positions);
  for (const auto& op : p.ops) {
    DatasetOp* o = d.add_ops();
    o->set_kind(std::string(dataset_op_kind(op.kind)));
    *o->mutable_call() = plan_call(op.call, positions);
    for (const auto& t : op.transforms) *o->add_transforms() = plan_call(t, positions);
    for (const auto& c : op.input_columns) o->add_input_columns(c);
    for (const auto& c : op.columns) o->add_columns(c);
  }
  for (const auto& c : p.columns) *d.add_columns() = tensor(c.name, c.type);
  d.set_opaque_reason(p.opaque_reason);
  return d;
}

TrainingPlan training_plan(const graphcore::TrainingPlan& p, PositionMapper& positions,
                           bool include_nodes) {
  TrainingPlan out;
  out.set_idiom(std::string(idiom_name(p.idiom)));
  out.set_file(p.file);
  *out.mutable_range() = positions.range(p.file, p.range);
  *out.mutable_loss_graph() = cell(p.loss_graph, positions, include_nodes);
  out.set_network(p.network);
  *out.mutable_loss() = plan_call(p.loss, positions);
  *out.mutable_optimizer() = plan_call(p.optimizer, positions);
  for (const auto& g : p.param_groups) {
    ParamGroup* pg = out.add_param_groups();
    for (const auto& name : g.params) pg->add_params(name);
    for (const auto& a : g.overrides) {
      PlanArg* arg = pg->add_overrides();
      arg->set_name(a.name);
      *arg->mutable_value() = attr_value(a.value);
    }
  }
  if (p.lr_schedule) *out.mutable_lr_schedule() = plan_call(*p.lr_schedule, positions);
  if (p.lr_graph.compiled || !p.lr_graph_reason.empty()) {
    *out.mutable_lr_graph() = cell(p.lr_graph, positions, include_nodes);
    out.set_lr_graph_reason(p.lr_graph_reason);
  }
  if (p.loss_scale_manager)
    *out.mutable_loss_scale_manager() = plan_call(*p.loss_scale_manager, positions);
  if (p.clip_global_norm) out.set_clip_global_norm(*p.clip_global_norm);
  if (p.dataset) *out.mutable_dataset() = dataset_plan(*p.dataset, positions);
  if (p.eval_dataset) {
    *out.mutable_eval_dataset() = dataset_plan(*p.eval_dataset, positions);
    *out.mutable_eval_range() = positions.range(p.file, p.eval_range);
  }
  if (p.epochs) out.set_epochs(static_cast<double>(*p.epochs));
  if (p.sink_size) out.set_sink_size(static_cast<double>(*p.sink_size));
  out.set_dataset_sink_mode(p.dataset_sink_mode);
  for (const auto& c : p.callbacks) *out.add_callbacks() = plan_call(c, positions);
  for (const auto& c : p.exports) *out.add_exports() = plan_call(c, positions);
  return out;
}

}  // namespace

GraphDocument graph_document(const graphcore::AnalysisResult& result, PositionMapper& positions,
                             const DocumentInfo& info, bool include_nodes) {
  GraphDocument doc;
  doc.set_file(result.file);
  doc.set_target(info.target);
  doc.set_layer(info.layer);
  doc.set_mindspore_version(info.mindspore_version.empty()
                                ? graphcore::kDefaultMindSporeVersion.str()
                                : info.mindspore_version);
  doc.set_tool_version(std::string(tool_version()));
  for (const auto& f : result.files) doc.add_files(f);
  for (const auto& r : result.cells) *doc.add_cells() = cell(r, positions, include_nodes);
  for (const auto& d : result.diagnostics) *doc.add_diagnostics() = diagnostic(d, positions);
  for (const auto& t : result.training)
    *doc.add_training() = training_plan(t, positions, include_nodes);
  const graphcore::ParallelContext& par = result.parallel;
  // A stand-alone script is no parallel job, whatever device count mindspore_config.json gives
  // (the view would offer a rank picker for it).
  if (par.parallel_mode != "stand_alone" || par.wrapper || par.pipeline_stages > 1 ||
      par.micro_size > 0)
    *doc.mutable_parallel() = parallel_summary(par);
  if (result.imported) {
    ImportedModel* m = doc.mutable_imported();
    m->set_format(result.imported->format);
    for (const auto& [name, value] : result.imported->header) {
      HeaderField* f = m->add_header();
      f->set_name(name);
      f->set_value(value);
    }
    m->set_file_nodes(static_cast<uint32_t>(result.imported->file_nodes));
  }
  return doc;
}

// ---------------------------------------------------------------------------------------------
// Serialisation

namespace {

// Indented JSON (2 spaces) in which arrays of scalars (shapes) and small objects of scalars
// (positions) stay on one line: [1, 3, 224, 224], {"line": 9, "character": 4}.
std::string scalar_json(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

// A string that needs no escaping (printable ASCII without quote or backslash: identifiers,
// op names, dtypes, most file paths) is copied as it is; anything else goes through the
// serialiser, which escapes and replaces invalid UTF-8.
bool plain_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
}

void append_string(std::string_view s, std::string& out) {
  if (plain_ascii(s)) {
    out.push_back('"');
    out.append(s);
    out.push_back('"');
  } else {
    out += scalar_json(nlohmann::ordered_json(s));
  }
}

// One scalar, without constructing a serialiser (which reads the locale) for the common kinds.
void append_scalar(const nlohmann::ordered_json& j, std::string& out) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::string:
      append_string(j.get_ref<const std::string&>(), out);
      return;
    case nlohmann::ordered_json::value_t::boolean:
      out += j.get<bool>() ? "true" : "false";
      return;
    case nlohmann::ordered_json::value_t::null:
      out += "null";
      return;
    case nlohmann::ordered_json::value_t::number_integer:
    case nlohmann::ordered_json::value_t::number_unsigned: {
      std::array<char, 24> buf{};
      const auto res = j.is_number_unsigned()
                           ? std::to_chars(buf.data(), buf.data() + buf.size(), j.get<uint64_t>())
                           : std::to_chars(buf.data(), buf.data() + buf.size(), j.get<int64_t>());
      out.append(buf.data(), res.ptr);
      return;
    }
    default:
      out += scalar_json(j);
      return;
  }
}

bool inline_json(const nlohmann::ordered_json& j) {
  if (!j.is_structured()) return true;
  if (j.is_object() && j.size() > 3) return false;
  for (const auto& v : j) {
    if (v.is_structured()) return false;
  }
  return true;
}

void write_pretty(const nlohmann::ordered_json& j, int indent, std::string& out) {
  const auto newline = [&out](int n) {
    out.push_back('\n');
    out.append(static_cast<size_t>(n), ' ');
  };
  const bool one_line = inline_json(j);
  if (!j.is_structured()) {
    append_scalar(j, out);
    return;
  }
  out.push_back(j.is_object() ? '{' : '[');
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!first) out += one_line ? ", " : ",";
    first = false;
    if (!one_line) newline(indent + 2);
    if (j.is_object()) {
      append_string(it.key(), out);
      out += ": ";
    }
    write_pretty(*it, indent + 2, out);
  }
  if (!one_line && !j.empty()) newline(indent);
  out.push_back(j.is_object() ? '}' : ']');
}

}  // namespace

std::string to_json(const google::protobuf::Message& message, const JsonOptions& options) {
  const nlohmann::ordered_json tree = message_to_json(message, options.defaults);
  std::string out;
  if (options.pretty) {
    // Laid out for people: shapes and positions on one line, everything else indented.
    write_pretty(tree, 0, out);
  } else {
    out = tree.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  }
  out.push_back('\n');
  return out;
}

bool from_json(std::string_view json, google::protobuf::Message* message, std::string* error) {
  google::protobuf::util::JsonParseOptions parse;
  parse.ignore_unknown_fields = true;
  auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), message, parse);
  if (!status.ok() && error != nullptr) *error = std::string(status.message());
  return status.ok();
}

std::string to_binary(const google::protobuf::Message& message) {
  std::string out;
  if (!message.SerializeToString(&out)) {
    throw std::runtime_error("cannot serialise " + message.GetTypeName());
  }
  return out;
}

bool from_binary(std::string_view bytes, google::protobuf::Message* message) {
  return message->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
}

}  // namespace cellscope::protocol
