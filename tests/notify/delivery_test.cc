// The delivery worker against a scripted sender and a real store, on given time.
#include "alert/notify/delivery.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "alert/notify/store_rows.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/sqlite.h"

namespace tailguard::notify {
namespace {

using namespace std::chrono_literals;
using store::EventStore;
using store::OutboxItem;
using ::testing::ElementsAre;

// Answers each Send() with the next scripted result (the last one repeats); records requests.
class ScriptedSender final : public HttpSender {
 public:
  SendResult Send(const HttpRequest& request, Duration timeout) override {
    std::lock_guard<std::mutex> lock(mu_);
    requests.push_back(request);
    timeouts.push_back(timeout);
    if (auto it = by_url.find(request.url); it != by_url.end()) {
      cv_.notify_all();
      return it->second;
    }
    SendResult r = script.empty() ? Ok() : script.front();
    if (script.size() > 1) script.pop_front();
    cv_.notify_all();
    return r;
  }
  static SendResult Ok() {
    SendResult r;
    r.http_status = 200;
    r.delivered = true;
    return r;
  }
  static SendResult Down() {  // connection refused
    SendResult r;
    r.error = "Couldn't connect to server";
    r.retryable = true;
    return r;
  }
  static SendResult Status(int code, bool retryable) {
    SendResult r;
    r.http_status = code;
    r.error = "HTTP " + std::to_string(code) + ": nope";
    r.retryable = retryable;
    return r;
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests.size();
  }
  // Waits (up to 10 s) until `n` requests were sent.
  bool WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, 10s, [&] { return requests.size() >= n; });
  }

  std::deque<SendResult> script;
  std::map<std::string, SendResult> by_url;  // wins over the script for its URL
  std::vector<HttpRequest> requests;
  std::vector<Duration> timeouts;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
};

class DeliveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("delivery_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    Reopen();
    ReceiverOptions hook;
    hook.name = "hook";
    hook.target.kind = ReceiverTarget::Kind::kWebhook;
    hook.target.url = "http://127.0.0.1:1/hook";
    hook.target.timeout = 3s;
    config_.receivers.push_back(hook);
    options_.jitter = 0;  // exact waits
    options_.seed = 1;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void Reopen() {
    store_.reset();
    absl::StatusOr<std::unique_ptr<EventStore>> s = EventStore::Open((dir_ / "t.db").string());
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
  }

  // Stores a pending notification for `receiver` due at `at`, in alert group `group` (by
  // default one of its own); returns its outbox id.
  int64_t Enqueue(const std::string& key, WallTime at, const std::string& receiver = "hook",
                  const std::string& group = "") {
    Notification n;
    n.time = at;
    n.receiver = receiver;
    n.group_key = group.empty() ? "{alertname=\"" + key + "\"}" : group;
    n.idempotency_key = key;
    OutboxItem item;
    item.method = "POST";
    item.url = "http://127.0.0.1:1/" + receiver;
    item.headers = {{"Idempotency-Key", key}};
    item.body = "{\"key\":\"" + key + "\"}";
    item.summary = "firing x";
    bool inserted = false;
    absl::StatusOr<int64_t> id = store_->Enqueue(StoreRow(n), item, &inserted);
    EXPECT_TRUE(id.ok()) << id.status();
    EXPECT_TRUE(inserted);
    return id.ok() ? *id : 0;
  }

  OutboxItem Item(const std::string& key) {
    store::OutboxQuery q;
    q.limit = 0;
    absl::StatusOr<std::vector<OutboxItem>> all = store_->ListOutbox(q);
    EXPECT_TRUE(all.ok()) << all.status();
    for (const OutboxItem& o : *all) {
      if (o.idempotency_key == key) return o;
    }
    ADD_FAILURE() << "no outbox item " << key;
    return {};
  }

  std::filesystem::path dir_;
  std::unique_ptr<EventStore> store_;
  AlertConfig config_;
  DeliveryOptions options_;
  FakeClock clock_;
  ScriptedSender sender_;
};

TEST_F(DeliveryTest, DeliversDueItemsOldestFirstWithTheirBytesAndTimeout) {
  const WallTime t0 = clock_.WallNow();
  Enqueue("b", t0 + 1s);
  Enqueue("a", t0);
  Enqueue("later", t0 + 1h);
  DeliveryWorker worker(config_, *store_, sender_, clock_, options_);
  const WallTime next = worker.RunOnce(t0 + 1s);
  ASSERT_EQ(sender_.requests.size(), 2u);
  EXPECT_EQ(sender_.requests[0].body, "{\"key\":\"a\"}");
  EXPECT_EQ(sender_.requests[1].body, "{\"key\":\"b\"}");
  EXPECT_EQ(sender_.requests[0].url, "http://127.0.0.1:1/hook");
  EXPECT_THAT(sender_.requests[0].headers,
              ElementsAre(std::pair<std::string, std::string>("Idempotency-Key", "a")));
  EXPECT_EQ(sender_.timeouts[0], 3s);
  EXPECT_EQ(Item("a").state, OutboxItem::State::kDelivered);
  EXPECT_EQ(Item("a").last_http_status, 200);
  EXPECT_EQ(Item("later").state, OutboxItem::State::kPending);
  EXPECT_EQ(next, t0 + 1h);  // sleeps until the next item is due
  EXPECT_EQ(worker.stats().delivered.load(), 2u);
}

TEST_F(DeliveryTest, RetriesWithExponentialBackoffUpToTheCapThenDelivers) {
  options_.initial_backoff = 1s;
  options_.max_backoff = 8s;
  const WallTime t0 = clock_.WallNow();
  Enqueue("k", t0);
  sender_.script = {ScriptedSender::Down(), ScriptedSender::Down(), ScriptedSender::Down(),
                    ScriptedSender::Down(), ScriptedSender::Down(), ScriptedSender::Ok()};
  DeliveryWorker worker(config_, *store_, sender_, clock_, options_);
  WallTime now = t0;
  std::vector<Duration> waits;
  for (int i = 0; i < 5; ++i) {
    const WallTime next = worker.RunOnce(now);
    EXPECT_EQ(worker.RunOnce(now), next) << "nothing is sent before the retry is due";
    waits.push_back(next - now);
    now = next;
  }
  // The clock of the worker (for `done`) stays at t0: waits are measured from `now` only after
  // the first, so compare the schedule of next_attempt instead.
  EXPECT_EQ(Item("k").attempts, 5);
  EXPECT_EQ(Item("k").state, OutboxItem::State::kPending);
  EXPECT_EQ(Item("k").last_error, "Couldn't connect to server");
  worker.RunOnce(now);
  EXPECT_EQ(Item("k").state, OutboxItem::State::kDelivered);
  EXPECT_EQ(sender_.requests.size(), 6u);
  // Each attempt ran at the previous next_attempt; the worker's clock did not move, so `done`
  // is max(clock, now) = now and the waits are the backoff itself: 1, 2, 4, 8 (cap), 8.
  EXPECT_THAT(waits,
              ElementsAre(Duration(1s), Duration(2s), Duration(4s), Duration(8s), Duration(8s)));
  EXPECT_EQ(worker.stats().retries.load(), 5u);
}

TEST_F(DeliveryTest, JitterDrawsEachWaitWithinItsRange) {
  options_.initial_backoff = 10s;
  options_.max_backoff = 10s;
  options_.jitter = 0.5;
  const WallTime t0 = clock_.WallNow();
  // 20 receivers: a receiver that fails is held back after its first message.
  for (int i = 0; i < 20; ++i) Enqueue("k" + std::to_string(i), t0, "r" + std::to_string(i));
  sender_.script = {ScriptedSender::Status(503, true)};
  DeliveryWorker worker(config_, *store_, sender_, clock_, options_);
  worker.RunOnce(t0);
  std::vector<Duration> waits;
  for (int i = 0; i < 20; ++i) {
    const OutboxItem o = Item("k" + std::to_string(i));
    EXPECT_GE(o.next_attempt - t0, 5s);
    EXPECT_LE(o.next_attempt - t0, 10s);
    waits.push_back(o.next_attempt - t0);
  }
  std::sort(waits.begin(), waits.end());
  EXPECT_LT(waits.front(), waits.back()) << "jitter spreads the retries";
}

TEST_F(DeliveryTest, PermanentErrorFailsAtOnce) {
  const WallTime t0 = clock_.WallNow();
  Enqueue("k", t0);
  sender_.script = {ScriptedSender::Status(400, false)};
  DeliveryWorker worker(config_, *store_, sender_, clock_, options_);
  EXPECT_EQ(worker.RunOnce(t0), WallTime::max());
  const OutboxItem o = Item("k");
  EXPECT_EQ(o.state, OutboxItem::State::kFailed);
  EXPECT_EQ(o.last_http_status, 400);
  EXPECT_EQ(o.last_error, "HTTP 400: nope (permanent error: not retried)");
  worker.RunOnce(t0 + 1h);
  EXPECT_EQ(sender_.requests.size(), 1u);
  EXPECT_EQ(worker.stats().failed.load(), 1u);
}

TEST_F(DeliveryTest, GivesUpAfterGiveUpAfter) {
  options_.initial_backoff = 1h;
  options_.max_backoff = 1h;
  options_.give_up_after = 3h;
  const WallTime t0 = clock_.WallNow();
  Enqueue("k", t0);
  sender_.script = {ScriptedSender::Status(502, true)};
  DeliveryWorker worker(config_, *store_, sender_, clock_, options_);
  WallTime now = t0;
  for (int i = 0; i < 3; ++i) {
    now = worker.RunOnce(now);
    ASSERT_EQ(Item("k").state, OutboxItem::State::kPending) << i;
  }
  worker.RunOnce(now);  // 3 h after it was stored
  const OutboxItem o = Item("k");
  EXPECT_EQ(o.state, OutboxItem::State::kFailed);
  EXPECT_EQ(o.attempts, 4);
  EXPECT_THAT(o.last_error, ::testing::HasSubstr("gave up after"));
}

TEST_F(DeliveryTest, RetryAfterFromTheReceiverIsHonoured) {
  options_.initial_backoff = 1s;
  options_.max_backoff = 5min;
  const WallTime t0 = clock_.WallNow();
  Enqueue("k", t0);
  SendResult busy = ScriptedSender::Status(429, true);
  busy.retry_after = 30s;
  sender_.script = {busy};
  DeliveryWorker worker(config_, *store_, sender_, clock_, options_);
  EXPECT_EQ(worker.RunOnce(t0), t0 + 30s);
}

TEST_F(DeliveryTest, RateLimitHoldsMessagesInTheOutboxWithoutDroppingThem) {
  config_.receivers[0].target.rate_per_minute = 6;  // one per 10 s, burst 1
  const WallTime t0 = clock_.WallNow();
  for (int i = 0; i < 3; ++i) Enqueue("k" + std::to_string(i), t0);
  DeliveryWorker worker(config_, *store_, sender_, clock_, options_);
  WallTime next = worker.RunOnce(t0);
  EXPECT_EQ(sender_.requests.size(), 1u);
  EXPECT_EQ(next, t0 + 10s);
  EXPECT_EQ(worker.RunOnce(t0 + 5s), t0 + 10s);
  EXPECT_EQ(sender_.requests.size(), 1u);
  worker.RunOnce(t0 + 10s);
  EXPECT_EQ(sender_.requests.size(), 2u);
  worker.RunOnce(t0 + 20s);
  EXPECT_EQ(sender_.requests.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Item("k" + std::to_string(i)).state, OutboxItem::State::kDelivered);
    EXPECT_EQ(Item("k" + std::to_string(i)).attempts, 1) << "waiting is not an attempt";
  }
  EXPECT_GE(worker.stats().rate_limited.load(), 2u);
}

TEST_F(DeliveryTest, AnotherReceiverIsNotHeldUpByALimitedOne) {
  config_.receivers[0].target.rate_per_minute = 1;
  const WallTime t0 = clock_.WallNow();
  Enqueue("h1", t0);
  Enqueue("h2", t0);
  Enqueue("o1", t0, "other");
  DeliveryWorker worker(config_, *store_, sender_, clock_, options_);
  worker.RunOnce(t0);
  ASSERT_EQ(sender_.requests.size(), 2u);
  EXPECT_EQ(sender_.requests[1].url, "http://127.0.0.1:1/other");
  EXPECT_EQ(sender_.timeouts[1], 10s) << "a receiver not in the config gets the default timeout";
}

TEST_F(DeliveryTest, AReceiverThatIsDownGetsOneProbePerBackoffAndHoldsUpNoOther) {
  options_.initial_backoff = 10s;
  const WallTime t0 = clock_.WallNow();
  for (int i = 0; i < 5; ++i) Enqueue("h" + std::to_string(i), t0);  // to the dead receiver
  Enqueue("o", t0 + 1s, "other");
  SendResult timeout;
  timeout.error = "Timeout was reached";
  timeout.retryable = true;
  sender_.by_url["http://127.0.0.1:1/hook"] = timeout;
  DeliveryWorker worker(config_, *store_, sender_, clock_, options_);
  EXPECT_EQ(worker.RunOnce(t0 + 1s), t0 + 11s);
  ASSERT_EQ(sender_.requests.size(), 2u) << "one probe of the dead receiver, then the other";
  EXPECT_EQ(sender_.requests[0].url, "http://127.0.0.1:1/hook");
  EXPECT_EQ(sender_.requests[1].url, "http://127.0.0.1:1/other");
  EXPECT_EQ(Item("o").state, OutboxItem::State::kDelivered);
  for (int i = 1; i < 5; ++i) {
    EXPECT_EQ(Item("h" + std::to_string(i)).attempts, 0) << "held back, not tried";
    EXPECT_EQ(Item("h" + std::to_string(i)).state, OutboxItem::State::kPending);
  }
  // Nothing is tried before the backoff has passed; then one probe again.
  EXPECT_EQ(worker.RunOnce(t0 + 5s), t0 + 11s);
  EXPECT_EQ(sender_.requests.size(), 2u);
  sender_.by_url.clear();  // the receiver is back
  worker.RunOnce(t0 + 11s);
  EXPECT_EQ(sender_.requests.size(), 7u) << "the probe succeeds and the rest follow";
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(Item("h" + std::to_string(i)).state, OutboxItem::State::kDelivered);
  }
}

TEST_F(DeliveryTest, HeldBackReceiversCannotFillTheBatch) {
  options_.batch = 2;
  config_.receivers[0].target.rate_per_minute = 1;
  const WallTime t0 = clock_.WallNow();
  for (int i = 0; i < 4; ++i) Enqueue("h" + std::to_string(i), t0);  // rate-limited receiver
  Enqueue("o", t0 + 1s, "other");                                    // the newest
  DeliveryWorker worker(config_, *store_, sender_, clock_, options_);
  const WallTime first = worker.RunOnce(t0 + 1s);  // h0 sent; h1 out of tokens
  EXPECT_EQ(first, t0 + 1s) << "the batch was full: look again at once";
  worker.RunOnce(t0 + 1s);
  EXPECT_EQ(Item("o").state, OutboxItem::State::kDelivered);
  EXPECT_EQ(Item("h1").state, OutboxItem::State::kPending);
}

TEST_F(DeliveryTest, AnOutcomeTheStoreRefusesIsKeptAndTheMessageIsNotSentAgain) {
  const WallTime t0 = clock_.WallNow();
  Enqueue("k", t0);
  DeliveryWorker worker(config_, *store_, sender_, clock_, options_);
  {
    // Another process holds the write lock past the store's busy timeout (5 s).
    absl::StatusOr<store::Database> other = store::Database::Open((dir_ / "t.db").string());
    ASSERT_TRUE(other.ok()) << other.status();
    ASSERT_TRUE(other->Exec("BEGIN IMMEDIATE").ok());
    EXPECT_EQ(worker.RunOnce(t0), t0 + options_.poll_interval) << "no spinning";
    EXPECT_EQ(sender_.requests.size(), 1u);
    EXPECT_EQ(worker.stats().store_errors.load(), 1u);
    ASSERT_TRUE(other->Exec("ROLLBACK").ok());
  }
  worker.RunOnce(t0 + 1s);
  EXPECT_EQ(sender_.requests.size(), 1u) << "delivered once; only the record was retried";
  EXPECT_EQ(Item("k").state, OutboxItem::State::kDelivered);
}

TEST_F(DeliveryTest, AMessageOlderThanGiveUpAfterIsFailedWithoutSending) {
  options_.give_up_after = 24h;
  const WallTime t0 = clock_.WallNow();
  Enqueue("old", t0);
  DeliveryWorker worker(config_, *store_, sender_, clock_, options_);
  worker.RunOnce(t0 + 25h);  // e.g. tailguard was down for a day
  EXPECT_TRUE(sender_.requests.empty());
  EXPECT_EQ(Item("old").state, OutboxItem::State::kFailed);
  EXPECT_EQ(Item("old").last_error, "gave up after 1d1h");
}

TEST_F(DeliveryTest, ARestartResumesPendingDeliveriesWithTheSameBytes) {
  const WallTime t0 = clock_.WallNow();
  Enqueue("k", t0);
  sender_.script = {ScriptedSender::Down(), ScriptedSender::Ok()};
  WallTime next;
  {
    DeliveryWorker worker(config_, *store_, sender_, clock_, options_);
    next = worker.RunOnce(t0);
  }
  Reopen();  // as a new process would
  DeliveryWorker worker(config_, *store_, sender_, clock_, options_);
  worker.RunOnce(next);
  ASSERT_EQ(sender_.requests.size(), 2u);
  EXPECT_EQ(sender_.requests[0].body, sender_.requests[1].body);
  EXPECT_EQ(sender_.requests[0].headers, sender_.requests[1].headers);
  EXPECT_EQ(Item("k").state, OutboxItem::State::kDelivered);
  EXPECT_EQ(Item("k").attempts, 2);
}

// Issue 15: after a restart (no receiver held back in memory any more), a group's newer message
// ("resolved") was sent while its older one ("firing") waited out its backoff, so the chat ended
// on FIRING. A group's messages now go in order, the order kept in the store.
TEST_F(DeliveryTest, AGroupsMessagesKeepTheirOrderAcrossARestart) {
  const WallTime t0 = clock_.WallNow();
  const std::string group = "{alertname=\"p99\",model=\"risk\"}";
  Enqueue("firing", t0, "hook", group);
  sender_.script = {ScriptedSender::Down(), ScriptedSender::Ok()};
  WallTime retry;
  {
    DeliveryWorker worker(config_, *store_, sender_, clock_, options_);
    retry = worker.RunOnce(t0);  // fails: firing waits for its retry (initial_backoff)
  }
  ASSERT_EQ(sender_.count(), 1u);
  ASSERT_GT(retry, t0);
  const WallTime resolved_at = t0 + (retry - t0) / 2;
  Enqueue("resolved", resolved_at, "hook", group);
  // Another group of the same receiver is not held up by this one.
  Enqueue("other", resolved_at, "hook", "{alertname=\"other\"}");

  Reopen();  // a restart: a new process, a new worker
  DeliveryWorker worker(config_, *store_, sender_, clock_, options_);
  const WallTime next = worker.RunOnce(resolved_at);
  ASSERT_EQ(sender_.count(), 2u);
  EXPECT_EQ(sender_.requests[1].body, "{\"key\":\"other\"}");
  EXPECT_EQ(Item("resolved").state, OutboxItem::State::kPending);
  // The worker wakes for firing's retry, not for resolved (due already, but not next in line).
  EXPECT_EQ(next, retry);
  worker.RunOnce(retry);
  worker.RunOnce(retry);
  ASSERT_EQ(sender_.count(), 4u);
  EXPECT_EQ(sender_.requests[2].body, "{\"key\":\"firing\"}");
  EXPECT_EQ(sender_.requests[3].body, "{\"key\":\"resolved\"}");
  EXPECT_EQ(Item("resolved").state, OutboxItem::State::kDelivered);
}

// A message given up on does not hold up the rest of its group.
TEST_F(DeliveryTest, AFailedMessageReleasesItsGroup) {
  const WallTime t0 = clock_.WallNow();
  const std::string group = "{alertname=\"g\"}";
  Enqueue("first", t0, "hook", group);
  Enqueue("second", t0 + 1s, "hook", group);
  sender_.script = {ScriptedSender::Status(400, false), ScriptedSender::Ok()};
  DeliveryWorker worker(config_, *store_, sender_, clock_, options_);
  worker.RunOnce(t0 + 1s);
  worker.RunOnce(t0 + 1s);
  ASSERT_EQ(sender_.count(), 2u);
  EXPECT_EQ(Item("first").state, OutboxItem::State::kFailed);
  EXPECT_EQ(Item("second").state, OutboxItem::State::kDelivered);
}

TEST_F(DeliveryTest, WeComReceiversAreCheckedByErrcode) {
  ReceiverOptions wecom;
  wecom.name = "wecom";
  wecom.target.kind = ReceiverTarget::Kind::kWeCom;
  wecom.target.url = "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k";
  config_.receivers.push_back(wecom);
  const WallTime t0 = clock_.WallNow();
  Enqueue("w", t0, "wecom");
  Enqueue("h", t0, "hook");
  DeliveryWorker worker(config_, *store_, sender_, clock_, options_);
  worker.RunOnce(t0);
  ASSERT_EQ(sender_.requests.size(), 2u);
  EXPECT_EQ(sender_.requests[0].check, HttpRequest::Check::kWeComErrcode);
  EXPECT_EQ(sender_.requests[1].check, HttpRequest::Check::kStatus);
}

TEST_F(DeliveryTest, TheThreadDeliversWhenWoken) {
  options_.poll_interval = 1h;  // only Wake() or a due item starts a pass
  DeliveryWorker worker(config_, *store_, sender_, clock_, options_);
  worker.Start();
  Enqueue("k", clock_.WallNow());
  worker.Wake();
  ASSERT_TRUE(sender_.WaitFor(1));
  worker.Stop();
  EXPECT_EQ(Item("k").state, OutboxItem::State::kDelivered);
}

}  // namespace
}  // namespace tailguard::notify
