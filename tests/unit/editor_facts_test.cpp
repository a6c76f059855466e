// graphcore's editor-facing facts: outlines, references, the Cell instance tree, API names and
// signatures, cancellation. The LSP server is a thin layer over these.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "graphcore/analysis.h"
#include "graphcore/outline.h"
#include "graphcore/registry.h"

namespace graphcore {
namespace {

const char* kLeNet = R"(import mindspore as ms
from mindspore import nn, ops
from .blocks import Block


class LeNet(nn.Cell):
    def __init__(self, num_class=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, pad_mode='valid')
        self.block = Block(6)
        self.fc = nn.Dense(6 * 24 * 24, num_class)

    def construct(self, x):
        x = ops.relu(self.conv1(x))
        x = self.block(x)
        x = ops.flatten(x)
        return self.fc(x)


net = LeNet()
net(ms.Tensor(ms.numpy.ones((2, 1, 28, 28)), ms.float32))
)";

const char* kBlocks = R"(from mindspore import nn


class Block(nn.Cell):
    def __init__(self, c):
        super().__init__()
        self.bn = nn.BatchNorm2d(c)

    def construct(self, x):
        return self.bn(x)
)";

TEST(Outline, ClassesMethodsAttributesAndImports) {
  FileOutline o = outline_python("/w/lenet.py", kLeNet);
  EXPECT_FALSE(o.has_syntax_errors);
  const OutlineSymbol* cls = find_symbol(o.symbols, "LeNet");
  ASSERT_NE(cls, nullptr);
  EXPECT_EQ(cls->kind, OutlineSymbol::Kind::Class);
  EXPECT_EQ(cls->bases, std::vector<std::string>{"nn.Cell"});
  EXPECT_EQ(cls->selection.start.line, 5u);
  EXPECT_EQ(cls->selection.start.column, 6u);
  EXPECT_EQ(cls->selection.end.column, 11u);
  std::vector<std::string> children;
  for (const auto& c : cls->children) children.push_back(c.name);
  EXPECT_EQ(children, (std::vector<std::string>{"conv1", "block", "fc", "__init__", "construct"}));
  const OutlineSymbol* conv1 = find_symbol(cls->children, "conv1");
  EXPECT_EQ(conv1->kind, OutlineSymbol::Kind::Attribute);
  EXPECT_EQ(conv1->detail, "nn.Conv2d(...)");
  EXPECT_EQ(conv1->selection.start.line, 8u);
  EXPECT_EQ(conv1->selection.start.column, 13u);
  EXPECT_NE(find_symbol(o.symbols, "net"), nullptr);
  ASSERT_EQ(o.imports.size(), 4u);
  EXPECT_EQ(o.imports[0].local, "ms");
  EXPECT_EQ(o.imports[0].target, "mindspore");
  EXPECT_EQ(o.imports[2].local, "ops");
  EXPECT_EQ(o.imports[2].target, "mindspore.ops");
  EXPECT_EQ(o.imports[3].target, "blocks.Block");
  EXPECT_EQ(o.imports[3].level, 1);
}

TEST(Outline, SurvivesBrokenSource) {
  // Half-typed, as in an editor: the class and its methods are still outlined.
  FileOutline o = outline_python("/w/x.py",
                                 "class A(nn.Cell):\n    def __init__(self):\n"
                                 "        self.fc = nn.Dense(3, 4)\n\n"
                                 "    def construct(self, x):\n        x = self.fc(\n"
                                 "        return x\n\n\ndef make():\n    return A()\n");
  EXPECT_TRUE(o.has_syntax_errors);
  const OutlineSymbol* a = find_symbol(o.symbols, "A");
  ASSERT_NE(a, nullptr);
  EXPECT_NE(find_symbol(a->children, "fc"), nullptr);
  EXPECT_NE(find_symbol(o.symbols, "make"), nullptr);
}

TEST(References, NamesResolveToApisAndDefinitionsAcrossFiles) {
  MemorySourceProvider src;
  src.add("/w/lenet.py", kLeNet);
  src.add("/w/blocks.py", kBlocks);
  AnalysisOptions opt;
  opt.record_facts = true;
  AnalysisResult r = analyze_file("/w/lenet.py", opt, src);
  ASSERT_EQ(r.error_count(), 0u) << (r.diagnostics.empty() ? "" : r.diagnostics[0].message);
  auto find_ref = [&](uint32_t line, uint32_t col) -> const Reference* {
    for (const auto& ref : r.references) {
      if (ref.file == "/w/lenet.py" && ref.range.start.line == line &&
          ref.range.start.column <= col && col < ref.range.end.column)
        return &ref;
    }
    return nullptr;
  };
  // nn.Conv2d in __init__ (line 8, column 22 is inside "Conv2d").
  const Reference* conv = find_ref(8, 25);
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->kind, Reference::Kind::Api);
  EXPECT_EQ(conv->name, "nn.Conv2d");
  // Block(6): a class of another file.
  const Reference* block = find_ref(9, 22);
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(block->kind, Reference::Kind::Definition);
  EXPECT_EQ(block->what, "class");
  EXPECT_EQ(block->target_file, "/w/blocks.py");
  EXPECT_EQ(block->target_range.start.line, 3u);
  EXPECT_EQ(block->target_range.start.column, 6u);
  // self.conv1 in construct -> where it was constructed in __init__.
  const Reference* attr = find_ref(13, 30);
  ASSERT_NE(attr, nullptr);
  EXPECT_EQ(attr->what, "cell");
  EXPECT_EQ(attr->name, "conv1");
  EXPECT_EQ(attr->target_range.start.line, 8u);
  EXPECT_EQ(attr->range.start.column, 26u);  // only `conv1` of `self.conv1`
  // ops.relu
  const Reference* relu = find_ref(13, 17);
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(relu->name, "ops.relu");

  // The instance tree, root first, with class locations.
  ASSERT_EQ(r.cells.size(), 1u);
  const auto& inst = r.cells[0].instances;
  ASSERT_GE(inst.size(), 5u);
  EXPECT_EQ(inst[0].path, "");
  EXPECT_EQ(inst[0].class_name, "LeNet");
  bool saw_block = false;
  for (const auto& i : inst) {
    if (i.path == "block") {
      saw_block = true;
      EXPECT_EQ(i.class_file, "/w/blocks.py");
      EXPECT_EQ(i.site_file, "/w/lenet.py");
      EXPECT_EQ(i.site_range.start.line, 9u);
    }
    if (i.path == "block.bn") {
      EXPECT_EQ(i.api, "nn.BatchNorm2d");
    }
  }
  EXPECT_TRUE(saw_block);
  EXPECT_FALSE(r.cells[0].facts.empty());
}

// The debugger's facts are recorded as structure: where a construct first calls each Cell
// instance (a Cell in a CellList through its index, one inside nn.SequentialCell only through the
// container; one built inside the call expression, `nn.ReLU()(out)`, is freed only after its
// call site is written: ASan checks it) and the name each assignment binds.
TEST(DebuggerFacts, CallSitesAndAssignedNames) {
  MemorySourceProvider src;
  src.add("/w/net.py", R"(from mindspore import nn


class Block(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 4)

    def construct(self, x):
        return self.fc(x)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.first = Block()
        self.blocks = nn.CellList([Block(), Block()])
        self.seq = nn.SequentialCell([Block()])

    def construct(self, x):
        h = self.first(x)
        h = self.blocks[1](h)
        out = self.seq(h)
        out = nn.ReLU()(out)
        return self.first(out)
)");
  AnalysisOptions opt;
  opt.record_facts = true;
  opt.inputs.push_back({Shape::of({2, 4}), DType::Float32});
  opt.cell = "Net";
  AnalysisResult r = analyze_file("/w/net.py", opt, src);
  ASSERT_EQ(r.cells.size(), 1u);
  std::map<std::string, const CellInstance*> by_path;
  for (const CellInstance& ci : r.cells[0].instances) by_path[ci.path] = &ci;
  auto call_line = [&](const std::string& path) -> int {
    auto it = by_path.find(path);
    if (it == by_path.end() || it->second->call_file.empty()) return -1;
    return static_cast<int>(it->second->call_range.start.line);
  };
  EXPECT_EQ(call_line("first"), 20);  // the first of its two calls
  EXPECT_EQ(call_line("blocks.1"), 21);
  EXPECT_EQ(call_line("blocks.0"), -1);  // never called
  EXPECT_EQ(call_line("seq"), 22);
  EXPECT_EQ(call_line("seq.0"), -1);  // called by the container, not by a construct
  EXPECT_EQ(call_line("first.fc"), 9);
  std::vector<std::pair<uint32_t, std::string>> assigned;
  for (const TypeFact& f : r.cells[0].facts) {
    if (f.kind == TypeFact::Kind::Assignment && f.scope.empty())
      assigned.emplace_back(f.range.start.line, f.name);
  }
  EXPECT_EQ(assigned, (std::vector<std::pair<uint32_t, std::string>>{
                          {20, "h"}, {21, "h"}, {22, "out"}, {23, "out"}}));
}

TEST(References, NotRecordedWithoutFacts) {
  MemorySourceProvider src;
  src.add("/w/lenet.py", kLeNet);
  src.add("/w/blocks.py", kBlocks);
  AnalysisResult r = analyze_file("/w/lenet.py", AnalysisOptions{}, src);
  EXPECT_TRUE(r.references.empty());
  ASSERT_EQ(r.cells.size(), 1u);
  EXPECT_TRUE(r.cells[0].instances.empty());
}

TEST(Cancellation, ACancelledAnalysisStopsAndSaysSo) {
  MemorySourceProvider src;
  src.add("/w/loop.py", "n = 0\nwhile True:\n    n = n + 1\n");
  std::atomic<bool> cancel{true};
  AnalysisOptions opt;
  opt.cancel = &cancel;
  AnalysisResult r = analyze_file("/w/loop.py", opt, src);
  EXPECT_TRUE(r.cancelled);
  EXPECT_TRUE(r.diagnostics.empty());
  cancel = false;
  opt.step_budget = 10000;
  AnalysisResult r2 = analyze_file("/w/loop.py", opt, src);
  EXPECT_FALSE(r2.cancelled);
}

TEST(ApiNames, PythonNamesMapToRegistryNames) {
  EXPECT_EQ(api_name_of("mindspore.nn.Conv2d"), "nn.Conv2d");
  EXPECT_EQ(api_name_of("mindspore.ops.operations.Add"), "ops.Add");
  EXPECT_EQ(api_name_of("mindspore.ops.relu"), "ops.relu");
  EXPECT_EQ(api_name_of("mindspore.Tensor.reshape"), "Tensor.reshape");
  EXPECT_EQ(api_name_of("numpy.ones"), std::nullopt);
  EXPECT_EQ(api_namespace_of("mindspore.ops.operations"), "ops");
  EXPECT_EQ(api_namespace_of("mindspore"), "");
  EXPECT_EQ(api_namespace_of("torch.nn"), std::nullopt);
  auto nn = mindspore_public_names("nn", kDefaultMindSporeVersion);
  EXPECT_TRUE(std::binary_search(nn.begin(), nn.end(), "Conv2d"));
  EXPECT_TRUE(std::binary_search(nn.begin(), nn.end(), "MaxPool2d"));
  auto ops = mindspore_public_names("ops", kDefaultMindSporeVersion);
  EXPECT_FALSE(std::binary_search(ops.begin(), ops.end(), "MaxPool2d"));
}

TEST(ApiNames, SignaturesShowDefaultsOfTheVersion) {
  const ApiEntry* dense = Registry::instance().find("nn.Dense", kDefaultMindSporeVersion);
  ASSERT_NE(dense, nullptr);
  std::vector<std::pair<size_t, size_t>> spans;
  std::string sig = api_signature(*dense, kDefaultMindSporeVersion, true, &spans);
  EXPECT_EQ(sig.rfind("nn.Dense(in_channels, out_channels, ", 0), 0u) << sig;
  EXPECT_NE(sig.find("has_bias=True"), std::string::npos) << sig;
  ASSERT_GE(spans.size(), 2u);
  EXPECT_EQ(sig.substr(spans[0].first, spans[0].second - spans[0].first), "in_channels");
  const ApiEntry* reshape = Registry::instance().find("Tensor.reshape", kDefaultMindSporeVersion);
  ASSERT_NE(reshape, nullptr);
  // The tensor itself is not a written argument.
  EXPECT_EQ(api_signature(*reshape, kDefaultMindSporeVersion, false).find("(self"),
            std::string::npos);
}

}  // namespace
}  // namespace graphcore

namespace graphcore {
namespace {

std::string summary_of(const AnalysisResult& r) {
  std::string out;
  for (const auto& d : r.diagnostics) {
    out += d.file + ":" + std::to_string(d.range.start.line) + ":" +
           std::to_string(d.range.start.column) + "-" + std::to_string(d.range.end.line) + ":" +
           std::to_string(d.range.end.column) + " " + d.code + " " + d.message + "\n";
  }
  for (const auto& c : r.cells) {
    out += c.name + " nodes=" + std::to_string(c.graph.nodes.size()) +
           " params=" + std::to_string(c.total_params) + " facts=" + std::to_string(c.facts.size());
    for (const auto& o : c.outputs) out += " " + o.type.str();
    out += "\n";
  }
  out += "symbols=" + std::to_string(r.outline.symbols.size()) + "\n";
  return out;
}

// Typing into a file analysed with a ParseCache (incremental re-parses of the edited file,
// reuse of unchanged ones) gives exactly what analysing each version from scratch gives.
TEST(ParseCache, IncrementalReparsesMatchFullParses) {
  const std::filesystem::path corpus = CELLSCOPE_CORPUS_DIR;
  for (const char* name :
       {"models/resnet50.py", "buggy/mnist_article_bug.py", "models/bert_base.py"}) {
    std::string text;
    {
      std::ifstream in(corpus / name);
      std::stringstream ss;
      ss << in.rdbuf();
      text = ss.str();
    }
    MemorySourceProvider src;
    const std::string path = "/w/model.py";
    auto cache = std::make_shared<ParseCache>();
    AnalysisOptions cached;
    cached.record_facts = true;
    cached.outline = true;
    cached.parse_cache = cache;
    AnalysisOptions fresh = cached;
    fresh.parse_cache = nullptr;
    uint64_t seed = 12345;
    auto rnd = [&](size_t n) {
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
      return n == 0 ? 0 : static_cast<size_t>((seed >> 33) % n);
    };
    const std::string snippets[] = {"x", "(", ")", "\n", "    ", "self.", "1", ":", "\"", "#"};
    for (int step = 0; step < 40; ++step) {
      size_t at = rnd(text.size() + 1);
      if (step % 3 == 2 && !text.empty()) {
        text.erase(std::min(at, text.size() - 1), 1 + rnd(8));
      } else {
        text.insert(at, snippets[rnd(std::size(snippets))]);
      }
      src.add(path, text);
      std::string a = summary_of(analyze_file(path, cached, src));
      std::string b = summary_of(analyze_file(path, fresh, src));
      ASSERT_EQ(a, b) << name << " step " << step;
      // The same text again is a cache hit.
      std::string c = summary_of(analyze_file(path, cached, src));
      ASSERT_EQ(c, b) << name << " step " << step;
    }
    EXPECT_GE(cache->hits(), 40u);
    EXPECT_GE(cache->incremental_reparses() + cache->reparses_from_scratch(), 39u);
  }
}

// Found by the typing simulation (issue 14, mindcv's mobilenetv3.py): re-parsed incrementally
// from the parse of `before`, the erroneous text `after` recovered differently from a fresh parse
// of it (other syntax errors, `layers` instead of `else` reported), so the diagnostics of a
// text depended on the text analysed before it.
TEST(ParseCache, ErroneousTextGivesTheDiagnosticsOfAFreshParse) {
  const std::string before =
      "class Net(nn.Cell):\n"
      "    r\"\"\"A network.\n"
      "    \"\"\"\n"
      "    def __init__(\n"
      "    ) -> None:\n"
      "        if kind == \"big\":\n"
      "                [3, 64, 16, True, \"relu\", 1],\n"
      "                [5, 64, 24, True, \"relu\", 2],\n"
      "            ]\n"
      "            width = scale(ratio * 1280, step)\n"
      "        elif kind == \"small\":\n"
      "            width = scale(ratio * 1024, step)\n"
      "        else:\n"
      "        layers = [\n";
  std::string after = before;
  const std::string row = "                [3, 64, 16, True, \"relu\", 1],\n                [5,";
  after.replace(after.find(row), row.size(), "                [3                [5,");

  MemorySourceProvider src;
  const std::string path = "/w/net.py";
  auto cache = std::make_shared<ParseCache>();
  AnalysisOptions cached;
  cached.parse_cache = cache;
  AnalysisOptions fresh = cached;
  fresh.parse_cache = nullptr;
  auto summary = [&](const std::string& text, const AnalysisOptions& o) {
    src.add(path, text);
    return summary_of(analyze_file(path, o, src));
  };
  summary(before, cached);
  const std::string incremental = summary(after, cached);
  const std::string expected = summary(after, fresh);
  EXPECT_EQ(incremental, expected);
  EXPECT_NE(expected.find("`else`"), std::string::npos) << expected;
  EXPECT_EQ(cache->reparses_from_scratch(), 1u);
  EXPECT_EQ(cache->incremental_reparses(), 0u);

  // Error-free texts are still re-parsed incrementally, and an edit from erroneous text to
  // error-free text (parsed from scratch) ends where a fresh parse does.
  const std::string good_a = "x = 1\ny = x + 2\n";
  const std::string good_b = "x = 1\ny = x + 3\n";
  const std::string broken = "x = 1\ny = (x + 3\n";
  summary(good_a, cached);
  EXPECT_EQ(summary(good_b, cached), summary(good_b, fresh));
  EXPECT_EQ(cache->incremental_reparses(), 1u);
  EXPECT_EQ(summary(broken, cached), summary(broken, fresh));
  EXPECT_EQ(summary(good_a, cached), summary(good_a, fresh));
  EXPECT_EQ(cache->incremental_reparses(), 1u);
  EXPECT_EQ(cache->reparses_from_scratch(), 4u);
}

// Found by the soak on bert_base.py (issue 14): the parameter list of a half-typed
// `def construct(self,` swallowed `class Model(nn.Cell):`, Model's methods became Pooler's, and
// Pooler's construction built a Pooler until the call-depth limit (an error on a line nobody
// touched). The class after the broken def stays a class of its own; the Cell whose
// construct is being typed is not reported as having none.
TEST(SyntaxRecovery, HalfTypedDefDoesNotSwallowTheNextClass) {
  const std::string text =
      "from mindspore import nn\n"
      "\n"
      "\n"
      "def decorated(cls):\n"
      "    return cls\n"
      "\n"
      "\n"
      "class Pooler(nn.Cell):\n"
      "    def __init__(self, width):\n"
      "        super().__init__()\n"
      "        self.dense = nn.Dense(width, width)\n"
      "\n"
      "    def construct(self,         first = hidden[:, 0]\n"
      "        return self.dense(first)\n"
      "\n"
      "\n"
      "@decorated\n"
      "class Model(nn.Cell):\n"
      "    def __init__(self, width=8):\n"
      "        super().__init__()\n"
      "        self.pooler = Pooler(width)\n"
      "\n"
      "    def construct(self, x):\n"
      "        return self.pooler(x)\n";
  MemorySourceProvider src;
  const std::string path = "/w/model.py";
  src.add(path, text);
  AnalysisResult r = analyze_file(path, AnalysisOptions{}, src);
  bool syntax_error = false;
  for (const auto& d : r.diagnostics) {
    if (d.code == "syntax-error") {
      syntax_error = true;
      continue;
    }
    // Nothing but the syntax errors from the line of the broken def on.
    EXPECT_LT(d.range.start.line, 12u) << d.code << " " << d.message;
  }
  EXPECT_TRUE(syntax_error);
  ASSERT_EQ(r.cells.size(), 1u);
  EXPECT_EQ(r.cells[0].name, "Model");
}

}  // namespace
}  // namespace graphcore
