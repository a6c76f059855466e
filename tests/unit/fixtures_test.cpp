// Data-driven tests in the rust-analyzer style: every tests/fixtures/*.py (names starting with
// "_" excluded) is a small model file whose expectations live in its comments.
//
// Header comments (before the first line of code):
//   # cell: NAME  params: 123  total: 456  output: (1, 10) f32
//        the CellReport whose name or class is NAME has these trainable/total parameter counts
//        and first output (each key optional; several `# cell:` lines allowed)
//   # input: N,3,32,32          AnalysisOptions.inputs (graphcore::parse_input_spec; repeatable)
//   # entry: make_net(4)        AnalysisOptions.entries (repeatable)
//   # target: ascend910b        AnalysisOptions.target
//   # config: net.yaml           AnalysisOptions.config_files, relative to the fixture (repeatable)
// Trailing comments on a line L (0-based):
//   # expect: <severity> <code> [substring]
//        a diagnostic with that severity and code starts on line L (and mentions substring)
//   # shape: (1, 32, 28, 28) f32
//        some graph node whose source range starts on line L has that output (TensorType::str())
// Every error/warning diagnostic in the fixture file must be expected: a fixture without any
// `# expect:` asserts there are none. Shapes and counts are MindSpore 2.10's (checked with
// tests/fixtures/_verify_with_mindspore.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "graphcore/analysis.h"

namespace fs = std::filesystem;

namespace graphcore {
namespace {

const fs::path kFixtureDir = fs::path(CELLSCOPE_SOURCE_DIR) / "tests" / "fixtures";

std::string trim(std::string s) {
  auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!s.empty() && ws(s.back())) s.pop_back();
  size_t i = 0;
  while (i < s.size() && ws(s[i])) ++i;
  return s.substr(i);
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

struct ExpectDiag {
  uint32_t line = 0;
  std::string severity;
  std::string code;
  std::string substring;
};

struct ExpectShape {
  uint32_t line = 0;
  std::string type;
};

struct ExpectCell {
  std::string name;
  std::optional<int64_t> params;
  std::optional<int64_t> total;
  std::optional<std::string> output;
};

struct Fixture {
  fs::path path;
  std::string text;
  AnalysisOptions options;
  std::vector<ExpectDiag> diags;
  std::vector<ExpectShape> shapes;
  std::vector<ExpectCell> cells;
  std::vector<std::string> errors;  // malformed annotations
};

// Value of `key:` in `s` up to the next known key.
std::optional<std::string> field(const std::string& s, const std::string& key) {
  static const std::vector<std::string> kKeys = {"cell:", "params:", "total:", "output:"};
  size_t at = s.find(key + ":");
  if (at == std::string::npos) return std::nullopt;
  size_t from = at + key.size() + 1;
  size_t to = s.size();
  for (const std::string& k : kKeys) {
    size_t p = s.find(k, from);
    if (p != std::string::npos) to = std::min(to, p);
  }
  return trim(s.substr(from, to - from));
}

int64_t to_count(const std::string& s) {
  std::string digits;
  for (char c : s)
    if (c != ',' && c != '_') digits += c;
  return std::stoll(digits);
}

Fixture load_fixture(const fs::path& path) {
  Fixture f;
  f.path = path;
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  f.text = ss.str();
  std::istringstream lines(f.text);
  std::string line;
  bool in_header = true;
  for (uint32_t n = 0; std::getline(lines, line); ++n) {
    std::string t = trim(line);
    if (in_header && !t.empty() && t[0] != '#') in_header = false;
    if (in_header && starts_with(t, "#")) {
      std::string body = trim(t.substr(1));
      if (starts_with(body, "input:")) {
        std::string err;
        auto ty = parse_input_spec(trim(body.substr(6)), &err);
        if (ty)
          f.options.inputs.push_back(*ty);
        else
          f.errors.push_back("line " + std::to_string(n) + ": bad input spec: " + err);
      } else if (starts_with(body, "entry:")) {
        f.options.entries.push_back(trim(body.substr(6)));
      } else if (starts_with(body, "target:")) {
        f.options.target = trim(body.substr(7));
      } else if (starts_with(body, "config:")) {
        f.options.config_files.push_back(std::filesystem::path(path).parent_path() /
                                         trim(body.substr(7)));
      } else if (starts_with(body, "cell:")) {
        ExpectCell c;
        c.name = *field(body, "cell");
        if (auto v = field(body, "params")) c.params = to_count(*v);
        if (auto v = field(body, "total")) c.total = to_count(*v);
        if (auto v = field(body, "output")) c.output = *v;
        f.cells.push_back(c);
      }
      continue;
    }
    // Trailing annotations (also allowed on comment-only lines inside the body).
    size_t e = line.find("# expect:");
    if (e != std::string::npos) {
      std::istringstream words(line.substr(e + 9));
      ExpectDiag d;
      d.line = n;
      words >> d.severity >> d.code;
      std::string rest;
      std::getline(words, rest);
      d.substring = trim(rest);
      if (d.severity.empty() || d.code.empty())
        f.errors.push_back("line " + std::to_string(n) + ": malformed # expect:");
      else
        f.diags.push_back(d);
    }
    size_t s = line.find("# shape:");
    if (s != std::string::npos) f.shapes.push_back({n, trim(line.substr(s + 8))});
  }
  return f;
}

std::vector<std::string> fixture_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(kFixtureDir, ec)) {
    std::string name = e.path().filename().string();
    if (e.path().extension() == ".py" && name[0] != '_') names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool same_file(const std::string& a, const fs::path& b) {
  if (a.empty()) return false;
  std::error_code ec;
  if (fs::equivalent(fs::path(a), b, ec)) return true;
  return fs::path(a).lexically_normal() == b.lexically_normal();
}

std::string dump_diags(const AnalysisResult& r) {
  std::string s;
  for (const Diagnostic& d : r.diagnostics)
    s += "    " + fs::path(d.file).filename().string() + ":" + std::to_string(d.range.start.line) +
         ":" + std::to_string(d.range.start.column) + " " + severity_name(d.severity) + " [" +
         d.code + "] " + d.message + "\n";
  return s.empty() ? "    (none)\n" : s;
}

std::string dump_cells(const AnalysisResult& r) {
  std::string s;
  for (const CellReport& c : r.cells) {
    s += "    cell `" + c.name + "` (" + c.class_name + "): params " +
         std::to_string(c.trainable_params) + " total " + std::to_string(c.total_params) +
         " outputs";
    for (auto& o : c.outputs) s += " " + o.type.str();
    s += c.compiled ? "\n" : " (not compiled)\n";
  }
  return s.empty() ? "    (no cells)\n" : s;
}

std::vector<std::string> node_types_on_line(const AnalysisResult& r, const fs::path& file,
                                            uint32_t line) {
  std::vector<std::string> out;
  for (const CellReport& c : r.cells)
    for (const Node& n : c.graph.nodes)
      if (n.range.start.line == line && (n.file.empty() || same_file(n.file, file)))
        for (const TensorType& t : n.outputs) out.push_back(t.str());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

class FixtureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FixtureTest, Expectations) {
  const fs::path path = kFixtureDir / (GetParam() + ".py");
  Fixture f = load_fixture(path);
  for (const std::string& e : f.errors) ADD_FAILURE() << path.filename() << ": " << e;
  DiskSourceProvider disk;
  AnalysisResult r = analyze_file(path, f.options, disk);
  const std::string context = "\n  diagnostics:\n" + dump_diags(r) + "  cells:\n" + dump_cells(r);

  // Diagnostics: every expectation is met by a distinct diagnostic...
  std::vector<bool> used(r.diagnostics.size(), false);
  for (const ExpectDiag& e : f.diags) {
    bool found = false;
    for (size_t i = 0; i < r.diagnostics.size() && !found; ++i) {
      const Diagnostic& d = r.diagnostics[i];
      if (used[i] || !same_file(d.file, path) || d.range.start.line != e.line) continue;
      if (severity_name(d.severity) != e.severity || d.code != e.code) continue;
      if (!e.substring.empty() && d.message.find(e.substring) == std::string::npos) continue;
      used[i] = found = true;
    }
    EXPECT_TRUE(found) << path.filename().string() << ":" << e.line << ": expected " << e.severity
                       << " [" << e.code << "]"
                       << (e.substring.empty() ? "" : " mentioning \"" + e.substring + "\"")
                       << context;
  }
  // ...and every other error/warning is unexpected.
  for (size_t i = 0; i < r.diagnostics.size(); ++i) {
    const Diagnostic& d = r.diagnostics[i];
    if (used[i] || (d.severity != Severity::Error && d.severity != Severity::Warning)) continue;
    ADD_FAILURE() << path.filename().string() << ": unexpected " << severity_name(d.severity)
                  << " [" << d.code << "] at " << fs::path(d.file).filename().string() << ":"
                  << d.range.start.line << ":" << d.range.start.column << ": " << d.message
                  << context;
  }

  // Shapes of graph nodes by line.
  for (const ExpectShape& s : f.shapes) {
    auto types = node_types_on_line(r, path, s.line);
    EXPECT_NE(std::find(types.begin(), types.end(), s.type), types.end())
        << path.filename().string() << ":" << s.line << ": expected a node with output " << s.type
        << "; nodes on that line give " << ::testing::PrintToString(types) << context;
  }

  // Cell reports.
  for (const ExpectCell& c : f.cells) {
    const CellReport* rep = nullptr;
    for (const CellReport& cr : r.cells)
      if (cr.name == c.name) rep = &cr;
    if (!rep)
      for (const CellReport& cr : r.cells)
        if (cr.class_name == c.name) rep = &cr;
    if (!rep) {
      ADD_FAILURE() << path.filename().string() << ": no cell report named `" << c.name << "`"
                    << context;
      continue;
    }
    if (c.params) {
      EXPECT_EQ(rep->trainable_params, *c.params) << c.name << " trainable params" << context;
    }
    if (c.total) {
      EXPECT_EQ(rep->total_params, *c.total) << c.name << " total params" << context;
    }
    if (c.output) {
      ASSERT_FALSE(rep->outputs.empty()) << c.name << " has no outputs" << context;
      EXPECT_EQ(rep->outputs[0].type.str(), *c.output) << c.name << " output" << context;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FixtureTest, ::testing::ValuesIn(fixture_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// The fixture set itself: present, and each annotation well-formed (guards against a glob that
// silently finds nothing).
TEST(FixtureSet, HasFixtures) {
  EXPECT_GE(fixture_names().size(), 25u) << "fixtures expected in " << kFixtureDir;
}

}  // namespace
}  // namespace graphcore
