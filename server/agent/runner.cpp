#include "agent/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <stdexcept>
#include <utility>

#include "graphcore/dataset.h"
#include "graphcore/drift.h"
#include "graphcore/mindir_import.h"
#include "graphcore/runtime.h"

namespace cellscope::agent {

namespace fs = std::filesystem;
namespace rt = graphcore::runtime;
using Json = nlohmann::json;

namespace {

constexpr size_t kMaxOutputValues = 1 << 20;
// A target bundle deployed without data: its quality is measured on this many seeded batches.
constexpr uint64_t kTargetSeed = 0;
constexpr int kTargetRandomBatches = 2;

std::string precision_name(const BuildOptions& build) {
  return build.precision == "int8" ? "int8 calibration" : "the target build's evaluation data";
}

// A zero tensor of input i's declared shape and dtype.
rt::Tensor zero_input(const rt::Executor& ex, size_t i) {
  const auto type = ex.input_type(i);
  std::vector<int64_t> shape;
  for (const auto& d : type.shape.dims) {
    if (!d.is_known())
      throw std::invalid_argument("input " + std::to_string(i) + " has a dynamic shape");
    shape.push_back(d.value());
  }
  return rt::Tensor::zeros(shape, type.dtype);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000U) << 16;
  const uint32_t exp = (h >> 10) & 0x1fU;
  uint32_t mant = h & 0x3ffU;
  uint32_t bits = 0;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400U) == 0);
      bits = sign | ((127 - 15 - e) << 23) | ((mant & 0x3ffU) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000U | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f = 0;
  std::memcpy(&f, &bits, 4);
  return f;
}

// A weight's file bytes into the parameter's tensor (the runtime's dtype).
rt::Tensor weight_tensor(const graphcore::MindirWeight& w, const std::vector<int64_t>& shape) {
  rt::Tensor t(
      shape, w.type.dtype == graphcore::DType::Float16 ? graphcore::DType::Float32 : w.type.dtype);
  const auto n = static_cast<size_t>(t.numel());
  const std::string& raw = w.raw;
  auto need = [&](size_t element) {
    if (raw.size() != n * element) {
      throw std::runtime_error("weight " + w.name + " holds " + std::to_string(raw.size()) +
                               " bytes, its shape needs " + std::to_string(n * element));
    }
  };
  switch (w.type.dtype) {
    case graphcore::DType::Float32:
      need(4);
      std::memcpy(t.data<float>(), raw.data(), raw.size());
      break;
    case graphcore::DType::Float16: {
      need(2);
      auto* out = t.data<float>();
      for (size_t i = 0; i < n; ++i) {
        uint16_t h = 0;
        std::memcpy(&h, raw.data() + 2 * i, 2);
        out[i] = half_to_float(h);
      }
      break;
    }
    case graphcore::DType::Int32:
      need(4);
      std::memcpy(t.data<int32_t>(), raw.data(), raw.size());
      break;
    case graphcore::DType::Int64:
      need(8);
      std::memcpy(t.data<int64_t>(), raw.data(), raw.size());
      break;
    default:
      throw std::runtime_error("weight " + w.name + " has a dtype the CPU runtime does not load");
  }
  return t;
}

Json shape_json(const std::vector<int64_t>& shape) { return Json(shape); }

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.filename().string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// fp32 against int8 (or target) over runs of the same inputs: top-1 of the first output when it
// is (batch, classes), the cosine of all output values, accuracy when labels are known.
struct Agreement {
  int64_t rows = 0, same = 0, labelled = 0, correct32 = 0, correct8 = 0;
  double dot = 0, n32 = 0, n8 = 0;
  std::string other = "int8";  // the accuracy figure's name for `q`

  // `labels`: one per row of this batch, or empty.
  void add(const std::vector<rt::Tensor>& f, const std::vector<rt::Tensor>& q,
           const std::vector<int64_t>& labels, const std::string& precision) {
    other = precision;
    for (size_t o = 0; o < f.size() && o < q.size(); ++o) {
      for (int64_t k = 0; k < f[o].numel() && k < q[o].numel(); ++k) {
        const double a = f[o].at(k);
        const double b = q[o].at(k);
        dot += a * b;
        n32 += a * a;
        n8 += b * b;
      }
    }
    if (f.empty() || f[0].rank() != 2 || f[0].shape()[1] < 2) return;
    const std::vector<int64_t> top32 = rt::drift::argmax_rows(f[0]);
    const std::vector<int64_t> top8 = rt::drift::argmax_rows(q[0]);
    for (size_t r = 0; r < top32.size() && r < top8.size(); ++r) {
      const int64_t a = top32[r];
      const int64_t b = top8[r];
      ++rows;
      same += a == b ? 1 : 0;
      if (r < labels.size()) {
        ++labelled;
        correct32 += a == labels[r] ? 1 : 0;
        correct8 += b == labels[r] ? 1 : 0;
      }
    }
  }
  [[nodiscard]] Json json() const {
    Json j;
    j["top1_agreement"] =
        rows > 0 ? Json(static_cast<double>(same) / static_cast<double>(rows)) : Json("n/a");
    j["cosine"] = n32 > 0 && n8 > 0 ? Json(dot / std::sqrt(n32 * n8)) : Json("n/a");
    if (labelled > 0) {
      j["accuracy"] = {{"fp32", static_cast<double>(correct32) / static_cast<double>(labelled)},
                       {other, static_cast<double>(correct8) / static_cast<double>(labelled)},
                       {"samples", labelled}};
    } else {
      j["accuracy"] = "n/a";
    }
    return j;
  }
};

}  // namespace

std::vector<rt::HostArray> arrays_for_inputs(
    std::vector<std::pair<std::string, rt::HostArray>> members,
    const std::vector<std::string>& inputs, const std::string& name, const std::string& what) {
  const size_t n = inputs.size();
  std::string names;
  for (size_t i = 0; i < n; ++i) names += (i > 0 ? ", " : "") + inputs[i];
  std::vector<std::optional<rt::HostArray>> by_input(n);
  const bool named = std::ranges::any_of(
      members, [&](const auto& m) { return std::ranges::find(inputs, m.first) != inputs.end(); });
  if (named) {
    for (auto& [member, array] : members) {
      const auto it = std::ranges::find(inputs, member);
      if (it == inputs.end()) {
        std::string message = name;
        message.append(": array '").append(member).append("' is not an input of the model (");
        throw std::invalid_argument(message.append(names).append(")"));
      }
      auto& slot = by_input[static_cast<size_t>(it - inputs.begin())];
      if (slot) {
        std::string message = name;
        throw std::invalid_argument(message.append(": two arrays named '").append(member) + "'");
      }
      slot = std::move(array);
    }
    for (size_t i = 0; i < n; ++i) {
      if (!by_input[i]) {
        std::string message = name;
        message.append(": no array for the input '").append(inputs[i]);
        message.append("' (the model takes ").append(names).append("; ").append(what);
        throw std::invalid_argument(message.append(" needs one each)"));
      }
    }
  } else {
    if (members.size() != n) {
      std::string got;
      for (const auto& m : members) got += (got.empty() ? "" : ", ") + m.first;
      throw std::invalid_argument(name + " holds " + std::to_string(members.size()) + " arrays (" +
                                  got + "), the model takes " + std::to_string(n) + " inputs (" +
                                  names +
                                  "): name the arrays after the inputs or give one each, in order");
    }
    for (size_t i = 0; i < n; ++i) by_input[i] = std::move(members[i].second);
  }
  std::vector<rt::HostArray> out;
  out.reserve(n);
  for (auto& a : by_input) out.push_back(std::move(*a));
  return out;
}

std::vector<std::string> LoadedModel::input_names() const {
  std::vector<std::string> names;
  for (size_t i = 0; i < exec_->num_inputs(); ++i) names.push_back(exec_->input_name(i));
  return names;
}

// The calibration file's arrays, one per model input: a .npy for a model of one input, a .npz
// with one array per input (arrays_for_inputs). Each message names the file and the member.
std::vector<rt::HostArray> LoadedModel::calibration_arrays(const fs::path& file,
                                                           const std::string& what) const {
  const std::vector<std::string> inputs = input_names();
  const std::string name = file.filename().string();
  const std::string bytes = read_bytes(file);
  try {
    if (bytes.starts_with("PK")) {
      return arrays_for_inputs(rt::parse_array_npz(bytes, name), inputs, name, what);
    }
    // A .npy: the data of the only input.
    rt::HostArray a = rt::parse_array_npy(bytes, name);
    if (inputs.size() != 1) {
      std::string names;
      for (const auto& n : inputs) names += (names.empty() ? "" : ", ") + n;
      throw std::invalid_argument(name + ": a .npy holds the data of one input; this model takes " +
                                  std::to_string(inputs.size()) + " (" + names +
                                  "): send a .npz with one array per input (np.savez(f, " + names +
                                  "))");
    }
    std::vector<rt::HostArray> out;
    out.push_back(std::move(a));
    return out;
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(e.what());  // a load failure, not a bad request
  }
}

std::vector<std::vector<rt::Tensor>> LoadedModel::read_batches(const BuildOptions& build,
                                                               std::vector<int64_t>* labels,
                                                               int64_t* unused) {
  rt::Executor& ex = *exec_;
  const std::string what = precision_name(build);
  const std::string cal_name = build.calibration_data.filename().string();
  const std::vector<rt::HostArray> data = calibration_arrays(build.calibration_data, what);
  const size_t n = ex.num_inputs();
  std::vector<std::vector<int64_t>> shapes(n);
  int64_t samples = -1;
  int64_t batches = -1;
  for (size_t i = 0; i < n; ++i) {
    const auto type = ex.input_type(i);
    std::vector<int64_t>& shape = shapes[i];
    for (const auto& d : type.shape.dims) {
      if (!d.is_known())
        throw std::runtime_error("the input " + ex.input_name(i) + " has a dynamic shape");
      shape.push_back(d.value());
    }
    if (shape.empty()) {
      throw std::runtime_error(what + " needs inputs with a batch axis; " + ex.input_name(i) +
                               " is a scalar");
    }
    const rt::HostArray& a = data[i];
    const std::string where =
        n == 1 ? cal_name : cal_name + " array for the input " + ex.input_name(i);
    const std::vector<int64_t> sample(shape.begin() + 1, shape.end());
    if (a.shape.empty() || std::vector<int64_t>(a.shape.begin() + 1, a.shape.end()) != sample) {
      std::string want = "(N";
      for (const int64_t d : sample) want.append(", ").append(std::to_string(d));
      std::string message = where;
      message.append(" has shape ").append(rt::shape_str(a.shape)).append("; ").append(what);
      message.append(" data for the input ").append(rt::shape_str(shape));
      throw std::runtime_error(message.append(" has the shape ").append(want) + ") (N samples)");
    }
    if (samples >= 0 && a.shape[0] != samples) {
      throw std::runtime_error(where + " holds " + std::to_string(a.shape[0]) +
                               " samples, the input " + ex.input_name(0) + "'s " +
                               std::to_string(samples) + ": every input needs the same N");
    }
    samples = a.shape[0];
    const int64_t b = shape[0] > 0 ? samples / shape[0] : 0;
    batches = batches < 0 ? b : std::min(batches, b);
  }
  if (batches <= 0) {
    throw std::runtime_error(cal_name + " holds " + std::to_string(samples) +
                             " samples, fewer than one batch of " + std::to_string(shapes[0][0]));
  }
  *unused = samples - batches * shapes[0][0];
  labels->clear();
  if (!build.labels.empty()) {
    const std::string lab_name = build.labels.filename().string();
    const auto l = rt::parse_array_npy(read_bytes(build.labels), lab_name);
    if (l.numel() != samples || (l.shape.size() != 1 && l.shape.size() != 2)) {
      throw std::runtime_error(lab_name + " has shape " + rt::shape_str(l.shape) + ", not (" +
                               std::to_string(samples) + ",): one label per sample");
    }
    for (int64_t k = 0; k < l.numel(); ++k) labels->push_back(std::llround(l.at(k)));
  }
  std::vector<std::vector<rt::Tensor>> inputs(static_cast<size_t>(batches));
  for (size_t i = 0; i < n; ++i) {
    const auto dtype = ex.input_type(i).dtype;
    const int64_t per_batch = rt::Tensor(shapes[i], dtype).numel();
    for (int64_t b = 0; b < batches; ++b) {
      rt::Tensor t(shapes[i], dtype);
      for (int64_t k = 0; k < per_batch; ++k) t.set(k, data[i].at(b * per_batch + k));
      inputs[static_cast<size_t>(b)].push_back(std::move(t));
    }
  }
  return inputs;
}

// fp32 against the bundle's precision over `inputs`: every output of the precision run finite,
// and the Agreement figures as quality_.
void LoadedModel::measure_quality(const std::vector<std::vector<rt::Tensor>>& inputs,
                                  const std::vector<int64_t>& labels, const std::string& on) {
  Agreement agree;
  int64_t samples = 0;
  for (size_t b = 0; b < inputs.size(); ++b) {
    const std::vector<rt::Tensor>& given = inputs[b];
    double ms = 0;
    const auto f = run("fp32", given, &ms);
    const auto q = run(precision_, given, &ms);
    for (const rt::Tensor& t : q) {
      for (int64_t k = 0; k < t.numel(); ++k) {
        if (!std::isfinite(t.at(k))) {
          throw std::runtime_error("the " + precision_ + " path gives non-finite outputs on " + on +
                                   " batch " + std::to_string(b));
        }
      }
    }
    const int64_t batch = given[0].rank() > 0 ? given[0].shape()[0] : 1;
    std::vector<int64_t> batch_labels;
    const auto first = static_cast<int64_t>(b) * batch;
    if (static_cast<int64_t>(labels.size()) >= first + batch) {
      batch_labels.assign(labels.begin() + first, labels.begin() + first + batch);
    }
    agree.add(f, q, batch_labels, precision_);
    samples += batch;
  }
  quality_ = agree.json();
  quality_["on"] = on;
  quality_["samples"] = samples;
}

void LoadedModel::build_int8(const BuildOptions& build) {
  namespace quant = rt::quant;
  rt::Executor& ex = *exec_;
  if (build.calibration_data.empty()) throw std::runtime_error("int8 needs calibration data");
  std::vector<int64_t> labels;
  int64_t unused = 0;
  const std::vector<std::vector<rt::Tensor>> inputs = read_batches(build, &labels, &unused);
  const int64_t batch = inputs.front().front().shape()[0];
  auto run_fp32 = [&](const rt::Hooks& hooks) {
    ex.reset();
    const rt::RunStatus st = ex.run(hooks);
    if (st.kind != rt::RunStatus::Kind::Finished)
      throw std::runtime_error("the calibration run did not finish: " + st.message);
  };
  if (build.quant_table.empty()) {
    quant::Calibrator cal(ex.graph(), build.calibration);
    cal.add_samples(static_cast<int64_t>(inputs.size()) * batch);
    for (int pass = 0; pass < cal.passes(); ++pass) {
      cal.begin_pass(pass);
      const rt::Hooks observe = cal.hooks();
      for (const std::vector<rt::Tensor>& batch_inputs : inputs) {
        for (size_t i = 0; i < batch_inputs.size(); ++i) ex.set_input(i, batch_inputs[i]);
        run_fp32(observe);
      }
    }
    table_text_ = quant::write_quant_table(cal.finish(ex));
  } else {
    table_text_ = build.quant_table;
  }
  // Read back: the table the bundle carries is validated exactly as it will be after a restart.
  table_ = std::make_unique<quant::QuantTable>(quant::read_quant_table(table_text_, "quant.json"));
  if (table_->nodes.empty()) throw std::runtime_error("quant.json quantises no node of this graph");
  int8_ = std::make_unique<quant::Int8Runner>(ex.graph(), *table_, ex);
  if (!int8_->notes().empty()) {
    throw std::runtime_error("quant.json does not fit this model: " + int8_->notes().front());
  }
  // The int8 path once per calibration batch: every output finite, and fp32 vs int8.
  precision_ = "int8";
  measure_quality(inputs, labels, "calibration data");
  quality_["calibration"] = std::string(quant::calibration_name(table_->calibration.method));
  quality_["quantized_nodes"] = table_->nodes.size();
  if (unused > 0) quality_["unused_samples"] = unused;
}

void LoadedModel::build_target(const BuildOptions& build, const graphcore::CellReport& report,
                               const std::vector<std::pair<std::string, rt::Tensor>>& weights) {
  rt::ExecOptions opts;
  opts.precision = rt::Precision::Target;
  opts.threads = build.threads;
  opts.defer_init = true;  // every parameter is loaded from the file below
  target_ = std::make_unique<rt::Executor>(report, opts);
  for (const auto& [name, value] : weights) target_->set_param(name, value);
  std::vector<int64_t> labels;
  int64_t unused = 0;
  std::vector<std::vector<rt::Tensor>> inputs;
  std::string on;
  if (!build.calibration_data.empty()) {
    inputs = read_batches(build, &labels, &unused);
    on = "calibration data";
  } else {
    // No data sent: seeded standard-normal inputs (the same on every device and restart).
    std::mt19937_64 gen(kTargetSeed);
    std::normal_distribution<double> normal;
    for (int b = 0; b < kTargetRandomBatches; ++b) {
      std::vector<rt::Tensor> batch_inputs;
      for (size_t i = 0; i < exec_->num_inputs(); ++i) {
        rt::Tensor t = zero_input(*exec_, i);
        if (t.is_float()) {
          for (int64_t k = 0; k < t.numel(); ++k) t.set(k, normal(gen));
        }
        batch_inputs.push_back(std::move(t));
      }
      inputs.push_back(std::move(batch_inputs));
    }
    on = "random normal inputs (seed " + std::to_string(kTargetSeed) + ")";
  }
  precision_ = "target";
  measure_quality(inputs, labels, on);
  quality_["emulation"] = "fp16 storage between ops, fp32 accumulation (Precision::Target)";
  if (unused > 0) quality_["unused_samples"] = unused;
}

LoadedModel::~LoadedModel() = default;

std::shared_ptr<LoadedModel> LoadedModel::load(const fs::path& model, std::string* error,
                                               const BuildOptions& build) {
  try {
    std::ifstream in(model, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + model.filename().string());
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    graphcore::MindirImportOptions opts;
    opts.folder = model.parent_path();
    opts.keep_weights = true;
    graphcore::MindirImport imp = graphcore::import_mindir(bytes, model.filename().string(), opts);
    if (!imp.ok) throw std::runtime_error("the MindIR does not import: " + imp.error);
    if (!imp.report.compiled) throw std::runtime_error("the imported graph is not complete");
    std::shared_ptr<LoadedModel> m(new LoadedModel());
    rt::ExecOptions exec_opts;
    exec_opts.threads = build.threads;
    m->exec_ = std::make_unique<rt::Executor>(imp.report, exec_opts);
    size_t loaded = 0;
    // A target build binds the same float32 values to its fp16 executor (set_param casts).
    std::vector<std::pair<std::string, rt::Tensor>> weights;
    for (const auto& w : imp.weights) {
      const rt::ParamState* p = m->exec_->param(w.name);
      if (p == nullptr) continue;
      if (w.raw.empty()) {
        throw std::runtime_error("weight " + w.name +
                                 " is in external data, which the agent does not load yet");
      }
      rt::Tensor value = weight_tensor(w, p->value.shape());
      if (build.precision == "target") weights.emplace_back(w.name, value);
      m->exec_->set_param(w.name, std::move(value));
      ++loaded;
    }
    if (loaded != m->exec_->params().size()) {
      throw std::runtime_error("the file holds values for " + std::to_string(loaded) + " of " +
                               std::to_string(m->exec_->params().size()) + " parameters");
    }
    Json inputs = Json::array();
    for (size_t i = 0; i < m->exec_->num_inputs(); ++i) {
      const auto t = m->exec_->input_type(i);
      inputs.push_back({{"name", m->exec_->input_name(i)},
                        {"shape", t.shape.str()},
                        {"dtype", std::string(graphcore::dtype_name(t.dtype))}});
    }
    // The warm-up and sanity check: a zero input of the declared shape, every output finite.
    const auto start = std::chrono::steady_clock::now();
    const Json out = m->infer({{"fill", "zeros"}});
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    for (const auto& o : out["outputs"]) {
      if (o.value("non_finite", 0) != 0) {
        throw std::runtime_error("the zero input gives non-finite outputs");
      }
    }
    Json outputs = Json::array();
    for (const auto& o : out["outputs"])
      outputs.push_back({{"shape", o["shape"]}, {"dtype", o["dtype"]}});
    if (build.precision == "int8") {
      m->build_int8(build);
    } else if (build.precision == "target") {
      m->build_target(build, imp.report, weights);
    } else if (build.precision != "fp32") {
      throw std::runtime_error("precision is fp32, int8 or target, not " + build.precision);
    }
    m->summary_ = {{"backend", "cellscope-cpu"},
                   {"precision", m->precision_},
                   {"threads", build.threads},
                   {"kernels", rt::kernel_library()},
                   {"inputs", inputs},
                   {"outputs", outputs},
                   {"nodes", imp.report.graph.nodes.size()},
                   {"parameters", m->exec_->params().size()},
                   {"warmup_ms", ms},
                   {"notes", imp.notes.size()}};
    if (build.backend == "mindspore") {
      if (m->precision_ != "fp32")
        throw std::runtime_error("the mindspore backend serves fp32 bundles only");
      m->mindspore_ = std::make_unique<MindSporeWorker>(build.python, model);
      m->summary_["backend"] = "mindspore";
      m->summary_["mindspore_version"] = m->mindspore_->version();
      // The warm-up again, through MindSpore: every output finite.
      const Json o = m->infer({{"fill", "zeros"}});
      for (const auto& t : o["outputs"]) {
        if (t.value("non_finite", 0) != 0)
          throw std::runtime_error("MindSpore gives non-finite outputs on the zero input");
      }
    } else if (build.backend != "cellscope-cpu") {
      throw std::runtime_error("backend is cellscope-cpu or mindspore, not " + build.backend);
    }
    return m;
  } catch (const std::exception& e) {
    *error = e.what();
    return nullptr;
  }
}

std::vector<rt::Tensor> LoadedModel::set_inputs(const Json& request,
                                                const std::vector<rt::HostArray>* arrays) {
  rt::Executor& ex = *exec_;
  ex.reset();
  std::vector<rt::Tensor> set;
  if (arrays != nullptr) {
    if (arrays->size() != ex.num_inputs()) {
      throw std::invalid_argument("the model takes " + std::to_string(ex.num_inputs()) +
                                  " inputs, " + std::to_string(arrays->size()) + " given");
    }
    for (size_t i = 0; i < ex.num_inputs(); ++i) {
      const rt::HostArray& a = (*arrays)[i];
      const rt::Tensor zero = zero_input(ex, i);
      if (a.shape != zero.shape()) {
        throw std::invalid_argument("input " + ex.input_name(i) + " has shape " +
                                    rt::shape_str(a.shape) + ", the model's is " +
                                    rt::shape_str(zero.shape()));
      }
      rt::Tensor t(zero.shape(), zero.dtype());
      for (int64_t k = 0; k < t.numel(); ++k) t.set(k, a.at(k));
      set.push_back(std::move(t));
    }
    return set;
  }
  const std::string fill = request.value("fill", "");
  const Json* given = request.contains("inputs") ? &request["inputs"] : nullptr;
  if (fill.empty() && (given == nullptr || !given->is_array())) {
    throw std::invalid_argument(
        "give \"inputs\": [{\"shape\": [...], \"data\": [...]}] or \"fill\"");
  }
  if (given != nullptr && given->size() != ex.num_inputs()) {
    throw std::invalid_argument("the model takes " + std::to_string(ex.num_inputs()) + " inputs, " +
                                std::to_string(given->size()) + " given");
  }
  for (size_t i = 0; i < ex.num_inputs(); ++i) {
    const auto type = ex.input_type(i);
    std::vector<int64_t> shape;
    for (const auto& d : type.shape.dims) {
      if (!d.is_known())
        throw std::invalid_argument("input " + std::to_string(i) + " has a dynamic shape");
      shape.push_back(d.value());
    }
    if (!fill.empty()) {
      if (fill != "zeros" && fill != "ones") throw std::invalid_argument("fill is zeros or ones");
      set.push_back(fill == "zeros" ? rt::Tensor::zeros(shape, type.dtype)
                                    : rt::Tensor::ones(shape, type.dtype));
      continue;
    }
    const Json& in = (*given)[i];
    std::vector<int64_t> s;
    std::vector<double> data;
    try {
      s = in.at("shape").get<std::vector<int64_t>>();
      data = in.at("data").get<std::vector<double>>();
    } catch (const Json::exception&) {
      throw std::invalid_argument("input " + std::to_string(i) +
                                  " needs \"shape\" (integers) and \"data\" (numbers)");
    }
    if (s != shape) {
      throw std::invalid_argument("input " + std::to_string(i) + " has shape " + rt::shape_str(s) +
                                  ", the model's is " + rt::shape_str(shape));
    }
    rt::Tensor t(shape, type.dtype);
    if (static_cast<int64_t>(data.size()) != t.numel()) {
      throw std::invalid_argument("input " + std::to_string(i) + " has " +
                                  std::to_string(data.size()) + " values, its shape needs " +
                                  std::to_string(t.numel()));
    }
    for (int64_t k = 0; k < t.numel(); ++k) t.set(k, data[static_cast<size_t>(k)]);
    set.push_back(std::move(t));
  }
  return set;
}

std::vector<rt::Tensor> LoadedModel::run(const std::string& precision,
                                         const std::vector<rt::Tensor>& given, double* ms) {
  rt::Executor& ex = precision == "target" ? *target_ : *exec_;
  ex.reset();
  for (size_t i = 0; i < given.size(); ++i) ex.set_input(i, given[i]);
  rt::Hooks hooks;
  if (precision == "int8") {
    hooks.compute = [this](const graphcore::Node& n, size_t index,
                           const std::vector<rt::Tensor>& inputs,
                           std::vector<rt::Tensor>& outputs) {
      return int8_->compute(n, index, inputs, outputs);
    };
  }
  const auto start = std::chrono::steady_clock::now();
  const rt::RunStatus st = ex.run(hooks);
  *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (st.kind != rt::RunStatus::Kind::Finished) {
    throw std::runtime_error("the run did not finish: " + st.message);
  }
  std::vector<rt::Tensor> out = ex.outputs();
  ex.reset();
  if (precision == "target") {
    // The answer in float32, as the fp32 path gives it (the values are fp16's).
    for (rt::Tensor& t : out) {
      if (t.dtype() == graphcore::DType::Float16) t = t.cast(graphcore::DType::Float32);
    }
  }
  return out;
}

Json LoadedModel::infer(const Json& request) { return infer(request, nullptr, nullptr); }

namespace {

// An output tensor as an array of the element type it holds (binary /v1/infer answers).
rt::HostArray host_array(const rt::Tensor& t) {
  rt::DataType dtype = rt::DataType::Float32;
  switch (t.dtype()) {
    case graphcore::DType::Float16:
      dtype = rt::DataType::Float16;
      break;
    case graphcore::DType::Int32:
      dtype = rt::DataType::Int32;
      break;
    case graphcore::DType::Int64:
      dtype = rt::DataType::Int64;
      break;
    case graphcore::DType::Bool:
      dtype = rt::DataType::Bool;
      break;
    default:
      break;
  }
  rt::HostArray a = rt::HostArray::make(dtype, t.shape());
  for (int64_t k = 0; k < t.numel(); ++k) a.set(k, t.at(k));
  return a;
}

}  // namespace

Json LoadedModel::infer(const Json& request, const std::vector<rt::HostArray>* arrays,
                        std::vector<rt::HostArray>* raw) {
  const std::lock_guard lock(mu_);
  const std::string precision = request.value("precision", precision_);
  if (precision != "fp32" && precision != "int8" && precision != "target")
    throw std::invalid_argument("precision is \"fp32\", \"int8\" or \"target\"");
  if (precision != "fp32" && precision != precision_) {
    throw std::invalid_argument("this bundle was built at " + precision_ + ": it serves " +
                                precision_ + " and fp32, not " + precision);
  }
  const bool compare = request.value("compare", false);
  if (compare && precision_ == "fp32")
    throw std::invalid_argument("compare needs an int8 or target bundle");
  const std::string backend =
      request.value("backend", std::string(mindspore_ ? "mindspore" : "cellscope-cpu"));
  if (backend != "cellscope-cpu" && (backend != "mindspore" || !mindspore_)) {
    throw std::invalid_argument("this bundle runs on cellscope-cpu" +
                                std::string(mindspore_ ? " or mindspore" : "") + ", not " +
                                backend);
  }
  const std::vector<rt::Tensor> given = set_inputs(request, arrays);
  if (backend == "mindspore") {
    Json req = {{"inputs", Json::array()}};
    for (const rt::Tensor& t : given) {
      Json data = Json::array();
      for (int64_t k = 0; k < t.numel(); ++k) data.push_back(t.at(k));
      req["inputs"].push_back({{"shape", shape_json(t.shape())},
                               {"dtype", std::string(graphcore::dtype_name(t.dtype()))},
                               {"data", std::move(data)}});
    }
    const auto start = std::chrono::steady_clock::now();
    Json answer = mindspore_->run(req);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    for (Json& o : answer["outputs"]) {
      int64_t non_finite = 0;
      for (const Json& v : o["data"])
        if (!v.is_number() || !std::isfinite(v.get<double>())) ++non_finite;
      o["non_finite"] = non_finite;
    }
    answer["ms"] = ms;
    answer["precision"] = precision;
    answer["backend"] = backend;
    if (raw != nullptr) {
      raw->clear();
      for (Json& o : answer["outputs"]) {
        const auto shape = o.value("shape", std::vector<int64_t>{});
        rt::HostArray a = rt::HostArray::make(rt::DataType::Float32, shape);
        const Json& data = o["data"];
        if (static_cast<int64_t>(data.size()) != a.numel()) {
          throw std::runtime_error(
              "MindSpore answered an output whose data does not fit its shape");
        }
        for (int64_t k = 0; k < a.numel(); ++k) {
          const Json& v = data[static_cast<size_t>(k)];
          a.set(k, v.is_number() ? v.get<double>() : std::nan(""));
        }
        raw->push_back(std::move(a));
        o.erase("data");
        o["dtype"] = "float32";
      }
    }
    return answer;
  }
  double ms = 0;
  const std::vector<rt::Tensor> result = run(precision, given, &ms);
  Json outputs = Json::array();
  if (raw != nullptr) raw->clear();
  for (const rt::Tensor& t : result) {
    Json values = Json::array();
    int64_t non_finite = 0;
    for (int64_t k = 0; k < t.numel(); ++k) {
      const double v = t.at(k);
      if (!std::isfinite(v)) ++non_finite;
      if (raw == nullptr && static_cast<size_t>(k) < kMaxOutputValues)
        values.push_back(std::isfinite(v) ? Json(v) : Json(nullptr));
    }
    Json o = {{"shape", shape_json(t.shape())},
              {"dtype", std::string(graphcore::dtype_name(t.dtype()))},
              {"non_finite", non_finite}};
    if (raw == nullptr) {
      o["data"] = std::move(values);
    } else {
      raw->push_back(host_array(t));
    }
    outputs.push_back(std::move(o));
  }
  Json answer = {
      {"outputs", std::move(outputs)}, {"ms", ms}, {"precision", precision}, {"backend", backend}};
  if (compare) {
    double other_ms = 0;
    const std::vector<rt::Tensor> other =
        run(precision == "fp32" ? precision_ : "fp32", given, &other_ms);
    Agreement agree;
    if (precision != "fp32") {
      agree.add(other, result, {}, precision_);
    } else {
      agree.add(result, other, {}, precision_);
    }
    Json j = agree.json();
    j.erase("accuracy");
    answer["agreement"] = std::move(j);
  }
  return answer;
}

}  // namespace cellscope::agent
