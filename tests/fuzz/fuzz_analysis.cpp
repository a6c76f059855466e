#include "fuzz_analysis.h"
#include "graphcore/hardware.h"
#include "graphcore/optimize.h"

namespace cellscope::fuzz {

void analyse_everything(const std::filesystem::path& file, graphcore::MemorySourceProvider& sources,
                        graphcore::AnalysisOptions options, const std::string& target) {
  // Small budgets: a fuzzed `while True` or deep recursion must end quickly, and does (the budget
  // is the analyser's own defence; the defaults are for real models).
  options.step_budget = 200'000;
  options.max_call_depth = 60;
  options.record_facts = true;
  options.outline = true;
  options.target = target;
  graphcore::AnalysisResult result = graphcore::analyze_file(file, options, sources);
  for (const graphcore::CellReport& cell : result.cells) {
    if (!cell.compiled) continue;  // as `cellscope graph`: no optimization layer then
    graphcore::OptimizeOptions oo;
    oo.target = target;
    graphcore::OptimizedGraph graph = graphcore::optimize(cell, oo);
    graphcore::HardwareOptions ho;
    ho.target = target;
    ho.mode = (cell.graph.nodes.size() % 2 == 0) ? "infer" : "train";
    (void)graphcore::estimate_hardware(cell, graph, ho);
  }
}

}  // namespace cellscope::fuzz
