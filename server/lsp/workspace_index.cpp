#include "lsp/workspace_index.h"
#include "graphcore/text.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace cellscope::lsp {

namespace fs = std::filesystem;

namespace {

bool skipped_dir(const fs::path& dir) {
  const std::string name = dir.filename().string();
  if (name.empty()) return false;
  if (name[0] == '.') return true;
  static const char* kSkip[] = {"node_modules",  "__pycache__", "venv", "env",
                                "site-packages", "build",       "dist", "_deps"};
  for (const char* s : kSkip) {
    if (name == s) return true;
  }
  // A virtual environment, whatever its name.
  std::error_code ec;
  return fs::exists(dir / "pyvenv.cfg", ec);
}

std::optional<std::string> read_small(const std::string& path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec || size > WorkspaceIndex::kMaxFileBytes) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int kind_of(const graphcore::OutlineSymbol& s) {
  using K = graphcore::OutlineSymbol::Kind;
  switch (s.kind) {
    case K::Class:
      return 5;
    case K::Method:
      return 6;
    case K::Function:
      return 12;
    case K::Attribute:
      return 8;
    case K::Variable:
      return 13;
  }
  return 13;
}

// Lower is better; nullopt: no match.
std::optional<int> match_score(const std::string& name, const std::string& query) {
  if (query.empty()) return 3;
  std::string n = graphcore::text::lower(name);
  std::string q = graphcore::text::lower(query);
  if (n == q) return 0;
  if (n.starts_with(q)) return 1;
  if (n.find(q) != std::string::npos) return 2;
  size_t i = 0;
  for (char c : n) {
    if (i < q.size() && c == q[i]) ++i;
  }
  return i == q.size() ? std::optional<int>(4) : std::nullopt;
}

}  // namespace

std::vector<WorkspaceIndex::Entry> WorkspaceIndex::entries_of(
    const std::string& text, const graphcore::FileOutline& outline) const {
  PositionConverter conv(text, encoding_);
  std::vector<Entry> out;
  std::function<void(const graphcore::OutlineSymbol&, const std::string&)> add =
      [&](const graphcore::OutlineSymbol& s, const std::string& container) {
        // Module-level variables and attributes would drown the classes and functions.
        if (s.kind == graphcore::OutlineSymbol::Kind::Variable && !container.empty()) return;
        out.push_back(Entry{s.name, container, kind_of(s), conv.range(s.selection)});
        for (const auto& c : s.children) add(c, s.name);
      };
  for (const auto& s : outline.symbols) add(s, "");
  return out;
}

size_t WorkspaceIndex::scan(const std::vector<std::string>& roots,
                            const std::function<void(size_t, size_t)>& progress) {
  std::vector<std::string> files;
  for (const auto& root : roots) {
    std::error_code ec;
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (cancelled_ || files.size() >= kMaxFiles) break;
      std::error_code ec2;
      if (it->is_directory(ec2)) {
        if (skipped_dir(it->path())) it.disable_recursion_pending();
        continue;
      }
      if (it->path().extension() == ".py" && it->is_regular_file(ec2))
        files.push_back(it->path().lexically_normal().string());
    }
  }
  size_t done = 0;
  for (const auto& f : files) {
    if (cancelled_) break;
    refresh_from_disk(f);
    ++done;
    if (progress && (done % 200 == 0)) progress(done, files.size());
  }
  return done;
}

void WorkspaceIndex::update(const std::string& path, const std::string& text,
                            const graphcore::FileOutline& outline) {
  auto entries = entries_of(text, outline);
  std::lock_guard lock(mutex_);
  files_[path] = std::move(entries);
}

void WorkspaceIndex::refresh_from_disk(const std::string& path) {
  auto text = read_small(path);
  if (!text) {
    remove(path);
    return;
  }
  auto outline = graphcore::outline_python(path, *text);
  update(path, *text, outline);
}

void WorkspaceIndex::remove(const std::string& path) {
  std::lock_guard lock(mutex_);
  files_.erase(path);
}

size_t WorkspaceIndex::file_count() const {
  std::lock_guard lock(mutex_);
  return files_.size();
}

Json WorkspaceIndex::query(const std::string& q, size_t limit) const {
  struct Hit {
    int score;
    const std::string* path;
    const Entry* entry;
  };
  std::vector<Hit> hits;
  std::lock_guard lock(mutex_);
  for (const auto& [path, entries] : files_) {
    for (const auto& e : entries) {
      if (auto s = match_score(e.name, q))
        hits.push_back({*s * 10 + (e.kind == 5 ? 0 : 1), &path, &e});
    }
  }
  std::stable_sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) {
    if (a.score != b.score) return a.score < b.score;
    return a.entry->name.size() < b.entry->name.size();
  });
  Json out = Json::array();
  for (size_t i = 0; i < hits.size() && i < limit; ++i) {
    const Entry& e = *hits[i].entry;
    Json j{{"name", e.name},
           {"kind", e.kind},
           {"location", {{"uri", path_to_uri(*hits[i].path)}, {"range", e.range}}}};
    if (!e.container.empty()) j["containerName"] = e.container;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace cellscope::lsp
