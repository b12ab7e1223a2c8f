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

#include "commands.h"
#include "common/duration.h"
#include "common/format.h"
#include "common/parallel.h"
#include "common/progress.h"
#include "common/strings.h"
#include "series_replay.h"
#include "tailguard/alert.h"
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

// Prints events as they come: the alert timeline.
class TimelineSink final : public AlertSink {
 public:
  explicit TimelineSink(bool print) : print_(print) {}

  void OnEvent(const AlertEvent& e) override {
    ++events_;
    if (e.kind == AlertEventKind::kPreAlert && first_pre_alert_ == WallTime{}) {
      first_pre_alert_ = e.time;
    }
    if (e.kind == AlertEventKind::kFire) ++fired_;
    if (!print_) return;
    std::string labels;
    for (const auto& [k, v] : e.labels) {
      if (k == "stage") labels = " stage=" + v;
    }
    std::printf("%s  %-10s %-9s %-16s%s value %s threshold %s baseline %s\n",
                FormatTimestamp(e.time).c_str(), std::string(AlertEventKindName(e.kind)).c_str(),
                e.severity.c_str(), e.rule.c_str(), labels.c_str(),
                ValueText(e.stat, e.value).c_str(), ValueText(e.stat, e.threshold).c_str(),
                Seconds(e.baseline_p99).c_str());
  }
  void OnNotification(const Notification&) override { ++notifications_; }

  uint64_t events() const { return events_; }
  uint64_t fired() const { return fired_; }
  uint64_t notifications() const { return notifications_; }
  WallTime first_pre_alert() const { return first_pre_alert_; }

 private:
  const bool print_;
  uint64_t events_ = 0;
  uint64_t fired_ = 0;
  uint64_t notifications_ = 0;
  WallTime first_pre_alert_{};
};

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "tailguard replay: %s\n", message.c_str());
  return code;
}

std::string DefaultOut(const std::string& file) {
  return std::filesystem::path(file).stem().string() + ".scores.csv";
}

// A request log: rows of individual requests, aggregated per resolution into percentiles.
int ReplayRequestLog(const Options& o, const CsvTable& table, AlertEngine& engine,
                     TimelineSink& sink, Duration resolution) {
  const auto col = [&](std::string_view name) -> int {
    for (size_t i = 0; i < table.header.size(); ++i) {
      if (table.header[i] == name) return static_cast<int>(i);
    }
    return -1;
  };
  const int ts_col = col("timestamp");
  // Stages: every other column named <stage>_ms.
  std::vector<std::pair<std::string, int>> stages = {{"total", col("latency_ms")}};
  for (size_t i = 0; i < table.header.size(); ++i) {
    const std::string& h = table.header[i];
    if (h != "latency_ms" && h.size() > 3 && h.ends_with("_ms")) {
      stages.emplace_back(h.substr(0, h.size() - 3), static_cast<int>(i));
    }
  }
  const int status_col = col("status");
  // Aggregate: bucket -> per stage histogram, plus error counts.
  struct Bucket {
    std::vector<Histogram> stage;
    uint64_t errors = 0;
  };
  std::map<int64_t, Bucket> buckets;
  const int64_t res = resolution.count();
  for (size_t r = 0; r < table.rows.size(); ++r) {
    const auto& row = table.rows[r];
    absl::StatusOr<WallTime> t = ParseTimestamp(row[static_cast<size_t>(ts_col)]);
    if (!t.ok()) {
      return Fail(2, Cat(o.file, ":", table.line[r], ": timestamp: ", t.status().message()));
    }
    const int64_t ns = t->time_since_epoch().count();
    Bucket& b = buckets[(ns >= 0 ? ns : ns - res + 1) / res];
    if (b.stage.empty()) b.stage.resize(stages.size());
    for (size_t s = 0; s < stages.size(); ++s) {
      const std::string& field = row[static_cast<size_t>(stages[s].second)];
      if (field.empty()) continue;
      char* end = nullptr;
      const double ms = std::strtod(field.c_str(), &end);
      // Finite, not negative, and within what a histogram records (about 73 minutes).
      if (end == field.c_str() || *end != '\0' || !(ms >= 0) || !(ms * 1e6 <= kMaxLatencyNs)) {
        return Fail(2, Cat(o.file, ":", table.line[r], ": ",
                           table.header[static_cast<size_t>(stages[s].second)], ": \"", field,
                           "\" is not a latency in milliseconds (a number >= 0)"));
      }
      b.stage[s].Record(static_cast<uint64_t>(ms * 1e6));
    }
    const bool has_total = !row[static_cast<size_t>(stages[0].second)].empty();
    if (status_col >= 0 && has_total) {
      const std::string& st = row[static_cast<size_t>(status_col)];
      int code = 0;
      const auto [end, ec] = std::from_chars(st.data(), st.data() + st.size(), code);
      if (!st.empty() && (ec != std::errc() || end != st.data() + st.size())) {
        return Fail(2, Cat(o.file, ":", table.line[r], ": status: \"", st,
                           "\" is not an HTTP status code"));
      }
      if (code >= 400) ++b.errors;  // 4xx and 5xx count as failed
    }
  }
  if (buckets.empty()) return Fail(2, Cat(o.file, ": no requests"));

  std::vector<SeriesReplay> series;
  for (size_t s = 0; s < stages.size(); ++s) {
    series.emplace_back(Labels{{"file", std::filesystem::path(o.file).stem().string()},
                               {"stage", stages[s].first}});
  }
  TimeSeries total;
  total.path = o.file;
  // Walk every resolution step from the first to the last bucket: empty ones are missing points.
  const int64_t first = buckets.begin()->first;
  const int64_t last = buckets.rbegin()->first;
  constexpr int64_t kMaxSteps = 10'000'000;
  if (last - first >= kMaxSteps) {
    return Fail(
        2, Cat(o.file, ": the requests span ", last - first + 1, " steps of ", o.resolution,
               " (at most ", kMaxSteps, "): check the timestamps or use a coarser --resolution"));
  }
  const double res_seconds = std::chrono::duration<double>(resolution).count();
  for (int64_t k = first; k <= last; ++k) {
    const WallTime t{Duration(k * res)};
    auto it = buckets.find(k);
    for (size_t s = 0; s < stages.size(); ++s) {
      Observation obs;
      double p99 = Observation::kMissing;
      if (it != buckets.end() && !it->second.stage[s].empty()) {
        const Histogram& h = it->second.stage[s];
        obs.p50 = static_cast<double>(h.Quantile(0.5)) * 1e-9;
        obs.p90 = static_cast<double>(h.Quantile(0.9)) * 1e-9;
        p99 = static_cast<double>(h.Quantile(0.99)) * 1e-9;
        obs.p999 = static_cast<double>(h.Quantile(0.999)) * 1e-9;
        obs.rate = static_cast<double>(h.count()) / res_seconds;
        if (s == 0 && status_col >= 0) {
          obs.error_ratio = static_cast<double>(it->second.errors) / static_cast<double>(h.count());
        }
      }
      series[s].Point(engine, t, p99, obs);
      if (s == 0) {
        total.times.push_back(t);
        total.values.push_back(p99 * 1e3);
      }
    }
  }
  engine.Advance(total.times.back());
  const std::string out = o.out.empty() ? DefaultOut(o.file) : o.out;
  if (absl::Status st = WriteScoresCsv(out, total, series[0].scores()); !st.ok()) {
    return Fail(1, std::string(st.message()));
  }
  for (size_t s = 0; s < stages.size() && !o.quiet; ++s) {
    if (series[s].drift().drifting) {
      std::printf("\ndrift: %s P99 %s\n", stages[s].first.c_str(),
                  series[s].drift().Describe().c_str());
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

int ReplayFile(const Options& o) {
  const std::optional<double> unit = LatencyUnitSeconds(o.unit);
  if (!unit) return Fail(2, Cat("--unit: \"", o.unit, "\" is not one of ns, us, ms, s"));
  const std::optional<Duration> resolution = ParseResolution(o.resolution);
  if (!resolution) {
    return Fail(2, Cat("--resolution: \"", o.resolution,
                       "\" is not a duration from 1ms to 24h like 10s, 1m, 1h"));
  }
  AlertConfig config = DefaultReplayRules(o.anomaly_threshold);
  if (!o.rules.empty()) {
    absl::StatusOr<AlertConfig> loaded = LoadAlertConfig(o.rules);
    if (!loaded.ok()) return Fail(2, std::string(loaded.status().message()));
    config = *std::move(loaded);
  }
  TimelineSink sink(!o.quiet);
  absl::StatusOr<std::unique_ptr<AlertEngine>> engine = AlertEngine::Create(config, sink);
  if (!engine.ok()) return Fail(2, std::string(engine.status().message()));

  absl::StatusOr<CsvTable> table = ReadCsv(o.file);
  if (!table.ok()) return Fail(2, std::string(table.status().message()));
  const auto has = [&](std::string_view name) {
    return std::find(table->header.begin(), table->header.end(), name) != table->header.end();
  };
  if (has("timestamp") && has("latency_ms")) {
    return ReplayRequestLog(o, *table, **engine, sink, *resolution);
  }
  if (!(has("timestamp") && has("value"))) {
    return Fail(2, Cat(o.file,
                       ":1: header: expected the columns timestamp,value (a series) or "
                       "timestamp,latency_ms[,<stage>_ms...] (a request log)"));
  }
  absl::StatusOr<TimeSeries> series = ReadTimeSeriesCsv(o.file);
  if (!series.ok()) return Fail(2, std::string(series.status().message()));
  SeriesReplay replay({{"file", std::filesystem::path(o.file).stem().string()}});
  for (size_t i = 0; i < series->values.size(); ++i) {
    replay.Point(**engine, series->times[i], series->values[i] * *unit, Observation{});
  }
  // Send what is due at the end of the data; nothing is known after it.
  (*engine)->Advance(series->times.back());
  const std::string out = o.out.empty() ? DefaultOut(o.file) : o.out;
  if (absl::Status st = WriteScoresCsv(out, *series, replay.scores()); !st.ok()) {
    return Fail(1, std::string(st.message()));
  }
  if (!o.quiet && replay.drift().drifting) {
    std::printf("\ndrift: P99 %s\n", replay.drift().Describe().c_str());
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
