// Hardware-quadrant signals of a cgroup v2 and of the host: CPU use and throttling, memory and
// OOM kills, and pressure stall information (PSI). Read from files, so tests use fixture trees;
// a file that is absent (cgroup v1, a kernel without PSI, a controller not enabled) leaves its
// fields unknown rather than failing.
#ifndef TAILGUARD_COLLECT_CGROUP_H_
#define TAILGUARD_COLLECT_CGROUP_H_

#include <limits>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tailguard {

// One PSI line ("some" or "full"): the share of time (0-100 %) in which some (or all) tasks
// stalled on the resource, averaged over 10 s, 60 s and 300 s, and the total stall in seconds.
struct Pressure {
  static constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();
  double avg10 = kUnknown;
  double avg60 = kUnknown;
  double avg300 = kUnknown;
  double total_seconds = kUnknown;
};

struct CgroupStats {
  static constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();
  // cpu.stat
  double cpu_usage_seconds = kUnknown;
  double cpu_periods = kUnknown;            // nr_periods: enforcement periods of cpu.max
  double cpu_throttled_periods = kUnknown;  // nr_throttled
  double cpu_throttled_seconds = kUnknown;  // throttled_usec
  // memory.current, memory.max ("max" reads as +inf), memory.events
  double memory_bytes = kUnknown;
  double memory_limit_bytes = kUnknown;
  double oom_events = kUnknown;       // "oom": the limit was hit
  double oom_kill_events = kUnknown;  // "oom_kill": a process was killed for it
  // cpu.pressure, memory.pressure, io.pressure
  Pressure cpu_some, memory_some, memory_full, io_some, io_full;
};

// Reads the cgroup v2 directory `dir` (e.g. /sys/fs/cgroup or the process' own cgroup under
// it). NotFound when `dir` is not a directory; every file inside is optional.
absl::StatusOr<CgroupStats> ReadCgroupStats(const std::string& dir);

// The cgroup v2 directory of process `pid` ("self" or a number): the "0::PATH" line of
// <proc_root>/<pid>/cgroup joined to `cgroup_root`. NotFound when there is no such line (a
// cgroup v1 host) or the file cannot be read.
absl::StatusOr<std::string> CgroupDirOf(const std::string& proc_root = "/proc",
                                        const std::string& pid = "self",
                                        const std::string& cgroup_root = "/sys/fs/cgroup");

// Host CPU from <proc_root>/stat's "cpu" line, in seconds since boot (USER_HZ ticks).
struct HostCpu {
  double busy_seconds = 0;   // user + nice + system + irq + softirq + steal
  double idle_seconds = 0;   // idle + iowait
  double steal_seconds = 0;  // taken by the hypervisor: a noisy neighbour on the host
};
absl::StatusOr<HostCpu> ReadHostCpu(const std::string& proc_root = "/proc");

// The host's pressure of `resource` ("cpu", "memory", "io") from <proc_root>/pressure/<resource>,
// the "some" line: what a process outside any limited cgroup feels. NotFound without PSI (a
// kernel before 4.20 or booted with psi=0).
absl::StatusOr<Pressure> ReadHostPressure(const std::string& proc_root, std::string_view resource);

}  // namespace tailguard

#endif  // TAILGUARD_COLLECT_CGROUP_H_
