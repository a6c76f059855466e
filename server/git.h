// Reading a model file as of the last git commit (the base of the graph view's "Compare with
// HEAD"): `git` run as a subprocess (never through a shell), with a timeout and an output cap, in
// the directory of the file. Nothing is written to the repository (GIT_OPTIONAL_LOCKS=0), and no
// program the repository's configuration names is run (core.fsmonitor=false; the commands used
// run no filters, textconv, hooks or pager).
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graphcore/analysis.h"

namespace cellscope::server {

struct ProcessResult {
  int exit_code = -1;       // -1: it did not exit normally (killed, or never started)
  std::string out;          // stdout (at most max_output bytes)
  std::string err;          // stderr (at most max_output bytes)
  bool timed_out = false;   // killed after the timeout
  bool truncated = false;   // an output went past max_output (the process was killed)
  std::string spawn_error;  // why it could not be started ("" when it was)
};

// Runs argv[0] (looked up in PATH) with `argv` and the environment plus `env` (entries
// "NAME=value"; "NAME=" with nothing after removes NAME), stdin from /dev/null. Kills it (SIGKILL)
// after `timeout` or when an output exceeds `max_output` bytes. No other descriptor of the caller
// is inherited. Thread-safe (posix_spawn).
ProcessResult run_process(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                          std::chrono::milliseconds timeout, size_t max_output);

struct GitOptions {
  std::string git = "git";                  // the executable (PATH lookup)
  std::chrono::milliseconds timeout{5000};  // per git command
  size_t max_file_bytes = 64u << 20;        // a larger blob is refused
};

// A file as of HEAD.
struct HeadFile {
  std::filesystem::path root;  // the repository's top level (git's, symlinks resolved)
  std::string commit;          // HEAD, abbreviated ("abc1234")
  std::string relative;        // the file's path in the repository ("models/net.py")
  std::string text;            // its contents at HEAD
  // Why there is no text, for the user: "net.py is not in a git repository", "the repository has
  // no commits yet", "net.py is not in the last commit (abc1234): it is not tracked by git".
  std::string error;
};

HeadFile read_head_file(const std::filesystem::path& file, const GitOptions& options = {});

// Files as of HEAD for an analysis of the base: the files of the repository tracked at HEAD are
// read from the commit, `head` (the model file) from its text; any other path (not tracked, or
// outside the repository) through `fallback`. Reads are cached.
class HeadSourceProvider : public graphcore::SourceProvider {
 public:
  HeadSourceProvider(const HeadFile& head, graphcore::SourceProvider& fallback,
                     GitOptions options = {});
  std::optional<std::string> read(const std::filesystem::path& path) override;

 private:
  std::filesystem::path root_;
  std::string model_;  // the model file's path (lexically normal)
  std::string model_text_;
  graphcore::SourceProvider& fallback_;
  GitOptions options_;
  std::optional<std::set<std::string>> tracked_;  // paths at HEAD (relative), listed on first use
  std::map<std::string, std::optional<std::string>> cache_;
};

}  // namespace cellscope::server
