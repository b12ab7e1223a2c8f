// Feature store backends (memory, Redis), the slow-down wrapper, demo seeding and the value format.
#include "store/feature_store.h"

#include <algorithm>
#include <bit>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "common/strings.h"
#include "store/redis.h"

namespace tailguard::store {
namespace {

absl::Status CheckKey(std::string_view key) {
  if (key.empty()) {
    return absl::InvalidArgumentError(
        "feature store: the key is empty; pass the entity id, e.g. \"user:42\"");
  }
  return absl::OkStatus();
}

std::string FormatMicros(std::chrono::microseconds d) {
  if (d.count() % 1000 == 0) return Cat(d.count() / 1000, "ms");
  return Cat(d.count(), "us");
}

// ---------------------------------------------------------------------------------------------
// Memory

// Thread-safe: a reader-writer lock around the map.
class MemoryFeatureStore final : public FeatureStore {
 public:
  absl::StatusOr<std::vector<float>> Get(std::string_view key) override {
    if (absl::Status s = CheckKey(key); !s.ok()) return s;
    std::shared_lock lock(mu_);
    auto it = values_.find(absl::string_view(key.data(), key.size()));
    if (it == values_.end()) {
      return absl::NotFoundError(Cat("feature store memory: no features for key \"", key, "\""));
    }
    return it->second;
  }

  absl::Status Put(std::string_view key, std::span<const float> values) override {
    if (absl::Status s = CheckKey(key); !s.ok()) return s;
    std::vector<float> copy(values.begin(), values.end());
    std::unique_lock lock(mu_);
    values_[std::string(key)] = std::move(copy);
    return absl::OkStatus();
  }

  std::string Describe() const override { return "memory"; }

 private:
  std::shared_mutex mu_;
  absl::flat_hash_map<std::string, std::vector<float>> values_;  // guarded by mu_
};

// ---------------------------------------------------------------------------------------------
// Redis

// The algorithm: a pool of at most max_connections connections, opened on demand. A call takes
// an idle connection (the most recently returned, least likely to be stale) or opens a new one
// if under the limit, else waits up to `timeout` for one to come back. After the call a healthy
// connection goes back to the pool; a broken one is closed and its slot freed.
//
// Retry: a pooled connection that the server closed while it sat idle (restart, idle timeout)
// fails its next command with a closed/reset connection. Such a call is retried once on a newly
// opened connection. Timeouts are not retried: the server is slow, and retrying would double the
// wait.
//
// Locking: mu_ guards the idle list and the open count; connecting and commands run unlocked.
class RedisFeatureStore final : public FeatureStore {
 public:
  explicit RedisFeatureStore(RedisOptions options)
      : options_(std::move(options)),
        description_(Cat("redis ", options_.host, ":", options_.port)) {}

  // Opens the first connection and checks it answers PING.
  absl::Status Init() {
    absl::StatusOr<Lease> lease = Acquire(/*fresh=*/true);
    if (!lease.ok()) return lease.status();
    absl::StatusOr<RedisReply> pong = lease->conn->Command({"PING"});
    if (pong.ok() && pong->str != "PONG") {
      pong = absl::UnavailableError(Cat(description_, ": PING answered '", pong->str,
                                        "' instead of PONG; is this a Redis server?"));
    }
    Release(std::move(lease->conn));
    return pong.status();
  }

  absl::StatusOr<std::vector<float>> Get(std::string_view key) override {
    if (absl::Status s = CheckKey(key); !s.ok()) return s;
    const std::string redis_key = Cat(options_.key_prefix, key);
    absl::StatusOr<RedisReply> reply = Run({"GET", redis_key});
    if (!reply.ok()) return reply.status();
    if (reply->type == RedisReply::Type::kNil) {
      return absl::NotFoundError(
          Cat(description_, ": no features for key \"", key, "\" (redis key ", redis_key, ")"));
    }
    if (reply->type != RedisReply::Type::kString) {
      return absl::InternalError(Cat(description_, ": GET ", redis_key,
                                     ": unexpected reply type; is this a Redis server?"));
    }
    return DecodeFeatures(reply->str, Cat(description_, " key ", redis_key));
  }

  absl::Status Put(std::string_view key, std::span<const float> values) override {
    if (absl::Status s = CheckKey(key); !s.ok()) return s;
    const std::string redis_key = Cat(options_.key_prefix, key);
    const std::string bytes = EncodeFeatures(values);
    return Run({"SET", redis_key, bytes}).status();
  }

  std::string Describe() const override { return description_; }

 private:
  struct Lease {
    std::unique_ptr<RedisConnection> conn;
    bool reused = false;  // taken from the pool rather than opened for this call
  };

  // A connection for one call. With `fresh`, never a pooled one: an idle connection is closed to
  // make room when the pool is full.
  absl::StatusOr<Lease> Acquire(bool fresh) {
    std::unique_ptr<RedisConnection> discard;  // closed outside the lock
    {
      std::unique_lock lock(mu_);
      const bool ready = cv_.wait_for(lock, options_.timeout, [&] {
        return !idle_.empty() || open_ < options_.max_connections;
      });
      if (!ready) {
        return absl::DeadlineExceededError(
            Cat(description_, ": all ", options_.max_connections, " connections stayed busy for ",
                options_.timeout.count(),
                "ms; raise RedisOptions::max_connections to the number of fetching threads"));
      }
      if (!idle_.empty()) {
        std::unique_ptr<RedisConnection> conn = std::move(idle_.back());
        idle_.pop_back();
        if (!fresh) return Lease{std::move(conn), true};
        discard = std::move(conn);  // its slot is reused for the new connection
      } else {
        ++open_;
      }
    }
    discard.reset();
    absl::StatusOr<std::unique_ptr<RedisConnection>> conn =
        RedisConnection::Connect(options_.host, options_.port, options_.timeout);
    if (!conn.ok()) {
      FreeSlot();
      return conn.status();
    }
    return Lease{*std::move(conn), false};
  }

  void Release(std::unique_ptr<RedisConnection> conn) {
    if (conn->broken()) {
      conn.reset();
      FreeSlot();
      return;
    }
    {
      std::lock_guard lock(mu_);
      idle_.push_back(std::move(conn));
    }
    cv_.notify_one();
  }

  void FreeSlot() {
    {
      std::lock_guard lock(mu_);
      --open_;
    }
    cv_.notify_one();
  }

  absl::StatusOr<RedisReply> Run(std::initializer_list<std::string_view> args) {
    bool fresh = false;
    while (true) {
      absl::StatusOr<Lease> lease = Acquire(fresh);
      if (!lease.ok()) return lease.status();
      absl::StatusOr<RedisReply> reply = lease->conn->Command(args);
      const bool stale = !reply.ok() && lease->reused && lease->conn->broken() &&
                         reply.status().code() == absl::StatusCode::kUnavailable;
      Release(std::move(lease->conn));
      if (!stale || fresh) return reply;
      fresh = true;
    }
  }

  // Constant after construction.
  const RedisOptions options_;
  const std::string description_;

  std::mutex mu_;
  std::condition_variable cv_;  // signalled when a connection is returned or a slot is freed
  std::vector<std::unique_ptr<RedisConnection>> idle_;  // guarded by mu_
  size_t open_ = 0;  // guarded by mu_; connections in idle_, in use, or being opened
};

// ---------------------------------------------------------------------------------------------
// Seeding

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace

std::unique_ptr<FeatureStore> NewMemoryFeatureStore() {
  return std::make_unique<MemoryFeatureStore>();
}

absl::StatusOr<std::unique_ptr<FeatureStore>> ConnectRedisFeatureStore(
    const RedisOptions& options) {
  const std::string where = Cat("redis ", options.host, ":", options.port);
  if (options.host.empty()) {
    return absl::InvalidArgumentError("redis feature store: host is empty; set e.g. 127.0.0.1");
  }
  if (options.port == 0) {
    return absl::InvalidArgumentError(Cat(where, ": port 0 is not a server port; set e.g. 6379"));
  }
  if (options.timeout.count() <= 0) {
    return absl::InvalidArgumentError(
        Cat(where, ": timeout must be > 0, got ", options.timeout.count(), "ms; e.g. 100ms"));
  }
  if (options.max_connections == 0) {
    return absl::InvalidArgumentError(
        Cat(where, ": max_connections must be >= 1; set it to the number of fetching threads"));
  }
  auto store = std::make_unique<RedisFeatureStore>(options);
  if (absl::Status s = store->Init(); !s.ok()) return s;
  return std::unique_ptr<FeatureStore>(std::move(store));
}

// ---------------------------------------------------------------------------------------------
// SlowableFeatureStore

SlowableFeatureStore::SlowableFeatureStore(std::unique_ptr<FeatureStore> inner, SleepFn sleep)
    : inner_(std::move(inner)),
      sleep_(sleep != nullptr ? std::move(sleep) : SleepFn([](std::chrono::microseconds d) {
        std::this_thread::sleep_for(d);
      })) {}

void SlowableFeatureStore::set_delay(std::chrono::microseconds delay) {
  delay_us_.store(std::max<int64_t>(delay.count(), 0), std::memory_order_relaxed);
}

std::chrono::microseconds SlowableFeatureStore::delay() const {
  return std::chrono::microseconds(delay_us_.load(std::memory_order_relaxed));
}

absl::StatusOr<std::vector<float>> SlowableFeatureStore::Get(std::string_view key) {
  const std::chrono::microseconds d = delay();
  if (d.count() > 0) sleep_(d);
  return inner_->Get(key);
}

absl::Status SlowableFeatureStore::Put(std::string_view key, std::span<const float> values) {
  return inner_->Put(key, values);
}

std::string SlowableFeatureStore::Describe() const {
  const std::chrono::microseconds d = delay();
  if (d.count() == 0) return inner_->Describe();
  return Cat(inner_->Describe(), " (+", FormatMicros(d), " injected delay)");
}

// ---------------------------------------------------------------------------------------------
// Seeding and the value format

std::string SeedKey(size_t index) { return Cat("user:", index); }

std::vector<float> SeededFeatureVector(uint64_t seed, size_t index, size_t dim) {
  uint64_t mix = seed;
  uint64_t state = SplitMix64(mix) ^ (static_cast<uint64_t>(index) * 0xD1B54A32D192ED03ULL);
  std::vector<float> out(dim);
  for (float& v : out) {
    const uint64_t bits = SplitMix64(state) >> 40;  // 24 bits: exact in a float
    v = static_cast<float>(bits) * (2.0f / 16777216.0f) - 1.0f;
  }
  return out;
}

absl::Status SeedFeatures(FeatureStore& store, size_t count, size_t dim, uint64_t seed) {
  if (dim == 0) {
    return absl::InvalidArgumentError("SeedFeatures: dim is 0; pass the model's feature count");
  }
  for (size_t i = 0; i < count; ++i) {
    const std::string key = SeedKey(i);
    const std::vector<float> values = SeededFeatureVector(seed, i, dim);
    if (absl::Status s = store.Put(key, values); !s.ok()) {
      return absl::Status(s.code(), Cat("seeding ", key, " (", i + 1, " of ", count, ") into ",
                                        store.Describe(), ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

std::string EncodeFeatures(std::span<const float> values) {
  std::string out(values.size() * 4, '\0');
  if constexpr (std::endian::native == std::endian::little) {
    if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  } else {
    for (size_t i = 0; i < values.size(); ++i) {
      const uint32_t bits = std::bit_cast<uint32_t>(values[i]);
      for (int b = 0; b < 4; ++b) out[i * 4 + b] = static_cast<char>((bits >> (8 * b)) & 0xff);
    }
  }
  return out;
}

absl::StatusOr<std::vector<float>> DecodeFeatures(std::string_view bytes, std::string_view what) {
  if (bytes.size() % 4 != 0) {
    return absl::DataLossError(Cat(what, ": value is ", bytes.size(),
                                   " bytes, not a multiple of 4 (float32); it was not written by "
                                   "tailguard: rewrite it with Put() or use another key_prefix"));
  }
  std::vector<float> out(bytes.size() / 4);
  if constexpr (std::endian::native == std::endian::little) {
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  } else {
    for (size_t i = 0; i < out.size(); ++i) {
      uint32_t bits = 0;
      for (int b = 0; b < 4; ++b) {
        bits |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i * 4 + b])) << (8 * b);
      }
      out[i] = std::bit_cast<float>(bits);
    }
  }
  return out;
}

}  // namespace tailguard::store
