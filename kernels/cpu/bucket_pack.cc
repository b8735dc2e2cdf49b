// DYNAMIX — CPU reference of the bucket pack/unpack kernels.
#include "kernels/bucket_pack.h"

#include <cstring>

namespace dynamix::kernels {

template <typename T>
double pack_scale(const std::vector<Segment<T>>& segments, T scale, T* bucket) {
  double sq = 0.0;
  for (const auto& s : segments) {
    T* out = bucket + s.offset;
    if (s.data == nullptr) {
      std::memset(out, 0, s.count * sizeof(T));
      continue;
    }
    const T* in = s.data;
    // Four partial sums keep the loop vectorizable without -ffast-math.
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    size_t j = 0;
    for (; j + 4 <= s.count; j += 4) {
      const T x0 = in[j], x1 = in[j + 1], x2 = in[j + 2], x3 = in[j + 3];
      out[j] = scale * x0;
      out[j + 1] = scale * x1;
      out[j + 2] = scale * x2;
      out[j + 3] = scale * x3;
      a0 += static_cast<double>(x0) * x0;
      a1 += static_cast<double>(x1) * x1;
      a2 += static_cast<double>(x2) * x2;
      a3 += static_cast<double>(x3) * x3;
    }
    for (; j < s.count; ++j) {
      out[j] = scale * in[j];
      a0 += static_cast<double>(in[j]) * in[j];
    }
    sq += (a0 + a1) + (a2 + a3);
  }
  return sq;
}

template <typename T>
double unpack(const T* bucket, const std::vector<Segment<T>>& segments) {
  double sq = 0.0;
  for (const auto& s : segments) {
    const T* in = bucket + s.offset;
    double a0 = 0, a1 = 0;
    size_t j = 0;
    for (; j + 2 <= s.count; j += 2) {
      a0 += static_cast<double>(in[j]) * in[j];
      a1 += static_cast<double>(in[j + 1]) * in[j + 1];
    }
    for (; j < s.count; ++j) a0 += static_cast<double>(in[j]) * in[j];
    sq += a0 + a1;
    if (s.data != nullptr) std::memcpy(s.data, in, s.count * sizeof(T));
  }
  return sq;
}

template double pack_scale<float>(const std::vector<Segment<float>>&, float, float*);
template double pack_scale<double>(const std::vector<Segment<double>>&, double, double*);
template double unpack<float>(const float*, const std::vector<Segment<float>>&);
template double unpack<double>(const double*, const std::vector<Segment<double>>&);

}  // namespace dynamix::kernels
