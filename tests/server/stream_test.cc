// server::Stream on real loopback sockets: a read marked as the start of a message skips Asio's
// speculative receive when the last read emptied the socket, and no read loses data, the end of
// the stream, an error or a wake-up for it.
#include "server/stream.h"

#include <boost/beast/http.hpp>
#include <chrono>
#include <optional>
#include <string>

#include "gtest/gtest.h"

namespace tailguard::server {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

// Counts the receive calls of Stream's reads.
int receive_calls = 0;
ssize_t CountingRecvmsg(int fd, msghdr* msg, int flags) {
  ++receive_calls;
  return ::recvmsg(fd, msg, flags);
}

// A Stream on the accepted side of a loopback connection, and the blocking peer that writes to
// it. The stream has EnableDrainedReads() unless a test says otherwise.
class StreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    stream_recvmsg = CountingRecvmsg;
    Connect();
  }
  void TearDown() override { stream_recvmsg = ::recvmsg; }

  // A fresh connection: peer_ and stream_.
  void Connect() {
    peer_ = tcp::socket(ioc_);
    tcp::acceptor acceptor(ioc_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    peer_.connect(acceptor.local_endpoint());
    Stream::socket_type accepted(ioc_.get_executor());
    acceptor.accept(accepted);
    stream_.emplace(std::move(accepted));
    stream_->EnableDrainedReads();
  }

  void PeerWrite(std::string_view bytes) {
    net::write(peer_, net::buffer(bytes.data(), bytes.size()));
  }
  // Lets the reactor take the epoll events now pending while no read waits.
  void TakeEvents() {
    ioc_.poll();
    ioc_.restart();
  }

  // Starts one read into a buffer of `capacity` bytes, marked as the start of a message or not;
  // its result lands in ec_, n_ and done_.
  void StartRead(size_t capacity, bool new_message) {
    buf_.assign(capacity, '\0');
    done_ = false;
    stream_->MarkNewMessage(new_message);
    stream_->async_read_some(net::buffer(buf_), [this](beast::error_code ec, size_t n) {
      ec_ = ec;
      n_ = n;
      done_ = true;
    });
  }
  // Runs the io_context until the read completes. The bound only turns a lost wake-up into a
  // failure instead of a hang; a working read completes in microseconds.
  bool RunUntilDone() { return RunUntil(done_); }
  bool RunUntil(const bool& done) {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done && std::chrono::steady_clock::now() < limit) {
      ioc_.run_one_for(std::chrono::milliseconds(100));
    }
    return done;
  }
  // Runs the operation `start` begins with the handler it is given until it completes, and
  // returns its error: beast::error::timeout if it never completes (the bound of RunUntil).
  template <class Start>
  beast::error_code Await(Start start) {
    beast::error_code ec = beast::error::timeout;
    bool done = false;
    start([&](beast::error_code e, size_t) {
      ec = e;
      done = true;
    });
    RunUntil(done);
    return ec;
  }
  std::string Read(size_t capacity, bool new_message) {
    StartRead(capacity, new_message);
    EXPECT_TRUE(RunUntilDone()) << "the read never completed";
    EXPECT_FALSE(ec_) << ec_.message();
    return buf_.substr(0, n_);
  }
  // The error a read ends with.
  beast::error_code ReadError(bool new_message) {
    StartRead(16, new_message);
    EXPECT_TRUE(RunUntilDone()) << "the read never completed";
    return ec_;
  }

  net::io_context ioc_;
  // Keeps run_one_for() waiting for the read instead of returning at once when nothing is queued.
  net::executor_work_guard<net::io_context::executor_type> work_{ioc_.get_executor()};
  tcp::socket peer_{ioc_};
  std::optional<Stream> stream_;
  std::string buf_;
  beast::error_code ec_;
  size_t n_ = 0;
  bool done_ = false;
};

TEST_F(StreamTest, ReadsWhatIsThere) {
  PeerWrite("hello");
  EXPECT_EQ(Read(64, true), "hello");
  PeerWrite("again");
  EXPECT_EQ(Read(64, false), "again");
}

TEST_F(StreamTest, AMarkedReadAfterADrainedReadWaitsWithoutAskingTheKernel) {
  if (!TAILGUARD_DRAINED_READS) GTEST_SKIP() << "this build has Asio's own reads (server/stream.h)";
  PeerWrite("abc");
  EXPECT_EQ(Read(64, true), "abc");  // the kernel says nothing is left
  const int after_first = receive_calls;
  StartRead(64, true);
  ioc_.poll();
  EXPECT_FALSE(done_);
  // Asio's own read would have tried a receive here, to find nothing.
  EXPECT_EQ(receive_calls, after_first);
  PeerWrite("def");
  ASSERT_TRUE(RunUntilDone());
  EXPECT_FALSE(ec_) << ec_.message();
  EXPECT_EQ(buf_.substr(0, n_), "def");
  EXPECT_EQ(receive_calls, after_first + 1);
}

TEST_F(StreamTest, AnUnmarkedReadLooksFirst) {
  PeerWrite("abc");
  EXPECT_EQ(Read(64, true), "abc");
  const int after_first = receive_calls;
  StartRead(64, false);
  EXPECT_GE(receive_calls, after_first + 1);  // looked, found nothing
  EXPECT_FALSE(done_);
  PeerWrite("def");
  ASSERT_TRUE(RunUntilDone());
  EXPECT_EQ(buf_.substr(0, n_), "def");
}

TEST_F(StreamTest, WithoutTcpInqAMarkedReadLooksFirstAsAsioDoes) {
  // A stream without EnableDrainedReads(): nothing tells a read that it emptied the socket.
  tcp::acceptor acceptor(ioc_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  tcp::socket peer(ioc_);
  peer.connect(acceptor.local_endpoint());
  Stream::socket_type accepted(ioc_.get_executor());
  acceptor.accept(accepted);
  stream_.emplace(std::move(accepted));
  net::write(peer, net::buffer("abc", 3));
  EXPECT_EQ(Read(64, true), "abc");
  const int after_first = receive_calls;
  StartRead(64, true);
  EXPECT_EQ(receive_calls, after_first + 1);  // the speculative receive
  net::write(peer, net::buffer("def", 3));
  ASSERT_TRUE(RunUntilDone());
  EXPECT_EQ(buf_.substr(0, n_), "def");
}

// The peer's FIN queued behind the last bytes is taken by the read of those bytes, and its epoll
// event is gone: the next read must not wait for another one.
TEST_F(StreamTest, TheEndOfTheStreamBehindTheLastBytesEndsTheNextRead) {
  for (bool marked : {true, false}) {
    Connect();
    PeerWrite("abc");
    peer_.shutdown(tcp::socket::shutdown_send);
    TakeEvents();
    EXPECT_EQ(Read(64, true), "abc");
    EXPECT_EQ(ReadError(marked), net::error::eof) << "marked " << marked;
  }
}

// A reset that came with the last bytes is not counted by TCP_INQ; an unmarked read (the rest
// of a message) looks first and sees it. (A marked read follows a write, which fails first.)
TEST_F(StreamTest, AResetBehindTheLastBytesEndsAnUnmarkedRead) {
  PeerWrite("abc");
  peer_.set_option(net::socket_base::linger(true, 0));  // close() sends RST
  peer_.close();
  TakeEvents();
  EXPECT_EQ(Read(64, true), "abc");
  EXPECT_EQ(ReadError(false), net::error::connection_reset);
}

TEST_F(StreamTest, DataThatArrivesBeforeTheNextReadStartsIsRead) {
  PeerWrite("abc");
  EXPECT_EQ(Read(64, true), "abc");
  PeerWrite("xyz");  // its epoll event is pending, and no read is waiting
  EXPECT_EQ(Read(64, true), "xyz");
}

TEST_F(StreamTest, DataWhoseEventWasTakenWithNoReadWaitingIsRead) {
  PeerWrite("abc");
  EXPECT_EQ(Read(64, true), "abc");
  PeerWrite("xyz");
  TakeEvents();
  EXPECT_EQ(Read(64, true), "xyz");
}

TEST_F(StreamTest, AFullBufferLeavesTheRestForTheNextRead) {
  PeerWrite("0123456789");
  EXPECT_EQ(Read(4, true), "0123");
  EXPECT_EQ(Read(3, true), "456");
  EXPECT_EQ(Read(64, false), "789");
}

// A read stops short at TCP urgent data; what follows it must not wait for another event.
TEST_F(StreamTest, UrgentDataDoesNotStallTheReads) {
  PeerWrite("ab");
  peer_.send(net::buffer("c", 1), net::socket_base::message_out_of_band);
  PeerWrite("de");
  TakeEvents();
  std::string got;
  for (int i = 0; i < 4 && got.size() < 4; ++i) got += Read(64, true);
  EXPECT_EQ(got, "abde");  // the urgent byte is out of band
}

TEST_F(StreamTest, EndOfStream) {
  peer_.shutdown(tcp::socket::shutdown_send);
  EXPECT_EQ(ReadError(true), net::error::eof);
}

TEST_F(StreamTest, ResetByThePeer) {
  peer_.set_option(net::socket_base::linger(true, 0));
  peer_.close();
  EXPECT_EQ(ReadError(true), net::error::connection_reset);
}

TEST_F(StreamTest, TheTimeoutStillApplies) {
  for (bool marked : {true, false}) {
    stream_->expires_after(std::chrono::milliseconds(1));
    EXPECT_EQ(ReadError(marked), beast::error::timeout) << "marked " << marked;
    Connect();
  }
}

TEST_F(StreamTest, HttpMessagesSplitAndPipelined) {
  beast::flat_buffer buffer;
  auto read_request = [&] {
    http::request<http::string_body> req;
    stream_->MarkNewMessage();
    const beast::error_code ec =
        Await([&](auto handler) { http::async_read(*stream_, buffer, req, handler); });
    stream_->MarkNewMessage(false);
    EXPECT_FALSE(ec) << ec.message();
    return req;
  };
  // A header in two pieces, then its body later.
  PeerWrite("POST /v1/a HTTP/1.1\r\nHost: x\r\n");
  ioc_.poll();
  PeerWrite("Content-Length: 5\r\n\r\n");
  ioc_.poll();
  PeerWrite("hello");
  http::request<http::string_body> a = read_request();
  EXPECT_EQ(a.target(), "/v1/a");
  EXPECT_EQ(a.body(), "hello");
  // Two requests in one write: the second is parsed from what the first read left over.
  PeerWrite("GET /b HTTP/1.1\r\nHost: x\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(read_request().target(), "/b");
  EXPECT_EQ(read_request().target(), "/c");
}

// An answer whose body ends where the connection does, arriving with its FIN in one segment: as
// the gateway reads an upstream's answer (the header marked, the body not).
TEST_F(StreamTest, AnAnswerThatEndsWithTheConnection) {
  PeerWrite("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhello");
  peer_.shutdown(tcp::socket::shutdown_send);
  TakeEvents();
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  stream_->MarkNewMessage();
  beast::error_code ec =
      Await([&](auto handler) { http::async_read_header(*stream_, buffer, parser, handler); });
  ASSERT_FALSE(ec) << ec.message();
  ec = Await([&](auto handler) { http::async_read(*stream_, buffer, parser, handler); });
  EXPECT_FALSE(ec) << ec.message() << (ec == beast::error::timeout ? ": the body never ended" : "");
  EXPECT_EQ(parser.get().body(), "hello");
}

}  // namespace
}  // namespace tailguard::server
