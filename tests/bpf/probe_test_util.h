// DYNAMIX tests — helpers shared by the probe tests: skip conditions and flow lookup.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "bpf/net_probe.h"

namespace dynamix::test {

// Why eBPF cannot be tested here, or "" when it can.
inline std::string ebpf_skip_reason() {
  if (!ebpf_compiled_in()) return "built without eBPF (DYNAMIX_HAVE_BPF=OFF)";
  if (::geteuid() != 0) return "eBPF probes need root (euid " + std::to_string(::geteuid()) + ")";
  struct stat st;
  if (::stat("/sys/kernel/btf/vmlinux", &st) != 0) return "no kernel BTF (/sys/kernel/btf/vmlinux)";
  return "";
}

// The flow whose local port is sport and remote port dport, or nullptr.
inline const FlowStats* find_flow(const NetReading& r, uint16_t sport, uint16_t dport) {
  for (const FlowStats& f : r.flows) {
    if (f.key.sport == sport && f.key.dport == dport) return &f;
  }
  return nullptr;
}

}  // namespace dynamix::test
