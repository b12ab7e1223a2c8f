// The alert journal: the engine's output reaches the store and the outbox, one transaction per
// tick with the engine's state, so a restart continues where it stopped. On given time.
#include "alert/notify/journal.h"

#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "alert/notify/silences.h"
#include "analyze/journal_subscriber.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tailguard/analyzer.h"

namespace tailguard::notify {
namespace {

using namespace std::chrono_literals;
using store::EventStore;
using store::OutboxItem;
using ::testing::HasSubstr;

constexpr char kMetric[] = "tailguard_request_duration_seconds";

AlertConfig Rules() {
  AlertConfig c;
  c.route.group_wait = 0s;
  c.route.group_interval = 10s;
  c.route.repeat_interval = 1h;
  c.route.group_by = {"..."};
  c.default_receiver = "hook";
  ReceiverOptions hook;
  hook.name = "hook";
  hook.route = c.route;
  hook.target.kind = ReceiverTarget::Kind::kWebhook;
  hook.target.url = "http://127.0.0.1:9/hook";
  c.receivers.push_back(hook);
  ReceiverOptions log_only;
  log_only.name = "log";
  log_only.route = c.route;
  c.receivers.push_back(log_only);
  AlertRule r;
  r.name = "slow";
  r.stat = Statistic::kP99;
  AlertTier warn;
  warn.above = Threshold::Absolute(0.1);
  warn.severity = "warning";
  warn.receivers = {"hook"};
  AlertTier page;
  page.above = Threshold::Absolute(0.5);
  page.severity = "emergency";
  page.receivers = {"log"};
  page.actions = {"degrade"};
  r.tiers = {warn, page};
  r.debounce.pre_alert_after = 1;
  r.debounce.alert_after = 0s;
  r.debounce.resolve_after = 20s;
  r.debounce.escalate_after = 1;
  r.debounce.deescalate_after = 20s;
  c.rules.push_back(r);
  return c;
}

// One engine with its journal over a store file, as `tailguard serve` runs them.
struct Pipeline {
  Pipeline(const std::string& path, const AlertConfig& config) {
    absl::StatusOr<std::unique_ptr<EventStore>> s = EventStore::Open(path);
    EXPECT_TRUE(s.ok()) << s.status();
    store = std::move(*s);
    JournalOptions options;
    options.context.external_url = "http://tg.example";
    options.on_enqueued = [this] { ++wakes; };
    absl::StatusOr<std::unique_ptr<AlertJournal>> j = AlertJournal::Create(config, *store, options);
    EXPECT_TRUE(j.ok()) << j.status();
    journal = std::move(*j);
    // As the live loop runs it: the analyzer feeds the engine, the journal subscribes.
    AnalyzerOptions analysis;
    analysis.muter = journal.get();
    absl::StatusOr<std::unique_ptr<Analyzer>> a = Analyzer::Create(config, analysis);
    EXPECT_TRUE(a.ok()) << a.status();
    analyzer = std::move(*a);
    subscriber = std::make_unique<analyze::JournalSubscriber>(*journal);
    analyzer->Subscribe(subscriber.get());
    engine = &analyzer->engine();
    absl::StatusOr<std::optional<std::string>> state = journal->LoadState();
    EXPECT_TRUE(state.ok()) << state.status();
    if (state->has_value()) {
      EXPECT_TRUE(engine->RestoreState(**state).ok());
      restored = true;
      EXPECT_TRUE(journal->Reconcile(engine->ActiveAlerts(), FakeClock::DefaultStart()).ok());
    }
  }

  // One tick: every model's P99 at `t`.
  void Tick(WallTime t, const std::vector<std::pair<std::string, double>>& p99) {
    journal->BeginTick(t);
    Batch batch;
    batch.time = t;
    for (const auto& [model, v] : p99) {
      SeriesPoint& p = batch.points.emplace_back();
      p.metric = kMetric;
      p.labels = {{"model", model}, {"stage", "total"}};
      p.p99 = v;
    }
    analyzer->Analyze(batch);
    journal->EndTick(*engine);
  }

  std::vector<OutboxItem> Outbox() {
    store::OutboxQuery q;
    q.limit = 0;
    absl::StatusOr<std::vector<OutboxItem>> all = store->ListOutbox(q);
    EXPECT_TRUE(all.ok()) << all.status();
    std::reverse(all->begin(), all->end());  // oldest first
    return *all;
  }

  std::unique_ptr<EventStore> store;
  std::unique_ptr<AlertJournal> journal;
  std::unique_ptr<Analyzer> analyzer;
  std::unique_ptr<analyze::JournalSubscriber> subscriber;
  AlertEngine* engine = nullptr;
  bool restored = false;
  int wakes = 0;
};

class JournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("journal_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name = "t.db") { return (dir_ / name).string(); }

  std::filesystem::path dir_;
  const WallTime t0_ = FakeClock::DefaultStart();
};

TEST_F(JournalTest, AFiringAlertIsStoredWithARenderedPendingDelivery) {
  Pipeline p(Path(), Rules());
  p.Tick(t0_, {{"rank", 0.2}});
  absl::StatusOr<std::vector<store::AlertRow>> alerts = p.store->ListAlerts({});
  ASSERT_TRUE(alerts.ok());
  ASSERT_EQ(alerts->size(), 1u);
  EXPECT_EQ((*alerts)[0].rule, "slow");
  EXPECT_EQ((*alerts)[0].state, store::EpisodeState::kAlert);
  EXPECT_EQ((*alerts)[0].severity, "warning");

  const std::vector<OutboxItem> out = p.Outbox();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].receiver, "hook");
  EXPECT_EQ(out[0].state, OutboxItem::State::kPending);
  EXPECT_EQ(out[0].url, "http://127.0.0.1:9/hook");
  EXPECT_EQ(out[0].next_attempt, t0_);
  const nlohmann::json body = nlohmann::json::parse(out[0].body);
  EXPECT_EQ(body["status"], "firing");
  EXPECT_EQ(body["alerts"][0]["labels"]["model"], "rank");
  EXPECT_THAT(out[0].summary, HasSubstr("slow"));
  EXPECT_EQ(p.wakes, 1);
  EXPECT_EQ(p.journal->stats().notifications.load(), 1u);
  EXPECT_EQ(p.journal->pending(), 0u);
}

TEST_F(JournalTest, AReceiverWithoutATargetIsRecordedOnlyAndActionsAreRecorded) {
  Pipeline p(Path(), Rules());
  p.Tick(t0_, {{"rank", 0.9}});  // emergency: hook (tier 0) and log (tier 1), action degrade
  const std::vector<OutboxItem> out = p.Outbox();
  ASSERT_EQ(out.size(), 2u);
  std::map<std::string, OutboxItem> by;
  for (const OutboxItem& o : out) by[o.receiver] = o;
  EXPECT_EQ(by["hook"].state, OutboxItem::State::kPending);
  EXPECT_EQ(by["log"].state, OutboxItem::State::kSkipped);
  EXPECT_EQ(by["log"].last_error, "receiver has no target: recorded only");

  absl::StatusOr<std::vector<store::TimelineEntry>> timeline = p.store->ListTimeline(t0_, 0);
  ASSERT_TRUE(timeline.ok());
  bool action = false;
  for (const store::TimelineEntry& e : *timeline) {
    if (e.type == store::TimelineType::kAction) {
      action = true;
      EXPECT_EQ(e.kind, "degrade");
      EXPECT_THAT(e.detail, HasSubstr("recorded only"));
    }
  }
  EXPECT_TRUE(action) << "the degrade decision is recorded as an event";
}

TEST_F(JournalTest, ASilenceInTheStoreMutesFromTheNextTickAndItsEndNotifies) {
  Pipeline p(Path(), Rules());
  store::Silence s;
  s.matchers = "{model=\"rank\"}";
  s.starts_at = t0_;
  s.ends_at = t0_ + 30s;
  s.created_by = "oncall";
  s.comment = "deploy";
  ASSERT_TRUE(AddSilence(*p.store, s).ok());  // as the API and the CLI add it
  for (int i = 0; i < 3; ++i) p.Tick(t0_ + i * 10s, {{"rank", 0.2}, {"feed", 0.2}});
  std::set<std::string> notified;
  for (const OutboxItem& o : p.Outbox()) notified.insert(o.group_key);
  ASSERT_EQ(notified.size(), 1u);
  EXPECT_THAT(*notified.begin(), HasSubstr("feed"));
  EXPECT_GE(p.journal->stats().muted.load(), 1u);

  // The silence ends at +30 s: the still-firing alert is notified at the group's next flush.
  for (int i = 3; i < 6; ++i) p.Tick(t0_ + i * 10s, {{"rank", 0.2}, {"feed", 0.2}});
  notified.clear();
  for (const OutboxItem& o : p.Outbox()) notified.insert(o.group_key);
  EXPECT_EQ(notified.size(), 2u);
}

TEST_F(JournalTest, ARestartContinuesWithoutRefiringOrLosingANotification) {
  // The same scenario run straight through, and cut in two by a restart on the same file.
  const auto scenario = [&](Pipeline* p, int from, int to) {
    for (int i = from; i < to; ++i) {
      const double v = i < 10 ? 0.2 : (i < 20 ? 0.9 : 0.01);  // warn, escalate, resolve
      p->Tick(t0_ + i * 5s, {{"rank", v}, {"feed", i < 15 ? 0.2 : 0.01}});
    }
  };
  std::vector<std::string> straight;
  {
    Pipeline p(Path("straight.db"), Rules());
    scenario(&p, 0, 40);
    for (const OutboxItem& o : p.Outbox()) straight.push_back(o.idempotency_key);
  }
  std::vector<std::string> restarted;
  {
    auto first = std::make_unique<Pipeline>(Path("restart.db"), Rules());
    scenario(first.get(), 0, 12);
    first.reset();  // the process ends (state saved with the last tick)
    Pipeline second(Path("restart.db"), Rules());
    EXPECT_TRUE(second.restored);
    scenario(&second, 12, 40);
    for (const OutboxItem& o : second.Outbox()) restarted.push_back(o.idempotency_key);
    absl::StatusOr<std::vector<store::AlertRow>> alerts = second.store->ListAlerts({});
    store::AlertQuery all;
    all.limit = 0;
    alerts = second.store->ListAlerts(all);
    ASSERT_TRUE(alerts.ok());
    EXPECT_EQ(alerts->size(), 2u) << "one episode per series: the restart fired nothing again";
  }
  EXPECT_FALSE(straight.empty());
  EXPECT_EQ(restarted, straight);
}

TEST_F(JournalTest, ReplayingATickWhoseCommitWasLostKeepsOneCopyOfEachNotification) {
  // A crash after the outbox commit but before the next state save is the same as a tick
  // journaled twice: the second copy of each notification is recognised by its key.
  Pipeline p(Path(), Rules());
  p.Tick(t0_, {{"rank", 0.2}});
  Notification n;
  n.time = t0_;
  n.receiver = "hook";
  n.idempotency_key = p.Outbox()[0].idempotency_key;
  p.journal->BeginTick(t0_);
  p.journal->OnNotification(n);
  p.journal->EndTick(*p.engine);
  EXPECT_EQ(p.Outbox().size(), 1u);
  EXPECT_EQ(p.journal->stats().duplicates.load(), 1u);
}

TEST_F(JournalTest, AlertsOfARemovedRuleAreEndedAtRestartNotLeftActive) {
  {
    Pipeline p(Path(), Rules());
    p.Tick(t0_, {{"rank", 0.2}});
  }
  AlertConfig renamed = Rules();
  renamed.rules[0].name = "slow_v2";
  Pipeline second(Path(), renamed);
  EXPECT_TRUE(second.restored);
  store::AlertQuery active;
  active.active_only = true;
  absl::StatusOr<std::vector<store::AlertRow>> rows = second.store->ListAlerts(active);
  ASSERT_TRUE(rows.ok());
  EXPECT_TRUE(rows->empty()) << "the episode of the removed rule is ended";
  store::AlertQuery all;
  rows = second.store->ListAlerts(all);
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].state, store::EpisodeState::kAbandoned);
}

TEST_F(JournalTest, AfterALongStopAGroupSendsOneRepeatNotABurst) {
  {
    Pipeline p(Path(), Rules());  // group_interval 10 s, repeat_interval 1 h
    p.Tick(t0_, {{"rank", 0.2}});
    ASSERT_EQ(p.Outbox().size(), 1u);
  }
  Pipeline second(Path(), Rules());  // three hours later, still breaching
  second.Tick(t0_ + 3h, {{"rank", 0.2}});
  const std::vector<OutboxItem> out = second.Outbox();
  ASSERT_EQ(out.size(), 2u) << "one repeat, not one per missed hour";
  EXPECT_GE(out[1].created, t0_ + 3h - 10s) << "stamped with the latest missed slot";
}

TEST_F(JournalTest, ABadTemplateIsRejectedAtCreate) {
  AlertConfig c = Rules();
  ReceiverOptions sms;
  sms.name = "sms";
  sms.target.kind = ReceiverTarget::Kind::kTemplate;
  sms.target.url = "http://sms.example/send";
  sms.target.body_template = "{\"text\":\"{{nonsense}}\"}";
  c.receivers.push_back(sms);
  absl::StatusOr<std::unique_ptr<EventStore>> s = EventStore::Open(Path());
  ASSERT_TRUE(s.ok());
  absl::StatusOr<std::unique_ptr<AlertJournal>> j = AlertJournal::Create(c, **s, {});
  ASSERT_FALSE(j.ok());
  EXPECT_THAT(std::string(j.status().message()), HasSubstr("receivers[2] (sms): template."));
  EXPECT_THAT(std::string(j.status().message()), HasSubstr("nonsense"));
}

}  // namespace
}  // namespace tailguard::notify
