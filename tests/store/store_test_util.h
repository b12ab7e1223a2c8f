// Helpers shared by the store tests: a fresh directory per test, fixed instants, and builders
// for alert events and notifications, made into the store's rows as the alert journal makes them
// (alert/notify/store_rows.h).
#ifndef TAILGUARD_TESTS_STORE_STORE_TEST_UTIL_H_
#define TAILGUARD_TESTS_STORE_STORE_TEST_UTIL_H_

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "alert/notify/store_rows.h"
#include "common/strings.h"
#include "gtest/gtest.h"
#include "store/event_store.h"
#include "tailguard/alert.h"

namespace tailguard::store_test {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

inline constexpr std::string_view kMetric = "tailguard_request_duration_seconds";
inline constexpr std::string_view kRule = "p99_vs_baseline";

// Wednesday 2025-11-05 00:00:00 UTC.
inline WallTime T0() { return WallTime(seconds(1762300800)); }

inline Labels SeriesLabels(std::string model = "rank") {
  return {{"model", std::move(model)}, {"stage", "total"}};
}
inline std::string SeriesKey(const std::string& model = "rank") {
  return Cat(kMetric, "{model=\"", model, "\",stage=\"total\"}");
}

// One transition of rule kRule on the series of `model`.
inline store::TransitionRow Event(AlertEventKind kind, WallTime t, int from_tier, int to_tier,
                                  const std::string& model = "rank") {
  static const char* const kSeverity[] = {"warning", "critical", "emergency"};
  AlertEvent e;
  e.time = t;
  e.kind = kind;
  switch (kind) {
    case AlertEventKind::kPreAlert:
      e.from_state = AlertState::kNormal;
      e.to_state = AlertState::kPreAlert;
      break;
    case AlertEventKind::kCancel:
      e.from_state = AlertState::kPreAlert;
      e.to_state = AlertState::kNormal;
      break;
    case AlertEventKind::kFire:
      e.from_state = AlertState::kPreAlert;
      e.to_state = AlertState::kAlert;
      break;
    case AlertEventKind::kResolve:
      e.from_state = AlertState::kAlert;
      e.to_state = AlertState::kNormal;
      break;
    case AlertEventKind::kEscalate:
    case AlertEventKind::kDeescalate:
    case AlertEventKind::kNoData:
      e.from_state = AlertState::kAlert;
      e.to_state = AlertState::kAlert;
      break;
  }
  e.from_tier = from_tier;
  e.to_tier = to_tier;
  e.rule = std::string(kRule);
  e.series = SeriesKey(model);
  e.metric = std::string(kMetric);
  e.labels = SeriesLabels(model);
  e.stat = Statistic::kP99;
  const int tier = e.to_state == AlertState::kNormal ? from_tier : to_tier;
  e.severity = kSeverity[tier < 0 ? 0 : tier % 3];
  e.value = 0.150 + 0.01 * tier;
  e.threshold = 0.110;
  e.baseline_p99 = 0.100;
  e.breach_start = t;
  if (e.to_state == AlertState::kAlert) e.actions = {"degrade"};
  return notify::StoreRow(e);
}

// A notification to "wecom" about the given alerts (rule kRule on each model's series), in a
// group of its own (a group's messages are delivered one after the other: EventStore::Due).
inline store::NotificationRow Note(std::string key, WallTime t,
                                   const std::vector<std::string>& models, WallTime fired_at = {},
                                   NotifyStatus status = NotifyStatus::kFiring) {
  Notification n;
  n.time = t;
  n.receiver = "wecom";
  n.group_key = Cat("{alertname=\"", kRule, "\",note=\"", key, "\"}");
  n.group_labels = {{"alertname", std::string(kRule)}};
  n.status = status;
  n.sequence = 1;
  n.idempotency_key = std::move(key);
  for (const std::string& m : models) {
    NotifiedAlert a;
    a.rule = std::string(kRule);
    a.series = SeriesKey(m);
    a.labels = {{"alertname", std::string(kRule)}, {"model", m}, {"severity", "warning"}};
    a.annotations = {{"summary", Cat("P99 of ", m, " above baseline")}};
    a.status = status;
    a.tier = 0;
    a.severity = "warning";
    a.value = 0.15;
    a.threshold = 0.11;
    a.baseline_p99 = 0.1;
    a.starts_at = fired_at;
    if (status == NotifyStatus::kResolved) a.ends_at = t;
    n.alerts.push_back(std::move(a));
  }
  return notify::StoreRow(n);
}

// The request for `n`, as a notifier would render it.
inline store::OutboxItem Request(const store::NotificationRow& n,
                                 std::string url = "http://127.0.0.1:9/hook") {
  store::OutboxItem item;
  item.summary = Cat(n.alerts.size(), " alerts firing");
  item.method = "POST";
  item.url = std::move(url);
  item.headers = {{"Content-Type", "application/json"}, {"Authorization", "Bearer s3cret"}};
  item.body = Cat("{\"key\":\"", n.idempotency_key, "\"}");
  return item;
}

// A ranked cause of a diagnosis at T0() + 5 s: the feature stage, from 5 ms to 120 ms, first.
inline store::DiagnosisCauseRow FeatureCause(std::string series = "feature") {
  store::DiagnosisCauseRow c;
  c.rank = 1;
  c.series = std::move(series);
  c.quadrant = "dependency";
  c.kind = "cause";
  c.score = 41.5;
  c.confidence = 0.9;
  c.baseline_median = 0.005;
  c.baseline_q1 = 0.004;
  c.baseline_q3 = 0.006;
  c.peak = 0.12;
  c.onset = T0() + seconds(1);
  c.explained = 0.95;
  c.rationale = "feature rose";
  c.points = {{-10, 0.005}, {-5, 0.004}, {0, 0.12}};
  return c;
}

// A silence by alice, for an hour from T0() unless said otherwise.
inline store::Silence MakeSilence(std::string matchers, WallTime start = T0(),
                                  WallTime end = T0() + hours(1)) {
  return {.matchers = std::move(matchers),
          .starts_at = start,
          .ends_at = end,
          .created_by = "alice",
          .comment = "model rollout"};
}

// A fresh, empty directory per test, removed afterwards.
class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::path(::testing::TempDir()) /
           Cat("tailguard_store_", info->test_suite_name(), "_", info->name(), "_", getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::string Path(std::string_view name = "events.db") const { return (dir_ / name).string(); }

  std::unique_ptr<store::EventStore> OpenStore(std::string_view name = "events.db") {
    absl::StatusOr<std::unique_ptr<store::EventStore>> s = store::EventStore::Open(Path(name));
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *std::move(s) : nullptr;
  }

  std::filesystem::path dir_;
};

}  // namespace tailguard::store_test

#endif  // TAILGUARD_TESTS_STORE_STORE_TEST_UTIL_H_
