// The route tree (Alertmanager's nested routes) and inhibition rules, compiled for the engine.
#ifndef TAILGUARD_ALERT_ROUTE_H_
#define TAILGUARD_ALERT_ROUTE_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "alert/selector.h"
#include "tailguard/alert.h"

namespace tailguard::alert_internal {

struct LiveAlert;

// A route node with what it inherits resolved.
struct EffectiveRoute {
  std::string receiver;  // "" : none
  RouteOptions options;
  std::vector<std::string> mute_during;
};

// Calls `visit` on every node of config.routes, parents before children, in file order, with
// its path ("route.routes[1].routes[0]"), its depth (1 for the root's children) and what it
// inherits resolved. Never recurses past kMaxRouteDepth + 1 levels.
void ForEachRouteNode(const AlertConfig& config,
                      const std::function<void(const RouteNode& node, const std::string& path,
                                               int depth, const EffectiveRoute& effective)>& visit);

// The bit set of the named schedules (bit i: config.schedules[i]); unknown names are ignored.
uint64_t ScheduleMask(const AlertConfig& config, std::span<const std::string> names);

// The compiled route tree. Immutable after construction; const methods are thread-safe.
class RouteTree {
 public:
  struct Node {
    std::string path;
    SeriesSelector selector;
    EffectiveRoute effective;
    uint64_t mute = 0;  // effective mute_during as schedule bits
    bool continue_matching = false;
    std::vector<int> children;
  };

  // REQUIRES: `config` passes ValidateAlertConfig().
  explicit RouteTree(const AlertConfig& config);

  // Appends to `out` the indices of the matched nodes (see RouteNode), in tree order.
  void Match(std::string_view metric, LabelSpan labels, std::vector<int>& out) const;

  const std::vector<Node>& nodes() const { return nodes_; }

 private:
  // Matches among `children`; true when one did.
  bool MatchAmong(const std::vector<int>& children, std::string_view metric, LabelSpan labels,
                  std::vector<int>& out) const;

  std::vector<Node> nodes_;
  std::vector<int> top_;
};

// Compiled inhibition rules. Immutable after construction; const methods are thread-safe.
class Inhibitor {
 public:
  // The most inhibition rules (they are bits of LiveAlert::inhibit_source / inhibit_target).
  static constexpr size_t kMaxRules = 64;

  // REQUIRES: `rules` pass ValidateAlertConfig().
  explicit Inhibitor(const std::vector<InhibitRule>& rules);

  // Sets which sides of which rules `alert` (its metric and labels) matches.
  void Classify(LiveAlert& alert) const;

  // The alert among `firing` that mutes `target`, the least by (rule, series) when several do;
  // null when none does.
  const LiveAlert* InhibitedBy(const LiveAlert& target, std::span<LiveAlert* const> firing) const;

 private:
  struct Rule {
    SeriesSelector source;
    SeriesSelector target;
    std::vector<std::string> equal;
  };
  std::vector<Rule> rules_;
};

}  // namespace tailguard::alert_internal

#endif  // TAILGUARD_ALERT_ROUTE_H_
