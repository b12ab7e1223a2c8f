// The gateway's TCP stream: Beast's basic_stream (timeouts per operation), with reads that do not
// ask the kernel twice.
//
// Asio starts every read with a "speculative" recvmsg(), and waits for epoll only when that
// finds nothing. For a proxy this guess is wrong twice a request: the upstream's answer is never
// there right after the request went out, and the client's next request is never there right
// after its answer went out. Each wrong guess is a system call that returns EAGAIN, about as
// costly as a read that finds data: a third of the gateway's system calls.
//
// Asio already has the means to skip the guess: a read that reports "done_and_exhausted" makes
// the reactor wait for the descriptor's next edge-triggered epoll event before the next read on
// it (epoll_reactor::start_op, try_speculative_). Its own reads report that only at end of
// stream. Stream's reads report it when the kernel says the socket is empty, and only then:
//
// - A short read is not enough to know. The peer's FIN, or urgent data, may be queued behind
//   the bytes read, and their epoll event may have been taken already: waiting for another one
//   would wait until the timeout. With TCP_INQ (EnableDrainedReads()), every read comes with
//   the number of bytes still queued, and a FIN counts as one; "empty" is when that is zero.
// - A connection reset that arrived with the last bytes is not counted by TCP_INQ. So only
//   reads marked as the start of a message (MarkNewMessage()) trust "empty": they follow a
//   write to the same peer, which fails first on a reset connection. Every other read (the
//   rest of a header, a body, an event stream) looks first, as Asio's reads do.
//
// The mechanism is an explicit specialisation of Asio's read operation for one buffer type of
// our own, RecvBuffer, so no other read in the program changes. It relies on Asio's reactor
// internals as they are in Boost 1.74, Debian 12's: with another Boost the specialisation is
// left out, and the stream is as correct, only slower (TAILGUARD_DRAINED_READS says which).
#ifndef TAILGUARD_SERVER_STREAM_H_
#define TAILGUARD_SERVER_STREAM_H_

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

// <utility> first: Boost 1.74's awaitable.hpp uses std::exchange without including it.
// clang-format off
#include <utility>
#include <cerrno>
#include <cstring>
#include <type_traits>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/version.hpp>
// clang-format on

// Before adding a version, check boost/asio/detail/reactive_socket_recv_op.hpp and
// detail/impl/epoll_reactor.ipp (start_op and perform_io) against what the comment above says.
#if BOOST_VERSION == 107400 && defined(BOOST_ASIO_HAS_EPOLL) && defined(TCP_INQ)
#define TAILGUARD_DRAINED_READS 1
#else
#define TAILGUARD_DRAINED_READS 0
#endif

namespace tailguard::server {

// What Stream's reads call to receive: ::recvmsg. Replaced only by a test that counts the calls.
inline ssize_t (*stream_recvmsg)(int fd, msghdr* msg, int flags) = ::recvmsg;

// One recvmsg() into `data`, retried on EINTR. Returns its result (-1 with errno set on
// failure); `queued` is what TCP_INQ reports still queued after it (a FIN counts as 1), or -1
// when it reports nothing.
inline ssize_t ReceiveOnce(int fd, void* data, size_t size, int flags, int& queued) {
  iovec iov{data, size};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  queued = -1;
  ssize_t n;
  do {
    n = stream_recvmsg(fd, &msg, flags);
  } while (n < 0 && errno == EINTR);
#ifdef TCP_INQ
  if (n >= 0) {
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_TCP && c->cmsg_type == TCP_CM_INQ) {
        std::memcpy(&queued, CMSG_DATA(c), sizeof(queued));
      }
    }
  }
#endif
  return n;
}

// One buffer to read into, as a type of its own (and a sequence of one buffer, itself): the
// start-of-message reads use it so that the specialised read operation below applies to them
// and to nothing else.
struct RecvBuffer : boost::asio::mutable_buffer {
  using value_type = boost::asio::mutable_buffer;
  using const_iterator = const boost::asio::mutable_buffer*;
  explicit RecvBuffer(const boost::asio::mutable_buffer& b) : boost::asio::mutable_buffer(b) {}
  const_iterator begin() const { return this; }
  const_iterator end() const { return begin() + 1; }
};

}  // namespace tailguard::server

#if TAILGUARD_DRAINED_READS
namespace boost::asio::detail {

// basic_stream hands the socket a buffers_prefix_view of what it was given. Asio calls this
// with the socket in non-blocking mode; an empty buffer never gets here (Asio completes it at
// once).
template <>
inline reactor_op::status
reactive_socket_recv_op_base<beast::buffers_prefix_view<tailguard::server::RecvBuffer>>::do_perform(
    reactor_op* base) {
  auto* o = static_cast<reactive_socket_recv_op_base*>(base);
  o->bytes_transferred_ = 0;
  const auto first = boost::asio::buffer_sequence_begin(o->buffers_);
  const mutable_buffer b =
      first == boost::asio::buffer_sequence_end(o->buffers_) ? mutable_buffer() : *first;
  int queued = -1;
  const ssize_t n =
      tailguard::server::ReceiveOnce(o->socket_, b.data(), b.size(), o->flags_, queued);
  if (n > 0) {
    o->ec_ = boost::system::error_code();
    o->bytes_transferred_ = static_cast<size_t>(n);
    return queued == 0 ? done_and_exhausted : done;
  }
  if (n == 0) {
    o->ec_ = boost::system::error_code();
    if (b.size() > 0) o->ec_ = boost::asio::error::eof;
    return done_and_exhausted;
  }
  if (errno == EAGAIN || errno == EWOULDBLOCK) return not_done;
  o->ec_ = boost::system::error_code(errno, boost::asio::error::get_system_category());
  return done;
}

}  // namespace boost::asio::detail
#endif  // TAILGUARD_DRAINED_READS

namespace tailguard::server {

// Bound to an io_context's executor by type (no type-erased executor in every operation).
using StreamExecutor = boost::asio::io_context::executor_type;

// beast::basic_stream with the reads described at the top. Everything else is basic_stream's.
class Stream : public boost::beast::basic_stream<boost::asio::ip::tcp, StreamExecutor> {
 public:
  using Base = boost::beast::basic_stream<boost::asio::ip::tcp, StreamExecutor>;
  using Base::Base;

  // Has the kernel report, with every read, how many bytes are still queued (TCP_INQ, Linux
  // 4.18 and later): what tells a read that it emptied the socket. Call once the socket is
  // connected. Without it, or where the kernel refuses it, reads are as Asio's own.
  void EnableDrainedReads() {
#ifdef TCP_INQ
    const int on = 1;
    ::setsockopt(socket().native_handle(), SOL_TCP, TCP_INQ, &on, sizeof(on));
#endif
  }

  // Marks the next read as the first of a message that the peer sends only after what was just
  // written to it: the answer to a request, or a client's next request after an answer. That
  // read waits for epoll at once when the last read emptied the socket. The next read takes
  // the mark; when a message turned out to be buffered already and needed no read, clear it
  // with MarkNewMessage(false).
  void MarkNewMessage(bool on = true) { new_message_ = on; }

  template <class MutableBufferSequence, class ReadHandler>
  auto async_read_some(const MutableBufferSequence& buffers, ReadHandler&& handler) {
    if constexpr (std::is_convertible_v<const MutableBufferSequence&,
                                        boost::asio::mutable_buffer>) {
      const boost::asio::mutable_buffer b(buffers);
      if (std::exchange(new_message_, false) || b.size() == 0) {
        return Base::async_read_some(RecvBuffer(b), std::forward<ReadHandler>(handler));
      }
      // Any other read looks first, whatever the last read found: what is there (bytes, the
      // end of the stream or an error) completes it, and only "nothing yet" waits.
      return boost::asio::async_initiate<ReadHandler, void(boost::system::error_code, std::size_t)>(
          [this, b](auto h) {
            int queued = -1;
            const ssize_t n =
                ReceiveOnce(socket().native_handle(), b.data(), b.size(), MSG_DONTWAIT, queued);
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
              Base::async_read_some(RecvBuffer(b), std::move(h));
              return;
            }
            boost::system::error_code ec;
            if (n == 0) ec = boost::asio::error::eof;
            if (n < 0) ec.assign(errno, boost::asio::error::get_system_category());
            boost::asio::post(get_executor(), boost::beast::bind_front_handler(
                                                  std::move(h), ec, n > 0 ? size_t(n) : 0));
          },
          handler);
    } else {
      return Base::async_read_some(buffers, std::forward<ReadHandler>(handler));
    }
  }

 private:
  bool new_message_ = false;
};

}  // namespace tailguard::server

#endif  // TAILGUARD_SERVER_STREAM_H_
