// `tailguard backtest`: runs the anomaly detector over a labelled corpus (or reads precomputed
// scores) and scores it against the incident windows as NAB does, with detection delay, missed
// windows and false positives per day. See docs/backtest.md.
#include "tailguard/backtest.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "commands.h"
#include "common/duration.h"
#include "common/parallel.h"
#include "common/progress.h"
#include "common/strings.h"
#include "series_replay.h"
#include "tailguard/alert.h"
#include "tailguard/detect.h"
#include "tailguard/series_io.h"

namespace tailguard::cli {
namespace {

namespace fs = std::filesystem;

struct Options {
  std::string nab_dir;           // --nab: NAB-layout data, run the detector
  std::string scores_dir;        // --scores: NAB-layout score files
  std::string data_file;         // --data: one series, run the detector
  std::string windows;           // --windows
  bool fixed_threshold = false;  // --threshold given
  double threshold = 0;
  std::string json_out;
  int threads = 0;                         // 0: hardware concurrency
  std::string rules;                       // --rules: score alert rules instead of the score
  std::string detect_on = "fire";          // --detect-on: which event is a detection
  std::string unit = "ms";                 // --unit: of the values, for latency rules
  std::optional<AlertConfig> rule_config;  // loaded from `rules`
};

// Runs one series through the ensemble and the rules; returns 1 at the rows where a `kind`
// event happened, 0 elsewhere, so detections score with threshold 1.
std::vector<double> RuleDetections(const TimeSeries& series, const AlertConfig& config,
                                   AlertEventKind kind, double unit_seconds) {
  std::vector<double> out(series.values.size(), 0.0);
  absl::StatusOr<std::unique_ptr<Analyzer>> analyzer = Analyzer::Create(config, {});
  if (!analyzer.ok()) return out;  // validated when loaded
  // Which event kinds the current point caused.
  struct Seen final : Subscriber {
    AlertEventKind kind;
    bool hit = false;
    void OnAlertEvent(const AlertEvent& e) override { hit = hit || e.kind == kind; }
  } seen;
  seen.kind = kind;
  (*analyzer)->Subscribe(&seen);
  const Labels labels = ReplayLabels(series.path);
  for (size_t i = 0; i < series.values.size(); ++i) {
    seen.hit = false;
    (*analyzer)->Analyze(P99Batch(labels, series.times[i], series.values[i] * unit_seconds));
    if (seen.hit) out[i] = 1.0;
  }
  return out;
}

// A failure with its exit code: 2 for bad input or usage, 1 for a runtime failure.
struct Failure {
  int code;
  std::string message;
};

int Fail(const Failure& f) {
  std::fprintf(stderr, "tailguard backtest: %s\n", f.message.c_str());
  return f.code;
}

// "0s", "45s", "12m", "12m30s", "2h05m", "1d04h".
std::string FormatDelay(Duration d) {
  const int64_t s = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof(buf), "%llds", static_cast<long long>(s));
  } else if (s < 3600) {
    if (s % 60 == 0) {
      std::snprintf(buf, sizeof(buf), "%lldm", static_cast<long long>(s / 60));
    } else {
      std::snprintf(buf, sizeof(buf), "%lldm%02llds", static_cast<long long>(s / 60),
                    static_cast<long long>(s % 60));
    }
  } else if (s < 86400) {
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%lldd%02lldh", static_cast<long long>(s / 86400),
                  static_cast<long long>(s % 86400 / 3600));
  }
  return buf;
}

// The windows file: --windows, else DIR/../windows.json, else DIR/windows.json.
std::optional<Failure> FindWindows(const std::string& dir, std::string& windows) {
  if (!windows.empty()) return std::nullopt;
  for (const fs::path& p :
       {fs::path(dir) / ".." / "windows.json", fs::path(dir) / "windows.json"}) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) {
      windows = p.lexically_normal().string();
      return std::nullopt;
    }
  }
  return Failure{
      2, Cat("no windows file: neither ", (fs::path(dir) / ".." / "windows.json").string(), " nor ",
             (fs::path(dir) / "windows.json").string(), " exists; pass --windows FILE")};
}

// Header names compare without case and surrounding blanks, as ReadTimeSeriesCsv() does.
std::string Key(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Reads a `timestamp,...,anomaly_score` file as `tailguard replay --nab` writes it.
absl::StatusOr<ScoredSeries> ReadScoreFile(const std::string& path) {
  absl::StatusOr<CsvTable> table = ReadCsv(path);
  if (!table.ok()) return table.status();
  int ts = -1;
  int score = -1;
  for (size_t c = 0; c < table->header.size(); ++c) {
    const std::string key = Key(table->header[c]);
    if (key == "timestamp" && ts < 0) ts = static_cast<int>(c);
    if (key == "anomaly_score" && score < 0) score = static_cast<int>(c);
  }
  if (ts < 0 || score < 0) {
    return absl::InvalidArgumentError(
        Cat(path, ":1: the header must name the columns \"timestamp\" and \"anomaly_score\""));
  }
  ScoredSeries s;
  s.times.reserve(table->rows.size());
  s.scores.reserve(table->rows.size());
  for (size_t r = 0; r < table->rows.size(); ++r) {
    absl::StatusOr<WallTime> t = ParseTimestamp(table->rows[r][static_cast<size_t>(ts)]);
    if (!t.ok()) {
      return absl::InvalidArgumentError(
          Cat(path, ":", table->line[r], ": timestamp: ", t.status().message()));
    }
    const std::string text = Key(table->rows[r][static_cast<size_t>(score)]);
    const char* first = text.data() + (text.starts_with('+') ? 1 : 0);
    const char* last = text.data() + text.size();
    double v = 0;
    const auto [end, ec] = std::from_chars(first, last, v);
    if (text.empty() || ec != std::errc() || end != last) {
      return absl::InvalidArgumentError(Cat(path, ":", table->line[r], ": anomaly_score: \"",
                                            table->rows[r][static_cast<size_t>(score)],
                                            "\" is not a number"));
    }
    s.times.push_back(*t);
    s.scores.push_back(v);
  }
  return s;
}

// Per-row scores of a series: the ensemble's, or 0/1 rule detections when rules are given.
std::vector<double> Score(const Options& o, const TimeSeries& series) {
  if (!o.rule_config) return ScoreSeries(series.times, series.values, EnsembleOptions{});
  const AlertEventKind kind =
      o.detect_on == "pre_alert" ? AlertEventKind::kPreAlert : AlertEventKind::kFire;
  // --unit is checked by CLI11 against the same four units.
  return RuleDetections(series, *o.rule_config, kind, LatencyUnitSeconds(o.unit).value_or(1e-3));
}

// Loads (and, unless `precomputed`, scores with the detector) every series of a NAB-layout
// directory, in name order.
std::optional<Failure> LoadCorpus(const Options& o, const std::string& dir, bool precomputed,
                                  const WindowLabels& labels, const std::string& windows_path,
                                  int threads, std::vector<ScoredSeries>& corpus) {
  absl::StatusOr<std::vector<std::string>> files = ListNabCorpus(dir);
  if (!files.ok()) return Failure{2, std::string(files.status().message())};
  for (const std::string& name : *files) {
    if (labels.find(name) == labels.end()) {
      return Failure{2, Cat((fs::path(dir) / name).string(), ": no entry \"", name, "\" in ",
                            windows_path, " (a series without anomalies needs an empty list)")};
    }
  }
  corpus.assign(files->size(), {});
  std::vector<absl::Status> errors(files->size());
  Progress progress(precomputed ? "backtest: files read" : "backtest: series scored",
                    static_cast<int64_t>(files->size()));
  ParallelFor(files->size(), threads, [&](size_t i) {
    const std::string& name = (*files)[i];
    const std::string path = (fs::path(dir) / name).string();
    ScoredSeries& s = corpus[i];
    if (precomputed) {
      absl::StatusOr<ScoredSeries> read = ReadScoreFile(path);
      if (read.ok()) {
        s = *std::move(read);
      } else {
        errors[i] = read.status();
      }
    } else {
      absl::StatusOr<TimeSeries> series = ReadTimeSeriesCsv(path);
      if (series.ok()) {
        s.scores = Score(o, *series);
        s.times = std::move(series->times);
      } else {
        errors[i] = series.status();
      }
    }
    s.name = name;
    s.windows = labels.at(name);
    progress.Advance();
  });
  for (const absl::Status& e : errors) {
    if (!e.ok()) return Failure{2, std::string(e.message())};
  }
  return std::nullopt;
}

// The windows of a single series file: by its path, "category/file.csv", its file name, or the
// only series in the labels.
std::optional<Failure> WindowsForFile(const std::string& path, const WindowLabels& labels,
                                      const std::string& windows_path,
                                      std::vector<LabelWindow>& out, std::string& name) {
  const fs::path p(path);
  const std::string candidates[] = {
      path, (p.parent_path().filename() / p.filename()).generic_string(), p.filename().string()};
  for (const std::string& c : candidates) {
    if (auto it = labels.find(c); it != labels.end()) {
      out = it->second;
      name = c;
      return std::nullopt;
    }
  }
  if (labels.size() == 1) {
    out = labels.begin()->second;
    name = labels.begin()->first;
    return std::nullopt;
  }
  return Failure{2, Cat(windows_path, ": no windows for ", path, " (looked for \"", candidates[0],
                        "\", \"", candidates[1], "\" and \"", candidates[2], "\")")};
}

void PrintFiles(const CorpusScore& c) {
  size_t width = 4;
  for (const FileOutcome& f : c.files) width = std::max(width, f.name.size());
  const int w = static_cast<int>(width);
  std::printf("%-*s %7s %7s %8s %6s %10s %6s %7s %8s\n", w, "file", "rows", "windows", "detected",
              "missed", "mean delay", "FP", "FP/day", "score");
  for (const FileOutcome& f : c.files) {
    std::printf("%-*s %7lld %7d %8d %6d %10s %6lld %7.2f %8.3f\n", w, f.name.c_str(),
                static_cast<long long>(f.rows), f.windows_scored, f.detected, f.missed,
                f.detected > 0 ? FormatDelay(f.mean_delay).c_str() : "-",
                static_cast<long long>(f.false_positives), f.fp_per_day, f.raw_score);
  }
}

void PrintSummary(const std::vector<CorpusScore>& results, bool optimized) {
  std::printf("\n%-20s %10s %10s %10s\n", "profile", optimized ? "best thr." : "threshold",
              "raw score", "normalised");
  for (const CorpusScore& c : results) {
    char normalized[32] = "n/a";
    if (!std::isnan(c.normalized_score)) {
      std::snprintf(normalized, sizeof(normalized), "%.2f", c.normalized_score);
    }
    std::printf("%-20s %10.6g %10.3f %10s\n", c.profile.name.c_str(), c.threshold, c.raw_score,
                normalized);
  }
  const CorpusScore& s = results.front();
  std::printf(
      "\nat the %s threshold %.6g: %d windows, %d detected, %d missed, mean delay %s, %lld false "
      "positives (%.2f per day over %.1f days)\n",
      s.profile.name.c_str(), s.threshold, s.windows_scored, s.detected, s.missed,
      s.detected > 0 ? FormatDelay(s.mean_delay).c_str() : "-",
      static_cast<long long>(s.false_positives), s.fp_per_day, s.scored_days);
}

double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

nlohmann::json ToJson(const CorpusScore& c, bool optimized, const std::vector<ScoredSeries>& in) {
  nlohmann::json files = nlohmann::json::array();
  for (size_t i = 0; i < c.files.size(); ++i) {
    const FileOutcome& f = c.files[i];
    nlohmann::json windows = nlohmann::json::array();
    for (const WindowOutcome& w : f.windows) {
      nlohmann::json j = {{"start", FormatRfc3339(w.window.start)},
                          {"end", FormatRfc3339(w.window.end)},
                          {"first_row", w.first_row},
                          {"last_row", w.last_row},
                          {"scored", w.scored},
                          {"detected", w.detected},
                          {"score", w.score}};
      if (w.detected) {
        j["detection_row"] = w.detection_row;
        j["detection_time"] = FormatRfc3339(in[i].times[static_cast<size_t>(w.detection_row)]);
        j["delay_s"] = Seconds(w.delay);
      }
      windows.push_back(std::move(j));
    }
    files.push_back({{"name", f.name},
                     {"rows", f.rows},
                     {"probationary_rows", f.probationary_rows},
                     {"windows_scored", f.windows_scored},
                     {"detected", f.detected},
                     {"missed", f.missed},
                     {"mean_delay_s", f.detected > 0 ? nlohmann::json(Seconds(f.mean_delay))
                                                     : nlohmann::json(nullptr)},
                     {"false_positives", f.false_positives},
                     {"scored_days", f.scored_days},
                     {"fp_per_day", f.fp_per_day},
                     {"fp_score", f.fp_score},
                     {"raw_score", f.raw_score},
                     {"tp_rows", f.tp_rows},
                     {"fn_rows", f.fn_rows},
                     {"tn_rows", f.tn_rows},
                     {"windows", std::move(windows)}});
  }
  return {{"profile", c.profile.name},
          {"tp_weight", c.profile.tp_weight},
          {"fp_weight", c.profile.fp_weight},
          {"fn_weight", c.profile.fn_weight},
          {"threshold", c.threshold},
          {"threshold_optimized", optimized},
          {"raw_score", c.raw_score},
          {"null_score", c.null_score},
          {"perfect_score", c.perfect_score},
          {"normalized_score", c.normalized_score},  // NaN is written as null
          {"windows_scored", c.windows_scored},
          {"detected", c.detected},
          {"missed", c.missed},
          {"mean_delay_s",
           c.detected > 0 ? nlohmann::json(Seconds(c.mean_delay)) : nlohmann::json(nullptr)},
          {"false_positives", c.false_positives},
          {"scored_days", c.scored_days},
          {"fp_per_day", c.fp_per_day},
          {"files", std::move(files)}};
}

int Run(Options o) {
  const int modes = !o.nab_dir.empty() + !o.scores_dir.empty() + !o.data_file.empty();
  if (modes != 1) {
    return Fail({2, "give exactly one of --nab DATA_DIR, --scores DIR or --data FILE.csv"});
  }
  if (!o.data_file.empty() && o.windows.empty()) {
    return Fail({2, "--data needs --windows FILE (windows.json or a series,start,end CSV)"});
  }
  if (o.fixed_threshold && !std::isfinite(o.threshold)) {
    return Fail({2, "--threshold must be a finite number"});
  }
  if (!o.rules.empty()) {
    if (!o.scores_dir.empty())
      return Fail({2, "--rules runs the series: use it with --nab or --data"});
    if (o.fixed_threshold)
      return Fail({2, "--rules scores alert events; --threshold does not apply"});
    absl::StatusOr<AlertConfig> config = LoadAlertConfig(o.rules);
    if (!config.ok()) return Fail({2, std::string(config.status().message())});
    o.rule_config = *std::move(config);
    // A row with an event scores 1; everything else 0.
    o.fixed_threshold = true;
    o.threshold = 1.0;
  }
  const int threads = o.threads > 0
                          ? o.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const std::string& dir = !o.nab_dir.empty() ? o.nab_dir : o.scores_dir;
  if (!dir.empty()) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return Fail({2, Cat(dir, ": no such directory")});
    if (auto f = FindWindows(dir, o.windows)) return Fail(*f);
  }
  absl::StatusOr<WindowLabels> labels = ReadWindows(o.windows);
  if (!labels.ok()) return Fail({2, std::string(labels.status().message())});

  std::vector<ScoredSeries> corpus;
  if (!dir.empty()) {
    if (auto f = LoadCorpus(o, dir, o.nab_dir.empty(), *labels, o.windows, threads, corpus)) {
      return Fail(*f);
    }
  } else {
    ScoredSeries s;
    if (auto f = WindowsForFile(o.data_file, *labels, o.windows, s.windows, s.name)) {
      return Fail(*f);
    }
    absl::StatusOr<TimeSeries> series = ReadTimeSeriesCsv(o.data_file);
    if (!series.ok()) return Fail({2, std::string(series.status().message())});
    s.scores = Score(o, *series);
    s.times = std::move(series->times);
    corpus.push_back(std::move(s));
  }

  std::vector<CorpusScore> results;
  for (const CostProfile& p : NabProfiles()) {
    absl::StatusOr<CorpusScore> c =
        o.fixed_threshold ? ScoreAtThreshold(corpus, p, o.threshold) : ScoreOptimized(corpus, p);
    if (!c.ok()) return Fail({2, std::string(c.status().message())});
    results.push_back(*std::move(c));
  }

  std::printf("windows: %s\n", o.windows.c_str());
  if (o.rule_config) {
    std::printf("detections: the %s events of %s (values in %s)\n", o.detect_on.c_str(),
                o.rules.c_str(), o.unit.c_str());
  }
  std::printf("\n");
  PrintFiles(results.front());
  std::printf("(per-file figures at the %s profile's threshold)\n",
              results.front().profile.name.c_str());
  PrintSummary(results, !o.fixed_threshold);

  if (!o.json_out.empty()) {
    nlohmann::json doc = {{"mode", !o.nab_dir.empty()      ? "nab"
                                   : !o.scores_dir.empty() ? "scores"
                                                           : "data"},
                          {"input", !dir.empty() ? dir : o.data_file},
                          {"windows_file", o.windows},
                          {"probationary_fraction", ScoringOptions{}.probationary_fraction},
                          {"max_probationary_rows", ScoringOptions{}.max_probationary_rows},
                          {"profiles", nlohmann::json::array()}};
    for (const CorpusScore& c : results)
      doc["profiles"].push_back(ToJson(c, !o.fixed_threshold, corpus));
    std::ofstream out(o.json_out);
    out << doc.dump(2) << "\n";
    out.close();
    if (!out) return Fail({1, Cat(o.json_out, ": cannot write the JSON result")});
  }
  return 0;
}

}  // namespace

void AddBacktest(CLI::App& app, Action& action) {
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "backtest",
      "Score the anomaly detector (or precomputed scores) against labelled incident windows, "
      "as the Numenta Anomaly Benchmark does");
  cmd->add_option("--nab", opts->nab_dir,
                  "NAB-layout data directory (DIR/<category>/<file>.csv): run the detector on "
                  "every series");
  cmd->add_option("--scores", opts->scores_dir,
                  "directory of precomputed score files DIR/<category>/<file>.csv with columns "
                  "timestamp,value,anomaly_score (as 'tailguard replay --nab' writes)");
  cmd->add_option("--data", opts->data_file, "a single timestamp,value CSV series");
  cmd->add_option("--windows", opts->windows,
                  "labelled windows: NAB windows.json or a series,start,end CSV (default for "
                  "--nab/--scores: DIR/../windows.json, then DIR/windows.json)");
  CLI::Option* threshold = cmd->add_option(
      "--threshold", opts->threshold,
      "score at this fixed threshold (a row is a detection when its score >= it) instead of "
      "optimising it per profile");
  // Scores are in [0, 1]: a threshold outside never or always detects, and scored 0 silently.
  threshold->check(CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end != text.c_str() && *end == '\0' && v >= 0 && v <= 1) return "";
        return Cat("expected an anomaly score from 0 to 1 (e.g. 0.5), got \"", text, "\"");
      },
      "SCORE"));
  cmd->add_option("--rules", opts->rules,
                  "score alert rules instead: a detection is a --detect-on event of this rule "
                  "file, with the series' values as P99 in --unit");
  cmd->add_option("--detect-on", opts->detect_on, "with --rules: fire or pre_alert")
      ->check(CLI::IsMember({"fire", "pre_alert"}))
      ->capture_default_str();
  cmd->add_option("--unit", opts->unit, "with --rules: unit of the values (ns, us, ms, s)")
      ->check(CLI::IsMember({"ns", "us", "ms", "s"}))
      ->capture_default_str();
  cmd->add_option("--json", opts->json_out, "also write the full result as JSON to this file");
  cmd->add_option("--threads", opts->threads, "worker threads (default: one per core)")
      ->check(CLI::Range(1, 1024));
  cmd->callback([opts, threshold, &action] {
    opts->fixed_threshold = threshold->count() > 0;
    action = [opts] { return Run(*opts); };
  });
}

}  // namespace tailguard::cli
