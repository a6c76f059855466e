// `cellscope dap` from arbitrary bytes: the input is the client's side of the stream (framed DAP
// messages, malformed or not) fed through the base-protocol framing into a debug session, as
// run_stdio_server does; seeds launch the models of tests/dap/fixtures and tests/corpus (the
// harness runs in the source tree). Every message the adapter writes must be a DAP message.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "dap_server.h"
#include "fuzz.h"
#include "rpc/framing.h"

namespace {

void check_outgoing(const std::string& body) {
  if (cellscope::fuzz::verbose()) std::fprintf(stderr, "<- %s\n", body.c_str());
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("seq") || !j.contains("type")) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cellscope;
  std::string_view input = fuzz::as_text(data, size);
  dap::Session session([](std::string body) { check_outgoing(body); });
  bool disconnected = false;
  session.set_disconnect_handler([&] { disconnected = true; });
  rpc::FramingOptions framing;
  framing.max_message_bytes = 1u << 20;
  rpc::FrameReader reader(framing);
  for (const rpc::Frame& f : reader.feed(input)) {
    if (disconnected) break;
    if (f.ok()) session.handle(f.body);
  }
  session.stop();
  return 0;
}
