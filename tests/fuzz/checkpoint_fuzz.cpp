// The checkpoint reader (.ckpt protobuf, .safetensors) from arbitrary bytes: read_checkpoint
// returns the entries or throws RuntimeError with the file and the reason; never anything else,
// never a crash, never an allocation sized by a forged header.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz.h"
#include "graphcore/runtime.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  static const fs::path file =
      fs::temp_directory_path() / ("cellscope-fuzz-" + std::to_string(getpid()) + ".ckpt");
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  graphcore::runtime::set_max_tensor_bytes(64u << 20);
  try {
    auto entries = graphcore::runtime::read_checkpoint(file);
    (void)entries;
  } catch (const graphcore::runtime::RuntimeError& e) {
    if (std::string(e.what()).empty()) __builtin_trap();
  }
  // Removed after every input: libFuzzer ends a timed run without static destructors, and a file
  // per run left in /tmp adds up over CI runs.
  std::error_code ignored;
  fs::remove(file, ignored);
  return 0;
}
