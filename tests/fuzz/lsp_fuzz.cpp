// `cellscope lsp` from arbitrary bytes: the input is the client's side of the stdio stream (any
// number of framed messages, malformed or not), fed in chunks of varying size through the
// base-protocol framing into the JSON-RPC dispatcher and the language server, exactly as
// run_stdio_server wires them; then the input ends. The server must answer or drop every
// message without crashing, and every message it writes must be valid JSON-RPC.
// Analyses run on the server's worker thread; documents live under file:///fuzz/ (not on disk),
// so an analysis sees only the fuzzed text (and files it imports by absolute path, read-only).
#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz.h"
#include "lsp/server.h"
#include "rpc/framing.h"
#include "rpc/jsonrpc.h"

namespace {

void check_outgoing(const std::string& body) {
  if (cellscope::fuzz::verbose()) std::fprintf(stderr, "<- %s\n", body.c_str());
  // Everything the server sends is a JSON-RPC 2.0 message it produced itself.
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("jsonrpc", "") != "2.0") std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cellscope;
  std::string_view input = fuzz::as_text(data, size);
  boost::asio::io_context io;
  rpc::Dispatcher dispatcher([](std::string body) { check_outgoing(body); });
  lsp::ServerOptions options;
  options.debounce_ms = 0;
  lsp::LanguageServer server(io, dispatcher, options);
  server.attach();
  rpc::FramingOptions framing;
  framing.max_message_bytes = 1u << 20;
  rpc::FrameReader reader(framing);
  // Chunk sizes from the input's own length, so the same bytes arrive split differently.
  size_t chunk = 1 + size % 97;
  for (size_t at = 0; at < input.size() && !server.exit_requested(); at += chunk) {
    for (const rpc::Frame& f : reader.feed(input.substr(at, chunk))) {
      try {
        dispatcher.handle_frame(f);
      } catch (const std::bad_alloc&) {
        // As in run_stdio_server: one message's failure never ends the server.
      }
    }
    io.poll();
  }
  for (const rpc::Frame& f : reader.finish()) dispatcher.handle_frame(f);
  // Let the requests still waiting for an analysis get their answers (a client waits too), up to
  // a bound: the worker analyses the open documents meanwhile.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (dispatcher.in_flight() > 0 && !server.exit_requested() &&
         std::chrono::steady_clock::now() < deadline) {
    io.restart();
    io.run_for(std::chrono::milliseconds(5));
  }
  dispatcher.fail_pending_calls("the client went away");
  server.end_of_input();
  io.restart();
  io.run();
  server.stop();
  return 0;
}
