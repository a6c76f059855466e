// ONNX export (graphcore/export_onnx.h): the graph's live nodes in order (the graph is built in
// evaluation order, so inputs precede their readers), each written by its OpDef::onnx rule
// (onnx_rules.cpp) through an OnnxNodeBuilder; weights and constants become initializers.

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <set>

#include "export/onnx_builder.h"
#include "graphcore/export_onnx.h"
#include "graphcore/model_file.h"
#include "graphcore/opdef.h"
#include "onnx/onnx.pb.h"

namespace graphcore {

namespace exporter {

static_assert(std::endian::native == std::endian::little,
              "raw_data is written from host memory: little-endian hosts only");

int32_t onnx_dtype(DType t) {
  switch (t) {
    case DType::Float32:
      return onnx::TensorProto::FLOAT;
    case DType::Float16:
      return onnx::TensorProto::FLOAT16;
    case DType::Float64:
      return onnx::TensorProto::DOUBLE;
    case DType::Int32:
      return onnx::TensorProto::INT32;
    case DType::Int64:
      return onnx::TensorProto::INT64;
    case DType::Bool:
      return onnx::TensorProto::BOOL;
    case DType::Int8:
      return onnx::TensorProto::INT8;
    case DType::UInt8:
      return onnx::TensorProto::UINT8;
    default:
      return 0;
  }
}

OnnxNodeBuilder::OnnxNodeBuilder(const Node& node, std::vector<std::string> input_names,
                                 std::vector<const TensorType*> input_types,
                                 std::vector<std::string> param_names,
                                 std::vector<const TensorType*> param_types,
                                 onnx::GraphProto* graph, size_t* counter)
    : node_(node),
      inputs_(std::move(input_names)),
      input_types_(std::move(input_types)),
      params_(std::move(param_names)),
      param_types_(std::move(param_types)),
      graph_(graph),
      counter_(counter) {}

void OnnxNodeBuilder::refuse(const std::string& why) const { throw OnnxRefusal(why); }

const std::string& OnnxNodeBuilder::input(size_t i) const {
  if (i >= inputs_.size()) {
    refuse("expects input " + std::to_string(i) + ", the graph gives " +
           std::to_string(inputs_.size()));
  }
  return inputs_[i];
}

const TensorType& OnnxNodeBuilder::input_type(size_t i) const {
  (void)input(i);
  return *input_types_[i];
}

namespace {
std::vector<int64_t> dims_of(const TensorType& t, const OnnxNodeBuilder& b, const char* what) {
  std::vector<int64_t> out;
  if (!t.shape.ranked) b.refuse(std::string("the rank of its ") + what + " is not known");
  for (const Dim& d : t.shape.dims) {
    if (!d.is_known()) {
      b.refuse(std::string("its ") + what + " " + t.shape.str() +
               " has a dimension that is not a number (export needs static shapes)");
    }
    out.push_back(d.value());
  }
  return out;
}
}  // namespace

std::vector<int64_t> OnnxNodeBuilder::input_dims(size_t i) const {
  return dims_of(input_type(i), *this, "input");
}

std::vector<int64_t> OnnxNodeBuilder::output_dims(size_t i) const {
  if (i >= node_.outputs.size()) refuse("has no output " + std::to_string(i));
  return dims_of(node_.outputs[i], *this, "output");
}

std::string OnnxNodeBuilder::output(size_t i) const {
  return i == 0 ? node_.id : node_.id + ":" + std::to_string(i);
}

namespace {
bool ends_with_suffix(std::string_view name, std::string_view suffix) {
  if (name == suffix) return true;
  return name.size() > suffix.size() && name.ends_with(suffix) &&
         name[name.size() - suffix.size() - 1] == '.';
}
}  // namespace

std::string OnnxNodeBuilder::param(std::string_view suffix) const {
  for (const std::string& p : params_)
    if (ends_with_suffix(p, suffix)) return p;
  return {};
}

std::vector<int64_t> OnnxNodeBuilder::param_dims(std::string_view suffix) const {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (ends_with_suffix(params_[i], suffix)) return dims_of(*param_types_[i], *this, "weight");
  }
  refuse("reads no weight '" + std::string(suffix) + "'");
}

std::string OnnxNodeBuilder::temp(std::string_view what) {
  return node_.id + "/" + std::string(what) + "_" + std::to_string((*counter_)++);
}

void OnnxNodeBuilder::emit(std::string_view op_type, const std::vector<std::string>& inputs,
                           const std::vector<std::string>& outputs,
                           const std::vector<OnnxAttr>& attrs) {
  onnx::NodeProto* n = graph_->add_node();
  n->set_op_type(std::string(op_type));
  n->set_name(outputs.empty() ? node_.id : outputs.front());
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  for (const OnnxAttr& a : attrs) {
    onnx::AttributeProto* p = n->add_attribute();
    p->set_name(a.name);
    if (const auto* i = std::get_if<int64_t>(&a.value)) {
      p->set_type(onnx::AttributeProto::INT);
      p->set_i(*i);
    } else if (const auto* f = std::get_if<float>(&a.value)) {
      p->set_type(onnx::AttributeProto::FLOAT);
      p->set_f(*f);
    } else if (const auto* s = std::get_if<std::string>(&a.value)) {
      p->set_type(onnx::AttributeProto::STRING);
      p->set_s(*s);
    } else if (const auto* is = std::get_if<std::vector<int64_t>>(&a.value)) {
      p->set_type(onnx::AttributeProto::INTS);
      for (int64_t v : *is) p->add_ints(v);
    } else if (const auto* fs = std::get_if<std::vector<float>>(&a.value)) {
      p->set_type(onnx::AttributeProto::FLOATS);
      for (float v : *fs) p->add_floats(v);
    }
  }
}

namespace {
template <class T>
void append_raw(std::string* raw, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  raw->append(bytes, sizeof(T));
}

// Appends one element of dtype `t` (ONNX's little-endian raw layout) converted from double.
bool append_element(std::string* raw, DType t, double v) {
  switch (t) {
    case DType::Float32:
      append_raw(raw, static_cast<float>(v));
      return true;
    case DType::Float64:
      append_raw(raw, v);
      return true;
    case DType::Float16:
      append_raw(raw, binary16_bits(static_cast<float>(v)));
      return true;
    case DType::Int32:
      append_raw(raw, static_cast<int32_t>(v));
      return true;
    case DType::Int64:
      append_raw(raw, static_cast<int64_t>(v));
      return true;
    case DType::Bool:
      append_raw(raw, static_cast<uint8_t>(v != 0));
      return true;
    case DType::Int8:
      append_raw(raw, static_cast<int8_t>(v));
      return true;
    case DType::UInt8:
      append_raw(raw, static_cast<uint8_t>(v));
      return true;
    default:
      return false;
  }
}
}  // namespace

std::string OnnxNodeBuilder::const_i64(std::string_view what, const std::vector<int64_t>& values) {
  onnx::TensorProto* t = graph_->add_initializer();
  t->set_name(temp(what));
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  std::string* raw = t->mutable_raw_data();
  for (int64_t v : values) append_raw(raw, v);
  return t->name();
}

std::string OnnxNodeBuilder::const_scalar(std::string_view what, double v, DType dtype) {
  if (onnx_dtype(dtype) == 0) refuse("a scalar of dtype " + std::string(dtype_name(dtype)));
  onnx::TensorProto* t = graph_->add_initializer();
  t->set_name(temp(what));
  t->set_data_type(onnx_dtype(dtype));
  append_element(t->mutable_raw_data(), dtype, v);
  return t->name();
}

void OnnxNodeBuilder::fill_output(double v, size_t i) {
  const std::vector<int64_t> dims = output_dims(i);
  const DType dtype = node_.outputs[i].dtype;
  if (onnx_dtype(dtype) == 0) refuse("an output of dtype " + std::string(dtype_name(dtype)));
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  onnx::TensorProto* t = graph_->add_initializer();
  t->set_name(output(i));
  t->set_data_type(onnx_dtype(dtype));
  for (int64_t d : dims) t->add_dims(d);
  std::string* raw = t->mutable_raw_data();
  for (int64_t k = 0; k < count; ++k) append_element(raw, dtype, v);
}

std::vector<std::string> OnnxNodeBuilder::operands(size_t n) {
  std::vector<std::string> ops = inputs_;
  const AttrValue* s = node_.find_attr("scalar");
  const AttrValue* idx = node_.find_attr("scalar_index");
  if (s != nullptr && idx != nullptr && std::holds_alternative<int64_t>(*idx)) {
    const int64_t at = std::get<int64_t>(*idx);
    if (at < 0 || static_cast<size_t>(at) > ops.size() || ops.empty()) {
      refuse("its recorded scalar operand does not fit its inputs");
    }
    double v = 0;
    if (const auto* i = std::get_if<int64_t>(s)) {
      v = static_cast<double>(*i);
    } else if (const auto* d = std::get_if<double>(s)) {
      v = *d;
    } else if (const auto* bv = std::get_if<bool>(s)) {
      v = *bv ? 1 : 0;
    } else {
      refuse("its scalar operand is not a number");
    }
    // The scalar takes the dtype of the tensor beside it, as the runtime's kernels do.
    const size_t beside =
        static_cast<size_t>(at) < ops.size() ? static_cast<size_t>(at) : ops.size() - 1;
    ops.insert(ops.begin() + at, const_scalar("scalar", v, input_types_[beside]->dtype));
  }
  if (ops.size() < n) refuse("expects " + std::to_string(n) + " operands");
  return ops;
}

void OnnxNodeBuilder::same(std::string_view op_type) { emit(op_type, {input(0)}, {output()}); }

}  // namespace exporter

namespace {

using exporter::onnx_dtype;

Diagnostic refusal(const CellReport& report, const Node& node, std::string code,
                   std::string message) {
  Diagnostic d;
  d.file = node.file.empty() ? report.file : std::string(node.file);
  d.range = node.file.empty() ? report.range : node.range;
  d.code = std::move(code);
  d.message = std::move(message);
  return d;
}

std::string at_line(const Node& n) {
  return " (line " + std::to_string(n.range.start.line + 1) + ")";
}

void set_value_info(onnx::ValueInfoProto* v, const std::string& name, const TensorType& t) {
  v->set_name(name);
  onnx::TypeProto_Tensor* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx_dtype(t.dtype));
  onnx::TensorShapeProto* s = tt->mutable_shape();
  for (const Dim& d : t.shape.dims) s->add_dim()->set_dim_value(d.value());
}

bool static_type(const TensorType& t) {
  if (!t.shape.ranked) return false;
  for (const Dim& d : t.shape.dims)
    if (!d.is_known()) return false;
  return true;
}

// A runtime tensor as an initializer (raw_data: the host's little-endian bytes).
// Without `copy_raw`, only the name, dims and type (the caller streams the bytes).
bool tensor_initializer(onnx::TensorProto* out, const std::string& name, const runtime::Tensor& t,
                        bool copy_raw) {
  out->set_name(name);
  for (int64_t d : t.shape()) out->add_dims(d);
  std::string scratch;
  std::string* raw = copy_raw ? out->mutable_raw_data() : &scratch;
  if (!copy_raw) {
    switch (t.dtype()) {
      case DType::Float32:
        out->set_data_type(onnx::TensorProto::FLOAT);
        return true;
      case DType::Float16:
        out->set_data_type(onnx::TensorProto::FLOAT16);
        return true;
      case DType::Int32:
        out->set_data_type(onnx::TensorProto::INT32);
        return true;
      case DType::Int64:
        out->set_data_type(onnx::TensorProto::INT64);
        return true;
      case DType::Bool:
        out->set_data_type(onnx::TensorProto::BOOL);
        return true;
      default:
        return false;
    }
  }
  switch (t.dtype()) {
    case DType::Float32:
      out->set_data_type(onnx::TensorProto::FLOAT);
      raw->assign(reinterpret_cast<const char*>(t.data<float>()),
                  static_cast<size_t>(t.numel()) * sizeof(float));
      return true;
    case DType::Float16: {  // float32 storage holding binary16 values -> binary16 bits
      out->set_data_type(onnx::TensorProto::FLOAT16);
      const auto* src = t.data<float>();
      raw->reserve(static_cast<size_t>(t.numel()) * 2);
      for (int64_t i = 0; i < t.numel(); ++i) {
        const uint16_t h = binary16_bits(src[i]);
        raw->append(reinterpret_cast<const char*>(&h), 2);
      }
      return true;
    }
    case DType::Int32:
      out->set_data_type(onnx::TensorProto::INT32);
      raw->assign(reinterpret_cast<const char*>(t.data<int32_t>()),
                  static_cast<size_t>(t.numel()) * sizeof(int32_t));
      return true;
    case DType::Int64:
      out->set_data_type(onnx::TensorProto::INT64);
      raw->assign(reinterpret_cast<const char*>(t.data<int64_t>()),
                  static_cast<size_t>(t.numel()) * sizeof(int64_t));
      return true;
    case DType::Bool:
      out->set_data_type(onnx::TensorProto::BOOL);
      raw->assign(reinterpret_cast<const char*>(t.data<uint8_t>()), static_cast<size_t>(t.numel()));
      return true;
    default:
      return false;
  }
}

}  // namespace

namespace {

// Field numbers of onnx.proto framed by hand.
constexpr uint32_t kModelGraph = 7;
constexpr uint32_t kGraphInitializer = 5;
constexpr uint32_t kTensorRawData = 9;

// `model` as a ModelFile: protobuf serializes the model without its graph, the graph without its
// initializers, and each streamed initializer without raw_data; the keys and lengths around them
// are framed by hand and each streamed weight's raw_data is its runtime tensor, not a copy
// (parsers accept fields in any order; the initializers keep theirs). False (and `out` holds the
// size only) when the result exceeds protobuf's 2 GiB limit.
// Above options.external_threshold bytes (protobuf's 2 GiB limit by default) with an
// external_location: ONNX external data instead. Every streamed weight goes to one data file at
// an offset aligned to 4096 bytes (onnx allows up to 64 KiB of gap; page-aligned offsets let
// onnxruntime map them), its initializer naming location / offset / length with data_location
// EXTERNAL; the model file keeps the structure only.
constexpr uint64_t kExternalAlign = 4096;

void assemble_external(onnx::ModelProto& model, const std::map<int, runtime::Tensor>& streamed,
                       const OnnxExportOptions& options, OnnxExportResult* result) {
  onnx::GraphProto* graph = model.mutable_graph();
  uint64_t offset = 0;
  for (const auto& [index, tensor] : streamed) {
    onnx::TensorProto* t = graph->mutable_initializer(index);
    const bool half = tensor.dtype() == DType::Float16;
    const uint64_t n = ModelFile::tensor_bytes(tensor, half);
    const uint64_t pad = (kExternalAlign - offset % kExternalAlign) % kExternalAlign;
    result->data_file.append(std::string(static_cast<size_t>(pad), '\0'));
    offset += pad;
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const char* key, const std::string& value) {
      onnx::StringStringEntryProto* e = t->add_external_data();
      e->set_key(key);
      e->set_value(value);
    };
    add("location", options.external_location);
    add("offset", std::to_string(offset));
    add("length", std::to_string(n));
    result->data_file.append_tensor(tensor, half);
    offset += n;
  }
  result->data_location = options.external_location;
  result->file.append(model.SerializeAsString());
}

bool assemble(onnx::ModelProto& model, const std::map<int, runtime::Tensor>& streamed,
              ModelFile* out, uint64_t limit) {
  onnx::GraphProto* graph = model.mutable_graph();
  google::protobuf::RepeatedPtrField<onnx::TensorProto> inits;
  inits.Swap(graph->mutable_initializer());
  const std::string rest = graph->SerializeAsString();
  onnx::GraphProto* detached = model.release_graph();
  const std::string head = model.SerializeAsString();
  model.set_allocated_graph(detached);
  std::vector<std::string> metas;
  std::vector<uint64_t> raw_sizes;
  std::vector<uint64_t> bodies;
  uint64_t graph_len = rest.size();
  for (int i = 0; i < inits.size(); ++i) {
    metas.push_back(inits.Get(i).SerializeAsString());
    auto it = streamed.find(i);
    raw_sizes.push_back(
        it == streamed.end()
            ? 0
            : ModelFile::tensor_bytes(it->second, it->second.dtype() == DType::Float16));
    bodies.push_back(
        metas.back().size() +
        (it == streamed.end() ? 0 : wire::framed_size(kTensorRawData, raw_sizes.back())));
    graph_len += wire::framed_size(kGraphInitializer, bodies.back());
  }
  const uint64_t total = head.size() + wire::framed_size(kModelGraph, graph_len);
  inits.Swap(graph->mutable_initializer());
  if (total > limit) return false;
  out->append(head);
  out->append(wire::length_delimited(kModelGraph, graph_len));
  out->append(rest);
  for (size_t i = 0; i < metas.size(); ++i) {
    out->append(wire::length_delimited(kGraphInitializer, bodies[i]));
    out->append(metas[i]);
    auto it = streamed.find(static_cast<int>(i));
    if (it == streamed.end()) continue;
    out->append(wire::length_delimited(kTensorRawData, raw_sizes[i]));
    out->append_tensor(it->second, it->second.dtype() == DType::Float16);
  }
  return true;
}

// build_onnx; with `params` null, only the checks (no weights are read or written).
OnnxExportResult build(const CellReport& report, const std::span<const runtime::ParamState>* params,
                       const OnnxExportOptions& options) {
  OnnxExportResult result;
  const Graph& g = report.graph;
  auto located = [&](const Node& n, const std::string& code, const std::string& msg) {
    result.diagnostics.push_back(refusal(report, n, code, msg));
  };
  if (!report.compiled) {
    Diagnostic d;
    d.file = report.file;
    d.range = report.range;
    d.code = "export-no-output";
    d.message = "cannot export " + report.name + ": its construct did not compile";
    result.diagnostics.push_back(d);
    return result;
  }
  if (g.outputs.empty()) {
    Diagnostic d;
    d.file = report.file;
    d.range = report.range;
    d.code = "export-no-output";
    d.message = "cannot export " + report.name +
                ": construct returns no tensor that Cellscope could follow (see the notes above)";
    result.diagnostics.push_back(d);
    return result;
  }

  // Live nodes: those the outputs depend on (a dead node needs no ONNX form).
  std::vector<bool> live(g.nodes.size(), false);
  for (const ValueRef& r : g.outputs) live[r.node] = true;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    if (!live[i]) continue;
    for (const ValueRef& r : g.nodes[i].inputs) live[r.node] = true;
  }

  std::map<std::string_view, const runtime::ParamState*> values;
  if (params != nullptr) {
    for (const runtime::ParamState& p : *params) values[p.name] = &p;
  }
  std::map<std::string_view, const ParamInfo*> infos;
  for (const ParamInfo& p : report.params) infos[p.name] = &p;

  onnx::ModelProto model;
  model.set_ir_version(kOnnxIrVersion);
  model.set_producer_name("cellscope");
  model.set_producer_version(options.producer_version);
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(options.opset);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name(report.class_name.empty() ? report.name : report.class_name);

  std::set<std::string> initialized;
  std::map<int, runtime::Tensor> streamed;  // initializer index -> the weight it streams
  auto add_param = [&](const Node& n, const std::string& name) {
    if (params == nullptr || initialized.count(name)) return;
    auto it = values.find(name);
    if (it == values.end() || !it->second->value.defined()) {
      located(n, "export-unsupported-value",
              "cannot export: parameter '" + name + "' has no value");
      return;
    }
    if (!tensor_initializer(graph->add_initializer(), name, it->second->value,
                            !options.stream_weights)) {
      graph->mutable_initializer()->RemoveLast();
      located(n, "export-unsupported-value",
              "cannot export parameter '" + name + "' of dtype " +
                  std::string(dtype_name(it->second->value.dtype())) + " to ONNX");
      return;
    }
    if (options.stream_weights) {
      // The bytes are streamed from the runtime tensor when the file is written (assemble).
      streamed[graph->initializer_size() - 1] = it->second->value;
    }
    initialized.insert(name);
  };

  auto value_name = [&](const ValueRef& r) -> std::string {
    const Node& n = g.nodes[r.node];
    if (n.kind == NodeKind::Parameter && !n.params.empty()) return n.params.front();
    return r.output == 0 ? n.id : n.id + ":" + std::to_string(r.output);
  };

  size_t counter = 0;
  std::set<std::string> refused_ops;
  // Inputs are graph inputs whether or not the outputs read them (their order is the Cell's
  // signature). A dimension that is not a number is reported there, once, not at every node
  // downstream of it.
  for (const Node& n : g.nodes) {
    if (n.kind == NodeKind::Input) {
      const TensorType& t = n.outputs.empty() ? TensorType{} : n.outputs.front();
      const std::string& name = n.id;
      if (!static_type(t)) {
        located(n, "export-dynamic-shape",
                "cannot export input '" + name + "' of shape " + t.shape.str() +
                    ": ONNX export needs every input dimension known (give --input)");
        continue;
      }
      if (onnx_dtype(t.dtype) == 0) {
        located(n, "export-unsupported-value",
                "cannot export input '" + name + "' of dtype " + std::string(dtype_name(t.dtype)));
        continue;
      }
      set_value_info(graph->add_input(), name, t);
    }
  }
  if (!result.ok()) return result;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.kind == NodeKind::Input || !live[i]) continue;
    if (n.kind == NodeKind::Parameter) {
      for (const std::string& p : n.params) add_param(n, p);
      continue;
    }
    if (n.kind == NodeKind::Constant) {
      const TensorType& t = n.outputs.front();
      if (!static_type(t) || onnx_dtype(t.dtype) == 0) {
        located(n, "export-unsupported-value",
                "cannot export constant " + n.id + " of type " + t.str());
        continue;
      }
      int64_t count = 1;
      for (const Dim& d : t.shape.dims) count *= d.value();
      double uniform = 0;
      if (!n.constant_values) {
        const AttrValue* v = n.find_attr("value");
        if (const auto* iv = v ? std::get_if<int64_t>(v) : nullptr) {
          uniform = static_cast<double>(*iv);
        } else if (const auto* dv = v ? std::get_if<double>(v) : nullptr) {
          uniform = *dv;
        } else if (const auto* bv = v ? std::get_if<bool>(v) : nullptr) {
          uniform = *bv ? 1 : 0;
        } else {
          located(n, "export-unsupported-value",
                  "cannot export constant " + n.id + ": its values are not known statically");
          continue;
        }
      } else if (static_cast<int64_t>(n.constant_values->size()) != count) {
        located(n, "export-unsupported-value",
                "cannot export constant " + n.id + ": value count differs");
        continue;
      }
      onnx::TensorProto* c = graph->add_initializer();
      c->set_name(n.id);
      c->set_data_type(onnx_dtype(t.dtype));
      for (const Dim& d : t.shape.dims) c->add_dims(d.value());
      std::string* raw = c->mutable_raw_data();
      for (int64_t k = 0; k < count; ++k) {
        const double v = n.constant_values ? (*n.constant_values)[static_cast<size_t>(k)] : uniform;
        if (!exporter::append_element(raw, t.dtype, v)) {
          located(n, "export-unsupported-value",
                  "cannot export constant " + n.id + " of type " + t.str());
          break;
        }
      }
      continue;
    }
    // An operator application.
    const OpDef* def = find_op(n.op);
    if (def == nullptr || def->onnx == nullptr) {
      if (refused_ops.insert(std::string(n.op) + ":" + std::to_string(n.range.start.line)).second) {
        located(n, "export-unsupported-op",
                "cannot export to ONNX: operator " + std::string(n.op) +
                    (n.api.empty() ? std::string() : " (" + std::string(n.api) + ")") +
                    " has no ONNX mapping" + at_line(n));
      }
      continue;
    }
    bool dynamic = false;
    for (const TensorType& t : n.outputs) {
      if (!dynamic && !static_type(t)) {
        located(n, "export-dynamic-shape",
                "cannot export " + std::string(n.op) + " " + n.id + " to ONNX: its output " +
                    t.str() + " has a dimension that is not a number" + at_line(n));
        dynamic = true;
      }
    }
    if (dynamic) continue;
    std::vector<std::string> in_names;
    std::vector<const TensorType*> in_types;
    for (const ValueRef& r : n.inputs) {
      in_names.push_back(value_name(r));
      in_types.push_back(&g.nodes[r.node].outputs[r.output]);
    }
    std::vector<const TensorType*> param_types;
    std::vector<TensorType> owned(n.params.size());
    for (size_t k = 0; k < n.params.size(); ++k) {
      add_param(n, n.params[k]);
      auto it = infos.find(n.params[k]);
      if (it != infos.end()) owned[k] = TensorType{it->second->shape, it->second->dtype};
      param_types.push_back(&owned[k]);
    }
    exporter::OnnxNodeBuilder b(n, std::move(in_names), std::move(in_types), n.params,
                                std::move(param_types), graph, &counter);
    try {
      def->onnx(b);
    } catch (const exporter::OnnxRefusal& e) {
      located(
          n, "export-unsupported-op",
          "cannot export " + std::string(n.op) + " " + n.id + " to ONNX: " + e.what() + at_line(n));
    }
  }
  for (const ValueRef& r : g.outputs) {
    const TensorType& t = g.nodes[r.node].outputs[r.output];
    if (static_type(t)) {
      set_value_info(graph->add_output(), value_name(r), t);
    } else if (result.ok()) {
      const Node& n = g.nodes[r.node];
      located(n, "export-dynamic-shape",
              "cannot export " + report.name + ": its output " + t.str() +
                  " is not a static tensor" + at_line(n));
    }
  }
  if (!result.ok() || params == nullptr) return result;
  result.nodes = static_cast<size_t>(graph->node_size());
  result.initializers = static_cast<size_t>(graph->initializer_size());
  if (options.stream_weights) {
    const uint64_t limit = std::min<uint64_t>(options.external_threshold, INT32_MAX);
    if (!assemble(model, streamed, &result.file, limit) && !options.external_location.empty()) {
      assemble_external(model, streamed, options, &result);
    } else if (result.file.empty()) {
      Diagnostic d;
      d.file = report.file;
      d.range = report.range;
      d.code = "export-unsupported-value";
      d.message = "cannot export " + report.name +
                  ": the ONNX model would exceed protobuf's 2 GiB message limit (external data "
                  "needs a file name for the data file)";
      result.diagnostics.push_back(d);
      result.file = ModelFile();
    }
    return result;
  }
  if (!model.SerializeToString(&result.bytes)) {
    Diagnostic d;
    d.file = report.file;
    d.range = report.range;
    d.code = "export-unsupported-value";
    d.message =
        "cannot export " + report.name + ": the ONNX model exceeds protobuf's 2 GiB message limit";
    result.diagnostics.push_back(d);
    result.bytes.clear();
  }
  return result;
}

}  // namespace

OnnxExportResult build_onnx(const CellReport& report, std::span<const runtime::ParamState> params,
                            const OnnxExportOptions& options) {
  return build(report, &params, options);
}

std::vector<Diagnostic> check_onnx_export(const CellReport& report,
                                          const OnnxExportOptions& options) {
  return build(report, nullptr, options).diagnostics;
}

}  // namespace graphcore
