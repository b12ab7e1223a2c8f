// The series history over SQLite: series and series_minutes (schema.cc, version 3).
#include "store/history_store.h"

#include <cinttypes>
#include <cstdio>
#include <utility>

#include "common/strings.h"
#include "store/label_text.h"
#include "store/schema.h"

namespace tailguard::store {
namespace {

using Lock = std::lock_guard<std::mutex>;

int64_t Ns(WallTime t) { return t.time_since_epoch().count(); }
WallTime FromNs(int64_t ns) { return WallTime(Duration(ns)); }

constexpr std::string_view kPointColumns =
    "m.time, m.count, m.p50, m.p90, m.p99, m.p999, m.mean, m.max, m.anomaly_score, "
    "m.baseline_p99, m.forecast, m.forecast_lower, m.forecast_upper";

MinuteRow ReadPoint(const Statement& st) {
  MinuteRow r;
  r.time = FromNs(st.ColumnInt64(0));
  r.count = static_cast<uint64_t>(st.ColumnInt64(1));
  r.p50 = st.ColumnDouble(2);
  r.p90 = st.ColumnDouble(3);
  r.p99 = st.ColumnDouble(4);
  r.p999 = st.ColumnDouble(5);
  r.mean = st.ColumnDouble(6);
  r.max = st.ColumnDouble(7);
  r.anomaly_score = st.ColumnDouble(8);
  r.baseline_p99 = st.ColumnDouble(9);
  r.forecast = st.ColumnDouble(10);
  r.forecast_lower = st.ColumnDouble(11);
  r.forecast_upper = st.ColumnDouble(12);
  return r;
}

constexpr std::string_view kSeriesColumns = "id, key, metric, labels, first_at, last_at";

absl::StatusOr<StoredSeriesInfo> ReadSeries(const Statement& st) {
  StoredSeriesInfo s;
  s.id = st.ColumnText(0);
  s.key = st.ColumnText(1);
  s.metric = st.ColumnText(2);
  absl::StatusOr<Labels> labels = DecodeLabels(st.ColumnText(3));
  if (!labels.ok()) return labels.status();
  s.labels = *std::move(labels);
  s.first = FromNs(st.ColumnInt64(4));
  s.last = FromNs(st.ColumnInt64(5));
  return s;
}

absl::Status Validate(std::span<const SeriesMinutes> batch) {
  for (const SeriesMinutes& s : batch) {
    if (s.key.empty() || s.metric.empty()) {
      return absl::InvalidArgumentError("history: a series needs a key and a metric");
    }
    for (const MinuteRow& m : s.minutes) {
      if (m.heatmap.empty()) continue;
      if (absl::StatusOr<HeatmapRow> row = DecodeHeatmapRow(m.heatmap); !row.ok()) {
        return absl::InvalidArgumentError(Cat("history: ", s.key, ": ", row.status().message()));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string HistorySeriesId(std::string_view key) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : key) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, h);
  return buf;
}

absl::StatusOr<std::unique_ptr<HistoryStore>> HistoryStore::Open(const std::string& path) {
  if (path == ":memory:") {
    return absl::InvalidArgumentError(
        "history store: needs a file (\":memory:\" would give each connection its own database)");
  }
  absl::StatusOr<Database> writer = Database::Open(path);
  if (!writer.ok()) return writer.status();
  if (absl::Status s = Migrate(*writer); !s.ok()) return s;
  absl::StatusOr<Database> reader = Database::Open(path);
  if (!reader.ok()) return reader.status();
  return std::unique_ptr<HistoryStore>(
      new HistoryStore(path, *std::move(writer), *std::move(reader)));
}

HistoryStore::HistoryStore(std::string path, Database writer, Database reader)
    : path_(std::move(path)), writer_(std::move(writer)), reader_(std::move(reader)) {}

HistoryStore::~HistoryStore() = default;

absl::Status HistoryStore::WriteMinutes(std::span<const SeriesMinutes> batch) {
  return Write(batch).status();
}

absl::StatusOr<ImportSummary> HistoryStore::ImportPoints(std::span<const SeriesMinutes> batch) {
  return Write(batch);
}

absl::StatusOr<ImportSummary> HistoryStore::Write(std::span<const SeriesMinutes> batch) {
  if (absl::Status s = Validate(batch); !s.ok()) return s;
  Lock lock(write_mu_);
  absl::StatusOr<Transaction> tx = Transaction::Begin(writer_);
  if (!tx.ok()) return tx.status();
  absl::StatusOr<Statement> upsert = writer_.Prepare(
      "INSERT INTO series (id, key, metric, labels, first_at, last_at) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
      "ON CONFLICT (id) DO UPDATE SET first_at = min(first_at, excluded.first_at), "
      "last_at = max(last_at, excluded.last_at) "
      "RETURNING seq");
  absl::StatusOr<Statement> exists =
      writer_.Prepare("SELECT 1 FROM series_minutes WHERE series_seq = ?1 AND time = ?2");
  absl::StatusOr<Statement> insert = writer_.Prepare(
      "INSERT OR REPLACE INTO series_minutes (series_seq, time, count, p50, p90, p99, p999, "
      "mean, max, anomaly_score, baseline_p99, forecast, forecast_lower, forecast_upper, "
      "heatmap) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)");
  for (const auto* st : {&upsert, &exists, &insert}) {
    if (!st->ok()) return st->status();
  }
  ImportSummary summary;
  for (const SeriesMinutes& s : batch) {
    if (s.minutes.empty()) continue;
    WallTime first = s.minutes.front().time, last = first;
    for (const MinuteRow& m : s.minutes) {
      first = std::min(first, m.time);
      last = std::max(last, m.time);
    }
    upsert->Reset();
    upsert->Bind(1, HistorySeriesId(s.key))
        .Bind(2, s.key)
        .Bind(3, s.metric)
        .Bind(4, EncodeLabels(s.labels))
        .Bind(5, Ns(first))
        .Bind(6, Ns(last));
    absl::StatusOr<bool> row = upsert->Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::InternalError(Cat(path_, ": series upsert returned no row"));
    const int64_t seq = upsert->ColumnInt64(0);
    upsert->Reset();
    ++summary.series;
    for (const MinuteRow& m : s.minutes) {
      exists->Reset();
      exists->Bind(1, seq).Bind(2, Ns(m.time));
      absl::StatusOr<bool> found = exists->Step();
      if (!found.ok()) return found.status();
      if (*found) ++summary.replaced;
      exists->Reset();
      insert->Reset();
      insert->Bind(1, seq)
          .Bind(2, Ns(m.time))
          .Bind(3, static_cast<int64_t>(m.count))
          .Bind(4, m.p50)
          .Bind(5, m.p90)
          .Bind(6, m.p99)
          .Bind(7, m.p999)
          .Bind(8, m.mean)
          .Bind(9, m.max)
          .Bind(10, m.anomaly_score)
          .Bind(11, m.baseline_p99)
          .Bind(12, m.forecast)
          .Bind(13, m.forecast_lower)
          .Bind(14, m.forecast_upper);
      if (m.heatmap.empty()) {
        insert->BindNull(15);
      } else {
        insert->BindBlob(15, m.heatmap);
      }
      if (absl::Status st = insert->Run(); !st.ok()) return st;
      ++summary.points;
    }
  }
  if (absl::Status s = tx->Commit(); !s.ok()) return s;
  return summary;
}

absl::StatusOr<std::vector<MinuteRow>> HistoryStore::ReadPoints(std::string_view id, WallTime from,
                                                                WallTime to) const {
  Lock lock(read_mu_);
  absl::StatusOr<Statement> st =
      reader_.Prepare(Cat("SELECT ", kPointColumns,
                          " FROM series_minutes m JOIN series s ON m.series_seq = s.seq "
                          "WHERE s.id = ?1 AND m.time > ?2 AND m.time <= ?3 ORDER BY m.time"));
  if (!st.ok()) return st.status();
  st->Bind(1, id).Bind(2, Ns(from)).Bind(3, Ns(to));
  std::vector<MinuteRow> out;
  while (true) {
    absl::StatusOr<bool> row = st->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    out.push_back(ReadPoint(*st));
  }
  return out;
}

absl::StatusOr<std::vector<StoredHeatmapRow>> HistoryStore::ReadHeatmapRows(std::string_view id,
                                                                            WallTime from,
                                                                            WallTime to) const {
  Lock lock(read_mu_);
  absl::StatusOr<Statement> st = reader_.Prepare(
      "SELECT m.time, m.heatmap FROM series_minutes m JOIN series s ON m.series_seq = s.seq "
      "WHERE s.id = ?1 AND m.time > ?2 AND m.time <= ?3 AND m.heatmap IS NOT NULL "
      "ORDER BY m.time");
  if (!st.ok()) return st.status();
  st->Bind(1, id).Bind(2, Ns(from)).Bind(3, Ns(to));
  std::vector<StoredHeatmapRow> out;
  while (true) {
    absl::StatusOr<bool> row = st->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    const WallTime t = FromNs(st->ColumnInt64(0));
    absl::StatusOr<HeatmapRow> decoded = DecodeHeatmapRow(st->ColumnText(1));
    if (!decoded.ok()) {
      return absl::DataLossError(
          Cat(path_, ": series ", id, " at ", Ns(t), " ns: ", decoded.status().message()));
    }
    out.push_back({t, *std::move(decoded)});
  }
  return out;
}

absl::StatusOr<std::vector<StoredSeriesInfo>> HistoryStore::ListSeries() const {
  Lock lock(read_mu_);
  absl::StatusOr<Statement> st =
      reader_.Prepare(Cat("SELECT ", kSeriesColumns, " FROM series ORDER BY key"));
  if (!st.ok()) return st.status();
  std::vector<StoredSeriesInfo> out;
  while (true) {
    absl::StatusOr<bool> row = st->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    absl::StatusOr<StoredSeriesInfo> s = ReadSeries(*st);
    if (!s.ok()) return s.status();
    out.push_back(*std::move(s));
  }
  return out;
}

absl::StatusOr<std::optional<StoredSeriesInfo>> HistoryStore::FindSeries(
    std::string_view id) const {
  Lock lock(read_mu_);
  absl::StatusOr<Statement> st =
      reader_.Prepare(Cat("SELECT ", kSeriesColumns, " FROM series WHERE id = ?1"));
  if (!st.ok()) return st.status();
  st->Bind(1, id);
  absl::StatusOr<bool> row = st->Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<StoredSeriesInfo>();
  absl::StatusOr<StoredSeriesInfo> s = ReadSeries(*st);
  if (!s.ok()) return s.status();
  return std::optional<StoredSeriesInfo>(*std::move(s));
}

absl::StatusOr<int64_t> HistoryStore::Prune(WallTime cutoff) {
  Lock lock(write_mu_);
  absl::StatusOr<Transaction> tx = Transaction::Begin(writer_);
  if (!tx.ok()) return tx.status();
  // Series by series, on the primary key: no index on time alone is needed.
  absl::StatusOr<Statement> del = writer_.Prepare(
      "DELETE FROM series_minutes WHERE series_seq IN (SELECT seq FROM series WHERE first_at < ?1) "
      "AND time < ?1");
  if (!del.ok()) return del.status();
  del->Bind(1, Ns(cutoff));
  if (absl::Status s = del->Run(); !s.ok()) return s;
  const int64_t deleted = writer_.Changes();
  // first_at moves to the oldest row left; series without rows go.
  if (absl::Status s = writer_.Exec(
          Cat("DELETE FROM series WHERE first_at < ", Ns(cutoff),
              " AND NOT EXISTS (SELECT 1 FROM series_minutes m WHERE m.series_seq = series.seq);"
              "UPDATE series SET first_at = (SELECT min(time) FROM series_minutes m "
              "WHERE m.series_seq = series.seq) WHERE first_at < ",
              Ns(cutoff)));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = tx->Commit(); !s.ok()) return s;
  return deleted;
}

}  // namespace tailguard::store
