// CPU kernels of the axis ops: concatenation and slicing as copies of contiguous blocks.
#include <cstring>
#include <vector>

#include "backends/cpu/kernels.h"
#include "ops/attrs.h"
#include "ops/kernel.h"
#include "osprey/random.h"

namespace osprey::cpu {

using runtime::DeviceType;

// Every input's block of each outer index goes after the previous input's, in the output's row of blocks.
static void concat_kernel(const ops::KernelContext& ctx) {
  const auto& a = ctx.attr<ops::AxisBlocks>();
  Tensor& y = ctx.outputs[0];
  const auto elem = static_cast<std::size_t>(dtype_size(y.dtype()));
  const auto out_row = static_cast<std::size_t>(y.shape().num_elements() / std::max<int64_t>(a.outer, 1)) * elem;
  char* dst = static_cast<char*>(y.raw_data());
  std::size_t at = 0;
  for (const Tensor& x : ctx.inputs) {
    const auto row = static_cast<std::size_t>(x.num_elements() / std::max<int64_t>(a.outer, 1)) * elem;
    const char* src = static_cast<const char*>(x.raw_data());
    for (int64_t o = 0; o < a.outer; ++o) std::memcpy(dst + o * out_row + at, src + o * row, row);
    at += row;
  }
}

static void slice_kernel(const ops::KernelContext& ctx) {
  const auto& a = ctx.attr<ops::AxisBlocks>();
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const auto elem = static_cast<std::size_t>(dtype_size(x.dtype()));
  const auto in_row = static_cast<std::size_t>(x.num_elements() / std::max<int64_t>(a.outer, 1)) * elem;
  const auto out_row = static_cast<std::size_t>(y.num_elements() / std::max<int64_t>(a.outer, 1)) * elem;
  const char* src = static_cast<const char*>(x.raw_data()) + static_cast<std::size_t>(a.begin * a.inner) * elem;
  char* dst = static_cast<char*>(y.raw_data());
  for (int64_t o = 0; o < a.outer; ++o) std::memcpy(dst + o * out_row, src + o * in_row, out_row);
}

// Walks the output in order, keeping the input offset of its multi-index (strides of the permuted axes).
template <typename T>
static void transpose_typed(const ops::TransposeAttrs& a, const T* x, T* y, int64_t n) {
  int64_t in_strides[ops::kMaxTransposeRank], stride = 1;
  for (int i = a.rank - 1; i >= 0; --i) {
    in_strides[i] = stride;
    stride *= a.in_dims[i];
  }
  int64_t dims[ops::kMaxTransposeRank], strides[ops::kMaxTransposeRank], index[ops::kMaxTransposeRank] = {};
  for (int i = 0; i < a.rank; ++i) {
    dims[i] = a.in_dims[a.perm[i]];
    strides[i] = in_strides[a.perm[i]];
  }
  int64_t offset = 0;
  for (int64_t k = 0; k < n; ++k) {
    y[k] = x[offset];
    for (int i = a.rank - 1; i >= 0; --i) {  // the next output index, carrying like an odometer
      offset += strides[i];
      if (++index[i] < dims[i]) break;
      offset -= strides[i] * dims[i];
      index[i] = 0;
    }
  }
}

// A permutation that keeps the last axis (attention's (B, T, H, d) <-> (B, H, T, d)): whole rows of it copied,
// the other axes walked as above.
static void transpose_rows(const ops::TransposeAttrs& a, const char* x, char* y, int64_t n, std::size_t elem) {
  const int r = a.rank - 1;
  const auto row = static_cast<std::size_t>(a.in_dims[r]) * elem;
  int64_t in_strides[ops::kMaxTransposeRank], stride = 1;
  for (int i = r - 1; i >= 0; --i) {
    in_strides[i] = stride;
    stride *= a.in_dims[i];
  }
  int64_t dims[ops::kMaxTransposeRank], strides[ops::kMaxTransposeRank], index[ops::kMaxTransposeRank] = {};
  for (int i = 0; i < r; ++i) {
    dims[i] = a.in_dims[a.perm[i]];
    strides[i] = in_strides[a.perm[i]];
  }
  const int64_t rows = a.in_dims[r] ? n / a.in_dims[r] : 0;
  int64_t offset = 0;
  for (int64_t k = 0; k < rows; ++k) {
    std::memcpy(y + static_cast<std::size_t>(k) * row, x + static_cast<std::size_t>(offset) * row, row);
    for (int i = r - 1; i >= 0; --i) {
      offset += strides[i];
      if (++index[i] < dims[i]) break;
      offset -= strides[i] * dims[i];
      index[i] = 0;
    }
  }
}

static void transpose_kernel(const ops::KernelContext& ctx) {
  const auto& a = ctx.attr<ops::TransposeAttrs>();
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  if (a.rank >= 2 && a.perm[a.rank - 1] == a.rank - 1 && a.in_dims[a.rank - 1] >= 8) {
    return transpose_rows(a, static_cast<const char*>(x.raw_data()), static_cast<char*>(y.raw_data()),
                          y.num_elements(), static_cast<std::size_t>(dtype_size(x.dtype())));
  }
  if (dtype_size(x.dtype()) == 8) {
    transpose_typed(a, static_cast<const int64_t*>(x.raw_data()), static_cast<int64_t*>(y.raw_data()), y.num_elements());
  } else if (dtype_size(x.dtype()) == 1) {  // bool
    transpose_typed(a, static_cast<const uint8_t*>(x.raw_data()), static_cast<uint8_t*>(y.raw_data()), y.num_elements());
  } else if (dtype_size(x.dtype()) == 2) {  // float16, bfloat16
    transpose_typed(a, static_cast<const uint16_t*>(x.raw_data()), static_cast<uint16_t*>(y.raw_data()), y.num_elements());
  } else {
    transpose_typed(a, static_cast<const int32_t*>(x.raw_data()), static_cast<int32_t*>(y.raw_data()), y.num_elements());
  }
}

// Philox(seed, stream) from block state[2] on, as floats with 24 random bits (Philox::next_float's mapping);
// the state then points past the blocks used.
static void random_uniform_state_kernel(const ops::KernelContext& ctx) {
  auto* state = static_cast<int64_t*>(ctx.inputs[0].raw_data());
  Tensor& y = ctx.outputs[0];
  const auto n = static_cast<std::size_t>(y.num_elements());
  random::Philox g(static_cast<uint64_t>(state[0]), static_cast<uint64_t>(state[1]));
  g.skip_to(static_cast<uint64_t>(state[2]));
  float* out = y.data<float>();
  std::vector<uint32_t> words(n);
  g.fill_u32(words.data(), n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(words[i] >> 8) * (1.0f / 16777216.0f);
  state[2] += static_cast<int64_t>((n + 3) / 4);
}

void register_array_kernels() {
  ops::register_kernel(ops::OpId::RandomUniformState, DeviceType::CPU, random_uniform_state_kernel);
  ops::register_kernel(ops::OpId::Transpose, DeviceType::CPU, transpose_kernel, ops::kAnyHalf);
  ops::register_kernel(ops::OpId::Concat, DeviceType::CPU, concat_kernel, ops::kAnyHalf);
  ops::register_kernel(ops::OpId::Slice, DeviceType::CPU, slice_kernel, ops::kAnyHalf);
}

}  // namespace osprey::cpu
