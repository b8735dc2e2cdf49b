// DYNAMIX — the `sim:` block: defaults, presets, classes, random, events, errors, fit from metrics.jsonl.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "agent/sim/profile_fit.h"
#include "agent/sim/sim_config.h"
#include "framework/core/error.h"
#include "tests/test_util.h"

namespace dynamix {
namespace {

std::string error_of(const std::string& yaml) {
  return testing::error_of([&] { parse_sim_config(yaml); });
}

TEST(SimConfigTest, DesignExampleParses) {
  const SimConfig c = parse_sim_config(R"(
sim:
  nodes: 32
  seed: 11
  profile: {classes: [{count: 16, speed: 1.0}, {count: 16, speed: 0.5}]}
  events: [{at_step: 400, ranks: [0, 1], slowdown: 3.0}, {at_step: 10, rank: 5, slowdown: 2, duration_steps: 7}]
  workload: {alpha_s: 0.004, beta_s: 0.0004, grad_bytes: 4.5e7, bandwidth_gbps: 25,
             latency_us: 20, b_noise: 256, target_progress: 5000}
)");
  EXPECT_EQ(c.nodes, 32);
  EXPECT_EQ(c.seed, 11u);
  ASSERT_EQ(c.beta_s.size(), 32u);
  EXPECT_DOUBLE_EQ(c.beta_s[0], 0.0004);
  EXPECT_DOUBLE_EQ(c.beta_s[31], 0.0008);
  EXPECT_DOUBLE_EQ(c.alpha_s[31], 0.008);
  ASSERT_EQ(c.events.size(), 2u);
  EXPECT_EQ(c.events[0].at_step, 10);  // sorted by step
  EXPECT_EQ(c.events[0].duration_steps, 7);
  EXPECT_EQ(c.events[1].ranks, (std::vector<int32_t>{0, 1}));
  EXPECT_DOUBLE_EQ(c.workload.noise, 0.05);  // default
}

TEST(SimConfigTest, PresetsAndRandom) {
  SimConfig c = parse_sim_config("profile: hetero4");
  EXPECT_EQ(c.nodes, 4);
  EXPECT_DOUBLE_EQ(c.beta_s[3], 4 * c.workload.beta_s);
  c = parse_sim_config("profile: {preset: mixed32}");
  EXPECT_EQ(c.nodes, 32);
  c = parse_sim_config("{nodes: 1024, profile: mixed}");
  EXPECT_EQ(c.nodes, 1024);
  EXPECT_DOUBLE_EQ(c.beta_s[1023], 4 * c.workload.beta_s);
  EXPECT_DOUBLE_EQ(c.beta_s[600], 2 * c.workload.beta_s);
  c = parse_sim_config("{nodes: 100, seed: 3, profile: {random: {min_speed: 0.25, max_speed: 1}}}");
  const SimConfig again =
      parse_sim_config("{nodes: 100, seed: 3, profile: {random: {min_speed: 0.25, max_speed: 1}}}");
  EXPECT_EQ(c.beta_s, again.beta_s);
  for (double b : c.beta_s) EXPECT_TRUE(b >= c.workload.beta_s && b <= 4 * c.workload.beta_s);
  EXPECT_EQ(parse_sim_config("").nodes, 4);
}

TEST(SimConfigTest, ErrorsNameTheKey) {
  EXPECT_NE(error_of("workload: {alpah_s: 1}").find("sim.workload.alpah_s"), std::string::npos);
  EXPECT_NE(error_of("nodez: 3").find("sim.nodez"), std::string::npos);
  EXPECT_NE(error_of("nodes: 0").find("sim.nodes"), std::string::npos);
  EXPECT_NE(error_of("workload: {beta_s: -1}").find("sim.workload.beta_s"), std::string::npos);
  EXPECT_NE(error_of("workload: {noise: abc}").find("sim.workload.noise"), std::string::npos);
  EXPECT_NE(error_of("workload: {switch_cost: -0.1}").find("sim.workload.switch_cost"), std::string::npos);
  EXPECT_EQ(parse_sim_config("workload: {switch_cost: 0.4}").workload.switch_cost, 0.4);
  EXPECT_NE(error_of("{nodes: 8, profile: hetero4}").find("sim.profile"), std::string::npos);
  EXPECT_NE(error_of("profile: {classes: [{count: 2, speed: 0}]}").find("sim.profile.classes[0].speed"),
            std::string::npos);
  EXPECT_NE(
      error_of("{nodes: 4, events: [{at_step: 1, ranks: [4], slowdown: 2}]}").find("sim.events[0].ranks"),
      std::string::npos);
  EXPECT_NE(error_of("profile: nosuch").find("unknown preset"), std::string::npos);
  EXPECT_NE(error_of("profile: {fit: /nonexistent/metrics.jsonl}").find("/nonexistent/metrics.jsonl"),
            std::string::npos);
  EXPECT_NE(error_of("sim: [1, 2").find("YAML syntax error"), std::string::npos);
  // The config reader's strictness: unknown keys anywhere, quoted numbers, duplicate keys.
  EXPECT_NE(
      error_of("profile: {classes: [{count: 2, speed: 1, sped: 2}]}").find("sim.profile.classes[0].sped"),
      std::string::npos);
  EXPECT_NE(error_of("events: [{at_step: 1, rank: 0, slowdown: 2, during: 3}]").find("sim.events[0].during"),
            std::string::npos);
  EXPECT_EQ(error_of("seed: '5'"), "sim: 'sim.seed' must be a non-negative integer, got the string '5'");
  // Bounds read as written ("> 0", not "> 0.000000").
  EXPECT_EQ(error_of("workload: {noise: -1}"), "sim: 'sim.workload.noise' must be >= 0, got '-1'");
  EXPECT_NE(error_of("events: [{at_step: 1, rank: 0, slowdown: 2, period_steps: 1}]")
                .find("sim.events[0].period_steps"),
            std::string::npos);
  EXPECT_NE(error_of("{nodes: 4, nodes: 5}").find("duplicate key 'sim.nodes'"), std::string::npos);
}

// A class may carry its own step noise (shared or spot nodes); the others keep the workload's,
// even where the workload comes after the profile in the text.
TEST(SimConfigTest, ClassesCarryTheirOwnNoise) {
  const SimConfig c = parse_sim_config(
      "{profile: {classes: [{count: 2, speed: 1, noise: 0.3}, {count: 2, speed: 0.5}]}, workload: {noise: "
      "0.1}}");
  EXPECT_EQ(c.noise, (std::vector<double>{0.3, 0.3, 0.1, 0.1}));
  EXPECT_TRUE(parse_sim_config("profile: hetero4").noise.empty());  // the workload's everywhere
  EXPECT_NE(error_of("profile: {classes: [{count: 2, speed: 1, noise: -0.1}]}")
                .find("sim.profile.classes[0].noise"),
            std::string::npos);
}

// A class may run its per-step fixed cost at a speed of its own (a newer device generation,
// faster per sample than at its launch overhead): alpha divides by fixed_speed, beta by speed.
TEST(SimConfigTest, ClassesMayCarryTheirOwnFixedCostSpeed) {
  const SimConfig c = parse_sim_config(
      "{profile: {classes: [{count: 1, speed: 4, fixed_speed: 1.25}, {count: 1, speed: 0.5}]}, workload: "
      "{alpha_s: 0.01, beta_s: 0.001}}");
  EXPECT_DOUBLE_EQ(c.alpha_s[0], 0.008);
  EXPECT_DOUBLE_EQ(c.beta_s[0], 0.00025);
  EXPECT_DOUBLE_EQ(c.alpha_s[1], 0.02);  // without it, the class's speed
  EXPECT_DOUBLE_EQ(c.beta_s[1], 0.002);
  EXPECT_NE(error_of("profile: {classes: [{count: 2, speed: 1, fixed_speed: 0}]}")
                .find("sim.profile.classes[0].fixed_speed"),
            std::string::npos);
}

// Keys are read in dependency order whatever their order in the text.
TEST(SimConfigTest, KeyOrderDoesNotMatter) {
  const SimConfig a = parse_sim_config(
      "{events: [{at_step: 3, rank: 7, slowdown: 2}], profile: {random: {min_speed: 0.5, max_speed: 1}}, "
      "workload: {beta_s: 0.001}, seed: 9, nodes: 8}");
  const SimConfig b = parse_sim_config(
      "{nodes: 8, seed: 9, workload: {beta_s: 0.001}, profile: {random: {min_speed: 0.5, max_speed: 1}}, "
      "events: [{at_step: 3, rank: 7, slowdown: 2}]}");
  EXPECT_EQ(a.beta_s, b.beta_s);
  EXPECT_EQ(a.alpha_s, b.alpha_s);
  ASSERT_EQ(a.events.size(), 1u);
  EXPECT_EQ(a.events[0].ranks, b.events[0].ranks);
}

class SimFitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) / ("dynamix_sim_fit_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(SimFitTest, RecoversAlphaBetaFromMetrics) {
  // A run's metrics.jsonl as the trainer writes it, with exact linear compute times.
  const std::vector<double> alpha = {0.01, 0.02, 0.005, 0.0}, beta = {0.001, 0.002, 0.0005, 0.003};
  const std::string path = (dir_ / "metrics.jsonl").string();
  {
    std::ofstream out(path);
    for (int step = 0; step < 40; ++step) {
      std::vector<int> b;
      std::vector<double> t;
      for (size_t r = 0; r < 4; ++r) {
        b.push_back(8 + int((step * 7 + int(r) * 5) % 57));
        t.push_back(alpha[r] + beta[r] * b.back() + (step == 0 ? 1.0 : 0.0));  // step 0: warm-up outlier
      }
      nlohmann::json j = {{"step", step},
                          {"loss", 1.0},
                          {"batch_sizes", b},
                          {"compute_time", t},
                          {"global_batch", b[0] + b[1] + b[2] + b[3]}};
      out << j.dump() << "\n";
    }
  }
  const std::vector<FittedRank> fit = fit_profile_from_metrics(path).ranks;
  ASSERT_EQ(fit.size(), 4u);
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_NEAR(fit[r].alpha_s, alpha[r], 1e-9) << r;
    EXPECT_NEAR(fit[r].beta_s, beta[r], 1e-11) << r;
    EXPECT_LT(fit[r].rel_residual, 1e-6);
  }
  // Through the config: 8 simulated nodes tile the 4 fitted ranks.
  const SimConfig c = parse_sim_config("{nodes: 8, profile: {fit: " + path + "}}");
  ASSERT_EQ(c.nodes, 8);
  EXPECT_NEAR(c.beta_s[5], beta[1], 1e-11);
  EXPECT_NEAR(c.alpha_s[6], alpha[2], 1e-9);
  EXPECT_EQ(parse_sim_config("profile: {fit: " + path + "}").nodes, 4);
}

TEST_F(SimFitTest, OneBatchSizeGivesProportionalModelAndBadFilesAreNamed) {
  const std::string path = (dir_ / "m.jsonl").string();
  {
    std::ofstream out(path);
    for (int s = 0; s < 5; ++s)
      out << R"({"batch_sizes": [10, 20], "compute_time": [0.5, 0.4]})"
          << "\n";
  }
  const auto fit = fit_profile_from_metrics(path).ranks;
  EXPECT_EQ(fit[0].distinct_batches, 1);
  EXPECT_DOUBLE_EQ(fit[0].alpha_s, 0);
  EXPECT_NEAR(fit[0].beta_s, 0.05, 1e-12);
  EXPECT_NEAR(fit[1].beta_s, 0.02, 1e-12);
  {
    std::ofstream out(path, std::ios::app);
    out << R"({"batch_sizes": [10], "compute_time": [0.5]})"
        << "\n";
  }
  try {
    fit_profile_from_metrics(path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":6"), std::string::npos) << e.what();
  }
}

TEST_F(SimFitTest, FitsExposedCommunicationAndNoiseUnlessTheWorkloadSetsThem) {
  // Two ranks; every step costs 0.004 s beyond the slower rank; the gradient is 1e6 bytes.
  const std::string path = (dir_ / "metrics.jsonl").string();
  {
    std::ofstream out(path);
    for (int step = 0; step < 20; ++step) {
      const std::vector<int> b = {16 + step, 48 - step};
      const std::vector<double> t = {0.001 * b[0], 0.002 * b[1]};
      nlohmann::json j = {{"step", step},
                          {"batch_sizes", b},
                          {"compute_time", t},
                          {"step_time", std::max(t[0], t[1]) + 0.004},
                          {"comm", {{"bytes", 1e6}}}};
      out << j.dump() << "\n";
    }
  }
  const FittedProfile fit = fit_profile_from_metrics(path);
  EXPECT_NEAR(fit.exposed_comm_s, 0.004, 1e-9);
  EXPECT_DOUBLE_EQ(fit.grad_bytes, 1e6);
  EXPECT_LT(fit.noise, 1e-9);
  // The simulator's ring over the fitted 2 ranks moves 1e6 bytes in 0.004 s: 2 Gbit/s, no latency.
  const SimConfig c = parse_sim_config("profile: {fit: " + path + "}");
  EXPECT_NEAR(c.workload.bandwidth_gbps, 2.0, 1e-9);
  EXPECT_DOUBLE_EQ(c.workload.latency_us, 0);
  EXPECT_DOUBLE_EQ(c.workload.grad_bytes, 1e6);
  EXPECT_NEAR(c.workload.noise, 0, 1e-9);
  // What the workload block sets wins over the fit.
  const SimConfig given =
      parse_sim_config("{profile: {fit: " + path + "}, workload: {bandwidth_gbps: 7, noise: 0.3}}");
  EXPECT_DOUBLE_EQ(given.workload.bandwidth_gbps, 7);
  EXPECT_DOUBLE_EQ(given.workload.noise, 0.3);
  EXPECT_DOUBLE_EQ(given.workload.grad_bytes, SimWorkload{}.grad_bytes);
}

// A fitted node keeps its rank's noise: a shared node (rank 1, every step 1.3x or 0.7x its model)
// scatters in the simulator as it did in the run, the others not; a workload noise overrides.
TEST_F(SimFitTest, EachNodeKeepsItsRanksNoise) {
  const std::string path = (dir_ / "shared.jsonl").string();
  {
    std::ofstream out(path);
    for (int step = 0; step < 40; ++step) {
      const std::vector<int> b = {16 + step % 8, 16 + step % 8};
      const double jitter = step % 2 ? 1.3 : 0.7;
      const std::vector<double> t = {0.001 * b[0], 0.001 * b[1] * jitter};
      out << nlohmann::json({{"step", step}, {"batch_sizes", b}, {"compute_time", t}}).dump() << "\n";
    }
  }
  const SimConfig c = parse_sim_config("{nodes: 4, profile: {fit: " + path + "}}");
  ASSERT_EQ(c.noise.size(), 4u);
  EXPECT_LT(c.noise[0], 1e-9);
  EXPECT_NEAR(c.noise[1], 0.3, 0.03);
  EXPECT_DOUBLE_EQ(c.noise[3], c.noise[1]);  // tiled as the rank models are
  const SimConfig given = parse_sim_config("{profile: {fit: " + path + "}, workload: {noise: 0.1}}");
  EXPECT_TRUE(given.noise.empty());
  EXPECT_DOUBLE_EQ(given.workload.noise, 0.1);
}

// A drift: the factor rises from 1 to the slowdown over half a period and falls back (raised
// cosine), for duration_steps steps or (0) to the end; before at_step it is 1.
TEST(SimConfigTest, ADriftMovesSmoothlyOverItsPeriod) {
  const SimConfig c = parse_sim_config(
      "{nodes: 2, events: [{at_step: 10, rank: 1, slowdown: 4, period_steps: 20}, "
      "{at_step: 0, rank: 0, slowdown: 2, period_steps: 8, duration_steps: 8}]}");
  ASSERT_EQ(c.events.size(), 2u);
  const SimEvent& d = c.events[1];  // sorted by at_step
  ASSERT_TRUE(d.drift());
  EXPECT_EQ(d.period_steps, 20);
  EXPECT_DOUBLE_EQ(d.factor_at(9), 1.0);
  EXPECT_DOUBLE_EQ(d.factor_at(10), 1.0);
  EXPECT_NEAR(d.factor_at(15), 2.0, 1e-12);  // a quarter period: sqrt(4)
  EXPECT_NEAR(d.factor_at(20), 4.0, 1e-12);
  EXPECT_NEAR(d.factor_at(30), 1.0, 1e-12);
  EXPECT_NEAR(d.factor_at(1000010), 1.0, 1e-12);  // no end
  const SimEvent& bounded = c.events[0];
  EXPECT_NEAR(bounded.factor_at(4), 2.0, 1e-12);
  EXPECT_DOUBLE_EQ(bounded.factor_at(8), 1.0);  // over after duration_steps
}

}  // namespace
}  // namespace dynamix
