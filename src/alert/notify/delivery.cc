#include "alert/notify/delivery.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/format.h"
#include "common/strings.h"
#include "tailguard/series_io.h"

namespace tailguard::notify {
namespace {

constexpr Duration kDefaultTimeout = std::chrono::seconds(10);

std::string Elapsed(Duration d) { return HumanDuration(d); }

}  // namespace

DeliveryWorker::DeliveryWorker(const AlertConfig& config, store::EventStore& store,
                               HttpSender& sender, const Clock& clock, DeliveryOptions options)
    : config_(config),
      store_(store),
      sender_(sender),
      clock_(clock),
      options_(options),
      rng_(options.seed != 0 ? options.seed : std::random_device{}()) {
  for (const ReceiverOptions& r : config_.receivers) {
    timeouts_[r.name] = r.target.timeout > Duration::zero() ? r.target.timeout : kDefaultTimeout;
    if (r.target.kind == ReceiverTarget::Kind::kWeCom) wecom_.insert(r.name);
    if (r.target.rate_per_minute > 0) {
      Bucket b;
      b.per_second = r.target.rate_per_minute / 60.0;
      b.capacity = std::max(1.0, r.target.rate_per_minute / 6.0);
      b.tokens = b.capacity;
      buckets_[r.name] = b;
    }
  }
}

DeliveryWorker::~DeliveryWorker() { Stop(); }

// Refills `b` up to `now` and returns when it will next hold a whole token (`now` if it does).
WallTime DeliveryWorker::Refill(Bucket& b, WallTime now) {
  if (b.last != WallTime{} && now > b.last) {
    const double elapsed = std::chrono::duration<double>(now - b.last).count();
    b.tokens = std::min(b.capacity, b.tokens + elapsed * b.per_second);
  }
  if (b.last == WallTime{} || now > b.last) b.last = now;
  if (b.tokens >= 1.0) return now;
  const double wait_s = std::max((1.0 - b.tokens) / b.per_second, 0.001);
  return now + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(wait_s));
}

Duration DeliveryWorker::Backoff(int attempts) {
  // attempts >= 1: the wait after the attempts-th failure.
  double wait = std::chrono::duration<double>(options_.initial_backoff).count();
  const double cap = std::chrono::duration<double>(options_.max_backoff).count();
  for (int i = 1; i < attempts && wait < cap; ++i) wait *= 2;
  wait = std::min(wait, cap);
  const double jitter = std::clamp(options_.jitter, 0.0, 1.0);
  std::uniform_real_distribution<double> u(1.0 - jitter, 1.0);
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(wait * u(rng_)));
}

absl::Status DeliveryWorker::Write(int64_t id, const Outcome& o) {
  switch (o.kind) {
    case Outcome::kDelivered:
      return store_.MarkDelivered(id, o.at, o.http_status);
    case Outcome::kRetry:
      return store_.MarkRetry(id, o.retry_at, o.http_status, o.error);
    case Outcome::kFailed:
      return store_.MarkFailed(id, o.at, o.http_status, o.error);
  }
  return absl::InternalError("unknown outcome");
}

bool DeliveryWorker::Record(int64_t id, Outcome o) {
  absl::Status written = Write(id, o);
  // Another process settled it already (FailedPrecondition: not pending): nothing to keep.
  if (written.ok() || absl::IsFailedPrecondition(written) || absl::IsNotFound(written)) return true;
  stats_.store_errors.fetch_add(1, std::memory_order_relaxed);
  if (options_.log != nullptr) {
    std::fprintf(options_.log,
                 "tailguard: delivery: recording an outcome: %s; kept in memory, retried\n",
                 std::string(written.message()).c_str());
  }
  unrecorded_[id] = std::move(o);
  return false;
}

WallTime DeliveryWorker::RunOnce(WallTime now) {
  WallTime next = WallTime::max();
  // Receivers held back this pass: down (one probe per backoff, so that a receiver that times
  // out does not hold up the others for a timeout per message) or out of rate-limit tokens.
  // Their messages stay pending, in order, and are left out of the query so that they cannot
  // fill the batch.
  std::vector<std::string> skip;
  const auto hold = [&](const std::string& receiver, WallTime until) {
    if (std::find(skip.begin(), skip.end(), receiver) == skip.end()) skip.push_back(receiver);
    next = std::min(next, until);
  };
  for (auto it = held_.begin(); it != held_.end();) {
    if (it->second > now) {
      hold(it->first, it->second);
      ++it;
    } else {
      held_.erase(it++);
    }
  }
  for (auto& [receiver, bucket] : buckets_) {
    const WallTime token = Refill(bucket, now);
    if (token > now) hold(receiver, token);
  }
  // Outcomes the store refused earlier (a full disk, a lock held too long) are written first;
  // until then their messages are not sent again.
  bool write_failed = false;
  for (auto it = unrecorded_.begin(); it != unrecorded_.end();) {
    if (Write(it->first, it->second).ok()) {
      unrecorded_.erase(it++);
    } else {
      write_failed = true;
      ++it;
    }
  }

  absl::StatusOr<std::vector<store::OutboxItem>> due = store_.Due(now, options_.batch, skip);
  if (!due.ok()) {
    stats_.store_errors.fetch_add(1, std::memory_order_relaxed);
    if (options_.log != nullptr) {
      std::fprintf(options_.log, "tailguard: delivery: reading the outbox: %s\n",
                   std::string(due.status().message()).c_str());
    }
    return now + options_.poll_interval;
  }
  bool sent = false;
  for (const store::OutboxItem& item : *due) {
    if (std::find(skip.begin(), skip.end(), item.receiver) != skip.end()) continue;
    if (unrecorded_.contains(item.id)) continue;
    if (options_.give_up_after > Duration::zero() && now - item.created >= options_.give_up_after) {
      // Too old to be worth a try (e.g. tailguard was down): given up without sending.
      Outcome o;
      o.kind = Outcome::kFailed;
      o.at = now;
      o.http_status = item.last_http_status;
      o.error = Cat("gave up after ", Elapsed(now - item.created),
                    item.last_error.empty() ? "" : Cat("; last error: ", item.last_error));
      stats_.failed.fetch_add(1, std::memory_order_relaxed);
      write_failed |= !Record(item.id, std::move(o));
      continue;
    }
    if (auto b = buckets_.find(item.receiver); b != buckets_.end()) {
      const WallTime token = Refill(b->second, now);
      if (token > now) {
        stats_.rate_limited.fetch_add(1, std::memory_order_relaxed);
        hold(item.receiver, token);
        continue;
      }
      b->second.tokens -= 1.0;
    }
    sent = true;
    HttpRequest request;
    request.method = item.method;
    request.url = item.url;
    request.headers = item.headers;
    request.body = item.body;
    request.check = wecom_.contains(item.receiver) ? HttpRequest::Check::kWeComErrcode
                                                   : HttpRequest::Check::kStatus;
    auto t = timeouts_.find(item.receiver);
    const Duration timeout = t != timeouts_.end() ? t->second : kDefaultTimeout;

    stats_.attempts.fetch_add(1, std::memory_order_relaxed);
    const SendResult result = sender_.Send(request, timeout);
    // Stopping: the message stays pending as it was, for the next start (at least once).
    if (result.cancelled) return now;
    const WallTime done = clock_.WallNow() > now ? clock_.WallNow() : now;
    Outcome o;
    o.at = done;
    o.http_status = result.http_status;
    if (result.delivered) {
      held_.erase(item.receiver);
      o.kind = Outcome::kDelivered;
      stats_.delivered.fetch_add(1, std::memory_order_relaxed);
    } else {
      const std::string why =
          result.error.empty() ? Cat("HTTP ", result.http_status) : result.error;
      const bool expired = options_.give_up_after > Duration::zero() &&
                           done - item.created >= options_.give_up_after;
      if (result.retryable) {
        Duration wait = Backoff(item.attempts + 1);
        // The receiver's Retry-After wins when it asks for longer (up to max_backoff).
        if (result.retry_after.has_value()) {
          wait = std::max(wait, std::min(*result.retry_after, options_.max_backoff));
        }
        // The receiver is held back either way: its other messages wait for the next probe.
        held_[item.receiver] = done + wait;
        hold(item.receiver, done + wait);
        if (!expired) {
          o.kind = Outcome::kRetry;
          o.retry_at = done + wait;
          o.error = why;
          stats_.retries.fetch_add(1, std::memory_order_relaxed);
          if (options_.log != nullptr) {
            std::fprintf(options_.log,
                         "tailguard: delivery to %s failed (attempt %d): %s; retry at %s\n",
                         item.receiver.c_str(), item.attempts + 1, why.c_str(),
                         FormatTimestamp(o.retry_at).c_str());
          }
        }
      }
      if (!result.retryable || expired) {
        o.kind = Outcome::kFailed;
        o.error = result.retryable ? Cat(why, " (gave up after ", Elapsed(done - item.created), ")")
                                   : Cat(why, " (permanent error: not retried)");
        stats_.failed.fetch_add(1, std::memory_order_relaxed);
        if (options_.log != nullptr) {
          std::fprintf(options_.log, "tailguard: delivery to %s failed for good: %s\n",
                       item.receiver.c_str(), o.error.c_str());
        }
      }
    }
    write_failed |= !Record(item.id, std::move(o));
  }
  if (write_failed) {
    // Do not spin on a store that refuses writes: look again after poll_interval.
    return std::min(next, now + options_.poll_interval);
  }
  if (sent && due->size() >= static_cast<size_t>(options_.batch)) return now;  // more waiting
  absl::StatusOr<std::optional<WallTime>> pending = store_.NextAttempt(skip);
  if (pending.ok() && pending->has_value()) next = std::min(next, std::max(**pending, now));
  return next;
}

void DeliveryWorker::Start() {
  MutexLock lock(&mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  sender_.SetCancelled(false);
  thread_ = std::thread([this] { Loop(); });
}

void DeliveryWorker::Loop() {
  while (true) {
    {
      MutexLock lock(&mu_);
      if (stop_) return;
      woken_ = false;
    }
    const WallTime now = clock_.WallNow();
    const WallTime next = RunOnce(now);
    MutexLock lock(&mu_);
    if (stop_) return;
    if (woken_) continue;
    Duration wait = options_.poll_interval;
    if (next != WallTime::max() && next - now < wait) wait = std::max(next - now, Duration(0));
    if (wait <= Duration::zero()) continue;
    // The wait is real time (a thread sleeps), for as long as the clock says is left.
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (!stop_ && !woken_ && cv_.WaitUntil(&mu_, deadline)) {
    }
  }
}

void DeliveryWorker::Stop() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  // An attempt in flight is cut short rather than waited out (a receiver's timeout can be long).
  if (thread_.joinable()) sender_.SetCancelled(true);
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

void DeliveryWorker::Wake() {
  {
    MutexLock lock(&mu_);
    woken_ = true;
  }
  cv_.SignalAll();
}

}  // namespace tailguard::notify
