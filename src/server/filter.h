// The request-filter seam: an ordered chain of per-route filters that the gateway calls before
// it forwards a request and again once the request is over, with what was measured.
//
// A filter decides with an enum (go on, answer now, refuse), never with HTTP types: the gateway
// writes the answer. The passive health check is the first filter of every proxied route
// (server/health_filter.h); caches, the latency breaker, concurrency limits and shedding come in
// the same way, each a thin filter over an algorithm core in src/mitigate/.
//
// The three calls, in order, for each request that reaches a route:
//   OnRequest   before anything is sent upstream. The first filter that does not say kContinue
//               ends the walk: the filters after it are not called for this request.
//   OnAnswer    once the upstream exchange has a result (an answer's header, or no answer), before
//               the body is relayed (an event stream can take minutes). Only for requests that
//               were forwarded to an upstream: not for those a filter answered, nor on a route
//               served by the built-in model backend.
//   OnComplete  after the answer is written (or the client went away), with the measured outcome.
// OnAnswer and OnComplete go to the filters whose OnRequest was called, last first (as Envoy's
// encoder filters run).
//
// What reaches the chain: every request routed to a route, once its labels are known. A request
// the gateway refuses before that (malformed HTTP, a body that does not parse as the route's
// protocol: 400; a path the local backend does not serve: 404) is answered without it.
//
// Threads: every worker calls the same filter objects at once. A filter keeps its own state
// thread-safe, and none of its calls may block, wait on the control plane or take a lock on the
// common path: they run on the request's thread. The chain itself allocates nothing and locks
// nothing per request; only decisions other than kContinue touch a (relaxed atomic) counter.
#ifndef TAILGUARD_SERVER_FILTER_H_
#define TAILGUARD_SERVER_FILTER_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/collector.h"
#include "server/stats.h"
#include "tailguard/clock.h"

namespace tailguard::server {

// What a filter says about a request before it is forwarded.
enum class FilterDecision : uint8_t {
  kContinue,  // on to the next filter, and then to the upstream
  kRespond,   // answer now with FilterAnswer's status, content type and body (a cache hit)
  kReject,    // refuse with FilterAnswer's status, code and message (shed, breaker open)
};
inline constexpr size_t kFilterDecisions = 3;
const char* FilterDecisionName(FilterDecision d);  // "continue", "respond", "reject"

// A request as the filters see it. Views into the request, valid during the call only.
struct FilterRequest {
  size_t route = 0;  // index of the route in the gateway's configuration
  std::string_view route_name;
  std::string_view method;  // "GET", "POST", ...
  std::string_view path;    // without the query
  // The labels it is recorded under when a filter answers it. (On a local-model route, the
  // backend's answer is recorded under the version that served it, which may differ.)
  std::string_view model, version;
  std::string_view body;
  uint64_t input_size = 0;  // KServe tensor elements, OpenAI prompt characters; 0 when unknown
  MonoTime start{};         // when its header was read
};

// The answer of a filter that says kRespond or kReject. Empty strings allocate nothing: a
// request that every filter lets through costs no allocation here.
struct FilterAnswer {
  int status = 0;  // the HTTP status; 0 on kReject means 503
  // kReject: the error body's machine-readable code ("overloaded") and its message, which says
  // what happened, why, and what to do, as every error of the gateway does.
  std::string code;
  std::string message;
  // kRespond: the body as it is sent, and its type ("application/json" when empty).
  std::string content_type;
  std::string body;
  int retry_after_s = 0;  // > 0: a Retry-After header
};

// One try of an upstream that failed before any answer came (a connect error or timeout, a
// malformed answer, a connection closed without one).
struct UpstreamAttempt {
  size_t upstream = 0;  // index into the gateway's upstreams
  UpstreamError error = UpstreamError::kConnect;
  MonoTime at{};
};

// What the upstream exchange came to, for OnAnswer.
struct UpstreamResult {
  // In the order they happened. Already counted against their upstreams' health by the pool.
  std::span<const UpstreamAttempt> failures;
  size_t answered = SIZE_MAX;                 // the upstream whose answer came; SIZE_MAX: none
  int status = 0;                             // its status
  MonoTime at{};
};

// How a request ended, for OnComplete.
struct FilterOutcome {
  int status = 0;       // what the client was sent; 0: no answer (it went away, a stream broke)
  bool failed = false;  // a 5xx, an upstream error or a broken stream
  Duration latency{};   // from FilterRequest::start to the end of the answer
  Duration upstream_latency{};  // the upstream exchange; zero when it was not reached
  MonoTime end{};
  size_t upstream = SIZE_MAX;  // the upstream that answered; SIZE_MAX: none
  // The answer broke off after its header (a timeout or a reset mid-body): why.
  std::optional<UpstreamError> broke;
  // The filter that answered or refused (its index in the chain); SIZE_MAX: none did.
  size_t decided_by = SIZE_MAX;
  // The answer's body as it was sent, when it was sent whole: not an event stream, not an answer
  // to HEAD, and not an error (the gateway's, or a filter's refusal). What a cache keeps. Valid
  // during the call only.
  std::string_view body;
};

class RequestFilter {
 public:
  virtual ~RequestFilter() = default;
  // A short name, in metrics and logs: "health", "cache", "breaker".
  virtual std::string_view name() const = 0;
  // Whether the request goes on. On kRespond or kReject, fills `answer`.
  virtual FilterDecision OnRequest(const FilterRequest& request, FilterAnswer& answer) = 0;
  virtual void OnAnswer(const FilterRequest& request, const UpstreamResult& result) {}
  virtual void OnComplete(const FilterRequest& request, const FilterOutcome& outcome) {}
};

// The filters of one route, in order. Built before the gateway starts and not changed after;
// the filters are borrowed and must outlive the chain.
class FilterChain {
 public:
  FilterChain() = default;
  FilterChain(const FilterChain&) = delete;
  FilterChain& operator=(const FilterChain&) = delete;
  FilterChain(FilterChain&&) = default;
  FilterChain& operator=(FilterChain&&) = default;

  void Add(RequestFilter* filter);

  // Calls OnRequest on each filter in order until one does not say kContinue, and returns that
  // decision (kContinue when none). `*seen` is how many filters were called; `*decided_by` the
  // index of the one that decided, or SIZE_MAX.
  FilterDecision Decide(const FilterRequest& request, FilterAnswer& answer, size_t* seen,
                        size_t* decided_by) const;
  // OnAnswer on the first `seen` filters, last first.
  void Answered(const FilterRequest& request, const UpstreamResult& result, size_t seen) const;
  // OnComplete on the first `seen` filters, last first.
  void Complete(const FilterRequest& request, const FilterOutcome& outcome, size_t seen) const;

  size_t size() const { return entries_.size(); }
  const RequestFilter& filter(size_t i) const { return *entries_[i]->filter; }
  // How many requests filter `i` answered (kRespond) or refused (kReject). kContinue is not
  // counted: it is every other request, and counting it would cost a shared write per request.
  uint64_t decisions(size_t i, FilterDecision d) const {
    return entries_[i]->decisions[static_cast<size_t>(d)].load(std::memory_order_relaxed);
  }

 private:
  struct Entry {
    RequestFilter* filter = nullptr;
    std::array<std::atomic<uint64_t>, kFilterDecisions> decisions{};
  };
  std::vector<std::unique_ptr<Entry>> entries_;
};

// tailguard_filter_decisions_total{route, filter, decision}: what each route's filters
// answered (respond) or refused (reject). The chains are borrowed and must outlive it.
class FilterChainCollector final : public metrics::Collector {
 public:
  // (route name, its chain), in the order of the routes.
  explicit FilterChainCollector(std::vector<std::pair<std::string, const FilterChain*>> chains)
      : chains_(std::move(chains)) {}
  void Collect(metrics::MetricsWriter& out) const override;

 private:
  const std::vector<std::pair<std::string, const FilterChain*>> chains_;
};

}  // namespace tailguard::server

#endif  // TAILGUARD_SERVER_FILTER_H_
