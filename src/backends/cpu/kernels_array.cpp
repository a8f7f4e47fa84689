// CPU kernels of the axis ops: concatenation and slicing as copies of contiguous blocks.
#include <cstring>

#include "backends/cpu/kernels.h"
#include "ops/attrs.h"
#include "ops/kernel.h"

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

void register_array_kernels() {
  ops::register_kernel(ops::OpId::Concat, DeviceType::CPU, concat_kernel);
  ops::register_kernel(ops::OpId::Slice, DeviceType::CPU, slice_kernel);
}

}  // namespace osprey::cpu
