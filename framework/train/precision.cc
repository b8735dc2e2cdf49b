// DYNAMIX — autocast scope and channels_last conversion.
#include "framework/train/precision.h"

#include <ATen/autocast_mode.h>

#include "framework/core/error.h"

namespace dynamix {
namespace {

// LibTorch 2.4 and later take the device type; before, one function per device.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define DYNAMIX_AUTOCAST_BY_DEVICE_TYPE 1
#else
#define DYNAMIX_AUTOCAST_BY_DEVICE_TYPE 0
#endif

bool autocast_enabled(torch::DeviceType d) {
#if DYNAMIX_AUTOCAST_BY_DEVICE_TYPE
  return at::autocast::is_autocast_enabled(d);
#else
  return d == torch::kCUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

void set_autocast_enabled(torch::DeviceType d, bool on) {
#if DYNAMIX_AUTOCAST_BY_DEVICE_TYPE
  at::autocast::set_autocast_enabled(d, on);
#else
  if (d == torch::kCUDA) {
    at::autocast::set_enabled(on);
  } else {
    at::autocast::set_cpu_enabled(on);
  }
#endif
}

at::ScalarType autocast_dtype(torch::DeviceType d) {
#if DYNAMIX_AUTOCAST_BY_DEVICE_TYPE
  return at::autocast::get_autocast_dtype(d);
#else
  return d == torch::kCUDA ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
#endif
}

void set_autocast_dtype(torch::DeviceType d, at::ScalarType t) {
#if DYNAMIX_AUTOCAST_BY_DEVICE_TYPE
  at::autocast::set_autocast_dtype(d, t);
#else
  if (d == torch::kCUDA) {
    at::autocast::set_autocast_gpu_dtype(t);
  } else {
    at::autocast::set_autocast_cpu_dtype(t);
  }
#endif
}

}  // namespace

AutocastScope::AutocastScope(Precision precision, torch::DeviceType device) : device_(device) {
  if (precision == Precision::kFp32) return;
  DYNAMIX_CHECK(precision == Precision::kBf16 || device == torch::kCUDA,
                "train.precision: fp16 autocast needs a CUDA device");
  previous_enabled_ = autocast_enabled(device_);
  previous_dtype_ = autocast_dtype(device_);
  set_autocast_dtype(device_, precision == Precision::kFp16 ? at::kHalf : at::kBFloat16);
  set_autocast_enabled(device_, true);
  at::autocast::increment_nesting();
  active_ = true;
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  // The weight casts are cached for the scope; leaving the outermost one drops them.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast_enabled(device_, previous_enabled_);
  set_autocast_dtype(device_, previous_dtype_);
}

void to_channels_last(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  for (auto& p : module.parameters()) {
    if (p.dim() == 4) p.set_data(p.data().contiguous(torch::MemoryFormat::ChannelsLast));
  }
  for (auto& b : module.buffers()) {
    if (b.dim() == 4) b.set_data(b.data().contiguous(torch::MemoryFormat::ChannelsLast));
  }
}

torch::Tensor channels_last_input(const torch::Tensor& input) {
  return input.dim() == 4 ? input.contiguous(torch::MemoryFormat::ChannelsLast) : input;
}

namespace {

torch::Tensor as_float32_if_half(const torch::Tensor& t) {
  const bool half = t.scalar_type() == torch::kBFloat16 || t.scalar_type() == torch::kHalf;
  return half ? t.to(torch::kFloat32) : t;
}

}  // namespace

torch::Tensor forward_logits(Model& model, const torch::Tensor& inputs, const TrainConfig& train) {
  AutocastScope autocast(train.precision, inputs.device().type());
  return as_float32_if_half(model.forward(train.channels_last ? channels_last_input(inputs) : inputs));
}

torch::Tensor forward_own_loss(Model& model, const torch::Tensor& inputs, const torch::Tensor& targets,
                               const TrainConfig& train) {
  AutocastScope autocast(train.precision, inputs.device().type());
  return as_float32_if_half(
      model.forward_loss(train.channels_last ? channels_last_input(inputs) : inputs, targets));
}

}  // namespace dynamix
