// The control plane: everything that analyses, keeps, tells and shows, apart from the data path
// that moves requests. It owns the live analysis loop (and through it the one analyzer), the
// event store and its lock, the per-minute history, the alert journal, the delivery worker, the
// OTLP exporter and the API (/metrics, /healthz, /readyz, /api/v1/...).
//
// It is built from its own configuration (ControlPlaneConfig) and a registry to analyse, and
// runs without a gateway: the gateway builds one beside its data plane and hands it requests for
// the API; `tailguard watch` (a Prometheus source) and an embedding server build their own.
// Nothing here is on the data path: the gateway's workers only record into the registry, count
// into atomics and queue spans, and never wait on anything this class runs.
#ifndef TAILGUARD_SERVER_CONTROL_PLANE_H_
#define TAILGUARD_SERVER_CONTROL_PLANE_H_

#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/api.h"
#include "server/gateway_config.h"
#include "server/live_loop.h"
#include "server/stats.h"
#include "tailguard/alert.h"
#include "tailguard/clock.h"
#include "tailguard/registry.h"

namespace tailguard::store {
class EventStore;
class HistoryStore;
class StoreLock;
}  // namespace tailguard::store
namespace tailguard::notify {
class AlertJournal;
class DeliveryWorker;
class HttpSender;
}  // namespace tailguard::notify

namespace tailguard::server {

class OtlpExporter;

struct ControlPlaneOptions {
  ControlPlaneConfig config;
  // What the live loop evaluates, already loaded: config.rules_file is the caller's to read (the
  // gateway's LoadGatewayConfig resolves it; the built-in DefaultAlertRules() without one).
  AlertConfig rules;
  // What it analyses; borrowed, must outlive the control plane. Its windows' slot must be
  // config.tick.
  Registry* registry = nullptr;
  // Per-route status counters, for the error ratio of each route's total; borrowed, may be null
  // (no error ratios).
  RouteCounterTable* routes = nullptr;
  // Delivery's clock; nullptr: Clock::Real(). The loop reads the registry's.
  const Clock* clock = nullptr;
  std::FILE* log = stderr;  // startup, alert transitions, notifications; nullptr for none
  // Where the API is reached ("127.0.0.1:8080"), for the links in alert messages when
  // config.external_url is empty, and for the host names the API answers to.
  std::string address;
  // What the API shows of the data plane, if there is one: its counters, upstreams, model
  // backend, readiness and extra collectors. The control plane fills in the rest (registry,
  // loop, store, journal, delivery, OTLP, token, host names, start time, retention).
  ApiSources api;
  // Sample the hardware signals (LiveLoopOptions::host_signals). Default off; `serve` and
  // `demo` turn it on.
  bool host_signals = false;
};

class ControlPlane {
 public:
  // Opens the store (InvalidArgument or Unavailable, saying which field: a store another
  // process holds, a file that is not a store) and builds the rest; nothing runs yet.
  static absl::StatusOr<std::unique_ptr<ControlPlane>> Create(ControlPlaneOptions options);
  ~ControlPlane();
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  // Starts the delivery thread and, with `run_loop`, the live loop's thread (a tick every
  // config.tick). Without it, the owner calls loop().Tick() (tests, offline drivers).
  void Start(bool run_loop);
  // The loop's last tick, then delivery stops (an attempt in flight is cut short and stays
  // pending for the next start). Idempotent; the destructor calls it.
  void Stop();
  // Flushes the spans still queued, for at most `budget`.
  void ShutdownTracing(Duration budget);

  LiveLoop& loop() { return *loop_; }
  const Api& api() const { return *api_; }
  // The span exporter; null without tracing.endpoint.
  OtlpExporter* otlp() { return otlp_.get(); }
  // Null without store.path.
  store::EventStore* store() { return store_.get(); }

 private:
  ControlPlane() = default;

  std::FILE* log_ = nullptr;
  // The rules, which the journal and delivery keep a reference to: they live as long as this.
  AlertConfig rules_;
  // Held while it runs: no second control plane on the same store (store/store_lock.h).
  std::unique_ptr<store::StoreLock> store_lock_;
  // The alert pipeline's persistence and delivery; null without store.path. Declared before
  // the loop, so the loop (which uses the journal) goes first.
  std::unique_ptr<store::EventStore> store_;
  std::unique_ptr<store::HistoryStore> history_;
  std::unique_ptr<notify::HttpSender> sender_;
  std::unique_ptr<notify::DeliveryWorker> delivery_;
  std::unique_ptr<notify::AlertJournal> journal_;
  std::unique_ptr<LiveLoop> loop_;
  std::unique_ptr<OtlpExporter> otlp_;
  std::unique_ptr<Api> api_;
  bool stopped_ = false;
};

}  // namespace tailguard::server

#endif  // TAILGUARD_SERVER_CONTROL_PLANE_H_
