// The LSP / DAP base protocol: a message is a header block followed by a body,
//
//   Content-Length: 52\r\n
//   Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n     (optional)
//   \r\n
//   {"jsonrpc":"2.0","id":1,"method":"initialize",...}
//
// FrameReader is an incremental, allocation-bounded parser of that stream: feed it whatever a read
// returned (a header split in two, ten messages at once) and it yields complete bodies, or errors
// for input it had to throw away. It never buffers more than one message (at most
// FramingOptions::max_message_bytes) plus one header line, and after any error it resynchronises
// on the next "Content-Length:" so that one bad message costs only itself:
//   - malformed header lines (no colon, bad name, non-numeric / negative / overflowing /
//     duplicate / missing Content-Length, a header line or block that is too long): reported,
//     then the bytes up to the next "Content-Length:" are skipped (the search starts inside the
//     bad line itself, so "}Content-Length: 10" left over by a too-short Content-Length recovers);
//   - a message larger than the limit is refused: reported (one kOversize frame, as soon as its
//     first FramingOptions::oversize_prefix_bytes are in, which are kept so that its request id
//     can be recovered), then its bytes are skipped without being stored -- until its declared
//     length has passed or a "Content-Length:" shows up in them, whichever comes first. So a
//     huge Content-Length (up to 10^15) followed by a short body costs only that message, as in
//     clangd, instead of swallowing everything after it;
//   - a Content-Length that is too short delivers a truncated body (invalid JSON for the next
//     layer) and the rest of it resynchronises as above; one that is too long swallows the start
//     of the next message (both become one invalid body) -- no framing can recover that earlier.
// Bare "\n" line ends are accepted as well as "\r\n"; header names are case-insensitive; headers
// other than Content-Length and Content-Type are ignored, as are empty lines between messages.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace cellscope::rpc {

struct FramingOptions {
  std::size_t max_message_bytes = 32u << 20;  // larger bodies are skipped and reported
  std::size_t max_header_line_bytes = 4096;   // one header line, without its line end
  std::size_t max_header_lines = 32;          // header lines in one message
  std::size_t oversize_prefix_bytes = 4096;   // kept from an oversize body (see Frame::body)
};

// One unit of output of a FrameReader: a message body, or a description of discarded input.
struct Frame {
  enum class Kind {
    kMessage,          // body: the complete message body
    kMalformedHeader,  // error: what was wrong; body: empty
    kOversize,         // error: size and limit; body: the first bytes of the skipped body
    kTruncated,        // error: the stream ended inside a message (only from finish())
  };
  Kind kind = Kind::kMessage;
  std::string body;
  std::string error;
  // For kOversize: the declared Content-Length.
  std::size_t declared_length = 0;

  bool ok() const { return kind == Kind::kMessage; }
};

class FrameReader {
 public:
  explicit FrameReader(FramingOptions options = {});

  // Consumes `data` and appends every frame it completes to `out`.
  void feed(std::string_view data, std::vector<Frame>& out);
  std::vector<Frame> feed(std::string_view data);

  // End of stream: a kTruncated frame if a message (header or body) was cut off, else nothing.
  // The reader is reset and could be fed again.
  std::vector<Frame> finish();

  const FramingOptions& options() const { return options_; }

 private:
  enum class State { kHeaders, kBody, kSkip, kResync };
  // Handles one complete header line (without its line end).
  void header_line(std::string_view line, std::vector<Frame>& out);
  // Reports a header error and resynchronises, searching `rest` (the bad line after its first
  // byte; `terminated`: the line had a line end) before any further input.
  void header_error(std::string message, std::string_view rest, bool terminated,
                    std::vector<Frame>& out);
  void reset_headers();
  // Consumes bytes from `data` while resynchronising; returns how many.
  std::size_t resync(std::string_view data);
  // Feeds one byte to the search for "content-length:" (matched_); true when it completes it.
  bool match_header_byte(char byte);
  // Emits the kOversize frame of the message being skipped (once).
  void report_oversize(std::vector<Frame>& out);

  FramingOptions options_;
  State state_ = State::kHeaders;
  std::string line_;  // the header line being accumulated (kHeaders)
  std::size_t header_lines_ = 0;
  bool have_length_ = false;
  std::size_t length_ = 0;
  std::string body_;           // kBody: the body so far; kSkip: the kept prefix
  std::size_t remaining_ = 0;  // kBody / kSkip: bytes still to come
  std::size_t matched_ = 0;    // kResync / kSkip: length of the "content-length:" prefix matched
  bool oversize_reported_ = false;  // kSkip: the kOversize frame was emitted
};

// Frames a body for sending: "Content-Length: N\r\n\r\n" + body.
std::string encode_frame(std::string_view body);

}  // namespace cellscope::rpc
