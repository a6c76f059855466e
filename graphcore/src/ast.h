// A compact Python AST lowered from tree-sitter's concrete syntax tree. Nodes live in an arena
// owned by the ParsedFile; identifiers and string values are views into the file's storage.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "graphcore/diagnostic.h"
#include "graphcore/source.h"

namespace graphcore::ast {

enum class K : uint8_t {
  // expressions
  Name,
  Int,
  Float,
  Str,
  Bool,
  None,
  Ellipsis,
  FString,
  BinOp,
  UnaryOp,
  BoolOp,
  Not,
  Compare,
  Call,
  Keyword,
  Attribute,
  Subscript,
  Slice,
  Tuple,
  List,
  Set,
  Dict,
  ListComp,
  SetComp,
  DictComp,
  GenExp,
  Comprehension,
  Lambda,
  IfExp,
  Starred,
  DoubleStarred,
  NamedExpr,
  Await,
  Yield,
  Error,
  // statements
  ExprStmt,
  Assign,
  AugAssign,
  AnnAssign,
  Return,
  If,
  For,
  While,
  Break,
  Continue,
  Pass,
  FunctionDef,
  ClassDef,
  Param,
  Import,
  ImportFrom,
  Alias,
  Global,
  Nonlocal,
  Assert,
  Raise,
  Try,
  ExceptHandler,
  Block,
  With,
  WithItem,
  Delete,
  Unsupported,
};

enum class BinOpKind : uint8_t {
  Add,
  Sub,
  Mul,
  Div,
  FloorDiv,
  Mod,
  Pow,
  MatMul,
  LShift,
  RShift,
  BitAnd,
  BitOr,
  BitXor
};
enum class UnaryKind : uint8_t { Neg, Pos, Invert };
enum class CmpKind : uint8_t { Eq, NotEq, Lt, LtE, Gt, GtE, In, NotIn, Is, IsNot };
enum class ParamKindAst : uint8_t { Normal, KeywordOnly, VarArgs, VarKwargs };

const char* binop_symbol(BinOpKind k);

// Layout per kind (unused members are null/empty):
//   Name: str | Int: ival | Float: fval | Str: str (decoded) | Bool: ival
//   FString: list = parts (Str and expressions)
//   BinOp/AugAssign: op, a = left/target, b = right | UnaryOp: op, a | Not: a | BoolOp: op (0 and,
//   1 or), a, b Compare: list = operands, cmp_ops | Call: a = func, list = positional (maybe
//   Starred), list2 = Keyword/DoubleStarred Keyword: str = name, a = value | Attribute: a = object,
//   str = attr | Subscript: a = value, b = index Slice: a, b, c (nullable) | Tuple/List/Set: list |
//   Dict: list = keys (null for **), list2 = values ListComp/SetComp/GenExp: a = elt, list =
//   Comprehension | DictComp: a = key, b = value, list = Comprehension Comprehension: a = target, b
//   = iter, list = conditions | Lambda: a = body, list = Param IfExp: a = body, b = test, c =
//   orelse | Starred/DoubleStarred/Await/Yield: a | NamedExpr: a = target, b = value ExprStmt: a |
//   Assign: list = targets, a = value | AnnAssign: a = target, b = value (nullable) Return: a
//   (nullable) | If/While: a = test, list = body, list2 = orelse | For: a = target, b = iter, list
//   = body, list2 = orelse FunctionDef: str = name, list = Param, list2 = body, list3 = decorators
//   ClassDef: str = name, list = bases (and Keyword), list2 = body, list3 = decorators
//   Param: str = name, op = ParamKindAst, a = default (nullable)
//   Import: list = Alias | ImportFrom: str = module, ival = level, list = Alias (empty: wildcard)
//   Alias: str = dotted name, str2 = as-name | Global/Nonlocal: list = Name | Assert: a = test, b =
//   msg Raise: a (nullable) | Try: list = body, list2 = ExceptHandler, a = else Block, b = finally
//   Block ExceptHandler: a = type (nullable), str = name, list = body | Block: list With: list =
//   WithItem, list2 = body | WithItem: a = expr, b = target | Delete: list Unsupported: str =
//   construct name (e.g. "match")
struct Node {
  K kind = K::Error;
  uint8_t op = 0;
  bool has_error = false;  // the source of this node contains a syntax error
  SourceRange range;
  std::string_view str;
  std::string_view str2;
  int64_t ival = 0;
  double fval = 0;
  Node* a = nullptr;
  Node* b = nullptr;
  Node* c = nullptr;
  std::span<Node*> list;
  std::span<Node*> list2;
  std::span<Node*> list3;
  std::span<CmpKind> cmp_ops;
};

// Allocates nodes and arrays that live as long as the file.
class Arena {
 public:
  Node* node(K kind, SourceRange range);
  std::span<Node*> nodes(const std::vector<Node*>& v);
  std::span<CmpKind> cmps(const std::vector<CmpKind>& v);
  std::string_view keep(std::string s);

 private:
  std::deque<Node> nodes_;
  std::deque<std::vector<Node*>> arrays_;
  std::deque<std::vector<CmpKind>> cmp_arrays_;
  std::deque<std::string> strings_;
};

// tree-sitter's syntax tree, kept by files parsed for a ParseCache so that the next version of
// the file is re-parsed incrementally.
struct SyntaxTree;
struct SyntaxTreeDeleter {
  void operator()(SyntaxTree* t) const;
};

struct ParsedFile {
  std::string path;
  std::string text;  // sanitized source (invalid UTF-8 replaced)
  // The text as given, for ParseCache: `text` itself when sanitizing changed nothing, else its
  // size and hash.
  bool text_is_original = true;
  size_t original_size = 0;
  size_t original_hash = 0;
  [[nodiscard]] bool same_source(const std::string& original) const;
  Arena arena;
  Node* module = nullptr;                               // Block of statements
  std::vector<Diagnostic> diagnostics;                  // syntax errors, encoding problems, limits
  std::unique_ptr<SyntaxTree, SyntaxTreeDeleter> tree;  // only with ParseOptions::keep_tree
  // With a `previous` parse: its tree was reused (only when both texts parse without errors),
  // or the text was parsed from scratch because one of them has syntax errors.
  bool reparsed_incrementally = false;
  bool reparsed_from_scratch = false;
};

struct ParseLimits {
  size_t max_bytes = 4u << 20;
  size_t max_depth = 400;
};

// Parses and lowers `text`. Never throws on bad input: problems become diagnostics.
// `previous` (optional): an earlier parse of the same file that kept its tree; the new text is
// diffed against it and tree-sitter re-parses only what changed. `keep_tree`: keep this parse's
// tree for the next one.
std::unique_ptr<ParsedFile> parse_python(std::string path, std::string text,
                                         const ParseLimits& limits,
                                         const ParsedFile* previous = nullptr,
                                         bool keep_tree = false);

}  // namespace graphcore::ast

#include "graphcore/outline.h"

namespace graphcore::ast {

// The outline of an already parsed file (outline.cpp).
FileOutline outline_of(const ParsedFile& file);

}  // namespace graphcore::ast
