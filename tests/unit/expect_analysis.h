// What the unit tests share to analyse a small model and check its one root Cell.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "graphcore/analysis.h"

namespace graphcore {

// The analysis of `text` as /w/net.py, root Cell `Net`, one float32 input of shape (2, 8).
inline AnalysisResult analyse_net(const std::string& text) {
  MemorySourceProvider src("/w/net.py", text);
  AnalysisOptions opts;
  opts.cell = "Net";
  opts.inputs = {{Shape::of({2, 8}), DType::Float32}};
  return analyze_file("/w/net.py", opts, src);
}

// `r` reports no error and one root Cell with `outputs` outputs, the first of shape `shape`
// ("(2, 3)").
inline void expect_compiles_to(const AnalysisResult& r, size_t outputs, const std::string& shape) {
  for (const Diagnostic& d : r.diagnostics) EXPECT_NE(d.severity, Severity::Error) << d.message;
  ASSERT_EQ(r.cells.size(), 1U);
  ASSERT_EQ(r.cells[0].outputs.size(), outputs);
  EXPECT_EQ(r.cells[0].outputs[0].type.shape.str(), shape);
}

}  // namespace graphcore
