// DYNAMIX — NVML loaded at run time (dlopen), so the build needs no NVIDIA headers or libraries.
#pragma once

#include <string>

namespace dynamix {

struct GpuSample {
  double util = 0;  // fraction of time a kernel ran, [0, 1]
  double mem_used_bytes = 0;
  double mem_total_bytes = 0;
  double power_w = 0;
  double sm_clock_mhz = 0;
};

// One GPU's readout. When the library, a symbol or the GPU is missing, available() is false,
// reason() says why, and sample() returns zeros.
class NvmlGpu {
 public:
  explicit NvmlGpu(int gpu_index, const std::string& library = "libnvidia-ml.so.1");
  ~NvmlGpu();
  NvmlGpu(const NvmlGpu&) = delete;
  NvmlGpu& operator=(const NvmlGpu&) = delete;

  bool available() const { return device_ != nullptr; }
  const std::string& reason() const { return reason_; }
  GpuSample sample();

 private:
  struct Api;
  void* lib_ = nullptr;
  Api* api_ = nullptr;
  void* device_ = nullptr;  // nvmlDevice_t
  bool initialized_ = false;
  std::string reason_;
};

}  // namespace dynamix
