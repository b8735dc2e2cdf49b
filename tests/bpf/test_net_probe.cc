// DYNAMIX tests — byte counters per flow over a loopback TCP connection: eBPF (each attach tier
// the kernel offers) and the /proc fallback.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "bpf/net_probe.h"
#include "framework/core/error.h"
#include "tests/bpf/probe_test_util.h"
#include "tests/bpf/tcp_pair.h"

namespace dynamix {
namespace {

using test::find_flow;
using test::TcpPair;

constexpr size_t kBytes = 2000000;

// Sends kBytes over loopback and checks the client flow's tx and the server flow's rx.
void expect_loopback_counted(NetProbe& probe, bool exact) {
  TcpPair pair("127.0.0.1");
  ASSERT_EQ(pair.transfer(kBytes, 10.0), kBytes);
  NetReading r;
  const FlowStats* client = nullptr;
  for (int i = 0; i < 50; ++i) {  // tcp_info's bytes_acked may trail the receiver by an ACK
    r = probe.read();
    client = find_flow(r, pair.client_port(), pair.server_port());
    if (client && client->tx_bytes >= kBytes) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_NE(client, nullptr) << "no flow " << pair.client_port() << " -> " << pair.server_port() << " via "
                             << probe.source();
  const FlowStats* server = find_flow(r, pair.server_port(), pair.client_port());
  ASSERT_NE(server, nullptr);
  EXPECT_GE(client->tx_bytes, kBytes);
  EXPECT_GE(server->rx_bytes, kBytes);
  if (exact) {  // every send() of the test is counted once, nothing else
    EXPECT_EQ(client->tx_bytes, kBytes);
    EXPECT_EQ(server->rx_bytes, kBytes);
  }
  EXPECT_GT(client->srtt_us, 0u);
  EXPECT_GT(client->cwnd, 0u);
  EXPECT_EQ(client->key.str(), "127.0.0.1:" + std::to_string(pair.client_port()) +
                                   " -> 127.0.0.1:" + std::to_string(pair.server_port()));
}

TEST(EbpfProbe, LoopbackBytesCountedPerFlow) {
  const std::string skip = test::ebpf_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  auto probe = make_ebpf_probe({int(::getpid())});
  std::printf("ebpf attach: %s\n", probe->detail().c_str());
  EXPECT_EQ(probe->source(), "ebpf");
  expect_loopback_counted(*probe, /*exact=*/true);
  NetReading r = probe->read();
  EXPECT_GE(r.tx_bytes, kBytes);  // cumulative totals follow the flows
  EXPECT_GE(r.rx_bytes, kBytes);
}

TEST(EbpfProbe, PidFilterExcludesOtherProcesses) {
  const std::string skip = test::ebpf_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  auto probe = make_ebpf_probe({1});  // init, not us
  TcpPair pair("127.0.0.1");
  ASSERT_EQ(pair.transfer(100000, 10.0), 100000u);
  NetReading r = probe->read();
  EXPECT_EQ(find_flow(r, pair.client_port(), pair.server_port()), nullptr);
  EXPECT_EQ(find_flow(r, pair.server_port(), pair.client_port()), nullptr);
}

TEST(EbpfProbe, TracepointTierCountsBytes) {
  const std::string skip = test::ebpf_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  std::unique_ptr<NetProbe> probe;
  try {
    probe = make_ebpf_probe({int(::getpid())}, AttachKind::kTracepoint);
  } catch (const Error& e) {
    GTEST_SKIP() << "tracepoints unavailable here: " << e.what();
  }
  std::printf("ebpf attach: %s\n", probe->detail().c_str());
  EXPECT_NE(probe->detail().find("sock_send_length=tp"), std::string::npos);
  expect_loopback_counted(*probe, /*exact=*/true);
}

TEST(EbpfProbe, KprobeTierCountsBytesOrSaysWhyNot) {
  const std::string skip = test::ebpf_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  std::unique_ptr<NetProbe> probe;
  try {
    probe = make_ebpf_probe({int(::getpid())}, AttachKind::kKprobe);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kprobe"), std::string::npos) << e.what();
    GTEST_SKIP() << "kprobes unavailable here (expected on kernels without kprobe events): " << e.what();
  }
  expect_loopback_counted(*probe, /*exact=*/false);  // tcp_sendmsg counts bytes requested
}

TEST(ProcfsProbe, LoopbackBytesCountedPerSocketAndOnInterfaces) {
  auto probe = make_procfs_probe({int(::getpid())});
  EXPECT_EQ(probe->source(), "procfs");
  std::printf("procfs: %s\n", probe->detail().c_str());
  expect_loopback_counted(*probe, /*exact=*/false);  // bytes_acked/bytes_received of tcp_info
  NetReading r = probe->read();
  EXPECT_GE(r.tx_bytes, kBytes);  // /proc/net/dev "lo" saw the payload (plus headers)
  EXPECT_GE(r.rx_bytes, kBytes);
}

TEST(ProcfsProbe, PidFilterKeepsOnlyTheirSockets) {
  auto probe = make_procfs_probe({1});
  TcpPair pair("127.0.0.1");
  ASSERT_EQ(pair.transfer(1000, 5.0), 1000u);
  NetReading r = probe->read();
  EXPECT_EQ(find_flow(r, pair.client_port(), pair.server_port()), nullptr);
  auto all = make_procfs_probe({});
  EXPECT_NE(find_flow(all->read(), pair.client_port(), pair.server_port()), nullptr);
}

TEST(NullProbe, ReportsNothingAndItsReason) {
  auto probe = make_null_probe("no /proc");
  EXPECT_EQ(probe->source(), "none");
  EXPECT_EQ(probe->detail(), "no /proc");
  NetReading r = probe->read();
  EXPECT_EQ(r.tx_bytes, 0u);
  EXPECT_TRUE(r.flows.empty());
}

}  // namespace
}  // namespace dynamix
