// DYNAMIX — NumPy .npy files (format versions 1.0, 2.0, 3.0): header parsing and memory-mapped arrays.
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dynamix {

// What a .npy header declares, checked against the bytes that follow it.
struct NpyHeader {
  std::string descr;  // NumPy dtype string, e.g. "<f4"
  torch::ScalarType dtype = torch::kFloat32;
  std::vector<int64_t> shape;
  size_t data_offset = 0;  // where the array data starts
  size_t data_bytes = 0;   // product of the shape times the item size
};

// Parses and validates the header of a .npy file held at [data, data + size): magic, version,
// the header dictionary, a supported little-endian dtype, C order, and a file size that matches
// the shape exactly. Throws dynamix::Error naming `path` and the problem.
NpyHeader parse_npy_header(const uint8_t* data, size_t size, const std::string& path);

// One array of a .npy file.
struct NpyArray {
  std::string path;
  std::string descr;
  torch::Tensor data;  // the header's shape and dtype, over the read-only mapping: never write to it
};

// Memory-maps `path` and returns its array; the mapping lives as long as the tensor (and its views).
NpyArray load_npy(const std::string& path);

// "(60000, 28, 28)", as NumPy prints a shape.
std::string npy_shape_text(c10::IntArrayRef shape);

}  // namespace dynamix
