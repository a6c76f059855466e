// MindIR import (graphcore/mindir_import.h, docs/export.md "Import"): a ModelProto read back into
// the semantic graph. The operator of a `REF::<Prim>` node is found by reading the operator
// table's MindirDef rows backwards; shapes and FLOPs come from the registry's rule of
// `ops.<Prim>` (MindSpore's primitive classes), checked against the file's abstracts.
#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "graphcore/checked.h"
#include "graphcore/mindir_import.h"
#include "graphcore/opdef.h"
#include "graphcore/registry.h"
#include "graphcore_proto/mind_ir.pb.h"

namespace graphcore {

namespace {

namespace pb = cellscope::mindir;

// A problem that stops the import: the message says what is wrong where.
struct ImportError {
  std::string message;
};

// ---- Wire-level checks: name what is wrong before (or instead of) protobuf's parse ----------

// Reads a varint at `pos`; nullopt when the bytes end inside it or it is longer than 10 bytes.
std::optional<uint64_t> varint(std::string_view b, size_t* pos) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (*pos >= b.size()) return std::nullopt;
    const auto c = static_cast<unsigned char>(b[(*pos)++]);
    if (shift == 63 && (c & 0x7e) != 0) return std::nullopt;
    v |= static_cast<uint64_t>(c & 0x7f) << shift;
    if ((c & 0x80) == 0) return v;
  }
  return std::nullopt;
}

// The ModelProto's top-level fields must be the ones MindIR defines with their wire types, and
// every length must fit in the file. Throws "not a MindIR file" / "truncated" messages.
void check_top_level(std::string_view b) {
  if (b.empty()) throw ImportError{"not a MindIR file: it is empty"};
  // Field number -> wire type (0 varint, 2 length-delimited) of ModelProto's fields 1-14.
  static const std::map<uint64_t, int> kFields = {{1, 2},  {2, 2},  {3, 2},  {4, 2}, {5, 2},
                                                  {6, 2},  {7, 2},  {8, 2},  {9, 2}, {10, 0},
                                                  {11, 2}, {12, 2}, {13, 0}, {14, 2}};
  size_t pos = 0;
  bool graph = false;
  while (pos < b.size()) {
    const size_t at = pos;
    auto tag = varint(b, &pos);
    if (!tag) {
      throw ImportError{at == 0 ? "not a MindIR file: it does not start with a protobuf field"
                                : "truncated: the file ends inside a field tag at byte " +
                                      std::to_string(at)};
    }
    const uint64_t field = *tag >> 3;
    const int wire = static_cast<int>(*tag & 7);
    auto it = kFields.find(field);
    if (it == kFields.end() || it->second != wire) {
      throw ImportError{"not a MindIR file: byte " + std::to_string(at) + " starts field " +
                        std::to_string(field) + " (wire type " + std::to_string(wire) +
                        "), which a MindIR ModelProto does not have"};
    }
    if (wire == 0) {
      if (!varint(b, &pos))
        throw ImportError{"truncated: the file ends inside field " + std::to_string(field)};
      continue;
    }
    auto len = varint(b, &pos);
    if (!len) throw ImportError{"truncated: the file ends inside field " + std::to_string(field)};
    if (*len > b.size() - pos) {
      throw ImportError{"truncated: field " + std::to_string(field) + " at byte " +
                        std::to_string(at) + " declares " + std::to_string(*len) +
                        " bytes, the file has " + std::to_string(b.size() - pos) + " left"};
    }
    pos += static_cast<size_t>(*len);
    graph = graph || field == 7;
  }
  if (!graph) throw ImportError{"not a MindIR file: it has no graph (ModelProto field 7)"};
}

// ---- Values ------------------------------------------------------------------------------------

std::optional<DType> dtype_of(int32_t t) {
  switch (t) {
    case pb::Tensor::FLOAT:
      return DType::Float32;
    case pb::Tensor::FLOAT16:
      return DType::Float16;
    case pb::Tensor::BFLOAT16:
      return DType::BFloat16;
    case pb::Tensor::DOUBLE:
    case pb::Tensor::FLOAT64:
      return DType::Float64;
    case pb::Tensor::INT8:
      return DType::Int8;
    case pb::Tensor::INT16:
      return DType::Int16;
    case pb::Tensor::INT32:
      return DType::Int32;
    case pb::Tensor::INT64:
      return DType::Int64;
    case pb::Tensor::UINT8:
      return DType::UInt8;
    case pb::Tensor::UINT32:
      return DType::UInt32;
    case pb::Tensor::BOOL:
      return DType::Bool;
    default:
      return std::nullopt;
  }
}

// A TensorProto's type; `what` names it in errors. Dims must be >= 0 (MindSpore writes -1 for a
// dynamic dimension: unknown here) and their product must fit in int64.
TensorType tensor_type(const pb::Tensor& t, const std::string& what) {
  TensorType type;
  auto dt = dtype_of(t.data_type());
  type.dtype = dt.value_or(DType::Unknown);
  std::vector<int64_t> known;
  for (int64_t d : t.dims()) {
    if (d < -2) throw ImportError{what + " has dimension " + std::to_string(d)};
    type.shape.dims.push_back(d >= 0 ? Dim::known(d) : Dim::unknown());
    if (d >= 0) known.push_back(d);
  }
  if (!checked_numel(known)) {
    throw ImportError{what + "'s dimensions " + type.shape.str() + " overflow 64 bits"};
  }
  return type;
}

// A value a NodeProto output stands for.
struct Val {
  // Func: a sub-graph (`functions`) used as a value; Partial: a sub-graph with its first
  // arguments bound (items); Switch: items = {condition, true branch, false branch}.
  enum class K : uint8_t { Tensor, Param, Const, Tuple, Monad, Func, Partial, Switch, Other };
  K k = K::Other;
  ValueRef ref;                         // Tensor
  std::string param;                    // Param: the parameter name; Func, Partial: the graph
  const pb::Attribute* attr = nullptr;  // Const: the `value` attribute
  std::vector<Val> items;               // Tuple, Partial, Switch
};

// A number, string or integer list from an attribute value (Constant or primitive attribute).
std::optional<AttrValue> attr_value(const pb::Attribute& a) {
  switch (a.type()) {
    case pb::Attribute::BOOL:
      return AttrValue{a.i() != 0};
    case pb::Attribute::INT64:
      return AttrValue{static_cast<int64_t>(a.i())};
    case pb::Attribute::FLOAT:
      return AttrValue{static_cast<double>(a.f())};
    case pb::Attribute::DOUBLE:
      return AttrValue{a.d()};
    case pb::Attribute::STRING:
      return AttrValue{std::string(a.s())};
    case pb::Attribute::TUPLE:
    case pb::Attribute::LIST: {
      std::vector<int64_t> v;
      for (const auto& e : a.values()) {
        if (e.ints_size() == 1) {
          v.push_back(e.ints(0));
        } else if (e.type() == pb::Attribute::INT64 || e.type() == pb::Attribute::BOOL) {
          v.push_back(e.i());
        } else {
          return std::nullopt;
        }
      }
      for (int64_t x : a.ints()) v.push_back(x);
      return AttrValue{std::move(v)};
    }
    default:
      // Integer types MindSpore numbers 2-6 and 12-13 travel in `i` too.
      if (a.has_i()) return AttrValue{static_cast<int64_t>(a.i())};
      return std::nullopt;
  }
}

// The registry's view of an attribute value.
ArgValue arg_of(const AttrValue& v) {
  ArgValue a;
  if (const auto* b = std::get_if<bool>(&v)) {
    a.kind = ArgValue::Kind::Bool;
    a.b = *b;
    a.i = *b ? 1 : 0;
  } else if (const auto* i = std::get_if<int64_t>(&v)) {
    a.kind = ArgValue::Kind::Int;
    a.i = *i;
    a.f = static_cast<double>(*i);
    a.dim = Dim::known(*i);
  } else if (const auto* d = std::get_if<double>(&v)) {
    a.kind = ArgValue::Kind::Float;
    a.f = *d;
  } else if (const auto* s = std::get_if<std::string>(&v)) {
    a.kind = ArgValue::Kind::Str;
    a.s = *s;
  } else if (const auto* l = std::get_if<std::vector<int64_t>>(&v)) {
    a.kind = ArgValue::Kind::Sequence;
    for (int64_t x : *l) a.items.push_back(arg_of(AttrValue{x}));
  } else {
    a.kind = ArgValue::Kind::None;
  }
  a.explicit_arg = true;
  return a;
}

// A registry default ("None", "1", "'valid'", "(1, 1)", "True", "1e-05") as an ArgValue.
ArgValue default_arg(std::string_view src) {
  ArgValue a;
  if (src.empty()) return a;  // Missing
  if (src == "None") {
    a.kind = ArgValue::Kind::None;
    return a;
  }
  if (src == "True" || src == "False") return arg_of(AttrValue{src == "True"});
  if (src.front() == '\'' || src.front() == '"') {
    return arg_of(AttrValue{std::string(src.substr(1, src.size() >= 2 ? src.size() - 2 : 0))});
  }
  if (src.front() == '(' || src.front() == '[') {
    std::vector<int64_t> v;
    std::string cur;
    for (char c : src.substr(1)) {
      if (std::isdigit(static_cast<unsigned char>(c)) || c == '-') {
        cur += c;
      } else if (!cur.empty()) {
        v.push_back(std::stoll(cur));
        cur.clear();
      }
    }
    return arg_of(AttrValue{std::move(v)});
  }
  try {
    size_t used = 0;
    const std::string s(src);
    if (s.find_first_of(".eE") == std::string::npos) {
      const int64_t i = std::stoll(s, &used);
      if (used == s.size()) return arg_of(AttrValue{i});
    } else {
      const double d = std::stod(s, &used);
      if (used == s.size()) return arg_of(AttrValue{d});
    }
  } catch (const std::exception&) {
  }
  a.kind = ArgValue::Kind::Other;
  a.s = std::string(src);
  return a;
}

const ArgValue& missing() {
  static const ArgValue kMissing;
  return kMissing;
}

// Runs a registry entry's constructor and shape rule on arguments bound by name.
class RuleInit final : public InitContext {
 public:
  RuleInit(const std::map<std::string, ArgValue, std::less<>>& args, const MindirImportOptions& o)
      : args_(args), o_(o) {}
  const ArgValue& arg(std::string_view name) const override {
    auto it = args_.find(name);
    return it == args_.end() ? missing() : it->second;
  }
  Version version() const override { return o_.mindspore_version; }
  std::string_view target() const override { return o_.target; }
  void error(std::string_view, std::string message, std::string_view) override {
    if (error_.empty()) error_ = std::move(message);
  }
  void warning(std::string_view, std::string, std::string_view) override {}
  bool failed() const override { return !error_.empty(); }
  void suggest_init_value(std::string_view, std::string) override {}
  void add_parameter(std::string, Shape, DType, bool) override {}
  void set_attr(std::string name, AttrValue value) override {
    attrs.push_back(Attr{std::move(name), std::move(value)});
  }
  std::vector<Attr> attrs;
  std::string error_;

 private:
  const std::map<std::string, ArgValue, std::less<>>& args_;
  const MindirImportOptions& o_;
};

class RuleCall final : public CallContext {
 public:
  RuleCall(const std::map<std::string, ArgValue, std::less<>>& call,
           const std::map<std::string, ArgValue, std::less<>>& init,
           const std::vector<Attr>& init_attrs, const MindirImportOptions& o)
      : call_(call), init_(init), init_attrs_(init_attrs), o_(o) {}
  const ArgValue& arg(std::string_view name) const override {
    auto it = call_.find(name);
    return it == call_.end() ? missing() : it->second;
  }
  Version version() const override { return o_.mindspore_version; }
  std::string_view target() const override { return o_.target; }
  void error(std::string_view, std::string message, std::string_view) override {
    if (error_.empty()) error_ = std::move(message);
  }
  void warning(std::string_view, std::string, std::string_view) override {}
  bool failed() const override { return !error_.empty(); }
  void suggest_init_value(std::string_view, std::string) override {}
  const ArgValue& init_arg(std::string_view name) const override {
    auto it = init_.find(name);
    return it == init_.end() ? missing() : it->second;
  }
  const AttrValue* init_attr(std::string_view name) const override {
    for (const Attr& a : init_attrs_) {
      if (a.name == name) return &a.value;
    }
    return nullptr;
  }
  const ParamInfo* param(std::string_view) const override { return nullptr; }
  const std::vector<ArgValue>& varargs() const override { return varargs_; }
  void add_output(TensorType t) override { outputs.push_back(std::move(t)); }
  void set_attr(std::string, AttrValue) override {}
  void set_flops(double f) override { flops = f; }
  void set_op(std::string_view) override {}
  std::vector<TensorType> outputs;
  double flops = 0;
  std::string error_;

 private:
  const std::map<std::string, ArgValue, std::less<>>& call_;
  const std::map<std::string, ArgValue, std::less<>>& init_;
  const std::vector<Attr>& init_attrs_;
  const MindirImportOptions& o_;
  std::vector<ArgValue> varargs_;
};

// The semantic operator of each MindSpore primitive: the operator table's MindirDef rows read
// backwards (the first row, by operator name, that names the primitive, as its `primitive` or
// the `also_primitive` its expansion writes).
const std::map<std::string, const OpDef*, std::less<>>& primitive_ops() {
  static const auto kMap = [] {
    std::map<std::string, const OpDef*, std::less<>> m;
    for (const OpDef& d : all_ops()) {
      // Written as several primitives, none of which alone is the operator (ReduceVar, Roll,
      // ClipByValue).
      if (d.mindir == nullptr || mindir_expansion_is_composite(d.mindir->expansion)) continue;
      m.emplace(std::string(d.mindir->primitive), &d);
      if (!d.mindir->also_primitive.empty()) m.emplace(std::string(d.mindir->also_primitive), &d);
    }
    return m;
  }();
  return kMap;
}

// Primitives that carry no computation: monads and tuple plumbing, resolved while reading.
bool is_control_flow(std::string_view prim) {
  return prim == "Switch" || prim == "Partial" || prim == "SwitchLayer" || prim == "call" ||
         prim == "While";
}

std::string lower(std::string s) {
  std::ranges::transform(s, s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// "Default/layer1-SequentialCell/0-Bottleneck/conv1-Conv2d/Conv2D-op3" (MindSpore) or
// "Default/layer1.0.conv1/Conv2D" (Cellscope): the Cell path and the classes on the way.
std::string scope_of(std::string_view domain, std::map<std::string, std::string>* classes) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= domain.size()) {
    size_t end = domain.find('/', start);
    if (end == std::string_view::npos) end = domain.size();
    parts.emplace_back(domain.substr(start, end - start));
    start = end + 1;
  }
  if (!parts.empty()) parts.pop_back();  // the operator itself
  if (!parts.empty() && parts.front() == "Default") parts.erase(parts.begin());
  std::string path;
  for (const std::string& p : parts) {
    const size_t dash = p.find('-');
    const std::string name = p.substr(0, dash);
    if (name.empty()) continue;
    path += (path.empty() ? "" : ".") + name;
    if (dash != std::string::npos && classes != nullptr) (*classes)[path] = p.substr(dash + 1);
  }
  return path;
}

// The text after the first ':' (MindSpore's ParseParameterName).
std::string bare_name(const std::string& name) {
  const size_t colon = name.find(':');
  return colon == std::string::npos ? name : name.substr(colon + 1);
}

// The class in "<n>_<m>_<module>_<Class>_construct_<k>" or "cellscope_<Class>_construct".
std::string class_of(const std::string& graph) {
  const size_t c = graph.rfind("_construct");
  if (c == std::string::npos) return graph;
  const size_t u = graph.rfind('_', c == 0 ? 0 : c - 1);
  return u == std::string::npos ? graph.substr(0, c) : graph.substr(u + 1, c - u - 1);
}

class Reader {
 public:
  Reader(const pb::Model& model, std::string file, const MindirImportOptions& options,
         MindirImport& out)
      : model_(model), file_(std::move(file)), options_(options), out_(out) {}

  void run() {
    const pb::Graph& g = model_.graph();
    if (!g.has_name() || g.name().empty()) throw ImportError{"the graph has no name"};
    for (const auto& p : model_.primitives()) {
      if (!prims_.emplace(p.name(), &p).second) {
        throw ImportError{"primitive key '" + p.name() + "' is defined twice"};
      }
    }
    for (const auto& f : model_.functions()) {
      if (!functions_.emplace(f.name(), &f).second) {
        throw ImportError{"sub-graph '" + f.name() + "' is defined twice"};
      }
    }
    find_loops();
    CellReport& r = out_.report;
    r.name = class_of(g.name());
    r.class_name = r.name;
    r.file = file_;
    read_weights(g);
    read_inputs(g);
    out_.file_nodes = static_cast<size_t>(g.node_size());
    for (int i = 0; i < g.node_size(); ++i) read_node(i, g.node(i));
    // A row's tuple of which only its element is read: that element is the node's one output
    // (nn.LayerNorm, BatchNorm: the statistics are not part of the semantic graph).
    for (const auto& [index, item] : tuple_items_) {
      std::vector<TensorType>& outs = graph().nodes[index].outputs;
      if (all_items_.count(index) == 0 && outs.size() > 1) outs.resize(1);
    }
    read_outputs(g);
    for (const Node& n : graph().nodes) r.flops += n.flops;
    r.compiled = true;
    summarise_notes();
    out_.ok = true;
  }

 private:
  Graph& graph() { return out_.report.graph; }

  void note(std::string message) {
    Diagnostic d;
    d.file = file_;
    d.severity = Severity::Information;
    d.code = "mindir-import-note";
    d.message = std::move(message);
    out_.notes.push_back(std::move(d));
  }

  // ---- Weights and inputs --------------------------------------------------------------------

  void read_weights(const pb::Graph& g) {
    for (int i = 0; i < g.parameter_size(); ++i) {
      const pb::Tensor& t = g.parameter(i);
      const std::string name =
          t.has_ref_key() && !t.ref_key().empty() ? t.ref_key() : bare_name(t.name());
      const std::string what = "weight " + std::to_string(i) + " (" + name + ")";
      if (name.empty()) throw ImportError{"weight " + std::to_string(i) + " has no name"};
      TensorType type = tensor_type(t, what);
      check_data(t, type, what);
      ParamInfo p;
      p.name = name;
      p.shape = type.shape;
      p.dtype = type.dtype;
      // MindIR does not say which weights train; BatchNorm's statistics never do.
      p.trainable = !(name.ends_with("moving_mean") || name.ends_with("moving_variance"));
      const Dim n = p.shape.num_elements();
      if (n.is_known()) {
        auto total = checked_add<int64_t>(out_.report.total_params, n.value());
        if (!total) throw ImportError{what + ": the parameter count overflows"};
        out_.report.total_params = *total;
        if (p.trainable) out_.report.trainable_params += n.value();
      }
      if (!params_.emplace(t.name(), name).second || !params_.emplace(name, name).second) {
        if (t.name() != name) throw ImportError{what + " is defined twice"};
      }
      if (options_.keep_weights) {
        out_.weights.push_back(MindirWeight{name, type, t.has_raw_data() ? t.raw_data() : ""});
      }
      out_.report.params.push_back(std::move(p));
    }
  }

  // raw_data must hold dims * element size bytes; external data must lie inside its file.
  void check_data(const pb::Tensor& t, const TensorType& type, const std::string& what) {
    std::vector<int64_t> dims;
    for (const Dim& d : type.shape.dims) dims.push_back(d.is_known() ? d.value() : 0);
    const size_t element = dtype_size(type.dtype);
    const auto count = checked_numel(dims);
    const auto bytes = count ? checked_bytes(*count, element) : std::nullopt;
    if (!bytes) throw ImportError{what + ": its size overflows"};
    if (t.has_raw_data() && element != 0 && t.raw_data().size() != *bytes) {
      throw ImportError{what + ": raw_data has " + std::to_string(t.raw_data().size()) +
                        " bytes, its dims " + type.shape.str() + " x " + std::to_string(element) +
                        " bytes need " + std::to_string(*bytes)};
    }
    if (!t.has_external_data()) return;
    const auto& ext = t.external_data();
    const std::string& loc = ext.location();
    const std::filesystem::path rel(loc);
    if (loc.empty() || rel.is_absolute() ||
        std::ranges::any_of(rel, [](const auto& part) { return part == ".."; })) {
      throw ImportError{what + ": external data location '" + loc +
                        "' is not a file beside the model"};
    }
    if (ext.offset() < 0 || ext.length() < 0) {
      throw ImportError{what + ": external data has a negative offset or length"};
    }
    if (element != 0 && static_cast<uint64_t>(ext.length()) != *bytes) {
      throw ImportError{what + ": external data has " + std::to_string(ext.length()) +
                        " bytes, its dims need " + std::to_string(*bytes)};
    }
    auto end = checked_add<int64_t>(ext.offset(), ext.length());
    if (!end) throw ImportError{what + ": external data offset + length overflows"};
    if (options_.folder.empty()) return;
    std::error_code ec;
    const auto path = options_.folder / rel;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) throw ImportError{what + ": external data file '" + loc + "' cannot be read"};
    if (static_cast<uint64_t>(*end) > size) {
      throw ImportError{what + ": external data [" + std::to_string(ext.offset()) + ", " +
                        std::to_string(*end) + ") lies outside '" + loc + "' (" +
                        std::to_string(size) + " bytes)"};
    }
  }

  void read_inputs(const pb::Graph& g) {
    for (int i = 0; i < g.input_size(); ++i) {
      const pb::ValueInfo& vi = g.input(i);
      const std::string name = bare_name(vi.name());
      if (params_.count(vi.name()) != 0) continue;  // a weight also listed as an input
      Node n;
      n.kind = NodeKind::Input;
      n.op = "Input";
      n.id = name.empty() ? "input" + std::to_string(i) : name;
      n.file = file_;
      TensorType type;
      if (vi.tensor_size() > 0) {
        type = tensor_type(vi.tensor(0), "input " + n.id);
      } else {
        type.shape = Shape::unranked();
        type.dtype = DType::Unknown;
        note("input " + n.id + " records no tensor type");
      }
      n.outputs.push_back(type);
      out_.report.inputs.push_back(NamedTensor{n.id, type});
      define(vi.name(), Val{Val::K::Tensor, add_node(std::move(n)), {}, nullptr, {}});
    }
  }

  ValueRef add_node(Node n) {
    const auto index = static_cast<uint32_t>(graph().nodes.size());
    ids_.insert(n.id);
    graph().nodes.push_back(std::move(n));
    return ValueRef{index, 0};
  }

  void define(const std::string& name, Val v) {
    if (!values_.emplace(name, std::move(v)).second) {
      throw ImportError{"value '" + name + "' is defined twice"};
    }
  }

  std::string unique_id(const std::string& base) {
    if (ids_.count(base) == 0) return base;
    for (int k = 1;; ++k) {
      std::string id = base + "_" + std::to_string(k);
      if (ids_.count(id) == 0) return id;
    }
  }

  // ---- Values as graph inputs ----------------------------------------------------------------

  // A tensor operand: a node output; a weight read as data (a Parameter node, once per weight);
  // a constant (a Constant node). nullopt for anything else.
  std::optional<ValueRef> tensor_ref(const Val& v, const std::string& scope) {
    switch (v.k) {
      case Val::K::Tensor:
        return v.ref;
      case Val::K::Param: {
        auto it = param_nodes_.find(v.param);
        if (it != param_nodes_.end()) return it->second;
        Node n;
        n.kind = NodeKind::Parameter;
        n.op = "Parameter";
        n.id = unique_id(v.param);
        n.params.push_back(v.param);
        n.file = file_;
        n.scope = scope;
        for (const ParamInfo& p : out_.report.params) {
          if (p.name == v.param) n.outputs.push_back(TensorType{p.shape, p.dtype});
        }
        const ValueRef ref = add_node(std::move(n));
        param_nodes_.emplace(v.param, ref);
        return ref;
      }
      case Val::K::Const: {
        auto it = const_nodes_.find(v.attr);
        if (it != const_nodes_.end()) return it->second;
        Node n;
        n.kind = NodeKind::Constant;
        n.op = "Constant";
        n.id = unique_id(scope.empty() ? "Constant" : scope + "/Constant");
        n.file = file_;
        n.scope = scope;
        if (v.attr->type() == pb::Attribute::TENSORS && v.attr->tensors_size() > 0) {
          const pb::Tensor& t = v.attr->tensors(0);
          const TensorType type = tensor_type(t, "constant");
          check_data(t, type, "constant " + n.id);
          n.outputs.push_back(type);
          n.constant_values = constant_values(t, type);
        } else if (auto a = attr_value(*v.attr)) {
          TensorType type;
          type.dtype = std::holds_alternative<double>(*a) ? DType::Float32
                       : std::holds_alternative<bool>(*a) ? DType::Bool
                                                          : DType::Int64;
          n.outputs.push_back(type);
          n.attrs.push_back(Attr{"value", *a});
        } else {
          return std::nullopt;
        }
        const ValueRef ref = add_node(std::move(n));
        const_nodes_.emplace(v.attr, ref);
        return ref;
      }
      default:
        return std::nullopt;
    }
  }

  // A constant tensor's elements (the runtime fills the constant from them), up to 1M.
  static std::shared_ptr<const std::vector<double>> constant_values(const pb::Tensor& t,
                                                                    const TensorType& type) {
    const std::string& raw = t.raw_data();
    const size_t element = dtype_size(type.dtype);
    if (element == 0 || raw.empty() || raw.size() / element > (1u << 20)) return nullptr;
    const size_t n = raw.size() / element;
    auto values = std::make_shared<std::vector<double>>(n);
    for (size_t i = 0; i < n; ++i) {
      const char* p = raw.data() + i * element;
      double x = 0;
      switch (type.dtype) {
        case DType::Float32: {
          float f = 0;
          std::memcpy(&f, p, 4);
          x = f;
          break;
        }
        case DType::Float64:
          std::memcpy(&x, p, 8);
          break;
        case DType::Int32: {
          int32_t v = 0;
          std::memcpy(&v, p, 4);
          x = v;
          break;
        }
        case DType::Int64: {
          int64_t v = 0;
          std::memcpy(&v, p, 8);
          x = static_cast<double>(v);
          break;
        }
        case DType::Bool:
        case DType::UInt8:
          x = static_cast<unsigned char>(*p);
          break;
        default:
          return nullptr;
      }
      (*values)[i] = x;
    }
    return values;
  }

  // The registry's view of a value (shape rules read tensors' types and constants' values).
  ArgValue arg_of_val(const Val& v) {
    ArgValue a;
    a.explicit_arg = true;
    switch (v.k) {
      case Val::K::Tensor:
        a.kind = ArgValue::Kind::Tensor;
        a.tensor = graph().nodes[v.ref.node].outputs.at(v.ref.output);
        return a;
      case Val::K::Param:
        a.kind = ArgValue::Kind::Tensor;
        for (const ParamInfo& p : out_.report.params) {
          if (p.name == v.param) a.tensor = TensorType{p.shape, p.dtype};
        }
        return a;
      case Val::K::Const:
        if (v.attr->type() == pb::Attribute::TENSORS && v.attr->tensors_size() > 0) {
          a.kind = ArgValue::Kind::Tensor;
          a.tensor = tensor_type(v.attr->tensors(0), "constant");
          return a;
        }
        if (auto x = attr_value(*v.attr)) return arg_of(*x);
        a.kind =
            v.attr->type() == pb::Attribute::NONE ? ArgValue::Kind::None : ArgValue::Kind::Unknown;
        return a;
      case Val::K::Tuple:  // a MakeTuple of operands (Stack's, Concat's tensors)
        a.kind = ArgValue::Kind::Sequence;
        for (const Val& item : v.items) a.items.push_back(arg_of_val(item));
        return a;
      default:
        a.kind = ArgValue::Kind::Unknown;
        return a;
    }
  }

  // ---- Nodes ---------------------------------------------------------------------------------

  static std::vector<TensorType> abstract_of(const pb::Node& n) {
    std::vector<TensorType> out;
    for (const auto& a : n.attribute()) {
      if (a.name() != "shape") continue;
      if (a.type() == pb::Attribute::TENSORS) {
        for (const auto& t : a.tensors()) out.push_back(tensor_type(t, "node abstract"));
      } else if (a.type() == pb::Attribute::TUPLE) {
        for (const auto& e : a.values()) {
          if (e.type() == pb::Attribute::TENSORS && e.tensors_size() > 0)
            out.push_back(tensor_type(e.tensors(0), "node abstract"));
        }
      }
    }
    return out;
  }

  void read_node(int index, const pb::Node& n, const std::string& graph_name = {}) {
    const std::string where = (graph_name.empty() ? "" : "sub-graph " + graph_name + ", ") +
                              "node " + std::to_string(index) + " (" + n.name() + ")";
    if (n.output_size() == 0 && !n.has_name()) throw ImportError{where + " has no output name"};
    const std::string key = n.output_size() > 0 ? n.output(0) : n.name();
    if (n.op_type() == "Constant") {
      if (n.attribute_size() == 0) throw ImportError{where + ": a Constant without a value"};
      const pb::Attribute& v = n.attribute(0);
      const bool monad = v.type() == pb::Attribute::UMONAD || v.type() == pb::Attribute::IOMONAD;
      define(key, Val{monad ? Val::K::Monad : Val::K::Const, {}, {}, &v, {}});
      if (n.has_name() && n.name() != key) aliases(n.name(), key);
      return;
    }
    std::vector<Val> in;
    for (const std::string& name : n.input()) {
      auto it = values_.find(name);
      if (it != values_.end()) {
        in.push_back(it->second);
        continue;
      }
      auto p = params_.find(name);
      if (p != params_.end()) {
        in.push_back(Val{Val::K::Param, {}, p->second, nullptr, {}});
        continue;
      }
      if (functions_.count(name) != 0) {
        in.push_back(Val{Val::K::Func, {}, name, nullptr, {}});  // a sub-graph as a value
        continue;
      }
      if (prims_.count(name) != 0) {
        in.push_back(Val{});  // a primitive used as a value
        continue;
      }
      std::string msg = where;
      msg.append(" references unknown input '").append(name).append("'");
      throw ImportError{msg};
    }
    // The primitive: `REF::<key>` of a PrimitiveProto, `REF::<graph>` of a function, or a bare
    // primitive name.
    const std::string& op_type = n.op_type();
    const pb::Primitive* prim = nullptr;
    std::string prim_name;
    if (op_type.starts_with("REF::")) {
      const std::string ref = op_type.substr(5);
      auto it = prims_.find(ref);
      if (it != prims_.end()) {
        prim = it->second;
        prim_name = prim->op_type();
      } else if (functions_.count(ref) != 0) {
        // A call of a sub-graph.
        define(key, call(where, n, Val{Val::K::Func, {}, ref, nullptr, {}}, in));
        return;
      } else if (auto callee = values_.find(ref); callee != values_.end()) {
        // A call of a computed function value (Switch's chosen branch, a Partial).
        const Val f = callee->second;
        define(key, call(where, n, f, in));
        return;
      } else {
        throw ImportError{where + " refers to primitive '" + ref +
                          "', which the file does not define"};
      }
    } else if (!op_type.empty()) {
      prim_name = op_type;
    } else {
      throw ImportError{where + " has no op_type"};
    }
    Val v = apply(where, n, prim, prim_name, in);
    define(key, std::move(v));
  }

  void aliases(const std::string& name, const std::string& key) {
    auto it = values_.find(key);
    if (it != values_.end()) values_.emplace(name, it->second);
  }

  Val apply(const std::string& where, const pb::Node& n, const pb::Primitive* prim,
            const std::string& name, const std::vector<Val>& in) {
    // Monads and tuple plumbing (MindSpore's own exports): resolved, no node.
    if (name == "Load" || name == "Depend") {
      if (in.empty()) throw ImportError{where + ": " + name + " has no input"};
      return in[0];
    }
    if (name == "UpdateState") return Val{Val::K::Monad, {}, {}, nullptr, {}};
    if (name == "MakeTuple") return Val{Val::K::Tuple, {}, {}, nullptr, in};
    if (name == "TupleGetItem") {
      if (in.size() != 2 || in[1].k != Val::K::Const) {
        throw ImportError{where + ": TupleGetItem needs a tuple and a constant index"};
      }
      auto idx = attr_value(*in[1].attr);
      const auto* i = idx ? std::get_if<int64_t>(&*idx) : nullptr;
      if (i == nullptr) throw ImportError{where + ": TupleGetItem's index is not an integer"};
      if (in[0].k == Val::K::Tuple) {
        if (*i < 0 || static_cast<size_t>(*i) >= in[0].items.size())
          throw ImportError{where + ": TupleGetItem index " + std::to_string(*i) + " out of range"};
        return in[0].items[static_cast<size_t>(*i)];
      }
      if (in[0].k == Val::K::Tensor) {
        // A primitive returning a tuple whose element `tuple_item` is the operator's output.
        auto t = tuple_items_.find(in[0].ref.node);
        if (t != tuple_items_.end()) {
          if (*i == t->second) return in[0];
          // Another element read (the ops.LayerNorm primitive's mean and variance): the node
          // keeps every element of its tuple as an output, as the evaluator records the
          // primitive. Unread, they are not part of the semantic graph (BatchNorm's statistics).
          const Node& src = graph().nodes[in[0].ref.node];
          if (t->second != 0 || *i < 0 || static_cast<size_t>(*i) >= src.outputs.size()) {
            return Val{};
          }
          all_items_.insert(in[0].ref.node);
          return Val{
              Val::K::Tensor, ValueRef{in[0].ref.node, static_cast<uint32_t>(*i)}, {}, nullptr, {}};
        }
        const Node& src = graph().nodes[in[0].ref.node];
        if (*i >= 0 && static_cast<size_t>(*i) < src.outputs.size()) {
          return Val{
              Val::K::Tensor, ValueRef{in[0].ref.node, static_cast<uint32_t>(*i)}, {}, nullptr, {}};
        }
      }
      return Val{};
    }
    if (name == "BiasAdd") {
      if (auto folded = fold_bias(n, in)) return *folded;
    }
    if (name == "Partial" && !in.empty() && in[0].k == Val::K::Func) {
      return Val{Val::K::Partial, {}, in[0].param, nullptr, {in.begin() + 1, in.end()}};
    }
    if (name == "Switch" && in.size() == 3 && callable(in[1]) && callable(in[2])) {
      return Val{Val::K::Switch, {}, {}, nullptr, in};
    }
    if (is_control_flow(name)) {
      ++control_flow_;
      return opaque(n, name, in);
    }
    // MindSpore's scalar forms of Mul / Div (`x * 2.0` is Muls(x, 2.0)): the same operator.
    const std::string row = name == "Muls" ? "Mul" : name == "Divs" ? "Div" : name;
    auto it = primitive_ops().find(row);
    if (it == primitive_ops().end()) {
      const OpDef* same = find_op(name);
      if (same != nullptr && !same->backward && !same->pass_only) {
        ++unread_[name];
        return opaque(n, name, in, same);
      }
      ++opaque_[name];
      return opaque(n, name, in);
    }
    return mapped(where, n, prim, *it->second, in);
  }

  // The sub-graphs on a cycle of references (a sub-graph naming another as its op_type or as an
  // input, e.g. in a Partial): MindSpore writes a `while` on a tensor as a header graph whose
  // body calls the header again.
  void find_loops() {
    std::map<std::string, std::set<std::string>> refs;
    for (const auto& [name, f] : functions_) {
      auto& out = refs[name];
      for (const auto& node : f->node()) {
        if (node.op_type().starts_with("REF::")) {
          const std::string ref = node.op_type().substr(5);
          if (functions_.count(ref) != 0) out.insert(ref);
        }
        for (const auto& in : node.input())
          if (functions_.count(in) != 0) out.insert(in);
      }
    }
    for (const auto& [name, f] : functions_) {
      std::set<std::string> seen;
      std::vector<std::string> todo(refs[name].begin(), refs[name].end());
      while (!todo.empty()) {
        const std::string at = todo.back();
        todo.pop_back();
        if (at == name) {
          loops_.insert(name);
          break;
        }
        if (!seen.insert(at).second) continue;
        todo.insert(todo.end(), refs[at].begin(), refs[at].end());
      }
    }
  }

  static bool callable(const Val& v) {
    return v.k == Val::K::Func || v.k == Val::K::Partial || v.k == Val::K::Switch;
  }

  // A call of a sub-graph value: a sub-graph is inlined (its nodes read as if they were the
  // caller's, its inputs bound to the arguments); a Switch imports both branches and joins them
  // in a Merge node, as the evaluator does for an `if` on a tensor. A loop (a sub-graph that
  // calls itself, as MindSpore writes `while`) is not unrolled: an opaque node and a note.
  Val call(const std::string& where, const pb::Node& n, const Val& callee,
           const std::vector<Val>& args) {
    switch (callee.k) {
      case Val::K::Func:
        return inline_graph(where, n, callee.param, args);
      case Val::K::Partial: {
        std::vector<Val> all = callee.items;
        all.insert(all.end(), args.begin(), args.end());
        return inline_graph(where, n, callee.param, all);
      }
      case Val::K::Switch: {
        const Val yes = call(where, n, callee.items[1], args);
        const Val no = call(where, n, callee.items[2], args);
        return merge(n, callee.items[0], yes, no, 0);
      }
      default:
        ++control_flow_;
        return opaque(n, "call", args);
    }
  }

  Val inline_graph(const std::string& where, const pb::Node& n, const std::string& name,
                   const std::vector<Val>& args) {
    auto it = functions_.find(name);
    if (it == functions_.end())
      throw ImportError{where + " calls unknown sub-graph '" + name + "'"};
    const pb::Graph& f = *it->second;
    // A loop, a chain deeper than 64 or more than 10,000 inlined calls (a file whose sub-graphs
    // call each other twice per level would otherwise grow exponentially): an opaque call.
    if (loops_.count(name) != 0 || inlining_.size() >= 64 || inlined_ >= 10000) {
      looped_.insert(name);
      ++control_flow_;
      return opaque(n, "call", args);
    }
    if (static_cast<size_t>(f.input_size()) != args.size()) {
      note(where + ": sub-graph " + name + " takes " + std::to_string(f.input_size()) +
           " inputs, the call passes " + std::to_string(args.size()) + "; kept as an opaque node");
      ++control_flow_;
      return opaque(n, "call", args);
    }
    // The caller's values stay visible (MindSpore's sub-graphs read free variables and weights
    // of the graph that defines them); the sub-graph's own names are dropped after the call, so
    // a sub-graph called twice is read twice.
    auto saved = values_;
    for (int i = 0; i < f.input_size(); ++i)
      values_[f.input(i).name()] = args[static_cast<size_t>(i)];
    for (const pb::Tensor& t : f.parameter()) {
      const std::string bare =
          t.has_ref_key() && !t.ref_key().empty() ? t.ref_key() : bare_name(t.name());
      if (params_.count(bare) == 0) {
        std::string msg = "sub-graph ";
        msg.append(name).append(" reads weight '").append(bare);
        msg.append("', which the main graph does not declare");
        throw ImportError{msg};
      }
      params_.emplace(t.name(), bare);
    }
    inlining_.push_back(name);
    for (int i = 0; i < f.node_size(); ++i) {
      read_node(i, f.node(i), name);
    }
    inlining_.pop_back();
    if (f.output_size() == 0) throw ImportError{"sub-graph " + name + " has no output"};
    Val result;
    const std::string& out = f.output(0).name();
    if (auto v = values_.find(out); v != values_.end()) {
      result = v->second;
    } else if (auto p = params_.find(out); p != params_.end()) {
      result = Val{Val::K::Param, {}, p->second, nullptr, {}};
    } else {
      throw ImportError{"sub-graph " + name + ": its output '" + out + "' is not defined"};
    }
    values_ = std::move(saved);
    ++inlined_;
    return result;
  }

  // The two branches of a Switch joined as the evaluator joins an `if` on a tensor: Merge(cond,
  // a, b) per tensor (tuples element by element).
  Val merge(const pb::Node& n, const Val& cond, const Val& a, const Val& b, int depth) {
    if (a.k == Val::K::Tuple && b.k == Val::K::Tuple && a.items.size() == b.items.size() &&
        depth < 16) {
      Val t{Val::K::Tuple, {}, {}, nullptr, {}};
      for (size_t i = 0; i < a.items.size(); ++i)
        t.items.push_back(merge(n, cond, a.items[i], b.items[i], depth + 1));
      return t;
    }
    Node node;
    node.kind = NodeKind::Op;
    node.op = "Merge";
    node.api = "if";
    node.scope = scope_of(n.domain(), &graph().scope_classes);
    node.id =
        unique_id((node.scope.empty() ? std::string() : std::string(node.scope) + "/") + "Merge");
    node.file = file_;
    if (auto c = tensor_ref(cond, node.scope)) node.inputs.push_back(*c);
    auto ra = tensor_ref(a, node.scope);
    auto rb = tensor_ref(b, node.scope);
    if (!ra || !rb) {
      ++control_flow_;
      return opaque(n, "Switch", {cond, a, b});
    }
    node.inputs.push_back(*ra);
    node.inputs.push_back(*rb);
    const TensorType& ta = graph().nodes[ra->node].outputs.at(ra->output);
    const TensorType& tb = graph().nodes[rb->node].outputs.at(rb->output);
    TensorType out = ta;
    if (!(ta.shape == tb.shape)) out.shape = Shape::unranked();
    node.outputs.push_back(out);
    ++merges_;
    const ValueRef ref = add_node(std::move(node));
    return Val{Val::K::Tensor, ref, {}, nullptr, {}};
  }

  // A node kept as it is: its tensor inputs, its outputs from the file's abstract.
  Val opaque(const pb::Node& n, const std::string& name, const std::vector<Val>& in,
             const OpDef* def = nullptr) {
    std::map<std::string, std::string>& classes = graph().scope_classes;
    Node node;
    node.kind = NodeKind::Op;
    node.op = def != nullptr ? std::string(def->name) : name;
    node.api = "ops." + name;
    node.scope = scope_of(n.domain(), &classes);
    node.id =
        unique_id((node.scope.empty() ? std::string() : std::string(node.scope) + "/") + name);
    node.file = file_;
    for (const Val& v : in) {
      if (auto r = tensor_ref(v, node.scope)) node.inputs.push_back(*r);
    }
    node.outputs = abstract_of(n);
    if (node.outputs.empty()) {
      node.outputs.push_back(TensorType{Shape::unranked(), DType::Unknown});
    }
    const ValueRef ref = add_node(std::move(node));
    return Val{Val::K::Tensor, ref, {}, nullptr, {}};
  }

  // nn.Conv2d / nn.Dense's bias: MindSpore writes BiasAdd(op(x), bias) where the semantic graph
  // has one node reading `.bias`; the operator's MindirDef says which rows do (`bias`).
  std::optional<Val> fold_bias(const pb::Node& n, const std::vector<Val>& in) {
    if (in.size() < 2 || in[0].k != Val::K::Tensor || in[1].k != Val::K::Param) return std::nullopt;
    if (in[0].ref.output != 0 || in[0].ref.node + 1 != graph().nodes.size()) return std::nullopt;
    Node& prev = graph().nodes[in[0].ref.node];
    const OpDef* def = find_op(prev.op);
    if (prev.kind != NodeKind::Op || def == nullptr || def->mindir == nullptr ||
        def->mindir->bias.empty() || !in[1].param.ends_with(std::string(def->mindir->bias))) {
      return std::nullopt;
    }
    if (std::ranges::any_of(prev.params, [&](const std::string& p) {
          return p.ends_with(std::string(def->mindir->bias));
        })) {
      return std::nullopt;
    }
    prev.params.push_back(in[1].param);
    // The semantic layer's kernels add the bias only when the node says it has one (nn.Conv2d's
    // has_bias defaults to False, nn.Dense's to True).
    auto has_bias =
        std::ranges::find_if(prev.attrs, [](const Attr& a) { return a.name == "has_bias"; });
    if (has_bias != prev.attrs.end()) {
      has_bias->value = true;
    } else {
      prev.attrs.push_back(Attr{"has_bias", true});
    }
    const Dim numel = prev.outputs.at(0).shape.num_elements();
    if (numel.is_known()) prev.flops += static_cast<double>(numel.value());
    auto abs = abstract_of(n);
    if (!abs.empty()) prev.outputs[0] = abs[0];
    return in[0];
  }

  // A primitive with an operator row: its arguments back to inputs, weights and attributes.
  Val mapped(const std::string& where, const pb::Node& n, const pb::Primitive* prim,
             const OpDef& def, const std::vector<Val>& in) {
    const MindirDef& m = *def.mindir;
    if (m.expansion == MindirExpansion::PadForms) return pad_forms(where, n, prim, def, in);
    Node node;
    node.kind = NodeKind::Op;
    node.op = def.name;
    node.api = "ops." + std::string(m.primitive);
    node.scope = scope_of(n.domain(), &graph().scope_classes);
    node.file = file_;
    std::map<std::string, const pb::Attribute*> prim_attrs;
    if (prim != nullptr) {
      for (const auto& a : prim->attribute()) prim_attrs[a.name()] = &a;
    }
    const bool function = prim == nullptr || prim->prim_type() != pb::Primitive::PRIMITIVE;
    size_t next_input = 0;
    std::vector<std::optional<ValueRef>> data;
    std::optional<AttrValue> scalar;
    size_t scalar_slot = 0;
    const Val* scalar_val = nullptr;
    for (const MindirArg& arg : m.args) {
      if (arg.value == MindirValue::Require) continue;
      if (arg.value == MindirValue::AllInputs) {  // Concat's tensors: a MakeTuple's items
        const Val* t = next_input < in.size() ? &in[next_input] : nullptr;
        ++next_input;
        if (t == nullptr || t->k != Val::K::Tuple) {
          throw ImportError{where + ": " + std::string(arg.name) + " is not a tuple of tensors"};
        }
        for (const Val& item : t->items) {
          auto r = tensor_ref(item, node.scope);
          if (!r) {
            std::string msg = where;
            msg.append(": an element of ").append(arg.name).append(" is not a tensor");
            throw ImportError{msg};
          }
          data.emplace_back(*r);
        }
        continue;
      }
      const Val* v = nullptr;
      const pb::Attribute* a = nullptr;
      const bool operand = arg.value == MindirValue::Input || arg.value == MindirValue::Weight;
      if (function || operand) {
        if (next_input < in.size()) v = &in[next_input];
        ++next_input;
        if (v != nullptr && v->k == Val::K::Const) a = v->attr;
      } else {
        auto it = prim_attrs.find(std::string(arg.name));
        if (it != prim_attrs.end()) a = it->second;
      }
      if (operand) {
        if (v == nullptr) throw ImportError{where + ": " + std::string(arg.name) + " is missing"};
        // The row's weight when the parameter is named as the layer's (`gamma`, `x.gamma`) or
        // the row has no operand for it; any other parameter is an operand, a Parameter node
        // (ops.LayerNorm(...)(x, self.g, self.b), ops.matmul(x, self.w)): the writer's rule
        // read backwards.
        if (arg.value == MindirValue::Weight && v->k == Val::K::Param &&
            (arg.number < 0 || v->param == arg.key ||
             v->param.ends_with("." + std::string(arg.key)))) {
          node.params.push_back(v->param);
          continue;
        }
        const auto slot = static_cast<size_t>(std::max(arg.number, 0.0));
        if (data.size() <= slot) data.resize(slot + 1);
        // A scalar operand of an elementwise operator (`x * 0.5` as Muls(x, 0.5) or Mul(x, 0-d
        // tensor)) is the `scalar` attribute at `scalar_index`, as the evaluator records it.
        if (arg.value == MindirValue::Input && def.has(kElementwise) && !scalar) {
          if (auto sc = scalar_of(*v)) {
            scalar = *sc;
            scalar_slot = slot;
            scalar_val = v;
            continue;
          }
        }
        data[slot] = tensor_ref(*v, node.scope);
        if (!data[slot]) {
          throw ImportError{where + ": operand " + std::string(arg.name) + " is not a tensor"};
        }
        continue;
      }
      if (a == nullptr) continue;
      auto value = attr_value(*a);
      if (!value) continue;
      record(node, arg, *value);
    }
    if (scalar && scalar_slot < data.size()) {
      const bool other_tensor =
          std::ranges::any_of(data, [](const auto& d) { return d.has_value(); });
      if (other_tensor) {
        data.erase(data.begin() + static_cast<std::ptrdiff_t>(scalar_slot));
        node.attrs.push_back(Attr{"scalar", *scalar});
        node.attrs.push_back(Attr{"scalar_index", static_cast<int64_t>(scalar_slot)});
      } else {
        data[scalar_slot] = tensor_ref(*scalar_val, node.scope);
      }
    }
    for (auto& d : data) {
      if (!d) throw ImportError{where + ": an operand is missing"};
      node.inputs.push_back(*d);
    }
    if (function && next_input < in.size()) {
      note(where + ": " + std::string(m.primitive) + " has " + std::to_string(in.size()) +
           " inputs, its row " + std::to_string(next_input) + "; the rest are not read");
    }
    // A layer's node is named by its Cell path ("layer1.0.conv1"), as the evaluator names it;
    // anything else "<scope>/<op>".
    const std::string scope(node.scope);
    const bool layer = !node.params.empty() && !scope.empty() && ids_.count(scope) == 0;
    node.id =
        layer ? scope
              : unique_id((scope.empty() ? std::string() : scope + "/") + std::string(def.name));
    shape_rule(where, n, prim, m, in, node);
    if (m.tuple_item >= 0) tuple_items_[static_cast<uint32_t>(graph().nodes.size())] = m.tuple_item;
    const ValueRef ref = add_node(std::move(node));
    return Val{Val::K::Tensor, ref, {}, nullptr, {}};
  }

  // A constant operand that is one number: a scalar attribute (FLOAT, INT64, BOOL) or a 0-d
  // tensor; its value as the evaluator records a Python number.
  static std::optional<AttrValue> scalar_of(const Val& v) {
    if (v.k != Val::K::Const || v.attr == nullptr) return std::nullopt;
    const pb::Attribute& a = *v.attr;
    if (a.type() == pb::Attribute::TENSORS) {
      if (a.tensors_size() != 1 || a.tensors(0).dims_size() != 0) return std::nullopt;
      const pb::Tensor& t = a.tensors(0);
      TensorType type;
      try {
        type = tensor_type(t, "constant");
      } catch (const ImportError&) {
        return std::nullopt;
      }
      auto values = constant_values(t, type);
      if (!values || values->size() != 1) return std::nullopt;
      const double x = values->front();
      if (type.dtype == DType::Bool) return AttrValue{x != 0};
      if (type.dtype == DType::Int32 || type.dtype == DType::Int64)
        return AttrValue{static_cast<int64_t>(x)};
      return AttrValue{x};
    }
    auto x = attr_value(a);
    if (!x) return std::nullopt;
    if (std::holds_alternative<double>(*x) || std::holds_alternative<int64_t>(*x) ||
        std::holds_alternative<bool>(*x)) {
      return x;
    }
    return std::nullopt;
  }

  // One argument's value back to the node attribute its row reads (the row's `key`).
  void record(Node& node, const MindirArg& arg, const AttrValue& value) {
    const std::string key(arg.key);
    auto set = [&](AttrValue v) {
      if (!key.empty() && node.find_attr(key) == nullptr)
        node.attrs.push_back(Attr{key, std::move(v)});
    };
    auto number = [&]() -> std::optional<double> {
      if (const auto* d = std::get_if<double>(&value)) return *d;
      if (const auto* i = std::get_if<int64_t>(&value)) return static_cast<double>(*i);
      return std::nullopt;
    };
    switch (arg.value) {
      case MindirValue::Int:
      case MindirValue::RequiredInt:
      case MindirValue::Bool:
      case MindirValue::Float:
      case MindirValue::Ints:
      case MindirValue::Pad4:
      case MindirValue::Axes:
      case MindirValue::ReduceAxes:
      case MindirValue::ReduceKeep:
      case MindirValue::OutputHW:
        set(value);
        return;
      case MindirValue::PadModeEnum:
        if (auto x = number()) {
          if (*x == 1) set(AttrValue{std::string("same")});
          if (*x == 2) set(AttrValue{std::string("valid")});
          if (*x == 0) set(AttrValue{std::string("pad")});
        }
        return;
      case MindirValue::OneMinus:
        if (auto x = number()) set(AttrValue{1.0 - *x});
        return;
      case MindirValue::Ints4:
        if (const auto* l = std::get_if<std::vector<int64_t>>(&value); l && l->size() == 4) {
          set(AttrValue{std::vector<int64_t>{(*l)[2], (*l)[3]}});
        } else {
          set(value);
        }
        return;
      case MindirValue::Lower:
      case MindirValue::Upper:
        if (const auto* s = std::get_if<std::string>(&value)) set(AttrValue{lower(*s)});
        return;
      case MindirValue::HasWeight:
        // nn.Dense's transposed weight; ops.MatMul(transpose_b=True) records it.
        if (node.params.empty()) node.attrs.push_back(Attr{std::string(arg.name), value});
        return;
      case MindirValue::Literal:
      case MindirValue::LiteralBool:
      case MindirValue::LiteralText: {
        const bool same =
            arg.value == MindirValue::LiteralText
                ? (std::get_if<std::string>(&value) != nullptr &&
                   lower(*std::get_if<std::string>(&value)) == lower(std::string(arg.key)))
                : (number() ? *number() == arg.number
                            : (std::get_if<bool>(&value) != nullptr &&
                               (*std::get_if<bool>(&value) ? 1.0 : 0.0) == arg.number));
        if (!same) {
          note("operator " + std::string(node.op) + ": " + std::string(arg.name) + " = " +
               attr_to_string(value) + " where Cellscope's form has " +
               (arg.value == MindirValue::LiteralText ? std::string(arg.key)
                                                      : std::to_string(arg.number)));
        }
        return;
      }
      default:
        return;  // Input, Weight, PadList, OutputShape, Require: derived or structural
    }
  }

  // The registry's entry of MindSpore's primitive class: `ops.<Prim>`, else
  // `ops.auto_generate.<Prim>` (a gen_ops_prim class mindspore.ops does not export: GroupNorm).
  const ApiEntry* primitive_entry(std::string_view prim) const {
    const std::string name(prim);
    const ApiEntry* e = Registry::instance().find("ops." + name, options_.mindspore_version);
    if (e == nullptr) {
      e = Registry::instance().find("ops.auto_generate." + name, options_.mindspore_version);
    }
    return e;
  }

  // nn.Pad / ops.pad (MindirExpansion::PadForms) read back as the Pad operator the evaluator
  // records: the attribute primitive Pad with `paddings` (before, after) pairs per axis is
  // nn.Pad (`paddings` flat, mode CONSTANT); PadV3(x, padding, value) with mode "constant" is
  // ops.pad (`padding` as written, from the last axis; `value` when it is not 0).
  Val pad_forms(const std::string& where, const pb::Node& n, const pb::Primitive* prim,
                const OpDef& def, const std::vector<Val>& in) {
    const MindirDef& m = *def.mindir;
    Node node;
    node.kind = NodeKind::Op;
    node.op = def.name;
    node.scope = scope_of(n.domain(), &graph().scope_classes);
    node.file = file_;
    const std::string prim_name = prim != nullptr ? prim->op_type() : std::string(m.primitive);
    node.api = "ops." + prim_name;
    if (in.empty()) throw ImportError{where + ": " + prim_name + " has no input"};
    auto x = tensor_ref(in[0], node.scope);
    if (!x) throw ImportError{where + ": " + prim_name + "'s input is not a tensor"};
    node.inputs.push_back(*x);
    std::map<std::string, const pb::Attribute*, std::less<>> attrs;
    if (prim != nullptr) {
      for (const auto& a : prim->attribute()) attrs[a.name()] = &a;
    }
    if (prim_name == m.also_primitive) {
      std::string mode = "constant";
      if (auto it = attrs.find("mode"); it != attrs.end()) {
        if (auto v = attr_value(*it->second)) {
          if (const auto* text = std::get_if<std::string>(&*v)) mode = lower(*text);
        }
      }
      node.attrs.push_back(Attr{"mode", mode});
      std::optional<AttrValue> padding;
      if (in.size() > 1 && in[1].k == Val::K::Const) padding = attr_value(*in[1].attr);
      if (padding && std::holds_alternative<std::vector<int64_t>>(*padding)) {
        node.attrs.push_back(Attr{"padding", *padding});
      } else {
        note(where + ": " + prim_name + "'s padding is not a constant tuple of integers");
      }
      if (in.size() > 2) {
        if (auto value = scalar_of(in[2])) {
          const double* d = std::get_if<double>(&*value);
          const int64_t* i = std::get_if<int64_t>(&*value);
          const double number = d != nullptr ? *d : i != nullptr ? static_cast<double>(*i) : 0;
          if (number != 0) node.attrs.push_back(Attr{"value", number});
        }
      }
    } else {
      node.attrs.push_back(Attr{"mode", std::string("CONSTANT")});
      std::vector<int64_t> flat;
      bool pairs = false;
      if (auto it = attrs.find("paddings"); it != attrs.end()) {
        pairs = true;
        for (const auto& pair : it->second->values()) {
          auto v = attr_value(pair);
          const auto* l = v ? std::get_if<std::vector<int64_t>>(&*v) : nullptr;
          if (l == nullptr || l->size() != 2) {
            pairs = false;
            break;
          }
          flat.insert(flat.end(), l->begin(), l->end());
        }
      }
      if (pairs) {
        node.attrs.push_back(Attr{"paddings", flat});
      } else {
        note(where + ": " + prim_name + "'s paddings are not (before, after) pairs of integers");
      }
    }
    node.id = unique_id((node.scope.empty() ? std::string() : std::string(node.scope) + "/") +
                        std::string(def.name));
    shape_rule(where, n, prim, m, in, node);
    const ValueRef ref = add_node(std::move(node));
    return Val{Val::K::Tensor, ref, {}, nullptr, {}};
  }

  // Output types and FLOPs from the registry's rule of `ops.<Prim>` (MindSpore's primitive
  // class), bound to the node's arguments; checked against the file's abstract.
  void shape_rule(const std::string& where, const pb::Node& n, const pb::Primitive* prim,
                  const MindirDef& m, const std::vector<Val>& in, Node& node) {
    const auto abs = abstract_of(n);
    const size_t item = m.tuple_item >= 0 ? static_cast<size_t>(m.tuple_item) : 0;
    std::optional<TensorType> from_file;
    if (item < abs.size()) from_file = abs[item];
    std::optional<TensorType> from_rule;
    std::vector<TensorType> rule_outputs;
    const ApiEntry* entry = primitive_entry(m.primitive);
    if (entry != nullptr && entry->infer) {
      std::map<std::string, ArgValue, std::less<>> call;
      std::map<std::string, ArgValue, std::less<>> init;
      const bool function = prim == nullptr || prim->prim_type() != pb::Primitive::PRIMITIVE;
      size_t k = 0;
      for (const ParamSpec& p : entry->call_params) {
        call[p.name] = k < in.size() ? arg_of_val(in[k]) : default_arg(p.default_src);
        ++k;
      }
      for (const ParamSpec& p : entry->init_params) {
        if (function) {
          init[p.name] = k < in.size() ? arg_of_val(in[k]) : default_arg(p.default_src);
          ++k;
        } else {
          init[p.name] = default_arg(p.default_src);
          for (const auto& a : prim->attribute()) {
            if (a.name() != p.name) continue;
            auto v = attr_value(a);
            if (!v) continue;
            // NCHW 4-tuples (stride (1, 1, h, w)) are (h, w) in the primitive's signature.
            if (auto* l = std::get_if<std::vector<int64_t>>(&*v);
                l != nullptr && l->size() == 4 && (*l)[0] == 1 && (*l)[1] == 1 && p.name != "pad" &&
                p.name != "pad_list") {
              *v = std::vector<int64_t>{(*l)[2], (*l)[3]};
            }
            init[p.name] = arg_of(*v);
          }
        }
      }
      RuleInit ictx(init, options_);
      if (entry->init) entry->init(ictx);
      RuleCall cctx(call, init, ictx.attrs, options_);
      if (!ictx.failed()) entry->infer(cctx);
      const std::string& err = ictx.failed() ? ictx.error_ : cctx.error_;
      if (err.empty() && cctx.outputs.size() > item) {
        from_rule = cctx.outputs[item];
        rule_outputs = cctx.outputs;
        node.flops = cctx.flops;
      } else if (!err.empty()) {
        note(where + ": the shape rule of ops." + std::string(m.primitive) +
             " does not apply: " + err.substr(0, err.find('\x1f')));
      }
    }
    if (from_rule && from_file && !(from_rule->shape == from_file->shape)) {
      note(where + ": the shape rule of ops." + std::string(m.primitive) + " gives " +
           from_rule->shape.str() + ", the file records " + from_file->shape.str() +
           " (the file's is kept)");
    }
    if (m.tuple_item < 0 && abs.size() > 1) {
      node.outputs = abs;  // a tuple of tensors (Unstack): readers take TupleGetItem(i)
    } else if (m.tuple_item == 0 && abs.size() > 1) {
      // Every element for now; those no TupleGetItem reads are dropped once the graph is read.
      node.outputs = abs;
      if (from_rule && !from_file) node.outputs[0] = *from_rule;
    } else if (m.tuple_item == 0 && from_rule && rule_outputs.size() > 1) {
      node.outputs = rule_outputs;
    } else if (from_file) {
      node.outputs.push_back(*from_file);
    } else if (from_rule) {
      node.outputs.push_back(*from_rule);
    } else {
      node.outputs.push_back(TensorType{Shape::unranked(), DType::Unknown});
      note(where + ": no shape (no abstract in the file, no shape rule)");
    }
    ++checked_;
    if (from_rule && from_file) ++agreed_;
  }

  void read_outputs(const pb::Graph& g) {
    if (g.output_size() == 0) throw ImportError{"the graph has no output"};
    std::vector<Val> outs;
    for (const auto& o : g.output()) {
      auto it = values_.find(o.name());
      if (it == values_.end()) {
        auto p = params_.find(o.name());
        if (p == params_.end()) throw ImportError{"graph output '" + o.name() + "' is not defined"};
        outs.push_back(Val{Val::K::Param, {}, p->second, nullptr, {}});
      } else {
        outs.push_back(it->second);
      }
    }
    std::vector<Val> flat;
    std::function<void(const Val&, int)> add = [&](const Val& v, int depth) {
      if (depth > 64) throw ImportError{"the output tuple nests too deep"};
      if (v.k == Val::K::Tuple) {
        for (const Val& e : v.items) add(e, depth + 1);
      } else {
        flat.push_back(v);
      }
    };
    for (const Val& v : outs) add(v, 0);
    for (const Val& v : flat) {
      auto r = tensor_ref(v, "");
      if (!r) continue;
      graph().outputs.push_back(*r);
      const Node& src = graph().nodes[r->node];
      out_.report.outputs.push_back(NamedTensor{src.id, src.outputs.at(r->output)});
    }
  }

  void summarise_notes() {
    for (const auto& [prim, count] : opaque_) {
      std::string msg = "primitive ";
      msg.append(prim).append(" (").append(std::to_string(count));
      msg.append(count == 1 ? " node" : " nodes");
      msg.append(
          ") has no operator row with a MindIR mapping: kept as an opaque node, shaped from the "
          "file's abstract, with no cost");
      note(std::move(msg));
    }
    for (const auto& [prim, count] : unread_) {
      std::string msg = "primitive ";
      msg.append(prim).append(" (").append(std::to_string(count));
      msg.append(count == 1 ? " node" : " nodes").append(") is operator ").append(prim);
      msg.append(
          ", whose row has no MindIR mapping: its attributes are not read and its shape "
          "is the file's");
      note(std::move(msg));
    }
    if (inlined_ > 0) {
      note("control flow: " + std::to_string(model_.functions_size()) + " sub-graph(s), " +
           std::to_string(inlined_) + " call(s) inlined, " + std::to_string(merges_) +
           " Switch(es) imported as Merge nodes of both branches (as an `if` on a tensor)");
    }
    for (const std::string& loop : looped_) {
      std::string msg = "control flow: sub-graph ";
      msg.append(loop).append(
          " calls itself (a loop, as MindSpore writes `while` on a tensor): not unrolled; the "
          "call is an opaque node with no cost");
      note(std::move(msg));
    }
    if (control_flow_ > 0) {
      note("control flow: " + std::to_string(control_flow_) +
           " call/Switch/Partial node(s) not resolved to a sub-graph: each is an opaque node");
    }
  }

  const pb::Model& model_;
  std::string file_;
  const MindirImportOptions& options_;
  MindirImport& out_;
  std::unordered_map<std::string, const pb::Primitive*> prims_;
  std::map<std::string, const pb::Graph*> functions_;
  std::vector<std::string> inlining_;  // the sub-graphs being inlined, outermost first
  int inlined_ = 0;                    // sub-graph calls inlined
  int merges_ = 0;                     // Switch calls imported as Merge nodes
  std::unordered_map<std::string, Val> values_;
  std::unordered_map<std::string, std::string> params_;  // qualified and bare name -> bare
  std::map<std::string, ValueRef> param_nodes_;
  std::map<const pb::Attribute*, ValueRef> const_nodes_;
  std::map<uint32_t, int> tuple_items_;
  std::set<uint32_t> all_items_;  // tuple_items_ nodes another element of which is read
  std::set<std::string> ids_;
  std::map<std::string, int> opaque_;
  std::map<std::string, int> unread_;
  int control_flow_ = 0;
  std::set<std::string> loops_;   // sub-graphs that can reach themselves (loops)
  std::set<std::string> looped_;  // ... that a call reached (one note each)
  int checked_ = 0;
  int agreed_ = 0;
};

}  // namespace

bool is_mindir_path(const std::filesystem::path& path) {
  return lower(path.extension().string()) == ".mindir";
}

MindirImport import_mindir(std::string_view bytes, const std::string& file,
                           const MindirImportOptions& options) {
  MindirImport out;
  try {
    check_top_level(bytes);
    pb::Model model;
    if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
      throw ImportError{
          "the file is over 2 GiB; MindSpore writes such models in the split "
          "layout (_graph.mindir + _variables/)"};
    }
    if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      throw ImportError{"corrupt: a message inside the ModelProto does not decode"};
    }
    auto& h = out.header;
    h.emplace_back("ir_version", model.ir_version());
    h.emplace_back("producer_name", model.producer_name());
    h.emplace_back("producer_version", model.producer_version());
    h.emplace_back("model_version", model.model_version());
    h.emplace_back("mind_ir_version", std::to_string(model.mind_ir_version()));
    h.emplace_back("little_endian", model.has_little_endian()
                                        ? (model.little_endian() ? "true" : "false")
                                        : "unset");
    h.emplace_back("graphs", std::to_string(1 + model.functions_size()));
    if (model.has_little_endian() &&
        model.little_endian() != (std::endian::native == std::endian::little)) {
      throw ImportError{"its weights are in the other byte order than this machine's"};
    }
    Reader reader(model, file, options, out);
    reader.run();
  } catch (const ImportError& e) {
    out.ok = false;
    out.error = e.message;
    out.report = CellReport{};
    out.notes.clear();
  }
  return out;
}

AnalysisResult analyze_mindir_file(const std::filesystem::path& file,
                                   const AnalysisOptions& options) {
  AnalysisResult result;
  result.file = file.string();
  result.files.push_back(result.file);
  auto fail = [&](const std::string& why) {
    Diagnostic d;
    d.file = result.file;
    d.severity = Severity::Error;
    d.code = "mindir-invalid";
    d.message = result.file + ": " + why;
    result.diagnostics.push_back(std::move(d));
    return result;
  };
  std::ifstream in(file, std::ios::binary);
  if (!in) return fail("cannot be read");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return fail("cannot be read");
  MindirImportOptions o;
  o.target = options.target;
  o.mindspore_version = options.mindspore_version;
  o.folder = file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path();
  MindirImport imported = import_mindir(bytes, result.file, o);
  if (!imported.ok) return fail(imported.error);
  result.imported = ImportedModel{"mindir", std::move(imported.header), imported.file_nodes};
  result.cells.push_back(std::move(imported.report));
  result.diagnostics = std::move(imported.notes);
  return result;
}

}  // namespace graphcore
