// File-system helpers for the CLI: collecting model files and writing outputs atomically.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graphcore/model_file.h"

namespace cellscope::server {

// Expands PATH arguments: files are kept as given; directories are walked recursively for *.py,
// skipping hidden directories, virtual environments (a pyvenv.cfg inside, or site-packages),
// node_modules and __pycache__. The result is sorted and free of duplicates. A path that does not
// exist is reported in `missing`.
std::vector<std::filesystem::path> collect_python_files(const std::vector<std::string>& paths,
                                                        std::vector<std::string>* missing);

// A file written atomically in pieces: the bytes go to a temporary file in `path`'s directory
// (".NAME.tmp.XXXXXX"); commit() flushes it to disk, renames it over `path` and syncs the
// directory. Destroyed without commit() (an error, an exception), the temporary file is removed
// and `path` is untouched. A kill -9 at any moment leaves the old `path` or the complete new one
// (and possibly a stray temporary file). Errors throw std::system_error.
class AtomicFile {
 public:
  // The file gets `mode` (e.g. 0600 for a key: the temporary is never readable by others), else
  // the usual permissions (0666 minus the umask).
  explicit AtomicFile(std::filesystem::path path, std::optional<unsigned> mode = std::nullopt);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::string_view data);
  void commit();
  [[nodiscard]] uint64_t written() const { return written_; }

 private:
  [[noreturn]] void fail(const std::string& what);
  std::filesystem::path path_;
  std::string tmp_;
  int fd_ = -1;
  uint64_t written_ = 0;
};

// fsync of a directory (after a rename in it); best effort: some file systems refuse.
void sync_directory(const std::filesystem::path& dir);

// Writes `data` to `path` atomically: a temporary file in the same directory, flushed to disk,
// then renamed over `path`. Readers see the old file or the new one, never a partial write.
// Throws std::system_error on failure (the temporary file is removed). `mode`: as AtomicFile's.
void write_file_atomic(const std::filesystem::path& path, std::string_view data,
                       std::optional<unsigned> mode = std::nullopt);

// Writes a ModelFile (graphcore/model_file.h) atomically, piece by piece: the weights go from
// the runtime's tensors to the file without a copy of the whole file in memory.
void write_model_file_atomic(const std::filesystem::path& path, const graphcore::ModelFile& file);

// A file of a model set: its location relative to the graph file's folder.
struct ModelSetPart {
  std::string location;
  const graphcore::ModelFile* file = nullptr;
};

// A graph file and the data files it names (MindSpore's split MindIR layout): each data file is
// written atomically first (the caller picks names the previous set does not use), then the
// graph file -- the commit point: before its rename the old graph and the data files it names
// are intact, after it the new set is complete -- then every file whose name starts with
// `stale_prefix` (MindIR: "data_"; ONNX: "net.onnx.data"), or is a stray temporary file of one,
// in the data files' folders and not part of the new set, is removed. A kill at any moment
// leaves a loadable old set or the complete new one, plus at most unreferenced files that the
// next write removes.
void write_model_set_atomic(const std::filesystem::path& graph_path,
                            const graphcore::ModelFile& graph,
                            const std::vector<ModelSetPart>& data, std::string_view stale_prefix);

// Writes `data` to `path` atomically (logged), or to stdout for "" / "-"; false after printing
// the error on stderr.
bool emit(const std::string& path, const std::string& data);

// `path` relative to the current directory when it lies below it, with '/' separators.
std::string display_path(const std::string& path);

}  // namespace cellscope::server
