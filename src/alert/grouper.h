// Alertmanager-style grouping: alerts into groups per receiver, notifications on group timers.
#ifndef TAILGUARD_ALERT_GROUPER_H_
#define TAILGUARD_ALERT_GROUPER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "tailguard/alert.h"

namespace tailguard::alert_internal {

struct Group;

// A (rule, series) in Alert, as the groups see it. Owned by the engine; the groups it is in
// point at it until it is resolved.
struct LiveAlert {
  std::string rule;
  std::string series;
  Labels labels;  // sorted by name; includes "alertname" and "severity"
  const Labels* annotations = nullptr;
  int tier = 0;
  std::string severity;
  double value = 0;
  double threshold = 0;
  double baseline_p99 = 0;
  WallTime starts_at{};
  std::vector<Group*> groups;  // the groups it fires in
};

// One group: the alerts of one receiver that share the receiver's group_by label values.
struct Group {
  int receiver = 0;
  std::string key;      // {a="x",...}
  std::string map_key;  // receiver id + key
  Labels group_labels;
  WallTime started{};
  WallTime next_flush{};
  bool notified = false;
  WallTime last_notified{};
  uint64_t sequence = 0;
  bool changed = false;
  std::vector<LiveAlert*> firing;
  std::vector<NotifiedAlert> resolved;  // since the last notification
};

// The algorithm (Alertmanager's dispatcher, on given time):
//   A group starts when its first alert arrives and is flushed group_wait later, then every
//   group_interval. A flush notifies when the group changed since its last notification, or
//   when alerts fire and repeat_interval has passed since it; then forgets the resolved alerts.
//   A group without firing alerts is removed at its next flush (after a last, resolved
//   notification if it ever notified).
// Flushes are processed in time order and stamped with the time they were due.
// Not thread-safe; the engine's thread uses it.
class Grouper {
 public:
  // `config` and `sink` must outlive the grouper. Receivers in config.receivers keep their
  // route options; any other name gets config.route.
  Grouper(const AlertConfig& config, AlertSink& sink, AlertEngineStats& stats);

  // The id of receiver `name`, registering it on first use.
  int Intern(std::string_view name);
  const std::string& ReceiverName(int id) const { return receivers_[id].name; }

  // Puts `alert` in one group per receiver id in `receivers` (its labels decide the group) and
  // takes it out of the groups it was in and no longer belongs to, where it shows as resolved
  // at `t`. Every group it is in counts as changed.
  void Place(LiveAlert& alert, std::span<const int> receivers, WallTime t);
  // Takes `alert` out of all its groups, resolved at `t`.
  void Resolve(LiveAlert& alert, WallTime t);
  // Flushes every group due at or before `now`.
  void Advance(WallTime now);

  size_t group_count() const { return groups_.size(); }

 private:
  struct Receiver {
    std::string name;
    RouteOptions route;
  };

  Group* FindOrCreate(int receiver, const LiveAlert& alert, WallTime t);
  void Leave(Group& g, LiveAlert& alert, WallTime t);
  // Flushes `g` at its next_flush; may delete it.
  void Flush(Group& g);
  void Notify(Group& g, WallTime t);

  const AlertConfig& config_;
  AlertSink& sink_;
  AlertEngineStats& stats_;
  std::vector<Receiver> receivers_;
  absl::flat_hash_map<std::string, int> receiver_ids_;
  absl::flat_hash_map<std::string, std::unique_ptr<Group>> groups_;
  // No group flushes before this (a lower bound; WallTime::max() when there are no groups).
  WallTime next_due_ = WallTime::max();
};

// A notification's view of `alert`.
NotifiedAlert Snapshot(const LiveAlert& alert, NotifyStatus status, WallTime ends_at);

}  // namespace tailguard::alert_internal

#endif  // TAILGUARD_ALERT_GROUPER_H_
