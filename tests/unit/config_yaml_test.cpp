// YAML text a model loads (graphcore/src/configs.cpp, libyaml): what PyYAML 6.0 gives for the
// same text (`python3 -c "import yaml; print(yaml.safe_load(...))"`), and malformed text that
// made yaml-cpp 0.7 loop forever reported as a located error instead.
#include <gtest/gtest.h>

#include <string>

#include "expect_analysis.h"
#include "graphcore/analysis.h"

namespace graphcore {
namespace {

TEST(ConfigYaml, ValuesAreWhatPyYamlLoads) {
  // PyYAML: A = {'base': {'w': 3}, 'use': {'w': 3}, 'q': '4', 'n': 5, 'yes_': True,
  // 'f': '1e-4', 'g': 0.0001}; two documents; R[1] is R; '12'; None; [].
  const AnalysisResult r = analyse_net(R"(import yaml
import mindspore.nn as nn

A = yaml.safe_load("base: &b {w: 3}\nuse: *b\nq: '4'\nn: 5\nyes_: yes\nf: 1e-4\ng: 1.0e-4\n")
D = list(yaml.safe_load_all("a: 1\n---\nb: 2\n"))
R = yaml.safe_load("&r [1, *r]")
S = yaml.safe_load("!!str 12")
E = yaml.safe_load("")
W = A['use']['w'] + int(A['q']) + A['n'] + (1 if A['yes_'] is True else 100)  # 13
W += len(A['f']) + (1 if A['g'] == 0.0001 else 100)  # 18
W += len(D) + D[1]['b'] + len(R[1][1]) + len(S) + (1 if E is None else 100)  # 27
W += len(list(yaml.safe_load_all("")))  # 27


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(8, W)

    def construct(self, x):
        return self.fc(x)
)");
  expect_compiles_to(r, 1, "(2, 27)");
}

// yaml-cpp 0.7 (Debian 12) never returned from these (its issue 1040); PyYAML raises
// "expected the node content, but found ','" at line 1, column 1.
TEST(ConfigYaml, MalformedTextIsALocatedErrorNotAHang) {
  for (const char* bad : {R"(",\"in\": 1{ x, 7thEEEEoEEEEEElambda EEEEEEEEEE : \"Tanh\"}")",
                          R"(", a")", R"("[1, 2")"}) {
    SCOPED_TRACE(bad);
    const AnalysisResult r = analyse_net(std::string("import yaml\nimport mindspore.nn as nn\n\n"
                                                     "C = yaml.safe_load(") +
                                         bad +
                                         ")\n\n\nclass Net(nn.Cell):\n    def construct(self, x):\n"
                                         "        return x\n");
    const Diagnostic* error = nullptr;
    for (const Diagnostic& d : r.diagnostics)
      if (d.code == "config-error") error = &d;
    ASSERT_NE(error, nullptr);
    EXPECT_EQ(error->range.start.line, 3U);  // the call
    EXPECT_NE(error->message.find("line 1, column "), std::string::npos) << error->message;
  }
}

TEST(ConfigYaml, DeepNestingIsBoundedAndAliasesAreShared) {
  // 100,000 nested lists: libyaml's time grows with the square of the depth (25 s for this),
  // so past 256 levels the load is unknown (no false error), in milliseconds; 10 levels of
  // aliases doubling each time stay 10 levels of shared objects.
  std::string deep(100000, '[');
  deep += std::string(100000, ']');
  std::string laughs = "a0: &a0 [x, x]\n";
  for (int i = 1; i < 10; ++i)
    laughs += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [*a" +
              std::to_string(i - 1) + ", *a" + std::to_string(i - 1) + "]\n";
  const AnalysisResult r =
      analyse_net("import yaml\nimport mindspore.nn as nn\n\nD = yaml.safe_load('" + deep +
                  "')\nL = yaml.safe_load('''" + laughs +
                  "''')\nW = len(L['a9'][0][0])\n\n\nclass Net(nn.Cell):\n"
                  "    def __init__(self):\n        super().__init__()\n"
                  "        self.fc = nn.Dense(8, W)\n\n"
                  "    def construct(self, x):\n        return self.fc(x)\n");
  expect_compiles_to(r, 1, "(2, 2)");
}

}  // namespace
}  // namespace graphcore
