// The deploy agent's store (server/agent/store.h) and the devices of mindspore_config.json:
// name checks, chunk hashes, resumption, bundles and the current/previous switch.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "agent/crypto.h"
#include "agent/store.h"
#include "project_config.h"

namespace fs = std::filesystem;
using cellscope::agent::check_model_name;
using cellscope::agent::ErrorCode;
using cellscope::agent::sha256_hex;
using cellscope::agent::Store;
using cellscope::agent::StoreError;

namespace {

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() /
               ("cellscope-agent-test-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

ErrorCode code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const StoreError& e) {
    return e.code;
  }
  ADD_FAILURE() << "no StoreError";
  return ErrorCode::kInternal;
}

}  // namespace

TEST(AgentStore, ModelNamesArePlainFileNames) {
  EXPECT_EQ(check_model_name("lenet-5_v2.mindir"), "");
  for (const std::string& bad : std::vector<std::string>{
           "", "../x.mindir", "/etc/x.mindir", "a/b.mindir", "a\\b.mindir", "..mindir",
           ".hidden.mindir", "x.onnx", "sp ace.mindir", std::string("a\0b.mindir", 10)}) {
    EXPECT_NE(check_model_name(bad), "") << bad;
  }
}

TEST(AgentStore, ChunksAreHashedResumedAndBundled) {
  const fs::path root = fresh_dir("store");
  const std::string data(200 * 1024 + 17, 'x');
  const std::string sha = sha256_hex(data);
  const uint64_t chunk = 64 * 1024;
  std::string id;
  {
    Store store(root);
    auto m = store.begin_upload("m.mindir", data.size(), sha, chunk);
    id = m.id;
    EXPECT_EQ(m.chunks(), 4u);
    EXPECT_EQ(m.missing().size(), 4u);
    const std::string c0 = data.substr(0, chunk);
    // A chunk whose bytes do not match its hash is refused and nothing is recorded.
    std::string bad = c0;
    bad[10] = 'y';
    EXPECT_EQ(code_of([&] { store.write_chunk(id, 0, bad, sha256_hex(c0)); }),
              ErrorCode::kChunkHashMismatch);
    EXPECT_EQ(store.find_upload(id)->missing().size(), 4u);
    store.write_chunk(id, 0, c0, sha256_hex(c0));
    EXPECT_EQ(code_of([&] { store.make_bundle(id, {}); }), ErrorCode::kIncomplete);
  }
  // A new Store on the same directory (an agent restart) resumes from chunk 1.
  Store store(root);
  auto m = store.begin_upload("m.mindir", data.size(), sha, chunk);
  EXPECT_EQ(m.id, id);
  ASSERT_EQ(m.missing().front(), 1u);
  for (uint64_t i : m.missing()) {
    const std::string c = data.substr(i * chunk, chunk);
    store.write_chunk(id, i, c, sha256_hex(c));
  }
  auto b = store.make_bundle(id, {{"extra", 1}});
  std::ifstream in(b.model, std::ios::binary);
  const std::string back{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_EQ(back, data);
  EXPECT_EQ(b.manifest["sha256"], sha);
  EXPECT_FALSE(store.current());
  store.activate(b);
  ASSERT_TRUE(store.current());
  EXPECT_EQ(store.current()->dir_name, b.dir_name);
  EXPECT_EQ(code_of([&] { store.swap_previous(); }), ErrorCode::kNoPrevious);
  // A second bundle: previous is the first; swap goes back.
  const std::string d2 = "second";
  auto m2 = store.begin_upload("n.mindir", d2.size(), sha256_hex(d2), chunk);
  store.write_chunk(m2.id, 0, d2, sha256_hex(d2));
  auto b2 = store.make_bundle(m2.id, {});
  store.activate(b2);
  EXPECT_EQ(store.previous()->dir_name, b.dir_name);
  store.swap_previous();
  EXPECT_EQ(store.current()->dir_name, b.dir_name);
  EXPECT_EQ(store.previous()->dir_name, b2.dir_name);
  EXPECT_EQ(code_of([&] { store.begin_upload("../x.mindir", 1, sha, chunk); }),
            ErrorCode::kBadName);
  fs::remove_all(root);
}

TEST(AgentStore, CompanionFilesAreHashedAndBundled) {
  const fs::path root = fresh_dir("companion");
  Store store(root);
  const std::string model = "model bytes";
  const std::string cal = "\x93NUMPY calibration";
  auto m = store.begin_upload("c.mindir", model.size(), sha256_hex(model), 64 * 1024);
  store.write_chunk(m.id, 0, model, sha256_hex(model));
  // Bytes that do not match the hash sent with them: refused, nothing written.
  EXPECT_EQ(code_of([&] { store.write_companion(m.id, "calibration", cal, sha256_hex("other")); }),
            ErrorCode::kChunkHashMismatch);
  EXPECT_FALSE(fs::exists(root / "uploads" / m.id / "calibration.npy"));
  // Only the two known kinds, and only for an upload under way.
  EXPECT_EQ(code_of([&] { store.write_companion(m.id, "../x", cal, sha256_hex(cal)); }),
            ErrorCode::kNotFound);
  EXPECT_EQ(code_of([&] { store.write_companion("0123", "labels", cal, sha256_hex(cal)); }),
            ErrorCode::kNotFound);
  store.write_companion(m.id, "calibration", cal, sha256_hex(cal));
  auto b = store.make_bundle(m.id, {});
  EXPECT_EQ(b.manifest["calibration_data"]["sha256"], sha256_hex(cal));
  EXPECT_EQ(b.manifest["calibration_data"]["size"], cal.size());
  EXPECT_FALSE(b.manifest.contains("labels"));
  std::ifstream in(b.dir / "calibration.npy", std::ios::binary);
  const std::string back{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_EQ(back, cal);
  fs::remove_all(root);
}

TEST(AgentStore, DevicesInTheProjectConfig) {
  const auto c = cellscope::server::parse_project_config("/w/mindspore_config.json", R"({
  "devices": [{"name": "edge", "address": "10.0.0.2:8443", "target": "Ascend",
               "token_file": "edge.token"},
              {"name": "noaddr", "token_env": "T"},
              {"name": "both", "address": "h:1", "token_env": "T", "token_file": "f"}]})");
  ASSERT_EQ(c.devices.size(), 1u);
  EXPECT_EQ(c.devices[0].name, "edge");
  EXPECT_EQ(c.devices[0].target, "ascend910b");
  EXPECT_EQ(c.diagnostics.size(), 2u);
}
