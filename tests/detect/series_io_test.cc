// Tests for timestamps, the CSV reader, time series files, score files and NAB corpus listing.
#include "tailguard/series_io.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace tailguard {
namespace {

namespace fs = std::filesystem;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

WallTime Unix(int64_t s, int64_t ns = 0) { return WallTime(seconds(s) + nanoseconds(ns)); }

std::string Message(const absl::Status& s) { return std::string(s.message()); }

// A fresh directory per test, removed afterwards.
class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           (std::string("tailguard_series_io_") + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }

  fs::path dir_;
};

TEST(ParseTimestamp, NabForm) {
  // 2014-04-10 07:15:00 UTC is 1397114100.
  EXPECT_EQ(*ParseTimestamp("2014-04-10 07:15:00"), Unix(1397114100));
  EXPECT_EQ(*ParseTimestamp("2014-04-10 07:15:00.000000"), Unix(1397114100));
  EXPECT_EQ(*ParseTimestamp("2014-04-10 07:15:00.25"), Unix(1397114100, 250'000'000));
  EXPECT_EQ(*ParseTimestamp("2014-04-10 07:15:00.123456789"), Unix(1397114100, 123'456'789));
  EXPECT_EQ(*ParseTimestamp("1970-01-01 00:00:00"), Unix(0));
  EXPECT_EQ(*ParseTimestamp("  2000-02-29 23:59:59 "), Unix(951868799));
}

TEST(ParseTimestamp, Rfc3339) {
  EXPECT_EQ(*ParseTimestamp("2014-04-10T07:15:00Z"), Unix(1397114100));
  EXPECT_EQ(*ParseTimestamp("2014-04-10T07:15:00"), Unix(1397114100));
  EXPECT_EQ(*ParseTimestamp("2014-04-10T09:15:00+02:00"), Unix(1397114100));
  EXPECT_EQ(*ParseTimestamp("2014-04-10T02:15:00.5-05:00"), Unix(1397114100, 500'000'000));
  EXPECT_EQ(*ParseTimestamp("2014-04-10t07:15:00z"), Unix(1397114100));
  EXPECT_EQ(*ParseTimestamp("2014-04-10T09:15:00+0200"), Unix(1397114100));
  // A leap second lands on the next minute.
  EXPECT_EQ(*ParseTimestamp("2016-12-31T23:59:60Z"), Unix(1483228800));
}

TEST(ParseTimestamp, UnixSeconds) {
  EXPECT_EQ(*ParseTimestamp("1397114100"), Unix(1397114100));
  EXPECT_EQ(*ParseTimestamp("1397114100.123456789"), Unix(1397114100, 123'456'789));
  EXPECT_EQ(*ParseTimestamp("0.5"), Unix(0, 500'000'000));
  EXPECT_EQ(*ParseTimestamp("-1.5"), Unix(-2, 500'000'000));
  EXPECT_EQ(*ParseTimestamp("1.5e9"), Unix(1'500'000'000));
}

TEST(ParseTimestamp, RejectsBadInputWithTheText) {
  for (const char* bad :
       {"", "yesterday", "2014-04-10", "2014-04-10 07:15", "2014-13-10 07:15:00",
        "2014-02-30 07:15:00", "2014-04-10 24:00:00", "2014-04-10 07:61:00", "2014-04-10 07:15:00.",
        "2014-04-10 07:15:00+2", "2014-04-10 07:15:00Q", "2014-04-10x07:15:00", "12abc", "1.2.3",
        "-", ".", "99999999999", "9999-01-01 00:00:00", "1e300"}) {
    absl::StatusOr<WallTime> t = ParseTimestamp(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(Message(t.status()), HasSubstr(std::string("\"") + bad + "\"")) << bad;
    EXPECT_THAT(Message(t.status()), HasSubstr("YYYY-MM-DD HH:MM:SS")) << bad;
  }
}

TEST(FormatTimestamp, NabFormDropsFractions) {
  EXPECT_EQ(FormatTimestamp(Unix(1397114100)), "2014-04-10 07:15:00");
  EXPECT_EQ(FormatTimestamp(Unix(1397114100, 999'999'999)), "2014-04-10 07:15:00");
  EXPECT_EQ(FormatTimestamp(Unix(0)), "1970-01-01 00:00:00");
  // Before the epoch, fractions still round down.
  EXPECT_EQ(FormatTimestamp(Unix(-1, 500'000'000)), "1969-12-31 23:59:59");
  EXPECT_EQ(FormatTimestamp(Unix(951868799)), "2000-02-29 23:59:59");
}

TEST(FormatTimestamp, RoundTrips) {
  for (int64_t s = -86400 * 400; s < 86400LL * 365 * 80; s += 86400 * 7 + 3671) {
    EXPECT_EQ(*ParseTimestamp(FormatTimestamp(Unix(s))), Unix(s));
  }
}

using ReadCsvTest = TempDir;

TEST_F(ReadCsvTest, PlainRowsAndLineNumbers) {
  const std::string path = Write("a.csv", "timestamp,value\n1,2\n\n3,4\r\n5,6");
  absl::StatusOr<CsvTable> t = ReadCsv(path);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->header, ElementsAre("timestamp", "value"));
  ASSERT_EQ(t->rows.size(), 3u);
  EXPECT_THAT(t->rows[0], ElementsAre("1", "2"));
  EXPECT_THAT(t->rows[1], ElementsAre("3", "4"));
  EXPECT_THAT(t->rows[2], ElementsAre("5", "6"));
  EXPECT_THAT(t->line, ElementsAre(2, 4, 5));
}

TEST_F(ReadCsvTest, Rfc4180Quoting) {
  const std::string path = Write("q.csv",
                                 "\xEF\xBB\xBF"
                                 "name,note\n\"a,b\",\"say \"\"hi\"\"\"\n\"two\nlines\",x\n,\n");
  absl::StatusOr<CsvTable> t = ReadCsv(path);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->header, ElementsAre("name", "note"));
  ASSERT_EQ(t->rows.size(), 3u);
  EXPECT_THAT(t->rows[0], ElementsAre("a,b", "say \"hi\""));
  EXPECT_THAT(t->rows[1], ElementsAre("two\nlines", "x"));
  EXPECT_THAT(t->rows[2], ElementsAre("", ""));
  EXPECT_THAT(t->line, ElementsAre(2, 3, 5));
}

TEST_F(ReadCsvTest, Errors) {
  absl::StatusOr<CsvTable> missing = ReadCsv((dir_ / "nope.csv").string());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(missing.status()), HasSubstr("nope.csv"));

  const std::string fields = Write("f.csv", "a,b\n1,2\n1,2,3\n");
  EXPECT_THAT(Message(ReadCsv(fields).status()),
              HasSubstr(fields + ":3: 3 fields, but the header has 2"));

  const std::string quote = Write("u.csv", "a,b\n1,2\n3,\"open\n4,5\n");
  EXPECT_THAT(Message(ReadCsv(quote).status()), HasSubstr(quote + ":3: unterminated quoted field"));

  const std::string after = Write("x.csv", "a,b\n\"x\"y,2\n");
  EXPECT_THAT(Message(ReadCsv(after).status()), HasSubstr(after + ":2: unexpected 'y'"));

  const std::string empty = Write("e.csv", "");
  EXPECT_THAT(Message(ReadCsv(empty).status()), HasSubstr(empty + ": empty file"));
}

using TimeSeriesCsvTest = TempDir;

TEST_F(TimeSeriesCsvTest, ReadsNabLayout) {
  const std::string path = Write("s.csv",
                                 "timestamp,value,label\n"
                                 "2014-04-10 07:15:00,1.5,0\n"
                                 "2014-04-10 07:20:00,,0\n"
                                 "2014-04-10 07:25:00, -2e3 ,1\n");
  absl::StatusOr<TimeSeries> s = ReadTimeSeriesCsv(path);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->path, path);
  ASSERT_EQ(s->times.size(), 3u);
  EXPECT_EQ(s->times[0], Unix(1397114100));
  EXPECT_EQ(s->times[2], Unix(1397114100 + 600));
  EXPECT_EQ(s->values[0], 1.5);
  EXPECT_TRUE(std::isnan(s->values[1]));
  EXPECT_EQ(s->values[2], -2000.0);
}

TEST_F(TimeSeriesCsvTest, ColumnsInAnyOrderAndCase) {
  const std::string path = Write("s.csv", "Value,Timestamp\n3,1397114100\n");
  absl::StatusOr<TimeSeries> s = ReadTimeSeriesCsv(path);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->times[0], Unix(1397114100));
  EXPECT_EQ(s->values[0], 3.0);
}

TEST_F(TimeSeriesCsvTest, ErrorsNameFileLineAndField) {
  const std::string header = Write("h.csv", "time,value\n1,2\n");
  EXPECT_THAT(Message(ReadTimeSeriesCsv(header).status()),
              HasSubstr(header + ":1: the header must name the columns \"timestamp\" and"));
  const std::string ts = Write("t.csv", "timestamp,value\n2014-04-10 07:15:00,1\nnoon,2\n");
  EXPECT_THAT(Message(ReadTimeSeriesCsv(ts).status()),
              HasSubstr(ts + ":3: timestamp: bad timestamp \"noon\""));
  const std::string v = Write("v.csv", "timestamp,value\n2014-04-10 07:15:00,1x\n");
  EXPECT_THAT(Message(ReadTimeSeriesCsv(v).status()),
              HasSubstr(v + ":2: value: \"1x\" is not a number"));
}

TEST_F(TimeSeriesCsvTest, ReadsFourThousandLinesQuickly) {
  std::string text = "timestamp,value\n";
  for (int i = 0; i < 4032; ++i) {
    text += FormatTimestamp(Unix(1392388200 + 300LL * i)) + "," + std::to_string(i * 0.137) + "\n";
  }
  const std::string path = Write("big.csv", text);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<TimeSeries> s = ReadTimeSeriesCsv(path);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->times.size(), 4032u);
  EXPECT_EQ(s->times.back(), Unix(1392388200 + 300LL * 4031));
  // Generous for sanitizer and debug builds; a release build takes about a millisecond.
  EXPECT_LT(took, std::chrono::milliseconds(200));
}

using WriteScoresTest = TempDir;

TEST_F(WriteScoresTest, WritesNabScoreFileThatReadsBack) {
  TimeSeries s;
  s.times = {Unix(1397114100, 700'000'000), Unix(1397114400), Unix(1397114700)};
  s.values = {0.132, std::nan(""), 20.0};
  const std::vector<double> scores = {0.0, 0.123456789012345, 1.0};
  const std::string path = (dir_ / "out" / "cat" / "f.csv").string();
  ASSERT_TRUE(WriteScoresCsv(path, s, scores).ok());
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text,
            "timestamp,value,anomaly_score\n"
            "2014-04-10 07:15:00,0.132,0\n"
            "2014-04-10 07:20:00,,0.123456789012345\n"
            "2014-04-10 07:25:00,20,1\n");
  absl::StatusOr<CsvTable> t = ReadCsv(path);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(std::stod(t->rows[1][2]), scores[1]);
  absl::StatusOr<TimeSeries> back = ReadTimeSeriesCsv(path);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(std::isnan(back->values[1]));
}

TEST_F(WriteScoresTest, RejectsMismatchedSizes) {
  TimeSeries s;
  s.times = {Unix(0)};
  s.values = {1};
  const absl::Status st = WriteScoresCsv((dir_ / "x.csv").string(), s, {});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(dir_ / "x.csv"));
}

using ListNabCorpusTest = TempDir;

TEST_F(ListNabCorpusTest, ListsCategoryFilesSorted) {
  Write("realAWS/b.csv", "timestamp,value\n");
  Write("realAWS/a.csv", "timestamp,value\n");
  Write("art/z.csv", "timestamp,value\n");
  Write("art/notes.txt", "x");
  Write("top.csv", "timestamp,value\n");  // not in a category: skipped, as NAB does
  absl::StatusOr<std::vector<std::string>> files = ListNabCorpus(dir_.string());
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_THAT(*files, ElementsAre("art/z.csv", "realAWS/a.csv", "realAWS/b.csv"));
}

TEST_F(ListNabCorpusTest, NotFound) {
  EXPECT_EQ(ListNabCorpus((dir_ / "missing").string()).status().code(),
            absl::StatusCode::kNotFound);
  Write("top.csv", "timestamp,value\n");
  absl::StatusOr<std::vector<std::string>> none = ListNabCorpus(dir_.string());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(none.status()), HasSubstr(dir_.string()));
}

}  // namespace
}  // namespace tailguard
