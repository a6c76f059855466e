#include "files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <iostream>
#include <set>
#include <system_error>

namespace cellscope::server {

namespace fs = std::filesystem;

namespace {

bool skip_directory(const fs::path& dir) {
  const std::string name = dir.filename().string();
  if (name.size() > 1 && name[0] == '.') return true;  // .git, .venv, .tox, ...
  if (name == "node_modules" || name == "__pycache__" || name == "site-packages") return true;
  std::error_code ec;
  return fs::exists(dir / "pyvenv.cfg", ec);  // a virtual environment under any name
}

}  // namespace

std::vector<fs::path> collect_python_files(const std::vector<std::string>& paths,
                                           std::vector<std::string>* missing) {
  std::set<fs::path> found;
  for (const auto& arg : paths) {
    const fs::path p(arg);
    std::error_code ec;
    const auto status = fs::status(p, ec);
    if (ec || !fs::exists(status)) {
      if (missing != nullptr) missing->push_back(arg);
      continue;
    }
    if (!fs::is_directory(status)) {
      found.insert(p.lexically_normal());
      continue;
    }
    fs::recursive_directory_iterator it(p, fs::directory_options::skip_permission_denied, ec);
    const fs::recursive_directory_iterator end;
    for (; !ec && it != end; it.increment(ec)) {
      const auto& entry = *it;
      std::error_code type_ec;
      if (entry.is_directory(type_ec)) {
        if (skip_directory(entry.path())) it.disable_recursion_pending();
        continue;
      }
      if (entry.path().extension() == ".py" && entry.is_regular_file(type_ec)) {
        found.insert(entry.path().lexically_normal());
      }
    }
  }
  return {found.begin(), found.end()};
}

void write_file_atomic(const fs::path& path, std::string_view data) {
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::string tmpl = (dir / ("." + path.filename().string() + ".tmp.XXXXXX")).string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) {
    throw std::system_error(errno, std::generic_category(),
                            "cannot create a temporary file in " + dir.string());
  }
  auto fail = [&](const std::string& what) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmpl.c_str());
    throw std::system_error(err, std::generic_category(), what);
  };
  // mkstemp creates 0600; give the file the usual permissions (0666 minus the umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd, 0666 & ~mask) != 0) fail("cannot set permissions on " + tmpl);
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot write " + tmpl);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) fail("cannot flush " + tmpl);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmpl.c_str());
    throw std::system_error(err, std::generic_category(), "cannot close " + tmpl);
  }
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmpl.c_str());
    throw std::system_error(err, std::generic_category(), "cannot rename onto " + path.string());
  }
  // The rename is durable once the directory is synced (best effort: some file systems refuse).
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

std::string display_path(const std::string& path) {
  if (path.empty()) return path;
  std::error_code ec;
  fs::path p(path);
  if (p.is_absolute()) {
    const fs::path cwd = fs::current_path(ec);
    if (!ec) {
      const fs::path rel = p.lexically_normal().lexically_relative(cwd);
      if (!rel.empty() && *rel.begin() != "..") p = rel;
    }
  }
  return p.lexically_normal().generic_string();
}

bool emit(const std::string& path, const std::string& data) {
  if (path.empty() || path == "-") {
    std::cout << data;
    std::cout.flush();
    return static_cast<bool>(std::cout);
  }
  try {
    write_file_atomic(path, data);
    spdlog::info("wrote {} ({} bytes)", path, data.size());
    return true;
  } catch (const std::exception& e) {
    std::cerr << "cellscope: error: " << e.what() << "\n";
    return false;
  }
}

}  // namespace cellscope::server
