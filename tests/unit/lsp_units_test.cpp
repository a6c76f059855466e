// Unit tests of the language server's pure pieces: URIs, position encodings, incremental edits,
// formatting, and the project configuration (mindspore_config.json) it shares with the CLI. The
// protocol behaviour is tested against the real binary in tests/lsp/.
#include <gtest/gtest.h>

#include "lsp/convert.h"
#include "lsp/document.h"
#include "lsp/features.h"
#include "project_config.h"

namespace cellscope::lsp {
namespace {

TEST(LspUri, FileUrisRoundTrip) {
  EXPECT_EQ(uri_to_path("file:///home/a/b%20c.py"), "/home/a/b c.py");
  EXPECT_EQ(uri_to_path("file://localhost/x/y.py"), "/x/y.py");
  EXPECT_EQ(uri_to_path("FILE:///x.py"), "/x.py");
  EXPECT_EQ(uri_to_path("file:///x%C3%A9.py"), "/x\xC3\xA9.py");
  EXPECT_EQ(uri_to_path("untitled:Untitled-1"), std::nullopt);
  EXPECT_EQ(uri_to_path("file://otherhost/x.py"), std::nullopt);
  EXPECT_EQ(uri_to_path("file:///bad%2"), std::nullopt);
  EXPECT_EQ(uri_to_path("file:///bad%zz"), std::nullopt);
  EXPECT_EQ(uri_to_path("file:///nul%00"), std::nullopt);
  EXPECT_EQ(path_to_uri("/home/a/b c#1.py"), "file:///home/a/b%20c%231.py");
  for (std::string p : {"/a/b.py", "/with space/ü.py", "/x/%41/y?.py"})
    EXPECT_EQ(uri_to_path(path_to_uri(p)), p);
}

TEST(LspPositions, Utf16AndUtf8Columns) {
  // "é" is 2 bytes / 1 UTF-16 unit; "😀" is 4 bytes / 2 UTF-16 units.
  const std::string text =
      "a\xC3\xA9"
      "b\n\xF0\x9F\x98\x80x = 1\n";
  PositionConverter u16(text, PositionEncoding::kUtf16);
  PositionConverter u8(text, PositionEncoding::kUtf8);
  EXPECT_EQ(u16.position({0, 3}), (Json{{"line", 0}, {"character", 2}}));
  EXPECT_EQ(u8.position({0, 3}), (Json{{"line", 0}, {"character", 3}}));
  EXPECT_EQ(u16.position({1, 4}), (Json{{"line", 1}, {"character", 2}}));
  EXPECT_EQ(u16.from_lsp(Json{{"line", 1}, {"character", 2}}), (graphcore::Position{1, 4}));
  // Out of range: clamped to the line / the text, never past it.
  EXPECT_EQ(u16.from_lsp(Json{{"line", 0}, {"character", 99}}), (graphcore::Position{0, 4}));
  EXPECT_EQ(u16.from_lsp(Json{{"line", 99}, {"character", 0}}), (graphcore::Position{2, 0}));
  // UTF-8 columns inside a multi-byte character snap back to its start.
  EXPECT_EQ(u8.from_lsp(Json{{"line", 0}, {"character", 2}}), (graphcore::Position{0, 1}));
  EXPECT_THROW((void)u16.from_lsp(Json{{"line", -1}, {"character", 0}}), Json::exception);
  EXPECT_THROW((void)u16.from_lsp(Json{{"line", "x"}}), Json::exception);
}

TEST(LspDocument, IncrementalAndFullChanges) {
  std::string t = "x = nn.Dense(1600, 128)\ny = 2\n";
  Json edit{
      {"range",
       {{"start", {{"line", 0}, {"character", 13}}}, {"end", {{"line", 0}, {"character", 17}}}}},
      {"text", "9216"}};
  t = apply_change(t, edit, PositionEncoding::kUtf16);
  EXPECT_EQ(t, "x = nn.Dense(9216, 128)\ny = 2\n");
  // Insertion across lines, then deletion.
  t = apply_change(
      t,
      Json{{"range",
            {{"start", {{"line", 1}, {"character", 0}}}, {"end", {{"line", 1}, {"character", 0}}}}},
           {"text", "z = 3\n"}},
      PositionEncoding::kUtf16);
  EXPECT_EQ(t, "x = nn.Dense(9216, 128)\nz = 3\ny = 2\n");
  t = apply_change(t,
                   Json{{"range",
                         {{"start", {{"line", 0}, {"character", 23}}},
                          {"end", {{"line", 2}, {"character", 0}}}}},
                        {"text", "\n"}},
                   PositionEncoding::kUtf16);
  EXPECT_EQ(t, "x = nn.Dense(9216, 128)\ny = 2\n");
  // A range past the end is clamped; a full change replaces everything.
  t = apply_change(
      t,
      Json{{"range",
            {{"start", {{"line", 9}, {"character", 0}}}, {"end", {{"line", 9}, {"character", 5}}}}},
           {"text", "#"}},
      PositionEncoding::kUtf16);
  EXPECT_EQ(t, "x = nn.Dense(9216, 128)\ny = 2\n#");
  EXPECT_EQ(apply_change(t, Json{{"text", "new"}}, PositionEncoding::kUtf16), "new");
  EXPECT_THROW(apply_change(t, Json{{"range", nullptr}}, PositionEncoding::kUtf16),
               Json::exception);
}

TEST(LspFormat, CountsAndFlops) {
  EXPECT_EQ(format_count(0), "0");
  EXPECT_EQ(format_count(61706), "61,706");
  EXPECT_EQ(format_count(25557032), "25,557,032");
  EXPECT_EQ(format_count(-1234), "-1,234");
  EXPECT_EQ(format_flops(512), "512 FLOPs");
  EXPECT_EQ(format_flops(4.2e8), "420.00 MFLOPs");
  EXPECT_EQ(format_flops(4.1e9), "4.10 GFLOPs");
}

}  // namespace
}  // namespace cellscope::lsp

namespace cellscope::server {
namespace {

TEST(ProjectConfig, ReadsBackendTargetVersionAndInputs) {
  ProjectConfig c =
      parse_project_config("/w/mindspore_config.json",
                           R"({"graph_visualization": {"enable": false, "backend": "Ascend"},
          "mindspore_version": "2.9",
          "inputs": {"LeNet5": ["8,1,32,32"], "*": "1,1,32,32:float16"},
          "cellscope": {"debounceMs": 50}})");
  EXPECT_TRUE(c.diagnostics.empty());
  EXPECT_FALSE(c.visualization_enabled);
  EXPECT_EQ(c.target, "ascend910b");
  ASSERT_TRUE(c.mindspore_version);
  EXPECT_EQ(c.mindspore_version->str(), "2.9.0");
  EXPECT_EQ(c.debounce_ms, 50);
  ASSERT_EQ(c.inputs_for("LeNet5", "/w/lenet.py").size(), 1u);
  EXPECT_EQ(c.inputs_for("LeNet5", "/w/lenet.py")[0].str(), "(8, 1, 32, 32) f32");
  EXPECT_EQ(c.inputs_for("Other", "/w/other.py")[0].str(), "(1, 1, 32, 32) f16");
  // An explicit chip overrides the backend's default one.
  EXPECT_EQ(parse_project_config("/w/c.json", R"({"graph_visualization": {"backend": "ascend"},
                                                  "target": "ascend310p"})")
                .target,
            "ascend310p");
}

// Found by the project_config fuzz harness: a number past a double's range is nlohmann's
// out_of_range, not a parse_error; it escaped and ended the process.
TEST(ProjectConfig, ANumberPastADoublesRangeIsALocatedError) {
  ProjectConfig c =
      parse_project_config("/w/c.json", "{\n  \"cellscope\": {\"debounceMs\": 1e400}}");
  ASSERT_EQ(c.diagnostics.size(), 1u);
  EXPECT_NE(c.diagnostics[0].message.find("not valid JSON"), std::string::npos);
  EXPECT_EQ(c.diagnostics[0].range.start.line, 1u);
  EXPECT_EQ(c.diagnostics[0].range.start.column, 30u);
}

TEST(ProjectConfig, BadValuesAreLocatedAndTheRestApplies) {
  ProjectConfig c = parse_project_config("/w/mindspore_config.json",
                                         "{\n  \"graph_visualization\": {\"backend\": \"tpu\"},\n"
                                         "  \"mindspore_version\": \"2.9.0\"\n}\n");
  ASSERT_EQ(c.diagnostics.size(), 1u);
  EXPECT_EQ(c.diagnostics[0].code, "invalid-config");
  EXPECT_EQ(c.diagnostics[0].file, "/w/mindspore_config.json");
  EXPECT_EQ(c.diagnostics[0].range.start.line, 1u);
  EXPECT_EQ(c.diagnostics[0].range.start.column, 26u);
  EXPECT_FALSE(c.target);
  EXPECT_TRUE(c.mindspore_version);
  ProjectConfig broken = parse_project_config("/w/c.json", "{\n  \"a\": 1,\n}");
  ASSERT_EQ(broken.diagnostics.size(), 1u);
  EXPECT_EQ(broken.diagnostics[0].range.start.line, 2u);
  EXPECT_NE(broken.diagnostics[0].message.find("not valid JSON"), std::string::npos);
  EXPECT_EQ(parse_project_config("/w/c.json", "[1]").diagnostics.size(), 1u);
}

}  // namespace
}  // namespace cellscope::server
