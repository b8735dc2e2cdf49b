// DYNAMIX — fused gradient bucket packing (CPU reference; CUDA kernels mirror it on GPU).
// pack:   bucket[off_k + j] = scale * src_k[j], returning sum_j src_k[j]^2 over all k (the local
//         squared gradient norm, needed by the gradient-noise-scale estimator) in the same pass.
// unpack: dst_k[j] = bucket[off_k + j], returning sum of squares of the bucket (global norm).
#pragma once

#include <cstddef>
#include <vector>

namespace dynamix::kernels {

template <typename T>
struct Segment {
  T* data = nullptr;  // tensor storage (contiguous); null = gradient absent (packed as zeros)
  size_t count = 0;   // elements
  size_t offset = 0;  // element offset inside the bucket
};

// Returns the squared L2 norm of the unscaled sources, accumulated in double.
template <typename T>
double pack_scale(const std::vector<Segment<T>>& segments, T scale, T* bucket);

// Copies the bucket back into the segments; returns the squared L2 norm of the bucket.
template <typename T>
double unpack(const T* bucket, const std::vector<Segment<T>>& segments);

extern template double pack_scale<float>(const std::vector<Segment<float>>&, float, float*);
extern template double pack_scale<double>(const std::vector<Segment<double>>&, double, double*);
extern template double unpack<float>(const float*, const std::vector<Segment<float>>&);
extern template double unpack<double>(const double*, const std::vector<Segment<double>>&);

}  // namespace dynamix::kernels
