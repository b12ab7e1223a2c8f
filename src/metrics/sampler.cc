// Sampler: the keep fraction, the decision, and the bounded buffer.
#include "tailguard/sampler.h"

#include <algorithm>
#include <cmath>

namespace tailguard {
namespace {

// A small, fast per-thread generator (splitmix64 seeding an xorshift64*). Seeds differ per thread
// but follow thread creation order, so single-threaded tests see a fixed sequence.
uint64_t NextRandom() {
  static std::atomic<uint64_t> seeds{0x9E3779B97F4A7C15ull};
  thread_local uint64_t state = [] {
    uint64_t z = seeds.fetch_add(0x9E3779B97F4A7C15ull, std::memory_order_relaxed);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (z ^ (z >> 31)) | 1;
  }();
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 0x2545F4914F6CDD1Dull;
}

}  // namespace

std::string_view StageName(Stage s) {
  switch (s) {
    case Stage::kTotal:
      return "total";
    case Stage::kFeatureFetch:
      return "feature_fetch";
    case Stage::kPreprocess:
      return "preprocess";
    case Stage::kInference:
      return "inference";
    case Stage::kPostprocess:
      return "postprocess";
    case Stage::kFirstToken:
      return "first_token";
    case Stage::kInterToken:
      return "inter_token";
    case Stage::kUpstream:
      return "upstream";
    case Stage::kGateway:
      return "gateway";
    case Stage::kQueue:
      return "queue";
  }
  return "unknown";
}

void RequestRecord::set_trace(std::string_view id) {
  trace_id_size = static_cast<uint8_t>(std::min(id.size(), trace_id.size()));
  std::copy_n(id.data(), trace_id_size, trace_id.data());
}

Sampler::Sampler(SamplerOptions options)
    : options_(options),
      ring_(std::max<size_t>(options.capacity, 1)),
      spare_(std::max<size_t>(options.capacity, 1)) {}

double Sampler::KeepFraction(double qps, const SamplerOptions& o) {
  if (!(qps > o.keep_all_qps)) return 1.0;
  if (qps >= o.high_qps) return o.high_rate_fraction;
  // Power law through (keep_all_qps, 1) and (high_qps, high_rate_fraction).
  const double k = std::log(o.high_rate_fraction) / std::log(o.high_qps / o.keep_all_qps);
  return std::pow(qps / o.keep_all_qps, k);
}

void Sampler::Update(double qps, uint64_t p99_ns) {
  keep_fraction_.store(KeepFraction(qps, options_), std::memory_order_relaxed);
  slow_ns_.store(p99_ns, std::memory_order_relaxed);
}

SampleDecision Sampler::Offer(const RequestRecord& r) {
  if (r.failed) return Keep(r, SampleReason::kFailed);
  const uint64_t slow = slow_ns_.load(std::memory_order_relaxed);
  if (slow != 0 && r.total_ns() > slow) return Keep(r, SampleReason::kSlow);
  const double f = keep_fraction_.load(std::memory_order_relaxed);
  // Top 53 bits as a uniform double in [0, 1).
  const double u = static_cast<double>(NextRandom() >> 11) * 0x1.0p-53;
  if (u < f) return Keep(r, SampleReason::kRate);
  return SampleDecision::kSkipped;
}

SampleDecision Sampler::Keep(const RequestRecord& r, SampleReason reason) {
  // Slow and failed requests are always kept: they wait for the lock, which is only ever held
  // for one record's copy (Drain swaps buffers rather than copying under it). Ordinary samples
  // are interchangeable, so one that meets a busy lock is dropped and counted instead.
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  if (reason == SampleReason::kRate) {
    if (!lock.try_lock()) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return SampleDecision::kDropped;
    }
  } else {
    lock.lock();
  }
  if (size_ == ring_.size()) {
    head_ = (head_ + 1) % ring_.size();
    --size_;
    ++evicted_;
  }
  ring_[(head_ + size_) % ring_.size()] = SampledRequest{r, reason};
  ++size_;
  ++kept_;
  return SampleDecision::kKept;
}

std::vector<SampledRequest> Sampler::Drain() {
  std::lock_guard<std::mutex> drain_lock(drain_mu_);
  size_t head;
  size_t size;
  {
    // O(1) under the lock that Offer() takes: swap in the empty spare ring.
    std::lock_guard<std::mutex> lock(mu_);
    std::swap(ring_, spare_);
    head = head_;
    size = size_;
    head_ = 0;
    size_ = 0;
  }
  std::vector<SampledRequest> out;
  out.reserve(size);
  for (size_t i = 0; i < size; ++i) out.push_back(spare_[(head + i) % spare_.size()]);
  return out;
}

std::vector<SampledRequest> Sampler::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return CopyHeld();
}

std::vector<SampledRequest> Sampler::CopyHeld() const {
  std::vector<SampledRequest> out;
  out.reserve(size_);
  for (size_t i = 0; i < size_; ++i) out.push_back(ring_[(head_ + i) % ring_.size()]);
  return out;
}

uint64_t Sampler::kept() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kept_;
}

uint64_t Sampler::evicted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return evicted_;
}

}  // namespace tailguard
