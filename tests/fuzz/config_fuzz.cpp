// Config files (YAML and JSON) that a model loads and the user named (mindspore_config.json
// `configs`): the input is the config file; a fixed model loads it with yaml.safe_load, json.load
// and yaml.load_all and builds a Cell from its values, so the parsers and the evaluation of
// whatever they produce are both exercised. Token mutations of the YAML text as for Python.
#include <string>

#include "fuzz.h"
#include "fuzz_analysis.h"
#include "python_mutator.h"

namespace {

constexpr const char* kModel = R"py(import json
import yaml
import mindspore
import mindspore.nn as nn

with open('/fuzz/config.yaml') as f:
    cfg = yaml.safe_load(f)
docs = list(yaml.load_all(open('/fuzz/config.yaml'), Loader=yaml.SafeLoader))
raw = json.load(open('/fuzz/config.yaml'))


class Net(nn.Cell):
    def __init__(self, c):
        super().__init__()
        layers = []
        for i, width in enumerate(c['widths']):
            layers.append(nn.Dense(c.get('in', 4) if i == 0 else c['widths'][i - 1], width))
        self.body = nn.SequentialCell(layers)
        self.act = getattr(nn, c.get('act', 'ReLU'))()

    def construct(self, x):
        return self.act(self.body(x))


net = Net(cfg)
out = net(mindspore.ops.ones((2, cfg.get('in', 4)), mindspore.float32))
)py";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cellscope::fuzz;
  graphcore::MemorySourceProvider sources;
  sources.add("/fuzz/model.py", kModel);
  sources.add("/fuzz/config.yaml", std::string(as_text(data, size)));
  graphcore::AnalysisOptions options;
  options.config_files = {"/fuzz/config.yaml"};
  analyse_everything("/fuzz/model.py", sources, options, size % 2 == 0 ? "cpu" : "ascend910");
  return 0;
}

#ifdef CELLSCOPE_FUZZING
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  return cellscope::fuzz::mutate_python_or_bytes(data, size, max_size, seed);
}
#endif
