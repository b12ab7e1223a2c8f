// Grouping, de-duplication and notification timing.
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
  n.tier = alert.tier;
  n.severity = alert.severity;
  n.value = alert.value;
  n.threshold = alert.threshold;
  n.baseline_p99 = alert.baseline_p99;
  n.starts_at = alert.starts_at;
  n.ends_at = ends_at;
  return n;
}

Grouper::Grouper(const AlertConfig& config, AlertSink& sink, AlertEngineStats& stats)
    : config_(config), sink_(sink), stats_(stats) {
  for (const ReceiverOptions& r : config_.receivers) {
    receiver_ids_.emplace(r.name, static_cast<int>(receivers_.size()));
    receivers_.push_back({r.name, r.route});
  }
}

int Grouper::Intern(std::string_view name) {
  std::string key(name);
  auto it = receiver_ids_.find(key);
  if (it != receiver_ids_.end()) return it->second;
  const int id = static_cast<int>(receivers_.size());
  receivers_.push_back({key, config_.route});
  receiver_ids_.emplace(std::move(key), id);
  return id;
}

Group* Grouper::FindOrCreate(int receiver, const LiveAlert& alert, WallTime t) {
  const RouteOptions& route = receivers_[receiver].route;
  Labels group_labels;
  if (route.group_by.size() == 1 && route.group_by[0] == "...") {
    group_labels = alert.labels;
  } else {
    for (const std::string& name : route.group_by) {
      group_labels.emplace_back(name, std::string(LabelValue(alert.labels, name)));
    }
  }
  std::string key = FormatLabelSet(group_labels);
  std::string map_key = Cat(receiver, '\x1f', key);
  auto it = groups_.find(map_key);
  if (it != groups_.end()) return it->second.get();
  auto g = std::make_unique<Group>();
  g->receiver = receiver;
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
  g.changed = true;
}

void Grouper::Place(LiveAlert& alert, std::span<const int> receivers, WallTime t) {
  std::vector<Group*> target;
  target.reserve(receivers.size());
  for (int r : receivers) {
    Group* g = FindOrCreate(r, alert, t);
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
    g->changed = true;
  }
  alert.groups = std::move(target);
}

void Grouper::Resolve(LiveAlert& alert, WallTime t) {
  for (Group* g : alert.groups) Leave(*g, alert, t);
  alert.groups.clear();
}

void Grouper::Advance(WallTime now) {
  while (next_due_ <= now) {
    Group* due = nullptr;
    for (auto& [key, g] : groups_) {
      if (due == nullptr || std::tie(g->next_flush, g->receiver, g->key) <
                                std::tie(due->next_flush, due->receiver, due->key)) {
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

void Grouper::Flush(Group& g) {
  const WallTime t = g.next_flush;
  const RouteOptions& route = receivers_[g.receiver].route;
  const bool firing = !g.firing.empty();
  if (firing || g.notified) {
    const bool repeat_due = firing && g.notified && t - g.last_notified >= route.repeat_interval;
    if (g.changed || repeat_due) Notify(g, t);
  }
  if (!firing) {
    const std::string key = g.map_key;
    groups_.erase(key);  // g is gone
    return;
  }
  g.next_flush = t + route.group_interval;
}

void Grouper::Notify(Group& g, WallTime t) {
  Notification n;
  n.time = t;
  n.receiver = receivers_[g.receiver].name;
  n.group_key = g.key;
  n.group_labels = g.group_labels;
  n.status = g.firing.empty() ? NotifyStatus::kResolved : NotifyStatus::kFiring;
  n.alerts.reserve(g.firing.size() + g.resolved.size());
  for (const LiveAlert* a : g.firing) n.alerts.push_back(Snapshot(*a, NotifyStatus::kFiring, {}));
  for (NotifiedAlert& r : g.resolved) n.alerts.push_back(std::move(r));
  n.sequence = ++g.sequence;
  n.repeat = !g.changed;
  n.idempotency_key =
      Cat(n.receiver, '|', g.key, '|', g.started.time_since_epoch().count(), '|', n.sequence);
  g.resolved.clear();
  g.changed = false;
  g.notified = true;
  g.last_notified = t;
  ++stats_.notifications;
  sink_.OnNotification(n);
}

}  // namespace tailguard::alert_internal
