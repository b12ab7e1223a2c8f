// The request-filter seam (server/filter.h) and the passive health check as its first filter
// (server/health_filter.h), on a fake clock.
#include "server/filter.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/health_filter.h"
#include "tailguard/clock.h"

namespace tailguard::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A filter that says what it is told and writes down every call it gets.
class Scripted final : public RequestFilter {
 public:
  Scripted(std::string name, FilterDecision say, std::vector<std::string>* log)
      : name_(std::move(name)), say_(say), log_(log) {}
  std::string_view name() const override { return name_; }
  FilterDecision OnRequest(const FilterRequest& r, FilterAnswer& answer) override {
    log_->push_back(name_ + ".request " + std::string(r.path));
    if (say_ == FilterDecision::kRespond) {
      answer.status = 200;
      answer.body = "from " + name_;
    } else if (say_ == FilterDecision::kReject) {
      answer.status = 429;
      answer.code = "shed";
    }
    return say_;
  }
  void OnAnswer(const FilterRequest&, const UpstreamResult& result) override {
    log_->push_back(name_ + ".answer " + std::to_string(result.status));
  }
  void OnComplete(const FilterRequest&, const FilterOutcome& o) override {
    log_->push_back(name_ + ".complete " + std::to_string(o.status));
  }

 private:
  const std::string name_;
  const FilterDecision say_;
  std::vector<std::string>* log_;
};

FilterRequest Request(std::string_view path) {
  FilterRequest r;
  r.route_name = "fraud";
  r.method = "POST";
  r.path = path;
  return r;
}

TEST(FilterChainTest, AnEmptyChainLetsEverythingOn) {
  FilterChain chain;
  FilterAnswer answer;
  size_t seen = 9, decided = 9;
  EXPECT_EQ(chain.Decide(Request("/a"), answer, &seen, &decided), FilterDecision::kContinue);
  EXPECT_EQ(seen, 0u);
  EXPECT_EQ(decided, SIZE_MAX);
}

TEST(FilterChainTest, FiltersRunInOrderAndTheFirstThatDecidesEndsTheWalk) {
  std::vector<std::string> log;
  Scripted a("a", FilterDecision::kContinue, &log);
  Scripted b("b", FilterDecision::kReject, &log);
  Scripted c("c", FilterDecision::kRespond, &log);
  FilterChain chain;
  chain.Add(&a);
  chain.Add(&b);
  chain.Add(&c);
  FilterAnswer answer;
  size_t seen = 0, decided = 0;
  const FilterRequest r = Request("/x");
  EXPECT_EQ(chain.Decide(r, answer, &seen, &decided), FilterDecision::kReject);
  EXPECT_EQ(seen, 2u);
  EXPECT_EQ(decided, 1u);
  EXPECT_EQ(answer.status, 429);
  EXPECT_EQ(answer.code, "shed");
  FilterOutcome outcome;
  outcome.status = 429;
  outcome.decided_by = decided;
  chain.Complete(r, outcome, seen);
  // c never saw the request; the completion goes back the way the request came.
  EXPECT_THAT(log, ElementsAre("a.request /x", "b.request /x", "b.complete 429", "a.complete 429"));
  EXPECT_EQ(chain.decisions(1, FilterDecision::kReject), 1u);
  EXPECT_EQ(chain.decisions(0, FilterDecision::kReject), 0u);
  EXPECT_EQ(chain.decisions(2, FilterDecision::kRespond), 0u);
}

TEST(FilterChainTest, AForwardedRequestGetsItsAnswerThenItsOutcomeLastFilterFirst) {
  std::vector<std::string> log;
  Scripted a("a", FilterDecision::kContinue, &log);
  Scripted b("b", FilterDecision::kContinue, &log);
  FilterChain chain;
  chain.Add(&a);
  chain.Add(&b);
  FilterAnswer answer;
  size_t seen = 0, decided = 0;
  const FilterRequest r = Request("/y");
  ASSERT_EQ(chain.Decide(r, answer, &seen, &decided), FilterDecision::kContinue);
  EXPECT_EQ(seen, 2u);
  UpstreamResult result;
  result.status = 200;
  chain.Answered(r, result, seen);
  FilterOutcome outcome;
  outcome.status = 200;
  chain.Complete(r, outcome, seen);
  EXPECT_THAT(log, ElementsAre("a.request /y", "b.request /y", "b.answer 200", "a.answer 200",
                               "b.complete 200", "a.complete 200"));
}

TEST(FilterChainTest, DecisionsAreExported) {
  std::vector<std::string> log;
  Scripted cache("cache", FilterDecision::kRespond, &log);
  FilterChain chain;
  chain.Add(&cache);
  FilterAnswer answer;
  size_t seen = 0, decided = 0;
  for (int i = 0; i < 3; ++i) chain.Decide(Request("/z"), answer, &seen, &decided);
  FilterChainCollector collector({{"fraud", &chain}});
  std::string page;
  metrics::MetricsWriter writer(page, /*openmetrics=*/false);
  collector.Collect(writer);
  EXPECT_THAT(page, HasSubstr("# TYPE tailguard_filter_decisions_total counter"));
  EXPECT_THAT(page, HasSubstr("tailguard_filter_decisions_total{route=\"fraud\",filter=\"cache\","
                              "decision=\"respond\"} 3"));
  EXPECT_THAT(page, HasSubstr("tailguard_filter_decisions_total{route=\"fraud\",filter=\"cache\","
                              "decision=\"reject\"} 0"));
}

class HealthFilterTest : public ::testing::Test {
 protected:
  HealthFilterTest() {
    // max_fails 2, fail_timeout 10 s, as health: would configure them.
    all_.push_back(std::make_unique<UpstreamState>("10.0.0.1", 80, 2, std::chrono::seconds(10)));
    all_.push_back(std::make_unique<UpstreamState>("10.0.0.2", 80, 2, std::chrono::seconds(10)));
  }
  // A failed try, as the upstream pool counts it (at once, before its next try).
  void Fail(size_t u, UpstreamError e = UpstreamError::kConnect) {
    all_[u]->Failure(e, clock_.MonotonicNow());
  }
  FilterDecision Ask(FilterAnswer& answer) { return filter_.OnRequest(Request("/"), answer); }

  FakeClock clock_;
  std::vector<std::unique_ptr<UpstreamState>> all_;
  PassiveHealthFilter filter_{"pair", all_, {0, 1}, clock_};
};

TEST_F(HealthFilterTest, FailuresTakeAnUpstreamOutAfterMaxFails) {
  Fail(0);
  EXPECT_TRUE(all_[0]->Available(clock_.MonotonicNow())) << "one failure of two";
  Fail(0);
  EXPECT_FALSE(all_[0]->Available(clock_.MonotonicNow()));
  EXPECT_EQ(Load(all_[0]->errors[static_cast<size_t>(UpstreamError::kConnect)]), 2u);
  // The other one is up: requests go on.
  FilterAnswer answer;
  EXPECT_EQ(Ask(answer), FilterDecision::kContinue);
  // An answer puts an upstream back at once.
  UpstreamResult ok;
  ok.answered = 0;
  ok.status = 200;
  filter_.OnAnswer(Request("/"), ok);
  EXPECT_TRUE(all_[0]->Available(clock_.MonotonicNow()));
  EXPECT_EQ(all_[0]->consecutive_fails.load(), 0u);
}

TEST_F(HealthFilterTest, EveryUpstreamDownIsRefusedUntilAProbeIsDue) {
  for (size_t u : {0u, 1u}) {
    Fail(u);
    Fail(u);
  }
  // Both are down, but no probe has gone yet: the first request is let on, to probe.
  FilterAnswer answer;
  EXPECT_EQ(Ask(answer), FilterDecision::kContinue);
  // The pool takes the probe (as UpstreamPool::Pick does); until the next one is due, requests
  // are refused without a connect.
  ASSERT_TRUE(all_[0]->TryProbe(clock_.MonotonicNow()));
  ASSERT_TRUE(all_[1]->TryProbe(clock_.MonotonicNow()));
  EXPECT_EQ(Ask(answer), FilterDecision::kReject);
  EXPECT_EQ(answer.status, 502);
  EXPECT_EQ(answer.code, "upstream_unavailable");
  EXPECT_THAT(answer.message, HasSubstr("every upstream of route pair is down"));
  EXPECT_THAT(answer.message, HasSubstr("the next try is in 100ms"));
  EXPECT_EQ(Load(all_[0]->probes_skipped), 1u);
  // The first probe interval (100 ms) later, one request may probe again.
  clock_.Advance(std::chrono::milliseconds(99));
  FilterAnswer again;
  EXPECT_EQ(Ask(again), FilterDecision::kReject);
  clock_.Advance(std::chrono::milliseconds(1));
  FilterAnswer due;
  EXPECT_EQ(Ask(due), FilterDecision::kContinue);
  // The probe fails: the next interval is twice as long.
  ASSERT_TRUE(all_[0]->TryProbe(clock_.MonotonicNow()));
  ASSERT_TRUE(all_[1]->TryProbe(clock_.MonotonicNow()));
  Fail(0);
  Fail(1);
  FilterAnswer doubled;
  EXPECT_EQ(Ask(doubled), FilterDecision::kReject);
  EXPECT_THAT(doubled.message, HasSubstr("the next try is in 100ms"))
      << "the interval of the probe just taken";
  clock_.Advance(std::chrono::milliseconds(100));
  ASSERT_TRUE(all_[0]->TryProbe(clock_.MonotonicNow()));
  ASSERT_TRUE(all_[1]->TryProbe(clock_.MonotonicNow()));
  FilterAnswer later;
  EXPECT_EQ(Ask(later), FilterDecision::kReject);
  EXPECT_THAT(later.message, HasSubstr("the next try is in 200ms"));
}

TEST_F(HealthFilterTest, AnAnswerThatBreaksOffCountsAsAFailure) {
  UpstreamResult ok;
  ok.answered = 1;
  ok.status = 200;
  filter_.OnAnswer(Request("/"), ok);
  FilterOutcome outcome;
  outcome.upstream = 1;
  outcome.broke = UpstreamError::kReset;
  outcome.end = clock_.MonotonicNow();
  filter_.OnComplete(Request("/"), outcome);
  EXPECT_EQ(Load(all_[1]->errors[static_cast<size_t>(UpstreamError::kReset)]), 1u);
  EXPECT_EQ(all_[1]->consecutive_fails.load(), 1u);
  // A request that ended well changes nothing.
  outcome.broke.reset();
  filter_.OnComplete(Request("/"), outcome);
  EXPECT_EQ(all_[1]->consecutive_fails.load(), 1u);
}

}  // namespace
}  // namespace tailguard::server
