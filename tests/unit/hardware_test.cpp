// The hardware layer (graphcore/hardware.h): target files load, validate and reject bad input with
// clear messages, and give the optimizer its targets (graphcore::targets(): the files, nothing
// else, with the facts the former C++ table had; gpu has no hardware model); kernel tiles never
// exceed the target's buffers; cycles grow with the problem; every corpus model gets an estimate on
// every Ascend target (infer and train) with core ids in range; ops.Custom kernels a target cannot
// run give a located `unsupported-on-target`.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "graphcore/analysis.h"
#include "graphcore/autodiff.h"
#include "graphcore/hardware.h"
#include "graphcore/opdef.h"
#include "graphcore/optimize.h"
#include "temp_dir.h"

namespace graphcore {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kAscend = {"ascend910", "ascend910b", "ascend310", "ascend310p"};

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

fs::path target_file(const std::string& name) {
  return fs::path(CELLSCOPE_SOURCE_DIR) / "graphcore" / "targets" / (name + ".json");
}

// The message of the TargetError `f` throws ("" when it does not throw).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const TargetError& e) {
    return e.what();
  }
  return "";
}

// --- target files ----------------------------------------------------------------------------

TEST(HardwareTargets, EveryBuiltInTargetLoadsAndMatchesItsFile) {
  ASSERT_EQ(hardware_target_names().size(), 5u);
  for (auto name : hardware_target_names()) {
    SCOPED_TRACE(std::string(name));
    const HardwareTarget& t = hardware_target(name);
    EXPECT_EQ(t.name, name);
    EXPECT_FALSE(t.display_name.empty());
    EXPECT_GT(t.frequency_mhz, 0);
    EXPECT_GT(t.launch_overhead_us, 0);
    const HardwareTarget from_disk = load_hardware_target_file(target_file(std::string(name)));
    EXPECT_EQ(from_disk.sources.size(), t.sources.size());
    for (const auto& s : t.sources) {
      EXPECT_FALSE(s.source.empty()) << s.field;
      EXPECT_FALSE(s.confidence.empty()) << s.field;
    }
    if (name == "cpu") {
      EXPECT_FALSE(t.ascend);
      EXPECT_GT(t.cores, 0u);
      continue;
    }
    EXPECT_TRUE(t.ascend);
    EXPECT_GT(t.ai_cores, 0u);
    EXPECT_GE(t.vector_cores, t.ai_cores);
    EXPECT_EQ(t.l0a_bytes, 64u * 1024);
    EXPECT_EQ(t.l0b_bytes, 64u * 1024);
  }
  // The published facts the model rests on.
  EXPECT_EQ(hardware_target("ascend910").ai_cores, 32u);
  EXPECT_FALSE(hardware_target("ascend910").separated);
  EXPECT_EQ(hardware_target("ascend910b").ai_cores, 24u);
  EXPECT_EQ(hardware_target("ascend910b").vector_cores, 48u);  // AIC:AIV 1:2
  EXPECT_TRUE(hardware_target("ascend910b").separated);
  EXPECT_EQ(hardware_target("ascend910b").l0c_bytes, 128u * 1024);
  EXPECT_EQ(hardware_target("ascend310p").ai_cores, 8u);
  EXPECT_EQ(hardware_target("ascend310").ai_cores, 2u);
  // Peak fp16 of the 910 is the published 256 TFLOPS.
  const auto& t910 = hardware_target("ascend910");
  EXPECT_NEAR(t910.ai_cores * t910.cube_macs_fp16 * 2 * t910.frequency_mhz / 1e6, 256, 0.5);
}

TEST(HardwareTargets, BadFilesGiveClearErrors) {
  EXPECT_NE(error_of([] {
              load_hardware_target_file("/nonexistent/ascend999.json");
            }).find("/nonexistent/ascend999.json: cannot open target file"),
            std::string::npos);
  EXPECT_NE(
      error_of([] { parse_hardware_target("{not json", "x.json"); }).find("x.json: invalid JSON"),
      std::string::npos);
  // A number past a double's range (out_of_range, not parse_error; found by the target harness).
  EXPECT_NE(error_of([] {
              parse_hardware_target(R"({"name": 1e400})", "x.json");
            }).find("x.json: invalid JSON"),
            std::string::npos);
  EXPECT_NE(error_of([] { hardware_target("tpu"); }).find("no hardware model for target 'tpu'"),
            std::string::npos);

  const auto good = nlohmann::json::parse(read_text(target_file("ascend910")));
  auto mutated = [&good](auto&& edit) {
    auto doc = good;
    edit(doc);
    return error_of([&doc] { parse_hardware_target(doc.dump(), "ascend910.json"); });
  };
  EXPECT_EQ(mutated([](nlohmann::json&) {}), "");
  EXPECT_EQ(mutated([](nlohmann::json& d) { d.erase("l0a_bytes"); }),
            "ascend910.json: field 'l0a_bytes': missing");
  EXPECT_EQ(mutated([](nlohmann::json& d) { d["ub_bytes"]["value"] = -1; }),
            "ascend910.json: field 'ub_bytes': expected a positive number");
  EXPECT_EQ(mutated([](nlohmann::json& d) { d["ai_cores"]["value"] = 2.5; }),
            "ascend910.json: field 'ai_cores': expected a whole number below 2^32");
  // Past the integer's range: the cast was undefined behaviour (found by the target harness).
  EXPECT_EQ(mutated([](nlohmann::json& d) { d["ai_cores"]["value"] = 6.5e87; }),
            "ascend910.json: field 'ai_cores': expected a whole number below 2^32");
  EXPECT_EQ(mutated([](nlohmann::json& d) { d["ai_cores"]["value"] = 4294967296.0; }),
            "ascend910.json: field 'ai_cores': expected a whole number below 2^32");
  EXPECT_EQ(mutated([](nlohmann::json& d) { d["ub_bytes"]["value"] = 1.8446744073709552e19; }),
            "ascend910.json: field 'ub_bytes': expected whole bytes below 2^64");
  EXPECT_NE(mutated([](nlohmann::json& d) {
              d["ai_cores"]["confidence"] = "sure";
            }).find("field 'ai_cores': confidence must be"),
            std::string::npos);
  EXPECT_NE(mutated([](nlohmann::json& d) {
              d["l1_bytes"]["source"] = "";
            }).find("field 'l1_bytes': every number needs a non-empty \"source\""),
            std::string::npos);
  EXPECT_NE(mutated([](nlohmann::json& d) {
              d["frequency_mhz"] = 1000;
            }).find("field 'frequency_mhz': expected {\"value\""),
            std::string::npos);
  EXPECT_NE(mutated([](nlohmann::json& d) {
              d["organisation"]["value"] = "fused";
            }).find("expected \"coupled\" or \"separated\""),
            std::string::npos);
  EXPECT_NE(mutated([](nlohmann::json& d) {
              d["dma_channels"]["value"].push_back("FixPipe");
            }).find("FixPipe exists exactly on separated"),
            std::string::npos);
  EXPECT_EQ(mutated([](nlohmann::json& d) { d["kind"] = "tpu"; }),
            "ascend910.json: field 'kind': expected \"ascend\", \"cpu\" or \"gpu\"");
  EXPECT_EQ(mutated([](nlohmann::json& d) { d.erase("kind"); }),
            "ascend910.json: field 'kind': missing");
  EXPECT_EQ(mutated([](nlohmann::json& d) { d["mmad_issue_cycles"]["value"] = -1; }),
            "ascend910.json: field 'mmad_issue_cycles': expected a number >= 0");
  EXPECT_EQ(mutated([](nlohmann::json& d) { d.erase("mmad_issue_cycles"); }),
            "ascend910.json: field 'mmad_issue_cycles': missing");
}

// --- the optimization layer's facts (graphcore::targets(), read from the same files) -----------

// What the C++ table of pass_manager.cpp (kTargets) said before the facts moved to the target
// files: every TargetInfo field read from the files must equal it.
struct FormerTargetInfo {
  std::string name;
  bool ascend;
  uint32_t alignment;
  std::string attention_kernel;
  std::string attention_source;
};
const std::string kCann =
    "CANN 7.0 aclnnFlashAttentionScore / aclnnPromptFlashAttention product support";
const std::vector<FormerTargetInfo> kFormerTargets = {
    {"cpu", false, 32, "FusedAttention", "a generic CPU attention kernel"},
    {"gpu", false, 512, "FusedAttention", "FlashAttention (CUDA)"},
    {"ascend910", true, 512, "", kCann},
    {"ascend910b", true, 512, "FlashAttentionScore", kCann},
    {"ascend310p", true, 512, "PromptFlashAttention", kCann},
    {"ascend310", true, 512, "", kCann},
};

TEST(TargetFiles, OptimizerFactsEqualTheFormerTable) {
  const auto ts = targets();
  ASSERT_EQ(ts.size(), kFormerTargets.size());
  for (size_t i = 0; i < ts.size(); ++i) {  // same targets, in the order the CLI lists them
    const auto& want = kFormerTargets[i];
    SCOPED_TRACE(want.name);
    EXPECT_EQ(ts[i].name, want.name);
    EXPECT_EQ(ts[i].ascend, want.ascend);
    EXPECT_EQ(ts[i].alignment, want.alignment);
    EXPECT_EQ(ts[i].attention_kernel, want.attention_kernel);
    EXPECT_EQ(ts[i].attention_source, want.attention_source);
    EXPECT_EQ(find_target(want.name), &ts[i]);
  }
  EXPECT_EQ(find_target("cpu")->alignment, 32u);
  EXPECT_EQ(find_target("ascend910b")->alignment, 512u);
  EXPECT_TRUE(find_target("ascend910")->attention_kernel.empty());
  EXPECT_EQ(find_target("ascend910b")->attention_kernel, "FlashAttentionScore");
  EXPECT_EQ(find_target("tpu"), nullptr);
  EXPECT_EQ(find_target(""), nullptr);
}

TEST(TargetFiles, EveryFileIsATargetAndEveryTargetAFile) {
  // One definition per target: graphcore/targets/<name>.json. targets() holds exactly the files,
  // read as they are on disk; the hardware layer exactly those with a hardware model.
  std::set<std::string> files;
  for (const auto& entry : fs::directory_iterator(target_file("cpu").parent_path())) {
    if (entry.path().extension() == ".json") files.insert(entry.path().stem().string());
  }
  std::set<std::string> names, modelled;
  for (const auto& t : targets()) names.emplace(t.name);
  EXPECT_EQ(names, files);
  for (const auto& name : files) {
    SCOPED_TRACE(name);
    const HardwareTarget file = load_hardware_target_file(target_file(name));
    const TargetInfo* info = find_target(name);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->ascend, file.kind == "ascend");
    EXPECT_EQ(info->alignment, file.buffer_alignment);
    EXPECT_EQ(info->attention_kernel, file.fused_attention_kernel);
    ASSERT_EQ(file.optimizer_sources.size(), 2u);
    EXPECT_EQ(file.optimizer_sources[0].field, "buffer_alignment_bytes");
    EXPECT_EQ(file.optimizer_sources[1].field, "fused_attention_kernel");
    EXPECT_EQ(info->attention_source, file.optimizer_sources[1].source);
    for (const auto& s : file.optimizer_sources) {
      EXPECT_FALSE(s.confidence.empty()) << s.field;
      EXPECT_FALSE(s.source.empty()) << s.field;
    }
    // The hardware layer's document lists the hardware model's sources only.
    for (const auto& s : file.sources) {
      EXPECT_NE(s.field, "buffer_alignment_bytes");
      EXPECT_NE(s.field, "fused_attention_kernel");
    }
    if (file.has_hardware_model()) modelled.insert(name);
  }
  EXPECT_EQ(modelled,
            std::set<std::string>(hardware_target_names().begin(), hardware_target_names().end()));
  // The hardware layer's list is what it was before gpu had a file.
  const std::vector<std::string_view> hw(hardware_target_names().begin(),
                                         hardware_target_names().end());
  EXPECT_EQ(hw, (std::vector<std::string_view>{"cpu", "ascend910", "ascend910b", "ascend310",
                                               "ascend310p"}));
}

TEST(TargetFiles, GpuHasOnlyTheOptimizerFacts) {
  const HardwareTarget gpu = load_hardware_target_file(target_file("gpu"));
  EXPECT_EQ(gpu.name, "gpu");
  EXPECT_EQ(gpu.kind, "gpu");
  EXPECT_FALSE(gpu.ascend);
  EXPECT_FALSE(gpu.has_hardware_model());
  EXPECT_EQ(gpu.buffer_alignment, 512u);
  EXPECT_EQ(gpu.fused_attention_kernel, "FusedAttention");
  ASSERT_EQ(gpu.optimizer_sources.size(), 2u);
  EXPECT_EQ(gpu.optimizer_sources[1].source, "FlashAttention (CUDA)");
  EXPECT_TRUE(gpu.sources.empty());
  EXPECT_EQ(gpu.frequency_mhz, 0);
  // As before gpu had a file: the hardware layer has no model for it.
  EXPECT_EQ(error_of([] { hardware_target("gpu"); }),
            "no hardware model for target 'gpu' (targets: cpu, ascend910, ascend910b, ascend310, "
            "ascend310p)");
  for (const auto& name : {"cpu", "ascend910b"})
    EXPECT_TRUE(hardware_target(name).has_hardware_model());
}

TEST(TargetFiles, BadOptimizerFieldsGiveLocatedErrors) {
  for (const std::string name : {"ascend910", "cpu", "gpu"}) {
    SCOPED_TRACE(name);
    const auto good = nlohmann::json::parse(read_text(target_file(name)));
    const std::string origin = name + ".json";
    auto mutated = [&](auto&& edit) {
      auto doc = good;
      edit(doc);
      return error_of([&] { parse_hardware_target(doc.dump(), origin); });
    };
    EXPECT_EQ(mutated([](nlohmann::json&) {}), "");
    EXPECT_EQ(mutated([](nlohmann::json& d) { d.erase("buffer_alignment_bytes"); }),
              origin + ": field 'buffer_alignment_bytes': missing");
    EXPECT_EQ(mutated([](nlohmann::json& d) { d.erase("fused_attention_kernel"); }),
              origin + ": field 'fused_attention_kernel': missing");
    EXPECT_EQ(mutated([](nlohmann::json& d) { d["buffer_alignment_bytes"]["value"] = 0; }),
              origin + ": field 'buffer_alignment_bytes': expected a positive number");
    EXPECT_EQ(mutated([](nlohmann::json& d) { d["buffer_alignment_bytes"]["value"] = -512; }),
              origin + ": field 'buffer_alignment_bytes': expected a positive number");
    EXPECT_EQ(mutated([](nlohmann::json& d) { d["buffer_alignment_bytes"]["value"] = 48; }),
              origin + ": field 'buffer_alignment_bytes': expected a power of two");
    EXPECT_EQ(mutated([](nlohmann::json& d) { d["buffer_alignment_bytes"]["value"] = 3; }),
              origin + ": field 'buffer_alignment_bytes': expected a power of two");
    EXPECT_EQ(mutated([](nlohmann::json& d) { d["buffer_alignment_bytes"]["value"] = 64.5; }),
              origin + ": field 'buffer_alignment_bytes': expected a whole number below 2^32");
    EXPECT_EQ(
        mutated([](nlohmann::json& d) { d["buffer_alignment_bytes"]["value"] = 4294967296.0; }),
        origin + ": field 'buffer_alignment_bytes': expected a whole number below 2^32");
    EXPECT_EQ(mutated([](nlohmann::json& d) { d["buffer_alignment_bytes"]["value"] = "512"; }),
              origin + ": field 'buffer_alignment_bytes': expected a positive number");
    EXPECT_EQ(mutated([](nlohmann::json& d) { d["buffer_alignment_bytes"] = 512; }),
              origin +
                  ": field 'buffer_alignment_bytes': expected {\"value\": ..., \"confidence\": "
                  "..., \"source\": ...}");
    EXPECT_EQ(
        mutated([](nlohmann::json& d) { d["buffer_alignment_bytes"].erase("source"); }),
        origin + ": field 'buffer_alignment_bytes': every number needs a non-empty \"source\"");
    EXPECT_EQ(mutated([](nlohmann::json& d) { d["fused_attention_kernel"]["value"] = nullptr; }),
              origin + ": field 'fused_attention_kernel': expected a string");
    EXPECT_EQ(
        mutated([](nlohmann::json& d) { d["fused_attention_kernel"]["source"] = ""; }),
        origin + ": field 'fused_attention_kernel': every number needs a non-empty \"source\"");
    EXPECT_NE(mutated([](nlohmann::json& d) {
                d["fused_attention_kernel"]["confidence"] = "sure";
              }).find(origin + ": field 'fused_attention_kernel': confidence must be"),
              std::string::npos);
    // The largest power of two below 2^32 is a valid (if odd) alignment.
    EXPECT_EQ(
        mutated([](nlohmann::json& d) { d["buffer_alignment_bytes"]["value"] = 2147483648.0; }),
        "");
  }
  // A kind "gpu" file holds no hardware fields, and the kind is never implied.
  const auto gpu = nlohmann::json::parse(read_text(target_file("gpu")));
  auto gpu_error = [&gpu](auto&& edit) {
    auto doc = gpu;
    edit(doc);
    return error_of([&doc] { parse_hardware_target(doc.dump(), "gpu.json"); });
  };
  EXPECT_EQ(gpu_error([](nlohmann::json& d) {
              d["frequency_mhz"] = {{"value", 1500}, {"confidence", "A"}, {"source", "a guess"}};
            })
                .rfind("gpu.json: field 'frequency_mhz': not a field of a \"gpu\" target: kind "
                       "\"gpu\" has no hardware model",
                       0),
            0u);
  EXPECT_EQ(gpu_error([](nlohmann::json& d) { d["kind"] = "cpu"; }),
            "gpu.json: field 'frequency_mhz': missing");
  EXPECT_EQ(gpu_error([](nlohmann::json& d) { d.erase("kind"); }),
            "gpu.json: field 'kind': missing");
  // An Ascend file relabelled "gpu": its hardware fields are refused, not ignored.
  const auto ascend = nlohmann::json::parse(read_text(target_file("ascend910")));
  auto relabelled = ascend;
  relabelled["kind"] = "gpu";
  EXPECT_EQ(error_of([&relabelled] {
              parse_hardware_target(relabelled.dump(), "ascend910.json");
            }).rfind("ascend910.json: field 'ai_cores': not a field of a \"gpu\" target", 0),
            0u);
}

// --- kernel models ---------------------------------------------------------------------------

void expect_fits(const KernelEstimate& k) {
  if (!k.detail) return;
  for (const auto& t : k.detail->tiling) {
    EXPECT_LE(t.bytes * t.copies, t.capacity) << t.buffer << " " << t.tile;
    EXPECT_GT(t.bytes, 0u) << t.buffer;
  }
}

TEST(HardwareKernels, TilesNeverExceedBuffers) {
  const std::vector<double> sizes = {1, 7, 16, 33, 100, 512, 1000, 4096, 30000, 802816};
  for (const auto& name : kAscend) {
    const HardwareTarget& t = hardware_target(name);
    for (double m : sizes) {
      for (double k : sizes) {
        for (double n : {1.0, 16.0, 64.0, 1000.0, 4096.0}) {
          SCOPED_TRACE(name + " m=" + std::to_string(m) + " k=" + std::to_string(k) +
                       " n=" + std::to_string(n));
          for (uint32_t in_bytes : {1u, 2u}) {
            const auto ke =
                model_cube_kernel(t, {.batch = 1, .m = m, .k = k, .n = n, .in_bytes = in_bytes});
            expect_fits(ke);
            ASSERT_TRUE(ke.detail);
            ASSERT_EQ(ke.detail->tiling.size(), t.separated ? 4u : 5u);
            EXPECT_GE(ke.block_dim, 1u);
            EXPECT_LE(ke.block_dim, t.ai_cores);
          }
        }
      }
      for (uint32_t eb : {1u, 2u, 4u}) {
        const auto ve = model_vector_kernel(t, {.elements = m * 1000,
                                                .in_bytes = 3 * m * 1000 * eb,
                                                .out_bytes = m * 1000 * eb,
                                                .ops_per_element = 2,
                                                .elem_bytes = eb});
        expect_fits(ve);
        EXPECT_LE(ve.block_dim, t.vector_cores);
      }
    }
  }
}

TEST(HardwareKernels, CyclesAreMonotonicInProblemSize) {
  for (const auto& name : kAscend) {
    SCOPED_TRACE(name);
    const HardwareTarget& t = hardware_target(name);
    double prev = 0;
    for (double s = 16; s <= 16384; s *= 2) {
      const double c = model_cube_kernel(t, {.m = s, .k = 512, .n = 512}).cycles;
      EXPECT_GE(c, prev) << "m=" << s;
      prev = c;
    }
    prev = 0;
    for (double s = 16; s <= 16384; s *= 2) {
      const double c = model_cube_kernel(t, {.m = 4096, .k = s, .n = 512}).cycles;
      EXPECT_GE(c, prev) << "k=" << s;
      prev = c;
    }
    prev = 0;
    for (double s = 16; s <= 16384; s *= 2) {
      const double c = model_cube_kernel(t, {.m = 4096, .k = 512, .n = s}).cycles;
      EXPECT_GE(c, prev) << "n=" << s;
      prev = c;
    }
    prev = 0;
    for (double e = 128; e <= 1 << 26; e *= 4) {
      const double c =
          model_vector_kernel(t, {.elements = e, .in_bytes = 4 * e, .out_bytes = 2 * e}).cycles;
      EXPECT_GE(c, prev) << "elements=" << e;
      prev = c;
    }
    // A large product is compute-bound and within the cube's peak.
    const auto big = model_cube_kernel(t, {.m = 8192, .k = 4096, .n = 4096});
    EXPECT_GE(big.cycles * t.ai_cores * t.cube_macs_fp16, big.macs);
  }
}

TEST(HardwareKernels, AllAiCoresTogetherReachTheChipBandwidth) {
  // A memory-bound vector kernel over the AI cores only: a per-core rate from a test config
  // (310P3: 17 B/cycle x 8 cores = 145 GB/s) must not cap the chip below its own bandwidth.
  for (const auto& name : kAscend) {
    SCOPED_TRACE(name);
    HardwareTarget t = hardware_target(name);
    t.vector_cores = t.ai_cores;
    const double e = 1 << 26;
    const auto k = model_vector_kernel(t, {.elements = e, .in_bytes = 2 * e, .out_bytes = 0});
    ASSERT_EQ(k.block_dim, t.ai_cores);
    const double gbps = k.gm_read_bytes / (k.cycles / t.frequency_mhz) / 1e3;
    EXPECT_GT(gbps, 0.95 * t.gm_bandwidth_gbps);
    EXPECT_LE(gbps, t.gm_bandwidth_gbps * 1.0001);
  }
}

TEST(HardwareKernels, AFusedResidualIsReadInTheEpilogue) {
  for (const auto& name : kAscend) {
    SCOPED_TRACE(name);
    const HardwareTarget& t = hardware_target(name);
    CubeProblem p{.m = 64 * 56 * 56, .k = 64, .n = 256};
    const auto plain = model_cube_kernel(t, p);
    p.residual_gm_bytes = p.m * p.n * 2;
    const auto res = model_cube_kernel(t, p);
    EXPECT_DOUBLE_EQ(res.gm_read_bytes, plain.gm_read_bytes + p.residual_gm_bytes);
    EXPECT_GT(res.cycles, plain.cycles);  // memory-bound: the extra read costs time
    p.residual_l2_fraction = 1;
    EXPECT_LE(model_cube_kernel(t, p).cycles, res.cycles);
  }
}

TEST(HardwareKernels, EveryMmadInstructionPaysItsIssueCycles) {
  for (const auto& name : kAscend) {
    SCOPED_TRACE(name);
    HardwareTarget t = hardware_target(name);
    EXPECT_GE(t.mmad_issue_cycles, 0);
    // Compute-bound: a big GEMM whose operands come from L2.
    const CubeProblem p{.m = 4096, .k = 4096, .n = 4096};
    t.mmad_issue_cycles = 0;
    const auto without = model_cube_kernel(t, p);
    t.mmad_issue_cycles = 32;
    const auto with = model_cube_kernel(t, p);
    ASSERT_TRUE(with.detail && without.detail);
    const auto mmad = [](const KernelEstimate& k) {
      for (const auto& i : k.detail->schedule) {
        if (i.unit == "Cube") return i;
      }
      return Instruction{};
    };
    const Instruction a = mmad(with), b = mmad(without);
    EXPECT_EQ(a.count, b.count);
    // Per tile: one issue cost per MMAD instruction.
    EXPECT_NEAR(a.cycles - b.cycles, 32.0 * a.count, 1e-6);
    EXPECT_GE(with.cycles, without.cycles);
    EXPECT_NEAR(with.compute_cycles - without.compute_cycles, 32.0 * a.count * with.tiles, 1e-3);
  }
}

// The schedule names the MMAD by the blocks the tiling and loops describe; an uneven split shows
// the average the cycles use beside it (K = 4608 per core in steps of 1024: 922 on average).
TEST(HardwareCube, TheMmadNamesItsBlocksAndTheAverageOfUnevenSteps) {
  const HardwareTarget& t = hardware_target("ascend910b");
  const auto label = [&](const CubeProblem& p) {
    const auto k = model_cube_kernel(t, p);
    for (const auto& i : k.detail->schedule)
      if (i.unit == "Cube") return i.op;
    return std::string();
  };
  EXPECT_EQ(label({.m = 1, .k = 9216, .n = 128}),
            "mmad 16x1024x16 (16x922x16 on average: edge blocks are smaller)");
  EXPECT_EQ(label({.m = 4096, .k = 4096, .n = 4096}).find("on average"), std::string::npos);
}

// --- whole graphs ----------------------------------------------------------------------------

struct Model {
  std::string file;
  std::string cell;
  std::vector<std::string> inputs;  // "1,3,224,224:float32"
};

std::vector<Model> corpus_models() {
  const fs::path dir = CELLSCOPE_CORPUS_DIR;
  const auto manifest = nlohmann::json::parse(read_text(dir / "manifest.json"));
  std::vector<Model> out;
  for (const auto& m : manifest["models"]) {
    std::vector<std::string> inputs;
    for (const auto& i : m["inputs"]) {
      std::string spec;
      for (const auto& d : i["shape"]) {
        spec += (spec.empty() ? "" : ",") + std::to_string(d.get<int64_t>());
      }
      inputs.push_back(spec + ":" + i["dtype"].get<std::string>());
    }
    out.push_back(
        {(dir / m["file"].get<std::string>()).string(), m["cell"].get<std::string>(), inputs});
  }
  return out;
}

CellReport analyse(const Model& model, const std::vector<std::string>& inputs) {
  AnalysisOptions options;
  if (model.cell.find('(') != std::string::npos) {
    options.entries = {model.cell};
  } else {
    options.cell = model.cell;
  }
  for (const auto& spec : inputs) {
    std::string why;
    auto t = parse_input_spec(spec, &why);
    if (!t)
      throw std::runtime_error(std::string("bad input ").append(spec).append(": ").append(why));
    options.inputs.push_back(*t);
  }
  DiskSourceProvider disk;
  auto result = analyze_file(model.file, options, disk);
  if (result.cells.size() != 1) throw std::runtime_error("expected one Cell in " + model.file);
  return std::move(result.cells[0]);
}

TEST(HardwareCorpus, EstimateForEveryModelOnEveryAscendTarget) {
  const auto models = corpus_models();
  ASSERT_GE(models.size(), 9u);
  for (const auto& model : models) {
    const CellReport rep = analyse(model, model.inputs);
    ASSERT_TRUE(rep.compiled) << model.file;
    for (const auto& target : kAscend) {
      OptimizeOptions oo;
      oo.target = target;
      const auto graph = optimize(rep, oo);
      const HardwareTarget& t = hardware_target(target);
      for (const std::string mode : {"infer", "train"}) {
        SCOPED_TRACE(
            std::string(model.file).append(" on ").append(target).append(" ").append(mode));
        HardwareOptions ho;
        ho.target = target;
        ho.mode = mode;
        const auto hw = estimate_hardware(rep, graph, ho);
        EXPECT_TRUE(hw.estimate.analytical);
        EXPECT_EQ(hw.estimate.target, target);
        EXPECT_GT(hw.estimate.latency_ms, 0);
        EXPECT_GT(hw.estimate.throughput_per_sec, 0);
        EXPECT_NE(hw.statement.find("Analytical model"), std::string::npos);
        EXPECT_TRUE(hw.diagnostics.empty());
        double clock = 0;
        std::set<uint32_t> nodes_with_kernels;
        for (const auto& k : hw.kernels) {
          const uint32_t pool = k.unit == Unit::Cube     ? t.ai_cores
                                : k.unit == Unit::Vector ? t.vector_cores
                                : k.unit == Unit::AiCpu  ? t.ai_cpu_cores
                                                         : 1;
          ASSERT_EQ(k.core_ids.size(), k.block_dim) << k.name;
          for (uint32_t c : k.core_ids) EXPECT_LT(c, pool) << k.name;
          EXPECT_GE(k.cycles, 0);
          EXPECT_NEAR(k.start_us, clock, 1e-6 * std::max(1.0, clock));  // one stream, in order
          clock = k.start_us + k.time_us;
          expect_fits(k);
          if (k.phase == "forward") nodes_with_kernels.insert(k.node);
        }
        // Every op node has a forward kernel (a no-op on the host for shape-only ops).
        for (uint32_t i = 0; i < graph.nodes.size(); ++i) {
          if (graph.nodes[i].kind == NodeKind::Op) {
            EXPECT_TRUE(nodes_with_kernels.contains(i)) << graph.nodes[i].id;
          }
        }
        EXPECT_NEAR(hw.estimate.latency_ms, clock / 1e3, 1e-9 * clock);
        if (mode == "train") {
          EXPECT_GT(hw.estimate.backward_ms, 0);
          EXPECT_GT(hw.estimate.optimizer_ms, 0);
        }
      }
    }
  }
}

TEST(HardwareCorpus, TrainingCostsMoreThanInferenceAndScalesWithBatch) {
  const Model resnet{
      (fs::path(CELLSCOPE_CORPUS_DIR) / "models/resnet50.py").string(), "resnet50()", {}};
  double prev = 0;
  for (const std::string batch : {"1", "8", "32"}) {
    const CellReport rep = analyse(resnet, {batch + ",3,224,224"});
    OptimizeOptions oo;
    oo.target = "ascend910";
    const auto graph = optimize(rep, oo);
    HardwareOptions ho;
    ho.target = "ascend910";
    const auto infer = estimate_hardware(rep, graph, ho);
    ho.mode = "train";
    const auto train = estimate_hardware(rep, graph, ho);
    EXPECT_GT(train.estimate.latency_ms, 2 * infer.estimate.latency_ms) << batch;
    EXPECT_GT(infer.estimate.latency_ms, prev) << batch;
    EXPECT_EQ(infer.estimate.batch, std::stoi(batch));
    prev = infer.estimate.latency_ms;
    // The first conv reads the graph input: no input gradient.
    int dgrad = 0, wgrad = 0;
    for (const auto& k : train.kernels) {
      dgrad += k.phase == "backward-dgrad";
      wgrad += k.phase == "backward-wgrad";
    }
    EXPECT_EQ(wgrad, dgrad + 1);
  }
}

// --- training: the backward graph autodiff builds ----------------------------------------------

// Networks whose output is their loss (a scalar): the hardware model differentiates them as they
// are. LeNet-5, and a stem + ResNet basic block (conv-BN-ReLU-conv-BN, residual Add, ReLU) + head.
const char* const kTrainNets = R"(from mindspore import nn, ops


class LeNet5(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, pad_mode="valid")
        self.conv2 = nn.Conv2d(6, 16, 5, pad_mode="valid")
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Dense(16 * 5 * 5, 120)
        self.fc2 = nn.Dense(120, 84)
        self.fc3 = nn.Dense(84, 10)

    def construct(self, x):
        x = self.pool(self.relu(self.conv1(x)))
        x = self.pool(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        return self.fc3(x).mean()


class Block(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(16, 16, 3, pad_mode="pad", padding=1, has_bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 16, 3, pad_mode="pad", padding=1, has_bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU()

    def construct(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + x)


class ResNetBlock(nn.Cell):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, pad_mode="pad", padding=1, has_bias=False)
        self.block = Block()
        self.fc = nn.Dense(16, 10)

    def construct(self, x):
        y = self.block(self.stem(x))
        return self.fc(ops.mean(y, (2, 3))).mean()
)";

std::string base_name(const std::string& kernel) { return kernel.substr(0, kernel.find('(')); }

const std::string* note_with(const ModelEstimate& e, std::string_view what) {
  for (const auto& n : e.notes) {
    if (n.find(what) != std::string::npos) return &n;
  }
  return nullptr;
}

TEST(HardwareTraining, BackwardKernelsAreTheNodesAutodiffEmits) {
  cellscope::testing::TempDir dir;
  const std::string file = dir.write("nets.py", kTrainNets);
  struct Case {
    std::string entry, input;
    size_t convs;
  };
  for (const Case& c : {Case{"LeNet5()", "2,1,32,32", 2}, Case{"ResNetBlock()", "2,3,16,16", 3}}) {
    const CellReport rep = analyse({file, c.entry, {}}, {c.input});
    ASSERT_TRUE(rep.compiled) << c.entry;
    const autodiff::GradResult grad = autodiff::build_backward(rep);
    ASSERT_TRUE(grad.ok()) << grad.error;
    const autodiff::GradGraph& gg = *grad.grad;
    const Graph& g = gg.report.graph;
    // What the graph reads of each backward node's outputs.
    std::set<std::pair<uint32_t, uint32_t>> used;
    for (const Node& n : g.nodes) {
      for (const ValueRef& v : n.inputs) used.insert({v.node, v.output});
    }
    for (const ValueRef& v : g.outputs) used.insert({v.node, v.output});
    // One kernel per backward node, one per gradient read for the Cube operators.
    std::multiset<std::string> expected;
    for (size_t j = gg.forward_count; j < g.nodes.size(); ++j) {
      const Node& n = g.nodes[j];
      const OpDef* def = find_op(n.op);
      ASSERT_NE(def, nullptr) << n.op;
      if (def->unit != OpUnit::Cube) {
        expected.insert(std::string(n.op));
        continue;
      }
      for (uint32_t k = 0; k < n.outputs.size(); ++k) {
        if (used.contains({static_cast<uint32_t>(j), k})) expected.insert(std::string(n.op));
      }
    }
    for (const std::string target : {"ascend910b", "cpu"}) {
      SCOPED_TRACE(c.entry + " on " + target);
      OptimizeOptions oo;
      oo.target = target;
      const auto graph = optimize(rep, oo);
      HardwareOptions ho;
      ho.target = target;
      ho.mode = "train";
      const auto hw = estimate_hardware(rep, graph, ho);
      std::multiset<std::string> costed;
      size_t dgrad = 0, wgrad = 0;
      for (const auto& k : hw.kernels) {
        if (!k.phase.starts_with("backward")) continue;
        costed.insert(base_name(k.name));
        if (k.name == "Conv2DGrad(dX)") ++dgrad;
        if (k.name == "Conv2DGrad(dW)") ++wgrad;
        // Attributed to the optimized node of its forward origin.
        ASSERT_LT(k.node, graph.nodes.size()) << k.name;
        if (base_name(k.name) == "Conv2DGrad") {
          EXPECT_NE(graph.nodes[k.node].op.find("Conv2D"), std::string::npos)
              << graph.nodes[k.node].op;
          EXPECT_EQ(k.unit, target == "cpu" ? Unit::Cpu : Unit::Cube);
          EXPECT_GT(k.macs, 0);
        }
      }
      EXPECT_EQ(costed, expected);
      // The first convolution reads the graph input: its input gradient is not computed.
      EXPECT_EQ(wgrad, c.convs);
      EXPECT_EQ(dgrad, c.convs - 1);
      EXPECT_GT(hw.estimate.backward_ms, 0);
      const std::string* note = note_with(hw.estimate, "train: the loss is");
      ASSERT_NE(note, nullptr);
      EXPECT_NE(note->find("scalar output"), std::string::npos) << *note;
      EXPECT_NE(note->find("the " + std::to_string(gg.origin.size()) + " nodes"), std::string::npos)
          << *note;
    }
  }
}

TEST(HardwareTraining, AStandInLossForANetworkWithoutOne) {
  cellscope::testing::TempDir dir;
  const std::string file =
      dir.write("net.py",
                "from mindspore import nn\n\nclass Net(nn.Cell):\n    def __init__(self):\n"
                "        super().__init__()\n        self.fc = nn.Dense(16, 4)\n\n"
                "    def construct(self, x):\n        return self.fc(x)\n");
  const CellReport rep = analyse({file, "Net()", {}}, {"8,16"});
  ASSERT_TRUE(rep.compiled);
  const auto graph = optimize(rep, {});
  HardwareOptions ho;
  ho.mode = "train";
  const auto hw = estimate_hardware(rep, graph, ho);
  const std::string* note = note_with(hw.estimate, "train: the loss is");
  ASSERT_NE(note, nullptr);
  EXPECT_NE(note->find("stand-in, ReduceMean of output"), std::string::npos) << *note;
  // The stand-in's forward kernel and its gradient belong to no optimized node.
  bool mean = false, dense_dw = false;
  for (const auto& k : hw.kernels) {
    if (k.name == "ReduceMean") {
      mean = true;
      EXPECT_EQ(k.phase, "forward");
      EXPECT_GE(k.node, graph.nodes.size());
    }
    dense_dw = dense_dw || (k.name == "DenseGrad(dW)" && k.phase == "backward-wgrad");
    // The input gradient of a layer reading the graph input is not computed.
    EXPECT_NE(k.name, "DenseGrad(dX)");
  }
  EXPECT_TRUE(mean);
  EXPECT_TRUE(dense_dw);
}

TEST(HardwareTraining, ANodeItCannotDifferentiateLeavesTheRestCosted) {
  cellscope::testing::TempDir dir;
  const std::string file =
      dir.write("norm.py",
                "from mindspore import nn, ops\n\nclass Net(nn.Cell):\n    def __init__(self):\n"
                "        super().__init__()\n        self.fc1 = nn.Dense(16, 16)\n"
                "        self.fc2 = nn.Dense(16, 4)\n\n"
                "    def construct(self, x):\n        h = self.fc1(x)\n"
                "        return self.fc2(h * ops.norm(h, 'nuc'))\n");
  const CellReport rep = analyse({file, "Net()", {}}, {"8,16"});
  ASSERT_TRUE(rep.compiled);
  OptimizeOptions oo;
  oo.target = "ascend910b";
  const auto graph = optimize(rep, oo);
  HardwareOptions ho;
  ho.target = "ascend910b";
  ho.mode = "train";
  const auto hw = estimate_hardware(rep, graph, ho);
  EXPECT_TRUE(hw.diagnostics.empty());  // unknown is not an error
  EXPECT_GT(hw.estimate.latency_ms, 0);
  // Every operator with a kernel has a gradient rule; Norm's refuses the nuclear norm.
  const std::string* note = note_with(hw.estimate, "cannot differentiate");
  ASSERT_NE(note, nullptr);
  EXPECT_NE(note->find("nuclear norm"), std::string::npos) << *note;
  EXPECT_NE(note->find("Norm"), std::string::npos) << *note;
  EXPECT_NE(note->find("norm.py:11"), std::string::npos) << *note;
  EXPECT_NE(note->find("the 2 trainable Parameters before it"), std::string::npos) << *note;
  // fc2 (after the product with the norm) is differentiated: its weight gradient, not its
  // input gradient (nothing before it is); fc1 (whose output meets the norm) is not.
  size_t dw = 0, dx = 0;
  for (const auto& k : hw.kernels) {
    dw += k.name == "DenseGrad(dW)";
    dx += k.name == "DenseGrad(dX)";
  }
  EXPECT_EQ(dw, 1u);
  EXPECT_EQ(dx, 0u);
  EXPECT_GT(hw.estimate.backward_ms, 0);
  EXPECT_GT(hw.estimate.optimizer_ms, 0);
}

TEST(HardwareTraining, TheTrainingPlansLossWhenItIsThisNetwork) {
  cellscope::testing::TempDir dir;
  const std::string file = dir.write("train.py", R"(import mindspore as ms
import mindspore.dataset as ds
import mindspore.dataset.transforms as transforms
import mindspore.dataset.vision as vision
from mindspore import nn
from mindspore.train import LossMonitor, Model


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(28 * 28, 10)

    def construct(self, x):
        return self.fc(self.flatten(x))


data = ds.MnistDataset("./MNIST_Data", usage="train", shuffle=False)
data = data.map(operations=[vision.Rescale(1.0 / 255.0, 0.0), vision.HWC2CHW()],
                input_columns="image")
data = data.map(operations=transforms.TypeCast(ms.int32), input_columns="label")
data = data.batch(8, drop_remainder=True)
net = Net()
loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
opt = nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9)
Model(net, loss, opt).train(2, data, callbacks=[LossMonitor()])
)");
  for (const std::string input : {"8,1,28,28", "4,1,28,28"}) {
    SCOPED_TRACE(input);
    AnalysisOptions options;
    options.cell = "Net";
    std::string why;
    options.inputs.push_back(*parse_input_spec(input, &why));
    DiskSourceProvider disk;
    const AnalysisResult result = analyze_file(file, options, disk);
    ASSERT_EQ(result.cells.size(), 1u);
    ASSERT_EQ(result.training.size(), 1u);
    ASSERT_TRUE(result.training[0].loss_graph.compiled);
    const CellReport& rep = result.cells[0];
    const auto graph = optimize(rep, {});
    HardwareOptions ho;
    ho.mode = "train";
    ho.training = &result.training[0];
    const auto hw = estimate_hardware(rep, graph, ho);
    const std::string* note = note_with(hw.estimate, "train: the loss is");
    ASSERT_NE(note, nullptr);
    size_t loss_fwd = 0, loss_bwd = 0;
    for (const auto& k : hw.kernels) {
      loss_fwd += k.name == "SoftmaxCrossEntropyWithLogits" && k.phase == "forward";
      loss_bwd += k.name.starts_with("SoftmaxCrossEntropyWithLogits") && k.phase == "backward";
    }
    if (input == "8,1,28,28") {  // the dataset's batch: the plan's loss is this network's
      EXPECT_NE(note->find("training plan's nn.SoftmaxCrossEntropyWithLogits"), std::string::npos)
          << *note;
      EXPECT_EQ(loss_fwd, 1u);
      EXPECT_EQ(loss_bwd, 1u);
    } else {
      EXPECT_NE(note->find("stand-in"), std::string::npos) << *note;
      EXPECT_NE(note_with(hw.estimate, "not this network at the analysed shapes"), nullptr);
      EXPECT_EQ(loss_fwd, 0u);
    }
  }
}

// --- layers that are one node but many products ---------------------------------------------

const char* const kLayerNets = R"(from mindspore import nn


class Rnn(nn.Cell):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(64, 128, num_layers=2, bidirectional=True)

    def construct(self, x):
        y, _ = self.lstm(x)
        return y.mean()


class Attn(nn.Cell):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(256, 8)

    def construct(self, q, kv):
        y, _ = self.mha(q, kv, kv)
        return y.mean()
)";

const KernelEstimate* kernel_named(const HardwareGraph& g, std::string_view name) {
  for (const auto& k : g.kernels) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

HardwareGraph estimate_for(const CellReport& rep, const std::string& mode) {
  OptimizeOptions oo;
  oo.target = "ascend910";
  HardwareOptions ho;
  ho.target = "ascend910";
  ho.mode = mode;
  return estimate_hardware(rep, optimize(rep, oo), ho);
}

TEST(HardwareLayers, RecurrentLayersAreTheirProductsStepByStep) {
  EXPECT_EQ(category_name(*op_category("LSTM")), "recurrent");
  cellscope::testing::TempDir dir;
  const std::string file = dir.write("layers.py", kLayerNets);
  const HardwareTarget& t = hardware_target("ascend910");
  double prev_cycles = 0;
  for (const int64_t steps : {32, 64}) {
    SCOPED_TRACE(steps);
    const int64_t n = 4, f = 64, h = 128, gates = 4;
    const CellReport rep = analyse({file, "Rnn()", {}}, {std::to_string(steps) + ",4,64"});
    ASSERT_TRUE(rep.compiled);
    const HardwareGraph infer = estimate_for(rep, "infer");
    const KernelEstimate* k = kernel_named(infer, "LSTM");
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->unit, Unit::Cube);
    // Per layer and direction: the input projection and the recurrent products (layer 1 reads
    // both directions of layer 0: 2 h features).
    const double per_step_h = static_cast<double>(n * h * gates * h);
    const double expected = 2.0 * static_cast<double>(steps) *
                            (static_cast<double>(n * f * gates * h) + per_step_h +
                             static_cast<double>(n * 2 * h * gates * h) + per_step_h);
    EXPECT_DOUBLE_EQ(k->macs, expected);
    // The recurrence is T dependent products: at least T times one step's product, per layer
    // and direction.
    const double step = model_cube_kernel(t, {.m = n, .k = h, .n = gates * h}).cycles;
    EXPECT_GE(k->cycles, 4.0 * static_cast<double>(steps) * step);
    EXPECT_GT(k->cycles, 1.8 * prev_cycles);
    prev_cycles = k->cycles;
    // Its parts are named in the schedule.
    ASSERT_TRUE(k->detail);
    bool recurrence = false;
    for (const auto& s : k->detail->schedule) recurrence |= s.op.starts_with("l1r.h_proj x");
    EXPECT_TRUE(recurrence);
    // Training: RecurrentGrad's products are twice the forward's (dh, dx, dW_ih, dW_hh).
    const HardwareGraph train = estimate_for(rep, "train");
    const KernelEstimate* fwd = kernel_named(train, "LSTM");
    const KernelEstimate* bwd = kernel_named(train, "RecurrentGrad");
    ASSERT_NE(fwd, nullptr);
    ASSERT_NE(bwd, nullptr);
    EXPECT_DOUBLE_EQ(bwd->macs, 2 * fwd->macs);
    EXPECT_GT(bwd->cycles, fwd->cycles);
  }
}

TEST(HardwareLayers, MultiheadAttentionIsItsProjectionsAndItsHeads) {
  cellscope::testing::TempDir dir;
  const std::string file = dir.write("layers.py", kLayerNets);
  const double l = 64, s = 48, n = 2, e = 256, heads = 8;
  const CellReport rep = analyse({file, "Attn()", {}}, {"64,2,256", "48,2,256"});
  ASSERT_TRUE(rep.compiled);
  const HardwareGraph infer = estimate_for(rep, "infer");
  const KernelEstimate* k = kernel_named(infer, "MultiheadAttention");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->unit, Unit::Cube);
  const double projections = 2 * (n * l * e * e) + 2 * (n * s * e * e);
  const double attention = 2 * (n * heads * l * s * (e / heads));
  EXPECT_DOUBLE_EQ(k->macs, projections + attention);
  const HardwareGraph train = estimate_for(rep, "train");
  const KernelEstimate* bwd = kernel_named(train, "MultiheadAttentionGrad");
  ASSERT_NE(bwd, nullptr);
  EXPECT_DOUBLE_EQ(bwd->macs, 2 * (projections + attention));
}

TEST(HardwareCorpus, UnknownModeOrOptimizerIsRejected) {
  CellReport rep;
  rep.compiled = true;
  OptimizedGraph graph;
  HardwareOptions ho;
  ho.mode = "eval";
  EXPECT_THROW(estimate_hardware(rep, graph, ho), std::invalid_argument);
  ho.mode = "train";
  ho.optimizer = "lion";
  EXPECT_THROW(estimate_hardware(rep, graph, ho), std::invalid_argument);
  ho.optimizer = "adam";
  ho.target = "gpu";
  EXPECT_THROW(estimate_hardware(rep, graph, ho), TargetError);
}

TEST(HardwarePrecision, AmpCastsAreVectorKernelsAndLayerNormRunsInFloat32) {
  const auto models = corpus_models();
  const auto bert = std::find_if(models.begin(), models.end(), [](const Model& m) {
    return m.file.find("bert_base") != std::string::npos;
  });
  ASSERT_NE(bert, models.end());
  const CellReport rep = analyse(*bert, {"8,128:int32"});
  OptimizeOptions oo;
  oo.target = "ascend910";
  const auto mixed = optimize(rep, oo);
  EXPECT_EQ(mixed.precision, "mixed");
  HardwareOptions ho;
  ho.target = "ascend910";
  const auto hw = estimate_hardware(rep, mixed, ho);
  size_t casts = 0;
  for (const auto& k : hw.kernels) {
    if (k.phase != "forward" || k.node >= mixed.nodes.size()) continue;
    const OptNode& n = mixed.nodes[k.node];
    if (n.op == "Cast" && n.pass == "amp") {
      ++casts;
      EXPECT_EQ(k.unit, Unit::Vector);
      EXPECT_GT(k.cycles, 0);
      // Reads the source dtype, writes the destination dtype.
      const double e = k.gm_write_bytes / dtype_size(n.outputs[0].dtype);
      EXPECT_NEAR(k.gm_read_bytes, e * dtype_size(mixed.nodes[n.inputs[0].node].outputs[0].dtype),
                  1e-6 * k.gm_read_bytes);
    }
    if (n.op == "AddLayerNorm") {
      // float32 in and out (4 bytes per element), per amp O2's AMP_BLACK_LIST.
      EXPECT_EQ(n.outputs[0].dtype, DType::Float32);
      const auto& detail = *k.detail;
      EXPECT_NE(detail.tiling[0].tile.find("fp32"), std::string::npos) << detail.tiling[0].tile;
    }
  }
  EXPECT_GE(casts, 25u * 2);  // at least: into and out of every LayerNorm
  // The same graph estimated at fp32: every float tensor is float32, the amp Casts cost nothing.
  ho.mixed_precision = false;
  const auto fp32_on_mixed = estimate_hardware(rep, mixed, ho);
  for (const auto& k : fp32_on_mixed.kernels) {
    if (k.node >= mixed.nodes.size()) continue;
    const OptNode& n = mixed.nodes[k.node];
    if (n.op == "Cast" && n.pass == "amp") {
      EXPECT_EQ(k.unit, Unit::Host);
    }
  }
  // Optimized at fp32: no Casts at all, and slower than mixed precision.
  oo.precision = "fp32";
  const auto fp32 = optimize(rep, oo);
  EXPECT_EQ(fp32.precision, "fp32");
  for (const auto& n : fp32.nodes) {
    EXPECT_FALSE(n.op == "Cast" && n.pass == "amp");
  }
  const auto slow = estimate_hardware(rep, fp32, ho);
  EXPECT_GT(slow.estimate.latency_ms, hw.estimate.latency_ms);
  EXPECT_NEAR(slow.estimate.latency_ms, fp32_on_mixed.estimate.latency_ms,
              0.05 * slow.estimate.latency_ms);
}

TEST(HardwareOptimizer, LambIsThreeFusedKernelsMovingMoreThanAdam) {
  // nn.Lamb as MindSpore's Ascend backend fuses it: moments + update direction, the two norms,
  // the trust-ratio update (which writes w and, under mixed precision, its fp16 copy).
  const auto lamb = optimizer_kernels("lamb", 2);
  ASSERT_EQ(lamb.size(), 3u);
  EXPECT_EQ(lamb[0].name, "LambNextMVWithDecay");
  EXPECT_EQ(lamb[1].name, "SquareSumAll");
  EXPECT_EQ(lamb[2].name, "LambUpdateWithLR");
  EXPECT_EQ(lamb[0].read_bytes, 16);   // g, m, v, w
  EXPECT_EQ(lamb[0].write_bytes, 12);  // m, v, r
  EXPECT_EQ(lamb[1].read_bytes, 8);    // w, r
  EXPECT_EQ(lamb[2].write_bytes, 6);   // w fp32 + fp16 copy
  double lamb_bytes = 0;
  for (const auto& k : lamb) lamb_bytes += k.read_bytes + k.write_bytes;
  const auto adam = optimizer_kernels("adam", 2);
  ASSERT_EQ(adam.size(), 1u);
  EXPECT_EQ(adam[0].read_bytes + adam[0].write_bytes, 30);
  EXPECT_EQ(lamb_bytes, 50);  // 16 + 12, 8 + 0, 8 + 6
  EXPECT_EQ(optimizer_kernels("sgd", 0)[0].write_bytes, 4);
  EXPECT_THROW(optimizer_kernels("lion", 0), std::invalid_argument);

  // In a whole training estimate: three kernels per trainable Parameter, slower than Adam.
  const Model resnet{
      (fs::path(CELLSCOPE_CORPUS_DIR) / "models/resnet50.py").string(), "resnet50()", {}};
  const CellReport rep = analyse(resnet, {"8,3,224,224"});
  OptimizeOptions oo;
  oo.target = "ascend910";
  const auto graph = optimize(rep, oo);
  HardwareOptions ho;
  ho.target = "ascend910";
  ho.mode = "train";
  ho.optimizer = "adam";
  const auto with_adam = estimate_hardware(rep, graph, ho);
  ho.optimizer = "lamb";
  const auto with_lamb = estimate_hardware(rep, graph, ho);
  size_t adam_kernels = 0, lamb_kernels = 0;
  for (const auto& k : with_adam.kernels) adam_kernels += k.phase == "optimizer";
  for (const auto& k : with_lamb.kernels) lamb_kernels += k.phase == "optimizer";
  EXPECT_EQ(lamb_kernels, 3 * adam_kernels);
  EXPECT_GT(with_lamb.estimate.optimizer_ms, with_adam.estimate.optimizer_ms);
  EXPECT_EQ(with_lamb.estimate.forward_ms, with_adam.estimate.forward_ms);
}

TEST(HardwareDiagnostics, CustomOpsATargetCannotRunAreLocated) {
  const fs::path dir = fs::temp_directory_path() / "cellscope_hw_custom";
  fs::create_directories(dir);
  const fs::path file = dir / "custom.py";
  std::ofstream(file)
      << "from mindspore import nn, ops\n"
         "\n"
         "class Net(nn.Cell):\n"
         "    def __init__(self, kind):\n"
         "        super().__init__()\n"
         "        self.fc = nn.Dense(16, 16)\n"
         "        self.k = ops.Custom(lambda x: x, lambda x: x, lambda x: x, kind)\n"
         "\n"
         "    def construct(self, x):\n"
         "        return self.k(self.fc(x))\n";
  struct Case {
    std::string func_type, target;
    bool diagnosed;
  };
  for (const Case& c :
       {Case{"pyfunc", "ascend910b", true}, Case{"julia", "ascend310p", true},
        Case{"pyfunc", "cpu", false}, Case{"tbe", "cpu", true}, Case{"aicpu", "cpu", true},
        Case{"tbe", "ascend910", false}, Case{"aot", "ascend310", false}}) {
    SCOPED_TRACE(c.func_type + " on " + c.target);
    const CellReport rep = analyse({file.string(), "Net(\"" + c.func_type + "\")", {}}, {"4,16"});
    ASSERT_TRUE(rep.compiled);
    OptimizeOptions oo;
    oo.target = c.target;
    const auto graph = optimize(rep, oo);
    HardwareOptions ho;
    ho.target = c.target;
    const auto hw = estimate_hardware(rep, graph, ho);
    if (!c.diagnosed) {
      EXPECT_TRUE(hw.diagnostics.empty());
      continue;
    }
    ASSERT_EQ(hw.diagnostics.size(), 1u);
    const auto& d = hw.diagnostics[0];
    EXPECT_EQ(d.code, "unsupported-on-target");
    EXPECT_EQ(d.severity, Severity::Error);
    EXPECT_EQ(d.range.start.line, 9u);  // `self.k(...)` in construct
    EXPECT_NE(d.message.find(c.func_type), std::string::npos);
    EXPECT_NE(d.message.find(c.target), std::string::npos);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace graphcore
