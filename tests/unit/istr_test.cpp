// IStr: interned strings behave like const std::string for readers of graph nodes.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <string_view>

#include "graphcore/graph.h"
#include "graphcore/istr.h"

namespace {

using graphcore::IStr;

TEST(IStr, InternsEqualTextsToOneCopy) {
  IStr a("layer1.0.conv1");
  IStr b(std::string("layer1.0.conv1"));
  IStr c(std::string_view("layer1.0.conv2"));
  EXPECT_EQ(&a.str(), &b.str());
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a == c);
  EXPECT_TRUE(IStr().empty());
  EXPECT_EQ(IStr(), IStr(""));
}

TEST(IStr, ReadsAsAString) {
  graphcore::Node n;
  n.op = "Conv2D";
  n.scope = std::string("layer1");
  n.api = std::string_view("nn.Conv2d");
  const std::string& op = n.op;
  std::string_view api = n.api;
  std::string copy = n.scope;
  EXPECT_EQ(op, "Conv2D");
  EXPECT_EQ(api, "nn.Conv2d");
  EXPECT_EQ(copy, "layer1");
  EXPECT_TRUE(n.op == "Conv2D");
  EXPECT_TRUE("Conv2D" == n.op);
  EXPECT_TRUE(n.op == std::string("Conv2D"));
  EXPECT_TRUE(n.op != "Add");
  EXPECT_EQ(n.scope + "." + "weight", "layer1.weight");
  EXPECT_EQ("x/" + n.op, "x/Conv2D");
  EXPECT_EQ(n.op.size(), 6u);
  std::ostringstream os;
  os << n.op << '|' << n.file;
  EXPECT_EQ(os.str(), "Conv2D|");
  std::map<std::string, int> counts;
  ++counts[n.op];
  EXPECT_EQ(counts.count("Conv2D"), 1u);
  EXPECT_LT(IStr("a"), IStr("b"));
}

}  // namespace
