// The canonical series key (metrics/series_key.h): the one writer of `metric{a="x",...}`, shared
// by the registry, the alert engine and the store.
#include "metrics/series_key.h"

#include <gtest/gtest.h>

#include "alert/selector.h"
#include "tailguard/registry.h"

namespace tailguard::metrics {
namespace {

TEST(SeriesKeyTest, FormatsInTheOrderGivenWithValuesEscaped) {
  const Labels labels = {{"z", "1"}, {"a", "q\"b\\c\nd"}};
  EXPECT_EQ(FormatLabelSet(labels), "{z=\"1\",a=\"q\\\"b\\\\c\\nd\"}");
  EXPECT_EQ(FormatLabelSet({}), "{}");
}

TEST(SeriesKeyTest, SortsByNameWhateverTheOrderGiven) {
  const Labels sorted = {{"model", "m"}, {"route", "/r"}};
  const Labels unsorted = {{"route", "/r"}, {"model", "m"}};
  EXPECT_EQ(SeriesKey("latency", sorted), "latency{model=\"m\",route=\"/r\"}");
  EXPECT_EQ(SeriesKey("latency", unsorted), SeriesKey("latency", sorted));
  EXPECT_EQ(SeriesKey("up", {}), "up{}");
}

// The registry's keys and the alert side's are the same bytes, escapes and order included: an
// alert, a stored row and a dashboard link name the series the registry made.
TEST(SeriesKeyTest, TheRegistryAndTheAlertSideWriteTheSameKey) {
  const Labels labels = {{"stage", "total"}, {"model", "a\"b\\c\nd"}, {"route", "/x/"}};
  Registry reg;
  absl::StatusOr<Series*> s = reg.GetOrCreate("tailguard_request_duration_seconds", labels);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->key(), SeriesKey("tailguard_request_duration_seconds", labels));
  EXPECT_EQ((*s)->key(), alert_internal::SeriesKey("tailguard_request_duration_seconds", labels));
}

}  // namespace
}  // namespace tailguard::metrics
