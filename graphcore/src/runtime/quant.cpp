// Post-training int8 quantisation: graphcore/quant.h, docs/precision.md.
#include "graphcore/quant.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>

#include "graphcore/opdef.h"
#include "runtime/kernels.h"
#include "runtime/parallel.h"

namespace graphcore::runtime::quant {

namespace {
constexpr double kInt8Sym = 127.0;
constexpr int64_t kKlLevels = 128;  // the int8 levels of one sign (TensorRT, Lite: INT8_MAX + 1)
constexpr double kInt32Max = 2147483647.0;

double round_away(double v) { return std::round(v); }  // std::round: half away from zero

bool is_weight_name(const std::string& name) {
  return name == "weight" || (name.size() > 7 && name.ends_with(".weight"));
}
bool is_bias_name(const std::string& name) {
  return name == "bias" || (name.size() > 5 && name.ends_with(".bias"));
}

[[noreturn]] void fail(const std::string& msg) { throw RuntimeError(msg); }

}  // namespace

std::string_view calibration_name(Calibration c) {
  switch (c) {
    case Calibration::MinMax:
      return "minmax";
    case Calibration::Percentile:
      return "percentile";
    case Calibration::KL:
      return "kl";
  }
  return "minmax";
}

std::optional<Calibration> calibration_from_name(std::string_view name) {
  if (name == "minmax") return Calibration::MinMax;
  if (name == "percentile") return Calibration::Percentile;
  if (name == "kl") return Calibration::KL;
  return std::nullopt;
}

// ---- numeric rules -----------------------------------------------------------------------------

ActivationParams activation_params(double lo, double hi) {
  ActivationParams q;
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return q;
  q.scale = (hi - lo) / 255.0;
  q.zero_point = static_cast<int32_t>(std::clamp(round_away(-128.0 - lo / q.scale), -128.0, 127.0));
  return q;
}

int32_t quantize_level(double x, const ActivationParams& q) {
  const auto zp = static_cast<double>(q.zero_point);
  if (std::isnan(x) || q.scale <= 0) return q.zero_point;
  return static_cast<int32_t>(std::clamp(round_away(x / q.scale) + zp, -128.0, 127.0));
}

Tensor fake_quantize(const Tensor& x, const ActivationParams& q) {
  if (!x.is_float() || q.scale <= 0) return x;
  Tensor out = Tensor::uninitialized(x.shape(), DType::Float32);
  const auto* src = x.data<float>();
  auto* dst = out.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    dst[i] = static_cast<float>((quantize_level(src[i], q) - q.zero_point) * q.scale);
  }
  return out;
}

WeightQuant quantize_weight(const Tensor& w) {
  WeightQuant r;
  if (!w.is_float() || w.rank() == 0)
    fail("a quantised weight must be a float tensor of rank >= 1");
  r.shape = w.shape();
  const int64_t channels = w.shape()[0];
  const int64_t inner = channels > 0 ? w.numel() / channels : 0;
  r.scales.assign(static_cast<size_t>(channels), 0.0);
  r.levels.assign(static_cast<size_t>(w.numel()), 0);
  const auto* src = w.data<float>();
  for (int64_t c = 0; c < channels; ++c) {
    const float* row = src + c * inner;
    double amax = 0;
    for (int64_t i = 0; i < inner; ++i) {
      if (std::isfinite(row[i])) amax = std::max(amax, std::abs(static_cast<double>(row[i])));
    }
    const double s = amax / kInt8Sym;
    r.scales[static_cast<size_t>(c)] = s;
    if (s <= 0) continue;
    for (int64_t i = 0; i < inner; ++i) {
      const double v = std::isnan(row[i]) ? 0.0 : row[i] / s;
      r.levels[static_cast<size_t>(c * inner + i)] =
          static_cast<int8_t>(std::clamp(round_away(v), -kInt8Sym, kInt8Sym));
    }
  }
  return r;
}

Tensor dequantize_weight(const WeightQuant& w) {
  Tensor out = Tensor::uninitialized(w.shape, DType::Float32);
  auto* dst = out.data<float>();
  const auto channels = static_cast<int64_t>(w.scales.size());
  const int64_t inner = channels > 0 ? out.numel() / channels : 0;
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t i = 0; i < inner; ++i) {
      dst[c * inner + i] = static_cast<float>(w.levels[static_cast<size_t>(c * inner + i)] *
                                              w.scales[static_cast<size_t>(c)]);
    }
  }
  return out;
}

int64_t kl_threshold_bins(std::span<const double> hist) {
  const auto bins = static_cast<int64_t>(hist.size());
  if (bins <= kKlLevels) return bins;
  // Fewer non-empty bins than levels (few distinct values, as an image's pixels): KL cannot see
  // a clipping there (the mass folded into one non-empty bin leaves P = Q after normalising, so
  // the narrowest candidate wins with KL 0); the whole range is kept.
  if (std::count_if(hist.begin(), hist.end(), [](double v) { return v != 0; }) < kKlLevels)
    return bins;
  // The mass beyond the candidate threshold, folded into its last bin.
  double outliers = 0;
  for (int64_t k = kKlLevels; k < bins; ++k) outliers += hist[static_cast<size_t>(k)];
  int64_t best = kKlLevels;
  double best_kl = std::numeric_limits<double>::infinity();
  std::vector<double> p, q(kKlLevels), expanded;
  // Candidates up to the whole histogram (MindSpore Lite stops one bin short, which never keeps
  // the full range: on a histogram of few distinct values every candidate then costs the same
  // and the narrowest wins).
  for (int64_t i = kKlLevels; i <= bins; ++i) {
    p.assign(hist.begin(), hist.begin() + i);
    p[static_cast<size_t>(i - 1)] += outliers;
    if (i < bins) outliers -= hist[static_cast<size_t>(i)];
    // The i bins merged into 128 levels; level j covers [j i / 128, (j + 1) i / 128) in bin
    // units (exact in binary: 128 is a power of two), a bin cut by an edge split by its share.
    const double width = static_cast<double>(i) / kKlLevels;
    std::fill(q.begin(), q.end(), 0.0);
    expanded.assign(static_cast<size_t>(i), 0.0);
    for (int64_t j = 0; j < kKlLevels; ++j) {
      const double start = static_cast<double>(j) * width;
      const double end = start + width;
      const auto first = static_cast<int64_t>(std::ceil(start));
      const auto last = static_cast<int64_t>(std::floor(end));
      const double left = static_cast<double>(first) - start;  // share of bin first - 1
      const double right = end - static_cast<double>(last);    // share of bin last
      double mass = 0, support = 0;
      auto h = [&](int64_t k) { return hist[static_cast<size_t>(k)]; };
      if (left > 0) {
        mass += left * h(first - 1);
        if (h(first - 1) != 0) support += left;
      }
      if (right > 0 && last < i) {
        mass += right * h(last);
        if (h(last) != 0) support += right;
      }
      for (int64_t k = first; k < last; ++k) {
        mass += h(k);
        if (h(k) != 0) support += 1;
      }
      q[static_cast<size_t>(j)] = mass;
      // Expanded back over the bins that were not empty, in proportion to their share.
      if (support == 0) continue;
      const double avg = mass / support;
      if (left > 0 && h(first - 1) != 0) expanded[static_cast<size_t>(first - 1)] += avg * left;
      if (right > 0 && last < i && h(last) != 0) expanded[static_cast<size_t>(last)] += avg * right;
      for (int64_t k = first; k < last; ++k) {
        if (h(k) != 0) expanded[static_cast<size_t>(k)] += avg;
      }
    }
    const double ps = std::accumulate(p.begin(), p.end(), 0.0);
    const double qs = std::accumulate(expanded.begin(), expanded.end(), 0.0);
    if (ps <= 0 || qs <= 0) continue;
    double kl = 0;
    for (int64_t k = 0; k < i; ++k) {
      const double pk = p[static_cast<size_t>(k)] / ps;
      if (pk == 0) continue;
      const double qk = expanded[static_cast<size_t>(k)] / qs;
      // A bin P has and Q lost counts 1 (MindSpore Lite's rule; the limit is infinite).
      kl += qk == 0 ? 1.0 : pk * std::log(pk / qk);
    }
    if (kl < best_kl) {
      best_kl = kl;
      best = i;
    }
  }
  return best;
}

std::pair<double, double> percentile_range(std::span<const double> hist, double lo, double hi,
                                           double percent) {
  const auto bins = static_cast<int64_t>(hist.size());
  const double total = std::accumulate(hist.begin(), hist.end(), 0.0);
  if (bins == 0 || total <= 0 || !(hi > lo)) return {lo, hi};
  const double width = (hi - lo) / static_cast<double>(bins);
  const double target = percent / 100.0 * total;
  double run = 0;
  double top = hi;
  for (int64_t k = 0; k < bins; ++k) {
    run += hist[static_cast<size_t>(k)];
    if (run >= target) {
      top = lo + static_cast<double>(k + 1) * width;
      break;
    }
  }
  run = 0;
  double bottom = lo;
  for (int64_t k = bins; k-- > 0;) {
    run += hist[static_cast<size_t>(k)];
    if (run >= target) {
      bottom = lo + static_cast<double>(k) * width;
      break;
    }
  }
  return {std::max(bottom, lo), std::min(top, hi)};
}

// ---- observers ----------------------------------------------------------------------------------

Observer::Observer(CalibrationOptions o)
    : opt_(o),
      min_(std::numeric_limits<double>::infinity()),
      max_(-std::numeric_limits<double>::infinity()) {}

void Observer::observe(const Tensor& t, int pass) {
  if (!t.is_float()) return;
  const auto* p = t.data<float>();
  const int64_t n = t.numel();
  if (pass == 0) {
    for (int64_t i = 0; i < n; ++i) {
      if (!std::isfinite(p[i])) continue;
      min_ = std::min(min_, static_cast<double>(p[i]));
      max_ = std::max(max_, static_cast<double>(p[i]));
      ++count_;
    }
    return;
  }
  if (opt_.method == Calibration::MinMax || count_ == 0) return;
  const int64_t bins = opt_.bins;
  if (hist_.empty()) hist_.assign(static_cast<size_t>(bins), 0.0);
  if (opt_.method == Calibration::KL) {
    // |x| over [0, max|x|), zeros not counted (MindSpore Lite's DivergInfo::UpdateHistogram).
    const double amax = std::max(std::abs(min_), std::abs(max_));
    if (amax <= 0) return;
    const double width = amax / static_cast<double>(bins);
    for (int64_t i = 0; i < n; ++i) {
      const double v = std::abs(static_cast<double>(p[i]));
      if (!std::isfinite(v) || v == 0) continue;
      const auto k = std::min(static_cast<int64_t>(v / width), bins - 1);
      hist_[static_cast<size_t>(k)] += 1;
    }
    return;
  }
  // Percentile: the signed values over [min, max].
  const double span = max_ - min_;
  for (int64_t i = 0; i < n; ++i) {
    const double v = p[i];
    if (!std::isfinite(v)) continue;
    int64_t k =
        span > 0 ? static_cast<int64_t>((v - min_) * (static_cast<double>(bins) / span)) : 0;
    k = std::clamp<int64_t>(k, 0, bins - 1);
    hist_[static_cast<size_t>(k)] += 1;
  }
}

std::pair<double, double> Observer::range() const {
  if (count_ == 0) return {0.0, 0.0};
  switch (opt_.method) {
    case Calibration::MinMax:
      return {min_, max_};
    case Calibration::Percentile:
      if (hist_.empty()) return {min_, max_};
      return percentile_range(hist_, min_, max_, opt_.percentile);
    case Calibration::KL: {
      const double amax = std::max(std::abs(min_), std::abs(max_));
      if (hist_.empty() || amax <= 0) return {min_, max_};
      const int64_t t = kl_threshold_bins(hist_);
      const double threshold =
          (static_cast<double>(t) + 0.5) * (amax / static_cast<double>(opt_.bins));
      return {std::max(min_, -threshold), std::min(max_, threshold)};
    }
  }
  return {min_, max_};
}

// ---- the table ----------------------------------------------------------------------------------

const NodeQuant* QuantTable::find(const Node& n) const {
  const std::string w = weight_param(n);
  for (const NodeQuant& e : nodes) {
    if (!w.empty() ? e.weight == w : (e.weight.empty() && e.node == n.id)) return &e;
  }
  return nullptr;
}

namespace {

nlohmann::json tensor_json(const TensorQuant& t) {
  return {{"min", t.min},
          {"max", t.max},
          {"scale", t.params.scale},
          {"zero_point", t.params.zero_point}};
}

struct Reader {
  const std::string& file;
  [[noreturn]] void bad(const std::string& where, const std::string& what) const {
    throw RuntimeError(file + ": " + where + (where.empty() ? "" : ": ") + what);
  }
  const nlohmann::json& field(const nlohmann::json& o, const char* key,
                              const std::string& where) const {
    if (!o.is_object()) bad(where, "must be an object");
    auto it = o.find(key);
    if (it == o.end()) bad(where, std::string("the field \"") + key + "\" is missing");
    return *it;
  }
  double number(const nlohmann::json& o, const char* key, const std::string& where) const {
    const nlohmann::json& v = field(o, key, where);
    if (!v.is_number()) bad(where + "." + key, "must be a number");
    const double d = v.get<double>();
    if (!std::isfinite(d)) bad(where + "." + key, "must be finite");
    return d;
  }
  std::string string(const nlohmann::json& o, const char* key, const std::string& where) const {
    const nlohmann::json& v = field(o, key, where);
    if (!v.is_string()) bad(where + "." + key, "must be a string");
    return v.get<std::string>();
  }
  TensorQuant tensor(const nlohmann::json& o, const std::string& where) const {
    TensorQuant t;
    t.min = number(o, "min", where);
    t.max = number(o, "max", where);
    t.params.scale = number(o, "scale", where);
    const nlohmann::json& zp = field(o, "zero_point", where);
    if (!zp.is_number_integer() || zp.get<int64_t>() < -128 || zp.get<int64_t>() > 127)
      bad(where + ".zero_point", "must be an integer in -128..127");
    t.params.zero_point = static_cast<int32_t>(zp.get<int64_t>());
    if (t.params.scale < 0) bad(where + ".scale", "must not be negative");
    if (t.min > t.max) bad(where, "min is larger than max");
    return t;
  }
};

}  // namespace

std::string write_quant_table(const QuantTable& t) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const NodeQuant& n : t.nodes) {
    nlohmann::json inputs = nlohmann::json::array();
    for (const TensorQuant& q : n.inputs) inputs.push_back(tensor_json(q));
    nodes.push_back({{"node", n.node},
                     {"op", n.op},
                     {"weight", n.weight},
                     {"inputs", inputs},
                     {"output", tensor_json(n.output)},
                     {"weight_scales", n.weight_scales}});
  }
  nlohmann::json j = {{"format", "cellscope-quant-table"},
                      {"version", QuantTable::kVersion},
                      {"activations",
                       "int8 per tensor, asymmetric: q = clamp(round(x / scale) + zero_point, "
                       "-128, 127)"},
                      {"weights",
                       "int8 per output channel (axis 0), symmetric: q = clamp(round(w / scale), "
                       "-127, 127)"},
                      {"accumulation", "int32; bias as int32 at scale input_scale * weight_scale"},
                      {"calibration",
                       {{"method", std::string(calibration_name(t.calibration.method))},
                        {"percentile", t.calibration.percentile},
                        {"bins", t.calibration.bins},
                        {"samples", t.calibration_samples}}},
                      {"nodes", nodes}};
  return j.dump(1) + "\n";
}

QuantTable read_quant_table(std::string_view text, const std::string& file) {
  Reader r{file};
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    r.bad("", std::string("not JSON (") + e.what() + ")");
  }
  if (!j.is_object()) r.bad("", "not a quantisation table (the top level is not an object)");
  if (!j.contains("format") || j["format"] != "cellscope-quant-table")
    r.bad("", "not a quantisation table (\"format\" is not \"cellscope-quant-table\")");
  const nlohmann::json& v = r.field(j, "version", "");
  if (!v.is_number_integer()) r.bad("version", "must be an integer");
  if (v.get<int64_t>() != QuantTable::kVersion) {
    r.bad("version", std::to_string(v.get<int64_t>()) +
                         " is not the version this cellscope reads (" +
                         std::to_string(QuantTable::kVersion) + ")");
  }
  QuantTable t;
  const nlohmann::json& cal = r.field(j, "calibration", "");
  const std::string method = r.string(cal, "method", "calibration");
  auto m = calibration_from_name(method);
  if (!m) r.bad("calibration.method", "\"" + method + "\" is not minmax, percentile or kl");
  t.calibration.method = *m;
  t.calibration.percentile = r.number(cal, "percentile", "calibration");
  const nlohmann::json& bins = r.field(cal, "bins", "calibration");
  const nlohmann::json& samples = r.field(cal, "samples", "calibration");
  if (!bins.is_number_integer() || bins.get<int64_t>() < 1)
    r.bad("calibration.bins", "must be a positive integer");
  if (!samples.is_number_integer() || samples.get<int64_t>() < 0)
    r.bad("calibration.samples", "must be a non-negative integer");
  t.calibration.bins = bins.get<int64_t>();
  t.calibration_samples = samples.get<int64_t>();
  const nlohmann::json& nodes = r.field(j, "nodes", "");
  if (!nodes.is_array()) r.bad("nodes", "must be an array");
  std::set<std::string> keys;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string where = "nodes[" + std::to_string(i) + "]";
    const nlohmann::json& e = nodes[i];
    NodeQuant n;
    n.node = r.string(e, "node", where);
    n.op = r.string(e, "op", where);
    n.weight = r.string(e, "weight", where);
    if (n.node.empty() && n.weight.empty()) r.bad(where, "names neither a node nor a weight");
    const nlohmann::json& ins = r.field(e, "inputs", where);
    if (!ins.is_array() || ins.empty() || ins.size() > 2)
      r.bad(where + ".inputs", "must be an array of 1 or 2 tensors");
    for (size_t k = 0; k < ins.size(); ++k)
      n.inputs.push_back(r.tensor(ins[k], where + ".inputs[" + std::to_string(k) + "]"));
    n.output = r.tensor(r.field(e, "output", where), where + ".output");
    const nlohmann::json& ws = r.field(e, "weight_scales", where);
    if (!ws.is_array()) r.bad(where + ".weight_scales", "must be an array");
    for (size_t k = 0; k < ws.size(); ++k) {
      if (!ws[k].is_number() || !std::isfinite(ws[k].get<double>()) || ws[k].get<double>() < 0)
        r.bad(where + ".weight_scales[" + std::to_string(k) + "]", "must be a finite number >= 0");
      n.weight_scales.push_back(ws[k].get<double>());
    }
    if (n.weight.empty() != n.weight_scales.empty())
      r.bad(where, "a weight needs its scales, and scales need a weight");
    if (!keys.insert(n.key()).second) r.bad(where, "\"" + n.key() + "\" is in the table twice");
    t.nodes.push_back(std::move(n));
  }
  return t;
}

// ---- nodes, calibration -------------------------------------------------------------------------

bool quantizable(const Node& n) {
  if (n.kind != NodeKind::Op) return false;
  if (n.op != "Conv2D" && n.op != "MatMul" && n.op != "BatchMatMul" && n.op != "Dense")
    return false;
  const OpDef* def = find_op(n.op);
  return def != nullptr && def->unit == OpUnit::Cube && !def->backward && !def->pass_only;
}

std::string weight_param(const Node& n) {
  for (const std::string& p : n.params) {
    if (is_weight_name(p)) return p;
  }
  return "";
}

size_t activation_inputs(const Node& n) {
  return std::min<size_t>(n.inputs.size(), weight_param(n).empty() ? 2 : 1);
}

Calibrator::Calibrator(const Graph& graph, CalibrationOptions o, std::vector<size_t> only)
    : g_(graph), opt_(o) {
  if (o.method == Calibration::Percentile && !(o.percentile > 50 && o.percentile <= 100))
    fail("the calibration percentile must be in (50, 100], got " + std::to_string(o.percentile));
  if (o.method == Calibration::KL && o.bins <= kKlLevels)
    fail("KL calibration needs more than 128 histogram bins");
  if (o.bins < 1) fail("the calibration histogram needs at least one bin");
  if (only.empty()) {
    for (size_t i = 0; i < g_.nodes.size(); ++i) only.push_back(i);
  }
  for (size_t i : only) {
    if (i < g_.nodes.size() && quantizable(g_.nodes[i])) nodes_.push_back(i);
  }
  for (size_t i : nodes_) {
    for (size_t k = 0; k < activation_inputs(g_.nodes[i]); ++k) in_.try_emplace({i, k}, opt_);
    out_.try_emplace({i, 0}, opt_);
  }
}

int Calibrator::passes() const { return opt_.method == Calibration::MinMax ? 1 : 2; }

Hooks Calibrator::hooks() {
  Hooks h;
  h.rewrite_inputs = [this](const Node&, size_t index, std::vector<Tensor>& inputs) {
    for (size_t k = 0; k < inputs.size(); ++k) {
      auto it = in_.find({index, k});
      if (it != in_.end()) it->second.observe(inputs[k], pass_);
    }
  };
  h.rewrite_outputs = [this](const Node&, size_t index, std::vector<Tensor>& outputs) {
    auto it = out_.find({index, 0});
    if (it != out_.end() && !outputs.empty()) it->second.observe(outputs[0], pass_);
  };
  return h;
}

QuantTable Calibrator::finish(const Executor& weights) const {
  QuantTable t;
  t.calibration = opt_;
  t.calibration_samples = samples_;
  auto tensor = [](const Observer& o) {
    TensorQuant q;
    auto [lo, hi] = o.range();
    q.min = lo;
    q.max = hi;
    q.params = activation_params(lo, hi);
    return q;
  };
  for (size_t i : nodes_) {
    const Node& n = g_.nodes[i];
    NodeQuant e;
    e.node = n.id;
    e.op = std::string(n.op);
    e.weight = weight_param(n);
    bool seen = true;
    for (size_t k = 0; k < activation_inputs(n); ++k) {
      const Observer& o = in_.at({i, k});
      seen = seen && o.count() > 0;
      e.inputs.push_back(tensor(o));
      // The network's own input (a graph Input, not an activation): its range is the data's,
      // set by the preprocessing; clipping it loses signal the histogram methods cannot judge
      // (an image's few distinct pixel values are not a bell-shaped activation): min/max.
      if (g_.nodes[n.inputs[k].node].kind == NodeKind::Input && o.count() > 0) {
        TensorQuant& whole = e.inputs.back();
        whole.min = o.min();
        whole.max = o.max();
        whole.params = activation_params(whole.min, whole.max);
      }
    }
    if (!seen || e.inputs.empty()) continue;  // not run on the calibration batches
    e.output = tensor(out_.at({i, 0}));
    if (!e.weight.empty()) {
      const ParamState* p = weights.param(e.weight);
      if (p == nullptr || !p->value.is_float() || p->value.rank() < 2) continue;
      e.weight_scales = quantize_weight(p->value).scales;
    }
    t.nodes.push_back(std::move(e));
  }
  return t;
}

// ---- integer kernels ----------------------------------------------------------------------------

namespace {

int64_t max_abs(std::span<const int16_t> v) {
  int64_t m = 0;
  for (int16_t x : v) m = std::max<int64_t>(m, std::abs(static_cast<int64_t>(x)));
  return m;
}

void check_sum_fits(int64_t k, int64_t a, int64_t b, const char* what) {
  const double bound = static_cast<double>(k) * static_cast<double>(a) * static_cast<double>(b);
  if (bound > kInt32Max) {
    fail(std::string(what) + ": an int32 sum of " + std::to_string(k) +
         " products of levels up to " + std::to_string(a) + " and " + std::to_string(b) +
         " could overflow");
  }
}

}  // namespace

std::vector<int32_t> conv2d_int32(const ConvShape& s, std::span<const int16_t> x,
                                  std::span<const int16_t> w) {
  if (s.groups <= 0 || s.c % s.groups != 0 || s.o % s.groups != 0) fail("int8 Conv2D: bad groups");
  const int64_t cg = s.c / s.groups, og = s.o / s.groups;
  const int64_t k = cg * s.kh * s.kw, p = s.out_h * s.out_w;
  if (static_cast<int64_t>(x.size()) != s.n * s.c * s.h * s.w ||
      static_cast<int64_t>(w.size()) != s.o * k)
    fail("int8 Conv2D: operand sizes do not match the geometry");
  check_sum_fits(k, max_abs(x), max_abs(w), "int8 Conv2D");
  std::vector<int32_t> out(static_cast<size_t>(s.n * s.o * p), 0);
  std::vector<int16_t> cols(static_cast<size_t>(k * p));
  for (int64_t b = 0; b < s.n; ++b) {
    for (int64_t g = 0; g < s.groups; ++g) {
      // The window's levels, one row per (channel, kernel row, kernel column); padding is 0.
      for (int64_t c = 0; c < cg; ++c) {
        const int16_t* xc = x.data() + ((b * s.c) + g * cg + c) * s.h * s.w;
        for (int64_t i = 0; i < s.kh; ++i) {
          for (int64_t j = 0; j < s.kw; ++j) {
            int16_t* row = cols.data() + ((c * s.kh + i) * s.kw + j) * p;
            for (int64_t r = 0; r < s.out_h; ++r) {
              const int64_t y = r * s.stride_h - s.pad_top + i * s.dil_h;
              for (int64_t q = 0; q < s.out_w; ++q) {
                const int64_t xx = q * s.stride_w - s.pad_left + j * s.dil_w;
                row[r * s.out_w + q] =
                    (y >= 0 && y < s.h && xx >= 0 && xx < s.w) ? xc[y * s.w + xx] : int16_t{0};
              }
            }
          }
        }
      }
      parallel_for(og, std::max<int64_t>(1, kGrainMath / std::max<int64_t>(1, k * p / 64)),
                   [&](int64_t o0, int64_t o1) {
                     for (int64_t o = o0; o < o1; ++o) {
                       const int64_t oc = g * og + o;
                       int32_t* acc = out.data() + (b * s.o + oc) * p;
                       const int16_t* wr = w.data() + oc * k;
                       for (int64_t kk = 0; kk < k; ++kk) {
                         const int32_t wv = wr[kk];
                         if (wv == 0) continue;
                         const int16_t* col = cols.data() + kk * p;
                         for (int64_t e = 0; e < p; ++e) acc[e] += wv * col[e];
                       }
                     }
                   });
    }
  }
  return out;
}

std::vector<int32_t> gemm_int32(int64_t m, int64_t n, int64_t k, std::span<const int16_t> a,
                                std::span<const int16_t> b) {
  if (static_cast<int64_t>(a.size()) != m * k || static_cast<int64_t>(b.size()) != n * k)
    fail("int8 MatMul: operand sizes do not match");
  check_sum_fits(k, max_abs(a), max_abs(b), "int8 MatMul");
  std::vector<int32_t> out(static_cast<size_t>(m * n), 0);
  parallel_for(m * n, std::max<int64_t>(1, kGrainMath / std::max<int64_t>(1, k)),
               [&](int64_t e0, int64_t e1) {
                 for (int64_t e = e0; e < e1; ++e) {
                   const int16_t* ar = a.data() + (e / n) * k;
                   const int16_t* br = b.data() + (e % n) * k;
                   int32_t acc = 0;
                   for (int64_t kk = 0; kk < k; ++kk) acc += int32_t{ar[kk]} * int32_t{br[kk]};
                   out[static_cast<size_t>(e)] = acc;
                 }
               });
  return out;
}

// ---- int8 execution -----------------------------------------------------------------------------

namespace {

// The levels (q - zero_point) of a float tensor.
std::vector<int16_t> activation_levels(const Tensor& x, const ActivationParams& q) {
  std::vector<int16_t> r(static_cast<size_t>(x.numel()));
  const Tensor f = x.is_float() ? x : x.cast(DType::Float32);
  const auto* p = f.data<float>();
  for (int64_t i = 0; i < f.numel(); ++i)
    r[static_cast<size_t>(i)] = static_cast<int16_t>(quantize_level(p[i], q) - q.zero_point);
  return r;
}

// Transposes the last two dims of a (batch, r, c) level array.
std::vector<int16_t> transpose_last(const std::vector<int16_t>& v, int64_t batch, int64_t r,
                                    int64_t c) {
  std::vector<int16_t> t(v.size());
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < r; ++i) {
      for (int64_t j = 0; j < c; ++j) t[(b * c + j) * r + i] = v[(b * r + i) * c + j];
    }
  }
  return t;
}

// Dequantises int32 sums (rows of `channels` outputs each `inner` long) plus the int32 bias.
// A channel of scale 0 (its weights all zero) outputs its float bias.
Tensor dequantize_sums(const std::vector<int32_t>& acc, std::vector<int64_t> shape,
                       int64_t channels, int64_t inner, double in_scale,
                       const std::vector<double>& w_scales, const std::vector<int32_t>& bias,
                       const std::vector<float>& bias_float = {}) {
  Tensor y = Tensor::uninitialized(std::move(shape), DType::Float32);
  auto* dst = y.data<float>();
  const auto total = static_cast<int64_t>(acc.size());
  for (int64_t e = 0; e < total; ++e) {
    const int64_t c = (e / inner) % channels;
    int64_t v = acc[static_cast<size_t>(e)];
    if (!bias.empty()) v += bias[static_cast<size_t>(c)];
    const double s = in_scale * w_scales[static_cast<size_t>(std::min<int64_t>(
                                    c, static_cast<int64_t>(w_scales.size()) - 1))];
    dst[e] = s > 0 || bias_float.empty() ? static_cast<float>(static_cast<double>(v) * s)
                                         : bias_float[static_cast<size_t>(c)];
  }
  return y;
}

std::vector<int32_t> quantize_bias(const Tensor& b, double in_scale,
                                   const std::vector<double>& w_scales) {
  std::vector<int32_t> r(static_cast<size_t>(b.numel()), 0);
  for (int64_t c = 0; c < b.numel(); ++c) {
    const double s = in_scale * w_scales[static_cast<size_t>(std::min<int64_t>(
                                    c, static_cast<int64_t>(w_scales.size()) - 1))];
    const double v = s > 0 ? round_away(b.at(c) / s) : 0.0;
    r[static_cast<size_t>(c)] = static_cast<int32_t>(std::clamp(v, -kInt32Max - 1, kInt32Max));
  }
  return r;
}

}  // namespace

Int8Runner::Int8Runner(const Graph& graph, const QuantTable& table, const Executor& weights)
    : plan_(graph.nodes.size()) {
  std::set<const NodeQuant*> used;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& n = graph.nodes[i];
    if (!quantizable(n)) continue;
    const NodeQuant* e = table.find(n);
    if (e == nullptr) continue;
    used.insert(e);
    if (e->inputs.size() != activation_inputs(n)) {
      notes_.push_back(n.id + ": the table quantises " + std::to_string(e->inputs.size()) +
                       " input(s), the node has " + std::to_string(activation_inputs(n)) +
                       ": it stays float32");
      continue;
    }
    Planned& p = plan_[i];
    if (!e->weight.empty()) {
      const ParamState* w = weights.param(e->weight);
      if (w == nullptr || !w->value.is_float() || w->value.rank() < 2) {
        notes_.push_back(n.id + ": no float weight '" + e->weight + "': it stays float32");
        continue;
      }
      p.weight = quantize_weight(w->value);
      p.levels.assign(p.weight.levels.begin(), p.weight.levels.end());
      if (p.weight.scales.size() != e->weight_scales.size()) {
        notes_.push_back(n.id + ": the table has " + std::to_string(e->weight_scales.size()) +
                         " weight scales, '" + e->weight + "' has " +
                         std::to_string(p.weight.scales.size()) + " channels: it stays float32");
        continue;
      }
      double worst = 0;
      for (size_t c = 0; c < p.weight.scales.size(); ++c) {
        const double a = p.weight.scales[c], b = e->weight_scales[c];
        worst = std::max(worst, std::abs(a - b) / std::max({std::abs(a), std::abs(b), 1e-30}));
      }
      if (worst > 1e-6) {
        notes_.push_back(n.id +
                         ": the weights are not those the table was calibrated with "
                         "(weight scales differ by up to " +
                         std::to_string(worst * 100) + " %)");
      }
      const bool conv_bias = n.op != "Conv2D" || attr_bool(n, "has_bias").value_or(false);
      for (const std::string& name : n.params) {
        if (!is_bias_name(name) || !conv_bias) continue;
        if (const ParamState* b = weights.param(name); b && b->value.defined()) {
          p.bias = quantize_bias(b->value, e->inputs[0].params.scale, p.weight.scales);
          const Tensor bf = b->value.is_float() ? b->value : b->value.cast(DType::Float32);
          p.bias_float.assign(bf.data<float>(), bf.data<float>() + bf.numel());
        }
      }
    }
    p.entry = e;
  }
  for (const NodeQuant& e : table.nodes) {
    if (!used.contains(&e))
      notes_.push_back("the table's entry " + e.key() + " (" + e.op + ") matches no node");
  }
}

bool Int8Runner::compute(const Node& n, size_t index, const std::vector<Tensor>& inputs,
                         std::vector<Tensor>& outputs) const {
  if (!quantized(index) || inputs.empty()) return false;
  const Planned& p = plan_[index];
  const NodeQuant& e = *p.entry;
  const ActivationParams qx = e.inputs[0].params;
  if (qx.scale <= 0) return false;  // a constant-zero range: nothing to quantise
  const Tensor& x = inputs[0];
  if (!e.weight.empty()) {
    const std::vector<int16_t>& wl = p.levels;
    if (n.op == "Conv2D") {
      std::vector<int64_t> xs = x.shape();
      std::vector<int64_t> ws = p.weight.shape;
      const bool one_d = xs.size() == 3;
      if (one_d) {
        xs = {xs[0], xs[1], 1, xs[2]};
        if (ws.size() == 3) ws = {ws[0], ws[1], 1, ws[2]};
      }
      if (xs.size() != 4 || ws.size() != 4) return false;
      if (auto fmt = attr_str(n, "data_format"); fmt && *fmt != "NCHW") return false;
      const kernels::Window w =
          one_d ? kernels::window_1d(n, xs[3], ws[3])
                : kernels::make_window(n, {xs[2], xs[3]}, {ws[2], ws[3]}, false);
      ConvShape s;
      s.n = xs[0];
      s.c = xs[1];
      s.h = xs[2];
      s.w = xs[3];
      s.o = ws[0];
      s.kh = ws[2];
      s.kw = ws[3];
      s.groups = attr_int(n, "group").value_or(attr_int(n, "groups").value_or(1));
      s.stride_h = w.stride[0];
      s.stride_w = w.stride[1];
      s.dil_h = w.dilation[0];
      s.dil_w = w.dilation[1];
      s.pad_top = w.pad_before[0];
      s.pad_left = w.pad_before[1];
      s.out_h = w.out[0];
      s.out_w = w.out[1];
      if (s.groups <= 0 || s.c != ws[1] * s.groups) return false;
      auto acc = conv2d_int32(s, activation_levels(x, qx), wl);
      std::vector<int64_t> shape = {s.n, s.o, s.out_h, s.out_w};
      if (one_d) shape = {s.n, s.o, s.out_w};
      outputs.push_back(dequantize_sums(acc, shape, s.o, s.out_h * s.out_w, qx.scale,
                                        p.weight.scales, p.bias, p.bias_float));
      return true;
    }
    // Dense (and nn.Dense's MatMul): y = x @ W^T + b over the last axis.
    if (p.weight.shape.size() != 2 || x.rank() == 0 || x.shape().back() != p.weight.shape[1])
      return false;
    const int64_t in_f = p.weight.shape[1], out_f = p.weight.shape[0];
    const int64_t m = x.numel() / std::max<int64_t>(1, in_f);
    auto acc = gemm_int32(m, out_f, in_f, activation_levels(x, qx), wl);
    std::vector<int64_t> shape = x.shape();
    shape.back() = out_f;
    Tensor y =
        dequantize_sums(acc, shape, out_f, 1, qx.scale, p.weight.scales, p.bias, p.bias_float);
    if (auto act = attr_str(n, "activation")) kernels::apply_activation(y, *act);
    outputs.push_back(std::move(y));
    return true;
  }
  // A product of two activations (ops.matmul(a, b), ops.dense(x, w, b)): both per tensor.
  if (inputs.size() < 2 || e.inputs.size() < 2 || e.inputs[1].params.scale <= 0) return false;
  const Tensor& b = inputs[1];
  const ActivationParams qb = e.inputs[1].params;
  const bool dense = n.op == "Dense";
  bool ta = false, tb = dense;
  if (!dense) {
    ta = attr_bool(n, "transpose_a").value_or(attr_bool(n, "transpose_x1").value_or(false));
    tb = attr_bool(n, "transpose_b").value_or(attr_bool(n, "transpose_x2").value_or(false));
  }
  if (x.rank() < 2 || b.rank() < 2) return false;
  // Batch dims: equal, or b 2-D (one matrix for every batch).
  const std::vector<int64_t> bx(x.shape().begin(), x.shape().end() - 2);
  const std::vector<int64_t> bb(b.shape().begin(), b.shape().end() - 2);
  if (!bb.empty() && bb != bx) return false;
  int64_t batch = 1;
  for (int64_t d : bx) batch *= d;
  const int64_t xr = x.shape()[x.rank() - 2], xc = x.shape().back();
  const int64_t br = b.shape()[b.rank() - 2], bc = b.shape().back();
  const int64_t m = ta ? xc : xr, k = ta ? xr : xc;
  const int64_t nn = tb ? br : bc, kb = tb ? bc : br;
  if (k != kb) return false;
  std::vector<int16_t> al = activation_levels(x, qx);
  if (ta) al = transpose_last(al, batch, xr, xc);  // (batch, m, k)
  std::vector<int16_t> bl = activation_levels(b, qb);
  const int64_t bbatch = bb.empty() ? 1 : batch;
  if (!tb) bl = transpose_last(bl, bbatch, br, bc);  // (batch, n, k)
  std::vector<int32_t> acc;
  acc.reserve(static_cast<size_t>(batch * m * nn));
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t j = bb.empty() ? 0 : i;
    auto part = gemm_int32(
        m, nn, k, std::span(al).subspan(static_cast<size_t>(i * m * k), static_cast<size_t>(m * k)),
        std::span(bl).subspan(static_cast<size_t>(j * nn * k), static_cast<size_t>(nn * k)));
    acc.insert(acc.end(), part.begin(), part.end());
  }
  std::vector<int64_t> shape = bx;
  shape.push_back(m);
  shape.push_back(nn);
  Tensor y = dequantize_sums(acc, shape, 1, 1, qx.scale, {qb.scale}, {});
  if (dense && inputs.size() > 2 && inputs[2].defined()) {
    // ops.dense's bias: float32, added to the dequantised product.
    const Tensor bias = inputs[2].is_float() ? inputs[2] : inputs[2].cast(DType::Float32);
    if (bias.numel() != nn) return false;
    auto* d = y.data<float>();
    for (int64_t e2 = 0; e2 < y.numel(); ++e2) d[e2] += bias.data<float>()[e2 % nn];
  }
  outputs.push_back(std::move(y));
  return true;
}

}  // namespace graphcore::runtime::quant
