// The alert engine's saved state (AlertEngine::SaveState) as plain data, and its byte encoding.
#ifndef TAILGUARD_ALERT_STATE_H_
#define TAILGUARD_ALERT_STATE_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "alert/debounce.h"
#include "alert/grouper.h"
#include "tailguard/alert.h"

namespace tailguard::alert_internal {

// A firing alert of a machine in Alert.
struct SavedLive {
  int tier = 0;
  std::string severity;
  Labels labels;
  Statistic stat = Statistic::kP99;
  double value = 0;
  double threshold = 0;
  double baseline_p99 = 0;
  WallTime starts_at{};
  uint8_t muted = 0;               // MuteBits
  Unit unit = Unit::kNanoseconds;  // since version 2
};

struct SavedMachine {
  std::string rule;
  DebounceSnapshot machine;
  double value = 0;
  double threshold = 0;
  std::optional<SavedLive> live;
};

struct SavedSeries {
  std::string metric;
  Labels labels;  // sorted by name
  WallTime last_time{};
  WallTime last_seen{};
  Unit unit = Unit::kNanoseconds;  // since version 2
  std::vector<SavedMachine> machines;
};

struct SavedState {
  WallTime next_stale_check{};
  std::vector<SavedSeries> series;
  std::vector<SavedGroup> groups;
};

// The current encoding version. Version 1:
//   "TGAS" varint(version) payload fixed32(CRC-32 of everything before it)
// with varints (LEB128), zigzag varints for signed values and times (nanoseconds since the
// epoch), doubles as fixed64 bit patterns, strings as varint(length) bytes, lists as
// varint(count) elements. Version 2 adds the series' unit (varint) after each series'
// last_seen, after each firing alert's mute bits and after each notified alert's end; a version
// 1 state still reads, its series and alerts as latencies.
inline constexpr uint64_t kStateVersion = 2;

// `version` below kStateVersion writes what that version wrote (the units left out): for the
// tests that a state of the previous release still restores.
std::string EncodeState(const SavedState& state, uint64_t version = kStateVersion);

// InvalidArgument "alert state: ..." for anything EncodeState() did not write (a wrong magic,
// an unknown version, a checksum mismatch, a truncation, a value out of range). Allocates at
// most in proportion to the input's size.
absl::StatusOr<SavedState> DecodeState(std::string_view bytes);

}  // namespace tailguard::alert_internal

#endif  // TAILGUARD_ALERT_STATE_H_
