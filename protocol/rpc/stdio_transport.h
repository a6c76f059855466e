// The base protocol over stdin / stdout with Boost.Asio.
//
// StdioTransport reads frames from an input fd (stdin) and writes framed bodies to an output fd
// (stdout), on the thread that runs the io_context (the I/O thread):
//   - pipes and sockets use asio::posix::stream_descriptor (async reads and writes; these set
//     O_NONBLOCK on the descriptor, which is restored when the transport is destroyed);
//   - anything else (a regular file, /dev/null, a terminal) is read by a blocking reader thread
//     that posts frames to the io_context (epoll refuses regular files, and a terminal's shared
//     file status flags are best left blocking), and written with blocking writes on the I/O
//     thread.
// Frames are delivered on the I/O thread, in order; handlers may post work elsewhere. send() is
// thread-safe and keeps messages whole and in order. At EOF (or a read/write error) the
// transport stops reading and calls the close handler once, but keeps the io_context running
// (a work guard from start() to close()) so that requests still being served can be answered:
// the owner calls close() when done, e.g. from Dispatcher::when_idle(). After close(),
// io_context::run() returns once queued writes are flushed (and no other work is pending); do
// not use io_context::stop(), which would lose queued responses (e.g. to "shutdown").
// The io_context must outlive the transport; destroy the transport on the I/O thread or after
// run() returned.
//
// The protocol owns stdout: a stray printf, std::cout or a library writing there corrupts the
// stream. isolate_stdio() sends spdlog's default logger to stderr (or a file) and, unless told
// not to, moves the protocol's stdout to a private close-on-exec descriptor and points fd 1 at
// stderr, so that anything else printed to stdout lands in the log instead; pass the descriptor
// it returns as StdioTransport::Options::out_fd.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "rpc/framing.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace cellscope::rpc {

struct StdioIsolation {
  std::string log_file;        // empty: spdlog's default logger writes to stderr
  bool private_stdout = true;  // see above
};
// Call once at startup, before any thread starts. Also ignores SIGPIPE (a vanished client then
// shows up as a write error instead of killing the process). Returns the descriptor to write
// protocol messages to: 1, or the private duplicate of the original stdout. Throws
// std::system_error if a descriptor cannot be duplicated, spdlog::spdlog_ex if the log file
// cannot be opened.
int isolate_stdio(const StdioIsolation& options = {});

class StdioTransport {
 public:
  struct Options {
    int in_fd = 0;
    int out_fd = 1;
    FramingOptions framing;
    std::size_t read_chunk_bytes = 64 * 1024;
  };
  // Runs on the I/O thread for every frame (a message body or a framing error).
  using FrameHandler = std::function<void(Frame frame)>;
  // Runs once on the I/O thread when the input ends: `error` is empty at EOF, else the read or
  // write error.
  using CloseHandler = std::function<void(const std::string& error)>;

  StdioTransport(boost::asio::io_context& io, Options options);
  explicit StdioTransport(boost::asio::io_context& io);
  // Calls close() and waits for the reader thread, if any.
  ~StdioTransport();
  StdioTransport(const StdioTransport&) = delete;
  StdioTransport& operator=(const StdioTransport&) = delete;

  // Starts reading; call once.
  void start(FrameHandler on_frame, CloseHandler on_close);
  // Frames `body` and queues it for writing. Thread-safe.
  void send(std::string body);
  // Stops reading (the close handler is not called; on the I/O thread, no frame is delivered
  // after this) and releases the io_context; queued writes still complete. Thread-safe.
  void close();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace cellscope::rpc
