// tg_test_upstream (tests/integration/test_upstream.cc) as a child process for GoogleTest
// suites: started on a free loopback port, stopped with SIGTERM. The including test defines
// TG_TEST_UPSTREAM, the binary's path. Header-only, for tests.
#ifndef TAILGUARD_TESTS_INTEGRATION_TEST_UPSTREAM_PROCESS_H_
#define TAILGUARD_TESTS_INTEGRATION_TEST_UPSTREAM_PROCESS_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "gtest/gtest.h"

namespace tailguard::test_support {

// A child process that prints "listening on HOST:PORT" on its first line.
class TestUpstream {
 public:
  // `port` 0 picks a free one; another port is for a restart on the same address.
  explicit TestUpstream(int threads = 0, int port = 0) {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    const std::string thread_count = std::to_string(threads);
    const std::string listen = "127.0.0.1:" + std::to_string(port);
    const char* argv[] = {TG_TEST_UPSTREAM, "--listen", listen.c_str(), nullptr, nullptr, nullptr};
    if (threads > 0) {
      argv[3] = "--threads";
      argv[4] = thread_count.c_str();
    }
    EXPECT_EQ(
        posix_spawn(&pid_, TG_TEST_UPSTREAM, &actions, nullptr, const_cast<char**>(argv), environ),
        0);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    FILE* out = fdopen(fds[0], "r");
    char line[256] = {};
    EXPECT_NE(fgets(line, sizeof(line), out), nullptr) << "tg_test_upstream did not start";
    fclose(out);
    const std::string text(line);
    port_ = std::stoi(text.substr(text.rfind(':') + 1));
  }
  ~TestUpstream() {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  TestUpstream(const TestUpstream&) = delete;
  TestUpstream& operator=(const TestUpstream&) = delete;

  int port() const { return port_; }
  std::string url(const std::string& path = "/") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

 private:
  pid_t pid_ = 0;
  int port_ = 0;
};

// A loopback port with nothing listening.
inline int DeadPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

}  // namespace tailguard::test_support

#endif  // TAILGUARD_TESTS_INTEGRATION_TEST_UPSTREAM_PROCESS_H_
