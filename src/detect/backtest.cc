// Backtest scoring against labelled windows, NAB v1.1 semantics (see include/tailguard/backtest.h
// for the mapping), and the readers for the two window formats.
#include "tailguard/backtest.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "common/strings.h"
#include "tailguard/series_io.h"

namespace tailguard {
namespace {

// ---------------------------------------------------------------------------------------------
// Window files.

// A window and where it came from, for messages about overlaps.
struct SourcedWindow {
  LabelWindow window;
  std::string where;
};

// Sorts each series' windows and rejects overlaps; `prefix` starts every message.
absl::StatusOr<WindowLabels> Finish(std::map<std::string, std::vector<SourcedWindow>> raw,
                                    std::string_view prefix) {
  WindowLabels labels;
  for (auto& [series, windows] : raw) {
    std::stable_sort(windows.begin(), windows.end(),
                     [](const SourcedWindow& a, const SourcedWindow& b) {
                       return a.window.start < b.window.start;
                     });
    std::vector<LabelWindow>& out = labels[series];
    out.reserve(windows.size());
    for (size_t i = 0; i < windows.size(); ++i) {
      if (i > 0 && windows[i].window.start <= windows[i - 1].window.end) {
        return absl::InvalidArgumentError(Cat(prefix, windows[i].where, " overlaps ",
                                              windows[i - 1].where, " (",
                                              FormatTimestamp(windows[i - 1].window.start), " to ",
                                              FormatTimestamp(windows[i - 1].window.end), ")"));
      }
      out.push_back(windows[i].window);
    }
  }
  return labels;
}

absl::StatusOr<std::string> ReadText(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return absl::NotFoundError(Cat(path, ": no such file"));
  std::ifstream in(path, std::ios::binary);
  if (!in || std::filesystem::is_directory(path, ec)) {
    return absl::InvalidArgumentError(Cat(path, ": cannot read"));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// What a JSON value is, for messages: short scalars as written, containers by type and size.
// Never dumps a container, which recurses as deep as the input is nested.
std::string Describe(const nlohmann::json& v) {
  if (v.is_array()) return Cat("an array of ", v.size());
  if (v.is_object()) return Cat("an object of ", v.size(), " keys");
  std::string text = v.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

absl::StatusOr<WallTime> JsonTimestamp(const nlohmann::json& v) {
  if (v.is_string()) return ParseTimestamp(v.get_ref<const std::string&>());
  if (v.is_number()) return ParseTimestamp(v.dump());
  return absl::InvalidArgumentError(Cat("expected a timestamp string, got ", Describe(v)));
}

}  // namespace

absl::StatusOr<WindowLabels> ParseNabWindows(std::string_view json, std::string_view source) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json.begin(), json.end());
  } catch (const nlohmann::json::parse_error& e) {
    const size_t upto = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, json.size());
    const int64_t line =
        1 + std::count(json.begin(), json.begin() + static_cast<ptrdiff_t>(upto), '\n');
    std::string what = e.what();
    if (const size_t p = what.find("] "); p != std::string::npos) what.erase(0, p + 2);
    return absl::InvalidArgumentError(Cat(source, ":", line, ": invalid JSON: ", what));
  } catch (const nlohmann::json::exception& e) {
    // Not only parse_error: a number too large for a double is out_of_range (found by the
    // fuzzer).
    std::string what = e.what();
    if (const size_t p = what.find("] "); p != std::string::npos) what.erase(0, p + 2);
    return absl::InvalidArgumentError(Cat(source, ": invalid JSON: ", what));
  }
  if (!doc.is_object()) {
    return absl::InvalidArgumentError(
        Cat(source, ": expected an object mapping series names to lists of [start, end] windows"));
  }
  std::map<std::string, std::vector<SourcedWindow>> raw;
  for (const auto& [series, list] : doc.items()) {
    const std::string entry = Cat("\"", series, "\"");
    if (!list.is_array()) {
      return absl::InvalidArgumentError(Cat(
          source, ": ", entry, ": expected a list of [start, end] windows, got ", Describe(list)));
    }
    std::vector<SourcedWindow>& windows = raw[series];
    int n = 0;
    for (const nlohmann::json& w : list) {
      ++n;
      const std::string where = Cat(entry, " window ", n);
      if (!w.is_array() || w.size() != 2) {
        return absl::InvalidArgumentError(
            Cat(source, ": ", where, ": expected [start, end], got ", Describe(w)));
      }
      absl::StatusOr<WallTime> start = JsonTimestamp(w[0]);
      if (!start.ok()) {
        return absl::InvalidArgumentError(
            Cat(source, ": ", where, ": start: ", start.status().message()));
      }
      absl::StatusOr<WallTime> end = JsonTimestamp(w[1]);
      if (!end.ok()) {
        return absl::InvalidArgumentError(
            Cat(source, ": ", where, ": end: ", end.status().message()));
      }
      if (*start > *end) {
        return absl::InvalidArgumentError(Cat(source, ": ", where, ": starts (",
                                              FormatTimestamp(*start), ") after it ends (",
                                              FormatTimestamp(*end), ")"));
      }
      windows.push_back({{*start, *end}, where});
    }
  }
  return Finish(std::move(raw), Cat(source, ": "));
}

absl::StatusOr<WindowLabels> ReadNabWindows(const std::string& path) {
  absl::StatusOr<std::string> text = ReadText(path);
  if (!text.ok()) return text.status();
  return ParseNabWindows(*text, path);
}

absl::StatusOr<WindowLabels> ReadWindowsCsv(const std::string& path) {
  absl::StatusOr<CsvTable> table = ReadCsv(path);
  if (!table.ok()) return table.status();
  int col[3] = {-1, -1, -1};
  static constexpr std::string_view kNames[3] = {"series", "start", "end"};
  for (size_t c = 0; c < table->header.size(); ++c) {
    std::string name = table->header[c];
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    for (int k = 0; k < 3; ++k) {
      if (name == kNames[k] && col[k] < 0) col[k] = static_cast<int>(c);
    }
  }
  if (col[0] < 0 || col[1] < 0 || col[2] < 0) {
    return absl::InvalidArgumentError(
        Cat(path, ":1: the header must name the columns \"series\", \"start\" and \"end\""));
  }
  std::map<std::string, std::vector<SourcedWindow>> raw;
  for (size_t r = 0; r < table->rows.size(); ++r) {
    const std::vector<std::string>& row = table->rows[r];
    const std::string at = Cat(path, ":", table->line[r], ": ");
    std::string series = row[static_cast<size_t>(col[0])];
    series.erase(0, series.find_first_not_of(" \t"));
    series.erase(series.find_last_not_of(" \t") + 1);
    if (series.empty()) return absl::InvalidArgumentError(Cat(at, "series: empty"));
    absl::StatusOr<WallTime> start = ParseTimestamp(row[static_cast<size_t>(col[1])]);
    if (!start.ok())
      return absl::InvalidArgumentError(Cat(at, "start: ", start.status().message()));
    absl::StatusOr<WallTime> end = ParseTimestamp(row[static_cast<size_t>(col[2])]);
    if (!end.ok()) return absl::InvalidArgumentError(Cat(at, "end: ", end.status().message()));
    if (*start > *end) {
      return absl::InvalidArgumentError(Cat(at, "the window starts (", FormatTimestamp(*start),
                                            ") after it ends (", FormatTimestamp(*end), ")"));
    }
    raw[series].push_back({{*start, *end}, Cat("line ", table->line[r])});
  }
  return Finish(std::move(raw), Cat(path, ": "));
}

absl::StatusOr<WindowLabels> ReadWindows(const std::string& path) {
  if (path.ends_with(".json")) return ReadNabWindows(path);
  absl::StatusOr<std::string> text = ReadText(path);
  if (!text.ok()) return text.status();
  const size_t first = text->find_first_not_of(" \t\r\n");
  if (first != std::string::npos && (*text)[first] == '{') return ParseNabWindows(*text, path);
  return ReadWindowsCsv(path);
}

std::vector<CostProfile> NabProfiles() {
  return {{"standard", 1.0, 0.11, 1.0},
          {"reward_low_FP_rate", 1.0, 0.22, 1.0},
          {"reward_low_FN_rate", 1.0, 0.11, 2.0}};
}

namespace {

// ---------------------------------------------------------------------------------------------
// Scoring.

// NAB's scaled sigmoid: 2 * sigmoid(-5x) - 1, and -1 beyond 3 window widths after a window.
double ScaledSigmoid(double x) {
  if (x >= 3.0) return -1.0;  // as NAB v1.1: at 3 and beyond, the full FP cost
  return 2.0 * (1.0 / (1.0 + std::exp(5.0 * x))) - 1.0;
}

const double kMaxTp = ScaledSigmoid(-1.0);

// What a series looks like to the scorer, whatever the profile and threshold.
struct Prepared {
  const std::string* name = nullptr;
  const std::vector<WallTime>* times = nullptr;
  const std::vector<double>* scores = nullptr;
  int64_t probation = 0;
  std::vector<WindowOutcome> windows;  // rows mapped, nothing scored yet
  // Per row: the index of the window it is in, or -1; and NAB's unweighted position value, the
  // scaled sigmoid of its place in that window or of its distance after the previous one.
  std::vector<int32_t> row_window;
  std::vector<double> row_sigmoid;
};

int64_t ProbationaryRows(int64_t rows, const ScoringOptions& options) {
  // NAB compares the row index with min(floor(p * n), p * 5000), a float.
  const double limit =
      std::min(std::floor(options.probationary_fraction * static_cast<double>(rows)),
               static_cast<double>(options.max_probationary_rows));
  return std::clamp<int64_t>(static_cast<int64_t>(std::ceil(limit)), 0, rows);
}

absl::StatusOr<Prepared> Prepare(const std::string& name, const std::vector<WallTime>& times,
                                 const std::vector<double>& scores,
                                 const std::vector<LabelWindow>& windows,
                                 const ScoringOptions& options) {
  if (scores.size() != times.size()) {
    return absl::InvalidArgumentError(
        Cat(name, ": ", scores.size(), " scores for ", times.size(), " rows"));
  }
  for (size_t i = 1; i < times.size(); ++i) {
    if (times[i] < times[i - 1]) {
      return absl::InvalidArgumentError(Cat(name, ": row ", i + 1, " (", FormatTimestamp(times[i]),
                                            ") is earlier than row ", i, " (",
                                            FormatTimestamp(times[i - 1]), ")"));
    }
  }
  for (size_t w = 0; w < windows.size(); ++w) {
    if (windows[w].start > windows[w].end) {
      return absl::InvalidArgumentError(Cat(name, ": window ", w + 1, " starts after it ends"));
    }
    if (w > 0 && windows[w].start <= windows[w - 1].end) {
      return absl::InvalidArgumentError(
          Cat(name, ": window ", w + 1, " overlaps or precedes window ", w));
    }
  }
  Prepared p;
  p.name = &name;
  p.times = &times;
  p.scores = &scores;
  const int64_t n = static_cast<int64_t>(times.size());
  p.probation = ProbationaryRows(n, options);
  p.windows.resize(windows.size());
  for (size_t w = 0; w < windows.size(); ++w) {
    WindowOutcome& o = p.windows[w];
    o.window = windows[w];
    const int64_t first =
        std::lower_bound(times.begin(), times.end(), windows[w].start) - times.begin();
    const int64_t last =
        (std::upper_bound(times.begin(), times.end(), windows[w].end) - times.begin()) - 1;
    if (first <= last) {
      o.first_row = first;
      o.last_row = last;
      o.scored = last >= p.probation;
    }
  }
  p.row_window.assign(static_cast<size_t>(n), -1);
  p.row_sigmoid.assign(static_cast<size_t>(n), -1.0);
  int64_t prev_last = -1;
  int64_t prev_width = 0;
  size_t next = 0;  // the first window that does not end before the current row
  for (int64_t i = 0; i < n; ++i) {
    while (next < p.windows.size() &&
           (p.windows[next].first_row < 0 || p.windows[next].last_row < i)) {
      if (p.windows[next].first_row >= 0) {
        prev_last = p.windows[next].last_row;
        prev_width = p.windows[next].last_row - p.windows[next].first_row + 1;
      }
      ++next;
    }
    const size_t row = static_cast<size_t>(i);
    if (next < p.windows.size() && p.windows[next].first_row <= i) {
      const WindowOutcome& w = p.windows[next];
      const double width = static_cast<double>(w.last_row - w.first_row + 1);
      p.row_window[row] = static_cast<int32_t>(next);
      p.row_sigmoid[row] = ScaledSigmoid(-static_cast<double>(w.last_row - i + 1) / width);
    } else if (prev_last >= 0 && prev_width > 1) {
      p.row_sigmoid[row] =
          ScaledSigmoid(static_cast<double>(i - prev_last) / static_cast<double>(prev_width - 1));
    }
  }
  return p;
}

FileOutcome ScoreFile(const Prepared& p, const CostProfile& profile, double threshold) {
  FileOutcome f;
  f.name = *p.name;
  const std::vector<WallTime>& times = *p.times;
  const std::vector<double>& scores = *p.scores;
  const int64_t n = static_cast<int64_t>(times.size());
  f.rows = n;
  f.probationary_rows = p.probation;
  f.windows = p.windows;
  for (WindowOutcome& w : f.windows) {
    if (w.scored) w.score = -profile.fn_weight;
  }
  for (int64_t i = p.probation; i < n; ++i) {
    const size_t row = static_cast<size_t>(i);
    const bool detected = scores[row] >= threshold;  // false for NaN
    const int32_t wi = p.row_window[row];
    if (wi >= 0) {
      WindowOutcome& w = f.windows[static_cast<size_t>(wi)];
      if (!detected) {
        ++f.fn_rows;
        continue;
      }
      ++f.tp_rows;
      const double value = p.row_sigmoid[row] * profile.tp_weight / kMaxTp;
      if (!w.detected) {
        w.detected = true;
        w.detection_row = i;
        w.delay = times[row] - w.window.start;
      }
      w.score = std::max(w.score, value);
    } else if (detected) {
      ++f.false_positives;
      f.fp_score += p.row_sigmoid[row] * profile.fp_weight;
    } else {
      ++f.tn_rows;
    }
  }
  int64_t delay_sum_ns = 0;
  f.raw_score = 0;
  for (const WindowOutcome& w : f.windows) {
    if (!w.scored) continue;
    ++f.windows_scored;
    f.raw_score += w.score;
    if (w.detected) {
      ++f.detected;
      delay_sum_ns += w.delay.count();
    }
  }
  f.raw_score += f.fp_score;
  f.missed = f.windows_scored - f.detected;
  if (f.detected > 0) f.mean_delay = Duration(delay_sum_ns / f.detected);
  if (n > p.probation) {
    f.scored_days = std::chrono::duration<double, std::ratio<86400>>(
                        times.back() - times[static_cast<size_t>(p.probation)])
                        .count();
  }
  if (f.scored_days > 0) f.fp_per_day = static_cast<double>(f.false_positives) / f.scored_days;
  return f;
}

absl::StatusOr<std::vector<Prepared>> PrepareAll(std::span<const ScoredSeries> corpus,
                                                 const ScoringOptions& options) {
  std::vector<Prepared> prepared;
  prepared.reserve(corpus.size());
  for (const ScoredSeries& s : corpus) {
    absl::StatusOr<Prepared> p = Prepare(s.name, s.times, s.scores, s.windows, options);
    if (!p.ok()) return p.status();
    prepared.push_back(*std::move(p));
  }
  return prepared;
}

CorpusScore ScorePrepared(const std::vector<Prepared>& prepared, const CostProfile& profile,
                          double threshold) {
  CorpusScore c;
  c.profile = profile;
  c.threshold = threshold;
  int64_t delay_sum_ns = 0;
  for (const Prepared& p : prepared) {
    FileOutcome f = ScoreFile(p, profile, threshold);
    c.raw_score += f.raw_score;
    c.windows_scored += f.windows_scored;
    c.detected += f.detected;
    c.false_positives += f.false_positives;
    c.scored_days += f.scored_days;
    for (const WindowOutcome& w : f.windows) {
      if (w.detected) delay_sum_ns += w.delay.count();
    }
    c.files.push_back(std::move(f));
  }
  c.missed = c.windows_scored - c.detected;
  if (c.detected > 0) c.mean_delay = Duration(delay_sum_ns / c.detected);
  if (c.scored_days > 0) c.fp_per_day = static_cast<double>(c.false_positives) / c.scored_days;
  c.null_score = -profile.fn_weight * c.windows_scored;
  c.perfect_score = profile.tp_weight * c.windows_scored;
  c.normalized_score = c.windows_scored > 0
                           ? 100.0 * (c.raw_score - c.null_score) / (c.perfect_score - c.null_score)
                           : std::numeric_limits<double>::quiet_NaN();
  return c;
}

std::vector<ThresholdScore> Sweep(const std::vector<Prepared>& prepared,
                                  const CostProfile& profile) {
  // Every scored row with a score: what it adds once the threshold reaches its score.
  struct Entry {
    double score;
    int32_t window;  // corpus-wide index of a scored window, or -1 outside every window
    double value;    // weighted TP value inside a window, FP cost outside
  };
  std::vector<Entry> entries;
  std::vector<int32_t> window_base;  // corpus-wide index of each file's first window
  int32_t windows = 0;
  for (const Prepared& p : prepared) {
    window_base.push_back(windows);
    windows += static_cast<int32_t>(p.windows.size());
  }
  for (size_t f = 0; f < prepared.size(); ++f) {
    const Prepared& p = prepared[f];
    const int64_t n = static_cast<int64_t>(p.times->size());
    for (int64_t i = p.probation; i < n; ++i) {
      const size_t row = static_cast<size_t>(i);
      const double score = (*p.scores)[row];
      if (std::isnan(score)) continue;
      const int32_t w = p.row_window[row];
      if (w >= 0) {
        entries.push_back(
            {score, window_base[f] + w, p.row_sigmoid[row] * profile.tp_weight / kMaxTp});
      } else {
        entries.push_back({score, -1, p.row_sigmoid[row] * profile.fp_weight});
      }
    }
  }
  // Highest score first; equal scores keep file and row order (NAB's stable sort).
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.score > b.score; });

  // Window parts start at -fn_weight. They are summed in the order NAB's dictionary holds them
  // (first appearance in the sorted rows), so the totals, and ties between thresholds, come out
  // as NAB's do.
  std::vector<double> part(static_cast<size_t>(windows), 0.0);
  std::vector<char> scored(static_cast<size_t>(windows), 0);
  for (size_t f = 0; f < prepared.size(); ++f) {
    for (size_t w = 0; w < prepared[f].windows.size(); ++w) {
      if (prepared[f].windows[w].scored) {
        const size_t g = static_cast<size_t>(window_base[f]) + w;
        scored[g] = 1;
        part[g] = -profile.fn_weight;
      }
    }
  }
  std::vector<int32_t> order;
  std::vector<char> seen(static_cast<size_t>(windows), 0);
  for (const Entry& e : entries) {
    if (e.window >= 0 && !seen[static_cast<size_t>(e.window)]) {
      seen[static_cast<size_t>(e.window)] = 1;
      order.push_back(e.window);
    }
  }
  for (int32_t w = 0; w < windows; ++w) {
    if (scored[static_cast<size_t>(w)] && !seen[static_cast<size_t>(w)]) order.push_back(w);
  }
  // Exact re-summation costs O(windows) per threshold; past a few hundred windows keep a
  // running total instead.
  const bool resum = order.size() <= 256;
  double fp = 0;
  double running = 0;
  for (int32_t w : order) running += part[static_cast<size_t>(w)];
  auto total = [&] {
    if (!resum) return fp + running;
    double t = 0;
    t += fp;
    for (int32_t w : order) t += part[static_cast<size_t>(w)];
    return t;
  };

  std::vector<ThresholdScore> out;
  const double top = entries.empty() ? 0.0 : entries.front().score;
  const double never =
      top < 1.1 ? 1.1 : std::nextafter(top, std::numeric_limits<double>::infinity());
  out.push_back({never, total()});
  size_t i = 0;
  while (i < entries.size()) {
    const double threshold = entries[i].score;
    for (; i < entries.size() && entries[i].score == threshold; ++i) {
      const Entry& e = entries[i];
      if (e.window < 0) {
        fp += e.value;
      } else {
        double& p = part[static_cast<size_t>(e.window)];
        if (e.value > p) {
          running += e.value - p;
          p = e.value;
        }
      }
    }
    out.push_back({threshold, total()});
  }
  return out;
}

}  // namespace

absl::StatusOr<CorpusScore> ScoreAtThreshold(std::span<const ScoredSeries> corpus,
                                             const CostProfile& profile, double threshold,
                                             const ScoringOptions& options) {
  absl::StatusOr<std::vector<Prepared>> prepared = PrepareAll(corpus, options);
  if (!prepared.ok()) return prepared.status();
  return ScorePrepared(*prepared, profile, threshold);
}

absl::StatusOr<std::vector<ThresholdScore>> SweepThresholds(std::span<const ScoredSeries> corpus,
                                                            const CostProfile& profile,
                                                            const ScoringOptions& options) {
  absl::StatusOr<std::vector<Prepared>> prepared = PrepareAll(corpus, options);
  if (!prepared.ok()) return prepared.status();
  return Sweep(*prepared, profile);
}

absl::StatusOr<CorpusScore> ScoreOptimized(std::span<const ScoredSeries> corpus,
                                           const CostProfile& profile,
                                           const ScoringOptions& options) {
  absl::StatusOr<std::vector<Prepared>> prepared = PrepareAll(corpus, options);
  if (!prepared.ok()) return prepared.status();
  const std::vector<ThresholdScore> sweep = Sweep(*prepared, profile);
  // The first maximum: the highest threshold among equal scores.
  const ThresholdScore* best = &sweep.front();
  for (const ThresholdScore& t : sweep) {
    if (t.raw_score > best->raw_score) best = &t;
  }
  return ScorePrepared(*prepared, profile, best->threshold);
}

std::vector<bool> DetectionsToRows(std::span<const WallTime> times,
                                   std::span<const WallTime> detections) {
  std::vector<bool> rows(times.size(), false);
  for (const WallTime d : detections) {
    const auto it = std::lower_bound(times.begin(), times.end(), d);
    if (it != times.end()) rows[static_cast<size_t>(it - times.begin())] = true;
  }
  return rows;
}

absl::StatusOr<CorpusScore> ScoreDetections(std::span<const DetectionSeries> corpus,
                                            const CostProfile& profile,
                                            const ScoringOptions& options) {
  std::vector<ScoredSeries> scored;
  scored.reserve(corpus.size());
  for (const DetectionSeries& d : corpus) {
    if (d.detected.size() != d.times.size()) {
      return absl::InvalidArgumentError(
          Cat(d.name, ": ", d.detected.size(), " detection flags for ", d.times.size(), " rows"));
    }
    ScoredSeries s{d.name, d.times, {}, d.windows};
    s.scores.reserve(d.detected.size());
    for (const bool b : d.detected) s.scores.push_back(b ? 1.0 : 0.0);
    scored.push_back(std::move(s));
  }
  return ScoreAtThreshold(scored, profile, 1.0, options);
}

}  // namespace tailguard
