// Lowers tree-sitter-python's concrete syntax tree into graphcore's AST, collecting syntax
// diagnostics. Error tolerant: ERROR subtrees become Error nodes (expressions) or are mined for
// complete statements, so an intact Cell survives a syntax error elsewhere in the file.
#include <tree_sitter/api.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "ast.h"
#include "graphcore/lines.h"

extern "C" const TSLanguage* tree_sitter_python(void);

namespace graphcore::ast {

const char* binop_symbol(BinOpKind k) {
  static const char* kSyms[] = {"+", "-",  "*",  "/", "//", "%", "**",
                                "@", "<<", ">>", "&", "|",  "^"};
  return kSyms[static_cast<size_t>(k)];
}

Node* Arena::node(K kind, SourceRange range) {
  Node& n = nodes_.emplace_back();
  n.kind = kind;
  n.range = range;
  return &n;
}
std::span<Node*> Arena::nodes(const std::vector<Node*>& v) {
  if (v.empty()) return {};
  auto& stored = arrays_.emplace_back(v);
  return {stored.data(), stored.size()};
}
std::span<CmpKind> Arena::cmps(const std::vector<CmpKind>& v) {
  auto& stored = cmp_arrays_.emplace_back(v);
  return {stored.data(), stored.size()};
}
std::string_view Arena::keep(std::string s) { return strings_.emplace_back(std::move(s)); }

namespace {

// Node types we dispatch on, mapped from tree-sitter symbols once.
enum class T : uint8_t {
  Other,
  Module,
  Block,
  ExpressionStatement,
  Assignment,
  AugmentedAssignment,
  ReturnStatement,
  IfStatement,
  ElifClause,
  ElseClause,
  ForStatement,
  WhileStatement,
  BreakStatement,
  ContinueStatement,
  PassStatement,
  FunctionDefinition,
  ClassDefinition,
  DecoratedDefinition,
  Decorator,
  ImportStatement,
  ImportFromStatement,
  FutureImportStatement,
  AliasedImport,
  DottedName,
  RelativeImport,
  ImportPrefix,
  WildcardImport,
  GlobalStatement,
  NonlocalStatement,
  AssertStatement,
  RaiseStatement,
  TryStatement,
  ExceptClause,
  ExceptGroupClause,
  FinallyClause,
  WithStatement,
  WithClause,
  WithItem,
  DeleteStatement,
  MatchStatement,
  PrintStatement,
  ExecStatement,
  TypeAliasStatement,
  Identifier,
  Integer,
  Float,
  String,
  ConcatenatedString,
  StringStart,
  StringContent,
  StringEnd,
  EscapeSequence,
  Interpolation,
  True,
  False,
  None,
  Ellipsis,
  BinaryOperator,
  UnaryOperator,
  BooleanOperator,
  NotOperator,
  ComparisonOperator,
  Call,
  ArgumentList,
  KeywordArgument,
  ListSplat,
  DictionarySplat,
  Attribute,
  Subscript,
  Slice,
  Tuple,
  List,
  Set,
  Dictionary,
  Pair,
  ListComprehension,
  SetComprehension,
  DictionaryComprehension,
  GeneratorExpression,
  ForInClause,
  IfClause,
  ParenthesizedExpression,
  ConditionalExpression,
  Lambda,
  LambdaParameters,
  Parameters,
  DefaultParameter,
  TypedParameter,
  TypedDefaultParameter,
  ListSplatPattern,
  DictionarySplatPattern,
  KeywordSeparator,
  PositionalSeparator,
  ExpressionList,
  PatternList,
  TuplePattern,
  ListPattern,
  NamedExpression,
  Await,
  Yield,
  Comment,
  Error,
  Type,
  AsPattern,
  ParenthesizedListSplat,
  LineContinuation,
};

struct SymbolTable {
  std::vector<T> by_symbol;
  TSFieldId f_left, f_right, f_operator, f_argument, f_function, f_arguments, f_object, f_attribute,
      f_value, f_subscript, f_name, f_body, f_condition, f_consequence, f_alternative, f_parameters,
      f_superclasses, f_definition, f_module_name, f_alias, f_key, f_type, f_operators,
      f_expression;

  SymbolTable() {
    const TSLanguage* lang = tree_sitter_python();
    static const std::unordered_map<std::string_view, T> kNames = {
        {"module", T::Module},
        {"block", T::Block},
        {"expression_statement", T::ExpressionStatement},
        {"assignment", T::Assignment},
        {"augmented_assignment", T::AugmentedAssignment},
        {"return_statement", T::ReturnStatement},
        {"if_statement", T::IfStatement},
        {"elif_clause", T::ElifClause},
        {"else_clause", T::ElseClause},
        {"for_statement", T::ForStatement},
        {"while_statement", T::WhileStatement},
        {"break_statement", T::BreakStatement},
        {"continue_statement", T::ContinueStatement},
        {"pass_statement", T::PassStatement},
        {"function_definition", T::FunctionDefinition},
        {"class_definition", T::ClassDefinition},
        {"decorated_definition", T::DecoratedDefinition},
        {"decorator", T::Decorator},
        {"import_statement", T::ImportStatement},
        {"import_from_statement", T::ImportFromStatement},
        {"future_import_statement", T::FutureImportStatement},
        {"aliased_import", T::AliasedImport},
        {"dotted_name", T::DottedName},
        {"relative_import", T::RelativeImport},
        {"import_prefix", T::ImportPrefix},
        {"wildcard_import", T::WildcardImport},
        {"global_statement", T::GlobalStatement},
        {"nonlocal_statement", T::NonlocalStatement},
        {"assert_statement", T::AssertStatement},
        {"raise_statement", T::RaiseStatement},
        {"try_statement", T::TryStatement},
        {"except_clause", T::ExceptClause},
        {"except_group_clause", T::ExceptGroupClause},
        {"finally_clause", T::FinallyClause},
        {"with_statement", T::WithStatement},
        {"with_clause", T::WithClause},
        {"with_item", T::WithItem},
        {"delete_statement", T::DeleteStatement},
        {"match_statement", T::MatchStatement},
        {"print_statement", T::PrintStatement},
        {"exec_statement", T::ExecStatement},
        {"type_alias_statement", T::TypeAliasStatement},
        {"identifier", T::Identifier},
        {"integer", T::Integer},
        {"float", T::Float},
        {"string", T::String},
        {"concatenated_string", T::ConcatenatedString},
        {"string_start", T::StringStart},
        {"string_content", T::StringContent},
        {"string_end", T::StringEnd},
        {"escape_sequence", T::EscapeSequence},
        {"interpolation", T::Interpolation},
        {"true", T::True},
        {"false", T::False},
        {"none", T::None},
        {"ellipsis", T::Ellipsis},
        {"binary_operator", T::BinaryOperator},
        {"unary_operator", T::UnaryOperator},
        {"boolean_operator", T::BooleanOperator},
        {"not_operator", T::NotOperator},
        {"comparison_operator", T::ComparisonOperator},
        {"call", T::Call},
        {"argument_list", T::ArgumentList},
        {"keyword_argument", T::KeywordArgument},
        {"list_splat", T::ListSplat},
        {"dictionary_splat", T::DictionarySplat},
        {"attribute", T::Attribute},
        {"subscript", T::Subscript},
        {"slice", T::Slice},
        {"tuple", T::Tuple},
        {"list", T::List},
        {"set", T::Set},
        {"dictionary", T::Dictionary},
        {"pair", T::Pair},
        {"list_comprehension", T::ListComprehension},
        {"set_comprehension", T::SetComprehension},
        {"dictionary_comprehension", T::DictionaryComprehension},
        {"generator_expression", T::GeneratorExpression},
        {"for_in_clause", T::ForInClause},
        {"if_clause", T::IfClause},
        {"parenthesized_expression", T::ParenthesizedExpression},
        {"conditional_expression", T::ConditionalExpression},
        {"lambda", T::Lambda},
        {"lambda_parameters", T::LambdaParameters},
        {"parameters", T::Parameters},
        {"default_parameter", T::DefaultParameter},
        {"typed_parameter", T::TypedParameter},
        {"typed_default_parameter", T::TypedDefaultParameter},
        {"list_splat_pattern", T::ListSplatPattern},
        {"dictionary_splat_pattern", T::DictionarySplatPattern},
        {"keyword_separator", T::KeywordSeparator},
        {"positional_separator", T::PositionalSeparator},
        {"expression_list", T::ExpressionList},
        {"pattern_list", T::PatternList},
        {"tuple_pattern", T::TuplePattern},
        {"list_pattern", T::ListPattern},
        {"named_expression", T::NamedExpression},
        {"await", T::Await},
        {"yield", T::Yield},
        {"comment", T::Comment},
        {"ERROR", T::Error},
        {"type", T::Type},
        {"as_pattern", T::AsPattern},
        {"parenthesized_list_splat", T::ParenthesizedListSplat},
        {"line_continuation", T::LineContinuation},
    };
    uint32_t count = ts_language_symbol_count(lang);
    by_symbol.assign(count + 1, T::Other);
    for (uint32_t s = 0; s < count; ++s) {
      const char* name = ts_language_symbol_name(lang, static_cast<TSSymbol>(s));
      if (!name) continue;
      auto it = kNames.find(name);
      if (it != kNames.end()) by_symbol[s] = it->second;
    }
    auto field = [lang](const char* n) {
      return ts_language_field_id_for_name(lang, n, static_cast<uint32_t>(std::strlen(n)));
    };
    f_left = field("left");
    f_right = field("right");
    f_operator = field("operator");
    f_argument = field("argument");
    f_function = field("function");
    f_arguments = field("arguments");
    f_object = field("object");
    f_attribute = field("attribute");
    f_value = field("value");
    f_subscript = field("subscript");
    f_name = field("name");
    f_body = field("body");
    f_condition = field("condition");
    f_consequence = field("consequence");
    f_alternative = field("alternative");
    f_parameters = field("parameters");
    f_superclasses = field("superclasses");
    f_definition = field("definition");
    f_module_name = field("module_name");
    f_alias = field("alias");
    f_key = field("key");
    f_type = field("type");
    f_operators = field("operators");
    f_expression = field("expression");
  }
  T type(TSNode n) const {
    TSSymbol s = ts_node_symbol(n);
    if (s == static_cast<TSSymbol>(-1)) return T::Error;  // ts_builtin_sym_error
    return s < by_symbol.size() ? by_symbol[s] : T::Other;
  }
};

const SymbolTable& symbols() {
  static const SymbolTable table;
  return table;
}

// Children of a node, iterated with a cursor (ts_node_child(i) is linear in i).
std::vector<TSNode> children(TSNode n, bool named_only = true) {
  std::vector<TSNode> out;
  TSTreeCursor cur = ts_tree_cursor_new(n);
  if (ts_tree_cursor_goto_first_child(&cur)) {
    do {
      TSNode c = ts_tree_cursor_current_node(&cur);
      if (!named_only || ts_node_is_named(c)) out.push_back(c);
    } while (ts_tree_cursor_goto_next_sibling(&cur));
  }
  ts_tree_cursor_delete(&cur);
  return out;
}

// Children with their field ids.
std::vector<std::pair<TSFieldId, TSNode>> fielded_children(TSNode n) {
  std::vector<std::pair<TSFieldId, TSNode>> out;
  TSTreeCursor cur = ts_tree_cursor_new(n);
  if (ts_tree_cursor_goto_first_child(&cur)) {
    do {
      out.emplace_back(ts_tree_cursor_current_field_id(&cur), ts_tree_cursor_current_node(&cur));
    } while (ts_tree_cursor_goto_next_sibling(&cur));
  }
  ts_tree_cursor_delete(&cur);
  return out;
}

class Lowerer {
 public:
  Lowerer(ParsedFile& file, const ParseLimits& limits) : f_(file), limits_(limits), s_(symbols()) {}

  // The top-level statements of `root` (a module, or a piece of one: see parse_python).
  void statements(TSNode root, std::vector<Node*>& out) {
    for (TSNode c : children(root)) stmt(c, out);
  }
  Node* module(TSNode root, const std::vector<Node*>& stmts) {
    Node* m = mk(K::Block, root);
    m->list = f_.arena.nodes(stmts);
    return m;
  }

 private:
  ParsedFile& f_;
  const ParseLimits& limits_;
  const SymbolTable& s_;
  size_t depth_ = 0;
  bool depth_reported_ = false;

  struct DepthGuard {
    explicit DepthGuard(size_t& d) : d_(d) { ++d_; }
    ~DepthGuard() { --d_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;
    size_t& d_;
  };

  static SourceRange range(TSNode n) {
    TSPoint a = ts_node_start_point(n);
    TSPoint b = ts_node_end_point(n);
    return SourceRange{Position{a.row, a.column}, Position{b.row, b.column}};
  }
  std::string_view text(TSNode n) const {
    uint32_t a = ts_node_start_byte(n);
    uint32_t b = ts_node_end_byte(n);
    if (a > f_.text.size() || b > f_.text.size() || b < a) return {};
    return std::string_view(f_.text).substr(a, b - a);
  }
  Node* mk(K kind, TSNode n) {
    Node* x = f_.arena.node(kind, range(n));
    x->has_error = ts_node_has_error(n);
    return x;
  }
  TSNode field(TSNode n, TSFieldId id) const { return ts_node_child_by_field_id(n, id); }

  bool too_deep(TSNode n) {
    if (depth_ < limits_.max_depth) return false;
    if (!depth_reported_) {
      depth_reported_ = true;
      f_.diagnostics.push_back(
          Diagnostic{f_.path,
                     range(n),
                     Severity::Error,
                     "nesting-too-deep",
                     "nesting deeper than " + std::to_string(limits_.max_depth) +
                         " levels; Cellscope stops analysing this expression here",
                     {},
                     {}});
    }
    return true;
  }

  // ---- statements ----
  std::span<Node*> block(TSNode n) {
    std::vector<Node*> out;
    if (ts_node_is_null(n)) return {};
    if (s_.type(n) != T::Block) {
      stmt(n, out);
    } else {
      for (TSNode c : children(n)) stmt(c, out);
    }
    return f_.arena.nodes(out);
  }

  void stmt(TSNode n, std::vector<Node*>& out) {
    DepthGuard g(depth_);
    if (too_deep(n)) return;
    switch (s_.type(n)) {
      case T::Comment:
      case T::LineContinuation:
      case T::FutureImportStatement:
        return;
      case T::Error:
        // Mine the error region for complete statements so intact code survives.
        for (TSNode c : children(n)) {
          T t = s_.type(c);
          if (t == T::ClassDefinition || t == T::FunctionDefinition ||
              t == T::DecoratedDefinition || t == T::ImportStatement ||
              t == T::ImportFromStatement || t == T::ExpressionStatement || t == T::IfStatement ||
              t == T::ForStatement || t == T::Block) {
            stmt(c, out);
          }
        }
        return;
      case T::Block:
        for (TSNode c : children(n)) stmt(c, out);
        return;
      case T::ExpressionStatement: {
        auto kids = children(n);
        if (kids.size() == 1) {
          TSNode c = kids[0];
          T t = s_.type(c);
          if (t == T::Assignment) {
            out.push_back(assignment(c));
            return;
          }
          if (t == T::AugmentedAssignment) {
            out.push_back(aug_assignment(c));
            return;
          }
          Node* e = mk(K::ExprStmt, n);
          e->a = expr(c);
          out.push_back(e);
          return;
        }
        Node* e = mk(K::ExprStmt, n);
        e->a = seq(K::Tuple, n, kids);
        out.push_back(e);
        return;
      }
      case T::ReturnStatement: {
        Node* r = mk(K::Return, n);
        auto kids = children(n);
        if (!kids.empty()) r->a = kids.size() == 1 ? expr(kids[0]) : seq(K::Tuple, n, kids);
        out.push_back(r);
        return;
      }
      case T::IfStatement:
        out.push_back(if_stmt(n));
        return;
      case T::ForStatement: {
        Node* x = mk(K::For, n);
        x->a = target(field(n, s_.f_left));
        x->b = expr_or_list(field(n, s_.f_right));
        x->list = block(field(n, s_.f_body));
        TSNode alt = field(n, s_.f_alternative);
        if (!ts_node_is_null(alt)) x->list2 = block(field(alt, s_.f_body));
        out.push_back(x);
        return;
      }
      case T::WhileStatement: {
        Node* x = mk(K::While, n);
        x->a = expr(field(n, s_.f_condition));
        x->list = block(field(n, s_.f_body));
        TSNode alt = field(n, s_.f_alternative);
        if (!ts_node_is_null(alt)) x->list2 = block(field(alt, s_.f_body));
        out.push_back(x);
        return;
      }
      case T::BreakStatement:
        out.push_back(mk(K::Break, n));
        return;
      case T::ContinueStatement:
        out.push_back(mk(K::Continue, n));
        return;
      case T::PassStatement:
        out.push_back(mk(K::Pass, n));
        return;
      case T::FunctionDefinition:
        out.push_back(function_def(n, {}));
        return;
      case T::ClassDefinition:
        out.push_back(class_def(n, {}));
        return;
      case T::DecoratedDefinition: {
        std::vector<Node*> decorators;
        for (TSNode c : children(n)) {
          if (s_.type(c) == T::Decorator) {
            auto kids = children(c);
            if (!kids.empty()) decorators.push_back(expr(kids[0]));
          }
        }
        TSNode def = field(n, s_.f_definition);
        if (ts_node_is_null(def)) return;
        if (s_.type(def) == T::ClassDefinition)
          out.push_back(class_def(def, decorators));
        else if (s_.type(def) == T::FunctionDefinition)
          out.push_back(function_def(def, decorators));
        return;
      }
      case T::ImportStatement: {
        Node* x = mk(K::Import, n);
        std::vector<Node*> names;
        for (TSNode c : children(n)) {
          if (Node* al = alias(c)) names.push_back(al);
        }
        x->list = f_.arena.nodes(names);
        out.push_back(x);
        return;
      }
      case T::ImportFromStatement:
        out.push_back(import_from(n));
        return;
      case T::GlobalStatement:
      case T::NonlocalStatement: {
        Node* x = mk(s_.type(n) == T::GlobalStatement ? K::Global : K::Nonlocal, n);
        std::vector<Node*> names;
        for (TSNode c : children(n)) {
          if (s_.type(c) == T::Identifier) names.push_back(expr(c));
        }
        x->list = f_.arena.nodes(names);
        out.push_back(x);
        return;
      }
      case T::AssertStatement: {
        Node* x = mk(K::Assert, n);
        auto kids = children(n);
        if (!kids.empty()) x->a = expr(kids[0]);
        if (kids.size() > 1) x->b = expr(kids[1]);
        out.push_back(x);
        return;
      }
      case T::RaiseStatement: {
        Node* x = mk(K::Raise, n);
        auto kids = children(n);
        if (!kids.empty()) x->a = expr(kids[0]);
        out.push_back(x);
        return;
      }
      case T::TryStatement:
        out.push_back(try_stmt(n));
        return;
      case T::WithStatement: {
        Node* x = mk(K::With, n);
        std::vector<Node*> items;
        for (TSNode c : children(n)) {
          if (s_.type(c) != T::WithClause) continue;
          for (TSNode item : children(c)) {
            if (s_.type(item) != T::WithItem) continue;
            Node* wi = mk(K::WithItem, item);
            TSNode v = field(item, s_.f_value);
            if (!ts_node_is_null(v) && s_.type(v) == T::AsPattern) {
              auto parts = children(v);
              if (!parts.empty()) wi->a = expr(parts[0]);
              if (parts.size() > 1) {
                auto inner = children(parts[1]);
                wi->b = target(inner.empty() ? parts[1] : inner[0]);
              }
            } else {
              wi->a = expr(v);
            }
            items.push_back(wi);
          }
        }
        x->list = f_.arena.nodes(items);
        x->list2 = block(field(n, s_.f_body));
        out.push_back(x);
        return;
      }
      case T::DeleteStatement: {
        Node* x = mk(K::Delete, n);
        std::vector<Node*> targets;
        for (TSNode c : children(n)) targets.push_back(target(c));
        x->list = f_.arena.nodes(targets);
        out.push_back(x);
        return;
      }
      case T::MatchStatement:
      case T::PrintStatement:
      case T::ExecStatement:
      case T::TypeAliasStatement: {
        Node* x = mk(K::Unsupported, n);
        x->str = ts_node_type(n);
        out.push_back(x);
        return;
      }
      default: {
        // An expression where a statement was expected (inside ERROR recovery, say).
        Node* e = mk(K::ExprStmt, n);
        e->a = expr(n);
        out.push_back(e);
        return;
      }
    }
  }

  Node* if_stmt(TSNode n) {
    Node* x = mk(K::If, n);
    x->a = expr(field(n, s_.f_condition));
    x->list = block(field(n, s_.f_consequence));
    // elif/else clauses become a nested If in orelse.
    std::vector<TSNode> clauses;
    for (auto& [fid, c] : fielded_children(n)) {
      if (fid == s_.f_alternative) clauses.push_back(c);
    }
    Node* cur = x;
    for (TSNode c : clauses) {
      if (s_.type(c) == T::ElifClause) {
        Node* e = mk(K::If, c);
        e->a = expr(field(c, s_.f_condition));
        e->list = block(field(c, s_.f_consequence));
        std::vector<Node*> one{e};
        cur->list2 = f_.arena.nodes(one);
        cur = e;
      } else if (s_.type(c) == T::ElseClause) {
        cur->list2 = block(field(c, s_.f_body));
      }
    }
    return x;
  }

  Node* try_stmt(TSNode n) {
    Node* x = mk(K::Try, n);
    x->list = block(field(n, s_.f_body));
    std::vector<Node*> handlers;
    for (TSNode c : children(n)) {
      T t = s_.type(c);
      if (t == T::ExceptClause || t == T::ExceptGroupClause) {
        Node* h = mk(K::ExceptHandler, c);
        std::vector<Node*> body;
        for (auto& [fid, k] : fielded_children(c)) {
          if (!ts_node_is_named(k)) continue;
          if (fid == s_.f_value)
            h->a = expr(k);
          else if (fid == s_.f_alias)
            h->str = text(k);
          else if (s_.type(k) == T::Block)
            h->list = block(k);
          else if (s_.type(k) == T::AsPattern) {
            auto parts = children(k);
            if (!parts.empty()) h->a = expr(parts[0]);
            if (parts.size() > 1) h->str = text(parts.back());
          } else if (!h->a && s_.type(k) != T::Comment) {
            h->a = expr(k);
          }
        }
        handlers.push_back(h);
      } else if (t == T::ElseClause) {
        Node* b = mk(K::Block, c);
        b->list = block(field(c, s_.f_body));
        x->a = b;
      } else if (t == T::FinallyClause) {
        Node* b = mk(K::Block, c);
        for (TSNode k : children(c)) {
          if (s_.type(k) == T::Block) b->list = block(k);
        }
        x->b = b;
      }
    }
    x->list2 = f_.arena.nodes(handlers);
    return x;
  }

  Node* assignment(TSNode n) {
    // a = b = c is nested: assignment(left=a, right=assignment(left=b, right=c)).
    std::vector<Node*> targets;
    TSNode cur = n;
    TSNode type_ann = field(n, s_.f_type);
    while (true) {
      targets.push_back(target(field(cur, s_.f_left)));
      TSNode right = field(cur, s_.f_right);
      if (!ts_node_is_null(right) && s_.type(right) == T::Assignment) {
        cur = right;
        continue;
      }
      if (!ts_node_is_null(type_ann) && targets.size() == 1) {
        Node* x = mk(K::AnnAssign, n);
        x->a = targets[0];
        x->b = ts_node_is_null(right) ? nullptr : expr_or_list(right);
        return x;
      }
      Node* x = mk(K::Assign, n);
      x->list = f_.arena.nodes(targets);
      x->a = ts_node_is_null(right) ? error_node(n) : expr_or_list(right);
      return x;
    }
  }

  Node* aug_assignment(TSNode n) {
    Node* x = mk(K::AugAssign, n);
    x->a = target(field(n, s_.f_left));
    x->b = expr_or_list(field(n, s_.f_right));
    std::string_view op = text(field(n, s_.f_operator));
    if (!op.empty() && op.back() == '=') op.remove_suffix(1);
    x->op = static_cast<uint8_t>(binop_kind(op));
    return x;
  }

  Node* function_def(TSNode n, const std::vector<Node*>& decorators) {
    Node* x = mk(K::FunctionDef, n);
    x->str = text(field(n, s_.f_name));
    x->list = params(field(n, s_.f_parameters));
    x->list2 = block(field(n, s_.f_body));
    x->list3 = f_.arena.nodes(decorators);
    return x;
  }

  std::span<Node*> params(TSNode n) {
    std::vector<Node*> out;
    if (ts_node_is_null(n)) return {};
    bool kwonly = false;
    for (TSNode c : children(n)) {
      T t = s_.type(c);
      Node* p = nullptr;
      switch (t) {
        case T::Identifier:
          p = mk(K::Param, c);
          p->str = text(c);
          break;
        case T::TypedParameter: {
          auto kids = children(c);
          if (kids.empty()) break;
          TSNode first = kids[0];
          T ft = s_.type(first);
          p = mk(K::Param, c);
          if (ft == T::ListSplatPattern || ft == T::DictionarySplatPattern) {
            auto inner = children(first);
            p->str = inner.empty() ? std::string_view{} : text(inner[0]);
            p->op = static_cast<uint8_t>(ft == T::ListSplatPattern ? ParamKindAst::VarArgs
                                                                   : ParamKindAst::VarKwargs);
            if (ft == T::ListSplatPattern) kwonly = true;
            out.push_back(p);
            continue;
          }
          p->str = text(first);
          break;
        }
        case T::DefaultParameter:
        case T::TypedDefaultParameter:
          p = mk(K::Param, c);
          p->str = text(field(c, s_.f_name));
          p->a = expr(field(c, s_.f_value));
          break;
        case T::ListSplatPattern:
        case T::DictionarySplatPattern: {
          p = mk(K::Param, c);
          auto inner = children(c);
          p->str = inner.empty() ? std::string_view{} : text(inner[0]);
          p->op = static_cast<uint8_t>(t == T::ListSplatPattern ? ParamKindAst::VarArgs
                                                                : ParamKindAst::VarKwargs);
          if (t == T::ListSplatPattern) kwonly = true;
          out.push_back(p);
          continue;
        }
        case T::KeywordSeparator:
          kwonly = true;
          continue;
        default:
          continue;
      }
      if (!p) continue;
      if (kwonly) p->op = static_cast<uint8_t>(ParamKindAst::KeywordOnly);
      out.push_back(p);
    }
    return f_.arena.nodes(out);
  }

  Node* class_def(TSNode n, const std::vector<Node*>& decorators) {
    Node* x = mk(K::ClassDef, n);
    x->str = text(field(n, s_.f_name));
    TSNode sup = field(n, s_.f_superclasses);
    if (!ts_node_is_null(sup)) {
      std::vector<Node*> pos, kw;
      call_args(sup, pos, kw);
      pos.insert(pos.end(), kw.begin(), kw.end());
      x->list = f_.arena.nodes(pos);
    }
    x->list2 = block(field(n, s_.f_body));
    x->list3 = f_.arena.nodes(decorators);
    return x;
  }

  Node* alias(TSNode c) {
    T t = s_.type(c);
    if (t == T::DottedName) {
      Node* al = mk(K::Alias, c);
      al->str = text(c);
      return al;
    }
    if (t == T::AliasedImport) {
      Node* al = mk(K::Alias, c);
      al->str = text(field(c, s_.f_name));
      al->str2 = text(field(c, s_.f_alias));
      return al;
    }
    return nullptr;
  }

  Node* import_from(TSNode n) {
    Node* x = mk(K::ImportFrom, n);
    TSNode mod = field(n, s_.f_module_name);
    if (!ts_node_is_null(mod)) {
      if (s_.type(mod) == T::RelativeImport) {
        for (TSNode c : children(mod)) {
          if (s_.type(c) == T::ImportPrefix)
            x->ival = static_cast<int64_t>(text(c).size());
          else if (s_.type(c) == T::DottedName)
            x->str = text(c);
        }
      } else {
        x->str = text(mod);
      }
    }
    std::vector<Node*> names;
    for (auto& [fid, c] : fielded_children(n)) {
      if (fid == s_.f_name) {
        if (Node* al = alias(c)) names.push_back(al);
      }
    }
    x->list = f_.arena.nodes(names);
    return x;
  }

  // ---- expressions ----
  Node* error_node(TSNode n) {
    Node* e = mk(K::Error, n);
    e->has_error = true;
    return e;
  }

  Node* seq(K kind, TSNode n, const std::vector<TSNode>& kids) {
    Node* x = mk(kind, n);
    std::vector<Node*> elts;
    elts.reserve(kids.size());
    for (TSNode c : kids) {
      if (s_.type(c) == T::Comment) continue;
      elts.push_back(expr(c));
    }
    x->list = f_.arena.nodes(elts);
    return x;
  }

  Node* expr_or_list(TSNode n) {
    if (ts_node_is_null(n)) return nullptr;
    T t = s_.type(n);
    if (t == T::ExpressionList || t == T::PatternList) return seq(K::Tuple, n, children(n));
    return expr(n);
  }

  Node* target(TSNode n) {
    if (ts_node_is_null(n)) return nullptr;
    switch (s_.type(n)) {
      case T::PatternList:
      case T::TuplePattern:
      case T::ExpressionList:
        return seq_targets(K::Tuple, n);
      case T::ListPattern:
        return seq_targets(K::List, n);
      case T::ListSplatPattern: {
        Node* x = mk(K::Starred, n);
        auto kids = children(n);
        x->a = kids.empty() ? error_node(n) : target(kids[0]);
        return x;
      }
      default:
        return expr(n);
    }
  }
  Node* seq_targets(K kind, TSNode n) {
    Node* x = mk(kind, n);
    std::vector<Node*> elts;
    for (TSNode c : children(n)) {
      if (s_.type(c) != T::Comment) elts.push_back(target(c));
    }
    x->list = f_.arena.nodes(elts);
    return x;
  }

  static BinOpKind binop_kind(std::string_view op) {
    static const std::unordered_map<std::string_view, BinOpKind> kOps = {
        {"+", BinOpKind::Add},     {"-", BinOpKind::Sub},       {"*", BinOpKind::Mul},
        {"/", BinOpKind::Div},     {"//", BinOpKind::FloorDiv}, {"%", BinOpKind::Mod},
        {"**", BinOpKind::Pow},    {"@", BinOpKind::MatMul},    {"<<", BinOpKind::LShift},
        {">>", BinOpKind::RShift}, {"&", BinOpKind::BitAnd},    {"|", BinOpKind::BitOr},
        {"^", BinOpKind::BitXor},
    };
    auto it = kOps.find(op);
    return it == kOps.end() ? BinOpKind::Add : it->second;
  }

  void call_args(TSNode args, std::vector<Node*>& pos, std::vector<Node*>& kw) {
    for (TSNode c : children(args)) {
      switch (s_.type(c)) {
        case T::KeywordArgument: {
          Node* k = mk(K::Keyword, c);
          k->str = text(field(c, s_.f_name));
          k->a = expr(field(c, s_.f_value));
          kw.push_back(k);
          break;
        }
        case T::DictionarySplat: {
          Node* k = mk(K::DoubleStarred, c);
          auto kids = children(c);
          k->a = kids.empty() ? error_node(c) : expr(kids[0]);
          kw.push_back(k);
          break;
        }
        case T::Comment:
          break;
        default:
          pos.push_back(expr(c));
      }
    }
  }

  Node* expr(TSNode n) {
    if (ts_node_is_null(n)) return nullptr;
    DepthGuard g(depth_);
    if (too_deep(n)) return error_node(n);
    switch (s_.type(n)) {
      case T::Identifier: {
        Node* x = mk(K::Name, n);
        x->str = text(n);
        return x;
      }
      case T::Integer:
        return integer(n);
      case T::Float: {
        std::string t;
        for (char ch : text(n)) {
          if (ch != '_') t.push_back(ch);
        }
        if (!t.empty() && (t.back() == 'j' || t.back() == 'J')) return error_node(n);
        Node* x = mk(K::Float, n);
        x->fval = std::strtod(t.c_str(), nullptr);
        return x;
      }
      case T::True:
      case T::False: {
        Node* x = mk(K::Bool, n);
        x->ival = s_.type(n) == T::True ? 1 : 0;
        return x;
      }
      case T::None:
        return mk(K::None, n);
      case T::Ellipsis:
        return mk(K::Ellipsis, n);
      case T::String:
        return string(n);
      case T::ConcatenatedString:
        return concatenated(n);
      case T::ParenthesizedExpression: {
        auto kids = children(n);
        for (TSNode c : kids) {
          if (s_.type(c) != T::Comment) return expr(c);
        }
        return error_node(n);
      }
      case T::BinaryOperator: {
        Node* x = mk(K::BinOp, n);
        x->a = expr(field(n, s_.f_left));
        x->b = expr(field(n, s_.f_right));
        x->op = static_cast<uint8_t>(binop_kind(text(field(n, s_.f_operator))));
        return x;
      }
      case T::UnaryOperator: {
        Node* x = mk(K::UnaryOp, n);
        std::string_view op = text(field(n, s_.f_operator));
        x->op = static_cast<uint8_t>(op == "-"   ? UnaryKind::Neg
                                     : op == "~" ? UnaryKind::Invert
                                                 : UnaryKind::Pos);
        x->a = expr(field(n, s_.f_argument));
        return x;
      }
      case T::NotOperator: {
        Node* x = mk(K::Not, n);
        x->a = expr(field(n, s_.f_argument));
        return x;
      }
      case T::BooleanOperator: {
        Node* x = mk(K::BoolOp, n);
        x->op = text(field(n, s_.f_operator)) == "or" ? 1 : 0;
        x->a = expr(field(n, s_.f_left));
        x->b = expr(field(n, s_.f_right));
        return x;
      }
      case T::ComparisonOperator:
        return compare(n);
      case T::Call: {
        Node* x = mk(K::Call, n);
        x->a = expr(field(n, s_.f_function));
        TSNode args = field(n, s_.f_arguments);
        std::vector<Node*> pos, kw;
        if (!ts_node_is_null(args)) {
          if (s_.type(args) == T::GeneratorExpression)
            pos.push_back(expr(args));
          else
            call_args(args, pos, kw);
        }
        x->list = f_.arena.nodes(pos);
        x->list2 = f_.arena.nodes(kw);
        return x;
      }
      case T::Attribute: {
        Node* x = mk(K::Attribute, n);
        x->a = expr(field(n, s_.f_object));
        x->str = text(field(n, s_.f_attribute));
        return x;
      }
      case T::Subscript: {
        Node* x = mk(K::Subscript, n);
        x->a = expr(field(n, s_.f_value));
        std::vector<TSNode> idx;
        for (auto& [fid, c] : fielded_children(n)) {
          if (fid == s_.f_subscript) idx.push_back(c);
        }
        if (idx.size() == 1)
          x->b = expr(idx[0]);
        else
          x->b = seq(K::Tuple, n, idx);
        return x;
      }
      case T::Slice:
        return slice(n);
      case T::Tuple:
      case T::ExpressionList:
      case T::PatternList:
      case T::TuplePattern:
        return seq(K::Tuple, n, children(n));
      case T::List:
      case T::ListPattern:
        return seq(K::List, n, children(n));
      case T::Set:
        return seq(K::Set, n, children(n));
      case T::Dictionary: {
        Node* x = mk(K::Dict, n);
        std::vector<Node*> keys, values;
        for (TSNode c : children(n)) {
          if (s_.type(c) == T::Pair) {
            keys.push_back(expr(field(c, s_.f_key)));
            values.push_back(expr(field(c, s_.f_value)));
          } else if (s_.type(c) == T::DictionarySplat) {
            auto kids = children(c);
            keys.push_back(nullptr);
            values.push_back(kids.empty() ? error_node(c) : expr(kids[0]));
          }
        }
        x->list = f_.arena.nodes(keys);
        x->list2 = f_.arena.nodes(values);
        return x;
      }
      case T::ListComprehension:
        return comprehension(K::ListComp, n);
      case T::SetComprehension:
        return comprehension(K::SetComp, n);
      case T::GeneratorExpression:
        return comprehension(K::GenExp, n);
      case T::DictionaryComprehension:
        return comprehension(K::DictComp, n);
      case T::ConditionalExpression: {
        auto kids = children(n);
        if (kids.size() < 3) return error_node(n);
        Node* x = mk(K::IfExp, n);
        x->a = expr(kids[0]);
        x->b = expr(kids[1]);
        x->c = expr(kids[2]);
        return x;
      }
      case T::Lambda: {
        Node* x = mk(K::Lambda, n);
        x->list = params(field(n, s_.f_parameters));
        x->a = expr(field(n, s_.f_body));
        return x;
      }
      case T::ListSplat:
      case T::ListSplatPattern:
      case T::ParenthesizedListSplat: {
        Node* x = mk(K::Starred, n);
        auto kids = children(n);
        x->a = kids.empty() ? error_node(n) : expr(kids[0]);
        return x;
      }
      case T::DictionarySplat: {
        Node* x = mk(K::DoubleStarred, n);
        auto kids = children(n);
        x->a = kids.empty() ? error_node(n) : expr(kids[0]);
        return x;
      }
      case T::NamedExpression: {
        Node* x = mk(K::NamedExpr, n);
        x->a = expr(field(n, s_.f_name));
        x->b = expr(field(n, s_.f_value));
        return x;
      }
      case T::Await:
      case T::Yield: {
        Node* x = mk(s_.type(n) == T::Await ? K::Await : K::Yield, n);
        auto kids = children(n);
        if (!kids.empty()) x->a = expr(kids.back());
        return x;
      }
      case T::KeywordArgument: {  // only inside ERROR recovery
        return expr(field(n, s_.f_value));
      }
      default:
        return error_node(n);
    }
  }

  Node* integer(TSNode n) {
    std::string t;
    for (char ch : text(n)) {
      if (ch != '_') t.push_back(ch);
    }
    if (!t.empty() && (t.back() == 'l' || t.back() == 'L')) t.pop_back();
    if (!t.empty() && (t.back() == 'j' || t.back() == 'J')) return error_node(n);
    int base = 10;
    size_t skip = 0;
    if (t.size() > 1 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X'))
      base = 16, skip = 2;
    else if (t.size() > 1 && t[0] == '0' && (t[1] == 'o' || t[1] == 'O'))
      base = 8, skip = 2;
    else if (t.size() > 1 && t[0] == '0' && (t[1] == 'b' || t[1] == 'B'))
      base = 2, skip = 2;
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(t.c_str() + skip, &end, base);
    if (errno == ERANGE) {
      Node* x = mk(K::Float, n);
      x->fval = std::strtod(t.c_str(), nullptr);
      return x;
    }
    Node* x = mk(K::Int, n);
    x->ival = v;
    return x;
  }

  Node* compare(TSNode n) {
    Node* x = mk(K::Compare, n);
    std::vector<Node*> operands;
    std::vector<CmpKind> ops;
    std::string pending;
    auto flush = [&]() {
      if (pending.empty()) return;
      static const std::unordered_map<std::string, CmpKind> kOps = {
          {"==", CmpKind::Eq},  {"!=", CmpKind::NotEq},   {"<>", CmpKind::NotEq},
          {"<", CmpKind::Lt},   {"<=", CmpKind::LtE},     {">", CmpKind::Gt},
          {">=", CmpKind::GtE}, {"in", CmpKind::In},      {"notin", CmpKind::NotIn},
          {"is", CmpKind::Is},  {"isnot", CmpKind::IsNot}};
      auto it = kOps.find(pending);
      ops.push_back(it == kOps.end() ? CmpKind::Eq : it->second);
      pending.clear();
    };
    for (auto& [fid, c] : fielded_children(n)) {
      if (fid == s_.f_operators || !ts_node_is_named(c)) {
        std::string norm;  // "is not" / "not in" may be single tokens with any spacing
        for (char ch : text(c)) {
          if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\\' && ch != '\r') norm.push_back(ch);
        }
        std::string_view t = norm;
        if (t == "not" && pending == "is") {
          pending += "not";
          continue;
        }
        if (t == "in" && pending == "not") {
          pending += "in";
          continue;
        }
        if (!pending.empty() && !(pending == "is" || pending == "not")) flush();
        if (pending == "is" && t != "not") flush();
        pending += std::string(t);
        if (pending != "is" && pending != "not") flush();
        continue;
      }
      if (s_.type(c) == T::Comment) continue;
      flush();
      operands.push_back(expr(c));
    }
    flush();
    x->list = f_.arena.nodes(operands);
    x->cmp_ops = f_.arena.cmps(ops);
    return x;
  }

  Node* slice(TSNode n) {
    Node* x = mk(K::Slice, n);
    int part = 0;
    for (TSNode c : children(n, false)) {
      if (!ts_node_is_named(c)) {
        if (text(c) == ":") ++part;
        continue;
      }
      if (s_.type(c) == T::Comment) continue;
      Node* e = expr(c);
      if (part == 0)
        x->a = e;
      else if (part == 1)
        x->b = e;
      else
        x->c = e;
    }
    return x;
  }

  Node* comprehension(K kind, TSNode n) {
    Node* x = mk(kind, n);
    std::vector<Node*> gens;
    Node* current = nullptr;
    for (auto& [fid, c] : fielded_children(n)) {
      if (!ts_node_is_named(c)) continue;
      T t = s_.type(c);
      if (fid == s_.f_body) {
        if (kind == K::DictComp && s_.type(c) == T::Pair) {
          x->a = expr(field(c, s_.f_key));
          x->b = expr(field(c, s_.f_value));
        } else {
          x->a = expr(c);
        }
      } else if (t == T::ForInClause) {
        current = mk(K::Comprehension, c);
        current->a = target(field(c, s_.f_left));
        std::vector<TSNode> rights;
        for (auto& [f2, k] : fielded_children(c)) {
          if (f2 == s_.f_right && ts_node_is_named(k)) rights.push_back(k);
        }
        current->b = rights.size() == 1 ? expr(rights[0]) : seq(K::Tuple, c, rights);
        gens.push_back(current);
      } else if (t == T::IfClause && current) {
        auto kids = children(c);
        std::vector<Node*> conds(current->list.begin(), current->list.end());
        if (!kids.empty()) conds.push_back(expr(kids[0]));
        current->list = f_.arena.nodes(conds);
      }
    }
    if (!x->a) x->a = error_node(n);
    x->list = f_.arena.nodes(gens);
    return x;
  }

  static std::string decode_escapes(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\\' || i + 1 >= s.size()) {
        out.push_back(s[i]);
        continue;
      }
      char e = s[++i];
      switch (e) {
        case 'n':
          out.push_back('\n');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case '0':
          out.push_back('\0');
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '\'':
          out.push_back('\'');
          break;
        case '"':
          out.push_back('"');
          break;
        case '\n':
          break;
        default:
          out.push_back('\\');
          out.push_back(e);
      }
    }
    return out;
  }

  // Appends the parts of one string literal: literal text and (for f-strings) expressions.
  bool string_parts(TSNode n, std::vector<Node*>& parts, std::string& literal) {
    bool is_f = false;
    bool raw = false;
    auto kids = children(n, false);
    for (TSNode c : kids) {
      T t = s_.type(c);
      if (t == T::StringStart) {
        for (char ch : text(c)) {
          if (ch == 'f' || ch == 'F') is_f = true;
          if (ch == 'r' || ch == 'R') raw = true;
        }
      } else if (t == T::StringContent) {
        std::string_view content = text(c);
        literal += raw ? std::string(content) : decode_escapes(content);
      } else if (t == T::Interpolation) {
        if (!literal.empty()) {
          Node* s = mk(K::Str, c);
          s->str = f_.arena.keep(std::move(literal));
          literal.clear();
          parts.push_back(s);
        }
        parts.push_back(expr(field(c, s_.f_expression)));
      } else if (t == T::EscapeSequence) {
        literal += decode_escapes(text(c));
      }
    }
    return is_f;
  }

  Node* string(TSNode n) {
    std::vector<Node*> parts;
    std::string literal;
    bool is_f = string_parts(n, parts, literal);
    return finish_string(n, is_f, parts, literal);
  }

  Node* concatenated(TSNode n) {
    std::vector<Node*> parts;
    std::string literal;
    bool is_f = false;
    for (TSNode c : children(n)) {
      if (s_.type(c) == T::String) is_f |= string_parts(c, parts, literal);
    }
    return finish_string(n, is_f, parts, literal);
  }

  Node* finish_string(TSNode n, bool is_f, std::vector<Node*>& parts, std::string& literal) {
    if (!is_f && parts.empty()) {
      Node* x = mk(K::Str, n);
      x->str = f_.arena.keep(std::move(literal));
      return x;
    }
    if (!literal.empty()) {
      Node* s = mk(K::Str, n);
      s->str = f_.arena.keep(std::move(literal));
      parts.push_back(s);
    }
    Node* x = mk(K::FString, n);
    x->list = f_.arena.nodes(parts);
    return x;
  }
};

// Collects syntax errors: ERROR nodes ("unexpected ...") and MISSING nodes ("expected ...").
void collect_syntax_errors(TSNode n, ParsedFile& f, size_t& budget) {
  if (budget == 0 || !ts_node_has_error(n)) return;
  auto make_range = [](TSNode x) {
    TSPoint a = ts_node_start_point(x);
    TSPoint b = ts_node_end_point(x);
    return SourceRange{Position{a.row, a.column}, Position{b.row, b.column}};
  };
  if (ts_node_is_missing(n)) {
    --budget;
    f.diagnostics.push_back(
        Diagnostic{f.path,
                   make_range(n),
                   Severity::Error,
                   "syntax-error",
                   std::string("syntax error: expected `") + ts_node_type(n) + "`",
                   {},
                   {}});
    return;
  }
  if (symbols().type(n) == T::Error) {
    --budget;
    uint32_t a = ts_node_start_byte(n);
    uint32_t b = std::min<uint32_t>(ts_node_end_byte(n), a + 40);
    std::string snippet = f.text.substr(a, b - a);
    if (auto nl = snippet.find('\n'); nl != std::string::npos) snippet.resize(nl);
    SourceRange r = make_range(n);
    if (r.end.line != r.start.line) {  // keep the squiggle on the first line
      r.end = Position{r.start.line, r.start.column + static_cast<uint32_t>(snippet.size())};
    }
    f.diagnostics.push_back(Diagnostic{f.path,
                                       r,
                                       Severity::Error,
                                       "syntax-error",
                                       "syntax error: unexpected `" + snippet + "`",
                                       {},
                                       {}});
    return;
  }
  TSTreeCursor cur = ts_tree_cursor_new(n);
  if (ts_tree_cursor_goto_first_child(&cur)) {
    do {
      collect_syntax_errors(ts_tree_cursor_current_node(&cur), f, budget);
    } while (ts_tree_cursor_goto_next_sibling(&cur));
  }
  ts_tree_cursor_delete(&cur);
}

// CPython's TabError ("inconsistent use of tabs and spaces in indentation"). Its tokenizer
// measures the indentation of every logical line that starts outside brackets twice: with tabs to
// the next multiple of 8 (`col`) and with tabs as one column (`altcol`); a line whose two
// measures disagree about indent / same level / dedent against the enclosing block is a TabError,
// located at the start of that line. tree-sitter's grammar only uses the first measure, so it
// parses such a file without complaint. This scans the text the way CPython's tokenizer does
// (comments, strings, bracket depth, backslash continuations) and reports the first such line.
// Where CPython would fail first for another reason (unterminated string, an unindent matching no
// outer level, an unmatched bracket, too many levels), or where it is unsure (a backslash within
// a line's indentation), it stops without reporting: it never reports where CPython compiles.
void check_tab_consistency(ParsedFile& f) {
  const std::string& t = f.text;  // lone "\r" already read as "\n"
  const size_t n = t.size();
  auto at_eol = [&](size_t i) {
    return i >= n || t[i] == '\n' || (t[i] == '\r' && i + 1 < n && t[i + 1] == '\n');
  };
  auto skip_eol = [&](size_t i) { return t[i] == '\r' ? i + 2 : i + 1; };  // at_eol(i), i < n
  constexpr size_t kMaxIndent = 100;                                       // CPython's MAXINDENT
  std::vector<uint32_t> cols{0};
  std::vector<uint32_t> altcols{0};
  int level = 0;
  uint32_t line_no = 0;
  size_t i = 0;
  while (i < n) {
    // Beginning of a line: measure its indentation.
    const size_t line_start = i;
    uint32_t col = 0;
    uint32_t altcol = 0;
    for (; i < n; ++i) {
      if (t[i] == ' ') {
        ++col;
        ++altcol;
      } else if (t[i] == '\t') {
        col = (col / 8 + 1) * 8;
        ++altcol;
      } else if (t[i] == '\f') {
        col = altcol = 0;
      } else {
        break;
      }
    }
    if (i < n && t[i] == '\\') return;  // a continuation inside indentation: not judged
    const bool blank = at_eol(i) || t[i] == '#';
    if (!blank && level == 0) {
      bool inconsistent = false;
      if (col == cols.back()) {
        inconsistent = altcol != altcols.back();
      } else if (col > cols.back()) {
        if (cols.size() >= kMaxIndent) return;
        inconsistent = altcol <= altcols.back();
        cols.push_back(col);
        altcols.push_back(altcol);
      } else {
        while (cols.size() > 1 && col < cols.back()) {
          cols.pop_back();
          altcols.pop_back();
        }
        if (col != cols.back()) return;  // IndentationError: unindent does not match
        inconsistent = altcol != altcols.back();
      }
      if (inconsistent) {
        f.diagnostics.push_back(
            Diagnostic{f.path,
                       SourceRange{Position{line_no, 0},
                                   Position{line_no, static_cast<uint32_t>(i - line_start)}},
                       Severity::Error,
                       "syntax-error",
                       "TabError: inconsistent use of tabs and spaces in indentation",
                       {},
                       {}});
        return;
      }
    }
    // The rest of the logical line's tokens on this physical line (and those it continues onto).
    bool line_ended = false;
    while (i < n && !line_ended) {
      const char c = t[i];
      if (at_eol(i)) {
        i = skip_eol(i);
        ++line_no;
        line_ended = true;
      } else if (c == '#') {
        while (!at_eol(i)) ++i;
      } else if (c == '\\') {
        if (i + 1 >= n) return;      // unexpected end of file after a continuation
        if (!at_eol(i + 1)) return;  // a stray backslash: CPython's SyntaxError
        i = skip_eol(i + 1);
        ++line_no;
      } else if (c == '(' || c == '[' || c == '{') {
        ++level;
        ++i;
      } else if (c == ')' || c == ']' || c == '}') {
        if (level == 0) return;  // unmatched bracket: CPython's SyntaxError
        --level;
        ++i;
      } else if (c == '\'' || c == '"') {
        // A string (any prefix: r, b, f, u... only change what is inside, not where it ends).
        const bool triple = i + 2 < n && t[i + 1] == c && t[i + 2] == c;
        i += triple ? 3 : 1;
        bool closed = false;
        while (i < n) {
          if (t[i] == '\\') {
            if (i + 1 < n && at_eol(i + 1)) {
              i = skip_eol(i + 1);
              ++line_no;
            } else {
              i += 2;
            }
          } else if (t[i] == c && (!triple || (i + 2 < n && t[i + 1] == c && t[i + 2] == c))) {
            i += triple ? 3 : 1;
            closed = true;
            break;
          } else if (at_eol(i)) {
            if (!triple) return;  // unterminated string literal: CPython's SyntaxError
            i = skip_eol(i);
            ++line_no;
          } else {
            ++i;
          }
        }
        if (!closed) return;  // unterminated at the end of the file
      } else {
        ++i;
      }
    }
  }
}

// Python refuses more than 100 levels of indentation, and tree-sitter's indentation scanner gives
// up on far deeper nesting by failing the whole file. Lines of blocks nested deeper than the limit
// are emptied (line numbers, and columns of every other line, are kept) and reported once, so the
// rest of the file still parses — quickly, since no deep indentation reaches the parser.
void limit_indentation(ParsedFile& f, size_t max_levels) {
  const std::string& t = f.text;
  std::string out;
  bool changed = false;
  std::vector<size_t> stack{0};
  int brackets = 0;
  bool reported = false;
  size_t line_start = 0;
  uint32_t line_no = 0;
  while (line_start < t.size()) {
    size_t end = t.find('\n', line_start);
    if (end == std::string::npos) end = t.size();
    size_t indent = 0;
    size_t i = line_start;
    while (i < end && (t[i] == ' ' || t[i] == '\t')) {
      indent += t[i] == '\t' ? 8 - (indent % 8) : 1;
      ++i;
    }
    bool blank = i == end || t[i] == '#' || t[i] == '\r';
    if (!blank && brackets == 0) {
      while (stack.size() > 1 && indent < stack.back()) stack.pop_back();
      if (indent > stack.back()) stack.push_back(indent);
      // The grammar's scanner stores indentation widths in a byte: deeper than 248 columns is
      // treated like too many levels.
      if (stack.size() > max_levels + 1 || indent > 248) {
        if (!reported) {
          reported = true;
          f.diagnostics.push_back(
              Diagnostic{f.path,
                         SourceRange{Position{line_no, 0},
                                     Position{line_no, static_cast<uint32_t>(end - line_start)}},
                         Severity::Error,
                         "nesting-too-deep",
                         "too many levels of indentation (Python allows at most " +
                             std::to_string(max_levels) +
                             " levels; Cellscope at most 248 columns); the block nested this deep "
                             "is not analysed",
                         {},
                         {}});
        }
        if (!changed) {
          out.assign(t, 0, line_start);
          changed = true;
        }
        stack.pop_back();
        if (end < t.size()) out.push_back('\n');
        line_start = end + 1;
        ++line_no;
        continue;
      }
    }
    if (changed) out.append(t, line_start, end - line_start + (end < t.size() ? 1 : 0));
    if (!blank) {
      for (size_t k = i; k < end; ++k) {
        char c = t[k];
        if (c == '#') break;
        if (c == '(' || c == '[' || c == '{') ++brackets;
        if ((c == ')' || c == ']' || c == '}') && brackets > 0) --brackets;
      }
    }
    line_start = end + 1;
    ++line_no;
  }
  if (changed) f.text = std::move(out);
}

}  // namespace

void SyntaxTreeDeleter::operator()(SyntaxTree* t) const {
  ts_tree_delete(reinterpret_cast<TSTree*>(t));
}

namespace {

TSPoint point_at(std::string_view text, size_t offset) {
  TSPoint p{0, 0};
  size_t line_start = 0;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++p.row;
      line_start = i + 1;
    }
  }
  p.column = static_cast<uint32_t>(offset - line_start);
  return p;
}

// The edit turning `before` into `after`: their common prefix and suffix are kept.
TSInputEdit diff_edit(std::string_view before, std::string_view after) {
  size_t prefix = 0;
  const size_t limit = std::min(before.size(), after.size());
  while (prefix < limit && before[prefix] == after[prefix]) ++prefix;
  size_t suffix = 0;
  while (suffix < limit - prefix &&
         before[before.size() - 1 - suffix] == after[after.size() - 1 - suffix])
    ++suffix;
  TSInputEdit e;
  e.start_byte = static_cast<uint32_t>(prefix);
  e.old_end_byte = static_cast<uint32_t>(before.size() - suffix);
  e.new_end_byte = static_cast<uint32_t>(after.size() - suffix);
  e.start_point = point_at(before, e.start_byte);
  e.old_end_point = point_at(before, e.old_end_byte);
  e.new_end_point = point_at(after, e.new_end_byte);
  return e;
}

// A half-typed statement can swallow the code after it: in `def construct(self,` the parameter
// list is never closed, and inside brackets Python ignores line breaks and indentation, so
// tree-sitter's recovery reads the next lines -- `class Model(nn.Cell):` included -- as more of
// the parameter list, and the following methods as more of the class being edited (whose
// construction could then build itself). But a `class` or `def` keyword at column 0 can only
// start a top-level statement in whatever the half-typed text becomes. The first such keyword
// inside an erroneous top-level statement of `root` (not that statement's own first token), at
// or after `from`, moved back over the decorators right above it: its offset, or 0 if none.
uint32_t swallowed_statement(TSNode root, uint32_t from, std::string_view text) {
  uint32_t found = 0;
  TSTreeCursor top = ts_tree_cursor_new(root);
  for (bool more = ts_tree_cursor_goto_first_child(&top); more && !found;
       more = ts_tree_cursor_goto_next_sibling(&top)) {
    TSNode statement = ts_tree_cursor_current_node(&top);
    if (ts_node_end_byte(statement) <= from || !ts_node_has_error(statement)) continue;
    const uint32_t statement_start = ts_node_start_byte(statement);
    // Depth first, in text order, over the statement's tokens.
    TSTreeCursor cur = ts_tree_cursor_new(statement);
    while (!found) {
      TSNode n = ts_tree_cursor_current_node(&cur);
      if (ts_node_child_count(n) > 0 && ts_tree_cursor_goto_first_child(&cur)) continue;
      // By its text: inside an ERROR, recovery can lex a keyword as an identifier.
      const uint32_t start = ts_node_start_byte(n);
      if (start > statement_start && start > from && start < text.size() &&
          ts_node_start_point(n).column == 0) {
        const std::string_view token =
            text.substr(start, std::min<size_t>(ts_node_end_byte(n), text.size()) - start);
        if (token == "class" || token == "def") found = start;
      }
      bool next = false;
      while (!next) {
        if (ts_tree_cursor_goto_next_sibling(&cur)) {
          next = true;
        } else if (!ts_tree_cursor_goto_parent(&cur)) {
          break;
        }
      }
      if (!next) break;
    }
    ts_tree_cursor_delete(&cur);
  }
  ts_tree_cursor_delete(&top);
  if (!found) return 0;
  // `@decorator` lines right above the keyword belong to its statement.
  uint32_t cut = found;  // a line start: text[cut - 1] is '\n'
  while (cut >= 2) {
    const size_t newline = text.rfind('\n', cut - 2);
    const size_t line = newline == std::string_view::npos ? 0 : newline + 1;
    if (line <= from || text[line] != '@') break;
    cut = static_cast<uint32_t>(line);
  }
  return cut;
}

// Lowers the text in [begin, end) (a piece of the file: tree-sitter parses only that range, its
// positions those of the whole file) into `out`, each statement swallowed by a half-typed one
// (swallowed_statement) lowered from a parse of its own, at most `splits` times.
void lower_piece(Lowerer& lower, TSParser* parser, const std::string& text, uint32_t begin,
                 uint32_t end, TSTree* whole, std::vector<Node*>& out, int& splits) {
  TSTree* tree = whole;
  if (!tree) {
    TSRange range{point_at(text, begin), point_at(text, end), begin, end};
    ts_parser_set_included_ranges(parser, &range, 1);
    tree = ts_parser_parse_string(parser, nullptr, text.data(), static_cast<uint32_t>(text.size()));
    ts_parser_set_included_ranges(parser, nullptr, 0);
  }
  TSNode root = ts_tree_root_node(tree);
  uint32_t cut = 0;
  if (splits > 0 && ts_node_has_error(root)) cut = swallowed_statement(root, begin, text);
  if (cut > begin && cut < end) {
    --splits;
    lower_piece(lower, parser, text, begin, cut, nullptr, out, splits);
    lower_piece(lower, parser, text, cut, end, nullptr, out, splits);
  } else {
    lower.statements(root, out);
  }
  if (tree != whole) ts_tree_delete(tree);
}

}  // namespace

std::unique_ptr<ParsedFile> parse_python(std::string path, std::string text,
                                         const ParseLimits& limits, const ParsedFile* previous,
                                         bool keep_tree) {
  auto file = std::make_unique<ParsedFile>();
  file->path = std::move(path);
  if (text.size() > limits.max_bytes) {
    file->diagnostics.push_back(Diagnostic{file->path,
                                           SourceRange{},
                                           Severity::Error,
                                           "file-too-large",
                                           "file is " + std::to_string(text.size() / 1024) +
                                               " KiB; Cellscope analyses model files up to " +
                                               std::to_string(limits.max_bytes / 1024) + " KiB",
                                           {},
                                           {}});
    file->text.clear();
    file->module = file->arena.node(K::Block, SourceRange{});
    return file;
  }
  file->original_size = text.size();
  file->original_hash = std::hash<std::string>{}(text);
  file->text = std::move(text);
  auto bad = sanitize_utf8(file->text);
  if (!bad.empty()) {
    LineIndex index(file->text);
    Position p = index.position_of(bad.front());
    file->diagnostics.push_back(
        Diagnostic{file->path,
                   SourceRange{p, Position{p.line, p.column + 1}},
                   Severity::Error,
                   "invalid-encoding",
                   "file is not valid UTF-8 (" + std::to_string(bad.size()) +
                       " invalid byte(s), first here); Python source must be UTF-8",
                   {},
                   {}});
  }
  // Offsets, lines and columns are unchanged: the grammar then sees the line ends CPython sees.
  normalize_lone_cr(file->text);
  check_tab_consistency(*file);
  limit_indentation(*file, 100);
  file->text_is_original = file->text.size() == file->original_size &&
                           std::hash<std::string>{}(file->text) == file->original_hash;
  TSParser* parser = ts_parser_new();
  ts_parser_set_language(parser, tree_sitter_python());
  const auto size = static_cast<uint32_t>(file->text.size());
  TSTree* tree = nullptr;
  if (previous && previous->tree && previous->text.size() < UINT32_MAX) {
    // Incremental re-parsing is exact only for text without syntax errors: tree-sitter's error
    // recovery reuses subtrees of the old tree, so on erroneous text its result depends on the
    // text parsed before (a fresh parse of the same text can recover differently, and the
    // diagnostics would depend on the history of the buffer). An erroneous previous tree is not
    // reused at all (its text was broken; the next one most likely is too); an incremental
    // result with errors is thrown away and the text parsed from scratch.
    const auto* prev = reinterpret_cast<const TSTree*>(previous->tree.get());
    if (ts_node_has_error(ts_tree_root_node(prev))) {
      file->reparsed_from_scratch = true;
    } else {
      TSTree* old_tree = ts_tree_copy(prev);
      TSInputEdit edit = diff_edit(previous->text, file->text);
      ts_tree_edit(old_tree, &edit);
      tree = ts_parser_parse_string(parser, old_tree, file->text.data(), size);
      ts_tree_delete(old_tree);
      if (ts_node_has_error(ts_tree_root_node(tree))) {
        ts_tree_delete(tree);
        tree = nullptr;
        file->reparsed_from_scratch = true;
      } else {
        file->reparsed_incrementally = true;
      }
    }
  }
  if (!tree) tree = ts_parser_parse_string(parser, nullptr, file->text.data(), size);
  TSNode root = ts_tree_root_node(tree);
  size_t budget = 20;
  collect_syntax_errors(root, *file, budget);
  Lowerer lower(*file, limits);
  std::vector<Node*> statements;
  int splits = 8;
  lower_piece(lower, parser, file->text, 0, size, tree, statements, splits);
  file->module = lower.module(root, statements);
  if (keep_tree) {
    file->tree.reset(reinterpret_cast<SyntaxTree*>(tree));
  } else {
    ts_tree_delete(tree);
  }
  ts_parser_delete(parser);
  return file;
}

bool ParsedFile::same_source(const std::string& original) const {
  if (original.size() != original_size) return false;
  if (text_is_original) return original == text;
  return std::hash<std::string>{}(original) == original_hash;
}

}  // namespace graphcore::ast
