// `tailguard replay`: recorded data through the same detectors and alert rules as the live loop,
// as fast as the CPU allows.
//
//   tailguard replay FILE.csv [--rules rules.yaml] [--out scores.csv]
//       FILE is `timestamp,value` (a P99 series, in --unit) or a request log
//       `timestamp,latency_ms[,<stage>_ms ...]`, aggregated to --resolution.
//   tailguard replay --nab DATA_DIR OUT_DIR
//       every DATA_DIR/<category>/<file>.csv to OUT_DIR/<category>/<file>.csv with the columns
//       timestamp,value,anomaly_score.
#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "analyze/request_log.h"
#include "bad_rows.h"
#include "commands.h"
#include "common/duration.h"
#include "common/format.h"
#include "common/parallel.h"
#include "common/progress.h"
#include "common/strings.h"
#include "metrics/series_key.h"
#include "series_replay.h"
#include "tailguard/alert.h"
#include "tailguard/analyzer.h"
#include "tailguard/detect.h"
#include "tailguard/series_io.h"

namespace tailguard::cli {
namespace {

struct Options {
  std::string file;
  std::vector<std::string> nab;  // DATA_DIR OUT_DIR
  std::string out;
  std::string rules;
  std::string unit = "ms";
  std::string resolution = "1m";
  double anomaly_threshold = 0.5;
  int threads = 0;
  bool quiet = false;
};

// The aggregation step of a request log: a duration from 1 ms to 1 day (anything else is a
// typo, and would overflow or divide by zero).
std::optional<Duration> ParseResolution(std::string_view text) {
  std::optional<Duration> d = ParseDurationText(text);
  if (!d || *d < std::chrono::milliseconds(1) || *d > std::chrono::hours(24)) return std::nullopt;
  return d;
}

constexpr double kMaxLatencyNs = static_cast<double>(BucketLayout::kMaxValue);

std::string Seconds(double s) { return std::isnan(s) ? "-" : FormatDuration(s * 1e9); }

std::string ValueText(Statistic stat, double v) {
  if (std::isnan(v)) return "-";
  if (IsLatencyStatistic(stat)) return Seconds(v);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g", v);
  return buf;
}

// Prints events as they come: the alert timeline, and drift findings.
class TimelinePrinter final : public Subscriber {
 public:
  explicit TimelinePrinter(bool print) : print_(print) {}

  void OnAlertEvent(const AlertEvent& e) override {
    ++events_;
    if (e.kind == AlertEventKind::kFire) ++fired_;
    if (!print_) return;
    std::string labels;
    for (const auto& [k, v] : e.labels) {
      if (k == "stage") labels = " stage=" + v;
    }
    std::printf("%s  %-10s %-9s %-16s%s value %s threshold %s baseline %s\n",
                FormatTimestampUtc(e.time).c_str(), std::string(AlertEventKindName(e.kind)).c_str(),
                e.severity.c_str(), e.rule.c_str(), labels.c_str(),
                ValueText(e.stat, e.value).c_str(), ValueText(e.stat, e.threshold).c_str(),
                Seconds(e.baseline_p99).c_str());
  }
  void OnNotification(const Notification&) override { ++notifications_; }
  void OnDrift(const DriftEvent& d) override {
    if (!print_) return;
    std::printf("%s  %-10s %s %s\n", FormatTimestampUtc(d.time).c_str(),
                d.drifting ? "drift" : "drift_end", d.series.c_str(),
                d.drifting ? d.finding.Describe().c_str() : "no longer trending");
  }

  uint64_t events() const { return events_; }
  uint64_t fired() const { return fired_; }
  uint64_t notifications() const { return notifications_; }

 private:
  const bool print_;
  uint64_t events_ = 0;
  uint64_t fired_ = 0;
  uint64_t notifications_ = 0;
};

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "tailguard replay: %s\n", message.c_str());
  return code;
}

std::string RouteOf(const std::string& file) { return std::filesystem::path(file).stem().string(); }

std::string DefaultOut(const std::string& file) {
  return std::filesystem::path(file).stem().string() + ".scores.csv";
}

// A request log: rows of individual requests, aggregated per resolution into percentiles.
int ReplayRequestLog(const Options& o, const CsvTable& table, Analyzer& analyzer,
                     const TimelinePrinter& sink, Duration resolution) {
  const auto col = [&](std::string_view name) -> int {
    for (size_t i = 0; i < table.header.size(); ++i) {
      if (table.header[i] == name) return static_cast<int>(i);
    }
    return -1;
  };
  const int ts_col = col("timestamp");
  // Stages: every other column named <stage>_ms. Any other column is refused, not dropped: a
  // stage column without its unit ("feature_fetch") would otherwise vanish without a word.
  std::vector<std::pair<std::string, int>> stages = {{"total", col("latency_ms")}};
  for (size_t i = 0; i < table.header.size(); ++i) {
    const std::string& h = table.header[i];
    if (h == "timestamp" || h == "latency_ms" || h == "status") continue;
    if (h.size() > 3 && h.ends_with("_ms")) {
      stages.emplace_back(h.substr(0, h.size() - 3), static_cast<int>(i));
      continue;
    }
    const bool stage_like = !h.empty() && std::all_of(h.begin(), h.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
    return Fail(2, Cat(o.file, ":1: column \"", h, "\": ",
                       stage_like ? Cat("a stage column's name ends in _ms, its unit (", h,
                                        "_ms, in milliseconds)")
                                  : std::string("not a column of a request log"),
                       "; a request log has timestamp,latency_ms[,<stage>_ms...][,status]"));
  }
  const int status_col = col("status");
  std::vector<std::string> stage_names;
  for (const auto& st : stages) stage_names.push_back(st.first);
  analyze::RequestLog log(std::string(kRequestDurationMetric), {{"route", RouteOf(o.file)}},
                          stage_names, resolution);
  log.set_has_status(status_col >= 0);
  // Every bad row is named (BadRows), and nothing is replayed unless all are good.
  BadRows bad;
  std::vector<uint64_t> latencies(stages.size());
  for (size_t r = 0; r < table.rows.size(); ++r) {
    const auto& row = table.rows[r];
    const std::string where = Cat(o.file, ":", table.line[r], ": ");
    absl::StatusOr<WallTime> t = ParseTimestamp(row[static_cast<size_t>(ts_col)]);
    if (!t.ok()) {
      bad.Add(Cat(where, "timestamp: ", t.status().message()));
      continue;
    }
    bool row_ok = true;
    for (size_t s = 0; s < stages.size(); ++s) {
      latencies[s] = UINT64_MAX;  // empty: the stage did not happen
      const std::string& field = row[static_cast<size_t>(stages[s].second)];
      if (field.empty()) continue;
      char* end = nullptr;
      const double ms = std::strtod(field.c_str(), &end);
      // Finite, not negative, and within what a histogram records (about 73 minutes).
      if (end == field.c_str() || *end != '\0' || !(ms >= 0) || !(ms * 1e6 <= kMaxLatencyNs)) {
        bad.Add(Cat(where, table.header[static_cast<size_t>(stages[s].second)], ": \"", field,
                    "\" is not a latency in milliseconds (a number from 0 to ", kMaxLatencyNs / 1e6,
                    ")"));
        row_ok = false;
        continue;
      }
      latencies[s] = static_cast<uint64_t>(ms * 1e6);
    }
    int code = 0;
    const bool has_total = !row[static_cast<size_t>(stages[0].second)].empty();
    if (status_col >= 0 && has_total) {
      const std::string& st = row[static_cast<size_t>(status_col)];
      const auto [end, ec] = std::from_chars(st.data(), st.data() + st.size(), code);
      if (!st.empty() &&
          (ec != std::errc() || end != st.data() + st.size() || code < 100 || code > 599)) {
        bad.Add(Cat(where, "status: \"", st, "\" is not an HTTP status code (100 to 599)"));
        row_ok = false;
      }
    }
    if (!row_ok || !bad.empty()) continue;  // once a row is bad, only checking goes on
    log.Add(*t, latencies, code);
  }
  if (!bad.empty()) return Fail(2, bad.Text());
  if (log.empty()) return Fail(2, Cat(o.file, ": no requests"));
  constexpr int64_t kMaxSteps = 10'000'000;
  if (log.span() > kMaxSteps) {
    return Fail(
        2, Cat(o.file, ": the requests span ", log.span(), " steps of ", o.resolution, " (at most ",
               kMaxSteps, "): check the timestamps or use a coarser --resolution"));
  }
  // Every step from the first to the last, stamped at its end: empty ones are missing points.
  TimeSeries total;
  total.path = o.file;
  std::vector<double> scores;
  std::unique_ptr<Source> steps = log.Steps();
  Batch batch;
  std::vector<PointVerdict> verdicts;
  for (;;) {
    absl::StatusOr<bool> more = steps->Next(batch);
    if (!more.ok()) return Fail(1, std::string(more.status().message()));
    if (!*more) break;
    analyzer.Analyze(batch, &verdicts);
    const size_t at = log.PointOf(0);
    total.times.push_back(batch.time);
    total.values.push_back(batch.points[at].p99 * 1e3);
    scores.push_back(std::isnan(verdicts[at].score) ? 0 : verdicts[at].score);
  }
  const std::string out = o.out.empty() ? DefaultOut(o.file) : o.out;
  if (absl::Status st = WriteScoresCsv(out, total, scores); !st.ok()) {
    return Fail(1, std::string(st.message()));
  }
  for (size_t s = 0; s < stages.size() && !o.quiet; ++s) {
    const DriftFinding* drift = analyzer.Drift(log.Key(s));
    if (drift != nullptr && drift->drifting) {
      std::printf("\ndrift: %s P99 %s\n", stages[s].first.c_str(), drift->Describe().c_str());
    }
  }
  if (!o.quiet) {
    std::printf(
        "\n%zu requests in %zu steps of %s, %zu stage series; %llu events, %llu alerts "
        "fired, %llu notifications; scores of the total P99 (ms) in %s\n",
        table.rows.size(), total.times.size(), o.resolution.c_str(), stages.size(),
        static_cast<unsigned long long>(sink.events()),
        static_cast<unsigned long long>(sink.fired()),
        static_cast<unsigned long long>(sink.notifications()), out.c_str());
  }
  return 0;
}

// A P99 series, `timestamp,value` in --unit: every row checked (a latency from 0 to what a
// histogram records; times strictly increasing, a repeated time named with the line that has it
// first), every bad row named.
absl::StatusOr<TimeSeries> ReadP99Series(const Options& o, const CsvTable& table, double unit) {
  int ts_col = -1, value_col = -1;
  for (size_t c = 0; c < table.header.size(); ++c) {
    const std::string& h = table.header[c];
    if (h == "timestamp") {
      ts_col = static_cast<int>(c);
    } else if (h == "value") {
      value_col = static_cast<int>(c);
    } else {
      return absl::InvalidArgumentError(
          Cat(o.file, ":1: column \"", h,
              "\": not a column of a P99 series, which has timestamp,value (a request log has "
              "timestamp,latency_ms[,<stage>_ms...][,status])"));
    }
  }
  TimeSeries series;
  series.path = o.file;
  BadRows bad;
  const double max_value = kMaxLatencyNs * 1e-9 / unit;
  int previous_line = 0;
  for (size_t r = 0; r < table.rows.size(); ++r) {
    const std::vector<std::string>& row = table.rows[r];
    const std::string where = Cat(o.file, ":", table.line[r], ": ");
    absl::StatusOr<WallTime> t = ParseTimestamp(row[static_cast<size_t>(ts_col)]);
    if (!t.ok()) {
      bad.Add(Cat(where, "timestamp: ", t.status().message()));
      continue;
    }
    const std::string& v = row[static_cast<size_t>(value_col)];
    double value = Observation::kMissing;
    if (!v.empty()) {
      char* end = nullptr;
      value = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(value >= 0) || !(value <= max_value)) {
        bad.Add(Cat(where, "value: \"", v, "\" is not a P99 in ", o.unit, " (a number from 0 to ",
                    max_value, "; leave the field empty for a missing point)"));
        continue;
      }
    }
    if (!series.times.empty() && *t <= series.times.back()) {
      bad.Add(Cat(where, "timestamp: ", row[static_cast<size_t>(ts_col)],
                  *t == series.times.back()
                      ? Cat(" repeats line ", previous_line, "; give one row per time")
                      : Cat(" is earlier than line ", previous_line, "; sort the file by time")));
      continue;
    }
    series.times.push_back(*t);
    series.values.push_back(value);
    previous_line = table.line[r];
  }
  if (!bad.empty()) return absl::InvalidArgumentError(bad.Text());
  if (series.times.empty()) return absl::InvalidArgumentError(Cat(o.file, ": no data rows"));
  return series;
}

int ReplayFile(const Options& o) {
  const std::optional<double> unit = LatencyUnitSeconds(o.unit);
  if (!unit) return Fail(2, Cat("--unit: \"", o.unit, "\" is not one of ns, us, ms, s"));
  const std::optional<Duration> resolution = ParseResolution(o.resolution);
  if (!resolution) {
    return Fail(2, Cat("--resolution: \"", o.resolution,
                       "\" is not a duration from 1ms to 24h like 10s, 1m, 1h"));
  }
  AlertConfig config = DefaultAlertRules(o.anomaly_threshold);
  if (!o.rules.empty()) {
    absl::StatusOr<AlertConfig> loaded = LoadAlertConfig(o.rules);
    if (!loaded.ok()) return Fail(2, std::string(loaded.status().message()));
    config = *std::move(loaded);
  }
  TimelinePrinter sink(!o.quiet);
  absl::StatusOr<CsvTable> table = ReadCsv(o.file);
  if (!table.ok()) return Fail(2, std::string(table.status().message()));
  const auto has = [&](std::string_view name) {
    return std::find(table->header.begin(), table->header.end(), name) != table->header.end();
  };
  const bool request_log = has("timestamp") && has("latency_ms");
  AnalyzerOptions analysis;
  // A request log's spacing is known; a series' is learnt from its first points.
  if (request_log) analysis.ensemble.step = *resolution;
  absl::StatusOr<std::unique_ptr<Analyzer>> analyzer =
      Analyzer::Create(std::move(config), std::move(analysis));
  if (!analyzer.ok()) return Fail(2, std::string(analyzer.status().message()));
  (*analyzer)->Subscribe(&sink);

  if (request_log) return ReplayRequestLog(o, *table, **analyzer, sink, *resolution);
  if (!(has("timestamp") && has("value"))) {
    return Fail(2, Cat(o.file,
                       ":1: header: expected the columns timestamp,value (a series) or "
                       "timestamp,latency_ms[,<stage>_ms...] (a request log)"));
  }
  absl::StatusOr<TimeSeries> series = ReadP99Series(o, *table, *unit);
  if (!series.ok()) return Fail(2, std::string(series.status().message()));
  const Labels labels = ReplayLabels(o.file);
  std::vector<double> scores;
  scores.reserve(series->values.size());
  std::vector<PointVerdict> verdicts;
  Batch batch;
  for (size_t i = 0; i < series->values.size(); ++i) {
    batch = P99Batch(labels, series->times[i], series->values[i] * *unit);
    (*analyzer)->Analyze(batch, &verdicts);
    scores.push_back(std::isnan(verdicts[0].score) ? 0 : verdicts[0].score);
  }
  const std::string out = o.out.empty() ? DefaultOut(o.file) : o.out;
  if (absl::Status st = WriteScoresCsv(out, *series, scores); !st.ok()) {
    return Fail(1, std::string(st.message()));
  }
  const DriftFinding* drift =
      (*analyzer)->Drift(metrics::SeriesKey(kRequestDurationMetric, labels));
  if (!o.quiet && drift != nullptr && drift->drifting) {
    std::printf("\ndrift: P99 %s\n", drift->Describe().c_str());
  }
  if (!o.quiet) {
    std::printf("\n%zu points; %llu events, %llu alerts fired, %llu notifications; scores in %s\n",
                series->values.size(), static_cast<unsigned long long>(sink.events()),
                static_cast<unsigned long long>(sink.fired()),
                static_cast<unsigned long long>(sink.notifications()), out.c_str());
  }
  return 0;
}

// The NAB corpus: score every file, in parallel, into OUT_DIR with the same layout.
int ReplayNab(const Options& o) {
  const std::string& data = o.nab[0];
  const std::string& out_dir = o.nab[1];
  absl::StatusOr<std::vector<std::string>> files = ListNabCorpus(data);
  if (!files.ok()) return Fail(2, std::string(files.status().message()));
  const int threads = o.threads > 0
                          ? o.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  Progress progress("replay", static_cast<int64_t>(files->size()));
  std::atomic<int64_t> points{0};
  std::mutex error_mu;
  std::string error;
  const auto start = std::chrono::steady_clock::now();
  ParallelFor(files->size(), threads, [&](size_t i) {
    const std::string& rel = (*files)[i];
    absl::StatusOr<TimeSeries> s = ReadTimeSeriesCsv((std::filesystem::path(data) / rel).string());
    absl::Status st = s.status();
    if (st.ok()) {
      const std::vector<double> scores = ScoreSeries(s->times, s->values);
      points += static_cast<int64_t>(scores.size());
      const std::filesystem::path dst = std::filesystem::path(out_dir) / rel;
      std::error_code ec;
      std::filesystem::create_directories(dst.parent_path(), ec);
      st = ec ? absl::InternalError(Cat(dst.parent_path().string(), ": ", ec.message()))
              : WriteScoresCsv(dst.string(), *s, scores);
    }
    if (!st.ok()) {
      std::lock_guard<std::mutex> lock(error_mu);
      if (error.empty()) error = std::string(st.message());
    }
    progress.Advance(1, rel);
  });
  if (!error.empty()) return Fail(1, error);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!o.quiet) {
    std::printf("%zu files, %lld points in %.2fs (%.0f points/s on %d threads) -> %s\n",
                files->size(), static_cast<long long>(points.load()), secs,
                static_cast<double>(points.load()) / std::max(secs, 1e-9), threads,
                out_dir.c_str());
  }
  return 0;
}

}  // namespace

void AddReplay(CLI::App& app, Action& action) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "replay",
      "Run recorded data through the detectors and alert rules: prints the alert timeline and "
      "writes timestamp,value,anomaly_score per point");
  cmd->add_option("file", o->file,
                  "CSV with timestamp,value (a P99 series) or timestamp,latency_ms[,<stage>_ms] "
                  "(a request log)");
  cmd->add_option("--nab", o->nab, "DATA_DIR OUT_DIR: score a NAB-layout corpus")
      ->expected(2)
      ->type_name("DATA_DIR OUT_DIR");
  cmd->add_option("--out,-o", o->out, "scores file (default: ./<file stem>.scores.csv)");
  cmd->add_option("--rules", o->rules,
                  "alert rule file (default: the +10/30/50 % tiers on P99 against the forecast "
                  "baseline, and the anomaly score)");
  cmd->add_option("--unit", o->unit, "unit of a series' values: ns, us, ms, s")
      ->capture_default_str();
  cmd->add_option("--resolution", o->resolution, "request logs: aggregation step, e.g. 10s, 1m")
      ->capture_default_str();
  cmd->add_option("--anomaly-threshold", o->anomaly_threshold,
                  "default rules: anomaly score that alerts (0.5 is one in 100 000)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "--nab: worker threads (default: one per core)")
      ->check(CLI::Range(0, 1024));
  cmd->add_flag("--quiet,-q", o->quiet, "print only errors");
  cmd->callback([o, &action] {
    action = [o]() -> int {
      if (!o->nab.empty()) {
        if (!o->file.empty())
          return Fail(2, "give either FILE or --nab DATA_DIR OUT_DIR, not both");
        return ReplayNab(*o);
      }
      if (o->file.empty()) return Fail(2, "missing FILE (or --nab DATA_DIR OUT_DIR); see --help");
      return ReplayFile(*o);
    };
  });
}

}  // namespace tailguard::cli
