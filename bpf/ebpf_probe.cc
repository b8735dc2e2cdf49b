// DYNAMIX — the eBPF NetProbe: loads net_probe.bpf.c (skeleton), picks one program per event by
// what the kernel offers, and reads the per-flow map once per decision window.
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdarg>
#include <cstring>
#include <fstream>
#include <mutex>

#include "bpf/attach_plan.h"
#include "bpf/flow_types.h"
#include "bpf/net_probe.h"
#include "bpf/net_probe.skel.h"
#include "framework/core/error.h"

namespace dynamix {

namespace {

// libbpf's warnings are kept (last few lines) for the error message instead of going to stderr.
std::mutex g_log_mu;
std::string g_log;

int libbpf_log(enum libbpf_print_level level, const char* fmt, va_list args) {
  if (level == LIBBPF_DEBUG) return 0;
  char line[512];
  int n = std::vsnprintf(line, sizeof(line), fmt, args);
  std::lock_guard<std::mutex> lock(g_log_mu);
  g_log += line;
  if (g_log.size() > 2048) g_log.erase(0, g_log.size() - 2048);
  return n;
}

std::string take_libbpf_log() {
  std::lock_guard<std::mutex> lock(g_log_mu);
  std::string s;
  s.swap(g_log);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  for (char& c : s) {
    if (c == '\n') c = ' ';  // one log line
  }
  return s;
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// tracefs root with an events/ folder; mounts tracefs at /sys/kernel/tracing when nothing is
// mounted and we may (root), since tracepoint programs need the event ids it exposes.
std::string tracefs_root() {
  for (const char* root : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}) {
    if (exists(std::string(root) + "/events")) return root;
  }
  if (::mount("nodev", "/sys/kernel/tracing", "tracefs", 0, nullptr) == 0 &&
      exists("/sys/kernel/tracing/events")) {
    return "/sys/kernel/tracing";
  }
  return "";
}

bool kallsyms_has(const std::string& fn) {
  std::ifstream in("/proc/kallsyms");
  std::string addr, type, name;
  while (in >> addr >> type >> name) {
    if (name == fn) return true;
    in.ignore(4096, '\n');  // skip "[module]" columns
  }
  return false;
}

// libbpf attaches kprobes through the perf "kprobe" PMU, or legacy tracefs kprobe_events.
bool kprobes_supported(const std::string& tracefs) {
  return exists("/sys/bus/event_source/devices/kprobe/type") ||
         (!tracefs.empty() && exists(tracefs + "/kprobe_events"));
}

struct Event {
  const char* name;       // raw tracepoint / tracepoint name
  const char* category;   // tracepoint category
  const char* kprobe_fn;  // kernel function for the kprobe variant
  bool required;          // without it the probe is useless
  bpf_program* progs[3];  // raw_tp, tp, kprobe
  AttachKind chosen = AttachKind::kNone;
  HookAvailability have;
};

class EbpfProbe : public NetProbe {
 public:
  EbpfProbe(const std::vector<int>& pids, AttachKind force) {
    libbpf_set_print(libbpf_log);
    take_libbpf_log();
    if (!exists("/sys/kernel/btf/vmlinux")) {
      throw Error("eBPF unavailable: /sys/kernel/btf/vmlinux missing (kernel built without BTF)");
    }
    skel_ = net_probe_bpf__open();
    if (!skel_) fail("net_probe_bpf__open", -errno);
    auto* p = &skel_->progs;
    events_ = {
        {"sock_send_length", "sock", "tcp_sendmsg", true, {p->dmx_send_raw, p->dmx_send_tp, p->dmx_send_kp}},
        {"sock_recv_length",
         "sock",
         "tcp_cleanup_rbuf",
         true,
         {p->dmx_recv_raw, p->dmx_recv_tp, p->dmx_recv_kp}},
        {"tcp_probe",
         "tcp",
         "tcp_rcv_established",
         false,
         {p->dmx_probe_raw, p->dmx_probe_tp, p->dmx_probe_kp}},
        {"tcp_retransmit_skb",
         "tcp",
         "tcp_retransmit_skb",
         false,
         {p->dmx_retrans_raw, p->dmx_retrans_tp, p->dmx_retrans_kp}},
    };
    plan(force);
    skel_->bss->pid_filter_on = pids.empty() ? 0 : 1;
    int rc = net_probe_bpf__load(skel_);
    if (rc) fail("net_probe_bpf__load", rc);
    const uint8_t one = 1;
    for (int pid : pids) {
      uint32_t tgid = uint32_t(pid);
      rc = bpf_map__update_elem(skel_->maps.pids, &tgid, sizeof(tgid), &one, sizeof(one), BPF_ANY);
      if (rc) fail("bpf_map__update_elem(pids)", rc);
    }
    for (Event& e : events_) {
      if (e.chosen == AttachKind::kNone) continue;
      bpf_program* prog = e.progs[index_of(e.chosen)];
      bpf_link* link = bpf_program__attach(prog);
      if (!link) {
        const int err = -errno;
        if (e.required) fail(std::string("attach ") + attach_kind_name(e.chosen) + "/" + e.name, err);
        e.chosen = AttachKind::kNone;  // optional event: run without it, say so in detail()
        continue;
      }
      links_.push_back(link);
    }
    keys_.resize(DMX_MAX_FLOWS);
    vals_.resize(DMX_MAX_FLOWS);
  }

  ~EbpfProbe() override {
    for (bpf_link* l : links_) bpf_link__destroy(l);
    net_probe_bpf__destroy(skel_);
  }

  std::string source() const override { return "ebpf"; }

  std::string detail() const override {
    std::string d;
    for (const Event& e : events_) {
      if (!d.empty()) d += ", ";
      d += std::string(e.name) + "=" + attach_kind_name(e.chosen);
    }
    return d;
  }

  NetReading read() override {
    NetReading r;
    const size_t n = read_map();
    r.flows.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const dmx_flow_key& k = keys_[i];
      const dmx_flow_stats& v = vals_[i];
      FlowStats f;
      f.key.family = k.family;
      std::memcpy(f.key.saddr.data(), k.saddr, 16);
      std::memcpy(f.key.daddr.data(), k.daddr, 16);
      f.key.sport = k.sport;
      f.key.dport = k.dport;
      f.tx_bytes = v.tx_bytes;
      f.rx_bytes = v.rx_bytes;
      f.retransmits = v.retransmits;
      f.srtt_us = v.srtt_us;
      f.cwnd = v.cwnd;
      f.pid = int(v.pid);
      r.flows.push_back(f);
    }
    FlowDeltaTracker::Totals t = tracker_.update(r.flows);
    tx_ += t.d_tx_bytes;
    rx_ += t.d_rx_bytes;
    retrans_ += t.d_retransmits;
    r.tx_bytes = tx_;
    r.rx_bytes = rx_;
    r.retransmits = retrans_;
    r.srtt_us = t.srtt_us;
    r.cwnd = t.cwnd;
    return r;
  }

 private:
  static int index_of(AttachKind k) {
    return k == AttachKind::kRawTracepoint ? 0 : k == AttachKind::kTracepoint ? 1 : 2;
  }

  [[noreturn]] void fail(const std::string& call, int err) {
    std::string msg = "eBPF probes could not load: " + call + " failed: " + std::strerror(-err);
    if ((err == -EPERM || err == -EACCES) && ::geteuid() != 0) {
      msg += " (needs root, or CAP_BPF + CAP_PERFMON; running as uid " + std::to_string(::geteuid()) + ")";
    }
    std::string log = take_libbpf_log();
    if (!log.empty()) msg += "; " + log;
    for (bpf_link* l : links_) bpf_link__destroy(l);
    links_.clear();
    net_probe_bpf__destroy(skel_);
    skel_ = nullptr;
    throw Error(msg);
  }

  void plan(AttachKind force) {
    btf* vmlinux = btf__load_vmlinux_btf();
    std::string tracefs;
    bool tracefs_checked = false;
    for (Event& e : events_) {
      HookAvailability& have = e.have;
      have.raw_tracepoint =
          vmlinux &&
          btf__find_by_name_kind(vmlinux, (std::string("btf_trace_") + e.name).c_str(), BTF_KIND_TYPEDEF) > 0;
      if (!have.raw_tracepoint || force != AttachKind::kAuto) {  // tracefs only when needed
        if (!tracefs_checked) tracefs = tracefs_root();
        tracefs_checked = true;
        have.tracepoint = !tracefs.empty() && exists(tracefs + "/events/" + e.category + "/" + e.name);
        have.kprobe = kprobes_supported(tracefs) && kallsyms_has(e.kprobe_fn);
      }
      e.chosen = choose_attach(have, force);
      for (int i = 0; i < 3; ++i) bpf_program__set_autoload(e.progs[i], false);
      if (e.chosen != AttachKind::kNone) bpf_program__set_autoload(e.progs[index_of(e.chosen)], true);
    }
    btf__free(vmlinux);
    for (const Event& e : events_) {
      if (e.required && e.chosen == AttachKind::kNone) {
        auto yn = [](bool b) { return b ? "yes" : "no"; };
        std::string why = std::string("no ") +
                          (force == AttachKind::kAuto ? "attach point" : attach_kind_name(force)) + " for " +
                          e.name + " (raw_tp btf_trace_" + e.name + ": " + yn(e.have.raw_tracepoint) +
                          ", tracefs event " + e.category + "/" + e.name + ": " + yn(e.have.tracepoint) +
                          ", kprobe on " + e.kprobe_fn + ": " + yn(e.have.kprobe) + ")";
        net_probe_bpf__destroy(skel_);
        skel_ = nullptr;
        throw Error("eBPF probes could not load: " + why);
      }
    }
  }

  // All flows into keys_/vals_ with batched lookups (one syscall per ~thousands of entries),
  // falling back to key iteration on kernels without batch ops.
  size_t read_map() {
    const int fd = bpf_map__fd(skel_->maps.flows);
    dmx_flow_key in{}, out{};
    size_t got = 0;
    bool first = true;
    while (got < keys_.size()) {
      uint32_t count = uint32_t(keys_.size() - got);
      int rc =
          bpf_map_lookup_batch(fd, first ? nullptr : &in, &out, &keys_[got], &vals_[got], &count, nullptr);
      if (rc && rc != -ENOENT) return read_map_iterating(fd);
      got += count;
      if (rc == -ENOENT) break;
      in = out;
      first = false;
    }
    return got;
  }

  size_t read_map_iterating(int fd) {
    size_t got = 0;
    dmx_flow_key key{}, next{};
    const dmx_flow_key* prev = nullptr;
    while (got < keys_.size() && bpf_map_get_next_key(fd, prev, &next) == 0) {
      if (bpf_map_lookup_elem(fd, &next, &vals_[got]) == 0) keys_[got++] = next;
      key = next;
      prev = &key;
    }
    return got;
  }

  net_probe_bpf* skel_ = nullptr;
  std::vector<Event> events_;
  std::vector<bpf_link*> links_;
  std::vector<dmx_flow_key> keys_;
  std::vector<dmx_flow_stats> vals_;
  FlowDeltaTracker tracker_;
  uint64_t tx_ = 0, rx_ = 0, retrans_ = 0;
};

}  // namespace

bool ebpf_compiled_in() { return true; }

std::unique_ptr<NetProbe> make_ebpf_probe(const std::vector<int>& pids, AttachKind force) {
  return std::make_unique<EbpfProbe>(pids, force);
}

}  // namespace dynamix
