// Recorder: per-thread writers, their registration, and collection by difference.
//
// The algorithm: each thread that records into a Recorder gets its own Writer, found through a
// thread-local array indexed by the recorder's slot. A writer's counts only grow (modulo 2^32);
// the collector remembers what it saw last time and takes the difference. Nothing is swapped or
// reset, so the writer needs neither a read-modify-write nor a fence, and the collector never
// waits for a writer. Every value lands in exactly one collection (the differences telescope).
#include "tailguard/recorder.h"

#include <algorithm>

namespace tailguard {
namespace recorder_internal {

thread_local CacheEntry* tls_entries = nullptr;
thread_local uint32_t tls_size = 0;
thread_local bool tls_dead = false;

namespace {

// Owns this thread's writers; its destructor retires them when the thread exits.
struct ThreadCache {
  std::vector<CacheEntry> entries;
  std::vector<std::shared_ptr<Writer>> owned;  // parallel to entries

  ~ThreadCache() {
    tls_entries = nullptr;
    tls_size = 0;
    tls_dead = true;
    for (auto& w : owned) {
      if (w) w->retired.store(true, std::memory_order_release);
    }
  }
};

thread_local ThreadCache tls_cache;

// Hands out recorder slots (small integers reused after a recorder dies) and serial numbers
// (never reused, so a reused slot is told apart from its previous owner).
class SlotAllocator {
 public:
  uint32_t Acquire() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      const uint32_t slot = free_.back();
      free_.pop_back();
      return slot;
    }
    return next_++;
  }
  void Release(uint32_t slot) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(slot);
  }
  uint64_t NextSerial() { return serial_.fetch_add(1, std::memory_order_relaxed) + 1; }

 private:
  std::mutex mu_;
  std::vector<uint32_t> free_;
  uint32_t next_ = 0;
  // Atomic because recorders are created from any thread; only uniqueness matters.
  std::atomic<uint64_t> serial_{0};
};

SlotAllocator& Slots() {
  static SlotAllocator* const kSlots = new SlotAllocator();
  return *kSlots;
}

}  // namespace
}  // namespace recorder_internal

using recorder_internal::Writer;

Recorder::Recorder()
    : slot_(recorder_internal::Slots().Acquire()),
      serial_(recorder_internal::Slots().NextSerial()) {}

Recorder::~Recorder() { recorder_internal::Slots().Release(slot_); }

Writer* Recorder::RegisterThread() {
  // A record from a thread-local destructor that runs after tls_cache's: touching tls_cache
  // now would use freed memory.
  if (recorder_internal::tls_dead) return nullptr;
  auto& cache = recorder_internal::tls_cache;
  if (cache.entries.size() <= slot_) {
    cache.entries.resize(slot_ + 1, recorder_internal::CacheEntry{0, nullptr});
    cache.owned.resize(slot_ + 1);
  }
  auto writer = std::make_shared<Writer>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    writers_.push_back(writer);
  }
  // Replacing a writer of a dead recorder that used this slot before drops our share of it.
  cache.owned[slot_] = writer;
  cache.entries[slot_] = recorder_internal::CacheEntry{serial_, writer.get()};
  recorder_internal::tls_entries = cache.entries.data();
  recorder_internal::tls_size = static_cast<uint32_t>(cache.entries.size());
  return writer.get();
}

bool Recorder::RecordLocked(uint64_t value, uint64_t expected_interval) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!late_) late_ = std::make_unique<Histogram>();
  return late_->RecordCorrected(value, expected_interval);
}

bool Recorder::RecordCorrected(uint64_t value, uint64_t expected_interval) {
  Writer* w = LocalWriter();
  if (w == nullptr) return RecordLocked(value, expected_interval);
  if (value > BucketLayout::kMaxValue) {
    Writer::Add(w->out_of_range, 1);
    return false;
  }
  Writer::Bump(w->counts[BucketLayout::Index(value)]);
  BucketLayout::ForEachCorrection(
      value, expected_interval, [w](int index, uint64_t n, uint64_t, uint64_t) {
        constexpr uint64_t kMaxPerBucket = uint64_t{1} << 31;
        if (n > kMaxPerBucket) {
          Writer::Add(w->out_of_range, n - kMaxPerBucket);
          n = kMaxPerBucket;
        }
        std::atomic<uint32_t>& c = w->counts[index];
        c.store(c.load(std::memory_order_relaxed) + static_cast<uint32_t>(n),
                std::memory_order_relaxed);
      });
  return true;
}

void Recorder::CollectInto(Histogram& out) {
  Histogram interval;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& w : writers_) {
    // Acquire pairs with the exiting thread's release: a retired writer is complete now.
    const bool retired = w->retired.load(std::memory_order_acquire);
    for (int i = 0; i < BucketLayout::kBucketCount; ++i) {
      const uint32_t c = w->counts[i].load(std::memory_order_relaxed);
      const uint32_t d = c - w->seen[i];  // modulo 2^32
      if (d != 0) {
        interval.AddToBucket(i, d);
        w->seen[i] = c;
      }
    }
    const uint64_t oor = w->out_of_range.load(std::memory_order_relaxed);
    interval.out_of_range_ += oor - w->seen_out_of_range;
    w->seen_out_of_range = oor;
    if (retired) w.reset();
  }
  std::erase(writers_, nullptr);
  if (late_) {
    interval.Merge(*late_);
    late_.reset();
  }
  out.Merge(interval);
}

size_t Recorder::writer_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return writers_.size();
}

size_t Recorder::MemoryBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return writers_.size() * sizeof(Writer) + (late_ ? late_->MemoryBytes() : 0);
}

}  // namespace tailguard
