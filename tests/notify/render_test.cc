// Rendering one notification per receiver kind: WeCom markdown and text, the Alertmanager-style
// webhook, templates (SMS, phone) and Alertmanager API v2, with exact expectations.
#include "alert/notify/render.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/time/civil_time.h"
#include "common/series_id.h"
#include "common/strings.h"

namespace tailguard::notify {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using Json = nlohmann::json;

WallTime At(int hour, int minute, int second) {
  const absl::Time t =
      absl::FromCivil(absl::CivilSecond(2026, 11, 3, hour, minute, second), absl::UTCTimeZone());
  return WallTime(Duration(absl::ToUnixNanos(t)));
}

constexpr std::string_view kSeries =
    R"(tailguard_request_duration_seconds{model="rank",route="/v1/rank",stage="total",version="v3"})";
constexpr std::string_view kFetchSeries =
    R"(tailguard_request_duration_seconds{model="rank",route="/v1/rank",stage="feature_fetch",version="v3"})";

NotifiedAlert Emergency() {
  NotifiedAlert a;
  a.rule = "p99_vs_baseline";
  a.series = std::string(kSeries);
  a.labels = {{"alertname", "p99_vs_baseline"}, {"model", "rank"},  {"route", "/v1/rank"},
              {"severity", "emergency"},        {"stage", "total"}, {"version", "v3"}};
  a.annotations = {{"summary", "排序模型 P99 高于基线"},
                   {"root_causes",
                    "dependency: feature store P99 5.1x baseline (Redis fail-over)\n"
                    "traffic: QPS +12 %"}};
  a.stat = Statistic::kP99;
  a.tier = 2;
  a.severity = "emergency";
  a.value = 0.412;
  a.threshold = 0.27;
  a.baseline_p99 = 0.18;
  a.starts_at = At(6, 2, 10);
  return a;
}

NotifiedAlert Warning() {
  NotifiedAlert a;
  a.rule = "p99_vs_baseline";
  a.series = std::string(kFetchSeries);
  a.labels = {{"alertname", "p99_vs_baseline"}, {"model", "rank"},          {"route", "/v1/rank"},
              {"severity", "warning"},          {"stage", "feature_fetch"}, {"version", "v3"}};
  a.annotations = {{"summary", "排序模型 P99 高于基线"}};
  a.stat = Statistic::kP99;
  a.tier = 0;
  a.severity = "warning";
  a.value = 0.061;
  a.threshold = 0.055;
  a.baseline_p99 = 0.05;
  a.starts_at = At(6, 5, 0);
  return a;
}

// Two firing alerts, listed oldest first as the engine does: the warning is listed first here
// to show that messages put the most severe first.
Notification Firing() {
  Notification n;
  n.time = At(6, 12, 40);
  n.receiver = "wecom";
  n.group_key = R"({alertname="p99_vs_baseline"})";
  n.group_labels = {{"alertname", "p99_vs_baseline"}};
  n.status = NotifyStatus::kFiring;
  n.alerts = {Warning(), Emergency()};
  n.sequence = 1;
  n.idempotency_key = R"(wecom|{alertname="p99_vs_baseline"}|1793685730000000000|1)";
  return n;
}

Notification Resolved() {
  Notification n = Firing();
  n.time = At(6, 20, 30);
  n.status = NotifyStatus::kResolved;
  NotifiedAlert a = Emergency();
  a.status = NotifyStatus::kResolved;
  a.value = 0.15;
  a.ends_at = At(6, 20, 0);
  n.alerts = {a};
  n.sequence = 4;
  n.idempotency_key = R"(wecom|{alertname="p99_vs_baseline"}|1793685730000000000|4)";
  return n;
}

MessageContext Shanghai() {
  MessageContext ctx;
  ctx.external_url = "http://127.0.0.1:9090/";
  ctx.instance = "gpu-01";
  ctx.time_zone = "Asia/Shanghai";
  return ctx;
}

ReceiverTarget Target(ReceiverTarget::Kind kind, std::string url) {
  ReceiverTarget t;
  t.kind = kind;
  t.url = std::move(url);
  return t;
}

HttpRequest MustRender(const ReceiverTarget& target, const Notification& n,
                       const MessageContext& ctx) {
  absl::StatusOr<HttpRequest> r = Render(target, n, ctx);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : HttpRequest{};
}

std::string Header(const HttpRequest& r, std::string_view name) {
  for (const auto& [n, v] : r.headers) {
    if (n == name) return v;
  }
  return "<absent>";
}

// An independent UTF-8 check (RFC 3629), so the tests do not trust the code they test.
bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1f : n == 3 ? c & 0x0f : c & 0x07;
    for (size_t k = 1; k < n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xc0) != 0x80) return false;
      cp = cp << 6 | (b & 0x3f);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n;
  }
  return true;
}

size_t Count(std::string_view s, std::string_view what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string_view::npos; p = s.find(what, p + what.size())) {
    ++n;
  }
  return n;
}

// Every markdown construct the renderer writes is closed within its line.
void ExpectBalancedMarkdown(std::string_view content) {
  size_t start = 0;
  while (start <= content.size()) {
    size_t end = content.find('\n', start);
    if (end == std::string_view::npos) end = content.size();
    const std::string_view line = content.substr(start, end - start);
    EXPECT_EQ(Count(line, "<font"), Count(line, "</font>")) << line;
    EXPECT_EQ(Count(line, "**") % 2, 0u) << line;
    EXPECT_EQ(Count(line, "`") % 2, 0u) << line;
    if (const size_t link = line.find("[dashboard]("); link != std::string_view::npos) {
      EXPECT_TRUE(line.ends_with(")")) << line;
      EXPECT_EQ(line.find(' ', link), std::string_view::npos) << line;
    }
    start = end + 1;
  }
}

std::string WeComContent(const HttpRequest& r) {
  const Json body = Json::parse(r.body);
  return body.contains("markdown") ? body["markdown"]["content"].get<std::string>()
                                   : body["text"]["content"].get<std::string>();
}

// ---------------------------------------------------------------------------------------------
// Summary, links, values.

TEST(SummaryTest, LeadsWithTheMostSevereFiringAlert) {
  EXPECT_EQ(Summary(Firing()),
            R"(firing p99_vs_baseline{model="rank",route="/v1/rank",stage="total",version="v3"})"
            " emergency: P99 412 ms vs baseline 180 ms (+129 %), threshold 270 ms, since 06:02:10"
            " UTC (+1 more)");
}

TEST(SummaryTest, InTheGivenTimeZoneWithTheDateWhenNotToday) {
  absl::TimeZone shanghai;
  ASSERT_TRUE(absl::LoadTimeZone("Asia/Shanghai", &shanghai));
  Notification n = Firing();
  n.alerts = {Emergency()};
  EXPECT_THAT(Summary(n, shanghai), HasSubstr("threshold 270 ms, since 14:02:10 CST"));
  n.alerts[0].starts_at = At(6, 2, 10) - std::chrono::hours(24);
  EXPECT_THAT(Summary(n, shanghai), HasSubstr("since 2026-11-02 14:02:10 CST"));
  EXPECT_THAT(Summary(n, shanghai), Not(HasSubstr("more")));
}

TEST(SummaryTest, ResolvedSaysHowLongItLasted) {
  EXPECT_EQ(Summary(Resolved()),
            R"(resolved p99_vs_baseline{model="rank",route="/v1/rank",stage="total",version="v3"})"
            " emergency: P99 150 ms vs baseline 180 ms (-17 %), threshold 270 ms, lasted 17m50s");
}

TEST(SummaryTest, NoAlertsAndOtherStatistics) {
  Notification n = Firing();
  n.alerts.clear();
  EXPECT_EQ(Summary(n), R"(firing {alertname="p99_vs_baseline"}: no alerts)");

  NotifiedAlert a = Emergency();
  a.rule = "errors";
  a.series = "tailguard_requests";
  a.stat = Statistic::kErrorRatio;
  a.value = 0.052;
  a.threshold = 0.01;
  a.severity = "critical";
  n.alerts = {a};
  EXPECT_EQ(Summary(n),
            "firing errors critical: error ratio 5.2 %, threshold 1 %, since 06:02:10 UTC");
}

TEST(FormatStatValueTest, UnitsPerStatistic) {
  EXPECT_EQ(FormatStatValue(Statistic::kP99, 0.412, Unit::kNanoseconds), "412 ms");
  EXPECT_EQ(FormatStatValue(Statistic::kP50, 0.0125, Unit::kNanoseconds), "12.5 ms");
  EXPECT_EQ(FormatStatValue(Statistic::kP90, 0.00085, Unit::kNanoseconds), "0.85 ms");
  EXPECT_EQ(FormatStatValue(Statistic::kP999, 1.2, Unit::kNanoseconds), "1200 ms");
  EXPECT_EQ(FormatStatValue(Statistic::kP99, 12.34, Unit::kNanoseconds), "12.3 s");
  EXPECT_EQ(FormatStatValue(Statistic::kP99, 0, Unit::kNanoseconds), "0 ms");
  EXPECT_EQ(FormatStatValue(Statistic::kRate, 1520, Unit::kNanoseconds), "1520 req/s");
  EXPECT_EQ(FormatStatValue(Statistic::kRate, 0.25, Unit::kNanoseconds), "0.25 req/s");
  EXPECT_EQ(FormatStatValue(Statistic::kErrorRatio, 0.0005, Unit::kNanoseconds), "0.05 %");
  EXPECT_EQ(FormatStatValue(Statistic::kAnomalyScore, 0.93, Unit::kNanoseconds), "0.93");
  EXPECT_EQ(FormatStatValue(Statistic::kP99, std::nan(""), Unit::kNanoseconds), "n/a");
  EXPECT_EQ(FormatStatValue(Statistic::kRate, INFINITY, Unit::kNanoseconds), "+Inf");
  EXPECT_EQ(FormatStatValue(Statistic::kRate, 1e20, Unit::kNanoseconds), "1e+20 req/s");
  EXPECT_EQ(FormatStatValue(Statistic::kRate, -0.5, Unit::kNanoseconds), "-0.5 req/s");
  // A percentile of a size or a count, in its own unit; their rates are not requests.
  EXPECT_EQ(FormatStatValue(Statistic::kP99, 20480, Unit::kBytes), "20 KiB");
  EXPECT_EQ(FormatStatValue(Statistic::kP99, 512, Unit::kBytes), "512 B");
  EXPECT_EQ(FormatStatValue(Statistic::kP99, 3.5 * 1024 * 1024, Unit::kBytes), "3.5 MiB");
  EXPECT_EQ(FormatStatValue(Statistic::kP99, 20000, Unit::kCount), "20000");
  EXPECT_EQ(FormatStatValue(Statistic::kRate, 12, Unit::kCount), "12 /s");
}

TEST(LinkTest, OpensTheSeriesByItsId) {
  MessageContext ctx;
  EXPECT_EQ(DashboardLink(ctx, kSeries), "");
  EXPECT_EQ(GroupLink(ctx, "{}"), "");
  ctx.external_url = "https://tg.example.com/base//";
  // The form the dashboard reads (web/src/state.js): the series' FNV-1a 64 id, computed
  // independently here.
  EXPECT_EQ(DashboardLink(ctx, R"(m{model="a b",stage="c/d"})"),
            "https://tg.example.com/base/?view=series&id=f2f2208d11cf1c20");
  EXPECT_EQ(GroupLink(ctx, R"({alertname="x"})"), "https://tg.example.com/base/?view=alerts");
}

TEST(OneLineTest, CutsAtCharacterBoundaries) {
  EXPECT_EQ(OneLine("a\tb\r\nc\x01", 100), "a b  c");
  EXPECT_EQ(OneLine("ab\xff", 100), "ab\xef\xbf\xbd");
  // "延迟突增" is 12 bytes; 8 bytes leave room for one character and the ellipsis.
  EXPECT_EQ(OneLine("延迟突增", 8), "延…");
  EXPECT_EQ(OneLine("延迟突增", 12), "延迟突增");
  EXPECT_EQ(OneLine("延迟突增", 2), "");
}

TEST(FingerprintTest, MatchesPrometheusLabelSetFingerprint) {
  // FNV-1a 64 of nothing: prometheus/common's emptyLabelSignature.
  EXPECT_EQ(Fingerprint({}), "cbf29ce484222325");
  // Order does not matter.
  EXPECT_EQ(Fingerprint({{"b", "2"}, {"a", "1"}}), Fingerprint({{"a", "1"}, {"b", "2"}}));
  EXPECT_NE(Fingerprint({{"a", "1"}}), Fingerprint({{"a", "2"}}));
  // FNV-1a over "alertname\xffx\xff", computed independently.
  EXPECT_EQ(Fingerprint({{"alertname", "x"}}), "d240efc3896bf266");
}

// ---------------------------------------------------------------------------------------------
// WeCom.

constexpr std::string_view kWeComUrl = "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=K";

TEST(WeComTest, MarkdownMessage) {
  const HttpRequest r = MustRender(Target(ReceiverTarget::Kind::kWeCom, std::string(kWeComUrl)),
                                   Firing(), Shanghai());
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.url, kWeComUrl);
  EXPECT_EQ(r.check, HttpRequest::Check::kWeComErrcode);
  EXPECT_EQ(r.headers, (Labels{{"Content-Type", "application/json"},
                               {"Idempotency-Key",
                                R"(wecom|{alertname="p99_vs_baseline"}|1793685730000000000|1)"}}));
  const Json body = Json::parse(r.body);
  EXPECT_EQ(body["msgtype"], "markdown");
  EXPECT_EQ(body.size(), 2u);
  const auto link = [](std::string_view stage) {
    return SeriesDashboardUrl(
        "http://127.0.0.1:9090",
        Cat(R"(tailguard_request_duration_seconds{model="rank",route="/v1/rank",stage=")", stage,
            R"(",version="v3"})"));
  };
  EXPECT_EQ(body["markdown"]["content"],
            "## <font color=\"warning\">[FIRING:2]</font> p99_vs_baseline\n"
            "<font color=\"comment\">receiver wecom · instance gpu-01 · 14:12:40 CST</font>\n"
            "\n"
            "<font color=\"warning\">emergency</font> **p99_vs_baseline** "
            "`{model=\"rank\",route=\"/v1/rank\",stage=\"total\",version=\"v3\"}`\n"
            "> P99 **412 ms**, baseline 180 ms (+129 %), threshold 270 ms\n"
            "> since 14:02:10 CST (for 10m30s)\n"
            "> summary: 排序模型 P99 高于基线\n"
            "> root causes:\n"
            "> 1. dependency: feature store P99 5.1x baseline (Redis fail-over)\n"
            "> 2. traffic: QPS +12 %\n"
            "> [dashboard](" +
                link("total") +
                ")\n"
                "\n"
                "<font color=\"comment\">warning</font> **p99_vs_baseline** "
                "`{model=\"rank\",route=\"/v1/rank\",stage=\"feature_fetch\",version=\"v3\"}`\n"
                "> P99 **61 ms**, baseline 50 ms (+22 %), threshold 55 ms\n"
                "> since 14:05:00 CST (for 7m40s)\n"
                "> summary: 排序模型 P99 高于基线\n"
                "> [dashboard](" +
                link("feature_fetch") + ")");
}

TEST(WeComTest, ResolvedMessage) {
  MessageContext ctx = Shanghai();
  ctx.external_url.clear();
  ctx.instance.clear();
  Notification n = Resolved();
  n.alerts[0].annotations.clear();
  const HttpRequest r =
      MustRender(Target(ReceiverTarget::Kind::kWeCom, std::string(kWeComUrl)), n, ctx);
  EXPECT_EQ(WeComContent(r),
            "## <font color=\"info\">[RESOLVED:1]</font> p99_vs_baseline\n"
            "<font color=\"comment\">receiver wecom · 14:20:30 CST</font>\n"
            "\n"
            "<font color=\"info\">resolved</font> **p99_vs_baseline** "
            "`{model=\"rank\",route=\"/v1/rank\",stage=\"total\",version=\"v3\"}` (was emergency)\n"
            "> P99 **150 ms**, baseline 180 ms (-17 %), threshold 270 ms\n"
            "> from 14:02:10 CST to 14:20:00 CST, lasted 17m50s");
  EXPECT_EQ(Header(r, "Idempotency-Key"),
            R"(wecom|{alertname="p99_vs_baseline"}|1793685730000000000|4)");
}

// 412 emergencies and 88 warnings at once: the most severe (then oldest) alerts that fit, and
// one line that counts the rest, all within WeCom's 4096 bytes.
TEST(WeComTest, StormFitsInFourKilobytesWithTheRestCounted) {
  Notification n = Firing();
  n.alerts.clear();
  for (int i = 0; i < 500; ++i) {
    NotifiedAlert a = i % 6 == 5 ? Warning() : Emergency();
    a.series = "tailguard_request_duration_seconds{model=\"m" + std::to_string(i) + "\"}";
    a.starts_at = At(6, 0, 0) + std::chrono::seconds(i);
    n.alerts.push_back(a);
  }
  size_t warnings = 0;
  for (const NotifiedAlert& a : n.alerts) warnings += a.severity == "warning";
  ASSERT_EQ(warnings, 83u);
  const HttpRequest r =
      MustRender(Target(ReceiverTarget::Kind::kWeCom, std::string(kWeComUrl)), n, Shanghai());
  ASSERT_TRUE(Json::accept(r.body));
  const std::string content = WeComContent(r);
  EXPECT_LE(content.size(), kWeComMarkdownMaxBytes);
  EXPECT_TRUE(IsValidUtf8(content));
  ExpectBalancedMarkdown(content);
  EXPECT_THAT(content, StartsWith("## <font color=\"warning\">[FIRING:500]</font>"));

  const size_t shown = Count(content, "\n\n<font color=\"warning\">emergency</font>");
  EXPECT_GE(shown, 15u);
  // The first three in full, the others compact (no annotations, no link).
  EXPECT_EQ(Count(content, "> summary: "), 3u);
  EXPECT_EQ(Count(content, "> [dashboard]("), 3u);
  EXPECT_EQ(Count(content, "> P99 **412 ms**"), shown);
  EXPECT_EQ(Count(content, "<font color=\"comment\">warning</font>"), 0u);
  // The oldest emergencies come first: m0, m1, m2, ...
  EXPECT_THAT(content, HasSubstr("`{model=\"m0\"}`\n"));
  EXPECT_THAT(content, HasSubstr("`{model=\"m1\"}`\n"));
  EXPECT_THAT(content, Not(HasSubstr("`{model=\"m5\"}`")));  // a warning
  const std::string more = "\n\n… and " + std::to_string(500 - shown) + " more alerts (" +
                           std::to_string(417 - shown) +
                           " emergency, 83 warning); see [dashboard](http://127.0.0.1:9090/"
                           "?view=alerts)";
  EXPECT_TRUE(content.ends_with(more)) << content;
}

// Chinese annotations of every length: whatever the packing, the content is valid UTF-8,
// within the limit, and each annotation is either whole or cut before a character with "…".
TEST(WeComTest, ChineseIsNeverCutMidCharacter) {
  for (int chars = 0; chars < 400; chars += 7) {
    std::string text;
    for (int i = 0; i < chars; ++i) text += i % 3 == 0 ? "延" : i % 3 == 1 ? "迟" : "增";
    Notification n = Firing();
    n.alerts.clear();
    for (int i = 0; i < 60; ++i) {
      NotifiedAlert a = Emergency();
      a.series = "m{model=\"模型" + std::to_string(i) + "\"}";
      a.annotations = {{"summary", text}, {"root_causes", text + "\n" + text}};
      n.alerts.push_back(a);
    }
    const HttpRequest r =
        MustRender(Target(ReceiverTarget::Kind::kWeCom, std::string(kWeComUrl)), n, Shanghai());
    const std::string content = WeComContent(r);
    ASSERT_LE(content.size(), kWeComMarkdownMaxBytes) << chars;
    ASSERT_TRUE(IsValidUtf8(content)) << chars;
    ExpectBalancedMarkdown(content);
    EXPECT_THAT(content, HasSubstr("more alerts (")) << chars;
    // An annotation line holds whole characters: what follows "summary: " is a prefix of
    // `text`, possibly with "…".
    const size_t at = content.find("> summary: ");
    ASSERT_NE(at, std::string::npos);
    std::string shown = content.substr(at + 11, content.find('\n', at) - at - 11);
    if (shown.ends_with("…")) shown.resize(shown.size() - 3);
    EXPECT_TRUE(text.starts_with(shown)) << chars;
    EXPECT_LE(shown.size(), 300u);
  }
}

TEST(WeComTest, InvalidUtf8AndControlCharactersAreCleaned) {
  Notification n = Firing();
  n.alerts = {Emergency()};
  n.alerts[0].annotations = {{"summary", "bad \xff\xfe byte\nnext line\x07"}};
  const HttpRequest r =
      MustRender(Target(ReceiverTarget::Kind::kWeCom, std::string(kWeComUrl)), n, Shanghai());
  const std::string content = WeComContent(r);
  EXPECT_TRUE(IsValidUtf8(content));
  EXPECT_THAT(content, HasSubstr("> summary: bad \xef\xbf\xbd\xef\xbf\xbd byte next line\n"));
}

TEST(WeComTest, OneHugeAlertIsShownCompact) {
  Notification n = Firing();
  NotifiedAlert a = Emergency();
  for (int i = 0; i < 40; ++i) {
    a.annotations.emplace_back("note" + std::to_string(i), std::string(250, 'x'));
  }
  n.alerts = {a};
  const HttpRequest r =
      MustRender(Target(ReceiverTarget::Kind::kWeCom, std::string(kWeComUrl)), n, Shanghai());
  const std::string content = WeComContent(r);
  EXPECT_LE(content.size(), kWeComMarkdownMaxBytes);
  EXPECT_THAT(content, HasSubstr("> P99 **412 ms**"));
  EXPECT_THAT(content, Not(HasSubstr("note0")));
  EXPECT_THAT(content, Not(HasSubstr("more alert")));
}

// Everything as long as it can be: the caps keep the header and the "more" line whole, in both
// styles, so the message is never cut short.
TEST(WeComTest, OversizedPartsNeverCutTheMoreLine) {
  MessageContext ctx = Shanghai();
  ctx.external_url = "http://" + std::string(500, 'h') + ".example.com";
  ctx.instance = std::string(1000, 'i');
  Notification n = Firing();
  n.receiver = std::string(1000, 'r');
  n.group_labels = {{"alertname", std::string(1000, 'a')}, {"model", std::string(1000, 'm')}};
  n.alerts.clear();
  for (int i = 0; i < 50; ++i) {
    NotifiedAlert a = Emergency();
    a.rule = std::string(500, 'x');
    a.severity = "sev" + std::to_string(i) + std::string(100, 's');
    a.series = "m{model=\"" + std::string(2000, 'v') + "\"}";
    a.annotations = {{std::string(500, 'k'), std::string(5000, 'w')}};
    n.alerts.push_back(a);
  }
  for (bool mentions : {false, true}) {
    ReceiverTarget t = Target(ReceiverTarget::Kind::kWeCom, std::string(kWeComUrl));
    if (mentions) t.mentioned_mobile_list = {"13800001111"};
    const std::string content = WeComContent(MustRender(t, n, ctx));
    EXPECT_LE(content.size(), mentions ? kWeComTextMaxBytes : kWeComMarkdownMaxBytes);
    EXPECT_TRUE(IsValidUtf8(content));
    if (!mentions) ExpectBalancedMarkdown(content);
    const size_t more = content.rfind("\n\n… and ");
    ASSERT_NE(more, std::string::npos) << mentions;
    EXPECT_THAT(content.substr(more), HasSubstr(", …); see "));
    EXPECT_TRUE(content.ends_with(mentions ? "/?view=alerts" : "/?view=alerts)"))
        << content.substr(more);
  }
}

// Markdown messages cannot mention mobiles; with mentioned_mobile_list the message is text.
TEST(WeComTest, MentionsMakeATextMessage) {
  ReceiverTarget t = Target(ReceiverTarget::Kind::kWeCom, std::string(kWeComUrl));
  t.mentioned_mobile_list = {"13800001111", " @all "};
  Notification n = Firing();
  for (int i = 0; i < 100; ++i) n.alerts.push_back(Emergency());
  const HttpRequest r = MustRender(t, n, Shanghai());
  const Json body = Json::parse(r.body);
  EXPECT_EQ(body["msgtype"], "text");
  EXPECT_EQ(body["text"]["mentioned_mobile_list"], Json::parse(R"(["13800001111","@all"])"));
  const std::string content = body["text"]["content"];
  EXPECT_LE(content.size(), kWeComTextMaxBytes);
  EXPECT_THAT(content, StartsWith("[FIRING:102] p99_vs_baseline\nreceiver wecom"));
  EXPECT_THAT(content, HasSubstr("\n\nemergency p99_vs_baseline {model=\"rank\",route="));
  EXPECT_THAT(content, HasSubstr("\n  P99 412 ms, baseline 180 ms (+129 %), threshold 270 ms\n"));
  EXPECT_THAT(content, HasSubstr("\n  http://127.0.0.1:9090/?view=series&id="));
  EXPECT_THAT(content, HasSubstr("more alerts ("));
  EXPECT_THAT(content, Not(HasSubstr("<font")));
  EXPECT_THAT(content, Not(HasSubstr("**")));
}

// ---------------------------------------------------------------------------------------------
// Generic webhook.

TEST(WebhookTest, AlertmanagerPayloadWithTailguardFields) {
  ReceiverTarget t = Target(ReceiverTarget::Kind::kWebhook, "http://hooks.local/alert");
  t.headers = {{"Authorization", "Bearer s3cret"}, {"Idempotency-Key", "ignored"}};
  Notification n = Firing();
  n.alerts[0].ends_at = {};
  n.alerts.push_back(Resolved().alerts[0]);
  n.repeat = false;
  const HttpRequest r = MustRender(t, n, Shanghai());
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.url, "http://hooks.local/alert");
  EXPECT_EQ(r.check, HttpRequest::Check::kStatus);
  EXPECT_EQ(r.headers, (Labels{{"Content-Type", "application/json"},
                               {"Authorization", "Bearer s3cret"},
                               {"Idempotency-Key",
                                R"(wecom|{alertname="p99_vs_baseline"}|1793685730000000000|1)"}}));
  const std::string link = "http://127.0.0.1:9090/?view=series&id=";
  const Json expected = Json::parse(R"({
    "version": "4",
    "groupKey": "{alertname=\"p99_vs_baseline\"}",
    "truncatedAlerts": 0,
    "status": "firing",
    "receiver": "wecom",
    "groupLabels": {"alertname": "p99_vs_baseline"},
    "commonLabels": {"alertname": "p99_vs_baseline", "model": "rank", "route": "/v1/rank",
                     "version": "v3"},
    "commonAnnotations": {"summary": "排序模型 P99 高于基线"},
    "externalURL": "http://127.0.0.1:9090/",
    "alerts": [
      {"status": "firing",
       "labels": {"alertname": "p99_vs_baseline", "model": "rank", "route": "/v1/rank",
                  "severity": "warning", "stage": "feature_fetch", "version": "v3"},
       "annotations": {"summary": "排序模型 P99 高于基线"},
       "startsAt": "2026-11-03T06:05:00Z",
       "endsAt": "0001-01-01T00:00:00Z",
       "generatorURL": "LINK_FETCH",
       "fingerprint": "FP_FETCH",
       "series": "tailguard_request_duration_seconds{model=\"rank\",route=\"/v1/rank\",stage=\"feature_fetch\",version=\"v3\"}",
       "stat": "p99", "unit": "seconds", "tier": 0, "value": 0.061, "threshold": 0.055, "baseline_p99": 0.05},
      {"status": "firing",
       "labels": {"alertname": "p99_vs_baseline", "model": "rank", "route": "/v1/rank",
                  "severity": "emergency", "stage": "total", "version": "v3"},
       "annotations": {"summary": "排序模型 P99 高于基线",
                       "root_causes": "dependency: feature store P99 5.1x baseline (Redis fail-over)\ntraffic: QPS +12 %"},
       "startsAt": "2026-11-03T06:02:10Z",
       "endsAt": "0001-01-01T00:00:00Z",
       "generatorURL": "LINK_TOTAL",
       "fingerprint": "FP_TOTAL",
       "series": "tailguard_request_duration_seconds{model=\"rank\",route=\"/v1/rank\",stage=\"total\",version=\"v3\"}",
       "stat": "p99", "unit": "seconds", "tier": 2, "value": 0.412, "threshold": 0.27, "baseline_p99": 0.18},
      {"status": "resolved",
       "labels": {"alertname": "p99_vs_baseline", "model": "rank", "route": "/v1/rank",
                  "severity": "emergency", "stage": "total", "version": "v3"},
       "annotations": {"summary": "排序模型 P99 高于基线",
                       "root_causes": "dependency: feature store P99 5.1x baseline (Redis fail-over)\ntraffic: QPS +12 %"},
       "startsAt": "2026-11-03T06:02:10Z",
       "endsAt": "2026-11-03T06:20:00Z",
       "generatorURL": "LINK_TOTAL",
       "fingerprint": "FP_TOTAL",
       "series": "tailguard_request_duration_seconds{model=\"rank\",route=\"/v1/rank\",stage=\"total\",version=\"v3\"}",
       "stat": "p99", "unit": "seconds", "tier": 2, "value": 0.15, "threshold": 0.27, "baseline_p99": 0.18}
    ],
    "idempotency_key": "wecom|{alertname=\"p99_vs_baseline\"}|1793685730000000000|1",
    "sequence": 1,
    "repeat": false
  })");
  Json want = expected;
  for (Json& a : want["alerts"]) {
    const bool total = a["labels"]["stage"] == "total";
    a["generatorURL"] = DashboardLink(Shanghai(), total ? kSeries : kFetchSeries);
    a["fingerprint"] = Fingerprint(total ? Emergency().labels : Warning().labels);
  }
  const Json got = Json::parse(r.body);
  EXPECT_EQ(got, want) << got.dump(2);
  // Field order follows Alertmanager's documentation.
  EXPECT_THAT(r.body, StartsWith(R"({"version":"4","groupKey":)"));
  EXPECT_THAT(want["alerts"][0]["generatorURL"].get<std::string>(), StartsWith(link));
}

TEST(WebhookTest, NanValuesAreNull) {
  Notification n = Firing();
  n.alerts = {Emergency()};
  n.alerts[0].baseline_p99 = std::nan("");
  n.alerts[0].threshold = std::nan("");
  const HttpRequest r =
      MustRender(Target(ReceiverTarget::Kind::kWebhook, "http://h/"), n, MessageContext{});
  const Json got = Json::parse(r.body);
  EXPECT_TRUE(got["alerts"][0]["baseline_p99"].is_null());
  EXPECT_TRUE(got["alerts"][0]["threshold"].is_null());
  EXPECT_EQ(got["alerts"][0]["generatorURL"], "");
  EXPECT_EQ(got["externalURL"], "");
}

// ---------------------------------------------------------------------------------------------
// Alertmanager API v2.

TEST(AlertmanagerTest, PostableAlertsAtApiV2) {
  Notification n = Firing();
  n.alerts.push_back(Resolved().alerts[0]);
  n.alerts[2].annotations = {{"value", "set by the rule"}};
  for (std::string base : {"http://127.0.0.1:9093", "http://127.0.0.1:9093/"}) {
    const HttpRequest r =
        MustRender(Target(ReceiverTarget::Kind::kAlertmanager, base), n, Shanghai());
    EXPECT_EQ(r.url, "http://127.0.0.1:9093/api/v2/alerts");
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(Header(r, "Content-Type"), "application/json");
    EXPECT_EQ(Header(r, "Idempotency-Key"),
              R"(wecom|{alertname="p99_vs_baseline"}|1793685730000000000|1)");
  }
  const HttpRequest r = MustRender(
      Target(ReceiverTarget::Kind::kAlertmanager, "http://am:9093/prefix//"), n, Shanghai());
  EXPECT_EQ(r.url, "http://am:9093/prefix/api/v2/alerts");

  const Json got = Json::parse(r.body);
  ASSERT_TRUE(got.is_array());
  ASSERT_EQ(got.size(), 3u);
  // postableAlert in Alertmanager's openapi.yaml: labels (required), annotations, startsAt,
  // endsAt, generatorURL; nothing else.
  for (const Json& a : got) {
    for (const auto& [key, value] : a.items()) {
      EXPECT_THAT(
          (std::vector<std::string>{"labels", "annotations", "startsAt", "endsAt", "generatorURL"}),
          ::testing::Contains(key));
    }
    EXPECT_TRUE(a["labels"].is_object());
    for (const auto& [key, value] : a["annotations"].items()) EXPECT_TRUE(value.is_string());
  }
  EXPECT_EQ(got[1]["labels"], Json::parse(R"({"alertname": "p99_vs_baseline", "model": "rank",
      "route": "/v1/rank", "severity": "emergency", "stage": "total", "version": "v3"})"));
  EXPECT_EQ(got[1]["annotations"], Json::parse(R"({"summary": "排序模型 P99 高于基线",
      "root_causes": "dependency: feature store P99 5.1x baseline (Redis fail-over)\ntraffic: QPS +12 %",
      "value": "412 ms", "threshold": "270 ms", "baseline": "180 ms"})"));
  EXPECT_EQ(got[1]["startsAt"], "2026-11-03T06:02:10Z");
  EXPECT_FALSE(got[1].contains("endsAt"));  // firing: Alertmanager keeps it until resolve_timeout
  EXPECT_EQ(got[1]["generatorURL"], DashboardLink(Shanghai(), kSeries));
  // Resolved: endsAt makes Alertmanager resolve it. The rule's own "value" wins; a summary is
  // added when the alert has none.
  EXPECT_EQ(got[2]["endsAt"], "2026-11-03T06:20:00Z");
  EXPECT_EQ(got[2]["annotations"]["value"], "set by the rule");
  EXPECT_EQ(got[2]["annotations"]["summary"],
            R"(p99_vs_baseline{model="rank",route="/v1/rank",stage="total",version="v3"})"
            " emergency: P99 150 ms vs baseline 180 ms (-17 %), threshold 270 ms, lasted 17m50s");
}

TEST(AlertmanagerTest, NoGeneratorUrlWithoutExternalUrl) {
  const HttpRequest r =
      MustRender(Target(ReceiverTarget::Kind::kAlertmanager, "http://am:9093"), Firing(), {});
  const Json got = Json::parse(r.body);
  EXPECT_FALSE(got[0].contains("generatorURL"));
}

// ---------------------------------------------------------------------------------------------
// Templates.

ReceiverTarget Template(std::string body, std::string content_type = "application/json",
                        std::string method = "POST") {
  ReceiverTarget t = Target(ReceiverTarget::Kind::kTemplate, "https://sms.example.com/send");
  t.body_template = std::move(body);
  t.content_type = std::move(content_type);
  t.method = std::move(method);
  return t;
}

TEST(TemplateTest, JsonEscapesValues) {
  Notification n = Firing();
  n.alerts[1].annotations.emplace_back("note", "say \"hi\"\\\n\ttab");
  const HttpRequest r = MustRender(
      Template(
          R"({"to":"{{labels.model}}","text":"{{ severity }} {{alertname}} )"
          R"({{value}} / {{threshold}} / {{baseline}} since {{since}}: {{annotations.note}}",)"
          R"("n":{{count}},"key":"{{idempotency_key}}","st":"{{status}}","r":"{{receiver}}"})"),
      n, Shanghai());
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.url, "https://sms.example.com/send");
  EXPECT_EQ(r.check, HttpRequest::Check::kStatus);
  EXPECT_EQ(r.body,
            R"({"to":"rank","text":"emergency p99_vs_baseline 412 ms / 270 ms / 180 ms since )"
            R"(14:02:10 CST: say \"hi\"\\\n tab","n":2,)"
            R"("key":"wecom|{alertname=\"p99_vs_baseline\"}|1793685730000000000|1",)"
            R"("st":"firing","r":"wecom"})");
  EXPECT_TRUE(Json::accept(r.body));
  EXPECT_EQ(Header(r, "Content-Type"), "application/json");
}

TEST(TemplateTest, SummarySeriesAndDashboardUrlInJson) {
  const HttpRequest r =
      MustRender(Template(R"({"m":"{{summary}}","s":"{{series}}","u":"{{dashboard_url}}"})",
                          "application/vnd.sms+json; charset=utf-8"),
                 Firing(), Shanghai());
  const Json got = Json::parse(r.body);
  absl::TimeZone shanghai;
  ASSERT_TRUE(absl::LoadTimeZone("Asia/Shanghai", &shanghai));
  EXPECT_EQ(got["m"], Summary(Firing(), shanghai));
  EXPECT_EQ(got["s"], kSeries);
  EXPECT_EQ(got["u"], DashboardLink(Shanghai(), kSeries));
}

TEST(TemplateTest, FormEncodingPercentEncodesValues) {
  const HttpRequest r =
      MustRender(Template("to=138&msg={{annotations.summary}}+{{value}}&s={{labels.stage}}",
                          "application/x-www-form-urlencoded"),
                 Firing(), Shanghai());
  EXPECT_EQ(r.body,
            "to=138&msg=%E6%8E%92%E5%BA%8F%E6%A8%A1%E5%9E%8B%20P99%20%E9%AB%98%E4%BA%8E%E5%9F%BA"
            "%E7%BA%BF+412%20ms&s=total");
  EXPECT_EQ(Header(r, "Content-Type"), "application/x-www-form-urlencoded");
}

TEST(TemplateTest, OtherContentTypesAreNotEscaped) {
  const HttpRequest r =
      MustRender(Template("[{{severity}}] {{alertname}} \"{{labels.model}}\" {{labels.missing}}|",
                          "text/plain", "put"),
                 Firing(), Shanghai());
  EXPECT_EQ(r.method, "PUT");
  EXPECT_EQ(r.body, "[emergency] p99_vs_baseline \"rank\" |");
  EXPECT_EQ(Header(r, "Content-Type"), "text/plain");
}

TEST(TemplateTest, GetFillsTheQueryAndHasNoBody) {
  ReceiverTarget t = Template("phone=13800001111&text={{alertname}} {{value}}", "", "GET");
  t.url = "https://voice.example.com/call?token=T";
  t.headers = {{"Content-Type", "text/plain"}, {"X-Api-Key", "k"}};
  const HttpRequest r = MustRender(t, Firing(), Shanghai());
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(
      r.url,
      "https://voice.example.com/call?token=T&phone=13800001111&text=p99_vs_baseline%20412%20ms");
  EXPECT_EQ(r.body, "");
  EXPECT_EQ(r.headers, (Labels{{"X-Api-Key", "k"},
                               {"Idempotency-Key",
                                R"(wecom|{alertname="p99_vs_baseline"}|1793685730000000000|1)"}}));
  t.url = "https://voice.example.com/call";
  EXPECT_EQ(MustRender(t, Firing(), Shanghai()).url,
            "https://voice.example.com/call?phone=13800001111&text=p99_vs_baseline%20412%20ms");
}

TEST(TemplateTest, QuadrupleBraceIsALiteralAndClosingBracesAreText) {
  const HttpRequest r = MustRender(Template(R"({"a":{"b":"{{{{x}} {{status}}"}})", "text/plain"),
                                   Firing(), Shanghai());
  EXPECT_EQ(r.body, R"({"a":{"b":"{{x}} firing"}})");
}

TEST(TemplateTest, UserContentTypeHeaderWins) {
  ReceiverTarget t = Template("{{status}}", "text/plain");
  t.headers = {{"content-type", "text/plain; charset=gbk"}};
  const HttpRequest r = MustRender(t, Firing(), Shanghai());
  EXPECT_EQ(r.headers.size(), 2u);
  EXPECT_EQ(Header(r, "Content-Type"), "text/plain; charset=gbk");
}

TEST(TemplateTest, ResolvedTakesTheFirstAlert) {
  const HttpRequest r =
      MustRender(Template("{{status}} {{alertname}} {{value}} {{count}}", "text/plain"), Resolved(),
                 Shanghai());
  EXPECT_EQ(r.body, "resolved p99_vs_baseline 150 ms 1");
}

TEST(TemplateTest, ValidateRejectsUnknownFieldsAndUnclosedBraces) {
  EXPECT_TRUE(ValidateTemplate("").ok());
  EXPECT_TRUE(ValidateTemplate("plain }} text {{{{").ok());
  EXPECT_TRUE(ValidateTemplate("{{labels.model}}{{annotations.root_causes}}{{ since }}").ok());
  for (std::string_view f : TemplateFields()) {
    EXPECT_TRUE(ValidateTemplate("{{" + std::string(f) + "}}").ok()) << f;
  }
  const absl::Status unknown = ValidateTemplate(R"({"text":"{{foo}}"})");
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(unknown.message(),
            "body: unknown field {{foo}} at offset 9; known: receiver, status, summary, "
            "alertname, severity, series, value, threshold, baseline, since, count, "
            "dashboard_url, idempotency_key, labels.NAME, annotations.NAME");
  EXPECT_THAT(std::string(ValidateTemplate("{{labels.}}").message()),
              StartsWith("body: unknown field {{labels.}} at offset 0;"));
  EXPECT_THAT(std::string(ValidateTemplate("{{labels.a-b}}").message()),
              StartsWith("body: unknown field {{labels.a-b}}"));
  EXPECT_THAT(std::string(ValidateTemplate("{{}}").message()),
              StartsWith("body: unknown field {{}}"));
  EXPECT_EQ(ValidateTemplate("ok {{status}} then {{status").message(),
            "body: unclosed {{ at offset 19");
}

TEST(TemplateTest, RenderRejectsBadTemplatesAndMethods) {
  absl::StatusOr<HttpRequest> r = Render(Template("{{nope}}"), Firing(), Shanghai());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), StartsWith("body: unknown field {{nope}}"));
  r = Render(Template("x", "text/plain", "DELETE"), Firing(), Shanghai());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "method: expected POST, PUT or GET, got \"DELETE\"");
}

// ---------------------------------------------------------------------------------------------
// Errors and headers common to every kind.

TEST(RenderTest, Errors) {
  MessageContext ctx;
  EXPECT_EQ(Render(ReceiverTarget{}, Firing(), ctx).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Render(Target(ReceiverTarget::Kind::kWebhook, ""), Firing(), ctx).status().message(),
            "url: must not be empty");
  ctx.time_zone = "Mars/Olympus";
  EXPECT_EQ(
      Render(Target(ReceiverTarget::Kind::kWebhook, "http://h"), Firing(), ctx).status().message(),
      "time_zone: unknown time zone \"Mars/Olympus\"");
}

TEST(RenderTest, IdempotencyKeyHeaderIsAlwaysSafe) {
  Notification n = Firing();
  n.idempotency_key = "r|{model=\"排序 a\r\nb\"}|1|2%";
  for (ReceiverTarget::Kind kind :
       {ReceiverTarget::Kind::kWeCom, ReceiverTarget::Kind::kWebhook,
        ReceiverTarget::Kind::kTemplate, ReceiverTarget::Kind::kAlertmanager}) {
    ReceiverTarget t = Target(kind, "http://h/");
    t.body_template = "{{idempotency_key}}";
    const HttpRequest r = MustRender(t, n, {});
    EXPECT_EQ(Header(r, "Idempotency-Key"), "r|{model=\"%E6%8E%92%E5%BA%8F%20a%0D%0Ab\"}|1|2%25")
        << static_cast<int>(kind);
    EXPECT_EQ(r.headers.back().first, "Idempotency-Key");
  }
}

// A message about an alert on a size says sizes, not seconds.
TEST(RenderTest, AnAlertOnASizeIsWrittenInBytes) {
  Notification n = Firing();
  n.alerts = {Warning()};
  NotifiedAlert& a = n.alerts[0];
  a.unit = Unit::kBytes;
  a.value = 40960;
  a.threshold = 20480;
  a.baseline_p99 = 10240;
  const HttpRequest r =
      MustRender(Target(ReceiverTarget::Kind::kWeCom, std::string(kWeComUrl)), n, Shanghai());
  EXPECT_THAT(r.body, HasSubstr("40 KiB"));
  EXPECT_THAT(r.body, HasSubstr("20 KiB"));
  EXPECT_THAT(r.body, HasSubstr("10 KiB"));  // the baseline
  EXPECT_THAT(r.body, ::testing::Not(HasSubstr(" ms")));
  // A template's fields, every one of them in bytes.
  ReceiverTarget t = Target(ReceiverTarget::Kind::kTemplate, "http://h/");
  t.body_template = "{{value}}|{{threshold}}|{{baseline}}";
  EXPECT_EQ(MustRender(t, n, {}).body, "40 KiB|20 KiB|10 KiB");
  // The webhook's numbers say what they are in.
  const HttpRequest hook = MustRender(Target(ReceiverTarget::Kind::kWebhook, "http://h/"), n, {});
  EXPECT_EQ(Json::parse(hook.body)["alerts"][0]["unit"], "bytes");
}

}  // namespace
}  // namespace tailguard::notify
