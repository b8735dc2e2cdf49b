// DYNAMIX — the placement plan on synthetic machines: GPUs spread over NUMA nodes, ranks bound to
// their GPU's node, disjoint core shares, and what auto means.
#include <gtest/gtest.h>

#include <set>

#include "framework/train/placement.h"

namespace dynamix {
namespace {

// `nodes` NUMA nodes of `cores` cores each, `smt` hardware threads per core (PUs numbered as
// Linux does: core c's threads are c, c + all cores, ...).
Topology machine(int nodes, int cores, int smt = 1) {
  Topology t;
  const int total = nodes * cores;
  for (int n = 0; n < nodes; ++n) {
    NumaNode node;
    node.os_index = n;
    for (int c = 0; c < cores; ++c) {
      Core core;
      for (int s = 0; s < smt; ++s) core.pus.push_back(n * cores + c + s * total);
      node.cores.push_back(core);
    }
    t.numa.push_back(node);
  }
  return t;
}

std::vector<int> range(int begin, int end) {
  std::vector<int> v;
  for (int i = begin; i < end; ++i) v.push_back(i);
  return v;
}

TEST(Placement, GpusAreSpreadOverNumaNodesAndRanksBoundToTheirGpusNode) {
  // Two sockets of 8 cores; GPUs 0, 1 on node 0 and 2, 3 on node 1 (CUDA order = bus order).
  Topology t = machine(2, 8);
  t.gpus = {{"0000:1a:00.0", 0}, {"0000:1b:00.0", 0}, {"0000:8a:00.0", 1}, {"0000:8b:00.0", 1}};
  // Two ranks: one GPU per socket, not both on socket 0 (as local rank % GPUs would).
  const Placement a = plan_placement(t, 0, 2, PlacementBind::kNuma, true);
  const Placement b = plan_placement(t, 1, 2, PlacementBind::kNuma, true);
  EXPECT_EQ(a.gpu, 0);
  EXPECT_EQ(b.gpu, 2);
  EXPECT_EQ(a.numa, 0);
  EXPECT_EQ(b.numa, 1);
  EXPECT_EQ(a.cpus, range(0, 8));
  EXPECT_EQ(b.cpus, range(8, 16));
  EXPECT_EQ(a.threads, 8);
  // Four ranks: every GPU once, alternating nodes.
  std::vector<int> gpus;
  for (int r = 0; r < 4; ++r) gpus.push_back(plan_placement(t, r, 4, PlacementBind::kNuma, true).gpu);
  EXPECT_EQ(gpus, (std::vector<int>{0, 2, 1, 3}));
}

TEST(Placement, CoreBindingSplitsTheGpuNodesCoresAmongItsRanks) {
  Topology t = machine(2, 8);
  t.gpus = {{"a", 0}, {"b", 0}, {"c", 1}, {"d", 1}};
  // Ranks 0 and 2 are on node 0 (GPUs 0 and 1): cores 0-3 and 4-7; ranks 1, 3 on node 1.
  EXPECT_EQ(plan_placement(t, 0, 4, PlacementBind::kCore, true).cpus, range(0, 4));
  EXPECT_EQ(plan_placement(t, 2, 4, PlacementBind::kCore, true).cpus, range(4, 8));
  EXPECT_EQ(plan_placement(t, 1, 4, PlacementBind::kCore, true).cpus, range(8, 12));
  EXPECT_EQ(plan_placement(t, 3, 4, PlacementBind::kCore, true).cpus, range(12, 16));
  EXPECT_EQ(plan_placement(t, 3, 4, PlacementBind::kCore, true).threads, 4);
}

TEST(Placement, WithoutGpusEveryLocalRankGetsADisjointShareOfCores) {
  // This VM: one NUMA node, two cores, two ranks: core i for rank i.
  const Topology vm = machine(1, 2);
  EXPECT_EQ(plan_placement(vm, 0, 2, PlacementBind::kCore, false).cpus, std::vector<int>{0});
  EXPECT_EQ(plan_placement(vm, 1, 2, PlacementBind::kCore, false).cpus, std::vector<int>{1});
  EXPECT_EQ(plan_placement(vm, 1, 2, PlacementBind::kCore, false).gpu, -1);
  // Two nodes of 6 two-way SMT cores, 4 ranks: two per node, 3 cores (6 PUs) each, no overlap.
  const Topology big = machine(2, 6, 2);
  std::set<int> used;
  for (int r = 0; r < 4; ++r) {
    const Placement p = plan_placement(big, r, 4, PlacementBind::kCore, false);
    EXPECT_EQ(p.cpus.size(), 6u) << "rank " << r;
    EXPECT_EQ(p.threads, 3) << "rank " << r;
    EXPECT_EQ(p.numa, r % 2) << "rank " << r;
    for (int cpu : p.cpus) EXPECT_TRUE(used.insert(cpu).second) << "CPU " << cpu << " given twice";
  }
  EXPECT_EQ(used.size(), 24u);
  // More ranks than cores: shared round-robin, one core each.
  for (int r = 0; r < 5; ++r)
    EXPECT_EQ(plan_placement(vm, r, 5, PlacementBind::kCore, false).cpus, std::vector<int>{r % 2});
  // numa: a whole node per rank.
  EXPECT_EQ(plan_placement(big, 1, 4, PlacementBind::kNuma, false).cpus.size(), 12u);
}

TEST(Placement, RanksSharingANumaNodeShareItsCoresAsThreads) {
  // The GPU run of 2026-11-27: 4 ranks under MPS on one GPU of a 16-core node each took 16
  // intra-op threads (64 on 16 cores). Bound to the node, they now take a quarter each.
  Topology t = machine(1, 16);
  t.gpus = {{"cuda:0", 0}};
  for (int r = 0; r < 4; ++r) {
    const Placement p = plan_placement(t, r, 4, PlacementBind::kNuma, true);
    EXPECT_EQ(p.gpu, 0) << "rank " << r;
    EXPECT_EQ(p.cpus, range(0, 16)) << "rank " << r;
    EXPECT_EQ(p.threads, 4) << "rank " << r;
  }
  // Eight GPUs on two nodes of 8 cores: four ranks per node, two threads each.
  Topology big = machine(2, 8);
  for (int g = 0; g < 8; ++g) big.gpus.push_back({"cuda:" + std::to_string(g), g / 4});
  EXPECT_EQ(plan_placement(big, 5, 8, PlacementBind::kNuma, true).threads, 2);
  // More ranks than cores still leaves each one thread.
  EXPECT_EQ(plan_placement(t, 20, 40, PlacementBind::kNuma, true).threads, 1);
}

TEST(Placement, NoneChoosesTheGpuButBindsNothing) {
  Topology t = machine(2, 4);
  t.gpus = {{"a", 0}, {"b", 1}};
  const Placement p = plan_placement(t, 1, 2, PlacementBind::kNone, true);
  EXPECT_EQ(p.gpu, 1);
  EXPECT_TRUE(p.cpus.empty());
  EXPECT_EQ(p.threads, 0);
  // A GPU whose NUMA node hwloc does not know: numa binds nothing, core splits all the cores.
  Topology u = machine(1, 4);
  u.gpus = {{"cuda:0", -1}, {"cuda:1", -1}};
  EXPECT_TRUE(plan_placement(u, 0, 2, PlacementBind::kNuma, true).cpus.empty());
  EXPECT_EQ(plan_placement(u, 1, 2, PlacementBind::kNuma, true).gpu, 1);
  EXPECT_EQ(plan_placement(u, 0, 2, PlacementBind::kCore, true).cpus, range(0, 2));
  EXPECT_EQ(plan_placement(u, 1, 2, PlacementBind::kCore, true).cpus, range(2, 4));
}

TEST(Placement, AutoBindsOnlyWhatTheLauncherLeftUnbound) {
  EXPECT_EQ(resolve_bind(PlacementBind::kAuto, false, 2, 2, 2), PlacementBind::kCore);
  EXPECT_EQ(resolve_bind(PlacementBind::kAuto, true, 16, 16, 4), PlacementBind::kNuma);
  EXPECT_EQ(resolve_bind(PlacementBind::kAuto, true, 1, 16, 4),
            PlacementBind::kNone);  // mpirun --bind-to core, srun --cpu-bind
  EXPECT_EQ(resolve_bind(PlacementBind::kAuto, false, 2, 2, 4),
            PlacementBind::kNone);  // 4 ranks on 2 CPUs: oversubscribed
  EXPECT_EQ(resolve_bind(PlacementBind::kCore, false, 1, 16, 4), PlacementBind::kCore);
  EXPECT_EQ(resolve_bind(PlacementBind::kCore, false, 2, 2, 4),
            PlacementBind::kCore);  // asked for: shared round-robin
}

TEST(Placement, CpuListsReadLikeLinuxs) {
  EXPECT_EQ(cpu_list_text({}), "");
  EXPECT_EQ(cpu_list_text({3, 0, 1, 2, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(cpu_list_text({5}), "5");
}

}  // namespace
}  // namespace dynamix
