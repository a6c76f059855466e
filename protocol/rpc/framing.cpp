#include "rpc/framing.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "graphcore/text.h"

namespace cellscope::rpc {
namespace {

constexpr std::string_view kLengthHeader = "content-length:";  // matched case-insensitively
constexpr std::size_t kMaxLengthDigits = 15;                   // beyond that: malformed

using graphcore::text::iequals;
using graphcore::text::lower;
using graphcore::text::trim;

// RFC 9110 token characters (header field names).
bool is_token_char(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return c != '\0' && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

// Printable excerpt of a header line for error messages.
std::string excerpt(std::string_view s) {
  constexpr std::size_t kMax = 40;
  std::string out;
  for (char c : s.substr(0, kMax)) {
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  if (s.size() > kMax) out += "...";
  return out;
}

Frame error_frame(Frame::Kind kind, std::string message) {
  Frame f;
  f.kind = kind;
  f.error = std::move(message);
  return f;
}

}  // namespace

FrameReader::FrameReader(FramingOptions options) : options_(options) {}

std::vector<Frame> FrameReader::feed(std::string_view data) {
  std::vector<Frame> out;
  feed(data, out);
  return out;
}

void FrameReader::feed(std::string_view data, std::vector<Frame>& out) {
  while (!data.empty()) {
    switch (state_) {
      case State::kHeaders: {
        const std::size_t nl = data.find('\n');
        const std::string_view chunk = data.substr(0, nl);
        // The limit excludes the line end: allow one byte for a '\r' that is part of it.
        if (line_.size() + chunk.size() > options_.max_header_line_bytes + 1) {
          // Report, then search what was read of the line; the rest of it is still in `data`.
          const std::size_t take = options_.max_header_line_bytes + 1 - line_.size();
          line_.append(chunk.substr(0, take));
          data.remove_prefix(take);
          std::string line = std::move(line_);
          header_error("header line longer than " + std::to_string(options_.max_header_line_bytes) +
                           " bytes",
                       std::string_view(line).substr(1), false, out);
          break;
        }
        line_.append(chunk);
        if (nl == std::string_view::npos) return;  // wait for the rest of the line
        data.remove_prefix(nl + 1);
        std::string line = std::move(line_);
        line_.clear();
        if (!line.empty() && line.back() == '\r') line.pop_back();
        header_line(line, out);
        break;
      }
      case State::kBody: {
        const std::size_t n = std::min(remaining_, data.size());
        body_.append(data.substr(0, n));
        data.remove_prefix(n);
        remaining_ -= n;
        if (remaining_ == 0) {
          Frame f;
          f.body = std::move(body_);
          out.push_back(std::move(f));
          reset_headers();
        }
        break;
      }
      case State::kSkip: {
        // The skipped bytes are searched for the next header as well: a Content-Length beyond
        // the limit with a shorter body (up to 10^15 bytes declared) must not swallow every
        // later message. Refused, reported, resynchronised, as clangd does.
        const std::size_t n = std::min(remaining_, data.size());
        std::size_t consumed = n;
        bool found = false;
        for (std::size_t i = 0; i < n; ++i) {
          if (match_header_byte(data[i])) {
            consumed = i + 1;
            found = true;
            break;
          }
        }
        if (body_.size() < options_.oversize_prefix_bytes) {
          body_.append(
              data.substr(0, std::min(consumed, options_.oversize_prefix_bytes - body_.size())));
        }
        data.remove_prefix(consumed);
        remaining_ -= consumed;
        if (found) {
          // The kept prefix ends before the header that was found.
          const std::size_t header_at = length_ - remaining_ - kLengthHeader.size();
          if (body_.size() > header_at) body_.resize(header_at);
          report_oversize(out);
          reset_headers();
          line_ = "Content-Length:";
        } else if (remaining_ == 0) {
          report_oversize(out);
          reset_headers();
        } else if (body_.size() >= options_.oversize_prefix_bytes) {
          report_oversize(out);  // at once, not when (if ever) the declared length has passed
        }
        break;
      }
      case State::kResync:
        data.remove_prefix(resync(data));
        break;
    }
  }
}

bool FrameReader::match_header_byte(char byte) {
  const char c = lower(byte);
  if (c == kLengthHeader[matched_]) {
    ++matched_;
  } else {
    // No proper prefix of "content-length:" is also its suffix: restart at this character.
    matched_ = (c == kLengthHeader[0]) ? 1 : 0;
  }
  if (matched_ < kLengthHeader.size()) return false;
  matched_ = 0;
  return true;
}

void FrameReader::report_oversize(std::vector<Frame>& out) {
  if (oversize_reported_) return;
  oversize_reported_ = true;
  Frame f = error_frame(Frame::Kind::kOversize,
                        "message of " + std::to_string(length_) + " bytes exceeds the limit of " +
                            std::to_string(options_.max_message_bytes) + " bytes");
  f.declared_length = length_;
  f.body = body_;
  out.push_back(std::move(f));
}

std::size_t FrameReader::resync(std::string_view data) {
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (match_header_byte(data[i])) {
      reset_headers();
      line_ = "Content-Length:";
      return i + 1;
    }
  }
  return data.size();
}

void FrameReader::reset_headers() {
  state_ = State::kHeaders;
  line_.clear();
  header_lines_ = 0;
  have_length_ = false;
  length_ = 0;
  body_.clear();
  remaining_ = 0;
  matched_ = 0;
  oversize_reported_ = false;
}

void FrameReader::header_error(std::string message, std::string_view rest, bool terminated,
                               std::vector<Frame>& out) {
  out.push_back(error_frame(Frame::Kind::kMalformedHeader, std::move(message)));
  reset_headers();
  state_ = State::kResync;
  // Search the rest of the offending line (it may hold the next message's header), keeping its
  // line end so that a header found there is complete.
  std::string again(rest);
  if (terminated) again += '\n';
  feed(again, out);
}

void FrameReader::header_line(std::string_view line, std::vector<Frame>& out) {
  if (line.empty()) {
    if (header_lines_ == 0) return;  // a stray blank line between messages
    if (!have_length_) {
      header_error("header block without Content-Length", {}, false, out);
      return;
    }
    if (length_ > options_.max_message_bytes) {
      state_ = State::kSkip;
      remaining_ = length_;
      body_.clear();
      matched_ = 0;
      return;
    }
    if (length_ == 0) {  // an empty body; the JSON layer reports it
      out.emplace_back();
      reset_headers();
      return;
    }
    state_ = State::kBody;
    remaining_ = length_;
    body_.clear();
    body_.reserve(length_);
    return;
  }
  const std::string_view rest = line.substr(1);
  if (++header_lines_ > options_.max_header_lines) {
    header_error("more than " + std::to_string(options_.max_header_lines) + " header lines", rest,
                 true, out);
    return;
  }
  const std::size_t colon = line.find(':');
  if (colon == std::string_view::npos) {
    header_error("header line without a colon: \"" + excerpt(line) + "\"", rest, true, out);
    return;
  }
  const std::string_view name = line.substr(0, colon);
  if (name.empty() || !std::all_of(name.begin(), name.end(), is_token_char)) {
    header_error("invalid header name: \"" + excerpt(line) + "\"", rest, true, out);
    return;
  }
  const std::string_view value = trim(line.substr(colon + 1));
  if (!iequals(name, "content-length")) return;  // Content-Type and unknown headers: ignored
  if (have_length_) {
    header_error("duplicate Content-Length header", rest, true, out);
    return;
  }
  if (value.empty() || value.size() > kMaxLengthDigits ||
      !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    header_error("invalid Content-Length: \"" + excerpt(value) + "\"", rest, true, out);
    return;
  }
  std::size_t n = 0;
  for (char c : value) n = n * 10 + static_cast<std::size_t>(c - '0');
  have_length_ = true;
  length_ = n;
}

std::vector<Frame> FrameReader::finish() {
  std::vector<Frame> out;
  const bool inside = state_ == State::kBody || state_ == State::kSkip ||
                      (state_ == State::kHeaders && (header_lines_ > 0 || !line_.empty()));
  if (inside) {
    out.push_back(error_frame(Frame::Kind::kTruncated, "the stream ended inside a message"));
  }
  reset_headers();
  return out;
}

std::string encode_frame(std::string_view body) {
  std::string out = "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  out.append(body);
  return out;
}

}  // namespace cellscope::rpc
