// The MindSpore backend of a deploy agent (docs/deploy.md, "Backends"): real MindSpore on the
// device runs the bundle's MindIR through `mindspore.load` + `nn.GraphCell` in a long-lived
// Python subprocess (the script is in this binary), spoken to in JSON lines over its stdin and
// stdout. Cellscope never runs user code: the subprocess runs MindSpore's own loader on the file.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

namespace cellscope::agent {

// {"name": "mindspore", "available": bool, "python", "version" | "reason"}: whether `python`
// imports mindspore (run once, up to `timeout`).
nlohmann::json detect_mindspore(const std::string& python, std::chrono::seconds timeout);

// {"name": "mindspore-lite", "available": bool, "serving": false, "python", "version" | "reason"}:
// whether `python` imports MindSpore Lite (mindspore_lite). Reported so the user sees it was
// found; the agent does not serve through it (docs/deploy.md, Backends).
nlohmann::json detect_mindspore_lite(const std::string& python, std::chrono::seconds timeout);

class MindSporeWorker {
 public:
  // Starts `python` on the model and waits for it to load (throws std::runtime_error with the
  // subprocess's last words when it cannot).
  MindSporeWorker(const std::string& python, const std::filesystem::path& model);
  ~MindSporeWorker();
  MindSporeWorker(const MindSporeWorker&) = delete;
  MindSporeWorker& operator=(const MindSporeWorker&) = delete;

  // {"inputs": [{"shape", "dtype", "data"}]} -> {"outputs": [{"shape", "dtype", "data"}]};
  // throws std::runtime_error on an error answer, a dead subprocess or a timeout.
  nlohmann::json run(const nlohmann::json& request);
  [[nodiscard]] const std::string& version() const { return version_; }

 private:
  std::string read_line(std::chrono::seconds timeout);
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string buffer_, version_;
  std::mutex mu_;
};

}  // namespace cellscope::agent
