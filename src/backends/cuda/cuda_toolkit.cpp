// The CUDA plug-in's kernels of the ops behind keras::ops (kernels_toolkit.cu, kernels_fft.cu, kernels_ctc.cu) in
// Osprey's op table.
#include <fmt/format.h>

#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernel_launch.h"
#include "ops/attrs.h"
#include "osprey/errors.h"
#include "ops/kernel.h"

namespace osprey::cuda {

using ops::KernelContext;
using runtime::DeviceType;

namespace {

static_assert(static_cast<int>(ops::CompareKind::logical_xor) == static_cast<int>(CmpOp::logical_xor));
static_assert(static_cast<int>(ops::ReduceOp::all) == static_cast<int>(RedOp::all));

int elem_bytes(const Tensor& t) { return static_cast<int>(dtype_size(t.dtype())); }

void broadcast_to_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  Tensor& y = ctx.outputs[0];
  launch_broadcast_to(strided_of(ctx.attr<ops::StridedGeometry>()), elem_bytes(y), ctx.inputs[0].raw_data(),
                      y.raw_data(), y.num_elements(), l.s());
  l.done("BroadcastTo");
}

void compare_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& at = ctx.attr<ops::CompareAttrs>();
  Tensor& y = ctx.outputs[0];
  launch_compare(static_cast<CmpOp>(at.kind), dt_of(ctx.inputs[0].dtype()), strided_of(at.geometry),
                 ctx.inputs[0].raw_data(), ctx.inputs[1].raw_data(), y.data<bool>(), y.num_elements(), l.s());
  l.done("Compare");
}

static_assert(static_cast<int>(ops::IntegerKind::lcm) == static_cast<int>(IntOp::lcm));

void integer_binary_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& at = ctx.attr<ops::IntegerBinaryAttrs>();
  Tensor& y = ctx.outputs[0];
  const Dt dt = dt_of(ctx.inputs[0].dtype());
  if (dt != Dt::i32 && dt != Dt::i64) {
    throw InvalidArgumentError(fmt::format("IntegerBinary kernel: int32 or int64 operands, got {}",
                                           dtype_name(ctx.inputs[0].dtype())));
  }
  launch_integer_binary(static_cast<IntOp>(at.kind), dt, strided_of(at.geometry), ctx.inputs[0].raw_data(),
                        ctx.inputs[1].raw_data(), y.raw_data(), y.num_elements(), l.s());
  l.done("IntegerBinary");
}

void select_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  Tensor& y = ctx.outputs[0];
  launch_select(strided_of(ctx.attr<ops::StridedGeometry>()), elem_bytes(y), ctx.inputs[0].data<bool>(),
                ctx.inputs[1].raw_data(), ctx.inputs[2].raw_data(), y.raw_data(), y.num_elements(), l.s());
  l.done("Select");
}

void reduce_axis_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& at = ctx.attr<ops::ReduceAxisAttrs>();
  launch_reduce_axis(static_cast<RedOp>(at.op), dt_of(ctx.inputs[0].dtype()), ctx.inputs[0].raw_data(),
                     ctx.outputs[0].raw_data(), at.outer, at.r, at.inner, l.s());
  l.done("ReduceAxis");
}

void cumulative_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& at = ctx.attr<ops::CumulativeAttrs>();
  launch_cumulative(dt_of(ctx.inputs[0].dtype()), at.prod, at.exclusive, at.reverse, ctx.inputs[0].raw_data(),
                    ctx.outputs[0].raw_data(), at.outer, at.r, at.inner, l.s());
  l.done("Cumulative");
}

void top_k_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& at = ctx.attr<ops::TopKAttrs>();
  launch_top_k(dt_of(ctx.inputs[0].dtype()), ctx.inputs[0].raw_data(), ctx.outputs[0].raw_data(),
               ctx.outputs[1].data<int32_t>(), at.rows, at.r, at.k, at.largest, l.s());
  l.done("TopK");
}

static_assert(static_cast<int>(ops::FftKind::real_inverse) == 3);

void fft_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& at = ctx.attr<ops::FftAttrs>();
  const DType dt = ctx.inputs[0].dtype();
  if (dt != DType::float32 && dt != DType::float64) {
    throw InvalidArgumentError(fmt::format("Fft kernel: float32 or float64 rows, got {}", dtype_name(dt)));
  }
  const int64_t elements = fft_work_elements(at.rows, at.n);
  if (elements == 0) return;
  const Tensor work = Tensor::empty(Shape({elements}), dt, ctx.device);
  launch_fft(static_cast<int>(at.kind), dt_of(dt), ctx.inputs[0].raw_data(),
             ctx.inputs.size() > 1 ? ctx.inputs[1].raw_data() : nullptr, ctx.outputs[0].raw_data(),
             ctx.outputs.size() > 1 ? ctx.outputs[1].raw_data() : nullptr, work.raw_data(), at.rows, at.n, l.s());
  l.done("Fft");
}

// Raises a CTC kernel's input error (kernels_ctc.cu's encoding of the error slots).
CudaDevice::ErrorCheck ctc_check(const char* op, int64_t max_label, int64_t frames, int64_t classes) {
  return [=](const long long err[4]) {
    if (!err[0]) return;
    const auto where = static_cast<int64_t>(static_cast<unsigned long long>(err[2]) >> 32) - 1;
    const auto value = static_cast<int32_t>(static_cast<uint32_t>(static_cast<unsigned long long>(err[2])));
    throw ops::ctc_input_error(op, static_cast<int>(err[1] % 8), err[1] / 8, where, value, max_label, frames, classes);
  };
}

void ctc_loss_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& at = ctx.attr<ops::CtcLossAttrs>();
  const Tensor scratch = Tensor::empty(Shape({ctc_loss_scratch_doubles(at.batch, at.frames, at.max_label)}),
                                       DType::float64, ctx.device);
  l.dev.clear_error();
  launch_ctc_loss(ctx.inputs[0].data<int32_t>(), ctx.inputs[1].data<float>(), ctx.inputs[2].data<int32_t>(),
                  ctx.inputs[3].data<int32_t>(), ctx.outputs[0].data<float>(),
                  at.with_grad ? ctx.outputs[1].data<float>() : nullptr, scratch.data<double>(), at.batch, at.frames,
                  at.classes, at.max_label, at.blank, l.dev.scratch().error, l.s());
  l.done("CTCLoss");
  l.dev.check_errors(ctc_check("CTCLoss", at.max_label, at.frames, at.classes));
}

void ctc_greedy_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& at = ctx.attr<ops::CtcDecodeAttrs>();
  l.dev.clear_error();
  launch_ctc_greedy(ctx.inputs[0].data<float>(), ctx.inputs[1].data<int32_t>(), ctx.outputs[0].data<int32_t>(),
                    ctx.outputs[1].data<float>(), at.batch, at.frames, at.classes, at.blank, at.merge_repeated,
                    l.dev.scratch().error, l.s());
  l.done("CTCGreedyDecoder");
  l.dev.check_errors(ctc_check("CTCGreedyDecoder", 0, at.frames, at.classes));
}

}  // namespace

void register_cuda_toolkit_kernels() {
  using ops::OpId;
  ops::register_kernel(OpId::BroadcastTo, DeviceType::GPU, broadcast_to_kernel, ops::kAnyHalf);
  ops::register_kernel(OpId::Compare, DeviceType::GPU, compare_kernel);
  ops::register_kernel(OpId::Select, DeviceType::GPU, select_kernel, ops::kAnyHalf);
  ops::register_kernel(OpId::ReduceAxis, DeviceType::GPU, reduce_axis_kernel);
  ops::register_kernel(OpId::Cumulative, DeviceType::GPU, cumulative_kernel);
  ops::register_kernel(OpId::TopK, DeviceType::GPU, top_k_kernel);
  ops::register_kernel(OpId::IntegerBinary, DeviceType::GPU, integer_binary_kernel);
  ops::register_kernel(OpId::Fft, DeviceType::GPU, fft_kernel);
  ops::register_kernel(OpId::CtcLoss, DeviceType::GPU, ctc_loss_kernel);
  ops::register_kernel(OpId::CtcGreedyDecode, DeviceType::GPU, ctc_greedy_kernel);
}

}  // namespace osprey::cuda
