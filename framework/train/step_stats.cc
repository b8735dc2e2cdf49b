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
  ++steps_;
  batch_ = batch_size;
  data_ += l.data_s;
  compute_ += l.compute_s;
  compute_sq_ += l.compute_s * l.compute_s;
  compute_steps_.push_back(l.compute_s);
  comm_ += ex.comm_s[r];
  wait_ += ex.wait_s[r];
  opt_ += l.optimizer_s;
  samples_ += l.samples;
  sq_norm_ = l.local_sq_norm;
}

NodeRecord WindowAccumulator::take(int rank, int32_t batch_max) {
  NodeRecord rec;
  rec.rank = rank;
  rec.batch_size = batch_;
  rec.batch_max = batch_max;
  rec.steps = static_cast<int32_t>(steps_);
  if (steps_ > 0) {
    const double n = static_cast<double>(steps_);
    rec.data_s = data_ / n;
    rec.compute_s = compute_ / n;
    rec.compute_rel_se = relative_standard_error(compute_, compute_sq_, n);
    const auto k = static_cast<size_t>(recent_steps(steps_));
    double recent = 0;
    for (size_t j = compute_steps_.size() - k; j < compute_steps_.size(); ++j) recent += compute_steps_[j];
    rec.compute_recent_s = recent / static_cast<double>(k);
    rec.comm_s = comm_ / n;
    rec.wait_s = wait_ / n;
    rec.optimizer_s = opt_ / n;
    rec.samples_per_s = compute_ > 0 ? samples_ / compute_ : 0.0;
    rec.grad_sq_norm = sq_norm_;
  }
  *this = WindowAccumulator();
  return rec;
}

}  // namespace dynamix
