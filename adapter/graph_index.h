// What the debug adapter knows of a compiled graph, beyond graphcore's Graph: for every node the
// frame that produced it (the user Cell instance whose construct runs it) and its source line, the
// lines that produce nodes (where breakpoints can be verified), where each user Cell was called
// from (the stack's outer frames) and the variable names assigned on each line of a construct
// (the locals). Built once per launch from the CellReport (index_graph), immutable afterwards; no
// protocol knowledge. Thread-safety: a const value, readable from any thread.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "graphcore/graph.h"

namespace cellscope::dap {

// `path` made absolute and (weakly) canonical, or `path` itself when that fails.
std::string canonical(const std::string& path);

struct NodeInfo {
  std::string frame;               // Cell instance path whose construct produced the node
  std::vector<std::string> chain;  // user-Cell frames, root first, ending with `frame`
  std::string file;                // canonical
  int line = 0;                    // 1-based
  int column = 1;
  bool stoppable = false;  // an operation (not an input/parameter/constant)
};

struct FrameSite {
  std::string file;
  int line = 0;
};

// One frame of a stack trace, innermost first (see GraphIndex::stack).
struct StackFrame {
  std::string name;  // "layer1.0 (ResidualBlock).construct", "ResNet.construct"
  std::string file;  // canonical
  int line = 0;      // 0: unknown (an outer frame whose call site the analysis did not record)
  int column = 1;
};

struct GraphIndex {
  std::vector<NodeInfo> nodes;                      // by node index
  std::map<std::string, std::string> class_of;      // instance path -> class name
  std::map<std::string, FrameSite> call_site;       // frame path -> call line in its parent
  std::map<std::string, std::set<int>> node_lines;  // canonical file -> lines with nodes
  std::map<std::string, std::vector<std::pair<int, std::string>>>
      assigned;  // frame -> (line, name)

  // The frames of node `node`, innermost first (the root frame is "").
  [[nodiscard]] std::vector<std::string> frames_of(size_t node) const;
  // The stack at node `node`: its frame at the node's line and column, then each outer frame at
  // the line that called the frame inside it.
  [[nodiscard]] std::vector<StackFrame> stack(size_t node) const;
};

// Frames, call sites and lines of `report`'s compiled graph. `network`, when given, supplies
// the Cell instances and the assignments instead of the report (a training plan's loss graph
// records none of its own: its network's analysis does, whose paths are the loss graph's scopes).
GraphIndex index_graph(const graphcore::CellReport& report,
                       const graphcore::CellReport* network = nullptr);

}  // namespace cellscope::dap
