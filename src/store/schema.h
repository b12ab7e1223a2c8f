// The event store's schema: every table, column and index, as an ordered list of migrations.
#ifndef TAILGUARD_STORE_SCHEMA_H_
#define TAILGUARD_STORE_SCHEMA_H_

#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "store/sqlite.h"

namespace tailguard::store {

// Migration i (0-based) takes a database from schema version i to i + 1; the version is kept in
// PRAGMA user_version (0 for a new file). A released migration is never edited: a change is a
// new migration appended to the list. docs/store.md describes the tables.
std::span<const std::string_view> Migrations();

// The schema version this binary writes: Migrations().size().
int SchemaVersion();

// Brings `db` to SchemaVersion() in one transaction taken with the write lock (so two processes
// opening a new file migrate it once). FailedPrecondition, file untouched, when the file was
// created by a newer tailguard; otherwise the failing step's SQLite error.
absl::Status Migrate(Database& db);

}  // namespace tailguard::store

#endif  // TAILGUARD_STORE_SCHEMA_H_
