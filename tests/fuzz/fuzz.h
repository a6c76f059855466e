// Shared pieces of the fuzz harnesses (tests/fuzz, docs/reliability.md). Each harness defines
// LLVMFuzzerTestOneInput; it is linked either with libFuzzer (CELLSCOPE_FUZZ=ON, `make fuzz`) or
// with replay_main.cpp, which runs it over the seed corpus and the regression inputs (ctest).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace cellscope::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Quiets spdlog (the harnesses feed garbage on purpose; the logs would drown the fuzzer's output)
// and moves to the source tree, where seed inputs name files such as tests/corpus/models/...
void init_harness();

// CELLSCOPE_FUZZ_VERBOSE=1: the protocol harnesses print what the server sends (to see what a
// seed reaches).
bool verbose();

}  // namespace cellscope::fuzz
