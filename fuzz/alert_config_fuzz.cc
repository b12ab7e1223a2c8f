// Fuzzes ParseAlertConfig: arbitrary YAML never crashes it or escapes as an exception, and
// whatever it accepts is a valid configuration that an engine can be built from.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tailguard/alert.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<tailguard::AlertConfig> config = tailguard::ParseAlertConfig(text, "fuzz.yaml");
  if (!config.ok()) return 0;
  if (!tailguard::ValidateAlertConfig(*config).ok()) std::abort();
  tailguard::CollectingAlertSink sink;
  auto engine = tailguard::AlertEngine::Create(*config, sink);
  // Only an unknown time zone may still fail here (it needs the zone database).
  if (!engine.ok() && config->time_zone == "UTC") std::abort();
  return 0;
}
