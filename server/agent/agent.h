// `cellscope agent`: the device side of `cellscope deploy` (docs/deploy.md). An HTTPS server
// (Boost.Beast over Asio SSL, a self-signed certificate made on first start) that takes a model
// in resumable, hashed chunks, builds a bundle, loads and checks it, switches `current` to it
// atomically (or rolls back), and answers inferences with the model that serves.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace cellscope::agent {

struct AgentOptions {
  std::string listen = "127.0.0.1:8443";  // ADDR:PORT (port 0: a free one)
  std::filesystem::path state_dir;        // empty: default_state_dir()
  std::string token_file;  // empty: $CELLSCOPE_AGENT_TOKEN, else STATE/token (made 0600)
  size_t max_connections = 16;
  // The interpreter whose `import mindspore` makes the mindspore backend available.
  std::string python = "python3";
  // Threads of the CPU runtime's kernels (ExecOptions::threads; 0: every hardware thread).
  int threads = 1;
};

// /var/lib/cellscope-agent when writable (root, the systemd unit), else
// $XDG_STATE_HOME/cellscope-agent, else ~/.local/state/cellscope-agent.
std::filesystem::path default_state_dir();

// Runs until SIGINT / SIGTERM; the exit code (2: bad options, 1: cannot start).
int run_agent(const AgentOptions& options);

}  // namespace cellscope::agent
