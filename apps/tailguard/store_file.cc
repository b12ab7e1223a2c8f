#include "store_file.h"

#include <charconv>
#include <cstdint>
#include <filesystem>
#include <system_error>

#include "common/strings.h"
#include "server/gateway_config.h"

namespace tailguard::cli {

absl::StatusOr<std::string> StoreFilePath(const std::string& db, const std::string& config) {
  if (!db.empty()) return db;
  if (!config.empty()) {
    absl::StatusOr<server::GatewayConfig> c = server::LoadGatewayConfig(config);
    if (!c.ok()) return c.status();
    if (c->store.path.empty()) {
      return absl::InvalidArgumentError(
          Cat(config, ": store.path is empty: this gateway keeps no event store"));
    }
    return c->store.path;
  }
  return std::string("tailguard.db");
}

absl::StatusOr<std::unique_ptr<store::EventStore>> OpenExistingEventStore(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return absl::NotFoundError(
        Cat("no event store at ", path,
            ": give the file with --db, or the gateway configuration with --config (its "
            "store.path), or run where `tailguard serve` keeps tailguard.db"));
  }
  absl::StatusOr<std::unique_ptr<store::EventStore>> s = store::EventStore::Open(path);
  if (!s.ok()) return absl::UnavailableError(s.status().message());
  return s;
}

CLI::Validator IdValidator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        int64_t v = 0;
        const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
        if (r.ec == std::errc() && r.ptr == text.data() + text.size() && v > 0) return "";
        return Cat(
            "expected an id, a whole number above 0 like 12 (the ID column of the list), "
            "got \"",
            text, "\"");
      },
      "ID");
}

}  // namespace tailguard::cli
