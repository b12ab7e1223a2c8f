// `tailguard import`: loads past per-minute series from a CSV file into the store's history, so
// that a new installation compares with last week on its first day. All or nothing: every row
// is checked before anything is written, and the write is one transaction. docs/import.md.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "alert/selector.h"
#include "commands.h"
#include "common/progress.h"
#include "common/strings.h"
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
  k.key = alert_internal::SeriesKey(k.metric, k.labels);
  return k;
}

double Number(const std::string& text, const std::string& where, const std::string& column) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v < 0) {
    throw InputError{
        Cat(where, ": ", column, ": expected a non-negative number, got \"", text, "\"")};
  }
  return v;
}

struct Parsed {
  std::vector<store::SeriesMinutes> batch;
  std::map<std::string, size_t> index;  // key -> batch position
  int64_t points = 0;
  WallTime first = WallTime::max(), last = WallTime::min();
};

Parsed ParseRows(const CsvTable& t, const Layout& layout, const ImportFlags& f) {
  Parsed out;
  // (key, minute) -> line, for the duplicate check.
  std::map<std::pair<std::string, int64_t>, int> seen;
  std::optional<Key> fixed;
  if (!f.series.empty()) {
    absl::StatusOr<Key> k = ParseKey(f.series);
    if (!k.ok()) throw InputError{Cat("--series: ", k.status().message())};
    fixed = *std::move(k);
  }
  std::map<std::string, Key> keys;  // as written -> parsed
  std::unique_ptr<Progress> progress;
  if (t.rows.size() >= 100000 && !f.json) {
    progress = std::make_unique<Progress>("rows", static_cast<int64_t>(t.rows.size()));
  }
  for (size_t r = 0; r < t.rows.size(); ++r) {
    if (progress && r % 10000 == 9999) progress->Advance(10000);
    const std::vector<std::string>& row = t.rows[r];
    const std::string where = Cat(f.file, ":", t.line[r]);
    const Key* key = fixed ? &*fixed : nullptr;
    if (!key) {
      const std::string& text = row[*layout.series];
      auto it = keys.find(text);
      if (it == keys.end()) {
        absl::StatusOr<Key> k = ParseKey(text);
        if (!k.ok()) throw InputError{Cat(where, ": series: ", k.status().message())};
        it = keys.emplace(text, *std::move(k)).first;
      }
      key = &it->second;
    }
    absl::StatusOr<WallTime> time = ParseTimestamp(row[layout.time]);
    if (!time.ok()) {
      throw InputError{Cat(where, ": ", t.header[layout.time], ": ", time.status().message())};
    }
    // On the minute: the minute the time falls in.
    const auto minute = std::chrono::floor<std::chrono::minutes>(time->time_since_epoch());
    const WallTime at{std::chrono::duration_cast<Duration>(minute)};
    if (auto [it, added] = seen.emplace(std::make_pair(key->key, minute.count()), t.line[r]);
        !added) {
      throw InputError{Cat(where, ": ", t.header[layout.time], ": a second row for ", key->key,
                           " in the minute of ", FormatTimestamp(at), " (the first is line ",
                           it->second, "); give one row per series and minute")};
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
            throw InputError{Cat(where, ": ", t.header[c.index],
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
    auto [pos, added] = out.index.emplace(key->key, out.batch.size());
    if (added) out.batch.push_back({key->key, key->metric, key->labels, {}});
    out.batch[pos->second].minutes.push_back(std::move(m));
    ++out.points;
    out.first = std::min(out.first, at);
    out.last = std::max(out.last, at);
  }
  for (store::SeriesMinutes& s : out.batch) {
    std::sort(s.minutes.begin(), s.minutes.end(),
              [](const store::MinuteRow& a, const store::MinuteRow& b) { return a.time < b.time; });
  }
  return out;
}

std::string StorePath(const ImportFlags& f) {
  if (!f.store.empty() && !f.config.empty()) {
    throw InputError{"give --store or --config, not both"};
  }
  if (!f.store.empty()) return f.store;
  if (!f.config.empty()) {
    absl::StatusOr<server::GatewayConfig> config = server::LoadGatewayConfig(f.config);
    if (!config.ok()) throw InputError{std::string(config.status().message())};
    if (config->store.path.empty()) {
      throw InputError{Cat(f.config,
                           ": store.path is empty: this gateway keeps no store; give "
                           "--store PATH")};
    }
    return config->store.path;
  }
  return "tailguard.db";
}

int Run(const ImportFlags& f) {
  std::string path;
  Parsed parsed;
  try {
    const std::optional<double> scale = UnitSeconds(f.unit);
    if (!scale) throw InputError{Cat("--unit: expected s, ms or us, got \"", f.unit, "\"")};
    path = StorePath(f);
    absl::StatusOr<CsvTable> table = ReadCsv(f.file);
    if (!table.ok()) throw InputError{std::string(table.status().message())};
    if (table->rows.empty()) throw InputError{Cat(f.file, ": no data rows after the header")};
    const Layout layout = ReadHeader(*table, f, *scale);
    parsed = ParseRows(*table, layout, f);
  } catch (const InputError& e) {
    std::fprintf(stderr, "tailguard import: %s\n", e.message.c_str());
    return 2;
  }

  store::ImportSummary summary{static_cast<int64_t>(parsed.batch.size()), parsed.points, 0};
  if (!f.dry_run) {
    absl::StatusOr<std::unique_ptr<store::HistoryStore>> h = store::HistoryStore::Open(path);
    if (!h.ok()) {
      std::fprintf(stderr, "tailguard import: %s\n", std::string(h.status().message()).c_str());
      return 1;
    }
    absl::StatusOr<store::ImportSummary> s = (*h)->ImportPoints(parsed.batch);
    if (!s.ok()) {
      std::fprintf(stderr, "tailguard import: %s: nothing was imported\n",
                   std::string(s.status().message()).c_str());
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
                        {"from", FormatTimestamp(s.minutes.front().time)},
                        {"to", FormatTimestamp(s.minutes.back().time)},
                        {"url", Cat("/?view=series&id=", id)}});
    }
    json out = {{"store", path},
                {"dry_run", f.dry_run},
                {"series", series},
                {"points", summary.points},
                {"replaced", summary.replaced},
                {"from", FormatTimestamp(parsed.first)},
                {"to", FormatTimestamp(parsed.last)}};
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  const std::string replaced =
      summary.replaced > 0 ? Cat(" (", summary.replaced, " minutes replaced)") : "";
  std::printf("%s %lld series, %lld points from %s to %s into %s%s\n",
              f.dry_run ? "would import" : "imported", static_cast<long long>(summary.series),
              static_cast<long long>(summary.points), FormatTimestamp(parsed.first).c_str(),
              FormatTimestamp(parsed.last).c_str(), path.c_str(), replaced.c_str());
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
  cmd->add_flag("--json", f->json, "print the summary as JSON");
  cmd->callback([f, &action] { action = [f] { return Run(*f); }; });
}

}  // namespace tailguard::cli
