// Hardware target files (graphcore/targets/*.json; users may write their own) from arbitrary
// bytes: parse_hardware_target accepts a complete, valid target or throws TargetError naming the
// problem. An Ascend target it accepts must give the kernel models finite, non-negative figures
// (a convolution-sized Cube problem and an elementwise Vector problem).
#include <cmath>
#include <string>

#include "fuzz.h"
#include "graphcore/hardware.h"

namespace {

void check(const graphcore::KernelEstimate& k) {
  for (double v : {k.cycles, k.time_us, k.gm_read_bytes, k.gm_write_bytes, k.bandwidth_gbps})
    if (!std::isfinite(v) || v < 0) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  graphcore::HardwareTarget target;
  try {
    target = graphcore::parse_hardware_target(cellscope::fuzz::as_text(data, size), "fuzz.json");
  } catch (const graphcore::TargetError& e) {
    if (std::string(e.what()).empty()) __builtin_trap();
    return 0;
  }
  if (!target.ascend) return 0;  // the Cube and Vector models are the Ascend chips'
  graphcore::CubeProblem cube;
  cube.batch = 8;
  cube.m = 3136;
  cube.k = 576;
  cube.n = 64;
  cube.epilogue_ops = 2;
  check(graphcore::model_cube_kernel(target, cube));
  graphcore::VectorProblem vec;
  vec.elements = 1 << 20;
  vec.in_bytes = 2 << 20;
  vec.out_bytes = 2 << 20;
  check(graphcore::model_vector_kernel(target, vec));
  return 0;
}
