// Unit tests of the language server's layers that are pure: capability negotiation
// (lsp/capabilities.h) and the settings analyses run under (lsp/settings.h). The scheduler and
// the protocol layer are tested through the real binary in tests/lsp/.
#include <gtest/gtest.h>

#include "lsp/capabilities.h"
#include "lsp/scheduler.h"
#include "lsp/settings.h"

namespace cellscope::lsp {
namespace {

TEST(LspCapabilities, DefaultsForAnEmptyClient) {
  ClientCapabilities c = negotiate(Json::object());
  EXPECT_EQ(c.encoding, PositionEncoding::kUtf16);
  EXPECT_TRUE(c.features.markdown_hover);
  EXPECT_TRUE(c.features.related_information);
  EXPECT_FALSE(c.features.hierarchical_symbols);
  EXPECT_FALSE(c.pull_diagnostics);
  EXPECT_FALSE(c.work_done_progress);
  EXPECT_FALSE(c.show_document);
  Json caps = server_capabilities(c.encoding, c.pull_diagnostics);
  EXPECT_EQ(caps["positionEncoding"], "utf-16");
  EXPECT_FALSE(caps.contains("diagnosticProvider"));
}

TEST(LspCapabilities, WhatTheClientOffersIsUsed) {
  Json params = Json::parse(R"({"capabilities": {
      "general": {"positionEncodings": ["utf-16", "utf-8"]},
      "textDocument": {"diagnostic": {}, "hover": {"contentFormat": ["plaintext"]},
                       "documentSymbol": {"hierarchicalDocumentSymbolSupport": true},
                       "publishDiagnostics": {"relatedInformation": false}},
      "window": {"workDoneProgress": true, "showDocument": {"support": true}},
      "workspace": {"configuration": true, "diagnostics": {"refreshSupport": true},
                    "didChangeWatchedFiles": {"dynamicRegistration": true}}}})");
  ClientCapabilities c = negotiate(params);
  EXPECT_EQ(c.encoding, PositionEncoding::kUtf8);
  EXPECT_FALSE(c.features.markdown_hover);
  EXPECT_FALSE(c.features.related_information);
  EXPECT_TRUE(c.features.hierarchical_symbols);
  EXPECT_TRUE(c.pull_diagnostics && c.diagnostic_refresh && c.work_done_progress);
  EXPECT_TRUE(c.show_document && c.configuration_pull && c.watch_registration);
  Json caps = server_capabilities(c.encoding, c.pull_diagnostics);
  EXPECT_EQ(caps["positionEncoding"], "utf-8");
  EXPECT_EQ(caps["diagnosticProvider"]["identifier"], "cellscope");
}

TEST(LspCapabilities, WorkspaceRootsFromFoldersElseRootUriElseRootPath) {
  EXPECT_EQ(workspace_roots(Json::parse(
                R"({"workspaceFolders": [{"uri": "file:///w/a/"}, {"uri": "file:///w/./b"}],
                    "rootUri": "file:///ignored"})")),
            (std::vector<std::string>{"/w/a", "/w/b"}));
  EXPECT_EQ(workspace_roots(Json::parse(R"({"rootUri": "file:///r//"})")),
            (std::vector<std::string>{"/r"}));
  EXPECT_EQ(workspace_roots(Json::parse(R"({"rootPath": "/p/q/"})")),
            (std::vector<std::string>{"/p/q"}));
  EXPECT_TRUE(workspace_roots(Json::object()).empty());
}

TEST(LspSettings, ClientOverProjectOverDefaults) {
  WorkspaceSettings s(std::optional<int>(120));
  EXPECT_EQ(s.debounce_ms(), 120);
  EXPECT_EQ(s.target(), "cpu");
  std::vector<std::string> problems;
  s.client = parse_settings(Json{{"debounceMs", 40}, {"target", "ascend910b"}}, problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(s.debounce_ms(), 40);
  EXPECT_EQ(s.target(), "ascend910b");
}

// Nobody fixed the debounce (no --debounce-ms, no setting, no mindspore_config.json): the
// scheduler sizes it; any of the three fixes it, the client's setting first.
TEST(LspSettings, DebounceIsAdaptiveUnlessSomeoneFixesIt) {
  WorkspaceSettings adaptive(std::nullopt);
  EXPECT_EQ(adaptive.debounce_ms(), std::nullopt);
  std::vector<std::string> problems;
  adaptive.client = parse_settings(Json{{"debounceMs", 0}}, problems);
  EXPECT_EQ(adaptive.debounce_ms(), 0);
  adaptive.client = parse_settings(Json{{"debounceMs", nullptr}}, problems);
  EXPECT_EQ(adaptive.debounce_ms(), std::nullopt);
}

// clangd's rule: the longest of the last analyses, within bounds; before any, the initial delay.
TEST(LspDebounce, FollowsTheLongestRecentAnalysisWithinBounds) {
  const DebouncePolicy p;
  std::deque<double> recent;
  EXPECT_EQ(p.compute(recent), 50);
  p.record(recent, 6.2);  // ResNet-50's analysis: the floor
  EXPECT_EQ(p.compute(recent), 10);
  p.record(recent, 31.5);
  EXPECT_EQ(p.compute(recent), 32);
  p.record(recent, 2000);  // capped
  EXPECT_EQ(p.compute(recent), 500);
  for (int i = 0; i < 4; ++i) p.record(recent, 20);  // the slow one ages out after four more
  EXPECT_EQ(recent.size(), 4U);
  EXPECT_EQ(p.compute(recent), 20);
  DebouncePolicy twice;
  twice.ratio = 2;
  EXPECT_EQ(twice.compute(recent), 40);
}

TEST(LspSettings, RootsAndConfigFilesResolvePerFile) {
  WorkspaceSettings s(std::optional<int>(120));
  s.roots = {"/w", "/w/inner"};
  EXPECT_EQ(s.root_of("/w/inner/m.py"), "/w/inner");
  EXPECT_EQ(s.root_of("/elsewhere/m.py"), "");
  std::vector<std::string> problems;
  s.client = parse_settings(Json{{"configs", Json::array({"cfg.yaml", "/abs.yaml"})}}, problems);
  graphcore::AnalysisOptions o = s.options_with_configs_for("/w/inner/m.py");
  EXPECT_EQ(o.workspace_root, std::filesystem::path("/w/inner"));
  ASSERT_EQ(o.config_files.size(), 2u);
  EXPECT_EQ(o.config_files[0], std::filesystem::path("/w/inner/cfg.yaml"));
  EXPECT_EQ(o.config_files[1], std::filesystem::path("/abs.yaml"));
  // The view's options name no config files.
  EXPECT_TRUE(s.options_for("/w/inner/m.py").config_files.empty());
}

}  // namespace
}  // namespace cellscope::lsp
