// DYNAMIX — map key/value layouts shared by net_probe.bpf.c and the user-space loader.
#pragma once

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define DMX_MAX_FLOWS 16384
#define DMX_MAX_PIDS 1024

// One TCP flow as the local socket sees it. Addresses in network byte order (IPv4 in addr[0]),
// ports in host byte order. Padding is explicit so keys hash identically on both sides.
struct dmx_flow_key {
  __u16 family;  // AF_INET (2) or AF_INET6 (10)
  __u16 sport;   // local port
  __u16 dport;   // remote port
  __u16 pad;
  __u32 saddr[4];
  __u32 daddr[4];
};

// Cumulative counters of one flow since the probe was loaded, plus the latest sampled state.
struct dmx_flow_stats {
  __u64 tx_bytes;
  __u64 rx_bytes;
  __u64 retransmits;
  __u32 srtt_us;  // smoothed RTT (tcp_sock.srtt_us >> 3)
  __u32 cwnd;     // congestion window in segments
  __u32 pid;      // last process (tgid) seen sending or receiving on the flow
  __u32 pad;
};
