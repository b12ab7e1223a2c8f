// GPU signals through NVML, loaded with dlopen so that tailguard neither links nor needs the
// NVIDIA driver: on a host without one, Open() says so and the hardware quadrant goes on without
// GPU signals. Reads, per device: utilisation (SM and memory bandwidth, percent over the
// driver's last sample period), memory used and total, and the number of processes running
// compute work on it (others than this one are neighbours).
#ifndef TAILGUARD_COLLECT_NVML_H_
#define TAILGUARD_COLLECT_NVML_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tailguard {

struct GpuStats {
  unsigned index = 0;
  std::string name;
  double utilization_pct = 0;         // SM busy
  double memory_utilization_pct = 0;  // memory-bandwidth busy
  double memory_used_bytes = 0;
  double memory_total_bytes = 0;
  int compute_processes = -1;  // -1 when the driver does not say
};

class Nvml {
 public:
  // Loads `library` (default "libnvidia-ml.so.1", the driver's) and initialises NVML.
  // Unavailable, saying why, when the library is absent (no NVIDIA driver: no GPU) or NVML fails
  // to initialise; the caller reports it once and carries on without GPU signals.
  static absl::StatusOr<std::unique_ptr<Nvml>> Open(
      const std::string& library = "libnvidia-ml.so.1");
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  // Every device's stats; a device that fails to answer is left out.
  std::vector<GpuStats> Read() const;
  unsigned device_count() const { return count_; }

 private:
  struct Api;
  Nvml() = default;
  void* handle_ = nullptr;
  std::unique_ptr<Api> api_;
  unsigned count_ = 0;
};

}  // namespace tailguard

#endif  // TAILGUARD_COLLECT_NVML_H_
