// SlidingWindows: a fine ring of slots, rolled up into a coarse ring.
//
// The algorithm: a slot's index is floor(t / slot). Fine slots live in a ring indexed by
// index mod fine_slots. Slots of the current coarse period are also merged into a dense
// `pending` histogram; when a slot of a later period arrives, `pending` is compacted into the
// coarse ring. A window merges the fine slots that start inside it, or, when it is longer than
// the fine ring, the coarse slots that start inside it plus `pending`.
#include "tailguard/windows.h"

#include <algorithm>
#include <cassert>
#include <limits>

#include "metrics/compact_histogram.h"

namespace tailguard {
namespace {

constexpr int64_t kNone = std::numeric_limits<int64_t>::min();

int64_t FloorDiv(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t Mod(int64_t a, int64_t b) {
  const int64_t m = a % b;
  return m < 0 ? m + b : m;
}

struct Slot {
  int64_t index = kNone;
  CompactHistogram data;
};

// Merges `h` into slot `s` (which must hold `index` or nothing) by decompress, merge, compact.
void MergeIntoSlot(Slot& s, int64_t index, const Histogram& h) {
  if (s.index != index) {
    s.index = index;
    s.data = CompactHistogram(h);
    return;
  }
  if (h.empty() && h.out_of_range() == 0) return;
  Histogram merged;
  s.data.MergeInto(merged);
  merged.Merge(h);
  s.data = CompactHistogram(merged);
}

}  // namespace

struct SlidingWindows::Impl {
  explicit Impl(WindowOptions o)
      : options(o),
        slot_ns(o.slot.count()),
        fine(static_cast<size_t>(o.fine_slots)),
        coarse(static_cast<size_t>(o.coarse_slots)) {}

  int64_t coarse_ns() const { return slot_ns * options.coarse_factor; }

  void RollUpPending() {
    if (pending_index == kNone) return;
    if (!coarse.empty()) {
      Slot& s = coarse[static_cast<size_t>(Mod(pending_index, std::ssize(coarse)))];
      if (s.index < pending_index || s.index == kNone) {
        s.index = pending_index;
        s.data = CompactHistogram(pending);
      }
    }
    pending.Reset();
  }

  const WindowOptions options;
  const int64_t slot_ns;
  std::vector<Slot> fine;    // ring by slot index
  std::vector<Slot> coarse;  // ring by coarse index
  int64_t newest = kNone;    // newest fine slot index seen
  int64_t pending_index = kNone;
  Histogram pending;  // the current coarse period, dense
  uint64_t late_drops = 0;
};

SlidingWindows::SlidingWindows(WindowOptions options) : impl_(std::make_unique<Impl>(options)) {
  assert(options.slot.count() > 0 && options.fine_slots >= 1 && options.coarse_factor >= 1 &&
         options.coarse_slots >= 0);
}
SlidingWindows::~SlidingWindows() = default;
SlidingWindows::SlidingWindows(SlidingWindows&&) noexcept = default;
SlidingWindows& SlidingWindows::operator=(SlidingWindows&&) noexcept = default;

const WindowOptions& SlidingWindows::options() const { return impl_->options; }

void SlidingWindows::Add(WallTime t, const Histogram& interval) {
  Impl& m = *impl_;
  const int64_t index = FloorDiv(t.time_since_epoch().count(), m.slot_ns);
  const int64_t cindex = FloorDiv(index, m.options.coarse_factor);
  const int64_t fine_size = std::ssize(m.fine);
  if (m.newest != kNone && index <= m.newest - fine_size) {
    m.late_drops += interval.count() + interval.out_of_range();
    return;
  }
  if (cindex > m.pending_index) {
    m.RollUpPending();
    m.pending_index = cindex;
  }
  Slot& fine = m.fine[static_cast<size_t>(Mod(index, fine_size))];
  MergeIntoSlot(fine, index, interval);
  if (cindex == m.pending_index) {
    m.pending.Merge(interval);
  } else if (!m.coarse.empty()) {
    // A late slot of a period already rolled up: merge it into that coarse slot if still kept.
    Slot& c = m.coarse[static_cast<size_t>(Mod(cindex, std::ssize(m.coarse)))];
    if (c.index == cindex || c.index == kNone || c.index < cindex)
      MergeIntoSlot(c, cindex, interval);
  }
  m.newest = std::max(m.newest, index);
}

Histogram SlidingWindows::Window(Duration length, WallTime now) const {
  Histogram h;
  WindowInto(length, now, h);
  return h;
}

void SlidingWindows::WindowInto(Duration length, WallTime now, Histogram& out) const {
  const Impl& m = *impl_;
  const int64_t now_ns = now.time_since_epoch().count();
  const int64_t start_ns = now_ns - length.count();
  const auto inside = [&](int64_t slot_start) {
    return slot_start >= start_ns && slot_start < now_ns;
  };
  if (length.count() <= m.slot_ns * std::ssize(m.fine)) {
    for (const Slot& s : m.fine) {
      if (s.index != kNone && inside(s.index * m.slot_ns)) s.data.MergeInto(out);
    }
    return;
  }
  const int64_t coarse_ns = m.coarse_ns();
  for (const Slot& s : m.coarse) {
    if (s.index != kNone && s.index != m.pending_index && inside(s.index * coarse_ns)) {
      s.data.MergeInto(out);
    }
  }
  // The current period: its slots are recent; include it unless it lies wholly outside.
  if (m.pending_index != kNone) {
    const int64_t p = m.pending_index * coarse_ns;
    if (p + coarse_ns > start_ns && p < now_ns) out.Merge(m.pending);
  }
}

Duration SlidingWindows::span() const {
  return Duration(impl_->slot_ns * std::ssize(impl_->fine) +
                  impl_->coarse_ns() * std::ssize(impl_->coarse));
}

uint64_t SlidingWindows::late_drops() const { return impl_->late_drops; }

size_t SlidingWindows::MemoryBytes() const {
  size_t bytes = impl_->pending.MemoryBytes();
  for (const Slot& s : impl_->fine) bytes += s.data.MemoryBytes();
  for (const Slot& s : impl_->coarse) bytes += s.data.MemoryBytes();
  return bytes;
}

}  // namespace tailguard
