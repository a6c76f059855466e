#include "lsp/capabilities.h"

#include <algorithm>
#include <filesystem>

namespace cellscope::lsp {

namespace fs = std::filesystem;

ClientCapabilities negotiate(const Json& params) {
  ClientCapabilities out;
  const Json& caps = params.value("capabilities", Json::object());
  auto cap = [&](std::initializer_list<const char*> path) -> Json {
    const Json* j = &caps;
    for (const char* k : path) {
      if (!j->is_object() || !j->contains(k)) return nullptr;
      j = &(*j)[k];
    }
    return *j;
  };
  Json encodings = cap({"general", "positionEncodings"});
  out.encoding = PositionEncoding::kUtf16;
  if (encodings.is_array()) {
    for (const auto& e : encodings) {
      if (e == "utf-8") out.encoding = PositionEncoding::kUtf8;
    }
  }
  ClientFeatures& client = out.features;
  client.hierarchical_symbols =
      cap({"textDocument", "documentSymbol", "hierarchicalDocumentSymbolSupport"}) == true;
  Json formats = cap({"textDocument", "hover", "contentFormat"});
  client.markdown_hover = !formats.is_array() || formats.empty() ||
                          std::find(formats.begin(), formats.end(), "markdown") != formats.end();
  client.signature_label_offsets = cap({"textDocument", "signatureHelp", "signatureInformation",
                                        "parameterInformation", "labelOffsetSupport"}) == true;
  client.related_information =
      cap({"textDocument", "publishDiagnostics", "relatedInformation"}) != false;
  out.pull_diagnostics = cap({"textDocument", "diagnostic"}).is_object();
  out.diagnostic_refresh = cap({"workspace", "diagnostics", "refreshSupport"}) == true;
  out.work_done_progress = cap({"window", "workDoneProgress"}) == true;
  out.show_document = cap({"window", "showDocument", "support"}) == true;
  out.configuration_pull = cap({"workspace", "configuration"}) == true;
  out.watch_registration =
      cap({"workspace", "didChangeWatchedFiles", "dynamicRegistration"}) == true;
  return out;
}

std::vector<std::string> workspace_roots(const Json& params) {
  std::vector<std::string> roots;
  if (auto wf = params.find("workspaceFolders"); wf != params.end() && wf->is_array()) {
    for (const auto& f : *wf) {
      if (auto p = uri_to_path(f.value("uri", "")))
        roots.push_back(fs::path(*p).lexically_normal().string());
    }
  }
  if (roots.empty()) {
    if (auto ru = params.find("rootUri"); ru != params.end() && ru->is_string()) {
      if (auto p = uri_to_path(ru->get<std::string>()))
        roots.push_back(fs::path(*p).lexically_normal().string());
    } else if (auto rp = params.find("rootPath"); rp != params.end() && rp->is_string()) {
      roots.push_back(fs::path(rp->get<std::string>()).lexically_normal().string());
    }
  }
  for (auto& r : roots) {
    while (r.size() > 1 && r.back() == '/') r.pop_back();
  }
  return roots;
}

Json server_capabilities(PositionEncoding encoding, bool pull_diagnostics) {
  Json capabilities = {
      {"positionEncoding", encoding == PositionEncoding::kUtf8 ? "utf-8" : "utf-16"},
      {"textDocumentSync",
       {{"openClose", true}, {"change", 2}, {"save", {{"includeText", false}}}}},
      {"hoverProvider", true},
      {"inlayHintProvider", true},
      {"codeLensProvider", {{"resolveProvider", false}}},
      {"documentSymbolProvider", true},
      {"workspaceSymbolProvider", true},
      {"codeActionProvider", {{"codeActionKinds", Json::array({"quickfix"})}}},
      {"completionProvider",
       {{"triggerCharacters", Json::array({".", "(", ","})}, {"resolveProvider", false}}},
      {"signatureHelpProvider",
       {{"triggerCharacters", Json::array({"(", ","})},
        {"retriggerCharacters", Json::array({"="})}}},
      {"definitionProvider", true},
      {"executeCommandProvider",
       {{"commands",
         Json::array({"cellscope.visualizeGraph", "cellscope.graphDocument", "cellscope.setTarget",
                      "cellscope.debugFocus", "cellscope.export", "cellscope.trainStep",
                      "cellscope.drift", "cellscope.trainReset", "cellscope.deviceTelemetry"})}}},
      {"workspace", {{"workspaceFolders", {{"supported", true}, {"changeNotifications", true}}}}},
  };
  if (pull_diagnostics) {
    capabilities["diagnosticProvider"] = {{"identifier", "cellscope"},
                                          {"interFileDependencies", true},
                                          {"workspaceDiagnostics", false}};
  }
  return capabilities;
}

}  // namespace cellscope::lsp
