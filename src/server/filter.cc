#include "server/filter.h"

namespace tailguard::server {

const char* FilterDecisionName(FilterDecision d) {
  switch (d) {
    case FilterDecision::kContinue:
      return "continue";
    case FilterDecision::kRespond:
      return "respond";
    case FilterDecision::kReject:
      return "reject";
  }
  return "unknown";
}

void FilterChain::Add(RequestFilter* filter) {
  auto e = std::make_unique<Entry>();
  e->filter = filter;
  entries_.push_back(std::move(e));
}

FilterDecision FilterChain::Decide(const FilterRequest& request, FilterAnswer& answer,
                                   size_t* seen, size_t* decided_by) const {
  *decided_by = SIZE_MAX;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const FilterDecision d = entries_[i]->filter->OnRequest(request, answer);
    if (d == FilterDecision::kContinue) continue;
    entries_[i]->decisions[static_cast<size_t>(d)].fetch_add(1, std::memory_order_relaxed);
    *seen = i + 1;
    *decided_by = i;
    return d;
  }
  *seen = entries_.size();
  return FilterDecision::kContinue;
}

void FilterChain::Answered(const FilterRequest& request, const UpstreamResult& result,
                           size_t seen) const {
  for (size_t i = seen; i-- > 0;) entries_[i]->filter->OnAnswer(request, result);
}

void FilterChain::Complete(const FilterRequest& request, const FilterOutcome& outcome,
                           size_t seen) const {
  for (size_t i = seen; i-- > 0;) entries_[i]->filter->OnComplete(request, outcome);
}

void FilterChainCollector::Collect(metrics::MetricsWriter& out) const {
  out.Counter("tailguard_filter_decisions",
              "Requests a route's filter answered itself (respond) or refused (reject)");
  for (const auto& [route, chain] : chains_) {
    for (size_t i = 0; i < chain->size(); ++i) {
      for (FilterDecision d : {FilterDecision::kRespond, FilterDecision::kReject}) {
        out.Sample({{"route", route},
                    {"filter", std::string(chain->filter(i).name())},
                    {"decision", FilterDecisionName(d)}},
                   static_cast<double>(chain->decisions(i, d)));
      }
    }
  }
}

}  // namespace tailguard::server
