// Grouping, de-duplication, muting and notification timing.
#include "alert/grouper.h"

#include <algorithm>
#include <tuple>

#include "alert/selector.h"
#include "common/strings.h"

namespace tailguard::alert_internal {

NotifiedAlert Snapshot(const LiveAlert& alert, NotifyStatus status, WallTime ends_at) {
  NotifiedAlert n;
  n.rule = alert.rule;
  n.series = alert.series;
  n.labels = alert.labels;
  if (alert.annotations != nullptr) n.annotations = *alert.annotations;
  n.status = status;
  n.stat = alert.stat;
  n.unit = alert.unit;
  n.tier = alert.tier;
  n.severity = alert.severity;
  n.value = alert.value;
  n.threshold = alert.threshold;
  n.baseline_p99 = alert.baseline_p99;
  n.starts_at = alert.starts_at;
  n.ends_at = ends_at;
  return n;
}

namespace {

std::string MapKey(const GroupOwner& owner, std::string_view key) {
  return Cat(owner.node ? 'n' : 'r', owner.key, '\x1f', key);
}

}  // namespace

Grouper::Grouper(const AlertConfig& config, const RouteTree& routes, AlertSink& sink,
                 AlertEngineStats& stats, const AlertMuter* muter, ScheduleClock& clock)
    : config_(config),
      sink_(sink),
      stats_(stats),
      muter_(muter),
      clock_(clock),
      inhibitor_(config.inhibit_rules),
      maintenance_(ScheduleMask(config, config.maintenance)) {
  for (const ReceiverOptions& r : config_.receivers) {
    receiver_ids_.emplace(r.name, static_cast<int>(owners_.size()));
    owners_.push_back({false, r.name, r.name, r.route, 0});
  }
  for (const RouteTree::Node& n : routes.nodes()) {
    node_owners_.push_back(static_cast<int>(owners_.size()));
    owners_.push_back({true, n.path, n.effective.receiver, n.effective.options, n.mute});
  }
}

int Grouper::InternReceiver(std::string_view name) {
  std::string key(name);
  auto it = receiver_ids_.find(key);
  if (it != receiver_ids_.end()) return it->second;
  const int id = static_cast<int>(owners_.size());
  owners_.push_back({false, key, key, config_.route, 0});
  receiver_ids_.emplace(std::move(key), id);
  return id;
}

Group* Grouper::FindOrCreate(int owner, const LiveAlert& alert, WallTime t) {
  const RouteOptions& route = owners_[owner].route;
  Labels group_labels;
  if (route.group_by.size() == 1 && route.group_by[0] == "...") {
    group_labels = alert.labels;
  } else {
    for (const std::string& name : route.group_by) {
      group_labels.emplace_back(name, std::string(LabelValue(alert.labels, name)));
    }
  }
  std::string key = FormatLabelSet(group_labels);
  std::string map_key = MapKey(owners_[owner], key);
  auto it = groups_.find(map_key);
  if (it != groups_.end()) return it->second.get();
  auto g = std::make_unique<Group>();
  g->owner = owner;
  g->key = std::move(key);
  g->map_key = map_key;
  g->group_labels = std::move(group_labels);
  g->started = t;
  g->next_flush = t + route.group_wait;
  next_due_ = std::min(next_due_, g->next_flush);
  Group* raw = g.get();
  groups_.emplace(std::move(map_key), std::move(g));
  return raw;
}

void Grouper::Leave(Group& g, LiveAlert& alert, WallTime t) {
  g.firing.erase(std::remove(g.firing.begin(), g.firing.end(), &alert), g.firing.end());
  g.resolved.push_back(Snapshot(alert, NotifyStatus::kResolved, t));
}

void Grouper::Place(LiveAlert& alert, std::span<const int> owners, uint64_t route_mute,
                    WallTime t) {
  alert.route_mute = route_mute;
  inhibitor_.Classify(alert);
  if (!alert.tracked) {
    live_.push_back(&alert);
    alert.tracked = true;
  }
  std::vector<Group*> target;
  target.reserve(owners.size());
  for (int o : owners) {
    Group* g = FindOrCreate(o, alert, t);
    if (std::find(target.begin(), target.end(), g) == target.end()) target.push_back(g);
  }
  for (Group* g : alert.groups) {
    if (std::find(target.begin(), target.end(), g) == target.end()) Leave(*g, alert, t);
  }
  for (Group* g : target) {
    if (std::find(g->firing.begin(), g->firing.end(), &alert) == g->firing.end()) {
      g->firing.push_back(&alert);
      // Back before the group said it left: it never did, as far as the receiver knows.
      std::erase_if(g->resolved, [&](const NotifiedAlert& n) {
        return n.rule == alert.rule && n.series == alert.series;
      });
    }
  }
  alert.groups = std::move(target);
}

void Grouper::Resolve(LiveAlert& alert, WallTime t) {
  for (Group* g : alert.groups) Leave(*g, alert, t);
  alert.groups.clear();
  if (alert.tracked) {
    live_.erase(std::remove(live_.begin(), live_.end(), &alert), live_.end());
    alert.tracked = false;
  }
}

void Grouper::Advance(WallTime now) {
  if (catch_up_) {
    // The first look after Restore(): a group whose flushes were missed while tailguard was down
    // flushes once, at its latest missed slot, instead of replaying each (a burst of stale
    // repeats stamped with old times).
    catch_up_ = false;
    next_due_ = WallTime::max();
    for (auto& [key, g] : groups_) {
      const Duration interval = owners_[g->owner].route.group_interval;
      if (g->next_flush < now && interval > Duration::zero()) {
        g->next_flush += (now - g->next_flush) / interval * interval;
      }
      next_due_ = std::min(next_due_, g->next_flush);
    }
  }
  while (next_due_ <= now) {
    Group* due = nullptr;
    for (auto& [key, g] : groups_) {
      if (due == nullptr || std::tie(g->next_flush, g->owner, g->key) <
                                std::tie(due->next_flush, due->owner, due->key)) {
        due = g.get();
      }
    }
    if (due == nullptr) {
      next_due_ = WallTime::max();
      return;
    }
    if (due->next_flush > now) {
      next_due_ = due->next_flush;
      return;
    }
    Flush(*due);
  }
}

void Grouper::Report(const LiveAlert& alert, std::string_view reason, std::string detail,
                     WallTime t) {
  MutedAlert m;
  m.time = t;
  m.rule = alert.rule;
  m.series = alert.series;
  m.labels = alert.labels;
  m.reason = std::string(reason);
  m.detail = std::move(detail);
  sink_.OnMuted(m);
}

bool Grouper::Muted(LiveAlert& alert, const GroupOwner& owner, WallTime t) {
  const uint64_t active = config_.schedules.empty() ? 0 : clock_.ActiveAt(t);
  // Maintenance as the alert sees it (for reporting) and as this group does: a node's own
  // mute_during, or, for a receiver's group, those of every node the alert matched.
  const uint64_t alert_window = active & (maintenance_ | alert.route_mute);
  const uint64_t group_window =
      active & (maintenance_ | (owner.node ? owner.mute : alert.route_mute));
  const LiveAlert* inhibitor = inhibitor_.InhibitedBy(alert, live_);
  const bool silenced = muter_ != nullptr && muter_->Silenced(alert.labels, t);
  const uint8_t now = static_cast<uint8_t>((silenced ? kMutedSilence : 0) |
                                           (inhibitor != nullptr ? kMutedInhibit : 0) |
                                           (alert_window != 0 ? kMutedMaintenance : 0));
  const uint8_t fresh = now & ~alert.muted;
  alert.muted = now;
  if ((fresh & kMutedSilence) != 0) {
    ++stats_.muted_silence;
    Report(alert, "silence", "", t);
  }
  if ((fresh & kMutedInhibit) != 0) {
    ++stats_.muted_inhibit;
    Report(alert, "inhibit", Cat(inhibitor->rule, ' ', inhibitor->series), t);
  }
  if ((fresh & kMutedMaintenance) != 0) {
    ++stats_.muted_maintenance;
    size_t first = 0;
    while ((alert_window >> first & 1) == 0) ++first;
    Report(alert, "maintenance", config_.schedules[first].name, t);
  }
  return silenced || inhibitor != nullptr || group_window != 0;
}

void Grouper::Flush(Group& g) {
  const WallTime t = g.next_flush;
  const GroupOwner& owner = owners_[g.owner];
  std::vector<LiveAlert*> visible;
  visible.reserve(g.firing.size());
  for (LiveAlert* a : g.firing) {
    if (!Muted(*a, owner, t)) visible.push_back(a);
  }
  std::vector<ShownAlert> shown;
  shown.reserve(visible.size());
  for (const LiveAlert* a : visible) shown.push_back({a->rule, a->series, a->tier, a->starts_at});
  std::sort(shown.begin(), shown.end());
  // A resolution is news only to a receiver that was shown the alert firing.
  std::vector<NotifiedAlert> resolved;
  for (NotifiedAlert& r : g.resolved) {
    const bool was_shown = std::any_of(g.shown.begin(), g.shown.end(), [&](const ShownAlert& s) {
      return s.rule == r.rule && s.series == r.series;
    });
    if (was_shown) resolved.push_back(std::move(r));
  }
  g.resolved.clear();
  const bool changed = shown != g.shown || !resolved.empty();
  if (g.firing.empty()) {
    if (!resolved.empty()) Notify(g, t, visible, std::move(resolved), std::move(shown), false);
    const std::string key = g.map_key;
    groups_.erase(key);  // g is gone
    return;
  }
  const bool repeat_due =
      g.notified && !visible.empty() && t - g.last_notified >= owner.route.repeat_interval;
  // When every alert is muted there is nothing to show: the receiver keeps what it last saw.
  if ((changed && (!visible.empty() || !resolved.empty())) || repeat_due) {
    Notify(g, t, visible, std::move(resolved), std::move(shown), !changed);
  }
  g.next_flush = t + owner.route.group_interval;
}

void Grouper::Notify(Group& g, WallTime t, std::span<LiveAlert* const> visible,
                     std::vector<NotifiedAlert> resolved, std::vector<ShownAlert> shown,
                     bool repeat) {
  const GroupOwner& owner = owners_[g.owner];
  Notification n;
  n.time = t;
  n.receiver = owner.receiver;
  if (owner.node) n.route = owner.key;
  n.group_key = g.key;
  n.group_labels = g.group_labels;
  n.status = visible.empty() ? NotifyStatus::kResolved : NotifyStatus::kFiring;
  n.alerts.reserve(visible.size() + resolved.size());
  for (const LiveAlert* a : visible) n.alerts.push_back(Snapshot(*a, NotifyStatus::kFiring, {}));
  for (NotifiedAlert& r : resolved) n.alerts.push_back(std::move(r));
  n.sequence = ++g.sequence;
  n.repeat = repeat;
  n.idempotency_key = owner.node ? Cat(n.receiver, '|', owner.key, '|', g.key, '|',
                                       g.started.time_since_epoch().count(), '|', n.sequence)
                                 : Cat(n.receiver, '|', g.key, '|',
                                       g.started.time_since_epoch().count(), '|', n.sequence);
  g.shown = std::move(shown);
  g.notified = true;
  g.last_notified = t;
  ++stats_.notifications;
  sink_.OnNotification(n);
}

std::vector<SavedGroup> Grouper::Save() const {
  std::vector<const Group*> order;
  order.reserve(groups_.size());
  for (const auto& [key, g] : groups_) order.push_back(g.get());
  std::sort(order.begin(), order.end(),
            [](const Group* a, const Group* b) { return a->map_key < b->map_key; });
  std::vector<SavedGroup> out;
  out.reserve(order.size());
  for (const Group* g : order) {
    SavedGroup s;
    s.node = owners_[g->owner].node;
    s.owner = owners_[g->owner].key;
    s.key = g->key;
    s.group_labels = g->group_labels;
    s.started = g->started;
    s.next_flush = g->next_flush;
    s.notified = g->notified;
    s.last_notified = g->last_notified;
    s.sequence = g->sequence;
    for (const LiveAlert* a : g->firing) s.firing.emplace_back(a->rule, a->series);
    s.resolved = g->resolved;
    s.shown = g->shown;
    out.push_back(std::move(s));
  }
  return out;
}

void Grouper::Restore(std::span<const SavedGroup> groups,
                      const std::function<LiveAlert*(const std::string&, const std::string&)>& find,
                      const std::function<std::optional<NotifiedAlert>(const std::string&,
                                                                       const std::string&)>& gone) {
  for (const SavedGroup& s : groups) {
    int owner = -1;
    if (s.node) {
      for (int id : node_owners_) {
        if (owners_[id].key == s.owner) owner = id;
      }
    } else if (auto it = receiver_ids_.find(s.owner); it != receiver_ids_.end()) {
      owner = it->second;
    }
    if (owner < 0) continue;  // its receiver or route node is no longer configured
    std::string map_key = MapKey(owners_[owner], s.key);
    if (groups_.contains(map_key)) continue;  // a duplicate in a hand-made state
    auto g = std::make_unique<Group>();
    g->owner = owner;
    g->key = s.key;
    g->map_key = map_key;
    g->group_labels = s.group_labels;
    g->started = s.started;
    g->next_flush = s.next_flush;
    g->notified = s.notified;
    g->last_notified = s.last_notified;
    g->sequence = s.sequence;
    g->resolved = s.resolved;
    g->shown = s.shown;
    for (const auto& [rule, series] : s.firing) {
      if (LiveAlert* a = find(rule, series)) {
        if (std::find(g->firing.begin(), g->firing.end(), a) != g->firing.end()) continue;
        g->firing.push_back(a);
        a->groups.push_back(g.get());
      } else if (std::optional<NotifiedAlert> n = gone(rule, series)) {
        g->resolved.push_back(*std::move(n));
      }
    }
    next_due_ = std::min(next_due_, g->next_flush);
    groups_.emplace(std::move(map_key), std::move(g));
  }
  catch_up_ = !groups_.empty();
}

void Grouper::Clear() {
  for (LiveAlert* a : live_) {
    a->groups.clear();
    a->tracked = false;
  }
  live_.clear();
  groups_.clear();
  next_due_ = WallTime::max();
}

}  // namespace tailguard::alert_internal
