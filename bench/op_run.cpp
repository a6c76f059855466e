// cellscope-op: runs one graph operator of the operator table on .npy inputs with the CPU
// runtime's kernel and writes its outputs, so that a kernel (a backward operator in particular,
// which no API produces) can be compared with MindSpore directly (tests/mindspore/test_losses.py).
//
// Usage: cellscope-op OP [--attr NAME=VALUE]... [--outputs N] --input FILE.npy... --out DIR
//   --attr     a node attribute: an int, a float, True/False, else a string
//   --outputs  how many outputs the operator has (default 1)
//   --out      writes DIR/<i>.npy per output (atomically)
// Exit status: 0 done, 1 the kernel failed (the message on stderr), 2 bad usage.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "graphcore/opdef.h"
#include "graphcore/runtime.h"

namespace fs = std::filesystem;
namespace rt = graphcore::runtime;
using graphcore::Attr;
using graphcore::AttrValue;

namespace {

int usage() {
  std::cerr << "usage: cellscope-op OP [--attr NAME=VALUE]... [--outputs N] --input FILE.npy... "
               "--out DIR\n";
  return 2;
}

AttrValue parse_value(const std::string& v) {
  if (v == "True") return true;
  if (v == "False") return false;
  char* end = nullptr;
  const long long i = std::strtoll(v.c_str(), &end, 10);
  if (!v.empty() && *end == '\0') return static_cast<int64_t>(i);
  const double d = std::strtod(v.c_str(), &end);
  if (!v.empty() && *end == '\0') return d;
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return usage();
  const std::string op = args[0];
  std::vector<Attr> attrs;
  std::vector<std::string> inputs;
  std::string out;
  size_t outputs = 1;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (i + 1 >= args.size()) return usage();
    const std::string& v = args[++i];
    if (a == "--attr") {
      const auto eq = v.find('=');
      if (eq == std::string::npos) return usage();
      attrs.push_back(Attr{v.substr(0, eq), parse_value(v.substr(eq + 1))});
    } else if (a == "--input") {
      inputs.push_back(v);
    } else if (a == "--outputs") {
      outputs = static_cast<size_t>(std::strtoul(v.c_str(), nullptr, 10));
    } else if (a == "--out") {
      out = v;
    } else {
      return usage();
    }
  }
  if (out.empty() || outputs == 0) return usage();
  if (graphcore::find_op(op) == nullptr) {
    std::cerr << "cellscope-op: no operator '" << op << "'\n";
    return 2;
  }
  try {
    // The operator applied to graph inputs; its outputs' shapes are the kernel's.
    graphcore::CellReport r;
    r.name = op;
    r.compiled = true;
    graphcore::Node n;
    n.id = op;
    n.op = op;
    n.attrs = attrs;
    std::vector<rt::Tensor> values;
    for (size_t i = 0; i < inputs.size(); ++i) {
      values.push_back(rt::read_npy(inputs[i]));
      graphcore::Node in;
      in.id = "input" + std::to_string(i);
      in.kind = graphcore::NodeKind::Input;
      in.op = "Input";
      in.outputs.push_back({graphcore::Shape::of(values.back().shape()), values.back().dtype()});
      r.graph.nodes.push_back(std::move(in));
      n.inputs.push_back({static_cast<uint32_t>(i), 0});
    }
    for (size_t k = 0; k < outputs; ++k)
      n.outputs.push_back({graphcore::Shape::unranked(), graphcore::DType::Float32});
    r.graph.nodes.push_back(std::move(n));
    for (size_t k = 0; k < outputs; ++k)
      r.graph.outputs.push_back({static_cast<uint32_t>(inputs.size()), static_cast<uint32_t>(k)});
    rt::Executor ex(r, {});
    for (size_t i = 0; i < values.size(); ++i) ex.set_input(i, values[i]);
    const rt::RunStatus s = ex.run();
    if (s.kind != rt::RunStatus::Kind::Finished) {
      std::cerr << "cellscope-op: " << s.message << "\n";
      return 1;
    }
    fs::create_directories(out);
    const auto outs = ex.outputs();
    for (size_t k = 0; k < outs.size(); ++k) {
      const fs::path path = fs::path(out) / (std::to_string(k) + ".npy");
      fs::path tmp = path;
      tmp += ".tmp" + std::to_string(::getpid()) + ".npy";
      rt::write_npy(tmp, outs[k]);
      fs::rename(tmp, path);
    }
  } catch (const std::exception& e) {
    std::cerr << "cellscope-op: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
