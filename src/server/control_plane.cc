#include "server/control_plane.h"

#include <unistd.h>

#include <utility>

#include "alert/notify/delivery.h"
#include "alert/notify/http_sender.h"
#include "alert/notify/journal.h"
#include "common/strings.h"
#include "server/otlp.h"
#include "store/event_store.h"
#include "store/history_store.h"
#include "store/store_lock.h"

namespace tailguard::server {

absl::StatusOr<std::unique_ptr<ControlPlane>> ControlPlane::Create(ControlPlaneOptions options) {
  if (options.registry == nullptr) {
    return absl::InvalidArgumentError("control plane: a registry to analyse is needed");
  }
  const ControlPlaneConfig& cfg = options.config;
  const Clock& clock = options.clock != nullptr ? *options.clock : Clock::Real();
  std::unique_ptr<ControlPlane> c(new ControlPlane());
  c->log_ = options.log;
  c->rules_ = std::move(options.rules);
  const AlertConfig& rules = c->rules_;

  LiveLoopOptions loop_options;
  loop_options.tick = cfg.tick;
  loop_options.log = options.log;
  loop_options.host_signals = options.host_signals;
  if (!cfg.store.path.empty()) {
    // One process per store: a second one would deliver every notification twice.
    absl::StatusOr<std::unique_ptr<store::StoreLock>> lock =
        store::StoreLock::Acquire(cfg.store.path);
    if (!lock.ok()) return lock.status();
    c->store_lock_ = std::move(*lock);
    absl::StatusOr<std::unique_ptr<store::EventStore>> store =
        store::EventStore::Open(cfg.store.path);
    if (!store.ok()) {
      return absl::UnavailableError(Cat("store.path: ", store.status().message()));
    }
    c->store_ = std::move(*store);
    notify::JournalOptions journal;
    journal.context.external_url =
        cfg.external_url.empty() ? Cat("http://", options.address) : cfg.external_url;
    char host[256] = {};
    if (gethostname(host, sizeof(host) - 1) == 0) journal.context.instance = host;
    journal.context.time_zone = rules.time_zone;
    journal.archive_after = cfg.store.archive_after;
    journal.log = options.log;
    ControlPlane* raw = c.get();
    journal.on_enqueued = [raw] {
      if (raw->delivery_ != nullptr) raw->delivery_->Wake();
    };
    absl::StatusOr<std::unique_ptr<notify::AlertJournal>> j =
        notify::AlertJournal::Create(rules, *c->store_, std::move(journal));
    if (!j.ok()) return j.status();
    c->journal_ = std::move(*j);
    c->sender_ = notify::NewCurlSender();
    notify::DeliveryOptions delivery;
    delivery.initial_backoff = cfg.delivery.initial_backoff;
    delivery.max_backoff = cfg.delivery.max_backoff;
    delivery.give_up_after = cfg.delivery.give_up_after;
    delivery.log = options.log;
    c->delivery_ =
        std::make_unique<notify::DeliveryWorker>(rules, *c->store_, *c->sender_, clock, delivery);
    loop_options.journal = c->journal_.get();
    absl::StatusOr<std::unique_ptr<store::HistoryStore>> history =
        store::HistoryStore::Open(cfg.store.path);
    if (!history.ok()) {
      return absl::UnavailableError(Cat("store.path: ", history.status().message()));
    }
    c->history_ = std::move(*history);
    loop_options.history = c->history_.get();
    loop_options.history_retention = cfg.store.history_retention;
  }
  absl::StatusOr<std::unique_ptr<LiveLoop>> loop =
      LiveLoop::Create(*options.registry, rules, loop_options, options.routes);
  if (!loop.ok()) return loop.status();
  c->loop_ = std::move(*loop);

  if (!cfg.tracing.endpoint.empty()) {
    absl::StatusOr<std::unique_ptr<OtlpExporter>> otlp = OtlpExporter::Create(cfg.tracing);
    if (!otlp.ok()) {
      return absl::InvalidArgumentError(
          Cat("tracing.otlp_endpoint: ", std::string(otlp.status().message())));
    }
    c->otlp_ = std::move(*otlp);
  }

  ApiSources sources = std::move(options.api);
  sources.registry = options.registry;
  if (sources.clock == nullptr) sources.clock = &clock;
  sources.loop = c->loop_.get();
  sources.routes = options.routes;
  sources.otlp = c->otlp_.get();
  sources.journal = c->journal_.get();
  sources.delivery = c->delivery_.get();
  sources.store = c->store_.get();
  sources.api_token = cfg.api_token;
  sources.allowed_hosts = cfg.allowed_hosts;
  if (!cfg.external_url.empty()) {
    std::string_view authority = cfg.external_url;
    authority.remove_prefix(authority.find("://") + 3);
    authority = authority.substr(0, authority.find('/'));
    sources.allowed_hosts.push_back(HostOfHeader(authority));
  }
  if (char name[256] = {}; gethostname(name, sizeof(name) - 1) == 0 && name[0] != '\0') {
    sources.allowed_hosts.push_back(HostOfHeader(name));
  }
  sources.started_at = options.registry->Now();
  if (c->history_ != nullptr) sources.history_retention = cfg.store.history_retention;
  c->api_ = std::make_unique<Api>(std::move(sources));
  return c;
}

ControlPlane::~ControlPlane() { Stop(); }

void ControlPlane::Start(bool run_loop) {
  if (run_loop) loop_->Start();
  if (delivery_ != nullptr) delivery_->Start();
}

void ControlPlane::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (loop_ != nullptr) loop_->Stop();  // null when Create() failed part way
  // After the loop's last tick: what it enqueued is in the store; an attempt in flight is cut
  // short and stays pending for the next start.
  if (delivery_ != nullptr) delivery_->Stop();
}

void ControlPlane::ShutdownTracing(Duration budget) {
  if (otlp_ != nullptr) otlp_->Shutdown(budget);
}

}  // namespace tailguard::server
