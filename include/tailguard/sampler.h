// Request sampler: keeps whole request records (stages, input size, status, trace id) at a rate
// that follows traffic, and always the slow and the failed ones.
#ifndef TAILGUARD_SAMPLER_H_
#define TAILGUARD_SAMPLER_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <vector>

#include "tailguard/clock.h"

namespace tailguard {

// The stages of an inference request. kTotal is the whole request.
enum class Stage : uint8_t {
  kTotal = 0,
  kFeatureFetch,
  kPreprocess,
  kInference,
  kPostprocess,
  kFirstToken,  // time from the start of the request to the first streamed token
  // Between two streamed tokens. The series holds every gap; a RequestRecord holds the longest
  // gap of the request (RequestTimer::Token() records both).
  kInterToken,
  kUpstream,  // a gateway's wait for the upstream server: request sent to response received
  kGateway,   // a gateway's own share of the request: total minus upstream
  // Waiting in the model server's queue or dynamic batcher before inference started
  // (Server-Timing "queue"). Last, so that the values above keep their numbers.
  kQueue,
};
inline constexpr int kStageCount = 10;

// "total", "feature_fetch", "preprocess", "inference", "postprocess", "first_token",
// "inter_token", "upstream", "gateway", "queue".
std::string_view StageName(Stage s);

// One request, as the sampler keeps it. Fixed size: copying it never allocates.
struct RequestRecord {
  WallTime start{};
  // Nanoseconds per stage, indexed by Stage; 0 means the stage did not happen.
  std::array<uint64_t, kStageCount> stage_ns{};
  uint64_t input_size = 0;  // e.g. feature-vector width, pixels, prompt tokens
  int status = 0;           // e.g. the HTTP status; 0 when unknown
  bool failed = false;
  // W3C trace id (32 lowercase hex digits) or any caller id, truncated to 32 bytes.
  std::array<char, 32> trace_id{};
  uint8_t trace_id_size = 0;

  uint64_t total_ns() const { return stage_ns[0]; }
  std::string_view trace() const { return {trace_id.data(), trace_id_size}; }
  void set_trace(std::string_view id);
};

// Why a record was kept.
enum class SampleReason : uint8_t { kRate, kSlow, kFailed };

struct SampledRequest {
  RequestRecord record;
  SampleReason reason;
};

// Result of offering a request to the sampler.
enum class SampleDecision : uint8_t { kSkipped, kKept, kDropped };

struct SamplerOptions {
  // Keep every request while traffic is at or below this rate (requests/s). Default 10.
  double keep_all_qps = 10;
  // Keep `high_rate_fraction` of requests at or above this rate. Default 100.
  double high_qps = 100;
  // Fraction kept at high traffic. Default 0.01. Between keep_all_qps and high_qps the fraction
  // falls smoothly (a straight line in log-log: a power law through both ends).
  double high_rate_fraction = 0.01;
  // Most records held until drained; the oldest is evicted beyond it. Allocated up front, about
  // 140 bytes a record. Default 1024.
  size_t capacity = 1024;
};

// Decides per request whether to keep it, and keeps it in a bounded buffer.
//
// Thread-safe. Offer() reads two atomics and a thread-local random state; only a kept request
// touches shared memory, under a mutex held for one record's copy. A slow or failed request
// waits for it (they are always kept); an ordinary sampled one that finds it busy is dropped and
// counted instead. Drain() swaps buffers, so it holds the mutex for O(1). Update() is called by
// the collector once per tick with the current traffic rate and P99. Until the first Update()
// every request is kept.
class Sampler {
 public:
  explicit Sampler(SamplerOptions options = {});

  // Offers a finished request.
  SampleDecision Offer(const RequestRecord& r);

  // Sets the traffic rate (requests/s) that the keep fraction follows, and the P99 (ns) above
  // which a request counts as slow; 0 means no P99 is known yet.
  void Update(double qps, uint64_t p99_ns);

  // The fraction of ordinary requests kept at `qps`.
  static double KeepFraction(double qps, const SamplerOptions& o);
  double keep_fraction() const { return keep_fraction_.load(std::memory_order_relaxed); }

  // Removes and returns every held record, oldest first.
  std::vector<SampledRequest> Drain();
  // Copies the held records, oldest first.
  std::vector<SampledRequest> Snapshot() const;

  uint64_t kept() const;
  // Kept records pushed out of the full buffer before anyone drained them.
  uint64_t evicted() const;
  // Ordinary (rate) samples that met a busy buffer and were not kept.
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

  const SamplerOptions& options() const { return options_; }

 private:
  SampleDecision Keep(const RequestRecord& r, SampleReason reason);
  std::vector<SampledRequest> CopyHeld() const;  // REQUIRES: mu_ held

  const SamplerOptions options_;
  // Written once per tick by the collector and read on every Offer(); relaxed is enough since
  // each is a self-contained number and a tick-old value is fine.
  std::atomic<double> keep_fraction_{1.0};
  std::atomic<uint64_t> slow_ns_{0};
  // Counter of failed try-locks; relaxed, only ever summed for display.
  std::atomic<uint64_t> dropped_{0};

  std::mutex drain_mu_;  // serialises Drain(), which owns spare_ outside mu_
  mutable std::mutex mu_;
  std::vector<SampledRequest> ring_;   // guarded by mu_; fixed size options_.capacity
  std::vector<SampledRequest> spare_;  // guarded by drain_mu_ (swapped with ring_ under both)
  size_t head_ = 0;                    // guarded by mu_; index of the oldest held record
  size_t size_ = 0;                    // guarded by mu_
  uint64_t kept_ = 0;                  // guarded by mu_
  uint64_t evicted_ = 0;               // guarded by mu_
};

}  // namespace tailguard

#endif  // TAILGUARD_SAMPLER_H_
