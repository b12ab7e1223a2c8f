// The open-loop core of the load generator, with no network types: it decides when each
// request goes out and on which connection, queues what cannot go out, counts drops and
// timeouts, and measures every latency from the request's intended send time.
#ifndef TAILGUARD_LOADGEN_DISPATCHER_H_
#define TAILGUARD_LOADGEN_DISPATCHER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "loadgen/schedule.h"
#include "tailguard/clock.h"
#include "tailguard/histogram.h"

namespace tailguard::loadgen {

// How one request ended.
enum class Outcome : uint8_t {
  kResponse,      // a complete HTTP response, whatever its status
  kConnectError,  // the connection could not be opened
  kTimeout,       // no complete response within the timeout of its intended send time
  kIoError,       // the connection failed mid-request (reset, closed early, malformed answer)
};

// Request counts. Every scheduled request ends up in exactly one of: completed, dropped,
// abandoned (Stop() before it finished), or still queued or in flight.
struct Counts {
  uint64_t scheduled = 0;  // intended send time reached
  uint64_t sent = 0;       // handed to a connection
  uint64_t completed = 0;  // a response or an error (timeouts in the queue included)
  uint64_t dropped = 0;    // the queue was full at the intended send time: never sent
  // Responses by status class: [1] 1xx ... [5] 5xx; [0] anything else.
  uint64_t status_class[6] = {};
  uint64_t connect_errors = 0;
  uint64_t timeouts = 0;   // in flight or still waiting in the queue when the timeout passed
  uint64_t io_errors = 0;  // resets, early closes, malformed responses

  uint64_t responses() const;
  // Completed requests without a 2xx or 3xx response.
  uint64_t errors() const;
  void Add(const Counts& other);
};

// What one interval (between two Dispatcher::TakeInterval() calls) saw.
struct IntervalStats {
  Histogram latency;  // requests completed in the interval
  Counts counts;
};

// The open-loop algorithm behind the HTTP client, driven by the caller's clock and events.
//
// The algorithm: each request of the schedule becomes due at start + its intended time. A due
// request goes out on an idle connection at once; when every connection is busy it waits in a
// FIFO queue of at most max_queue requests, and beyond that it is dropped and counted. A
// connection that finishes takes the oldest queued request. A request times out `timeout` after
// its intended send time, queued or in flight. Latency is the time from the intended send time
// to the end of the request, so time spent waiting for a connection counts (no coordinated
// omission), and send lag (actual minus intended send time) is recorded on its own.
// Responses of any status and timeouts are recorded in the latency histograms; connect and I/O
// errors are counted only (they end early and would flatter the percentiles).
//
// Sharding: with shards > 1, this dispatcher takes the requests with sequence % shards == shard,
// so several dispatchers on several threads split one schedule.
//
// Not thread-safe: the caller synchronises.
class Dispatcher {
 public:
  struct Options {
    int connections = 64;  // connections this dispatcher may use, > 0
    size_t max_queue = 10000;
    Duration timeout = std::chrono::seconds(5);  // > 0
    uint32_t shard = 0;
    uint32_t shards = 1;  // > shard
  };

  // A request to put on a connection now.
  struct Send {
    int connection = 0;
    ScheduledRequest request;
    MonoTime intended{};
    MonoTime deadline{};  // intended + timeout: give up then and report kTimeout
  };

  // `phase_count` is the number of phases in the schedule.
  Dispatcher(Schedule schedule, size_t phase_count, const Options& options, MonoTime start);

  // Moves every request due by `now` to an idle connection (appended to `out`), into the queue,
  // or to the drop count, and times out queued requests whose deadline has passed.
  void Advance(MonoTime now, std::vector<Send>& out);

  // The request on `connection` ended at `now`. `status` is the HTTP status for kResponse. The
  // connection then takes the oldest queued request, if any (appended to `out`). Ignored after
  // Stop(). REQUIRES: `connection` has a request in flight.
  void Complete(int connection, MonoTime now, Outcome outcome, int status, std::vector<Send>& out);

  // When Advance() has work next: the next intended send time or queue deadline; nullopt when
  // nothing more is scheduled or queued.
  std::optional<MonoTime> NextWake() const;

  // True when the schedule is exhausted and nothing is queued or in flight (or after Stop()).
  bool Finished() const;

  // Ends the run: nothing more is scheduled or sent, queued and in-flight requests are counted
  // as abandoned, and later completions are ignored.
  void Stop();

  // Returns what the interval since the last call (or the start) saw and starts a new one.
  IntervalStats TakeInterval();

  // Cumulative results.
  const Counts& counts() const { return counts_; }
  const std::vector<Counts>& phase_counts() const { return phase_counts_; }
  const Histogram& latency() const { return latency_; }
  const std::vector<Histogram>& phase_latency() const { return phase_latency_; }
  const Histogram& send_lag() const { return send_lag_; }
  uint64_t abandoned() const { return abandoned_; }
  size_t queued() const { return queue_.size(); }
  size_t in_flight() const { return in_flight_; }
  // The time of the last send and of the last completion; `start` before any.
  MonoTime last_send() const { return last_send_; }
  MonoTime last_completion() const { return last_completion_; }
  // The phase of the last request that became due (0 before any).
  uint32_t current_phase() const { return current_phase_; }

 private:
  struct Pending {
    ScheduledRequest request;
    MonoTime intended;
  };

  void Pull();
  void StartOn(int connection, const Pending& p, MonoTime now, std::vector<Send>& out);
  void Finish(const Pending& p, MonoTime now, Outcome outcome, int status);
  void ExpireQueued(MonoTime now);

  Schedule schedule_;
  const Options options_;
  const MonoTime start_;
  std::optional<Pending> next_;               // the next request of this shard, not yet due
  std::deque<Pending> queue_;                 // due, waiting for a connection; oldest first
  std::deque<int> idle_;                      // idle connections, least recently used first
  std::vector<std::optional<Pending>> busy_;  // per connection: its request in flight
  size_t in_flight_ = 0;
  bool stopped_ = false;
  uint64_t abandoned_ = 0;
  uint32_t current_phase_ = 0;

  Counts counts_;
  std::vector<Counts> phase_counts_;
  Histogram latency_;
  std::vector<Histogram> phase_latency_;
  Histogram send_lag_;
  IntervalStats interval_;
  MonoTime last_send_;
  MonoTime last_completion_;
};

}  // namespace tailguard::loadgen

#endif  // TAILGUARD_LOADGEN_DISPATCHER_H_
