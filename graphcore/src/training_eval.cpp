// Plan objects and training events: see training_eval.h. Every signature below was checked with
// MindSpore 2.10 (inspect.signature / the source of the decorated optimizers), every dataset fact
// by running the pipeline on a tiny generated dataset (docs/training.md).
#include "training_eval.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "graphcore/checked.h"
#include "known_names.h"

namespace graphcore {

const AttrValue* PlanCall::arg(std::string_view name) const {
  for (const Attr& a : args) {
    if (a.name == name) return &a.value;
  }
  return nullptr;
}

}  // namespace graphcore

namespace graphcore::eval {

PlanObj::PlanObj(Kind k, std::string api) : OpaqueObj("mindspore." + api), kind(k) {
  call.api = std::move(api);
}

Value PlanObj::get(std::string_view key) const {
  std::string k = "\x01" + std::string(key);
  if (Value* v = const_cast<DictObj&>(attrs).find_str(k)) return *v;
  return Value::unknown();
}

void PlanObj::put(std::string_view key, Value v) {
  attrs.set(make_str("\x01" + std::string(key)), std::move(v));
}

PlanObj* plan_of(const Value& v) {
  auto* o = v.as<OpaqueObj>();
  return o ? dynamic_cast<PlanObj*>(o) : nullptr;
}

namespace {

using Kind = PlanObj::Kind;

// MindSpore 2.10's parameter names, in order, of what the plan records.
const std::vector<std::string>* signature(std::string_view api) {
  static const std::unordered_map<std::string_view, std::vector<std::string>> kSigs = {
      {"train.Model",
       {"network", "loss_fn", "optimizer", "metrics", "eval_network", "eval_indexes", "amp_level",
        "boost_level"}},
      {"Model.train",
       {"epoch", "train_dataset", "callbacks", "dataset_sink_mode", "sink_size", "initial_epoch"}},
      {"Model.fit",
       {"epoch", "train_dataset", "valid_dataset", "valid_frequency", "callbacks",
        "dataset_sink_mode", "valid_dataset_sink_mode", "sink_size", "initial_epoch"}},
      {"Model.eval", {"valid_dataset", "callbacks", "dataset_sink_mode"}},
      {"ms.value_and_grad",
       {"fn", "grad_position", "weights", "has_aux", "return_ids", "sens_param"}},
      {"ms.grad", {"fn", "grad_position", "weights", "has_aux", "return_ids", "sens_param"}},
      {"nn.TrainOneStepCell", {"network", "optimizer", "sens", "return_grad"}},
      {"nn.TrainOneStepWithLossScaleCell", {"network", "optimizer", "scale_sense"}},
      {"nn.WithLossCell", {"backbone", "loss_fn"}},
      {"nn.Momentum",
       {"params", "learning_rate", "momentum", "weight_decay", "loss_scale", "use_nesterov"}},
      {"nn.SGD",
       {"params", "learning_rate", "momentum", "dampening", "weight_decay", "nesterov",
        "loss_scale"}},
      {"nn.Adam",
       {"params", "learning_rate", "beta1", "beta2", "eps", "use_locking", "use_nesterov",
        "weight_decay", "loss_scale", "use_amsgrad"}},
      {"nn.AdamWeightDecay", {"params", "learning_rate", "beta1", "beta2", "eps", "weight_decay"}},
      {"nn.RMSProp",
       {"params", "learning_rate", "decay", "momentum", "epsilon", "use_locking", "centered",
        "loss_scale", "weight_decay"}},
      {"nn.Lamb", {"params", "learning_rate", "beta1", "beta2", "eps", "weight_decay"}},
      {"nn.cosine_decay_lr", {"min_lr", "max_lr", "total_step", "step_per_epoch", "decay_epoch"}},
      {"nn.piecewise_constant_lr", {"milestone", "learning_rates"}},
      {"nn.exponential_decay_lr",
       {"learning_rate", "decay_rate", "total_step", "step_per_epoch", "decay_epoch", "is_stair"}},
      {"nn.natural_exp_decay_lr",
       {"learning_rate", "decay_rate", "total_step", "step_per_epoch", "decay_epoch", "is_stair"}},
      {"nn.inverse_decay_lr",
       {"learning_rate", "decay_rate", "total_step", "step_per_epoch", "decay_epoch", "is_stair"}},
      {"nn.polynomial_decay_lr",
       {"learning_rate", "end_learning_rate", "total_step", "step_per_epoch", "decay_epoch",
        "power", "update_decay_epoch"}},
      {"nn.warmup_lr", {"learning_rate", "total_step", "step_per_epoch", "warmup_epoch"}},
      {"nn.CosineDecayLR", {"min_lr", "max_lr", "decay_steps"}},
      {"nn.WarmUpLR", {"learning_rate", "warmup_steps"}},
      {"nn.PolynomialDecayLR",
       {"learning_rate", "end_learning_rate", "decay_steps", "power", "update_decay_steps"}},
      {"nn.ExponentialDecayLR", {"learning_rate", "decay_rate", "decay_steps", "is_stair"}},
      {"nn.NaturalExpDecayLR", {"learning_rate", "decay_rate", "decay_steps", "is_stair"}},
      {"nn.InverseDecayLR", {"learning_rate", "decay_rate", "decay_steps", "is_stair"}},
      {"nn.DynamicLossScaleUpdateCell", {"loss_scale_value", "scale_factor", "scale_window"}},
      {"nn.FixedLossScaleUpdateCell", {"loss_scale_value"}},
      {"train.LossMonitor", {"per_print_times"}},
      {"train.TimeMonitor", {"data_size", "data_time"}},
      {"train.ModelCheckpoint", {"prefix", "directory", "config"}},
      {"train.CheckpointConfig",
       {"save_checkpoint_steps", "save_checkpoint_seconds", "keep_checkpoint_max",
        "keep_checkpoint_per_n_minutes", "integrated_save", "async_save", "saved_network",
        "append_info", "enc_key", "enc_mode", "exception_save"}},
      {"train.DynamicLossScaleManager", {"init_loss_scale", "scale_factor", "scale_window"}},
      {"amp.DynamicLossScaler", {"scale_value", "scale_factor", "scale_window"}},
      {"amp.StaticLossScaler", {"scale_value"}},
      {"train.FixedLossScaleManager", {"loss_scale", "drop_overflow_update"}},
      {"train.EarlyStopping",
       {"monitor", "min_delta", "patience", "verbose", "mode", "baseline", "restore_best_weights"}},
      {"train.LearningRateScheduler", {"learning_rate_function"}},
      {"ops.clip_by_global_norm", {"x", "clip_norm", "use_norm"}},
      {"ms.export", {"net", "inputs"}},
      {"dataset.MnistDataset",
       {"dataset_dir", "usage", "num_samples", "num_parallel_workers", "shuffle", "sampler",
        "num_shards", "shard_id", "cache"}},
      {"dataset.FashionMnistDataset",
       {"dataset_dir", "usage", "num_samples", "num_parallel_workers", "shuffle", "sampler",
        "num_shards", "shard_id", "cache"}},
      {"dataset.Cifar10Dataset",
       {"dataset_dir", "usage", "num_samples", "num_parallel_workers", "shuffle", "sampler",
        "num_shards", "shard_id", "cache"}},
      {"dataset.ImageFolderDataset",
       {"dataset_dir", "num_samples", "num_parallel_workers", "shuffle", "sampler", "extensions",
        "class_indexing", "decode", "num_shards", "shard_id", "cache", "decrypt"}},
      {"dataset.NumpySlicesDataset",
       {"data", "column_names", "num_samples", "num_parallel_workers", "shuffle", "sampler",
        "num_shards", "shard_id"}},
      {"dataset.GeneratorDataset",
       {"source", "column_names", "column_types", "schema", "num_samples", "num_parallel_workers",
        "shuffle", "sampler"}},
      {"Dataset.map", {"operations", "input_columns", "output_columns", "num_parallel_workers"}},
      {"Dataset.batch", {"batch_size", "drop_remainder", "num_parallel_workers"}},
      {"Dataset.shuffle", {"buffer_size"}},
      {"Dataset.repeat", {"count"}},
      {"Dataset.take", {"count"}},
      {"Dataset.project", {"columns"}},
      {"Dataset.create_tuple_iterator", {"columns", "num_epochs", "output_numpy", "do_copy"}},
      {"Dataset.create_dict_iterator", {"num_epochs", "output_numpy", "do_copy"}},
      {"vision.Resize", {"size", "interpolation"}},
      {"vision.Rescale", {"rescale", "shift"}},
      {"vision.Normalize", {"mean", "std", "is_hwc"}},
      {"vision.HWC2CHW", {}},
      {"vision.CenterCrop", {"size"}},
      {"vision.RandomCrop", {"size", "padding", "pad_if_needed", "fill_value", "padding_mode"}},
      {"vision.RandomHorizontalFlip", {"prob"}},
      {"vision.RandomVerticalFlip", {"prob"}},
      {"vision.Decode", {"to_pil"}},
      {"vision.ToTensor", {"output_type"}},
      {"vision.RandomResizedCrop", {"size", "scale", "ratio", "interpolation", "max_attempts"}},
      {"transforms.TypeCast", {"data_type"}},
      {"transforms.OneHot", {"num_classes", "smoothing_rate"}},
      {"transforms.Compose", {"transforms"}},
  };
  auto it = kSigs.find(api);
  return it == kSigs.end() ? nullptr : &it->second;
}

const std::unordered_set<std::string_view>& optimizer_apis() {
  static const std::unordered_set<std::string_view> k = {
      "Momentum", "SGD",     "Adam",     "AdamWeightDecay", "RMSProp",         "Lamb",
      "LARS",     "Adagrad", "FTRL",     "LazyAdam",        "ProximalAdagrad", "Rprop",
      "ASGD",     "AdaMax",  "Adadelta", "AdamOffload"};
  return k;
}

const std::unordered_set<std::string_view>& lr_apis() {
  static const std::unordered_set<std::string_view> k = {"cosine_decay_lr",
                                                         "piecewise_constant_lr",
                                                         "exponential_decay_lr",
                                                         "natural_exp_decay_lr",
                                                         "inverse_decay_lr",
                                                         "polynomial_decay_lr",
                                                         "warmup_lr",
                                                         "CosineDecayLR",
                                                         "WarmUpLR",
                                                         "PolynomialDecayLR",
                                                         "ExponentialDecayLR",
                                                         "NaturalExpDecayLR",
                                                         "InverseDecayLR"};
  return k;
}

const std::unordered_set<std::string_view>& train_apis() {
  static const std::unordered_set<std::string_view> k = {"Model",
                                                         "LossMonitor",
                                                         "TimeMonitor",
                                                         "ModelCheckpoint",
                                                         "CheckpointConfig",
                                                         "DynamicLossScaleManager",
                                                         "FixedLossScaleManager",
                                                         "DynamicLossScaler",
                                                         "StaticLossScaler",
                                                         "EarlyStopping",
                                                         "LearningRateScheduler",
                                                         "History",
                                                         "SummaryCollector",
                                                         "LambdaCallback",
                                                         "ReduceLROnPlateau",
                                                         "OnRequestExit",
                                                         "BackupAndRestore",
                                                         "Callback"};
  return k;
}

const std::unordered_set<std::string_view>& dataset_sources() {
  static const std::unordered_set<std::string_view> k = {
      "MnistDataset",       "FashionMnistDataset", "Cifar10Dataset",   "Cifar100Dataset",
      "ImageFolderDataset", "NumpySlicesDataset",  "GeneratorDataset", "MindDataset",
      "TFRecordDataset",    "CocoDataset",         "VOCDataset",       "CelebADataset",
      "TextFileDataset",    "CSVDataset"};
  return k;
}

// Names of the column order of a source, with one row's type (verified with MindSpore 2.10).
std::vector<DatasetColumn> source_columns(std::string_view api, const PlanCall& c) {
  auto u8 = [](const std::vector<int64_t>& dims) {
    Shape s;
    for (int64_t d : dims) s.dims.push_back(d < 0 ? Dim::unknown() : Dim::known(d));
    return TensorType{s, DType::UInt8};
  };
  TensorType label{Shape{}, DType::UInt32};
  if (api == "dataset.MnistDataset" || api == "dataset.FashionMnistDataset")
    return {{"image", u8({28, 28, 1})}, {"label", label}};
  if (api == "dataset.Cifar10Dataset") return {{"image", u8({32, 32, 3})}, {"label", label}};
  if (api == "dataset.ImageFolderDataset") {
    bool decode = false;
    if (const AttrValue* d = c.arg("decode"); d && std::holds_alternative<bool>(*d))
      decode = std::get<bool>(*d);
    // Undecoded: the file's bytes. Decoded: an RGB image of a size only the files know.
    return {{"image", decode ? u8({-1, -1, 3}) : u8({-1})},
            {"label", TensorType{Shape{}, DType::Int32}}};
  }
  return {};
}

std::string render(const AttrValue& v) {
  if (std::holds_alternative<std::monostate>(v)) return "None";
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  return attr_to_string(v);
}

std::string render_call(const PlanCall& c) {
  std::string out = c.api + "(";
  for (size_t i = 0; i < c.args.size(); ++i)
    out += (i ? ", " : "") + c.args[i].name + "=" + render(c.args[i].value);
  return out + ")";
}

// An argument as the plan records it: plain data as values, a plan object as its call, anything
// else as the program wrote it.
AttrValue to_attr(Interpreter& in, const Value& v, const std::string& file, SourceRange range) {
  switch (v.k) {
    case VK::None:
      return std::monostate{};
    case VK::Bool:
      return v.b;
    case VK::Int:
      return v.i;
    case VK::Float:
      return v.f;
    default:
      break;
  }
  if (const std::string* s = str_of(v)) return *s;
  if (auto* d = v.as<DTypeObj>()) return std::string(dtype_name(d->dtype));
  if (auto* items = seq_items(v); items && !items->empty()) {
    std::vector<int64_t> ints;
    for (const Value& x : *items) {
      if (!x.is_int() || x.k == VK::Bool) break;
      ints.push_back(x.as_int());
    }
    if (ints.size() == items->size()) return ints;
  }
  if (auto* p = plan_of(v)) return render_call(p->call);
  std::string text = in.source_text(file, range);
  if (!text.empty()) return text;
  return type_name(v);
}

std::optional<int64_t> int_arg(const PlanCall& c, std::string_view name) {
  const AttrValue* v = c.arg(name);
  if (v && std::holds_alternative<int64_t>(*v)) return std::get<int64_t>(*v);
  return std::nullopt;
}

// The pipeline with its batches' column types given by the user (AnalysisOptions::
// training_inputs): the pipeline's column names where it has as many columns, "column<i>"
// otherwise.
DatasetPlan with_column_types(DatasetPlan plan, const std::vector<TensorType>& types) {
  std::vector<DatasetColumn> cols;
  cols.reserve(types.size());
  for (size_t i = 0; i < types.size(); ++i) {
    std::string name =
        plan.columns.size() == types.size() ? plan.columns[i].name : "column" + std::to_string(i);
    cols.push_back({std::move(name), types[i]});
  }
  plan.columns = std::move(cols);
  return plan;
}

}  // namespace

PlanCall plan_call(Interpreter& in, std::string api, CallArgs& args, const Site& site) {
  PlanCall c;
  c.file = site.file();
  c.range = site.range();
  const std::vector<std::string>* sig = signature(api);
  for (size_t i = 0; i < args.pos.size(); ++i) {
    std::string name = sig && i < sig->size() ? (*sig)[i] : "arg" + std::to_string(i);
    SourceRange r = i < args.pos_ranges.size() ? args.pos_ranges[i] : site.range();
    c.args.push_back(Attr{std::move(name), to_attr(in, args.pos[i], c.file, r)});
  }
  for (size_t i = 0; i < args.kw.size(); ++i) {
    SourceRange r = i < args.kw_ranges.size() ? args.kw_ranges[i] : site.range();
    AttrValue v = to_attr(in, args.kw[i].second, c.file, r);
    // The text of a keyword argument's range starts with `name=`.
    if (auto* s = std::get_if<std::string>(&v); s && s->starts_with(args.kw[i].first)) {
      std::string_view rest = std::string_view(*s).substr(args.kw[i].first.size());
      while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
      if (!rest.empty() && rest.front() == '=' && !plan_of(args.kw[i].second) &&
          !str_of(args.kw[i].second)) {
        rest.remove_prefix(1);
        while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
        v = std::string(rest);
      }
    }
    c.args.push_back(Attr{args.kw[i].first, std::move(v)});
  }
  c.api = std::move(api);
  return c;
}

namespace {

// The argument named `name` (or at `pos`), or nullptr.
const Value* bound(const std::string& api, CallArgs& args, std::string_view name) {
  if (const Value* v = args.find_kw(name)) return v;
  if (const auto* sig = signature(api)) {
    auto it = std::find(sig->begin(), sig->end(), name);
    if (it != sig->end()) {
      auto i = static_cast<size_t>(it - sig->begin());
      if (i < args.pos.size()) return &args.pos[i];
    }
  }
  return nullptr;
}

Value make_plan(Interpreter& in, Kind kind, const std::string& api, CallArgs& args,
                const Site& site) {
  auto p = std::make_shared<PlanObj>(kind, api);
  p->call = plan_call(in, api, args, site);
  // Keep every argument: later stages read the network, the parameters, the dataset.
  const auto* sig = signature(api);
  for (size_t i = 0; i < args.pos.size(); ++i)
    p->put(sig && i < sig->size() ? (*sig)[i] : "arg" + std::to_string(i), args.pos[i]);
  for (auto& [k, v] : args.kw) p->put(k, v);
  return Value::obj(p);
}

// One row's columns through a transform. `t` nullopt: unknown.
void apply_transform(const PlanCall& c, std::optional<TensorType>& t, std::string* why) {
  const std::string& api = c.api;
  if (!t) return;
  auto size_hw = [&](std::string_view arg) -> std::optional<std::pair<Dim, Dim>> {
    const AttrValue* v = c.arg(arg);
    if (!v) return std::nullopt;
    if (auto* i = std::get_if<int64_t>(v)) return std::pair{Dim::known(*i), Dim::known(*i)};
    if (auto* l = std::get_if<std::vector<int64_t>>(v); l && l->size() == 2)
      return std::pair{Dim::known((*l)[0]), Dim::known((*l)[1])};
    return std::pair{Dim::unknown(), Dim::unknown()};
  };
  Shape& s = t->shape;
  auto set_hw = [&](Dim h, Dim w) {
    if (s.ranked && s.dims.size() >= 2) {
      s.dims[0] = h;
      s.dims[1] = w;
    }
  };
  if (api == "vision.Rescale" || api == "vision.Normalize") {
    t->dtype = DType::Float32;
  } else if (api == "vision.HWC2CHW") {
    if (s.ranked && s.dims.size() == 3) s.dims = {s.dims[2], s.dims[0], s.dims[1]};
  } else if (api == "vision.ToTensor") {
    if (s.ranked && s.dims.size() == 3) s.dims = {s.dims[2], s.dims[0], s.dims[1]};
    t->dtype = DType::Float32;
  } else if (api == "vision.Resize") {
    auto hw = size_hw("size");
    // An int resizes the shorter side, keeping the aspect ratio: known only for a square.
    bool square = s.ranked && s.dims.size() >= 2 && s.dims[0].is_known() && s.dims[1].is_known() &&
                  s.dims[0].value() == s.dims[1].value();
    const AttrValue* v = c.arg("size");
    if (hw && v && std::holds_alternative<int64_t>(*v) && !square)
      hw = std::pair{Dim::unknown(), Dim::unknown()};
    if (hw) set_hw(hw->first, hw->second);
  } else if (api == "vision.CenterCrop" || api == "vision.RandomCrop" ||
             api == "vision.RandomResizedCrop") {
    if (auto hw = size_hw("size")) set_hw(hw->first, hw->second);
  } else if (api == "vision.RandomHorizontalFlip" || api == "vision.RandomVerticalFlip") {
    // The same shape and dtype.
  } else if (api == "vision.Decode") {
    t = TensorType{Shape({Dim::unknown(), Dim::unknown(), Dim::known(3)}), DType::UInt8};
  } else if (api == "transforms.TypeCast") {
    const AttrValue* v = c.arg("data_type");
    std::optional<DType> d;
    if (auto* n = v ? std::get_if<std::string>(v) : nullptr) {
      std::string name = *n;
      if (auto dot = name.rfind('.'); dot != std::string::npos) name = name.substr(dot + 1);
      d = dtype_from_name(name);
    }
    t->dtype = d ? *d : DType::Unknown;
  } else if (api == "transforms.OneHot") {
    auto n = int_arg(c, "num_classes");
    if (s.ranked) s.dims.push_back(n ? Dim::known(*n) : Dim::unknown());
  } else {
    if (why && why->empty()) *why = "`" + api + "` is not followed";
    t.reset();
  }
}

void add_transforms(const Value& ops, std::vector<PlanCall>& out, bool& unknown) {
  if (auto* p = plan_of(ops)) {
    if (p->call.api == "transforms.Compose") {
      add_transforms(p->get("transforms"), out, unknown);
      return;
    }
    if (p->kind == Kind::Transform) {
      out.push_back(p->call);
      return;
    }
  }
  if (auto* items = seq_items(ops)) {
    for (const Value& x : *items) add_transforms(x, out, unknown);
    return;
  }
  unknown = true;  // a user function, a lambda, a transform Cellscope does not know
}

std::vector<std::string> names_of(const Value& v) {
  std::vector<std::string> out;
  if (const std::string* s = str_of(v)) {
    out.push_back(*s);
  } else if (auto* items = seq_items(v)) {
    for (const Value& x : *items) {
      if (const std::string* s2 = str_of(x)) out.push_back(*s2);
    }
  }
  return out;
}

// The type of one row of a NumpySlicesDataset column: an array minus its first dimension.
std::optional<TensorType> slice_row(const Value& v) {
  if (auto* t = v.as<TensorObj>()) {
    TensorType r = t->type;
    if (!r.shape.ranked || r.shape.dims.empty()) return std::nullopt;
    r.shape.dims.erase(r.shape.dims.begin());
    return r;
  }
  if (auto* items = seq_items(v); items && !items->empty()) {
    const Value& x = (*items)[0];
    if (x.k == VK::Int) return TensorType{Shape{}, DType::Int64};
    if (x.k == VK::Float) return TensorType{Shape{}, DType::Float64};
  }
  return std::nullopt;
}

}  // namespace

bool TrainingRecorder::may_handle(const NamespaceObj* ns, std::string_view name) {
  const std::string& n = ns->name;
  if (n.starts_with("mindspore.dataset") || n.starts_with("mindspore.train") ||
      n.starts_with("mindspore.amp"))
    return true;
  if (ns->prefix.empty())
    return train_apis().count(name) || name == "value_and_grad" || name == "grad";
  if (ns->prefix == "nn.") {
    return optimizer_apis().count(name) || lr_apis().count(name) || name.ends_with("Loss") ||
           name.ends_with("LossCell") || name.starts_with("TrainOneStep") ||
           name.ends_with("LossScaleUpdateCell") || name == "SoftmaxCrossEntropyWithLogits";
  }
  if (ns->prefix == "ops.")
    return name == "clip_by_global_norm" || name == "value_and_grad" || name == "grad";
  return false;
}

std::optional<Value> TrainingRecorder::api(Interpreter& in, NamespaceObj* ns,
                                           std::string_view name) {
  if (!may_handle(ns, name)) return std::nullopt;
  const std::string& n = ns->name;
  std::string nm(name);
  std::string api;
  Kind kind{};
  if (n.starts_with("mindspore.dataset")) {
    if (name == "vision" || name == "transforms" || name == "c_transforms" ||
        name == "py_transforms")
      return in.mindspore_module(n + "." + nm);
    bool vision = n.find("vision") != std::string::npos;
    bool transforms = n.find("transforms") != std::string::npos;
    if (vision) {
      api = "vision." + nm;
      kind = Kind::Transform;
    } else if (transforms) {
      api = "transforms." + nm;
      kind = Kind::Transform;
    } else if (dataset_sources().count(name)) {
      api = "dataset." + nm;
      kind = Kind::Dataset;
    } else {
      return std::nullopt;
    }
    // A class name only (CamelCase): functions and modules keep their usual value.
    if (nm.empty() || !std::isupper(static_cast<unsigned char>(nm[0]))) return std::nullopt;
  } else if (n.starts_with("mindspore.train") || n.starts_with("mindspore.amp") ||
             ns->prefix.empty()) {
    if (name == "value_and_grad" || name == "grad") {
      api = "ms." + nm;
      kind = Kind::GradFn;
    } else if (train_apis().count(name)) {
      // mindspore.amp's loss scalers (the functional idiom's DynamicLossScaler) keep their
      // module's name.
      const bool scaler = name.ends_with("LossScaler");
      api = (scaler ? "amp." : "train.") + nm;
      kind = name == "Model"                                ? Kind::Model
             : scaler || name.ends_with("LossScaleManager") ? Kind::LossScale
                                                            : Kind::Callback;
    } else {
      return std::nullopt;
    }
  } else if (ns->prefix == "nn.") {
    // What the registry models (another part of issue 17 adds losses and WithLossCell) is left
    // to it.
    if (Registry::instance().find("nn." + nm, in.options.mindspore_version)) return std::nullopt;
    api = "nn." + nm;
    if (optimizer_apis().count(name)) {
      kind = Kind::Optimizer;
    } else if (lr_apis().count(name)) {
      kind = Kind::LrSchedule;
    } else if (name.starts_with("TrainOneStep")) {
      kind = Kind::TrainOneStep;
    } else if (name.ends_with("LossScaleUpdateCell")) {
      kind = Kind::LossScale;
    } else if (name.ends_with("Loss") || name == "SoftmaxCrossEntropyWithLogits") {
      kind = Kind::Loss;
    } else {
      // Not a training API; WithLossCell among them is modelled as a Cell (cells.cpp: it
      // compiles as a root, `--entry nn.WithLossCell(...)`), the plan reading its parts from the
      // instance (unwrap below).
      return std::nullopt;
    }
    if (!known_mindspore_name("nn", nm, in.options.mindspore_version)) return std::nullopt;
  } else if (ns->prefix == "ops.") {
    if (name == "clip_by_global_norm") {
      return Value::obj(std::make_shared<BuiltinObj>(
          "ops.clip_by_global_norm", [](Interpreter& in2, CallArgs& a, const Site&) -> Value {
            if (in2.training) in2.training->record_clip(a);
            return a.pos.empty() ? Value::unknown() : a.pos[0];
          }));
    }
    api = "ms." + nm;
    kind = Kind::GradFn;
  } else {
    return std::nullopt;
  }
  return Value::obj(std::make_shared<BuiltinObj>(
      api, [api, kind](Interpreter& in2, CallArgs& a, const Site& site) -> Value {
        if (!in2.training) in2.training = std::make_unique<TrainingRecorder>();
        Value v = make_plan(in2, kind, api, a, site);
        PlanObj* p = plan_of(v);
        if (kind == Kind::Dataset) {
          auto d = std::make_shared<DatasetPlan>();
          d->source = p->call;
          d->columns = source_columns(api, p->call);
          if (api == "dataset.NumpySlicesDataset") {
            Value data = p->get("data");
            std::vector<std::string> names = names_of(p->get("column_names"));
            std::vector<std::pair<std::string, std::optional<TensorType>>> cols;
            // The files the arrays were np.load()ed from: the runtime reads them.
            std::vector<std::string> files;
            auto add_column = [&](std::string col, const Value& x) {
              const auto* t = x.as<TensorObj>();
              if (t != nullptr && t->file) files.push_back(*t->file);
              cols.emplace_back(std::move(col), slice_row(x));
            };
            if (auto* dict = data.as<DictObj>()) {
              for (auto& [k, x] : dict->entries) add_column(str_of(k) ? *str_of(k) : "?", x);
            } else if (auto* items = data.as<TupleObj>()) {
              for (size_t i = 0; i < items->items.size(); ++i)
                add_column("column_" + std::to_string(i), items->items[i]);
            } else {
              add_column("column_0", data);
            }
            for (size_t i = 0; i < cols.size() && i < names.size(); ++i) cols[i].first = names[i];
            if (!cols.empty() && files.size() == cols.size()) {
              std::string joined;
              std::string col_names;
              for (size_t i = 0; i < files.size(); ++i) {
                joined += (i ? ";" : "") + files[i];
                col_names += (i ? ", " : "") + cols[i].first;
              }
              std::erase_if(d->source.args, [](const Attr& arg) {
                return arg.name == "data" || arg.name == "column_names";
              });
              d->source.args.push_back(Attr{"data", joined});
              d->source.args.push_back(Attr{"column_names", col_names});
            }
            for (auto& [nm2, t] : cols) {
              if (!t) {
                d->opaque_reason =
                    "the type of NumpySlicesDataset column `" + nm2 + "` is not known statically";
              }
              d->columns.push_back({nm2, t ? *t : TensorType{Shape::unranked(), DType::Unknown}});
            }
          } else if (api == "dataset.GeneratorDataset") {
            d->opaque_reason =
                "the dataset comes from GeneratorDataset(user function): its rows exist only "
                "when the user's Python runs";
            for (const std::string& c : names_of(p->get("column_names")))
              d->columns.push_back({c, TensorType{Shape::unranked(), DType::Unknown}});
          } else if (d->columns.empty()) {
            d->opaque_reason = "`" + api + "` is not followed";
          }
          p->dataset = std::move(d);
          if (!p->dataset->opaque_reason.empty()) {
            in2.report(site, Severity::Information, "training-not-followed",
                       "dataset not followed: " + p->dataset->opaque_reason);
          }
        }
        if (kind == Kind::LossScale && api.starts_with("amp."))
          in2.training->loss_scalers.push_back(v);
        if (kind == Kind::Optimizer) {
          in2.training->optimizers.push_back(v);
          // `optimizer.parameters`: one object, so value_and_grad(..., optimizer.parameters)
          // names this optimizer.
          Value params = p->get("params");
          std::vector<Value> flat;
          if (auto* items = seq_items(params)) {
            for (const Value& g : *items) {
              if (auto* dict = g.as<DictObj>()) {
                if (Value* ps = dict->find_str("params")) {
                  if (auto* pi = seq_items(*ps)) flat.insert(flat.end(), pi->begin(), pi->end());
                }
              } else {
                flat.push_back(g);
              }
            }
            p->attrs.set(make_str("parameters"), make_tuple(std::move(flat)));
          } else {
            p->attrs.set(make_str("parameters"), params);
          }
        }
        return v;
      }));
}

std::optional<Value> TrainingRecorder::method(Interpreter& in, const Value& obj,
                                              std::string_view name) {
  PlanObj* p = plan_of(obj);
  if (!p) return std::nullopt;
  (void)in;
  std::string nm(name);
  // The attributes MindSpore's TrainOneStepCell keeps (`train_net.network`, `.optimizer`).
  if (p->kind == Kind::TrainOneStep) {
    for (std::string_view key : {"network", "optimizer", "sens", "scale_sense"}) {
      if (name == key) return p->get(key);
    }
  }
  auto builtin = [&](std::string api, auto fn) {
    return Value::obj(std::make_shared<BuiltinObj>(std::move(api), fn));
  };
  // mindspore.amp's loss scalers in the functional idiom: scale(loss) and unscale(grads) give
  // their argument's values times a run-time number (the same types); adjust(finite) updates
  // the scale. The runtime's trainer applies them (runtime/optim_plan.cpp).
  if (p->kind == Kind::LossScale && p->call.api.starts_with("amp.")) {
    if (name == "scale" || name == "unscale") {
      return builtin(p->call.api + "." + nm, [](Interpreter&, CallArgs& a, const Site&) {
        return a.pos.empty() ? Value::unknown() : a.pos[0];
      });
    }
    if (name == "adjust") {
      return builtin(p->call.api + ".adjust", [](Interpreter&, CallArgs&, const Site&) {
        return make_tensor(TensorType{Shape{}, DType::Bool});
      });
    }
    if (name == "scale_value") return make_tensor(TensorType{Shape{}, DType::Float32});
  }
  if (p->kind == Kind::Dataset) {
    static const std::unordered_set<std::string_view> kStages = {"map",    "batch", "shuffle",
                                                                 "repeat", "take",  "project"};
    if (kStages.count(name)) {
      return builtin("Dataset." + nm, [obj, nm](Interpreter& in2, CallArgs& a, const Site& site) {
        PlanObj* parent = plan_of(obj);
        std::string api = "Dataset." + nm;
        Value v = make_plan(in2, Kind::Dataset, api, a, site);
        PlanObj* st = plan_of(v);
        auto d = std::make_shared<DatasetPlan>(*parent->dataset);
        DatasetOp op;
        op.call = st->call;
        if (nm == "map") {
          op.kind = DatasetOp::Kind::Map;
          bool unknown = false;
          const Value* ops = bound(api, a, "operations");
          if (ops) add_transforms(*ops, op.transforms, unknown);
          if (const Value* ic = bound(api, a, "input_columns")) op.input_columns = names_of(*ic);
          std::vector<std::string> outs;
          if (const Value* oc = bound(api, a, "output_columns")) outs = names_of(*oc);
          std::vector<std::string> targets = op.input_columns;
          if (targets.empty() && !d->columns.empty()) targets.push_back(d->columns[0].name);
          std::string why;
          if (unknown)
            why = "a map operation that is not a MindSpore transform (user code) is not followed";
          for (const std::string& col : targets) {
            auto it = std::find_if(d->columns.begin(), d->columns.end(),
                                   [&](const DatasetColumn& c) { return c.name == col; });
            if (it == d->columns.end()) continue;
            std::optional<TensorType> t;
            if (it->type.dtype != DType::Unknown || it->type.shape.ranked) t = it->type;
            for (const PlanCall& tr : op.transforms) apply_transform(tr, t, &why);
            if (unknown) t.reset();
            it->type = t ? *t : TensorType{Shape::unranked(), DType::Unknown};
          }
          if (outs.size() == targets.size()) {
            for (size_t i = 0; i < outs.size(); ++i) {
              for (auto& c : d->columns) {
                if (c.name == targets[i]) c.name = outs[i];
              }
            }
          }
          if (!why.empty() && d->opaque_reason.empty()) {
            d->opaque_reason = why;
            in2.report(site, Severity::Information, "training-not-followed",
                       "dataset columns not followed: " + why);
          }
        } else if (nm == "batch") {
          op.kind = DatasetOp::Kind::Batch;
          const Value* bs = bound(api, a, "batch_size");
          // With drop_remainder=False the last batch may be smaller; the compile uses
          // batch_size (every batch but the last).
          Dim b = in2.options.training_batch ? Dim::known(*in2.options.training_batch)
                  : bs && bs->is_int()       ? Dim::known(bs->as_int())
                                             : Dim::symbol("N");
          for (auto& c : d->columns) {
            if (c.type.shape.ranked) c.type.shape.dims.insert(c.type.shape.dims.begin(), b);
          }
        } else if (nm == "project") {
          op.kind = DatasetOp::Kind::Project;
          if (const Value* cs = bound(api, a, "columns")) op.columns = names_of(*cs);
          std::vector<DatasetColumn> kept;
          for (const std::string& c : op.columns) {
            for (const auto& col : d->columns) {
              if (col.name == c) kept.push_back(col);
            }
          }
          d->columns = std::move(kept);
        } else {
          op.kind = nm == "shuffle"  ? DatasetOp::Kind::Shuffle
                    : nm == "repeat" ? DatasetOp::Kind::Repeat
                                     : DatasetOp::Kind::Take;
        }
        d->ops.push_back(std::move(op));
        st->dataset = std::move(d);
        st->put("parent", obj);
        return v;
      });
    }
    if (name == "create_tuple_iterator" || name == "create_dict_iterator") {
      bool dict = name == "create_dict_iterator";
      return builtin("Dataset." + nm,
                     [obj, dict, nm](Interpreter& in2, CallArgs& a, const Site& site) {
                       std::string api = "Dataset." + nm;
                       Value v = make_plan(in2, Kind::Iterator, api, a, site);
                       PlanObj* it = plan_of(v);
                       it->dict_iterator = dict;
                       const Value* np = bound(api, a, "output_numpy");
                       bool known = true;
                       it->numpy_iterator = np && in2.truthy(*np, &known) && known;
                       it->dataset = plan_of(obj)->dataset;
                       it->put("dataset", obj);
                       return v;
                     });
    }
    return std::nullopt;  // get_dataset_size() and the rest: unknown
  }
  if (p->kind == Kind::Model && (name == "train" || name == "fit")) {
    return builtin("Model." + nm, [obj, nm](Interpreter& in2, CallArgs& a, const Site& site) {
      std::string api = "Model." + nm;
      TrainingEvent& e = in2.training->events.emplace_back();
      e.idiom = TrainingPlan::Idiom::ModelTrain;
      e.site = site;
      e.trainer = obj;
      e.first_export = in2.training->exports.size();
      if (const Value* d = bound(api, a, "train_dataset")) e.dataset = *d;
      if (const Value* cb = bound(api, a, "callbacks")) e.callbacks = *cb;
      if (const Value* vd = bound(api, a, "valid_dataset"); vd && !vd->is_none()) {
        in2.training->evals.push_back(EvalEvent{site, site.range(), obj, *vd, nullptr, {}});
      }
      PlanCall c = plan_call(in2, api, a, site);
      for (const Attr& at : c.args) {
        if (at.name == "epoch" || at.name == "dataset_sink_mode" || at.name == "sink_size")
          e.train_args.push_back(at);
      }
      return Value::none();
    });
  }
  if (p->kind == Kind::Model && name == "eval") {
    return builtin("Model.eval", [obj](Interpreter& in2, CallArgs& a, const Site& site) {
      if (const Value* d = bound("Model.eval", a, "valid_dataset"))
        in2.training->evals.push_back(EvalEvent{site, site.range(), obj, *d, nullptr, {}});
      return Value::unknown();  // the metrics' values: known only by running
    });
  }
  if (p->kind == Kind::TrainOneStep || p->kind == Kind::WithLoss || p->kind == Kind::Loss ||
      p->kind == Kind::LrSchedule) {
    // Cell methods the training scripts call on them.
    if (name == "set_train" || name == "set_grad" || name == "to_float")
      return builtin(nm, [obj](Interpreter&, CallArgs&, const Site&) { return obj; });
  }
  return std::nullopt;
}

TrainingEvent& TrainingRecorder::event_at(TrainingPlan::Idiom idiom, const Site& site,
                                          const Value& trainer) {
  for (auto& e : events) {
    if (e.site.node == site.node && e.trainer.o == trainer.o) return e;
  }
  TrainingEvent& e = events.emplace_back();
  e.idiom = idiom;
  e.site = site;
  e.trainer = trainer;
  e.first_export = exports.size();
  return e;
}

Value TrainingRecorder::call(Interpreter& in, PlanObj* p, const Value& self, CallArgs& args,
                             const Site& site) {
  if (p->kind == Kind::GradFn || p->kind == Kind::TrainOneStep) {
    // A training step is one only inside a loop over a dataset (a call elsewhere, in a test or a
    // helper, is not training).
    if (!loops_.empty()) {
      bool grad = p->kind == Kind::GradFn;
      TrainingEvent& e =
          event_at(grad ? TrainingPlan::Idiom::Functional : TrainingPlan::Idiom::TrainOneStepCell,
                   site, self);
      e.inputs = args.pos;
      e.dataset = loops_.back().dataset;
      e.loop = loops_.back().node;
      e.loop_range = loops_.back().range;
      e.loop_runs.insert(loops_.back().run);
      if (pending_clip_loop_ == e.loop && !e.clip) e.clip = pending_clip_;
    }
    if (p->kind == Kind::TrainOneStep && in.graph == nullptr) {
      // TrainOneStepCell.construct passes its inputs unchanged to the network it wraps
      // (`loss = self.network(*inputs)`): follow it, so a call in the file
      // (`train_net(x, y)`) is also the wrapped network's call site and its shapes are checked.
      Value network = p->get("network");
      if (!network.is_unknown()) {
        CallArgs forward = args;
        in.call(network, forward, site);
      }
    }
    if (p->kind == Kind::GradFn) {
      size_t losses_before = losses.size();
      // Follow forward_fn with the batch: the Cells it calls get call sites with the dataset's
      // types (the first is the network).
      Value fn = p->get("fn");
      size_t before = in.call_sites.size();
      Value out = fn.is_unknown() ? Value::unknown() : in.call(fn, args, site);
      if (!loops_.empty() && in.call_sites.size() > before) {
        for (auto& e : events) {
          if (e.site.node != site.node || e.trainer.o != self.o) continue;
          if (e.network.is_unknown()) e.network = in.call_sites[before].cell;
          // The loss: a registry loss Cell called after the network, or a loss plan object.
          if (e.loss.is_unknown()) {
            for (size_t i = before + 1; i < in.call_sites.size(); ++i) {
              auto* li = in.call_sites[i].cell.as<InstanceObj>();
              if (li && li->cell && li->cell->api) {
                e.loss = in.call_sites[i].cell;
                break;
              }
            }
          }
          if (e.loss.is_unknown() && losses.size() > losses_before) e.loss = losses[losses_before];
        }
      }
      bool known = true;
      Value has_aux = p->get("has_aux");
      bool aux = !has_aux.is_unknown() && in.truthy(has_aux, &known);
      (void)aux;
      return make_tuple({out, Value::unknown()});
    }
    return Value::unknown();
  }
  if (p->kind == Kind::Loss || p->kind == Kind::WithLoss) {
    // A loss Cell the registry does not model: its result is unknown (said once in a graph).
    in.mark_consumed(args.pos);
    if (!in.graph) losses.push_back(self);
    bool tensor_in = std::any_of(args.pos.begin(), args.pos.end(),
                                 [](const Value& v) { return v.as<TensorObj>() != nullptr; });
    if (tensor_in && in.graph) {
      in.report(site, Severity::Information, "unmodelled-api",
                "Cellscope has no shape rule for `" + p->call.api +
                    "`; shapes after this call are unknown");
      auto t = std::make_shared<TensorObj>(TensorType{Shape::unranked(), DType::Unknown});
      t->poisoned = true;
      return Value::obj(t);
    }
    return Value::unknown();
  }
  return Value::unknown();  // optimizer(grads), a schedule's value: run-time numbers
}

std::optional<std::vector<Value>> TrainingRecorder::iterate(Interpreter& in, const Value& v) {
  PlanObj* p = plan_of(v);
  if (!p) return std::nullopt;
  Value ds;
  std::shared_ptr<const DatasetPlan> plan;
  bool dict = false;
  bool numpy = false;
  std::vector<std::string> only;
  if (p->kind == Kind::Iterator) {
    ds = p->get("dataset");
    plan = p->dataset;
    dict = p->dict_iterator;
    numpy = p->numpy_iterator;
    only = names_of(p->get("columns"));
  } else if (p->kind == Kind::Dataset) {  // `for data in dataset:` iterates tuples
    ds = v;
    plan = p->dataset;
  } else {
    return std::nullopt;
  }
  ++iterations;
  last_dataset = ds;
  if (!in.options.training_inputs.empty()) {
    plan = std::make_shared<const DatasetPlan>(
        with_column_types(plan ? *plan : DatasetPlan{}, in.options.training_inputs));
  }
  if (!plan || plan->columns.empty()) return std::vector<Value>{Value::unknown()};
  std::vector<std::pair<std::string, Value>> cols;
  for (const DatasetColumn& c : plan->columns) {
    if (!only.empty() && std::find(only.begin(), only.end(), c.name) == only.end()) continue;
    Value t = Value::unknown();
    if (c.type.dtype != DType::Unknown && c.type.shape.ranked) {
      t = make_tensor(c.type);
      t.as<TensorObj>()->is_numpy = numpy;
    }
    cols.emplace_back(c.name, t);
  }
  if (dict) {
    auto d = std::make_shared<DictObj>();
    for (auto& [k, t] : cols) d->set(make_str(k), t);
    return std::vector<Value>{Value::obj(d)};
  }
  std::vector<Value> items;
  items.reserve(cols.size());
  for (auto& c : cols) items.push_back(c.second);
  return std::vector<Value>{make_tuple(std::move(items))};
}

void TrainingRecorder::enter_loop(Interpreter& in, const ast::Node* loop, const Site& site) {
  loops_.push_back(Loop{loop, site.range(), ++runs_, last_dataset, site, in.call_sites.size()});
}

void TrainingRecorder::exit_loop(Interpreter& in) {
  if (loops_.empty()) return;
  Loop l = std::move(loops_.back());
  loops_.pop_back();
  // Every dataset loop is a candidate evaluation loop; plan_trainings keeps the ones over another
  // dataset that call the trained network and make no training step.
  EvalEvent ev{l.site, l.range, Value::unknown(), l.dataset, l.node, {}};
  for (size_t i = std::min(l.call_sites_before, in.call_sites.size()); i < in.call_sites.size();
       ++i)
    ev.cells.push_back(in.call_sites[i].cell);
  evals.push_back(std::move(ev));
}

void TrainingRecorder::record_export(Interpreter& in, CallArgs& args, const Site& site) {
  exports.push_back(plan_call(in, "ms.export", args, site));
}

void TrainingRecorder::record_clip(CallArgs& args) {
  if (loops_.empty()) return;
  const Value* n = bound("ops.clip_by_global_norm", args, "clip_norm");
  std::optional<double> clip = n ? (n->is_number() ? std::optional(n->as_float()) : std::nullopt)
                                 : std::optional(1.0);  // MindSpore's default clip_norm
  for (auto& e : events) {
    if (e.loop == loops_.back().node) e.clip = clip;
  }
  pending_clip_loop_ = loops_.back().node;
  pending_clip_ = clip;
}

}  // namespace graphcore::eval

namespace graphcore::eval {

namespace {

// Full MindSpore names ("layer1.0.conv1.weight") of the Parameters below a network.
void parameter_names(const Value& cell, const std::string& prefix,
                     std::unordered_map<const TensorObj*, std::string>& out,
                     std::unordered_set<const CellState*>& seen) {
  auto* inst = cell.as<InstanceObj>();
  if (!inst || !inst->cell || !seen.insert(inst->cell.get()).second) return;
  const CellState& cs = *inst->cell;
  auto join = [&](std::string_view k) {
    return prefix.empty() ? std::string(k) : prefix + "." + std::string(k);
  };
  for (const auto& [k, p] : cs.params) {
    if (auto* t = p.as<TensorObj>()) out.emplace(t, join(k));
  }
  for (const auto& [k, c] : cs.children) parameter_names(c, join(k), out, seen);
  for (size_t i = 0; i < cs.items.size(); ++i) {
    parameter_names(cs.items[i],
                    join(i < cs.item_names.size() ? cs.item_names[i] : std::to_string(i)), out,
                    seen);
  }
}

// A Cell or plan object as a call: the loss, a schedule.
std::optional<PlanCall> call_of(Interpreter& in, const Value& v) {
  if (auto* p = plan_of(v)) return p->call;
  auto* inst = v.as<InstanceObj>();
  if (!inst) return std::nullopt;
  PlanCall c;
  if (inst->cell && inst->cell->api && !inst->cls->def) {
    c.api = inst->cell->api->name;
    for (const auto& a : inst->cell->init_args) {
      if (a.explicit_arg) {
        c.args.push_back(
            Attr{std::string(a.name),
                 to_attr(in, a.value, std::string(std::string_view(inst->cell->file)), a.range)});
      }
    }
  } else {
    c.api = inst->cls->name;
  }
  if (inst->cell) {
    c.file = std::string(std::string_view(inst->cell->file));
    c.range = inst->cell->site;
  }
  return c;
}

std::string class_of(const Value& v) {
  if (auto* inst = v.as<InstanceObj>()) return inst->cls->name;
  return {};
}

}  // namespace

std::vector<PlannedTraining> plan_trainings(Interpreter& in, TrainingRecorder& rec) {
  std::vector<PlannedTraining> out;
  for (TrainingEvent& e : rec.events) {
    PlannedTraining pt;
    pt.site = e.site;
    TrainingPlan& plan = pt.plan;
    plan.idiom = e.idiom;
    plan.file = e.site.file();
    plan.range = e.site.range();
    PlanObj* trainer = plan_of(e.trainer);
    Value net = Value::unknown();
    Value loss = Value::unknown();
    Value opt = Value::unknown();
    Value scale = Value::unknown();
    Value with_loss = Value::unknown();  // a Cell computing the loss from (data, label)
    // Unwraps TrainOneStepCell(WithLossCell(net, loss), opt) into its parts.
    auto unwrap = [&](Value v) {
      if (PlanObj* t = plan_of(v); t && t->kind == Kind::TrainOneStep) {
        opt = t->get("optimizer");
        Value s = t->get("scale_sense");
        if (s.is_unknown()) s = t->get("sens");
        if (plan_of(s)) scale = s;
        v = t->get("network");
      }
      if (PlanObj* w = plan_of(v); w && w->kind == Kind::WithLoss) {
        net = w->get("backbone");
        loss = w->get("loss_fn");
        return;
      }
      // nn.WithLossCell as the evaluator models it: its _backbone and _loss_fn attributes.
      if (auto* wi = v.as<InstanceObj>();
          wi && wi->cell && wi->cls->native_base() == NativeClass::WithLossCell) {
        const Value* b = wi->attrs.find_str("_backbone");
        const Value* l = wi->attrs.find_str("_loss_fn");
        if (b && l) {
          net = *b;
          loss = *l;
          return;
        }
      }
      // nn.WithLossCell once the registry models it: its constructor arguments are the parts.
      if (auto* wi = v.as<InstanceObj>();
          wi && wi->cell && wi->cell->api && wi->cell->api->name == "nn.WithLossCell") {
        auto backbone = in.api_init_arg(*wi->cell, "backbone");
        auto loss_arg = in.api_init_arg(*wi->cell, "loss_fn");
        if (backbone && loss_arg) {
          net = backbone->value;
          loss = loss_arg->value;
          return;
        }
      }
      if (v.as<InstanceObj>() && !v.as<InstanceObj>()->cell) return;
      return void(net = v);
    };
    if (e.idiom == TrainingPlan::Idiom::ModelTrain && trainer) {
      Value network = trainer->get("network");
      unwrap(network);
      if (plan_of(network) && plan_of(network)->kind == Kind::TrainOneStep) {
        // Model(TrainOneStepCell(...)): the network already steps the optimizer.
      } else {
        if (Value o = trainer->get("optimizer"); !o.is_unknown()) opt = o;
        if (Value l = trainer->get("loss_fn"); !l.is_unknown() && !l.is_none()) loss = l;
        if (loss.is_unknown() && net.as<InstanceObj>()) {
          with_loss = net;  // Model(net_with_loss, optimizer=opt): the network returns the loss
        }
      }
      if (Value s = trainer->get("loss_scale_manager"); plan_of(s)) scale = s;
      for (const Attr& a : e.train_args) {
        if (a.name == "epoch") {
          if (auto* i = std::get_if<int64_t>(&a.value)) plan.epochs = *i;
        } else if (a.name == "dataset_sink_mode") {
          if (auto* b = std::get_if<bool>(&a.value)) plan.dataset_sink_mode = *b;
        } else if (a.name == "sink_size") {
          if (auto* i = std::get_if<int64_t>(&a.value)) plan.sink_size = *i;
        }
      }
      std::vector<Value> cbs;
      if (auto* items = seq_items(e.callbacks)) {
        cbs = *items;
      } else if (!e.callbacks.is_unknown() && !e.callbacks.is_none()) {
        cbs.push_back(e.callbacks);
      }
      for (const Value& cb : cbs) {
        if (auto c = call_of(in, cb)) plan.callbacks.push_back(std::move(*c));
      }
    } else if (e.idiom == TrainingPlan::Idiom::TrainOneStepCell) {
      unwrap(e.trainer);
      if (net.is_unknown()) {
        Value nwl = trainer ? trainer->get("network") : Value::unknown();
        if (auto* inst = nwl.as<InstanceObj>(); inst && inst->cell) {
          with_loss = nwl;
          // A user's loss wrapper: the network is its first sub-Cell with Parameters.
          for (const auto& [k, c] : inst->cell->children) {
            auto* ci = c.as<InstanceObj>();
            if (ci && ci->cell && (!ci->cell->params.empty() || !ci->cell->children.empty())) {
              net = c;
              break;
            }
          }
        }
      }
    } else if (e.idiom == TrainingPlan::Idiom::Functional && trainer) {
      net = e.network;
      loss = e.loss;
      Value weights = trainer->get("weights");
      for (const Value& o : rec.optimizers) {
        Value* ps = plan_of(o)->attrs.find_str("parameters");
        if (ps && ps->o && ps->o == weights.o) opt = o;
      }
      if (opt.is_unknown() && rec.optimizers.size() == 1) opt = rec.optimizers[0];
      // `loss_scaler.scale(loss)` in forward_fn, `unscale(grads)`, `all_finite` and
      // `adjust(is_finite)` in train_step: the scaler the program built.
      if (!rec.loss_scalers.empty()) scale = rec.loss_scalers.back();
      Value fn = trainer->get("fn");
      if (auto* f = fn.as<FunctionObj>()) {
        pt.callee = fn;
        bool known = true;
        Value aux = trainer->get("has_aux");
        pt.first_output_only = !aux.is_unknown() && in.truthy(aux, &known) && known;
        (void)f;
      }
    }
    if (e.idiom != TrainingPlan::Idiom::ModelTrain) {
      if (!e.loop_runs.empty()) plan.epochs = static_cast<int64_t>(e.loop_runs.size());
      plan.range = e.loop_range.start == e.loop_range.end ? plan.range : e.loop_range;
    }
    plan.clip_global_norm = e.clip;
    pt.network = net;
    pt.loss_fn = loss;
    plan.network = class_of(net);
    if (auto c = call_of(in, loss)) plan.loss = std::move(*c);
    if (auto* o = plan_of(opt)) {
      plan.optimizer = o->call;
      std::unordered_map<const TensorObj*, std::string> names;
      std::unordered_set<const CellState*> seen;
      parameter_names(net, "", names, seen);
      auto name_of = [&](const Value& p) -> std::string {
        auto* t = p.as<TensorObj>();
        if (!t) return {};
        auto it = names.find(t);
        return it != names.end() ? it->second : t->param_name;
      };
      Value params = o->get("params");
      if (auto* groups = seq_items(params);
          groups && std::any_of(groups->begin(), groups->end(),
                                [](const Value& g) { return g.as<DictObj>() != nullptr; })) {
        for (const Value& g : *groups) {
          auto* d = g.as<DictObj>();
          if (!d) continue;
          TrainingPlan::ParamGroup group;
          for (auto& [k, v] : d->entries) {
            const std::string* key = str_of(k);
            if (!key) continue;
            if (*key == "params" || *key == "order_params") {
              if (auto* ps = seq_items(v)) {
                for (const Value& p : *ps) group.params.push_back(name_of(p));
              }
              if (*key == "order_params") group.overrides.push_back(Attr{"order_params", true});
            } else {
              group.overrides.push_back(Attr{*key, to_attr(in, v, plan.file, SourceRange{})});
            }
          }
          plan.param_groups.push_back(std::move(group));
        }
      }
      Value lr = o->get("learning_rate");
      if (auto* lp = plan_of(lr); lp && lp->kind == Kind::LrSchedule) {
        plan.lr_schedule = lp->call;
      } else if (lr.as<InstanceObj>()) {
        plan.lr_schedule = call_of(in, lr);  // a LearningRateSchedule subclass
        pt.lr_cell = lr;
      }
    } else if (!opt.is_unknown() || e.idiom != TrainingPlan::Idiom::ModelTrain ||
               (trainer && !trainer->get("optimizer").is_unknown())) {
      in.report(e.site, Severity::Information, "training-not-followed",
                "training plan: the optimizer is not one the analyser follows (an nn optimizer "
                "built in this program)");
    }
    if (auto c = call_of(in, scale)) plan.loss_scale_manager = std::move(*c);
    // The dataset.
    if (PlanObj* d = plan_of(e.dataset); d && d->dataset) {
      plan.dataset = *d->dataset;
    } else {
      in.report(e.site, Severity::Information, "training-not-followed",
                "training plan: the dataset is not a mindspore.dataset pipeline built in this "
                "program, so its batches' types are unknown");
    }
    // The program's own evaluation pipeline (the first that applies, in program order):
    // Model.eval / fit's valid_dataset on this Model, or a loop over another dataset that calls
    // the network and is not a training loop.
    const bool is_model = e.idiom == TrainingPlan::Idiom::ModelTrain;
    for (const EvalEvent& ev : rec.evals) {
      PlanObj* d = plan_of(ev.dataset);
      if (!d || !d->dataset) continue;
      if (ev.loop == nullptr) {
        if (!is_model || ev.trainer.o != e.trainer.o) continue;
      } else {
        if (net.is_unknown() || ev.dataset.o == e.dataset.o) continue;
        const bool training_loop = std::any_of(
            rec.events.begin(), rec.events.end(),
            [&](const TrainingEvent& t) { return t.loop != nullptr && t.loop == ev.loop; });
        const bool calls_net = std::any_of(ev.cells.begin(), ev.cells.end(),
                                           [&](const Value& c) { return c.o == net.o; });
        if (training_loop || !calls_net) continue;
      }
      plan.eval_dataset = *d->dataset;
      plan.eval_range = ev.range;
      break;
    }
    for (size_t i = e.first_export; i < rec.exports.size(); ++i)
      plan.exports.push_back(rec.exports[i]);
    // What the loss graph is compiled from, and its inputs.
    if (e.idiom != TrainingPlan::Idiom::ModelTrain && !e.inputs.empty()) {
      for (size_t i = 0; i < e.inputs.size(); ++i) {
        auto* t = e.inputs[i].as<TensorObj>();
        pt.inputs.push_back(t ? t->type : TensorType{Shape::unranked(), DType::Unknown});
        // The batch's columns when the step takes them in order (`train_net(image, label)`).
        const bool by_column = plan.dataset && plan.dataset->columns.size() == e.inputs.size();
        pt.input_names.push_back(by_column ? plan.dataset->columns[i].name
                                           : "input" + std::to_string(i));
      }
    } else if (plan.dataset) {
      if (!in.options.training_inputs.empty())
        plan.dataset = with_column_types(*plan.dataset, in.options.training_inputs);
      for (const DatasetColumn& c : plan.dataset->columns) {
        pt.inputs.push_back(c.type);
        pt.input_names.push_back(c.name);
      }
    }
    if (pt.callee.is_unknown()) {
      if (!with_loss.is_unknown()) {
        pt.callee = with_loss;
      } else if (net.as<InstanceObj>() && !loss.is_unknown()) {
        // WithLossCell(net, loss_fn).construct(data, label): loss_fn(net(data), label).
        pt.callee = Value::obj(std::make_shared<BuiltinObj>(
            "nn.WithLossCell", [net, loss](Interpreter& in2, CallArgs& a, const Site& s) {
              if (a.pos.size() != 2) {
                in2.report(s, Severity::Information, "training-not-followed",
                           "training plan: WithLossCell takes (data, label), the dataset has " +
                               std::to_string(a.pos.size()) + " columns");
                return Value::unknown();
              }
              CallArgs na;
              na.pos = {a.pos[0]};
              na.pos_ranges = {s.range()};
              Value logits = in2.call(net, na, s);
              CallArgs la;
              la.pos = {logits, a.pos[1]};
              la.pos_ranges = {s.range(), s.range()};
              return in2.call(loss, la, s);
            }));
      }
    }
    if (net.is_unknown()) {
      in.report(e.site, Severity::Information, "training-not-followed",
                "training plan: the network trained here is not a Cell built in this program");
    }
    out.push_back(std::move(pt));
  }
  return out;
}

}  // namespace graphcore::eval
