// DYNAMIX — the enumerated config values (train.optimizer, comm.compression, ...) with one table
// of names each: config.cc parses them once, and outputs that store them (summary.json,
// checkpoints, logs) write choice_name(). Header-only, so comm/ and bpf/ may take these types
// without linking the config library.
#pragma once

#include <string>
#include <vector>

#include "framework/core/error.h"

namespace dynamix {

enum class Optimizer { kSgd, kAdamw };                             // train.optimizer
enum class LrScaling { kLinear, kSqrt, kNone };                    // train.lr_scaling
enum class DeviceChoice { kAuto, kCpu, kCuda };                    // train.device
enum class Precision { kFp32, kBf16, kFp16 };                      // train.precision
enum class LossKind { kCrossEntropy, kMse, kModule };              // train.loss
enum class LossScaling { kAuto, kDynamic, kNone };                 // train.loss_scale
enum class GlobalBatch { kFixed, kAdaptive };                      // batch.global
enum class EbpfMode { kAuto, kOn, kOff };                          // monitor.ebpf
enum class Compression { kNone, kFp16, kBf16, kHlc };              // comm.compression
enum class Backend { kAuto, kNccl, kMpi };                         // backend
enum class PlacementBind { kAuto, kNone, kNuma, kCore };           // placement.bind
enum class AddressFamily { kAuto, kIpv4, kIpv6 };                  // comm.watchdog_family
enum class ProgressChoice { kAuto, kTty, kLines, kJson, kQuiet };  // output.progress

template <class E>
struct ChoiceName {
  E value;
  const char* name;
};

// Choices<E>::names: every value of E with its config spelling, in the order errors list them.
template <class E>
struct Choices;

#define DYNAMIX_CHOICES(E, ...)                             \
  template <>                                               \
  struct Choices<E> {                                       \
    static constexpr ChoiceName<E> names[] = {__VA_ARGS__}; \
  }
DYNAMIX_CHOICES(Optimizer, {Optimizer::kSgd, "sgd"}, {Optimizer::kAdamw, "adamw"});
DYNAMIX_CHOICES(LrScaling, {LrScaling::kLinear, "linear"}, {LrScaling::kSqrt, "sqrt"},
                {LrScaling::kNone, "none"});
DYNAMIX_CHOICES(DeviceChoice, {DeviceChoice::kAuto, "auto"}, {DeviceChoice::kCpu, "cpu"},
                {DeviceChoice::kCuda, "cuda"});
DYNAMIX_CHOICES(Precision, {Precision::kFp32, "fp32"}, {Precision::kBf16, "bf16"},
                {Precision::kFp16, "fp16"});
DYNAMIX_CHOICES(LossKind, {LossKind::kCrossEntropy, "cross_entropy"}, {LossKind::kMse, "mse"},
                {LossKind::kModule, "module"});
DYNAMIX_CHOICES(LossScaling, {LossScaling::kAuto, "auto"}, {LossScaling::kDynamic, "dynamic"},
                {LossScaling::kNone, "none"});
DYNAMIX_CHOICES(GlobalBatch, {GlobalBatch::kFixed, "fixed"}, {GlobalBatch::kAdaptive, "adaptive"});
DYNAMIX_CHOICES(EbpfMode, {EbpfMode::kAuto, "auto"}, {EbpfMode::kOn, "on"}, {EbpfMode::kOff, "off"});
DYNAMIX_CHOICES(Compression, {Compression::kNone, "none"}, {Compression::kFp16, "fp16"},
                {Compression::kBf16, "bf16"}, {Compression::kHlc, "hlc"});
DYNAMIX_CHOICES(Backend, {Backend::kAuto, "auto"}, {Backend::kNccl, "nccl"}, {Backend::kMpi, "mpi"});
DYNAMIX_CHOICES(PlacementBind, {PlacementBind::kAuto, "auto"}, {PlacementBind::kNone, "none"},
                {PlacementBind::kNuma, "numa"}, {PlacementBind::kCore, "core"});
DYNAMIX_CHOICES(AddressFamily, {AddressFamily::kAuto, "auto"}, {AddressFamily::kIpv4, "ipv4"},
                {AddressFamily::kIpv6, "ipv6"});
DYNAMIX_CHOICES(ProgressChoice, {ProgressChoice::kAuto, "auto"}, {ProgressChoice::kTty, "tty"},
                {ProgressChoice::kLines, "lines"}, {ProgressChoice::kJson, "json"},
                {ProgressChoice::kQuiet, "quiet"});
#undef DYNAMIX_CHOICES

// The config spelling of `value`.
template <class E>
const char* choice_name(E value) {
  for (const auto& c : Choices<E>::names) {
    if (c.value == value) return c.name;
  }
  throw Error("choice_name: value " + std::to_string(static_cast<int>(value)) + " has no name");
}

// Every spelling of E, in table order.
template <class E>
std::vector<std::string> choice_names() {
  std::vector<std::string> out;
  for (const auto& c : Choices<E>::names) out.emplace_back(c.name);
  return out;
}

// The value spelled `name`; an unknown name throws "'key' must be one of a|b|c, got 'name'".
template <class E>
E parse_choice(const std::string& name, const std::string& key) {
  std::string allowed;
  for (const auto& c : Choices<E>::names) {
    if (name == c.name) return c.value;
    allowed += (allowed.empty() ? "" : "|") + std::string(c.name);
  }
  throw Error("'" + key + "' must be one of " + allowed + ", got '" + name + "'");
}

}  // namespace dynamix
