// MindIR export (graphcore/mindir.h): each semantic node becomes the primitive(s) its OpDef's
// MindirDef names, in graph order (already topological), as MindSpore 2.10 writes them
// (docs/mindir-notes.md): `REF::<key>` node op types, one PrimitiveProto per attribute set,
// function-primitive arguments as Constant nodes, weights inline with their ref_key, inputs
// with tensor[0], one output (a MakeTuple for several). No monads and no graph attributes: both
// are optional for mindspore.load (measured, docs/mindir-notes.md).
#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graphcore/checked.h"
#include "graphcore/mindir.h"
#include "graphcore/model_file.h"
#include "graphcore/opdef.h"
#include "graphcore_proto/mind_ir.pb.h"
#include "runtime/internal.h"
#include "runtime/kernels.h"

namespace graphcore {

namespace {

namespace pb = cellscope::mindir;

// The export diagnostic codes, shared with the ONNX exporter (docs/diagnostics.md).
constexpr std::string_view kUnsupportedOp = "export-unsupported-op";
constexpr std::string_view kDynamicShape = "export-dynamic-shape";
constexpr std::string_view kUnsupportedValue = "export-unsupported-value";
constexpr std::string_view kNoOutput = "export-no-output";

// A node could not be written: the message and its code, located at the node by the caller.
struct Refusal {
  std::string message;
  std::string_view code = kUnsupportedOp;
};

std::optional<int32_t> mindir_dtype(DType t) {
  switch (t) {
    case DType::Float32:
      return pb::Tensor::FLOAT;
    case DType::Float16:
      return pb::Tensor::FLOAT16;
    case DType::Float64:
      return pb::Tensor::DOUBLE;
    case DType::Int32:
      return pb::Tensor::INT32;
    case DType::Int64:
      return pb::Tensor::INT64;
    case DType::Bool:
      return pb::Tensor::BOOL;
    case DType::UInt8:
      return pb::Tensor::UINT8;
    case DType::Int8:
      return pb::Tensor::INT8;
    case DType::Int16:
      return pb::Tensor::INT16;
    default:
      return std::nullopt;
  }
}

// MindSpore's TypeId of a dtype (Cast's dtype argument), as mindspore.export writes it and
// mindspore._c_expression.typing.type_to_type_id gives it (MindSpore 2.10).
std::optional<int64_t> mindspore_type_id(DType t) {
  switch (t) {
    case DType::Bool:
      return 30;
    case DType::Int8:
      return 32;
    case DType::Int16:
      return 33;
    case DType::Int32:
      return 34;
    case DType::Int64:
      return 35;
    case DType::UInt8:
      return 37;
    case DType::Float16:
      return 42;
    case DType::Float32:
      return 43;
    case DType::Float64:
      return 44;
    default:
      return std::nullopt;
  }
}

std::vector<int64_t> known_dims(const Shape& s) {
  std::vector<int64_t> dims;
  if (!s.ranked) throw Refusal{"its shape has unknown rank", kDynamicShape};
  for (const Dim& d : s.dims) {
    if (!d.is_known()) throw Refusal{"its shape " + s.str() + " is not static", kDynamicShape};
    dims.push_back(d.value());
  }
  return dims;
}

void set_type(pb::Tensor* t, const TensorType& type) {
  auto dt = mindir_dtype(type.dtype);
  if (!dt) {
    throw Refusal{"dtype " + std::string(dtype_short_name(type.dtype)) + " has no MindIR type",
                  kUnsupportedValue};
  }
  t->set_data_type(*dt);
  for (int64_t d : known_dims(type.shape)) t->add_dims(d);
}

// A runtime tensor's elements in MindIR's raw layout (C order, host byte order).
size_t byte_count(int64_t count, size_t element) {
  auto b = checked_bytes(count, element);
  if (!b) throw Refusal{"its size overflows", kUnsupportedValue};
  return *b;
}

std::string raw_bytes(const runtime::Tensor& t, DType declared) {
  std::string out;
  const auto n = static_cast<size_t>(t.numel());
  switch (t.dtype()) {
    case DType::Float32:
      out.assign(reinterpret_cast<const char*>(t.data<float>()), byte_count(t.numel(), 4));
      break;
    case DType::Float16: {
      out.resize(byte_count(t.numel(), 2));
      const auto* src = t.data<float>();
      for (size_t i = 0; i < n; ++i) {
        const uint16_t h = binary16_bits(src[i]);
        std::memcpy(out.data() + 2 * i, &h, 2);
      }
      break;
    }
    case DType::Int32:
      out.assign(reinterpret_cast<const char*>(t.data<int32_t>()), byte_count(t.numel(), 4));
      break;
    case DType::Int64:
      out.assign(reinterpret_cast<const char*>(t.data<int64_t>()), byte_count(t.numel(), 8));
      break;
    case DType::Bool:
      out.assign(reinterpret_cast<const char*>(t.data<uint8_t>()), n);
      break;
    default:
      throw Refusal{
          "a tensor of dtype " + std::string(dtype_short_name(t.dtype())) + " cannot be written",
          kUnsupportedValue};
  }
  if (declared != t.dtype()) {
    throw Refusal{"its value is " + std::string(dtype_short_name(t.dtype())) + ", declared " +
                      std::string(dtype_short_name(declared)),
                  kUnsupportedValue};
  }
  return out;
}

// ---- Attribute values ---------------------------------------------------------------------------

void set_int(pb::Attribute* a, int64_t v) {
  a->set_type(pb::Attribute::INT64);
  a->set_i(v);
}
void set_bool(pb::Attribute* a, bool v) {
  a->set_type(pb::Attribute::BOOL);
  a->set_i(v ? 1 : 0);
}
void set_float(pb::Attribute* a, double v) {
  a->set_type(pb::Attribute::FLOAT);
  a->set_f(static_cast<float>(v));
}
void set_string(pb::Attribute* a, std::string_view v) {
  a->set_type(pb::Attribute::STRING);
  a->set_s(std::string(v));
}
// A tuple of INT64: each element's number in `ints[0]`, as MindSpore writes sequences.
void set_ints(pb::Attribute* a, const std::vector<int64_t>& v) {
  a->set_type(pb::Attribute::TUPLE);
  for (int64_t x : v) {
    pb::Attribute* e = a->add_values();
    e->set_type(pb::Attribute::INT64);
    e->add_ints(x);
  }
}

std::optional<std::vector<int64_t>> as_ints(const AttrValue* v) {
  if (v == nullptr) return std::nullopt;
  if (const auto* i = std::get_if<int64_t>(v)) return std::vector<int64_t>{*i};
  if (const auto* l = std::get_if<std::vector<int64_t>>(v)) return *l;
  if (const auto* b = std::get_if<bool>(v)) return std::vector<int64_t>{*b ? 1 : 0};
  return std::nullopt;
}

// Everything a MindirArg computes from one node.
class ArgReader {
 public:
  ArgReader(const Node& node, const MindirArg& arg) : node_(node), arg_(arg) {}

  [[nodiscard]] const AttrValue* attr() const { return node_.find_attr(arg_.key); }
  [[nodiscard]] std::string what() const {
    return "attribute " + std::string(arg_.key) + " of " + std::string(node_.op);
  }
  [[nodiscard]] std::vector<int64_t> ints() const {
    auto v = as_ints(attr());
    if (!v) throw Refusal{"its " + what() + " is not recorded as integers"};
    return *v;
  }
  [[nodiscard]] int64_t one_int(int64_t fallback) const {
    const AttrValue* v = attr();
    if (v == nullptr) return fallback;
    auto l = as_ints(v);
    if (!l || l->size() != 1) throw Refusal{"its " + what() + " is not an integer"};
    return l->front();
  }
  [[nodiscard]] double number(double fallback) const {
    const AttrValue* v = attr();
    if (v == nullptr) return fallback;
    if (const auto* d = std::get_if<double>(v)) return *d;
    if (const auto* i = std::get_if<int64_t>(v)) return static_cast<double>(*i);
    throw Refusal{"its " + what() + " is not a number"};
  }
  [[nodiscard]] std::string text() const {
    const AttrValue* v = attr();
    const auto* s = v != nullptr ? std::get_if<std::string>(v) : nullptr;
    if (s == nullptr) throw Refusal{"its " + what() + " is not recorded as a string"};
    return *s;
  }
  // (1, 1, h, w) from an int or (h, w).
  [[nodiscard]] std::vector<int64_t> nchw4() const {
    auto v = ints();
    if (v.size() == 1) return {1, 1, v[0], v[0]};
    if (v.size() == 2) return {1, 1, v[0], v[1]};
    if (v.size() == 4) return v;
    throw Refusal{"its " + what() + " has " + std::to_string(v.size()) + " values"};
  }
  [[nodiscard]] std::vector<int64_t> pad4() const {
    if (attr() == nullptr) return {0, 0, 0, 0};
    auto v = ints();
    if (v.size() == 1) return {v[0], v[0], v[0], v[0]};
    if (v.size() == 2) return {v[0], v[0], v[1], v[1]};
    if (v.size() == 4) return v;
    throw Refusal{"its " + what() + " has " + std::to_string(v.size()) + " values"};
  }

 private:
  const Node& node_;
  const MindirArg& arg_;
};

// ---- The writer ---------------------------------------------------------------------------------

class Writer {
 public:
  Writer(const CellReport& report, std::span<const runtime::ParamState> params) : report_(report) {
    for (const auto& p : params) params_[p.name] = &p;
    graph_name_ = "cellscope_" + report.class_name + "_construct";
    model_.set_ir_version("1.1");
    model_.set_producer_name("MindSpore");  // mindspore.load requires a producer name
    model_.set_producer_version("Cellscope");
    model_.set_model_version("2.10.0");
    model_.set_little_endian(std::endian::native == std::endian::little);
    model_.set_mind_ir_version(3);
    model_.mutable_graph()->set_name(graph_name_);
  }

  MindirExport run(const MindirOptions& options) {
    MindirExport out;
    write_weights(out);
    const Graph& g = report_.graph;
    names_.assign(g.nodes.size(), {});
    refused_.assign(g.nodes.size(), false);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& node = g.nodes[i];
      // A node fed by a refused one is not reported again: its own error would be a guess.
      if (std::ranges::any_of(node.inputs, [&](ValueRef r) {
            return r.node < refused_.size() && refused_[r.node];
          })) {
        refused_[i] = true;
        continue;
      }
      try {
        if (std::optional<Node> sliced = expand_new_axes(node)) {
          write_node(i, *sliced);
        } else {
          write_node(i, node);
        }
      } catch (const Refusal& r) {
        refused_[i] = true;
        Diagnostic d;
        d.file = std::string(node.file);
        d.range = node.range;
        d.code = std::string(r.code);
        d.message = "cannot export to MindIR: " + describe(node) + ": " + r.message;
        out.errors.push_back(std::move(d));
      }
    }
    if (out.errors.empty()) {
      try {
        write_outputs();
      } catch (const Refusal& r) {
        Diagnostic d;
        d.file = report_.file;
        d.range = report_.range;
        d.code = std::string(r.code);
        d.message = "cannot export to MindIR: " + r.message;
        out.errors.push_back(std::move(d));
      }
    }
    if (!out.errors.empty()) return out;
    out.nodes = static_cast<size_t>(model_.graph().node_size());
    out.primitives = static_cast<size_t>(model_.primitives_size());
    out.weights = static_cast<size_t>(model_.graph().parameter_size());
    try {
      assemble(out, options);
    } catch (const Refusal& r) {
      Diagnostic d;
      d.file = report_.file;
      d.range = report_.range;
      d.code = std::string(r.code);
      d.message = "cannot export to MindIR: " + r.message;
      out.errors.push_back(std::move(d));
      out.file = ModelFile();
      out.data_files.clear();
    }
    return out;
  }

 private:
  static std::string describe(const Node& node) {
    std::string s = "operator " + std::string(node.op);
    if (!node.api.empty()) s += " (" + std::string(node.api) + ")";
    if (!node.id.empty() && node.id != node.op) s += " at " + node.id;
    return s;
  }

  std::string qualified(std::string_view name) const {
    return graph_name_ + ":" + std::string(name);
  }

  // The weights the graph reads: a parameter only an untaken branch uses (`if self.use_bn:` with
  // use_bn False) is not in the file, as mindspore.export leaves it out.
  void write_weights(MindirExport& out) {
    std::set<std::string, std::less<>> read;
    for (const Node& node : report_.graph.nodes)
      read.insert(node.params.begin(), node.params.end());
    for (const ParamInfo& info : report_.params) {
      if (!read.contains(info.name)) continue;
      auto it = params_.find(info.name);
      Diagnostic d;
      d.file = report_.file;
      d.range = report_.range;
      d.code = std::string(kUnsupportedValue);
      if (it == params_.end() || !it->second->value.defined()) {
        d.message = "cannot export to MindIR: parameter " + info.name + " has no value";
        out.errors.push_back(std::move(d));
        continue;
      }
      try {
        pb::Tensor* t = model_.mutable_graph()->add_parameter();
        set_type(t, TensorType{info.shape, info.dtype});
        t->set_name(qualified(info.name));
        t->set_ref_key(info.name);
        const runtime::Tensor& value = it->second->value;
        if (value.dtype() != info.dtype) {
          throw Refusal{"its value is " + std::string(dtype_short_name(value.dtype())) +
                            ", declared " + std::string(dtype_short_name(info.dtype)),
                        kUnsupportedValue};
        }
        if (!mindir_dtype(value.dtype()) || !runtime::Tensor::supported(value.dtype())) {
          throw Refusal{"a tensor of dtype " + std::string(dtype_short_name(value.dtype())) +
                            " cannot be written",
                        kUnsupportedValue};
        }
        // raw_data is not copied here: assemble() streams it from the runtime's storage.
        weights_.push_back(value);
      } catch (const Refusal& r) {
        d.code = std::string(r.code);
        d.message = "cannot export to MindIR: parameter " + info.name + ": " + r.message;
        out.errors.push_back(std::move(d));
      }
    }
  }

  // The node producing value `ref` (graph order guarantees it was written).
  std::string value_name(ValueRef ref) const {
    if (ref.node >= names_.size() || ref.output >= names_[ref.node].size() ||
        names_[ref.node][ref.output].empty()) {
      throw Refusal{"an input comes from a node that could not be exported"};
    }
    return names_[ref.node][ref.output];
  }

  std::string new_node_name(const Node& node) {
    return qualified(node.id.empty() ? std::string(node.op) : node.id) + ":" +
           std::to_string(++uid_);
  }

  // The PrimitiveProto key for `prim`, shared by every node with the same attributes.
  std::string primitive_key(pb::Primitive prim) {
    std::string sig;
    prim.SerializeToString(&sig);
    auto it = primitive_keys_.find(sig);
    if (it != primitive_keys_.end()) return it->second;
    std::string key = prim.op_type() + ":" + std::to_string(++uid_);
    prim.set_name(key);
    *model_.add_primitives() = std::move(prim);
    primitive_keys_.emplace(std::move(sig), key);
    return key;
  }

  std::string simple_primitive(std::string_view op, pb::Primitive::Kind kind) {
    pb::Primitive prim;
    prim.set_op_type(std::string(op));
    prim.set_prim_type(kind);
    return primitive_key(std::move(prim));
  }

  // A Constant node holding `value` (shared by equal values); returns its name.
  std::string constant(pb::Attribute value) {
    value.set_name("value");
    std::string sig;
    value.SerializeToString(&sig);
    auto it = constants_.find(sig);
    if (it != constants_.end()) return it->second;
    std::string name = qualified("ValueNode_" + std::to_string(++uid_));
    pb::Node* n = model_.mutable_graph()->add_node();
    n->set_op_type("Constant");
    n->add_output(name);
    n->set_name(name);
    *n->add_attribute() = std::move(value);
    constants_.emplace(std::move(sig), name);
    return name;
  }

  static void set_shape(pb::Node* n, const TensorType& type) {
    pb::Attribute* a = n->add_attribute();
    a->set_name("shape");
    a->set_type(pb::Attribute::TENSORS);
    set_type(a->add_tensors(), type);
  }

  pb::Node* add_cnode(const Node& node, const std::string& prim_key,
                      const std::vector<std::string>& inputs, std::string_view prim) {
    pb::Node* n = model_.mutable_graph()->add_node();
    const std::string name = new_node_name(node);
    n->set_op_type("REF::" + prim_key);
    n->set_name(name);
    n->add_output(name);
    for (const auto& in : inputs) n->add_input(in);
    std::string scope = "Default";
    if (!node.scope.empty()) scope += "/" + std::string(node.scope);
    n->set_domain(scope + "/" + std::string(prim));
    return n;
  }

  // The node's parameter whose name ends with "." + suffix (or is the suffix), if it reads one.
  static std::optional<std::string> weight(const Node& node, std::string_view suffix) {
    for (const auto& p : node.params) {
      if (p == suffix || (p.size() > suffix.size() && p.ends_with(suffix) &&
                          p[p.size() - suffix.size() - 1] == '.')) {
        return p;
      }
    }
    return std::nullopt;
  }

  // The node's tensor operands: its data inputs, with a recorded Python scalar operand
  // (`scalar` at `scalar_index`: `1.0 - m`, `ids != 0`) as a 0-d tensor Constant of the dtype of
  // the tensor beside it (the runtime's rule; mindspore.export writes such 0-d tensors too).
  std::vector<std::string> operands(const Node& node) {
    std::vector<std::string> ops;
    for (ValueRef r : node.inputs) ops.push_back(value_name(r));
    const AttrValue* s = node.find_attr("scalar");
    const AttrValue* idx = node.find_attr("scalar_index");
    if (s == nullptr || idx == nullptr || !std::holds_alternative<int64_t>(*idx)) return ops;
    const int64_t at = std::get<int64_t>(*idx);
    if (node.inputs.empty() || at < 0 || static_cast<size_t>(at) > ops.size()) {
      throw Refusal{"its recorded scalar operand does not fit its inputs"};
    }
    double v = 0;
    if (const auto* i = std::get_if<int64_t>(s)) {
      v = static_cast<double>(*i);
    } else if (const auto* d = std::get_if<double>(s)) {
      v = *d;
    } else if (const auto* b = std::get_if<bool>(s)) {
      v = *b ? 1 : 0;
    } else {
      throw Refusal{"its scalar operand is not a number"};
    }
    const size_t beside = std::min(static_cast<size_t>(at), node.inputs.size() - 1);
    const ValueRef r = node.inputs[beside];
    const DType dtype = report_.graph.nodes.at(r.node).outputs.at(r.output).dtype;
    ops.insert(ops.begin() + at, scalar_tensor(v, dtype));
    return ops;
  }

  std::string operand(size_t index) const {
    if (index >= operands_.size()) {
      // An argument the analysis did not follow (a value of unknown shape, e.g. from a helper it
      // could not evaluate) is missing from the node's inputs: say so, as the ONNX writer does.
      throw Refusal{"its operand " + std::to_string(index) +
                        " is a value the analysis did not follow (its shape is not known "
                        "statically; see the notes at this line)",
                    kDynamicShape};
    }
    return operands_[index];
  }

  // The dims of the node's data input `index`.
  std::vector<int64_t> input_dims(const Node& node, size_t index) const {
    if (index >= node.inputs.size()) throw Refusal{"it has no input " + std::to_string(index)};
    const ValueRef in = node.inputs[index];
    return known_dims(report_.graph.nodes.at(in.node).outputs.at(in.output).shape);
  }

  // A 0-d tensor Constant of `dtype` holding `v`.
  std::string scalar_tensor(double v, DType dtype) {
    return tensor_constant(TensorType{Shape::of(std::vector<int64_t>{}), dtype},
                           std::vector<double>{v});
  }

  // A Constant node holding a tensor of `type` with `values` (C order).
  std::string tensor_constant(const TensorType& type, const std::vector<double>& values) {
    const auto dims = known_dims(type.shape);
    const auto numel = checked_numel(dims);
    if (!numel || static_cast<int64_t>(values.size()) != *numel) {
      throw Refusal{"its value is not known", kUnsupportedValue};
    }
    pb::Attribute a;
    a.set_type(pb::Attribute::TENSORS);
    pb::Tensor* tensor = a.add_tensors();
    if (type.dtype == DType::Float64) {
      // A numpy float64 constant (`Tensor(np.zeros((B, H, W)))`): the runtime has no float64
      // storage (it computes float64 as float32) but the values are doubles already, written as
      // data_type DOUBLE, binary64 in the file's byte order. mindspore.export folds such a
      // constant into the Cast that follows it (a BOOL constant, measured); this file keeps the
      // constant and the Cast, which MindSpore computes to the same value.
      set_type(tensor, type);
      tensor->set_name("value0");
      std::string raw(byte_count(*numel, 8), '\0');
      if (!values.empty()) std::memcpy(raw.data(), values.data(), raw.size());
      tensor->set_raw_data(std::move(raw));
      return constant(std::move(a));
    }
    if (!runtime::Tensor::supported(type.dtype)) {
      throw Refusal{"a constant of dtype " + std::string(dtype_short_name(type.dtype)),
                    kUnsupportedValue};
    }
    runtime::Tensor t(dims, type.dtype);
    for (int64_t i = 0; i < *numel; ++i) t.set(i, values[static_cast<size_t>(i)]);
    set_type(tensor, type);
    tensor->set_name("value0");
    tensor->set_raw_data(raw_bytes(t, type.dtype));
    return constant(std::move(a));
  }

  // The value of one argument (function primitives: a node input name; attribute primitives:
  // the attribute). Exactly one of the two outputs is set; `skip` for checks.
  void argument(const Node& node, const MindirArg& arg, std::string* input, pb::Attribute* attr,
                bool* skip) {
    const ArgReader r(node, arg);
    *skip = false;
    switch (arg.value) {
      case MindirValue::Input:
        *input = operand(static_cast<size_t>(arg.number));
        return;
      case MindirValue::IndexInput: {
        const auto at = static_cast<size_t>(arg.number);
        *input = operand(weight(node, arg.key) && at > 0 ? at - 1 : at);
        return;
      }
      case MindirValue::AllInputs: {
        if (operands_.empty()) throw Refusal{"it has no inputs"};
        const std::string key = simple_primitive("MakeTuple", pb::Primitive::PRIMITIVE);
        *input = add_cnode(node, key, operands_, "MakeTuple")->name();
        return;
      }
      case MindirValue::TypeId: {
        const DType to = node.outputs.at(0).dtype;
        auto id = mindspore_type_id(to);
        if (!id) throw Refusal{"a cast to " + std::string(dtype_short_name(to))};
        set_int(attr, *id);
        return;
      }
      case MindirValue::Multiples: {
        auto x = input_dims(node, 0);
        const auto y = known_dims(node.outputs.at(0).shape);
        if (y.size() < x.size()) throw Refusal{"its output has fewer dims than its input"};
        x.insert(x.begin(), y.size() - x.size(), 1);
        std::vector<int64_t> multiples;
        for (size_t i = 0; i < y.size(); ++i) {
          if (x[i] == 0 || y[i] % x[i] != 0) {
            throw Refusal{"its output is not a whole tiling of its input"};
          }
          multiples.push_back(y[i] / x[i]);
        }
        set_ints(attr, multiples);
        return;
      }
      case MindirValue::OutputCount:
        set_int(attr, static_cast<int64_t>(node.outputs.size()));
        return;
      case MindirValue::InputCount:
        if (operands_.empty()) throw Refusal{"it has no inputs"};
        set_int(attr, static_cast<int64_t>(operands_.size()));
        return;
      case MindirValue::EqualSplits: {
        const auto x = input_dims(node, 0);
        const int64_t axis = r.one_int(0);
        const auto rank = static_cast<int64_t>(x.size());
        if (axis < -rank || axis >= rank) throw Refusal{"its axis is out of range"};
        const auto a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
        for (const TensorType& t : node.outputs) {
          const auto y = known_dims(t.shape);
          if (y.size() != x.size()) throw Refusal{"an output of another rank than its input"};
          if (y[a] * static_cast<int64_t>(node.outputs.size()) != x[a]) {
            throw Refusal{
                "parts of unequal sizes have no MindIR mapping (MindSpore exports them as "
                "StridedSlice nodes)"};
          }
        }
        set_int(attr, static_cast<int64_t>(node.outputs.size()));
        return;
      }
      case MindirValue::BoolNot:
        set_bool(attr, r.one_int(arg.number != 0 ? 1 : 0) == 0);
        return;
      case MindirValue::SameDtype: {
        *skip = true;
        if (node.op == "CumSum") return;  // cast_cumsum_input wrote the Cast first
        if (node.inputs.empty()) throw Refusal{"it has no input"};
        const ValueRef in = node.inputs[0];
        const DType from = report_.graph.nodes.at(in.node).outputs.at(in.output).dtype;
        if (from != node.outputs.at(0).dtype) {
          throw Refusal{"a dtype other than its input's (" + std::string(dtype_short_name(from)) +
                        " to " + std::string(dtype_short_name(node.outputs.at(0).dtype)) +
                        ") has no MindIR mapping (MindSpore writes a Cast first)"};
        }
        return;
      }
      case MindirValue::Axes: {
        const AttrValue* v = r.attr();
        if (v == nullptr || std::holds_alternative<std::monostate>(*v)) {
          set_ints(attr, {});
          return;
        }
        auto l = as_ints(v);
        if (!l) throw Refusal{"its " + r.what() + " is not recorded as integers"};
        set_ints(attr, *l);
        return;
      }
      case MindirValue::PadModeEnum: {
        const AttrValue* v = r.attr();
        const auto* text = v != nullptr ? std::get_if<std::string>(v) : nullptr;
        std::string mode = text != nullptr ? *text : "valid";
        std::ranges::transform(mode, mode.begin(), [](unsigned char c) { return std::tolower(c); });
        if (mode == "same") {
          set_int(attr, 1);
        } else if (mode == "valid") {
          set_int(attr, 2);
        } else {
          throw Refusal{"pad_mode='" + mode +
                        "' has no MindIR mapping (MindSpore exports it as another primitive)"};
        }
        return;
      }
      case MindirValue::ReduceAxes:
      case MindirValue::ReduceKeep: {
        bool keep = false;
        const std::vector<int64_t> axes = reduction(node, &keep);
        if (arg.value == MindirValue::ReduceKeep) {
          set_bool(attr, keep);
          return;
        }
        // The axes as the program wrote them (ReduceMin(x, -1) keeps -1, as mindspore.export
        // does; None: the empty tuple), else as the kernel resolved them.
        const AttrValue* given = node.find_attr(arg.key);
        if (given != nullptr && std::holds_alternative<std::monostate>(*given)) {
          set_ints(attr, {});
        } else if (auto l = as_ints(given)) {
          set_ints(attr, *l);
        } else {
          set_ints(attr, axes);
        }
        return;
      }
      case MindirValue::OutputHW: {
        const auto y = known_dims(node.outputs.at(0).shape);
        if (y.size() < 2) throw Refusal{"its output has fewer than two dims"};
        set_ints(attr, {y[y.size() - 2], y.back()});
        return;
      }
      case MindirValue::RequiredInt:
        if (r.attr() == nullptr) throw Refusal{"its " + r.what() + " is not recorded"};
        set_int(attr, r.one_int(0));
        return;
      case MindirValue::Weight:
        if (auto w = weight(node, arg.key)) {
          *input = qualified(*w);
        } else if (arg.number >= 0) {
          *input = operand(static_cast<size_t>(arg.number));
        } else {
          throw Refusal{"it reads no parameter ." + std::string(arg.key)};
        }
        return;
      case MindirValue::HasWeight: {
        const AttrValue* own = node.find_attr(arg.name);
        const bool* b = own != nullptr ? std::get_if<bool>(own) : nullptr;
        set_bool(attr, weight(node, arg.key).has_value() || (b != nullptr && *b));
        return;
      }
      case MindirValue::Int:
        set_int(attr, r.one_int(static_cast<int64_t>(arg.number)));
        return;
      case MindirValue::Bool:
        set_bool(attr, r.one_int(arg.number != 0 ? 1 : 0) != 0);
        return;
      case MindirValue::Float:
        set_float(attr, r.number(arg.number));
        return;
      case MindirValue::OneMinus:
        set_float(attr, 1.0 - r.number(arg.number));
        return;
      case MindirValue::Ints: {
        auto v = r.ints();
        if (v.size() == 1 && arg.number > 1) v.assign(static_cast<size_t>(arg.number), v[0]);
        set_ints(attr, v);
        return;
      }
      case MindirValue::Ints4:
        set_ints(attr, r.nchw4());
        return;
      case MindirValue::Pad4:
        set_ints(attr, r.pad4());
        return;
      case MindirValue::PadList: {
        const AttrValue* mode = node.find_attr("pad_mode");
        const auto* m = mode != nullptr ? std::get_if<std::string>(mode) : nullptr;
        std::string lower = m != nullptr ? *m : "valid";
        std::ranges::transform(lower, lower.begin(),
                               [](unsigned char c) { return std::tolower(c); });
        if (lower == "pad") {
          set_ints(attr, r.pad4());
        } else if (lower == "same") {
          set_ints(attr, same_padding(node));
        } else {
          set_ints(attr, {0, 0, 0, 0});
        }
        return;
      }
      case MindirValue::OutputShape:
        set_ints(attr, known_dims(node.outputs.at(0).shape));
        return;
      case MindirValue::Lower:
      case MindirValue::Upper: {
        std::string s = r.text();
        std::ranges::transform(s, s.begin(), [&](unsigned char c) {
          return static_cast<char>(arg.value == MindirValue::Lower ? std::tolower(c)
                                                                   : std::toupper(c));
        });
        set_string(attr, s);
        return;
      }
      case MindirValue::Literal:
        set_int(attr, static_cast<int64_t>(arg.number));
        return;
      case MindirValue::LiteralBool:
        set_bool(attr, arg.number != 0);
        return;
      case MindirValue::LiteralText:
        set_string(attr, arg.key);
        return;
      case MindirValue::Require: {
        *skip = true;
        const AttrValue* v = r.attr();
        if (v == nullptr) return;
        auto l = as_ints(v);
        const bool ok = l && std::ranges::all_of(*l, [&](int64_t x) {
                          return static_cast<double>(x) == arg.number;
                        });
        if (!ok) {
          throw Refusal{std::string(arg.key) + "=" + attr_to_string(*v) +
                        " has no MindIR mapping (MindSpore exports it as another primitive)"};
        }
        return;
      }
    }
  }

  // The reduced axes and keep_dims of a reduction, as the runtime's kernel resolves them.
  std::vector<int64_t> reduction(const Node& node, bool* keep) const {
    const auto x = input_dims(node, 0);
    std::vector<runtime::Tensor> none;
    std::vector<const runtime::ParamState*> no_params;
    std::vector<runtime::Tensor> outs;
    const runtime::KernelCall call{node, none, no_params, outs};
    try {
      return runtime::kernels::reduce_axes(call, x, keep);
    } catch (const std::exception& e) {
      throw Refusal{std::string("its reduction axes: ") + e.what()};
    }
  }

  // A copy of an nn.Conv1d node with its attributes as the Conv2D on the (N, C, 1, L) view takes
  // them: kernel_size (1, k), stride / dilation (1, s), padding (0, 0, p, p).
  static Node conv1d_as_2d(const Node& node) {
    Node lifted = node;
    auto one = [&](std::string_view key, int64_t fallback) {
      const auto v = as_ints(node.find_attr(key));
      if (!v) return fallback;
      if (v->size() != 1) throw Refusal{"its " + std::string(key) + " is not one number"};
      return v->front();
    };
    const int64_t pad = one("padding", 0);
    lifted.attrs.push_back({"kernel_size", std::vector<int64_t>{1, one("kernel_size", 1)}});
    lifted.attrs.push_back({"stride", std::vector<int64_t>{1, one("stride", 1)}});
    lifted.attrs.push_back({"dilation", std::vector<int64_t>{1, one("dilation", 1)}});
    lifted.attrs.push_back({"padding", std::vector<int64_t>{0, 0, pad, pad}});
    return lifted;
  }

  // pad_mode "same": per spatial axis, total = max((ceil(in / s) - 1) * s + (k - 1) * d + 1 - in,
  // 0), the smaller half before (MindSpore's Conv2D pad_list).
  std::vector<int64_t> same_padding(const Node& node) const {
    if (node.inputs.empty()) throw Refusal{"it has no input"};
    const ValueRef in = node.inputs[0];
    auto dims = known_dims(report_.graph.nodes[in.node].outputs.at(in.output).shape);
    if (dims.size() == 3) dims.insert(dims.begin() + 2, 1);  // nn.Conv1d on its (N, C, 1, L) view
    if (dims.size() != 4) throw Refusal{"its input is not NCHW"};
    auto ks = as_ints(node.find_attr("kernel_size")).value_or(std::vector<int64_t>{1});
    auto ss = as_ints(node.find_attr("stride")).value_or(std::vector<int64_t>{1});
    auto ds = as_ints(node.find_attr("dilation")).value_or(std::vector<int64_t>{1});
    auto pick = [](const std::vector<int64_t>& v, size_t axis) {
      return v.size() == 4 ? v[2 + axis] : (v.size() == 2 ? v[axis] : v.at(0));
    };
    std::vector<int64_t> pads;
    for (size_t axis = 0; axis < 2; ++axis) {
      const int64_t size = dims[2 + axis];
      const int64_t k = pick(ks, axis);
      const int64_t st = std::max<int64_t>(pick(ss, axis), 1);
      const int64_t d = pick(ds, axis);
      const int64_t out = (size + st - 1) / st;
      const int64_t total = std::max<int64_t>((out - 1) * st + (k - 1) * d + 1 - size, 0);
      pads.push_back(total / 2);
      pads.push_back(total - total / 2);
    }
    return pads;
  }

  void write_node(size_t index, const Node& node) {
    switch (node.kind) {
      case NodeKind::Input: {
        pb::ValueInfo* in = model_.mutable_graph()->add_input();
        const std::string name = qualified(node.id);
        in->set_name(name);
        if (node.outputs.size() != 1) throw Refusal{"a graph input must be one tensor"};
        set_type(in->add_tensor(), node.outputs[0]);
        names_[index] = {name};
        return;
      }
      case NodeKind::Parameter: {
        if (node.params.size() != 1)
          throw Refusal{"it reads " + std::to_string(node.params.size()) + " parameters"};
        names_[index] = {qualified(node.params[0])};
        return;
      }
      case NodeKind::Constant:
        names_[index] = {write_constant(node)};
        return;
      case NodeKind::Op:
        break;
    }
    const OpDef* def = find_op(node.op);
    if (def == nullptr || def->mindir == nullptr) {
      throw Refusal{"it has no MindIR mapping in the operator table"};
    }
    if (node.outputs.empty()) throw Refusal{"it has no outputs"};
    const MindirDef& m = *def->mindir;
    if (m.fold != MindirFold::None) {
      names_[index] = {folded(node, m.fold)};
      return;
    }
    operands_ = operands(node);
    if (expanded_input_ && !operands_.empty()) operands_[0] = *expanded_input_;
    expanded_input_.reset();
    if (node.op == "CumSum") cast_cumsum_input(node);
    if (m.inference_identity) {
      names_[index] = {operand(0)};
      return;
    }
    if (m.expansion == MindirExpansion::FlattenReshape && !default_flatten(node)) {
      names_[index] = {reshape(node, operand(0), known_dims(node.outputs.at(0).shape))};
      return;
    }
    if (m.expansion == MindirExpansion::PadForms) {
      names_[index] = {pad(node)};
      return;
    }
    if (m.expansion == MindirExpansion::Pool3DForms && pool3d_form(node)) {
      names_[index] = pool3d(node);
      return;
    }
    if (m.expansion == MindirExpansion::VarForms) {
      names_[index] = {reduce_var(node)};
      return;
    }
    if (m.expansion == MindirExpansion::RollSlices) {
      names_[index] = {roll(node)};
      return;
    }
    if (m.expansion == MindirExpansion::ClipForms) {
      names_[index] = {clip(node)};
      return;
    }
    if (m.expansion == MindirExpansion::SplitSlices) {
      if (auto pieces = unequal_split(node)) {
        names_[index] = std::move(*pieces);
        return;
      }
    }
    if (m.expansion == MindirExpansion::GeluErf && !runtime::kernels::gelu_approximate(node)) {
      names_[index] = {gelu_erf(node)};
      return;
    }
    // nn.Dense on rank > 2: (-1, in) before the product, the output's shape after.
    std::optional<std::string> reshaped;
    TensorType product_type = node.outputs[0];
    if (m.matrix_weight && !node.inputs.empty() && weight(node, "weight")) {
      const auto dims = input_dims(node, 0);
      if (dims.size() > 2) {
        reshaped = reshape(node, operand(0), {-1, dims.back()});
        const auto out = known_dims(node.outputs[0].shape);
        int64_t rows = 1;
        for (size_t i = 0; i + 1 < out.size(); ++i) {
          auto p = checked_mul(rows, out[i]);
          if (!p) throw Refusal{"its size overflows", kUnsupportedValue};
          rows = *p;
        }
        product_type.shape = Shape::of({rows, out.back()});
      }
    }
    // nn.Conv1d as its construct writes it (measured, MindSpore 2.10's export): ExpandDims(x, 2),
    // Conv2D with the 1-D attributes lifted (kernel_size (1, k), stride and dilation
    // (1, 1, 1, s), pad (0, 0, p, p)) on its 4-D weight, BiasAdd, Squeeze((2,)).
    std::optional<Node> lifted;
    if (m.primitive == "Conv2D" && !node.inputs.empty() && input_dims(node, 0).size() == 3) {
      const auto dims = input_dims(node, 0);
      lifted = conv1d_as_2d(node);
      // One ExpandDims per value, shared by its convolutions and pools (as MindSpore's compile
      // merges them: measured, x read by two nn.Conv1d is expanded once).
      std::string& expanded = expanded_[operand(0)];
      if (expanded.empty()) {
        pb::Attribute two;
        set_int(&two, 2);
        expanded = function_node(
            node, "ExpandDims", {operand(0), constant(two)},
            TensorType{Shape::of({dims[0], dims[1], 1, dims[2]}), node.outputs[0].dtype});
      }
      reshaped = expanded;
      const auto out = known_dims(node.outputs[0].shape);
      if (out.size() != 3) throw Refusal{"its output is not 3-D"};
      product_type.shape = Shape::of({out[0], out[1], 1, out[2]});
    }
    const Node& source = lifted ? *lifted : node;
    pb::Primitive prim;
    prim.set_op_type(std::string(m.primitive));
    std::vector<std::string> inputs;
    for (const MindirArg& arg : m.args) {
      std::string input;
      pb::Attribute value;
      bool skip = false;
      argument(source, arg, &input, &value, &skip);
      if (reshaped && arg.value == MindirValue::Input && arg.number == 0) input = *reshaped;
      if (skip) continue;
      if (!input.empty()) {
        inputs.push_back(std::move(input));
      } else if (m.kind == MindirKind::Function) {
        inputs.push_back(constant(std::move(value)));
      } else {
        value.set_name(std::string(arg.name));
        *prim.add_attribute() = std::move(value);
      }
    }
    prim.set_prim_type(m.kind == MindirKind::Function ? pb::Primitive::PRIMITIVE_FUNCTION
                                                      : pb::Primitive::PRIMITIVE);
    const std::string key = primitive_key(std::move(prim));
    pb::Node* n = add_cnode(node, key, inputs, m.primitive);
    std::string out = n->name();
    if (node.outputs.size() > 1) {
      // A tuple-valued primitive (Unstack, Split, ops.LayerNorm's three outputs): its abstract is
      // the tuple, each reader takes TupleGetItem(i).
      pb::Attribute* shape = n->add_attribute();
      shape->set_name("shape");
      shape->set_type(pb::Attribute::TUPLE);
      for (const TensorType& t : node.outputs) {
        pb::Attribute* e = shape->add_values();
        e->set_type(pb::Attribute::TENSORS);
        set_type(e->add_tensors(), t);
      }
      std::vector<std::string> items;
      for (size_t i = 0; i < node.outputs.size(); ++i) {
        items.push_back(tuple_item(node, out, static_cast<int64_t>(i), node.outputs[i]));
      }
      names_[index] = std::move(items);
      return;
    }
    if (m.tuple_item >= 0) {
      out = tuple_item(node, out, m.tuple_item, product_type);  // the element's abstract
      n = nullptr;
    }
    if (!m.bias.empty()) {
      if (auto b = weight(node, m.bias)) {
        if (n != nullptr) set_shape(n, product_type);
        pb::Attribute format;
        set_int(&format, 0);  // data_format NCHW
        const std::string format_name = constant(std::move(format));
        const std::string bias_add = simple_primitive("BiasAdd", pb::Primitive::PRIMITIVE_FUNCTION);
        n = add_cnode(node, bias_add, {out, qualified(*b), format_name}, "BiasAdd");
        out = n->name();
      }
    }
    if (!m.activation.empty()) {
      if (const AttrValue* act = node.find_attr(m.activation)) {
        if (n != nullptr) set_shape(n, product_type);
        n = activation(node, out, *act);
        out = n->name();
      }
    }
    if (lifted) {
      if (n != nullptr) set_shape(n, product_type);
      pb::Attribute axis;
      set_ints(&axis, {2});
      out = function_node(node, "Squeeze", {out, constant(std::move(axis))}, node.outputs[0]);
    } else if (reshaped) {
      if (n != nullptr) set_shape(n, product_type);
      out = reshape(node, out, known_dims(node.outputs[0].shape));
    } else if (n != nullptr) {
      set_shape(n, node.outputs[0]);
    }
    names_[index] = {out};
  }

  // TupleGetItem(tuple, i); with the element's abstract when `type` is given.
  std::string tuple_item(const Node& node, const std::string& tuple, int64_t i,
                         const std::optional<TensorType>& type) {
    pb::Attribute item;
    set_int(&item, i);
    const std::string index_name = constant(std::move(item));
    const std::string get = simple_primitive("TupleGetItem", pb::Primitive::PRIMITIVE);
    pb::Node* n = add_cnode(node, get, {tuple, index_name}, "TupleGetItem");
    if (type) set_shape(n, *type);
    return n->name();
  }

  // The activation a weight layer applies after its product (nn.Dense(activation=...)).
  pb::Node* activation(const Node& node, const std::string& value, const AttrValue& act) {
    const auto* name = std::get_if<std::string>(&act);
    if (name == nullptr) throw Refusal{"its activation is not recorded as a name"};
    std::string lower = *name;
    std::ranges::transform(lower, lower.begin(),
                           [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    static const std::map<std::string, std::string_view, std::less<>> kPrims = {
        {"relu", "ReLU"},
        {"relu6", "ReLU6"},
        {"tanh", "Tanh"},
        {"sigmoid", "Sigmoid"},
        {"gelu", "GeLU"}};
    auto it = kPrims.find(lower);
    if (it == kPrims.end()) {
      throw Refusal{"activation '" + *name + "' has no MindIR mapping"};
    }
    const std::string key = simple_primitive(it->second, pb::Primitive::PRIMITIVE_FUNCTION);
    return add_cnode(node, key, {value}, it->second);
  }

  // A binary function primitive node `prim`(a, b) with the node's output abstract.
  std::string binary(const Node& node, std::string_view prim, const std::string& a,
                     const std::string& b) {
    const std::string key = simple_primitive(prim, pb::Primitive::PRIMITIVE_FUNCTION);
    pb::Node* n = add_cnode(node, key, {a, b}, prim);
    set_shape(n, node.outputs[0]);
    return n->name();
  }

  // nn.GELU(approximate=False): x * (erf(x / sqrt(2)) + 1) * 0.5, the nodes mindspore.export
  // writes for it (Div, Erf, Add, Mul, Mul).
  std::string gelu_erf(const Node& node) {
    const std::string x = operand(0);
    const DType t = node.outputs[0].dtype;
    const std::string scaled = binary(node, "Div", x, scalar_tensor(std::sqrt(2.0), t));
    const std::string erf_key = simple_primitive("Erf", pb::Primitive::PRIMITIVE_FUNCTION);
    pb::Node* erf = add_cnode(node, erf_key, {scaled}, "Erf");
    set_shape(erf, node.outputs[0]);
    const std::string plus = binary(node, "Add", erf->name(), scalar_tensor(1.0, t));
    const std::string prod = binary(node, "Mul", x, plus);
    return binary(node, "Mul", prod, scalar_tensor(0.5, t));
  }

  // A function primitive node `prim`(inputs) with the abstract `type`.
  std::string function_node(const Node& node, std::string_view prim,
                            const std::vector<std::string>& inputs, const TensorType& type) {
    const std::string key = simple_primitive(prim, pb::Primitive::PRIMITIVE_FUNCTION);
    pb::Node* n = add_cnode(node, key, inputs, prim);
    set_shape(n, type);
    return n->name();
  }

  // ReduceVar (MindirExpansion::VarForms): Tensor.var as ReduceMean, Sub, Pow, ReduceSum, Div;
  // ops.var as ReduceStd, TupleGetItem(0), Pow.
  std::string reduce_var(const Node& node) {
    const std::string x = operand(0);
    const auto dims = input_dims(node, 0);
    const auto rank = static_cast<int64_t>(dims.size());
    const TensorType& out = node.outputs.at(0);
    const bool keep = static_cast<int64_t>(out.shape.rank()) == rank;
    const AttrValue* axis = node.find_attr("axis");
    std::vector<int64_t> axes;  // as written, made non-negative; None: every axis, ()
    if (axis != nullptr && !std::holds_alternative<std::monostate>(*axis)) {
      const auto written = as_ints(axis);
      if (!written) throw Refusal{"its axis is not recorded as integers"};
      for (int64_t a : *written) {
        if (a < -rank || a >= rank) throw Refusal{"its axis is out of range"};
        axes.push_back(a < 0 ? a + rank : a);
      }
    }
    const AttrValue* ddof_attr = node.find_attr("ddof");
    const auto ddof =
        ddof_attr != nullptr ? as_ints(ddof_attr) : std::optional(std::vector<int64_t>{0});
    if (!ddof || ddof->size() != 1) throw Refusal{"its ddof is not recorded as an integer"};
    pb::Attribute axes_value;
    set_ints(&axes_value, axes);
    const std::string axes_name = constant(axes_value);
    // ReduceStd: ops.std's node (ddof recorded as written); Tensor.std records `correction`.
    const bool is_std = node.op == "ReduceStd";
    const std::string_view api = node.api;
    if (is_std && api != "ops.std") {
      throw Refusal{"no MindIR form measured for " + std::string(api)};
    }
    // ops.var / ops.std with ddof 0 or 1: ReduceStd (unbiased = ddof == 1) and, for the
    // variance, its square. Any other ddof: the decomposition below, as mindspore.export
    // writes ops.var(x, ddof=2) (measured: ReduceMean, Sub, Pow, SumExt, RealDiv by n - ddof;
    // ops.std then Pow 0.5).
    if ((api == "ops.var" || api == "ops.std") && ((*ddof)[0] == 0 || (*ddof)[0] == 1)) {
      pb::Attribute unbiased;
      set_bool(&unbiased, (*ddof)[0] == 1);
      pb::Attribute keep_dims;
      set_bool(&keep_dims, keep);
      const std::string key = simple_primitive("ReduceStd", pb::Primitive::PRIMITIVE_FUNCTION);
      pb::Node* std_node = add_cnode(
          node, key, {x, axes_name, constant(std::move(unbiased)), constant(std::move(keep_dims))},
          "ReduceStd");
      std::string std_dev = tuple_item(node, std_node->name(), 0, out);
      if (is_std) return std_dev;
      return function_node(node, "Pow", {std_dev, scalar_tensor(2.0, out.dtype)}, out);
    }

    // n: the number of elements reduced, an int32 0-d tensor as MindSpore writes it.
    int64_t n = 1;
    std::vector<int64_t> kept = dims;
    for (int64_t a = 0; a < rank; ++a) {
      if (!axes.empty() && std::ranges::find(axes, a) == axes.end()) continue;
      auto p = checked_mul(n, dims[static_cast<size_t>(a)]);
      if (!p) throw Refusal{"its size overflows", kUnsupportedValue};
      n = *p;
      kept[static_cast<size_t>(a)] = 1;
    }
    pb::Attribute keep_true;
    set_bool(&keep_true, true);
    const TensorType mean_type{Shape::of(kept), out.dtype};
    const TensorType in_type{Shape::of(dims), out.dtype};
    const std::string mean = function_node(
        node, "ReduceMean", {x, axes_name, constant(std::move(keep_true))}, mean_type);
    const std::string diff = function_node(node, "Sub", {x, mean}, in_type);
    const std::string square =
        function_node(node, "Pow", {diff, scalar_tensor(2.0, out.dtype)}, in_type);
    pb::Attribute keep_dims;
    set_bool(&keep_dims, keep);
    pb::Attribute skip_mode;
    set_bool(&skip_mode, false);
    const std::string sum =
        function_node(node, "ReduceSum",
                      {square, constant(axes_value), constant(std::move(keep_dims)),
                       constant(std::move(skip_mode))},
                      out);
    std::string var = function_node(
        node, "Div", {sum, scalar_tensor(static_cast<double>(n - (*ddof)[0]), DType::Int32)}, out);
    if (!is_std) return var;
    return function_node(node, "Pow", {var, scalar_tensor(0.5, out.dtype)}, out);
  }

  // StridedSlice(value, begin, end, strides 1, the five masks 0) of `dims` taking [from, to) on
  // axis `a`, all of the other axes: as mindspore.export writes a slice along one axis.
  std::string axis_slice(const Node& node, const std::string& value,
                         const std::vector<int64_t>& dims, size_t a, int64_t from, int64_t to,
                         DType dtype) {
    auto ints = [&](const std::vector<int64_t>& v) {
      pb::Attribute attr;
      set_ints(&attr, v);
      return constant(std::move(attr));
    };
    std::vector<int64_t> begin(dims.size(), 0), end = dims, part = dims;
    begin[a] = from;
    end[a] = to;
    part[a] = to - from;
    std::vector<std::string> in = {value, ints(begin), ints(end),
                                   ints(std::vector<int64_t>(dims.size(), 1))};
    for (int m = 0; m < 5; ++m) {
      pb::Attribute mask;
      set_int(&mask, 0);
      in.push_back(constant(std::move(mask)));
    }
    return function_node(node, "StridedSlice", in, TensorType{Shape::of(part), dtype});
  }

  // Split into pieces of unequal sizes (MindirExpansion::SplitSlices): one StridedSlice per
  // piece along the split axis, as mindspore.export writes ops.split(x, [3, 5], 1). nullopt for
  // equal pieces (the Split primitive).
  std::optional<std::vector<std::string>> unequal_split(const Node& node) {
    const auto x = input_dims(node, 0);
    const auto rank = static_cast<int64_t>(x.size());
    const auto axis_attr = as_ints(node.find_attr("axis"));
    const int64_t axis = axis_attr && !axis_attr->empty() ? axis_attr->front() : 0;
    if (axis < -rank || axis >= rank) throw Refusal{"its axis is out of range"};
    const auto a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    std::vector<int64_t> sizes;
    for (const TensorType& t : node.outputs) {
      const auto y = known_dims(t.shape);
      if (y.size() != x.size()) throw Refusal{"an output of another rank than its input"};
      sizes.push_back(y[a]);
    }
    if (std::all_of(sizes.begin(), sizes.end(), [&](int64_t n) { return n == sizes.front(); }))
      return std::nullopt;
    int64_t total = 0;
    for (int64_t n : sizes) total += n;
    if (total != x[a]) throw Refusal{"its pieces do not add up to the split dimension"};
    std::vector<std::string> pieces;
    int64_t from = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      pieces.push_back(
          axis_slice(node, operand(0), x, a, from, from + sizes[i], node.outputs[i].dtype));
      from += sizes[i];
    }
    return pieces;
  }

  // Roll (MindirExpansion::RollSlices): the two slices of each shifted axis, concatenated in
  // the other order, as mindspore.numpy.roll writes them. mindspore.numpy.roll casts an integer
  // tensor to float32 and back around the slices; that form is not written (refused).
  std::string roll(const Node& node) {
    const TensorType& out = node.outputs.at(0);
    if (!is_floating(out.dtype)) {
      throw Refusal{"a Roll of a " + std::string(dtype_name(out.dtype)) +
                    " tensor (mindspore.numpy.roll casts it to float32 and back): not written"};
    }
    std::string why;
    bool overflow = false;
    const auto plan = runtime::roll_steps(node, input_dims(node, 0), &why, &overflow);
    if (!plan) {
      if (overflow) throw Refusal{why, kUnsupportedValue};
      throw Refusal{why};
    }
    const std::vector<int64_t>& dims = plan->dims;
    std::string value = operand(0);
    if (plan->flattened) value = reshape(node, value, dims);
    for (const auto& step : plan->steps) {
      const size_t a = step.first;  // not a structured binding: clang 14 cannot capture one
      const int64_t by = step.second;
      const int64_t len = dims[a];
      const std::string head = axis_slice(node, value, dims, a, len - by, len, out.dtype);
      const std::string tail = axis_slice(node, value, dims, a, 0, len - by, out.dtype);
      const std::string key = simple_primitive("MakeTuple", pb::Primitive::PRIMITIVE);
      const std::string both = add_cnode(node, key, {head, tail}, "MakeTuple")->name();
      pb::Attribute axis_value;
      set_int(&axis_value, static_cast<int64_t>(a));
      value = function_node(node, "Concat", {both, constant(std::move(axis_value))},
                            TensorType{Shape::of(dims), out.dtype});
    }
    if (plan->flattened) value = reshape(node, value, known_dims(out.shape));
    return value;
  }

  // ClipByValue from ops.clamp / ops.clip / Tensor.clamp / Tensor.clip as mindspore.export
  // writes them (measured 2026-12-07): number bounds, `ClampScalar(x, min, max)`, each bound a
  // FLOAT scalar (an int one INT64) or NONE; tensor bounds, `ClampTensor(x, min, max)`, each a
  // tensor (a constant one a 0-d tensor) or NONE. A tensor bound beside a number bound is not
  // measured: refused.
  std::string clamp(const Node& node) {
    size_t next = 1;
    bool numbers = false, tensors = false;
    std::vector<std::string> in = {operand(0)};
    std::vector<runtime::ClipBound> bounds;
    for (const char* name : {"min", "max"}) {
      const runtime::ClipBound b = runtime::clip_bound(node, name, &next, operands_.size());
      if (b.kind == runtime::ClipBound::Kind::NotNumber)
        throw Refusal{std::string("its ") + name + " bound is not a number"};
      if (b.kind == runtime::ClipBound::Kind::Missing) throw Refusal{"its bounds are not recorded"};
      numbers = numbers || b.kind == runtime::ClipBound::Kind::Number;
      tensors = tensors || b.kind == runtime::ClipBound::Kind::Input;
      bounds.push_back(b);
    }
    if (numbers && tensors) {
      throw Refusal{"a tensor bound beside a number bound (" + std::string(node.api) +
                    "'s MindIR form for it is not measured)"};
    }
    if (!numbers && !tensors) throw Refusal{"both bounds are None"};
    for (const runtime::ClipBound& b : bounds) {
      pb::Attribute a;
      if (b.kind == runtime::ClipBound::Kind::Input) {
        in.push_back(operand(b.input));
        continue;
      }
      if (b.kind == runtime::ClipBound::Kind::None) {
        a.set_type(pb::Attribute::NONE);
      } else if (const auto* i = std::get_if<int64_t>(b.attr)) {
        set_int(&a, *i);
      } else {
        set_float(&a, b.number);
      }
      in.push_back(constant(std::move(a)));
    }
    return function_node(node, tensors ? "ClampTensor" : "ClampScalar", in, node.outputs.at(0));
  }

  // ClipByValue (MindirExpansion::ClipForms): ops.clip_by_value(x, min, max) as mindspore.export
  // writes it (its _clip_by_value; measured 2026-12-07 on SwinV2's logit-scale clip):
  // Maximum(x, min), then Minimum(., max). A number bound (the node's `min` / `max`) is a 0-d
  // tensor of the output's dtype, a None bound (recorded as None) left out, a tensor bound (not
  // recorded) the node's next input.
  std::string clip(const Node& node) {
    if (node.api != "ops.clip_by_value") return clamp(node);
    const TensorType& out = node.outputs.at(0);
    std::string value = operand(0);
    size_t next = 1;
    auto bound = [&](const char* name) -> std::optional<std::string> {
      const runtime::ClipBound b = runtime::clip_bound(node, name, &next, operands_.size());
      switch (b.kind) {
        case runtime::ClipBound::Kind::None:
          return std::nullopt;
        case runtime::ClipBound::Kind::Number:
          return scalar_tensor(b.number, out.dtype);
        case runtime::ClipBound::Kind::NotNumber:
          throw Refusal{std::string("its ") + name + " bound is not a number"};
        case runtime::ClipBound::Kind::Input:
          return operand(b.input);
        case runtime::ClipBound::Kind::Missing:
          break;
      }
      throw Refusal{"its bounds are not recorded"};
    };
    const auto lo = bound("min");
    const auto hi = bound("max");
    if (lo) value = function_node(node, "Maximum", {value, *lo}, out);
    if (hi) value = function_node(node, "Minimum", {value, *hi}, out);
    return value;
  }

  // Whether a pool is written in its 3-D form (MindirExpansion::Pool3DForms): nn.MaxPool2d with
  // pad_mode 'pad'; nn.AvgPool2d with pad_mode 'pad', padding, ceil_mode, count_include_pad
  // False or a divisor_override (the conditions of their constructs).
  static bool pool3d_form(const Node& node) {
    if (lower_attr(node, "pad_mode", "valid") == "pad") return true;
    if (node.op == "MaxPool") return false;
    const auto padding = as_ints(node.find_attr("padding"));
    const bool padded = padding && std::ranges::any_of(*padding, [](int64_t p) { return p != 0; });
    const AttrValue* divisor = node.find_attr("divisor_override");
    return padded || runtime::attr_bool(node, "ceil_mode").value_or(false) ||
           !runtime::attr_bool(node, "count_include_pad").value_or(true) ||
           (divisor != nullptr && !std::holds_alternative<std::monostate>(*divisor));
  }

  // The string attribute `key` in lower case; `fallback` when it is not recorded.
  static std::string lower_attr(const Node& node, std::string_view key, std::string_view fallback) {
    const AttrValue* v = node.find_attr(key);
    const auto* text = v != nullptr ? std::get_if<std::string>(v) : nullptr;
    std::string s = text != nullptr ? *text : std::string(fallback);
    std::ranges::transform(s, s.begin(),
                           [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  }

  // nn.MaxPool2d / nn.AvgPool2d in their 3-D form (MindirExpansion::Pool3DForms): the pooled
  // value, and for nn.MaxPool2d(return_indices=True) its indices (argmax).
  std::vector<std::string> pool3d(const Node& node) {
    const auto dims = input_dims(node, 0);
    if (dims.size() != 4) throw Refusal{"a pool of a " + std::to_string(dims.size()) + "-D input"};
    const TensorType& out = node.outputs.at(0);
    const auto out_dims = known_dims(out.shape);
    if (out_dims.size() != 4) throw Refusal{"its output is not 4-D"};
    auto pair = [&](std::string_view key, int64_t fallback) {
      const auto v = as_ints(node.find_attr(key));
      if (!v) return std::vector<int64_t>{fallback, fallback};
      if (v->size() == 1) return std::vector<int64_t>{(*v)[0], (*v)[0]};
      if (v->size() == 2) return *v;
      throw Refusal{"its " + std::string(key) + " is not an int or an (h, w) pair"};
    };
    const auto kernel = pair("kernel_size", 1);
    const auto stride = pair("stride", 1);
    const auto padding = pair("padding", 0);
    const bool ceil_mode = runtime::attr_bool(node, "ceil_mode").value_or(false);
    auto named = [](pb::Primitive* prim, std::string_view name) {
      pb::Attribute* a = prim->add_attribute();
      a->set_name(std::string(name));
      return a;
    };
    // One ExpandDims per pooled value, shared by its pools (MindSpore's compile merges them:
    // measured, one ExpandDims before four pools of the same tensor).
    std::string& expanded = expanded_[operand(0)];
    if (expanded.empty()) {
      pb::Attribute two;
      set_int(&two, 2);
      const std::vector<int64_t> view{dims[0], dims[1], 1, dims[2], dims[3]};
      expanded = function_node(node, "ExpandDims", {operand(0), constant(two)},
                               TensorType{Shape::of(view), out.dtype});
    }
    const TensorType pooled{Shape::of({out_dims[0], out_dims[1], 1, out_dims[2], out_dims[3]}),
                            out.dtype};
    pb::Primitive prim;
    prim.set_prim_type(pb::Primitive::PRIMITIVE);
    std::string value, indices;
    pb::Attribute axis;
    set_ints(&axis, {2});
    if (node.op == "MaxPool") {
      // dilation as nn.MaxPool2d writes it (measured, MindSpore 2.10's export): an int d is
      // (d, d, d), an (h, w) tuple is (1, h, w).
      const AttrValue* dil_attr = node.find_attr("dilation");
      const auto* dil_int = dil_attr != nullptr ? std::get_if<int64_t>(dil_attr) : nullptr;
      const auto dil = pair("dilation", 1);
      const std::vector<int64_t> dilation = dil_int != nullptr
                                                ? std::vector<int64_t>{*dil_int, *dil_int, *dil_int}
                                                : std::vector<int64_t>{1, dil[0], dil[1]};
      prim.set_op_type("MaxPool3DWithArgmax");
      set_ints(named(&prim, "ksize"), {1, kernel[0], kernel[1]});
      set_ints(named(&prim, "strides"), {1, stride[0], stride[1]});
      set_ints(named(&prim, "pads"), {0, padding[0], padding[1]});
      set_ints(named(&prim, "dilation"), dilation);
      set_bool(named(&prim, "ceil_mode"), ceil_mode);
      set_string(named(&prim, "argmax_type"), "int64");
      set_string(named(&prim, "format"), "NCDHW");
      const std::string key = primitive_key(std::move(prim));
      pb::Node* n = add_cnode(node, key, {expanded}, "MaxPool3DWithArgmax");
      value = tuple_item(node, n->name(), 0, pooled);
      // return_indices=True: TupleGetItem(1) and its own Squeeze (measured).
      if (node.outputs.size() >= 2) {
        const TensorType& idx_out = node.outputs.at(1);
        const std::string argmax = tuple_item(
            node, n->name(), 1,
            TensorType{Shape::of({out_dims[0], out_dims[1], 1, out_dims[2], out_dims[3]}),
                       idx_out.dtype});
        indices = function_node(node, "Squeeze", {argmax, constant(axis)}, idx_out);
      }
    } else {
      // pad_mode as written, upper case: 'pad', or 'valid' with ceil_mode / count_include_pad /
      // divisor_override (measured: nn.AvgPool2d(2, 2, ceil_mode=True) is AvgPool3D with
      // pad_mode "VALID" and zero pads).
      const std::string pad_mode = lower_attr(node, "pad_mode", "valid");
      const bool padded = padding != std::vector<int64_t>{0, 0};
      if (pad_mode != "pad" && (pad_mode != "valid" || padded)) {
        throw Refusal{"pad_mode '" + pad_mode + "' in the AvgPool3D form (not measured)"};
      }
      const AttrValue* divisor = node.find_attr("divisor_override");
      int64_t divisor_override = 0;
      if (divisor != nullptr && !std::holds_alternative<std::monostate>(*divisor)) {
        const auto d = as_ints(divisor);
        if (!d || d->size() != 1 || (*d)[0] <= 0) throw Refusal{"its divisor_override is not > 0"};
        divisor_override = (*d)[0];
      }
      const std::vector<int64_t> pads{0, 0, padding[0], padding[0], padding[1], padding[1]};
      prim.set_op_type("AvgPool3D");
      set_ints(named(&prim, "kernel_size"), {1, 1, 1, kernel[0], kernel[1]});
      set_ints(named(&prim, "strides"), {1, 1, 1, stride[0], stride[1]});
      set_ints(named(&prim, "pad"), pads);
      set_ints(named(&prim, "pad_list"), pads);
      set_bool(named(&prim, "ceil_mode"), ceil_mode);
      set_bool(named(&prim, "count_include_pad"),
               runtime::attr_bool(node, "count_include_pad").value_or(true));
      set_int(named(&prim, "divisor_override"), divisor_override);
      set_string(named(&prim, "pad_mode"), pad_mode == "pad" ? "PAD" : "VALID");
      set_string(named(&prim, "format"), "NCDHW");
      const std::string key = primitive_key(std::move(prim));
      pb::Node* n = add_cnode(node, key, {expanded}, "AvgPool3D");
      set_shape(n, pooled);
      value = n->name();
    }
    std::vector<std::string> names{
        function_node(node, "Squeeze", {value, constant(std::move(axis))}, out)};
    if (!indices.empty()) names.push_back(std::move(indices));
    return names;
  }

  // nn.Pad / ops.pad (MindirExpansion::PadForms).
  std::string pad(const Node& node) {
    const std::string x = operand(0);
    auto mode_of = [&](std::string_view fallback) {
      const AttrValue* v = node.find_attr("mode");
      const auto* text = v != nullptr ? std::get_if<std::string>(v) : nullptr;
      std::string mode = text != nullptr ? *text : std::string(fallback);
      std::ranges::transform(mode, mode.begin(),
                             [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (mode != "constant") {
        throw Refusal{"mode '" + mode +
                      "' has no MindIR mapping (MindSpore exports it as another primitive)"};
      }
    };
    pb::Primitive prim;
    prim.set_prim_type(pb::Primitive::PRIMITIVE);
    std::vector<std::string> inputs{x};
    if (const AttrValue* p = node.find_attr("paddings")) {
      mode_of("constant");
      const auto flat = as_ints(p);
      if (!flat || flat->size() % 2 != 0) throw Refusal{"its paddings are not recorded as pairs"};
      prim.set_op_type("Pad");
      pb::Attribute* pairs = prim.add_attribute();
      pairs->set_name("paddings");
      pairs->set_type(pb::Attribute::TUPLE);
      for (size_t i = 0; i < flat->size(); i += 2) {
        set_ints(pairs->add_values(), {(*flat)[i], (*flat)[i + 1]});
      }
    } else {
      mode_of("constant");
      const auto padding = as_ints(node.find_attr("padding"));
      if (!padding) throw Refusal{"its padding is not recorded as integers"};
      const MindirArg value_arg{"value", MindirValue::Float, "value", 0};
      const ArgReader value(node, value_arg);
      prim.set_op_type("PadV3");
      pb::Attribute* mode = prim.add_attribute();
      mode->set_name("mode");
      set_string(mode, "constant");
      pb::Attribute* contiguous = prim.add_attribute();
      contiguous->set_name("paddings_contiguous");
      set_bool(contiguous, true);
      pb::Attribute pads;
      set_ints(&pads, *padding);
      inputs.push_back(constant(std::move(pads)));
      const AttrValue* v = node.find_attr("value");
      const bool none = v == nullptr || std::holds_alternative<std::monostate>(*v);
      inputs.push_back(scalar_tensor(none ? 0.0 : value.number(0), node.outputs.at(0).dtype));
    }
    const std::string op = prim.op_type();
    const std::string key = primitive_key(std::move(prim));
    pb::Node* n = add_cnode(node, key, inputs, op);
    set_shape(n, node.outputs.at(0));
    return n->name();
  }

  // A node MindSpore's compile folds (MindirFold): its value as a Constant tensor.
  std::string folded(const Node& node, MindirFold fold) {
    if (node.outputs.size() != 1) throw Refusal{"a folded operator must have one output"};
    const TensorType& type = node.outputs[0];
    const auto dims = known_dims(type.shape);
    const auto numel = checked_numel(dims);
    if (!numel) throw Refusal{"its size overflows", kUnsupportedValue};
    std::vector<double> values(static_cast<size_t>(*numel), fold == MindirFold::Ones ? 1.0 : 0.0);
    if (fold == MindirFold::Range) {
      // The runtime kernel's values: start + i * delta, in the output's dtype.
      if (!runtime::attr_float(node, "limit") && !runtime::attr_float(node, "end")) {
        throw Refusal{"the bounds of the range were not recorded", kUnsupportedValue};
      }
      const double start = runtime::attr_float(node, "start").value_or(0);
      const double delta = runtime::attr_float(node, "delta")
                               .value_or(runtime::attr_float(node, "step").value_or(1));
      for (size_t i = 0; i < values.size(); ++i) {
        values[i] = start + static_cast<double>(i) * delta;
      }
    }
    return tensor_constant(type, values);
  }

  // Flatten's default dims: start_dim 1 and end_dim -1 (or the last axis), or not recorded.
  bool default_flatten(const Node& node) const {
    const auto rank = static_cast<int64_t>(input_dims(node, 0).size());
    auto dim = [&](std::string_view key, int64_t fallback) {
      auto v = as_ints(node.find_attr(key));
      return v && v->size() == 1 ? v->front() : fallback;
    };
    const int64_t start = dim("start_dim", 1);
    const int64_t end = dim("end_dim", -1);
    return (start == 1 || start == 1 - rank) && (end == -1 || end == rank - 1);
  }

  // `x[:, :, None]` (a StridedSlice with new_axis_mask and no ellipsis) as mindspore.export writes
  // a None index (measured 2026-12-07, MindSpore 2.10: ExpandDims, then a StridedSlice over the
  // expanded rank): one ExpandDims per new axis, in order, then the slice with each new axis
  // taken whole and no new_axis_mask (MindSpore's load refuses a begin longer than the input's
  // rank). Returns the node to write in its place (its input: the last ExpandDims); nothing when
  // `node` has no new axis, or an ellipsis too (refused by the row as before).
  std::optional<Node> expand_new_axes(const Node& node) {
    if (node.op != "StridedSlice" || node.kind != NodeKind::Op || node.inputs.empty())
      return std::nullopt;
    auto mask = [&](std::string_view name) -> int64_t {
      auto v = as_ints(node.find_attr(name));
      return v && v->size() == 1 ? v->front() : 0;
    };
    const int64_t new_axes = mask("new_axis_mask");
    if (new_axes == 0 || mask("ellipsis_mask") != 0) return std::nullopt;
    auto begin = as_ints(node.find_attr("begin"));
    auto end = as_ints(node.find_attr("end"));
    auto strides = as_ints(node.find_attr("strides"));
    if (!begin || !end || !strides || begin->size() != end->size() ||
        begin->size() != strides->size() || begin->size() > 62) {
      return std::nullopt;
    }
    std::vector<std::string> ops = operands(node);
    if (ops.empty()) return std::nullopt;
    std::vector<int64_t> dims = input_dims(node, 0);
    const ValueRef in = node.inputs[0];
    const DType dtype = report_.graph.nodes.at(in.node).outputs.at(in.output).dtype;
    std::string value = ops[0];
    int64_t begin_mask = mask("begin_mask");
    int64_t end_mask = mask("end_mask");
    for (size_t i = 0; i < begin->size(); ++i) {
      const int64_t bit = int64_t{1} << i;
      if ((new_axes & bit) == 0) continue;
      if (i > dims.size()) return std::nullopt;  // a new axis past the end: not this form
      dims.insert(dims.begin() + static_cast<std::ptrdiff_t>(i), 1);
      pb::Attribute axis;
      set_int(&axis, static_cast<int64_t>(i));
      value = function_node(node, "ExpandDims", {value, constant(std::move(axis))},
                            TensorType{Shape::of(dims), dtype});
      (*begin)[i] = 0;
      (*end)[i] = 1;
      (*strides)[i] = 1;
      begin_mask &= ~bit;
      end_mask &= ~bit;
    }
    Node sliced = node;
    auto set = [&](const std::string& name, AttrValue v) {
      for (Attr& a : sliced.attrs) {
        if (a.name == name) {
          a.value = std::move(v);
          return;
        }
      }
      sliced.attrs.push_back(Attr{name, std::move(v)});
    };
    set("begin", *begin);
    set("end", *end);
    set("strides", *strides);
    set("begin_mask", begin_mask);
    set("end_mask", end_mask);
    set("new_axis_mask", int64_t{0});
    expanded_input_ = value;
    return sliced;
  }

  // ops.cumsum(x, axis, dtype) / Tensor.cumsum(dim, dtype=) with another dtype: MindSpore casts
  // x to `dtype` first (measured on edgenext's `not_mask.cumsum(1, dtype=ms.float32)`: its file
  // casts the bool mask to int32, CumSum, then Cast float32, as its CPU CumSum takes no bool).
  // One Cast to the output's dtype before the CumSum: the same sums (exact counts for a mask).
  void cast_cumsum_input(const Node& node) {
    if (node.inputs.empty() || node.outputs.empty() || operands_.empty()) return;
    const ValueRef in = node.inputs[0];
    const DType from = report_.graph.nodes.at(in.node).outputs.at(in.output).dtype;
    const TensorType& to = node.outputs[0];
    if (from == to.dtype) return;
    auto id = mindspore_type_id(to.dtype);
    if (!id) throw Refusal{"a cast to " + std::string(dtype_short_name(to.dtype))};
    pb::Attribute type_id;
    set_int(&type_id, *id);
    const std::string dtype_name = constant(std::move(type_id));
    const std::string key = simple_primitive("Cast", pb::Primitive::PRIMITIVE_FUNCTION);
    pb::Node* n = add_cnode(node, key, {operands_[0], dtype_name}, "Cast");
    set_shape(n, TensorType{to.shape, to.dtype});
    operands_[0] = n->name();
  }

  // A Reshape(value, shape) node; returns its name.
  std::string reshape(const Node& node, const std::string& value,
                      const std::vector<int64_t>& shape) {
    pb::Attribute target;
    set_ints(&target, shape);
    const std::string shape_name = constant(std::move(target));
    const std::string key = simple_primitive("Reshape", pb::Primitive::PRIMITIVE_FUNCTION);
    return add_cnode(node, key, {value, shape_name}, "Reshape")->name();
  }

  // A constant tensor: its elements from the evaluator (constant_values) or its uniform `value`.
  std::string write_constant(const Node& node) {
    if (node.outputs.size() != 1) throw Refusal{"a constant must be one tensor"};
    const TensorType& type = node.outputs[0];
    const auto dims = known_dims(type.shape);
    const auto numel = checked_numel(dims);
    if (!numel) throw Refusal{"its size overflows", kUnsupportedValue};
    const int64_t count = *numel;
    std::vector<double> values;
    if (node.constant_values) {
      values = *node.constant_values;
    } else if (const AttrValue* v = node.find_attr("value")) {
      double x = 0;
      if (const auto* d = std::get_if<double>(v)) {
        x = *d;
      } else if (const auto* i = std::get_if<int64_t>(v)) {
        x = static_cast<double>(*i);
      } else if (const auto* b = std::get_if<bool>(v)) {
        x = *b ? 1 : 0;
      } else {
        throw Refusal{"its value is not known", kUnsupportedValue};
      }
      values.assign(static_cast<size_t>(count), x);
    } else {
      throw Refusal{"its value is not known", kUnsupportedValue};
    }
    return tensor_constant(type, values);
  }

  void write_outputs() {
    const Graph& g = report_.graph;
    if (g.outputs.empty()) throw Refusal{"construct returns no tensor", kNoOutput};
    std::vector<std::string> outs;
    for (ValueRef ref : g.outputs) outs.push_back(value_name(ref));
    std::string out = outs.front();
    std::vector<TensorType> types;
    for (ValueRef ref : g.outputs) types.push_back(g.nodes[ref.node].outputs[ref.output]);
    if (outs.size() > 1) {
      const std::string key = simple_primitive("MakeTuple", pb::Primitive::PRIMITIVE);
      pb::Node* n = model_.mutable_graph()->add_node();
      out = qualified("MakeTuple_" + std::to_string(++uid_));
      n->set_op_type("REF::" + key);
      n->set_name(out);
      n->add_output(out);
      for (const auto& o : outs) n->add_input(o);
      n->set_domain("Default/MakeTuple");
    }
    pb::ValueInfo* vi = model_.mutable_graph()->add_output();
    vi->set_name(out);
    if (types.size() == 1) set_type(vi->add_tensor(), types.front());
  }

  // The file's bytes: the ModelProto serialized by protobuf except each weight's raw_data, which
  // is framed by hand (field key + length) and streamed from the runtime tensor; or, above
  // options.split_threshold, MindSpore's split layout: the graph with external_data and one data
  // file (docs/mindir-notes.md, "Split layout").
  void assemble(MindirExport& out, const MindirOptions& options) {
    pb::Graph* graph = model_.mutable_graph();
    if (static_cast<size_t>(graph->parameter_size()) != weights_.size()) {
      throw Refusal{"the weights and their descriptions differ", kUnsupportedValue};
    }
    std::vector<uint64_t> sizes;
    uint64_t total = 0;
    for (const runtime::Tensor& w : weights_) {
      sizes.push_back(ModelFile::tensor_bytes(w, w.dtype() == DType::Float16));
      auto sum = checked_add(total, sizes.back());
      if (!sum) throw Refusal{"the weights' size overflows", kUnsupportedValue};
      total = *sum;
    }
    if (total > options.split_threshold) {
      write_split(out, options, sizes);
      return;
    }
    // Serialized apart: the model without its graph, the graph without its parameters, each
    // parameter without raw_data. Protobuf parsers accept fields in any order, and a repeated
    // field's elements keep their relative order: the result parses as the whole ModelProto.
    google::protobuf::RepeatedPtrField<pb::Tensor> params;
    params.Swap(graph->mutable_parameter());
    const std::string rest = graph->SerializeAsString();
    pb::Graph* detached = model_.release_graph();
    const std::string head = model_.SerializeAsString();
    model_.set_allocated_graph(detached);
    std::vector<std::string> metas;
    std::vector<uint64_t> bodies;
    uint64_t graph_len = rest.size();
    for (int i = 0; i < params.size(); ++i) {
      metas.push_back(params.Get(i).SerializeAsString());
      const auto k = static_cast<size_t>(i);
      bodies.push_back(metas.back().size() + wire::framed_size(kTensorRawData, sizes[k]));
      graph_len += wire::framed_size(kGraphParameter, bodies.back());
    }
    const uint64_t file_size = head.size() + wire::framed_size(kModelGraph, graph_len);
    if (file_size > static_cast<uint64_t>(INT32_MAX)) {
      throw Refusal{"the file would be " + std::to_string(file_size) +
                        " bytes, over protobuf's 2 GiB limit (MindSpore's split layout starts at "
                        "1 GiB of weights)",
                    kUnsupportedValue};
    }
    ModelFile& f = out.file;
    f.append(head);
    f.append(wire::length_delimited(kModelGraph, graph_len));
    f.append(rest);
    for (size_t i = 0; i < metas.size(); ++i) {
      f.append(wire::length_delimited(kGraphParameter, bodies[i]));
      f.append(metas[i]);
      f.append(wire::length_delimited(kTensorRawData, sizes[i]));
      f.append_tensor(weights_[i], weights_[i].dtype() == DType::Float16);
    }
    params.Swap(graph->mutable_parameter());
  }

  // MindSpore's _split_save: a data file starting with a 64-byte header (byte 0: 1 on a
  // little-endian host), then every weight in name order, each padded to a multiple of 64 bytes;
  // each parameter's external_data gives the file (relative to the graph file's folder), the
  // offset and the unpadded length. The graph file keeps no raw_data.
  void write_split(MindirExport& out, const MindirOptions& options,
                   const std::vector<uint64_t>& sizes) {
    pb::Graph* graph = model_.mutable_graph();
    const std::string location =
        options.data_location ? options.data_location(0) : default_data_location(options, 0);
    std::vector<size_t> order(weights_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::ranges::sort(order, [&](size_t a, size_t b) {
      return graph->parameter(static_cast<int>(a)).ref_key() <
             graph->parameter(static_cast<int>(b)).ref_key();
    });
    ModelFile data;
    std::string header(kDataHeader, '\0');
    header[0] = std::endian::native == std::endian::little ? 1 : 0;
    data.append(header);
    uint64_t offset = kDataHeader;
    for (size_t i : order) {
      pb::Tensor* t = graph->mutable_parameter(static_cast<int>(i));
      auto* ext = t->mutable_external_data();
      ext->set_location(location);
      ext->set_offset(static_cast<int64_t>(offset));
      ext->set_length(static_cast<int64_t>(sizes[i]));
      data.append_tensor(weights_[i], weights_[i].dtype() == DType::Float16);
      const uint64_t pad = (kDataAlign - sizes[i] % kDataAlign) % kDataAlign;
      data.append(std::string(static_cast<size_t>(pad), '\0'));
      offset += sizes[i] + pad;
    }
    out.file.append(model_.SerializeAsString());
    out.data_files.push_back({location, std::move(data)});
    out.split = true;
  }

  // Field numbers of mind_ir.proto framed by hand (graphcore/proto/mind_ir.proto).
  static constexpr uint32_t kModelGraph = 7;
  static constexpr uint32_t kGraphParameter = 3;
  static constexpr uint32_t kTensorRawData = 9;
  static constexpr uint64_t kDataHeader = 64;
  static constexpr uint64_t kDataAlign = 64;

  const CellReport& report_;
  std::vector<runtime::Tensor> weights_;  // per graph.parameter: the runtime tensor it writes
  std::map<std::string, const runtime::ParamState*, std::less<>> params_;
  std::string graph_name_;
  pb::Model model_;
  std::vector<std::vector<std::string>> names_;  // per graph node and output: its MindIR value
  std::vector<std::string> operands_;            // the node being written: its tensor operands
  std::vector<bool> refused_;  // per graph node: refused, or fed by a refused node
  std::map<std::string, std::string> primitive_keys_;
  std::map<std::string, std::string> constants_;
  std::map<std::string, std::string>
      expanded_;  // value -> its ExpandDims(., 2) (Pool3DForms, nn.Conv1d)
  // expand_new_axes: the ExpandDims chain the next node written reads instead of its input 0.
  std::optional<std::string> expanded_input_;
  int64_t uid_ = 0;
};

}  // namespace

std::string default_data_location(const MindirOptions& options, size_t index) {
  return (options.file_stem.empty() ? std::string("model") : options.file_stem) +
         "_variables/data_" + std::to_string(index);
}

MindirExport export_mindir(const CellReport& report, std::span<const runtime::ParamState> params,
                           const MindirOptions& options) {
  Writer w(report, params);
  return w.run(options);
}

MindirExport export_mindir(const CellReport& report, std::span<const runtime::ParamState> params) {
  MindirOptions options;
  options.split_threshold = UINT64_MAX;
  MindirExport out = export_mindir(report, params, options);
  if (out.errors.empty()) out.bytes = out.file.to_string();
  return out;
}

}  // namespace graphcore
