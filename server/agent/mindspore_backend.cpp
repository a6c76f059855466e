#include "agent/mindspore_backend.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "git.h"

extern char** environ;

namespace cellscope::agent {

using Json = nlohmann::json;

namespace {

// The worker: protocol lines go to a private copy of stdout; fd 1 is pointed at stderr so that
// anything MindSpore prints cannot corrupt the protocol.
constexpr const char* kWorkerScript = R"PY(
import json, os, sys
out = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
def say(obj):
    out.write(json.dumps(obj) + "\n")
    out.flush()
try:
    import numpy as np
    import mindspore as ms
    from mindspore import nn
    net = nn.GraphCell(ms.load(sys.argv[1]))
except Exception as e:
    say({"error": "%s: %s" % (type(e).__name__, e)})
    sys.exit(1)
say({"ready": True, "version": ms.__version__})
for line in sys.stdin:
    try:
        req = json.loads(line)
        xs = [ms.Tensor(np.asarray(i["data"], dtype=i["dtype"]).reshape(i["shape"]))
              for i in req["inputs"]]
        res = net(*xs)
        res = res if isinstance(res, (tuple, list)) else (res,)
        say({"outputs": [{"shape": list(r.shape), "dtype": str(r.asnumpy().dtype),
                          "data": r.asnumpy().astype("float64").ravel().tolist()} for r in res]})
    except Exception as e:
        say({"error": "%s: %s" % (type(e).__name__, e)})
)PY";

constexpr const char* kDetectScript = "import mindspore; print(mindspore.__version__)";

struct Spawned {
  pid_t pid = -1;
  int to = -1, from = -1;
};

// The worker, its stdin and stdout on pipes (stderr the agent's).
Spawned spawn(const std::vector<std::string>& args) {
  int in[2] = {-1, -1};
  int out[2] = {-1, -1};
  if (::pipe2(in, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  // Nothing else of the agent's (listening and client sockets, the store's files) reaches the
  // child: a socket it held would keep a port bound or a connection open after the agent.
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(in[0]);
  ::close(out[1]);
  if (rc != 0) {
    ::close(in[1]);
    ::close(out[0]);
    throw std::runtime_error("cannot start " + args[0] + ": " + std::strerror(rc));
  }
  return {pid, in[1], out[0]};
}

// Appends what `fd` has to `buf` until a newline or `deadline`; false on timeout or EOF.
bool read_until_newline(int fd, std::string& buf, std::chrono::steady_clock::time_point deadline) {
  while (buf.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return false;
    if (r == 0) continue;
    char chunk[65536];
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buf.append(chunk, static_cast<size_t>(n));
  }
  return true;
}

void reap(pid_t pid) {
  for (int i = 0; i < 50; ++i) {
    if (::waitpid(pid, nullptr, WNOHANG) == pid) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

}  // namespace

Json detect_mindspore(const std::string& python, std::chrono::seconds timeout) {
  Json j = {{"name", "mindspore"}, {"python", python}, {"available", false}};
  const server::ProcessResult r =
      server::run_process({python, "-c", kDetectScript}, {}, timeout, 4096);
  const std::string version = r.out.substr(0, r.out.find('\n'));
  if (r.exit_code == 0 && !version.empty()) {
    j["available"] = true;
    j["version"] = version;
  } else {
    j["reason"] = !r.spawn_error.empty() ? "cannot start " + python + ": " + r.spawn_error
                                         : python + " cannot import mindspore";
  }
  return j;
}

Json detect_mindspore_lite(const std::string& python, std::chrono::seconds timeout) {
  Json j = {
      {"name", "mindspore-lite"}, {"python", python}, {"available", false}, {"serving", false}};
  const server::ProcessResult r = server::run_process(
      {python, "-c", "import mindspore_lite; print(mindspore_lite.__version__)"}, {}, timeout,
      4096);
  const std::string version = r.out.substr(0, r.out.find('\n'));
  if (r.exit_code == 0 && !version.empty()) {
    j["available"] = true;
    j["version"] = version;
    j["reason"] =
        "MindSpore Lite is installed, but the agent does not serve through it yet: bundles run "
        "on cellscope-cpu or mindspore";
  } else {
    j["reason"] = !r.spawn_error.empty() ? "cannot start " + python + ": " + r.spawn_error
                                         : python + " cannot import mindspore_lite";
  }
  return j;
}

MindSporeWorker::MindSporeWorker(const std::string& python, const std::filesystem::path& model) {
  const Spawned s = spawn({python, "-u", "-c", kWorkerScript, model.string()});
  pid_ = s.pid;
  to_ = s.to;
  from_ = s.from;
  std::string line;
  try {
    line = read_line(std::chrono::seconds(180));
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("MindSpore did not load the model: ") + e.what());
  }
  const Json j = Json::parse(line, nullptr, false);
  if (!j.is_object() || !j.value("ready", false)) {
    throw std::runtime_error(
        "MindSpore did not load the model: " +
        (j.is_object() ? j.value("error", line) : std::string("unexpected answer ") + line));
  }
  version_ = j.value("version", "");
}

MindSporeWorker::~MindSporeWorker() {
  if (to_ >= 0) ::close(to_);  // EOF on stdin: the worker's loop ends
  if (from_ >= 0) ::close(from_);
  if (pid_ > 0) reap(pid_);
}

std::string MindSporeWorker::read_line(std::chrono::seconds timeout) {
  if (!read_until_newline(from_, buffer_, std::chrono::steady_clock::now() + timeout)) {
    throw std::runtime_error("the MindSpore subprocess ended or did not answer within " +
                             std::to_string(timeout.count()) + " s (its stderr is the agent's)");
  }
  const size_t nl = buffer_.find('\n');
  std::string line = buffer_.substr(0, nl);
  buffer_.erase(0, nl + 1);
  return line;
}

Json MindSporeWorker::run(const Json& request) {
  const std::lock_guard lock(mu_);
  const std::string line = request.dump() + "\n";
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(to_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("the MindSpore subprocess is gone");
    done += static_cast<size_t>(n);
  }
  Json j = Json::parse(read_line(std::chrono::seconds(120)), nullptr, false);
  if (!j.is_object()) throw std::runtime_error("the MindSpore subprocess answered no JSON");
  if (j.contains("error")) throw std::runtime_error("MindSpore: " + j.value("error", ""));
  return j;
}

}  // namespace cellscope::agent
