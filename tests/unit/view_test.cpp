// The view server's pure parts (server/view/security.h, delta.h), and the server itself over a
// real socket: access rules, the document and its deltas.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "commands.h"
#include "graphcore/analysis.h"
#include "protocol/document.h"
#include "temp_dir.h"
#include "view/delta.h"
#include "view/security.h"
#include "view/train_view.h"
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
  EXPECT_EQ(parse_target("/a%zz%4?q=1+2")->path, "/a%zz%4");  // malformed escapes are kept
  EXPECT_EQ(parse_target("/a%zz%4?q=1+2")->query["q"], "1 2");
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
  // Removed when the test binary exits (it was left behind: 630 of them in /tmp after a while).
  static const cellscope::testing::TempDir temp("cellscope-view-test-");
  const fs::path& dir = temp.path();
  const auto file = (dir / "model.py").string();
  { std::ofstream(file) << text; }
  GraphOptions options;
  options.file = file;
  options.pipeline.layer = "hardware";
  options.common.target = target;
  options.inputs = {"1,3,32,32"};
  graphcore::AnalysisOptions analysis;
  EXPECT_TRUE(graph_analysis_options(options, &analysis));
  graphcore::DiskSourceProvider disk;
  auto built = build_graph_document(options.file, analysis, options.pipeline, disk);
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
  size_t dma = 0;
  for (const auto& n : slim.cells(0).optimized().nodes()) {
    for (const auto& k : n.hardware()) {
      EXPECT_EQ(k.schedule_size(), 0);
      EXPECT_EQ(k.tiling_size(), 0);
      EXPECT_EQ(k.loops_size(), 0);
      dma += static_cast<size_t>(k.dma_size());  // kept: the core timeline's DMA channel rows
      if (n.op().find("Conv2D") != std::string::npos) with_kernels = n.id();
    }
  }
  ASSERT_FALSE(with_kernels.empty());
  EXPECT_GT(dma, 0u);
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
                                 {},
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
                    Handlers{[](const std::string&) -> std::string { return ""; }, {}, {}, {}, {}});
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

// ---------------------------------------------------------------------------------------------
// Under load (issue 14): the accept back-off, the connection limit, the handshake timeout, the
// message size limit and slow views.

// The lines logged while alive (spdlog's default logger replaced, then restored).
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>("capture", sink_);
    logger->set_level(spdlog::level::info);
    spdlog::set_default_logger(std::move(logger));
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // Lines containing `text`.
  size_t count(const std::string& text) const { return sink_->count(text); }

 private:
  class Sink : public spdlog::sinks::base_sink<std::mutex> {
   public:
    size_t count(const std::string& text) {
      std::lock_guard lock(mutex_);
      size_t n = 0;
      for (const auto& l : lines_) n += l.find(text) != std::string::npos ? 1 : 0;
      return n;
    }

   protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
      lines_.emplace_back(msg.payload.data(), msg.payload.size());
    }
    void flush_() override {}

   private:
    std::vector<std::string> lines_;
  };
  std::shared_ptr<Sink> sink_ = std::make_shared<Sink>();
  std::shared_ptr<spdlog::logger> previous_;
};

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto sec = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return sec(usage.ru_utime) + sec(usage.ru_stime);
}

// A plain TCP client socket (a descriptor of its own).
struct RawClient {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  RawClient() = default;
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;
  ~RawClient() {
    if (fd >= 0) ::close(fd);
  }
  bool connect(uint16_t port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  }
  bool send(const std::string& data) const {
    return ::send(fd, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size());
  }
  // Reads until the server closes the connection (true) or `timeout_ms` passes (false).
  bool read_to_end(std::string* out, int timeout_ms) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
      if (left <= 0) return false;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char buf[4096];
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return true;  // EOF or reset: closed
      out->append(buf, static_cast<size_t>(n));
    }
  }
};

std::string get_request(uint16_t port, const std::string& target) {
  return "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
         "\r\nConnection: close\r\n\r\n";
}

// The regression of issue 14: out of descriptors, the server spun on accept at ~97 % CPU and
// logged 1.4 million lines in 5 s. Now it backs off (10 ms doubling to 1 s), logs the burst once,
// and serves the waiting connection when descriptors are free again.
TEST(ViewServerLoad, AcceptBacksOffWhenOutOfDescriptorsAndRecovers) {
#ifdef CELLSCOPE_SANITIZED
  // The sanitizer runtimes need descriptors of their own: UBSan's vptr check tests memory with a
  // pipe and, out of descriptors, reports a false "invalid vptr". The plain build runs this.
  GTEST_SKIP() << "not under sanitizers: UBSan's vptr check needs a free descriptor";
#endif
  LogCapture log;
  ViewServer server({},
                    Handlers{[](const std::string&) -> std::string { return ""; }, {}, {}, {}, {}});
  server.start();
  const uint16_t port = server.port();
  RawClient client;  // its descriptor before they run out
  ASSERT_GE(client.fd, 0);

  // Run out of descriptors: the limit just above the highest open one, every free one taken.
  int highest = 0;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd"))
    highest = std::max(highest, std::stoi(entry.path().filename().string()));
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
  rlimit low = old;
  low.rlim_cur = static_cast<rlim_t>(highest) + 1;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> taken;
  for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) taken.push_back(fd);
  EXPECT_EQ(errno, EMFILE);

  // The kernel completes the connection; the server cannot accept it.
  ASSERT_TRUE(client.connect(port));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const double cpu0 = cpu_seconds();
  const auto errors0 = server.stats().accept_errors;
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double cpu = cpu_seconds() - cpu0;
  const auto attempts = server.stats().accept_errors - errors0;

  for (const int fd : taken) ::close(fd);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);

  EXPECT_LT(cpu, 0.2) << "spinning on accept";
  EXPECT_GE(attempts, 1u);
  EXPECT_LE(attempts, 10u) << "no back-off";  // 10 ms doubling: ~7 attempts in a second
  EXPECT_EQ(log.count("accept failed"), 1u);  // once per burst
  EXPECT_EQ(log.count("accept still failing"), 0u);

  // Descriptors free: the waiting connection is served within the back-off's 1 s.
  ASSERT_TRUE(client.send(get_request(port, "/?token=" + server.token())));
  std::string response;
  EXPECT_TRUE(client.read_to_end(&response, 3000));
  EXPECT_EQ(response.rfind("HTTP/1.1 200", 0), 0u) << response.substr(0, 100);
  EXPECT_EQ(log.count("accepting connections again after"), 1u);  // with the count
  EXPECT_EQ(http_status(port, "/?token=" + server.token()), 200);
  server.stop();
}

TEST(ViewServerLoad, ConnectionsOverTheLimitGet503AndAreClosed) {
  LogCapture log;
  ServerOptions options;
  options.max_connections = 2;
  ViewServer server(options,
                    Handlers{[](const std::string&) -> std::string { return ""; }, {}, {}, {}, {}});
  server.start();
  const uint16_t port = server.port();
  // Two idle connections take the two places.
  auto first = std::make_unique<RawClient>();
  RawClient second;
  ASSERT_TRUE(first->connect(port));
  ASSERT_TRUE(second.connect(port));
  for (int i = 0; i < 100 && server.stats().open < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(server.stats().open, 2u);

  // Over the limit: a 503 and a close, quickly (not hung until some timeout).
  for (int i = 0; i < 3; ++i) {
    RawClient over;
    ASSERT_TRUE(over.connect(port));
    over.send(get_request(port, "/?token=" + server.token()));
    std::string response;
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(over.read_to_end(&response, 2000)) << "not closed";
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1500));
    EXPECT_EQ(response.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << response;
    EXPECT_NE(response.find("Connection: close"), std::string::npos);
  }
  EXPECT_EQ(server.stats().refused, 3u);
  EXPECT_EQ(log.count("answering new ones 503"), 1u);  // once per burst

  // A place frees up: served again, and the burst is summed up.
  first.reset();
  for (int i = 0; i < 100 && server.stats().open > 1; ++i) {
    // The server notices the close only when it reads: poke it with nothing to wait for.
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // The first connection is idle (no request): its close is seen at once by its pending read.
  EXPECT_EQ(server.stats().open, 1u);
  EXPECT_EQ(http_status(port, "/?token=" + server.token()), 200);
  EXPECT_EQ(log.count("refused 3 connections over the limit of 2"), 1u);
  server.stop();
}

TEST(ViewServerLoad, SlowHandshakesAreCut) {
  ServerOptions options;
  options.handshake_timeout = std::chrono::milliseconds(400);
  ViewServer server(options,
                    Handlers{[](const std::string&) -> std::string { return ""; }, {}, {}, {}, {}});
  server.start();
  const uint16_t port = server.port();
  // Slow-loris: a WebSocket upgrade request trickled a byte every 20 ms (it would take ~4 s).
  RawClient loris;
  ASSERT_TRUE(loris.connect(port));
  const std::string request = "GET /ws?file=m.py&token=" + server.token() +
                              " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                              "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                              "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: "
                              "dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
  const auto t0 = std::chrono::steady_clock::now();
  bool cut = false;
  for (const char c : request) {
    if (!loris.send(std::string(1, c))) {
      cut = true;
      break;
    }
    pollfd p{loris.fd, POLLIN, 0};
    if (::poll(&p, 1, 20) > 0) {  // the server closed it
      char b = 0;
      if (::recv(loris.fd, &b, 1, MSG_DONTWAIT) <= 0) {
        cut = true;
        break;
      }
    }
  }
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_TRUE(cut);
  EXPECT_GE(took, std::chrono::milliseconds(350));
  EXPECT_LT(took, std::chrono::milliseconds(1500));
  for (int i = 0; i < 100 && server.stats().open > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(server.stats().timeouts, 1u);
  EXPECT_EQ(server.stats().open, 0u);
  // A request sent at once is served.
  EXPECT_EQ(http_status(port, "/?token=" + server.token()), 200);
  server.stop();
}

TEST(ViewServerLoad, FragmentedMessagesAreReassembledAndOversizedOnesClosedWith1009) {
  ServerOptions options;
  options.max_message_bytes = 1024;
  ViewServer server(options,
                    Handlers{[](const std::string&) -> std::string { return ""; }, {}, {}, {}, {}});
  server.start();
  const uint16_t port = server.port();
  const auto doc = document_of(kModel);
  server.update("m.py", doc, true, 1.0);
  const std::string target = "/ws?file=m.py&token=" + server.token();
  boost::asio::io_context io;

  // A request in three fragments (RFC 6455 5.4): reassembled, answered.
  {
    ViewClient client(io, port, target);
    EXPECT_TRUE(client.read().has_hello());
    EXPECT_TRUE(client.read().has_update());  // no status: the last one was "ok"
    const std::string request =
        R"({"details":{"cell":")" + doc.cells(0).name() + R"(","node":"nope"}})";
    const size_t third = request.size() / 3;
    client.ws.auto_fragment(false);
    client.ws.write_some(false, boost::asio::buffer(request.substr(0, third)));
    client.ws.write_some(false, boost::asio::buffer(request.substr(third, third)));
    client.ws.write_some(true, boost::asio::buffer(request.substr(2 * third)));
    const auto answer = client.read();
    ASSERT_TRUE(answer.has_details());
    EXPECT_FALSE(answer.details().error().empty());  // no node "nope", but answered
  }
  // Over the limit, in one frame or in fragments each under it: closed with 1009.
  for (const bool fragmented : {false, true}) {
    ViewClient client(io, port, target);
    EXPECT_TRUE(client.read().has_hello());
    EXPECT_TRUE(client.read().has_update());  // no status: the last one was "ok"
    const std::string big(3000, 'x');
    client.ws.auto_fragment(false);
    // The server may fail the connection before the last fragment is written.
    beast::error_code ignored;
    if (fragmented) {
      client.ws.write_some(false, boost::asio::buffer(big.substr(0, 700)), ignored);
      client.ws.write_some(false, boost::asio::buffer(big.substr(700, 700)), ignored);
      client.ws.write_some(true, boost::asio::buffer(big.substr(1400)), ignored);
    } else {
      client.ws.write(boost::asio::buffer(big), ignored);
    }
    beast::flat_buffer buffer;
    beast::error_code ec;
    client.ws.read(buffer, ec);
    EXPECT_TRUE(ec);  // closed (or reset after the close frame)
    EXPECT_EQ(client.ws.reason().code, websocket::close_code::too_big) << fragmented;
  }
  // Far over the limit and over what the socket buffers hold: the server drains the rest of the
  // message after its close frame, so the write completes and the close frame is read (a server
  // that closes with unread data resets the connection and the view loses the close code).
  {
    ViewClient client(io, port, target);
    EXPECT_TRUE(client.read().has_hello());
    EXPECT_TRUE(client.read().has_update());
    const std::string huge(std::size_t{4} << 20U, 'x');
    beast::error_code ec;
    client.ws.write(boost::asio::buffer(huge), ec);
    EXPECT_FALSE(ec) << ec.message();
    beast::flat_buffer buffer;
    client.ws.read(buffer, ec);
    EXPECT_EQ(ec, websocket::error::closed) << ec.message();
    EXPECT_EQ(client.ws.reason().code, websocket::close_code::too_big);
  }
  // The server is still there.
  ViewClient after(io, port, target);
  EXPECT_TRUE(after.read().has_hello());
  server.stop();
}

// A view that stops reading: its unsent frames stay bounded (the latest state replaces them),
// other views get every update, and when it reads again it gets the latest document.
TEST(ViewServerLoad, AViewThatDoesNotReadIsBoundedAndCatchesUpWithTheLatest) {
  ServerOptions options;
  options.max_queued_frames = 4;
  options.max_queued_bytes = 64 * 1024;
  ViewServer server(options,
                    Handlers{[](const std::string&) -> std::string { return ""; }, {}, {}, {}, {}});
  server.start();
  const uint16_t port = server.port();
  // Two documents whose deltas are no smaller than they are: every update is a full one.
  const std::array<protocol::GraphDocument, 2> docs = {document_of(kModel),
                                                       document_of(kDeepModel)};
  server.update("m.py", docs[0], true, 1.0);
  const std::string target = "/ws?file=m.py&token=" + server.token();

  boost::asio::io_context io;
  // The stalled view: a small receive buffer, and it does not read.
  websocket::stream<tcp::socket> stalled(io);
  stalled.next_layer().open(tcp::v4());
  stalled.next_layer().set_option(boost::asio::socket_base::receive_buffer_size(4096));
  stalled.next_layer().connect({boost::asio::ip::make_address("127.0.0.1"), port});
  stalled.handshake("127.0.0.1:" + std::to_string(port), target);

  // A reading view, in its own thread: every update applies to the document it has.
  boost::asio::io_context reader_io;
  ViewClient reader(reader_io, port, target);
  std::atomic<uint32_t> last{std::numeric_limits<uint32_t>::max()};
  std::atomic<uint32_t> reader_seq{0};
  std::atomic<int> reader_broken{0};
  std::thread reading([&] {
    try {
      while (reader_seq < last) {
        const auto m = reader.read();
        if (!m.has_update()) continue;
        if (m.update().has_delta() && m.update().delta().base() != reader_seq) ++reader_broken;
        reader_seq = m.update().seq();
      }
    } catch (const std::exception&) {
      ++reader_broken;
    }
  });
  // Full documents until far more than the stalled view's socket buffers can hold (the kernel's
  // send buffer grows to tcp_wmem's maximum, 4 MiB by default) has been sent.
  const std::array<size_t, 2> sizes = {protocol::to_json(slim_document(docs[0])).size(),
                                       protocol::to_json(slim_document(docs[1])).size()};
  uint32_t published = 1;
  size_t sent = 0;
  for (uint32_t i = 1; i <= 5000 && (sent < 24u << 20 || server.stats().coalesced == 0); ++i) {
    server.update("m.py", docs[i % 2], true, 1.0);
    ++published;
    sent += sizes[i % 2];
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  last = published;
  server.publish_status("m.py", "ok");  // wakes the reader if it already has the last update
  reading.join();
  EXPECT_EQ(reader_seq, published);
  EXPECT_EQ(reader_broken, 0);
  EXPECT_GE(server.stats().coalesced, 1u);
  EXPECT_EQ(server.connections(), 2u);  // the stalled view is still connected

  // The stalled view reads again: what it gets ends with the latest document, and every delta
  // on the way applies to what it has.
  uint32_t seq = 0;
  uint32_t updates = 0;
  bool broken = false;
  while (seq < published) {
    beast::flat_buffer buffer;
    stalled.read(buffer);
    protocol::ViewMessage m;
    ASSERT_TRUE(protocol::from_json(beast::buffers_to_string(buffer.data()), &m));
    if (!m.has_update()) continue;
    ++updates;
    if (m.update().has_delta() && m.update().delta().base() != seq) broken = true;
    EXPECT_GT(m.update().seq(), seq);
    seq = m.update().seq();
  }
  EXPECT_FALSE(broken);
  EXPECT_EQ(seq, published);
  EXPECT_LT(updates, published);  // the intermediate ones it could not take were dropped
  server.stop();
}

TEST(ViewServerLoad, AViewStalledPastTheWriteTimeoutIsDisconnected) {
  ServerOptions options;
  options.write_timeout = std::chrono::milliseconds(500);
  ViewServer server(options,
                    Handlers{[](const std::string&) -> std::string { return ""; }, {}, {}, {}, {}});
  server.start();
  const uint16_t port = server.port();
  const std::array<protocol::GraphDocument, 2> docs = {document_of(kModel),
                                                       document_of(kDeepModel)};
  server.update("m.py", docs[0], true, 1.0);
  boost::asio::io_context io;
  websocket::stream<tcp::socket> stalled(io);
  stalled.next_layer().open(tcp::v4());
  stalled.next_layer().set_option(boost::asio::socket_base::receive_buffer_size(4096));
  stalled.next_layer().connect({boost::asio::ip::make_address("127.0.0.1"), port});
  stalled.handshake("127.0.0.1:" + std::to_string(port), "/ws?file=m.py&token=" + server.token());
  // Full documents until the socket buffers are full: a write then stalls.
  for (int i = 1; i <= 5000 && server.stats().write_timeouts == 0; ++i) {
    server.update("m.py", docs[static_cast<size_t>(i % 2)], true, 1.0);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (int i = 0; i < 200 && server.stats().write_timeouts == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(server.stats().write_timeouts, 1u);
  for (int i = 0; i < 100 && server.connections() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(server.connections(), 0u);
  EXPECT_EQ(server.stats().open, 0u);
  server.stop();
}

// Training (issue 19): thinning a long run keeps its latest steps whole and its start thinned, the
// same rule as the webview's train.ts (thinSteps).
TEST(ViewTrain, ThinningKeepsTheLatestHalfAndEveryOtherOlderStep) {
  std::vector<protocol::TrainStep> steps;
  for (int i = 1; i <= 11; ++i) steps.emplace_back().set_global_step(i);
  thin_train_steps(&steps, 10);
  std::vector<int64_t> kept;
  for (const auto& s : steps) kept.push_back(s.global_step());
  // 11 > 10: of the older half (1..5) every other one goes (2, 4); 6..11 stay.
  EXPECT_EQ(kept, (std::vector<int64_t>{1, 3, 5, 6, 7, 8, 9, 10, 11}));
  std::vector<protocol::TrainStep> many(3 * kMaxTrainSteps);
  for (size_t i = 0; i < many.size(); ++i) many[i].set_global_step(static_cast<int64_t>(i + 1));
  thin_train_steps(&many);
  EXPECT_LE(many.size(), kMaxTrainSteps);
  EXPECT_EQ(many.back().global_step(), static_cast<int64_t>(3 * kMaxTrainSteps));
  EXPECT_EQ(many.front().global_step(), 1);
  for (size_t i = 1; i < many.size(); ++i)
    EXPECT_LT(many[i - 1].global_step(), many[i].global_step());
}

protocol::TrainStep train_step_n(const std::string& file, int n) {
  protocol::TrainStep s;
  s.set_file(file);
  s.set_cell("Net");
  s.set_epoch(1);
  s.set_step(n);
  s.set_global_step(n);
  s.set_loss(2.5 / n);
  s.set_lr(0.01);
  s.set_grad_norm(1.0 + n);
  return s;
}

// Steps, drift and resets reach every view of the file in order (paths compared canonically), a
// view that connects later gets the run so far in one reset message and the drift, and another
// session starts a new run.
TEST(ViewTrain, StepsAndDriftReachTheViewsOfTheFileAndLateViewsGetTheRun) {
  const cellscope::testing::TempDir temp("cellscope-view-train-");
  const std::string file = (temp.path() / "m.py").string();
  const std::string alias = (temp.path() / "sub" / ".." / "m.py").string();
  { std::ofstream(file) << kDeepModel; }
  fs::create_directories(temp.path() / "sub");
  ViewServer server({}, Handlers{});
  server.start();
  const uint16_t port = server.port();
  server.update(file, document_of(kDeepModel), true, 1.0);
  boost::asio::io_context io;
  ViewClient a(io, port, "/ws?file=" + file + "&token=" + server.token());
  EXPECT_TRUE(a.read().has_hello());
  EXPECT_TRUE(a.read().has_update());
  ViewClient other(io, port, "/ws?file=/elsewhere/x.py&token=" + server.token());
  EXPECT_TRUE(other.read().has_hello());

  EXPECT_EQ(server.train_reset(alias, "s1"), 1u);  // the other file's view is not counted
  auto m = a.read();
  ASSERT_TRUE(m.has_train());
  EXPECT_TRUE(m.train().reset());
  EXPECT_EQ(m.train().steps_size(), 0);
  for (int n = 1; n <= 12; ++n) EXPECT_EQ(server.train_step(train_step_n(alias, n), "s1"), 1u);
  for (int n = 1; n <= 12; ++n) {
    m = a.read();
    ASSERT_TRUE(m.has_train()) << n;
    EXPECT_FALSE(m.train().reset()) << n;  // the reset came first, same session
    ASSERT_EQ(m.train().steps_size(), 1);
    EXPECT_EQ(m.train().steps(0).global_step(), n);
    EXPECT_DOUBLE_EQ(m.train().steps(0).loss(), 2.5 / n);
    EXPECT_TRUE(m.train().steps(0).has_grad_norm());
    EXPECT_EQ(m.train().max_steps(), kMaxTrainSteps);
  }
  protocol::PrecisionDrift drift;
  drift.set_file(file);
  drift.set_precision("target");
  drift.set_threshold(0.999);
  auto* l = drift.add_layers();
  l->set_node("body.0.0");
  l->set_cosine(0.998);
  drift.set_first_below("body.0.0");
  EXPECT_EQ(server.train_drift(drift, "s1"), 1u);
  m = a.read();
  ASSERT_TRUE(m.has_drift());
  EXPECT_EQ(m.drift().first_below(), "body.0.0");

  // A late view: hello, document, then the run so far (reset, 12 steps) and the drift.
  ViewClient b(io, port, "/ws?file=" + file + "&token=" + server.token());
  EXPECT_TRUE(b.read().has_hello());
  EXPECT_TRUE(b.read().has_update());
  m = b.read();
  ASSERT_TRUE(m.has_train());
  EXPECT_TRUE(m.train().reset());
  ASSERT_EQ(m.train().steps_size(), 12);
  EXPECT_EQ(m.train().steps(11).global_step(), 12);
  EXPECT_EQ(m.train().session(), "s1");
  EXPECT_TRUE(b.read().has_drift());
  ASSERT_NE(server.train_progress(file), nullptr);
  EXPECT_EQ(server.train_progress(file)->steps_size(), 12);
  ASSERT_NE(server.precision_drift(alias), nullptr);

  // Another session: a new run (reset with its first step), the old drift gone.
  EXPECT_EQ(server.train_step(train_step_n(file, 1), "s2"), 2u);
  for (auto* v : {&a, &b}) {
    m = v->read();
    ASSERT_TRUE(m.has_train());
    EXPECT_TRUE(m.train().reset());
    EXPECT_EQ(m.train().steps_size(), 1);
  }
  EXPECT_EQ(server.train_progress(file)->steps_size(), 1);
  EXPECT_EQ(server.precision_drift(file), nullptr);
  server.stop();
}

protocol::DeviceSample device_sample_n(const std::string& file, int n) {
  protocol::DeviceSample s;
  s.set_file(file);
  s.set_device("edge1");
  s.set_bundle("0001-m.mindir");
  s.set_time_ms(1000.0 * n);
  s.set_fps(10 + n);
  s.set_latency_p50_ms(1.5);
  s.set_latency_p99_ms(4.0);
  s.set_rss_mb(80);
  return s;
}

// Device samples reach every view of the file in order (paths compared canonically), a view that
// connects later gets them in one reset message, the server keeps the last kMaxDeviceSamples,
// and another session (a new watch) starts a new chart.
TEST(ViewDevice, SamplesReachTheViewsOfTheFileAndLateViewsGetThem) {
  const cellscope::testing::TempDir temp("cellscope-view-device-");
  const std::string file = (temp.path() / "m.py").string();
  const std::string alias = (temp.path() / "sub" / ".." / "m.py").string();
  { std::ofstream(file) << kDeepModel; }
  fs::create_directories(temp.path() / "sub");
  ViewServer server({}, Handlers{});
  server.start();
  const uint16_t port = server.port();
  server.update(file, document_of(kDeepModel), true, 1.0);
  boost::asio::io_context io;
  ViewClient a(io, port, "/ws?file=" + file + "&token=" + server.token());
  EXPECT_TRUE(a.read().has_hello());
  EXPECT_TRUE(a.read().has_update());
  ViewClient other(io, port, "/ws?file=/elsewhere/x.py&token=" + server.token());
  EXPECT_TRUE(other.read().has_hello());

  for (int n = 1; n <= 5; ++n) EXPECT_EQ(server.device_sample(device_sample_n(alias, n), "w1"), 1u);
  for (int n = 1; n <= 5; ++n) {
    auto m = a.read();
    ASSERT_TRUE(m.has_device()) << n;
    EXPECT_EQ(m.device().reset(), n == 1) << n;  // the watch's first sample starts the chart
    ASSERT_EQ(m.device().samples_size(), 1);
    EXPECT_DOUBLE_EQ(m.device().samples(0).fps(), 10 + n);
    EXPECT_FALSE(m.device().samples(0).has_power_w());  // not measured: absent, never 0
    EXPECT_EQ(m.device().max_samples(), kMaxDeviceSamples);
    EXPECT_EQ(m.device().device(), "edge1");
  }

  // A late view: hello, document, then the samples so far in one reset message.
  ViewClient b(io, port, "/ws?file=" + file + "&token=" + server.token());
  EXPECT_TRUE(b.read().has_hello());
  EXPECT_TRUE(b.read().has_update());
  auto m = b.read();
  ASSERT_TRUE(m.has_device());
  EXPECT_TRUE(m.device().reset());
  ASSERT_EQ(m.device().samples_size(), 5);
  EXPECT_DOUBLE_EQ(m.device().samples(4).fps(), 15);
  EXPECT_EQ(m.device().session(), "w1");

  // Another watch: a new chart (reset with its first sample) for both views.
  EXPECT_EQ(server.device_sample(device_sample_n(file, 1), "w2"), 2u);
  for (auto* v : {&a, &b}) {
    m = v->read();
    ASSERT_TRUE(m.has_device());
    EXPECT_TRUE(m.device().reset());
    EXPECT_EQ(m.device().samples_size(), 1);
  }
  EXPECT_EQ(server.device_progress(alias)->samples_size(), 1);
  EXPECT_EQ(server.device_progress("/elsewhere/x.py"), nullptr);
  server.stop();

  // Bounded: the last kMaxDeviceSamples are kept (no view connected: nothing sent).
  ViewServer quiet({}, Handlers{});
  const int total = static_cast<int>(kMaxDeviceSamples) + 7;
  for (int n = 1; n <= total; ++n)
    EXPECT_EQ(quiet.device_sample(device_sample_n(file, n), "w"), 0u);
  const auto kept = quiet.device_progress(file);
  ASSERT_NE(kept, nullptr);
  ASSERT_EQ(kept->samples_size(), static_cast<int>(kMaxDeviceSamples));
  EXPECT_DOUBLE_EQ(kept->samples(0).fps(), 10 + 8);
  EXPECT_DOUBLE_EQ(kept->samples(kept->samples_size() - 1).fps(), 10 + total);
  EXPECT_TRUE(kept->reset());
}

// The snapshot embeds the training run and the drift after the document.
TEST(ViewTrain, SnapshotEmbedsTheRunAndTheDrift) {
  const cellscope::testing::TempDir temp("cellscope-view-train-");
  const auto progress = temp.path() / "run.json";
  const auto drift = temp.path() / "drift.json";
  // What `cellscope train --format json` prints (a NaN loss is null).
  {
    std::ofstream(progress)
        << R"({"file":"m.py","steps":[{"epoch":1,"step":1,"global_step":1,"loss":2.3,"learning_rate":0.01,"loss_scale":1,"skipped":false,"ms":4.0,"samples":32},{"epoch":1,"step":2,"global_step":2,"loss":null,"learning_rate":0.01,"loss_scale":1,"skipped":true,"ms":5.0,"samples":32}]})";
  }
  {
    std::ofstream(drift)
        << R"({"precision":"int8","threshold":0.99,"layers":[{"node":"fc","op":"MatMul","cosine":0.97,"maxAbs":0.5}],"firstBelow":"fc","top1Agreement":0.9,"samples":64})";
  }
  std::vector<protocol::ViewMessage> extra;
  std::string error;
  ASSERT_TRUE(train_messages(progress.string(), drift.string(), "/w/m.py", &extra, &error))
      << error;
  ASSERT_EQ(extra.size(), 2u);
  ASSERT_TRUE(extra[0].has_train());
  EXPECT_TRUE(extra[0].train().reset());
  ASSERT_EQ(extra[0].train().steps_size(), 2);
  EXPECT_DOUBLE_EQ(extra[0].train().steps(0).samples_per_sec(), 32 * 1000.0 / 4.0);
  EXPECT_TRUE(std::isnan(extra[0].train().steps(1).loss()));
  EXPECT_TRUE(extra[0].train().steps(1).skipped());
  EXPECT_EQ(extra[1].drift().file(), "/w/m.py");
  const std::string html = snapshot_html(document_of(kModel), "m.py", extra);
  EXPECT_NE(html.find(R"("train":{"file":"/w/m.py")"), std::string::npos);
  EXPECT_NE(html.find(R"("firstBelow":"fc")"), std::string::npos);
  EXPECT_NE(html.find(R"("loss":"NaN")"), std::string::npos);
  // Neither form: a clear error.
  { std::ofstream(progress) << R"({"nothing":1})"; }
  EXPECT_FALSE(train_messages(progress.string(), "", "/w/m.py", &extra, &error));
  EXPECT_NE(error.find("not a training run"), std::string::npos);
  EXPECT_FALSE(
      train_messages("", (temp.path() / "missing.json").string(), "/w/m.py", &extra, &error));
  EXPECT_NE(error.find("cannot read"), std::string::npos);
}

}  // namespace
}  // namespace cellscope::server::view
