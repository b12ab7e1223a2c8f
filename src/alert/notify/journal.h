// The alert journal: what the alert engine reports (transitions, notifications, mutes) and the
// actions the analyzer took go to the SQLite event store, each notification rendered for its
// receiver and put in the outbox before anything is sent, together with the engine's state, one
// transaction per tick.
#ifndef TAILGUARD_ALERT_NOTIFY_JOURNAL_H_
#define TAILGUARD_ALERT_NOTIFY_JOURNAL_H_

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "alert/notify/render.h"
#include "alert/notify/silences.h"
#include "store/event_store.h"
#include "tailguard/alert.h"

namespace tailguard::notify {

struct JournalOptions {
  // Links, the instance name and the time zone shown in messages.
  MessageContext context;
  // Ended alerts are archived this long after they ended. 0 disables. Default 7 days.
  Duration archive_after = std::chrono::hours(24 * 7);
  // Most records (events, notifications, mutes) held in memory while the store cannot be
  // written (e.g. a full disk); they are written at the next tick that succeeds. Beyond this the
  // oldest timeline records (transitions, mutes, actions) are dropped and counted; notifications
  // are never dropped. Default 100 000.
  size_t max_pending = 100000;
  // Where problems (a store write that failed, a template that could not be filled) are logged;
  // nullptr for none.
  std::FILE* log = nullptr;
  // Called after a tick's records are committed, when it enqueued deliveries (the delivery
  // worker's Wake()). May be empty.
  std::function<void()> on_enqueued;
};

struct JournalStats {
  std::atomic<uint64_t> events{0};
  std::atomic<uint64_t> notifications{0};  // stored (new idempotency keys)
  std::atomic<uint64_t> duplicates{0};     // notifications whose key was already stored
  std::atomic<uint64_t> muted{0};
  std::atomic<uint64_t> actions{0};
  std::atomic<uint64_t> diagnoses{0};
  std::atomic<uint64_t> render_errors{0};  // stored as failed, with the error
  std::atomic<uint64_t> store_errors{0};   // ticks whose commit failed (retried next tick)
  std::atomic<uint64_t> dropped{0};        // records dropped beyond max_pending
  std::atomic<uint64_t> archived{0};
  std::atomic<uint64_t> state_saves{0};
};

// An AlertSink that journals into an EventStore. Use: BeginTick(now), feed the engine (which
// calls the sink), EndTick(engine). Silences are read from the store at every BeginTick, so a
// silence added by `tailguard alerts silence` in another process applies from the next tick.
//
// Nothing lost: records are buffered during the tick and written at EndTick() in one
// transaction with the engine's state, so after a crash the store holds either the tick's
// notifications and the state that produced them, or neither (the restarted engine then makes
// the same notifications again, with the same idempotency keys, and the outbox keeps one).
//
// Not thread-safe: the alert loop's thread calls it; stats() may be read from any thread.
class AlertJournal final : public AlertSink, public AlertMuter {
 public:
  // Checks every receiver target of `config` (template fields, URLs). InvalidArgument naming the
  // receiver. `store` must outlive the journal.
  static absl::StatusOr<std::unique_ptr<AlertJournal>> Create(const AlertConfig& config,
                                                              store::EventStore& store,
                                                              JournalOptions options);

  // The engine state saved by the last committed tick; nullopt on a fresh store.
  absl::StatusOr<std::optional<std::string>> LoadState();

  // At start, once the engine's state is restored (or not): ends, as abandoned at `now`, the
  // episodes the store holds as active that the engine does not have (`active`: its
  // ActiveAlerts(), empty when no state was restored), e.g. those of a rule removed from the
  // configuration.
  absl::Status Reconcile(const std::vector<ActiveAlert>& active, WallTime now);

  // Starts a tick at `now`: refreshes the silences.
  void BeginTick(WallTime now);
  // Writes the tick's records and `engine`'s state in one transaction; archives ended alerts.
  // On a store error the records stay buffered and the error is logged and counted.
  void EndTick(const AlertEngine& engine);
  // The same with the state already taken (engine.SaveState()), so that the caller can write
  // outside the lock that guards its engine.
  void Commit(const std::string& engine_state);

  // AlertSink
  void OnEvent(const AlertEvent& event) override;
  void OnNotification(const Notification& notification) override;
  void OnMuted(const MutedAlert& muted) override;

  // An action an alert asked for (the analyzer's ActionRecord) and what became of it, one line
  // for the event store (e.g. "applied: breaker opened on route=rank").
  void OnAction(std::string_view action, const AlertEvent& cause, std::string decision);

  // A diagnosis of the alert of (rule, series), written after the tick's events (so after the
  // fire that made the episode).
  void OnDiagnosis(std::string rule, std::string series, store::DiagnosisRow diagnosis);

  // AlertMuter
  bool Silenced(LabelSpan labels, WallTime t) const override;

  const JournalStats& stats() const { return stats_; }
  // Records waiting for a successful commit.
  size_t pending() const { return pending_.size(); }

 private:
  // What a tick produced, written at EndTick().
  struct Record {
    struct Action {
      std::string action;
      AlertEvent cause;
      std::string decision;
    };
    struct Enqueue {
      Notification notification;
      store::OutboxItem item;
    };
    struct Diagnosis {
      std::string rule;
      std::string series;
      store::DiagnosisRow row;
    };
    std::variant<AlertEvent, Enqueue, MutedAlert, Action, Diagnosis> what;
  };
  AlertJournal(const AlertConfig& config, store::EventStore& store, JournalOptions options);
  void Push(Record r);

  store::EventStore& store_;
  const JournalOptions options_;
  absl::flat_hash_map<std::string, ReceiverTarget> targets_;  // by receiver name
  std::deque<Record> pending_;
  std::optional<SilenceSet> silences_;
  absl::TimeZone tz_;
  WallTime now_{};
  WallTime last_archive_{};
  JournalStats stats_;
};

}  // namespace tailguard::notify

#endif  // TAILGUARD_ALERT_NOTIFY_JOURNAL_H_
