// `cellscope graph FILE --format html`: the view as one self-contained page (no server). The
// contract with webview/: a JSON array of ViewMessage in <script id="cellscope-snapshot">, the
// layout worker's source in <script id="cellscope-worker-src" type="text/plain">.
#include <stdexcept>
#include <string>

#include "protocol/document.h"
#include "view/view_server.h"

namespace cellscope::server::view {

namespace {

// Makes `text` safe inside a <script> element: no "</script", no "<!--" (both only appear in
// string literals, regular expressions or comments, where the escaped form means the same).
std::string script_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 64);
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<' && i + 1 < text.size() && (text[i + 1] == '/' || text[i + 1] == '!')) {
      out += text[i + 1] == '/' ? "<\\/" : "<\\!";
      ++i;
      continue;
    }
    out.push_back(c);
  }
  return out;
}

std::string html_escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string_view asset(std::string_view path) {
  const Asset* a = find_asset(path);
  if (a == nullptr) throw std::runtime_error("the view's " + std::string(path) + " is missing");
  return a->data;
}

}  // namespace

std::string snapshot_html(const protocol::GraphDocument& doc, const std::string& title,
                          const std::vector<protocol::ViewMessage>& extra) {
  protocol::ViewMessage hello;
  hello.mutable_hello()->set_file(doc.file());
  hello.mutable_hello()->set_tool_version(std::string(protocol::tool_version()));
  protocol::ViewMessage update;
  update.mutable_update()->set_seq(1);
  *update.mutable_update()->mutable_document() = doc;
  std::string messages = "[" + protocol::to_json(hello, {.pretty = false}) + "," +
                         protocol::to_json(update, {.pretty = false});
  for (const auto& m : extra) messages += "," + protocol::to_json(m, {.pretty = false});
  messages += "]";
  std::string out;
  out.reserve(messages.size() + size_t{4} * 1024 * 1024);
  out += "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<meta name=\"generator\" content=\"cellscope " + std::string(protocol::tool_version()) +
         "\">\n";
  out += "<title>" + html_escape(title) + " \xE2\x80\x94 Cellscope</title>\n<style>\n";
  out += script_safe(asset("/app.css"));
  out += "\n</style>\n</head>\n<body>\n";
  out += "<script id=\"cellscope-snapshot\" type=\"application/json\">";
  out += script_safe(messages);
  out += "</script>\n<script id=\"cellscope-worker-src\" type=\"text/plain\">";
  out += script_safe(asset("/layout-worker.js"));
  out += "</script>\n<script>\n";
  out += script_safe(asset("/app.js"));
  out += "\n</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace cellscope::server::view
