#include "agent/store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include "agent/crypto.h"
#include "files.h"

namespace cellscope::agent {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

bool is_space_error(int err) { return err == ENOSPC || err == EDQUOT; }

[[noreturn]] void fail_errno(int err, const std::string& what) {
  if (is_space_error(err)) {
    throw StoreError{ErrorCode::kDiskFull,
                     "no space left on the device's state directory (" + what +
                         "): nothing was replaced, the deployed model is unchanged"};
  }
  throw StoreError{ErrorCode::kInternal, what + ": " + std::strerror(err)};
}

// write_file_atomic with ENOSPC as StoreError{kDiskFull}.
void write_atomic(const fs::path& path, const std::string& data) {
  try {
    server::write_file_atomic(path, data);
  } catch (const std::system_error& e) {
    fail_errno(e.code().value(), "writing " + path.filename().string());
  }
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

std::string check_model_name(std::string_view name) {
  if (name.empty()) return "the model name is empty";
  if (name.find('\0') != std::string_view::npos) return "the model name contains a NUL byte";
  if (name.front() == '/') return "the model name is an absolute path";
  if (name.find('/') != std::string_view::npos || name.find('\\') != std::string_view::npos)
    return "the model name contains a path separator: it must be a plain file name";
  if (name.find("..") != std::string_view::npos) return "the model name contains \"..\"";
  if (name.front() == '.') return "the model name starts with '.'";
  if (name.size() > 128) return "the model name is longer than 128 characters";
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return "the model name may hold only letters, digits, '.', '_' and '-'";
  }
  if (!name.ends_with(".mindir")) return "the model name must end in .mindir";
  return {};
}

std::vector<uint64_t> UploadMeta::missing() const {
  std::vector<uint64_t> out;
  for (uint64_t i = 0; i < received.size(); ++i) {
    if (received[i].empty()) out.push_back(i);
  }
  return out;
}

Json UploadMeta::json() const {
  Json got = Json::array();
  for (uint64_t i = 0; i < received.size(); ++i) {
    if (!received[i].empty()) got.push_back(i);
  }
  return {{"upload", id},
          {"name", name},
          {"size", size},
          {"sha256", sha256},
          {"chunk_size", chunk_bytes},
          {"chunks", chunks()},
          {"received", std::move(got)}};
}

Store::Store(fs::path root) : root_(std::move(root)) {
  std::error_code ec;
  for (const char* sub : {"", "uploads", "bundles"}) {
    const fs::path dir = sub[0] != 0 ? root_ / sub : root_;
    fs::create_directories(dir, ec);
    if (!fs::is_directory(dir, ec)) {
      throw std::runtime_error("cannot create the state directory " + dir.string());
    }
    ::chmod(dir.c_str(), 0700);
  }
}

void Store::save_meta(const UploadMeta& meta) const {
  Json j = meta.json();
  j["received_sha256"] = meta.received;
  write_atomic(root_ / "uploads" / meta.id / "meta.json", j.dump());
}

std::optional<UploadMeta> Store::find_upload(const std::string& id) const {
  if (id.size() != 32 || !std::ranges::all_of(id, [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      }))
    return std::nullopt;
  const std::string text = read_text(root_ / "uploads" / id / "meta.json");
  const Json j = Json::parse(text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  try {
    UploadMeta m;
    m.id = id;
    m.name = j.at("name").get<std::string>();
    m.size = j.at("size").get<uint64_t>();
    m.sha256 = j.at("sha256").get<std::string>();
    m.chunk_bytes = j.at("chunk_size").get<uint64_t>();
    m.received = j.at("received_sha256").get<std::vector<std::string>>();
    if (!check_model_name(m.name).empty() || m.chunk_bytes == 0) return std::nullopt;
    return m;
  } catch (const Json::exception&) {
    return std::nullopt;
  }
}

std::string upload_id(std::string_view name, std::string_view sha256, uint64_t chunk_bytes) {
  return sha256_hex(std::string(name) + "\n" + std::string(sha256) + "\n" +
                    std::to_string(chunk_bytes))
      .substr(0, 32);
}

UploadMeta Store::begin_upload(const std::string& name, uint64_t size, const std::string& sha256,
                               uint64_t chunk_bytes) {
  if (auto why = check_model_name(name); !why.empty()) throw StoreError{ErrorCode::kBadName, why};
  if (!is_sha256_hex(sha256))
    throw StoreError{ErrorCode::kBadRequest, "sha256 must be 64 lower-case hex digits"};
  if (chunk_bytes < kMinChunkBytes || chunk_bytes > kMaxChunkBytes)
    throw StoreError{ErrorCode::kBadRequest, "chunk_size must lie in [64 KiB, 8 MiB]"};
  if (size == 0 || size > kMaxModelBytes)
    throw StoreError{ErrorCode::kTooLarge, "the model's size must lie in [1 byte, 8 GiB]"};
  const std::string id = upload_id(name, sha256, chunk_bytes);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root_ / "uploads", ec)) {
    if (entry.path().filename() != id) fs::remove_all(entry.path(), ec);
  }
  if (auto existing = find_upload(id); existing && existing->size == size) return *existing;

  const fs::path dir = root_ / "uploads" / id;
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  if (ec) fail_errno(ec.value(), "creating the upload directory");
  const fs::path part = dir / "data.part";
  const int fd = ::open(part.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) fail_errno(errno, "creating the upload file");
  const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(size));
  ::close(fd);
  if (err != 0) {
    fs::remove_all(dir, ec);
    fail_errno(err, "reserving " + std::to_string(size) + " bytes for " + name);
  }
  UploadMeta m;
  m.id = id;
  m.name = name;
  m.size = size;
  m.sha256 = sha256;
  m.chunk_bytes = chunk_bytes;
  m.received.assign((size + chunk_bytes - 1) / chunk_bytes, "");
  try {
    save_meta(m);
  } catch (...) {
    fs::remove_all(dir, ec);
    throw;
  }
  return m;
}

UploadMeta Store::write_chunk(const std::string& id, uint64_t index, std::string_view data,
                              const std::string& sha256) {
  auto meta = find_upload(id);
  if (!meta) throw StoreError{ErrorCode::kNotFound, "no upload " + id + " (begin it again)"};
  if (index >= meta->chunks()) {
    throw StoreError{ErrorCode::kBadRequest, "chunk " + std::to_string(index) +
                                                 " is past the last one (" +
                                                 std::to_string(meta->chunks() - 1) + ")"};
  }
  const uint64_t offset = index * meta->chunk_bytes;
  const uint64_t expected = std::min(meta->chunk_bytes, meta->size - offset);
  if (data.size() != expected) {
    throw StoreError{ErrorCode::kBadRequest, "chunk " + std::to_string(index) + " has " +
                                                 std::to_string(data.size()) + " bytes, expected " +
                                                 std::to_string(expected)};
  }
  const std::string got = sha256_hex(data);
  if (!constant_time_equal(got, sha256)) {
    throw StoreError{ErrorCode::kChunkHashMismatch,
                     "chunk " + std::to_string(index) + " arrived with SHA-256 " + got +
                         ", sent as " + sha256 + ": rejected, send it again"};
  }
  const fs::path part = root_ / "uploads" / id / "data.part";
  const int fd = ::open(part.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) fail_errno(errno, "opening the upload file");
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n =
        ::pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      fail_errno(err, "writing chunk " + std::to_string(index));
    }
    done += static_cast<size_t>(n);
  }
  if (::fdatasync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    fail_errno(err, "syncing chunk " + std::to_string(index));
  }
  ::close(fd);
  meta->received[index] = got;
  save_meta(*meta);
  return *meta;
}

void Store::write_companion(const std::string& id, const std::string& kind, std::string_view data,
                            const std::string& sha256) {
  if (kind != "calibration" && kind != "labels")
    throw StoreError{ErrorCode::kNotFound, "no companion file '" + kind + "'"};
  if (!find_upload(id))
    throw StoreError{ErrorCode::kNotFound, "no upload " + id + " (begin it again)"};
  const std::string got = sha256_hex(data);
  if (!constant_time_equal(got, sha256)) {
    throw StoreError{ErrorCode::kChunkHashMismatch, "the " + kind + " file arrived with SHA-256 " +
                                                        got + ", sent as " + sha256 +
                                                        ": rejected, send it again"};
  }
  // Calibration inputs are a .npy (one input) or a .npz (a zip: one array per input); the file
  // keeps its kind's extension, and a file of the other format sent before is removed.
  const bool zip = kind == "calibration" && data.starts_with("PK");
  const fs::path dir = root_ / "uploads" / id;
  std::error_code ec;
  fs::remove(dir / (kind + (zip ? ".npy" : ".npz")), ec);
  write_atomic(dir / (kind + (zip ? ".npz" : ".npy")), std::string(data));
}

void Store::remove_upload(const std::string& id) {
  if (!find_upload(id)) return;
  std::error_code ec;
  fs::remove_all(root_ / "uploads" / id, ec);
}

Bundle Store::make_bundle(const std::string& id, const Json& extra) {
  auto meta = find_upload(id);
  if (!meta) throw StoreError{ErrorCode::kNotFound, "no upload " + id};
  if (auto missing = meta->missing(); !missing.empty()) {
    throw StoreError{ErrorCode::kIncomplete,
                     std::to_string(missing.size()) + " of " + std::to_string(meta->chunks()) +
                         " chunks still missing, the first is " + std::to_string(missing.front())};
  }
  const fs::path updir = root_ / "uploads" / id;
  const std::string whole = sha256_file(updir / "data.part");
  if (whole != meta->sha256) {
    // Every chunk matched its hash, so the host sent hashes of another file: start over.
    remove_upload(id);
    throw StoreError{ErrorCode::kFileHashMismatch, "the assembled file has SHA-256 " + whole +
                                                       ", declared " + meta->sha256 +
                                                       ": the upload is discarded"};
  }
  // The next sequence number: one above the highest bundle's.
  int seq = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root_ / "bundles", ec)) {
    const std::string n = entry.path().filename().string();
    if (n.size() > 5 && n[4] == '-' && std::isdigit(static_cast<unsigned char>(n[0])) != 0)
      seq = std::max(seq, std::stoi(n.substr(0, 4)));
  }
  char prefix[8];
  std::snprintf(prefix, sizeof prefix, "%04d", (seq + 1) % 10000);
  Bundle b;
  b.dir_name = std::string(prefix) + "-" + meta->name;
  b.dir = root_ / "bundles" / b.dir_name;
  b.model = b.dir / meta->name;
  const fs::path staging = root_ / "bundles" / (".staging-" + id);
  fs::remove_all(staging, ec);
  fs::create_directory(staging, ec);
  if (ec) fail_errno(ec.value(), "creating the bundle directory");
  b.manifest = {{"name", meta->name},
                {"size", meta->size},
                {"sha256", meta->sha256},
                {"chunk_size", meta->chunk_bytes},
                {"chunk_sha256", meta->received},
                {"bundle", b.dir_name}};
  for (const auto& [k, v] : extra.items()) b.manifest[k] = v;
  try {
    for (const std::string file : {"calibration.npy", "calibration.npz", "labels.npy"}) {
      if (!fs::exists(updir / file, ec)) continue;
      b.manifest[file.starts_with("labels") ? "labels" : "calibration_data"] = {
          {"file", file},
          {"sha256", sha256_file(updir / file)},
          {"size", fs::file_size(updir / file)}};
      if (::rename((updir / file).c_str(), (staging / file).c_str()) != 0)
        fail_errno(errno, "moving " + file + " into the bundle");
    }
    write_atomic(staging / "manifest.json", b.manifest.dump(2) + "\n");
  } catch (...) {
    fs::remove_all(staging, ec);
    throw;
  }
  // Same file system: renames, no copy, no new space.
  if (::rename((updir / "data.part").c_str(), (staging / meta->name).c_str()) != 0 ||
      ::rename(staging.c_str(), b.dir.c_str()) != 0) {
    const int err = errno;
    fs::remove_all(staging, ec);
    fail_errno(err, "moving the model into its bundle");
  }
  server::sync_directory(root_ / "bundles");
  fs::remove_all(updir, ec);
  return b;
}

std::optional<Bundle> Store::link(const char* name) const {
  std::error_code ec;
  const fs::path target = fs::read_symlink(root_ / name, ec);
  if (ec) return std::nullopt;
  Bundle b;
  b.dir_name = target.filename().string();
  b.dir = root_ / "bundles" / b.dir_name;
  const Json m = Json::parse(read_text(b.dir / "manifest.json"), nullptr, false);
  if (!m.is_object() || !m.contains("name") || !m["name"].is_string()) return std::nullopt;
  if (!check_model_name(m["name"].get<std::string>()).empty()) return std::nullopt;
  b.manifest = m;
  b.model = b.dir / m["name"].get<std::string>();
  return b;
}

std::optional<Bundle> Store::current() const { return link("current"); }
std::optional<Bundle> Store::previous() const { return link("previous"); }

void Store::set_link(const char* name, const std::string& target) {
  const fs::path tmp = root_ / (std::string(".") + name + ".new");
  ::unlink(tmp.c_str());
  if (::symlink(("bundles/" + target).c_str(), tmp.c_str()) != 0)
    fail_errno(errno, std::string("making the ") + name + " link");
  if (::rename(tmp.c_str(), (root_ / name).c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail_errno(err, std::string("switching the ") + name + " link");
  }
  server::sync_directory(root_);
}

void Store::activate(const Bundle& bundle) {
  const auto old = current();
  // previous first: a crash between the two leaves current on the old bundle (still serving).
  if (old && old->dir_name != bundle.dir_name) set_link("previous", old->dir_name);
  set_link("current", bundle.dir_name);
  // Bundles neither link names are removed (the disk of a device is small).
  std::error_code ec;
  const auto prev = previous();
  for (const auto& entry : fs::directory_iterator(root_ / "bundles", ec)) {
    const std::string n = entry.path().filename().string();
    if (n == bundle.dir_name || (prev && n == prev->dir_name) || n.starts_with("failed-")) continue;
    if (n.starts_with(".staging-")) continue;
    fs::remove_all(entry.path(), ec);
  }
}

void Store::swap_previous() {
  const auto cur = current();
  const auto prev = previous();
  if (!prev)
    throw StoreError{ErrorCode::kNoPrevious, "there is no previous bundle to roll back to"};
  set_link("current", prev->dir_name);
  if (cur) set_link("previous", cur->dir_name);
}

void Store::discard(const Bundle& bundle) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root_ / "bundles", ec)) {
    if (entry.path().filename().string().starts_with("failed-")) fs::remove_all(entry.path(), ec);
  }
  fs::rename(bundle.dir, root_ / "bundles" / ("failed-" + bundle.dir_name), ec);
  if (ec) fs::remove_all(bundle.dir, ec);
}

}  // namespace cellscope::agent
