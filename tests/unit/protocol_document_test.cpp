// protocol/: graphcore results -> graph document, UTF-16 positions, JSON form; and the CLI's
// renderers and file helpers (server/).
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "files.h"
#include "protocol/document.h"
#include "render.h"

namespace cp = cellscope::protocol;
namespace cs = cellscope::server;
namespace fs = std::filesystem;
using graphcore::Dim;
using graphcore::DType;
using graphcore::Shape;
using graphcore::TensorType;

namespace {

cp::PositionMapper mapper_for(std::map<std::string, std::string> files) {
  return cp::PositionMapper(
      [files = std::move(files)](const std::string& f) -> std::optional<std::string> {
        auto it = files.find(f);
        if (it == files.end()) return std::nullopt;
        return it->second;
      });
}

graphcore::AnalysisResult sample_result() {
  graphcore::AnalysisResult r;
  r.file = "net.py";
  r.files = {"net.py"};
  graphcore::CellReport c;
  c.name = "Net";
  c.class_name = "Net";
  c.file = "net.py";
  c.range = {{1, 0}, {3, 0}};
  c.trainable_params = 61706;
  c.total_params = 61716;
  c.flops = 1.5e6;
  c.compiled = true;
  const TensorType in{Shape::of({1, 3, 224, 224}), DType::Float32};
  const TensorType out{Shape({Dim::symbol("N"), Dim::known(64), Dim::unknown()}), DType::Float16};
  c.inputs.push_back({"x", in});
  c.outputs.push_back({"", out});
  graphcore::Node x;
  x.id = "x";
  x.kind = graphcore::NodeKind::Input;
  x.outputs = {in};
  graphcore::Node conv;
  conv.id = "conv1";
  conv.op = "Conv2D";
  conv.api = "nn.Conv2d";
  conv.scope = "conv1";
  conv.inputs = {{0, 0}};
  conv.outputs = {out};
  conv.attrs = {{"kernel_size", std::vector<int64_t>{3, 3}},
                {"pad_mode", std::string("same")},
                {"has_bias", false},
                {"alpha", 0.5},
                {"group", int64_t{1}},
                {"nothing", std::monostate{}}};
  conv.params = {"conv1.weight"};
  conv.file = "net.py";
  conv.range = {{2, 4}, {2, 10}};
  c.graph.nodes = {x, conv};
  c.graph.outputs = {{1, 0}};
  c.params.push_back({"conv1.weight", Shape::of({64, 3, 3, 3}), DType::Float32, true});
  c.params.push_back({"bn.moving_mean", Shape::of({64}), DType::Float32, false});
  r.cells.push_back(c);

  graphcore::Diagnostic d;
  d.file = "net.py";
  d.range = {{2, 15}, {2, 16}};  // the quote after two 3-byte characters
  d.severity = graphcore::Severity::Error;
  d.code = "shape-mismatch";
  d.message = "Dense expects 1600 features, receives 9216";
  d.related.push_back({"net.py", {{0, 0}, {0, 3}}, "defined here"});
  r.diagnostics.push_back(d);
  return r;
}

const char* const kNetText = "abc\nclass Net:\n    x = '\xe6\x97\xa5\xe6\x9c\xac' + y\n";

}  // namespace

TEST(ProtocolDocument, DimsAreNumbersSymbolsOrNull) {
  EXPECT_EQ(cp::dim_value(Dim::known(224)).number_value(), 224);
  EXPECT_EQ(cp::dim_value(Dim::symbol("N")).string_value(), "N");
  EXPECT_EQ(cp::dim_value(Dim::unknown()).kind_case(), google::protobuf::Value::kNullValue);

  auto t = cp::tensor("x", TensorType{Shape::unranked(), DType::Int32});
  EXPECT_TRUE(t.has_unranked());
  EXPECT_TRUE(t.unranked());
  EXPECT_EQ(t.shape_size(), 0);
  EXPECT_EQ(t.dtype(), "int32");
  EXPECT_FALSE(cp::tensor("y", TensorType{Shape::of({2}), DType::Float32}).has_unranked());
}

TEST(ProtocolDocument, PositionsAreUtf16) {
  auto positions = mapper_for({{"net.py", kNetText}});
  // "    x = '" is 9 bytes, then two 3-byte characters (one UTF-16 unit each), then "' + ".
  auto p = positions.position("net.py", {2, 19});
  EXPECT_EQ(p.line(), 2u);
  EXPECT_EQ(p.character(), 15u);
  // Unknown file: byte columns are kept.
  EXPECT_EQ(positions.position("other.py", {2, 19}).character(), 19u);
  EXPECT_EQ(positions.line_text("net.py", 1), "class Net:");

  auto emoji = mapper_for({{"e.py", "s = '\xf0\x9f\x98\x80' + t\n"}});
  EXPECT_EQ(emoji.position("e.py", {0, 12}).character(), 10u);  // the emoji is 2 UTF-16 units
}

TEST(ProtocolDocument, GraphDocumentJson) {
  auto positions = mapper_for({{"net.py", kNetText}});
  cp::DocumentInfo info;
  info.target = "ascend910b";
  const auto doc = cp::graph_document(sample_result(), positions, info);
  const auto j = nlohmann::json::parse(cp::to_json(doc));

  EXPECT_EQ(j["target"], "ascend910b");
  EXPECT_EQ(j["mindsporeVersion"], graphcore::kDefaultMindSporeVersion.str());
  ASSERT_EQ(j["cells"].size(), 1u);
  const auto& cell = j["cells"][0];
  EXPECT_EQ(cell["name"], "Net");
  ASSERT_TRUE(cell["params"].is_number());
  EXPECT_EQ(cell["params"].get<int64_t>(), 61706);
  EXPECT_EQ(cell["totalParams"].get<int64_t>(), 61716);
  EXPECT_EQ(cell["inputs"][0]["shape"], nlohmann::json::parse("[1, 3, 224, 224]"));
  EXPECT_EQ(cell["outputs"][0]["shape"], nlohmann::json::parse(R"(["N", 64, null])"));
  EXPECT_EQ(cell["outputs"][0]["dtype"], "float16");
  EXPECT_EQ(cell["parameters"][1]["trainable"], false);
  EXPECT_EQ(cell["parameters"][0]["size"].get<int64_t>(), 64 * 27);
  EXPECT_EQ(cell["results"][0]["node"], "conv1");

  const auto& conv = cell["nodes"][1];
  EXPECT_EQ(conv["kind"], "op");
  EXPECT_EQ(conv["inputs"][0]["node"], "x");
  EXPECT_EQ(conv["inputs"][0]["output"], 0);
  EXPECT_EQ(conv["attrs"]["kernel_size"], nlohmann::json::parse("[3, 3]"));
  EXPECT_EQ(conv["attrs"]["pad_mode"], "same");
  EXPECT_EQ(conv["attrs"]["has_bias"], false);
  EXPECT_TRUE(conv["attrs"]["nothing"].is_null());
  EXPECT_EQ(cell["nodes"][0]["kind"], "input");

  ASSERT_EQ(j["diagnostics"].size(), 1u);
  const auto& d = j["diagnostics"][0];
  EXPECT_EQ(d["severity"], "error");
  EXPECT_EQ(d["code"], "shape-mismatch");
  EXPECT_EQ(d["range"]["start"]["line"], 2);
  EXPECT_EQ(d["range"]["start"]["character"], 11);
  EXPECT_EQ(d["related"][0]["range"]["start"]["line"], 0);  // zeros are printed
  EXPECT_EQ(d["related"][0]["range"]["start"]["character"], 0);
}

TEST(ProtocolDocument, JsonAndBinaryRoundTrip) {
  auto positions = mapper_for({});
  const auto doc = cp::graph_document(sample_result(), positions, {});
  for (bool pretty : {true, false}) {
    cp::GraphDocument back;
    std::string error;
    ASSERT_TRUE(cp::from_json(cp::to_json(doc, {.pretty = pretty}), &back, &error)) << error;
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(back, doc)) << pretty;
  }
  cp::GraphDocument back;
  ASSERT_TRUE(cp::from_binary(cp::to_binary(doc), &back));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(back, doc));
  EXPECT_FALSE(cp::from_json("{not json", &back));
}

// A node's attrs are a protobuf map, whose iteration order is unspecified (it depends on the
// insertion order and the table's state): the JSON text of equal documents is the same, keys
// sorted.
TEST(ProtocolDocument, MapFieldsAreWrittenInKeyOrder) {
  std::vector<std::string> keys;
  for (int i = 0; i < 40; ++i) keys.push_back("k" + std::to_string((i * 17) % 40));
  cp::Node forward;
  cp::Node backward;
  for (const std::string& k : keys) (*forward.mutable_attrs())[k].set_number_value(1);
  for (auto it = keys.rbegin(); it != keys.rend(); ++it)
    (*backward.mutable_attrs())[*it].set_number_value(1);
  for (bool pretty : {true, false}) {
    const std::string a = cp::to_json(forward, {.pretty = pretty});
    EXPECT_EQ(a, cp::to_json(backward, {.pretty = pretty}));
    const auto parsed = nlohmann::ordered_json::parse(a);
    std::vector<std::string> written;
    for (const auto& [k, v] : parsed["attrs"].items()) written.push_back(k);
    EXPECT_TRUE(std::is_sorted(written.begin(), written.end())) << a;
    EXPECT_EQ(written.size(), 40U);
  }
}

TEST(CliRender, TextDiagnosticsAndSummary) {
  auto positions = mapper_for({{"net.py", kNetText}});
  const auto doc = cp::graph_document(sample_result(), positions, {});
  std::ostringstream out;
  cs::render_diagnostic_text(out, doc.diagnostics(0), &positions);
  const std::string text = out.str();
  EXPECT_EQ(text.rfind("net.py:3:12: error: Dense expects 1600 features, receives 9216 "
                       "[shape-mismatch]\n",
                       0),
            0u)
      << text;
  EXPECT_NE(text.find("net.py:1:1: note: defined here"), std::string::npos) << text;
  EXPECT_NE(text.find("  3 |     x = '"), std::string::npos) << text;

  EXPECT_EQ(cs::summary_line({}, 3), "no problems in 3 files");
  cs::Counts counts;
  counts.errors = 1;
  counts.warnings = 2;
  EXPECT_EQ(cs::summary_line(counts, 1), "1 error, 2 warnings in 1 file");
  EXPECT_EQ(cs::shape_string(doc.cells(0).outputs(0).shape()), "(N, 64, ?)");
  EXPECT_EQ(cs::tensor_string(doc.cells(0).inputs(0), true), "(1,3,224,224) f32");
}

TEST(CliRender, SarifStructure) {
  auto positions = mapper_for({{"net.py", kNetText}});
  const auto doc = cp::graph_document(sample_result(), positions, {});
  const std::vector<cp::Diagnostic> diags(doc.diagnostics().begin(), doc.diagnostics().end());
  const auto log = nlohmann::json::parse(cs::render_sarif(diags));
  EXPECT_EQ(log["version"], "2.1.0");
  const auto& run = log["runs"][0];
  EXPECT_EQ(run["tool"]["driver"]["name"], "cellscope");
  EXPECT_EQ(run["tool"]["driver"]["rules"][0]["id"], "shape-mismatch");
  const auto& result = run["results"][0];
  EXPECT_EQ(result["ruleId"], "shape-mismatch");
  EXPECT_EQ(result["level"], "error");
  const auto& loc = result["locations"][0]["physicalLocation"];
  EXPECT_EQ(loc["artifactLocation"]["uri"], "net.py");
  EXPECT_EQ(loc["artifactLocation"]["uriBaseId"], "SRCROOT");
  EXPECT_EQ(loc["region"]["startLine"], 3);
  EXPECT_EQ(loc["region"]["startColumn"], 12);
  EXPECT_EQ(loc["region"]["endColumn"], 13);
  EXPECT_EQ(result["relatedLocations"][0]["message"]["text"], "defined here");
}

TEST(CliRender, DotHasClustersAndLabelledEdges) {
  auto positions = mapper_for({});
  const auto dot = cs::render_graph_dot(cp::graph_document(sample_result(), positions, {}));
  EXPECT_EQ(dot.rfind("digraph", 0), 0u);
  EXPECT_NE(dot.find("subgraph cluster_"), std::string::npos);
  EXPECT_NE(dot.find("-> \"c0_1\" [label=\"(1,3,224,224)\"]"), std::string::npos) << dot;
}

class CliFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("cellscope_files_test_" +
            std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void touch(const std::string& rel) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel) << "x = 1\n";
  }
  fs::path dir_;
};

TEST_F(CliFiles, CollectSkipsHiddenVenvsAndNodeModules) {
  for (const char* f : {"a.py", "pkg/b.py", ".git/c.py", "env/lib/d.py", "node_modules/e.py",
                        "__pycache__/f.py", "readme.md"}) {
    touch(f);
  }
  touch("env/pyvenv.cfg");
  std::vector<std::string> missing;
  const auto files =
      cs::collect_python_files({dir_.string(), (dir_ / "a.py").string(), "nope.py"}, &missing);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].filename(), "a.py");
  EXPECT_EQ(files[1].filename(), "b.py");
  EXPECT_EQ(missing, std::vector<std::string>{"nope.py"});
}

TEST_F(CliFiles, AtomicWriteReplacesAndLeavesNoTemporaries) {
  const auto target = dir_ / "out.json";
  std::ofstream(target) << "old";
  cs::write_file_atomic(target, "new contents\n");
  std::ifstream in(target);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "new contents\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
  EXPECT_THROW(cs::write_file_atomic(dir_ / "missing" / "x.json", "x"), std::system_error);
}
