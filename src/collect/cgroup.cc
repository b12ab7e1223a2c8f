#include "collect/cgroup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string_view>

#include "common/strings.h"

namespace tailguard {
namespace {

bool ReadSmall(const std::string& path, std::string& out) {
  std::ifstream in(path);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  out = s.str();
  return true;
}

// "key value" lines: the value of `key`, or NaN.
double KeyValue(const std::string& text, std::string_view key) {
  std::istringstream in(text);
  std::string k;
  double v;
  while (in >> k >> v) {
    if (k == key) return v;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

double SingleNumber(const std::string& path) {
  std::string text;
  if (!ReadSmall(path, text)) return CgroupStats::kUnknown;
  std::string_view t = TrimAsciiSpace(text);
  if (t == "max") return std::numeric_limits<double>::infinity();
  std::istringstream in{std::string(t)};
  double v;
  if (!(in >> v)) return CgroupStats::kUnknown;
  return v;
}

// "some avg10=0.00 avg60=0.00 avg300=0.00 total=0" (total in microseconds).
Pressure PressureLine(const std::string& text, std::string_view kind) {
  Pressure p;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    std::string head;
    if (!(in >> head) || head != kind) continue;
    std::string field;
    while (in >> field) {
      const size_t eq = field.find('=');
      if (eq == std::string::npos) continue;
      const std::string name = field.substr(0, eq);
      double v;
      std::istringstream num(field.substr(eq + 1));
      if (!(num >> v)) continue;
      if (name == "avg10") p.avg10 = v;
      if (name == "avg60") p.avg60 = v;
      if (name == "avg300") p.avg300 = v;
      if (name == "total") p.total_seconds = v / 1e6;
    }
  }
  return p;
}

}  // namespace

absl::StatusOr<CgroupStats> ReadCgroupStats(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::NotFoundError(Cat(dir, ": not a cgroup directory"));
  }
  CgroupStats s;
  std::string text;
  if (ReadSmall(dir + "/cpu.stat", text)) {
    s.cpu_usage_seconds = KeyValue(text, "usage_usec") / 1e6;
    s.cpu_periods = KeyValue(text, "nr_periods");
    s.cpu_throttled_periods = KeyValue(text, "nr_throttled");
    s.cpu_throttled_seconds = KeyValue(text, "throttled_usec") / 1e6;
  }
  s.memory_bytes = SingleNumber(dir + "/memory.current");
  s.memory_limit_bytes = SingleNumber(dir + "/memory.max");
  if (ReadSmall(dir + "/memory.events", text)) {
    s.oom_events = KeyValue(text, "oom");
    s.oom_kill_events = KeyValue(text, "oom_kill");
  }
  if (ReadSmall(dir + "/cpu.pressure", text)) s.cpu_some = PressureLine(text, "some");
  if (ReadSmall(dir + "/memory.pressure", text)) {
    s.memory_some = PressureLine(text, "some");
    s.memory_full = PressureLine(text, "full");
  }
  if (ReadSmall(dir + "/io.pressure", text)) {
    s.io_some = PressureLine(text, "some");
    s.io_full = PressureLine(text, "full");
  }
  return s;
}

absl::StatusOr<std::string> CgroupDirOf(const std::string& proc_root, const std::string& pid,
                                        const std::string& cgroup_root) {
  const std::string path = proc_root + "/" + pid + "/cgroup";
  std::string text;
  if (!ReadSmall(path, text)) return absl::NotFoundError(Cat(path, ": cannot be read"));
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("0::", 0) == 0) {
      std::string rel = line.substr(3);
      if (rel == "/") return cgroup_root;
      return cgroup_root + rel;
    }
  }
  return absl::NotFoundError(Cat(path, ": no cgroup v2 line (0::PATH); a cgroup v1 host"));
}

absl::StatusOr<HostCpu> ReadHostCpu(const std::string& proc_root) {
  const std::string path = proc_root + "/stat";
  std::string text;
  if (!ReadSmall(path, text)) return absl::NotFoundError(Cat(path, ": cannot be read"));
  std::istringstream in(text);
  std::string head;
  double t[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // user nice system idle iowait irq softirq steal
  if (!(in >> head) || head != "cpu") {
    return absl::InternalError(Cat(path, ": the first line is not the 'cpu' total"));
  }
  for (double& v : t) {
    if (!(in >> v)) return absl::InternalError(Cat(path, ": the 'cpu' line has under 8 fields"));
  }
  const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
  HostCpu c;
  c.busy_seconds = (t[0] + t[1] + t[2] + t[5] + t[6] + t[7]) / hz;
  c.idle_seconds = (t[3] + t[4]) / hz;
  c.steal_seconds = t[7] / hz;
  return c;
}

absl::StatusOr<Pressure> ReadHostPressure(const std::string& proc_root, std::string_view resource) {
  const std::string path = Cat(proc_root, "/pressure/", resource);
  std::string text;
  if (!ReadSmall(path, text)) return absl::NotFoundError(Cat(path, ": cannot be read (no PSI)"));
  return PressureLine(text, "some");
}

}  // namespace tailguard
