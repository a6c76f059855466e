// File-system helpers for the CLI: collecting model files and writing outputs atomically.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace cellscope::server {

// Expands PATH arguments: files are kept as given; directories are walked recursively for *.py,
// skipping hidden directories, virtual environments (a pyvenv.cfg inside, or site-packages),
// node_modules and __pycache__. The result is sorted and free of duplicates. A path that does not
// exist is reported in `missing`.
std::vector<std::filesystem::path> collect_python_files(const std::vector<std::string>& paths,
                                                        std::vector<std::string>* missing);

// Writes `data` to `path` atomically: a temporary file in the same directory, flushed to disk,
// then renamed over `path`. Readers see the old file or the new one, never a partial write.
// Throws std::system_error on failure (the temporary file is removed).
void write_file_atomic(const std::filesystem::path& path, std::string_view data);

// Writes `data` to `path` atomically (logged), or to stdout for "" / "-"; false after printing
// the error on stderr.
bool emit(const std::string& path, const std::string& data);

// `path` relative to the current directory when it lies below it, with '/' separators.
std::string display_path(const std::string& path);

}  // namespace cellscope::server
