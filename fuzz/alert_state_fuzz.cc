// Fuzzes AlertEngine::RestoreState: arbitrary bytes never crash it or allocate without bound,
// and whatever it accepts saves and restores again to the same state. Each input is tried twice:
// as is, and with its last four bytes replaced by the right CRC-32, so that the fuzzer also
// explores the structural checks behind the checksum.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "common/encoding.h"
#include "tailguard/alert.h"

namespace {

// The configuration of tests/alert/state_test.cc, whose states seed the corpus: rules, a route
// tree, receivers and a maintenance window, so that restored machines and groups find their
// owners.
constexpr std::string_view kRules = R"(
stale_after: 1m
route:
  group_by: [alertname, model]
  group_wait: 5s
  group_interval: 20s
  repeat_interval: 2m
  routes:
    - matchers: ['severity="emergency"']
      receiver: lead
      continue: true
    - matchers: ['model="m2"']
      receiver: m2team
      group_by: ['...']
schedules:
  - {name: maint, from: "2025-11-05 00:08", to: "2025-11-05 00:10"}
maintenance: [maint]
rules:
  - name: risk
    debounce: {pre_alert_after: 2, alert_after: 5s, resolve_after: 15s}
  - name: errors
    stat: error_ratio
    tiers:
      - {above: 0.05, severity: warning, receivers: [wecom]}
      - {above: 0.2, severity: critical, receivers: [sms]}
    debounce: {pre_alert_after: 2, alert_after: 5s, resolve_after: 15s}
)";

tailguard::AlertEngine& Engine() {
  static tailguard::CollectingAlertSink sink;
  static std::unique_ptr<tailguard::AlertEngine> engine = [] {
    absl::StatusOr<tailguard::AlertConfig> config = tailguard::ParseAlertConfig(kRules);
    if (!config.ok()) std::abort();
    auto e = tailguard::AlertEngine::Create(*config, sink);
    if (!e.ok()) std::abort();
    return *std::move(e);
  }();
  return *engine;
}

void Check(std::string_view bytes) {
  tailguard::AlertEngine& engine = Engine();
  if (!engine.RestoreState(bytes).ok()) {
    if (!engine.ActiveAlerts().empty()) std::abort();  // a refused state leaves it empty
    return;
  }
  engine.ActiveAlerts();
  const std::string saved = engine.SaveState();
  if (!engine.RestoreState(saved).ok()) std::abort();
  if (engine.SaveState() != saved) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Check(bytes);
  if (size >= 4) {
    std::string fixed(bytes.substr(0, size - 4));
    tailguard::encoding::PutFixed32(fixed, tailguard::encoding::Crc32(fixed));
    Check(fixed);
  }
  return 0;
}
