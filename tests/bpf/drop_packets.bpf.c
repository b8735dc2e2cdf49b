// DYNAMIX tests — tc program that drops a given percentage of packets (loss injection
// where the netem qdisc is not built into the kernel).
// clang-format off
#include "vmlinux.h"  // kernel types first: the libbpf headers use them
// clang-format on
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 drop_percent = 20;

SEC("tc")
int dmx_drop(struct __sk_buff* skb) {
  return bpf_get_prandom_u32() % 100 < drop_percent ? 2 /* TC_ACT_SHOT */ : 0 /* TC_ACT_OK */;
}
