// The cryptography of the deploy agent and its client (docs/deploy.md), over OpenSSL's EVP API:
// SHA-256 (chunks, whole files, certificate fingerprints), constant-time comparison of secrets,
// random tokens, and the agent's self-signed TLS identity made on first start.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace cellscope::agent {

// Incremental SHA-256; hex() is lower-case, 64 characters.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(std::string_view data);
  std::string hex();  // finishes; the object cannot be updated afterwards

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string sha256_hex(std::string_view data);
// The SHA-256 of a file's bytes, read in 1 MiB pieces; throws std::runtime_error.
std::string sha256_file(const std::filesystem::path& path);
// A 64-character lower-case hex string.
bool is_sha256_hex(std::string_view s);

// Equal contents, in time that depends only on the lengths (CRYPTO_memcmp).
bool constant_time_equal(std::string_view a, std::string_view b);

// `bytes` random bytes from OpenSSL's CSPRNG, as hex.
std::string random_hex(size_t bytes);

// The agent's TLS identity: `dir`/agent.crt and `dir`/agent.key (PEM; the key 0600), made on first
// use (an EC P-256 key and a self-signed certificate for "cellscope-agent", valid ten years) and
// read on the next starts. Throws std::runtime_error naming the file and OpenSSL's reason.
struct TlsIdentity {
  std::filesystem::path cert_file;
  std::filesystem::path key_file;
  std::string fingerprint;  // SHA-256 of the certificate's DER, "AB:CD:..." (upper-case)
  bool created = false;     // made by this call
};
TlsIdentity load_or_create_identity(const std::filesystem::path& dir);

// "AB:CD:..." of a DER certificate.
std::string fingerprint_of_der(std::string_view der);

}  // namespace cellscope::agent
