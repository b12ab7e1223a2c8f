// `tailguard import`: loads past per-minute series from a CSV file into the store's history, so
// that a new installation compares with last week on its first day. Every row is checked before
// anything is written (a bad file writes nothing); the write then goes in short transactions so
// that a gateway using the same file is never held up for long. docs/import.md.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "alert/selector.h"
#include "bad_rows.h"
#include "commands.h"
#include "common/progress.h"
#include "common/strings.h"
#include "metrics/series_key.h"
#include "nlohmann/json.hpp"
#include "server/gateway_config.h"
#include "store/history_store.h"
#include "tailguard/alert.h"
#include "tailguard/series_io.h"

namespace tailguard::cli {
namespace {

using json = nlohmann::json;

struct ImportFlags {
  std::string file;
  std::string store;
  std::string config;
  std::string series;
  std::string unit = "s";
  bool dry_run = false;
  bool json = false;
  bool shift_to_now = false;
  bool create = false;
};

// A usage or input error: exit 2, nothing written.
struct InputError {
  std::string message;
};

// The statistics a column can hold, in MinuteRow's order.
enum class Stat { kCount, kP50, kP90, kP99, kP999, kMean, kMax };
constexpr std::pair<std::string_view, Stat> kStats[] = {
    {"count", Stat::kCount}, {"p50", Stat::kP50},   {"p90", Stat::kP90}, {"p99", Stat::kP99},
    {"p999", Stat::kP999},   {"mean", Stat::kMean}, {"max", Stat::kMax}};

std::optional<double> UnitSeconds(std::string_view unit) {
  if (unit == "s") return 1.0;
  if (unit == "ms") return 1e-3;
  if (unit == "us") return 1e-6;
  return std::nullopt;
}

struct Column {
  size_t index;
  Stat stat;
  double scale;  // to seconds (1 for count)
};

struct Layout {
  size_t time;
  std::optional<size_t> series;
  std::vector<Column> stats;
};

Layout ReadHeader(const CsvTable& t, const ImportFlags& f, double default_scale) {
  const std::string where = Cat(f.file, ":1");
  std::optional<size_t> time, series;
  std::vector<Column> stats;
  std::map<Stat, std::string> seen;
  for (size_t i = 0; i < t.header.size(); ++i) {
    const std::string& name = t.header[i];
    if (name == "time" || name == "timestamp") {
      if (time) throw InputError{Cat(where, ": two time columns (time or timestamp)")};
      time = i;
      continue;
    }
    if (name == "series") {
      if (series) throw InputError{Cat(where, ": two series columns")};
      series = i;
      continue;
    }
    // "value" is NAB's layout: a P99 series.
    std::string base = name == "value" ? "p99" : name;
    double scale = default_scale;
    if (const size_t us = base.rfind('_'); us != std::string::npos) {
      const std::optional<double> s = UnitSeconds(std::string_view(base).substr(us + 1));
      if (s) {
        scale = *s;
        base.resize(us);
      }
    }
    const auto* known = std::find_if(std::begin(kStats), std::end(kStats),
                                     [&](const auto& k) { return k.first == base; });
    if (known == std::end(kStats) || (known->second == Stat::kCount && base != name)) {
      throw InputError{Cat(where, ": column \"", name,
                           "\" is not one of time, timestamp, series, value, count, p50, p90, "
                           "p99, p999, mean, max (latencies may end in _s, _ms or _us)")};
    }
    if (auto [it, added] = seen.emplace(known->second, name); !added) {
      throw InputError{
          Cat(where, ": columns \"", it->second, "\" and \"", name, "\" hold the same statistic")};
    }
    stats.push_back({i, known->second, known->second == Stat::kCount ? 1.0 : scale});
  }
  if (!time) throw InputError{Cat(where, ": no time column: name one \"time\" or \"timestamp\"")};
  if (stats.empty()) {
    throw InputError{Cat(where,
                         ": no statistic column: give count, p50, p90, p99, p999, mean or "
                         "max (or NAB's value, read as p99)")};
  }
  if (series && !f.series.empty()) {
    throw InputError{Cat(where, ": the file has a series column; --series is for files without")};
  }
  if (!series && f.series.empty()) {
    throw InputError{Cat(where, ": no series column: add one or name the series with --series ",
                         "'tailguard_request_duration_seconds{model=\"risk\",stage=\"total\"}'")};
  }
  return {*time, series, std::move(stats)};
}

bool IsMetricName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok = std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
                    (i > 0 && std::isdigit(static_cast<unsigned char>(c)));
    if (!ok) return false;
  }
  return true;
}

bool IsLabelName(std::string_view s) {
  return IsMetricName(s) && s.find(':') == std::string_view::npos && !s.starts_with("__");
}

struct Key {
  std::string key;  // canonical
  std::string metric;
  Labels labels;
};

// A canonical key from `text`: metric{a="x",...} with equality matchers only.
absl::StatusOr<Key> ParseKey(std::string_view text) {
  absl::StatusOr<std::vector<LabelMatcher>> m = ParseSelector(text);
  if (!m.ok()) return m.status();
  Key k;
  for (const LabelMatcher& x : *m) {
    if (x.op != LabelMatcher::Op::kEqual) {
      return absl::InvalidArgumentError(
          Cat("label ", x.name, ": a series key has only = matchers"));
    }
    if (x.name == "__name__") {
      k.metric = x.value;
      continue;
    }
    if (!IsLabelName(x.name)) {
      return absl::InvalidArgumentError(Cat("label name \"", x.name, "\" is not valid"));
    }
    for (const auto& [name, value] : k.labels) {
      if (name == x.name) return absl::InvalidArgumentError(Cat("label ", name, " appears twice"));
    }
    k.labels.emplace_back(x.name, x.value);
  }
  if (!IsMetricName(k.metric)) {
    return absl::InvalidArgumentError(
        "needs a metric name, like tailguard_request_duration_seconds{model=\"risk\"}");
  }
  std::sort(k.labels.begin(), k.labels.end());
  k.key = metrics::SeriesKey(k.metric, k.labels);
  return k;
}

// `where` builds "file:line" for a message.
template <typename Where>
double Number(const std::string& text, const Where& where, const std::string& column) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v < 0) {
    throw InputError{
        Cat(where(), ": ", column, ": expected a non-negative number, got \"", text, "\"")};
  }
  return v;
}

// Where the rows go and which times the store keeps.
struct Target {
  std::string path;
  Duration retention{};
  std::string config;  // the configuration it came from; "" for --store or the default
};

// "35d", "36h", "90m": a retention as the configuration writes it.
std::string DurationText(Duration d) {
  using std::chrono::duration_cast;
  const auto s = duration_cast<std::chrono::seconds>(d).count();
  if (s % 86400 == 0) return Cat(s / 86400, "d");
  if (s % 3600 == 0) return Cat(s / 3600, "h");
  if (s % 60 == 0) return Cat(s / 60, "m");
  return Cat(s, "s");
}

WallTime FloorMinute(WallTime t) {
  return WallTime(std::chrono::duration_cast<Duration>(
      std::chrono::floor<std::chrono::minutes>(t.time_since_epoch())));
}

// The row times the store keeps at `now`. A row stamped t describes the minute [floor(t),
// floor(t) + 1 min) and is stored at its end (MinuteRow::time): the store prunes ends older than
// now - retention, and a minute that begins after now has not happened yet. So a row is
// accepted when first <= t < end.
struct Accepted {
  WallTime first;  // the first minute whose end is kept: ceil(now - retention - 1 min)
  WallTime end;    // the end of the current minute
  std::string retention;
  std::string hint;  // how to keep older minutes
};

Accepted AcceptedTimes(const Target& target, WallTime now) {
  using std::chrono::minutes;
  Accepted a;
  const WallTime oldest_begin = now - target.retention - minutes(1);
  a.first = FloorMinute(oldest_begin);
  if (a.first < oldest_begin) a.first += minutes(1);
  a.end = FloorMinute(now) + minutes(1);
  a.retention = DurationText(target.retention);
  a.hint = target.config.empty()
               ? "set store.history_retention in the gateway config and pass --config"
               : Cat("raise store.history_retention in ", target.config);
  return a;
}

struct Parsed {
  std::vector<store::SeriesMinutes> batch;
  int64_t points = 0;
  WallTime first = WallTime::max(), last = WallTime::min();  // minute ends
};

// Checks and converts every row, freeing each row of `t` once read so that the table's memory
// is reused for the minutes.
// Percentiles of one minute must be in order (p50 <= p90 <= p99 <= p99.9 <= max, mean <= max):
// a file with them swapped (columns in the wrong order, a unit mixed up) is refused.
template <typename Where>
void CheckOrder(const store::MinuteRow& m, const Where& where) {
  const std::pair<const char*, double> order[] = {
      {"p50", m.p50}, {"p90", m.p90}, {"p99", m.p99}, {"p999", m.p999}, {"max", m.max}};
  const char* prev_name = nullptr;
  double prev = 0;
  for (const auto& [name, v] : order) {
    if (std::isnan(v)) continue;
    if (prev_name != nullptr && v < prev) {
      throw InputError{Cat(where(), ": ", prev_name, " (", prev, ") is above ", name, " (", v,
                           "): a minute's percentiles rise from p50 to max; check the columns' "
                           "order and units")};
    }
    prev_name = name;
    prev = v;
  }
  if (!std::isnan(m.mean) && !std::isnan(m.max) && m.mean > m.max) {
    throw InputError{Cat(where(), ": mean (", m.mean, ") is above max (", m.max, ")")};
  }
}

// --shift-to-now: how far to move every time so that the file's last minute is the one that
// just ended (recorded data of any age, e.g. NAB's from 2014, within the retention).
Duration ShiftToNow(const CsvTable& t, size_t time_col, WallTime now) {
  WallTime last = WallTime::min();
  for (const std::vector<std::string>& row : t.rows) {
    if (absl::StatusOr<WallTime> time = ParseTimestamp(row[time_col]); time.ok()) {
      last = std::max(last, *time);
    }
  }
  if (last == WallTime::min()) return Duration::zero();  // every time is bad: reported as such
  return FloorMinute(now) - std::chrono::minutes(1) - FloorMinute(last);
}

Parsed ParseRows(CsvTable& t, const Layout& layout, const ImportFlags& f, const Accepted& accepted,
                 Duration shift) {
  Parsed out;
  const size_t time_col = layout.time;
  const std::string& time_name = t.header[time_col];
  // Series as written in the file -> batch position, and canonical key -> batch position (two
  // spellings of one series are one series).
  absl::flat_hash_map<std::string, uint32_t> by_text, by_key;
  auto add_series = [&](Key k) {
    auto [it, added] = by_key.try_emplace(k.key, static_cast<uint32_t>(out.batch.size()));
    if (added) {
      out.batch.push_back({std::move(k.key), std::move(k.metric), std::move(k.labels), {}});
    }
    return it->second;
  };
  if (!f.series.empty()) {
    absl::StatusOr<Key> k = ParseKey(f.series);
    if (!k.ok()) throw InputError{Cat("--series: ", k.status().message())};
    add_series(*std::move(k));
  }
  // (series, minute) -> line, for the duplicate check.
  absl::flat_hash_map<uint64_t, int> seen;
  seen.reserve(t.rows.size());
  std::unique_ptr<Progress> progress;
  if (t.rows.size() >= 100000 && !f.json) {
    progress = std::make_unique<Progress>("rows checked", static_cast<int64_t>(t.rows.size()));
  }
  BadRows bad;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    if (progress && r % 10000 == 9999) progress->Advance(10000);
    std::vector<std::string>& row = t.rows[r];
    // Built only for a message.
    auto where = [&] { return Cat(f.file, ":", t.line[r]); };
    try {
      uint32_t series = 0;
      if (layout.series) {
        const std::string& text = row[*layout.series];
        auto it = by_text.find(text);
        if (it == by_text.end()) {
          absl::StatusOr<Key> k = ParseKey(text);
          if (!k.ok()) throw InputError{Cat(where(), ": series: ", k.status().message())};
          it = by_text.emplace(text, add_series(*std::move(k))).first;
        }
        series = it->second;
      }
      const std::string& time_text = row[time_col];
      absl::StatusOr<WallTime> time = ParseTimestamp(time_text);
      if (!time.ok())
        throw InputError{Cat(where(), ": ", time_name, ": ", time.status().message())};
      *time += shift;
      // The minute the time falls in, stored at its end as the gateway stores the minutes it
      // measures: 10:00:37 is the minute [10:00, 10:01), stored at 10:01:00.
      const WallTime begin = FloorMinute(*time);
      const WallTime at = begin + std::chrono::minutes(1);
      if (begin < accepted.first || begin >= accepted.end) {
        const bool old = begin < accepted.first;
        throw InputError{Cat(
            where(), ": ", time_name, ": ", time_text, " is ",
            old ? Cat("older than the store's history_retention of ", accepted.retention)
                : std::string("in the future"),
            "; accepted are times from ", FormatTimestamp(accepted.first), " to before ",
            FormatTimestamp(accepted.end), " UTC",
            old ? Cat(" (", accepted.hint, ")")
                : std::string(" (a time without an offset is UTC: check the file's time zone)"))};
      }
      // Counted from the first accepted minute, so that (series, minute) fits one 64-bit key.
      const int64_t minute = (begin - accepted.first) / std::chrono::minutes(1);
      if (auto [it, added] = seen.try_emplace(
              (static_cast<uint64_t>(series) << 32) | static_cast<uint64_t>(minute), t.line[r]);
          !added) {
        throw InputError{Cat(where(), ": ", time_name, ": a second row for ", out.batch[series].key,
                             " in the minute of ", FormatTimestampUtc(begin),
                             " (the first is line ", it->second,
                             "); give one row per series and minute")};
      }
      store::MinuteRow m;
      m.time = at;
      for (const Column& c : layout.stats) {
        const std::string& text = row[c.index];
        if (text.empty()) continue;  // missing
        const double v = Number(text, where, t.header[c.index]);
        switch (c.stat) {
          case Stat::kCount:
            if (v != std::floor(v) || v > 9e15) {
              throw InputError{Cat(where(), ": ", t.header[c.index],
                                   ": expected a whole number of requests, got \"", text, "\"")};
            }
            m.count = static_cast<uint64_t>(v);
            break;
          case Stat::kP50:
            m.p50 = v * c.scale;
            break;
          case Stat::kP90:
            m.p90 = v * c.scale;
            break;
          case Stat::kP99:
            m.p99 = v * c.scale;
            break;
          case Stat::kP999:
            m.p999 = v * c.scale;
            break;
          case Stat::kMean:
            m.mean = v * c.scale;
            break;
          case Stat::kMax:
            m.max = v * c.scale;
            break;
        }
      }
      CheckOrder(m, where);
      out.batch[series].minutes.push_back(std::move(m));
      ++out.points;
      out.first = std::min(out.first, at);
      out.last = std::max(out.last, at);
    } catch (const InputError& e) {
      bad.Add(e.message);
    }
    std::vector<std::string>().swap(row);
  }
  if (!bad.empty()) throw InputError{bad.Text()};
  for (store::SeriesMinutes& s : out.batch) {
    std::sort(s.minutes.begin(), s.minutes.end(),
              [](const store::MinuteRow& a, const store::MinuteRow& b) { return a.time < b.time; });
    s.minutes.shrink_to_fit();
  }
  return out;
}

Target StoreTarget(const ImportFlags& f) {
  if (!f.store.empty() && !f.config.empty()) {
    throw InputError{"give --store or --config, not both"};
  }
  const server::GatewayConfig defaults;
  if (!f.config.empty()) {
    absl::StatusOr<server::GatewayConfig> config = server::LoadGatewayConfig(f.config);
    if (!config.ok()) throw InputError{std::string(config.status().message())};
    if (config->store.path.empty()) {
      throw InputError{Cat(f.config,
                           ": store.path is empty: this gateway keeps no store; give "
                           "--store PATH")};
    }
    return {config->store.path, config->store.history_retention, f.config};
  }
  const std::string path = f.store.empty() ? std::string("tailguard.db") : f.store;
  // A mistyped --store must not become a new, empty store that no gateway reads: a new one is
  // made only when asked for (or through --config, whose store.path is the gateway's own).
  std::error_code ec;
  if (!f.create && !f.dry_run && !std::filesystem::exists(path, ec)) {
    throw InputError{Cat("no store at ", path,
                         ": give the path of an existing store (the gateway's store.path), "
                         "--config gateway.yaml, or --create to start a new one there")};
  }
  return {path, defaults.store.history_retention, ""};
}

// A minute row's time is its end; people read the span the points cover, from the start of the
// first minute to the end of the last.
std::string SpanText(WallTime first_end, WallTime last_end) {
  return Cat("from ", FormatTimestampUtc(first_end - std::chrono::minutes(1)), " to ",
             FormatTimestampUtc(last_end));
}

int Run(const ImportFlags& f, const Clock& clock) {
  Target target;
  Parsed parsed;
  try {
    const std::optional<double> scale = UnitSeconds(f.unit);
    if (!scale) throw InputError{Cat("--unit: expected s, ms or us, got \"", f.unit, "\"")};
    target = StoreTarget(f);
    absl::StatusOr<CsvTable> table = ReadCsv(f.file);
    if (!table.ok()) throw InputError{std::string(table.status().message())};
    if (table->rows.empty()) throw InputError{Cat(f.file, ": no data rows after the header")};
    const Layout layout = ReadHeader(*table, f, *scale);
    const Duration shift =
        f.shift_to_now ? ShiftToNow(*table, layout.time, clock.WallNow()) : Duration::zero();
    parsed = ParseRows(*table, layout, f, AcceptedTimes(target, clock.WallNow()), shift);
  } catch (const InputError& e) {
    std::fprintf(stderr, "tailguard import: %s\n", e.message.c_str());
    return 2;
  }
  const std::string& path = target.path;

  store::ImportSummary summary{static_cast<int64_t>(parsed.batch.size()), parsed.points, 0};
  if (!f.dry_run) {
    absl::StatusOr<std::unique_ptr<store::HistoryStore>> h = store::HistoryStore::Open(path);
    if (!h.ok()) {
      std::fprintf(stderr, "tailguard import: %s\n", std::string(h.status().message()).c_str());
      return 1;
    }
    std::unique_ptr<Progress> progress;
    if (parsed.points >= 100000 && !f.json) {
      progress = std::make_unique<Progress>("points written", parsed.points);
    }
    int64_t written = 0;
    store::ImportOptions options;
    options.progress = [&](int64_t points) {
      if (progress) progress->Advance(points - written);
      written = points;
    };
    absl::StatusOr<store::ImportSummary> s = (*h)->ImportPoints(parsed.batch, options);
    progress.reset();
    if (!s.ok()) {
      const std::string what =
          written == 0 ? std::string("nothing was imported")
                       : Cat(written, " of ", parsed.points,
                             " points were written before the failure; run the import again "
                             "to finish (minutes already written are replaced)");
      std::fprintf(stderr, "tailguard import: %s: %s\n", std::string(s.status().message()).c_str(),
                   what.c_str());
      return 1;
    }
    summary = *s;
  }

  if (f.json) {
    json series = json::array();
    for (const store::SeriesMinutes& s : parsed.batch) {
      const std::string id = store::HistorySeriesId(s.key);
      series.push_back({{"id", id},
                        {"key", s.key},
                        {"points", s.minutes.size()},
                        {"from", FormatRfc3339(s.minutes.front().time - std::chrono::minutes(1))},
                        {"to", FormatRfc3339(s.minutes.back().time)},
                        {"url", Cat("/?view=series&id=", id)}});
    }
    json out = {{"store", path},
                {"dry_run", f.dry_run},
                {"series", series},
                {"points", summary.points},
                {"replaced", summary.replaced},
                {"from", FormatRfc3339(parsed.first - std::chrono::minutes(1))},
                {"to", FormatRfc3339(parsed.last)}};
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  const std::string replaced =
      summary.replaced > 0 ? Cat(" (", summary.replaced, " minutes replaced)") : "";
  std::printf("%s %lld series, %lld points %s into %s%s\n", f.dry_run ? "would import" : "imported",
              static_cast<long long>(summary.series), static_cast<long long>(summary.points),
              SpanText(parsed.first, parsed.last).c_str(), path.c_str(), replaced.c_str());
  for (const store::SeriesMinutes& s : parsed.batch) {
    const std::string id = store::HistorySeriesId(s.key);
    std::printf("  %s  %s  %zu point%s\n", id.c_str(), s.key.c_str(), s.minutes.size(),
                s.minutes.size() == 1 ? "" : "s");
  }
  if (!f.dry_run) {
    std::printf(
        "see it on the dashboard of `tailguard serve` with this store: "
        "/?view=series&id=<id>, e.g. /?view=series&id=%s\n",
        store::HistorySeriesId(parsed.batch.front().key).c_str());
  }
  return 0;
}

}  // namespace

void AddImport(CLI::App& app, Action& action) {
  auto f = std::make_shared<ImportFlags>();
  CLI::App* cmd = app.add_subcommand(
      "import", "Load past per-minute series from a CSV file into the store's history");
  cmd->add_option("file", f->file,
                  "CSV: a time (or timestamp) column, a series column (or --series), and any of "
                  "count, p50, p90, p99, p999, mean, max; or NAB's timestamp,value (value is P99)")
      ->required();
  cmd->add_option("--store", f->store, "the store file (default: ./tailguard.db)");
  cmd->add_option("--config", f->config, "the gateway configuration whose store.path to use");
  cmd->add_option("--series", f->series,
                  "the series of a file without a series column, e.g. "
                  "'tailguard_request_duration_seconds{model=\"risk\",stage=\"total\"}'");
  cmd->add_option("--unit", f->unit, "unit of latency columns without a suffix: s, ms, us")
      ->capture_default_str();
  cmd->add_flag("--dry-run", f->dry_run, "check the file and print the summary; write nothing");
  cmd->add_flag("--shift-to-now", f->shift_to_now,
                "move every time by the same amount so that the file's last minute is the one "
                "that just ended (recorded data of any age, e.g. NAB's, within the retention)");
  cmd->add_flag("--create", f->create,
                "with --store: create the store if it does not exist (a gateway with --config "
                "creates its own)");
  cmd->add_flag("--json", f->json, "print the summary as JSON");
  cmd->callback([f, &action] { action = [f] { return Run(*f, Clock::Real()); }; });
}

}  // namespace tailguard::cli
