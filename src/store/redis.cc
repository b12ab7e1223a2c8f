// hiredis connection with status-mapped errors, redis-server discovery, and a child redis-server.
#include "store/redis.h"

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "common/strings.h"

namespace tailguard::store {
namespace {

constexpr char kInstallHint[] = "run scripts/install-deps to install Debian's redis-server";

timeval ToTimeval(std::chrono::milliseconds d) {
  timeval tv;
  tv.tv_sec = static_cast<time_t>(d.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((d.count() % 1000) * 1000);
  return tv;
}

bool IsTimeoutErrno(int e) { return e == EAGAIN || e == EWOULDBLOCK || e == ETIMEDOUT; }

// Blocks SIGPIPE on this thread for its lifetime and discards a SIGPIPE raised meanwhile (a
// write to a peer that is gone), so a lost Redis server can never kill the process. hiredis
// writes with write(2), which has no MSG_NOSIGNAL.
class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  ~ScopedSigpipeBlock() {
    const int saved_errno = errno;
    if (!was_pending_) {
      sigset_t pending;
      sigemptyset(&pending);
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        timespec zero{};
        while (sigtimedwait(&set_, nullptr, &zero) == -1 && errno == EINTR) {
        }
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    errno = saved_errno;
  }
  ScopedSigpipeBlock(const ScopedSigpipeBlock&) = delete;
  ScopedSigpipeBlock& operator=(const ScopedSigpipeBlock&) = delete;

 private:
  sigset_t set_;
  sigset_t old_;
  bool was_pending_ = false;
};

absl::Status ErrorReplyStatus(std::string_view prefix, std::string_view message) {
  const std::string_view word = message.substr(0, message.find(' '));
  const std::string text = Cat(prefix, ": server error: ", message);
  if (word == "LOADING" || word == "BUSY" || word == "MASTERDOWN" || word == "TRYAGAIN") {
    return absl::UnavailableError(Cat(text, "; the server is not ready, retry later"));
  }
  if (word == "OOM") {
    return absl::ResourceExhaustedError(
        Cat(text, "; raise the server's maxmemory or set an eviction policy"));
  }
  if (word == "NOAUTH" || word == "WRONGPASS" || word == "NOPERM") {
    return absl::PermissionDeniedError(
        Cat(text, "; the server requires authentication, which tailguard does not send"));
  }
  if (word == "WRONGTYPE") {
    return absl::FailedPreconditionError(
        Cat(text, "; the key holds another kind of value; use another key_prefix"));
  }
  return absl::InternalError(text);
}

// The last `max_bytes` of the file at `path`, for error messages; empty when unreadable.
std::string FileTail(const std::string& path, size_t max_bytes = 600) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream buf;
  buf << in.rdbuf();
  std::string s = buf.str();
  if (s.size() > max_bytes) s = "..." + s.substr(s.size() - max_bytes);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// A port that was free on 127.0.0.1 a moment ago.
absl::StatusOr<uint16_t> PickFreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(Cat("socket: ", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int e = errno;
    close(fd);
    return absl::UnavailableError(
        Cat("cannot bind a socket on 127.0.0.1 to find a free port: ", std::strerror(e)));
  }
  close(fd);
  return ntohs(addr.sin_port);
}

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// Waits up to `timeout` for `pid` to exit; true once it is reaped.
bool WaitForExit(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(200);
  while (true) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(20000));
  }
}

enum class Readiness { kReady, kExited, kTimedOut };

// Polls until the server on `port` answers PING and reports `pid` as its process id (so we are
// not fooled by another server that took the port), the child exits, or `timeout` passes.
Readiness WaitUntilReady(pid_t pid, uint16_t port, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(500);
  const std::string pid_line = Cat("process_id:", pid, "\r\n");
  while (true) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return Readiness::kExited;
    auto conn = RedisConnection::Connect("127.0.0.1", port, std::chrono::milliseconds(200));
    if (conn.ok()) {
      auto pong = (*conn)->Command({"PING"});
      auto info = pong.ok() ? (*conn)->Command({"INFO", "server"}) : pong;
      if (info.ok() && info->str.find(pid_line) != std::string::npos) return Readiness::kReady;
    }
    if (std::chrono::steady_clock::now() >= deadline) return Readiness::kTimedOut;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(20000));
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// RedisConnection

absl::StatusOr<std::unique_ptr<RedisConnection>> RedisConnection::Connect(
    const std::string& host, uint16_t port, std::chrono::milliseconds timeout) {
  const std::string address = Cat(host, ":", port);
  redisContext* ctx = redisConnectWithTimeout(host.c_str(), port, ToTimeval(timeout));
  const int saved_errno = errno;
  if (ctx == nullptr) {
    return absl::ResourceExhaustedError(
        Cat("redis ", address, ": cannot allocate a connection context (out of memory)"));
  }
  if (ctx->err != 0) {
    const std::string why = ctx->errstr;
    const int err = ctx->err;
    redisFree(ctx);
    if (err == REDIS_ERR_IO && IsTimeoutErrno(saved_errno)) {
      return absl::DeadlineExceededError(
          Cat("redis ", address, ": connect: no answer within ", timeout.count(),
              "ms; check the address and the network, or raise the timeout"));
    }
    return absl::UnavailableError(Cat("redis ", address, ": connect: ", why,
                                      "; check that redis-server is running and listening at ",
                                      address));
  }
  if (redisSetTimeout(ctx, ToTimeval(timeout)) != REDIS_OK) {
    const std::string why = ctx->errstr;
    redisFree(ctx);
    return absl::InternalError(Cat("redis ", address, ": cannot set the socket timeout: ", why));
  }
  return std::unique_ptr<RedisConnection>(new RedisConnection(ctx, address, timeout));
}

RedisConnection::~RedisConnection() {
  if (ctx_ != nullptr) redisFree(ctx_);
}

bool RedisConnection::broken() const { return ctx_->err != 0; }

absl::StatusOr<RedisReply> RedisConnection::Command(std::initializer_list<std::string_view> args) {
  std::string prefix = Cat("redis ", address_, ":");
  for (size_t i = 0; i < args.size() && i < 2; ++i) prefix += Cat(" ", args.begin()[i]);
  if (broken()) {
    return absl::UnavailableError(
        Cat(prefix, ": the connection failed earlier and must be reopened (a bug in the caller)"));
  }
  std::vector<const char*> argv;
  std::vector<size_t> argvlen;
  argv.reserve(args.size());
  argvlen.reserve(args.size());
  for (std::string_view a : args) {
    argv.push_back(a.data());
    argvlen.push_back(a.size());
  }
  void* raw;
  int saved_errno;
  {
    ScopedSigpipeBlock no_sigpipe;
    errno = 0;
    raw = redisCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(), argvlen.data());
    saved_errno = errno;
  }
  if (raw == nullptr) {
    const std::string where = Cat("; check that redis-server is running at ", address_);
    switch (ctx_->err) {
      case REDIS_ERR_IO:
        if (IsTimeoutErrno(saved_errno)) {
          return absl::DeadlineExceededError(
              Cat(prefix, ": no reply within ", timeout_.count(),
                  "ms; the server is stalled or overloaded (check redis-cli --latency), or "
                  "raise the timeout"));
        }
        return absl::UnavailableError(Cat(prefix, ": connection lost: ", ctx_->errstr, where));
      case REDIS_ERR_EOF:
        return absl::UnavailableError(Cat(prefix, ": connection closed by the server", where));
      default:
        return absl::UnavailableError(Cat(prefix, ": ", ctx_->errstr, where));
    }
  }
  std::unique_ptr<redisReply, void (*)(void*)> reply(static_cast<redisReply*>(raw),
                                                     freeReplyObject);
  RedisReply out;
  switch (reply->type) {
    case REDIS_REPLY_STRING:
      out.type = RedisReply::Type::kString;
      out.str.assign(reply->str, reply->len);
      return out;
    case REDIS_REPLY_STATUS:
      out.type = RedisReply::Type::kStatus;
      out.str.assign(reply->str, reply->len);
      return out;
    case REDIS_REPLY_INTEGER:
      out.type = RedisReply::Type::kInteger;
      out.integer = reply->integer;
      return out;
    case REDIS_REPLY_ARRAY:
      out.type = RedisReply::Type::kArray;
      out.integer = static_cast<int64_t>(reply->elements);
      return out;
    case REDIS_REPLY_NIL:
      out.type = RedisReply::Type::kNil;
      return out;
    case REDIS_REPLY_ERROR:
      return ErrorReplyStatus(prefix, std::string_view(reply->str, reply->len));
    default:
      return absl::InternalError(Cat(prefix, ": unknown reply type ", reply->type));
  }
}

// ---------------------------------------------------------------------------------------------
// FindRedisServer

std::optional<std::string> FindRedisServer() {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::string_view rest(path);
    while (!rest.empty()) {
      const size_t colon = rest.find(':');
      const std::string_view dir = rest.substr(0, colon);
      if (!dir.empty()) dirs.emplace_back(dir);
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  dirs.emplace_back("/usr/bin");
  for (const std::string& dir : dirs) {
    std::string candidate = Cat(dir, "/redis-server");
    if (IsExecutableFile(candidate)) return candidate;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// RedisServerProcess

absl::StatusOr<std::unique_ptr<RedisServerProcess>> RedisServerProcess::Start(
    const std::string& binary, const std::string& dir, uint16_t port) {
  if (!IsExecutableFile(binary)) {
    return absl::NotFoundError(
        Cat("redis-server binary '", binary, "' is not an executable file; ", kInstallHint));
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(Cat("redis-server: cannot create its directory '", dir,
                                   "': ", ec.message(), "; pass a writable directory"));
  }
  const bool pick_port = port == 0;
  const int attempts = pick_port ? 5 : 1;
  absl::Status last_error;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    uint16_t try_port = port;
    if (pick_port) {
      absl::StatusOr<uint16_t> free_port = PickFreePort();
      if (!free_port.ok()) return free_port.status();
      try_port = *free_port;
    }
    const std::string port_text = std::to_string(try_port);
    const std::string log_path = Cat(dir, "/redis-", try_port, ".log");
    // Everything the child needs is prepared before fork(): after it, only async-signal-safe
    // calls are allowed (this process may have other threads).
    // clang-format off
    std::vector<std::string> args = {
        binary,
        "--port", port_text,
        "--bind", "127.0.0.1",
        "--protected-mode", "yes",
        "--save", "",
        "--appendonly", "no",
        "--dir", dir,
        "--daemonize", "no",
        "--logfile", "",  // stdout, which is the log file
    };
    // clang-format on
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (log_fd < 0) {
      return absl::InternalError(Cat("redis-server: cannot create its log '", log_path,
                                     "': ", std::strerror(errno), "; pass a writable directory"));
    }
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
      const int e = errno;
      close(log_fd);
      return absl::InternalError(Cat("redis-server: fork: ", std::strerror(e)));
    }
    if (pid == 0) {
      // Child: die with the thread that started us; stdin from /dev/null, stdout/stderr to log.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);
      // A process group of its own: the terminal's Ctrl-C is for the parent, which stops this
      // server last, after the work that uses it.
      setpgid(0, 0);
      const int null_fd = open("/dev/null", O_RDONLY);
      if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
      dup2(log_fd, STDOUT_FILENO);
      dup2(log_fd, STDERR_FILENO);
      syscall(SYS_close_range, 3U, ~0U, 0U);  // no inherited sockets or files
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(log_fd);
    switch (WaitUntilReady(pid, try_port, std::chrono::seconds(10))) {
      case Readiness::kReady:
        return std::unique_ptr<RedisServerProcess>(new RedisServerProcess(pid, try_port, log_path));
      case Readiness::kExited: {
        const std::string log = FileTail(log_path);
        last_error = absl::UnavailableError(Cat("redis-server on 127.0.0.1:", try_port,
                                                " exited during startup; its log (", log_path,
                                                ") ends: ", log));
        const bool port_taken = log.find("Address already in use") != std::string::npos;
        if (!port_taken) return last_error;
        if (!pick_port) {
          return absl::UnavailableError(Cat("redis-server: port 127.0.0.1:", try_port,
                                            " is in use by another process; stop it or pass "
                                            "port 0 to pick a free one"));
        }
        break;  // another process took the port: try a new one
      }
      case Readiness::kTimedOut:
        kill(pid, SIGKILL);
        WaitForExit(pid, std::chrono::seconds(5));
        return absl::UnavailableError(Cat("redis-server on 127.0.0.1:", try_port,
                                          " did not answer PING within 10s; its log (", log_path,
                                          ") ends: ", FileTail(log_path)));
    }
  }
  return last_error;
}

RedisServerProcess::~RedisServerProcess() { Stop(); }

void RedisServerProcess::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGCONT);  // in case a test left it stopped
  kill(pid_, SIGTERM);
  if (!WaitForExit(pid_, std::chrono::seconds(5))) {
    kill(pid_, SIGKILL);
    WaitForExit(pid_, std::chrono::seconds(5));
  }
  pid_ = 0;
}

void RedisServerProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  WaitForExit(pid_, std::chrono::seconds(5));
  pid_ = 0;
}

void RedisServerProcess::Signal(int signal) {
  if (pid_ > 0) kill(pid_, signal);
}

}  // namespace tailguard::store
