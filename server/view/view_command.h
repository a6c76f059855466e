// `cellscope view FILE`: serves the live graph view of one model file and re-analyses it whenever
// it (or a file it imports) changes on disk; with --compare-with (or a view's CompareRequest),
// every document is compared with the file as of git HEAD or with another model file.
#pragma once

#include <cstdint>

#include "commands.h"
#include "view/view_server.h"

namespace cellscope::server::view {

struct ViewCommandOptions {
  GraphOptions graph;  // file, --cell/--entry/--input, --target, --mode, ... (layer: hardware)
  uint16_t port = 0;   // 0: a free port
  bool open = false;   // open the URL in the desktop's browser (xdg-open)
  size_t max_connections = ServerOptions{}.max_connections;  // --max-connections
  // --compare-with: "HEAD" (the file as of the last git commit) or another model file; "" none.
  std::string compare_with;
};

int run_view(const ViewCommandOptions& options);

}  // namespace cellscope::server::view
