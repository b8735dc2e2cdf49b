// DYNAMIX tests — retransmits counted by eBPF when loss is injected on a veth between two
// network namespaces the test creates (and always deletes). Traffic stays inside them.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <sched.h>
#include <unistd.h>

#include <thread>

#include "bpf/net_probe.h"
#include "framework/core/error.h"
#include "tests/bpf/probe_test_util.h"
#include "tests/bpf/tcp_pair.h"

#if DYNAMIX_HAVE_BPF
#include <bpf/libbpf.h>

#include "bpf/drop_packets.skel.h"
#endif

namespace dynamix {
namespace {

using test::sh;

// Two namespaces joined by a veth pair; deleted (with the veth) on destruction.
class NetnsPair {
 public:
  NetnsPair() {
    const std::string id = std::to_string(::getpid());
    a_ = "dmxt_a" + id;
    b_ = "dmxt_b" + id;
    va_ = "dmxva" + id;
    vb_ = "dmxvb" + id;
  }
  ~NetnsPair() {
    sh("ip netns del " + a_ + " 2>/dev/null");
    sh("ip netns del " + b_ + " 2>/dev/null");
  }
  // "" when up, else why not.
  std::string up() {
    if (sh("ip netns add " + a_) != 0 || sh("ip netns add " + b_) != 0)
      return "cannot create network namespaces";
    if (sh("ip link add " + va_ + " netns " + a_ + " type veth peer name " + vb_ + " netns " + b_) != 0) {
      return "cannot create a veth pair";
    }
    const bool ok = sh("ip -n " + a_ + " addr add 10.231.77.1/30 dev " + va_) == 0 &&
                    sh("ip -n " + b_ + " addr add 10.231.77.2/30 dev " + vb_) == 0 &&
                    sh("ip -n " + a_ + " link set " + va_ + " up") == 0 &&
                    sh("ip -n " + b_ + " link set " + vb_ + " up") == 0;
    if (!ok) return "cannot configure the veth addresses";
    // Smaller GSO packets: more of them cross the link, so the loss rate applies per segment.
    sh("ip -n " + b_ + " link set " + vb_ + " gso_max_size 1500 2>/dev/null");
    sh("ip -n " + a_ + " link set " + va_ + " gso_max_size 1500 2>/dev/null");
    return "";
  }
  const std::string& a() const { return a_; }
  const std::string& b() const { return b_; }
  const std::string& veth_a() const { return va_; }
  const std::string& veth_b() const { return vb_; }

 private:
  std::string a_, b_, va_, vb_;
};

#if DYNAMIX_HAVE_BPF
// Loss between client and server: netem on the client's egress when the kernel has it, else a
// tc BPF program dropping the same share at the server's ingress (a drop at the sender's own
// egress is reported back to TCP, which resends without counting a retransmit). Attached from
// a thread inside namespace b (netlink is per netns).
std::string inject_loss(const NetnsPair& ns, drop_packets_bpf** skel_out) {
  if (sh("tc -n " + ns.a() + " qdisc add dev " + ns.veth_a() + " root netem loss 20% 2>/dev/null") == 0) {
    std::printf("loss: netem 20%%\n");
    return "";
  }
  drop_packets_bpf* skel = drop_packets_bpf__open_and_load();
  if (!skel) return "neither netem nor a tc BPF program is available";
  *skel_out = skel;
  std::string err;
  std::thread t([&] {
    int nsfd = ::open(("/var/run/netns/" + ns.b()).c_str(), O_RDONLY | O_CLOEXEC);
    if (nsfd < 0 || ::setns(nsfd, CLONE_NEWNET) != 0) {
      err = "setns failed";
    } else {
      LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = int(if_nametoindex(ns.veth_b().c_str())),
                  .attach_point = BPF_TC_INGRESS);
      LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = bpf_program__fd(skel->progs.dmx_drop));
      if (bpf_tc_hook_create(&hook) != 0 || bpf_tc_attach(&hook, &opts) != 0) err = "tc BPF attach failed";
    }
    if (nsfd >= 0) ::close(nsfd);
  });
  t.join();
  if (err.empty()) std::printf("loss: no netem in this kernel; tc BPF ingress drop 20%% at the server\n");
  return err;
}
#endif

TEST(EbpfProbe, RetransmitsCountedUnderInjectedLoss) {
  const std::string skip = test::ebpf_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
#if DYNAMIX_HAVE_BPF
  if (sh("command -v ip >/dev/null && command -v tc >/dev/null") != 0)
    GTEST_SKIP() << "ip/tc (iproute2) missing";
  NetnsPair ns;
  const std::string why = ns.up();
  if (!why.empty()) GTEST_SKIP() << why << " (needs CAP_NET_ADMIN)";
  auto probe = make_ebpf_probe({int(::getpid())});
  test::TcpPair pair("10.231.77.2", ns.a(), ns.b());  // connect before loss: no SYN timeouts
  drop_packets_bpf* dropper = nullptr;
  const std::string loss = inject_loss(ns, &dropper);
  if (!loss.empty()) {
    if (dropper) drop_packets_bpf__destroy(dropper);
    GTEST_SKIP() << "cannot inject loss: " << loss;
  }
  // veth aggregates segments (GSO), so few packets cross it: send rounds until a loss has hit
  // (P(no drop in 10 rounds) is negligible), bounded in bytes and time.
  size_t got = 0;
  NetReading r;
  for (int round = 0; round < 10; ++round) {
    got += pair.transfer(200000, 3.0);
    r = probe->read();
    const FlowStats* f = test::find_flow(r, pair.client_port(), pair.server_port());
    if (f && f->retransmits > 0) break;
  }
  if (dropper) drop_packets_bpf__destroy(dropper);
  const FlowStats* client = test::find_flow(r, pair.client_port(), pair.server_port());
  ASSERT_NE(client, nullptr);
  std::printf("received %zu bytes, client tx %llu, retransmits %llu, srtt %u us\n", got,
              (unsigned long long)client->tx_bytes, (unsigned long long)client->retransmits, client->srtt_us);
  EXPECT_GT(client->tx_bytes, 0u);
  EXPECT_GT(client->retransmits, 0u);
  EXPECT_GE(r.retransmits, client->retransmits);
  EXPECT_EQ(client->key.str(), "10.231.77.1:" + std::to_string(pair.client_port()) +
                                   " -> 10.231.77.2:" + std::to_string(pair.server_port()));
#endif
}

}  // namespace
}  // namespace dynamix
