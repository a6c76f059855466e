// The base of a graph comparison (the view's "Compare…", `cellscope view --compare-with`): the
// model file as of git HEAD, or another model file, analysed through the one pipeline into a
// graph document. The comparison itself is a pure function of the two documents
// (view/compare.h); this only finds and analyses the base. Protocol-free but for the document.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "git.h"
#include "graphcore/analysis.h"
#include "pipeline.h"
#include "protocol/graph.pb.h"
#include "protocol/view.pb.h"

namespace cellscope::server {

// "HEAD" (any case) names the last commit; anything else is a model file.
bool is_head_spec(const std::string& spec);

// What `spec` names for a comparison of `file`: kind ("head" | "file"), label ("HEAD", or the
// other file's name), the base's file (absolute; a relative path is taken from the directory of
// `file`) and the spec itself. The commit is filled in when HEAD is read.
protocol::CompareBase describe_base(const std::string& spec, const std::string& file);

struct BaseDocument {
  protocol::CompareBase base;
  std::shared_ptr<const protocol::GraphDocument> document;  // null when `error` says why
  std::string error;
  double ms = 0;  // reading and analysing the base
};

// The analysis options of a model file (each front end has its own: the editor's settings, the
// command line and mindspore_config.json).
using OptionsFor = std::function<graphcore::AnalysisOptions(const std::string& path)>;

// Reads and analyses the base `spec` of `file`: for HEAD, the file's text at HEAD (imports of
// files tracked at HEAD read from the commit too, other files through `sources`) with the options
// of `file` itself; for another file, that file through `sources` with its own options. The
// document has the layers `pipeline` asks for. Never throws: a base that cannot be read or
// analysed gives `error` (a message for the user).
BaseDocument build_base_document(const std::string& spec, const std::string& file,
                                 const OptionsFor& options_for, const PipelineOptions& pipeline,
                                 graphcore::SourceProvider& sources, const GitOptions& git = {});

}  // namespace cellscope::server
