// mindspore_config.json from arbitrary bytes: parse_project_config never throws, reports every
// problem located in the file, and what it accepts can be used (inputs for any Cell, config paths).
#include <string>

#include "fuzz.h"
#include "project_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cellscope;
  server::ProjectConfig config = server::parse_project_config(
      "/fuzz/mindspore_config.json", std::string(fuzz::as_text(data, size)));
  (void)config.config_paths();
  (void)config.inputs_for("Net", "/fuzz/model.py");
  for (const auto& d : config.diagnostics)
    if (d.message.empty()) __builtin_trap();  // every problem says what it is
  return 0;
}
