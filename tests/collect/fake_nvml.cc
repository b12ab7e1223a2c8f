// A stand-in for libnvidia-ml.so.1: two devices with fixed readings, for the NVML reader's
// tests on machines without a GPU. Device 1 fails to report its memory.
#include <cstring>

extern "C" {

typedef void* nvmlDevice_t;
typedef struct {
  unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;

static int devices[2];
static int initialised;

int nvmlInit_v2(void) {
  initialised = 1;
  return 0;
}
int nvmlShutdown(void) {
  initialised = 0;
  return 0;
}
int nvmlDeviceGetCount_v2(unsigned int* n) {
  *n = 2;
  return initialised ? 0 : 1;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t* d) {
  if (i > 1) return 2;
  *d = &devices[i];
  return 0;
}
int nvmlDeviceGetName(nvmlDevice_t d, char* name, unsigned int size) {
  std::strncpy(name, d == &devices[0] ? "Fake H200" : "Fake T4", size - 1);
  return 0;
}
int nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
  u->gpu = 87;
  u->memory = 42;
  return 0;
}
int nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* m) {
  if (d != &devices[0]) return 999;  // NVML_ERROR_UNKNOWN
  m->total = 80ull << 30;
  m->used = 20ull << 30;
  m->free = m->total - m->used;
  return 0;
}
int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int* n, void* infos) {
  *n = 3;
  return infos == nullptr ? 7 : 0;  // NVML_ERROR_INSUFFICIENT_SIZE: the count
}

}  // extern "C"
