// The passive health check as a request filter, the first of every proxied route: nginx's
// max_fails / fail_timeout over the shared UpstreamState of each upstream (server/stats.h).
//
//   OnRequest   refuses at once (502, no connect tried) when every upstream of the route is down
//               and none is due for a probe; otherwise lets the request on, and the pool picks an
//               upstream that is up (or the one probe a probe interval lets through).
//   OnAnswer    counts an answer as a success of its upstream. (A failed try is counted by the
//               upstream pool as it happens, before it tries the next upstream.)
//   OnComplete  counts an answer that broke off after its header (a timeout or reset mid-body,
//               a broken event stream) as a failure.
#ifndef TAILGUARD_SERVER_HEALTH_FILTER_H_
#define TAILGUARD_SERVER_HEALTH_FILTER_H_

#include <memory>
#include <string>
#include <vector>

#include "server/filter.h"
#include "server/stats.h"
#include "tailguard/clock.h"

namespace tailguard::server {

class PassiveHealthFilter final : public RequestFilter {
 public:
  // `all`: every upstream of the gateway (what UpstreamAttempt::upstream indexes); `route`: the
  // indexes of this route's. Both borrowed, and must outlive the filter.
  PassiveHealthFilter(std::string route_name, const std::vector<std::unique_ptr<UpstreamState>>& all,
                      std::vector<size_t> route, const Clock& clock);

  std::string_view name() const override { return "health"; }
  FilterDecision OnRequest(const FilterRequest& request, FilterAnswer& answer) override;
  void OnAnswer(const FilterRequest& request, const UpstreamResult& result) override;
  void OnComplete(const FilterRequest& request, const FilterOutcome& outcome) override;

  // The 502 of a route whose every upstream is down, with when the next try goes. Also what the
  // gateway answers when the pool finds no upstream to try after this filter let a request on
  // (another worker took the one probe in between).
  void Refuse(FilterAnswer& answer);

 private:
  const std::string route_name_;
  const std::vector<std::unique_ptr<UpstreamState>>& all_;
  const std::vector<size_t> route_;
  const Clock& clock_;
};

}  // namespace tailguard::server

#endif  // TAILGUARD_SERVER_HEALTH_FILTER_H_
