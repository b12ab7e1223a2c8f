#include "alert/notify/journal.h"

#include <utility>
#include <variant>

#include "alert/notify/store_rows.h"
#include "common/strings.h"

namespace tailguard::notify {

absl::StatusOr<std::unique_ptr<AlertJournal>> AlertJournal::Create(const AlertConfig& config,
                                                                   store::EventStore& store,
                                                                   JournalOptions options) {
  for (size_t i = 0; i < config.receivers.size(); ++i) {
    const ReceiverOptions& r = config.receivers[i];
    if (r.target.kind != ReceiverTarget::Kind::kTemplate) continue;
    absl::Status ok = ValidateTemplate(r.target.body_template);
    if (!ok.ok()) {
      return absl::InvalidArgumentError(
          Cat("receivers[", i, "] (", r.name, "): template.", ok.message()));
    }
  }
  return std::unique_ptr<AlertJournal>(new AlertJournal(config, store, std::move(options)));
}

AlertJournal::AlertJournal(const AlertConfig& config, store::EventStore& store,
                           JournalOptions options)
    : store_(store), options_(std::move(options)) {
  for (const ReceiverOptions& r : config.receivers) targets_[r.name] = r.target;
  if (!absl::LoadTimeZone(options_.context.time_zone, &tz_)) tz_ = absl::UTCTimeZone();
}

absl::Status AlertJournal::Reconcile(const std::vector<ActiveAlert>& active, WallTime now) {
  std::vector<store::EventStore::ActiveKey> keep;
  keep.reserve(active.size());
  for (const ActiveAlert& a : active) keep.emplace_back(a.rule, a.series);
  absl::StatusOr<int> ended = store_.EndActiveAlertsExcept(keep, now);
  if (ended.ok() && *ended > 0 && options_.log != nullptr) {
    std::fprintf(options_.log,
                 "tailguard: alert store: %d alert(s) active in the store but not in the alert "
                 "engine (its state was not restored, or their rule changed) marked abandoned\n",
                 *ended);
  }
  return ended.status();
}

absl::StatusOr<std::optional<std::string>> AlertJournal::LoadState() {
  return store_.LoadEngineState();
}

void AlertJournal::BeginTick(WallTime now) {
  now_ = now;
  absl::StatusOr<SilenceSet> active = ActiveSilences(store_, now);
  if (active.ok()) {
    silences_ = *std::move(active);
  } else if (options_.log != nullptr) {
    // The previous silences stay in force.
    std::fprintf(options_.log, "tailguard: alert store: reading silences: %s\n",
                 std::string(active.status().message()).c_str());
  }
}

bool AlertJournal::Silenced(LabelSpan labels, WallTime t) const {
  return silences_.has_value() && silences_->Matches(labels, t);
}

void AlertJournal::Push(Record r) {
  pending_.push_back(std::move(r));
  if (pending_.size() <= options_.max_pending) return;
  // Over the bound (the store has been failing for a while): drop the oldest timeline record.
  // Notifications are never dropped: the engine's saved state will count them as made, so a
  // dropped one would never be made again.
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (!std::holds_alternative<Record::Enqueue>(it->what)) {
      pending_.erase(it);
      stats_.dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
}

void AlertJournal::OnEvent(const AlertEvent& event) { Push({event}); }

void AlertJournal::OnAction(std::string_view action, const AlertEvent& cause,
                            std::string decision) {
  Push({Record::Action{std::string(action), cause, std::move(decision)}});
}

void AlertJournal::OnMuted(const MutedAlert& muted) { Push({muted}); }

void AlertJournal::OnDiagnosis(std::string rule, std::string series, store::DiagnosisRow d) {
  Push({Record::Diagnosis{std::move(rule), std::move(series), std::move(d)}});
}

void AlertJournal::OnNotification(const Notification& n) {
  store::OutboxItem item;
  item.idempotency_key = n.idempotency_key;
  item.receiver = n.receiver;
  item.group_key = n.group_key;
  item.status = std::string(NotifyStatusName(n.status));
  item.summary = Summary(n, tz_);
  item.created = n.time;
  item.next_attempt = n.time;
  auto t = targets_.find(n.receiver);
  const bool send = t != targets_.end() && t->second.kind != ReceiverTarget::Kind::kNone &&
                    (n.status == NotifyStatus::kFiring || t->second.send_resolved);
  if (!send) {
    item.state = store::OutboxItem::State::kSkipped;
    item.last_error = t == targets_.end() || t->second.kind == ReceiverTarget::Kind::kNone
                          ? "receiver has no target: recorded only"
                          : "resolved messages are not sent to this receiver (send_resolved)";
  } else {
    absl::StatusOr<HttpRequest> request = Render(t->second, n, options_.context);
    if (request.ok()) {
      item.method = request->method;
      item.url = request->url;
      item.headers = request->headers;
      item.body = request->body;
    } else {
      stats_.render_errors.fetch_add(1, std::memory_order_relaxed);
      item.state = store::OutboxItem::State::kFailed;
      item.last_error = Cat("could not render the message: ", request.status().message());
      if (options_.log != nullptr) {
        std::fprintf(options_.log, "tailguard: notify %s: %s\n", n.receiver.c_str(),
                     item.last_error.c_str());
      }
    }
  }
  Push({Record::Enqueue{n, std::move(item)}});
}

void AlertJournal::EndTick(const AlertEngine& engine) { Commit(engine.SaveState()); }

void AlertJournal::Commit(const std::string& state) {
  uint64_t events = 0, notifications = 0, duplicates = 0, muted = 0, actions = 0, diagnoses = 0;
  bool wake = false;
  absl::Status written = store_.RunInTransaction([&]() -> absl::Status {
    for (const Record& r : pending_) {
      absl::Status s;
      if (const auto* e = std::get_if<AlertEvent>(&r.what)) {
        s = store_.RecordEvent(StoreRow(*e));
        ++events;
      } else if (const auto* q = std::get_if<Record::Enqueue>(&r.what)) {
        bool inserted = false;
        absl::StatusOr<int64_t> id = store_.Enqueue(StoreRow(q->notification), q->item, &inserted);
        s = id.status();
        if (inserted) {
          ++notifications;
          if (q->item.state == store::OutboxItem::State::kPending) wake = true;
        } else {
          ++duplicates;
        }
      } else if (const auto* m = std::get_if<MutedAlert>(&r.what)) {
        s = store_.RecordMuted(m->time, m->rule, m->series,
                               m->detail.empty() ? m->reason : Cat(m->reason, ": ", m->detail));
        ++muted;
      } else if (const auto* a = std::get_if<Record::Action>(&r.what)) {
        s = store_.RecordAction(a->cause.time, a->action, StoreRow(a->cause), a->decision);
        ++actions;
      } else if (const auto* d = std::get_if<Record::Diagnosis>(&r.what)) {
        // An alert the store never had (it cannot be: its fire comes first) is no reason to
        // hold back the tick: that diagnosis is dropped, and counted.
        absl::StatusOr<int64_t> id = store_.RecordDiagnosis(d->rule, d->series, d->row);
        if (id.ok()) {
          ++diagnoses;
        } else if (absl::IsNotFound(id.status())) {
          stats_.dropped.fetch_add(1, std::memory_order_relaxed);
        } else {
          s = id.status();
        }
      }
      if (!s.ok()) return s;
    }
    return store_.SaveEngineState(state, now_);
  });
  if (!written.ok()) {
    stats_.store_errors.fetch_add(1, std::memory_order_relaxed);
    if (options_.log != nullptr) {
      std::fprintf(options_.log,
                   "tailguard: alert store: %s; %zu record(s) kept in memory, retried next tick\n",
                   std::string(written.message()).c_str(), pending_.size());
    }
    return;
  }
  pending_.clear();
  stats_.state_saves.fetch_add(1, std::memory_order_relaxed);
  stats_.events.fetch_add(events, std::memory_order_relaxed);
  stats_.notifications.fetch_add(notifications, std::memory_order_relaxed);
  stats_.duplicates.fetch_add(duplicates, std::memory_order_relaxed);
  stats_.muted.fetch_add(muted, std::memory_order_relaxed);
  stats_.actions.fetch_add(actions, std::memory_order_relaxed);
  stats_.diagnoses.fetch_add(diagnoses, std::memory_order_relaxed);
  if (wake && options_.on_enqueued) options_.on_enqueued();

  if (options_.archive_after > Duration::zero() &&
      now_ - last_archive_ >= std::chrono::minutes(1)) {
    last_archive_ = now_;
    absl::StatusOr<int> archived = store_.ArchiveEndedBefore(now_ - options_.archive_after, now_);
    if (archived.ok()) {
      stats_.archived.fetch_add(static_cast<uint64_t>(*archived), std::memory_order_relaxed);
    } else if (options_.log != nullptr) {
      std::fprintf(options_.log, "tailguard: alert store: archiving: %s\n",
                   std::string(archived.status().message()).c_str());
    }
  }
}

}  // namespace tailguard::notify
