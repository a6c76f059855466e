// The deploy protocol between `cellscope deploy` (host) and `cellscope agent` (device): HTTPS with
// JSON bodies (chunks are raw bytes) and a WebSocket stream, documented in docs/deploy.md. What
// both sides share: the paths, the headers, the error codes and their HTTP statuses, the sizes.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace cellscope::agent {

inline constexpr int kProtocolVersion = 1;

// Endpoints (docs/deploy.md, "Endpoints"). Every request carries "Authorization: Bearer TOKEN".
inline constexpr std::string_view kPathInfo = "/v1/info";          // GET
inline constexpr std::string_view kPathUploads = "/v1/uploads";    // POST: begin or resume
inline constexpr std::string_view kPathRollback = "/v1/rollback";  // POST
inline constexpr std::string_view kPathInfer = "/v1/infer";        // POST
inline constexpr std::string_view kPathStream = "/v1/stream";      // GET, WebSocket upgrade
// PUT /v1/uploads/{id}/chunks/{index}, POST /v1/uploads/{id}/commit, DELETE /v1/uploads/{id}.

inline constexpr std::string_view kHeaderChunkSha = "X-Chunk-Sha256";

inline constexpr uint64_t kDefaultChunkBytes = uint64_t{2} << 20;  // 2 MiB
inline constexpr uint64_t kMinChunkBytes = uint64_t{64} << 10;     // 64 KiB
inline constexpr uint64_t kMaxChunkBytes = uint64_t{8} << 20;      // 8 MiB
inline constexpr uint64_t kMaxModelBytes = uint64_t{8} << 30;      // 8 GiB
inline constexpr uint64_t kMaxJsonBody = uint64_t{64} << 20;       // an /v1/infer input

// An error: {"error": {"code": CODE, "message": TEXT}} with the code's HTTP status.
enum class ErrorCode : uint8_t {
  kBadRequest,         // 400: malformed JSON, a missing field, a bad number
  kBadName,            // 400: a model name that is not a plain file name (path traversal, NUL)
  kUnauthorized,       // 401: no token or a wrong one
  kNotFound,           // 404: no such upload / endpoint
  kNoModel,            // 404: /v1/infer with no model deployed
  kBusy,               // 409: another deployment is in progress
  kIncomplete,         // 409: commit before every chunk arrived
  kNoPrevious,         // 409: rollback with no previous bundle
  kTooLarge,           // 413: a chunk or a model above the limits
  kChunkHashMismatch,  // 422: the chunk's bytes do not have the SHA-256 sent with it
  kFileHashMismatch,   // 422: the assembled file does not have the declared SHA-256
  kLoadFailed,         // 422: the new bundle did not load / run: rolled back, the old one serves
  kBadInput,           // 422: an /v1/infer input that does not fit the model
  kRateLimited,        // 429: too many failed authentications from this peer (Retry-After)
  kInternal,           // 500
  kDiskFull,           // 507: no space left on the device's state dir (nothing replaced)
};

int http_status(ErrorCode code);
std::string_view error_name(ErrorCode code);

inline nlohmann::json error_body(ErrorCode code, const std::string& message) {
  return {{"error", {{"code", std::string(error_name(code))}, {"message", message}}}};
}

}  // namespace cellscope::agent
