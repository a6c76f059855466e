#include "files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <iostream>
#include <map>
#include <set>
#include <stdexcept>
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

AtomicFile::AtomicFile(fs::path path, std::optional<unsigned> mode) : path_(std::move(path)) {
  const fs::path dir = path_.has_parent_path() ? path_.parent_path() : fs::path(".");
  tmp_ = (dir / ("." + path_.filename().string() + ".tmp.XXXXXX")).string();
  fd_ = ::mkstemp(tmp_.data());
  if (fd_ < 0) {
    throw std::system_error(errno, std::generic_category(),
                            "cannot create a temporary file in " + dir.string());
  }
  // mkstemp creates 0600; give the file `mode`, else the usual permissions (0666 minus the
  // umask).
  mode_t target = 0;
  if (mode) {
    target = static_cast<mode_t>(*mode);
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    target = 0666 & ~mask;
  }
  if (::fchmod(fd_, target) != 0) fail("cannot set permissions on " + tmp_);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

void AtomicFile::fail(const std::string& what) {
  const int err = errno;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());
  tmp_.clear();
  throw std::system_error(err, std::generic_category(), what);
}

void AtomicFile::write(std::string_view data) {
  if (fd_ < 0) throw std::logic_error("AtomicFile: write after commit or failure");
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    // At most 1 GiB per call: Linux writes no more than about 2 GiB at once anyway.
    const ssize_t n = ::write(fd_, p, std::min<size_t>(left, size_t{1} << 30));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot write " + tmp_);
    }
    p += n;
    left -= static_cast<size_t>(n);
    written_ += static_cast<uint64_t>(n);
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw std::logic_error("AtomicFile: commit after commit or failure");
  if (::fsync(fd_) != 0) fail("cannot flush " + tmp_);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("cannot close " + tmp_);
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail("cannot rename onto " + path_.string());
  tmp_.clear();
  // The rename is durable once the directory is synced.
  sync_directory(path_.has_parent_path() ? path_.parent_path() : fs::path("."));
}

void sync_directory(const fs::path& dir) {
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomic(const fs::path& path, std::string_view data, std::optional<unsigned> mode) {
  AtomicFile file(path, mode);
  file.write(data);
  file.commit();
}

void write_model_file_atomic(const fs::path& path, const graphcore::ModelFile& file) {
  AtomicFile out(path);
  file.write([&](std::string_view bytes) { out.write(bytes); });
  out.commit();
}

void write_model_set_atomic(const fs::path& graph_path, const graphcore::ModelFile& graph,
                            const std::vector<ModelSetPart>& data, std::string_view stale_prefix) {
  const fs::path dir = graph_path.has_parent_path() ? graph_path.parent_path() : fs::path(".");
  std::map<fs::path, std::set<std::string>> keep;  // data folder -> the file names it keeps
  for (const ModelSetPart& part : data) {
    const fs::path target = dir / part.location;
    fs::create_directories(target.parent_path());
    write_model_file_atomic(target, *part.file);
    keep[target.parent_path()].insert(target.filename().string());
  }
  write_model_file_atomic(graph_path, graph);  // the commit point
  for (const auto& [folder, names] : keep) {
    std::error_code ec;
    std::vector<fs::path> stale;
    for (const auto& entry : fs::directory_iterator(folder, ec)) {
      const std::string name = entry.path().filename().string();
      const bool ours = name.starts_with(stale_prefix) ||
                        (name.starts_with('.') && name.substr(1).starts_with(stale_prefix));
      if (ours && names.count(name) == 0 && entry.path() != graph_path) {
        stale.push_back(entry.path());
      }
    }
    for (const auto& p : stale) fs::remove(p, ec);
    sync_directory(folder);
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
