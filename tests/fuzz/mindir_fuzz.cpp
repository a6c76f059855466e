// The MindIR reader (graphcore/mindir_import.h) from arbitrary bytes: import_mindir returns a graph
// or an error message naming what is wrong; never a crash, never an empty message, never an
// allocation sized by a forged header, and an imported graph only references nodes it has.
// Seeds: build/fuzz/seeds/mindir, generated at build time by mindir_seeds.cpp (no committed
// binaries), and corpus/mindir.
#include <string>

#include "fuzz.h"
#include "graphcore/mindir_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto r = graphcore::import_mindir(cellscope::fuzz::as_text(data, size), "fuzz.mindir");
  if (!r.ok) {
    if (r.error.empty()) __builtin_trap();
    return 0;
  }
  const auto& g = r.report.graph;
  for (const auto& out : g.outputs)
    if (out.node >= g.nodes.size()) __builtin_trap();
  for (const auto& n : g.nodes) {
    for (const auto& in : n.inputs)
      if (in.node >= g.nodes.size()) __builtin_trap();
  }
  if (r.report.total_params < 0) __builtin_trap();
  return 0;
}
