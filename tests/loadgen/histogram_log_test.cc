// The histogram log: what is written reads back identical, and damage is reported by line.
#include "loadgen/histogram_log.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tailguard::loadgen {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Log(const std::vector<Histogram>& hs) {
  std::string text = HistogramLogHeader(WallTime(seconds(1767225600)));
  for (size_t i = 0; i < hs.size(); ++i) {
    text += HistogramLogLine(seconds(static_cast<int>(i)), seconds(1), hs[i]);
  }
  return text;
}

TEST(HistogramLogTest, RoundTrip) {
  std::vector<Histogram> hs(3);
  for (int v = 1; v <= 1000; ++v) hs[0].Record(static_cast<uint64_t>(v) * 20000);
  hs[1].Record(20'000'000);
  hs[1].Record(2'000'000'000);
  // hs[2] stays empty: an interval without completions.
  const std::string text = Log(hs);
  EXPECT_THAT(text, StartsWith("#tailguard-histogram-log 1\n#start 1767225600.000\n"));
  absl::StatusOr<HistogramLog> log = ParseHistogramLog(text, "h.log");
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(log->start, WallTime(seconds(1767225600)));
  ASSERT_EQ(log->intervals.size(), 3u);
  for (size_t i = 0; i < hs.size(); ++i) {
    EXPECT_EQ(log->intervals[i].histogram, hs[i]) << i;
    EXPECT_EQ(log->intervals[i].start, seconds(static_cast<int>(i)));
    EXPECT_EQ(log->intervals[i].length, seconds(1));
  }
  Histogram total = hs[0];
  total.Merge(hs[1]);
  EXPECT_EQ(log->Total(), total);
}

TEST(HistogramLogTest, TheSummaryColumnsAreReadable) {
  Histogram h;
  h.RecordN(20'000'000, 99);
  h.Record(40'000'000);
  const std::string line = HistogramLogLine(milliseconds(1500), milliseconds(500), h);
  EXPECT_THAT(line, StartsWith("1.500000000 0.500000000 100 0.0200"));
}

TEST(HistogramLogTest, DamageIsReportedByLine) {
  Histogram h;
  h.Record(1000);
  const std::string good = Log({h});
  EXPECT_THAT(std::string(ParseHistogramLog("hello\n", "h.log").status().message()),
              StartsWith("h.log:1: not a tailguard histogram log"));
  EXPECT_THAT(std::string(ParseHistogramLog("", "h.log").status().message()), HasSubstr("empty"));
  EXPECT_THAT(
      std::string(ParseHistogramLog("#tailguard-histogram-log 2\n", "h.log").status().message()),
      StartsWith("h.log:1: format version 2 is not supported"));
  std::string bad = good;
  bad.insert(bad.size() - 3, "!");
  EXPECT_THAT(std::string(ParseHistogramLog(bad, "h.log").status().message()),
              StartsWith("h.log:4: the histogram column is not valid base64"));
  bad = good;
  bad.replace(bad.find(" 1 "), 3, " 2 ");
  EXPECT_THAT(std::string(ParseHistogramLog(bad, "h.log").status().message()),
              StartsWith("h.log:4: the count column says 2 but the histogram holds 1"));
  EXPECT_THAT(std::string(ParseHistogramLog(good + "1 2 3\n", "h.log").status().message()),
              StartsWith("h.log:5: expected 7 columns"));
  EXPECT_TRUE(absl::IsNotFound(ReadHistogramLog("/nonexistent/h.log").status()));
}

}  // namespace
}  // namespace tailguard::loadgen
