// The delivery worker: sends the outbox's pending requests, at least once, with exponential
// backoff and jitter while a receiver is down, within each receiver's rate limit.
#ifndef TAILGUARD_ALERT_NOTIFY_DELIVERY_H_
#define TAILGUARD_ALERT_NOTIFY_DELIVERY_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "alert/notify/http_sender.h"
#include "common/mutex.h"
#include "store/event_store.h"
#include "tailguard/alert.h"
#include "tailguard/clock.h"

namespace tailguard::notify {

struct DeliveryOptions {
  // The first retry waits this long; each further one twice as long as the previous, up to
  // max_backoff. Default 1 s.
  Duration initial_backoff = std::chrono::seconds(1);
  // Default 5 min.
  Duration max_backoff = std::chrono::minutes(5);
  // Each wait is drawn uniformly from [wait * (1 - jitter), wait], so receivers coming back are
  // not hit by every sender at once. In [0, 1]. Default 0.5.
  double jitter = 0.5;
  // A message still undelivered this long after it was stored is given up (state failed, kept
  // in the store and shown by `tailguard alerts outbox`). 0: never. Default 24 h.
  Duration give_up_after = std::chrono::hours(24);
  // How often the worker looks at the outbox when nothing wakes it. Default 1 s.
  Duration poll_interval = std::chrono::seconds(1);
  // Most requests sent per pass. Default 64.
  int batch = 64;
  // Seed of the jitter; 0 draws one from std::random_device.
  uint64_t seed = 0;
  // Where each failed attempt and each give-up is logged, one line; nullptr for none.
  std::FILE* log = nullptr;
};

struct DeliveryStats {
  std::atomic<uint64_t> attempts{0};
  std::atomic<uint64_t> delivered{0};
  std::atomic<uint64_t> retries{0};       // failed attempts that will be retried
  std::atomic<uint64_t> failed{0};        // given up: permanent error or give_up_after
  std::atomic<uint64_t> rate_limited{0};  // passes that left a message waiting for its receiver
  std::atomic<uint64_t> store_errors{0};
};

// The algorithm, one pass (RunOnce): take the due pending items, oldest first, leaving out the
// receivers held back. A receiver is held back while its token bucket (rate_per_minute, burst of
// a tenth of a minute's worth and at least 1) is empty, and after a retryable failure until that
// message's retry time, so a receiver that is down gets one probe per backoff and never holds
// up the others (a blackholed receiver costs one timeout per backoff, not one per message).
// Each item is sent. 2xx: delivered. A retryable failure (5xx, 408, 425, 429, transport errors,
// WeCom's rate-limit errcode): retry after the backoff for its attempt count (at least the
// receiver's Retry-After), or give up once give_up_after has passed since it was stored. A
// permanent failure (another 4xx, a WeCom error): failed at once, since sending the same
// payload again cannot succeed.
//
// Every outcome is written to the store before the next item is sent, so a restart resumes with
// what is left; an item whose attempt was cut by a crash is sent again (at least once), with the
// same idempotency key.
//
// Thread-safe: RunOnce() on one thread at a time (the worker's, or a test's); Wake() anywhere.
class DeliveryWorker {
 public:
  // `store`, `sender` and `clock` must outlive the worker. Receiver settings (timeout, rate
  // limit) come from config.receivers; receivers not listed there have no limit and a 10 s
  // timeout.
  DeliveryWorker(const AlertConfig& config, store::EventStore& store, HttpSender& sender,
                 const Clock& clock, DeliveryOptions options = {});
  ~DeliveryWorker();

  // One pass at `now`. Returns the time of the next item due (WallTime::max() when none).
  WallTime RunOnce(WallTime now);

  // Runs passes on a thread of its own until Stop(): after each pass it waits until the next
  // item is due, poll_interval, or Wake(), whichever comes first.
  void Start();
  // Cuts the attempt in flight short (HttpSender::SetCancelled; its message stays pending as it
  // was) and returns. Pending items stay in the store.
  void Stop();
  // Makes the worker look at the outbox now (new items were enqueued).
  void Wake();

  const DeliveryStats& stats() const { return stats_; }

 private:
  struct Bucket {
    double tokens = 0;
    double capacity = 1;
    double per_second = 0;  // 0: unlimited
    WallTime last{};
  };
  // An attempt's result, as written to the store.
  struct Outcome {
    enum Kind : uint8_t { kDelivered, kRetry, kFailed } kind = kDelivered;
    WallTime at{};
    WallTime retry_at{};  // kRetry
    int http_status = 0;
    std::string error;
  };
  WallTime Refill(Bucket& b, WallTime now);
  absl::Status Write(int64_t id, const Outcome& o);
  // Writes `o`; when the store refuses, keeps it in unrecorded_ (the message is not sent again
  // until it is written) and returns false.
  bool Record(int64_t id, Outcome o);
  Duration Backoff(int attempts);

  const AlertConfig& config_;
  store::EventStore& store_;
  HttpSender& sender_;
  const Clock& clock_;
  const DeliveryOptions options_;
  absl::flat_hash_map<std::string, Bucket> buckets_;  // used by RunOnce only
  // Receivers that failed with a retryable error: no attempt before the time. RunOnce only.
  absl::flat_hash_map<std::string, WallTime> held_;
  // Outcomes the store refused, by outbox id; written at the start of each pass. RunOnce only.
  absl::flat_hash_map<int64_t, Outcome> unrecorded_;
  absl::flat_hash_map<std::string, Duration> timeouts_;  // constant after construction
  absl::flat_hash_set<std::string> wecom_;               // constant after construction
  std::mt19937_64 rng_;                                  // used by RunOnce only
  DeliveryStats stats_;

  // The delivery thread: RunOnce() until Stop(), waiting between passes for a Wake(), the next
  // attempt's time or poll_interval.
  void Loop();

  Mutex mu_;
  CondVar cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool woken_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace tailguard::notify

#endif  // TAILGUARD_ALERT_NOTIFY_DELIVERY_H_
