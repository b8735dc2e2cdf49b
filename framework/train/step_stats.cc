// DYNAMIX — per-step statistics and window accumulation.
#include "framework/train/step_stats.h"

#include <algorithm>

#include "framework/core/stats.h"

namespace dynamix {

std::vector<double> StepExchange::pack(const LocalStep& m, int rank, int world) {
  std::vector<double> buf(static_cast<size_t>(world) * kStepFields, 0.0);
  double* s = buf.data() + static_cast<size_t>(rank) * kStepFields;
  s[0] = m.data_s;
  s[1] = m.compute_s;
  s[2] = m.allreduce_s;
  s[3] = m.optimizer_s;
  s[4] = m.loss_sum;
  s[5] = m.samples;
  s[6] = m.local_sq_norm;
  s[7] = m.stop;
  s[8] = m.output_failed;
  s[9] = m.decide;
  return buf;
}

StepExchange StepExchange::unpack(const std::vector<double>& summed, int world) {
  StepExchange ex;
  ex.ranks.resize(static_cast<size_t>(world));
  double slowest = 0;
  for (int r = 0; r < world; ++r) {
    const double* s = summed.data() + static_cast<size_t>(r) * kStepFields;
    LocalStep& l = ex.ranks[static_cast<size_t>(r)];
    l = {s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9]};
    slowest = std::max(slowest, l.data_s + l.compute_s);
    ex.loss += l.loss_sum;
    ex.samples += l.samples;
    ex.stop = ex.stop || l.stop > 0;
    ex.output_failed = ex.output_failed || l.output_failed > 0;
    ex.decide = ex.decide || l.decide > 0;
  }
  ex.loss = ex.samples > 0 ? ex.loss / ex.samples : 0.0;
  for (const auto& l : ex.ranks) {
    const double wait = slowest - (l.data_s + l.compute_s);
    ex.wait_s.push_back(wait);
    ex.comm_s.push_back(std::max(0.0, l.allreduce_s - wait));
  }
  return ex;
}

void WindowAccumulator::add(const StepExchange& ex, int rank, int32_t batch_size) {
  const auto r = static_cast<size_t>(rank);
  const LocalStep& l = ex.ranks[r];
  if (startup_left_ > 0) {
    --startup_left_;
    ++set_aside_;
  }
  steps_.push_back({l.data_s, l.compute_s, ex.comm_s[r], ex.wait_s[r], l.optimizer_s, l.samples});
  batch_ = batch_size;
  sq_norm_ = l.local_sq_norm;
}

NodeRecord WindowAccumulator::take(int rank, int32_t batch_max) {
  NodeRecord rec;
  rec.rank = rank;
  rec.batch_size = batch_;
  rec.batch_max = batch_max;
  const size_t begin = steps_.empty() ? 0 : std::min(set_aside_, steps_.size() - 1);
  const size_t count = steps_.size() - begin;
  rec.steps = static_cast<int32_t>(count);
  if (count > 0) {
    Step sum{0, 0, 0, 0, 0, 0};
    double compute_sq = 0;
    for (size_t j = begin; j < steps_.size(); ++j) {
      const Step& s = steps_[j];
      sum.data_s += s.data_s;
      sum.compute_s += s.compute_s;
      sum.comm_s += s.comm_s;
      sum.wait_s += s.wait_s;
      sum.optimizer_s += s.optimizer_s;
      sum.samples += s.samples;
      compute_sq += s.compute_s * s.compute_s;
    }
    const double n = static_cast<double>(count);
    rec.data_s = sum.data_s / n;
    rec.compute_s = sum.compute_s / n;
    rec.compute_rel_se = relative_standard_error(sum.compute_s, compute_sq, n);
    const auto k = static_cast<size_t>(recent_steps(static_cast<int64_t>(count)));
    double recent = 0;
    for (size_t j = steps_.size() - k; j < steps_.size(); ++j) recent += steps_[j].compute_s;
    rec.compute_recent_s = recent / static_cast<double>(k);
    rec.comm_s = sum.comm_s / n;
    rec.wait_s = sum.wait_s / n;
    rec.optimizer_s = sum.optimizer_s / n;
    rec.samples_per_s = sum.compute_s > 0 ? sum.samples / sum.compute_s : 0.0;
    rec.grad_sq_norm = sq_norm_;
  }
  const int32_t startup_left = startup_left_;
  *this = WindowAccumulator();
  startup_left_ = startup_left;
  return rec;
}

}  // namespace dynamix
