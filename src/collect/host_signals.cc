#include "collect/host_signals.h"

#include <cmath>
#include <utility>

#include "collect/procfs.h"
#include "common/strings.h"

namespace tailguard {

HostSignals::HostSignals(Registry& registry, HostSignalsOptions options)
    : registry_(registry), options_(std::move(options)) {
  absl::StatusOr<std::string> dir =
      CgroupDirOf(options_.proc_root, options_.pid, options_.cgroup_root);
  if (dir.ok() && ReadCgroupStats(*dir).ok()) {
    cgroup_dir_ = *dir;
  } else {
    cgroup_why_ = dir.ok() ? Cat(*dir, ": not readable") : std::string(dir.status().message());
  }
  host_psi_ = ReadHostPressure(options_.proc_root, "cpu").ok();
  if (options_.nvml_library.empty()) {
    nvml_why_ = "no GPU signals: not asked for";
  } else if (absl::StatusOr<std::unique_ptr<Nvml>> n = Nvml::Open(options_.nvml_library); n.ok()) {
    nvml_ = *std::move(n);
    gpus_.resize(nvml_->device_count());
  } else {
    nvml_why_ = std::string(n.status().message());
  }
}

void HostSignals::SetGpu(Series*& gauge, const char* name, unsigned index, Unit unit,
                         double value) {
  if (gauge == nullptr) {
    absl::StatusOr<Series*> s = registry_.Gauge(name, {{"gpu", std::to_string(index)}}, unit);
    if (!s.ok()) return;
    gauge = *s;
  }
  gauge->Set(static_cast<int64_t>(std::llround(std::max(0.0, value))));
}

void HostSignals::Set(Series*& gauge, const char* name, Unit unit, double value) {
  if (std::isnan(value)) return;  // unknown stays absent, not 0
  if (gauge == nullptr) {
    absl::StatusOr<Series*> s = registry_.Gauge(name, {}, unit);
    if (!s.ok()) return;  // past max_series: the registry counts the refusal
    gauge = *s;
  }
  gauge->Set(static_cast<int64_t>(std::llround(std::max(0.0, value))));
}

void HostSignals::Sample(double now_s) {
  const double elapsed = last_s_ < 0 ? 0 : now_s - last_s_;
  auto rate = [&](double now, double& last) {
    const double r = elapsed > 0 && !std::isnan(now) ? (now - last) / elapsed : NAN;
    if (!std::isnan(now)) last = now;
    return r;
  };

  double process_rate = NAN;
  if (absl::StatusOr<ProcessStats> p = ReadProcessStats(options_.proc_root, options_.pid); p.ok()) {
    process_rate = rate(p->cpu_seconds, last_process_cpu_);
    Set(process_cpu_, "tailguard_process_cpu_millicores", Unit::kCount, process_rate * 1000);
    Set(process_rss_, "tailguard_process_resident_memory_bytes", Unit::kBytes, p->resident_bytes);
    Set(process_threads_, "tailguard_process_threads", Unit::kCount, p->threads);
  }
  if (absl::StatusOr<HostCpu> h = ReadHostCpu(options_.proc_root); h.ok()) {
    const double busy = rate(h->busy_seconds, last_host_busy_);
    const double steal = rate(h->steal_seconds, last_steal_);
    // Steal is inside busy; the neighbours' CPU is what is busy but neither ours nor stolen.
    Set(host_other_, "tailguard_host_cpu_other_millicores", Unit::kCount,
        (busy - steal - (std::isnan(process_rate) ? 0 : process_rate)) * 1000);
    Set(host_steal_, "tailguard_host_cpu_steal_millicores", Unit::kCount, steal * 1000);
  }
  Pressure cpu_pressure, memory_pressure;
  if (cgroup_dir_) {
    if (absl::StatusOr<CgroupStats> c = ReadCgroupStats(*cgroup_dir_); c.ok()) {
      Set(throttled_, "tailguard_cgroup_cpu_throttled_permille", Unit::kCount,
          rate(c->cpu_throttled_seconds, last_throttled_) * 1000);
      Set(cgroup_memory_, "tailguard_cgroup_memory_bytes", Unit::kBytes, c->memory_bytes);
      Set(oom_kills_, "tailguard_cgroup_oom_kills", Unit::kCount, c->oom_kill_events);
      if (!std::isnan(c->oom_kill_events)) {
        if (last_oom_kills_ >= 0 && c->oom_kill_events > last_oom_kills_ && options_.on_oom_kill) {
          options_.on_oom_kill(c->oom_kill_events - last_oom_kills_);
        }
        last_oom_kills_ = c->oom_kill_events;
      }
      cpu_pressure = c->cpu_some;
      memory_pressure = c->memory_some;
    }
  }
  // The root cgroup has no pressure files: the host's are the same thing there.
  if (std::isnan(cpu_pressure.avg10) && host_psi_) {
    if (auto p = ReadHostPressure(options_.proc_root, "cpu"); p.ok()) cpu_pressure = *p;
    if (auto p = ReadHostPressure(options_.proc_root, "memory"); p.ok()) memory_pressure = *p;
  }
  // avg10 is a percentage: ten permille per point.
  Set(cpu_pressure_, "tailguard_cpu_pressure_some_permille", Unit::kCount, cpu_pressure.avg10 * 10);
  Set(memory_pressure_, "tailguard_memory_pressure_some_permille", Unit::kCount,
      memory_pressure.avg10 * 10);
  if (nvml_ != nullptr) {
    for (const GpuStats& g : nvml_->Read()) {
      if (g.index >= gpus_.size()) continue;
      GpuGauges& x = gpus_[g.index];
      SetGpu(x.utilization, "tailguard_gpu_utilization_pct", g.index, Unit::kCount,
             g.utilization_pct);
      SetGpu(x.bandwidth, "tailguard_gpu_memory_bandwidth_utilization_pct", g.index, Unit::kCount,
             g.memory_utilization_pct);
      SetGpu(x.memory, "tailguard_gpu_memory_used_bytes", g.index, Unit::kBytes,
             g.memory_used_bytes);
      if (g.compute_processes >= 0) {
        SetGpu(x.processes, "tailguard_gpu_compute_processes", g.index, Unit::kCount,
               g.compute_processes);
      }
    }
  }
  last_s_ = now_s;
}

std::string HostSignals::Describe() const {
  std::string out = "hardware signals: process and host CPU from " + options_.proc_root;
  out +=
      cgroup_dir_ ? Cat("; cgroup v2 ", *cgroup_dir_) : Cat("; no cgroup v2 (", cgroup_why_, ")");
  out += host_psi_ ? "; pressure (PSI)" : "; no pressure (PSI) on this kernel";
  out += nvml_ != nullptr ? Cat("; ", nvml_->device_count(), " GPU(s) through NVML")
                          : Cat("; ", nvml_why_);
  return out;
}

}  // namespace tailguard
