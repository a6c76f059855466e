// The view server's pure parts (server/view/security.h, delta.h), and the server itself over a
// real socket: access rules, the document and its deltas.
#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "commands.h"
#include "graphcore/analysis.h"
#include "protocol/document.h"
#include "view/delta.h"
#include "view/security.h"
#include "view/view_server.h"

namespace cellscope::server::view {
namespace {

namespace fs = std::filesystem;

TEST(ViewSecurity, TokensAreRandomHex) {
  const auto a = random_token();
  const auto b = random_token();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(ViewSecurity, ParsesTargetsAndCookies) {
  auto t = parse_target("/ws?token=abc&file=%2Ftmp%2Fa%20b.py&cell=Net&file=ignored");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->path, "/ws");
  EXPECT_EQ(t->query["token"], "abc");
  EXPECT_EQ(t->query["file"], "/tmp/a b.py");
  EXPECT_EQ(t->query["cell"], "Net");
  EXPECT_FALSE(parse_target("ws?x"));
  EXPECT_EQ(percent_decode("%zz%4"), "%zz%4");  // malformed escapes are kept
  EXPECT_EQ(percent_encode("/a b&c.py"), "/a%20b%26c.py");
  EXPECT_EQ(cookie_value("a=1; cellscope-token-80=xyz ;b=2", "cellscope-token-80"), "xyz");
  EXPECT_EQ(cookie_value("a=1", "cellscope-token-80"), "");
}

TEST(ViewSecurity, AccessRules) {
  AccessPolicy policy{"0123456789abcdef0123456789abcdef", 4242, {"vscode-webview://*"}};
  RequestFacts ok{"127.0.0.1:4242", "", "", "", policy.token};
  EXPECT_EQ(check_access(ok, policy).access, Access::Allowed);
  RequestFacts r = ok;
  r.query_token = "";
  EXPECT_EQ(check_access(r, policy).access, Access::Unauthorized);
  r.query_token = "0123456789abcdef0123456789abcdeX";
  EXPECT_EQ(check_access(r, policy).access, Access::Unauthorized);
  r.query_token = "";
  const std::string bearer = "Bearer " + policy.token;
  r.authorization = bearer;
  EXPECT_EQ(check_access(r, policy).access, Access::Allowed);
  r.authorization = "";
  const std::string cookie = "x=1; cellscope-token-4242=" + policy.token;
  r.cookie = cookie;
  EXPECT_EQ(check_access(r, policy).access, Access::Allowed);
  // A cookie for another port's server does not open this one.
  const std::string other = "cellscope-token-4243=" + policy.token;
  r.cookie = other;
  EXPECT_EQ(check_access(r, policy).access, Access::Unauthorized);
  // Origins: the server's own and VS Code webviews; others are forbidden even with the token.
  RequestFacts o = ok;
  for (const char* origin :
       {"http://127.0.0.1:4242", "http://localhost:4242", "vscode-webview://1abc"}) {
    o.origin = origin;
    EXPECT_EQ(check_access(o, policy).access, Access::Allowed) << origin;
  }
  for (const char* origin :
       {"http://evil.example", "http://127.0.0.1:4243", "null", "vscode-webviewx"}) {
    o.origin = origin;
    EXPECT_EQ(check_access(o, policy).access, Access::Forbidden) << origin;
  }
  // DNS rebinding: a Host that is not the loopback address of this port.
  RequestFacts h = ok;
  h.host = "evil.example:4242";
  EXPECT_EQ(check_access(h, policy).access, Access::Forbidden);
  h.host = "localhost:4242";
  EXPECT_EQ(check_access(h, policy).access, Access::Allowed);
}

protocol::GraphDocument document_of(const std::string& text,
                                    const std::string& target = "ascend910") {
  // One path for every document, so that consecutive documents differ only where the text does.
  static const fs::path dir = fs::temp_directory_path() / ("cellscope-view-test-" + random_token());
  fs::create_directories(dir);
  const auto file = (dir / "model.py").string();
  { std::ofstream(file) << text; }
  GraphOptions options;
  options.file = file;
  options.layer = "hardware";
  options.common.target = target;
  options.inputs = {"1,3,32,32"};
  graphcore::AnalysisOptions analysis;
  EXPECT_TRUE(graph_analysis_options(options, &analysis));
  graphcore::DiskSourceProvider disk;
  auto built = build_graph_document(options, analysis, disk);
  fs::remove(file);
  return built.document;
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

// A deeper model: one changed layer is a small part of its document.
const char* kDeepModel = R"(from mindspore import nn

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.body = nn.SequentialCell([nn.SequentialCell([nn.Conv2d(3 if i == 0 else 16, 16, 3), nn.BatchNorm2d(16), nn.ReLU()]) for i in range(8)])
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(16 * 32 * 32, 10)

    def construct(self, x):
        return self.fc(self.flatten(self.body(x)))
)";

TEST(ViewDelta, SlimDropsKernelDetailAndDetailsGiveItBack) {
  const auto doc = document_of(std::string(kModel) + "\nnet = Net()\n");
  ASSERT_EQ(doc.cells_size(), 1);
  const auto slim = slim_document(doc);
  EXPECT_LT(slim.ByteSizeLong(), doc.ByteSizeLong());
  std::string with_kernels;  // the convolution's kernel
  for (const auto& n : slim.cells(0).optimized().nodes()) {
    for (const auto& k : n.hardware()) {
      EXPECT_EQ(k.schedule_size(), 0);
      EXPECT_EQ(k.tiling_size(), 0);
      if (n.op().find("Conv2D") != std::string::npos) with_kernels = n.id();
    }
  }
  ASSERT_FALSE(with_kernels.empty());
  const auto details = node_details(doc, doc.cells(0).name(), with_kernels);
  EXPECT_TRUE(details.error().empty());
  ASSERT_GT(details.kernels_size(), 0);
  EXPECT_GT(details.kernels(0).schedule_size(), 0);
  EXPECT_FALSE(node_details(doc, doc.cells(0).name(), "nope").error().empty());
  EXPECT_FALSE(node_details(doc, "Nope", with_kernels).error().empty());
}

TEST(ViewDelta, DeltaAppliesToTheNewDocument) {
  const auto before = slim_document(document_of(kModel));
  std::string edited = kModel;
  edited.replace(edited.find("nn.Dense(16 * 32 * 32, 10)"), 26, "nn.Dense(16 * 32 * 32, 12)");
  // A new op in the middle: a removed/added node and a new order.
  edited.replace(edited.find("x = self.relu(self.conv(x))"), 27,
                 "x = self.relu(self.conv(x))\n        x = x * 2");
  const auto after = slim_document(document_of(edited));
  const auto delta = diff_documents(before, after, 7);
  EXPECT_EQ(delta.base(), 7u);
  ASSERT_EQ(delta.cells_size(), 1);
  EXPECT_LT(delta.ByteSizeLong(), after.ByteSizeLong());
  // Unchanged nodes are not sent.
  for (const auto& n : delta.cells(0).nodes()) EXPECT_NE(n.id(), "conv") << n.id();
  auto applied = before;
  ASSERT_TRUE(apply_delta(delta, &applied));
  EXPECT_EQ(canonical_bytes(applied), canonical_bytes(after));

  // Identical documents: an empty node delta.
  const auto same = diff_documents(after, after, 8);
  EXPECT_EQ(same.cells(0).nodes_size(), 0);
  EXPECT_EQ(same.cells(0).removed_size(), 0);
  EXPECT_EQ(same.cells(0).order_size(), 0);
  EXPECT_EQ(same.cells(0).optimized_nodes_size(), 0);
}

// The server over a real socket, with Beast as the client.
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = boost::asio::ip::tcp;

int http_status(uint16_t port, const std::string& target, const std::string& origin = "") {
  boost::asio::io_context io;
  tcp::socket socket(io);
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, "127.0.0.1:" + std::to_string(port));
  if (!origin.empty()) req.set(http::field::origin, origin);
  http::write(socket, req);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(socket, buffer, res);
  return static_cast<int>(res.result_int());
}

// A view over a real WebSocket (Beast as the client), reading proto3-JSON ViewMessages.
struct ViewClient {
  websocket::stream<tcp::socket> ws;
  ViewClient(boost::asio::io_context& io, uint16_t port, const std::string& target) : ws(io) {
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
};

TEST(ViewServer, ServesDocumentsAndDeltasToAuthorisedViewsOnly) {
  ViewServer server({}, Handlers{[](const std::string& f) -> std::string {
                                   return f == "m.py" ? "" : "not served";
                                 },
                                 {},
                                 {}});
  server.start();
  const uint16_t port = server.port();
  const auto doc = document_of(kDeepModel);
  server.update("m.py", doc, true, 1.0);

  EXPECT_EQ(http_status(port, "/"), 401);
  EXPECT_EQ(http_status(port, "/?token=" + server.token()), 200);
  EXPECT_EQ(http_status(port, "/app.js?token=" + server.token()), 200);
  EXPECT_EQ(http_status(port, "/nope?token=" + server.token()), 404);
  EXPECT_EQ(http_status(port, "/?token=" + server.token(), "http://evil.example"), 403);
  EXPECT_EQ(server.url("m.py", "Net"), "http://127.0.0.1:" + std::to_string(port) +
                                           "/?token=" + server.token() + "&file=m.py&cell=Net");

  boost::asio::io_context io;
  ViewClient client(io, port, "/ws?file=m.py&token=" + server.token());
  auto& ws = client.ws;
  auto read = [&client] { return client.read(); };
  EXPECT_TRUE(read().has_hello());
  const auto first = read();
  ASSERT_TRUE(first.has_update());
  EXPECT_EQ(first.update().seq(), 1u);
  EXPECT_EQ(first.update().document().cells(0).nodes_size(), doc.cells(0).nodes_size());
  EXPECT_EQ(server.connections(), 1u);
  EXPECT_TRUE(server.watching("m.py"));

  // A small change goes out as a delta that rebuilds the new document.
  std::string edited = kDeepModel;
  edited.replace(edited.find("nn.Dense(16 * 32 * 32, 10)"), 26, "nn.Dense(16 * 32 * 32, 12)");
  const auto doc2 = document_of(edited);
  server.update("m.py", doc2, true, 1.0);
  const auto second = read();
  ASSERT_TRUE(second.has_update());
  EXPECT_EQ(second.update().seq(), 2u);
  ASSERT_TRUE(second.update().has_delta());
  auto rebuilt = first.update().document();
  ASSERT_TRUE(apply_delta(second.update().delta(), &rebuilt));
  EXPECT_EQ(canonical_bytes(rebuilt), canonical_bytes(slim_document(doc2)));
  EXPECT_TRUE(read().has_status());  // "ok"

  // A document that does not compile: a failed status, and the graph stays.
  auto broken = doc2;
  broken.mutable_cells(0)->set_compiled(false);
  server.update("m.py", broken, false, 1.0);
  const auto failed = read();
  ASSERT_TRUE(failed.has_status());
  EXPECT_EQ(failed.status().state(), "failed");

  // Details on request.
  std::string kernel_node;
  for (const auto& n : doc2.cells(0).optimized().nodes())
    if (n.hardware_size() > 0 && n.op().find("Conv2D") != std::string::npos) kernel_node = n.id();
  ws.write(boost::asio::buffer(R"({"details":{"cell":")" + doc2.cells(0).name() + R"(","node":")" +
                               kernel_node + R"("}})"));
  const auto details = read();
  ASSERT_TRUE(details.has_details());
  EXPECT_EQ(details.details().seq(), 2u);
  EXPECT_GT(details.details().kernels(0).schedule_size(), 0);

  // Another file, or no token: refused at the handshake.
  websocket::stream<tcp::socket> other(io);
  other.next_layer().connect({boost::asio::ip::make_address("127.0.0.1"), port});
  EXPECT_THROW(
      other.handshake("127.0.0.1:" + std::to_string(port), "/ws?file=x.py&token=" + server.token()),
      beast::system_error);
  websocket::stream<tcp::socket> anonymous(io);
  anonymous.next_layer().connect({boost::asio::ip::make_address("127.0.0.1"), port});
  EXPECT_THROW(anonymous.handshake("127.0.0.1:" + std::to_string(port), "/ws?file=m.py"),
               beast::system_error);
  server.stop();
}

// Lazy documents: the skeleton and the per-scope answers together hold the whole Cell, once.
TEST(ViewLazy, SkeletonAndScopeNodesCoverTheCell) {
  auto slim = slim_document(document_of(kDeepModel));
  const std::string before = canonical_bytes(slim);
  const auto& cell = slim.cells(0);
  ASSERT_GT(cell.nodes_size(), 20);
  protocol::ViewUpdate small;
  EXPECT_FALSE(lazy_update(&slim, kLazyThreshold, &small));
  EXPECT_FALSE(small.has_document());

  protocol::ViewUpdate update;
  ASSERT_TRUE(lazy_update(&slim, 10, &update));
  EXPECT_EQ(canonical_bytes(slim), before);  // left as it was
  ASSERT_EQ(update.skeletons_size(), 1);
  EXPECT_EQ(update.document().cells(0).nodes_size(), 0);
  EXPECT_EQ(update.document().cells(0).optimized().nodes_size(), 0);
  EXPECT_EQ(update.document().cells(0).name(), cell.name());
  EXPECT_EQ(update.document().cells(0).optimized().kernels(), cell.optimized().kernels());
  const auto& skeleton = update.skeletons(0);
  EXPECT_EQ(skeleton.nodes(), static_cast<uint32_t>(cell.nodes_size()));

  const auto groups = cell_groups(cell);
  std::map<std::string, std::string> group_of, optimized_group_of;
  for (int i = 0; i < cell.nodes_size(); ++i)
    group_of[cell.nodes(i).id()] = groups.semantic[static_cast<size_t>(i)];
  for (int i = 0; i < cell.optimized().nodes_size(); ++i)
    optimized_group_of[cell.optimized().nodes(i).id()] = groups.optimized[static_cast<size_t>(i)];

  std::map<std::string, int> seen, optimized_seen;
  std::set<std::string> boundary;
  uint32_t direct = 0, optimized_direct = 0;
  bool root_found = false;
  for (const auto& s : skeleton.scopes()) {
    if (s.scope().empty()) {
      root_found = true;
      EXPECT_EQ(s.total_nodes(), static_cast<uint32_t>(cell.nodes_size()));
      EXPECT_EQ(s.total_optimized_nodes(), static_cast<uint32_t>(cell.optimized().nodes_size()));
    }
    direct += s.nodes();
    optimized_direct += s.optimized_nodes();
    const auto nodes = scope_nodes(cell, groups, s.scope());
    EXPECT_EQ(nodes.nodes_size(), static_cast<int>(s.nodes()));
    EXPECT_EQ(nodes.optimized_nodes_size(), static_cast<int>(s.optimized_nodes()));
    ASSERT_EQ(nodes.index_size(), nodes.nodes_size());
    for (int i = 0; i < nodes.nodes_size(); ++i) {
      ++seen[nodes.nodes(i).id()];
      EXPECT_EQ(cell.nodes(static_cast<int>(nodes.index(i))).id(), nodes.nodes(i).id());
      EXPECT_GE(nodes.index(i), s.first());
    }
    for (int i = 0; i < nodes.optimized_nodes_size(); ++i) {
      ++optimized_seen[nodes.optimized_nodes(i).id()];
      EXPECT_EQ(cell.optimized().nodes(static_cast<int>(nodes.optimized_index(i))).id(),
                nodes.optimized_nodes(i).id());
    }
    for (const auto& b : nodes.boundary()) {
      EXPECT_NE(b.src_scope(), b.tgt_scope());
      EXPECT_TRUE(b.src_scope() == s.scope() || b.tgt_scope() == s.scope());
      EXPECT_EQ(group_of[b.src()], b.src_scope());
      EXPECT_EQ(group_of[b.tgt()], b.tgt_scope());
      boundary.insert(b.src() + ">" + b.tgt() + "@" + s.scope());
    }
    for (const auto& b : nodes.optimized_boundary()) {
      EXPECT_EQ(optimized_group_of[b.src()], b.src_scope());
      EXPECT_EQ(optimized_group_of[b.tgt()], b.tgt_scope());
    }
    if (s.scope().empty()) {
      EXPECT_EQ(canonical_bytes(nodes), canonical_bytes(skeleton.root()));
    }
  }
  EXPECT_TRUE(root_found);
  EXPECT_EQ(direct, static_cast<uint32_t>(cell.nodes_size()));
  EXPECT_EQ(optimized_direct, static_cast<uint32_t>(cell.optimized().nodes_size()));
  EXPECT_EQ(seen.size(), static_cast<size_t>(cell.nodes_size()));
  for (const auto& [id, n] : seen) EXPECT_EQ(n, 1) << id;
  EXPECT_EQ(optimized_seen.size(), static_cast<size_t>(cell.optimized().nodes_size()));
  for (const auto& [id, n] : optimized_seen) EXPECT_EQ(n, 1) << id;

  // Every edge between two scopes: counted once in the skeleton, in both scopes' boundaries.
  uint32_t crossing = 0;
  for (const auto& n : cell.nodes())
    for (const auto& e : n.inputs()) {
      if (!group_of.count(e.node()) || group_of[e.node()] == group_of[n.id()]) continue;
      ++crossing;
      EXPECT_TRUE(boundary.count(e.node() + ">" + n.id() + "@" + group_of[n.id()])) << n.id();
      EXPECT_TRUE(boundary.count(e.node() + ">" + n.id() + "@" + group_of[e.node()])) << n.id();
    }
  uint32_t counted = 0;
  for (const auto& e : skeleton.edges()) counted += e.count();
  EXPECT_GT(crossing, 0u);
  EXPECT_EQ(counted, crossing);
}

TEST(ViewServer, SendsLargeCellsLazily) {
  ServerOptions options;
  options.lazy_threshold = 10;
  ViewServer server(options,
                    Handlers{[](const std::string&) -> std::string { return ""; }, {}, {}});
  server.start();
  const uint16_t port = server.port();
  const auto doc = document_of(kDeepModel);
  server.update("m.py", doc, true, 1.0);

  boost::asio::io_context io;
  ViewClient client(io, port, "/ws?file=m.py&token=" + server.token());
  auto& ws = client.ws;
  auto read = [&client] { return client.read(); };
  EXPECT_TRUE(read().has_hello());
  const auto first = read();
  ASSERT_TRUE(first.has_update());
  ASSERT_EQ(first.update().skeletons_size(), 1);
  EXPECT_EQ(first.update().document().cells(0).nodes_size(), 0);
  const std::string cell = doc.cells(0).name();

  ws.write(boost::asio::buffer(R"({"nodes":{"cell":")" + cell + R"(","scope":"body.0"}})"));
  const auto nodes = read();
  ASSERT_TRUE(nodes.has_nodes());
  EXPECT_EQ(nodes.nodes().seq(), 1u);
  EXPECT_EQ(nodes.nodes().scope(), "body.0");
  EXPECT_TRUE(nodes.nodes().error().empty());
  EXPECT_GT(nodes.nodes().nodes_size(), 0);
  for (const auto& n : nodes.nodes().nodes()) EXPECT_EQ(n.id().rfind("body.0", 0), 0u) << n.id();

  ws.write(boost::asio::buffer(std::string(R"({"nodes":{"cell":"Nope","scope":""}})")));
  EXPECT_FALSE(read().nodes().error().empty());

  // An update of a lazy document is a full one (a new skeleton), never a delta.
  server.update("m.py", doc, true, 1.0);
  const auto second = read();
  ASSERT_TRUE(second.has_update());
  EXPECT_EQ(second.update().seq(), 2u);
  EXPECT_FALSE(second.update().has_delta());
  EXPECT_EQ(second.update().skeletons_size(), 1);
  server.stop();
}

}  // namespace
}  // namespace cellscope::server::view
