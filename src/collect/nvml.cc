#include "collect/nvml.h"

#include <dlfcn.h>

#include "common/strings.h"

namespace tailguard {

namespace {

// NVML's ABI, as nvml.h declares it (only what is read here).
using nvmlReturn_t = int;
constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kInsufficientSize = 7;
using nvmlDevice_t = void*;
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

}  // namespace

struct Nvml::Api {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*count)(unsigned int*) = nullptr;
  nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  // (device, count in/out, infos): with a count of 0 it answers the number, as
  // kInsufficientSize when there are some. Optional.
  nvmlReturn_t (*processes)(nvmlDevice_t, unsigned int*, void*) = nullptr;
};

absl::StatusOr<std::unique_ptr<Nvml>> Nvml::Open(const std::string& library) {
  void* h = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* why = ::dlerror();
    return absl::UnavailableError(Cat("no GPU signals: ", library, " cannot be loaded (",
                                      why != nullptr ? why : "unknown error",
                                      "); no NVIDIA driver on this host"));
  }
  std::unique_ptr<Nvml> n(new Nvml());
  n->handle_ = h;
  n->api_ = std::make_unique<Api>();
  Api& a = *n->api_;
  auto sym = [h](const char* name) { return ::dlsym(h, name); };
  a.init = reinterpret_cast<decltype(a.init)>(sym("nvmlInit_v2"));
  a.shutdown = reinterpret_cast<decltype(a.shutdown)>(sym("nvmlShutdown"));
  a.count = reinterpret_cast<decltype(a.count)>(sym("nvmlDeviceGetCount_v2"));
  a.handle = reinterpret_cast<decltype(a.handle)>(sym("nvmlDeviceGetHandleByIndex_v2"));
  a.name = reinterpret_cast<decltype(a.name)>(sym("nvmlDeviceGetName"));
  a.utilization = reinterpret_cast<decltype(a.utilization)>(sym("nvmlDeviceGetUtilizationRates"));
  a.memory = reinterpret_cast<decltype(a.memory)>(sym("nvmlDeviceGetMemoryInfo"));
  a.processes =
      reinterpret_cast<decltype(a.processes)>(sym("nvmlDeviceGetComputeRunningProcesses_v3"));
  if (a.init == nullptr || a.shutdown == nullptr || a.count == nullptr || a.handle == nullptr ||
      a.utilization == nullptr || a.memory == nullptr) {
    ::dlclose(h);
    n->handle_ = nullptr;
    return absl::UnavailableError(
        Cat("no GPU signals: ", library, " lacks the NVML functions tailguard reads"));
  }
  if (const nvmlReturn_t r = a.init(); r != kSuccess) {
    ::dlclose(h);
    n->handle_ = nullptr;
    return absl::UnavailableError(Cat("no GPU signals: nvmlInit failed (NVML error ", r, ")"));
  }
  if (a.count(&n->count_) != kSuccess) n->count_ = 0;
  return n;
}

Nvml::~Nvml() {
  if (handle_ == nullptr) return;
  api_->shutdown();
  ::dlclose(handle_);
}

std::vector<GpuStats> Nvml::Read() const {
  std::vector<GpuStats> out;
  for (unsigned i = 0; i < count_; ++i) {
    nvmlDevice_t d = nullptr;
    if (api_->handle(i, &d) != kSuccess) continue;
    GpuStats s;
    s.index = i;
    char name[96] = {};
    if (api_->name != nullptr && api_->name(d, name, sizeof name) == kSuccess) s.name = name;
    nvmlUtilization_t u{};
    nvmlMemory_t m{};
    if (api_->utilization(d, &u) != kSuccess || api_->memory(d, &m) != kSuccess) continue;
    s.utilization_pct = u.gpu;
    s.memory_utilization_pct = u.memory;
    s.memory_used_bytes = static_cast<double>(m.used);
    s.memory_total_bytes = static_cast<double>(m.total);
    if (api_->processes != nullptr) {
      unsigned int n = 0;
      const nvmlReturn_t r = api_->processes(d, &n, nullptr);
      if (r == kSuccess || r == kInsufficientSize) s.compute_processes = static_cast<int>(n);
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace tailguard
