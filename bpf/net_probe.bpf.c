// DYNAMIX — per-flow TCP counters (bytes, retransmits, srtt, cwnd) for the trainer's processes.
// Each event has three programs (raw tracepoint, tracepoint, kprobe); the loader autoloads one
// per event, by what the running kernel offers. Counters stay in maps; user space reads them
// once per decision window.
// clang-format off
#include "vmlinux.h"  // kernel types first: the libbpf headers use them
// clang-format on
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/flow_types.h"

char LICENSE[] SEC("license") = "GPL";  // bpf_probe_read_kernel is GPL-only

#define DMX_AF_INET 2
#define DMX_AF_INET6 10
#define DMX_MSG_PEEK 2

// Processes (tgids) whose flows are counted; consulted only when pid_filter_on is set.
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, DMX_MAX_PIDS);
  __type(key, __u32);
  __type(value, __u8);
} pids SEC(".maps");

// LRU so a long run with many short connections never fills the map.
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, DMX_MAX_FLOWS);
  __type(key, struct dmx_flow_key);
  __type(value, struct dmx_flow_stats);
} flows SEC(".maps");

__u32 pid_filter_on = 0;  // set by user space: 0 = count every process

static __always_inline int is_tcp_inet(struct sock* sk) {
  __u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
  if (family != DMX_AF_INET && family != DMX_AF_INET6) return 0;
  // sk_protocol is a bitfield before 5.6 and a u16 after: the probed read handles both.
  return BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol) == IPPROTO_TCP;
}

static __always_inline void fill_key(struct sock* sk, struct dmx_flow_key* k) {
  k->family = BPF_CORE_READ(sk, __sk_common.skc_family);
  k->sport = BPF_CORE_READ(sk, __sk_common.skc_num);
  k->dport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
  if (k->family == DMX_AF_INET) {
    k->saddr[0] = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
    k->daddr[0] = BPF_CORE_READ(sk, __sk_common.skc_daddr);
  } else {
    BPF_CORE_READ_INTO(&k->saddr, sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr32);
    BPF_CORE_READ_INTO(&k->daddr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr32);
  }
}

// Flow entry for sk. In process context (send/recv) a flow is created when the current process
// is wanted; in softirq context (probe, retransmit) the current task is unrelated, so only flows
// already created by a wanted process are updated (or any flow when the filter is off).
static __always_inline struct dmx_flow_stats* flow_for(struct sock* sk, int process_ctx) {
  struct dmx_flow_key key = {};
  struct dmx_flow_stats* st;
  __u32 tgid = bpf_get_current_pid_tgid() >> 32;

  if (!sk) return 0;
  if (process_ctx && !is_tcp_inet(sk)) return 0;
  if (process_ctx && pid_filter_on && !bpf_map_lookup_elem(&pids, &tgid)) return 0;
  fill_key(sk, &key);
  st = bpf_map_lookup_elem(&flows, &key);
  if (st) {
    if (process_ctx) st->pid = tgid;
    return st;
  }
  if (!process_ctx && pid_filter_on) return 0;
  struct dmx_flow_stats zero = {};
  if (process_ctx) zero.pid = tgid;
  bpf_map_update_elem(&flows, &key, &zero, BPF_NOEXIST);
  return bpf_map_lookup_elem(&flows, &key);
}

static __always_inline void snapshot_tcp(struct sock* sk, struct dmx_flow_stats* st) {
  struct tcp_sock* tp = (struct tcp_sock*)sk;
  st->srtt_us = BPF_CORE_READ(tp, srtt_us) >> 3;  // kernel keeps srtt scaled by 8
  st->cwnd = BPF_CORE_READ(tp, snd_cwnd);
}

static __always_inline void on_send(struct sock* sk, long bytes) {
  if (bytes <= 0) return;
  struct dmx_flow_stats* st = flow_for(sk, 1);
  if (!st) return;
  __sync_fetch_and_add(&st->tx_bytes, bytes);
  snapshot_tcp(sk, st);
}

static __always_inline void on_recv(struct sock* sk, long bytes, int flags) {
  if (bytes <= 0 || (flags & DMX_MSG_PEEK)) return;
  struct dmx_flow_stats* st = flow_for(sk, 1);
  if (!st) return;
  __sync_fetch_and_add(&st->rx_bytes, bytes);
  snapshot_tcp(sk, st);
}

static __always_inline void on_probe(struct sock* sk) {
  struct dmx_flow_stats* st = flow_for(sk, 0);
  if (st) snapshot_tcp(sk, st);
}

static __always_inline void on_retransmit(struct sock* sk) {
  struct dmx_flow_stats* st = flow_for(sk, 0);
  if (!st) return;
  __sync_fetch_and_add(&st->retransmits, 1);
  snapshot_tcp(sk, st);
}

// --- raw tracepoints (need only BTF): arguments are the tracepoint's TP_PROTO ----------------
SEC("raw_tp/sock_send_length")
int dmx_send_raw(struct bpf_raw_tracepoint_args* ctx) {
  on_send((struct sock*)ctx->args[0], (int)ctx->args[1]);
  return 0;
}

SEC("raw_tp/sock_recv_length")
int dmx_recv_raw(struct bpf_raw_tracepoint_args* ctx) {
  on_recv((struct sock*)ctx->args[0], (int)ctx->args[1], (int)ctx->args[2]);
  return 0;
}

SEC("raw_tp/tcp_probe")
int dmx_probe_raw(struct bpf_raw_tracepoint_args* ctx) {
  on_probe((struct sock*)ctx->args[0]);
  return 0;
}

SEC("raw_tp/tcp_retransmit_skb")
int dmx_retrans_raw(struct bpf_raw_tracepoint_args* ctx) {
  on_retransmit((struct sock*)ctx->args[0]);
  return 0;
}

// --- tracepoints (need tracefs for the event id) ----------------------------------------------
SEC("tp/sock/sock_send_length")
int dmx_send_tp(struct trace_event_raw_sock_msg_length* ctx) {
  on_send((struct sock*)ctx->sk, ctx->ret);
  return 0;
}

SEC("tp/sock/sock_recv_length")
int dmx_recv_tp(struct trace_event_raw_sock_msg_length* ctx) {
  on_recv((struct sock*)ctx->sk, ctx->ret, ctx->flags);
  return 0;
}

SEC("tp/tcp/tcp_probe")
int dmx_probe_tp(struct trace_event_raw_tcp_probe* ctx) {
  if (!bpf_core_field_exists(ctx->skaddr)) return 0;  // older kernels lack the socket pointer
  on_probe((struct sock*)ctx->skaddr);
  return 0;
}

SEC("tp/tcp/tcp_retransmit_skb")
int dmx_retrans_tp(struct trace_event_raw_tcp_retransmit_skb* ctx) {
  on_retransmit((struct sock*)ctx->skaddr);
  return 0;
}

// --- kprobes (last resort; need CONFIG_KPROBE_EVENTS) -----------------------------------------
SEC("kprobe/tcp_sendmsg")
int BPF_KPROBE(dmx_send_kp, struct sock* sk, void* msg, size_t size) {
  on_send(sk, (long)size);  // bytes requested: the return value is not paired with sk here
  return 0;
}

SEC("kprobe/tcp_cleanup_rbuf")
int BPF_KPROBE(dmx_recv_kp, struct sock* sk, int copied) {
  on_recv(sk, copied, 0);
  return 0;
}

SEC("kprobe/tcp_rcv_established")
int BPF_KPROBE(dmx_probe_kp, struct sock* sk) {
  on_probe(sk);
  return 0;
}

SEC("kprobe/tcp_retransmit_skb")
int BPF_KPROBE(dmx_retrans_kp, struct sock* sk) {
  on_retransmit(sk);
  return 0;
}
