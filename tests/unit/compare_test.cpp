// Comparing a graph with a fixed base: the pure comparison of two documents (server/view/
// compare.h), reading a file as of git HEAD (server/git.h) on temporary repositories, building
// the base document (server/compare_base.h), and the view server sending comparisons to a view.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "compare_base.h"
#include "git.h"
#include "protocol/document.h"
#include "temp_dir.h"
#include "view/compare.h"
#include "view/delta.h"
#include "view/security.h"
#include "view/view_server.h"

namespace cellscope::server {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using cellscope::testing::TempDir;

graphcore::AnalysisOptions options_for_test(const std::string& file,
                                            const std::string& target = "ascend910") {
  GraphOptions options;
  options.file = file;
  options.pipeline.layer = "hardware";
  options.common.target = target;
  options.inputs = {"1,3,32,32"};
  graphcore::AnalysisOptions analysis;
  EXPECT_TRUE(graph_analysis_options(options, &analysis));
  return analysis;
}

PipelineOptions hardware() {
  PipelineOptions p;
  p.layer = "hardware";
  return p;
}

protocol::GraphDocument document_at(const std::string& file) {
  graphcore::DiskSourceProvider disk;
  return build_graph_document(file, options_for_test(file), hardware(), disk).document;
}

// The document of `text`, always analysed as the same path (the ids are scope-derived).
protocol::GraphDocument document_of(const std::string& text) {
  TempDir dir;
  return document_at(dir.write("model.py", text));
}

const char* kModel = R"(from mindspore import nn, ops

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3)
        self.relu = nn.ReLU()
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(16 * 32 * 32, 10)

    def construct(self, x):
        x = self.relu(self.conv(x))
        return self.fc(self.flatten(x))
)";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

const protocol::FieldChange* field(const protocol::NodeChange& c, const std::string& name) {
  for (const auto& f : c.changes())
    if (f.field() == name) return &f;
  return nullptr;
}

const protocol::NodeChange* change_of(
    const google::protobuf::RepeatedPtrField<protocol::NodeChange>& changes,
    const std::string& id) {
  for (const auto& c : changes)
    if (c.id() == id) return &c;
  return nullptr;
}

std::vector<std::string> ids(const google::protobuf::RepeatedPtrField<std::string>& list) {
  return {list.begin(), list.end()};
}

std::string json(const google::protobuf::Message& m) {
  std::string s = protocol::to_json(m, {.pretty = false, .defaults = false});
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

TEST(CompareDocuments, AddedRemovedChangedAndTotals) {
  const auto base = document_of(kModel);
  // fc gets 12 outputs, the ReLU goes, a Mul comes.
  std::string edited = replaced(kModel, "nn.Dense(16 * 32 * 32, 10)", "nn.Dense(16 * 32 * 32, 12)");
  edited = replaced(edited, "x = self.relu(self.conv(x))", "x = self.conv(x) * 2");
  const auto current = document_of(edited);
  const auto c = view::compare_documents(base, current);
  ASSERT_EQ(c.cells_size(), 1);
  const auto& cell = c.cells(0);
  EXPECT_EQ(cell.cell(), "Net");
  EXPECT_EQ(cell.base_cell(), "Net");

  // Added: the Mul (and the constant it multiplies by, if the graph has one), nothing else.
  ASSERT_FALSE(cell.added().empty());
  bool mul = false;
  for (const auto& id : cell.added()) {
    for (const auto& n : current.cells(0).nodes())
      if (n.id() == id && n.op() == "Mul") mul = true;
  }
  EXPECT_TRUE(mul) << json(cell);
  // Removed: the ReLU, as it was in the base.
  ASSERT_EQ(cell.removed_size(), 1) << json(cell);
  EXPECT_EQ(cell.removed(0).id(), "relu");
  EXPECT_EQ(cell.removed(0).op(), "ReLU");
  EXPECT_EQ(cell.removed(0).outputs(0).shape_size(), 4);
  // Changed: fc (its output, attribute, parameters, FLOPs); the flatten reads the Mul now.
  const auto* fc = change_of(cell.changed(), "fc");
  ASSERT_NE(fc, nullptr) << json(cell);
  const auto* shape = field(*fc, "outputs[0].shape");
  ASSERT_NE(shape, nullptr) << json(*fc);
  EXPECT_EQ(json(shape->before()), "[1,10]");
  EXPECT_EQ(json(shape->after()), "[1,12]");
  const auto* params = field(*fc, "params");
  ASSERT_NE(params, nullptr);
  EXPECT_EQ(params->before().number_value(), 16 * 32 * 32 * 10 + 10);
  EXPECT_EQ(params->after().number_value(), 16 * 32 * 32 * 12 + 12);
  EXPECT_NE(field(*fc, "attrs.out_channels"), nullptr) << json(*fc);
  EXPECT_NE(field(*fc, "flops"), nullptr);
  EXPECT_EQ(field(*fc, "op"), nullptr);  // still a MatMul
  const auto* flatten = change_of(cell.changed(), "flatten");
  ASSERT_NE(flatten, nullptr) << json(cell);
  EXPECT_NE(field(*flatten, "inputs"), nullptr);
  EXPECT_EQ(change_of(cell.changed(), "conv"), nullptr) << json(cell);  // unchanged

  // Totals: the parameters grow by fc's 2 * 16384 + 2; FLOPs and the hardware figures are there.
  EXPECT_EQ(cell.after().params() - cell.before().params(), 2 * 16 * 32 * 32 + 2);
  EXPECT_EQ(cell.before().params(), base.cells(0).params());
  EXPECT_EQ(cell.after().flops(), current.cells(0).flops());
  EXPECT_EQ(cell.before().nodes(), static_cast<uint32_t>(base.cells(0).nodes_size()));
  EXPECT_TRUE(cell.before().hardware());
  EXPECT_TRUE(cell.after().hardware());
  EXPECT_GT(cell.after().latency_ms(), 0);
  EXPECT_GT(cell.after().memory_peak_bytes(), 0);
  EXPECT_GT(cell.after().kernels(), 0u);
  EXPECT_TRUE(cell.after().compiled());

  // The optimized layer: fc's kernel changed (shape and time), and the ReLU fused into the
  // convolution is gone with it.
  bool fc_kernel = false;
  for (const auto& oc : cell.optimized_changed()) {
    if (oc.id().find("fc") != std::string::npos && field(oc, "outputs[0].shape") != nullptr &&
        field(oc, "time_us") != nullptr)
      fc_kernel = true;
  }
  EXPECT_TRUE(fc_kernel) << json(cell);
  EXPECT_FALSE(cell.optimized_added().empty() && cell.optimized_removed().empty() &&
               cell.optimized_changed_size() < 2)
      << json(cell);
  EXPECT_EQ(c.removed_cells_size(), 0);
  EXPECT_EQ(c.base_errors(), 0u);
}

TEST(CompareDocuments, TheSameGraphIsUnchangedEvenWhenItsCodeMoved) {
  const auto base = document_of(kModel);
  // Two lines more above the class: every range moves, nothing else does.
  const auto moved = document_of(replaced(kModel, "class Net", "# a comment\n\nclass Net"));
  ASSERT_NE(base.cells(0).range().start().line(), moved.cells(0).range().start().line());
  const auto c = view::compare_documents(base, moved);
  ASSERT_EQ(c.cells_size(), 1);
  EXPECT_EQ(c.cells(0).added_size(), 0);
  EXPECT_EQ(c.cells(0).removed_size(), 0);
  EXPECT_EQ(c.cells(0).changed_size(), 0) << json(c);
  EXPECT_EQ(c.cells(0).optimized_added_size(), 0);
  EXPECT_EQ(c.cells(0).optimized_removed_size(), 0);
  EXPECT_EQ(c.cells(0).optimized_changed_size(), 0) << json(c);
  EXPECT_EQ(view::canonical_bytes(c.cells(0).before()), view::canonical_bytes(c.cells(0).after()));
}

protocol::Cell cell_named(const std::string& name, const std::string& cls,
                          const std::vector<std::string>& node_ids) {
  protocol::Cell c;
  c.set_name(name);
  c.set_class_name(cls);
  c.set_compiled(true);
  for (const auto& id : node_ids) {
    auto* n = c.add_nodes();
    n->set_id(id);
    n->set_kind("op");
    n->set_op("ReLU");
  }
  return c;
}

TEST(CompareDocuments, MatchesCellsByNameThenClassThenTheOnlyOneLeft) {
  protocol::GraphDocument base;
  *base.add_cells() = cell_named("resnet18()", "ResNet", {"a", "b"});
  *base.add_cells() = cell_named("Head", "Head", {"h"});
  *base.add_cells() = cell_named("Gone", "Gone", {"g"});
  protocol::GraphDocument current;
  *current.add_cells() = cell_named("Head", "Head", {"h", "h2"});         // by name
  *current.add_cells() = cell_named("resnet34()", "ResNet", {"a", "c"});  // by class
  *current.add_cells() = cell_named("Fresh", "Fresh", {"f"});             // the base has none left
  auto c = view::compare_documents(base, current);
  ASSERT_EQ(c.cells_size(), 3);
  EXPECT_EQ(c.cells(0).base_cell(), "Head");
  EXPECT_EQ(ids(c.cells(0).added()), std::vector<std::string>{"h2"});
  EXPECT_EQ(c.cells(1).base_cell(), "resnet18()");
  EXPECT_EQ(ids(c.cells(1).added()), std::vector<std::string>{"c"});
  ASSERT_EQ(c.cells(1).removed_size(), 1);
  EXPECT_EQ(c.cells(1).removed(0).id(), "b");
  // One Cell left on each side (Fresh, Gone): compared with each other.
  EXPECT_EQ(c.cells(2).base_cell(), "Gone");
  EXPECT_EQ(c.removed_cells_size(), 0);

  // Two left on one side: no pairing; the new Cell is all added, the old one listed.
  *current.add_cells() = cell_named("Other", "Other", {"o"});
  c = view::compare_documents(base, current);
  EXPECT_EQ(c.cells(2).base_cell(), "");
  EXPECT_EQ(ids(c.cells(2).added()), std::vector<std::string>{"f"});
  EXPECT_FALSE(c.cells(2).has_before());
  EXPECT_EQ(ids(c.removed_cells()), std::vector<std::string>{"Gone"});
}

TEST(CompareDocuments, CountsTheErrorsOfTheBase) {
  const auto base =
      document_of(replaced(kModel, "nn.Dense(16 * 32 * 32, 10)", "nn.Dense(100, 10)"));
  const auto current = document_of(kModel);
  const auto c = view::compare_documents(base, current);
  EXPECT_GE(c.base_errors(), 1u);
  EXPECT_EQ(c.base_error().rfind("model.py:13: ", 0), 0u) << c.base_error();
  // The base's graph stops at the failing fc: one node fewer.
  EXPECT_EQ(c.cells(0).before().nodes() + 1, c.cells(0).after().nodes());
  EXPECT_EQ(ids(c.cells(0).added()), std::vector<std::string>{"fc"});
}

// ---- processes and git ----------------------------------------------------------------------

TEST(RunProcess, CapturesOutputAndStatusAndEnforcesTheLimits) {
  auto r = run_process({"sh", "-c", "echo out; echo err >&2; echo \"$CS_TEST_VAR\"; exit 3"},
                       {"CS_TEST_VAR=set"}, 5s, 1024);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\nset\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_FALSE(r.timed_out);

  r = run_process({"sleep", "5"}, {}, 100ms, 1024);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, -1);

  r = run_process({"sh", "-c", "yes"}, {}, 5s, 4096);
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.out.size(), 4096u);

  r = run_process({"cellscope-no-such-program"}, {}, 1s, 1024);
  EXPECT_NE(r.spawn_error.find("not installed"), std::string::npos) << r.spawn_error;

  // "NAME=" removes a variable.
  r = run_process({"sh", "-c", "echo \"[${HOME-unset}]\""}, {"HOME="}, 5s, 1024);
  EXPECT_EQ(r.out, "[unset]\n");
}

// git in `dir` (with an identity for commits); fails the test when it fails.
void git_in(const fs::path& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"git",
                                   "-C",
                                   dir.string(),
                                   "-c",
                                   "user.name=Cellscope Test",
                                   "-c",
                                   "user.email=test@cellscope.invalid",
                                   "-c",
                                   "commit.gpgsign=false",
                                   "-c",
                                   "init.defaultBranch=main"};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto r = run_process(argv, {"GIT_DIR=", "GIT_WORK_TREE="}, 10s, 1 << 20);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.spawn_error;
}

bool have_git() { return run_process({"git", "--version"}, {}, 5s, 1024).exit_code == 0; }

TEST(GitHead, ReadsTheCommittedTextAndSaysWhyThereIsNone) {
  ASSERT_TRUE(have_git()) << "git is needed (scripts/setup.sh installs it)";
  TempDir dir;
  const std::string model = dir.write("models/net.py", "print('v1')\n");
  // Not in a repository.
  GitOptions git;
  auto head = read_head_file(model, git);
  EXPECT_EQ(head.error, "net.py is not in a git repository");

  git_in(dir.path(), {"init", "-q"});
  head = read_head_file(model, git);
  EXPECT_EQ(head.error, "the git repository of net.py has no commits yet");

  git_in(dir.path(), {"add", "models/net.py"});
  git_in(dir.path(), {"commit", "-q", "-m", "v1"});
  (void)dir.write("models/net.py", "print('v2, not committed')\n");
  head = read_head_file(model, git);
  EXPECT_EQ(head.error, "");
  EXPECT_EQ(head.text, "print('v1')\n");
  EXPECT_EQ(head.relative, "models/net.py");
  EXPECT_GE(head.commit.size(), 7u);
  EXPECT_EQ(head.root, fs::weakly_canonical(dir.path()));

  const std::string fresh = dir.write("models/fresh.py", "x = 1\n");
  head = read_head_file(fresh, git);
  EXPECT_EQ(head.error,
            "fresh.py is not in the last commit (" + head.commit + "): it is not tracked by git");
  git_in(dir.path(), {"add", "models/fresh.py"});
  head = read_head_file(fresh, git);
  EXPECT_EQ(head.error, "fresh.py is not in the last commit (" + head.commit +
                            "): it is added but not committed yet");

  // A git that is not there.
  GitOptions missing;
  missing.git = "cellscope-no-such-git";
  head = read_head_file(model, missing);
  EXPECT_NE(head.error.find("not installed"), std::string::npos) << head.error;
}

TEST(GitHead, RunsNoProgramTheRepositoryNames) {
  ASSERT_TRUE(have_git());
  TempDir dir;
  const std::string model = dir.write("net.py", "x = 1\n");
  const fs::path marker = dir.path() / "ran";
  const std::string hook = dir.write("monitor.sh", "#!/bin/sh\ntouch '" + marker.string() + "'\n");
  fs::permissions(hook, fs::perms::owner_all);
  git_in(dir.path(), {"init", "-q"});
  git_in(dir.path(), {"add", "net.py"});
  git_in(dir.path(), {"commit", "-q", "-m", "one"});
  git_in(dir.path(), {"config", "core.fsmonitor", hook});
  // An untracked file: the index is read (ls-files), which would run the monitor.
  const std::string fresh = dir.write("fresh.py", "y = 2\n");
  EXPECT_NE(read_head_file(fresh).error.find("not tracked by git"), std::string::npos);
  EXPECT_EQ(read_head_file(model).text, "x = 1\n");
  EXPECT_FALSE(fs::exists(marker));
}

TEST(GitHead, TheBaseReadsTrackedImportsFromTheCommitAndTheRestFromTheFallback) {
  ASSERT_TRUE(have_git());
  TempDir dir;
  const std::string model = dir.write("net.py", "from layers import width\n");
  const std::string layers = dir.write("layers.py", "width = 8\n");
  git_in(dir.path(), {"init", "-q"});
  git_in(dir.path(), {"add", "."});
  git_in(dir.path(), {"commit", "-q", "-m", "one"});
  (void)dir.write("layers.py", "width = 16\n");
  const std::string untracked = dir.write("extra.py", "y = 2\n");
  const auto head = read_head_file(model);
  ASSERT_EQ(head.error, "");
  graphcore::DiskSourceProvider disk;
  HeadSourceProvider sources(head, disk);
  EXPECT_EQ(sources.read(model), "from layers import width\n");
  EXPECT_EQ(sources.read(layers), "width = 8\n");  // as committed
  EXPECT_EQ(sources.read(untracked), "y = 2\n");   // not in the commit: the disk's
  EXPECT_EQ(sources.read(dir.path() / "missing.py"), std::nullopt);
}

// ---- the base document ------------------------------------------------------------------------

TEST(CompareBase, HeadIsTheCommittedModelAnalysedWithTheFilesOwnOptions) {
  ASSERT_TRUE(have_git());
  TempDir dir;
  const std::string model = dir.write("model.py", kModel);
  git_in(dir.path(), {"init", "-q"});
  git_in(dir.path(), {"add", "model.py"});
  git_in(dir.path(), {"commit", "-q", "-m", "base"});
  (void)dir.write("model.py",
                  replaced(kModel, "nn.Dense(16 * 32 * 32, 10)", "nn.Dense(16 * 32 * 32, 12)"));
  graphcore::DiskSourceProvider disk;
  std::vector<std::string> asked;
  const auto options_for = [&](const std::string& p) {
    asked.push_back(p);
    return options_for_test(p);
  };
  auto built = build_base_document("HEAD", model, options_for, hardware(), disk);
  ASSERT_EQ(built.error, "");
  EXPECT_EQ(asked, std::vector<std::string>{model});
  EXPECT_EQ(built.base.kind(), "head");
  EXPECT_EQ(built.base.label(), "HEAD (" + built.base.commit() + ")");
  ASSERT_TRUE(built.document);
  const auto current = document_at(model);
  const auto c = view::compare_documents(*built.document, current);
  ASSERT_EQ(c.cells_size(), 1);
  EXPECT_EQ(c.cells(0).changed_size(), 1) << json(c);  // fc only
  EXPECT_EQ(c.cells(0).changed(0).id(), "fc");
  EXPECT_EQ(c.cells(0).added_size() + c.cells(0).removed_size(), 0);

  // A file outside any repository: a message, no document.
  TempDir elsewhere;
  const std::string loose = elsewhere.write("loose.py", kModel);
  built = build_base_document("head", loose, options_for, hardware(), disk);
  EXPECT_EQ(built.error, "loose.py is not in a git repository");
  EXPECT_FALSE(built.document);
  EXPECT_EQ(built.base.label(), "HEAD");
}

TEST(CompareBase, AnotherFileIsAnalysedWithItsOwnOptions) {
  TempDir dir;
  const std::string model = dir.write("a/model.py", kModel);
  (void)dir.write("b/model.py", replaced(kModel, "nn.ReLU()", "nn.GELU()"));
  (void)dir.write("a/other.py", kModel);
  graphcore::DiskSourceProvider disk;
  std::vector<std::string> asked;
  const auto options_for = [&](const std::string& p) {
    asked.push_back(p);
    return options_for_test(p);
  };
  // Relative to the file's directory; the same name: labelled by its path.
  auto built = build_base_document("../b/model.py", model, options_for, hardware(), disk);
  ASSERT_EQ(built.error, "");
  EXPECT_EQ(built.base.kind(), "file");
  EXPECT_EQ(built.base.label(), "../b/model.py");
  EXPECT_EQ(built.base.file(), (dir.path() / "b" / "model.py").string());
  EXPECT_EQ(asked, std::vector<std::string>{built.base.file()});
  const auto c = view::compare_documents(*built.document, document_at(model));
  const auto* relu = change_of(c.cells(0).changed(), "relu");
  ASSERT_NE(relu, nullptr) << json(c);
  EXPECT_EQ(json(field(*relu, "op")->before()), "\"GeLU\"");

  EXPECT_EQ(build_base_document("other.py", model, options_for, hardware(), disk).base.label(),
            "other.py");
  EXPECT_EQ(build_base_document("nope.py", model, options_for, hardware(), disk).error,
            "no such file: " + (dir.path() / "a" / "nope.py").string());
  EXPECT_EQ(build_base_document("model.py", model, options_for, hardware(), disk).error,
            "model.py is the file shown: choose another file, or compare with the last commit");
  (void)dir.write("a/notes.txt", "x");
  EXPECT_EQ(build_base_document("notes.txt", model, options_for, hardware(), disk).error,
            "notes.txt is not a Python file");
}

// ---- the view server ----------------------------------------------------------------------------

namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = boost::asio::ip::tcp;

struct View {
  websocket::stream<tcp::socket> ws;
  View(boost::asio::io_context& io, uint16_t port, const std::string& target) : ws(io) {
    ws.next_layer().connect({boost::asio::ip::make_address("127.0.0.1"), port});
    ws.handshake("127.0.0.1:" + std::to_string(port), target);
  }
  protocol::ViewMessage read() {
    beast::flat_buffer buffer;
    ws.read(buffer);
    protocol::ViewMessage m;
    EXPECT_TRUE(protocol::from_json(beast::buffers_to_string(buffer.data()), &m));
    return m;
  }
  // The next message with a comparison (others skipped).
  protocol::Comparison comparison() {
    for (;;) {
      auto m = read();
      if (m.has_comparison()) return m.comparison();
    }
  }
};

TEST(CompareView, TheViewsGetThePendingComparisonThenOneBeforeEachUpdate) {
  std::vector<std::pair<std::string, std::string>> requests;
  std::mutex mu;
  view::Handlers handlers;
  handlers.allow_file = [](const std::string&) { return std::string(); };
  handlers.compare = [&](const std::string& file, const std::string& base) {
    std::lock_guard lock(mu);
    requests.emplace_back(file, base);
  };
  view::ViewServer server({}, handlers);
  server.start();
  const auto base_doc = std::make_shared<const protocol::GraphDocument>(document_of(kModel));
  const auto edited =
      document_of(replaced(kModel, "nn.Dense(16 * 32 * 32, 10)", "nn.Dense(16 * 32 * 32, 12)"));
  server.update("m.py", edited, true, 1.0);

  boost::asio::io_context io;
  View view(io, server.port(), "/ws?file=m.py&token=" + server.token());
  EXPECT_TRUE(view.read().has_hello());
  EXPECT_TRUE(view.read().has_update());

  // The view asks; the server's owner is told.
  view.ws.write(boost::asio::buffer(std::string(R"({"compare":{"base":"HEAD"}})")));
  for (int i = 0; i < 200; ++i) {
    {
      std::lock_guard lock(mu);
      if (!requests.empty()) break;
    }
    std::this_thread::sleep_for(5ms);
  }
  {
    std::lock_guard lock(mu);
    ASSERT_EQ(requests.size(), 1u);
    EXPECT_EQ(requests[0], std::make_pair(std::string("m.py"), std::string("HEAD")));
  }

  protocol::CompareBase base;
  base.set_kind("head");
  base.set_label("HEAD (abc1234)");
  base.set_commit("abc1234");
  const uint64_t gen = server.compare_pending("m.py", base);
  auto c = view.comparison();
  EXPECT_TRUE(c.pending());
  EXPECT_EQ(c.base().label(), "HEAD (abc1234)");

  server.set_compare_base("m.py", gen, base, base_doc);
  c = view.comparison();
  EXPECT_FALSE(c.pending());
  EXPECT_EQ(c.seq(), 1u);
  ASSERT_EQ(c.cells_size(), 1);
  ASSERT_EQ(c.cells(0).changed_size(), 1);
  EXPECT_EQ(c.cells(0).changed(0).id(), "fc");
  ASSERT_TRUE(server.comparison("m.py"));
  EXPECT_EQ(server.comparison("m.py")->seq(), 1u);

  // A stale base (an older generation) is ignored.
  server.set_compare_base("m.py", gen - 1, base, nullptr, "stale");
  EXPECT_EQ(server.comparison("m.py")->error(), "");

  // A new document: its comparison first, then the update it names.
  server.update("m.py", document_of(kModel), true, 1.0);
  auto m = view.read();
  ASSERT_TRUE(m.has_comparison());
  EXPECT_EQ(m.comparison().seq(), 2u);
  EXPECT_EQ(m.comparison().cells(0).changed_size(), 0);
  m = view.read();
  ASSERT_TRUE(m.has_update());
  EXPECT_EQ(m.update().seq(), 2u);

  // A view connecting now gets the document, then the comparison.
  View late(io, server.port(), "/ws?file=m.py&token=" + server.token());
  EXPECT_TRUE(late.read().has_hello());
  EXPECT_TRUE(late.read().has_update());
  c = late.comparison();
  EXPECT_EQ(c.seq(), 2u);
  EXPECT_EQ(c.base().commit(), "abc1234");

  // A base that cannot be read: its message.
  const uint64_t gen2 = server.compare_pending("m.py", base);
  EXPECT_TRUE(view.comparison().pending());
  server.set_compare_base("m.py", gen2, base, nullptr, "m.py is not in a git repository");
  c = view.comparison();
  EXPECT_EQ(c.error(), "m.py is not in a git repository");
  EXPECT_EQ(c.cells_size(), 0);

  // Stopped: an empty comparison, and none for later views.
  server.stop_comparing("m.py");
  c = view.comparison();
  EXPECT_FALSE(c.has_base());
  EXPECT_FALSE(server.comparison("m.py"));
  server.stop();
}

TEST(CompareView, AServerThatCannotCompareSaysSo) {
  view::Handlers handlers;
  handlers.allow_file = [](const std::string&) { return std::string(); };
  view::ViewServer server({}, handlers);
  server.start();
  server.update("m.py", document_of(kModel), true, 1.0);
  boost::asio::io_context io;
  View view(io, server.port(), "/ws?file=m.py&token=" + server.token());
  view.ws.write(boost::asio::buffer(std::string(R"({"compare":{"base":"HEAD"}})")));
  const auto c = view.comparison();
  EXPECT_EQ(c.error(), "this server cannot compare graphs");
  server.stop();
}

}  // namespace
}  // namespace cellscope::server
