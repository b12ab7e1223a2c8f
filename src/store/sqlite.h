// A thin RAII wrapper over the SQLite C API: a connection, prepared statements and transactions,
// with every error turned into an absl::Status that names the database file and SQLite's message.
#ifndef TAILGUARD_STORE_SQLITE_H_
#define TAILGUARD_STORE_SQLITE_H_

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct sqlite3;
struct sqlite3_stmt;

namespace tailguard::store {

class Statement;

// One connection to one database file.
//
// Open() configures the connection for tailguard's use: busy_timeout 5 s (a writer in another
// connection or process is waited for, not failed), journal_mode=WAL (readers never block the
// writer), synchronous=NORMAL (a committed transaction survives a process kill; a power loss may
// lose the last ones, never corrupt the file) and foreign_keys=ON.
//
// Not thread-safe; the caller synchronises. Movable, not copyable.
class Database {
 public:
  // Opens `path`, creating the file if it does not exist. ":memory:" is a private in-memory
  // database (without WAL). NotFound when the directory does not exist; DataLoss when the file
  // is not a SQLite database; otherwise the mapped SQLite error. Messages start with `path`.
  static absl::StatusOr<Database> Open(const std::string& path);

  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  // Runs one or more SQL statements without results (DDL, PRAGMA, BEGIN ...).
  absl::Status Exec(std::string_view sql);

  // Compiles one statement. The statement must not outlive the database.
  absl::StatusOr<Statement> Prepare(std::string_view sql);

  // Rows changed by the last INSERT, UPDATE or DELETE.
  int64_t Changes() const;
  // The rowid of the last successful INSERT on this connection.
  int64_t LastInsertRowId() const;
  // False while a transaction is open.
  bool InAutocommit() const;

  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }

  // A status for SQLite result code `rc` on this connection: "<path>: <what>: <message>".
  absl::Status Error(int rc, std::string_view what) const;

 private:
  friend class Transaction;
  Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  void Close();

  sqlite3* db_ = nullptr;
  std::string path_;
  int next_savepoint_ = 0;  // names nested transactions' savepoints uniquely
};

// A prepared statement. Parameters are 1-based, columns 0-based. Bind() records the first error
// and Step() returns it, so binds chain: `st.Bind(1, x).Bind(2, y); auto row = st.Step();`.
// Not thread-safe. Movable, not copyable.
class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  template <std::integral T>
  Statement& Bind(int idx, T value) {
    return BindInt64(idx, static_cast<int64_t>(value));
  }
  // NaN is bound as NULL (SQLite has no NaN).
  Statement& Bind(int idx, double value);
  // Bound as TEXT; the bytes are copied.
  Statement& Bind(int idx, std::string_view value);
  Statement& Bind(int idx, const char* value) { return Bind(idx, std::string_view(value)); }
  Statement& Bind(int idx, const std::string& value) { return Bind(idx, std::string_view(value)); }
  // Bound as a BLOB; the bytes are copied.
  Statement& BindBlob(int idx, std::string_view value);
  Statement& BindNull(int idx);

  // Runs the statement to its next row: true when a row is available through the Column
  // accessors, false when done. A bind error, a constraint violation or a busy database (after
  // busy_timeout) is an error naming the file.
  absl::StatusOr<bool> Step();
  // Step() for statements without results; an error when one returns a row.
  absl::Status Run();

  // Rewinds the statement and clears its bindings, for reuse.
  void Reset();

  int ColumnCount() const;
  bool ColumnIsNull(int col) const;
  int64_t ColumnInt64(int col) const;
  // NULL reads as NaN.
  double ColumnDouble(int col) const;
  // TEXT or BLOB bytes; NULL reads as "".
  std::string ColumnText(int col) const;

 private:
  friend class Database;
  Statement(const Database* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Statement& BindInt64(int idx, int64_t value);
  Statement& Check(int rc, int idx);

  const Database* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  absl::Status bind_error_;
};

// A transaction guard: rolls back unless Commit() was called. When a transaction is already open
// on the connection it opens a savepoint instead, so guards nest: an inner rollback undoes only
// the inner writes, and nothing is durable until the outermost guard commits.
// Not thread-safe. Movable, not copyable; must not outlive the database.
class Transaction {
 public:
  enum class Mode : uint8_t {
    kDeferred,   // BEGIN: takes the write lock at the first write (for reads)
    kImmediate,  // BEGIN IMMEDIATE: takes the write lock now, waiting up to busy_timeout
  };
  // `mode` applies to the outermost transaction only.
  static absl::StatusOr<Transaction> Begin(Database& db, Mode mode = Mode::kImmediate);

  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  // Commits (or releases the savepoint). After an error the transaction is rolled back.
  absl::Status Commit();

 private:
  Transaction(Database* db, std::string savepoint) : db_(db), savepoint_(std::move(savepoint)) {}
  void Rollback();

  Database* db_ = nullptr;  // null once committed or rolled back
  std::string savepoint_;   // "" for the outermost transaction
};

}  // namespace tailguard::store

#endif  // TAILGUARD_STORE_SQLITE_H_
