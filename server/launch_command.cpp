// `cellscope launch --msrun FILE [-- ARGS]` (launch.h; docs/parallel.md, "Launching on a
// cluster").
//
// Processes: msrun is started in a process group of its own (so the terminal's Ctrl+C reaches
// this process only, which forwards it), with PATH led by the interpreter's bin directory (msrun's
// workers run `python` from PATH) and an environment marker CELLSCOPE_LAUNCH_ID. msrun starts each
// worker in a session of its own (setsid), so the process group does not reach them: on Ctrl+C /
// SIGTERM, msrun gets SIGINT (its handler SIGKILLs the workers and the scheduler), then its group
// gets SIGKILL, then every process still carrying the marker (found in /proc/PID/environ) does.
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "git.h"  // run_process
#include "graphcore/text.h"
#include "launch.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX declares no header

namespace cellscope::server {

namespace fs = std::filesystem;

namespace {

// "~/x" -> $HOME/x; relative -> against `base`.
fs::path resolve_path(const std::string& p, const fs::path& base) {
  fs::path out;
  if (p.rfind("~/", 0) == 0) {
    const char* home = std::getenv("HOME");
    out = fs::path(home != nullptr ? home : "") / p.substr(2);
  } else {
    out = fs::path(p);
  }
  if (out.is_relative()) out = base / out;
  return out.lexically_normal();
}

std::optional<int> parse_slots(const std::string& word) {
  if (word.rfind("slots=", 0) != 0 || word.size() == 6 || word.size() > 12) return std::nullopt;
  int v = 0;
  for (char c : word.substr(6)) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v < 1 || v > 65536) return std::nullopt;
  return v;
}

}  // namespace

std::optional<std::vector<ClusterHost>> parse_hostfile(const std::string& text,
                                                       std::string* error) {
  std::vector<ClusterHost> hosts;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (w.empty()) continue;
    std::optional<int> slots = 1;
    if (w.size() == 2) slots = parse_slots(w[1]);
    if (w.size() > 2 || !slots) {
      *error = "line " + std::to_string(number) + ": expected \"HOST slots=N\" (N from 1 to 65536)";
      return std::nullopt;
    }
    hosts.push_back({w[0], *slots});
  }
  if (hosts.empty()) {
    *error = "no host in it";
    return std::nullopt;
  }
  return hosts;
}

std::optional<ResolvedCluster> resolve_cluster(const ClusterConfig* config,
                                               const fs::path& config_dir,
                                               const ClusterOverrides& cli, const fs::path& script,
                                               std::string* error) {
  static const ClusterConfig kNone;
  const ClusterConfig& cfg = config != nullptr ? *config : kNone;
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  ResolvedCluster out;

  // The hostfile: the command line's file, else the configuration's list or file.
  std::optional<fs::path> hostfile;
  if (cli.hostfile) {
    hostfile = resolve_path(*cli.hostfile, cwd);
  } else if (!cfg.hostfile.empty()) {
    hostfile = resolve_path(cfg.hostfile, config_dir);
  } else {
    out.hosts = cfg.hosts;
  }
  if (hostfile) {
    std::ifstream in(*hostfile, std::ios::binary);
    if (!in) {
      *error = "cannot read the hostfile " + hostfile->string();
      return std::nullopt;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    std::string why;
    auto hosts = parse_hostfile(ss.str(), &why);
    if (!hosts) {
      *error = "hostfile " + hostfile->string() + ": " + why;
      return std::nullopt;
    }
    out.hosts = std::move(*hosts);
  }

  const std::optional<int> worker_num = cli.worker_num ? cli.worker_num : cfg.worker_num;
  const std::optional<int> local_num =
      cli.local_worker_num ? cli.local_worker_num : cfg.local_worker_num;
  out.node_rank = cli.node_rank.value_or(cfg.node_rank.value_or(0));
  if (!out.hosts.empty()) {
    int64_t slots = 0;
    for (const auto& h : out.hosts) slots += h.slots;
    if (out.node_rank >= static_cast<int>(out.hosts.size())) {
      *error = "node_rank " + std::to_string(out.node_rank) + " is past the hostfile's " +
               std::to_string(out.hosts.size()) + " host(s) (node ranks count from 0)";
      return std::nullopt;
    }
    for (const auto& h : out.hosts) {
      if (h.slots != out.hosts.front().slots) {
        // msrun numbers a node's workers node_rank * local_worker_num + i (process_entity/_api.py
        // _get_node_id_and_log_path): uneven nodes would share rank ids.
        *error = "the hostfile's hosts have different slots (" + out.hosts.front().host + ": " +
                 std::to_string(out.hosts.front().slots) + ", " + h.host + ": " +
                 std::to_string(h.slots) +
                 "); msrun numbers ranks node_rank × local_worker_num + i, so every host needs "
                 "the same";
        return std::nullopt;
      }
    }
    if (slots > 65536) {
      *error = "the hostfile's slots sum to " + std::to_string(slots) + " (at most 65536)";
      return std::nullopt;
    }
    if (worker_num && *worker_num != slots) {
      *error = "worker_num is " + std::to_string(*worker_num) +
               " but the hostfile's slots sum to " + std::to_string(slots);
      return std::nullopt;
    }
    out.worker_num = static_cast<int>(slots);
    const int mine = out.hosts[static_cast<size_t>(out.node_rank)].slots;
    if (local_num && *local_num != mine) {
      *error = "local_worker_num is " + std::to_string(*local_num) + " but node " +
               std::to_string(out.node_rank) + " (" +
               out.hosts[static_cast<size_t>(out.node_rank)].host + ") has " +
               std::to_string(mine) + " slot(s) in the hostfile";
      return std::nullopt;
    }
    out.local_worker_num = mine;
    out.master_addr = out.hosts.front().host;
  } else {
    out.worker_num = worker_num.value_or(local_num.value_or(8));
    out.local_worker_num = local_num.value_or(out.worker_num);
    if (out.local_worker_num > out.worker_num) {
      *error = "local_worker_num " + std::to_string(out.local_worker_num) +
               " is larger than worker_num " + std::to_string(out.worker_num);
      return std::nullopt;
    }
    if (out.local_worker_num < out.worker_num && !cli.node_rank && !cfg.node_rank) {
      // msrun would assign ranks after the cluster is built: the log files could not be named.
      *error = "worker_num " + std::to_string(out.worker_num) + " spans several nodes (" +
               std::to_string(out.local_worker_num) +
               " here): give a hostfile, or node_rank for this node";
      return std::nullopt;
    }
  }
  if (cli.master_addr) {
    out.master_addr = *cli.master_addr;
  } else if (cfg.master_addr) {
    out.master_addr = *cfg.master_addr;
  }
  out.master_port = cli.master_port.value_or(cfg.master_port.value_or(8118));
  out.cluster_time_out = cli.cluster_time_out ? cli.cluster_time_out : cfg.cluster_time_out;

  const fs::path default_base =
      config != nullptr ? config_dir : fs::absolute(script, ec).parent_path();
  if (cli.log_dir) {
    out.log_dir = resolve_path(*cli.log_dir, cwd);
  } else if (!cfg.log_dir.empty()) {
    out.log_dir = resolve_path(cfg.log_dir, config_dir);
  } else {
    out.log_dir = (default_base / "msrun_log").lexically_normal();
  }
  if (cli.python) {
    // A bare name ("python3") is looked up in PATH; a path is taken as written.
    out.python = cli.python->find('/') == std::string::npos
                     ? *cli.python
                     : resolve_path(*cli.python, cwd).string();
  } else if (!cfg.python.empty()) {
    out.python = cfg.python.find('/') == std::string::npos
                     ? cfg.python
                     : resolve_path(cfg.python, config_dir).string();
  }
  if (!cfg.rank_table_file.empty())
    out.rank_table_file = resolve_path(cfg.rank_table_file, config_dir).string();
  return out;
}

std::vector<std::string> msrun_arguments(const ResolvedCluster& c, int node_rank,
                                         int local_worker_num, const std::string& script,
                                         const std::vector<std::string>& script_args) {
  std::vector<std::string> a = {"--worker_num",       std::to_string(c.worker_num),
                                "--local_worker_num", std::to_string(local_worker_num),
                                "--master_addr",      c.master_addr,
                                "--master_port",      std::to_string(c.master_port),
                                "--node_rank",        std::to_string(node_rank),
                                "--log_dir",          c.log_dir.string(),
                                "--join=True"};
  if (c.cluster_time_out) {
    a.emplace_back("--cluster_time_out");
    a.push_back(std::to_string(*c.cluster_time_out));
  }
  if (!c.rank_table_file.empty()) {
    a.emplace_back("--rank_table_file");
    a.push_back(c.rank_table_file);
  }
  a.push_back(script);
  a.insert(a.end(), script_args.begin(), script_args.end());
  return a;
}

std::string shell_quote(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of(
                                          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                          "0123456789_-./=:,+@%") == std::string::npos;
  if (plain) return word;
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

namespace {

std::string command_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + shell_quote(a);
  return out;
}

void say(const std::string& message) { std::cerr << "cellscope launch: " << message << "\n"; }

// The interpreter msrun and its workers run: its absolute path (sys.executable) and whether
// mindspore is installed in it (importlib.util.find_spec: found without being imported).
struct Interpreter {
  std::string executable;
  bool has_mindspore = false;
  std::string problem;  // why it could not be asked
};

Interpreter probe_python(const std::string& python) {
  Interpreter out;
  const ProcessResult r =
      run_process({python, "-c",
                   "import sys, importlib.util as u\n"
                   "print(sys.executable)\nprint(u.find_spec('mindspore') is not None)\n"},
                  {}, std::chrono::seconds(30), 8192);
  if (!r.spawn_error.empty()) {
    out.problem = "cannot start " + python + ": " + r.spawn_error;
    return out;
  }
  std::istringstream lines(r.out);
  std::string exe;
  std::string found;
  std::getline(lines, exe);
  std::getline(lines, found);
  if (r.exit_code != 0 || exe.empty()) {
    out.problem = python + " did not answer (exit " + std::to_string(r.exit_code) + ")";
    return out;
  }
  out.executable = exe;
  out.has_mindspore = found == "True";
  return out;
}

// ---- the running job -------------------------------------------------------------------------

volatile sig_atomic_t g_stop_signal = 0;

void on_stop_signal(int sig) { g_stop_signal = sig; }

// A log file msrun writes, followed from `offset` once msrun has (re)written it in this run.
struct Tail {
  Tail(fs::path p, std::string pre) : path(std::move(p)), prefix(std::move(pre)) {}
  fs::path path;
  std::string prefix;  // "[rank 3] "
  off_t offset = 0;
  bool live = false;    // modified since the launch began (an older file is a previous run's)
  std::string partial;  // the text after the last newline
};

struct timespec now_realtime() {
  struct timespec t {};
  clock_gettime(CLOCK_REALTIME, &t);
  return t;
}

bool not_before(const struct timespec& a, const struct timespec& b) {
  return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec >= b.tv_nsec);
}

// Prints the complete lines of `text` (added to `partial`) with `prefix`; keeps the rest.
void emit_lines(const std::string& prefix, std::string& partial, const std::string& text,
                bool filter_msrun = false) {
  partial += text;
  size_t start = 0;
  std::string out;
  for (size_t nl; (nl = partial.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string_view line(partial.data() + start, nl - start);
    // msrun's own tailing is turned off with a --tail_worker_log naming no rank (we print the
    // logs ourselves, prefixed); its warning about that, once per worker, is dropped.
    if (filter_msrun && line.find("'--tail_worker_log' is:") != std::string_view::npos) continue;
    out.append(prefix).append(line).push_back('\n');
  }
  partial.erase(0, start);
  if (!out.empty()) {
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
  }
}

void flush_partial(const std::string& prefix, std::string& partial) {
  if (!partial.empty()) emit_lines(prefix, partial, "\n");
}

void poll_tail(Tail& t, const struct timespec& since) {
  struct stat st {};
  if (::stat(t.path.c_str(), &st) != 0) return;
  if (!t.live) {
    if (!not_before(st.st_mtim, since)) return;
    t.live = true;
    t.offset = 0;
  }
  if (st.st_size < t.offset) t.offset = 0;  // rewritten
  if (st.st_size == t.offset) return;
  const int fd = ::open(t.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  std::array<char, size_t{64} * 1024> buf{};
  std::string got;
  for (;;) {
    const ssize_t n = ::pread(fd, buf.data(), buf.size(), t.offset);
    if (n <= 0) break;
    got.append(buf.data(), static_cast<size_t>(n));
    t.offset += n;
  }
  ::close(fd);
  emit_lines(t.prefix, t.partial, got);
}

// The pids (other than this one) whose environment carries `marker` ("NAME=value").
std::vector<pid_t> marked_processes(const std::string& marker) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto pid = static_cast<pid_t>(std::stol(name));
    if (pid == ::getpid()) continue;
    std::ifstream in(entry.path() / "environ", std::ios::binary);
    if (!in) continue;  // gone, or another user's
    std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t at = 0;
    for (size_t end; at < env.size(); at = end + 1) {
      end = env.find('\0', at);
      if (end == std::string::npos) end = env.size();
      if (env.compare(at, end - at, marker) == 0) {
        out.push_back(pid);
        break;
      }
    }
  }
  return out;
}

// SIGKILLs every process carrying `marker` until none is left (or 5 s); how many were killed.
size_t kill_marked(const std::string& marker) {
  size_t killed = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    auto pids = marked_processes(marker);
    // Zombies keep no environment, so a listed pid is alive (or exiting).
    if (pids.empty() || std::chrono::steady_clock::now() > deadline) break;
    for (pid_t p : pids) {
      if (::kill(p, SIGKILL) == 0) ++killed;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return killed;
}

std::string launch_id() {
  std::random_device rd;
  std::ostringstream s;
  s << ::getpid() << '-' << std::hex << rd() << rd();
  return s.str();
}

int run_job(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
            const ResolvedCluster& cluster, const std::string& marker) {
  std::array<int, 2> out{-1, -1};
  if (::pipe2(out.data(), O_CLOEXEC) != 0) {
    say(std::string("cannot make a pipe: ") + std::strerror(errno));
    return kExitUsage;
  }
  // The environment: ours with PATH and the others replaced.
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view v(*e);
    const auto name = v.substr(0, v.find('=') + 1);
    bool replaced = false;
    for (const auto& x : extra_env) replaced = replaced || x.rfind(name, 0) == 0;
    if (!replaced) env.emplace_back(v);
  }
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args_copy = argv;
  std::vector<char*> args;
  args.reserve(args_copy.size() + 1);
  for (auto& a : args_copy) args.push_back(a.data());
  args.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, out[1], 2);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);  // a group of its own: Ctrl+C reaches this process only
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGHUP);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);

  const struct timespec began = now_realtime();
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &actions, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    say("cannot start " + argv[0] + ": " + std::strerror(rc));
    return kExitUsage;
  }
  spdlog::info("msrun started: pid {} (its process group), {}", pid, marker);

  std::vector<Tail> tails;
  tails.emplace_back(cluster.log_dir / "scheduler.log", "[scheduler] ");
  for (int i = 0; i < cluster.local_worker_num; ++i) {
    const int64_t rank = int64_t{cluster.node_rank} * cluster.local_worker_num + i;
    tails.emplace_back(cluster.log_dir / ("worker_" + std::to_string(rank) + ".log"),
                       "[rank " + std::to_string(rank) + "] ");
  }
  std::string msrun_partial;
  const std::string msrun_prefix = "[msrun] ";
  int pipe_fd = out[0];
  int status = 0;
  bool exited = false;
  int stopped_by = 0;
  std::chrono::steady_clock::time_point stop_deadline;
  bool group_killed = false;
  while (!exited || pipe_fd >= 0) {
    if (g_stop_signal != 0 && stopped_by == 0) {
      stopped_by = g_stop_signal;
      say(std::string("received ") + (stopped_by == SIGINT ? "SIGINT" : strsignal(stopped_by)) +
          ": stopping msrun and its workers");
      ::kill(pid, SIGINT);  // msrun's handler kills its workers and the scheduler
      stop_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    }
    if (stopped_by != 0 && !group_killed && std::chrono::steady_clock::now() > stop_deadline) {
      ::kill(-pid, SIGKILL);
      group_killed = true;
    }
    if (pipe_fd >= 0) {
      pollfd p{pipe_fd, POLLIN, 0};
      const int n = ::poll(&p, 1, 200);
      if (n > 0) {
        std::array<char, 16384> buf{};
        const ssize_t got = ::read(pipe_fd, buf.data(), buf.size());
        if (got > 0) {
          emit_lines(msrun_prefix, msrun_partial, std::string(buf.data(), static_cast<size_t>(got)),
                     true);
        } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
          ::close(pipe_fd);
          pipe_fd = -1;
        }
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    for (auto& t : tails) poll_tail(t, began);
    if (!exited) {
      const pid_t done = ::waitpid(pid, &status, WNOHANG);
      if (done == pid) exited = true;
      // The pipe is also held by msrun's children (the scheduler, the workers' `tail`): once
      // msrun is gone, no more than a last read is waited for.
      if (exited && pipe_fd >= 0) {
        pollfd p{pipe_fd, POLLIN, 0};
        while (::poll(&p, 1, 100) > 0) {
          std::array<char, 16384> buf{};
          const ssize_t got = ::read(pipe_fd, buf.data(), buf.size());
          if (got <= 0) break;
          emit_lines(msrun_prefix, msrun_partial, std::string(buf.data(), static_cast<size_t>(got)),
                     true);
        }
        ::close(pipe_fd);
        pipe_fd = -1;
      }
    }
  }
  // The last lines of every log, and nothing of the job left running.
  for (auto& t : tails) {
    poll_tail(t, began);
    flush_partial(t.prefix, t.partial);
  }
  flush_partial(msrun_prefix, msrun_partial);
  ::kill(-pid, SIGKILL);  // the group: the scheduler and msrun's helpers, if any is left
  if (const size_t left = kill_marked(marker); left > 0)
    say("killed " + std::to_string(left) + " process(es) of the job still running after msrun");
  if (stopped_by != 0) {
    say("stopped; msrun and its workers are gone");
    return 128 + stopped_by;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace

int run_launch(const LaunchCommandOptions& options) {
  if (!options.msrun) {
    say("give the launcher: --msrun (MindSpore's msrun)");
    return kExitUsage;
  }
  std::error_code ec;
  if (!fs::is_regular_file(options.file, ec)) {
    say("no such file: " + options.file);
    return kExitUsage;
  }

  // 1. The analysis `cellscope check FILE` runs (its parallel-strategy checks included).
  CheckOptions check;
  check.common = options.common;
  check.paths = {options.file};
  std::ostringstream report;
  size_t errors = 0;
  size_t warnings = 0;
  if (int rc = check_report_text(check, report, &errors, &warnings); rc != kExitOk) return rc;
  std::cerr << report.str();
  if (errors > 0 && !options.force) {
    say("not launched: " + std::to_string(errors) + " error(s) in the check above (--force " +
        "launches anyway)");
    return kExitErrors;
  }
  if (errors > 0) {
    say("*** --force: LAUNCHING DESPITE " + std::to_string(errors) +
        " ERROR(S) FOUND BY THE CHECK ABOVE ***");
  }

  // 2. The cluster.
  const ClusterConfig* config = options.project ? &options.project->cluster : nullptr;
  const fs::path config_dir =
      options.project ? fs::path(options.project->file).parent_path() : fs::path();
  std::string why;
  auto cluster = resolve_cluster(config, config_dir, options.cli, options.file, &why);
  if (!cluster) {
    say("cluster: " + why);
    return kExitUsage;
  }

  // 3. The interpreter: the given one, else the first python3 / python on PATH with mindspore.
  Interpreter python;
  if (!cluster->python.empty()) {
    python = probe_python(cluster->python);
    if (!python.problem.empty()) {
      say("python: " + python.problem);
      return kExitUsage;
    }
    if (!python.has_mindspore) {
      say("python: mindspore is not installed in " + python.executable);
      return kExitUsage;
    }
  } else {
    std::string tried;
    for (const char* candidate : {"python3", "python"}) {
      python = probe_python(candidate);
      if (python.problem.empty() && python.has_mindspore) break;
      tried += std::string(tried.empty() ? "" : "; ") +
               (python.problem.empty() ? python.executable + " has no mindspore" : python.problem);
      python = {};
    }
    if (python.executable.empty()) {
      say("no Python with mindspore on PATH (" + tried +
          "): set cluster.python in mindspore_config.json or --python");
      return kExitUsage;
    }
  }
  const fs::path bin = fs::path(python.executable).parent_path();
  std::vector<std::string> launcher;
  if (fs::path msrun = bin / "msrun"; ::access(msrun.c_str(), X_OK) == 0) {
    launcher = {msrun.string()};
  } else {
    launcher = {python.executable, "-m", "mindspore.parallel.cluster.run"};
  }

  const std::string script = fs::absolute(options.file, ec).lexically_normal().string();
  std::vector<std::string> argv = launcher;
  for (auto& a : msrun_arguments(*cluster, cluster->node_rank, cluster->local_worker_num, script,
                                 options.script_args)) {
    argv.push_back(std::move(a));
  }
  // msrun's own `tail -f` of each worker log would print the lines a second time, unprefixed: a
  // rank that does not exist turns it off. Inserted before the script.
  const auto script_at = argv.end() - static_cast<std::ptrdiff_t>(options.script_args.size() + 1);
  argv.insert(script_at, "--tail_worker_log=" + std::to_string(cluster->worker_num));

  const char* path_env = std::getenv("PATH");
  const std::string path =
      bin.string() +
      (path_env != nullptr && *path_env != '\0' ? ":" + std::string(path_env) : std::string());
  const std::string marker = "CELLSCOPE_LAUNCH_ID=" + launch_id();
  const std::vector<std::string> env = {"PATH=" + path, "PYTHONUNBUFFERED=1", marker};

  say("msrun: " + std::to_string(cluster->worker_num) + " worker(s), " +
      std::to_string(cluster->local_worker_num) + " on this node (node_rank " +
      std::to_string(cluster->node_rank) + "), master " + cluster->master_addr + ":" +
      std::to_string(cluster->master_port) + ", logs in " + cluster->log_dir.string());
  say("PATH=" + shell_quote(bin.string()) + ":$PATH " + command_line(argv));
  if (cluster->hosts.size() > 1) {
    say("this command starts node " + std::to_string(cluster->node_rank) +
        " only; on each other "
        "node run (same script and Python paths there):");
    for (size_t i = 0; i < cluster->hosts.size(); ++i) {
      if (static_cast<int>(i) == cluster->node_rank) continue;
      const auto& h = cluster->hosts[i];
      std::vector<std::string> other = {"msrun"};
      for (auto& a :
           msrun_arguments(*cluster, static_cast<int>(i), h.slots, script, options.script_args)) {
        other.push_back(std::move(a));
      }
      std::cerr << "  node " << i << " (" << h.host << ", " << h.slots << " worker(s)):\n"
                << "    PATH=" << shell_quote(bin.string()) << ":$PATH " << command_line(other)
                << "\n"
                << "    or: cellscope launch --msrun " << shell_quote(script) << " --node-rank "
                << i << (options.script_args.empty() ? "" : " --")
                << (options.script_args.empty() ? "" : " " + command_line(options.script_args))
                << "\n";
    }
  }
  if (options.dry_run) {
    say("--dry-run: nothing started");
    return kExitOk;
  }

  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: poll returns at once
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  // A reader of stdout that goes away must not kill this process before the job is stopped.
  ::signal(SIGPIPE, SIG_IGN);
  const int code = run_job(argv, env, *cluster, marker);
  say(code == 0 ? "the job finished (exit 0)"
                : "the job ended with exit code " + std::to_string(code));
  return code;
}

}  // namespace cellscope::server
