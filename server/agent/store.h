// The agent's model store (docs/deploy.md, "State directory"): resumable uploads and deployment
// bundles under one directory, nothing written outside it.
//
//   STATE/uploads/<id>/meta.json      name, size, sha256, chunk size, per-chunk SHA-256 received
//   STATE/uploads/<id>/data.part      the file, preallocated, chunks written at their offsets
//   STATE/bundles/<seq>-<name>/       MODEL + manifest.json (hashes): never changed once made
//   STATE/current, STATE/previous     symlinks to bundles, switched by rename (atomic)
//
// A chunk is fsynced before meta.json (written atomically) records it, so after a kill -9 the
// upload resumes from what meta.json lists. No space left is StoreError{kDiskFull}; what was
// deployed is never touched before the new bundle is complete.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/protocol.h"

namespace cellscope::agent {

struct StoreError {
  ErrorCode code;
  std::string message;
};

// Empty when `name` may name a model file in the store: 1-128 characters of [A-Za-z0-9._-], not
// starting with '.', ending in ".mindir"; else why not (a '/', "..", an absolute path, a NUL
// byte, ...).
std::string check_model_name(std::string_view name);
// The upload id of `name` with that file's SHA-256 at that chunk size (32 hex digits): the same
// file under the same name resumes the same upload.
std::string upload_id(std::string_view name, std::string_view sha256, uint64_t chunk_bytes);

struct UploadMeta {
  std::string id;
  std::string name;
  uint64_t size = 0;
  std::string sha256;
  uint64_t chunk_bytes = 0;
  std::vector<std::string> received;  // per chunk: its SHA-256 once written, else ""
  [[nodiscard]] uint64_t chunks() const { return received.size(); }
  [[nodiscard]] std::vector<uint64_t> missing() const;
  [[nodiscard]] nlohmann::json json() const;
};

struct Bundle {
  std::string dir_name;  // "0003-lenet.mindir"
  std::filesystem::path dir;
  std::filesystem::path model;  // dir / name
  nlohmann::json manifest;
};

class Store {
 public:
  // Creates the directories (0700). Throws std::runtime_error when it cannot.
  explicit Store(std::filesystem::path root);

  [[nodiscard]] const std::filesystem::path& root() const { return root_; }

  // Begins an upload, or returns the one already under way for the same name and SHA-256 (its
  // received chunks kept). Other unfinished uploads are removed. The file's space is reserved
  // now (fallocate), so a full disk is refused before any byte is sent.
  UploadMeta begin_upload(const std::string& name, uint64_t size, const std::string& sha256,
                          uint64_t chunk_bytes);
  std::optional<UploadMeta> find_upload(const std::string& id) const;
  // Writes chunk `index` after checking its SHA-256 against `sha256` and its length.
  UploadMeta write_chunk(const std::string& id, uint64_t index, std::string_view data,
                         const std::string& sha256);
  // A file sent with the model (`kind` "calibration" or "labels": an int8 build's .npy inputs
  // and labels), written atomically as uploads/<id>/KIND.npy after checking its SHA-256
  // (calibration inputs that are a .npz archive, one array per model input: calibration.npz).
  void write_companion(const std::string& id, const std::string& kind, std::string_view data,
                       const std::string& sha256);
  // Checks the whole file's SHA-256 and moves it into a new bundle with its manifest (and the
  // companions, as KIND.npy with their SHA-256 in the manifest's "calibration_data" / "labels":
  // {file, sha256, size});
  // the upload is gone afterwards. `extra` is added to the manifest.
  Bundle make_bundle(const std::string& id, const nlohmann::json& extra);
  void remove_upload(const std::string& id);

  // The bundle `current` / `previous` points to.
  [[nodiscard]] std::optional<Bundle> current() const;
  [[nodiscard]] std::optional<Bundle> previous() const;
  // current := bundle, previous := the old current (each an atomic rename of a new symlink).
  void activate(const Bundle& bundle);
  // current <-> previous.
  void swap_previous();
  // A bundle that failed to load: kept under bundles/failed-* for inspection (the newest only).
  void discard(const Bundle& bundle);

 private:
  [[nodiscard]] std::optional<Bundle> link(const char* name) const;
  void set_link(const char* name, const std::string& target);
  void save_meta(const UploadMeta& meta) const;
  std::filesystem::path root_;
};

}  // namespace cellscope::agent
