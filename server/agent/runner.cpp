#include "agent/runner.h"

#include <chrono>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "graphcore/mindir_import.h"
#include "graphcore/runtime.h"

namespace cellscope::agent {

namespace fs = std::filesystem;
namespace rt = graphcore::runtime;
using Json = nlohmann::json;

namespace {

constexpr size_t kMaxOutputValues = 1 << 20;

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

}  // namespace

LoadedModel::~LoadedModel() = default;

std::shared_ptr<LoadedModel> LoadedModel::load(const fs::path& model, std::string* error) {
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
    m->exec_ = std::make_unique<rt::Executor>(imp.report);
    size_t loaded = 0;
    for (const auto& w : imp.weights) {
      const rt::ParamState* p = m->exec_->param(w.name);
      if (p == nullptr) continue;
      if (w.raw.empty()) {
        throw std::runtime_error("weight " + w.name +
                                 " is in external data, which the agent does not load yet");
      }
      m->exec_->set_param(w.name, weight_tensor(w, p->value.shape()));
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
    m->summary_ = {{"backend", "cellscope-cpu"},
                   {"kernels", rt::kernel_library()},
                   {"inputs", inputs},
                   {"outputs", outputs},
                   {"nodes", imp.report.graph.nodes.size()},
                   {"parameters", m->exec_->params().size()},
                   {"warmup_ms", ms},
                   {"notes", imp.notes.size()}};
    return m;
  } catch (const std::exception& e) {
    *error = e.what();
    return nullptr;
  }
}

Json LoadedModel::infer(const Json& request) {
  const std::lock_guard lock(mu_);
  rt::Executor& ex = *exec_;
  ex.reset();
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
      ex.set_input(i, fill == "zeros" ? rt::Tensor::zeros(shape, type.dtype)
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
    ex.set_input(i, std::move(t));
  }
  const auto start = std::chrono::steady_clock::now();
  const rt::RunStatus st = ex.run();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (st.kind != rt::RunStatus::Kind::Finished) {
    throw std::runtime_error("the run did not finish: " + st.message);
  }
  Json outputs = Json::array();
  for (const rt::Tensor& t : ex.outputs()) {
    Json values = Json::array();
    int64_t non_finite = 0;
    for (int64_t k = 0; k < t.numel(); ++k) {
      const double v = t.at(k);
      if (!std::isfinite(v)) ++non_finite;
      if (static_cast<size_t>(k) < kMaxOutputValues)
        values.push_back(std::isfinite(v) ? Json(v) : Json(nullptr));
    }
    outputs.push_back({{"shape", shape_json(t.shape())},
                       {"dtype", std::string(graphcore::dtype_name(t.dtype()))},
                       {"data", std::move(values)},
                       {"non_finite", non_finite}});
  }
  ex.reset();
  return {{"outputs", std::move(outputs)}, {"ms", ms}};
}

}  // namespace cellscope::agent
