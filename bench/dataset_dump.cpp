// cellscope-dataset: runs a dataset pipeline on graphcore's dataset reader (graphcore/dataset.h)
// and writes its first batches as .npy files, for the MindSpore comparison
// (tests/training/check_dataset.py).
//
// Usage: cellscope-dataset PLAN.json --out DIR [--batches N] [--seed S] [--epoch E]
//                          [--data-dir DIR]
//   --out DIR       writes DIR/<batch>_<column>.npy (batch from 0, columns by name) with the
//                   dtypes MindSpore yields (uint8 images, uint32 labels ...)
//   --batches N     the first N outputs of the epoch (default: all of them)
//   --seed S        the reader's seed (default 0); --epoch E starts epoch E (default 0)
//   --data-dir DIR  replaces the source's dataset_dir
// stdout: one JSON line {"columns": [...], "batches_per_epoch": N or null, "written": N}.
// Exit status: 0 on success, 1 when the reader fails (the message on stderr), 2 on bad usage.
//
// PLAN.json is a DatasetPlan (graphcore/training.h) written out:
//   {"source": {"api": "dataset.MnistDataset",
//               "args": {"dataset_dir": "data/mnist", "usage": "train", "shuffle": false}},
//    "ops": [{"op": "map", "input_columns": ["image"],
//             "operations": [{"api": "vision.Rescale", "args": {"rescale": 0.0039, "shift": 0}},
//                            {"api": "vision.HWC2CHW", "args": {}}]},
//            {"op": "shuffle", "args": {"buffer_size": 64}},
//            {"op": "batch", "args": {"batch_size": 32, "drop_remainder": true}},
//            {"op": "repeat", "args": {"count": 2}}, {"op": "take", "args": {"count": 5}},
//            {"op": "project", "columns": ["image"]}]}
// Arguments become PlanCall attributes: null, booleans, integers, floats and strings as they are;
// a list of integers an int list; any other list a string in Python's list syntax ("[0.5, 0.2]",
// "['image', 'label']"), as dataset.h reads it.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graphcore/dataset.h"

namespace fs = std::filesystem;
namespace rt = graphcore::runtime;
using nlohmann::json;

namespace {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

graphcore::AttrValue attr_value(const json& v) {
  if (v.is_null()) return std::monostate{};
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    bool ints = true;
    for (const json& x : v) ints = ints && x.is_number_integer();
    if (ints) return v.get<std::vector<int64_t>>();
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) s += ", ";
      s += v[i].is_string() ? "'" + v[i].get<std::string>() + "'" : v[i].dump();
    }
    return s + "]";
  }
  throw UsageError("unsupported argument " + v.dump());
}

graphcore::PlanCall plan_call(const json& j, const std::string& file) {
  if (!j.is_object() || !j.contains("api") || !j["api"].is_string()) {
    throw UsageError("a call needs an \"api\" string: " + j.dump());
  }
  graphcore::PlanCall c;
  c.api = j["api"].get<std::string>();
  c.file = file;
  if (j.contains("args")) {
    for (const auto& [k, v] : j["args"].items()) c.args.push_back({k, attr_value(v)});
  }
  return c;
}

std::vector<std::string> strings(const json& j, const char* key) {
  std::vector<std::string> out;
  if (!j.contains(key)) return out;
  if (j[key].is_string()) return {j[key].get<std::string>()};
  for (const json& s : j[key]) out.push_back(s.get<std::string>());
  return out;
}

graphcore::DatasetPlan read_plan(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot open " + path.string());
  json j = json::parse(in);
  graphcore::DatasetPlan plan;
  plan.source = plan_call(j.at("source"), path.string());
  static const std::pair<const char*, graphcore::DatasetOp::Kind> kKinds[] = {
      {"map", graphcore::DatasetOp::Kind::Map},
      {"batch", graphcore::DatasetOp::Kind::Batch},
      {"shuffle", graphcore::DatasetOp::Kind::Shuffle},
      {"repeat", graphcore::DatasetOp::Kind::Repeat},
      {"take", graphcore::DatasetOp::Kind::Take},
      {"project", graphcore::DatasetOp::Kind::Project},
  };
  for (const json& o : j.value("ops", json::array())) {
    const std::string name = o.at("op").get<std::string>();
    graphcore::DatasetOp op;
    bool found = false;
    for (const auto& [n, k] : kKinds) {
      if (name == n) {
        op.kind = k;
        found = true;
      }
    }
    if (!found) throw UsageError("unknown op '" + name + "'");
    json call = {{"api", "Dataset." + name}, {"args", o.value("args", json::object())}};
    op.call = plan_call(call, path.string());
    for (const json& t : o.value("operations", json::array())) {
      op.transforms.push_back(plan_call(t, path.string()));
    }
    op.input_columns = strings(o, "input_columns");
    op.columns = strings(o, "columns");
    plan.ops.push_back(std::move(op));
  }
  return plan;
}

int usage() {
  std::cerr << "usage: cellscope-dataset PLAN.json --out DIR [--batches N] [--seed S] "
               "[--epoch E] [--data-dir DIR]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("cellscope-dataset"));
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string plan_file, out_dir;
  std::optional<fs::path> data_dir;
  int64_t batches = -1, epoch = 0;
  uint64_t seed = 0;
  try {
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      auto next = [&]() -> std::string {
        if (i + 1 >= args.size()) throw UsageError(a + " needs a value");
        return args[++i];
      };
      if (a == "--out") {
        out_dir = next();
      } else if (a == "--batches") {
        batches = std::stoll(next());
      } else if (a == "--seed") {
        seed = std::stoull(next());
      } else if (a == "--epoch") {
        epoch = std::stoll(next());
      } else if (a == "--data-dir") {
        data_dir = next();
      } else if (plan_file.empty() && !a.starts_with("--")) {
        plan_file = a;
      } else {
        return usage();
      }
    }
    if (plan_file.empty() || out_dir.empty()) return usage();
  } catch (const std::exception& e) {
    std::cerr << "cellscope-dataset: " << e.what() << "\n";
    return 2;
  }
  graphcore::DatasetPlan plan;
  try {
    plan = read_plan(plan_file);
  } catch (const std::exception& e) {
    std::cerr << "cellscope-dataset: bad plan " << plan_file << ": " << e.what() << "\n";
    return 2;
  }
  try {
    rt::DatasetReader reader(plan, data_dir, seed);
    reader.start_epoch(epoch);
    fs::create_directories(out_dir);
    int64_t written = 0;
    while (batches < 0 || written < batches) {
      auto row = reader.next_arrays();
      if (!row) break;
      for (size_t c = 0; c < row->size(); ++c) {
        rt::write_array_npy(
            fs::path(out_dir) / (std::to_string(written) + "_" + reader.column_names()[c] + ".npy"),
            (*row)[c]);
      }
      ++written;
    }
    const auto per_epoch = reader.batches_per_epoch();
    json out = {{"columns", reader.column_names()},
                {"batches_per_epoch", per_epoch ? json(*per_epoch) : json(nullptr)},
                {"written", written}};
    std::cout << out.dump() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "cellscope-dataset: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
