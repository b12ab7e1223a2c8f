// The four quadrants of the field reports' dashboard, and which one a signal belongs to.
#ifndef TAILGUARD_DIAGNOSE_QUADRANT_H_
#define TAILGUARD_DIAGNOSE_QUADRANT_H_

#include <cstdint>
#include <string_view>

namespace tailguard::diagnose {

enum class Quadrant : uint8_t {
  kUnknown,     // a signal none of the rules below names
  kHardware,    // CPU, memory, throttling, pressure, GPU, restarts and OOM kills
  kTraffic,     // request rate, bursts, input sizes, the mix of clients and versions
  kDependency,  // stage timings, feature store and Redis, upstream latency and errors
  kModel,       // per-layer and per-operator timings, versions and graphs, batches, queue wait
};

// "hardware", "traffic", "dependency", "model", "unknown".
std::string_view QuadrantName(Quadrant q);

// What a signal says about an incident.
enum class SignalKind : uint8_t {
  kCause,    // a resource, load, input or model signal: something that makes requests slower
  kSymptom,  // a latency or error signal of what is served: what slows down when a cause acts
};

// The quadrant and kind of a signal from its name: the metric part of "<entity>/<metric>" or a
// metric family with labels, matched on words (case-insensitive), first match wins:
//   model      layer, operator, op=, batch, queue, model_version, graph
//   hardware   cpu, mem, rss, throttl, pressure, psi, gpu, oom, restart, threads, fds, node_
//   traffic    rps, qps, load, workload, request_rate, input_size, size_bytes, burst, net_rx,
//   net_tx dependency stage, redis, feature, upstream, dependency, timeout latency, duration,
//   p50/p90/p99, success, error: kSymptom in the quadrant of its entity's
//              call (dependency); every other match is kCause.
//   Every signal is worse when it rises (more CPU, load, latency) except success, hit, free
//   and available, which are worse when they fall; the ranker only counts the worse direction,
//   since a resource that frees up or latency that drops does not explain an incident.
struct SignalClass {
  Quadrant quadrant = Quadrant::kUnknown;
  SignalKind kind = SignalKind::kCause;
  bool higher_is_worse = true;
};
SignalClass ClassifySignal(std::string_view series);

// The entity of "<entity>/<metric>" (the text before the first '/'), or the whole name (also for
// a metric family with labels, name{label="..."}).
std::string_view EntityOf(std::string_view series);

// How a signal's values read, from its metric family's Prometheus unit suffix: "seconds"
// (name_seconds), "bytes" (name_bytes), else "count" (rates, millicores, ratios, sizes as counts).
// The diagnosis keeps every value as its metric gives it, so this is its unit too.
const char* UnitNameOf(std::string_view series);

}  // namespace tailguard::diagnose

#endif  // TAILGUARD_DIAGNOSE_QUADRANT_H_
