// The series history over SQLite: series and series_minutes (schema.cc, version 3).
#include "store/history_store.h"

#include <cinttypes>
#include <cstdio>
#include <map>
#include <utility>

#include "common/series_id.h"
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
constexpr int kPointColumnCount = 13;

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

constexpr std::string_view kSeriesColumns = "id, key, metric, labels, first_at, last_at, unit";

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
  const std::string unit = st.ColumnText(6);
  const std::optional<Unit> u = ParseUnit(unit);
  if (!u)
    return absl::DataLossError(Cat("history: series ", s.key, " has unknown unit \"", unit, "\""));
  s.unit = *u;
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
  // One key in two units within a batch.
  std::map<std::string_view, Unit> units;
  for (const SeriesMinutes& s : batch) {
    auto [it, first] = units.emplace(s.key, s.unit);
    if (!first && it->second != s.unit) {
      return absl::InvalidArgumentError(Cat("history: series ", s.key, " is given in ",
                                            UnitName(it->second), " and in ", UnitName(s.unit)));
    }
  }
  return absl::OkStatus();
}

// The error of series stored in another unit than a batch gives them in (their old minutes
// would read in the wrong one: a size imported as seconds); `what` names each.
absl::Status UnitError(const std::string& what) {
  return absl::InvalidArgumentError(
      Cat("history: ", what, ": write a series in one unit (under another metric name)"));
}

// The prepared statements of a write; reused across transactions.
struct Statements {
  Statement upsert, exists, insert, unit_of;

  static absl::StatusOr<Statements> Prepare(Database& db) {
    absl::StatusOr<Statement> upsert = db.Prepare(
        "INSERT INTO series (id, key, metric, labels, first_at, last_at, unit) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
        "ON CONFLICT (id) DO UPDATE SET first_at = min(first_at, excluded.first_at), "
        "last_at = max(last_at, excluded.last_at) WHERE unit = excluded.unit "
        "RETURNING seq");
    if (!upsert.ok()) return upsert.status();
    absl::StatusOr<Statement> exists =
        db.Prepare("SELECT 1 FROM series_minutes WHERE series_seq = ?1 AND time = ?2");
    if (!exists.ok()) return exists.status();
    absl::StatusOr<Statement> insert = db.Prepare(
        "INSERT OR REPLACE INTO series_minutes (series_seq, time, count, p50, p90, p99, p999, "
        "mean, max, anomaly_score, baseline_p99, forecast, forecast_lower, forecast_upper, "
        "heatmap) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)");
    if (!insert.ok()) return insert.status();
    absl::StatusOr<Statement> unit_of = db.Prepare("SELECT unit FROM series WHERE id = ?1");
    if (!unit_of.ok()) return unit_of.status();
    return Statements{*std::move(upsert), *std::move(exists), *std::move(insert),
                      *std::move(unit_of)};
  }

  // "KEY is stored in bytes, written in seconds" when `s` is stored in another unit than it
  // gives; "" when it is not, or is not stored.
  absl::StatusOr<std::string> UnitMismatch(const SeriesMinutes& s) {
    unit_of.Reset();
    unit_of.Bind(1, HistorySeriesId(s.key));
    absl::StatusOr<bool> row = unit_of.Step();
    if (!row.ok()) return row.status();
    std::string out;
    if (*row && unit_of.ColumnText(0) != UnitName(s.unit)) {
      out = Cat(s.key, " is stored in ", unit_of.ColumnText(0), ", written in ", UnitName(s.unit));
    }
    unit_of.Reset();
    return out;
  }

  // Writes `rows` (some minutes of `s`) and records the series, inside the caller's
  // transaction; counts into `summary` (points and replaced, not series). A series stored in
  // another unit is left as it is (the upsert's WHERE) and named in `mismatch`.
  absl::Status Write(const SeriesMinutes& s, std::span<const MinuteRow> rows,
                     ImportSummary& summary, const std::string& path, std::string& mismatch) {
    if (rows.empty()) return absl::OkStatus();
    WallTime first = rows.front().time, last = first;
    for (const MinuteRow& m : rows) {
      first = std::min(first, m.time);
      last = std::max(last, m.time);
    }
    upsert.Reset();
    upsert.Bind(1, HistorySeriesId(s.key))
        .Bind(2, s.key)
        .Bind(3, s.metric)
        .Bind(4, EncodeLabels(s.labels))
        .Bind(5, Ns(first))
        .Bind(6, Ns(last))
        .Bind(7, UnitName(s.unit));
    absl::StatusOr<bool> row = upsert.Step();
    if (!row.ok()) return row.status();
    if (!*row) {
      upsert.Reset();
      absl::StatusOr<std::string> what = UnitMismatch(s);
      if (!what.ok()) return what.status();
      if (what->empty()) return absl::InternalError(Cat(path, ": series upsert returned no row"));
      mismatch = *std::move(what);
      return absl::OkStatus();
    }
    const int64_t seq = upsert.ColumnInt64(0);
    upsert.Reset();
    for (const MinuteRow& m : rows) {
      exists.Reset();
      exists.Bind(1, seq).Bind(2, Ns(m.time));
      absl::StatusOr<bool> found = exists.Step();
      if (!found.ok()) return found.status();
      if (*found) ++summary.replaced;
      exists.Reset();
      insert.Reset();
      insert.Bind(1, seq)
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
        insert.BindNull(15);
      } else {
        insert.BindBlob(15, m.heatmap);
      }
      if (absl::Status st = insert.Run(); !st.ok()) return st;
      ++summary.points;
    }
    return absl::OkStatus();
  }
};

}  // namespace

std::string HistorySeriesId(std::string_view key) { return SeriesId(key); }

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
  if (absl::Status s = Validate(batch); !s.ok()) return s;
  Lock lock(write_mu_);
  absl::StatusOr<Statements> st = Statements::Prepare(writer_);
  if (!st.ok()) return st.status();
  absl::StatusOr<Transaction> tx = Transaction::Begin(writer_);
  if (!tx.ok()) return tx.status();
  // A series in another unit is left out; the others are written (the live history of every
  // other series must not stop for one), and the error names it.
  std::string mismatched;
  ImportSummary summary;
  for (const SeriesMinutes& s : batch) {
    std::string mismatch;
    if (absl::Status e = st->Write(s, s.minutes, summary, path_, mismatch); !e.ok()) return e;
    if (!mismatch.empty()) mismatched += Cat(mismatched.empty() ? "" : "; ", mismatch);
  }
  if (absl::Status c = tx->Commit(); !c.ok()) return c;
  return mismatched.empty() ? absl::OkStatus() : UnitError(mismatched);
}

absl::StatusOr<ImportSummary> HistoryStore::ImportPoints(std::span<const SeriesMinutes> batch,
                                                         const ImportOptions& options) {
  if (absl::Status s = Validate(batch); !s.ok()) return s;
  if (options.rows_per_transaction <= 0) {
    return absl::InvalidArgumentError("history import: rows_per_transaction must be positive");
  }
  Lock lock(write_mu_);
  absl::StatusOr<Statements> st = Statements::Prepare(writer_);
  if (!st.ok()) return st.status();
  // All or nothing: a series stored in another unit refuses the import before it writes.
  std::string mismatched;
  for (const SeriesMinutes& s : batch) {
    absl::StatusOr<std::string> mismatch = st->UnitMismatch(s);
    if (!mismatch.ok()) return mismatch.status();
    if (!mismatch->empty()) mismatched += Cat(mismatched.empty() ? "" : "; ", *mismatch);
  }
  if (!mismatched.empty()) return UnitError(mismatched);
  ImportSummary summary;
  for (const SeriesMinutes& s : batch) summary.series += s.minutes.empty() ? 0 : 1;
  // (series, row) of the next row to write; each chunk is one transaction.
  size_t si = 0, ri = 0;
  while (si < batch.size()) {
    absl::StatusOr<Transaction> tx = Transaction::Begin(writer_);
    if (!tx.ok()) return tx.status();
    int64_t budget = options.rows_per_transaction;
    while (si < batch.size() && budget > 0) {
      const std::vector<MinuteRow>& rows = batch[si].minutes;
      const size_t n = std::min(rows.size() - ri, static_cast<size_t>(budget));
      if (n > 0) {
        // Checked above, under the same lock: only another process could have changed a unit
        // since, and then that series' rows are left out and named.
        std::string mismatch;
        if (absl::Status e =
                st->Write(batch[si], std::span(rows).subspan(ri, n), summary, path_, mismatch);
            !e.ok()) {
          return e;
        }
        if (!mismatch.empty()) return UnitError(mismatch);
      }
      budget -= static_cast<int64_t>(n);
      ri += n;
      if (ri == rows.size()) {
        ++si;
        ri = 0;
      }
    }
    if (absl::Status e = tx->Commit(); !e.ok()) return e;
    if (options.progress) options.progress(summary.points);
  }
  return summary;
}

absl::Status HistoryStore::VisitMinutes(
    std::string_view id, WallTime from, WallTime to, bool heatmaps,
    absl::FunctionRef<void(const MinuteRow&, const HeatmapRow*)> visit) const {
  Lock lock(read_mu_);
  absl::StatusOr<Statement> st =
      reader_.Prepare(Cat("SELECT ", kPointColumns, heatmaps ? ", m.heatmap" : "",
                          " FROM series_minutes m JOIN series s ON m.series_seq = s.seq "
                          "WHERE s.id = ?1 AND m.time > ?2 AND m.time <= ?3 ORDER BY m.time"));
  if (!st.ok()) return st.status();
  st->Bind(1, id).Bind(2, Ns(from)).Bind(3, Ns(to));
  HeatmapRow decoded;
  while (true) {
    absl::StatusOr<bool> row = st->Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
    const MinuteRow point = ReadPoint(*st);
    if (!heatmaps || st->ColumnIsNull(kPointColumnCount)) {
      visit(point, nullptr);
      continue;
    }
    absl::StatusOr<HeatmapRow> h = DecodeHeatmapRow(st->ColumnText(kPointColumnCount));
    if (!h.ok()) {
      return absl::DataLossError(
          Cat(path_, ": series ", id, " at ", Ns(point.time), " ns: ", h.status().message()));
    }
    decoded = *std::move(h);
    visit(point, &decoded);
  }
}

absl::StatusOr<std::vector<MinuteRow>> HistoryStore::ReadPoints(std::string_view id, WallTime from,
                                                                WallTime to) const {
  std::vector<MinuteRow> out;
  absl::Status s = VisitMinutes(id, from, to, /*heatmaps=*/false,
                                [&](const MinuteRow& r, const HeatmapRow*) { out.push_back(r); });
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<std::vector<StoredHeatmapRow>> HistoryStore::ReadHeatmapRows(std::string_view id,
                                                                            WallTime from,
                                                                            WallTime to) const {
  std::vector<StoredHeatmapRow> out;
  absl::Status s =
      VisitMinutes(id, from, to, /*heatmaps=*/true, [&](const MinuteRow& r, const HeatmapRow* h) {
        if (h != nullptr) out.push_back({r.time, *h});
      });
  if (!s.ok()) return s;
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

absl::StatusOr<PruneResult> HistoryStore::Prune(WallTime cutoff, int64_t max_rows) {
  if (max_rows <= 0) return absl::InvalidArgumentError("history prune: max_rows must be positive");
  Lock lock(write_mu_);
  absl::StatusOr<Transaction> tx = Transaction::Begin(writer_);
  if (!tx.ok()) return tx.status();
  // Series by series, oldest first, on the primary key (series_seq, time): no index on time
  // alone is needed, and each statement touches at most the rows it deletes.
  absl::StatusOr<Statement> old =
      writer_.Prepare("SELECT seq FROM series WHERE first_at < ?1 ORDER BY first_at, seq");
  absl::StatusOr<Statement> nth = writer_.Prepare(
      "SELECT time FROM series_minutes WHERE series_seq = ?1 AND time < ?2 ORDER BY time "
      "LIMIT 1 OFFSET ?3");
  absl::StatusOr<Statement> del =
      writer_.Prepare("DELETE FROM series_minutes WHERE series_seq = ?1 AND time < ?2");
  // first_at moves to the oldest row left; a series without rows goes.
  absl::StatusOr<Statement> first = writer_.Prepare(
      "UPDATE series SET first_at = (SELECT min(time) FROM series_minutes m "
      "WHERE m.series_seq = ?1) WHERE seq = ?1 "
      "AND EXISTS (SELECT 1 FROM series_minutes m WHERE m.series_seq = ?1)");
  absl::StatusOr<Statement> gone = writer_.Prepare(
      "DELETE FROM series WHERE seq = ?1 "
      "AND NOT EXISTS (SELECT 1 FROM series_minutes m WHERE m.series_seq = ?1)");
  for (const auto* st : {&old, &nth, &del, &first, &gone}) {
    if (!st->ok()) return st->status();
  }
  std::vector<int64_t> seqs;
  old->Bind(1, Ns(cutoff));
  while (true) {
    absl::StatusOr<bool> row = old->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    seqs.push_back(old->ColumnInt64(0));
  }
  PruneResult result;
  for (const int64_t seq : seqs) {
    const int64_t budget = max_rows - result.deleted;
    if (budget == 0) {
      result.done = false;
      break;
    }
    // With more than `budget` old rows, delete those before the (budget+1)-th.
    nth->Reset();
    nth->Bind(1, seq).Bind(2, Ns(cutoff)).Bind(3, budget);
    absl::StatusOr<bool> more = nth->Step();
    if (!more.ok()) return more.status();
    const int64_t bound = *more ? nth->ColumnInt64(0) : Ns(cutoff);
    nth->Reset();
    if (*more) result.done = false;
    del->Reset();
    del->Bind(1, seq).Bind(2, bound);
    if (absl::Status s = del->Run(); !s.ok()) return s;
    result.deleted += writer_.Changes();
    first->Reset();
    first->Bind(1, seq);
    if (absl::Status s = first->Run(); !s.ok()) return s;
    gone->Reset();
    gone->Bind(1, seq);
    if (absl::Status s = gone->Run(); !s.ok()) return s;
    if (*more) break;
  }
  if (absl::Status s = tx->Commit(); !s.ok()) return s;
  return result;
}

}  // namespace tailguard::store
