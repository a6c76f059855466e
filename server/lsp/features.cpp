#include "lsp/features.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>
#include <string_view>

#include "graphcore/registry.h"
#include "model_export.h"
#include "protocol/document.h"

namespace cellscope::lsp {

using graphcore::CellInstance;
using graphcore::CellReport;
using graphcore::OutlineSymbol;
using graphcore::Position;
using graphcore::Reference;
using graphcore::SourceRange;
using graphcore::TypeFact;

// ---- small helpers ----------------------------------------------------------------------------

std::string format_count(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string format_flops(double f) {
  const char* units[] = {"", "K", "M", "G", "T", "P"};
  int u = 0;
  while (f >= 1000 && u < 5) {
    f /= 1000;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %sFLOPs" : "%.2f %sFLOPs", f, units[u]);
  return buf;
}

namespace {

bool contains(const SourceRange& r, Position p) { return r.start <= p && p <= r.end; }
bool contains_strictly_end(const SourceRange& r, Position p) { return r.start <= p && p < r.end; }
bool intersects(const SourceRange& a, const SourceRange& b) {
  return !(a.end < b.start || b.end < a.start);
}
// Larger ranges compare greater: lines first, then columns.
std::pair<uint32_t, uint32_t> extent(const SourceRange& r) {
  return {r.end.line - r.start.line,
          r.end.line == r.start.line ? r.end.column - r.start.column : r.end.column};
}

std::string_view text_of(const FileAnalysis& fa, const SourceRange& r) {
  const auto& idx = fa.conv->index();
  size_t a = idx.offset_of(r.start);
  size_t b = idx.offset_of(r.end);
  if (b < a) return {};
  return std::string_view(*fa.text).substr(a, b - a);
}

Json range_in(const FeatureContext& ctx, const std::string& file, const SourceRange& r) {
  if (file == ctx.fa.path) return ctx.fa.conv->range(r);
  if (ctx.converter_for) {
    if (const PositionConverter* c = ctx.converter_for(file)) return c->range(r);
  }
  return Json{{"start", {{"line", r.start.line}, {"character", r.start.column}}},
              {"end", {{"line", r.end.line}, {"character", r.end.column}}}};
}

Json location(const FeatureContext& ctx, const std::string& file, const SourceRange& r) {
  return Json{{"uri", path_to_uri(file)}, {"range", range_in(ctx, file, r)}};
}

bool under(const std::string& scope, const std::string& path) {
  if (path.empty()) return true;
  return scope == path ||
         (scope.size() > path.size() && scope.starts_with(path) && scope[path.size()] == '.');
}

// Parameters, FLOPs and outputs of the Cell instance at `path` of root `rep`.
struct InstanceStats {
  int64_t trainable = 0;
  int64_t total = 0;
  double flops = 0;
  std::vector<graphcore::TensorType> outputs;
};

InstanceStats stats_of(const CellReport& rep, const std::string& path) {
  InstanceStats s;
  if (path.empty()) {
    s.trainable = rep.trainable_params;
    s.total = rep.total_params;
    s.flops = rep.flops;
    for (const auto& o : rep.outputs) {
      if (o.type.shape.ranked) s.outputs.push_back(o.type);
    }
    return s;
  }
  const std::string prefix = path + ".";
  for (const auto& p : rep.params) {
    if (!p.name.starts_with(prefix)) continue;
    graphcore::Dim n = p.shape.num_elements();
    if (!n.is_known()) continue;
    s.total += n.value();
    if (p.trainable) s.trainable += n.value();
  }
  const auto& nodes = rep.graph.nodes;
  std::vector<char> inside(nodes.size(), 0);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].kind == graphcore::NodeKind::Op && under(nodes[i].scope, path)) {
      inside[i] = 1;
      s.flops += nodes[i].flops;
    }
  }
  // Outputs: values made inside and read outside (or returned by the root).
  std::set<std::pair<uint32_t, uint32_t>> seen;
  auto take = [&](const graphcore::ValueRef& r) {
    if (r.node >= nodes.size() || !inside[r.node] || r.output >= nodes[r.node].outputs.size())
      return;
    if (seen.insert({r.node, r.output}).second)
      s.outputs.push_back(nodes[r.node].outputs[r.output]);
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (inside[i]) continue;
    for (const auto& in : nodes[i].inputs) take(in);
  }
  for (const auto& r : rep.graph.outputs) take(r);
  return s;
}

std::string types_text(const std::vector<graphcore::TensorType>& types) {
  std::string out;
  for (size_t i = 0; i < types.size(); ++i) out += (i ? ", " : "") + types[i].str();
  return out;
}

// Instances of the user class `name` defined in `file`, with their roots.
struct ClassUse {
  const CellReport* root;
  const CellInstance* instance;  // nullptr: the root itself without recorded instances
};

std::vector<ClassUse> uses_of_class(const FileAnalysis& fa, const std::string& name) {
  std::vector<ClassUse> out;
  for (const auto& rep : fa.result.cells) {
    for (const auto& inst : rep.instances) {
      if (inst.class_name == name && inst.class_file == fa.path) out.push_back({&rep, &inst});
    }
  }
  return out;
}

std::string md_code(const std::string& code) { return "```python\n" + code + "\n```"; }

// The markdown this file writes (fences, `code`, **bold**, a line in *emphasis*) as plain text, for
// clients that render no markdown: the markers go, the text (and a product's `*`) stays.
std::string plain_text(const std::string& markdown) {
  std::string out;
  std::istringstream in(markdown);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("```")) continue;
    if (line.size() > 2 && line.front() == '*' && line.back() == '*')
      line = line.substr(1, line.size() - 2);
    std::erase(line, '`');
    for (size_t at = line.find("**"); at != std::string::npos; at = line.find("**", at))
      line.erase(at, 2);
    out += line + "\n";
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

Json markup(const FeatureContext& ctx, const std::string& markdown) {
  if (ctx.client.markdown_hover) return Json{{"kind", "markdown"}, {"value", markdown}};
  return Json{{"kind", "plaintext"}, {"value", plain_text(markdown)}};
}

std::string class_summary(const FileAnalysis& fa, const std::string& name) {
  auto uses = uses_of_class(fa, name);
  if (uses.empty()) return {};
  std::string out;
  const ClassUse& first = uses.front();
  InstanceStats s = stats_of(*first.root, first.instance->path);
  std::set<std::string> roots;
  for (const auto& u : uses) roots.insert(u.root->name);
  if (first.instance->path.empty()) {
    out += "Analysed as `" + first.root->name + "`";
    if (!first.root->inputs.empty()) {
      std::vector<graphcore::TensorType> in;
      for (const auto& i : first.root->inputs) in.push_back(i.type);
      out += " with input " + types_text(in);
    }
    out += "\n\n";
  } else {
    out += format_count(static_cast<int64_t>(uses.size())) + " instance" +
           (uses.size() == 1 ? "" : "s") + " in `" + first.root->name + "`" +
           (roots.size() > 1 ? " and " + std::to_string(roots.size() - 1) + " more model(s)" : "") +
           ": ";
    for (size_t i = 0; i < uses.size() && i < 6; ++i)
      out += (i ? ", " : "") + std::string("`") + uses[i].instance->path + "`";
    if (uses.size() > 6) out += ", …";
    out += "\n\n";
  }
  out += "- parameters: " + format_count(s.trainable) + " trainable";
  if (s.total != s.trainable) out += " (" + format_count(s.total) + " total)";
  out += "\n- FLOPs: " + format_flops(s.flops);
  if (!s.outputs.empty()) out += "\n- output: `" + types_text(s.outputs) + "`";
  if (!first.instance->path.empty() && uses.size() > 1) out += " (first instance)";
  return out;
}

std::string api_hover(const FeatureContext& ctx, const std::string& name) {
  const auto& reg = graphcore::Registry::instance();
  const graphcore::ApiEntry* e = reg.find(name, ctx.mindspore_version);
  std::string ver = ctx.mindspore_version.str();
  if (!e) {
    auto all = reg.find_all(name);
    if (all.empty()) return md_code("mindspore." + name) + "\n\nNot modelled by Cellscope.";
    return md_code("mindspore." + name) + "\n\nNot available in MindSpore " + ver + ".";
  }
  bool init =
      e->kind == graphcore::ApiKind::CellClass || e->kind == graphcore::ApiKind::PrimitiveClass;
  std::string out = md_code(graphcore::api_signature(*e, ctx.mindspore_version, init));
  if (init && !e->call_params.empty()) {
    // A fence opens a line (CommonMark): after "called as " it rendered as raw backticks.
    out += "\n\ncalled as:\n" + md_code(graphcore::api_signature(*e, ctx.mindspore_version, false));
  }
  if (!e->summary.empty()) out += "\n\n" + e->summary;
  if (!e->replacement.empty()) out += "\n\nUse `" + e->replacement + "` instead.";
  out += "\n\n*MindSpore " + ver + " signature and defaults.*";
  return out;
}

const Reference* reference_at(const FileAnalysis& fa, Position p) {
  const Reference* best = nullptr;
  for (const auto& r : fa.result.references) {
    if (r.file != fa.path || !contains_strictly_end(r.range, p)) continue;
    if (!best || extent(r.range) < extent(best->range)) best = &r;
  }
  return best;
}

// Every type fact of the smallest expression containing `p` (one per Cell instance that ran it).
std::vector<std::pair<const CellReport*, const TypeFact*>> facts_at(const FileAnalysis& fa,
                                                                    Position p,
                                                                    bool calls_only = false) {
  const TypeFact* best = nullptr;
  for (const auto& rep : fa.result.cells) {
    for (const auto& f : rep.facts) {
      if (f.file != fa.path || !contains_strictly_end(f.range, p)) continue;
      if (calls_only && f.kind != TypeFact::Kind::Call) continue;
      if (!best || extent(f.range) < extent(best->range)) best = &f;
    }
  }
  std::vector<std::pair<const CellReport*, const TypeFact*>> out;
  if (!best) return out;
  for (const auto& rep : fa.result.cells) {
    for (const auto& f : rep.facts) {
      if (f.file == fa.path && f.range == best->range &&
          (!calls_only || f.kind == TypeFact::Kind::Call))
        out.emplace_back(&rep, &f);
    }
  }
  return out;
}

// "(1, 64, 56, 56) f32" or, when instances differ, each with its scope.
std::string describe_types(const std::vector<std::pair<const CellReport*, const TypeFact*>>& facts,
                           bool markdown) {
  std::vector<std::string> distinct;
  for (const auto& [rep, f] : facts) {
    std::string t = f->type.str();
    if (std::find(distinct.begin(), distinct.end(), t) == distinct.end()) distinct.push_back(t);
  }
  if (distinct.size() <= 1) return distinct.empty() ? "" : distinct[0];
  std::string out;
  std::set<std::string> shown;
  for (const auto& [rep, f] : facts) {
    std::string scope = f->scope.empty() ? rep->name : f->scope;
    std::string line = scope + ": " + f->type.str();
    if (!shown.insert(line).second) continue;
    if (shown.size() > 8) {
      out += markdown ? "- …\n" : "…\n";
      break;
    }
    out += (markdown ? "- `" + scope + "`: " + f->type.str() : line) + "\n";
  }
  return out;
}

const OutlineSymbol* class_at(const std::vector<OutlineSymbol>& symbols, Position p) {
  for (const auto& s : symbols) {
    if (s.kind != OutlineSymbol::Kind::Class || !contains(s.range, p)) continue;
    if (const OutlineSymbol* inner = class_at(s.children, p)) return inner;
    return &s;
  }
  return nullptr;
}

// Instances constructed by the statement at `range` (e.g. `self.conv1 = nn.Conv2d(...)`).
std::vector<std::pair<const CellReport*, const CellInstance*>> instances_built_at(
    const FileAnalysis& fa, const SourceRange& range) {
  std::vector<std::pair<const CellReport*, const CellInstance*>> out;
  for (const auto& rep : fa.result.cells) {
    for (const auto& inst : rep.instances) {
      if (inst.site_file == fa.path && !inst.path.empty() && intersects(range, inst.site_range) &&
          range.start <= inst.site_range.start)
        out.emplace_back(&rep, &inst);
    }
  }
  return out;
}

std::string instance_summary(
    const std::vector<std::pair<const CellReport*, const CellInstance*>>& insts) {
  if (insts.empty()) return {};
  const auto& [rep, inst] = insts.front();
  std::string kind = inst->api.empty() ? inst->class_name : inst->api;
  InstanceStats s = stats_of(*rep, inst->path);
  std::string out = "`" + inst->path + "`: " + kind;
  if (insts.size() > 1) out += " (" + std::to_string(insts.size()) + " instances)";
  out += "\n\n- parameters: " + format_count(s.trainable);
  if (s.total != s.trainable) out += " (" + format_count(s.total) + " total)";
  out += "\n- FLOPs: " + format_flops(s.flops);
  if (!s.outputs.empty()) out += "\n- output: `" + types_text(s.outputs) + "`";
  return out;
}

}  // namespace

// ---- diagnostics ------------------------------------------------------------------------------

Json diagnostic_json(const FeatureContext& ctx, const graphcore::Diagnostic& d) {
  Json j{{"range", range_in(ctx, d.file, d.range)},
         {"severity", static_cast<int>(d.severity)},
         {"source", "cellscope"},
         {"message", d.message}};
  if (!d.code.empty()) j["code"] = d.code;
  if (d.code == "unused-result") j["tags"] = Json::array({1});        // Unnecessary
  if (d.code == "deprecated-argument") j["tags"] = Json::array({2});  // Deprecated
  if (!d.related.empty() && ctx.client.related_information) {
    Json rel = Json::array();
    for (const auto& r : d.related)
      rel.push_back({{"location", location(ctx, r.file, r.range)}, {"message", r.message}});
    j["relatedInformation"] = std::move(rel);
  }
  if (!d.fixes.empty()) {
    Json titles = Json::array();
    for (const auto& f : d.fixes) titles.push_back(f.title);
    j["data"] = {{"fixes", std::move(titles)}};
  }
  return j;
}

Json file_diagnostics(const FeatureContext& ctx) {
  Json out = Json::array();
  for (const auto& d : ctx.fa.result.diagnostics) {
    if (d.file == ctx.fa.path) out.push_back(diagnostic_json(ctx, d));
  }
  return out;
}

// ---- hover ------------------------------------------------------------------------------------

Json hover(const FeatureContext& ctx, const Json& position) {
  const FileAnalysis& fa = ctx.fa;
  Position p = fa.conv->from_lsp(position);
  std::string body;
  std::optional<SourceRange> range;
  const Reference* ref = reference_at(fa, p);
  if (ref) {
    range = ref->range;
    if (ref->kind == Reference::Kind::Api) {
      body = api_hover(ctx, ref->name);
    } else if (ref->what == "cell") {
      std::vector<std::pair<const CellReport*, const CellInstance*>> insts;
      for (const auto& rep : fa.result.cells) {
        for (const auto& inst : rep.instances) {
          if (inst.site_file == ref->target_file && inst.site_range == ref->target_range)
            insts.emplace_back(&rep, &inst);
        }
      }
      body = instance_summary(insts);
      if (body.empty()) body = "`self." + ref->name + "`";
      auto calls = facts_at(fa, p, true);
      if (!calls.empty()) body += "\n\nthis call returns `" + describe_types(calls, false) + "`";
    } else if (ref->what == "class") {
      body = md_code("class " + ref->name);
      if (ref->target_file == fa.path) {
        std::string s = class_summary(fa, ref->name);
        if (!s.empty()) body += "\n\n" + s;
      }
    } else {
      body = md_code("def " + ref->name + "(...)");
    }
  }
  // The type of the expression under the cursor in construct.
  auto facts = facts_at(fa, p);
  if (!facts.empty() && (!ref || ref->kind != Reference::Kind::Api)) {
    const TypeFact* f = facts.front().second;
    if (!ref || extent(f->range) <= extent(ref->range) || ref->what != "cell") {
      std::string name(text_of(fa, f->range));
      if (name.size() > 40 || name.find('\n') != std::string::npos) name = "value";
      std::string types = describe_types(facts, ctx.client.markdown_hover);
      std::string block = types.find('\n') == std::string::npos
                              ? md_code(name + ": " + types)
                              : md_code(name + ": Tensor") + "\n\n" + types;
      body = body.empty() ? block : block + "\n\n---\n\n" + body;
      if (!range || extent(f->range) < extent(*range)) range = f->range;
    }
  }
  // A sharded operator (its call in construct, or its `.shard(...)`): the global and per-device
  // shapes and the communication MindSpore inserts (graphcore::describe_parallel).
  for (const auto& rep : fa.result.cells) {
    const auto& g = rep.graph;
    const auto at = std::find_if(g.nodes.begin(), g.nodes.end(), [&](const graphcore::Node& n) {
      return n.parallel && !n.parallel->in_strategy.empty() &&
             ((n.file == fa.path && contains(n.range, p)) ||
              (n.parallel->shard_file == fa.path && contains(n.parallel->shard_range, p)));
    });
    if (at == g.nodes.end()) continue;
    std::string block = "```text\n" + graphcore::describe_parallel(g, *at) + "\n```";
    if (!body.empty()) block.append("\n\n---\n\n").append(body);
    body = std::move(block);
    if (!range) range = at->range;
    break;
  }
  // A `Cell.shard` / `mindspore.shard` call: its inputs' global and per-device shapes and the
  // operators sharding propagation gave its layout (graphcore::describe_shard_seed).
  for (const auto& rep : fa.result.cells) {
    const auto& seeds = rep.graph.shard_seeds;
    const auto at = std::find_if(seeds.begin(), seeds.end(), [&](const graphcore::ShardSeed& s) {
      return s.file == fa.path && contains(s.range, p);
    });
    if (at == seeds.end()) continue;
    std::string block = "```text\n" + graphcore::describe_shard_seed(rep.graph, *at) + "\n```";
    if (!body.empty()) block.append("\n\n---\n\n").append(body);
    body = std::move(block);
    if (!range) range = at->range;
    break;
  }
  // A call whose error was reported (the graph stops there): why, and what it received.
  for (const auto& rep : fa.result.cells) {
    const auto& g = rep.graph;
    const auto at = std::find_if(g.failures.begin(), g.failures.end(), [&](const auto& f) {
      return f.file == fa.path && contains(f.range, p);
    });
    if (at == g.failures.end()) continue;
    std::string received;
    for (const auto& in : at->inputs) {
      if (in.node >= g.nodes.size() || in.output >= g.nodes[in.node].outputs.size()) continue;
      received += (received.empty() ? "" : ", ") + g.nodes[in.node].outputs[in.output].str();
    }
    std::string block = "**" + at->id + "** (`" + at->api.str() + "`) fails here: " + at->message +
                        " [" + at->code + "]";
    if (!received.empty()) block += "\n\nreceives `" + received + "`";
    block += "\n\nNothing that depends on this call is compiled.";
    if (!body.empty()) block.append("\n\n---\n\n").append(body);
    body = std::move(block);
    if (!range) range = at->range;
    break;
  }
  // A Cell class name, or a `self.x = ...` attribute, in the outline.
  if (body.empty()) {
    std::function<void(const std::vector<OutlineSymbol>&)> visit =
        [&](const std::vector<OutlineSymbol>& symbols) {
          for (const auto& s : symbols) {
            if (!body.empty()) return;
            if (contains(s.selection, p)) {
              if (s.kind == OutlineSymbol::Kind::Class) {
                std::string summary = class_summary(fa, s.name);
                body = md_code("class " + s.name + s.detail) +
                       (summary.empty() ? "" : "\n\n" + summary);
                range = s.selection;
              } else if (s.kind == OutlineSymbol::Kind::Attribute) {
                body = instance_summary(instances_built_at(fa, s.range));
                if (!body.empty()) range = s.selection;
              }
              return;
            }
            visit(s.children);
          }
        };
    visit(fa.outline.symbols);
  }
  if (body.empty()) return nullptr;
  Json h{{"contents", markup(ctx, body)}};
  if (range) h["range"] = fa.conv->range(*range);
  return h;
}

// ---- inlay hints ------------------------------------------------------------------------------

namespace {

// Where the statement starting at `from` ends on its last line, before any trailing comment.
size_t statement_end(std::string_view text, size_t from) {
  int depth = 0;
  char quote = 0;
  size_t last_code = from;
  for (size_t i = from; i < text.size(); ++i) {
    char c = text[i];
    if (quote) {
      if (c == '\\') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
      last_code = i + 1;
      continue;
    }
    if (c == '#') {
      while (i < text.size() && text[i] != '\n' && text[i] != '\r') ++i;
      if (depth == 0) return last_code;
      continue;
    }
    if (c == '\n' || c == '\r') {  // "\r\n" and a lone "\r" end lines too
      if (depth == 0) return last_code;
      continue;
    }
    if (c == '"' || c == '\'') quote = c;
    if (c == '(' || c == '[' || c == '{') ++depth;
    if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
    if (c != ' ' && c != '\t' && c != '\r') last_code = i + 1;
  }
  return last_code;
}

// The per-device shape of the value a statement assigns, when that value is a sharded operator's
// output: the statement's outermost node (the call whose result is assigned) has a strategy and
// every instance of it gives the same slice. "(8, 32)", and `tooltip` the hover's text; empty when
// the value is not sharded.
std::string sharded_value(const FileAnalysis& fa, const SourceRange& stmt, std::string* tooltip) {
  const graphcore::Node* outer = nullptr;
  std::string per_device;
  bool agree = true;
  for (const auto& rep : fa.result.cells) {
    const auto& g = rep.graph;
    for (const auto& n : g.nodes) {
      const std::string& file = n.file.str().empty() ? rep.file : n.file.str();
      if (n.kind != graphcore::NodeKind::Op || file != fa.path) continue;
      if (n.range.start < stmt.start || stmt.end < n.range.end) continue;
      if (outer != nullptr && extent(n.range) < extent(outer->range)) continue;
      const bool wider = outer == nullptr || extent(outer->range) < extent(n.range);
      const bool sharded = n.parallel && !n.parallel->in_strategy.empty() &&
                           n.parallel->per_device_outputs.size() == 1;
      const std::string shape = sharded ? n.parallel->per_device_outputs[0].str() : std::string();
      if (wider) {
        outer = &n;
        per_device = shape;
        agree = sharded;
        if (sharded) *tooltip = graphcore::describe_parallel(g, n);
      } else if (shape != per_device || !sharded) {
        agree = false;  // another instance of the same call, sharded otherwise (or not at all)
      }
    }
  }
  return agree ? per_device : std::string();
}

}  // namespace

Json inlay_hints(const FeatureContext& ctx, const Json& range) {
  const FileAnalysis& fa = ctx.fa;
  SourceRange want{fa.conv->from_lsp(range.at("start")), fa.conv->from_lsp(range.at("end"))};
  // Assignment facts by statement line: target text -> types (in first-seen order).
  struct Target {
    SourceRange range;
    std::vector<std::pair<const CellReport*, const TypeFact*>> facts;
  };
  std::map<uint32_t, std::vector<Target>> lines;
  for (const auto& rep : fa.result.cells) {
    for (const auto& f : rep.facts) {
      if (f.kind != TypeFact::Kind::Assignment || f.file != fa.path) continue;
      if (f.range.start.line < want.start.line || f.range.start.line > want.end.line) continue;
      auto& targets = lines[f.range.start.line];
      auto it = std::find_if(targets.begin(), targets.end(),
                             [&](const Target& t) { return t.range == f.range; });
      if (it == targets.end()) {
        targets.push_back(Target{f.range, {}});
        it = std::prev(targets.end());
      }
      it->facts.emplace_back(&rep, &f);
    }
  }
  Json out = Json::array();
  for (auto& [line, targets] : lines) {
    std::sort(targets.begin(), targets.end(),
              [](const Target& a, const Target& b) { return a.range.start < b.range.start; });
    std::string label;
    std::string tooltip;
    for (const auto& t : targets) {
      std::string types = describe_types(t.facts, false);
      bool varies = types.find('\n') != std::string::npos;
      std::string shown = varies ? "varies by instance" : types;
      if (targets.size() > 1) {
        std::string named(text_of(fa, t.range));
        named += ": ";
        named += shown;
        shown = std::move(named);
      }
      if (!label.empty()) label += ", ";
      label += shown;
      if (varies) tooltip += std::string(text_of(fa, t.range)) + ":\n" + types;
    }
    size_t end = statement_end(*fa.text, fa.conv->index().offset_of(targets.front().range.start));
    // A sharded operator's result: its slice on one device too ("(16, 32) f32 → (8, 32)/dev").
    if (targets.size() == 1 && tooltip.empty()) {
      const SourceRange stmt{targets.front().range.start, fa.conv->index().position_of(end)};
      std::string parallel;
      const std::string per_device = sharded_value(fa, stmt, &parallel);
      if (!per_device.empty()) {
        label += " → " + per_device + "/dev";
        tooltip = "global " + label.substr(0, label.find(" → "));
        tooltip.append(", per device ").append(per_device).append("\n").append(parallel);
      }
    }
    Json hint{{"position", fa.conv->position(fa.conv->index().position_of(end))},
              {"label", label},
              {"kind", 1},
              {"paddingLeft", true}};
    if (!tooltip.empty()) hint["tooltip"] = tooltip;
    out.push_back(std::move(hint));
  }
  return out;
}

// ---- code lens, symbols -----------------------------------------------------------------------

// "Export now" on each ms.export(net, *inputs, file_name=..., file_format=...) call the evaluator
// recorded (AnalysisResult::exports, the same record `cellscope export FILE` follows): it runs
// cellscope.export for the call's root Cell, format and file name (the format's suffix added when
// missing, as mindspore.export does; relative names from the file's folder), naming the call so
// the export takes the call's inputs. A call that cannot be followed gets a lens without a
// command saying why (ExportCall::unfollowed, or a format Cellscope does not write).
void export_lenses(const FileAnalysis& fa, Json& out) {
  for (const graphcore::ExportCall& e : fa.result.exports) {
    if (e.call.file != fa.path) continue;
    const Json range = fa.conv->range(SourceRange{e.call.range.start, e.call.range.start});
    auto explain = [&](const std::string& why) {
      out.push_back(
          {{"range", range},
           {"command", {{"title", "Export now: unavailable (" + why + ")"}, {"command", ""}}}});
    };
    if (!e.unfollowed.empty()) {
      explain(e.unfollowed);
      continue;
    }
    // MindSpore 2.10 accepts only the upper-case names (docs/export.md).
    std::string why;
    const std::optional<server::CallExport> target = server::export_of_call(e, &why);
    if (!target) {
      explain(e.file_format == "AIR"
                  ? std::string("Cellscope writes MINDIR and ONNX, not AIR")
                  : "file_format '" + e.file_format + "' is not 'MINDIR' or 'ONNX'");
      continue;
    }
    const std::string& format = target->format;
    std::filesystem::path output(target->output);
    if (output.is_relative()) output = std::filesystem::path(fa.path).parent_path() / output;
    output = output.lexically_normal();
    const Json call = fa.conv->position(e.call.range.start);
    out.push_back({{"range", range},
                   {"command",
                    {{"title", "Export now → " + output.filename().string()},
                     {"command", "cellscope.export"},
                     {"arguments", Json::array({{{"uri", fa.uri},
                                                 {"format", format},
                                                 {"cell", e.cell},
                                                 {"output", output.string()},
                                                 {"call", call}}})}}}});
  }
}

Json code_lenses(const FeatureContext& ctx) {
  const FileAnalysis& fa = ctx.fa;
  Json out = Json::array();
  std::function<void(const std::vector<OutlineSymbol>&)> visit = [&](const auto& symbols) {
    for (const auto& s : symbols) {
      if (s.kind != OutlineSymbol::Kind::Class) continue;
      visit(s.children);
      auto uses = uses_of_class(fa, s.name);
      Json range = fa.conv->range(s.selection);
      if (uses.empty()) {
        // A Cell that was not analysed: say why, from its diagnostic.
        for (const auto& d : fa.result.diagnostics) {
          if (d.file == fa.path && d.code == "needs-arguments" &&
              d.range.start.line == s.selection.start.line) {
            out.push_back({{"range", range},
                           {"command",
                            {{"title", "Cell · not analysed: its constructor needs arguments"},
                             {"command", ""}}}});
          }
        }
        continue;
      }
      InstanceStats st = stats_of(*uses.front().root, uses.front().instance->path);
      std::string title = format_count(st.trainable) + " params · " + format_flops(st.flops);
      if (!st.outputs.empty()) title += " · → " + types_text(st.outputs);
      if (uses.size() > 1) title += " · " + std::to_string(uses.size()) + " instances";
      out.push_back({{"range", range}, {"command", {{"title", title}, {"command", ""}}}});
      const std::string root = uses.front().root->name;
      out.push_back(
          {{"range", range},
           {"command",
            {{"title", "Visualize Graph"},
             {"command", "cellscope.visualizeGraph"},
             {"arguments",
              Json::array({fa.uri, uses.front().instance->path.empty() ? s.name : root})}}}});
    }
  };
  visit(fa.outline.symbols);
  export_lenses(fa, out);
  return out;
}

namespace {

int symbol_kind(const OutlineSymbol& s) {
  switch (s.kind) {
    case OutlineSymbol::Kind::Class:
      return 5;
    case OutlineSymbol::Kind::Method:
      return s.name == "__init__" ? 9 : 6;
    case OutlineSymbol::Kind::Function:
      return 12;
    case OutlineSymbol::Kind::Attribute:
      return 8;
    case OutlineSymbol::Kind::Variable:
      return 13;
  }
  return 13;
}

}  // namespace

Json document_symbols(const FeatureContext& ctx) {
  const FileAnalysis& fa = ctx.fa;
  Json out = Json::array();
  std::function<Json(const OutlineSymbol&, const OutlineSymbol*)> doc_symbol =
      [&](const OutlineSymbol& s, const OutlineSymbol* parent) {
        std::string detail = s.detail;
        if (s.kind == OutlineSymbol::Kind::Class) {
          auto uses = uses_of_class(fa, s.name);
          if (!uses.empty()) {
            InstanceStats st = stats_of(*uses.front().root, uses.front().instance->path);
            detail = "Cell " + s.detail + " · " + format_count(st.trainable) + " params";
          }
        } else if (s.kind == OutlineSymbol::Kind::Attribute && parent) {
          auto insts = instances_built_at(fa, s.range);
          if (!insts.empty()) {
            const CellInstance* i = insts.front().second;
            detail = (i->api.empty() ? i->class_name : i->api) + " · " +
                     format_count(stats_of(*insts.front().first, i->path).trainable) + " params";
          }
        }
        Json j{{"name", s.name},
               {"kind", symbol_kind(s)},
               {"range", fa.conv->range(s.range)},
               {"selectionRange", fa.conv->range(s.selection)}};
        if (!detail.empty()) j["detail"] = detail;
        if (!s.children.empty()) {
          Json children = Json::array();
          for (const auto& c : s.children) children.push_back(doc_symbol(c, &s));
          j["children"] = std::move(children);
        }
        return j;
      };
  if (ctx.client.hierarchical_symbols) {
    for (const auto& s : fa.outline.symbols) out.push_back(doc_symbol(s, nullptr));
    return out;
  }
  std::function<void(const OutlineSymbol&, const std::string&)> flat =
      [&](const OutlineSymbol& s, const std::string& container) {
        Json j{{"name", s.name},
               {"kind", symbol_kind(s)},
               {"location", {{"uri", fa.uri}, {"range", fa.conv->range(s.range)}}}};
        if (!container.empty()) j["containerName"] = container;
        out.push_back(std::move(j));
        for (const auto& c : s.children) flat(c, s.name);
      };
  for (const auto& s : fa.outline.symbols) flat(s, "");
  return out;
}

// ---- code actions -----------------------------------------------------------------------------

Json code_actions(const FeatureContext& ctx, const Json& params) {
  const FileAnalysis& fa = ctx.fa;
  Json out = Json::array();
  const Json& context = params.at("context");
  if (auto only = context.find("only"); only != context.end() && only->is_array()) {
    bool wants_quickfix = false;
    for (const auto& k : *only) {
      std::string kind = k.get<std::string>();
      if (kind == "quickfix" || kind.empty()) wants_quickfix = true;
    }
    if (!wants_quickfix) return out;
  }
  SourceRange want{fa.conv->from_lsp(params.at("range").at("start")),
                   fa.conv->from_lsp(params.at("range").at("end"))};
  for (const auto& d : fa.result.diagnostics) {
    if (d.file != fa.path || d.fixes.empty() || !intersects(d.range, want)) continue;
    Json diag = diagnostic_json(ctx, d);
    for (size_t i = 0; i < d.fixes.size(); ++i) {
      const auto& fix = d.fixes[i];
      Json changes = Json::object();
      for (const auto& e : fix.edits) {
        changes[path_to_uri(e.file)].push_back(
            {{"range", range_in(ctx, e.file, e.range)}, {"newText", e.new_text}});
      }
      out.push_back({{"title", fix.title},
                     {"kind", "quickfix"},
                     {"diagnostics", Json::array({diag})},
                     {"isPreferred", i == 0},
                     {"edit", {{"changes", std::move(changes)}}}});
    }
  }
  return out;
}

// ---- definition -------------------------------------------------------------------------------

namespace {

bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The identifier at byte offset `off` and the dotted chain before it ("self", "nn").
std::pair<std::string, std::string> word_at(std::string_view text, size_t off) {
  size_t a = off;
  size_t b = off;
  while (a > 0 && is_ident(text[a - 1])) --a;
  while (b < text.size() && is_ident(text[b])) ++b;
  std::string word(text.substr(a, b - a));
  std::string chain;
  size_t c = a;
  while (c > 0 && text[c - 1] == '.') {
    size_t e = c - 1;
    size_t s = e;
    while (s > 0 && is_ident(text[s - 1])) --s;
    if (s == e) break;
    std::string part(text.substr(s, e - s));
    if (!chain.empty()) part += "." + chain;
    chain = std::move(part);
    c = s;
  }
  return {word, chain};
}

}  // namespace

Json definition(const FeatureContext& ctx, const Json& position) {
  const FileAnalysis& fa = ctx.fa;
  Position p = fa.conv->from_lsp(position);
  if (const Reference* ref = reference_at(fa, p); ref && ref->kind == Reference::Kind::Definition) {
    return Json::array({location(ctx, ref->target_file, ref->target_range)});
  }
  // Syntactic fallback (code that did not run, e.g. a method never called).
  auto [word, chain] = word_at(*fa.text, fa.conv->index().offset_of(p));
  if (word.empty()) return nullptr;
  if (chain == "self") {
    if (const OutlineSymbol* cls = class_at(fa.outline.symbols, p)) {
      if (const OutlineSymbol* s = graphcore::find_symbol(cls->children, word))
        return Json::array({{{"uri", fa.uri}, {"range", fa.conv->range(s->selection)}}});
    }
    return nullptr;
  }
  if (chain.empty()) {
    if (const OutlineSymbol* s = graphcore::find_symbol(fa.outline.symbols, word))
      return Json::array({{{"uri", fa.uri}, {"range", fa.conv->range(s->selection)}}});
  }
  return nullptr;
}

// ---- completion and signature help ------------------------------------------------------------

namespace {

// The dotted Python name `chain` refers to through the file's imports ("nn" -> "mindspore.nn").
std::optional<std::string> resolve_chain(const graphcore::FileOutline& outline,
                                         const std::string& chain) {
  std::string first = chain.substr(0, chain.find('.'));
  std::string rest = chain.size() > first.size() ? chain.substr(first.size()) : "";
  // The last binding of the name wins, as in Python.
  std::optional<std::string> found;
  for (const auto& binding : outline.imports) {
    if (binding.local == first && binding.level == 0) found = binding.target + rest;
  }
  return found;
}

struct CallSite {
  std::string callee;  // dotted text before the parenthesis
  size_t callee_end = 0;
  int arg_index = 0;
  std::string keyword;  // the keyword being written (`name=`), if any
  std::vector<std::string> keywords_used;
};

// The innermost unclosed call around byte offset `off`.
std::optional<CallSite> call_at(std::string_view text, size_t off) {
  int depth = 0;
  int commas = 0;
  size_t limit = off > 4000 ? off - 4000 : 0;
  size_t arg_start = off;
  for (size_t i = off; i-- > limit;) {
    char c = text[i];
    if (c == ')' || c == ']' || c == '}') ++depth;
    if (c == '[' || c == '{') {
      if (depth == 0) return std::nullopt;
      --depth;
    }
    if (c == '(') {
      if (depth > 0) {
        --depth;
        continue;
      }
      CallSite cs;
      size_t e = i;
      while (e > 0 && text[e - 1] == ' ') --e;
      size_t s = e;
      while (s > 0 && (is_ident(text[s - 1]) || text[s - 1] == '.')) --s;
      cs.callee = std::string(text.substr(s, e - s));
      cs.callee_end = e;
      if (cs.callee.empty()) return std::nullopt;
      cs.arg_index = commas;
      if (commas == 0) arg_start = i + 1;
      std::string_view current = text.substr(arg_start, off - arg_start);
      size_t eq = current.find('=');
      if (eq != std::string_view::npos && current.substr(eq).find("==") != 0) {
        std::string_view k = current.substr(0, eq);
        while (!k.empty() && (k.front() == ' ' || k.front() == ',' || k.front() == '\n'))
          k.remove_prefix(1);
        while (!k.empty() && k.back() == ' ') k.remove_suffix(1);
        cs.keyword = std::string(k);
      }
      std::string_view args = text.substr(i + 1, off - i - 1);
      for (size_t k = 0; k + 1 < args.size(); ++k) {
        if (args[k] == '=' && args[k + 1] != '=' &&
            (k == 0 || (args[k - 1] != '=' && args[k - 1] != '!' && args[k - 1] != '<' &&
                        args[k - 1] != '>'))) {
          size_t ke = k;
          while (ke > 0 && args[ke - 1] == ' ') --ke;
          size_t ks = ke;
          while (ks > 0 && is_ident(args[ks - 1])) --ks;
          if (ks < ke) cs.keywords_used.emplace_back(args.substr(ks, ke - ks));
        }
      }
      return cs;
    }
    if (c == ',' && depth == 0) {
      if (commas == 0) arg_start = i + 1;
      ++commas;
    }
  }
  return std::nullopt;
}

struct ResolvedCallee {
  const graphcore::ApiEntry* entry = nullptr;
  bool init = false;
};

ResolvedCallee resolve_callee(const FeatureContext& ctx, const std::string& text,
                              const CallSite& cs) {
  ResolvedCallee r;
  const auto& reg = graphcore::Registry::instance();
  // `self.fc1(`: the layer the attribute holds (from the analysis).
  if (cs.callee.starts_with("self.")) {
    size_t before = cs.callee_end > 0 ? cs.callee_end - 1 : 0;
    graphcore::Position p = ctx.fa.conv->index().position_of(before);
    if (text.size() == ctx.fa.text->size() && text == *ctx.fa.text) {
      if (const Reference* ref = reference_at(ctx.fa, p); ref && ref->what == "cell") {
        for (const auto& rep : ctx.fa.result.cells) {
          for (const auto& inst : rep.instances) {
            if (inst.site_file == ref->target_file && inst.site_range == ref->target_range &&
                !inst.api.empty()) {
              r.entry = reg.find(inst.api, ctx.mindspore_version);
              return r;
            }
          }
        }
      }
    }
    return r;
  }
  auto dotted = resolve_chain(ctx.fa.outline, cs.callee);
  if (!dotted) return r;
  auto name = graphcore::api_name_of(*dotted);
  if (!name) return r;
  r.entry = reg.find(*name, ctx.mindspore_version);
  if (r.entry) {
    r.init = r.entry->kind == graphcore::ApiKind::CellClass ||
             r.entry->kind == graphcore::ApiKind::PrimitiveClass;
  }
  return r;
}

int completion_kind(const graphcore::ApiEntry* e) {
  if (!e) return 7;  // Class (most unmodelled public names are)
  switch (e->kind) {
    case graphcore::ApiKind::CellClass:
    case graphcore::ApiKind::PrimitiveClass:
      return 7;
    case graphcore::ApiKind::Function:
      return 3;
    case graphcore::ApiKind::TensorMethod:
      return 2;
  }
  return 3;
}

}  // namespace

Json completion(const FeatureContext& ctx, const std::string& text, const Json& position) {
  PositionConverter conv(text, ctx.encoding);
  size_t off = conv.offset(position);
  size_t a = off;
  while (a > 0 && is_ident(text[a - 1])) --a;
  Json items = Json::array();
  const auto& reg = graphcore::Registry::instance();
  if (a > 0 && text[a - 1] == '.') {
    auto [word, chain] = word_at(text, a);
    (void)word;
    if (chain.empty()) return Json{{"isIncomplete", false}, {"items", items}};
    if (chain == "self") {
      if (const OutlineSymbol* cls = class_at(ctx.fa.outline.symbols, conv.from_lsp(position))) {
        for (const auto& s : cls->children) {
          if (s.kind != OutlineSymbol::Kind::Attribute && s.kind != OutlineSymbol::Kind::Method)
            continue;
          Json item{{"label", s.name}, {"kind", s.kind == OutlineSymbol::Kind::Method ? 2 : 5}};
          if (!s.detail.empty()) item["detail"] = s.detail;
          items.push_back(std::move(item));
        }
      }
      return Json{{"isIncomplete", false}, {"items", items}};
    }
    auto dotted = resolve_chain(ctx.fa.outline, chain);
    std::optional<std::string> ns = dotted ? graphcore::api_namespace_of(*dotted) : std::nullopt;
    if (ns && (*ns == "nn" || *ns == "ops")) {
      for (const std::string& name :
           graphcore::mindspore_public_names(*ns, ctx.mindspore_version)) {
        if (name.starts_with("_")) continue;
        const graphcore::ApiEntry* e = reg.find(*ns + "." + name, ctx.mindspore_version);
        Json item{{"label", name}, {"kind", completion_kind(e)}};
        if (e) {
          bool init = e->kind == graphcore::ApiKind::CellClass ||
                      e->kind == graphcore::ApiKind::PrimitiveClass;
          item["detail"] = graphcore::api_signature(*e, ctx.mindspore_version, init);
          if (!e->summary.empty())
            item["documentation"] = {{"kind", "markdown"}, {"value", e->summary}};
          item["sortText"] = "0" + name;
        } else {
          item["detail"] = "mindspore." + *ns + "." + name + " (shapes not modelled by Cellscope)";
          item["sortText"] = "1" + name;
        }
        items.push_back(std::move(item));
      }
    } else if (ns && ns->empty()) {
      for (const char* sub : {"nn", "ops", "numpy", "dataset", "train", "common", "context"})
        items.push_back({{"label", sub}, {"kind", 9}});
      for (const char* cls : {"Tensor", "Parameter", "ParameterTuple"})
        items.push_back({{"label", cls}, {"kind", 7}});
      for (const char* t : {"float16", "float32", "float64", "bfloat16", "int8", "int16", "int32",
                            "int64", "uint8", "bool_"})
        items.push_back({{"label", t}, {"kind", 21}, {"detail", "mindspore dtype"}});
      for (const char* fn : {"export", "load", "set_context", "get_context", "load_checkpoint",
                             "save_checkpoint", "set_seed"})
        items.push_back({{"label", fn}, {"kind", 3}});
    } else if (!dotted && chain.find('.') == std::string::npos) {
      // A tensor variable of construct: Tensor methods.
      bool is_tensor = false;
      for (const auto& rep : ctx.fa.result.cells) {
        for (const auto& f : rep.facts) {
          if (f.file == ctx.fa.path && f.kind != TypeFact::Kind::Call &&
              text_of(ctx.fa, f.range) == chain)
            is_tensor = true;
        }
      }
      if (is_tensor) {
        for (const graphcore::ApiEntry* e : reg.list("Tensor.", ctx.mindspore_version)) {
          std::string name = e->name.substr(7);
          items.push_back({{"label", name},
                           {"kind", 2},
                           {"detail", graphcore::api_signature(*e, ctx.mindspore_version, false)},
                           {"documentation", {{"kind", "markdown"}, {"value", e->summary}}}});
        }
      }
    }
    return Json{{"isIncomplete", false}, {"items", items}};
  }
  // Keyword arguments of the MindSpore call around the cursor.
  if (auto cs = call_at(text, a)) {
    ResolvedCallee callee = resolve_callee(ctx, text, *cs);
    if (callee.entry) {
      for (const graphcore::ParamSpec* p :
           graphcore::api_signature_params(*callee.entry, ctx.mindspore_version, callee.init)) {
        if (p->kind == graphcore::ParamKind::VarPositional ||
            p->kind == graphcore::ParamKind::VarKeyword)
          continue;
        if (std::find(cs->keywords_used.begin(), cs->keywords_used.end(), p->name) !=
            cs->keywords_used.end())
          continue;
        Json item{{"label", p->name + "="},
                  {"kind", 5},
                  {"detail", p->default_src.empty() ? "required" : "default " + p->default_src},
                  {"sortText", "0" + p->name}};
        if (!p->deprecated.empty()) item["tags"] = Json::array({1});
        items.push_back(std::move(item));
      }
    }
  }
  return Json{{"isIncomplete", false}, {"items", items}};
}

Json signature_help(const FeatureContext& ctx, const std::string& text, const Json& position) {
  PositionConverter conv(text, ctx.encoding);
  size_t off = conv.offset(position);
  auto cs = call_at(text, off);
  if (!cs) return nullptr;
  ResolvedCallee callee = resolve_callee(ctx, text, *cs);
  if (!callee.entry) return nullptr;
  std::vector<std::pair<size_t, size_t>> spans;
  std::string label =
      graphcore::api_signature(*callee.entry, ctx.mindspore_version, callee.init, &spans);
  auto params = graphcore::api_signature_params(*callee.entry, ctx.mindspore_version, callee.init);
  Json jparams = Json::array();
  for (size_t i = 0; i < spans.size(); ++i) {
    Json label_json = ctx.client.signature_label_offsets
                          ? Json::array({spans[i].first, spans[i].second})
                          : Json(label.substr(spans[i].first, spans[i].second - spans[i].first));
    Json p{{"label", label_json}};
    if (!params[i]->deprecated.empty()) p["documentation"] = "Deprecated: " + params[i]->deprecated;
    jparams.push_back(std::move(p));
  }
  int active = cs->arg_index;
  if (!cs->keyword.empty()) {
    active = -1;
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i]->name == cs->keyword) active = static_cast<int>(i);
    }
  } else if (!cs->keywords_used.empty()) {
    active = -1;  // a positional argument after keywords: none applies
  } else {
    // Past the positional parameters: *args absorbs the rest.
    int var_pos = -1;
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i]->kind == graphcore::ParamKind::VarPositional) var_pos = static_cast<int>(i);
    }
    if (var_pos >= 0 && active > var_pos) active = var_pos;
    if (active >= static_cast<int>(params.size())) active = -1;
  }
  Json sig{{"label", label}, {"parameters", jparams}};
  if (!callee.entry->summary.empty())
    sig["documentation"] = {{"kind", "markdown"}, {"value", callee.entry->summary}};
  Json out{{"signatures", Json::array({sig})}, {"activeSignature", 0}};
  if (active >= 0) {
    out["activeParameter"] = active;
  } else {
    out["activeParameter"] = static_cast<int>(params.size());  // none highlighted
  }
  return out;
}

// ---- commands ---------------------------------------------------------------------------------

Json graph_document_json(const FeatureContext& ctx, const std::string& cell,
                         const std::string& target) {
  graphcore::AnalysisResult copy = ctx.fa.result;
  if (!cell.empty()) {
    std::erase_if(copy.cells,
                  [&](const CellReport& r) { return r.name != cell && r.class_name != cell; });
  }
  for (auto& r : copy.cells) r.facts.clear();
  protocol::PositionMapper mapper([&](const std::string& file) -> std::optional<std::string> {
    if (file == ctx.fa.path) return *ctx.fa.text;
    return std::nullopt;
  });
  protocol::DocumentInfo info;
  info.target = target;
  info.mindspore_version = ctx.mindspore_version.str();
  auto doc = protocol::graph_document(copy, mapper, info);
  return Json::parse(protocol::to_json(doc, {.pretty = false}));
}

}  // namespace cellscope::lsp
