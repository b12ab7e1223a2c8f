#include "analyze/report.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/history_store.h"
#include "store/store_test_util.h"

namespace tailguard::analyze {
namespace {

using store_test::Event;
using store_test::minutes;
using store_test::Note;
using store_test::Request;
using store_test::seconds;
using store_test::T0;
using ::testing::HasSubstr;
using ::testing::Not;

size_t Count(const std::string& s, std::string_view what) {
  size_t n = 0;
  for (size_t i = s.find(what); i != std::string::npos; i = s.find(what, i + what.size())) ++n;
  return n;
}

// A hostile label value, as a request may bring: markup, a table bar, a backtick.
constexpr std::string_view kHostile = "<script>alert(1)</script>|`x";

class ReportTest : public store_test::StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    events_ = OpenStore("tailguard.db");
    ASSERT_NE(events_, nullptr);
    absl::StatusOr<std::unique_ptr<store::HistoryStore>> h =
        store::HistoryStore::Open(Path("tailguard.db"));
    ASSERT_TRUE(h.ok()) << h.status();
    history_ = *std::move(h);
  }

  // An episode of the rank model: pre-alert at T0, fire 5 s later with the degrade action,
  // diagnosed, notified (delivered), acknowledged, resolved two minutes on; per-minute history
  // of its series from half an hour before to ten minutes after, slow during the episode.
  int64_t Incident() {
    EXPECT_TRUE(events_->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0)).ok());
    const store::TransitionRow fire = Event(AlertEventKind::kFire, T0() + seconds(5), 0, 0);
    EXPECT_TRUE(events_->RecordEvent(fire).ok());
    EXPECT_TRUE(events_->RecordAction(T0() + seconds(6), "degrade", fire, "shed 20%").ok());
    const int64_t id = events_->ListAlerts({}).value().front().id;

    store::DiagnosisRow d;
    d.time = T0() + seconds(6);
    d.quadrant = "dependency";
    d.summary = "dependency: feature_fetch rose from 5ms to 120ms";
    d.changes = {{T0() - seconds(30), "model", "model=rank", "default version v1 -> v2"}};
    d.symptoms = {store_test::SeriesKey()};
    d.series_considered = 14;
    d.seconds = 0.003;
    store::DiagnosisCauseRow c =
        store_test::FeatureCause(Cat("tailguard_request_duration_seconds{model=\"rank\",route=\"",
                                     kHostile, "\",stage=\"feature_fetch\"}"));
    c.rationale = Cat("feature_fetch of ", kHostile, " rose");
    c.points = {{-60, 0.005}, {-30, 0.004}, {-5, 0.05}, {0, 0.12}};
    d.causes.push_back(c);
    c.rank = 2;
    c.series = "tailguard_request_rate{route=\"rank\"}";
    c.quadrant = "traffic";
    c.score = 3.2;
    c.confidence = 0.05;
    c.baseline_median = 40;
    c.baseline_q1 = 38;
    c.baseline_q3 = 42;
    c.peak = 55;
    c.explained = std::nan("");
    c.rationale = "rate rose";
    d.causes.push_back(c);
    EXPECT_TRUE(events_->RecordDiagnosis(store_test::kRule, store_test::SeriesKey(), d).ok());

    const store::NotificationRow n = Note("n1", T0() + seconds(7), {"rank"}, T0() + seconds(5));
    absl::StatusOr<int64_t> out = events_->Enqueue(n, Request(n));
    EXPECT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(events_->MarkDelivered(*out, T0() + seconds(8), 200).ok());
    EXPECT_TRUE(events_->Ack(id, "alice", "looking at redis", T0() + seconds(40)).ok());
    EXPECT_TRUE(
        events_->RecordEvent(Event(AlertEventKind::kResolve, T0() + minutes(2), 0, -1)).ok());

    store::SeriesMinutes s;
    s.key = store_test::SeriesKey();
    s.metric = std::string(store_test::kMetric);
    s.labels = store_test::SeriesLabels();
    for (int m = -30; m <= 10; ++m) {
      store::MinuteRow row;
      row.time = T0() + minutes(m);
      row.count = 600;
      const bool slow = m >= 0 && m <= 2;
      row.p50 = slow ? 0.06 : 0.004;
      row.p99 = slow ? 0.15 : 0.01;
      row.baseline_p99 = 0.01;
      s.minutes.push_back(row);
    }
    EXPECT_TRUE(history_->WriteMinutes(std::vector{s}).ok());
    return id;
  }

  IncidentReport Load(int64_t id) {
    absl::StatusOr<IncidentReport> r =
        LoadIncidentReport(*events_, history_.get(), id, T0() + minutes(30));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *std::move(r) : IncidentReport{};
  }

  std::unique_ptr<store::EventStore> events_;
  std::unique_ptr<store::HistoryStore> history_;
};

TEST_F(ReportTest, LoadsTheEpisodeItsDiagnosesAndTheSeriesAroundIt) {
  const IncidentReport r = Load(Incident());
  EXPECT_EQ(r.detail.alert.rule, store_test::kRule);
  ASSERT_EQ(r.diagnoses.size(), 1u);
  EXPECT_EQ(r.diagnoses[0].causes.size(), 2u);
  // Thirty minutes before the start to ten after the end: (T0-30min, T0+12min].
  EXPECT_EQ(r.from, T0() - minutes(30));
  EXPECT_EQ(r.to, T0() + minutes(12));
  ASSERT_EQ(r.minutes.size(), 40u);  // -29 .. +10
  EXPECT_EQ(r.minutes.front().time, T0() - minutes(29));
  EXPECT_EQ(r.detail.notifications.size(), 1u);
}

TEST_F(ReportTest, HtmlIsSelfContainedWithChartsCausesTimelineAndActions) {
  const std::string html = RenderReportHtml(Load(Incident()));
  EXPECT_THAT(html, HasSubstr("<!doctype html>"));
  // One chart of the alerted series and one sparkline per cause.
  EXPECT_EQ(Count(html, "<svg "), 3u);
  EXPECT_THAT(html, HasSubstr("id=\"series-chart\""));
  EXPECT_THAT(html, HasSubstr("threshold 110ms"));
  EXPECT_THAT(html, HasSubstr("class=\"band\""));  // the baseline's IQR behind each sparkline
  // The finding and the ranked causes with their evidence, in their units.
  EXPECT_THAT(html, HasSubstr("data-quadrant=\"dependency\">Dependency</span> <span "
                              "id=\"summary\">dependency: feature_fetch rose"));
  EXPECT_THAT(html, HasSubstr("data-rank=\"1\" data-quadrant=\"dependency\""));
  EXPECT_THAT(html, HasSubstr("<b>120ms</b>"));
  EXPECT_THAT(html, HasSubstr("<b>55</b>"));  // a rate is not a duration
  EXPECT_THAT(html, HasSubstr("95 %"));
  // What changed, the timeline and the actions taken.
  EXPECT_THAT(html, HasSubstr("default version v1 -&gt; v2"));
  EXPECT_THAT(html, HasSubstr("<td>fire</td>"));
  EXPECT_THAT(html, HasSubstr("<td>resolve</td>"));
  EXPECT_THAT(html, HasSubstr("degrade: shed 20%"));
  EXPECT_THAT(html, HasSubstr("acknowledged by alice"));
  EXPECT_THAT(html, HasSubstr("firing to wecom: delivered"));
  EXPECT_THAT(html, HasSubstr("lasted 2.0min"));
  // Nothing to fetch or run: no script, no stylesheet link, no image source, no URL but the SVG
  // namespace (the webhook's URL is not shown: URLs may hold secrets).
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("<link")));
  EXPECT_THAT(html, Not(HasSubstr("src=")));
  EXPECT_EQ(Count(html, "http://"), Count(html, "http://www.w3.org/2000/svg"));
  EXPECT_THAT(html, Not(HasSubstr("https://")));
  EXPECT_THAT(html, Not(HasSubstr("s3cret")));
  // The hostile label is shown, escaped.
  EXPECT_THAT(html, HasSubstr("&lt;script&gt;alert(1)&lt;/script&gt;|`x"));
}

TEST_F(ReportTest, MarkdownCarriesTheSameWithTextSparklinesAndEscapedCells) {
  const std::string md = RenderReportMarkdown(Load(Incident()));
  EXPECT_THAT(md, HasSubstr("# Incident report: alert #1 · p99\\_vs\\_baseline"));
  EXPECT_THAT(md, HasSubstr("**Dependency**: dependency: feature\\_fetch rose"));
  EXPECT_THAT(md, HasSubstr("| 1 | Dependency | `tailguard_request_duration_seconds{model=\"rank\","
                            "route=\"<script>alert(1)</script>\\|'x\""));
  EXPECT_THAT(md, HasSubstr("| **120ms** |"));
  EXPECT_THAT(md, HasSubstr("▁"));
  EXPECT_THAT(md, HasSubstr("█"));
  EXPECT_THAT(md, HasSubstr("| resolve |"));
  EXPECT_THAT(md, HasSubstr("acknowledged by alice"));
  // Outside code spans markup is escaped: the rationale's label cannot open a tag.
  EXPECT_THAT(md,
              HasSubstr("1. feature\\_fetch of &lt;script&gt;alert(1)&lt;/script&gt;\\|\\`x rose"));
  // The cause's row has the header's number of cells: no bar leaked from a value.
  const size_t at = md.find("| 1 | Dependency");
  ASSERT_NE(at, std::string::npos);
  const std::string row = md.substr(at, md.find('\n', at) - at);
  size_t bars = 0;
  for (size_t i = 0; i < row.size(); ++i) bars += row[i] == '|' && (i == 0 || row[i - 1] != '\\');
  EXPECT_EQ(bars, 11u) << row;
}

TEST_F(ReportTest, RenderingIsDeterministic) {
  const IncidentReport r = Load(Incident());
  EXPECT_EQ(RenderReportHtml(r), RenderReportHtml(r));
  EXPECT_EQ(RenderReportMarkdown(r), RenderReportMarkdown(r));
}

TEST_F(ReportTest, AnEpisodeWithoutDiagnosisOrHistorySaysSo) {
  ASSERT_TRUE(events_->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0)).ok());
  const int64_t id = events_->ListAlerts({}).value().front().id;
  absl::StatusOr<IncidentReport> r =
      LoadIncidentReport(*events_, /*history=*/nullptr, id, T0() + seconds(20));
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string html = RenderReportHtml(*r);
  EXPECT_THAT(html, HasSubstr("No diagnosis"));
  EXPECT_THAT(html, HasSubstr("No per-minute history"));
  EXPECT_THAT(html, HasSubstr("still active at 2025-11-05 00:00:20 UTC"));
  EXPECT_THAT(html, HasSubstr("None recorded"));
  EXPECT_EQ(Count(html, "<svg "), 0u);
  EXPECT_THAT(RenderReportMarkdown(*r), HasSubstr("No diagnosis"));
}

TEST_F(ReportTest, UnknownIdIsNotFound) {
  absl::StatusOr<IncidentReport> r = LoadIncidentReport(*events_, history_.get(), 42, T0());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tailguard::analyze
