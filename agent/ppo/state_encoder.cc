// DYNAMIX — feature extraction for the dynamix policy and the Welford running normaliser.
#include "agent/ppo/state_encoder.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "agent/plan_projection.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

double clamp(double v, double lo, double hi) { return std::min(hi, std::max(lo, v)); }
double safe_log1p(double v) { return std::log1p(clamp(v, 0, 1e30)); }

// The fields the encoder reads: one NaN/Inf among them makes the state unsafe.
const char* first_non_finite(const NodeRecord& n) {
  const std::pair<const char*, double> fields[] = {{"compute_s", n.compute_s},
                                                   {"comm_s", n.comm_s},
                                                   {"wait_s", n.wait_s},
                                                   {"data_s", n.data_s},
                                                   {"optimizer_s", n.optimizer_s},
                                                   {"samples_per_s", n.samples_per_s},
                                                   {"cpu_util_machine", n.cpu_util_machine},
                                                   {"gpu_util", n.gpu_util},
                                                   {"gpu_mem_used_bytes", n.gpu_mem_used_bytes},
                                                   {"gpu_mem_total_bytes", n.gpu_mem_total_bytes},
                                                   {"mem_rss_bytes", n.mem_rss_bytes},
                                                   {"mem_available_bytes", n.mem_available_bytes},
                                                   {"net_tx_bytes_per_s", n.net_tx_bytes_per_s},
                                                   {"net_rx_bytes_per_s", n.net_rx_bytes_per_s},
                                                   {"net_retransmits_per_s", n.net_retransmits_per_s},
                                                   {"net_srtt_us", n.net_srtt_us}};
  for (const auto& [name, v] : fields) {
    if (!std::isfinite(v)) return name;
  }
  return nullptr;
}

const char* first_non_finite(const GlobalStats& g) {
  const std::pair<const char*, double> fields[] = {{"progress", g.progress},
                                                   {"loss_trend", g.loss_trend},
                                                   {"grad_sq_norm", g.grad_sq_norm},
                                                   {"grad_norm_variance", g.grad_norm_variance},
                                                   {"noise_scale", g.noise_scale},
                                                   {"step_time_spread", g.step_time_spread},
                                                   {"loss", g.loss}};
  for (const auto& [name, v] : fields) {
    if (!std::isfinite(v)) return name;
  }
  return nullptr;
}

double rank_upper(const ClusterState& s, size_t i) {
  const double unbounded = std::numeric_limits<int32_t>::max();
  double m = unbounded;
  if (s.bounds.max.size() == 1 || s.bounds.max.size() == s.nodes.size()) m = rank_max(s.bounds, i);
  if (m <= 0 || m >= unbounded) m = s.nodes[i].batch_max;
  return m > 0 ? m : 0;
}

}  // namespace

EncodedState encode_state(const ClusterState& s) {
  EncodedState e;
  const size_t n = s.nodes.size();
  e.ranks = static_cast<int64_t>(n);
  e.node.assign(n * kNodeFeatures, 0.f);
  e.global.assign(kGlobalFeatures, 0.f);
  for (size_t i = 0; i < n; ++i) {
    if (const char* f = first_non_finite(s.nodes[i])) {
      e.finite = false;
      e.problem = "rank " + std::to_string(i) + " " + f + " is not finite";
      return e;
    }
  }
  if (const char* f = first_non_finite(s.global)) {
    e.finite = false;
    e.problem = std::string("global ") + f + " is not finite";
    return e;
  }
  if (n == 0) return e;

  double mean_compute = 0, mean_rate = 0, batch = 0, batch_max = 0;
  for (size_t i = 0; i < n; ++i) {
    mean_compute += clamp(s.nodes[i].compute_s, 0, 1e9) / n;
    mean_rate += clamp(s.nodes[i].samples_per_s, 0, 1e15) / n;
    batch += std::max(0, s.nodes[i].batch_size);
    batch_max += rank_upper(s, i);
  }
  for (size_t i = 0; i < n; ++i) {
    const NodeRecord& r = s.nodes[i];
    float* f = &e.node[i * kNodeFeatures];
    double bmax = rank_upper(s, i);
    f[0] = bmax > 0 ? clamp(r.batch_size / bmax, 0, 1) : 0;
    f[1] = mean_compute > 0 ? clamp(clamp(r.compute_s, 0, 1e9) / mean_compute, 0, 10) : 1;
    double step = clamp(r.data_s, 0, 1e9) + clamp(r.compute_s, 0, 1e9) + clamp(r.wait_s, 0, 1e9) +
                  clamp(r.comm_s, 0, 1e9) + clamp(r.optimizer_s, 0, 1e9);
    f[2] = step > 0 ? clamp(r.wait_s / step, 0, 1) : 0;
    f[3] = mean_rate > 0 ? clamp(clamp(r.samples_per_s, 0, 1e15) / mean_rate, 0, 10) : 1;
    f[4] = clamp(r.cpu_util_machine, 0, 1);
    f[5] = clamp(r.gpu_util > 1.5 ? r.gpu_util / 100 : r.gpu_util, 0, 1);  // fraction or percent
    double headroom = 0;
    if (r.gpu_mem_total_bytes > 0) {
      headroom = 1 - r.gpu_mem_used_bytes / r.gpu_mem_total_bytes;
    } else if (r.mem_available_bytes > 0) {
      headroom = r.mem_available_bytes / (r.mem_available_bytes + std::max(0.0, r.mem_rss_bytes));
    }
    f[6] = clamp(headroom, 0, 1);
    f[7] = safe_log1p(r.net_tx_bytes_per_s + r.net_rx_bytes_per_s);
    f[8] = safe_log1p(r.net_retransmits_per_s);
    f[9] = safe_log1p(r.net_srtt_us);
  }
  const GlobalStats& g = s.global;
  e.global[0] = batch_max > 0 ? clamp(batch / batch_max, 0, 1) : 0;
  e.global[1] = batch > 0 ? safe_log1p(g.noise_scale / batch) : 0;
  e.global[2] = clamp(g.loss_trend, -10, 10);
  e.global[3] = g.grad_sq_norm > 0 ? safe_log1p(g.grad_norm_variance / g.grad_sq_norm)
                                   : safe_log1p(g.grad_norm_variance);
  e.global[4] = std::log(clamp(g.step_time_spread, 1, 1e6));
  e.global[5] = clamp(g.progress, 0, 1);
  return e;
}

RunningNorm::RunningNorm(int64_t dims) : mean_(dims, 0.0), var_(dims, 1.0) {}

void RunningNorm::set(std::vector<double> mean, std::vector<double> var, double count) {
  DYNAMIX_CHECK(mean.size() == var.size() && count > 0, "RunningNorm::set: inconsistent statistics");
  mean_ = std::move(mean);
  var_ = std::move(var);
  count_ = count;
}

void RunningNorm::update(const std::vector<float>& x, int64_t rows) {
  const int64_t d = dims();
  if (rows <= 0) return;
  DYNAMIX_CHECK(static_cast<int64_t>(x.size()) == rows * d, "RunningNorm::update: size mismatch");
  for (int64_t j = 0; j < d; ++j) {
    double bm = 0, bv = 0;
    for (int64_t r = 0; r < rows; ++r) bm += x[r * d + j];
    bm /= rows;
    for (int64_t r = 0; r < rows; ++r) bv += (x[r * d + j] - bm) * (x[r * d + j] - bm);
    bv /= rows;  // population variance of the batch
    // Combine (mean_, var_, count_) with (bm, bv, rows).
    double total = count_ + rows, delta = bm - mean_[j];
    double m2 = var_[j] * count_ + bv * rows + delta * delta * count_ * rows / total;
    mean_[j] += delta * rows / total;
    var_[j] = m2 / total;
  }
  count_ += rows;
}

std::vector<float> RunningNorm::normalize(const std::vector<float>& x, int64_t rows, double clip) const {
  const int64_t d = dims();
  DYNAMIX_CHECK(static_cast<int64_t>(x.size()) == rows * d, "RunningNorm::normalize: size mismatch");
  std::vector<float> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < d; ++j) {
      double z = (x[r * d + j] - mean_[j]) / std::sqrt(var_[j] + 1e-8);
      out[r * d + j] = static_cast<float>(clamp(z, -clip, clip));
    }
  }
  return out;
}

}  // namespace dynamix
