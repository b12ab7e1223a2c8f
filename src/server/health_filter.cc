#include "server/health_filter.h"

#include <algorithm>
#include <utility>

#include "common/format.h"
#include "common/strings.h"

namespace tailguard::server {

PassiveHealthFilter::PassiveHealthFilter(std::string route_name,
                                         const std::vector<std::unique_ptr<UpstreamState>>& all,
                                         std::vector<size_t> route, const Clock& clock)
    : route_name_(std::move(route_name)), all_(all), route_(std::move(route)), clock_(clock) {}

FilterDecision PassiveHealthFilter::OnRequest(const FilterRequest&, FilterAnswer& answer) {
  const MonoTime now = clock_.MonotonicNow();
  for (size_t u : route_) {
    if (all_[u]->Available(now) || all_[u]->ProbeDue(now)) return FilterDecision::kContinue;
  }
  Refuse(answer);
  return FilterDecision::kReject;
}

void PassiveHealthFilter::Refuse(FilterAnswer& answer) {
  const MonoTime now = clock_.MonotonicNow();
  Duration wait = Duration::max();
  for (size_t u : route_) {
    wait = std::min(wait, all_[u]->UntilNextProbe(now));
    Add(all_[u]->probes_skipped);
  }
  answer.status = 502;
  answer.code = "upstream_unavailable";
  answer.message = Cat("every upstream of route ", route_name_,
                       " is down after repeated failures (health.max_fails); the next try is in ",
                       FormatDuration(static_cast<double>(wait.count())));
}

void PassiveHealthFilter::OnAnswer(const FilterRequest&, const UpstreamResult& result) {
  if (result.answered != SIZE_MAX) all_[result.answered]->Success();
}

void PassiveHealthFilter::OnComplete(const FilterRequest&, const FilterOutcome& outcome) {
  if (outcome.broke && outcome.upstream != SIZE_MAX) {
    all_[outcome.upstream]->Failure(*outcome.broke, outcome.end);
  }
}

}  // namespace tailguard::server
