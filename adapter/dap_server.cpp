// The debug adapter: see dap_server.h and docs/dap.md.
#include "dap_server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>

#include "protocol.h"
#include "rpc/stdio_transport.h"
#include "session.h"

namespace cellscope::dap {

// The composition: the outgoing channel, the run (session.h) and the protocol layer that
// answers requests with both (protocol.h). Destroyed in reverse order: the protocol layer first,
// then the run (its worker joined), then the channel the worker sent through.
struct Session::Impl {
  explicit Impl(std::function<void(std::string)> send)
      : channel(std::move(send)), runner(channel), protocol(channel, runner) {}

  Channel channel;
  Runner runner;
  DebugProtocol protocol;
};

Session::Session(std::function<void(std::string)> send)
    : impl_(std::make_unique<Impl>(std::move(send))) {}
Session::~Session() { stop(); }
void Session::handle(const std::string& body) { impl_->protocol.handle(body); }
void Session::set_disconnect_handler(std::function<void()> f) {
  impl_->protocol.on_disconnect = std::move(f);
}
void Session::stop() { impl_->runner.stop(); }

int run_stdio_server(const std::string& log_file) {
  int out_fd = rpc::isolate_stdio({log_file, true});
  boost::asio::io_context io;
  rpc::StdioTransport::Options topts;
  topts.out_fd = out_fd;
  rpc::StdioTransport transport(io, topts);
  Session session([&](std::string body) { transport.send(std::move(body)); });
  session.set_disconnect_handler([&] { transport.close(); });
  transport.start(
      [&](const rpc::Frame& f) {
        if (!f.ok()) {
          spdlog::error("dap: {}", f.error);
          return;
        }
        // One message's failure (e.g. out of memory) never ends the session.
        try {
          session.handle(f.body);
        } catch (const std::exception& e) {
          spdlog::error("dap: message dropped: {}", e.what());
        }
      },
      [&](const std::string& error) {
        if (!error.empty()) spdlog::error("dap: input: {}", error);
        session.stop();
        transport.close();
      });
  spdlog::info("cellscope dap: serving on stdio");
  io.run();
  session.stop();
  return 0;
}

}  // namespace cellscope::dap
