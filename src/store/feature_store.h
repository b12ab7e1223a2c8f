// The feature store client: where a tabular model (the demo's risk-control model) fetches the
// feature vector of each request. This is the "dependency" quadrant of latency: a Redis fail-over
// or a slow feature fetch shows up here first. Two backends (in-process memory and Redis through
// hiredis) and a wrapper that injects a delay, the demo's "feature store slow-down".
#ifndef TAILGUARD_STORE_FEATURE_STORE_H_
#define TAILGUARD_STORE_FEATURE_STORE_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tailguard::store {

// A key-value store of feature vectors: key (an entity id such as "user:42") -> float32 vector.
//
// Thread-safe: every implementation may be called from several model worker threads at once.
//
// Errors common to all implementations:
//   InvalidArgument   `key` is empty.
//   NotFound          Get() of a key that holds no vector; the message names the key.
// Remote implementations add Unavailable (cannot connect, connection lost) and DeadlineExceeded
// (no answer in time), with the server's address in the message, and DataLoss for a stored value
// that is not a feature vector.
class FeatureStore {
 public:
  virtual ~FeatureStore() = default;

  // The feature vector stored under `key`.
  virtual absl::StatusOr<std::vector<float>> Get(std::string_view key) = 0;

  // Stores `values` under `key`, replacing what was there. An empty vector is a valid value.
  virtual absl::Status Put(std::string_view key, std::span<const float> values) = 0;

  // One line naming the backend for logs and the dashboard: "memory", "redis 127.0.0.1:6379".
  virtual std::string Describe() const = 0;
};

// A store in process memory (a hash map under a reader-writer lock). Never fails except for the
// common errors above. Get() copies the vector out.
std::unique_ptr<FeatureStore> NewMemoryFeatureStore();

// ---------------------------------------------------------------------------------------------
// Redis

// Where and how to reach Redis.
struct RedisOptions {
  // Host name or IP address of the server. Default 127.0.0.1 (loopback).
  std::string host = "127.0.0.1";
  // TCP port. Default 6379.
  uint16_t port = 6379;
  // Bound on each step of a call: connecting, one command's round trip, and waiting for a free
  // pooled connection. A step over it fails the call with DeadlineExceeded. Must be > 0.
  // Default 100 ms.
  std::chrono::milliseconds timeout{100};
  // Most connections open at once; callers beyond it wait (up to `timeout`) for one to come
  // back. Size it to the number of worker threads that fetch features. Must be >= 1. Default 8.
  size_t max_connections = 8;
  // Prepended to every key: Get("user:42") reads Redis key "tg:features:user:42". May be empty.
  // Default "tg:features:".
  std::string key_prefix = "tg:features:";
};

// Connects to the Redis server of `options` and checks it answers PING.
//
// The store keeps a pool of up to `max_connections` connections, opened on demand. Values are
// kept with SET/GET as little-endian float32 bytes (see EncodeFeatures), binary safe. A connection
// that fails (timeout, reset, closed by the server) is closed and dropped; the next call opens a
// new one, so the store recovers by itself once the server is back. A call that finds its pooled
// connection closed by the server (a restart, Redis' idle `timeout`) retries once on a new
// connection; a timeout is never retried, so one call waits at most about 2 * `timeout` on a
// stalled server (pool wait plus round trip). Errors are returned, never thrown or fatal:
// SIGPIPE from a write to a dead connection is blocked on the calling thread and discarded.
//
// Errors: InvalidArgument for bad options; Unavailable when the server cannot be reached or
// does not answer PING with PONG; DeadlineExceeded when it does not answer within `timeout`.
absl::StatusOr<std::unique_ptr<FeatureStore>> ConnectRedisFeatureStore(const RedisOptions& options);

// ---------------------------------------------------------------------------------------------
// Injected slow-down

// Wraps a store and delays every Get() by an adjustable amount before forwarding it: the demo's
// "feature store slow-down", which tailguard should then detect and attribute to the dependency
// quadrant. Put() and Describe() are not delayed.
//
// The delay is real: by default Get() blocks its thread with std::this_thread::sleep_for (the
// real clock; the OS may oversleep by tens of microseconds). Tests pass their own `sleep` to
// observe the delay without waiting.
//
// Thread-safe. set_delay() may be called from any thread at any time; a Get() uses the delay set
// when it starts.
class SlowableFeatureStore final : public FeatureStore {
 public:
  // Called with the delay (> 0) before each Get() is forwarded.
  using SleepFn = std::function<void(std::chrono::microseconds)>;

  // Takes ownership of `inner`. REQUIRES: inner != nullptr. `sleep` defaults to
  // std::this_thread::sleep_for.
  explicit SlowableFeatureStore(std::unique_ptr<FeatureStore> inner, SleepFn sleep = nullptr);

  // Sets the delay added to each later Get(). Zero (the initial value) turns it off; a negative
  // delay is taken as zero.
  void set_delay(std::chrono::microseconds delay);
  std::chrono::microseconds delay() const;

  FeatureStore& inner() const { return *inner_; }

  // FeatureStore:
  absl::StatusOr<std::vector<float>> Get(std::string_view key) override;
  absl::Status Put(std::string_view key, std::span<const float> values) override;
  // The inner store's description, plus " (+<delay> injected delay)" while the delay is on.
  std::string Describe() const override;

 private:
  // Constant after construction.
  const std::unique_ptr<FeatureStore> inner_;
  const SleepFn sleep_;
  // The delay in microseconds. Atomic because set_delay() runs on a control thread while workers
  // read it; relaxed is enough because it guards no other data.
  std::atomic<int64_t> delay_us_{0};
};

// ---------------------------------------------------------------------------------------------
// Demo data and the value format

// The key of the `index`-th demo entity: "user:<index>".
std::string SeedKey(size_t index);

// The `dim` floats that SeedFeatures() stores under SeedKey(index) for `seed`: uniform in
// [-1, 1), each exactly representable (24 random bits), the same on every platform and run.
std::vector<float> SeededFeatureVector(uint64_t seed, size_t index, size_t dim);

// Fills `count` keys "user:0" .. "user:<count-1>" with SeededFeatureVector(seed, i, dim), for the
// demo. Errors: InvalidArgument when dim == 0; otherwise the first failing Put(), with the key and
// progress prefixed ("seeding user:17 (18 of 1000): ...").
absl::Status SeedFeatures(FeatureStore& store, size_t count, size_t dim, uint64_t seed);

// The stored form of a feature vector: 4 bytes per value, IEEE-754 float32, little-endian, no
// header; the vector's length is the byte length / 4.
std::string EncodeFeatures(std::span<const float> values);

// Parses EncodeFeatures' output. DataLoss when the length is not a multiple of 4; `what` names
// the value in the message (e.g. "redis 127.0.0.1:6379 key tg:features:user:1").
absl::StatusOr<std::vector<float>> DecodeFeatures(std::string_view bytes, std::string_view what);

}  // namespace tailguard::store

#endif  // TAILGUARD_STORE_FEATURE_STORE_H_
