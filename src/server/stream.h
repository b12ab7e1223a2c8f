// The gateway's TCP stream: Beast's basic_stream (timeouts per operation), with reads that do not
// ask the kernel twice.
//
// Asio starts every read with a "speculative" recvmsg(), and only waits for epoll when that
// finds nothing. For a proxy this guess is wrong twice a request: the upstream's answer is never
// there right after the request went out, and the client's next request is never there right
// after its answer went out. Each wrong guess is a system call that returns EAGAIN, about as
// costly as a read that finds data: a third of the gateway's system calls.
//
// Asio already has the means to skip the guess: a read that reports "done_and_exhausted" makes
// the reactor wait for the descriptor's next edge-triggered epoll event before the next read on
// it (epoll_reactor::start_op, try_speculative_). Its own reads report that only at end of
// stream. The reads of this Stream report it whenever recv() returns less than the buffer could
// hold, which means the socket's receive queue was emptied: any byte that arrives later raises
// a new epoll event, so nothing is missed, and a read that finds the queue non-empty after all
// costs no more than before. They also use recv() rather than recvmsg(), which spares the kernel
// copying in a message header and an iovec. (A read also stops short at TCP urgent data, which
// HTTP does not use: such a peer's own connection then waits for its next bytes or its timeout.)
//
// The mechanism is an explicit specialisation of Asio's read operation for one buffer type of
// our own, RecvBuffer, so no other read in the program changes. It relies on Asio's reactor
// internals as they are in Boost 1.74, Debian 12's: with another Boost the specialisation is
// left out, and the stream is as correct, only slower (TAILGUARD_DRAINED_READS says which).
#ifndef TAILGUARD_SERVER_STREAM_H_
#define TAILGUARD_SERVER_STREAM_H_

#include <sys/socket.h>

// <utility> first: Boost 1.74's awaitable.hpp uses std::exchange without including it.
// clang-format off
#include <utility>
#include <cerrno>
#include <type_traits>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/version.hpp>
// clang-format on

// Before adding a version, check boost/asio/detail/reactive_socket_recv_op.hpp and
// detail/impl/epoll_reactor.ipp (start_op and perform_io) against what the comment above says.
#if BOOST_VERSION == 107400 && defined(BOOST_ASIO_HAS_EPOLL)
#define TAILGUARD_DRAINED_READS 1
#else
#define TAILGUARD_DRAINED_READS 0
#endif

namespace tailguard::server {

// One buffer to read into, as a type of its own (and a sequence of one buffer, itself): Stream's
// reads use it so that the specialised read operation below applies to them and to nothing else.
struct RecvBuffer : boost::asio::mutable_buffer {
  using value_type = boost::asio::mutable_buffer;
  using const_iterator = const boost::asio::mutable_buffer*;
  explicit RecvBuffer(const boost::asio::mutable_buffer& b) : boost::asio::mutable_buffer(b) {}
  const_iterator begin() const { return this; }
  const_iterator end() const { return begin() + 1; }
};

// What Stream's reads call to receive: ::recv. Replaced only by a test that counts the calls.
inline ssize_t (*stream_recv)(int fd, void* data, size_t size, int flags) = ::recv;

}  // namespace tailguard::server

#if TAILGUARD_DRAINED_READS
namespace boost::asio::detail {

// basic_stream hands the socket a buffers_prefix_view of what it was given.
template <>
inline reactor_op::status
reactive_socket_recv_op_base<beast::buffers_prefix_view<tailguard::server::RecvBuffer>>::do_perform(
    reactor_op* base) {
  auto* o = static_cast<reactive_socket_recv_op_base*>(base);
  o->bytes_transferred_ = 0;
  const auto first = boost::asio::buffer_sequence_begin(o->buffers_);
  const auto last = boost::asio::buffer_sequence_end(o->buffers_);
  const mutable_buffer b = first == last ? mutable_buffer() : mutable_buffer(*first);
  if (b.size() == 0) {
    o->ec_ = boost::system::error_code();
    return done;
  }
  for (;;) {
    const ssize_t n = tailguard::server::stream_recv(o->socket_, b.data(), b.size(), o->flags_);
    if (n > 0) {
      o->ec_ = boost::system::error_code();
      o->bytes_transferred_ = static_cast<size_t>(n);
      // Less than asked for: the receive queue is empty now.
      return static_cast<size_t>(n) < b.size() ? done_and_exhausted : done;
    }
    if (n == 0) {
      o->ec_ = boost::asio::error::eof;
      return done_and_exhausted;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return not_done;
    o->ec_ = boost::system::error_code(errno, boost::asio::error::get_system_category());
    return done;
  }
}

}  // namespace boost::asio::detail
#endif  // TAILGUARD_DRAINED_READS

namespace tailguard::server {

// Bound to an io_context's executor by type (no type-erased executor in every operation).
using StreamExecutor = boost::asio::io_context::executor_type;

// beast::basic_stream whose reads into one buffer (which Beast's HTTP reads into a flat_buffer
// always are) go through RecvBuffer. Everything else is basic_stream's.
class Stream : public boost::beast::basic_stream<boost::asio::ip::tcp, StreamExecutor> {
 public:
  using Base = boost::beast::basic_stream<boost::asio::ip::tcp, StreamExecutor>;
  using Base::Base;

  template <class MutableBufferSequence, class ReadHandler>
  auto async_read_some(const MutableBufferSequence& buffers, ReadHandler&& handler) {
    if constexpr (std::is_convertible_v<const MutableBufferSequence&,
                                        boost::asio::mutable_buffer>) {
      return Base::async_read_some(RecvBuffer(buffers), std::forward<ReadHandler>(handler));
    } else {
      return Base::async_read_some(buffers, std::forward<ReadHandler>(handler));
    }
  }
};

}  // namespace tailguard::server

#endif  // TAILGUARD_SERVER_STREAM_H_
