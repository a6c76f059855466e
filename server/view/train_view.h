// The training chart and the drift overlay without an editor (issue 19):
//   - `cellscope train FILE --view`: TrainView serves the graph view of the training script and
//     pushes a TrainProgress per step (view.proto), the same messages `cellscope lsp` relays from
//     a debug session; after the run it keeps serving until Ctrl+C.
//   - `cellscope graph FILE --format html --progress P.json --drift D.json`: the snapshot embeds
//   the
//     run and the drift it was given (train_messages).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "commands.h"
#include "graphcore/drift.h"
#include "graphcore/trainer.h"
#include "protocol/view.pb.h"
#include "view/view_server.h"

namespace cellscope::server::view {

// A step of the CPU runtime's Trainer as view.proto's TrainStep (file: absolute).
protocol::TrainStep train_step_of(const graphcore::runtime::StepReport& s, const std::string& file,
                                  const std::string& cell, std::optional<int64_t> total_steps);

// The drift engine's report as view.proto's PrecisionDrift (the body of `cellscope.drift`).
protocol::PrecisionDrift precision_drift_of(const graphcore::runtime::DriftReport& r,
                                            const std::string& file, const std::string& cell);

class TrainView {
 public:
  // Analyses `graph.file` (hardware layer), starts the view server on `port` (0: a free one) and
  // prints the URL on `out` (stdout; stderr when stdout carries JSON). Null after printing why on
  // stderr.
  static std::unique_ptr<TrainView> start(GraphOptions graph, uint16_t port,
                                          const std::string& cell, std::ostream& out);
  ~TrainView();
  TrainView(const TrainView&) = delete;
  TrainView& operator=(const TrainView&) = delete;

  // Blocks until a view is connected (or Ctrl+C / SIGTERM: false).
  bool wait_for_view();
  // Sends one step to the views (and keeps it for views that connect later).
  void step(const graphcore::runtime::StepReport& s, std::optional<int64_t> total_steps);
  // Sends the per-layer drift of the inference half (`file` is set to the served file).
  void drift(protocol::PrecisionDrift d);
  // After the run: serves until Ctrl+C or SIGTERM.
  void serve_until_stopped();
  const std::string& url() const { return url_; }
  ViewServer& server() { return *server_; }

 private:
  TrainView() = default;
  std::unique_ptr<ViewServer> server_;
  std::string file_;  // absolute
  std::string cell_;
  std::string url_;
  std::string session_;
  std::ostream* out_ = nullptr;
};

// The messages a snapshot embeds after its document: a TrainProgress from `progress` (a JSON file:
// view.proto's TrainProgress, or what `cellscope train --format json` prints) and a PrecisionDrift
// from `drift` (view.proto's JSON). Either path may be empty. False with `error` set when a file
// cannot be read or is neither form.
bool train_messages(const std::string& progress, const std::string& drift, const std::string& file,
                    std::vector<protocol::ViewMessage>* out, std::string* error);

}  // namespace cellscope::server::view
