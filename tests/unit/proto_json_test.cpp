// protocol/proto_json: the reflection walk that writes a message's proto3 JSON, checked against
// protobuf's own converter (util::MessageToJsonString) on real documents of every layer and on
// the corner cases of the mapping.
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.h"
#include "graphcore/analysis.h"
#include "pipeline.h"
#include "protocol/document.h"
#include "protocol/proto_json.h"
#include "protocol/view.pb.h"

namespace cp = cellscope::protocol;
namespace cs = cellscope::server;
namespace fs = std::filesystem;

namespace {

std::string wire(const google::protobuf::Message& m) {
  std::string bytes;
  google::protobuf::io::StringOutputStream stream(&bytes);
  {
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    EXPECT_TRUE(m.SerializeToCodedStream(&coded));
  }
  return bytes;
}

// What protobuf's converter writes, parsed.
nlohmann::json reference(const google::protobuf::Message& m, bool defaults) {
  google::protobuf::util::JsonPrintOptions print;
  print.always_print_primitive_fields = defaults;
  std::string out;
  const auto status = google::protobuf::util::MessageToJsonString(m, &out, print);
  EXPECT_TRUE(status.ok()) << status.message();
  return nlohmann::json::parse(out);
}

void expect_same_json(const google::protobuf::Message& m, const std::string& what) {
  for (const bool defaults : {false, true}) {
    const auto expected = reference(m, defaults);
    for (const bool pretty : {false, true}) {
      const auto written =
          nlohmann::json::parse(cp::to_json(m, {.pretty = pretty, .defaults = defaults}));
      if (written != expected) {
        // Name the first difference instead of printing two large documents.
        const auto patch = nlohmann::json::diff(expected, written);
        ADD_FAILURE() << what << " defaults=" << defaults << " pretty=" << pretty << ": "
                      << patch.dump().substr(0, 600);
      }
    }
    // And it reads back as the same message.
    std::unique_ptr<google::protobuf::Message> back(m.New());
    std::string error;
    ASSERT_TRUE(
        cp::from_json(cp::to_json(m, {.pretty = false, .defaults = defaults}), back.get(), &error))
        << what << ": " << error;
    // Compared by their deterministic wire forms (not MessageDifferencer, whose reflection on
    // map fields crashes in the ThreadSanitizer build: see proto_json.cpp's map_entries).
    EXPECT_EQ(wire(*back), wire(m)) << what;
  }
}

cp::GraphDocument corpus_document(const std::string& model, const std::string& layer,
                                  const std::string& target) {
  cs::GraphOptions options;
  options.file = std::string(CELLSCOPE_CORPUS_DIR) + "/models/" + model;
  options.pipeline.layer = layer;
  options.common.target = target;
  graphcore::AnalysisOptions analysis;
  EXPECT_TRUE(cs::graph_analysis_options(options, &analysis));
  graphcore::DiskSourceProvider disk;
  return cs::build_graph_document(options.file, analysis, options.pipeline, disk).document;
}

}  // namespace

TEST(ProtoJson, CorpusDocumentsMatchProtobufsConverter) {
  for (const char* model : {"resnet50.py", "bert_base.py", "mnist_article.py", "mobilenetv2.py"}) {
    for (const auto& [layer, target] : {std::pair{"semantic", "cpu"},
                                        {"optimized", "ascend910b"},
                                        {"hardware", "ascend910b"},
                                        {"hardware", "cpu"}}) {
      const auto doc = corpus_document(model, layer, target);
      ASSERT_GT(doc.cells_size(), 0) << model;
      expect_same_json(doc, std::string(model) + " " + layer + " " + target);
    }
  }
}

TEST(ProtoJson, ViewMessages) {
  cp::ViewMessage update;
  *update.mutable_update()->mutable_document() =
      corpus_document("lenet5.py", "hardware", "ascend910b");
  expect_same_json(update, "update");

  cp::ViewMessage debug;
  auto* focus = debug.mutable_debug();
  focus->set_node("conv1");
  focus->set_line(7);
  focus->add_shape(1);
  focus->add_shape(int64_t{1} << 40);  // an int64 is a string in proto3 JSON
  (*focus->mutable_stats())["min"] = -0.25;
  (*focus->mutable_stats())["max"] = 1e300;
  (*focus->mutable_stats())["mean"] = 3.0;
  (*focus->mutable_stats())["std"] = 0.1;
  expect_same_json(debug, "debug");
  const auto j = nlohmann::json::parse(cp::to_json(debug, {.pretty = false}));
  EXPECT_EQ(j["debug"]["shape"][1], "1099511627776");
  EXPECT_EQ(j["debug"]["stats"]["mean"].dump(), "3");
}

TEST(ProtoJson, ValuesFloatsAndDefaults) {
  cp::Node n;
  n.set_id("a");
  auto& attrs = *n.mutable_attrs();
  attrs["int"].set_number_value(224);
  attrs["neg"].set_number_value(-3);
  attrs["frac"].set_number_value(0.1 + 0.2);
  attrs["tiny"].set_number_value(1e-5);
  attrs["big"].set_number_value(1e20);
  attrs["text"].set_string_value("a \"quoted\" \\ line\n\xc3\xa9");
  attrs["flag"].set_bool_value(true);
  attrs["none"].set_null_value(google::protobuf::NULL_VALUE);
  auto* list = attrs["list"].mutable_list_value();
  list->add_values()->set_number_value(3);
  list->add_values()->set_string_value("N");
  list->add_values()->set_null_value(google::protobuf::NULL_VALUE);
  (*attrs["nested"].mutable_struct_value()->mutable_fields())["k"].set_number_value(1.5);
  expect_same_json(n, "node");

  const auto pretty = cp::to_json(n);
  EXPECT_NE(pretty.find("\"int\": 224"), std::string::npos) << pretty;  // not 224.0
  EXPECT_NE(pretty.find("[3, \"N\", null]"), std::string::npos) << pretty;
  EXPECT_NE(pretty.find("0.30000000000000004"), std::string::npos) << pretty;

  // Defaults: an empty message prints its scalars and empty lists, not its unset sub-messages.
  const cp::Node empty;
  const auto j = nlohmann::json::parse(cp::to_json(empty));
  EXPECT_EQ(j["id"], "");
  EXPECT_TRUE(j["inputs"].is_array());
  EXPECT_TRUE(j["attrs"].is_object());
  EXPECT_EQ(nlohmann::json::parse(cp::to_json(empty, {.defaults = false})),
            nlohmann::json::object());
}

TEST(ProtoJson, NonFiniteNumbers) {
  cp::ViewMessage m;
  auto& stats = *m.mutable_debug()->mutable_stats();
  stats["nan"] = std::numeric_limits<double>::quiet_NaN();
  stats["inf"] = std::numeric_limits<double>::infinity();
  stats["ninf"] = -std::numeric_limits<double>::infinity();
  const auto j = nlohmann::json::parse(cp::to_json(m));
  EXPECT_EQ(j["debug"]["stats"]["nan"], "NaN");
  EXPECT_EQ(j["debug"]["stats"]["inf"], "Infinity");
  EXPECT_EQ(j["debug"]["stats"]["ninf"], "-Infinity");
  expect_same_json(m, "non-finite");
}
