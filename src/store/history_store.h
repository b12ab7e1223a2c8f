// The series history in the SQLite store: one row per series and minute (statistics, the
// detector's view, a latency heatmap row), kept for weeks so that the dashboard can compare with
// last week after a restart, and filled from files by `tailguard import`.
#ifndef TAILGUARD_STORE_HISTORY_STORE_H_
#define TAILGUARD_STORE_HISTORY_STORE_H_

#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "metrics/heatmap.h"
#include "store/sqlite.h"
#include "tailguard/clock.h"
#include "tailguard/registry.h"

namespace tailguard::store {

// One minute of one series. Latencies in seconds; NaN when unknown (stored as NULL).
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
};

// A series the store knows.
struct StoredSeriesInfo {
  std::string id;  // 16 hex digits: FNV-1a 64 of the key (HistorySeriesId)
  std::string key;
  std::string metric;
  Labels labels;
  WallTime first{};  // the oldest minute written
  WallTime last{};   // the newest minute written
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

// 16 lower-case hex digits: FNV-1a 64 of `key`; the series id the API shows.
std::string HistorySeriesId(std::string_view key);

// The history tables of the store file (schema version 3, docs/store.md), over two connections
// in WAL mode: the writer (WriteMinutes, ImportPoints, Prune: the analysis thread or the import
// command) and a reader for the API, so that a read never waits behind a write transaction.
// Times are given by the caller: the store never reads a clock. Ranges are (from, to]: a minute
// row belongs to the range when from < time <= to.
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
  // key or metric, or a heatmap blob that does not decode.
  absl::Status WriteMinutes(std::span<const SeriesMinutes> batch);

  // WriteMinutes() for `tailguard import`, counting what it did.
  absl::StatusOr<ImportSummary> ImportPoints(std::span<const SeriesMinutes> batch);

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

  // Deletes the minutes with time < cutoff, and the series left without any; returns how many
  // minute rows were deleted.
  absl::StatusOr<int64_t> Prune(WallTime cutoff);

 private:
  HistoryStore(std::string path, Database writer, Database reader);
  absl::StatusOr<ImportSummary> Write(std::span<const SeriesMinutes> batch);

  // Constant after construction.
  const std::string path_;

  std::mutex write_mu_;
  Database writer_;  // guarded by write_mu_
  mutable std::mutex read_mu_;
  mutable Database reader_;  // guarded by read_mu_
};

}  // namespace tailguard::store

#endif  // TAILGUARD_STORE_HISTORY_STORE_H_
