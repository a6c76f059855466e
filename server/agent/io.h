// Blocking I/O with a deadline for the agent's and the client's one-thread-per-connection code:
// each operation is started asynchronously on the connection's own io_context and run to its end,
// with beast::tcp_stream's timer closing the socket when the deadline passes (Asio's blocking
// calls ignore SO_RCVTIMEO, so a dead peer would otherwise hold a thread for ever).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <chrono>

namespace cellscope::agent {

template <class Start>
void run_timed(boost::asio::io_context& ioc, boost::beast::tcp_stream& lowest,
               std::chrono::steady_clock::duration timeout, Start&& start) {
  boost::beast::error_code result;
  lowest.expires_after(timeout);
  start([&result](boost::beast::error_code ec, auto&&...) { result = ec; });
  ioc.restart();
  ioc.run();
  lowest.expires_never();
  if (result) throw boost::beast::system_error(result);
}

}  // namespace cellscope::agent
