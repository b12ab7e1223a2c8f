// Silences on the alert side (alert/notify/silences.h): a silence's matchers checked before the
// store keeps them, and the store's silences compiled and matched against alert labels.
#include "alert/notify/silences.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/store_test_util.h"

namespace tailguard::notify {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using store::EventStore;
using store::Silence;
using store_test::MakeSilence;
using store_test::T0;
using ::testing::HasSubstr;

using SilencesTest = store_test::StoreTest;

TEST_F(SilencesTest, AddChecksTheMatchers) {
  std::unique_ptr<EventStore> s = OpenStore();
  auto code = [&](const Silence& x) { return AddSilence(*s, x).status().code(); };
  EXPECT_EQ(code(MakeSilence("{model=")), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(MakeSilence("{}")), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(MakeSilence("")), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(MakeSilence("{model=~\"(\"}")), absl::StatusCode::kInvalidArgument);
  absl::Status everything = AddSilence(*s, MakeSilence("{}")).status();
  EXPECT_THAT(everything.message(), HasSubstr("silence matchers: "));
  EXPECT_THAT(everything.message(), HasSubstr("must not mute everything"));
  // Then the store's own checks.
  EXPECT_EQ(code(MakeSilence("{model=\"x\"}", T0(), T0())), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::vector<Silence>> all = s->ListSilences(T0(), true);
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->empty());

  absl::StatusOr<int64_t> id = AddSilence(*s, MakeSilence("{model=\"rank\"}"));
  ASSERT_TRUE(id.ok()) << id.status();
  all = s->ListSilences(T0(), false);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].id, *id);
  EXPECT_EQ((*all)[0].matchers, "{model=\"rank\"}");
}

TEST_F(SilencesTest, MatchingWithEveryOperator) {
  std::unique_ptr<EventStore> s = OpenStore();
  ASSERT_TRUE(AddSilence(*s, MakeSilence("{model=\"rank\",severity=~\"warning|critical\"}")).ok());
  ASSERT_TRUE(
      AddSilence(*s, MakeSilence("{alertname!=\"p99_vs_baseline\",route!~\"/v1/.*\"}")).ok());
  absl::StatusOr<SilenceSet> set = ActiveSilences(*s, T0());
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->size(), 2u);
  const WallTime t = T0() + minutes(1);
  auto labels = [](std::string alertname, std::string model, std::string severity,
                   std::string route = "/v1/rank") {
    return Labels{{"alertname", std::move(alertname)},
                  {"model", std::move(model)},
                  {"route", std::move(route)},
                  {"severity", std::move(severity)}};
  };
  // = and =~ (whole value only).
  EXPECT_TRUE(set->Matches(labels("p99_vs_baseline", "rank", "warning"), t));
  EXPECT_TRUE(set->Matches(labels("p99_vs_baseline", "rank", "critical"), t));
  EXPECT_FALSE(set->Matches(labels("p99_vs_baseline", "rank", "emergency"), t));
  EXPECT_FALSE(set->Matches(labels("p99_vs_baseline", "rank", "warningx"), t));
  EXPECT_FALSE(set->Matches(labels("p99_vs_baseline", "fraud", "critical"), t));
  // != and !~; an absent label matches as "".
  EXPECT_TRUE(set->Matches(labels("error_ratio", "fraud", "critical", "/v2/x"), t));
  EXPECT_FALSE(set->Matches(labels("error_ratio", "fraud", "critical", "/v1/x"), t));
  EXPECT_TRUE(set->Matches(Labels{{"alertname", "error_ratio"}}, t));
  EXPECT_EQ(set->MatchingSilence(labels("p99_vs_baseline", "rank", "warning"), t), 1);
  EXPECT_EQ(set->MatchingSilence(labels("error_ratio", "fraud", "critical", "/v2/x"), t), 2);
  // Only in effect from starts_at (inclusive) to ends_at (exclusive).
  EXPECT_TRUE(set->Matches(labels("p99_vs_baseline", "rank", "warning"), T0()));
  EXPECT_FALSE(set->Matches(labels("p99_vs_baseline", "rank", "warning"), T0() - seconds(1)));
  EXPECT_FALSE(set->Matches(labels("p99_vs_baseline", "rank", "warning"), T0() + hours(1)));
}

TEST_F(SilencesTest, ActiveSilencesFollowTheStore) {
  std::unique_ptr<EventStore> s = OpenStore();
  absl::StatusOr<int64_t> now_id = AddSilence(*s, MakeSilence("{model=\"rank\"}"));
  absl::StatusOr<int64_t> later_id =
      AddSilence(*s, MakeSilence("{model=\"fraud\"}", T0() + hours(2), T0() + hours(3)));
  ASSERT_TRUE(now_id.ok() && later_id.ok());
  // Silences that have not started yet are compiled too.
  absl::StatusOr<SilenceSet> set = ActiveSilences(*s, T0() + minutes(1));
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->size(), 2u);
  EXPECT_TRUE(set->Matches(Labels{{"model", "fraud"}}, T0() + hours(2)));

  const WallTime now = T0() + minutes(10);
  ASSERT_TRUE(s->ExpireSilence(*now_id, now).ok());
  ASSERT_TRUE(s->ExpireSilence(*later_id, now).ok());
  set = ActiveSilences(*s, now);
  ASSERT_TRUE(set.ok());
  EXPECT_TRUE(set->empty());
  EXPECT_FALSE(set->Matches(Labels{{"model", "rank"}}, now));
}

// The store keeps what it is given: a selector that does not compile (a row written past
// AddSilence) fails the whole set, naming the silence.
TEST(SilenceSetTest, BuildNamesTheSilenceThatDoesNotCompile) {
  std::vector<Silence> rows = {MakeSilence("{model=\"rank\"}"), MakeSilence("{model=~\"(\"}")};
  rows[0].id = 1;
  rows[1].id = 7;
  absl::StatusOr<SilenceSet> set = SilenceSet::Build(rows);
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(set.status().message(), HasSubstr("silence 7: "));
  rows.pop_back();
  set = SilenceSet::Build(rows);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->size(), 1u);
}

}  // namespace
}  // namespace tailguard::notify
