#include "rpc/stdio_transport.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <deque>
#include <iostream>
#include <optional>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace cellscope::rpc {
namespace asio = boost::asio;

namespace {

std::system_error errno_error(const char* what) {
  return std::system_error(errno, std::generic_category(), what);
}

// Pipes and sockets go through epoll; everything else is handled with blocking calls.
bool pollable(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return false;
  return S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
}

// Blocking write of all of `data`; false on error (errno set).
bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        pollfd p{fd, POLLOUT, 0};
        ::poll(&p, 1, -1);
        continue;
      }
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

int isolate_stdio(const StdioIsolation& options) {
  spdlog::sink_ptr sink;
  if (options.log_file.empty()) {
    sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  } else {
    sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(options.log_file, false);
  }
  const auto previous = spdlog::default_logger();
  auto logger =
      std::make_shared<spdlog::logger>(previous ? previous->name() : "cellscope", std::move(sink));
  if (previous) {
    logger->set_level(previous->level());
    logger->flush_on(previous->flush_level());
  }
  spdlog::set_default_logger(std::move(logger));

  ::signal(SIGPIPE, SIG_IGN);
  if (!options.private_stdout) return STDOUT_FILENO;
  std::cout.flush();
  std::fflush(stdout);
  const int fd = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (fd < 0) throw errno_error("cannot duplicate stdout");
  if (::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    const auto error = errno_error("cannot redirect stdout to stderr");
    ::close(fd);
    throw error;
  }
  return fd;
}

struct StdioTransport::Impl : std::enable_shared_from_this<Impl> {
  Impl(asio::io_context& context, Options opts)
      : io(context), options(opts), reader(opts.framing) {}

  // --- state touched on the I/O thread only ---
  asio::io_context& io;
  Options options;
  FrameReader reader;
  FrameHandler on_frame;
  CloseHandler on_close;
  std::optional<asio::posix::stream_descriptor> in;   // async input (pipe / socket)
  std::optional<asio::posix::stream_descriptor> out;  // async output (pipe / socket)
  std::vector<char> buffer;
  bool reading = false;
  bool close_reported = false;
  std::deque<std::string> queue;  // framed messages; front() is being written when `writing`
  bool writing = false;
  bool write_failed = false;

  // --- the blocking reader thread (and the work guard) ---
  std::thread thread;
  int wake_fds[2] = {-1, -1};  // close() writes to [1]; the reader thread polls [0]
  // Keeps io.run() from returning between start() and close() (e.g. while workers still reply
  // after the input ended).
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard;

  // Original file status flags, restored at destruction.
  int in_flags = -1;
  int out_flags = -1;

  void deliver(std::vector<Frame>& frames) {
    for (Frame& f : frames) {
      if (!reading) return;
      on_frame(std::move(f));
    }
  }

  void input_ended(const std::string& error) {
    if (!reading) return;
    auto frames = reader.finish();
    deliver(frames);
    reading = false;
    report_close(error);
  }

  void report_close(const std::string& error) {
    if (close_reported) return;
    close_reported = true;
    if (on_close) on_close(error);
  }

  void read_some() {
    in->async_read_some(
        asio::buffer(buffer),
        [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
          if (!self->reading) return;
          if (n > 0) {
            auto frames = self->reader.feed(std::string_view(self->buffer.data(), n));
            self->deliver(frames);
          }
          if (ec == asio::error::operation_aborted) return;
          if (ec) {
            self->input_ended(ec == asio::error::eof ? std::string() : ec.message());
          } else if (self->reading) {
            self->read_some();
          }
        });
  }

  // The reader thread: blocking reads, framing on this thread, frames posted to the I/O thread.
  void blocking_reader() {
    FrameReader thread_reader(options.framing);
    std::vector<char> chunk(options.read_chunk_bytes);
    std::string error;
    while (true) {
      pollfd fds[2] = {{options.in_fd, POLLIN, 0}, {wake_fds[0], POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        error = std::system_category().message(errno);
        break;
      }
      if (fds[1].revents != 0) return;  // close(): the I/O thread reports nothing more
      const ssize_t n = ::read(options.in_fd, chunk.data(), chunk.size());
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        error = std::system_category().message(errno);
        break;
      }
      if (n == 0) break;
      auto frames = thread_reader.feed(std::string_view(chunk.data(), static_cast<std::size_t>(n)));
      if (!frames.empty()) {
        asio::post(io, [self = shared_from_this(), frames = std::move(frames)]() mutable {
          self->deliver(frames);
        });
      }
    }
    auto frames = thread_reader.finish();
    asio::post(io, [self = shared_from_this(), frames = std::move(frames), error]() mutable {
      self->deliver(frames);
      if (self->reading) {
        self->reading = false;
        self->report_close(error);
      }
    });
  }

  void enqueue(std::string framed) {
    if (write_failed) return;
    if (!out) {
      if (!write_all(options.out_fd, framed))
        write_failed_with(std::system_category().message(errno));
      return;
    }
    queue.push_back(std::move(framed));
    if (!writing) write_next();
  }

  void write_next() {
    writing = true;
    asio::async_write(
        *out, asio::buffer(queue.front()),
        [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
          self->queue.pop_front();
          if (ec) {
            self->write_failed_with(ec.message());
          } else if (!self->queue.empty()) {
            self->write_next();
            return;
          }
          self->writing = false;
        });
  }

  void write_failed_with(const std::string& error) {
    spdlog::error("rpc: writing to the client failed: {}", error);
    write_failed = true;
    queue.clear();
    if (reading) {
      stop_reading();
      report_close(error);
    }
  }

  void stop_reading() {
    reading = false;
    if (in) {
      boost::system::error_code ignored;
      in->cancel(ignored);
    }
    if (wake_fds[1] >= 0) {
      const char c = 0;
      [[maybe_unused]] const ssize_t n = ::write(wake_fds[1], &c, 1);
    }
  }
};

StdioTransport::StdioTransport(asio::io_context& io, Options options)
    : impl_(std::make_shared<Impl>(io, options)) {}

StdioTransport::StdioTransport(asio::io_context& io) : StdioTransport(io, Options()) {}

StdioTransport::~StdioTransport() {
  Impl& d = *impl_;
  if (d.wake_fds[1] >= 0) {
    const char c = 0;
    [[maybe_unused]] const ssize_t n = ::write(d.wake_fds[1], &c, 1);
  }
  if (d.thread.joinable()) d.thread.join();
  d.reading = false;
  d.guard.reset();
  for (int& fd : d.wake_fds) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  // Hand the descriptors back (never close stdin / stdout) with their original flags.
  boost::system::error_code ignored;
  if (d.in) {
    d.in->cancel(ignored);
    d.in->release();
    if (d.in_flags >= 0) ::fcntl(d.options.in_fd, F_SETFL, d.in_flags);
  }
  if (d.out) {
    d.out->cancel(ignored);
    d.out->release();
    if (d.out_flags >= 0) ::fcntl(d.options.out_fd, F_SETFL, d.out_flags);
  }
}

void StdioTransport::start(FrameHandler on_frame, CloseHandler on_close) {
  Impl& d = *impl_;
  d.on_frame = std::move(on_frame);
  d.on_close = std::move(on_close);
  d.reading = true;
  d.guard.emplace(d.io.get_executor());
  if (pollable(d.options.out_fd)) {
    d.out_flags = ::fcntl(d.options.out_fd, F_GETFL);
    d.out.emplace(d.io, d.options.out_fd);
  }
  if (pollable(d.options.in_fd)) {
    d.in_flags = ::fcntl(d.options.in_fd, F_GETFL);
    d.in.emplace(d.io, d.options.in_fd);
    d.buffer.resize(d.options.read_chunk_bytes);
    d.read_some();
    return;
  }
  if (::pipe2(d.wake_fds, O_CLOEXEC) != 0) throw errno_error("cannot create a pipe");
  d.thread = std::thread([impl = impl_] { impl->blocking_reader(); });
}

void StdioTransport::send(std::string body) {
  asio::post(impl_->io, [impl = impl_, framed = encode_frame(body)]() mutable {
    impl->enqueue(std::move(framed));
  });
}

void StdioTransport::close() {
  auto stop = [impl = impl_] {
    impl->stop_reading();
    impl->guard.reset();
  };
  if (impl_->io.get_executor().running_in_this_thread()) {
    stop();  // no frame is delivered after this
  } else {
    asio::post(impl_->io, std::move(stop));
  }
}

}  // namespace cellscope::rpc
