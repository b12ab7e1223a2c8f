// server::Stream on real loopback sockets: its reads skip Asio's speculative recv() after a read
// that emptied the socket, and lose no data or wake-up for it.
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

// Counts the recv() calls of Stream's reads.
int recv_calls = 0;
ssize_t CountingRecv(int fd, void* data, size_t size, int flags) {
  ++recv_calls;
  return ::recv(fd, data, size, flags);
}

// A Stream on the accepted side of a loopback connection, and the blocking peer that writes to it.
class StreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    stream_recv = CountingRecv;
    tcp::acceptor acceptor(ioc_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    peer_.connect(acceptor.local_endpoint());
    Stream::socket_type accepted(ioc_.get_executor());
    acceptor.accept(accepted);
    stream_.emplace(std::move(accepted));
  }
  void TearDown() override { stream_recv = ::recv; }

  void PeerWrite(std::string_view bytes) {
    net::write(peer_, net::buffer(bytes.data(), bytes.size()));
  }

  // Starts one read into `buffer`; its result lands in ec_, n_ and done_.
  void StartRead(net::mutable_buffer buffer) {
    done_ = false;
    stream_->async_read_some(buffer, [this](beast::error_code ec, size_t n) {
      ec_ = ec;
      n_ = n;
      done_ = true;
    });
  }
  // Runs the io_context until the read completes. The bound only turns a lost wake-up into a
  // failure instead of a hang; a working read completes in microseconds.
  bool RunUntilDone() {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done_ && std::chrono::steady_clock::now() < limit) {
      ioc_.run_one_for(std::chrono::milliseconds(100));
    }
    return done_;
  }
  std::string Read(size_t capacity) {
    buf_.assign(capacity, '\0');
    StartRead(net::buffer(buf_));
    EXPECT_TRUE(RunUntilDone()) << "the read never completed";
    EXPECT_FALSE(ec_) << ec_.message();
    return buf_.substr(0, n_);
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
  EXPECT_EQ(Read(64), "hello");
}

TEST_F(StreamTest, AfterADrainedReadWaitsForDataWithoutAskingTheKernel) {
  if (!TAILGUARD_DRAINED_READS) GTEST_SKIP() << "this Boost has Asio's own reads (server/stream.h)";
  PeerWrite("abc");
  EXPECT_EQ(Read(64), "abc");  // less than asked for: the socket is empty now
  const int after_first = recv_calls;
  buf_.assign(64, '\0');
  StartRead(net::buffer(buf_));
  ioc_.poll();
  EXPECT_FALSE(done_);
  // Asio's own read would have tried a recv() here, to find nothing.
  EXPECT_EQ(recv_calls, after_first);
  PeerWrite("def");
  ASSERT_TRUE(RunUntilDone());
  EXPECT_FALSE(ec_) << ec_.message();
  EXPECT_EQ(buf_.substr(0, n_), "def");
  EXPECT_EQ(recv_calls, after_first + 1);
}

TEST_F(StreamTest, DataThatArrivesBeforeTheNextReadStartsIsRead) {
  PeerWrite("abc");
  EXPECT_EQ(Read(64), "abc");
  PeerWrite("xyz");  // its epoll event is pending, and no read is waiting
  EXPECT_EQ(Read(64), "xyz");
}

TEST_F(StreamTest, DataWhoseEventWasSeenWithNoReadWaitingIsRead) {
  PeerWrite("abc");
  EXPECT_EQ(Read(64), "abc");
  PeerWrite("xyz");
  ioc_.poll();  // the reactor takes the edge-triggered event while no read is queued
  ioc_.poll();
  EXPECT_EQ(Read(64), "xyz");
}

TEST_F(StreamTest, AFullBufferLeavesTheRestForTheNextRead) {
  PeerWrite("0123456789");
  EXPECT_EQ(Read(4), "0123");
  EXPECT_EQ(Read(64), "456789");
}

TEST_F(StreamTest, EndOfStream) {
  peer_.shutdown(tcp::socket::shutdown_send);
  buf_.assign(16, '\0');
  StartRead(net::buffer(buf_));
  ASSERT_TRUE(RunUntilDone());
  EXPECT_EQ(ec_, net::error::eof);
  EXPECT_EQ(n_, 0u);
}

TEST_F(StreamTest, ResetByThePeer) {
  peer_.set_option(net::socket_base::linger(true, 0));  // close() sends RST
  peer_.close();
  buf_.assign(16, '\0');
  StartRead(net::buffer(buf_));
  ASSERT_TRUE(RunUntilDone());
  EXPECT_EQ(ec_, net::error::connection_reset);
}

TEST_F(StreamTest, AnEmptyBufferReadsNothingAtOnce) {
  StartRead(net::mutable_buffer());
  ASSERT_TRUE(RunUntilDone());
  EXPECT_FALSE(ec_) << ec_.message();
  EXPECT_EQ(n_, 0u);
}

TEST_F(StreamTest, TheTimeoutStillApplies) {
  stream_->expires_after(std::chrono::milliseconds(1));
  buf_.assign(16, '\0');
  StartRead(net::buffer(buf_));
  ASSERT_TRUE(RunUntilDone());
  EXPECT_EQ(ec_, beast::error::timeout);
}

TEST_F(StreamTest, HttpMessagesSplitAndPipelined) {
  beast::flat_buffer buffer;
  auto read_request = [&] {
    http::request<http::string_body> req;
    beast::error_code ec;
    bool done = false;
    http::async_read(*stream_, buffer, req, [&](beast::error_code e, size_t) {
      ec = e;
      done = true;
    });
    for (int i = 0; i < 100 && !done; ++i) ioc_.run_one_for(std::chrono::milliseconds(100));
    EXPECT_TRUE(done);
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

}  // namespace
}  // namespace tailguard::server
