// Reads process_* metrics from /proc and writes them in the Prometheus text formats.
#include "collect/procfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "common/strings.h"
#include "tailguard/exposition.h"

namespace tailguard {
namespace {

// Larger than any /proc file read here (/proc/stat grows with CPUs and interrupts).
constexpr size_t kMaxFileSize = 16 << 20;

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, Cat("cannot open ", path));
  std::string data;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      ::close(fd);
      return absl::ErrnoToStatus(error, Cat("cannot read ", path));
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
    if (data.size() > kMaxFileSize) {
      ::close(fd);
      return absl::ResourceExhaustedError(Cat(path, " is larger than ", kMaxFileSize, " bytes"));
    }
  }
  ::close(fd);
  return data;
}

std::optional<uint64_t> ParseUint(std::string_view s) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::vector<std::string_view> SplitWhitespace(std::string_view s) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) ++i;
    const size_t start = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t' && s[i] != '\n') ++i;
    if (i > start) fields.push_back(s.substr(start, i - start));
  }
  return fields;
}

// The rest of the first line of `text` that starts with `prefix`.
std::optional<std::string_view> LineAfter(std::string_view text, std::string_view prefix) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    if (line.starts_with(prefix)) return line.substr(prefix.size());
    pos = end + 1;
  }
  return std::nullopt;
}

// Fills cpu, memory, threads and the start time in ticks after boot from /proc/<pid>/stat.
absl::Status ParseStat(std::string_view text, const std::string& path, ProcessStats& stats,
                       uint64_t& start_ticks) {
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so look for the last ')'.
  const size_t close = text.rfind(')');
  if (close == std::string_view::npos) {
    return absl::InternalError(Cat(path, ": no ')' after the command name"));
  }
  const std::vector<std::string_view> f = SplitWhitespace(text.substr(close + 1));
  // f[0] is field 3 (state) of proc(5); field n is f[n - 3].
  auto field = [&](int n) {
    return static_cast<size_t>(n - 3) < f.size() ? ParseUint(f[n - 3]) : std::nullopt;
  };
  const std::optional<uint64_t> utime = field(14), stime = field(15), threads = field(20),
                                starttime = field(22), vsize = field(23), rss = field(24);
  if (!utime || !stime || !threads || !starttime || !vsize || !rss) {
    return absl::InternalError(Cat(path, ": expected numbers in fields 14, 15, 20 and 22-24"));
  }
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  stats.cpu_seconds = (static_cast<double>(*utime) + static_cast<double>(*stime)) / ticks;
  stats.threads = static_cast<double>(*threads);
  stats.virtual_bytes = static_cast<double>(*vsize);
  stats.resident_bytes = static_cast<double>(*rss) * page;
  start_ticks = *starttime;
  return absl::OkStatus();
}

// The soft "Max open files" limit from /proc/<pid>/limits.
std::optional<double> MaxOpenFiles(std::string_view text) {
  const std::optional<std::string_view> rest = LineAfter(text, "Max open files");
  if (!rest) return std::nullopt;
  const std::vector<std::string_view> f = SplitWhitespace(*rest);
  if (f.empty()) return std::nullopt;
  if (f[0] == "unlimited") return static_cast<double>(UINT64_MAX);
  const std::optional<uint64_t> v = ParseUint(f[0]);
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
}

std::optional<double> CountEntries(const std::string& dir_path) {
  DIR* dir = ::opendir(dir_path.c_str());
  if (dir == nullptr) return std::nullopt;
  uint64_t n = 0;
  while (const dirent* e = ::readdir(dir)) {
    const std::string_view name = e->d_name;
    if (name != "." && name != "..") ++n;
  }
  ::closedir(dir);
  return static_cast<double>(n);
}

void AppendFamily(std::string& out, std::string_view family, std::string_view sample,
                  std::string_view type, std::string_view help, double value) {
  if (std::isnan(value)) return;
  out += Cat("# HELP ", family, ' ', help, "\n# TYPE ", family, ' ', type, '\n', sample, ' ',
             FormatSampleValue(value), '\n');
}

bool ValidPid(std::string_view pid) {
  if (pid == "self" || pid == "thread-self") return true;
  return !pid.empty() && pid.size() <= 10 &&
         pid.find_first_not_of("0123456789") == std::string_view::npos;
}

}  // namespace

absl::StatusOr<ProcessStats> ReadProcessStats(const std::string& proc_root, std::string_view pid) {
  if (!ValidPid(pid)) {
    return absl::InvalidArgumentError(
        Cat("process id must be \"self\", \"thread-self\" or a number, not \"", pid, '"'));
  }
  const std::string dir = Cat(proc_root, '/', pid);
  ProcessStats stats;
  const std::string stat_path = dir + "/stat";
  absl::StatusOr<std::string> stat = ReadFile(stat_path);
  if (!stat.ok()) return stat.status();
  uint64_t start_ticks = 0;
  if (absl::Status s = ParseStat(*stat, stat_path, stats, start_ticks); !s.ok()) return s;

  if (absl::StatusOr<std::string> limits = ReadFile(dir + "/limits"); limits.ok()) {
    stats.max_fds = MaxOpenFiles(*limits).value_or(ProcessStats::kUnknown);
  }
  stats.open_fds = CountEntries(dir + "/fd").value_or(ProcessStats::kUnknown);
  if (absl::StatusOr<std::string> system = ReadFile(proc_root + "/stat"); system.ok()) {
    const std::optional<std::string_view> btime = LineAfter(*system, "btime ");
    const std::optional<uint64_t> boot = btime ? ParseUint(*btime) : std::nullopt;
    if (boot) {
      stats.start_time_seconds =
          static_cast<double>(*boot) +
          static_cast<double>(start_ticks) / static_cast<double>(sysconf(_SC_CLK_TCK));
    }
  }
  return stats;
}

void AppendProcessMetrics(const ProcessStats& stats, std::string& out, bool openmetrics) {
  AppendFamily(out, openmetrics ? "process_cpu_seconds" : "process_cpu_seconds_total",
               "process_cpu_seconds_total", "counter",
               "Total user and system CPU time spent in seconds.", stats.cpu_seconds);
  AppendFamily(out, "process_open_fds", "process_open_fds", "gauge",
               "Number of open file descriptors.", stats.open_fds);
  AppendFamily(out, "process_max_fds", "process_max_fds", "gauge",
               "Maximum number of open file descriptors.", stats.max_fds);
  AppendFamily(out, "process_virtual_memory_bytes", "process_virtual_memory_bytes", "gauge",
               "Virtual memory size in bytes.", stats.virtual_bytes);
  AppendFamily(out, "process_resident_memory_bytes", "process_resident_memory_bytes", "gauge",
               "Resident memory size in bytes.", stats.resident_bytes);
  AppendFamily(out, "process_start_time_seconds", "process_start_time_seconds", "gauge",
               "Start time of the process since unix epoch in seconds.", stats.start_time_seconds);
  AppendFamily(out, "process_threads", "process_threads", "gauge",
               "Number of OS threads in the process.", stats.threads);
}

}  // namespace tailguard
