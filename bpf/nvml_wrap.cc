// DYNAMIX — NvmlGpu: a table of NVML symbols resolved with dlsym; every call checked in place.
#include "bpf/nvml_wrap.h"

#include <dlfcn.h>

namespace dynamix {

// The few NVML types we use, declared here from the public ABI (no nvml.h at build time). A named
// namespace: NvmlGpu::Api has members of these types, which an anonymous one would give internal
// linkage (-Wsubobject-linkage).
namespace nvml_abi {

using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;  // NVML_CLOCK_SM
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

}  // namespace nvml_abi
using namespace nvml_abi;  // NOLINT(google-build-using-namespace): this file's own ABI table

struct NvmlGpu::Api {
  nvmlReturn_t (*init)();
  nvmlReturn_t (*shutdown)();
  const char* (*error_string)(nvmlReturn_t);
  nvmlReturn_t (*device_count)(unsigned int*);
  nvmlReturn_t (*handle_by_index)(unsigned int, nvmlDevice_t*);
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*);
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*);
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned int*);
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned int*);
};

namespace {

struct Symbol {
  const char* name;
  void** slot;
};

}  // namespace

NvmlGpu::NvmlGpu(int gpu_index, const std::string& library) {
  if (gpu_index < 0) {
    reason_ = "GPU monitoring disabled (gpu index " + std::to_string(gpu_index) + ")";
    return;
  }
  lib_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib_) {
    const char* err = dlerror();
    reason_ = "NVML not available: dlopen(" + library + ") failed: " + (err ? err : "unknown error");
    return;
  }
  api_ = new Api();
  const Symbol table[] = {
      {"nvmlInit_v2", reinterpret_cast<void**>(&api_->init)},
      {"nvmlShutdown", reinterpret_cast<void**>(&api_->shutdown)},
      {"nvmlErrorString", reinterpret_cast<void**>(&api_->error_string)},
      {"nvmlDeviceGetCount_v2", reinterpret_cast<void**>(&api_->device_count)},
      {"nvmlDeviceGetHandleByIndex_v2", reinterpret_cast<void**>(&api_->handle_by_index)},
      {"nvmlDeviceGetUtilizationRates", reinterpret_cast<void**>(&api_->utilization)},
      {"nvmlDeviceGetMemoryInfo", reinterpret_cast<void**>(&api_->memory)},
      {"nvmlDeviceGetPowerUsage", reinterpret_cast<void**>(&api_->power)},
      {"nvmlDeviceGetClockInfo", reinterpret_cast<void**>(&api_->clock)},
  };
  for (const Symbol& s : table) {
    *s.slot = dlsym(lib_, s.name);
    if (!*s.slot) {
      reason_ = std::string("NVML not available: symbol ") + s.name + " missing in " + library;
      return;
    }
  }
  auto fail = [this](const char* call, nvmlReturn_t rc) {
    reason_ = std::string("NVML not available: ") + call + " failed: " + api_->error_string(rc);
  };
  nvmlReturn_t rc = api_->init();
  if (rc != kNvmlSuccess) {
    fail("nvmlInit_v2", rc);
    return;
  }
  initialized_ = true;
  unsigned int count = 0;
  rc = api_->device_count(&count);
  if (rc != kNvmlSuccess) {
    fail("nvmlDeviceGetCount_v2", rc);
    return;
  }
  if (unsigned(gpu_index) >= count) {
    reason_ = "NVML: no GPU " + std::to_string(gpu_index) + " (" + std::to_string(count) + " visible)";
    return;
  }
  nvmlDevice_t dev = nullptr;
  rc = api_->handle_by_index(unsigned(gpu_index), &dev);
  if (rc != kNvmlSuccess) {
    fail("nvmlDeviceGetHandleByIndex_v2", rc);
    return;
  }
  device_ = dev;
}

NvmlGpu::~NvmlGpu() {
  if (initialized_) api_->shutdown();
  delete api_;
  if (lib_) dlclose(lib_);
}

GpuSample NvmlGpu::sample() {
  GpuSample s;
  if (!device_) return s;
  // A field whose query fails (e.g. power on some boards) stays 0; the others still count.
  nvmlUtilization_t u{};
  if (api_->utilization(device_, &u) == kNvmlSuccess) s.util = u.gpu / 100.0;
  nvmlMemory_t m{};
  if (api_->memory(device_, &m) == kNvmlSuccess) {
    s.mem_used_bytes = double(m.used);
    s.mem_total_bytes = double(m.total);
  }
  unsigned int mw = 0;
  if (api_->power(device_, &mw) == kNvmlSuccess) s.power_w = mw / 1000.0;
  unsigned int mhz = 0;
  if (api_->clock(device_, kNvmlClockSm, &mhz) == kNvmlSuccess) s.sm_clock_mhz = mhz;
  return s;
}

}  // namespace dynamix
