#include "git.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>
#include <utility>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, not in a header

namespace cellscope::server {

namespace fs = std::filesystem;

namespace {

// A pipe whose ends are closed on destruction (and on exec: O_CLOEXEC).
struct Pipe {
  std::array<int, 2> fd{-1, -1};
  bool open() { return pipe2(fd.data(), O_CLOEXEC) == 0; }
  void close_end(int i) {
    if (fd[static_cast<size_t>(i)] >= 0) ::close(fd[static_cast<size_t>(i)]);
    fd[static_cast<size_t>(i)] = -1;
  }
  ~Pipe() {
    close_end(0);
    close_end(1);
  }
};

std::vector<std::string> environment_with(const std::vector<std::string>& env) {
  std::map<std::string, std::string> vars;
  std::vector<std::string> order;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    const auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = entry.substr(0, eq);
    if (!vars.count(name)) order.push_back(name);
    vars[name] = entry;
  }
  for (const auto& entry : env) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = entry.substr(0, eq);
    if (eq + 1 == entry.size()) {
      vars.erase(name);
      continue;
    }
    if (!vars.count(name)) order.push_back(name);
    vars[name] = entry;
  }
  std::vector<std::string> out;
  for (const auto& name : order)
    if (auto it = vars.find(name); it != vars.end()) out.push_back(it->second);
  return out;
}

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string describe_failure(const ProcessResult& r, const GitOptions& options) {
  if (!r.spawn_error.empty()) return "cannot run " + options.git + ": " + r.spawn_error;
  if (r.timed_out) {
    return options.git + " did not answer within " + std::to_string(options.timeout.count()) +
           " ms";
  }
  if (r.truncated)
    return "the file is larger than " + std::to_string(options.max_file_bytes) + " bytes";
  std::string line = first_line(r.err);
  if (line.rfind("fatal: ", 0) == 0) line = line.substr(7);
  return "git: " + (line.empty() ? "exit status " + std::to_string(r.exit_code) : line);
}

// The environment git runs with: no prompt, no pager, no optional lock (a read must not write the
// index), messages in English (they are parsed), and the directory given with -C decides the
// repository.
const std::vector<std::string>& git_env() {
  static const std::vector<std::string> env = {
      "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "GIT_PAGER=cat", "LC_ALL=C", "GIT_DIR=",
      "GIT_WORK_TREE=",        "GIT_INDEX_FILE="};
  return env;
}

// The commands used only read objects and the index; a repository's configuration could still
// name a program for git to run when it reads the index (core.fsmonitor): the workspace is not
// trusted to run code, so that is turned off.
ProcessResult git(const GitOptions& options, const fs::path& dir,
                  const std::vector<std::string>& args, size_t max_output = 1u << 20) {
  std::vector<std::string> argv = {options.git, "-c", "core.fsmonitor=false", "-C", dir.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, git_env(), options.timeout, max_output);
}

std::string generic(const fs::path& p) { return p.lexically_normal().generic_string(); }

fs::path canonical_or_normal(const fs::path& p) {
  std::error_code ec;
  auto c = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? fs::absolute(p).lexically_normal() : c;
}

// `path` relative to `root` when it is inside it ("" otherwise).
std::string inside(const fs::path& path, const fs::path& root) {
  const fs::path rel = canonical_or_normal(path).lexically_relative(root);
  if (rel.empty()) return "";
  std::string s = rel.generic_string();
  if (s == "." || s.rfind("..", 0) == 0) return "";
  return s;
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                          std::chrono::milliseconds timeout, size_t max_output) {
  ProcessResult result;
  if (argv.empty()) {
    result.spawn_error = "no command";
    return result;
  }
  Pipe out;
  Pipe err;
  if (!out.open() || !err.open()) {
    result.spawn_error = std::strerror(errno);
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.fd[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err.fd[1], 2);
  // Nothing else of the caller's (sockets, open files) reaches the child.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::vector<std::string> environment = environment_with(env);
  std::vector<char*> envp;
  envp.reserve(environment.size() + 1);
  for (const auto& e : environment) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    result.spawn_error = rc == ENOENT ? argv[0] + " is not installed (not found in PATH)"
                                      : std::string(std::strerror(rc));
    return result;
  }
  out.close_end(1);
  err.close_end(1);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::array<char, size_t{64} * 1024> buf{};
  bool kill_it = false;
  while (out.fd[0] >= 0 || err.fd[0] >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      kill_it = true;
      break;
    }
    std::array<pollfd, 2> fds{pollfd{out.fd[0], POLLIN, 0}, pollfd{err.fd[0], POLLIN, 0}};
    const int n = poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (n < 0) {
      if (errno == EINTR) continue;
      kill_it = true;
      break;
    }
    for (size_t i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      Pipe& p = i == 0 ? out : err;
      std::string& sink = i == 0 ? result.out : result.err;
      const ssize_t got = ::read(p.fd[0], buf.data(), buf.size());
      if (got > 0) {
        sink.append(buf.data(), static_cast<size_t>(got));
        if (sink.size() > max_output) {
          sink.resize(max_output);
          result.truncated = true;
          kill_it = true;
        }
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        p.close_end(0);
      }
    }
    if (kill_it) break;
  }
  int status = 0;
  // Both outputs closed: the process is ending (or closed them and goes on: the timeout holds).
  while (!kill_it) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
      return result;
    }
    if (done < 0 && errno != EINTR) return result;
    if (std::chrono::steady_clock::now() >= deadline) {
      result.timed_out = true;
      kill_it = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  kill(pid, SIGKILL);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return result;
}

HeadFile read_head_file(const fs::path& file, const GitOptions& options) {
  HeadFile head;
  const fs::path abs = canonical_or_normal(file);
  const std::string name = abs.filename().string();
  const fs::path dir = abs.parent_path();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    head.error = "the directory of " + name + " does not exist";
    return head;
  }
  auto top = git(options, dir, {"rev-parse", "--show-toplevel"});
  if (top.exit_code != 0) {
    const bool not_repo = top.spawn_error.empty() && !top.timed_out &&
                          top.err.find("not a git repository") != std::string::npos;
    head.error = not_repo ? name + " is not in a git repository"
                          : "cannot find the git repository of " + name + ": " +
                                describe_failure(top, options);
    return head;
  }
  head.root = canonical_or_normal(trimmed(top.out));
  head.relative = inside(abs, head.root);
  if (head.relative.empty()) {
    head.error = name + " is not inside the git work tree " + head.root.string();
    return head;
  }
  auto commit = git(options, head.root, {"rev-parse", "--verify", "--quiet", "--short", "HEAD"});
  if (commit.exit_code != 0) {
    head.error = commit.spawn_error.empty() && !commit.timed_out
                     ? "the git repository of " + name + " has no commits yet"
                     : "cannot read HEAD: " + describe_failure(commit, options);
    return head;
  }
  head.commit = trimmed(commit.out);
  auto blob = git(options, head.root, {"cat-file", "blob", "HEAD:" + head.relative},
                  options.max_file_bytes);
  if (blob.exit_code == 0) {
    head.text = std::move(blob.out);
    return head;
  }
  if (!blob.spawn_error.empty() || blob.timed_out || blob.truncated) {
    head.error = "cannot read " + name + " at HEAD: " + describe_failure(blob, options);
    return head;
  }
  // Not in the commit: new (added to the index, not committed) or not tracked at all.
  auto staged = git(options, head.root, {"ls-files", "--", head.relative});
  const bool added = staged.exit_code == 0 && !trimmed(staged.out).empty();
  head.error = name + " is not in the last commit (" + head.commit +
               "): " + (added ? "it is added but not committed yet" : "it is not tracked by git");
  return head;
}

HeadSourceProvider::HeadSourceProvider(const HeadFile& head, graphcore::SourceProvider& fallback,
                                       GitOptions options)
    : root_(head.root),
      model_(generic(canonical_or_normal(head.root / head.relative))),
      model_text_(head.text),
      fallback_(fallback),
      options_(std::move(options)) {}

std::optional<std::string> HeadSourceProvider::read(const fs::path& path) {
  const std::string key = generic(canonical_or_normal(path));
  if (key == model_) return model_text_;
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  std::optional<std::string> text;
  const std::string rel = inside(path, root_);
  if (!rel.empty()) {
    if (!tracked_) {
      tracked_.emplace();
      auto list =
          git(options_, root_, {"ls-tree", "-r", "-z", "--full-tree", "--name-only", "HEAD"},
              options_.max_file_bytes);
      if (list.exit_code == 0) {
        size_t start = 0;
        for (size_t i = 0; i < list.out.size(); ++i) {
          if (list.out[i] != '\0') continue;
          tracked_->insert(list.out.substr(start, i - start));
          start = i + 1;
        }
      }
    }
    if (tracked_->count(rel)) {
      auto blob =
          git(options_, root_, {"cat-file", "blob", "HEAD:" + rel}, options_.max_file_bytes);
      if (blob.exit_code == 0) text = std::move(blob.out);
    }
  }
  if (!text) text = fallback_.read(path);
  cache_[key] = text;
  return text;
}

}  // namespace cellscope::server
