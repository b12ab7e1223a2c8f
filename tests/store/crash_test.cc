// Crash safety: a writer process killed with SIGKILL in the middle of its writes leaves an intact
// database in which every transaction is either complete or absent.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gtest/gtest.h"
#include "store/event_store.h"
#include "store/sqlite.h"
#include "store_test_util.h"

namespace tailguard::store_test {
namespace {

using store::Database;
using store::EventStore;
using store::NotificationRow;
using store::OutboxItem;
using store::Statement;

constexpr int kWrites = 200;

std::string Key(int i) { return Cat("wecom/g/", i); }
// Large enough that a transaction spans several pages.
std::string Body(int i) { return Cat("{\"n\":", i, ",\"pad\":\"", std::string(3000, 'x'), "\"}"); }

// The child: enqueues notifications i = first, first + 1, ... each with the engine state "i" in
// the same transaction, and writes one byte to `progress` after each commit. Never returns.
[[noreturn]] void Writer(const std::string& path, int first, int progress) {
  absl::StatusOr<std::unique_ptr<EventStore>> s = EventStore::Open(path);
  if (!s.ok()) _exit(2);
  for (int i = first; i < first + kWrites; ++i) {
    NotificationRow n = Note(Key(i), T0() + seconds(i), {"rank", "fraud", "search"});
    OutboxItem item = Request(n);
    item.body = Body(i);
    absl::Status st = (*s)->RunInTransaction([&]() -> absl::Status {
      absl::StatusOr<int64_t> id = (*s)->Enqueue(n, item);
      if (!id.ok()) return id.status();
      return (*s)->SaveEngineState(Cat(i), T0() + seconds(i));
    });
    if (!st.ok()) _exit(3);
    const char c = 1;
    if (write(progress, &c, 1) != 1) _exit(4);
  }
  _exit(0);
}

struct Contents {
  std::string integrity;
  int64_t notifications = 0;
  int64_t incomplete = 0;  // rows that are not exactly what the writer wrote
  std::string engine_state;
};

Contents Inspect(const std::string& path) {
  Contents c;
  absl::StatusOr<Database> db = Database::Open(path);
  EXPECT_TRUE(db.ok()) << db.status();
  if (!db.ok()) return c;
  absl::StatusOr<Statement> st = db->Prepare("PRAGMA integrity_check");
  EXPECT_TRUE(st.ok() && *st->Step());
  c.integrity = st->ColumnText(0);
  st = db->Prepare(
      "SELECT o.idempotency_key, o.body, o.state, (SELECT COUNT(*) FROM outbox_alerts AS a "
      "WHERE a.outbox_id = o.id) FROM outbox AS o ORDER BY o.id");
  EXPECT_TRUE(st.ok());
  while (*st->Step()) {
    const int i = static_cast<int>(c.notifications++);
    if (st->ColumnText(0) != Key(i) || st->ColumnText(1) != Body(i) ||
        st->ColumnText(2) != "pending" || st->ColumnInt64(3) != 3) {
      ++c.incomplete;
    }
  }
  st = db->Prepare("SELECT state FROM engine_state");
  EXPECT_TRUE(st.ok());
  if (*st->Step()) c.engine_state = st->ColumnText(0);
  return c;
}

using StoreCrashTest = StoreTest;

TEST_F(StoreCrashTest, WriterKilledMidwayLeavesAnIntactFile) {
  ASSERT_NE(OpenStore(), nullptr);  // created and migrated; closed before forking
  int64_t before = 0;
  // Three writers, each killed after a different number of commits.
  for (int kill_after : {7, 60, 150}) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      Writer(Path(), static_cast<int>(before), fds[1]);
    }
    close(fds[1]);
    int seen = 0;
    char buf[64];
    while (seen < kill_after) {
      ssize_t r = read(fds[0], buf, std::min<size_t>(sizeof(buf), kill_after - seen));
      if (r <= 0) break;
      seen += static_cast<int>(r);
    }
    kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    close(fds[0]);
    ASSERT_EQ(seen, kill_after) << "the writer stopped early, status " << status;
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "the writer finished before it was killed";

    const Contents c = Inspect(Path());
    EXPECT_EQ(c.integrity, "ok");
    // Every commit the writer reported is there, and nothing half-written.
    EXPECT_GE(c.notifications, before + kill_after);
    EXPECT_LE(c.notifications, before + kWrites);
    EXPECT_EQ(c.incomplete, 0);
    // The engine state was written in the same transactions as the notifications.
    EXPECT_EQ(c.engine_state, Cat(c.notifications - 1));
    before = c.notifications;
  }

  // The store opens and resumes: every notification is due for delivery.
  std::unique_ptr<EventStore> s = OpenStore();
  ASSERT_NE(s, nullptr);
  absl::StatusOr<std::vector<OutboxItem>> due = s->Due(T0() + hours(1), 1000);
  ASSERT_TRUE(due.ok()) << due.status();
  EXPECT_EQ(static_cast<int64_t>(due->size()), before);
}

}  // namespace
}  // namespace tailguard::store_test
