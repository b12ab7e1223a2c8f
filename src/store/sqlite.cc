// The SQLite wrapper: connection setup, statements, nested transactions, error mapping.
#include "store/sqlite.h"

#include <sqlite3.h>

#include <cmath>
#include <filesystem>
#include <system_error>
#include <utility>

#include "common/strings.h"

namespace tailguard::store {
namespace {

constexpr int kBusyTimeoutMs = 5000;

absl::StatusCode CodeFor(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_CANTOPEN:
    case SQLITE_IOERR:
    case SQLITE_PROTOCOL:
      return absl::StatusCode::kUnavailable;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return absl::StatusCode::kPermissionDenied;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::StatusCode::kDataLoss;
    case SQLITE_FULL:
    case SQLITE_NOMEM:
    case SQLITE_TOOBIG:
      return absl::StatusCode::kResourceExhausted;
    case SQLITE_CONSTRAINT:
      return absl::StatusCode::kFailedPrecondition;
    default:
      return absl::StatusCode::kInternal;
  }
}

// The start of a statement's SQL on one line, to say which statement failed. Values are always
// bound parameters, so the SQL text never holds data (or secrets).
std::string SqlExcerpt(const char* sql) {
  std::string out;
  for (const char* p = sql; p != nullptr && *p != '\0' && out.size() < 60; ++p) {
    char c = (*p == '\n' || *p == '\t' || *p == '\r') ? ' ' : *p;
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out.push_back(c);
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Database

absl::StatusOr<Database> Database::Open(const std::string& path) {
  if (path != ":memory:") {
    std::filesystem::path dir = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!dir.empty() && !std::filesystem::is_directory(dir, ec)) {
      return absl::NotFoundError(
          Cat(path, ": cannot open the database: directory ", dir.string(), " does not exist"));
    }
  }
  sqlite3* raw = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  Database db(raw, path);  // closes `raw` on every return below
  if (rc != SQLITE_OK) {
    return absl::Status(CodeFor(rc),
                        Cat(path, ": cannot open the database: ",
                            raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  }
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, kBusyTimeoutMs);

  // The first statement reads the file header: a file that is not a database fails here, and
  // is said so in words (SQLite's own: 'prepare "PRAGMA journal_mode=WAL": file is not a
  // database').
  const auto not_a_store = [&](const absl::Status& st) -> absl::Status {
    if (sqlite3_errcode(raw) != SQLITE_NOTADB) return st;
    return absl::DataLossError(
        Cat(path,
            " is not a tailguard store (not an SQLite database): check the path given "
            "(--db, --store, store.path), or move this file away to start a new store"));
  };
  absl::StatusOr<Statement> wal = db.Prepare("PRAGMA journal_mode=WAL");
  if (!wal.ok()) return not_a_store(wal.status());
  absl::StatusOr<bool> row = wal->Step();
  if (!row.ok()) return not_a_store(row.status());
  std::string mode = *row ? wal->ColumnText(0) : "";
  if (path != ":memory:" && mode != "wal") {
    return absl::FailedPreconditionError(
        Cat(path, ": cannot switch the database to WAL mode (journal_mode is \"", mode,
            "\"); is it on a file system without shared memory support?"));
  }
  if (absl::Status s = db.Exec("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;"); !s.ok()) {
    return s;
  }
  return db;
}

Database::Database(Database&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)),
      path_(std::move(other.path_)),
      next_savepoint_(other.next_savepoint_) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    Close();
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
    next_savepoint_ = other.next_savepoint_;
  }
  return *this;
}

Database::~Database() { Close(); }

void Database::Close() {
  // close_v2 defers the close until the last statement is finalized, so order does not matter.
  if (db_ != nullptr) sqlite3_close_v2(db_);
  db_ = nullptr;
}

absl::Status Database::Error(int rc, std::string_view what) const {
  const char* msg = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  return absl::Status(CodeFor(rc), Cat(path_, ": ", what, ": ", msg));
}

absl::Status Database::Exec(std::string_view sql) {
  std::string text(sql);
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return Error(rc, Cat("\"", SqlExcerpt(text.c_str()), "\""));
  return absl::OkStatus();
}

absl::StatusOr<Statement> Database::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return Error(rc, Cat("prepare \"", SqlExcerpt(std::string(sql).c_str()), "\""));
  }
  return Statement(this, stmt);
}

int64_t Database::Changes() const { return sqlite3_changes64(db_); }
int64_t Database::LastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }
bool Database::InAutocommit() const { return sqlite3_get_autocommit(db_) != 0; }

// ---------------------------------------------------------------------------------------------
// Statement

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_),
      stmt_(std::exchange(other.stmt_, nullptr)),
      bind_error_(std::move(other.bind_error_)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
    bind_error_ = std::move(other.bind_error_);
  }
  return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::Check(int rc, int idx) {
  if (rc != SQLITE_OK && bind_error_.ok()) {
    bind_error_ =
        db_->Error(rc, Cat("bind parameter ", idx, " of \"", SqlExcerpt(sqlite3_sql(stmt_)), "\""));
  }
  return *this;
}

Statement& Statement::BindInt64(int idx, int64_t value) {
  return Check(sqlite3_bind_int64(stmt_, idx, value), idx);
}

Statement& Statement::Bind(int idx, double value) {
  if (std::isnan(value)) return BindNull(idx);
  return Check(sqlite3_bind_double(stmt_, idx, value), idx);
}

Statement& Statement::Bind(int idx, std::string_view value) {
  // A non-null pointer even for "": a NULL pointer would bind SQL NULL.
  return Check(sqlite3_bind_text64(stmt_, idx, value.empty() ? "" : value.data(), value.size(),
                                   SQLITE_TRANSIENT, SQLITE_UTF8),
               idx);
}

Statement& Statement::BindBlob(int idx, std::string_view value) {
  return Check(sqlite3_bind_blob64(stmt_, idx, value.empty() ? "" : value.data(), value.size(),
                                   SQLITE_TRANSIENT),
               idx);
}

Statement& Statement::BindNull(int idx) { return Check(sqlite3_bind_null(stmt_, idx), idx); }

absl::StatusOr<bool> Statement::Step() {
  if (!bind_error_.ok()) return bind_error_;
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return db_->Error(rc, Cat("\"", SqlExcerpt(sqlite3_sql(stmt_)), "\""));
}

absl::Status Statement::Run() {
  absl::StatusOr<bool> row = Step();
  if (!row.ok()) return row.status();
  if (*row) {
    return absl::InternalError(Cat(db_->path(), ": \"", SqlExcerpt(sqlite3_sql(stmt_)),
                                   "\" returned a row where none was expected"));
  }
  return absl::OkStatus();
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_error_ = absl::OkStatus();
}

int Statement::ColumnCount() const { return sqlite3_column_count(stmt_); }

bool Statement::ColumnIsNull(int col) const {
  return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
}

int64_t Statement::ColumnInt64(int col) const { return sqlite3_column_int64(stmt_, col); }

double Statement::ColumnDouble(int col) const {
  if (ColumnIsNull(col)) return std::nan("");
  return sqlite3_column_double(stmt_, col);
}

std::string Statement::ColumnText(int col) const {
  // column_blob then column_bytes, in that order, per the SQLite documentation.
  const void* data = sqlite3_column_blob(stmt_, col);
  int size = sqlite3_column_bytes(stmt_, col);
  if (data == nullptr || size <= 0) return {};
  return std::string(static_cast<const char*>(data), static_cast<size_t>(size));
}

// ---------------------------------------------------------------------------------------------
// Transaction

absl::StatusOr<Transaction> Transaction::Begin(Database& db, Mode mode) {
  if (db.InAutocommit()) {
    absl::Status s = db.Exec(mode == Mode::kImmediate ? "BEGIN IMMEDIATE" : "BEGIN");
    if (!s.ok()) return s;
    db.next_savepoint_ = 0;  // names need only be unique within one outer transaction
    return Transaction(&db, "");
  }
  std::string name = Cat("tg_sp_", db.next_savepoint_++);
  if (absl::Status s = db.Exec(Cat("SAVEPOINT ", name)); !s.ok()) return s;
  return Transaction(&db, std::move(name));
}

Transaction::Transaction(Transaction&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), savepoint_(std::move(other.savepoint_)) {}

Transaction::~Transaction() { Rollback(); }

absl::Status Transaction::Commit() {
  if (db_ == nullptr) return absl::FailedPreconditionError("transaction already finished");
  absl::Status s =
      db_->Exec(savepoint_.empty() ? std::string("COMMIT") : Cat("RELEASE ", savepoint_));
  if (!s.ok()) {
    Rollback();
    return s;
  }
  db_ = nullptr;
  return absl::OkStatus();
}

void Transaction::Rollback() {
  if (db_ == nullptr) return;
  Database* db = std::exchange(db_, nullptr);
  // Some errors (SQLITE_FULL, SQLITE_IOERR, ...) roll the whole transaction back by themselves;
  // then there is nothing left to undo.
  if (db->InAutocommit()) return;
  if (savepoint_.empty()) {
    (void)db->Exec("ROLLBACK");
  } else {
    (void)db->Exec(Cat("ROLLBACK TO ", savepoint_, "; RELEASE ", savepoint_));
  }
}

}  // namespace tailguard::store
