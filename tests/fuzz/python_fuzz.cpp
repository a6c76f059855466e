// The Python front end from arbitrary bytes and from token-level mutations of Python models
// (python_mutator.h): parse, evaluate (module code, __init__, construct), optimize and map onto
// a hardware target, as `cellscope graph --layer hardware` does. Nothing may crash, throw an
// exception the callers do not expect, or take more than a second; seeds are the corpus models,
// the fixtures and (in `make fuzz`) real model files.
#include <cstdint>
#include <string>

#include "fuzz.h"
#include "fuzz_analysis.h"
#include "graphcore/analysis.h"
#include "python_mutator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cellscope::fuzz;
  graphcore::MemorySourceProvider sources;
  sources.add("/fuzz/model.py", std::string(as_text(data, size)));
  // The target from the input's length: every target's numbers get exercised.
  static const char* const kTargets[] = {"cpu", "ascend910", "ascend910b", "ascend310",
                                         "ascend310p"};
  analyse_everything("/fuzz/model.py", sources, {}, kTargets[size % 5]);
  return 0;
}

#ifdef CELLSCOPE_FUZZING
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  return cellscope::fuzz::mutate_python_or_bytes(data, size, max_size, seed);
}
#endif
