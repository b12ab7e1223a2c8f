// The alert journal (the SQLite event store and the delivery outbox) as a subscriber of the
// analyzer: transitions, notifications, mutes and actions go to it as they happen.
#ifndef TAILGUARD_ANALYZE_JOURNAL_SUBSCRIBER_H_
#define TAILGUARD_ANALYZE_JOURNAL_SUBSCRIBER_H_

#include <string>

#include "alert/notify/journal.h"
#include "common/strings.h"
#include "tailguard/analyzer.h"

namespace tailguard::analyze {

class JournalSubscriber final : public Subscriber {
 public:
  // `journal` must outlive the subscriber.
  explicit JournalSubscriber(notify::AlertJournal& journal) : journal_(journal) {}

  void OnAlertEvent(const AlertEvent& e) override { journal_.OnEvent(e); }
  void OnNotification(const Notification& n) override { journal_.OnNotification(n); }
  void OnMuted(const MutedAlert& m) override { journal_.OnMuted(m); }
  void OnAction(const ActionRecord& a) override {
    // "recorded only: ..." says it already; "applied: breaker opened", "refused: ...".
    journal_.OnAction(a.action, a.cause,
                      a.outcome.decision == ActionDecision::kRecorded
                          ? a.outcome.detail
                          : Cat(ActionDecisionName(a.outcome.decision), ": ", a.outcome.detail));
  }

 private:
  notify::AlertJournal& journal_;
};

}  // namespace tailguard::analyze

#endif  // TAILGUARD_ANALYZE_JOURNAL_SUBSCRIBER_H_
