// tailguard's open-loop HTTP load generator as a library: the `tailguard loadgen` command and
// `tailguard demo` drive it. Requests go out on schedule whatever the server does, latency is
// measured from each request's intended send time (no coordinated omission), and the result is
// a Report. See docs/loadgen.md.
//
//   LoadgenOptions options;
//   options.url = "http://127.0.0.1:8080/v2/models/fraud/infer";
//   options.method = "POST";
//   options.body = R"({"inputs": []})";
//   options.phases = {ConstantPhase(std::chrono::seconds(30), 1000)};
//   absl::StatusOr<std::unique_ptr<Loadgen>> lg = Loadgen::Create(std::move(options));
//   absl::StatusOr<Report> report = (*lg)->Run();  // blocks for about 30 s
//   std::cout << FormatReportText(*report);
#ifndef TAILGUARD_LOADGEN_LOADGEN_H_
#define TAILGUARD_LOADGEN_LOADGEN_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "loadgen/dispatcher.h"
#include "loadgen/report.h"
#include "loadgen/scenario.h"
#include "loadgen/schedule.h"
#include "tailguard/clock.h"
#include "tailguard/histogram.h"

namespace tailguard::loadgen {

// An http:// URL split up.
struct HttpTarget {
  std::string host;  // a name or an address; IPv6 without brackets
  uint16_t port = 80;
  std::string path = "/";  // path and query

  // "http://host:port/path".
  std::string ToString() const;
};

// Parses "http://host[:port][/path]" (also without "http://"). InvalidArgument saying what is
// wrong for anything else; https:// is refused with a hint (no TLS).
absl::StatusOr<HttpTarget> ParseHttpUrl(std::string_view url);

// Which request the generator is asked for.
struct RequestContext {
  uint32_t phase = 0;           // index into LoadgenOptions::phases
  std::string_view phase_name;  // its name, or "phase N"
  uint64_t sequence = 0;        // 0, 1, 2, ... over the run
};

// A request as it will be sent. The Host header is added by the client.
struct HttpRequest {
  std::string method;
  std::string path;  // path and query, starting with '/'
  std::vector<Header> headers;
  std::string body;
};

// Changes a request before it is sent: receives the request the options and the phase describe
// and may change anything in it (body, path, headers, method). Called on an I/O thread just
// before the request goes out; must be thread-safe when LoadgenOptions::threads > 1, and quick
// (its time counts in the request's latency).
using RequestGenerator = std::function<void(const RequestContext& context, HttpRequest& request)>;

// What the run looks like now: passed to the progress callback once per interval.
struct ProgressUpdate {
  Duration elapsed{};   // since the start of the run
  Duration interval{};  // length of the interval just ended
  uint32_t phase = 0;   // the phase the latest due request belongs to
  std::string phase_name;
  Counts total;  // cumulative
  uint64_t in_flight = 0;
  uint64_t queued = 0;
  double rate = 0;           // requests sent per second over the interval
  double intended_rate = 0;  // requests due per second over the interval
  uint64_t p50_ns = 0;       // over the interval's completions
  uint64_t p99_ns = 0;
  const Histogram* interval_latency = nullptr;  // the interval's completions; valid during the call
  bool final = false;                           // the last update, after the run
};

using ProgressCallback = std::function<void(const ProgressUpdate& update)>;

// How to run. Every field has a default except the URL and the phases.
struct LoadgenOptions {
  // Target "http://host:port/path". Required.
  std::string url;
  // The request, before phase overrides and the generator. A body with method GET is sent as is.
  std::string method = "GET";
  std::vector<Header> headers;
  std::string body;
  // The rate over time. Required: at least one phase, e.g. {ConstantPhase(30s, 1000)}.
  std::vector<Phase> phases;
  // Connections to the target, split over the threads; at most this many requests in flight.
  int connections = 64;
  // I/O threads, each with its own connections, queue and share of the schedule. 1 is enough for
  // tens of thousands of requests per second on loopback.
  int threads = 1;
  // The most a request may take from its intended send time, queue wait included; then it is
  // counted as a timeout (with its latency).
  Duration timeout = std::chrono::seconds(5);
  // Requests that may wait for a busy connection (over all threads); beyond that they are
  // dropped and counted.
  size_t max_queue = 10000;
  // Seed of the Poisson arrival times.
  uint64_t seed = 1;
  // Optional: changes requests per phase or per request.
  RequestGenerator generator;
  // Optional: called on the thread that called Run() every progress_interval, and once more at
  // the end with final = true.
  ProgressCallback progress;
  Duration progress_interval = std::chrono::seconds(1);
};

// Checks the options without touching the network: InvalidArgument saying which field is wrong
// and how to fix it.
absl::Status ValidateOptions(const LoadgenOptions& options);

// Runs a load test. Run() is called once, from one thread; Stop() from any thread.
class Loadgen {
 public:
  // Validates the options (InvalidArgument) and resolves the host (Unavailable when it does not
  // resolve). Opens no connection yet.
  static absl::StatusOr<std::unique_ptr<Loadgen>> Create(LoadgenOptions options);
  ~Loadgen();

  Loadgen(const Loadgen&) = delete;
  Loadgen& operator=(const Loadgen&) = delete;

  // Opens the connections, runs the schedule, waits for the last request (at most the timeout
  // after the last intended send time) and returns the report. Unavailable when not a single
  // connection could be opened (nothing listens there, say); FailedPrecondition when called
  // twice. After Stop() it returns the report of what completed, with stopped = true.
  absl::StatusOr<Report> Run();

  // Ends Run() soon (within milliseconds): nothing more is sent and requests in flight are
  // abandoned. Thread-safe; may be called before, during or after Run().
  void Stop();

  struct Impl;

 private:
  explicit Loadgen(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tailguard::loadgen

#endif  // TAILGUARD_LOADGEN_LOADGEN_H_
