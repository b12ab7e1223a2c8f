// The event store file for the commands that read it (`alerts`, `report`): where it is, opened
// only when it exists, and alert ids on the command line.
#ifndef TAILGUARD_APPS_STORE_FILE_H_
#define TAILGUARD_APPS_STORE_FILE_H_

#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "store/event_store.h"

namespace tailguard::cli {

// Where the store is: `db`, else the store.path of the gateway configuration file `config`,
// else ./tailguard.db. InvalidArgument for a configuration without a store.
absl::StatusOr<std::string> StoreFilePath(const std::string& db, const std::string& config);

// Opens an existing store; a missing file is NotFound, saying how to name it (it would be
// created empty otherwise). A store that exists but cannot be used (newer schema, not a
// database, locked) is Unavailable: a runtime failure, not a usage error.
absl::StatusOr<std::unique_ptr<store::EventStore>> OpenExistingEventStore(const std::string& path);

// An alert id on the command line: a positive whole number, said so in plain words (CLI11's own
// message is "Could not convert: id = abc").
CLI::Validator IdValidator();

}  // namespace tailguard::cli

#endif  // TAILGUARD_APPS_STORE_FILE_H_
