#include "compare_base.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <system_error>

namespace cellscope::server {

namespace fs = std::filesystem;

namespace {

fs::path absolute_normal(const fs::path& p) {
  std::error_code ec;
  fs::path a = fs::absolute(p, ec);
  return (ec ? p : a).lexically_normal();
}

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  const bool eq = fs::equivalent(a, b, ec);
  return !ec && eq;
}

}  // namespace

bool is_head_spec(const std::string& spec) {
  std::string s = spec;
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s == "HEAD";
}

protocol::CompareBase describe_base(const std::string& spec, const std::string& file) {
  protocol::CompareBase base;
  base.set_spec(spec);
  const fs::path current = absolute_normal(file);
  if (is_head_spec(spec)) {
    base.set_kind("head");
    base.set_label("HEAD");
    base.set_file(current.string());
    return base;
  }
  fs::path other(spec);
  if (other.is_relative()) other = current.parent_path() / other;
  other = absolute_normal(other);
  base.set_kind("file");
  base.set_file(other.string());
  // Its name, or its path from the current file's directory when the names are the same.
  const bool same_name = other.filename() == current.filename();
  base.set_label(same_name ? other.lexically_relative(current.parent_path()).generic_string()
                           : other.filename().string());
  return base;
}

BaseDocument build_base_document(const std::string& spec, const std::string& file,
                                 const OptionsFor& options_for, const PipelineOptions& pipeline,
                                 graphcore::SourceProvider& sources, const GitOptions& git) {
  const auto t0 = std::chrono::steady_clock::now();
  BaseDocument out;
  out.base = describe_base(spec, file);
  const auto finish = [&]() -> BaseDocument {
    out.ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return std::move(out);
  };
  // `path` analysed with the options of `settings_of` (the file itself for HEAD).
  const auto analyse = [&](const std::string& path, const std::string& settings_of,
                           graphcore::SourceProvider& src) {
    graphcore::AnalysisOptions options = options_for(settings_of);
    options.record_facts = false;
    options.outline = false;
    options.cancel = nullptr;
    try {
      auto built = build_graph_document(path, options, pipeline, src);
      out.document = std::make_shared<const protocol::GraphDocument>(std::move(built.document));
    } catch (const std::exception& e) {
      spdlog::error("compare: analysing the base {} of {} failed: {}", spec, file, e.what());
      out.error = "analysing " + out.base.label() + " failed: " + e.what();
    }
  };
  if (out.base.kind() == "head") {
    HeadFile head = read_head_file(out.base.file(), git);
    if (!head.error.empty()) {
      out.error = head.error;
      return finish();
    }
    out.base.set_commit(head.commit);
    out.base.set_label("HEAD (" + head.commit + ")");
    HeadSourceProvider src(head, sources, git);
    analyse(out.base.file(), file, src);
    return finish();
  }
  const fs::path other(out.base.file());
  std::error_code ec;
  if (!fs::exists(other, ec)) {
    out.error = "no such file: " + other.string();
  } else if (!fs::is_regular_file(other, ec)) {
    out.error = other.string() + " is not a file";
  } else if (other.extension() != ".py") {
    out.error = other.filename().string() + " is not a Python file";
  } else if (same_file(other, file)) {
    out.error = other.filename().string() +
                " is the file shown: choose another file, or compare with the last commit";
  } else {
    analyse(other.string(), other.string(), sources);
  }
  return finish();
}

}  // namespace cellscope::server
