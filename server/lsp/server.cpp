#include "lsp/server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>

#include "lsp/protocol.h"
#include "lsp/scheduler.h"
#include "lsp/view_bridge.h"
#include "rpc/jsonrpc.h"
#include "rpc/stdio_transport.h"

namespace cellscope::lsp {

namespace asio = boost::asio;

// The composition: the scheduler, the view bridge and the protocol layer, and the hooks that
// connect them. The hooks hold the components by reference: all three live as long as Impl, the
// I/O-thread hooks run only from the io_context (never while Impl is destroyed) and stop() joins
// the worker (the one thread that calls a hook) before Impl goes.
struct LanguageServer::Impl {
  Impl(asio::io_context& io, rpc::Dispatcher& rpc, ServerOptions options) {
    scheduler = std::make_shared<AnalysisScheduler>(io);
    view = std::make_shared<ViewBridge>(io, *scheduler);
    protocol = std::make_shared<ProtocolServer>(io, rpc, options, *scheduler, *view);
    ProtocolServer& p = *protocol;
    ViewBridge& v = *view;
    scheduler->set_hooks({
        .options_for =
            [&p](const std::string& path) { return p.settings().options_with_configs_for(path); },
        .debounce_ms = [&p] { return p.settings().debounce_ms(); },
        .queued = [&p](const std::string& uri) { p.analysis_queued(uri); },
        .dropped = [&p](const Job& job) { p.analysis_dropped(job); },
        .analysed = [&p](OpenDoc& d, const FileAnalysis& fa) { p.analysis_done(d, fa); },
        .settled = [&p](OpenDoc& d, const FileAnalysis& fa,
                        bool from_dependency) { p.analysis_settled(d, fa, from_dependency); },
        .worker_analysed =
            [&v](const Job& job, const FileAnalysis& fa, graphcore::SourceProvider& sources) {
              v.worker_analysed(job, fa, sources);
            },
    });
    view->set_hooks({
        // The config files too, as the editor's analyses (the view's documents and comparison
        // bases are analyses of the same file).
        .options_for =
            [&p](const std::string& path) { return p.settings().options_with_configs_for(path); },
        .reveal = [&p](const protocol::RevealRequest& reveal) { p.reveal_in_editor(reveal); },
        .log = [&p](int type, const std::string& message) { p.log(type, message); },
    });
  }

  // Stops the view server, the workspace indexer and the analysis worker. Idempotent.
  void stop() {
    view->stop();
    protocol->cancel_indexing();
    scheduler->stop();
    protocol->join_indexer();
    protocol->stop_exports();
  }

  std::shared_ptr<AnalysisScheduler> scheduler;
  std::shared_ptr<ViewBridge> view;
  std::shared_ptr<ProtocolServer> protocol;
};

LanguageServer::LanguageServer(asio::io_context& io, rpc::Dispatcher& rpc, ServerOptions options)
    : impl_(std::make_shared<Impl>(io, rpc, options)) {}

LanguageServer::~LanguageServer() { impl_->stop(); }

void LanguageServer::attach() {
  impl_->scheduler->start();
  impl_->protocol->attach();
}

void LanguageServer::stop() { impl_->stop(); }

void LanguageServer::set_exit_handler(std::function<void()> on_exit) {
  impl_->protocol->on_exit = std::move(on_exit);
}

void LanguageServer::end_of_input() { impl_->protocol->wind_down(); }

bool LanguageServer::exit_requested() const { return impl_->protocol->exit_requested(); }

int LanguageServer::exit_code() const { return impl_->protocol->exit_code(); }

int run_stdio_server(const ServerOptions& options, const std::string& log_file) {
  int out_fd = rpc::isolate_stdio({log_file, true});
  asio::io_context io;
  rpc::StdioTransport::Options topts;
  topts.out_fd = out_fd;
  // A 50 MB message is refused (answered with an error), not buffered.
  topts.framing.max_message_bytes = 32u << 20;
  rpc::StdioTransport transport(io, topts);
  rpc::Dispatcher dispatcher([&](std::string body) { transport.send(std::move(body)); });
  LanguageServer server(io, dispatcher, options);
  server.set_exit_handler([&] { dispatcher.when_idle([&] { transport.close(); }); });
  server.attach();
  transport.start(
      [&](const rpc::Frame& f) {
        // One message's failure (e.g. out of memory) never ends the server.
        try {
          dispatcher.handle_frame(f);
        } catch (const std::exception& e) {
          spdlog::error("message dropped: {}", e.what());
        }
      },
      [&](const std::string& error) {
        if (!error.empty()) spdlog::error("input: {}", error);
        dispatcher.fail_pending_calls("the client went away");
        server.end_of_input();
        dispatcher.when_idle([&] { transport.close(); });
      });
  spdlog::info("cellscope lsp: serving on stdio");
  io.run();
  server.stop();
  return server.exit_code();
}

}  // namespace cellscope::lsp
