// Registry signatures that differ between MindSpore releases. Every difference encoded here was
// found by diffing inspect.signature dumps and running probe calls in the PyPI wheels of MindSpore
// 2.7.0, 2.7.1, 2.7.2, 2.8.0, 2.9.0 and 2.10.0 (scripts/dump_signatures.py; the table is in
// docs/mindspore-versions.md).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "graphcore/analysis.h"
#include "graphcore/registry.h"

namespace graphcore {
namespace {

constexpr Version k270{2, 7, 0};
constexpr Version k271{2, 7, 1};
constexpr Version k272{2, 7, 2};
constexpr Version k280{2, 8, 0};
constexpr Version k290{2, 9, 0};
constexpr Version k2100{2, 10, 0};
const std::vector<Version> kReleases = {k270, k271, k272, k280, k290, k2100};

using Names = std::vector<std::string>;

// The parameters active at `v` as Python would print them ("*args" for VarPositional).
Names active(const std::vector<ParamSpec>& specs, const Version& v) {
  Names out;
  for (const ParamSpec& s : specs) {
    if (!s.versions.contains(v)) continue;
    std::string prefix = s.kind == ParamKind::VarPositional ? "*"
                         : s.kind == ParamKind::VarKeyword  ? "**"
                                                            : "";
    out.push_back(prefix + s.name + (s.default_src.empty() ? "" : "=" + s.default_src));
  }
  return out;
}

Names call_sig(std::string_view name, const Version& v) {
  const ApiEntry* e = Registry::instance().find(name, v);
  EXPECT_NE(e, nullptr) << name << " at " << v.str();
  return e ? active(e->call_params, v) : Names{};
}

TEST(RegistryVersions, DefaultIsTheNewestRelease) {
  EXPECT_EQ(kDefaultMindSporeVersion, k2100);
  EXPECT_EQ(kDefaultMindSporeVersion.str(), "2.10.0");
}

// No registry API was added or removed between 2.7.0 and 2.10.0: every entry is found at every
// release (the differences are all in parameters).
TEST(RegistryVersions, EveryEntryExistsInEveryRelease) {
  for (const auto& e : Registry::instance().entries())
    for (const Version& v : kReleases)
      EXPECT_NE(Registry::instance().find(e->name, v), nullptr) << e->name << " at " << v.str();
}

// The signature dumps of 2.9.0 and 2.10.0 are identical for every registry API.
TEST(RegistryVersions, NoSignatureChangeBetween290And2100) {
  for (const auto& e : Registry::instance().entries()) {
    EXPECT_EQ(Registry::instance().find(e->name, k290), Registry::instance().find(e->name, k2100));
    EXPECT_EQ(active(e->init_params, k290), active(e->init_params, k2100)) << e->name;
    EXPECT_EQ(active(e->call_params, k290), active(e->call_params, k2100)) << e->name;
  }
}

// ops.transpose(input, input_perm) in 2.7.0; (input, dims) since 2.7.1. Same for Transpose()(...).
TEST(RegistryVersions, TransposePermutationRenamedToDimsIn271) {
  for (const char* name : {"ops.transpose", "ops.Transpose"}) {
    EXPECT_EQ(call_sig(name, k270), (Names{"input", "input_perm"})) << name;
    for (const Version& v : {k271, k272, k280, k290, k2100})
      EXPECT_EQ(call_sig(name, v), (Names{"input", "dims"})) << name << " at " << v.str();
  }
}

// Ones()(size, type=None) / Zeros()(size, type=None) up to 2.7.2; since 2.8.0
// Ones()(shape, dtype=None) and Zeros()(size, dtype=None). ops.ones/ops.zeros did not change.
TEST(RegistryVersions, OnesZerosPrimitiveCallRenamedIn280) {
  for (const Version& v : {k270, k271, k272}) {
    EXPECT_EQ(call_sig("ops.Ones", v), (Names{"size", "type=None"})) << v.str();
    EXPECT_EQ(call_sig("ops.Zeros", v), (Names{"size", "type=None"})) << v.str();
  }
  for (const Version& v : {k280, k290, k2100}) {
    EXPECT_EQ(call_sig("ops.Ones", v), (Names{"shape", "dtype=None"})) << v.str();
    EXPECT_EQ(call_sig("ops.Zeros", v), (Names{"size", "dtype=None"})) << v.str();
  }
  for (const Version& v : kReleases) {
    EXPECT_EQ(call_sig("ops.ones", v), (Names{"shape", "dtype=None"})) << v.str();
    EXPECT_EQ(call_sig("ops.zeros", v), (Names{"size", "dtype=None"})) << v.str();
  }
}

// 2.7.0's Tensor.view/permute were Python methods taking only *shape / *dims; since 2.7.1 they
// are builtins that also accept the keyword. broadcast_to and tile accept several ints since 2.7.1.
TEST(RegistryVersions, TensorMethodsAcceptKeywordsAndVarargsSince271) {
  EXPECT_EQ(call_sig("Tensor.view", k270), (Names{"self", "*shape"}));
  EXPECT_EQ(call_sig("Tensor.permute", k270), (Names{"self", "*dims"}));
  EXPECT_EQ(call_sig("Tensor.broadcast_to", k270), (Names{"self", "shape"}));
  EXPECT_EQ(call_sig("Tensor.tile", k270), (Names{"self", "dims"}));
  for (const Version& v : {k271, k272, k280, k290, k2100}) {
    EXPECT_EQ(call_sig("Tensor.view", v), (Names{"self", "shape", "*args"})) << v.str();
    EXPECT_EQ(call_sig("Tensor.permute", v), (Names{"self", "dims", "*args"})) << v.str();
    EXPECT_EQ(call_sig("Tensor.broadcast_to", v), (Names{"self", "shape", "*args"})) << v.str();
    EXPECT_EQ(call_sig("Tensor.tile", v), (Names{"self", "dims", "*args"})) << v.str();
  }
}

// Signatures that are the same in every release (they were wrong for all of them before).
TEST(RegistryVersions, SignaturesCommonToEveryRelease) {
  for (const Version& v : kReleases) {
    EXPECT_EQ(call_sig("ops.unstack", v), (Names{"input_x", "axis=0"})) << v.str();
    EXPECT_EQ(call_sig("Tensor.squeeze", v), (Names{"self", "axis=None"})) << v.str();
    EXPECT_EQ(call_sig("Tensor.reshape", v), (Names{"self", "shape", "*args"})) << v.str();
  }
}

// ---- End to end: the same source analysed for different target versions ----------------------

class TempModel {
 public:
  explicit TempModel(const std::string& body) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("cellscope_versions_" + std::string(info->name()) + "_" + std::to_string(++counter_) +
             ".py");
    std::ofstream(path_) << "import numpy as np\n"
                            "import mindspore as ms\n"
                            "from mindspore import nn, ops\n\n\n"
                            "class Net(nn.Cell):\n"
                            "    def __init__(self):\n"
                            "        super().__init__()\n"
                            "        self.ones = ops.Ones()\n"
                            "        self.transpose = ops.Transpose()\n\n"
                            "    def construct(self, x):\n"
                            "        return "
                         << body
                         << "\n\n\n"
                            "net = Net()\n"
                            "out = net(ms.Tensor(np.ones((2, 3), np.float32)))\n";
  }
  ~TempModel() { std::filesystem::remove(path_); }
  TempModel(const TempModel&) = delete;
  TempModel& operator=(const TempModel&) = delete;

  AnalysisResult analyze(const Version& v) const {
    DiskSourceProvider sources;
    AnalysisOptions options;
    options.mindspore_version = v;
    return analyze_file(path_, options, sources);
  }

 private:
  std::filesystem::path path_;
  static inline int counter_ = 0;
};

std::vector<std::string> messages(const AnalysisResult& r, std::string_view code) {
  std::vector<std::string> out;
  for (const Diagnostic& d : r.diagnostics)
    if (d.code == code) out.push_back(d.message);
  return out;
}

std::string errors(const AnalysisResult& r) {
  std::string out;
  for (const Diagnostic& d : r.diagnostics)
    if (d.severity == Severity::Error) out += d.code + ": " + d.message + "\n";
  return out;
}

std::string output_type(const AnalysisResult& r) {
  if (r.cells.empty() || r.cells[0].outputs.empty()) return "<none>";
  return r.cells[0].outputs[0].type.str();
}

bool mentions(const std::vector<std::string>& msgs, std::string_view text) {
  for (const std::string& m : msgs)
    if (m.find(text) != std::string::npos) return true;
  return false;
}

TEST(RegistryVersionsE2E, PermuteDimsKeywordAddedIn271) {
  TempModel m("x.permute(dims=(1, 0))");
  AnalysisResult old = m.analyze(k270);
  auto unknown = messages(old, "unknown-keyword");
  ASSERT_EQ(unknown.size(), 1u) << errors(old);
  EXPECT_TRUE(mentions(unknown, "`dims` (added in MindSpore 2.7.1)")) << unknown[0];
  for (const Version& v : {k271, k2100}) {
    AnalysisResult now = m.analyze(v);
    EXPECT_EQ(now.error_count(), 0u) << v.str() << "\n" << errors(now);
    EXPECT_EQ(output_type(now), "(3, 2) f32") << v.str();
  }
  // The positional spelling works everywhere.
  TempModel pos("x.permute(1, 0)");
  for (const Version& v : kReleases)
    EXPECT_EQ(output_type(pos.analyze(v)), "(3, 2) f32") << v.str();
}

TEST(RegistryVersionsE2E, TransposeInputPermRemovedIn271) {
  TempModel old_kw("ops.transpose(x, input_perm=(1, 0)) + self.transpose(x, input_perm=(1, 0))");
  AnalysisResult ok = old_kw.analyze(k270);
  EXPECT_EQ(ok.error_count(), 0u) << errors(ok);
  EXPECT_EQ(output_type(ok), "(3, 2) f32");
  AnalysisResult now = old_kw.analyze(k2100);
  auto unknown = messages(now, "unknown-keyword");
  EXPECT_TRUE(mentions(unknown, "`input_perm` (removed in MindSpore 2.7.1)")) << errors(now);

  TempModel new_kw("ops.transpose(x, dims=(1, 0))");
  EXPECT_TRUE(mentions(messages(new_kw.analyze(k270), "unknown-keyword"),
                       "`dims` (added in MindSpore 2.7.1)"));
  AnalysisResult fine = new_kw.analyze(k271);
  EXPECT_EQ(fine.error_count(), 0u) << errors(fine);
  EXPECT_EQ(output_type(fine), "(3, 2) f32");
}

TEST(RegistryVersionsE2E, OnesShapeDtypeKeywordsSince280) {
  TempModel new_kw("self.ones(shape=(4, 5), dtype=ms.float16)");
  AnalysisResult old = new_kw.analyze(k272);
  auto unknown = messages(old, "unknown-keyword");
  EXPECT_TRUE(mentions(unknown, "`shape` (added in MindSpore 2.8.0)")) << errors(old);
  EXPECT_TRUE(mentions(unknown, "`dtype` (added in MindSpore 2.8.0)")) << errors(old);
  for (const Version& v : {k280, k2100}) {
    AnalysisResult now = new_kw.analyze(v);
    EXPECT_EQ(now.error_count(), 0u) << errors(now);
    EXPECT_EQ(output_type(now), "(4, 5) f16") << v.str();
  }

  TempModel old_kw("self.ones(size=(4, 5), type=ms.float16)");
  AnalysisResult fine = old_kw.analyze(k270);
  EXPECT_EQ(fine.error_count(), 0u) << errors(fine);
  EXPECT_EQ(output_type(fine), "(4, 5) f16");
  EXPECT_TRUE(mentions(messages(old_kw.analyze(k290), "unknown-keyword"),
                       "`type` (removed in MindSpore 2.8.0)"));
}

TEST(RegistryVersionsE2E, ViewDtypeSince280) {
  TempModel m("x.view(ms.float16)");
  AnalysisResult now = m.analyze(k280);
  EXPECT_EQ(now.error_count(), 0u) << errors(now);
  EXPECT_EQ(output_type(now), "(2, 6) f16");
  AnalysisResult old = m.analyze(k272);
  EXPECT_TRUE(mentions(messages(old, "invalid-argument"), "since MindSpore 2.8.0")) << errors(old);

  // MindSpore: "last dimension must be divisible by 2 to view Float32 as Int64".
  TempModel wide("x.view(ms.int64)");
  EXPECT_FALSE(messages(wide.analyze(k2100), "invalid-argument").empty());

  TempModel kw("x.view(shape=(3, 2))");
  EXPECT_TRUE(
      mentions(messages(kw.analyze(k270), "unknown-keyword"), "(added in MindSpore 2.7.1)"));
  EXPECT_EQ(output_type(kw.analyze(k271)), "(3, 2) f32");
}

TEST(RegistryVersionsE2E, BroadcastToAndTileVarargsSince271) {
  TempModel b("x.broadcast_to(4, 2, 3)");
  EXPECT_FALSE(messages(b.analyze(k270), "too-many-arguments").empty());
  EXPECT_EQ(output_type(b.analyze(k271)), "(4, 2, 3) f32");
  TempModel t("x.tile(2, 2)");
  EXPECT_FALSE(messages(t.analyze(k270), "too-many-arguments").empty());
  EXPECT_EQ(output_type(t.analyze(k2100)), "(4, 6) f32");
  TempModel tk("x.tile(dims=(2, 2))");
  for (const Version& v : kReleases) EXPECT_EQ(output_type(tk.analyze(v)), "(4, 6) f32") << v.str();
}

TEST(RegistryVersionsE2E, KeywordsAcceptedByEveryRelease) {
  TempModel m("ops.unstack(input_x=x.reshape(shape=(1, 6)).squeeze(axis=0).reshape(3, 2))[0]");
  for (const Version& v : kReleases) {
    AnalysisResult r = m.analyze(v);
    EXPECT_EQ(r.error_count(), 0u) << v.str() << "\n" << errors(r);
    EXPECT_EQ(output_type(r), "(2,) f32") << v.str();
  }
}

// Known names are version-aware: ops.all_gather exists since 2.7.1, ops.chunk_ext until 2.7.1
// (gone in 2.7.2).
TEST(RegistryVersionsE2E, KnownNamesFollowTheTargetVersion) {
  TempModel gather("x if ops.all_gather is None else x");
  EXPECT_FALSE(messages(gather.analyze(k270), "unknown-api").empty());
  EXPECT_TRUE(messages(gather.analyze(k271), "unknown-api").empty())
      << errors(gather.analyze(k271));
  EXPECT_TRUE(messages(gather.analyze(k2100), "unknown-api").empty());
  TempModel chunk("x if ops.chunk_ext is None else x");
  EXPECT_TRUE(messages(chunk.analyze(k271), "unknown-api").empty());
  auto gone = messages(chunk.analyze(k272), "unknown-api");
  ASSERT_FALSE(gone.empty());
  EXPECT_TRUE(mentions(gone, "does not exist in MindSpore 2.7.2")) << gone[0];
}

}  // namespace
}  // namespace graphcore
