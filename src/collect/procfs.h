// Process metrics from Linux /proc, computed and exported the way the Prometheus client libraries
// export theirs (process_cpu_seconds_total, process_resident_memory_bytes, ...), so dashboards
// and alerts written for any Prometheus client work on tailguard too.
#ifndef TAILGUARD_COLLECT_PROCFS_H_
#define TAILGUARD_COLLECT_PROCFS_H_

#include <limits>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tailguard {

// One reading of a process. A field is NaN when its source could not be read (see
// ReadProcessStats()); AppendProcessMetrics() leaves such fields out.
struct ProcessStats {
  static constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

  double cpu_seconds = kUnknown;     // user + system CPU time, seconds
  double resident_bytes = kUnknown;  // resident set size, bytes
  double virtual_bytes = kUnknown;   // virtual memory size, bytes
  // Open file descriptors: the entries of /proc/<pid>/fd. Reading the directory of the calling
  // process itself holds one descriptor, which is counted, as the Go and Python clients count it.
  double open_fds = kUnknown;
  // The soft RLIMIT_NOFILE; "unlimited" is 2^64 - 1, as the Go client reports it.
  double max_fds = kUnknown;
  double start_time_seconds = kUnknown;  // process start, seconds since the Unix epoch
  double threads = kUnknown;             // OS threads of the process
};

// Reads the process `pid` ("self", "thread-self" or a number) from the proc file system mounted
// at `proc_root`:
//   <pid>/stat     utime + stime (clock ticks, sysconf(_SC_CLK_TCK)), num_threads, starttime
//                  (ticks after boot), vsize (bytes), rss (pages, sysconf(_SC_PAGESIZE))
//   <pid>/limits   the soft limit of "Max open files"
//   <pid>/fd       the number of entries
//   stat           btime (boot time, seconds since the epoch), for start_time_seconds
// Errors: InvalidArgument for another kind of `pid`; the error of opening <pid>/stat (e.g.
// NotFound when the process does not exist, PermissionDenied); Internal when <pid>/stat is not
// in the expected format. The other sources only leave their fields unknown when missing or
// malformed. Reads a few small files and lists a directory; thread-safe.
absl::StatusOr<ProcessStats> ReadProcessStats(const std::string& proc_root = "/proc",
                                              std::string_view pid = "self");

// Appends the known fields of `stats` to `out` as metric families with # HELP and # TYPE lines:
//   process_cpu_seconds_total (counter), process_resident_memory_bytes,
//   process_virtual_memory_bytes, process_open_fds, process_max_fds,
//   process_start_time_seconds, process_threads (gauges).
// In the Prometheus text format 0.0.4 (default) a counter family is named like its sample,
// process_cpu_seconds_total; with `openmetrics` (OpenMetrics 1.0) the family is
// process_cpu_seconds and the sample process_cpu_seconds_total. Values are written in the
// shortest form that reads back exactly. The caller writes any "# EOF".
void AppendProcessMetrics(const ProcessStats& stats, std::string& out, bool openmetrics = false);

}  // namespace tailguard

#endif  // TAILGUARD_COLLECT_PROCFS_H_
