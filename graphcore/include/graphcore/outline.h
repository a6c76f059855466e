// A syntactic outline of one Python file: classes, their methods and `self.x` attributes,
// functions, module variables and import bindings. It needs no evaluation, so it is available for
// any file, even one that does not analyse (editor outlines, workspace symbol search, completion
// of imported namespaces).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "graphcore/source.h"

namespace graphcore {

struct OutlineSymbol {
  enum class Kind : uint8_t { Class, Function, Method, Attribute, Variable };
  Kind kind = Kind::Variable;
  std::string name;
  std::string detail;              // "(nn.Cell)" for a class, "(self, x)" for a function
  SourceRange range;               // the whole definition / assignment
  SourceRange selection;           // the name
  std::vector<std::string> bases;  // Class: base expressions as dotted text ("nn.Cell")
  std::vector<OutlineSymbol> children;
};

// `local` is bound by an import to `target`, a dotted module or module attribute
// ("mindspore.nn", "mindspore.nn.Conv2d"); `level` counts the leading dots of a relative import.
struct ImportBinding {
  std::string local;
  std::string target;
  int level = 0;
  SourceRange range;
};

struct FileOutline {
  std::vector<OutlineSymbol> symbols;
  std::vector<ImportBinding> imports;  // module-level imports, in order
  bool has_syntax_errors = false;
};

// Never throws; a file with syntax errors yields what could be recovered.
FileOutline outline_python(std::string path, std::string text);

// The symbol named `name` among `symbols` (not recursive), or nullptr.
const OutlineSymbol* find_symbol(const std::vector<OutlineSymbol>& symbols, std::string_view name);

}  // namespace graphcore
