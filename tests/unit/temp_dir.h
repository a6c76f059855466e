// A fresh directory for one test, removed with everything in it when the test ends.
#pragma once

#include <stdlib.h>  // NOLINT(modernize-deprecated-headers): mkdtemp is POSIX, declared by <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace cellscope::testing {

class TempDir {
 public:
  // `/tmp/<prefix>XXXXXX` (mkdtemp); path() is empty if it could not be made.
  explicit TempDir(const std::string& prefix = "cellscope_test_") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
    if (mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

  // Writes `text` to `rel` (its directories made); returns the file's path.
  std::string write(const std::filesystem::path& rel, const std::string& text) const {
    const std::filesystem::path p = path_ / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }

 private:
  std::filesystem::path path_;
};

}  // namespace cellscope::testing
