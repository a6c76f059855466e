#include "pipeline.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <iostream>

#include "files.h"
#include "graphcore/hardware.h"
#include "graphcore/mindir_import.h"
#include "graphcore/optimize.h"
#include "protocol/document.h"

namespace cellscope::server {

namespace fs = std::filesystem;

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// A file-name-safe form of a Cell name ("resnet50(num_classes=10)" -> "resnet50_num_classes_10_").
std::string file_slug(const std::string& name) {
  std::string out;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    out.push_back(ok ? c : '_');
  }
  if (out.empty() || out == "." || out == "..") out = "cell";
  return out;
}

// The optimization stage (and with layer "hardware" the hardware stage) for every compiled Cell
// of `doc`, dumping the passes when asked. False (after a message on stderr) when a dump cannot
// be written.
bool add_optimized_layers(const graphcore::AnalysisResult& result,
                          const graphcore::AnalysisOptions& analysis,
                          const PipelineOptions& pipeline, protocol::PositionMapper& positions,
                          protocol::GraphDocument* doc) {
  bool ok = true;
  for (size_t i = 0; i < result.cells.size(); ++i) {
    const auto& cell = result.cells[i];
    if (!cell.compiled) {
      spdlog::warn("{}: construct did not compile; no optimization layer", cell.name);
      continue;
    }
    graphcore::OptimizeOptions opt;
    opt.target = analysis.target;
    opt.precision = pipeline.precision;
    fs::path dir;
    if (!pipeline.dump_passes.empty() && pipeline.dump_passes != "-") {
      dir = fs::path(pipeline.dump_passes) / (std::to_string(i) + "-" + file_slug(cell.name));
      std::error_code ec;
      fs::create_directories(dir, ec);
      if (ec) {
        std::cerr << "cellscope: error: --dump-passes: cannot create " << dir.string() << ": "
                  << ec.message() << "\n";
        return false;
      }
    }
    if (!pipeline.dump_passes.empty()) {
      opt.dump = [&](std::string_view pass, size_t index, const graphcore::OptimizedGraph& g) {
        if (!ok) return;
        auto layer = protocol::optimized_layer(g, cell.graph);
        if (dir.empty()) {
          std::cerr << protocol::to_json(layer, {.pretty = false});
          return;
        }
        char prefix[8];
        std::snprintf(prefix, sizeof prefix, "%02zu-", index);
        ok =
            emit((dir / (prefix + std::string(pass) + ".json")).string(), protocol::to_json(layer));
      };
    }
    opt.parallel = &result.parallel;
    const auto graph = graphcore::optimize(cell, opt);
    if (!ok) return false;
    auto* out = doc->mutable_cells(static_cast<int>(i));
    *out->mutable_optimized() = protocol::optimized_layer(graph, cell.graph);
    if (pipeline.layer != "hardware") continue;
    graphcore::HardwareOptions hw_options;
    hw_options.target = analysis.target;
    hw_options.mode = pipeline.mode;
    hw_options.optimizer = pipeline.optimizer;
    hw_options.mixed_precision = pipeline.precision == "mixed";
    hw_options.parallel = &result.parallel;
    // Train: the file's training plan for this network gives the loss (the estimate falls back
    // to a stand-in when its loss graph is not this network at the analysed shapes).
    for (const auto& plan : result.training) {
      if (plan.network == cell.class_name && plan.loss_graph.compiled) {
        hw_options.training = &plan;
        break;
      }
    }
    const auto hw = graphcore::estimate_hardware(cell, graph, hw_options);
    protocol::add_hardware_layer(hw, graph, graphcore::hardware_target(hw_options.target), out);
    for (const auto& d : hw.diagnostics)
      *doc->add_diagnostics() = protocol::diagnostic(d, positions);
  }
  return true;
}

}  // namespace

std::optional<std::string> CachingSourceProvider::read(const fs::path& path) {
  const std::string key = path.string();
  auto it = cache_.find(key);
  if (it == cache_.end())
    it = cache_.emplace(key, base_ != nullptr ? base_->read(path) : disk_.read(path)).first;
  return it->second;
}

graphcore::AnalysisResult analyze_guarded(const fs::path& file,
                                          const graphcore::AnalysisOptions& analysis,
                                          graphcore::SourceProvider& sources) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    // A model file (.mindir) is imported, not analysed: the same result, one root Cell.
    if (graphcore::is_mindir_path(file)) return graphcore::analyze_mindir_file(file, analysis);
    auto result = graphcore::analyze_file(file, analysis, sources);
    spdlog::debug("analysed {} in {:.2f} ms: {} cells, {} diagnostics", file.string(), ms_since(t0),
                  result.cells.size(), result.diagnostics.size());
    return result;
  } catch (const std::exception& e) {
    spdlog::error("internal error analysing {}: {}", file.string(), e.what());
    graphcore::AnalysisResult result;
    result.file = file.string();
    graphcore::Diagnostic d;
    d.file = result.file;
    d.severity = graphcore::Severity::Error;
    d.code = "internal-error";
    d.message = std::string("cellscope failed while analysing this file: ") + e.what();
    result.diagnostics.push_back(std::move(d));
    return result;
  }
}

GraphBuild graph_document_of(const graphcore::AnalysisResult& analysed,
                             const graphcore::AnalysisOptions& analysis,
                             const PipelineOptions& pipeline, graphcore::SourceProvider& sources) {
  GraphBuild out;
  const auto t0 = std::chrono::steady_clock::now();
  protocol::PositionMapper positions(sources);
  const graphcore::AnalysisResult* result = &analysed;
  graphcore::AnalysisResult with_config;
  if (!pipeline.config_diagnostics.empty()) {
    with_config = analysed;
    with_config.diagnostics.insert(with_config.diagnostics.begin(),
                                   pipeline.config_diagnostics.begin(),
                                   pipeline.config_diagnostics.end());
    result = &with_config;
  }
  protocol::DocumentInfo info;
  info.target = analysis.target;
  info.mindspore_version = analysis.mindspore_version.str();
  info.layer = pipeline.layer;
  out.document = protocol::graph_document(*result, positions, info);
  if (pipeline.layer != "semantic")
    out.dumps_ok = add_optimized_layers(*result, analysis, pipeline, positions, &out.document);
  out.compiled = !result->cells.empty();
  for (const auto& cell : result->cells) out.compiled = out.compiled && cell.compiled;
  out.ms = ms_since(t0);
  return out;
}

GraphBuild build_graph_document(const fs::path& file, const graphcore::AnalysisOptions& analysis,
                                const PipelineOptions& pipeline,
                                graphcore::SourceProvider& sources) {
  const auto t0 = std::chrono::steady_clock::now();
  CachingSourceProvider cached(&sources);
  const auto result = analyze_guarded(file, analysis, cached);
  auto out = graph_document_of(result, analysis, pipeline, cached);
  out.ms = ms_since(t0);
  return out;
}

}  // namespace cellscope::server
