// Feature store tests: the memory store, the slow-down wrapper, seeding and the value format, and
// the Redis store against a real redis-server on loopback (started here, killed and restarted).
#include "store/feature_store.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/redis.h"

namespace tailguard::store {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kMissingRedis[] =
    "redis-server is not installed (looked in PATH and /usr/bin); run scripts/install-deps, "
    "which installs Debian's redis-server";

// Bit-exact equality, so NaN payloads and -0.0 count too.
bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
}

// A fresh directory for one test's redis-server.
std::string TestDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string dir = Cat(::testing::TempDir(), "/tg_fstore_", getpid(), "_", info->test_suite_name(),
                        "_", info->name());
  std::filesystem::remove_all(dir);
  return dir;
}

// ---------------------------------------------------------------------------------------------
// Memory store

TEST(MemoryFeatureStore, PutThenGetReturnsTheValues) {
  auto store = NewMemoryFeatureStore();
  const std::vector<float> v = {1.5f, -2.0f, 0.0f};
  ASSERT_TRUE(store->Put("user:1", v).ok());
  absl::StatusOr<std::vector<float>> got = store->Get("user:1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, ElementsAre(1.5f, -2.0f, 0.0f));
  EXPECT_EQ(store->Describe(), "memory");
}

TEST(MemoryFeatureStore, PutReplacesAndEmptyVectorIsAValue) {
  auto store = NewMemoryFeatureStore();
  const std::vector<float> a = {1, 2, 3};
  ASSERT_TRUE(store->Put("k", a).ok());
  ASSERT_TRUE(store->Put("k", std::vector<float>{}).ok());
  absl::StatusOr<std::vector<float>> got = store->Get("k");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->empty());
}

TEST(MemoryFeatureStore, MissingKeyIsNotFoundAndNamesTheKey) {
  auto store = NewMemoryFeatureStore();
  absl::StatusOr<std::vector<float>> got = store->Get("user:404");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(got.status().message(), HasSubstr("user:404"));
}

TEST(MemoryFeatureStore, EmptyKeyIsInvalidArgument) {
  auto store = NewMemoryFeatureStore();
  EXPECT_EQ(store->Get("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Put("", std::vector<float>{1}).code(), absl::StatusCode::kInvalidArgument);
}

TEST(MemoryFeatureStore, ConcurrentPutsAndGetsSeeWholeVectors) {
  auto store = NewMemoryFeatureStore();
  constexpr int kThreads = 8;
  constexpr int kKeys = 16;
  constexpr int kIterations = 2000;
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIterations; ++i) {
        const std::string key = SeedKey((t * 31 + i) % kKeys);
        if (i % 4 == 0) {
          // Every value written is a vector of 8 equal floats, so a torn read would show.
          const std::vector<float> v(8, static_cast<float>(t * kIterations + i));
          if (!store->Put(key, v).ok()) bad.fetch_add(1);
        } else {
          absl::StatusOr<std::vector<float>> got = store->Get(key);
          if (got.ok()) {
            if (got->size() != 8 || std::count(got->begin(), got->end(), (*got)[0]) != 8) {
              bad.fetch_add(1);
            }
          } else if (got.status().code() != absl::StatusCode::kNotFound) {
            bad.fetch_add(1);
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

// ---------------------------------------------------------------------------------------------
// Slow-down wrapper

// Records the delays a SlowableFeatureStore asks for, without waiting.
struct RecordingSleep {
  std::mutex mu;
  std::vector<microseconds> calls;
  SlowableFeatureStore::SleepFn Fn() {
    return [this](microseconds d) {
      std::lock_guard lock(mu);
      calls.push_back(d);
    };
  }
};

TEST(SlowableFeatureStore, DelaysGetsOnlyOnceSet) {
  RecordingSleep sleep;
  SlowableFeatureStore store(NewMemoryFeatureStore(), sleep.Fn());
  ASSERT_TRUE(store.Put("user:1", std::vector<float>{3.0f}).ok());
  ASSERT_TRUE(store.Get("user:1").ok());
  EXPECT_TRUE(sleep.calls.empty()) << "no delay until set";

  store.set_delay(microseconds(25000));
  EXPECT_EQ(store.delay(), microseconds(25000));
  absl::StatusOr<std::vector<float>> got = store.Get("user:1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, ElementsAre(3.0f));
  ASSERT_TRUE(store.Put("user:2", std::vector<float>{4.0f}).ok());                // not delayed
  EXPECT_EQ(store.Get("user:404").status().code(), absl::StatusCode::kNotFound);  // delayed
  EXPECT_THAT(sleep.calls, ElementsAre(microseconds(25000), microseconds(25000)));

  store.set_delay(microseconds(0));
  ASSERT_TRUE(store.Get("user:1").ok());
  EXPECT_EQ(sleep.calls.size(), 2u);
  store.set_delay(microseconds(-5));
  EXPECT_EQ(store.delay(), microseconds(0));
}

TEST(SlowableFeatureStore, DelayIsSettableFromAnotherThreadWhileGetsRun) {
  RecordingSleep sleep;
  SlowableFeatureStore store(NewMemoryFeatureStore(), sleep.Fn());
  ASSERT_TRUE(store.Put("k", std::vector<float>{1}).ok());
  std::atomic<bool> stop{false};
  std::atomic<int> gets{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t) {
    workers.emplace_back([&] {
      while (!stop.load()) {
        if (store.Get("k").ok()) gets.fetch_add(1);
      }
    });
  }
  while (gets.load() < 100) std::this_thread::yield();  // running, undelayed
  for (int d = 1; d <= 100; ++d) store.set_delay(microseconds(d * 1000));
  // Every Get that starts from now on sees the last delay; at most 4 were already running.
  const int after_last_set = gets.load() + 1000;
  while (gets.load() < after_last_set) std::this_thread::yield();
  stop.store(true);
  for (auto& w : workers) w.join();
  std::lock_guard lock(sleep.mu);
  ASSERT_GE(sleep.calls.size(), 1000u - 4u);
  for (microseconds d : sleep.calls) {
    EXPECT_TRUE(d.count() % 1000 == 0 && d >= milliseconds(1) && d <= milliseconds(100))
        << d.count();
  }
  EXPECT_GE(std::count(sleep.calls.begin(), sleep.calls.end(), milliseconds(100)), 1000 - 4);
}

TEST(SlowableFeatureStore, DefaultSleepReallyWaits) {
  SlowableFeatureStore store(NewMemoryFeatureStore());
  ASSERT_TRUE(store.Put("k", std::vector<float>{1}).ok());
  store.set_delay(milliseconds(5));
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(store.Get("k").ok());
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(5));
}

TEST(SlowableFeatureStore, DescribeShowsTheInjectedDelay) {
  SlowableFeatureStore store(NewMemoryFeatureStore(), [](microseconds) {});
  EXPECT_EQ(store.Describe(), "memory");
  store.set_delay(milliseconds(20));
  EXPECT_EQ(store.Describe(), "memory (+20ms injected delay)");
  store.set_delay(microseconds(1500));
  EXPECT_EQ(store.Describe(), "memory (+1500us injected delay)");
}

// ---------------------------------------------------------------------------------------------
// Seeding and the value format

TEST(SeedFeatures, FillsCountKeysWithDimValues) {
  auto store = NewMemoryFeatureStore();
  ASSERT_TRUE(SeedFeatures(*store, 50, 12, 7).ok());
  for (size_t i = 0; i < 50; ++i) {
    absl::StatusOr<std::vector<float>> got = store->Get(Cat("user:", i));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(SameBits(*got, SeededFeatureVector(7, i, 12))) << i;
    for (float v : *got) {
      EXPECT_GE(v, -1.0f);
      EXPECT_LT(v, 1.0f);
    }
  }
  EXPECT_EQ(store->Get("user:50").status().code(), absl::StatusCode::kNotFound);
}

TEST(SeedFeatures, SameSeedSameValuesOtherSeedOtherValues) {
  auto a = NewMemoryFeatureStore();
  auto b = NewMemoryFeatureStore();
  ASSERT_TRUE(SeedFeatures(*a, 10, 8, 42).ok());
  ASSERT_TRUE(SeedFeatures(*b, 10, 8, 42).ok());
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_TRUE(SameBits(*a->Get(SeedKey(i)), *b->Get(SeedKey(i))));
  }
  EXPECT_FALSE(SameBits(SeededFeatureVector(42, 3, 8), SeededFeatureVector(43, 3, 8)));
  EXPECT_FALSE(SameBits(SeededFeatureVector(42, 3, 8), SeededFeatureVector(42, 4, 8)));
  // Pinned, so the demo's data cannot change silently between builds or platforms.
  const std::vector<float> pinned = SeededFeatureVector(1, 0, 2);
  EXPECT_TRUE(SameBits(SeededFeatureVector(1, 0, 2), pinned));
  EXPECT_NE(pinned[0], pinned[1]);
}

TEST(SeedFeatures, ZeroDimIsInvalidArgument) {
  auto store = NewMemoryFeatureStore();
  EXPECT_EQ(SeedFeatures(*store, 3, 0, 1).code(), absl::StatusCode::kInvalidArgument);
}

TEST(FeatureEncoding, IsLittleEndianFloat32) {
  const std::vector<float> v = {1.0f, -2.0f};
  EXPECT_EQ(EncodeFeatures(v), std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8));
  absl::StatusOr<std::vector<float>> back = DecodeFeatures(EncodeFeatures(v), "test");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_THAT(*back, ElementsAre(1.0f, -2.0f));
  EXPECT_TRUE(DecodeFeatures("", "test")->empty());
}

TEST(FeatureEncoding, TruncatedValueIsDataLoss) {
  absl::StatusOr<std::vector<float>> got = DecodeFeatures("abcde", "redis x key k");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(got.status().message(), HasSubstr("redis x key k: value is 5 bytes"));
}

// ---------------------------------------------------------------------------------------------
// redis-server discovery and the child server

TEST(RedisServerBinary, IsInstalled) {
  std::optional<std::string> binary = FindRedisServer();
  ASSERT_TRUE(binary.has_value()) << kMissingRedis;
  EXPECT_THAT(*binary, HasSubstr("redis-server"));
}

TEST(RedisServerProcess, MissingBinaryIsNotFoundWithHint) {
  auto server = RedisServerProcess::Start("/nonexistent/redis-server", TestDir());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(server.status().message(), HasSubstr("scripts/install-deps"));
}

TEST(RedisServerProcess, StartsOnAFreeLoopbackPortAndStops) {
  std::optional<std::string> binary = FindRedisServer();
  ASSERT_TRUE(binary.has_value()) << kMissingRedis;
  const std::string dir = TestDir();
  auto a = RedisServerProcess::Start(*binary, dir);
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = RedisServerProcess::Start(*binary, dir);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_NE((*a)->port(), (*b)->port());
  const uint16_t port = (*a)->port();
  auto conn = RedisConnection::Connect("127.0.0.1", port, milliseconds(500));
  ASSERT_TRUE(conn.ok()) << conn.status();
  absl::StatusOr<RedisReply> pong = (*conn)->Command({"PING"});
  ASSERT_TRUE(pong.ok()) << pong.status();
  EXPECT_EQ(pong->str, "PONG");
  (*a)->Stop();
  EXPECT_FALSE((*a)->running());
  EXPECT_EQ(RedisConnection::Connect("127.0.0.1", port, milliseconds(500)).status().code(),
            absl::StatusCode::kUnavailable);
  b->reset();
  std::filesystem::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// Redis store against a real server

class RedisFeatureStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::optional<std::string> binary = FindRedisServer();
    ASSERT_TRUE(binary.has_value()) << kMissingRedis;
    binary_ = *binary;
    dir_ = TestDir();
    absl::StatusOr<std::unique_ptr<RedisServerProcess>> server =
        RedisServerProcess::Start(binary_, dir_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  RedisOptions Options() const {
    RedisOptions options;
    options.port = server_->port();
    // Generous, so a loaded test machine does not turn a slow reply into a failure; the stall
    // test sets its own.
    options.timeout = milliseconds(2000);
    return options;
  }
  std::unique_ptr<FeatureStore> Connect(const RedisOptions& options) {
    absl::StatusOr<std::unique_ptr<FeatureStore>> store = ConnectRedisFeatureStore(options);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }
  std::string Address() const { return Cat("127.0.0.1:", server_->port()); }

  std::string binary_;
  std::string dir_;
  std::unique_ptr<RedisServerProcess> server_;
};

TEST_F(RedisFeatureStoreTest, PutGetRoundTrip) {
  auto store = Connect(Options());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Describe(), Cat("redis ", Address()));
  const std::vector<float> v = {0.25f, -1.0f, 3.5e9f, 1e-30f};
  ASSERT_TRUE(store->Put("user:7", v).ok());
  absl::StatusOr<std::vector<float>> got = store->Get("user:7");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(SameBits(*got, v));
}

TEST_F(RedisFeatureStoreTest, BinaryValuesWithZeroAndNewlineBytes) {
  auto store = Connect(Options());
  ASSERT_NE(store, nullptr);
  const std::vector<float> v = {
      0.0f,
      -0.0f,
      std::bit_cast<float>(0x0d0a000dU),  // "\r\n" and a zero byte inside one value
      std::bit_cast<float>(0x7fc00001U),  // a NaN with a payload
      std::bit_cast<float>(0x00000001U),  // the smallest denormal
  };
  ASSERT_TRUE(store->Put("bin", v).ok());
  absl::StatusOr<std::vector<float>> got = store->Get("bin");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(SameBits(*got, v));
  ASSERT_TRUE(store->Put("empty", std::vector<float>{}).ok());
  EXPECT_TRUE(store->Get("empty")->empty());
}

TEST_F(RedisFeatureStoreTest, StoresLittleEndianBytesUnderThePrefixedKey) {
  RedisOptions options = Options();
  options.key_prefix = "demo:";
  auto store = Connect(options);
  ASSERT_NE(store, nullptr);
  const std::vector<float> v = {1.0f, -2.0f};
  ASSERT_TRUE(store->Put("user:1", v).ok());
  auto conn = RedisConnection::Connect("127.0.0.1", server_->port(), milliseconds(500));
  ASSERT_TRUE(conn.ok()) << conn.status();
  absl::StatusOr<RedisReply> raw = (*conn)->Command({"GET", "demo:user:1"});
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_EQ(raw->str, std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8));

  // A value that is not a feature vector is DataLoss, naming the Redis key.
  ASSERT_TRUE((*conn)->Command({"SET", "demo:odd", "abc"}).ok());
  absl::StatusOr<std::vector<float>> odd = store->Get("odd");
  EXPECT_EQ(odd.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(odd.status().message(), HasSubstr("demo:odd"));
}

TEST_F(RedisFeatureStoreTest, MissingKeyIsNotFound) {
  auto store = Connect(Options());
  ASSERT_NE(store, nullptr);
  absl::StatusOr<std::vector<float>> got = store->Get("user:404");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(got.status().message(), HasSubstr("user:404"));
  EXPECT_THAT(got.status().message(), HasSubstr(Address()));
}

TEST_F(RedisFeatureStoreTest, BadOptionsAreInvalidArgument) {
  RedisOptions options = Options();
  options.max_connections = 0;
  EXPECT_EQ(ConnectRedisFeatureStore(options).status().code(), absl::StatusCode::kInvalidArgument);
  options = Options();
  options.timeout = milliseconds(0);
  EXPECT_EQ(ConnectRedisFeatureStore(options).status().code(), absl::StatusCode::kInvalidArgument);
  options = Options();
  options.host = "";
  EXPECT_EQ(ConnectRedisFeatureStore(options).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(RedisFeatureStoreTest, ConnectWithoutServerIsUnavailableWithAddress) {
  const RedisOptions options = Options();
  server_->Kill();
  absl::StatusOr<std::unique_ptr<FeatureStore>> store = ConnectRedisFeatureStore(options);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(store.status().message(), HasSubstr(Address()));
}

TEST_F(RedisFeatureStoreTest, SeedFeaturesThenConcurrentGetsFrom8Threads) {
  RedisOptions options = Options();
  options.max_connections = 4;  // fewer than the threads: callers wait for a free connection
  auto store = Connect(options);
  ASSERT_NE(store, nullptr);
  constexpr size_t kKeys = 64;
  constexpr size_t kDim = 32;
  ASSERT_TRUE(SeedFeatures(*store, kKeys, kDim, 99).ok());
  std::atomic<int> ok{0};
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < 300; ++i) {
        const size_t index = (t * 7 + i) % kKeys;
        absl::StatusOr<std::vector<float>> got = store->Get(SeedKey(index));
        if (got.ok() && SameBits(*got, SeededFeatureVector(99, index, kDim))) {
          ok.fetch_add(1);
        } else {
          bad.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 8 * 300);
  EXPECT_EQ(bad.load(), 0);
}

TEST_F(RedisFeatureStoreTest, ServerKilledMidwayGivesUnavailableNotACrashOrHang) {
  auto store = Connect(Options());
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(SeedFeatures(*store, 16, 8, 5).ok());
  std::atomic<int> successes{0};
  std::atomic<bool> killed{false};
  std::mutex mu;
  std::vector<absl::Status> errors;  // guarded by mu
  std::vector<std::thread> threads;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      int errors_after_kill = 0;
      for (int i = 0; errors_after_kill < 5; ++i) {
        if (std::chrono::steady_clock::now() > deadline) return;
        const bool after_kill = killed.load();
        absl::StatusOr<std::vector<float>> got = store->Get(SeedKey((t + i) % 16));
        if (got.ok()) {
          successes.fetch_add(1);
        } else {
          std::lock_guard lock(mu);
          errors.push_back(got.status());
          if (after_kill) ++errors_after_kill;
        }
      }
    });
  }
  while (successes.load() < 200 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  server_->Kill();
  killed.store(true);
  for (auto& th : threads) th.join();
  EXPECT_LT(std::chrono::steady_clock::now(), deadline) << "a Get hung after the server died";
  std::lock_guard lock(mu);
  ASSERT_GE(errors.size(), 8u * 5u);
  for (const absl::Status& s : errors) {
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
    EXPECT_THAT(s.message(), HasSubstr(Address()));
  }
  // Still failing cleanly (connection refused) once everything is down.
  absl::Status put = store->Put("k", std::vector<float>{1});
  EXPECT_EQ(put.code(), absl::StatusCode::kUnavailable) << put;
}

TEST_F(RedisFeatureStoreTest, RecoversAfterServerRestartOnTheSamePort) {
  auto store = Connect(Options());
  ASSERT_NE(store, nullptr);
  const std::vector<float> v = {1, 2, 3};
  ASSERT_TRUE(store->Put("user:1", v).ok());
  const uint16_t port = server_->port();
  server_->Kill();
  EXPECT_EQ(store->Get("user:1").status().code(), absl::StatusCode::kUnavailable);

  absl::StatusOr<std::unique_ptr<RedisServerProcess>> restarted =
      RedisServerProcess::Start(binary_, dir_, port);
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  server_ = *std::move(restarted);
  // No persistence: the new server is empty, and the very first call already reaches it.
  EXPECT_EQ(store->Get("user:1").status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(store->Put("user:1", v).ok());
  absl::StatusOr<std::vector<float>> got = store->Get("user:1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(SameBits(*got, v));
}

TEST_F(RedisFeatureStoreTest, IdleConnectionsClosedByRestartAreReplacedTransparently) {
  RedisOptions options = Options();
  auto store = Connect(options);
  ASSERT_NE(store, nullptr);
  // Fill the pool with several idle connections.
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] { (void)store->Put("warm", std::vector<float>{1}); });
  }
  for (auto& th : threads) th.join();
  const uint16_t port = server_->port();
  server_->Stop();
  absl::StatusOr<std::unique_ptr<RedisServerProcess>> restarted =
      RedisServerProcess::Start(binary_, dir_, port);
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  server_ = *std::move(restarted);
  for (int i = 0; i < 10; ++i) {
    absl::Status put = store->Put(SeedKey(i), std::vector<float>{static_cast<float>(i)});
    EXPECT_TRUE(put.ok()) << "call " << i << ": " << put;
  }
}

TEST_F(RedisFeatureStoreTest, StalledServerGivesDeadlineExceededThenRecovers) {
  RedisOptions options = Options();
  options.timeout = milliseconds(100);
  auto store = Connect(options);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Put("user:1", std::vector<float>{1}).ok());
  server_->Signal(SIGSTOP);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<float>> got = store->Get("user:1");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  server_->Signal(SIGCONT);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDeadlineExceeded) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr(Address()));
  EXPECT_GE(elapsed, milliseconds(100));
  EXPECT_LT(elapsed, milliseconds(2000));
  absl::StatusOr<std::vector<float>> again = store->Get("user:1");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_THAT(*again, ElementsAre(1.0f));
}

TEST_F(RedisFeatureStoreTest, SlowableWrapsRedis) {
  auto redis = Connect(Options());
  ASSERT_NE(redis, nullptr);
  RecordingSleep sleep;
  SlowableFeatureStore store(std::move(redis), sleep.Fn());
  ASSERT_TRUE(store.Put("user:1", std::vector<float>{2}).ok());
  store.set_delay(milliseconds(50));
  EXPECT_EQ(store.Describe(), Cat("redis ", Address(), " (+50ms injected delay)"));
  ASSERT_TRUE(store.Get("user:1").ok());
  EXPECT_THAT(sleep.calls, ElementsAre(microseconds(50000)));
}

}  // namespace
}  // namespace tailguard::store
