// The open-loop core on simulated time: a server that stalls shows in the high percentiles
// (coordinated omission corrected), queues are bounded and count their drops, and timeouts are
// counted with their latency. No wall clock, no sleeps.
#include "loadgen/dispatcher.h"

#include <functional>
#include <map>
#include <vector>

#include "gtest/gtest.h"

namespace tailguard::loadgen {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const MonoTime kStart = MonoTime(seconds(100));

// A simulated server: `service` says when a request sent at `now` is answered. Drives the
// dispatcher as the HTTP client does, event by event, until it finishes.
class Simulation {
 public:
  using Service = std::function<MonoTime(const Dispatcher::Send& send, MonoTime sent)>;

  Simulation(Dispatcher& d, Service service) : d_(d), service_(std::move(service)) {}

  void Run() {
    MonoTime now = kStart;
    for (int steps = 0; steps < 10'000'000 && !d_.Finished(); ++steps) {
      const std::optional<MonoTime> wake = d_.NextWake();
      std::vector<Dispatcher::Send> sends;
      if (!events_.empty() && (!wake || events_.begin()->first <= *wake)) {
        const auto [when, event] = *events_.begin();
        events_.erase(events_.begin());
        now = when;
        d_.Complete(event.connection, now, event.outcome, 200, sends);
      } else if (wake) {
        now = *wake;
        d_.Advance(now, sends);
      } else {
        break;
      }
      for (const Dispatcher::Send& s : sends) {
        const MonoTime done = service_(s, now);
        // The client gives up at the deadline, as the HTTP client's stream timer does.
        if (done >= s.deadline) {
          events_.emplace(s.deadline, Event{s.connection, Outcome::kTimeout});
        } else {
          events_.emplace(done, Event{s.connection, Outcome::kResponse});
        }
      }
    }
    end_ = now;
  }

  MonoTime end() const { return end_; }

 private:
  struct Event {
    int connection;
    Outcome outcome;
  };
  Dispatcher& d_;
  Service service_;
  std::multimap<MonoTime, Event> events_;
  MonoTime end_{};
};

// 1 ms per request, except that the server stops for 2 s at 5 s into the run: whatever it
// receives between 5 s and 7 s is answered at 7 s + 1 ms.
MonoTime StallingServer(const Dispatcher::Send&, MonoTime sent) {
  const MonoTime stall_start = kStart + seconds(5);
  const MonoTime stall_end = kStart + seconds(7);
  if (sent >= stall_start && sent < stall_end) return stall_end + milliseconds(1);
  return sent + milliseconds(1);
}

Dispatcher Make(double rate, Duration duration, int connections, size_t max_queue,
                Duration timeout = seconds(30)) {
  Dispatcher::Options o;
  o.connections = connections;
  o.max_queue = max_queue;
  o.timeout = timeout;
  return Dispatcher(Schedule({ConstantPhase(duration, rate)}, 1), 1, o, kStart);
}

TEST(DispatcherTest, SteadyServerGivesItsLatencyAndNoLag) {
  Dispatcher d = Make(100, seconds(10), 1, 10000);
  Simulation(d, [](const Dispatcher::Send&, MonoTime sent) {
    return sent + milliseconds(1);
  }).Run();
  EXPECT_EQ(d.counts().scheduled, 1000u);
  EXPECT_EQ(d.counts().sent, 1000u);
  EXPECT_EQ(d.counts().completed, 1000u);
  EXPECT_EQ(d.counts().status_class[2], 1000u);
  EXPECT_EQ(d.counts().dropped, 0u);
  EXPECT_NEAR(static_cast<double>(d.latency().Quantile(0.99)), 1e6, 1e4);
  EXPECT_EQ(d.latency().max(), 1000000u);
  EXPECT_EQ(d.send_lag().max(), 0u);
}

TEST(DispatcherTest, StallShowsInHighPercentilesCorrectedForCoordinatedOmission) {
  Dispatcher d = Make(100, seconds(10), 1, 10000);
  Simulation(d, StallingServer).Run();
  EXPECT_EQ(d.counts().completed, 1000u);
  EXPECT_EQ(d.counts().dropped, 0u);
  const Histogram& h = d.latency();
  // Each of the 200 requests due during the stall waited for it: about 20 % of the requests
  // took from 2 s down to a few ms. A closed-loop client on one connection would have sent
  // just one request during the stall and reported 999 requests of 1 ms (P99 = 1 ms).
  EXPECT_LT(h.Quantile(0.50), 2000000u);
  EXPECT_GT(h.Quantile(0.90), 900'000'000u);
  EXPECT_GT(h.Quantile(0.99), 1'800'000'000u);
  EXPECT_NEAR(static_cast<double>(h.max()), 2.001e9, 2e7);
  // The requests waited for the connection: that is their send lag.
  EXPECT_GT(d.send_lag().max(), 1'900'000'000u);
  EXPECT_LT(d.send_lag().Quantile(0.5), 1000u);

  // It agrees with HdrHistogram's correction of what a closed-loop client measures: 999 fast
  // requests and one of 2 s, corrected at the expected interval of 10 ms.
  Histogram closed;
  closed.RecordN(1000000, 800);
  closed.RecordCorrected(2001000000, 10000000);
  for (double q : {0.95, 0.99, 0.999}) {
    const double ours = static_cast<double>(h.Quantile(q));
    const double hdr = static_cast<double>(closed.Quantile(q));
    EXPECT_NEAR(ours / hdr, 1.0, 0.06) << "q=" << q << " ours " << ours << " hdr " << hdr;
  }
}

TEST(DispatcherTest, FullQueueDropsAndCountsEveryRequest) {
  Dispatcher d = Make(100, seconds(10), 1, 50);
  Simulation(d, StallingServer).Run();
  const Counts& c = d.counts();
  EXPECT_EQ(c.scheduled, 1000u);
  EXPECT_EQ(c.scheduled, c.sent + c.dropped);
  EXPECT_EQ(c.completed, c.sent);
  // 200 due during the stall: one on the connection, 50 in the queue, the other 149 dropped;
  // and the one due at 7 s, when the connection is still busy and the queue still full.
  EXPECT_EQ(c.dropped, 150u);
  EXPECT_EQ(d.phase_counts()[0].dropped, 150u);
}

TEST(DispatcherTest, TimeoutsCountWithTheirLatencyQueuedOrInFlight) {
  Dispatcher d = Make(100, seconds(10), 1, 10000, milliseconds(500));
  Simulation(d, StallingServer).Run();
  const Counts& c = d.counts();
  EXPECT_EQ(c.scheduled, 1000u);
  EXPECT_EQ(c.completed, 1000u);
  EXPECT_GT(c.timeouts, 100u);
  EXPECT_EQ(c.status_class[2] + c.timeouts, 1000u);
  EXPECT_EQ(c.errors(), c.timeouts);
  // A timeout is recorded at its deadline: nothing takes longer than the timeout.
  EXPECT_GE(d.latency().max(), 500'000'000u);
  EXPECT_LE(d.latency().max(), 510'000'000u);
  EXPECT_EQ(d.latency().count(), 1000u);
}

TEST(DispatcherTest, IdleConnectionsTakeRequestsAtTheirIntendedTime) {
  // 8 connections, 50 ms service at 100/s: 5 in flight, never queued.
  Dispatcher d = Make(100, seconds(2), 8, 10);
  Simulation(d, [](const Dispatcher::Send&, MonoTime sent) {
    return sent + milliseconds(50);
  }).Run();
  EXPECT_EQ(d.counts().completed, 200u);
  EXPECT_EQ(d.send_lag().max(), 0u);
  EXPECT_EQ(d.latency().min(), 50'000'000u);
  EXPECT_EQ(d.latency().max(), 50'000'000u);
}

TEST(DispatcherTest, ConnectAndIoErrorsAreCountedButNotTimed) {
  Dispatcher d = Make(10, seconds(1), 2, 10);
  std::vector<Dispatcher::Send> sends;
  d.Advance(kStart, sends);
  ASSERT_EQ(sends.size(), 1u);
  d.Complete(sends[0].connection, kStart + milliseconds(1), Outcome::kConnectError, 0, sends);
  sends.clear();
  d.Advance(kStart + milliseconds(100), sends);
  ASSERT_EQ(sends.size(), 1u);
  d.Complete(sends[0].connection, kStart + milliseconds(101), Outcome::kIoError, 0, sends);
  sends.clear();
  d.Advance(kStart + milliseconds(200), sends);
  d.Complete(sends[0].connection, kStart + milliseconds(210), Outcome::kResponse, 503, sends);
  EXPECT_EQ(d.counts().connect_errors, 1u);
  EXPECT_EQ(d.counts().io_errors, 1u);
  EXPECT_EQ(d.counts().status_class[5], 1u);
  EXPECT_EQ(d.counts().errors(), 3u);
  EXPECT_EQ(d.latency().count(), 1u);
  const IntervalStats interval = d.TakeInterval();
  EXPECT_EQ(interval.counts.completed, 3u);
  EXPECT_EQ(interval.latency.count(), 1u);
  EXPECT_EQ(d.TakeInterval().counts.completed, 0u);
}

TEST(DispatcherTest, ShardsSplitTheSchedule) {
  Dispatcher::Options o;
  o.shards = 3;
  uint64_t total = 0;
  for (uint32_t shard = 0; shard < 3; ++shard) {
    o.shard = shard;
    Dispatcher d(Schedule({ConstantPhase(seconds(1), 100)}, 1), 1, o, kStart);
    Simulation(d, [shard](const Dispatcher::Send& s, MonoTime sent) {
      EXPECT_EQ(s.request.sequence % 3, shard);
      return sent + milliseconds(1);
    }).Run();
    total += d.counts().completed;
  }
  EXPECT_EQ(total, 100u);
}

TEST(DispatcherTest, StopAbandonsWhatIsQueuedOrInFlight) {
  Dispatcher d = Make(100, seconds(10), 1, 100);
  std::vector<Dispatcher::Send> sends;
  d.Advance(kStart + milliseconds(95), sends);  // 10 due: 1 sent, 9 queued
  EXPECT_EQ(sends.size(), 1u);
  EXPECT_EQ(d.queued(), 9u);
  d.Stop();
  EXPECT_TRUE(d.Finished());
  EXPECT_EQ(d.abandoned(), 10u);
  d.Complete(sends[0].connection, kStart + seconds(1), Outcome::kResponse, 200, sends);
  EXPECT_EQ(d.counts().completed, 0u);
  EXPECT_FALSE(d.NextWake().has_value());
}

}  // namespace
}  // namespace tailguard::loadgen
