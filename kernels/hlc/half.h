// DYNAMIX — float <-> IEEE fp16 / bfloat16 conversions (round to nearest even), CPU reference.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dynamix {

uint16_t float_to_fp16(float value);
float fp16_to_float(uint16_t half);
uint16_t float_to_bf16(float value);
float bf16_to_float(uint16_t half);

// Bulk forms over `count` elements.
void floats_to_fp16(const float* in, size_t count, uint16_t* out);
void fp16s_to_float(const uint16_t* in, size_t count, float* out);
void floats_to_bf16(const float* in, size_t count, uint16_t* out);
void bf16s_to_float(const uint16_t* in, size_t count, float* out);

}  // namespace dynamix
