// The offline formats: cases and series (plain and gzip), the ranking rows, the slice file, and
// every error naming the file, the line and the field.
#include "diagnose/cases_io.h"

#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "diagnose/csv.h"
#include "diagnose/slices.h"
#include "gtest/gtest.h"

namespace tailguard::diagnose {
namespace {

class CasesIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("cases_io_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::string WriteGzip(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    gzFile f = gzopen(path.c_str(), "wb");
    gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
    gzclose(f);
    return path;
  }
  std::string dir() const { return dir_.string(); }

 private:
  std::filesystem::path dir_;
};

TEST_F(CasesIoTest, ReadsGzipSeriesInAnyOrderAndDropsPointsPastTheLimit) {
  Write("cases.csv", "case_id,alert_time\r\nc1,1000\r\nc2,2000\r\n");
  WriteGzip("series.csv.gz",
            "case_id,timestamp,series,value\n"
            "c2,1990,x/cpu,5\n"
            "c1,999,x/cpu,1.5\n"
            "c1,998,\"x/lat,ency\",2\n"
            "c1,1300,x/cpu,3\n"
            "c1,1301,x/cpu,4\n"  // after alert + 300: dropped as read
            "zz,1,x/cpu,1\n");
  absl::StatusOr<CaseSet> set = ReadCaseSet(dir(), 300);
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_EQ(set->cases.size(), 2u);
  EXPECT_EQ(set->cases[0].id, "c1");
  EXPECT_EQ(set->cases[0].alert_time, 1000);
  ASSERT_EQ(set->cases[0].series.size(), 2u);
  EXPECT_EQ(set->cases[0].series[0].name, "x/cpu");
  EXPECT_EQ(set->cases[0].series[0].values, (std::vector<double>{1.5, 3}));
  EXPECT_EQ(set->cases[0].series[1].name, "x/lat,ency");
  EXPECT_EQ(set->cases[1].series[0].times, (std::vector<double>{1990}));
  EXPECT_EQ(set->points, 6u);
  EXPECT_EQ(set->unlisted_cases, (std::vector<std::string>{"zz"}));
  EXPECT_EQ(set->unlisted_points, 1u);
}

TEST_F(CasesIoTest, PlainSeriesAndEveryBadRowNamed) {
  Write("cases.csv", "case_id,alert_time\nc1,1000\n");
  const std::string series = Write("series.csv",
                                   "case_id,timestamp,series,value\n"
                                   "c1,10.5,x/cpu,1\n"
                                   "c1,11,,1\n"
                                   "c1,12,x/cpu,nan\n"
                                   "c1,13,x/cpu\n"
                                   "c1,14,x/cpu,1\n");
  absl::StatusOr<CaseSet> set = ReadCaseSet(dir(), 300);
  ASSERT_FALSE(set.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(set.status()));
  EXPECT_EQ(set.status().message(),
            series + ":2: timestamp: '10.5' is not integer unix seconds\n" + series +
                ":3: series: empty\n" + series + ":4: value: 'nan' is not a finite number\n" +
                series + ":5: expected 4 fields (case_id,timestamp,series,value), got 3");
}

TEST_F(CasesIoTest, CasesErrors) {
  EXPECT_TRUE(absl::IsNotFound(ReadCaseSet(dir(), 300).status()));
  const std::string cases = Write("cases.csv", "case_id,alert_time\nc1,x\nc1,5\nc1,6\n");
  EXPECT_TRUE(absl::IsNotFound(ReadCaseSet(dir(), 300).status()));  // no series file
  Write("series.csv", "case_id,timestamp,series,value\n");
  EXPECT_EQ(ReadCaseSet(dir(), 300).status().message(),
            cases + ":2: alert_time: 'x' is not integer unix seconds\n" + cases +
                ":4: case_id: 'c1' is listed twice");
  Write("cases.csv", "id,time\nc1,5\n");
  EXPECT_EQ(ReadCaseSet(dir(), 300).status().message(),
            cases + ":1: the header must be 'case_id,alert_time'");
}

TEST_F(CasesIoTest, CorruptGzipIsDataLoss) {
  Write("cases.csv", "case_id,alert_time\nc1,1000\n");
  std::string good = "case_id,timestamp,series,value\n";
  for (int i = 0; i < 2000; ++i) good += "c1," + std::to_string(i) + ",x/cpu,1\n";
  const std::string path = WriteGzip("series.csv.gz", good);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  Write("series.csv.gz", bytes.substr(0, bytes.size() / 2));  // cut short
  absl::StatusOr<CaseSet> set = ReadCaseSet(dir(), 300);
  ASSERT_FALSE(set.ok());
  EXPECT_TRUE(absl::IsDataLoss(set.status())) << set.status();
  EXPECT_NE(set.status().message().find("series.csv.gz"), std::string::npos);
}

TEST_F(CasesIoTest, RankingRowsQuoteAndCarryTheEvidence) {
  TimedSeries s{"a/cpu", {}, {}, std::nullopt};
  for (int t = 0; t < 1300; ++t) {
    s.times.push_back(t);
    s.values.push_back(t < 1000 ? 10 + (t % 2) : 90);
  }
  Ranking r = RankCauses({s}, 1000);
  EXPECT_EQ(RankingHeader(), "case_id,rank,series,score,quadrant,kind,onset_s,rationale\n");
  EXPECT_EQ(RankingRows("c,1", r, 1000),
            "\"c,1\",1,a/cpu,79.5,hardware,cause,0,a/cpu rose from 10.5 to 90 (79.5 IQRs above "
            "its baseline) at +0s\n");
}

TEST(CsvTest, SplitsQuotedFields) {
  std::vector<std::string> f;
  ASSERT_TRUE(SplitCsvLine("a,\"b,\"\"c\"\"\",,d", f));
  EXPECT_EQ(f, (std::vector<std::string>{"a", "b,\"c\"", "", "d"}));
  EXPECT_FALSE(SplitCsvLine("a,\"b", f));
  EXPECT_FALSE(SplitCsvLine("\"a\"b,c", f));
}

TEST_F(CasesIoTest, SliceFileAndItsErrors) {
  const std::string good = Write("s.csv",
                                 "timestamp,model,route,sum,count\n"
                                 "60,risk,/a,8,100\n"
                                 "60,\"vi,sion\",/a,8,100\n"
                                 "120,risk,/a,8,100\n"
                                 "120,\"vi,sion\",/a,32,100\n");
  absl::StatusOr<SliceTable> t = ReadSliceTable(good);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dimensions, (std::vector<std::string>{"model", "route"}));
  EXPECT_EQ(t->rows, 4u);
  absl::StatusOr<SliceAttribution> a = AttributeSlices(*t, 120);
  ASSERT_TRUE(a.ok()) << a.status();
  const std::string rows = SliceRows(*t, *a);
  EXPECT_EQ(rows.substr(0, rows.find('\n', rows.find('\n') + 1) + 1),
            "rank,slice,score,selected,precision,recall,explained\n"
            "1,\"model=vi,sion\",1.0000,1,1.0000,1.0000,1.0000\n");

  const std::string bad = Write("bad.csv",
                                "timestamp,model,sum,count\n"
                                "x,risk,1,1\n"
                                "60,risk,inf,1\n"
                                "60,risk,1,-1\n"
                                "60,risk,1\n");
  EXPECT_EQ(ReadSliceTable(bad).status().message(),
            bad + ":2: timestamp: 'x' is not integer unix seconds\n" + bad +
                ":3: sum: 'inf' is not a finite number\n" + bad +
                ":4: count: '-1' is not a finite number >= 0\n" + bad +
                ":5: expected 4 fields, got 3");
  const std::string header = Write("h.csv", "timestamp,sum,count\n1,1,1\n");
  EXPECT_EQ(ReadSliceTable(header).status().message(),
            header +
                ":1: the header must be 'timestamp,<dimension columns...>,sum,count' with at "
                "least one dimension");
  const std::string twice = Write("t.csv", "timestamp,a,a,sum,count\n1,x,y,1,1\n");
  EXPECT_EQ(ReadSliceTable(twice).status().message(), twice + ":1: dimension 'a' is named twice");
  EXPECT_TRUE(absl::IsNotFound(ReadSliceTable(dir() + "/none.csv").status()));
}

}  // namespace
}  // namespace tailguard::diagnose
