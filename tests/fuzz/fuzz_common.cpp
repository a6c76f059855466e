#include <cstdlib>
#include <filesystem>
#include <system_error>

#include <spdlog/spdlog.h>

#include "fuzz.h"

namespace cellscope::fuzz {

void init_harness() {
  spdlog::set_level(spdlog::level::off);
  std::error_code ec;
  std::filesystem::current_path(CELLSCOPE_SOURCE_DIR, ec);
}

bool verbose() {
  static const bool on = [] {
    const char* v = std::getenv("CELLSCOPE_FUZZ_VERBOSE");
    return v != nullptr && *v != '\0' && *v != '0';
  }();
  return on;
}

}  // namespace cellscope::fuzz

// Called once by libFuzzer (and by replay_main.cpp) before the first input.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  cellscope::fuzz::init_harness();
  return 0;
}
