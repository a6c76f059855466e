// The catalogue of diagnostic codes graphcore reports (docs/diagnostics.md explains each).
// Front ends use it for rule tables (SARIF) and documentation links.
#pragma once

#include <span>
#include <string_view>

namespace graphcore {

struct DiagnosticCodeInfo {
  std::string_view code;
  std::string_view severity;  // usual severity: "error", "warning", "information", "error/warning"
  std::string_view summary;
};

std::span<const DiagnosticCodeInfo> diagnostic_codes();
const DiagnosticCodeInfo* find_diagnostic_code(std::string_view code);

}  // namespace graphcore
