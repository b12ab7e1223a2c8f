// The alert engine: series lookup, threshold selection, the debounce machines, routing, the
// grouper, and saving and restoring all of it.
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <set>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "alert/config_internal.h"
#include "alert/debounce.h"
#include "alert/grouper.h"
#include "alert/route.h"
#include "alert/schedule.h"
#include "alert/selector.h"
#include "alert/state.h"
#include "common/strings.h"

namespace tailguard {
namespace {

using alert_internal::DebounceMachine;
using alert_internal::DebounceSnapshot;
using alert_internal::Grouper;
using alert_internal::LiveAlert;
using alert_internal::RouteTree;
using alert_internal::SavedLive;
using alert_internal::SavedMachine;
using alert_internal::SavedSeries;
using alert_internal::SavedState;
using alert_internal::ScheduleClock;
using alert_internal::SeriesSelector;
using alert_internal::Transition;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One rule's thresholds under one schedule (or its own), scale already applied.
struct ThresholdSet {
  int schedule = -1;  // index in AlertConfig::schedules; -1: the rule's own thresholds
  std::array<Threshold, kMaxAlertTiers> tiers{};
};

// A rule, compiled.
struct RuleRuntime {
  const AlertRule* rule = nullptr;
  SeriesSelector selector;
  int tiers = 0;
  ThresholdSet own;
  std::vector<ThresholdSet> scheduled;  // ascending schedule index
  // Per tier: receiver owner ids and actions of tiers 0..k, without repeats.
  std::vector<std::vector<int>> receivers;
  std::vector<std::vector<std::string>> actions;
};

// One (rule, series).
struct RuleState {
  int rule = 0;
  DebounceMachine machine;
  double value = kNaN;
  double threshold = kNaN;  // of the current tier (tier 0 in Normal)
  // Out of Normal with the statistic missing: the machine holds (AlertEventKind::kNoData).
  // Restored from a saved NaN `value`.
  bool no_data = false;
  std::unique_ptr<LiveAlert> live;  // while in Alert
};

struct SeriesEntry {
  std::string metric;
  Labels labels;  // sorted by name
  std::string key;
  WallTime last_time = WallTime::min();  // latest evaluation, real or for staleness
  WallTime last_seen = WallTime::min();  // latest real observation
  Unit unit = Unit::kNanoseconds;        // of the latest observation
  std::vector<RuleState> states;         // one per rule that selects the series
  std::unique_ptr<SeriesEntry> next;     // another series with the same hash
};

uint64_t Mix(uint64_t x) {  // splitmix64's finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Independent of label order: the per-label hashes are summed.
uint64_t HashSeries(std::string_view metric, LabelSpan labels) {
  const std::hash<std::string_view> h;
  uint64_t acc = Mix(h(metric));
  for (const auto& [name, value] : labels) {
    acc += Mix(h(name) * 0x9e3779b97f4a7c15ULL ^ h(value));
  }
  return Mix(acc);
}

bool SameSeries(const SeriesEntry& e, std::string_view metric, LabelSpan labels) {
  if (e.metric != metric || e.labels.size() != labels.size()) return false;
  for (const auto& [name, value] : labels) {
    auto it = std::lower_bound(e.labels.begin(), e.labels.end(), name,
                               [](const auto& l, const std::string& n) { return l.first < n; });
    if (it == e.labels.end() || it->first != name || it->second != value) return false;
  }
  return true;
}

ThresholdSet Scaled(const ThresholdSet& own, int tiers, int schedule, double scale) {
  ThresholdSet s = own;
  s.schedule = schedule;
  for (int k = 0; k < tiers; ++k) s.tiers[k].value *= scale;
  return s;
}

class AlertEngineImpl final : public AlertEngine {
 public:
  AlertEngineImpl(AlertConfig config, absl::TimeZone zone, AlertSink& sink, const AlertMuter* muter)
      : config_(std::move(config)),
        sink_(sink),
        route_tree_(config_),
        schedule_clock_(zone, config_.schedules),
        grouper_(config_, route_tree_, sink, stats_, muter, schedule_clock_) {
    default_receiver_ =
        config_.default_receiver.empty() ? -1 : grouper_.InternReceiver(config_.default_receiver);
    for (const AlertRule& rule : config_.rules) {
      RuleRuntime r;
      r.rule = &rule;
      r.selector = *SeriesSelector::Compile(rule.matchers);  // validated
      r.tiers = static_cast<int>(rule.tiers.size());
      for (int k = 0; k < r.tiers; ++k) r.own.tiers[k] = rule.tiers[k].above;
      for (size_t i = 0; i < config_.schedules.size(); ++i) {
        const Schedule& s = config_.schedules[i];
        const int index = static_cast<int>(i);
        auto o = std::find_if(rule.schedules.begin(), rule.schedules.end(),
                              [&](const ScheduleOverride& o) { return o.schedule == s.name; });
        if (o != rule.schedules.end() && !o->thresholds.empty()) {
          ThresholdSet set{index, {}};
          for (int k = 0; k < r.tiers; ++k) set.tiers[k] = o->thresholds[k];
          r.scheduled.push_back(set);
        } else if (o != rule.schedules.end()) {
          r.scheduled.push_back(Scaled(r.own, r.tiers, index, o->scale));
        } else if (s.scale) {
          r.scheduled.push_back(Scaled(r.own, r.tiers, index, *s.scale));
        }
      }
      std::vector<int> receivers;
      std::vector<std::string> actions;
      for (const AlertTier& tier : rule.tiers) {
        for (const std::string& name : tier.receivers) {
          const int id = grouper_.InternReceiver(name);
          if (std::find(receivers.begin(), receivers.end(), id) == receivers.end()) {
            receivers.push_back(id);
          }
        }
        for (const std::string& a : tier.actions) {
          if (std::find(actions.begin(), actions.end(), a) == actions.end()) actions.push_back(a);
        }
        r.receivers.push_back(receivers);
        r.actions.push_back(actions);
      }
      rules_.push_back(std::move(r));
    }
  }

  // AlertEngine
  void Observe(const Observation& obs) override {
    ++stats_.observations;
    // Just before this observation: a series that was stale and reports again here is
    // evaluated as missing before, not in place of, its observation at obs.time.
    EvaluateStale(obs.time - Duration(1));
    grouper_.Advance(obs.time - Duration(1));
    SeriesEntry& series = FindOrAdd(obs.metric, obs.labels);
    if (obs.time <= series.last_time) {
      ++stats_.out_of_order;
      return;
    }
    series.last_time = obs.time;
    series.last_seen = obs.time;
    series.unit = obs.unit;
    if (series.states.empty()) return;
    const uint64_t active = config_.schedules.empty() ? 0 : schedule_clock_.ActiveAt(obs.time);
    for (RuleState& state : series.states) Evaluate(series, state, obs, active);
  }

  void Advance(WallTime now) override {
    EvaluateStale(now);
    grouper_.Advance(now);
  }

  // Series with a rule out of Normal that have not been observed for stale_after are evaluated
  // as missing at `now`: their alerts resolve instead of firing forever. Looks at the series
  // at most once per stale_after / 4 of observation time, so it costs little per call.
  void EvaluateStale(WallTime now) {
    const Duration stale = config_.stale_after;
    if (stale <= Duration::zero() || now < next_stale_check_) return;
    next_stale_check_ = now + std::max(stale / 4, Duration(1));
    std::vector<SeriesEntry*> stale_series;
    for (auto& [hash, head] : series_) {
      for (SeriesEntry* e = head.get(); e != nullptr; e = e->next.get()) {
        if (now - e->last_seen < stale || now <= e->last_time) continue;
        bool alerting = false;
        for (const RuleState& st : e->states) alerting |= st.machine.state() != AlertState::kNormal;
        if (alerting) stale_series.push_back(e);
      }
    }
    // In series order, not hash order: a restored engine must do the same as one that never
    // stopped.
    std::sort(stale_series.begin(), stale_series.end(),
              [](const SeriesEntry* a, const SeriesEntry* b) { return a->key < b->key; });
    for (SeriesEntry* e : stale_series) {
      Observation missing;
      missing.time = now;
      missing.unit = e->unit;
      missing.metric = e->metric;
      missing.labels = e->labels;
      e->last_time = now;
      const uint64_t active = config_.schedules.empty() ? 0 : schedule_clock_.ActiveAt(now);
      for (RuleState& st : e->states) {
        if (st.machine.state() != AlertState::kNormal) Evaluate(*e, st, missing, active);
      }
    }
  }

  std::vector<ActiveAlert> ActiveAlerts() const override {
    std::vector<ActiveAlert> out;
    for (const auto& [hash, head] : series_) {
      for (const SeriesEntry* e = head.get(); e != nullptr; e = e->next.get()) {
        for (const RuleState& s : e->states) {
          if (s.machine.state() == AlertState::kNormal) continue;
          const AlertRule& rule = *rules_[s.rule].rule;
          out.push_back({rule.name, e->key, s.machine.state(), s.machine.tier(),
                         rule.tiers[s.machine.tier()].severity, s.machine.since(), s.value,
                         s.threshold, rule.stat, s.no_data, e->unit});
        }
      }
    }
    std::sort(out.begin(), out.end(), [](const ActiveAlert& a, const ActiveAlert& b) {
      return std::tie(a.rule, a.series) < std::tie(b.rule, b.series);
    });
    return out;
  }

  AlertState StateOf(std::string_view rule, std::string_view metric,
                     LabelSpan labels) const override {
    const SeriesEntry* e = FindExisting(metric, labels);
    if (e == nullptr) return AlertState::kNormal;
    for (const RuleState& s : e->states) {
      if (rules_[s.rule].rule->name == rule) return s.machine.state();
    }
    return AlertState::kNormal;
  }

  const AlertEngineStats& stats() const override { return stats_; }
  const AlertConfig& config() const override { return config_; }

  std::string SaveState() const override {
    SavedState state;
    state.next_stale_check = next_stale_check_;
    std::vector<const SeriesEntry*> order;
    for (const auto& [hash, head] : series_) {
      for (const SeriesEntry* e = head.get(); e != nullptr; e = e->next.get()) order.push_back(e);
    }
    std::sort(order.begin(), order.end(),
              [](const SeriesEntry* a, const SeriesEntry* b) { return a->key < b->key; });
    for (const SeriesEntry* e : order) {
      SavedSeries saved;
      for (const RuleState& st : e->states) {
        const DebounceOptions& d = rules_[st.rule].rule->debounce;
        // A machine that would act like a new one from here on need not be kept.
        if (st.live == nullptr &&
            st.machine.IsIdleAt(e->last_time, std::max(d.resolve_after, d.deescalate_after))) {
          continue;
        }
        SavedMachine m;
        m.rule = rules_[st.rule].rule->name;
        m.machine = st.machine.Save();
        m.value = st.value;
        m.threshold = st.threshold;
        if (const LiveAlert* live = st.live.get()) {
          m.live = SavedLive{live->tier,  live->severity,  live->labels,       live->stat,
                             live->value, live->threshold, live->baseline_p99, live->starts_at,
                             live->muted, live->unit};
        }
        saved.machines.push_back(std::move(m));
      }
      if (saved.machines.empty()) continue;
      saved.metric = e->metric;
      saved.labels = e->labels;
      saved.last_time = e->last_time;
      saved.last_seen = e->last_seen;
      saved.unit = e->unit;
      state.series.push_back(std::move(saved));
    }
    state.groups = grouper_.Save();
    return alert_internal::EncodeState(state);
  }

  absl::Status RestoreState(std::string_view bytes) override {
    Clear();
    absl::StatusOr<SavedState> state = alert_internal::DecodeState(bytes);
    if (!state.ok()) return state.status();
    next_stale_check_ = state->next_stale_check;
    using Key = std::pair<std::string, std::string>;  // (rule, series key)
    absl::flat_hash_map<Key, LiveAlert*> restored;
    absl::flat_hash_map<Key, NotifiedAlert> gone;
    std::vector<std::pair<SeriesEntry*, RuleState*>> alerting;
    std::set<const RuleState*> loaded;
    for (const SavedSeries& saved : state->series) {
      SeriesEntry& e = FindOrAdd(saved.metric, saved.labels);
      e.last_time = std::max(e.last_time, saved.last_time);
      e.last_seen = std::max(e.last_seen, saved.last_seen);
      e.unit = saved.unit;
      for (const SavedMachine& m : saved.machines) {
        auto st = std::find_if(e.states.begin(), e.states.end(), [&](const RuleState& s) {
          return rules_[s.rule].rule->name == m.rule;
        });
        if (st == e.states.end()) {
          // The rule is gone or no longer selects the series: its alert has ended for the
          // groups that showed it.
          if (m.live) {
            NotifiedAlert n;
            n.rule = m.rule;
            n.series = e.key;
            n.labels = m.live->labels;
            n.status = NotifyStatus::kResolved;
            n.stat = m.live->stat;
            n.unit = m.live->unit;
            n.tier = m.live->tier;
            n.severity = m.live->severity;
            n.value = m.live->value;
            n.threshold = m.live->threshold;
            n.baseline_p99 = m.live->baseline_p99;
            n.starts_at = m.live->starts_at;
            n.ends_at = e.last_time;
            gone[{m.rule, e.key}] = std::move(n);
          }
          continue;
        }
        if (!loaded.insert(&*st).second) continue;  // listed twice
        const RuleRuntime& r = rules_[st->rule];
        DebounceSnapshot d = m.machine;
        // The rule may have fewer tiers now.
        d.tier = std::min(d.tier, r.tiers - 1);
        for (int k = r.tiers; k < kMaxAlertTiers; ++k) {
          d.streak[k] = 0;
          d.clean_since[k] = WallTime::min();
        }
        st->machine.Load(d);
        st->value = m.value;
        st->threshold = m.threshold;
        st->no_data =
            d.state != AlertState::kNormal && (std::isnan(m.value) || std::isnan(m.threshold));
        if (d.state != AlertState::kAlert) continue;
        auto live = std::make_unique<LiveAlert>();
        live->rule = r.rule->name;
        live->series = e.key;
        live->metric = e.metric;
        live->annotations = &r.rule->annotations;
        live->stat = r.rule->stat;
        live->tier = d.tier;
        live->severity = r.rule->tiers[d.tier].severity;
        live->labels = AlertLabels(e, *r.rule, live->severity);
        live->value = m.live ? m.live->value : m.value;
        live->threshold = m.live ? m.live->threshold : m.threshold;
        live->baseline_p99 = m.live ? m.live->baseline_p99 : kNaN;
        live->starts_at = m.live ? m.live->starts_at : d.since;
        live->muted = m.live ? m.live->muted : 0;
        live->unit = m.live ? m.live->unit : Unit::kNanoseconds;
        restored[{live->rule, live->series}] = live.get();
        st->live = std::move(live);
        alerting.emplace_back(&e, &*st);
      }
    }
    grouper_.Restore(
        state->groups,
        [&](const std::string& rule, const std::string& series) -> LiveAlert* {
          auto it = restored.find(Key(rule, series));
          return it == restored.end() ? nullptr : it->second;
        },
        [&](const std::string& rule, const std::string& series) -> std::optional<NotifiedAlert> {
          auto it = gone.find(Key(rule, series));
          if (it == gone.end()) return std::nullopt;
          return it->second;
        });
    // Route again under this configuration; a no-op when it is the one that saved the state.
    std::sort(alerting.begin(), alerting.end(), [](const auto& a, const auto& b) {
      return std::tie(a.second->live->rule, a.second->live->series) <
             std::tie(b.second->live->rule, b.second->live->series);
    });
    for (auto& [e, st] : alerting) Route(rules_[st->rule], *st->live, e->last_time);
    return absl::OkStatus();
  }

 private:
  void Clear() {
    grouper_.Clear();
    series_.clear();
    next_stale_check_ = WallTime::min();
  }

  // Puts `live` in the groups of its tiers' receivers and of the route nodes its labels match.
  void Route(const RuleRuntime& r, LiveAlert& live, WallTime t) {
    matched_.clear();
    route_tree_.Match(live.metric, live.labels, matched_);
    std::vector<int> owners;
    std::vector<std::string_view> covered;  // receivers that matched nodes group themselves
    uint64_t mute = 0;
    for (int m : matched_) {
      const RouteTree::Node& node = route_tree_.nodes()[m];
      mute |= node.mute;
      if (node.effective.receiver.empty()) continue;
      covered.push_back(node.effective.receiver);
    }
    for (int id : r.receivers[live.tier]) {
      const std::string& name = grouper_.owner(id).receiver;
      if (std::find(covered.begin(), covered.end(), name) == covered.end()) owners.push_back(id);
    }
    for (int m : matched_) {
      if (!route_tree_.nodes()[m].effective.receiver.empty()) {
        owners.push_back(grouper_.NodeOwner(m));
      }
    }
    if (owners.empty() && default_receiver_ >= 0) owners.push_back(default_receiver_);
    grouper_.Place(live, owners, mute, t);
  }

  const SeriesEntry* FindExisting(std::string_view metric, LabelSpan labels) const {
    auto it = series_.find(HashSeries(metric, labels));
    if (it == series_.end()) return nullptr;
    for (const SeriesEntry* e = it->second.get(); e != nullptr; e = e->next.get()) {
      if (SameSeries(*e, metric, labels)) return e;
    }
    return nullptr;
  }

  SeriesEntry& FindOrAdd(std::string_view metric, LabelSpan labels) {
    const uint64_t hash = HashSeries(metric, labels);
    std::unique_ptr<SeriesEntry>* slot = &series_[hash];
    while (*slot != nullptr) {
      if (SameSeries(**slot, metric, labels)) return **slot;
      slot = &(*slot)->next;
    }
    // A new series: match it against every rule once.
    auto e = std::make_unique<SeriesEntry>();
    e->metric = std::string(metric);
    e->labels.assign(labels.begin(), labels.end());
    std::sort(e->labels.begin(), e->labels.end());
    e->key = alert_internal::SeriesKey(metric, labels);
    for (size_t i = 0; i < rules_.size(); ++i) {
      if (rules_[i].selector.Matches(metric, labels)) {
        e->states.emplace_back();
        e->states.back().rule = static_cast<int>(i);
      }
    }
    ++stats_.series;
    *slot = std::move(e);
    return **slot;
  }

  const ThresholdSet& Thresholds(const RuleRuntime& r, uint64_t active) const {
    for (auto it = r.scheduled.rbegin(); it != r.scheduled.rend(); ++it) {
      if ((active >> it->schedule & 1) != 0) return *it;
    }
    return r.own;
  }

  void Evaluate(SeriesEntry& series, RuleState& state, const Observation& obs, uint64_t active) {
    ++stats_.evaluations;
    const RuleRuntime& r = rules_[state.rule];
    const double value = obs.Get(r.rule->stat);
    const ThresholdSet& set = Thresholds(r, active);
    const bool below = r.rule->below;
    std::array<double, kMaxAlertTiers> threshold{};
    int breached = -1;
    for (int k = 0; k < r.tiers; ++k) {
      const Threshold& t = set.tiers[k];
      // A relative threshold needs a positive baseline: a forecast that overshot to zero or
      // below is no baseline, and would turn an improvement into a breach.
      threshold[k] = t.kind == Threshold::Kind::kAbsolute ? t.value
                     : obs.baseline_p99 > 0               ? obs.baseline_p99 * (1 + t.value)
                                                          : Observation::kMissing;
      if (below ? value < threshold[k] : value > threshold[k]) breached = k;  // false for NaN
    }
    // No data (the statistic, or the baseline a relative threshold needs, is missing) says
    // nothing about recovery: out of Normal the machine holds, marked, until data comes back.
    const bool missing = std::isnan(value) || std::isnan(threshold[0]);
    if (state.machine.state() != AlertState::kNormal) {
      if (missing) {
        const bool gap_starts = !state.no_data;
        state.no_data = true;
        state.value = value;
        if (state.live != nullptr) {
          state.live->value = value;
          state.live->baseline_p99 = obs.baseline_p99;
        }
        if (gap_starts) {
          const int tier = state.machine.tier();
          Handle(
              series, state, r, obs, value, threshold, set,
              {AlertEventKind::kNoData, state.machine.state(), state.machine.state(), tier, tier});
        }
        return;
      }
      if (state.no_data) {
        state.no_data = false;
        state.machine.DataResumed(obs.time);
      }
    }
    Transition transitions[DebounceMachine::kMaxTransitions];
    const int n = state.machine.Step(obs.time, breached, r.tiers, r.rule->debounce, transitions);
    state.value = value;
    state.threshold = threshold[std::max(state.machine.tier(), 0)];
    if (state.live != nullptr) {
      state.live->value = value;
      state.live->threshold = state.threshold;
      state.live->baseline_p99 = obs.baseline_p99;
    }
    for (int i = 0; i < n; ++i) {
      Handle(series, state, r, obs, value, threshold, set, transitions[i]);
    }
  }

  void Handle(const SeriesEntry& series, RuleState& state, const RuleRuntime& r,
              const Observation& obs, double value,
              const std::array<double, kMaxAlertTiers>& threshold, const ThresholdSet& set,
              const Transition& t) {
    const int tier = t.to_tier >= 0 ? t.to_tier : t.from_tier;
    AlertEvent e;
    e.time = obs.time;
    e.kind = t.kind;
    e.from_state = t.from_state;
    e.to_state = t.to_state;
    e.from_tier = t.from_tier;
    e.to_tier = t.to_tier;
    e.rule = r.rule->name;
    e.series = series.key;
    e.metric = series.metric;
    e.labels = series.labels;
    e.stat = r.rule->stat;
    e.unit = obs.unit;
    e.severity = r.rule->tiers[tier].severity;
    e.value = value;
    e.threshold = threshold[tier];
    e.baseline_p99 = obs.baseline_p99;
    e.breach_start = state.machine.breach_start();
    if (set.schedule >= 0) e.schedule = config_.schedules[set.schedule].name;
    const bool no_data = t.kind == AlertEventKind::kNoData;
    if (t.to_state == AlertState::kAlert && !no_data) e.actions = r.actions[t.to_tier];
    ++stats_.events;
    sink_.OnEvent(e);
    if (no_data) return;  // the alert, its tier and its routing stay as they were

    if (t.kind == AlertEventKind::kFire) {
      auto live = std::make_unique<LiveAlert>();
      live->rule = r.rule->name;
      live->series = series.key;
      live->metric = series.metric;
      live->annotations = &r.rule->annotations;
      live->stat = r.rule->stat;
      live->unit = obs.unit;
      live->value = value;
      live->threshold = threshold[t.to_tier];
      live->baseline_p99 = obs.baseline_p99;
      live->starts_at = obs.time;
      state.live = std::move(live);
    }
    if (state.live == nullptr) return;
    if (t.kind == AlertEventKind::kResolve) {
      grouper_.Resolve(*state.live, obs.time);
      state.live.reset();
      return;
    }
    if (t.to_state != AlertState::kAlert) return;
    LiveAlert& live = *state.live;
    live.tier = t.to_tier;
    live.severity = r.rule->tiers[t.to_tier].severity;
    live.threshold = threshold[t.to_tier];
    live.labels = AlertLabels(series, *r.rule, live.severity);
    Route(r, live, obs.time);
  }

  // Series labels, then the rule's, "alertname" and "severity", sorted by name.
  static Labels AlertLabels(const SeriesEntry& series, const AlertRule& rule,
                            const std::string& severity) {
    Labels labels = series.labels;
    const auto set = [&](const std::string& name, const std::string& value) {
      for (auto& [n, v] : labels) {
        if (n == name) {
          v = value;
          return;
        }
      }
      labels.emplace_back(name, value);
    };
    for (const auto& [name, value] : rule.labels) set(name, value);
    set("alertname", rule.name);
    set("severity", severity);
    std::sort(labels.begin(), labels.end());
    return labels;
  }

  // Constant after construction.
  const AlertConfig config_;
  AlertSink& sink_;
  const RouteTree route_tree_;
  std::vector<RuleRuntime> rules_;
  int default_receiver_ = -1;  // owner id of route.receiver; -1 for none

  AlertEngineStats stats_;
  ScheduleClock schedule_clock_;
  WallTime next_stale_check_ = WallTime::min();  // EvaluateStale() looks again from here
  Grouper grouper_;
  std::vector<int> matched_;  // Route()'s scratch
  absl::flat_hash_map<uint64_t, std::unique_ptr<SeriesEntry>> series_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<AlertEngine>> AlertEngine::Create(AlertConfig config,
                                                                 AlertSink& sink,
                                                                 const AlertMuter* muter) {
  alert_internal::NormalizeConfig(config);
  if (absl::Status s = ValidateAlertConfig(config); !s.ok()) return s;
  absl::TimeZone zone;
  if (!absl::LoadTimeZone(config.time_zone, &zone)) {
    return absl::InvalidArgumentError(
        Cat("timezone: unknown time zone \"", config.time_zone, "\""));
  }
  return std::unique_ptr<AlertEngine>(new AlertEngineImpl(std::move(config), zone, sink, muter));
}

}  // namespace tailguard
