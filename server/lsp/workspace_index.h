// Symbols of every Python file of the workspace folders, for workspace/symbol. Built by a
// background scan at startup, then kept current from open documents' analyses and file events.
// Thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "graphcore/outline.h"
#include "lsp/convert.h"

namespace cellscope::lsp {

class WorkspaceIndex {
 public:
  // Limits of the scan: files larger than this are skipped, and at most this many files.
  static constexpr size_t kMaxFileBytes = 2u << 20;
  static constexpr size_t kMaxFiles = 20000;

  void set_encoding(PositionEncoding encoding) { encoding_ = encoding; }
  // Indexes every *.py below `roots` (skipping hidden directories, virtual environments,
  // node_modules, __pycache__ and build trees). Returns the number of files indexed.
  size_t scan(const std::vector<std::string>& roots,
              const std::function<void(size_t done, size_t total)>& progress);
  void update(const std::string& path, const std::string& text,
              const graphcore::FileOutline& outline);
  void refresh_from_disk(const std::string& path);
  void remove(const std::string& path);
  void cancel() { cancelled_ = true; }
  // SymbolInformation[] matching `query` (case-insensitive subsequence), best first.
  [[nodiscard]] Json query(const std::string& query, size_t limit) const;
  [[nodiscard]] size_t file_count() const;

 private:
  struct Entry {
    std::string name;
    std::string container;
    int kind = 0;
    Json range;
  };
  std::vector<Entry> entries_of(const std::string& text,
                                const graphcore::FileOutline& outline) const;
  mutable std::mutex mutex_;
  std::map<std::string, std::vector<Entry>> files_;
  std::atomic<bool> cancelled_{false};
  PositionEncoding encoding_ = PositionEncoding::kUtf16;
};

}  // namespace cellscope::lsp
