// Route tree matching and inhibition.
#include "alert/route.h"

#include <tuple>

#include "alert/grouper.h"

namespace tailguard::alert_internal {
namespace {

EffectiveRoute Inherit(const EffectiveRoute& parent, const RouteNode& node) {
  EffectiveRoute e = parent;
  if (!node.receiver.empty()) e.receiver = node.receiver;
  if (node.group_by) e.options.group_by = *node.group_by;
  if (node.group_wait) e.options.group_wait = *node.group_wait;
  if (node.group_interval) e.options.group_interval = *node.group_interval;
  if (node.repeat_interval) e.options.repeat_interval = *node.repeat_interval;
  if (node.mute_during) e.mute_during = *node.mute_during;
  return e;
}

void Walk(const std::vector<RouteNode>& nodes, const std::string& parent_path, int depth,
          const EffectiveRoute& parent,
          const std::function<void(const RouteNode&, const std::string&, int,
                                   const EffectiveRoute&)>& visit) {
  if (depth > kMaxRouteDepth + 1) return;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string path = parent_path + ".routes[" + std::to_string(i) + "]";
    const EffectiveRoute e = Inherit(parent, nodes[i]);
    visit(nodes[i], path, depth, e);
    Walk(nodes[i].routes, path, depth + 1, e, visit);
  }
}

bool SameLabel(const LiveAlert& a, const LiveAlert& b, const std::string& name) {
  if (name == "__series__") return a.series == b.series;
  return LabelValue(a.labels, name) == LabelValue(b.labels, name);
}

}  // namespace

void ForEachRouteNode(const AlertConfig& config,
                      const std::function<void(const RouteNode&, const std::string&, int,
                                               const EffectiveRoute&)>& visit) {
  // The root's receiver is the fallback for alerts nobody else takes: nodes do not inherit it.
  EffectiveRoute root{"", config.route, {}};
  Walk(config.routes, "route", 1, root, visit);
}

uint64_t ScheduleMask(const AlertConfig& config, std::span<const std::string> names) {
  uint64_t mask = 0;
  for (const std::string& name : names) {
    for (size_t i = 0; i < config.schedules.size() && i < 64; ++i) {
      if (config.schedules[i].name == name) mask |= uint64_t{1} << i;
    }
  }
  return mask;
}

RouteTree::RouteTree(const AlertConfig& config) {
  // Nodes are numbered in visiting order (parents before children); a node's parent is the
  // nearest earlier node one level up.
  std::vector<int> stack;  // the current path's node indices by depth - 1
  ForEachRouteNode(config, [&](const RouteNode& node, const std::string& path, int depth,
                               const EffectiveRoute& effective) {
    const int index = static_cast<int>(nodes_.size());
    Node n;
    n.path = path;
    n.selector = *SeriesSelector::Compile(node.matchers);  // validated
    n.effective = effective;
    n.mute = ScheduleMask(config, effective.mute_during);
    n.continue_matching = node.continue_matching;
    nodes_.push_back(std::move(n));
    stack.resize(depth - 1);
    if (depth == 1) {
      top_.push_back(index);
    } else {
      nodes_[stack.back()].children.push_back(index);
    }
    stack.push_back(index);
  });
}

bool RouteTree::MatchAmong(const std::vector<int>& children, std::string_view metric,
                           LabelSpan labels, std::vector<int>& out) const {
  bool any = false;
  for (int i : children) {
    const Node& n = nodes_[i];
    if (!n.selector.Matches(metric, labels)) continue;
    any = true;
    if (!MatchAmong(n.children, metric, labels, out)) out.push_back(i);
    if (!n.continue_matching) break;
  }
  return any;
}

void RouteTree::Match(std::string_view metric, LabelSpan labels, std::vector<int>& out) const {
  MatchAmong(top_, metric, labels, out);
}

Inhibitor::Inhibitor(const std::vector<InhibitRule>& rules) {
  for (size_t i = 0; i < rules.size() && i < kMaxRules; ++i) {
    rules_.push_back({*SeriesSelector::Compile(rules[i].source_matchers),  // validated
                      *SeriesSelector::Compile(rules[i].target_matchers), rules[i].equal});
  }
}

void Inhibitor::Classify(LiveAlert& alert) const {
  alert.inhibit_source = 0;
  alert.inhibit_target = 0;
  for (size_t r = 0; r < rules_.size(); ++r) {
    if (rules_[r].source.Matches(alert.metric, alert.labels)) alert.inhibit_source |= 1ULL << r;
    if (rules_[r].target.Matches(alert.metric, alert.labels)) alert.inhibit_target |= 1ULL << r;
  }
}

const LiveAlert* Inhibitor::InhibitedBy(const LiveAlert& target,
                                        std::span<LiveAlert* const> firing) const {
  const LiveAlert* best = nullptr;
  if (target.inhibit_target == 0) return best;
  for (size_t r = 0; r < rules_.size(); ++r) {
    const uint64_t bit = 1ULL << r;
    if ((target.inhibit_target & bit) == 0) continue;
    const bool both = (target.inhibit_source & bit) != 0;
    for (const LiveAlert* s : firing) {
      if (s == &target || (s->inhibit_source & bit) == 0) continue;
      // Alerts matching both sides do not mute each other.
      if (both && (s->inhibit_target & bit) != 0) continue;
      bool equal = true;
      for (const std::string& name : rules_[r].equal) {
        if (!SameLabel(*s, target, name)) {
          equal = false;
          break;
        }
      }
      if (equal &&
          (best == nullptr || std::tie(s->rule, s->series) < std::tie(best->rule, best->series))) {
        best = s;
      }
    }
  }
  return best;
}

}  // namespace tailguard::alert_internal
