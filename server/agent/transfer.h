// The host side of the deploy protocol (docs/deploy.md): an HTTPS client of `cellscope agent`
// that checks the agent's certificate against a pinned fingerprint before it sends anything, and
// the resumable chunked upload on top of it (retries across dropped links and agent restarts).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

namespace cellscope::agent {

// The link failed (refused, reset, timed out, TLS broke): worth retrying.
class TransportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The agent answered with an error (docs/deploy.md, "Errors"), or the certificate was refused.
class DeployError : public std::runtime_error {
 public:
  DeployError(int status, std::string code, const std::string& message)
      : std::runtime_error(message), status_(status), code_(std::move(code)) {}
  [[nodiscard]] int status() const { return status_; }
  [[nodiscard]] const std::string& code() const { return code_; }

 private:
  int status_;
  std::string code_;
};

struct Response {
  int status = 0;
  nlohmann::json body;
};

class Client {
 public:
  // `check_certificate(fingerprint)` runs after each TLS handshake, before any request; it throws
  // (a DeployError) to refuse the peer.
  Client(std::string address, std::string token,
         std::function<void(const std::string&)> check_certificate,
         std::chrono::seconds timeout = std::chrono::seconds(20));
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // One request; throws TransportError when the link fails (the connection is dropped and the
  // next request reconnects).
  Response request(const std::string& method, const std::string& target, const std::string& body,
                   const std::string& chunk_sha = "");
  // Upgrades a new connection to a WebSocket on `target` (same pinning and token as request) and
  // calls `on_message` with each text message until it returns false. Throws TransportError when
  // the link fails or no message came for `idle` (the connection is then dropped), DeployError
  // when the agent refuses the upgrade (its HTTP status).
  void stream(const std::string& target, std::chrono::seconds idle,
              const std::function<bool(const std::string&)>& on_message);
  void disconnect();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The error a response carries, thrown as a DeployError; nothing for 2xx.
void throw_if_error(const Response& r);

struct UploadOptions {
  std::string name;  // the model's name on the device
  uint64_t chunk_bytes = 0;
  std::chrono::seconds retry_for{120};  // give up on a link down for this long
  std::chrono::milliseconds chunk_delay{0};
  std::optional<uint64_t> corrupt_chunk;  // test-only: flip a byte of this chunk's first send
  std::function<void(const std::string&)> progress;
  // Machine-readable progress (`cellscope deploy --progress json`): {"phase": "upload",
  // "chunks_done", "chunks_total", "bytes_done", "bytes_total", "upload"} after the begin and after
  // each chunk;
  // {"phase": "commit"} before the commit (the device checks, loads and switches).
  std::function<void(const nlohmann::json&)> event;
  // The device-side build (docs/deploy.md, "INT8 bundles"): "fp32", or "int8" calibrated on
  // the device from `calibration_data` (.npy inputs; `labels`: optional .npy of their labels).
  std::string precision = "fp32";
  std::string backend = "cellscope-cpu";  // or "mindspore"
  std::string calibration = "minmax";     // minmax | percentile | kl
  double percentile = 99.99;
  std::filesystem::path calibration_data;
  std::filesystem::path labels;
};

// Uploads and commits `file`; returns the commit's answer ({"bundle", "manifest"}). Throws
// DeployError (the agent's refusal, or the retry time used up).
nlohmann::json upload_and_commit(Client& client, const std::filesystem::path& file,
                                 const UploadOptions& options);

// Runs `call`, retrying TransportErrors with backoff (0.5 s doubling to 5 s) for `retry_for`.
nlohmann::json with_retries(const std::function<nlohmann::json()>& call,
                            std::chrono::seconds retry_for,
                            const std::function<void(const std::string&)>& progress);

}  // namespace cellscope::agent
