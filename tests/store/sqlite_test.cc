// The SQLite wrapper: connection settings, binding and reading, nested transactions, errors.
#include "store/sqlite.h"

#include <cmath>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store_test_util.h"

namespace tailguard::store_test {
namespace {

using store::Database;
using store::Statement;
using store::Transaction;
using ::testing::HasSubstr;
using ::testing::Not;

using SqliteTest = StoreTest;

std::string One(Database& db, std::string_view sql) {
  absl::StatusOr<Statement> st = db.Prepare(sql);
  EXPECT_TRUE(st.ok()) << st.status();
  if (!st.ok()) return "";
  absl::StatusOr<bool> row = st->Step();
  EXPECT_TRUE(row.ok()) << row.status();
  return row.ok() && *row ? st->ColumnText(0) : "";
}

int64_t Count(Database& db, std::string_view table) {
  absl::StatusOr<Statement> st = db.Prepare(Cat("SELECT COUNT(*) FROM ", table));
  EXPECT_TRUE(st.ok());
  EXPECT_TRUE(*st->Step());
  return st->ColumnInt64(0);
}

TEST_F(SqliteTest, OpenConfiguresTheConnection) {
  absl::StatusOr<Database> db = Database::Open(Path());
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_EQ(One(*db, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(One(*db, "PRAGMA synchronous"), "1");  // NORMAL
  EXPECT_EQ(One(*db, "PRAGMA foreign_keys"), "1");
  EXPECT_EQ(One(*db, "PRAGMA busy_timeout"), "5000");
  EXPECT_TRUE(std::filesystem::exists(Path()));
}

TEST_F(SqliteTest, MissingDirectoryIsNotFoundNamingThePath) {
  const std::string path = (dir_ / "no" / "such" / "dir" / "events.db").string();
  absl::StatusOr<Database> db = Database::Open(path);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(db.status().message(), HasSubstr(path));
  EXPECT_THAT(db.status().message(), HasSubstr("does not exist"));
}

TEST_F(SqliteTest, FileThatIsNotADatabaseIsDataLoss) {
  std::ofstream(Path("junk.db")) << std::string(4096, 'x');
  absl::StatusOr<Database> db = Database::Open(Path("junk.db"));
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(db.status().message(), HasSubstr(Path("junk.db")));
  EXPECT_THAT(db.status().message(), HasSubstr("not an SQLite database"));
  // In words, with what to do (regression, issue 16: 'prepare "PRAGMA ...": file is not a
  // database').
  EXPECT_THAT(db.status().message(), HasSubstr("is not a tailguard store"));
  EXPECT_THAT(db.status().message(), Not(HasSubstr("PRAGMA")));
}

TEST_F(SqliteTest, BindsAndReadsEveryType) {
  absl::StatusOr<Database> db = Database::Open(Path());
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(db->Exec("CREATE TABLE t (i INTEGER, d REAL, s TEXT, b BLOB, n TEXT)").ok());
  absl::StatusOr<Statement> ins = db->Prepare("INSERT INTO t VALUES (?1, ?2, ?3, ?4, ?5)");
  ASSERT_TRUE(ins.ok());
  const std::string blob("a\0b", 3);
  ins->Bind(1, int64_t{1} << 62).Bind(2, 0.25).Bind(3, "text").BindBlob(4, blob).BindNull(5);
  ASSERT_TRUE(ins->Run().ok());
  EXPECT_EQ(db->LastInsertRowId(), 1);
  EXPECT_EQ(db->Changes(), 1);

  // Reuse after Reset(); NaN becomes NULL and reads back as NaN.
  ins->Reset();
  ins->Bind(1, 7).Bind(2, std::nan("")).Bind(3, std::string_view()).BindBlob(4, "").Bind(5, "x");
  ASSERT_TRUE(ins->Run().ok());

  absl::StatusOr<Statement> sel = db->Prepare("SELECT i, d, s, b, n FROM t ORDER BY rowid");
  ASSERT_TRUE(sel.ok());
  ASSERT_TRUE(*sel->Step());
  EXPECT_EQ(sel->ColumnCount(), 5);
  EXPECT_EQ(sel->ColumnInt64(0), int64_t{1} << 62);
  EXPECT_EQ(sel->ColumnDouble(1), 0.25);
  EXPECT_EQ(sel->ColumnText(2), "text");
  EXPECT_EQ(sel->ColumnText(3), blob);
  EXPECT_TRUE(sel->ColumnIsNull(4));
  EXPECT_EQ(sel->ColumnText(4), "");
  ASSERT_TRUE(*sel->Step());
  EXPECT_TRUE(std::isnan(sel->ColumnDouble(1)));
  EXPECT_FALSE(sel->ColumnIsNull(2));  // "" is not NULL
  EXPECT_EQ(sel->ColumnText(2), "");
  EXPECT_FALSE(*sel->Step());
}

TEST_F(SqliteTest, ErrorsNameTheFileAndSqliteMessage) {
  absl::StatusOr<Database> db = Database::Open(Path());
  ASSERT_TRUE(db.ok());
  absl::StatusOr<Statement> bad = db->Prepare("SELECT * FROM missing_table");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr(Path()));
  EXPECT_THAT(bad.status().message(), HasSubstr("no such table: missing_table"));

  ASSERT_TRUE(db->Exec("CREATE TABLE u (k TEXT UNIQUE)").ok());
  absl::StatusOr<Statement> ins = db->Prepare("INSERT INTO u VALUES (?1)");
  ASSERT_TRUE(ins.ok());
  ins->Bind(1, "a");
  ASSERT_TRUE(ins->Run().ok());
  ins->Reset();
  ins->Bind(1, "a");
  absl::Status dup = ins->Run();
  EXPECT_EQ(dup.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(dup.message(), HasSubstr("UNIQUE constraint failed: u.k"));

  // A bind error surfaces at Step().
  ins->Reset();
  ins->Bind(2, "no such parameter");
  EXPECT_FALSE(ins->Step().ok());
}

TEST_F(SqliteTest, TransactionRollsBackUnlessCommitted) {
  absl::StatusOr<Database> db = Database::Open(Path());
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(db->Exec("CREATE TABLE t (x INTEGER)").ok());
  {
    absl::StatusOr<Transaction> tx = Transaction::Begin(*db);
    ASSERT_TRUE(tx.ok());
    ASSERT_TRUE(db->Exec("INSERT INTO t VALUES (1)").ok());
    EXPECT_FALSE(db->InAutocommit());
  }  // dropped: rolled back
  EXPECT_TRUE(db->InAutocommit());
  EXPECT_EQ(Count(*db, "t"), 0);
  {
    absl::StatusOr<Transaction> tx = Transaction::Begin(*db);
    ASSERT_TRUE(tx.ok());
    ASSERT_TRUE(db->Exec("INSERT INTO t VALUES (2)").ok());
    ASSERT_TRUE(tx->Commit().ok());
    EXPECT_FALSE(tx->Commit().ok());  // only once
  }
  EXPECT_EQ(Count(*db, "t"), 1);
}

TEST_F(SqliteTest, NestedTransactionsAreSavepoints) {
  absl::StatusOr<Database> db = Database::Open(Path());
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(db->Exec("CREATE TABLE t (x INTEGER)").ok());
  {
    absl::StatusOr<Transaction> outer = Transaction::Begin(*db);
    ASSERT_TRUE(outer.ok());
    ASSERT_TRUE(db->Exec("INSERT INTO t VALUES (1)").ok());
    {
      absl::StatusOr<Transaction> inner = Transaction::Begin(*db);
      ASSERT_TRUE(inner.ok());
      ASSERT_TRUE(db->Exec("INSERT INTO t VALUES (2)").ok());
    }  // inner rolled back: only row 2 goes
    {
      absl::StatusOr<Transaction> inner = Transaction::Begin(*db);
      ASSERT_TRUE(inner.ok());
      ASSERT_TRUE(db->Exec("INSERT INTO t VALUES (3)").ok());
      ASSERT_TRUE(inner->Commit().ok());
    }
    EXPECT_FALSE(db->InAutocommit());  // the inner commit is not durable yet
    ASSERT_TRUE(outer->Commit().ok());
  }
  EXPECT_EQ(One(*db, "SELECT group_concat(x) FROM (SELECT x FROM t ORDER BY x)"), "1,3");
}

}  // namespace
}  // namespace tailguard::store_test
