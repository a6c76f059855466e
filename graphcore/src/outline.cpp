// Syntactic outline of a Python file (see graphcore/outline.h).
#include "graphcore/outline.h"

#include <memory>

#include "ast.h"

namespace graphcore {

namespace {

using ast::K;
using ast::Node;

class Outliner {
 public:
  explicit Outliner(const ast::ParsedFile& pf) : pf_(pf), lines_(pf.text) {}

  void module(FileOutline& out) {
    if (!pf_.module) return;
    for (Node* s : pf_.module->list) statement(s, out.symbols, &out.imports);
  }

 private:
  // The range of a name that is a view into the file's text (identifiers are).
  SourceRange name_range(std::string_view name, SourceRange fallback) const {
    const std::string_view text = pf_.text;
    if (name.empty() || name.data() < text.data() ||
        name.data() + name.size() > text.data() + text.size()) {
      return fallback;
    }
    auto off = static_cast<size_t>(name.data() - text.data());
    return SourceRange{lines_.position_of(off), lines_.position_of(off + name.size())};
  }

  static std::string dotted(const Node* e) {
    if (!e) return {};
    if (e->kind == K::Name) return std::string(e->str);
    if (e->kind == K::Attribute) {
      std::string base = dotted(e->a);
      return base.empty() ? std::string() : base + "." + std::string(e->str);
    }
    if (e->kind == K::Call) return dotted(e->a) + "(...)";
    if (e->kind == K::Subscript) return dotted(e->a) + "[...]";
    return {};
  }

  static std::string params(const Node* def) {
    std::string out = "(";
    for (size_t i = 0; i < def->list.size(); ++i) {
      const Node* p = def->list[i];
      if (i) out += ", ";
      auto kind = static_cast<ast::ParamKindAst>(p->op);
      if (kind == ast::ParamKindAst::VarArgs) out += "*";
      if (kind == ast::ParamKindAst::VarKwargs) out += "**";
      out += p->str;
      if (p->a) out += "=...";
    }
    return out + ")";
  }

  void imports(const Node* s, std::vector<ImportBinding>& out) {
    if (s->kind == K::Import) {
      for (const Node* al : s->list) {
        std::string target(al->str);
        if (!al->str2.empty()) {
          out.push_back(ImportBinding{std::string(al->str2), target, 0, al->range});
        } else {
          std::string top = target.substr(0, target.find('.'));
          out.push_back(ImportBinding{top, top, 0, al->range});
        }
      }
      return;
    }
    // from X import a as b
    std::string module(s->str);
    for (const Node* al : s->list) {
      std::string name(al->str);
      std::string local = al->str2.empty() ? name : std::string(al->str2);
      std::string target = module;
      if (!target.empty()) target += ".";
      target += name;
      out.push_back(ImportBinding{local, target, static_cast<int>(s->ival), al->range});
    }
  }

  void statement(const Node* s, std::vector<OutlineSymbol>& out, std::vector<ImportBinding>* imps) {
    if (!s) return;
    switch (s->kind) {
      case K::ClassDef:
        out.push_back(class_def(s));
        break;
      case K::FunctionDef:
        out.push_back(function_def(s, OutlineSymbol::Kind::Function));
        break;
      case K::Assign:
      case K::AnnAssign: {
        const Node* target = s->kind == K::Assign ? (s->list.empty() ? nullptr : s->list[0]) : s->a;
        if (!target || target->kind != K::Name) break;
        if (find_symbol(out, target->str)) break;  // first binding only
        OutlineSymbol v;
        v.kind = OutlineSymbol::Kind::Variable;
        v.name = std::string(target->str);
        v.range = s->range;
        v.selection = target->range;
        out.push_back(std::move(v));
        break;
      }
      case K::Import:
      case K::ImportFrom:
        if (imps) imports(s, *imps);
        break;
      case K::If:
      case K::Try:
      case K::With:
        // Definitions under `if __name__ == "__main__":`, `try:` or `with` at module level.
        for (const Node* b : s->list) statement(b, out, imps);
        if (s->kind == K::If) {
          for (const Node* b : s->list2) statement(b, out, imps);
        }
        if (s->kind == K::Try) {
          for (const Node* h : s->list2) {
            for (const Node* b : h->list) statement(b, out, imps);
          }
        }
        break;
      default:
        break;
    }
  }

  OutlineSymbol function_def(const Node* s, OutlineSymbol::Kind kind) {
    OutlineSymbol f;
    f.kind = kind;
    f.name = std::string(s->str);
    f.detail = params(s);
    f.range = s->range;
    f.selection = name_range(s->str, s->range);
    return f;
  }

  OutlineSymbol class_def(const Node* s) {
    OutlineSymbol c;
    c.kind = OutlineSymbol::Kind::Class;
    c.name = std::string(s->str);
    c.range = s->range;
    c.selection = name_range(s->str, s->range);
    for (const Node* b : s->list) {
      if (b->kind == K::Keyword) continue;
      std::string text = dotted(b);
      if (!text.empty()) c.bases.push_back(std::move(text));
    }
    c.detail = "(";
    for (size_t i = 0; i < c.bases.size(); ++i) c.detail += (i ? ", " : "") + c.bases[i];
    c.detail += ")";
    std::vector<OutlineSymbol> attributes;
    for (const Node* b : s->list2) {
      if (b->kind == K::FunctionDef) {
        OutlineSymbol m = function_def(b, OutlineSymbol::Kind::Method);
        std::string self = b->list.empty() ? "" : std::string(b->list[0]->str);
        if (!self.empty()) self_attributes(b->list2, self, attributes);
        c.children.push_back(std::move(m));
      } else if (b->kind == K::ClassDef) {
        c.children.push_back(class_def(b));
      } else {
        statement(b, c.children, nullptr);
      }
    }
    // Attributes first (in order of first assignment), then the rest, as editors list fields.
    std::vector<OutlineSymbol> children;
    for (auto& a : attributes) {
      if (!find_symbol(c.children, a.name)) children.push_back(std::move(a));
    }
    for (auto& m : c.children) children.push_back(std::move(m));
    c.children = std::move(children);
    return c;
  }

  // `self.x = ...` (also in nested blocks) of one method.
  void self_attributes(std::span<Node*> body, const std::string& self,
                       std::vector<OutlineSymbol>& out) {
    for (const Node* s : body) {
      if (!s) continue;
      std::vector<const Node*> targets;
      if (s->kind == K::Assign) {
        for (const Node* t : s->list) targets.push_back(t);
      } else if (s->kind == K::AnnAssign || s->kind == K::AugAssign) {
        targets.push_back(s->a);
      }
      for (const Node* t : targets) {
        if (t && t->kind == K::Tuple) {
          for (const Node* e : t->list) add_self_attribute(e, s, self, out);
        } else {
          add_self_attribute(t, s, self, out);
        }
      }
      if (s->kind == K::If || s->kind == K::For || s->kind == K::While || s->kind == K::With) {
        self_attributes(s->list, self, out);
        self_attributes(s->list2, self, out);
      }
    }
  }

  void add_self_attribute(const Node* t, const Node* stmt, const std::string& self,
                          std::vector<OutlineSymbol>& out) {
    if (!t || t->kind != K::Attribute || !t->a || t->a->kind != K::Name || t->a->str != self)
      return;
    for (const auto& a : out) {
      if (a.name == t->str) return;
    }
    OutlineSymbol a;
    a.kind = OutlineSymbol::Kind::Attribute;
    a.name = std::string(t->str);
    a.range = stmt->range;
    a.selection = name_range(t->str, t->range);
    if (stmt->kind == K::Assign && stmt->a) a.detail = dotted(stmt->a);
    out.push_back(std::move(a));
  }

  const ast::ParsedFile& pf_;
  LineIndex lines_;
};

}  // namespace

FileOutline ast::outline_of(const ast::ParsedFile& pf) {
  FileOutline out;
  for (const auto& d : pf.diagnostics) {
    if (d.severity == Severity::Error) out.has_syntax_errors = true;
  }
  Outliner(pf).module(out);
  return out;
}

FileOutline outline_python(std::string path, std::string text) {
  ast::ParseLimits limits;
  limits.max_bytes = 64u << 20;
  auto pf = ast::parse_python(std::move(path), std::move(text), limits);
  return ast::outline_of(*pf);
}

const OutlineSymbol* find_symbol(const std::vector<OutlineSymbol>& symbols, std::string_view name) {
  for (const auto& s : symbols) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

}  // namespace graphcore
