// The harnesses without libFuzzer: `<harness> FILE|DIR...` runs LLVMFuzzerTestOneInput once per
// file (directories recursively, in name order), as libFuzzer would replay a corpus. ctest runs
// every harness over its seeds and its regression inputs (tests/fuzz/CMakeLists.txt), so a crash
// that was found and fixed stays fixed, in the plain build and under the sanitizers.
// A crash aborts the process (non-zero exit); an input slower than --slow-ms is reported and
// fails the run.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz.h"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

void collect(const fs::path& p, std::vector<fs::path>& out) {
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    for (const auto& e : fs::recursive_directory_iterator(p, ec))
      if (e.is_regular_file(ec) && e.path().filename().string().front() != '.')
        out.push_back(e.path());
  } else if (fs::is_regular_file(p, ec)) {
    out.push_back(p);
  } else {
    std::fprintf(stderr, "replay: %s: no such file or directory\n", p.string().c_str());
    std::exit(2);
  }
}

}  // namespace

int main(int argc, char** argv) {
  double slow_ms = 10000;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a.rfind("--slow-ms=", 0) == 0) {
      slow_ms = std::strtod(argv[i] + 10, nullptr);
      continue;
    }
    std::vector<fs::path> found;
    collect(a, found);
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  LLVMFuzzerInitialize(&argc, &argv);
  double slowest = 0;
  std::string slowest_file;
  int slow = 0;
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto t0 = std::chrono::steady_clock::now();
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()), data.size());
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (ms > slowest) {
      slowest = ms;
      slowest_file = f.string();
    }
    if (ms > slow_ms) {
      std::fprintf(stderr, "replay: SLOW %s: %.0f ms (limit %.0f ms)\n", f.string().c_str(), ms,
                   slow_ms);
      ++slow;
    }
  }
  std::printf("replay: %zu inputs, slowest %.1f ms (%s)\n", files.size(), slowest,
              slowest_file.c_str());
  return slow == 0 ? 0 : 1;
}
