// Threads for the runtime's own loops (the kernels oneDNN does not run: elementwise, pooling,
// normalisation, softmax, their gradients, the optimizer updates).
//
// parallel_for(n, grain, f) calls f(begin, end) on disjoint ranges that cover [0, n): on the
// calling thread alone when n <= grain (small tensors stay serial: waking a thread costs more than
// they do) or when one thread is asked for, otherwise on at most as many OpenMP threads as the
// Executor gave oneDNN (dnnl_ops::set_threads sets OpenMP's per-thread count on the thread that
// runs the graph, so both read the same setting), each range at least `grain` long.
//
// Determinism: callers split only work whose items are independent -- output elements, rows,
// channels -- and compute each item exactly as the serial loop does, never a reduction split
// across ranges. The result is then the same bits at every thread count.
//
// f must not throw (an exception cannot leave an OpenMP region): check inputs before the loop.
// Builds without OpenMP (clang: the fuzz and sanitizer builds) run every range serially.
#pragma once

#include <algorithm>
#include <cstdint>

#ifdef _OPENMP
// libgomp's API, declared here as dnnl_ops.cpp does: omp.h is on GCC's include path only (clang
// tools reading this file with -fopenmp would not find it).
extern "C" {
int omp_get_max_threads();
int omp_in_parallel();
}
#endif

namespace graphcore::runtime {

// Items per range below which a loop is not worth splitting. Cheap elementwise work (an add, a
// max: memory bound) needs far more items to pay for a thread than exp/erf-heavy work.
inline constexpr int64_t kGrainCheap = 1 << 17;
inline constexpr int64_t kGrainMath = 1 << 13;

// The threads parallel_for would use on this thread (1 without OpenMP or inside a parallel
// region).
inline int runtime_threads() {
#ifdef _OPENMP
  if (omp_in_parallel()) return 1;
  return std::max(1, omp_get_max_threads());
#else
  return 1;
#endif
}

template <class F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t most = (n + grain - 1) / grain;
  const int64_t chunks = std::min<int64_t>(runtime_threads(), most);
  if (chunks <= 1) {
    f(int64_t{0}, n);
    return;
  }
#ifdef _OPENMP
#pragma omp parallel for num_threads(static_cast <int>(chunks)) schedule(static, 1)
  for (int64_t i = 0; i < chunks; ++i) {
    // Range i: n / chunks items, one more for the first n % chunks ranges (no overflow).
    const int64_t base = n / chunks, extra = n % chunks;
    const int64_t begin = i * base + std::min(i, extra);
    f(begin, begin + base + (i < extra ? 1 : 0));
  }
#else
  f(int64_t{0}, n);
#endif
}

}  // namespace graphcore::runtime
