// tg_hostile: an attacker on loopback against a running `tailguard serve`, for the hostile-client
// suite (hostile_suite.sh). It runs every case of issue 15 in rounds until --duration is over,
// checks how each was answered, and prints one line per case and a JSON summary. Exit code 0 when
// every request was answered as it should be (a 4xx, a close, or for the long-label cases an
// answer at all) and the gateway still answers /healthz at the end; 1 otherwise.
//
// The gateway under test must have: a route "/" to a live upstream, a route "/dead/" to a port
// with nothing listening, timeouts.header below 3 s, limits.max_connections_per_client below
// --slowloris connections, and no api_token.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// One TCP connection with a receive deadline.
class Conn {
 public:
  Conn(int port, const std::string& source = "") : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    if (!source.empty()) {
      sockaddr_in from{};
      from.sin_family = AF_INET;
      inet_pton(AF_INET, source.c_str(), &from.sin_addr);
      if (bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0) ok_ = false;
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (ok_ && connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) ok_ = false;
    const int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  ~Conn() { close(fd_); }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  bool ok() const { return ok_; }
  // Whether the peer sent something (or closed), looked at without waiting.
  bool Readable() const {
    pollfd p{fd_, POLLIN, 0};
    return poll(&p, 1, 0) > 0;
  }
  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // Everything until the peer closes, or `limit` passes (then `timed_out`).
  std::string ReadToEnd(std::chrono::milliseconds limit, bool* timed_out = nullptr) {
    std::string out;
    const auto deadline = Clock::now() + limit;
    char buf[16384];
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        if (timed_out != nullptr) *timed_out = true;
        return out;
      }
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return out;
      out.append(buf, static_cast<size_t>(n));
    }
  }
  // One answer: the header and Content-Length bytes of body.
  std::string ReadAnswer(std::chrono::milliseconds limit) {
    std::string out;
    const auto deadline = Clock::now() + limit;
    char buf[16384];
    size_t want = std::string::npos;
    while (out.size() < want) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return out;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return out;
      out.append(buf, static_cast<size_t>(n));
      const size_t end = out.find("\r\n\r\n");
      if (end != std::string::npos && want == std::string::npos) {
        const size_t cl = out.find("Content-Length: ");
        want = end + 4 + (cl != std::string::npos && cl < end ? std::stoul(out.substr(cl + 16)) : 0);
      }
    }
    return out;
  }

 private:
  int fd_;
  bool ok_ = true;
};

int StatusOf(const std::string& answer) {
  if (answer.size() < 12 || answer.compare(0, 5, "HTTP/") != 0) return 0;
  return std::atoi(answer.c_str() + 9);
}

struct Tally {
  std::atomic<uint64_t> runs{0}, bad{0};
  std::string last_problem;  // guarded by the registry's mutex
};

class Suite {
 public:
  Suite(int port, int upstream_port) : port_(port), upstream_port_(upstream_port) {}

  // Only the cases whose names start with one of these run ("": all).
  std::vector<std::string> only;

  // Runs `check` (empty string: as expected; otherwise what went wrong) and counts it.
  void Case(const std::string& name, const std::function<std::string()>& check) {
    if (!only.empty() && std::none_of(only.begin(), only.end(), [&](const std::string& o) {
          return name.rfind(o, 0) == 0;
        })) {
      return;
    }
    const std::string problem = check();
    std::lock_guard<std::mutex> lock(mu_);
    Tally& t = tallies_[name];
    ++t.runs;
    if (!problem.empty()) {
      ++t.bad;
      t.last_problem = problem;
    }
  }

  // A request on a fresh connection; the whole exchange until the gateway closes (or `limit`).
  std::string Exchange(const std::string& bytes, std::chrono::milliseconds limit =
                                                     std::chrono::milliseconds(10000)) {
    Conn c(port_);
    if (!c.ok() || !c.Send(bytes)) return "";
    return c.ReadToEnd(limit);
  }

  void Round() {
    const std::string host = "Host: 127.0.0.1:" + std::to_string(port_) + "\r\n";
    auto get = [&](const std::string& path, const std::string& headers = "") {
      return "GET " + path + " HTTP/1.1\r\n" + host + headers + "Connection: close\r\n\r\n";
    };
    auto post = [&](const std::string& path, const std::string& body,
                    const std::string& headers = "") {
      return "POST " + path + " HTTP/1.1\r\n" + host + headers +
             "Content-Type: application/json\r\nConnection: close\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\n\r\n" + body;
    };
    auto expect = [](const std::string& answer, int lo, int hi) -> std::string {
      const int s = StatusOf(answer);
      if (answer.empty()) return "";  // closed without an answer: acceptable for an attacker
      if (s < lo || s > hi) return "got " + answer.substr(0, 80);
      return "";
    };
    auto answered = [](const std::string& answer) -> std::string {
      return StatusOf(answer) != 0 ? "" : "no answer";
    };

    std::string name(1 << 20, 'a');
    for (size_t i = 0; i < 32; ++i) name[rng_() % name.size()] = static_cast<char>('a' + rng_() % 26);
    Case("long_openai_model", [&] {
      return answered(Exchange(post("/llm/generate",
                                    R"({"model":")" + name + R"(","prompt":"hello"})")));
    });
    Case("long_kserve_model", [&] {
      return answered(Exchange(get("/v2/models/" + std::string(15000, 'a') + "/infer")));
    });
    Case("regex_selectors", [&] {
      for (const char* m : {"%7Bmodel%3D~%22.*%22%7D", "%7Bmodel%3D~%22((a)%7Cb)*%22%7D",
                            "%7Bmodel%3D~%22(a%7Ca)*b%22%7D"}) {
        const std::string a = Exchange(get(std::string("/api/v1/series?match=") + m));
        if (StatusOf(a) != 200) return "match " + std::string(m) + ": " + a.substr(0, 80);
      }
      return std::string();
    });
    Case("silence_without_token", [&] {
      const std::string a = Exchange(post(
          "/api/v1/silences",
          R"({"matchers":"{model=~\".*\"}","duration":"720h","created_by":"x","comment":"x"})"));
      return StatusOf(a) == 403 ? "" : "got " + a.substr(0, 80);
    });
    Case("dns_rebinding", [&] {
      const std::string a =
          Exchange("GET /api/v1/alerts HTTP/1.1\r\nHost: rebind.example.net\r\nOrigin: "
                   "http://rebind.example.net\r\nConnection: close\r\n\r\n");
      return StatusOf(a) == 403 ? "" : "got " + a.substr(0, 80);
    });
    for (const char* te : {"chunked, identity", "gzip"}) {
      Case(std::string("smuggle_te_") + (te[0] == 'g' ? "gzip" : "chunked_identity"), [&] {
        const std::string a =
            Exchange("POST /x HTTP/1.1\r\n" + host + "Transfer-Encoding: " + te +
                     "\r\n\r\nGET /x/SMUGGLED HTTP/1.1\r\n" + host + "\r\n");
        if (StatusOf(a) != 400) return "got " + a.substr(0, 80);
        if (a.find("HTTP/1.1", 5) != std::string::npos) return std::string("a second answer");
        return std::string();
      });
    }
    Case("path_traversal", [&] { return expect(Exchange(get("/x/../../etc/passwd")), 400, 400); });
    Case("no_host", [&] {
      return expect(Exchange("GET / HTTP/1.1\r\nConnection: close\r\n\r\n"), 400, 400);
    });
    Case("garbage", [&] {
      std::string junk(512, '\0');
      for (char& c : junk) c = static_cast<char>(rng_());
      return expect(Exchange(junk + "\r\n\r\n", std::chrono::milliseconds(5000)), 400, 499);
    });
    Case("header_too_large", [&] {
      return expect(Exchange(get("/", "X-Big: " + std::string(20000, 'b') + "\r\n")), 431, 431);
    });
    Case("body_too_large", [&] {
      return expect(Exchange("POST / HTTP/1.1\r\n" + host +
                             "Content-Length: 1000000000\r\nConnection: close\r\n\r\n"),
                    413, 413);
    });
    Case("bad_chunking", [&] {
      return expect(Exchange("POST / HTTP/1.1\r\n" + host +
                             "Transfer-Encoding: chunked\r\n\r\nZZ\r\nhello\r\n0\r\n\r\n"),
                    400, 400);
    });
    Case("content_length_and_chunked", [&] {
      return expect(Exchange("POST / HTTP/1.1\r\n" + host +
                             "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
                    400, 400);
    });
    Case("dead_upstream", [&] {
      const auto start = Clock::now();
      const std::string a = Exchange(get("/dead/x"));
      if (StatusOf(a) != 502) return "got " + a.substr(0, 80);
      if (Clock::now() - start > std::chrono::seconds(2)) return std::string("a slow 502");
      return std::string();
    });
  }

  // Slow headers from another client address: each connection sends a byte every 100 ms; every
  // one must end with a 408 (timeouts.header) or a 503 (the per-client limit).
  void Slowloris(int connections, const std::atomic<bool>& stop) {
    while (!stop.load()) {
      std::vector<std::unique_ptr<Conn>> conns;
      for (int i = 0; i < connections; ++i) {
        conns.push_back(std::make_unique<Conn>(port_, "127.0.0.2"));
      }
      const std::string header = "GET /slow HTTP/1.1\r\nHost: x\r\nX-Slow: " +
                                 std::string(4000, 's') + "\r\n\r\n";
      std::vector<bool> done(conns.size(), false);
      size_t finished = 0;
      const auto give_up = Clock::now() + std::chrono::seconds(15);
      for (size_t at = 0; finished < conns.size() && Clock::now() < give_up; ++at) {
        for (size_t i = 0; i < conns.size(); ++i) {
          if (done[i]) continue;
          // The gateway answered (a 503 at once, a 408 at the header timeout) or closed.
          if (conns[i]->Readable() || at >= header.size() || !conns[i]->Send(header.substr(at, 1))) {
            const std::string a = conns[i]->ReadToEnd(std::chrono::milliseconds(3000));
            const int s = StatusOf(a);
            Case("slowloris", [&] {
              return s == 408 || s == 503 || a.empty() ? "" : "got " + a.substr(0, 80);
            });
            done[i] = true;
            ++finished;
          }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      for (size_t i = 0; i < conns.size(); ++i) {
        if (done[i]) continue;
        const std::string a = conns[i]->ReadToEnd(std::chrono::milliseconds(100));
        Case("slowloris", [&] {
          return a.empty() ? "held past the header timeout" : "";
        });
      }
    }
  }

  // `requests` POSTs, each with a model name of `bytes` random letters, over `threads`
  // keep-alive connections; every one must be answered 200. Returns how many were not.
  uint64_t Flood(uint64_t requests, size_t bytes, int threads) {
    std::atomic<uint64_t> next{0}, wrong{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        std::mt19937_64 rng(1000 + t);
        std::unique_ptr<Conn> c;
        std::string name(bytes, 'a');
        while (next.fetch_add(1) < requests) {
          for (char& ch : name) ch = static_cast<char>('a' + rng() % 26);
          const std::string body = R"({"model":")" + name + R"(","prompt":"hi"})";
          const std::string req = "POST /llm/generate HTTP/1.1\r\nHost: x\r\nContent-Type: "
                                  "application/json\r\nContent-Length: " +
                                  std::to_string(body.size()) + "\r\n\r\n" + body;
          if (!c) c = std::make_unique<Conn>(port_);
          if (!c->Send(req) || StatusOf(c->ReadAnswer(std::chrono::milliseconds(30000))) != 200) {
            ++wrong;
            c.reset();
          }
        }
      });
    }
    for (std::thread& t : pool) t.join();
    return wrong.load();
  }

  bool Healthy() {
    const std::string a = Exchange("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    return StatusOf(a) == 200;
  }

  // Whether the upstream's record (its last 10 000 requests) shows any smuggled or escaped one.
  std::string UpstreamSawSmuggling() {
    Conn c(upstream_port_);
    c.Send("GET /test/requests HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    const std::string a = c.ReadToEnd(std::chrono::milliseconds(10000));
    for (const char* needle : {"SMUGGLED", "/etc/passwd"}) {
      if (a.find(needle) != std::string::npos) return needle;
    }
    return "";
  }

  // Prints one line per case; true when none went wrong.
  bool Report(bool healthy, const std::string& smuggled, double seconds) {
    std::lock_guard<std::mutex> lock(mu_);
    bool ok = healthy && smuggled.empty();
    uint64_t total = 0;
    std::string json = "{\"cases\":{";
    bool first = true;
    for (const auto& [name, t] : tallies_) {
      std::printf("hostile: %-28s %6llu runs %4llu wrong%s%s\n", name.c_str(),
                  static_cast<unsigned long long>(t.runs.load()),
                  static_cast<unsigned long long>(t.bad.load()), t.bad ? ": " : "",
                  t.last_problem.c_str());
      ok &= t.bad == 0;
      total += t.runs;
      json += (first ? "\"" : ",\"") + name + "\":{\"runs\":" + std::to_string(t.runs.load()) +
              ",\"wrong\":" + std::to_string(t.bad.load()) + "}";
      first = false;
    }
    json += "},\"requests\":" + std::to_string(total) + ",\"seconds\":" + std::to_string(seconds) +
            ",\"healthy\":" + (healthy ? "true" : "false") + ",\"smuggled\":\"" + smuggled +
            "\",\"ok\":" + (ok ? "true" : "false") + "}";
    std::printf("%s\n", json.c_str());
    if (!healthy) std::printf("hostile: FAIL the gateway no longer answers /healthz\n");
    if (!smuggled.empty()) std::printf("hostile: FAIL the upstream received %s\n", smuggled.c_str());
    return ok;
  }

 private:
  const int port_;
  const int upstream_port_;
  std::mt19937_64 rng_{42};
  std::mutex mu_;
  std::map<std::string, Tally> tallies_;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tg_hostile: hostile clients against a running tailguard serve (issue 15)"};
  int port = 0, upstream_port = 0, slowloris = 100;
  double duration = 10, pause_ms = 50;
  app.add_option("--port", port, "the gateway's port on 127.0.0.1")->required();
  app.add_option("--upstream-port", upstream_port, "tg_test_upstream's port (to read its record)")
      ->required();
  app.add_option("--duration", duration, "seconds of rounds");
  app.add_option("--pause-ms", pause_ms, "pause between rounds");
  app.add_option("--slowloris", slowloris, "slow connections at a time from 127.0.0.2 (0: none)");
  std::vector<std::string> only;
  app.add_option("--only", only, "run only the cases whose names start with these")->delimiter(',');
  uint64_t flood = 0;
  size_t flood_bytes = 1 << 20;
  int flood_threads = 4;
  app.add_option("--flood", flood,
                 "instead of the rounds: this many POSTs to /llm/generate with random model names");
  app.add_option("--flood-bytes", flood_bytes, "length of each flooding model name");
  app.add_option("--flood-threads", flood_threads, "connections the flood uses");
  CLI11_PARSE(app, argc, argv);

  Suite suite(port, upstream_port);
  suite.only = only;
  if (flood > 0) {
    const auto start = Clock::now();
    const uint64_t wrong = suite.Flood(flood, flood_bytes, flood_threads);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    std::printf("{\"flood\":%llu,\"bytes\":%zu,\"wrong\":%llu,\"seconds\":%.1f}\n",
                static_cast<unsigned long long>(flood), flood_bytes,
                static_cast<unsigned long long>(wrong), seconds);
    return wrong == 0 && suite.Healthy() ? 0 : 1;
  }
  std::atomic<bool> stop{false};
  std::thread slow;
  if (slowloris > 0) slow = std::thread([&] { suite.Slowloris(slowloris, stop); });
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(duration));
  while (Clock::now() < end) {
    suite.Round();
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(pause_ms));
  }
  stop = true;
  if (slow.joinable()) slow.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const bool ok = suite.Report(suite.Healthy(), suite.UpstreamSawSmuggling(), seconds);
  return ok ? 0 : 1;
}
