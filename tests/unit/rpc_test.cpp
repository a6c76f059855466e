// The base protocol layer (protocol/rpc): framing, JSON-RPC dispatch, cancellation, stdio.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "rpc/framing.h"
#include "rpc/jsonrpc.h"
#include "rpc/stdio_transport.h"

namespace cellscope::rpc {
namespace {

using Kind = Frame::Kind;

std::string framed(std::string_view body) { return encode_frame(body); }

std::vector<std::string> bodies(const std::vector<Frame>& frames) {
  std::vector<std::string> out;
  for (const Frame& f : frames) {
    if (f.ok()) out.push_back(f.body);
  }
  return out;
}

int errors(const std::vector<Frame>& frames) {
  int n = 0;
  for (const Frame& f : frames) n += f.ok() ? 0 : 1;
  return n;
}

// --- Framing ---------------------------------------------------------------------------------

TEST(FramingTest, EncodesContentLength) {
  EXPECT_EQ(encode_frame(R"({"a":1})"), "Content-Length: 7\r\n\r\n{\"a\":1}");
  EXPECT_EQ(encode_frame(""), "Content-Length: 0\r\n\r\n");
}

TEST(FramingTest, SplitReadsAtEveryByte) {
  const std::string stream = framed(R"({"x":"é"})") +
                             "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"
                             "Content-Length: 2\r\n\r\n{}";
  FrameReader reader;
  std::vector<Frame> frames;
  for (char c : stream) reader.feed(std::string_view(&c, 1), frames);
  ASSERT_EQ(errors(frames), 0);
  EXPECT_EQ(bodies(frames), (std::vector<std::string>{R"({"x":"é"})", "{}"}));
  EXPECT_TRUE(reader.finish().empty());
}

TEST(FramingTest, SplitReadsAtEverySplitPoint) {
  const std::string stream = framed("[1]") + framed("[22]");
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    FrameReader reader;
    std::vector<Frame> frames;
    reader.feed(std::string_view(stream).substr(0, cut), frames);
    reader.feed(std::string_view(stream).substr(cut), frames);
    EXPECT_EQ(bodies(frames), (std::vector<std::string>{"[1]", "[22]"})) << "cut at " << cut;
    EXPECT_EQ(errors(frames), 0);
  }
}

TEST(FramingTest, SeveralMessagesInOneRead) {
  std::string stream;
  for (int i = 0; i < 10; ++i) stream += framed("{\"i\":" + std::to_string(i) + "}");
  FrameReader reader;
  const auto frames = reader.feed(stream);
  ASSERT_EQ(frames.size(), 10u);
  EXPECT_EQ(frames[9].body, R"({"i":9})");
}

TEST(FramingTest, CaseInsensitiveHeadersBareNewlinesAndUnknownHeaders) {
  FrameReader reader;
  const auto frames = reader.feed("X-Custom: 1\r\ncontent-length:   2  \n\n{}\r\n" + framed("[]"));
  EXPECT_EQ(errors(frames), 0);
  EXPECT_EQ(bodies(frames), (std::vector<std::string>{"{}", "[]"}));
}

// Each malformed header block is reported once and the following message still arrives.
struct MalformedCase {
  const char* name;
  std::string bad;
  const char* error_contains;
};

TEST(FramingTest, MalformedHeadersAreReportedAndSkipped) {
  const std::vector<MalformedCase> cases = {
      {"no colon", "Content-Length 5\r\n\r\nhello", "without a colon"},
      {"non-numeric", "Content-Length: abc\r\n\r\n{}", "invalid Content-Length"},
      {"negative", "Content-Length: -5\r\n\r\n{}", "invalid Content-Length"},
      {"fractional", "Content-Length: 2.0\r\n\r\n{}", "invalid Content-Length"},
      {"empty value", "Content-Length:\r\n\r\n{}", "invalid Content-Length"},
      {"overflowing", "Content-Length: 99999999999999999999999\r\n\r\n{}",
       "invalid Content-Length"},
      {"missing", "Content-Type: application/json\r\n\r\n{}", "without Content-Length"},
      {"duplicate", "Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}", "duplicate"},
      {"bad name", "Content Length: 2\r\n\r\n{}", "invalid header name"},
      {"garbage", "\x01\x02\xff garbage\r\n\r\n{}", "without a colon"},
      {"too long", "X-Long: " + std::string(10000, 'a') + "\r\n\r\n{}", "longer than"},
  };
  for (const auto& c : cases) {
    FrameReader reader;
    const auto frames = reader.feed(c.bad + framed(R"({"next":true})"));
    ASSERT_GE(frames.size(), 2u) << c.name;
    EXPECT_EQ(frames[0].kind, Kind::kMalformedHeader) << c.name;
    EXPECT_NE(frames[0].error.find(c.error_contains), std::string::npos)
        << c.name << ": " << frames[0].error;
    EXPECT_EQ(errors(frames), 1) << c.name;
    EXPECT_EQ(bodies(frames), (std::vector<std::string>{R"({"next":true})"})) << c.name;
  }
}

TEST(FramingTest, TooManyHeaderLines) {
  std::string bad;
  for (int i = 0; i < 100; ++i) bad += "X-H: 1\r\n";
  FrameReader reader;
  const auto frames = reader.feed(bad + "\r\n" + framed("{}"));
  EXPECT_EQ(errors(frames), 1);
  EXPECT_EQ(bodies(frames), (std::vector<std::string>{"{}"}));
}

TEST(FramingTest, ContentLengthTooShortResynchronises) {
  const std::string body = R"({"jsonrpc":"2.0","method":"a"})";
  const std::string bad = "Content-Length: " + std::to_string(body.size() - 3) + "\r\n\r\n" + body;
  FrameReader reader;
  const auto frames = reader.feed(bad + framed(R"({"b":2})"));
  // The truncated body is delivered (the JSON layer rejects it), the leftover "\"}" is garbage
  // in front of the next header, and the next message arrives intact.
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].body, body.substr(0, body.size() - 3));
  EXPECT_EQ(frames[1].kind, Kind::kMalformedHeader);
  EXPECT_EQ(frames[2].body, R"({"b":2})");
}

TEST(FramingTest, ContentLengthTooShortResynchronisesAcrossSplitReads) {
  const std::string stream =
      "Content-Length: 3\r\n\r\n{\"a\":1}" + framed("[1]") + "junk\r\n" + framed("[2]");
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    FrameReader reader;
    std::vector<Frame> frames;
    reader.feed(std::string_view(stream).substr(0, cut), frames);
    reader.feed(std::string_view(stream).substr(cut), frames);
    const auto got = bodies(frames);
    ASSERT_EQ(got.size(), 3u) << "cut at " << cut;
    EXPECT_EQ(got[1], "[1]") << "cut at " << cut;
    EXPECT_EQ(got[2], "[2]") << "cut at " << cut;
  }
}

TEST(FramingTest, OversizeMessageIsSkippedWithoutBuffering) {
  FramingOptions options;
  options.max_message_bytes = 1000;
  options.oversize_prefix_bytes = 64;
  FrameReader reader(options);
  const std::string big =
      R"({"jsonrpc":"2.0","id":7,"method":"x","params":")" + std::string(5000, 'a') + "\"}";
  const std::string stream = framed(big) + framed(R"({"after":1})");
  std::vector<Frame> frames;
  for (std::size_t i = 0; i < stream.size(); i += 100) {
    reader.feed(std::string_view(stream).substr(i, 100), frames);
  }
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].kind, Kind::kOversize);
  EXPECT_EQ(frames[0].declared_length, big.size());
  EXPECT_EQ(frames[0].body, big.substr(0, 64));
  EXPECT_NE(frames[0].error.find("exceeds the limit of 1000 bytes"), std::string::npos);
  EXPECT_EQ(frames[1].body, R"({"after":1})");
}

TEST(FramingTest, FiftyMegabyteMessageIsRefusedByDefault) {
  FrameReader reader;
  const std::size_t size = 50u << 20;
  std::vector<Frame> frames;
  reader.feed("Content-Length: " + std::to_string(size) + "\r\n\r\n", frames);
  const std::string chunk(1 << 20, ' ');
  for (std::size_t sent = 0; sent < size; sent += chunk.size()) reader.feed(chunk, frames);
  reader.feed(framed("{}"), frames);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].kind, Kind::kOversize);
  EXPECT_LE(frames[0].body.size(), reader.options().oversize_prefix_bytes);
  EXPECT_EQ(frames[1].body, "{}");
}

// Issue 14: a Content-Length beyond the limit followed by a short body used to make the reader
// skip that many bytes (up to 10^15), swallowing every later message. It is refused, reported,
// and the reader resynchronises on the next header, as clangd does.
TEST(FramingTest, HugeContentLengthWithAShortBodyResynchronises) {
  const std::string body = R"({"jsonrpc":"2.0","id":3,"method":"x"})";
  for (const std::size_t length : {std::size_t{33} << 20, std::size_t{999999999999999}}) {
    const std::string stream = "Content-Length: " + std::to_string(length) + "\r\n\r\n" + body +
                               framed(R"({"after":1})") + framed(R"({"after":2})");
    for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
      FrameReader reader;
      std::vector<Frame> frames;
      reader.feed(std::string_view(stream).substr(0, cut), frames);
      reader.feed(std::string_view(stream).substr(cut), frames);
      ASSERT_EQ(frames.size(), 3u) << "length " << length << ", cut at " << cut;
      EXPECT_EQ(frames[0].kind, Kind::kOversize);
      EXPECT_EQ(frames[0].declared_length, length);
      EXPECT_EQ(frames[0].body, body) << "cut at " << cut;  // the next header is not in it
      EXPECT_NE(frames[0].error.find("exceeds the limit"), std::string::npos);
      EXPECT_EQ(frames[1].body, R"({"after":1})");
      EXPECT_EQ(frames[2].body, R"({"after":2})");
      EXPECT_TRUE(reader.finish().empty());
    }
  }
}

TEST(FramingTest, OversizeIsReportedOnceItsPrefixIsIn) {
  // Not when (if ever) the declared length has passed: the client may wait for the answer.
  FramingOptions options;
  options.max_message_bytes = 100;
  options.oversize_prefix_bytes = 16;
  FrameReader reader(options);
  std::vector<Frame> frames;
  reader.feed("Content-Length: 1000000\r\n\r\n" + std::string(15, 'a'), frames);
  EXPECT_TRUE(frames.empty());
  reader.feed(std::string(100, 'b'), frames);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].kind, Kind::kOversize);
  EXPECT_EQ(frames[0].body, std::string(15, 'a') + "b");
  reader.feed(std::string(1000, 'c') + framed("[1]"), frames);
  EXPECT_EQ(bodies(frames), (std::vector<std::string>{"[1]"}));
  EXPECT_EQ(frames.size(), 2u);
}

TEST(FramingTest, TruncatedStream) {
  FrameReader reader;
  EXPECT_TRUE(reader.feed("Content-Length: 10\r\n\r\n{\"a\"").empty());
  const auto end = reader.finish();
  ASSERT_EQ(end.size(), 1u);
  EXPECT_EQ(end[0].kind, Kind::kTruncated);
  FrameReader partial_header;
  partial_header.feed("Content-Len");
  EXPECT_EQ(partial_header.finish().size(), 1u);
}

TEST(FramingTest, EmptyBodyIsAMessage) {
  FrameReader reader;
  const auto frames = reader.feed("Content-Length: 0\r\n\r\n" + framed("{}"));
  EXPECT_EQ(bodies(frames), (std::vector<std::string>{"", "{}"}));
}

// --- JSON-RPC --------------------------------------------------------------------------------

// A dispatcher whose output is collected (thread-safe).
class JsonRpcTest : public ::testing::Test {
 protected:
  JsonRpcTest()
      : rpc_([this](std::string body) {
          std::lock_guard lock(mutex_);
          sent_.push_back(Json::parse(body));
          cv_.notify_all();
        }) {}

  std::vector<Json> sent() {
    std::lock_guard lock(mutex_);
    return sent_;
  }
  Json last() {
    std::lock_guard lock(mutex_);
    return sent_.empty() ? Json() : sent_.back();
  }
  bool wait_for(std::size_t n) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return sent_.size() >= n; });
  }
  static int code(const Json& response) { return response.at("error").at("code").get<int>(); }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Json> sent_;
  Dispatcher rpc_;
};

TEST_F(JsonRpcTest, RequestGetsResultWithSameId) {
  rpc_.on_request("add", [](const Json& p, const Context&) {
    return Json(p.at("a").get<int>() + p.at("b").get<int>());
  });
  rpc_.handle_message(R"({"jsonrpc":"2.0","id":1,"method":"add","params":{"a":2,"b":3}})");
  rpc_.handle_message(R"({"jsonrpc":"2.0","id":"req-é","method":"add","params":{"a":1,"b":1}})");
  rpc_.handle_message(
      R"({"jsonrpc":"2.0","id":9007199254740993,"method":"add","params":{"a":0,"b":0}})");
  const auto out = sent();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0], Json::parse(R"({"jsonrpc":"2.0","id":1,"result":5})"));
  EXPECT_EQ(out[1]["id"], "req-é");
  EXPECT_TRUE(out[1]["id"].is_string());
  EXPECT_EQ(out[2]["id"].get<std::int64_t>(), 9007199254740993);
  EXPECT_EQ(out[2].dump(), R"({"id":9007199254740993,"jsonrpc":"2.0","result":0})");
}

TEST_F(JsonRpcTest, NullResultIsSent) {
  rpc_.on_request("shutdown", [](const Json& p, const Context&) {
    EXPECT_TRUE(p.is_null());
    return Json();
  });
  rpc_.handle_message(R"({"jsonrpc":"2.0","id":0,"method":"shutdown"})");
  ASSERT_TRUE(last().contains("result"));
  EXPECT_TRUE(last()["result"].is_null());
}

TEST_F(JsonRpcTest, InvalidJsonIsParseErrorWithNullId) {
  rpc_.handle_message(R"({"jsonrpc":"2.0","id":1,"method":)");
  EXPECT_EQ(code(last()), -32700);
  EXPECT_TRUE(last().at("id").is_null());
  rpc_.handle_message("");
  EXPECT_EQ(code(last()), -32700);
}

TEST_F(JsonRpcTest, InvalidUtf8IsParseError) {
  for (const std::string& bad : {std::string("\xff"), std::string("\xc0\xaf"),  // overlong '/'
                                 std::string("\xed\xa0\x80"),                   // surrogate
                                 std::string("\xf4\x90\x80\x80"),               // > U+10FFFF
                                 std::string("\xe2\x82")}) {                    // truncated
    rpc_.handle_message(R"({"jsonrpc":"2.0","id":1,"method":"x","params":{"t":")" + bad + "\"}}");
    EXPECT_EQ(code(last()), -32700);
    EXPECT_TRUE(last().at("id").is_null());
  }
  EXPECT_TRUE(is_valid_utf8("aé€😀"));
}

// JSON.stringify writes an unpaired surrogate as a lone "\ud800" escape; nlohmann::json refuses
// it. The message is accepted and the surrogate read as U+FFFD (issue 14).
TEST_F(JsonRpcTest, LoneSurrogateEscapesBecomeReplacementCharacters) {
  std::vector<std::string> texts;
  rpc_.on_notification("textDocument/didOpen", [&](const Json& p) {
    texts.push_back(p.at("textDocument").at("text").get<std::string>());
  });
  rpc_.on_request("echo", [](const Json& p, const Context&) { return p; });
  const std::string head = R"({"jsonrpc":"2.0","method":"textDocument/didOpen",)"
                           R"("params":{"textDocument":{"uri":"file:///a.py","text":")";
  for (const char* text : {R"(x = '\ud800'\n)", R"(\udc00 lone low)", R"(end \ud83d)",
                           R"(\ud83d\ud83d\ude00 high, then a pair)", R"(\ud83d\u0041)",
                           R"(\\ud800 is no escape)", R"(\uD800\uDBFF)"}) {
    rpc_.handle_message(head + text + R"("}}})");
  }
  const char* fffd = "\xEF\xBF\xBD";
  ASSERT_EQ(texts.size(), 7u) << (sent().empty() ? "" : sent().back().dump());
  EXPECT_EQ(texts[0], std::string("x = '") + fffd + "'\n");
  EXPECT_EQ(texts[1], std::string(fffd) + " lone low");
  EXPECT_EQ(texts[2], std::string("end ") + fffd);
  EXPECT_EQ(texts[3], std::string(fffd) + "\xF0\x9F\x98\x80 high, then a pair");
  EXPECT_EQ(texts[4], std::string(fffd) + "A");
  EXPECT_EQ(texts[5], "\\ud800 is no escape");
  EXPECT_EQ(texts[6], std::string(fffd) + fffd);
  EXPECT_TRUE(sent().empty());  // no ParseError
  // A request with one is answered, its id intact.
  rpc_.handle_message(R"({"jsonrpc":"2.0","id":"s\udfff","method":"echo","params":["\ud800"]})");
  ASSERT_TRUE(last().contains("result")) << last().dump();
  EXPECT_EQ(last()["id"], std::string("s") + fffd);
  EXPECT_EQ(last()["result"][0], fffd);
  // Replacement keeps the text's length and leaves everything else as it was.
  EXPECT_EQ(replace_lone_surrogate_escapes(R"(["\ud800x"])"), R"(["\ufffdx"])");
  EXPECT_EQ(replace_lone_surrogate_escapes(R"(["\ud83d\ude00", "\\ud800", "\u00e9"])"),
            std::nullopt);
  EXPECT_TRUE(parse_message(R"({"a":"\ud800)").is_discarded());  // still not JSON
}

// Errors a handler lets through name the member, what was expected and what was found; none of
// nlohmann::json's or the standard library's wording reaches the client (issue 14).
TEST_F(JsonRpcTest, HandlerErrorsAreLocatedAndFreeOfLibraryInternals) {
  rpc_.on_request("hover", [](const Json& p, const Context&) -> Json {
    return p.at("position").at("line").get<int>() + p.at("position").at("character").get<int>();
  });
  rpc_.on_request("change", [](const Json& p, const Context&) -> Json {
    return p.at("contentChanges").at(1).at("text").get<std::string>();
  });
  rpc_.on_request("number", [](const Json& p, const Context&) -> Json {
    return std::stoll(p.at(0).get<std::string>());
  });
  const std::pair<std::string, std::string> cases[] = {
      {R"("hover","params":{"position":{"line":"3","character":1}})",
       "invalid params: params.position.line must be a number, but is a string"},
      {R"("hover","params":{"position":{"line":3}})",
       "invalid params: params.position.character is missing"},
      {R"("hover","params":{"position":[1,2]})",
       "invalid params: params.position must be an object, but is an array"},
      {R"("hover","params":{})", "invalid params: params.position is missing"},
      {R"("change","params":{"contentChanges":[{"text":"a"}]})",
       "invalid params: params.contentChanges has no item 1"},
      {R"("change","params":{"contentChanges":[{}, {"text":null}]})",
       "invalid params: params.contentChanges[1].text must be a string, but is null"},
      {R"("number","params":["abc"])", "a number was expected"},
      {R"("number","params":["99999999999999999999"])", "a number is out of range"},
  };
  int id = 100;
  for (const auto& [call, want] : cases) {
    rpc_.handle_message(R"({"jsonrpc":"2.0","id":)" + std::to_string(++id) + R"(,"method":)" +
                        call + "}");
    ASSERT_TRUE(last().contains("error")) << call;
    EXPECT_EQ(last()["error"]["message"], want) << call;
    const std::string message = last()["error"]["message"];
    EXPECT_EQ(message.find("json.exception"), std::string::npos) << message;
  }
  EXPECT_EQ(describe_exception(std::runtime_error("kaput")), "kaput");
}

TEST_F(JsonRpcTest, DeepNestingIsParseError) {
  rpc_.on_request("x", [](const Json& p, const Context&) { return p; });
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  rpc_.handle_message(R"({"jsonrpc":"2.0","id":1,"method":"x","params":)" + deep + "}");
  EXPECT_EQ(code(last()), -32700);
  // Brackets inside strings do not count.
  rpc_.handle_message(R"({"jsonrpc":"2.0","id":2,"method":"x","params":[")" +
                      std::string(100000, '[') + R"(\\"]})");
  EXPECT_EQ(last()["id"], 2);
  EXPECT_TRUE(last().contains("result"));
}

TEST_F(JsonRpcTest, InvalidRequests) {
  const std::vector<std::pair<std::string, Json>> cases = {
      {R"(42)", nullptr},
      {R"({"id":1,"method":"x"})", 1},                      // no "jsonrpc"
      {R"({"jsonrpc":"1.0","id":"a","method":"x"})", "a"},  // wrong version
      {R"({"jsonrpc":"2.0","id":1,"method":5})", 1},        // method not a string
      {R"({"jsonrpc":"2.0","id":1,"params":{}})", 1},       // no method
      {R"({"jsonrpc":"2.0","id":1.5,"method":"x"})", nullptr},
      {R"({"jsonrpc":"2.0","id":null,"method":"x"})", nullptr},
      {R"({"jsonrpc":"2.0","id":{},"method":"x"})", nullptr},
      {R"({"jsonrpc":"2.0","id":3,"method":"x","params":7})", 3},
  };
  for (const auto& [message, id] : cases) {
    const auto before = sent().size();
    rpc_.handle_message(message);
    ASSERT_EQ(sent().size(), before + 1) << message;
    EXPECT_EQ(code(last()), -32600) << message;
    EXPECT_EQ(last().at("id"), id) << message;
  }
}

TEST_F(JsonRpcTest, BatchIsRejectedWithOneInvalidRequest) {
  rpc_.on_request("x", [](const Json&, const Context&) { return Json(1); });
  rpc_.handle_message(
      R"([{"jsonrpc":"2.0","id":1,"method":"x"},{"jsonrpc":"2.0","id":2,"method":"x"}])");
  rpc_.handle_message("[]");
  const auto out = sent();
  ASSERT_EQ(out.size(), 2u);
  for (const Json& r : out) {
    EXPECT_EQ(code(r), -32600);
    EXPECT_TRUE(r.at("id").is_null());
  }
}

TEST_F(JsonRpcTest, UnknownMethod) {
  rpc_.handle_message(R"({"jsonrpc":"2.0","id":4,"method":"textDocument/nope"})");
  EXPECT_EQ(code(last()), -32601);
  EXPECT_EQ(last().at("id"), 4);
  rpc_.handle_message(R"({"jsonrpc":"2.0","id":5,"method":"$/unknownRequest"})");
  EXPECT_EQ(code(last()), -32601);
}

TEST_F(JsonRpcTest, UnknownNotificationsAreIgnored) {
  rpc_.handle_message(R"({"jsonrpc":"2.0","method":"workspace/unknown","params":{}})");
  rpc_.handle_message(R"({"jsonrpc":"2.0","method":"$/setTrace","params":{"value":"off"}})");
  rpc_.handle_message(R"({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":99}})");
  EXPECT_TRUE(sent().empty());
}

TEST_F(JsonRpcTest, NotificationHandlerRunsAndItsExceptionIsSwallowed) {
  int calls = 0;
  rpc_.on_notification("textDocument/didOpen", [&](const Json& p) {
    ++calls;
    if (p.is_null()) throw std::runtime_error("boom");
  });
  rpc_.handle_message(R"({"jsonrpc":"2.0","method":"textDocument/didOpen","params":{}})");
  rpc_.handle_message(R"({"jsonrpc":"2.0","method":"textDocument/didOpen"})");
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(sent().empty());
}

TEST_F(JsonRpcTest, HandlerExceptions) {
  rpc_.on_request("internal",
                  [](const Json&, const Context&) -> Json { throw std::runtime_error("kaput"); });
  rpc_.on_request("params",
                  [](const Json& p, const Context&) -> Json { return p.at("missing").get<int>(); });
  rpc_.on_request("custom", [](const Json&, const Context&) -> Json {
    throw RpcError(ErrorCode::kContentModified, "stale", Json{{"version", 3}});
  });
  rpc_.handle_message(R"({"jsonrpc":"2.0","id":1,"method":"internal"})");
  EXPECT_EQ(code(last()), -32603);
  EXPECT_EQ(last()["error"]["message"], "kaput");
  rpc_.handle_message(R"({"jsonrpc":"2.0","id":2,"method":"params","params":{}})");
  EXPECT_EQ(code(last()), -32602);
  rpc_.handle_message(R"({"jsonrpc":"2.0","id":3,"method":"custom"})");
  EXPECT_EQ(code(last()), -32801);
  EXPECT_EQ(last()["error"]["data"]["version"], 3);
  EXPECT_EQ(last()["id"], 3);
  EXPECT_EQ(rpc_.in_flight(), 0u);
}

TEST_F(JsonRpcTest, GateRejectsRequestsAndDropsNotifications) {
  bool initialized = false;
  int opened = 0;
  rpc_.set_gate([&](const std::string& method, bool) -> std::optional<RpcError> {
    if (initialized || method == "initialize") return std::nullopt;
    return RpcError(ErrorCode::kServerNotInitialized, "not initialized");
  });
  rpc_.on_request("initialize", [&](const Json&, const Context&) {
    initialized = true;
    return Json::object();
  });
  rpc_.on_request("textDocument/hover", [](const Json&, const Context&) { return Json(); });
  rpc_.on_notification("textDocument/didOpen", [&](const Json&) { ++opened; });
  rpc_.handle_message(R"({"jsonrpc":"2.0","id":1,"method":"textDocument/hover"})");
  EXPECT_EQ(code(last()), -32002);
  rpc_.handle_message(R"({"jsonrpc":"2.0","method":"textDocument/didOpen"})");
  EXPECT_EQ(opened, 0);
  rpc_.handle_message(R"({"jsonrpc":"2.0","id":2,"method":"initialize"})");
  rpc_.handle_message(R"({"jsonrpc":"2.0","id":3,"method":"textDocument/hover"})");
  EXPECT_TRUE(last()["result"].is_null());
  rpc_.handle_message(R"({"jsonrpc":"2.0","method":"textDocument/didOpen"})");
  EXPECT_EQ(opened, 1);
}

TEST_F(JsonRpcTest, AsyncReplyFromWorkerThread) {
  std::vector<std::thread> workers;
  std::promise<void> go;
  std::shared_future<void> started = go.get_future().share();
  rpc_.on_async_request("slow", [&](const Json& p, Context ctx) {
    workers.emplace_back([p, ctx, started] {
      started.wait();
      ctx.reply(p);
    });
  });
  for (int i = 0; i < 20; ++i) {
    rpc_.handle_message(R"({"jsonrpc":"2.0","id":)" + std::to_string(i) +
                        R"(,"method":"slow","params":[)" + std::to_string(i) + "]}");
  }
  EXPECT_EQ(rpc_.in_flight(), 20u);
  go.set_value();
  for (auto& t : workers) t.join();
  ASSERT_TRUE(wait_for(20));
  for (const Json& r : sent()) EXPECT_EQ(r["result"][0], r["id"]);
  EXPECT_EQ(rpc_.in_flight(), 0u);
}

TEST_F(JsonRpcTest, CancellationBeforeReplyAnswersRequestCancelled) {
  std::optional<Context> held;
  rpc_.on_async_request("long", [&](const Json&, Context ctx) { held = std::move(ctx); });
  rpc_.handle_message(R"({"jsonrpc":"2.0","id":"c1","method":"long"})");
  ASSERT_TRUE(held);
  EXPECT_FALSE(held->cancelled());
  rpc_.handle_message(R"({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"c1"}})");
  EXPECT_TRUE(held->cancelled());
  EXPECT_TRUE(sent().empty());  // the handler still owns the reply
  held->reply(Json("late result"));
  EXPECT_EQ(code(last()), -32800);
  EXPECT_EQ(last()["id"], "c1");
  held->reply(Json("again"));  // ignored
  EXPECT_EQ(sent().size(), 1u);
}

TEST_F(JsonRpcTest, CancellationOfIntegerIdSeenByWorker) {
  std::thread worker;
  rpc_.on_async_request("spin", [&](const Json&, Context ctx) {
    worker = std::thread([ctx] {
      while (!ctx.cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ctx.error(RpcError(ErrorCode::kRequestCancelled, "cancelled"));
    });
  });
  rpc_.handle_message(R"({"jsonrpc":"2.0","id":17,"method":"spin"})");
  rpc_.handle_message(R"({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":17}})");
  worker.join();
  ASSERT_TRUE(wait_for(1));
  EXPECT_EQ(code(last()), -32800);
  EXPECT_EQ(last()["id"], 17);
}

TEST_F(JsonRpcTest, DroppedContextAnswersInternalError) {
  rpc_.on_async_request("forgetful", [](const Json&, Context) {});
  rpc_.handle_message(R"({"jsonrpc":"2.0","id":1,"method":"forgetful"})");
  EXPECT_EQ(code(last()), -32603);
  EXPECT_EQ(rpc_.in_flight(), 0u);
}

TEST_F(JsonRpcTest, ServerToClientRequestsMatchResponsesById) {
  std::vector<std::string> got;
  const RequestId a = rpc_.call("workspace/configuration", {{"items", Json::array()}},
                                [&](std::optional<Json> result, std::optional<RpcError> error) {
                                  ASSERT_TRUE(result);
                                  ASSERT_FALSE(error);
                                  got.push_back("a:" + result->dump());
                                });
  const RequestId b = rpc_.call("window/workDoneProgress/create", {{"token", "t"}},
                                [&](std::optional<Json> result, std::optional<RpcError> error) {
                                  ASSERT_FALSE(result);
                                  ASSERT_TRUE(error);
                                  got.push_back("b:" + std::to_string(error->code));
                                });
  const auto out = sent();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]["method"], "workspace/configuration");
  EXPECT_EQ(out[0]["id"], id_to_json(a));
  // Answered out of order; an unknown id is ignored.
  rpc_.handle_message(R"({"jsonrpc":"2.0","id":)" + id_to_string(b) +
                      R"(,"error":{"code":-32601,"message":"no"}})");
  rpc_.handle_message(R"({"jsonrpc":"2.0","id":12345,"result":null})");
  rpc_.handle_message(R"({"jsonrpc":"2.0","id":)" + id_to_string(a) + R"(,"result":[{}]})");
  EXPECT_EQ(got, (std::vector<std::string>{"b:-32601", "a:[{}]"}));
  EXPECT_EQ(sent().size(), 2u);  // responses are never answered
}

TEST_F(JsonRpcTest, FailPendingCalls) {
  std::optional<RpcError> failure;
  rpc_.call("workspace/configuration", Json::object(),
            [&](std::optional<Json>, std::optional<RpcError> error) { failure = error; });
  rpc_.fail_pending_calls("connection closed");
  ASSERT_TRUE(failure);
  EXPECT_STREQ(failure->what(), "connection closed");
}

TEST_F(JsonRpcTest, OversizeFrameAnswersTheRequestIdItCanSee) {
  Frame frame;
  frame.kind = Frame::Kind::kOversize;
  frame.error = "message of 52428800 bytes exceeds the limit of 33554432 bytes";
  frame.body = R"({"jsonrpc":"2.0","id":"big","method":"textDocument/didOpen","params":{"te)";
  rpc_.handle_frame(frame);
  EXPECT_EQ(code(last()), -32600);
  EXPECT_EQ(last()["id"], "big");
  frame.body = R"({"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"te)";
  rpc_.handle_frame(frame);  // a notification: nothing to answer
  EXPECT_EQ(sent().size(), 1u);
}

TEST_F(JsonRpcTest, HugeContentLengthWithAShortBodyIsAnsweredAndServingContinues) {
  rpc_.on_request("echo", [](const Json& p, const Context&) { return p; });
  FrameReader reader;
  const std::string stream =
      "Content-Length: 999999999999999\r\n\r\n" +
      std::string(R"({"jsonrpc":"2.0","id":1,"method":"echo","params":[1]})") +
      framed(R"({"jsonrpc":"2.0","id":2,"method":"echo","params":[2]})");
  for (const Frame& f : reader.feed(stream)) rpc_.handle_frame(f);
  const auto out = sent();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0]["id"], 1);
  EXPECT_EQ(code(out[0]), -32600);
  EXPECT_EQ(out[1]["result"], Json::array({2}));
}

TEST(JsonRpcPeekTest, PeekId) {
  EXPECT_EQ(peek_id(R"({"jsonrpc":"2.0","id":42,"method":"x","params":{"a")"), RequestId(42));
  EXPECT_EQ(peek_id(R"( { "params" : {"id": 1, "s": "}\""}, "id" : "s\"x" )"),
            RequestId(std::string("s\"x")));
  EXPECT_EQ(peek_id(R"({"method":"x","params":{"id":1)"), std::nullopt);
  EXPECT_EQ(peek_id(R"({"id":12)"), std::nullopt);  // the number may continue
  EXPECT_EQ(peek_id("not json"), std::nullopt);
}

TEST_F(JsonRpcTest, FramingAndDispatchTogether) {
  rpc_.on_request("echo", [](const Json& p, const Context&) { return p; });
  FrameReader reader;
  const std::string stream = "Content-Length: nope\r\n\r\n" +
                             framed(R"({"jsonrpc":"2.0","id":1,"method":"echo","params":[1]})") +
                             framed("{not json") +
                             framed(R"({"jsonrpc":"2.0","id":2,"method":"echo","params":[2]})");
  for (const Frame& f : reader.feed(stream)) rpc_.handle_frame(f);
  const auto out = sent();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0]["result"], Json::array({1}));
  EXPECT_EQ(code(out[1]), -32700);
  EXPECT_EQ(out[2]["result"], Json::array({2}));
}

// --- stdio transport -------------------------------------------------------------------------

// Runs a transport over the given input fd, echoing every request through a Dispatcher from
// worker threads that answer only after the input ended, and returns everything written to the
// output pipe.
std::string run_echo_server(int in_fd) {
  int out[2];
  EXPECT_EQ(::pipe(out), 0);
  boost::asio::io_context io;
  StdioTransport::Options options;
  options.in_fd = in_fd;
  options.out_fd = out[1];
  options.read_chunk_bytes = 7;  // many split reads
  StdioTransport transport(io, options);
  Dispatcher rpc([&](std::string body) { transport.send(std::move(body)); });
  std::promise<void> eof;
  std::shared_future<void> input_ended = eof.get_future().share();
  std::vector<std::thread> workers;
  rpc.on_async_request("echo", [&](const Json& p, Context ctx) {
    workers.emplace_back([p, ctx, input_ended] {
      input_ended.wait();
      ctx.reply(p);
    });
  });
  bool closed = false;
  transport.start([&](Frame f) { rpc.handle_frame(f); },
                  [&](const std::string& error) {
                    EXPECT_EQ(error, "");
                    closed = true;
                    eof.set_value();
                    rpc.when_idle([&] { transport.close(); });
                  });
  std::string output;
  std::thread drain([&] {
    char buf[4096];
    ssize_t n;
    while ((n = ::read(out[0], buf, sizeof buf)) > 0) output.append(buf, n);
  });
  io.run();  // returns after close(), once the replies are written
  EXPECT_TRUE(closed);
  for (auto& t : workers) t.join();
  ::close(out[1]);
  drain.join();
  ::close(out[0]);
  return output;
}

const std::string kEchoInput =
    framed(R"({"jsonrpc":"2.0","id":1,"method":"echo","params":["a"]})") +
    "Content-Length: x\r\n\r\n" + framed("{") +
    framed(R"({"jsonrpc":"2.0","id":2,"method":"echo","params":["b"]})");

void expect_echo_output(const std::string& output) {
  FrameReader reader;
  const auto frames = reader.feed(output);
  ASSERT_EQ(frames.size(), 3u) << output;
  // The parse error is answered at once, the echoes once the input has ended.
  EXPECT_EQ(Json::parse(frames[0].body)["error"]["code"], -32700);
  std::map<int, Json> results;
  for (std::size_t i = 1; i < 3; ++i) {
    const Json response = Json::parse(frames[i].body);
    results[response["id"].get<int>()] = response["result"];
  }
  EXPECT_EQ(results[1], Json::array({"a"}));
  EXPECT_EQ(results[2], Json::array({"b"}));
}

TEST(RpcStdioTest, PipeInputUsesAsioAndStopsAtEof) {
  int in[2];
  ASSERT_EQ(::pipe(in), 0);
  std::thread writer([&] {
    ASSERT_EQ(::write(in[1], kEchoInput.data(), kEchoInput.size()),
              static_cast<ssize_t>(kEchoInput.size()));
    ::close(in[1]);
  });
  const std::string output = run_echo_server(in[0]);
  writer.join();
  ::close(in[0]);
  expect_echo_output(output);
}

TEST(RpcStdioTest, RegularFileInputUsesReaderThread) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  const int fd = ::fileno(file);
  ASSERT_EQ(::write(fd, kEchoInput.data(), kEchoInput.size()),
            static_cast<ssize_t>(kEchoInput.size()));
  ASSERT_EQ(::lseek(fd, 0, SEEK_SET), 0);
  const std::string output = run_echo_server(fd);
  std::fclose(file);
  expect_echo_output(output);
}

TEST(RpcStdioTest, CloseStopsReadingAndFlushesWrites) {
  int in[2], out[2];
  ASSERT_EQ(::pipe(in), 0);
  ASSERT_EQ(::pipe(out), 0);
  boost::asio::io_context io;
  StdioTransport::Options options;
  options.in_fd = in[0];
  options.out_fd = out[1];
  StdioTransport transport(io, options);
  int frames = 0;
  transport.start(
      [&](Frame) {
        ++frames;
        transport.send(R"({"jsonrpc":"2.0","id":1,"result":null})");
        transport.close();  // like "exit": nothing after this is delivered
      },
      [](const std::string&) { ADD_FAILURE() << "close handler after close()"; });
  const std::string input = framed("{}") + framed("{}");
  ASSERT_EQ(::write(in[1], input.data(), input.size()), static_cast<ssize_t>(input.size()));
  io.run();  // returns: no more reads, the write was flushed
  EXPECT_EQ(frames, 1);
  char buf[256];
  const ssize_t n = ::read(out[0], buf, sizeof buf);
  EXPECT_EQ(std::string(buf, n > 0 ? n : 0), framed(R"({"jsonrpc":"2.0","id":1,"result":null})"));
  for (int fd : {in[0], in[1], out[0], out[1]}) ::close(fd);
}

}  // namespace
}  // namespace cellscope::rpc

namespace cellscope::rpc {
namespace {

TEST(CancellationTokenCallbacks, RunOnceWhenCancelledOrAtOnceIfAlreadyCancelled) {
  CancellationToken token;
  int calls = 0;
  token.on_cancel([&] { ++calls; });
  token.on_cancel([&] { calls += 10; });
  EXPECT_EQ(calls, 0);
  CancellationToken copy = token;
  copy.cancel();
  EXPECT_TRUE(token.cancelled());
  EXPECT_EQ(calls, 11);
  token.cancel();  // a second cancel runs nothing again
  EXPECT_EQ(calls, 11);
  token.on_cancel([&] { calls += 100; });  // already cancelled: runs at once
  EXPECT_EQ(calls, 111);
}

TEST(CancellationTokenCallbacks, ACancelRequestLetsAParkedAsyncRequestAnswerAtOnce) {
  std::vector<std::string> sent;
  Dispatcher rpc([&](std::string body) { sent.push_back(std::move(body)); });
  std::optional<Context> parked;
  rpc.on_async_request("slow", [&](const Json&, Context ctx) {
    ctx.token().on_cancel([ctx] { ctx.reply(nullptr); });
    parked = ctx;  // never answered by the handler itself
  });
  rpc.handle_message(R"({"jsonrpc":"2.0","id":7,"method":"slow","params":{}})");
  EXPECT_TRUE(sent.empty());
  rpc.handle_message(R"({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":7}})");
  ASSERT_EQ(sent.size(), 1u);
  const Json response = Json::parse(sent[0]);
  EXPECT_EQ(response["id"], 7);
  EXPECT_EQ(response["error"]["code"], -32800);
  parked->reply(Json("late"));  // ignored: the request was answered
  EXPECT_EQ(sent.size(), 1u);
  EXPECT_EQ(rpc.in_flight(), 0u);
}

}  // namespace
}  // namespace cellscope::rpc
