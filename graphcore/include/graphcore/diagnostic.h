// Located diagnostics in editor vocabulary (0-based ranges, severities, codes). No protocol types.
#pragma once

#include <string>
#include <vector>

#include "graphcore/source.h"

namespace graphcore {

enum class Severity { Error = 1, Warning = 2, Information = 3, Hint = 4 };

const char* severity_name(Severity s);  // "error", "warning", "information", "hint"

struct RelatedLocation {
  std::string file;
  SourceRange range;
  std::string message;
};

// A replacement that a quick fix can apply.
struct TextEdit {
  std::string file;
  SourceRange range;
  std::string new_text;
};

struct Fix {
  std::string title;
  std::vector<TextEdit> edits;
};

struct Diagnostic {
  std::string file;
  SourceRange range;
  Severity severity = Severity::Error;
  std::string code;  // e.g. "shape-mismatch"; see docs/diagnostics.md
  std::string message;
  std::vector<RelatedLocation> related;
  std::vector<Fix> fixes;
};

}  // namespace graphcore
