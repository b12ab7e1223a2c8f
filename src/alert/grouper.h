// Alertmanager-style grouping: alerts into groups per receiver or route node, muting, and
// notifications on group timers.
#ifndef TAILGUARD_ALERT_GROUPER_H_
#define TAILGUARD_ALERT_GROUPER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "alert/route.h"
#include "alert/schedule.h"
#include "tailguard/alert.h"

namespace tailguard::alert_internal {

struct Group;

// Bits of LiveAlert::muted: the reasons it was last found muted for.
enum MuteBits : uint8_t { kMutedSilence = 1, kMutedInhibit = 2, kMutedMaintenance = 4 };

// A (rule, series) in Alert, as the groups see it. Owned by the engine; the groups it is in
// point at it until it is resolved.
struct LiveAlert {
  std::string rule;
  std::string series;
  std::string metric;
  Labels labels;  // sorted by name; includes "alertname" and "severity"
  const Labels* annotations = nullptr;
  Statistic stat = Statistic::kP99;
  Unit unit = Unit::kNanoseconds;
  int tier = 0;
  std::string severity;
  double value = 0;
  double threshold = 0;
  double baseline_p99 = 0;
  WallTime starts_at{};
  std::vector<Group*> groups;  // the groups it fires in
  // Set by Grouper::Place().
  uint64_t route_mute = 0;      // schedule bits of the matched route nodes' mute_during
  uint64_t inhibit_source = 0;  // bit r: matches the source side of inhibition rule r
  uint64_t inhibit_target = 0;  // bit r: matches the target side of inhibition rule r
  bool tracked = false;         // in Grouper's list of firing alerts
  uint8_t muted = 0;            // MuteBits found by the latest flush that looked at it
};

// What a message showed of one firing alert.
struct ShownAlert {
  std::string rule;
  std::string series;
  int tier = 0;
  WallTime starts_at{};
  friend bool operator==(const ShownAlert&, const ShownAlert&) = default;
  friend auto operator<=>(const ShownAlert&, const ShownAlert&) = default;
};

// Who owns a group: a receiver (named by rule tiers or route.receiver) or a route node.
struct GroupOwner {
  bool node = false;
  std::string key;       // the receiver name, or the node path ("route.routes[0]")
  std::string receiver;  // who gets the messages
  RouteOptions route;
  uint64_t mute = 0;  // node: its mute_during as schedule bits
};

// One group: the alerts of one owner that share the owner's group_by label values.
struct Group {
  int owner = 0;
  std::string key;      // {a="x",...}
  std::string map_key;  // owner + key
  Labels group_labels;
  WallTime started{};
  WallTime next_flush{};
  bool notified = false;
  WallTime last_notified{};
  uint64_t sequence = 0;
  std::vector<LiveAlert*> firing;
  std::vector<NotifiedAlert> resolved;  // since the last flush
  std::vector<ShownAlert> shown;        // the firing alerts of the last message, sorted
};

// A group as saved in the engine's state: alerts by (rule, series key).
struct SavedGroup {
  bool node = false;  // GroupOwner::node
  std::string owner;  // GroupOwner::key
  std::string key;
  Labels group_labels;
  WallTime started{};
  WallTime next_flush{};
  bool notified = false;
  WallTime last_notified{};
  uint64_t sequence = 0;
  std::vector<std::pair<std::string, std::string>> firing;
  std::vector<NotifiedAlert> resolved;
  std::vector<ShownAlert> shown;
};

// The algorithm (Alertmanager's dispatcher and notification pipeline, on given time):
//   A group starts when its first alert arrives and is flushed group_wait later, then every
//   group_interval. A flush looks at each firing alert: muted (silenced by the AlertMuter,
//   inhibited by another firing alert, or in a maintenance window of the configuration or of
//   its route nodes) or visible. It notifies when the visible alerts, with their tiers and
//   start times, differ from those its last message showed, or when an alert its last message
//   showed has resolved (or left the group), or when alerts are visible and repeat_interval has
//   passed since its last message. Then it forgets the resolved alerts. A group without firing
//   alerts is removed at its next flush, after a last message if it has a resolution to tell.
// Flushes are processed in time order and stamped with the time they were due.
// Not thread-safe; the engine's thread uses it.
class Grouper {
 public:
  // `config`, `sink`, `stats` and `clock` must outlive the grouper, and `muter` unless null.
  // Receivers in config.receivers keep their route options; any other name gets config.route.
  // Every node of `routes` (built from `config`) becomes an owner.
  Grouper(const AlertConfig& config, const RouteTree& routes, AlertSink& sink,
          AlertEngineStats& stats, const AlertMuter* muter, ScheduleClock& clock);

  // The owner id of receiver `name`, registering it on first use.
  int InternReceiver(std::string_view name);
  // The owner id of route node `node` (an index in RouteTree::nodes()).
  int NodeOwner(int node) const { return node_owners_[node]; }
  const GroupOwner& owner(int id) const { return owners_[id]; }

  // Puts `alert` (its labels and tier set) in one group per owner id in `owners` (its labels
  // decide the group) and takes it out of the groups it was in and no longer belongs to, where
  // it shows as resolved at `t`. `route_mute`: the schedule bits of its matched route nodes.
  void Place(LiveAlert& alert, std::span<const int> owners, uint64_t route_mute, WallTime t);
  // Takes `alert` out of all its groups, resolved at `t`.
  void Resolve(LiveAlert& alert, WallTime t);
  // Flushes every group due at or before `now`.
  void Advance(WallTime now);

  // The groups, for SaveState(), in a stable order.
  std::vector<SavedGroup> Save() const;
  // Adds saved groups whose owner exists. `find` gives the restored alert of (rule, series) or
  // null; `gone` gives the resolved view of an alert that was not restored (nullopt: forget it).
  void Restore(std::span<const SavedGroup> groups,
               const std::function<LiveAlert*(const std::string&, const std::string&)>& find,
               const std::function<std::optional<NotifiedAlert>(const std::string&,
                                                                const std::string&)>& gone);
  // Forgets every group and alert.
  void Clear();

  size_t group_count() const { return groups_.size(); }

 private:
  Group* FindOrCreate(int owner, const LiveAlert& alert, WallTime t);
  void Leave(Group& g, LiveAlert& alert, WallTime t);
  // Flushes `g` at its next_flush; may delete it.
  void Flush(Group& g);
  // Whether `alert` is muted in groups of `owner` at `t`; reports newly muted reasons.
  bool Muted(LiveAlert& alert, const GroupOwner& owner, WallTime t);
  void Report(const LiveAlert& alert, std::string_view reason, std::string detail, WallTime t);
  void Notify(Group& g, WallTime t, std::span<LiveAlert* const> visible,
              std::vector<NotifiedAlert> resolved, std::vector<ShownAlert> shown, bool repeat);

  const AlertConfig& config_;
  AlertSink& sink_;
  AlertEngineStats& stats_;
  const AlertMuter* const muter_;
  ScheduleClock& clock_;
  const Inhibitor inhibitor_;
  const uint64_t maintenance_;  // schedule bits of config.maintenance
  std::vector<GroupOwner> owners_;
  absl::flat_hash_map<std::string, int> receiver_ids_;
  std::vector<int> node_owners_;  // by route tree node index
  absl::flat_hash_map<std::string, std::unique_ptr<Group>> groups_;
  std::vector<LiveAlert*> live_;  // every firing alert (Place()d and not resolved)
  // No group flushes before this (a lower bound; WallTime::max() when there are no groups).
  WallTime next_due_ = WallTime::max();
  // Set by Restore(): the next Advance() skips the flush slots missed while stopped.
  bool catch_up_ = false;
};

// A notification's view of `alert`.
NotifiedAlert Snapshot(const LiveAlert& alert, NotifyStatus status, WallTime ends_at);

}  // namespace tailguard::alert_internal

#endif  // TAILGUARD_ALERT_GROUPER_H_
