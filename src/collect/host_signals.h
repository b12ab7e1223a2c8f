// The hardware quadrant's signals as registry gauges: the process' CPU and memory, the CPU the
// host's other processes and the hypervisor take, the cgroup's throttling and memory, pressure
// stall (PSI) and OOM kills. Sampled once per registry slot, so that they are windowed,
// exported on /metrics, kept in history and seen by the analyzer and the live diagnosis like
// every other series. What the host does not have (no cgroup v2, no PSI) is left out and said
// once in Describe(), never an error.
//
// Gauges (integers: CPU in millicores, shares in permille):
//   tailguard_process_cpu_millicores          this process (a symptom: our own work)
//   tailguard_process_resident_memory_bytes   its RSS
//   tailguard_process_threads                 its OS threads
//   tailguard_host_cpu_other_millicores       every other process on the host (a neighbour)
//   tailguard_host_cpu_steal_millicores       taken by the hypervisor
//   tailguard_cgroup_cpu_throttled_permille   share of time the cgroup's quota held it back
//   tailguard_cgroup_memory_bytes             the cgroup's memory.current
//   tailguard_cgroup_oom_kills                memory.events oom_kill, cumulative
//   tailguard_cpu_pressure_some_permille      PSI "some" avg10: tasks waiting for a CPU
//   tailguard_memory_pressure_some_permille   PSI "some" avg10: tasks stalled on memory
// and per GPU (label gpu="0", ...; through NVML, collect/nvml.h, when the driver is there):
//   tailguard_gpu_utilization_pct              SM busy
//   tailguard_gpu_memory_bandwidth_utilization_pct
//   tailguard_gpu_memory_used_bytes
//   tailguard_gpu_compute_processes            processes with compute work on it
#ifndef TAILGUARD_COLLECT_HOST_SIGNALS_H_
#define TAILGUARD_COLLECT_HOST_SIGNALS_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collect/cgroup.h"
#include "collect/nvml.h"
#include "tailguard/registry.h"

namespace tailguard {

struct HostSignalsOptions {
  std::string proc_root = "/proc";
  std::string cgroup_root = "/sys/fs/cgroup";
  std::string pid = "self";
  // Called (on the sampling thread) when the cgroup's OOM-kill count rises: a managed process
  // was killed for memory. Its argument is the number of new kills.
  std::function<void(double)> on_oom_kill;
  // NVML's library; "" reads no GPU.
  std::string nvml_library = "libnvidia-ml.so.1";
};

// Not thread-safe: one thread calls Sample() (the live loop, before each collection).
class HostSignals {
 public:
  // `registry` must outlive it. Never fails: unreadable sources are left out (Describe()).
  HostSignals(Registry& registry, HostSignalsOptions options = {});

  // Reads every source and sets the gauges; `now_s` is a monotonic time in seconds (the
  // registry's clock), for the CPU rates between two samples.
  void Sample(double now_s);

  // One line: which sources are read and which are not, and why. For the startup log.
  std::string Describe() const;

 private:
  void Set(Series*& gauge, const char* name, Unit unit, double value);

  Registry& registry_;
  const HostSignalsOptions options_;
  std::optional<std::string> cgroup_dir_;
  std::string cgroup_why_;
  bool host_psi_ = false;
  // The previous sample, for rates.
  double last_s_ = -1;
  double last_process_cpu_ = 0, last_host_busy_ = 0, last_steal_ = 0, last_throttled_ = 0;
  double last_oom_kills_ = -1;
  Series* process_cpu_ = nullptr;
  Series* process_rss_ = nullptr;
  Series* process_threads_ = nullptr;
  Series* host_other_ = nullptr;
  Series* host_steal_ = nullptr;
  Series* throttled_ = nullptr;
  Series* cgroup_memory_ = nullptr;
  Series* oom_kills_ = nullptr;
  Series* cpu_pressure_ = nullptr;
  Series* memory_pressure_ = nullptr;
  std::unique_ptr<Nvml> nvml_;
  std::string nvml_why_;
  struct GpuGauges {
    Series *utilization = nullptr, *bandwidth = nullptr, *memory = nullptr, *processes = nullptr;
  };
  std::vector<GpuGauges> gpus_;
  void SetGpu(Series*& gauge, const char* name, unsigned index, Unit unit, double value);
};

}  // namespace tailguard

#endif  // TAILGUARD_COLLECT_HOST_SIGNALS_H_
