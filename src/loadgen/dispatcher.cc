// The open-loop core: see dispatcher.h.
#include "loadgen/dispatcher.h"

#include <algorithm>

namespace tailguard::loadgen {

uint64_t Counts::responses() const {
  uint64_t n = 0;
  for (uint64_t c : status_class) n += c;
  return n;
}

uint64_t Counts::errors() const { return completed - status_class[2] - status_class[3]; }

void Counts::Add(const Counts& o) {
  scheduled += o.scheduled;
  sent += o.sent;
  completed += o.completed;
  dropped += o.dropped;
  for (int i = 0; i < 6; ++i) status_class[i] += o.status_class[i];
  connect_errors += o.connect_errors;
  timeouts += o.timeouts;
  io_errors += o.io_errors;
}

Dispatcher::Dispatcher(Schedule schedule, size_t phase_count, const Options& options,
                       MonoTime start)
    : schedule_(std::move(schedule)),
      options_(options),
      start_(start),
      busy_(static_cast<size_t>(std::max(options.connections, 1))),
      phase_counts_(std::max<size_t>(phase_count, 1)),
      phase_latency_(std::max<size_t>(phase_count, 1)),
      last_send_(start),
      last_completion_(start) {
  for (int c = 0; c < static_cast<int>(busy_.size()); ++c) idle_.push_back(c);
  Pull();
}

void Dispatcher::Pull() {
  next_.reset();
  const uint32_t shards = std::max<uint32_t>(options_.shards, 1);
  while (std::optional<ScheduledRequest> r = schedule_.Next()) {
    if (r->sequence % shards != options_.shard) continue;
    next_ = Pending{*r, start_ + r->at};
    return;
  }
}

void Dispatcher::StartOn(int connection, const Pending& p, MonoTime now, std::vector<Send>& out) {
  busy_[static_cast<size_t>(connection)] = p;
  ++in_flight_;
  ++counts_.sent;
  ++phase_counts_[p.request.phase].sent;
  ++interval_.counts.sent;
  last_send_ = now;
  const Duration lag = std::max(Duration::zero(), now - p.intended);
  send_lag_.Record(static_cast<uint64_t>(lag.count()));
  out.push_back({connection, p.request, p.intended, p.intended + options_.timeout});
}

void Dispatcher::Finish(const Pending& p, MonoTime now, Outcome outcome, int status) {
  Counts* all[] = {&counts_, &phase_counts_[p.request.phase], &interval_.counts};
  for (Counts* c : all) {
    ++c->completed;
    switch (outcome) {
      case Outcome::kResponse:
        ++c->status_class[status >= 100 && status < 600 ? status / 100 : 0];
        break;
      case Outcome::kConnectError:
        ++c->connect_errors;
        break;
      case Outcome::kTimeout:
        ++c->timeouts;
        break;
      case Outcome::kIoError:
        ++c->io_errors;
        break;
    }
  }
  last_completion_ = std::max(last_completion_, now);
  if (outcome == Outcome::kResponse || outcome == Outcome::kTimeout) {
    const auto ns = static_cast<uint64_t>(std::max(Duration::zero(), now - p.intended).count());
    latency_.Record(ns);
    phase_latency_[p.request.phase].Record(ns);
    interval_.latency.Record(ns);
  }
}

void Dispatcher::ExpireQueued(MonoTime now) {
  while (!queue_.empty() && queue_.front().intended + options_.timeout <= now) {
    Finish(queue_.front(), now, Outcome::kTimeout, 0);
    queue_.pop_front();
  }
}

void Dispatcher::Advance(MonoTime now, std::vector<Send>& out) {
  if (stopped_) return;
  ExpireQueued(now);
  while (next_ && next_->intended <= now) {
    const Pending p = *next_;
    Pull();
    ++counts_.scheduled;
    ++phase_counts_[p.request.phase].scheduled;
    ++interval_.counts.scheduled;
    current_phase_ = p.request.phase;
    if (p.intended + options_.timeout <= now) {
      // Due so long ago (the caller was stalled) that it has timed out already.
      Finish(p, now, Outcome::kTimeout, 0);
    } else if (!idle_.empty() && queue_.empty()) {
      const int c = idle_.front();
      idle_.pop_front();
      StartOn(c, p, now, out);
    } else if (queue_.size() < options_.max_queue) {
      queue_.push_back(p);
    } else {
      ++counts_.dropped;
      ++phase_counts_[p.request.phase].dropped;
      ++interval_.counts.dropped;
    }
  }
  // Connections may have become idle without a queued request to take (all had expired).
  while (!queue_.empty() && !idle_.empty()) {
    const int c = idle_.front();
    idle_.pop_front();
    const Pending p = queue_.front();
    queue_.pop_front();
    StartOn(c, p, now, out);
  }
}

void Dispatcher::Complete(int connection, MonoTime now, Outcome outcome, int status,
                          std::vector<Send>& out) {
  if (stopped_) return;
  std::optional<Pending>& slot = busy_[static_cast<size_t>(connection)];
  if (!slot) return;
  const Pending p = *slot;
  slot.reset();
  --in_flight_;
  Finish(p, now, outcome, status);
  ExpireQueued(now);
  if (!queue_.empty()) {
    const Pending next = queue_.front();
    queue_.pop_front();
    StartOn(connection, next, now, out);
  } else {
    idle_.push_back(connection);
  }
}

std::optional<MonoTime> Dispatcher::NextWake() const {
  if (stopped_) return std::nullopt;
  std::optional<MonoTime> wake;
  if (next_) wake = next_->intended;
  if (!queue_.empty()) {
    const MonoTime expiry = queue_.front().intended + options_.timeout;
    wake = wake ? std::min(*wake, expiry) : expiry;
  }
  return wake;
}

bool Dispatcher::Finished() const {
  return stopped_ || (!next_ && queue_.empty() && in_flight_ == 0);
}

void Dispatcher::Stop() {
  if (stopped_) return;
  stopped_ = true;
  abandoned_ += queue_.size() + in_flight_;
  queue_.clear();
  for (auto& b : busy_) b.reset();
  in_flight_ = 0;
  next_.reset();
}

IntervalStats Dispatcher::TakeInterval() {
  IntervalStats out = std::move(interval_);
  interval_ = IntervalStats{};
  return out;
}

}  // namespace tailguard::loadgen
