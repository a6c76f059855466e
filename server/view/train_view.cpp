#include "view/train_view.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "files.h"
#include "graphcore/analysis.h"
#include "protocol/document.h"

namespace cellscope::server::view {

namespace fs = std::filesystem;

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int /*signal*/) { g_stop = 1; }

std::string absolute_path(const std::string& file) {
  std::error_code ec;
  auto p = fs::absolute(file, ec);
  return ec ? file : p.lexically_normal().string();
}

bool read_text(const std::string& path, std::string* out, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot read " + path;
    return false;
  }
  std::ostringstream s;
  s << in.rdbuf();
  *out = s.str();
  return true;
}

// A number of `cellscope train --format json`'s steps: JSON null (a NaN written by nlohmann) is
// NaN.
double number_or_nan(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::numeric_limits<double>::quiet_NaN();
  return it->get<double>();
}

}  // namespace

protocol::TrainStep train_step_of(const graphcore::runtime::StepReport& s, const std::string& file,
                                  const std::string& cell, std::optional<int64_t> total_steps) {
  protocol::TrainStep t;
  t.set_file(file);
  t.set_cell(cell);
  t.set_epoch(s.epoch);
  t.set_step(s.step);
  t.set_global_step(s.global_step);
  if (total_steps) t.set_total_steps(*total_steps);
  t.set_loss(s.loss);
  t.set_lr(s.learning_rate);
  t.set_loss_scale(s.loss_scale);
  t.set_skipped(s.skipped);
  t.set_step_ms(s.ms);
  t.set_samples_per_sec(s.ms > 0 ? static_cast<double>(s.samples) * 1000.0 / s.ms : 0.0);
  t.set_grad_norm(s.grad_norm);  // NaN / inf as the run had it (the chart leaves a gap)
  return t;
}

protocol::PrecisionDrift precision_drift_of(const graphcore::runtime::DriftReport& r,
                                            const std::string& file, const std::string& cell) {
  protocol::PrecisionDrift d;
  d.set_file(file);
  d.set_cell(cell);
  d.set_precision(std::string(graphcore::runtime::eval_precision_name(r.precision)));
  d.set_threshold(r.threshold);
  for (const graphcore::runtime::LayerDrift& l : r.layers) {
    protocol::LayerDrift* o = d.add_layers();
    o->set_node(l.node);
    o->set_op(l.op);
    o->set_scope(l.scope);
    o->set_max_abs(l.max_abs);
    o->set_max_rel(l.max_rel);
    o->set_cosine(l.cosine);
    o->set_overflows(static_cast<uint64_t>(std::max<int64_t>(0, l.fp16_overflows)));
  }
  d.set_first_below(r.first_below);
  d.set_top1_agreement(r.top1_agreement);
  if (r.accuracy_fp32) d.set_accuracy_fp32(*r.accuracy_fp32);
  if (r.accuracy_precision) d.set_accuracy_precision(*r.accuracy_precision);
  d.set_samples(static_cast<uint64_t>(std::max<int64_t>(0, r.samples)));
  return d;
}

std::unique_ptr<TrainView> TrainView::start(GraphOptions graph, uint16_t port,
                                            const std::string& cell, std::ostream& out) {
  graph.pipeline.layer = "hardware";
  graph.format = "json";
  graphcore::AnalysisOptions analysis;
  if (!graph_analysis_options(graph, &analysis)) return nullptr;
  std::unique_ptr<TrainView> tv(new TrainView());
  tv->file_ = absolute_path(graph.file);
  tv->out_ = &out;
  tv->cell_ = cell;
  tv->session_ = "train-" + std::to_string(std::chrono::system_clock::now().time_since_epoch() /
                                           std::chrono::milliseconds(1));
  ServerOptions options;
  options.port = port;
  graphcore::DiskSourceProvider disk;
  auto built = build_graph_document(tv->file_, analysis, pipeline_options(graph), disk);
  for (const auto& c : built.document.cells())
    if (c.name() == cell) options.focus_cell = cell;
  const std::string served = tv->file_;
  Handlers handlers;
  handlers.allow_file = [served](const std::string& f) -> std::string {
    return f == served ? "" : "this server shows " + served + " only";
  };
  tv->server_ = std::make_unique<ViewServer>(options, handlers);
  try {
    tv->server_->start();
  } catch (const std::exception& e) {
    std::cerr << "cellscope: error: --view: " << e.what() << "\n";
    return nullptr;
  }
  tv->server_->update(served, std::move(built.document), built.compiled, built.ms);
  tv->server_->train_reset(served, tv->session_);
  tv->url_ = tv->server_->url(served, options.focus_cell);
  out << "Cellscope view of " << display_path(served) << ": " << tv->url_ << "\n";
  out.flush();
  return tv;
}

TrainView::~TrainView() {
  if (server_) server_->stop();
}

bool TrainView::wait_for_view() {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  *out_ << "Waiting for a view to connect (Ctrl+C to stop)...\n";
  out_->flush();
  while (g_stop == 0 && !server_->watching(file_))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return g_stop == 0;
}

void TrainView::step(const graphcore::runtime::StepReport& s, std::optional<int64_t> total_steps) {
  server_->train_step(train_step_of(s, file_, cell_, total_steps), session_);
}

void TrainView::drift(protocol::PrecisionDrift d) {
  d.set_file(file_);
  if (d.cell().empty()) d.set_cell(cell_);
  server_->train_drift(d, session_);
}

void TrainView::serve_until_stopped() {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  *out_ << "Training done; still serving the view. Press Ctrl+C to stop.\n";
  out_->flush();
  while (g_stop == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  *out_ << "Stopped.\n";
}

bool train_messages(const std::string& progress, const std::string& drift, const std::string& file,
                    std::vector<protocol::ViewMessage>* out, std::string* error) {
  if (!progress.empty()) {
    std::string text;
    if (!read_text(progress, &text, error)) return false;
    const auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("steps") || !j["steps"].is_array()) {
      *error = progress +
               ": not a training run (a TrainProgress, or the output of `cellscope train "
               "--format json`)";
      return false;
    }
    protocol::ViewMessage m;
    auto* p = m.mutable_train();
    const auto& steps = j["steps"];
    // `cellscope train --format json`: snake_case keys with `learning_rate` and `ms`.
    const bool cli = !steps.empty() && steps[0].is_object() && steps[0].contains("learning_rate");
    if (cli) {
      p->set_file(file);
      for (const auto& s : steps) {
        if (!s.is_object()) continue;
        auto* t = p->add_steps();
        t->set_file(file);
        t->set_epoch(s.value("epoch", int64_t{1}));
        t->set_step(s.value("step", int64_t{0}));
        t->set_global_step(s.value("global_step", int64_t{0}));
        t->set_loss(number_or_nan(s, "loss"));
        t->set_lr(number_or_nan(s, "learning_rate"));
        t->set_loss_scale(s.value("loss_scale", 1.0));
        t->set_skipped(s.value("skipped", false));
        const double ms = s.value("ms", 0.0);
        t->set_step_ms(ms);
        t->set_samples_per_sec(ms > 0 ? s.value("samples", 0.0) * 1000.0 / ms : 0.0);
      }
    } else if (std::string why; !protocol::from_json(text, p, &why)) {
      *error = progress + ": " + why;
      return false;
    }
    if (p->file().empty()) p->set_file(file);
    p->set_reset(true);
    std::vector<protocol::TrainStep> kept(p->steps().begin(), p->steps().end());
    thin_train_steps(&kept);
    p->clear_steps();
    for (auto& s : kept) *p->add_steps() = std::move(s);
    p->set_max_steps(static_cast<uint32_t>(kMaxTrainSteps));
    out->push_back(std::move(m));
  }
  if (!drift.empty()) {
    std::string text;
    if (!read_text(drift, &text, error)) return false;
    protocol::ViewMessage m;
    if (std::string why; !protocol::from_json(text, m.mutable_drift(), &why)) {
      *error = drift + ": " + why;
      return false;
    }
    if (m.drift().layers().empty()) {
      *error = drift + ": not a precision drift (no `layers`)";
      return false;
    }
    if (m.drift().file().empty()) m.mutable_drift()->set_file(file);
    out->push_back(std::move(m));
  }
  return true;
}

}  // namespace cellscope::server::view
