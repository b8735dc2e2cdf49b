// DYNAMIX — which attach point each eBPF event uses, from what the running kernel offers.
#pragma once

#include "bpf/net_probe.h"

namespace dynamix {

struct HookAvailability {
  bool raw_tracepoint = false;  // BTF has btf_trace_<event>
  bool tracepoint = false;      // tracefs has events/<category>/<event>
  bool kprobe = false;          // the kernel function exists and kprobes can attach
};

// Preference raw tracepoint > tracepoint > kprobe (cheapest and most stable first). A forced
// kind is used only when available; kNone means the event cannot be observed here.
inline AttachKind choose_attach(const HookAvailability& have, AttachKind force) {
  switch (force) {
    case AttachKind::kRawTracepoint:
      return have.raw_tracepoint ? force : AttachKind::kNone;
    case AttachKind::kTracepoint:
      return have.tracepoint ? force : AttachKind::kNone;
    case AttachKind::kKprobe:
      return have.kprobe ? force : AttachKind::kNone;
    default:
      break;
  }
  if (have.raw_tracepoint) return AttachKind::kRawTracepoint;
  if (have.tracepoint) return AttachKind::kTracepoint;
  if (have.kprobe) return AttachKind::kKprobe;
  return AttachKind::kNone;
}

}  // namespace dynamix
