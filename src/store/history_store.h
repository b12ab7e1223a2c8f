// The series history in the SQLite store: one row per series and minute (statistics, the
// detector's view, a latency heatmap row), kept for weeks so that the dashboard can compare with
// last week after a restart, and filled from files by `tailguard import`.
#ifndef TAILGUARD_STORE_HISTORY_STORE_H_
#define TAILGUARD_STORE_HISTORY_STORE_H_

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "metrics/heatmap.h"
#include "store/sqlite.h"
#include "tailguard/clock.h"
#include "tailguard/registry.h"

namespace tailguard::store {

// One minute of one series, in the series' unit (latencies in seconds); NaN when unknown (stored
// as NULL).
struct MinuteRow {
  WallTime time{};  // end of the minute
  uint64_t count = 0;
  double p50 = NAN, p90 = NAN, p99 = NAN, p999 = NAN, mean = NAN, max = NAN;
  double anomaly_score = NAN;
  double baseline_p99 = NAN;
  double forecast = NAN, forecast_lower = NAN, forecast_upper = NAN;
  // EncodeHeatmapRow() of the minute; "" when unknown (imported points).
  std::string heatmap;
};

// A batch element: minutes of one series.
struct SeriesMinutes {
  std::string key;  // canonical: metric{a="x",...}, labels sorted (Series::key())
  std::string metric;
  Labels labels;  // sorted by name
  std::vector<MinuteRow> minutes;
  Unit unit = Unit::kNanoseconds;  // what the minutes measure (kept with the series)
};

// A series the store knows.
struct StoredSeriesInfo {
  std::string id;  // 16 hex digits: FNV-1a 64 of the key (HistorySeriesId)
  std::string key;
  std::string metric;
  Labels labels;
  WallTime first{};  // the oldest minute written
  WallTime last{};   // the newest minute written
  Unit unit = Unit::kNanoseconds;
};

// A heatmap row of one minute.
struct StoredHeatmapRow {
  WallTime time{};
  HeatmapRow row;
};

struct ImportSummary {
  int64_t series = 0;
  int64_t points = 0;
  int64_t replaced = 0;  // minutes that already had a row (overwritten)
};

struct ImportOptions {
  // Most minute rows written per transaction: the write lock is released between chunks, so a
  // gateway writing to the same file waits for one chunk at most (well under its 5 s busy
  // timeout). Default 10 000 (a few tens of milliseconds).
  int64_t rows_per_transaction = 10000;
  // Called after each committed chunk with the points written so far; may be empty.
  std::function<void(int64_t points_written)> progress;
};

struct PruneResult {
  int64_t deleted = 0;  // minute rows deleted
  bool done = true;     // false: the batch limit was reached and older minutes remain
};

// 16 lower-case hex digits: FNV-1a 64 of `key`; the series id the API shows.
std::string HistorySeriesId(std::string_view key);

// The history tables of the store file (since schema version 3; the unit since 5; docs/store.md),
// over two connections in WAL mode: the writer (WriteMinutes, ImportPoints, Prune: the analysis
// thread or the import command) and a reader for the API, so that a read never waits behind a write
// transaction. Times are given by the caller: the store never reads a clock. Ranges are (from, to]:
// a minute row belongs to the range when from < time <= to.
//
// Errors: InvalidArgument for bad input; DataLoss for a row that does not decode; Unavailable,
// ResourceExhausted or Internal for SQLite errors, naming the file.
//
// Thread-safe: writes are serialised among themselves, reads among themselves.
class HistoryStore {
 public:
  // Opens (creating if needed) the store file at `path` and migrates it to SchemaVersion(), as
  // EventStore::Open does (the two may share the file). InvalidArgument for ":memory:" (the two
  // connections must see one database); otherwise as EventStore::Open.
  static absl::StatusOr<std::unique_ptr<HistoryStore>> Open(const std::string& path);

  HistoryStore(const HistoryStore&) = delete;
  HistoryStore& operator=(const HistoryStore&) = delete;
  ~HistoryStore();

  const std::string& path() const { return path_; }

  // Writes every minute of every series of `batch` in one transaction, replacing a row of the
  // same (series, time), and records the series. InvalidArgument (nothing written) for an empty
  // key or metric, a heatmap blob that does not decode, or a key given in two units. A series
  // stored in another unit than the batch gives is left out and the rest written: then an
  // InvalidArgument names it (a series keeps the unit it was first written in).
  absl::Status WriteMinutes(std::span<const SeriesMinutes> batch);

  // WriteMinutes() for `tailguard import`, counting what it did. The whole batch is checked
  // first (InvalidArgument: nothing written, also for a series stored in another unit); then it is
  // written in transactions of at most options.rows_per_transaction rows, in order. A SQLite error
  // stops the import: the chunks already committed stay (re-importing replaces them), and hold the
  // points last reported to options.progress.
  absl::StatusOr<ImportSummary> ImportPoints(std::span<const SeriesMinutes> batch,
                                             const ImportOptions& options = {});

  // Steps through the minutes of series `id` with from < time <= to, oldest first, calling
  // `visit` for each without materialising them: the row (its `heatmap` left empty) and, when
  // `heatmaps`, the decoded heatmap row (nullptr for a minute without one; when !heatmaps,
  // always nullptr). Nothing is visited for an unknown id. DataLoss for a heatmap that does not
  // decode (the rows before it were visited). REQUIRES: `visit` does not call this store (the
  // read lock is held).
  absl::Status VisitMinutes(
      std::string_view id, WallTime from, WallTime to, bool heatmaps,
      absl::FunctionRef<void(const MinuteRow&, const HeatmapRow*)> visit) const;

  // Minutes of series `id` with from < time <= to, oldest first, without heatmaps (an empty
  // vector for an unknown id).
  absl::StatusOr<std::vector<MinuteRow>> ReadPoints(std::string_view id, WallTime from,
                                                    WallTime to) const;
  // Heatmap rows of series `id` with from < time <= to, oldest first; minutes without a heatmap
  // are left out.
  absl::StatusOr<std::vector<StoredHeatmapRow>> ReadHeatmapRows(std::string_view id, WallTime from,
                                                                WallTime to) const;

  // Every series, by key.
  absl::StatusOr<std::vector<StoredSeriesInfo>> ListSeries() const;
  // One series; nullopt when unknown.
  absl::StatusOr<std::optional<StoredSeriesInfo>> FindSeries(std::string_view id) const;

  // Deletes at most `max_rows` (> 0) of the minutes with time < cutoff, oldest series first,
  // in one transaction, and the series left without any minute; says whether older minutes
  // remain (call again, e.g. a minute later, until done). Bounded so that lowering the
  // retention never turns into one transaction deleting millions of rows.
  absl::StatusOr<PruneResult> Prune(WallTime cutoff, int64_t max_rows = kDefaultPruneBatch);
  static constexpr int64_t kDefaultPruneBatch = 20000;

 private:
  HistoryStore(std::string path, Database writer, Database reader);

  // Constant after construction.
  const std::string path_;

  std::mutex write_mu_;
  Database writer_;  // guarded by write_mu_
  mutable std::mutex read_mu_;
  mutable Database reader_;  // guarded by read_mu_
};

}  // namespace tailguard::store

#endif  // TAILGUARD_STORE_HISTORY_STORE_H_
