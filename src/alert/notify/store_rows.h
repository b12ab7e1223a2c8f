// The alert engine's output as the event store's rows: the one place that says how an AlertEvent
// and a Notification are stored (the store knows no alert types).
#ifndef TAILGUARD_ALERT_NOTIFY_STORE_ROWS_H_
#define TAILGUARD_ALERT_NOTIFY_STORE_ROWS_H_

#include "store/event_store.h"
#include "tailguard/alert.h"

namespace tailguard::notify {

// `e` as EventStore::RecordEvent() (and RecordAction(), for its cause) takes it: pre_alert starts
// an episode; fire, escalate and deescalate update it, into alert or pre_alert as e.to_state;
// no_data sets its value; cancel and resolve end it (cancelled, resolved). Kind, states and
// statistic go by name (AlertEventKindName, AlertStateName, StatisticName).
store::TransitionRow StoreRow(const AlertEvent& e);

// `n` as EventStore::Enqueue() takes it, statuses by name (NotifyStatusName).
store::NotificationRow StoreRow(const Notification& n);

}  // namespace tailguard::notify

#endif  // TAILGUARD_ALERT_NOTIFY_STORE_ROWS_H_
