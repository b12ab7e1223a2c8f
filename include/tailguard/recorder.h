// Recorder: many threads record latencies for a few nanoseconds each; a reader collects what was
// recorded since its last visit without ever blocking them.
#ifndef TAILGUARD_RECORDER_H_
#define TAILGUARD_RECORDER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "tailguard/histogram.h"

namespace tailguard {

namespace recorder_internal {

// One thread's counts for one Recorder. Written by that thread only; read by the collector.
// Counts are cumulative and wrap modulo 2^32: the collector takes differences, which are exact
// as long as fewer than 2^32 values land in one bucket between two collections.
struct alignas(64) Writer {
  // Atomic only so that the collector may read while the owner writes. The owner does a relaxed
  // load and a relaxed store (no read-modify-write, no fence): it is the only writer, and the
  // collector needs no ordering between buckets, only untorn values.
  std::atomic<uint32_t> counts[BucketLayout::kBucketCount] = {};
  std::atomic<uint64_t> out_of_range{0};  // cumulative
  // Set by the owning thread when it exits (release), after its last record; the collector
  // reads it (acquire) before the counts, so one more collection takes everything.
  std::atomic<bool> retired{false};

  // Collector-only state, guarded by the Recorder's mutex.
  uint32_t seen[BucketLayout::kBucketCount] = {};
  uint64_t seen_out_of_range = 0;

  static void Bump(std::atomic<uint32_t>& c) {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  static void Add(std::atomic<uint64_t>& c, uint64_t v) {
    c.store(c.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
  }
};

// This thread's writer for a recorder slot, tagged with the recorder's serial number.
struct CacheEntry {
  uint64_t serial;
  Writer* writer;
};

// Trivially destructible thread-locals, so the hot path reads them without an init guard.
extern thread_local CacheEntry* tls_entries;
extern thread_local uint32_t tls_size;
// Set when this thread's writer cache has been destroyed (thread exit).
extern thread_local bool tls_dead;

}  // namespace recorder_internal

// Records values from any number of threads into per-thread histograms (single writer each,
// nothing shared written on the record path) and hands a reader everything recorded since its
// previous collection, merged.
//
// Thread-safe. Record() is wait-free after a thread's first record into this recorder (which
// allocates its 19 KiB writer and takes a mutex once). Collect() takes a mutex that only other
// collectors and first records contend for.
//
// Records of a thread that exits are kept until the next collection. Destroying a Recorder while
// another thread is inside Record() on it is undefined; threads may outlive it.
class Recorder {
 public:
  Recorder();
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Records one value (nanoseconds for a latency; bytes or a count for a value series). Returns
  // false, counting it as out of range, when
  // value > BucketLayout::kMaxValue.
  bool Record(uint64_t value) {
    recorder_internal::Writer* w = LocalWriter();
    if (w == nullptr) [[unlikely]]
      return RecordLocked(value, 0);
    if (value > BucketLayout::kMaxValue) [[unlikely]] {
      recorder_internal::Writer::Add(w->out_of_range, 1);
      return false;
    }
    recorder_internal::Writer::Bump(w->counts[BucketLayout::Index(value)]);
    return true;
  }

  // Records `value` with coordinated-omission correction, as Histogram::RecordCorrected:
  // O(buckets) however long the stall. A single correction adds at most 2^31 values to one
  // bucket (a stall of 2^31 expected intervals); the rest are counted as out of range.
  bool RecordCorrected(uint64_t value, uint64_t expected_interval);

  // Adds everything recorded since the previous Collect() to `out`. Counts are exact; each value
  // comes back as its bucket's midpoint, so min(), max(), sum() and mean() are within 0.8 % of
  // the true ones. (A separate exact sum could not be kept consistent with the counts without
  // a fence on the record path.)
  void CollectInto(Histogram& out);

  // Everything recorded since the previous collection.
  Histogram Collect() {
    Histogram h;
    CollectInto(h);
    return h;
  }

  // Number of threads that have recorded and not yet been retired by a collection.
  size_t writer_count() const;

  // Bytes held by the per-thread writers: about 19 KiB for every thread that has recorded
  // into this recorder since its last collection after that thread exited.
  size_t MemoryBytes() const;

 private:
  recorder_internal::Writer* LocalWriter() {
    using recorder_internal::tls_entries;
    using recorder_internal::tls_size;
    if (slot_ < tls_size && tls_entries[slot_].serial == serial_) [[likely]] {
      return tls_entries[slot_].writer;
    }
    return RegisterThread();
  }
  // Returns this thread's new writer, or nullptr when the thread is past its thread-local
  // destructors (then RecordLocked takes the value).
  recorder_internal::Writer* RegisterThread();
  bool RecordLocked(uint64_t value, uint64_t expected_interval);

  // Constant after construction: index into each thread's writer cache, reused after this
  // recorder dies, and a serial number that is never reused.
  const uint32_t slot_;
  const uint64_t serial_;

  mutable std::mutex mu_;
  // Shared with the owning threads, so a writer outlives whichever of the two lets go last.
  std::vector<std::shared_ptr<recorder_internal::Writer>> writers_;  // guarded by mu_
  // Records of threads that record from thread-local destructors after tailguard's own
  // thread-local state is gone; merged at the next collection.
  std::unique_ptr<Histogram> late_;  // guarded by mu_; made on first use
};

}  // namespace tailguard

#endif  // TAILGUARD_RECORDER_H_
