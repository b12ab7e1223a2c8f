// Redis plumbing for the feature store: one blocking hiredis connection with timeouts and
// status-mapped errors, finding a redis-server binary, and running a private redis-server on
// loopback as a child process (for the demo and the tests).
#ifndef TAILGUARD_STORE_REDIS_H_
#define TAILGUARD_STORE_REDIS_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct redisContext;

namespace tailguard::store {

// One reply from Redis. Error replies are not replies: Command() returns them as a Status.
struct RedisReply {
  enum class Type { kString, kNil, kStatus, kInteger, kArray };
  Type type = Type::kNil;
  std::string str;      // kString (binary safe) and kStatus ("OK", "PONG")
  int64_t integer = 0;  // kInteger; the element count for kArray (elements are not kept)
};

// One blocking connection to a Redis server.
//
// Not thread-safe; the caller synchronises (the feature store keeps one per pooled slot).
// Once a command fails on the connection level (timeout, reset, closed), broken() is true and
// the connection must be thrown away: a late reply would otherwise answer the next command.
class RedisConnection {
 public:
  // Connects to host:port within `timeout`, which also bounds every later command's round trip.
  // Unavailable when the connection is refused or fails; DeadlineExceeded when it takes longer
  // than `timeout`. Messages start with "redis <host>:<port>".
  static absl::StatusOr<std::unique_ptr<RedisConnection>> Connect(
      const std::string& host, uint16_t port, std::chrono::milliseconds timeout);

  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;
  ~RedisConnection();

  // Sends one command, e.g. Command({"SET", key, bytes}), and waits for its reply. Arguments are
  // sent with their lengths, so they may hold any bytes (zero bytes, CR/LF).
  //
  // Errors (messages start with "redis <host>:<port>: <command> <first argument>:"):
  //   DeadlineExceeded   no reply within the timeout; the connection is now broken.
  //   Unavailable        the connection failed or was closed; now broken. Also for the server's
  //                      LOADING/BUSY/MASTERDOWN/TRYAGAIN error replies (connection still usable).
  //   ResourceExhausted  the server's OOM error reply.
  //   PermissionDenied   NOAUTH/WRONGPASS/NOPERM error replies.
  //   FailedPrecondition WRONGTYPE (the key holds another kind of value).
  //   Internal           any other error reply.
  //
  // SIGPIPE raised by a write to a dead peer is blocked on the calling thread for the duration
  // of the call and discarded, so a lost server never kills the process.
  absl::StatusOr<RedisReply> Command(std::initializer_list<std::string_view> args);

  // True once a command failed on the connection level; the connection must then be dropped.
  bool broken() const;

  // "<host>:<port>".
  const std::string& address() const { return address_; }

 private:
  RedisConnection(redisContext* ctx, std::string address, std::chrono::milliseconds timeout)
      : ctx_(ctx), address_(std::move(address)), timeout_(timeout) {}

  redisContext* ctx_;
  const std::string address_;
  const std::chrono::milliseconds timeout_;
};

// The path of an executable `redis-server`: the first one in the directories of $PATH, then
// /usr/bin (Debian's package puts it there). nullopt when there is none; scripts/install-deps
// installs it.
std::optional<std::string> FindRedisServer();

// A private redis-server on 127.0.0.1, run as a child process of this one: for the demo (when no
// shared Redis is configured) and for the tests.
//
// It runs without persistence (`--save '' --appendonly no`), with `dir` as its working
// directory and its log in `<dir>/redis-<port>.log`. The child gets SIGKILL if the thread that
// called Start() exits (PR_SET_PDEATHSIG), so a crashed test or demo leaves no server behind;
// REQUIRES: call Start() from a thread that outlives the server (e.g. main).
//
// Thread-compatible: const methods are thread-safe; Kill/Stop/Signal need external
// synchronisation with each other.
class RedisServerProcess {
 public:
  // Starts `binary` (e.g. FindRedisServer()'s result) on 127.0.0.1 and returns once it answers.
  //
  // With `port` 0 a free port is chosen (bind a socket to port 0, read the port, close it); if
  // another process takes that port before redis-server binds it, a new port is tried, up to 5
  // times. A non-zero `port` is used as is (to restart a server on the same address). `dir` is
  // created if missing. Readiness is polled (PING and the server's process id) until it answers,
  // up to 10 s.
  //
  // Errors: NotFound when `binary` is not an executable file (run scripts/install-deps);
  // Unavailable when the port is taken or the server exits or does not answer in time (the
  // message quotes the end of its log); Internal when fork or the directory fail.
  static absl::StatusOr<std::unique_ptr<RedisServerProcess>> Start(const std::string& binary,
                                                                   const std::string& dir,
                                                                   uint16_t port = 0);

  RedisServerProcess(const RedisServerProcess&) = delete;
  RedisServerProcess& operator=(const RedisServerProcess&) = delete;
  // Stop().
  ~RedisServerProcess();

  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  // True until Stop() or Kill().
  bool running() const { return pid_ > 0; }
  // "<dir>/redis-<port>.log".
  const std::string& log_path() const { return log_path_; }

  // SIGTERM, then waits for the exit (SIGKILL after 5 s). No-op once stopped.
  void Stop();
  // SIGKILL and wait: a crash, as a test needs it. No-op once stopped.
  void Kill();
  // Sends `signal` (e.g. SIGSTOP/SIGCONT to stall the server) without waiting. No-op once
  // stopped.
  void Signal(int signal);

 private:
  RedisServerProcess(pid_t pid, uint16_t port, std::string log_path)
      : pid_(pid), port_(port), log_path_(std::move(log_path)) {}

  pid_t pid_;  // 0 once stopped and reaped
  const uint16_t port_;
  const std::string log_path_;
};

}  // namespace tailguard::store

#endif  // TAILGUARD_STORE_REDIS_H_
