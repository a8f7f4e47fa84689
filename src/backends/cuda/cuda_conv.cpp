// The CUDA plug-in's convolutions on cuDNN (opened with dlopen on first use), pooling and resizing on its own kernels.
// Activations stay channels-last (NHWC strides on cuDNN's NCHW-ordered descriptors); Keras's kernels (window...,
// in, out) are transposed to cuDNN's NHWC filter layout (out, window..., in) per call and back for the kernel's
// gradient. cuDNN pads both sides of an axis alike: where TensorFlow's padding is asymmetric ("same" with an even
// window, "causal"), the input is padded explicitly by the difference. 1-D convolutions run as 2-D ones of height 1.
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "backends/cuda/cuda_platform.h"
#include "backends/cuda/cudnn_api.h"
#include "backends/cuda/kernel_launch.h"
#include "ops/attrs.h"
#include "ops/kernel.h"
#include "osprey/errors.h"
#include "runtime/device_manager.h"

#if __has_include(<cudnn.h>)
#include <cudnn.h>
// The declarations in cudnn_api.h against the real header, where the toolkit has it.
static_assert(sizeof(cudnnConvolutionFwdAlgoPerf_t) == sizeof(osprey::cuda::cudnn::AlgoPerf));
static_assert(sizeof(cudnnConvolutionBwdDataAlgoPerf_t) == sizeof(osprey::cuda::cudnn::AlgoPerf));
static_assert(sizeof(cudnnConvolutionBwdFilterAlgoPerf_t) == sizeof(osprey::cuda::cudnn::AlgoPerf));
static_assert(offsetof(cudnnConvolutionFwdAlgoPerf_t, memory) == offsetof(osprey::cuda::cudnn::AlgoPerf, memory));
static_assert(offsetof(cudnnConvolutionFwdAlgoPerf_t, determinism) ==
              offsetof(osprey::cuda::cudnn::AlgoPerf, determinism));
static_assert(CUDNN_STATUS_SUCCESS == osprey::cuda::cudnn::kSuccess && CUDNN_DATA_FLOAT == osprey::cuda::cudnn::kDataFloat);
static_assert(CUDNN_TENSOR_NHWC == osprey::cuda::cudnn::kTensorNhwc);
static_assert(CUDNN_CROSS_CORRELATION == osprey::cuda::cudnn::kCrossCorrelation);
static_assert(CUDNN_DEFAULT_MATH == osprey::cuda::cudnn::kDefaultMath && CUDNN_FMA_MATH == osprey::cuda::cudnn::kFmaMath);
static_assert(CUDNN_TENSOR_OP_MATH == osprey::cuda::cudnn::kTensorOpMath);
static_assert(CUDNN_DATA_HALF == osprey::cuda::cudnn::kDataHalf && CUDNN_DATA_BFLOAT16 == osprey::cuda::cudnn::kDataBfloat16);
static_assert(CUDNN_DETERMINISTIC == osprey::cuda::cudnn::kDeterministic);
static_assert(CUDNN_MAJOR == 9, "cudnn_api.h loads libcudnn.so.9");
#endif

namespace osprey::cuda {

namespace cudnn {

void check(Status status, const char* what) {
  if (status == kSuccess) return;
  const char* msg = api().error_string ? api().error_string(status) : "unknown";
  throw InternalError(fmt::format("{} failed: cuDNN status {} ({})", what, status, msg));
}

const Api& api() {
  static const Api loaded = [] {
    const char* override_path = std::getenv("OSPREY_CUDNN_LIBRARY");
    const std::string soname = override_path && *override_path ? override_path : "libcudnn.so.9";
    void* h = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);  // searched on the plug-in's RUNPATH too
#ifdef OSPREY_CUDA_LIBRARY_DIR
    if (!h && soname.find('/') == std::string::npos) {
      h = dlopen((std::string(OSPREY_CUDA_LIBRARY_DIR) + "/" + soname).c_str(), RTLD_NOW | RTLD_LOCAL);
    }
#endif
    if (!h) {
      const char* err = dlerror();
      throw InternalError(fmt::format("cuDNN could not be loaded for a convolution or recurrent layer on the GPU: {}. Install cuDNN 9 "
                                      "(or put its directory on LD_LIBRARY_PATH, or name the library file in "
                                      "OSPREY_CUDNN_LIBRARY), or run the model on the CPU.",
                                      err ? err : soname));
    }
    Api a;
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
      if (!fn) throw InternalError(fmt::format("{} has no symbol {} (cuDNN 9 is needed)", soname, name));
    };
    sym(a.create, "cudnnCreate");
    sym(a.destroy, "cudnnDestroy");
    sym(a.set_stream, "cudnnSetStream");
    sym(a.error_string, "cudnnGetErrorString");
    sym(a.get_version, "cudnnGetVersion");
    sym(a.create_tensor, "cudnnCreateTensorDescriptor");
    sym(a.set_tensor, "cudnnSetTensorNdDescriptor");
    sym(a.destroy_tensor, "cudnnDestroyTensorDescriptor");
    sym(a.create_filter, "cudnnCreateFilterDescriptor");
    sym(a.set_filter, "cudnnSetFilterNdDescriptor");
    sym(a.destroy_filter, "cudnnDestroyFilterDescriptor");
    sym(a.create_conv, "cudnnCreateConvolutionDescriptor");
    sym(a.set_conv, "cudnnSetConvolutionNdDescriptor");
    sym(a.set_groups, "cudnnSetConvolutionGroupCount");
    sym(a.set_math, "cudnnSetConvolutionMathType");
    sym(a.destroy_conv, "cudnnDestroyConvolutionDescriptor");
    sym(a.forward_algos, "cudnnGetConvolutionForwardAlgorithm_v7");
    sym(a.forward, "cudnnConvolutionForward");
    sym(a.backward_data_algos, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    sym(a.backward_data, "cudnnConvolutionBackwardData");
    sym(a.backward_filter_algos, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    sym(a.backward_filter, "cudnnConvolutionBackwardFilter");
    sym(a.get_tensor, "cudnnGetTensorNdDescriptor");
    sym(a.create_dropout, "cudnnCreateDropoutDescriptor");
    sym(a.set_dropout, "cudnnSetDropoutDescriptor");
    sym(a.create_rnn, "cudnnCreateRNNDescriptor");
    sym(a.set_rnn, "cudnnSetRNNDescriptor_v8");
    sym(a.create_rnn_data, "cudnnCreateRNNDataDescriptor");
    sym(a.set_rnn_data, "cudnnSetRNNDataDescriptor");
    sym(a.rnn_weight_space_size, "cudnnGetRNNWeightSpaceSize");
    sym(a.rnn_temp_space_sizes, "cudnnGetRNNTempSpaceSizes");
    sym(a.rnn_weight_params, "cudnnGetRNNWeightParams");
    sym(a.rnn_forward, "cudnnRNNForward");
    sym(a.rnn_backward_data, "cudnnRNNBackwardData_v8");
    sym(a.rnn_backward_weights, "cudnnRNNBackwardWeights_v8");
    if (a.get_version() / 10000 != 9) {
      throw InternalError(fmt::format("{} is cuDNN version {}; Osprey's plug-in needs cuDNN 9", soname, a.get_version()));
    }
    return a;
  }();
  return loaded;
}

// A cuDNN handle per (thread, device), bound to the device's stream.
Handle handle_for(CudaDevice& dev) {
  thread_local std::map<int, cudnn::Handle> handles;
  auto it = handles.find(dev.ordinal());
  if (it == handles.end()) {
    cudnn::Handle h = nullptr;
    cudnn::check(cudnn::api().create(&h), "cudnnCreate");
    it = handles.emplace(dev.ordinal(), h).first;
  }
  cudnn::check(cudnn::api().set_stream(it->second, dev.stream()), "cudnnSetStream");
  return it->second;
}

}  // namespace cudnn

namespace {

using ops::KernelContext;
using runtime::DeviceType;
using cudnn::handle_for;

// The convolution as cuDNN sees it: at least two spatial axes (1-D gets a leading height of 1), symmetric padding,
// and the explicit padding the input gets first.
struct ConvPlan {
  int rank = 0;                     // cuDNN's spatial rank (2 or 3)
  std::vector<int> x, w, y;         // logical (N, C, spatial...) dims of the padded input, filter (K, C/g, k...), output
  std::vector<int> pad, stride, dilation;
  std::vector<int64_t> extra_before, extra_after;  // explicit padding per Osprey spatial axis
  bool explicit_pad = false;
  cudnn::TensorDesc xd = nullptr, yd = nullptr;
  cudnn::FilterDesc wd = nullptr;
  cudnn::ConvDesc cd = nullptr;
  int fwd_algo = -1, bwd_data_algo = -1, bwd_filter_algo = -1;
};

// Channels-last strides for logical (N, C, spatial...) dims.
std::vector<int> nhwc_strides(const std::vector<int>& d) {
  const int r = static_cast<int>(d.size());
  std::vector<int> s(d.size());
  s[1] = 1;
  int acc = d[1];
  for (int i = r - 1; i >= 2; --i) {
    s[static_cast<std::size_t>(i)] = acc;
    acc *= d[static_cast<std::size_t>(i)];
  }
  s[0] = acc;
  return s;
}

int narrow(int64_t v, const char* what) {
  if (v > (int64_t{1} << 31) - 1) throw InvalidArgumentError(fmt::format("cuDNN convolution: {} {} is too large", what, v));
  return static_cast<int>(v);
}

// The plan for a convolution of an input (N, s..., C) with a kernel (k..., C/g, K) and attributes `a`, its tensors
// of type `dtype` (float32, or float16/bfloat16 on the tensor cores with float32 accumulation: cuDNN's
// pseudo-half configurations), cached per thread, device, type, shapes, attributes and TF32 setting (descriptors
// and the algorithms cuDNN's heuristics chose).
ConvPlan& plan_for(CudaDevice& dev, DType dtype, const Shape& xs, const Shape& ks, const ops::ConvAttrs& a) {
  const bool half = is_half(dtype);
  const bool tf32 = !half && runtime::DeviceManager::get().tensor_float_32.load(std::memory_order_relaxed);
  std::vector<int64_t> key{dev.ordinal(), static_cast<int64_t>(dtype), tf32, a.rank, a.groups};
  for (int64_t d : xs.dims()) key.push_back(d);
  for (int64_t d : ks.dims()) key.push_back(d);
  for (int i = 0; i < a.rank; ++i) key.insert(key.end(), {a.strides[i], a.dilation[i], a.pad_before[i], a.pad_after[i]});
  thread_local std::map<std::vector<int64_t>, ConvPlan> plans;
  auto it = plans.find(key);
  if (it != plans.end()) return it->second;

  const auto& api = cudnn::api();
  ConvPlan p;
  const int lead = a.rank == 1 ? 1 : 0;  // 1-D: height 1
  p.rank = a.rank + lead;
  p.x = {narrow(xs[0], "batch"), narrow(xs[-1], "channels")};
  p.w = {narrow(ks[-1], "filters"), narrow(ks[-2], "channels")};
  if (lead) {
    p.x.push_back(1);
    p.w.push_back(1);
    p.pad.push_back(0);
    p.stride.push_back(1);
    p.dilation.push_back(1);
  }
  for (int i = 0; i < a.rank; ++i) {
    const int64_t sym = std::min(a.pad_before[i], a.pad_after[i]);
    p.extra_before.push_back(a.pad_before[i] - sym);
    p.extra_after.push_back(a.pad_after[i] - sym);
    p.explicit_pad = p.explicit_pad || a.pad_before[i] != a.pad_after[i];
    p.x.push_back(narrow(xs[i + 1] + a.pad_before[i] + a.pad_after[i] - 2 * sym, "extent"));
    p.w.push_back(narrow(ks[i], "window"));
    p.pad.push_back(narrow(sym, "padding"));
    p.stride.push_back(narrow(a.strides[i], "stride"));
    p.dilation.push_back(narrow(a.dilation[i], "dilation"));
  }
  p.y = {p.x[0], p.w[0]};
  for (int i = 0; i < p.rank; ++i) {
    const int span = (p.w[static_cast<std::size_t>(i + 2)] - 1) * p.dilation[static_cast<std::size_t>(i)] + 1;
    p.y.push_back((p.x[static_cast<std::size_t>(i + 2)] + 2 * p.pad[static_cast<std::size_t>(i)] - span) /
                      p.stride[static_cast<std::size_t>(i)] + 1);
  }
  const int nd = p.rank + 2;
  cudnn::check(api.create_tensor(&p.xd), "cudnnCreateTensorDescriptor");
  cudnn::check(api.create_tensor(&p.yd), "cudnnCreateTensorDescriptor");
  cudnn::check(api.create_filter(&p.wd), "cudnnCreateFilterDescriptor");
  cudnn::check(api.create_conv(&p.cd), "cudnnCreateConvolutionDescriptor");
  const auto xs_strides = nhwc_strides(p.x), ys_strides = nhwc_strides(p.y);
  const int type = dtype == DType::float16 ? cudnn::kDataHalf : dtype == DType::bfloat16 ? cudnn::kDataBfloat16
                                                                                          : cudnn::kDataFloat;
  cudnn::check(api.set_tensor(p.xd, type, nd, p.x.data(), xs_strides.data()), "cudnnSetTensorNdDescriptor");
  cudnn::check(api.set_tensor(p.yd, type, nd, p.y.data(), ys_strides.data()), "cudnnSetTensorNdDescriptor");
  cudnn::check(api.set_filter(p.wd, type, cudnn::kTensorNhwc, nd, p.w.data()), "cudnnSetFilterNdDescriptor");
  cudnn::check(api.set_conv(p.cd, p.rank, p.pad.data(), p.stride.data(), p.dilation.data(), cudnn::kCrossCorrelation,
                            cudnn::kDataFloat),
               "cudnnSetConvolutionNdDescriptor");
  cudnn::check(api.set_groups(p.cd, static_cast<int>(a.groups)), "cudnnSetConvolutionGroupCount");
  cudnn::check(api.set_math(p.cd, half ? cudnn::kTensorOpMath : tf32 ? cudnn::kDefaultMath : cudnn::kFmaMath),
               "cudnnSetConvolutionMathType");
  // The heuristics' best algorithm that fits the device's workspace, deterministic ones first (the gradients'
  // algorithms may use atomics otherwise).
  auto choose = [](const cudnn::AlgoPerf* perf, int count, const char* what) {
    int any = -1;
    for (int i = 0; i < count; ++i) {
      if (perf[i].status != cudnn::kSuccess || perf[i].memory > CudaDevice::kWorkspaceBytes) continue;
      if (perf[i].determinism == cudnn::kDeterministic) return perf[i].algo;
      if (any < 0) any = perf[i].algo;
    }
    if (any < 0) throw InternalError(fmt::format("cuDNN has no {} algorithm within {} bytes of workspace", what,
                                                 CudaDevice::kWorkspaceBytes));
    return any;
  };
  cudnn::Handle h = handle_for(dev);
  cudnn::AlgoPerf perf[16];
  int count = 0;
  cudnn::check(api.forward_algos(h, p.xd, p.wd, p.cd, p.yd, 16, &count, perf), "cudnnGetConvolutionForwardAlgorithm_v7");
  p.fwd_algo = choose(perf, count, "forward convolution");
  cudnn::check(api.backward_data_algos(h, p.wd, p.yd, p.cd, p.xd, 16, &count, perf),
               "cudnnGetConvolutionBackwardDataAlgorithm_v7");
  p.bwd_data_algo = choose(perf, count, "backward-data convolution");
  cudnn::check(api.backward_filter_algos(h, p.xd, p.yd, p.cd, p.wd, 16, &count, perf),
               "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
  p.bwd_filter_algo = choose(perf, count, "backward-filter convolution");
  return plans.emplace(std::move(key), p).first->second;
}

// Keras's kernel (k..., C/g, K) to cuDNN's (K, k..., C/g), or back.
Tensor to_cudnn_filter(const Launch& l, const Tensor& w, runtime::Device* device) {
  const int r = w.shape().rank();
  std::vector<int64_t> in(w.shape().dims().begin(), w.shape().dims().end());
  std::vector<int> perm{r - 1};
  for (int i = 0; i < r - 1; ++i) perm.push_back(i);
  std::vector<int64_t> out_dims;
  for (int p : perm) out_dims.push_back(in[static_cast<std::size_t>(p)]);
  Tensor t = Tensor::empty(Shape(out_dims), w.dtype(), device);
  launch_transpose(w.raw_data(), t.raw_data(), r, in.data(), perm.data(), w.num_elements(),
                   static_cast<int>(dtype_size(w.dtype())), l.s());
  return t;
}
void from_cudnn_filter(const Launch& l, const Tensor& t, Tensor& w) {
  const int r = w.shape().rank();
  std::vector<int64_t> in(t.shape().dims().begin(), t.shape().dims().end());
  std::vector<int> perm;
  for (int i = 1; i < r; ++i) perm.push_back(i);
  perm.push_back(0);
  launch_transpose(t.raw_data(), w.raw_data(), r, in.data(), perm.data(), w.num_elements(),
                   static_cast<int>(dtype_size(w.dtype())), l.s());
}

// The region of the explicitly padded input that the unpadded one fills.
RegionGeometry region_of(const Shape& xs, const ConvPlan& p, const ops::ConvAttrs& a) {
  RegionGeometry g{xs.rank(), {}, {}, {}};
  for (int i = 0; i < xs.rank(); ++i) {
    g.small[i] = xs[i];
    g.big[i] = xs[i];
    g.offset[i] = 0;
  }
  for (int i = 0; i < a.rank; ++i) {
    g.big[i + 1] = xs[i + 1] + p.extra_before[static_cast<std::size_t>(i)] + p.extra_after[static_cast<std::size_t>(i)];
    g.offset[i + 1] = p.extra_before[static_cast<std::size_t>(i)];
  }
  return g;
}

Shape big_shape(const RegionGeometry& g) {
  std::vector<int64_t> d(g.big, g.big + g.rank);
  return Shape(d);
}

// x itself, or x inside zeros where the plan pads it explicitly (asymmetric padding).
Tensor padded_input(const Launch& l, const Tensor& x, const ConvPlan& p, const ops::ConvAttrs& a,
                    runtime::Device* device) {
  if (!p.explicit_pad) return x;
  const RegionGeometry g = region_of(x.shape(), p, a);
  Tensor big = Tensor::empty(big_shape(g), x.dtype(), device);
  check(cudaMemsetAsync(big.raw_data(), 0, big.nbytes(), l.s()), "cudaMemsetAsync");
  launch_region_copy(g, x.raw_data(), big.raw_data(), static_cast<int>(dtype_size(x.dtype())), true,
                     l.s());
  return big;
}

void conv_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& a = ctx.attr<ops::ConvAttrs>();
  const Tensor& x = ctx.inputs[0];
  const Tensor& w = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  if (y.num_elements() == 0) return;
  ConvPlan& p = plan_for(l.dev, x.dtype(), x.shape(), w.shape(), a);
  const Tensor xin = padded_input(l, x, p, a, ctx.device);
  const Tensor wt = to_cudnn_filter(l, w, ctx.device);
  const float one = 1.f, zero = 0.f;
  cudnn::check(cudnn::api().forward(handle_for(l.dev), &one, p.xd, xin.raw_data(), p.wd, wt.raw_data(), p.cd, p.fwd_algo,
                                    l.dev.workspace(), CudaDevice::kWorkspaceBytes, &zero, p.yd, y.raw_data()),
               "cudnnConvolutionForward");
  if (a.has_bias) {
    const int64_t cols = y.shape()[-1];
    launch_binary(BinaryOp::add, Bcast::row_b, dt_of(y.dtype()), y.raw_data(), ctx.inputs[2].raw_data(),
                  y.raw_data(), y.num_elements(), cols, l.s());
  }
  if (a.activation != ops::Activation::linear) {  // in place, as the fused Dense's
    launch_activation(act_of(a.activation), dt_of(y.dtype()), y.raw_data(), y.raw_data(), y.num_elements(),
                      y.shape()[-1], l.s());
  }
  check(cudaGetLastError(), "Conv2D");
}

void conv_backprop_input_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& a = ctx.attr<ops::ConvAttrs>();
  const Tensor& dy = ctx.inputs[0];
  const Tensor& w = ctx.inputs[1];
  Tensor& dx = ctx.outputs[0];
  if (dx.num_elements() == 0) return;
  if (dy.num_elements() == 0) {
    check(cudaMemsetAsync(dx.raw_data(), 0, dx.nbytes(), l.s()), "cudaMemsetAsync");
    return;
  }
  ConvPlan& p = plan_for(l.dev, dx.dtype(), dx.shape(), w.shape(), a);
  const RegionGeometry g = region_of(dx.shape(), p, a);
  Tensor dxin = p.explicit_pad ? Tensor::empty(big_shape(g), dx.dtype(), ctx.device) : dx;
  const Tensor wt = to_cudnn_filter(l, w, ctx.device);
  const float one = 1.f, zero = 0.f;
  cudnn::check(cudnn::api().backward_data(handle_for(l.dev), &one, p.wd, wt.raw_data(), p.yd, dy.raw_data(), p.cd,
                                          p.bwd_data_algo, l.dev.workspace(), CudaDevice::kWorkspaceBytes, &zero,
                                          p.xd, dxin.raw_data()),
               "cudnnConvolutionBackwardData");
  if (p.explicit_pad) {
    launch_region_copy(g, dx.raw_data(), dxin.raw_data(), static_cast<int>(dtype_size(dx.dtype())), false, l.s());
  }
  check(cudaGetLastError(), "Conv2DBackpropInput");
}

void conv_backprop_filter_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& a = ctx.attr<ops::ConvAttrs>();
  const Tensor& x = ctx.inputs[0];
  const Tensor& dy = ctx.inputs[1];
  Tensor& dw = ctx.outputs[0];
  if (dy.num_elements() == 0 || x.num_elements() == 0) {
    check(cudaMemsetAsync(dw.raw_data(), 0, dw.nbytes(), l.s()), "cudaMemsetAsync");
    if (a.has_bias) check(cudaMemsetAsync(ctx.outputs[1].raw_data(), 0, ctx.outputs[1].nbytes(), l.s()), "cudaMemsetAsync");
    return;
  }
  ConvPlan& p = plan_for(l.dev, x.dtype(), x.shape(), dw.shape(), a);
  const Tensor xin = padded_input(l, x, p, a, ctx.device);
  std::vector<int64_t> td{dw.shape()[-1]};
  for (int i = 0; i + 1 < dw.shape().rank(); ++i) td.push_back(dw.shape()[i]);
  Tensor dwt = Tensor::empty(Shape(td), x.dtype(), ctx.device);  // cuDNN's filter has the inputs' type
  const float one = 1.f, zero = 0.f;
  cudnn::check(cudnn::api().backward_filter(handle_for(l.dev), &one, p.xd, xin.raw_data(), p.yd, dy.raw_data(), p.cd,
                                            p.bwd_filter_algo, l.dev.workspace(), CudaDevice::kWorkspaceBytes, &zero,
                                            p.wd, dwt.raw_data()),
               "cudnnConvolutionBackwardFilter");
  if (dw.dtype() == x.dtype()) {
    from_cudnn_filter(l, dwt, dw);
  } else {  // bfloat16 inputs: the kernel and bias gradients are float32, the variables' dtype (ops/conv_ops.cpp)
    Tensor narrow_dw = Tensor::empty(dw.shape(), x.dtype(), ctx.device);
    from_cudnn_filter(l, dwt, narrow_dw);
    launch_cast(dt_of(x.dtype()), dt_of(dw.dtype()), narrow_dw.raw_data(), dw.raw_data(), dw.num_elements(), l.s());
  }
  if (a.has_bias) {  // summed in float32 from the inputs' type into the bias gradient's
    const int64_t cols = dy.shape()[-1];
    sum_columns(ctx, l, dt_of(dy.dtype()), dt_of(ctx.outputs[1].dtype()), dy.raw_data(), ctx.outputs[1].raw_data(),
                dy.num_elements() / cols, cols);
  }
  check(cudaGetLastError(), "Conv2DBackpropFilter");
}

PoolGeometry pool_geometry(const Shape& xs, const Shape& ys, const ops::PoolAttrs& a) {
  PoolGeometry g{xs[0], xs[-1], {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, a.kind == ops::PoolKind::max};
  const int lead = 3 - a.rank;
  for (int i = 0; i < a.rank; ++i) {
    g.in[lead + i] = xs[i + 1];
    g.out[lead + i] = ys[i + 1];
    g.window[lead + i] = a.window[i];
    g.stride[lead + i] = a.strides[i];
    g.pad[lead + i] = a.pad_before[i];
  }
  return g;
}

void pool_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  launch_pool(pool_geometry(x.shape(), y.shape(), ctx.attr<ops::PoolAttrs>()), dt_of(x.dtype()), x.raw_data(),
              y.raw_data(), l.s());
  check(cudaGetLastError(), "Pool");
}

void pool_grad_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const Tensor& x = ctx.inputs[0];
  const Tensor& dy = ctx.inputs[1];
  launch_pool_grad(pool_geometry(x.shape(), dy.shape(), ctx.attr<ops::PoolAttrs>()), dt_of(x.dtype()), x.raw_data(),
                   dy.raw_data(), ctx.outputs[0].raw_data(), l.s());
  check(cudaGetLastError(), "PoolGrad");
}

void resize_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const auto& xs = x.shape();
  launch_resize(x.data<float>(), y.data<float>(), xs[0], xs[1], xs[2], xs[3], y.shape()[1], y.shape()[2],
                ctx.attr<ops::ResizeAttrs>().method == ops::ResizeMethod::bilinear, l.s());
  check(cudaGetLastError(), "ResizeBilinear");
}

void resize_grad_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const Tensor& dy = ctx.inputs[0];
  Tensor& dx = ctx.outputs[0];
  const auto& xs = dx.shape();
  launch_resize_grad(dy.data<float>(), dx.data<float>(), xs[0], xs[1], xs[2], xs[3], dy.shape()[1], dy.shape()[2],
                     ctx.attr<ops::ResizeAttrs>().method == ops::ResizeMethod::bilinear, l.s());
  check(cudaGetLastError(), "ResizeGrad");
}

void resample_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& a = ctx.attr<ops::ResampleAttrs>();
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const auto& xs = x.shape();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < a.axis; ++i) outer *= xs[i];
  for (int i = a.axis + 1; i < xs.rank(); ++i) inner *= xs[i];
  launch_resample(x.data<float>(), ctx.inputs[1].data<int64_t>(), ctx.inputs[2].data<float>(), y.data<float>(),
                  outer, xs[a.axis], y.shape()[a.axis], inner, a.span, l.s());
  check(cudaGetLastError(), "Resample");
}

void affine_transform_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& a = ctx.attr<ops::TransformAttrs>();
  const Tensor& x = ctx.inputs[0];
  const Tensor& t = ctx.inputs[1];
  const auto& xs = x.shape();
  launch_affine_transform(x.data<float>(), t.data<float>(), ctx.outputs[0].data<float>(), xs[0], xs[1], xs[2], xs[3],
                          t.shape()[0] != 1, a.interpolation == ops::ResizeMethod::bilinear,
                          static_cast<int>(a.fill_mode), a.fill_value, l.s());
  check(cudaGetLastError(), "ImageProjectiveTransformV3");
}

}  // namespace

void register_cuda_conv_kernels() {
  using ops::OpId;
  // float16/bfloat16 convolutions in cuDNN itself and pooling in the plug-in's kernels (mixed precision); resizing
  // of half tensors through float32 copies.
  ops::register_kernel(OpId::Conv, DeviceType::GPU, conv_kernel, ops::kAnyHalf);
  ops::register_kernel(OpId::ConvBackpropInput, DeviceType::GPU, conv_backprop_input_kernel, ops::kAnyHalf);
  ops::register_kernel(OpId::ConvBackpropFilter, DeviceType::GPU, conv_backprop_filter_kernel, ops::kAnyHalf);
  ops::register_kernel(OpId::Pool, DeviceType::GPU, pool_kernel, ops::kAnyHalf);
  ops::register_kernel(OpId::PoolGrad, DeviceType::GPU, pool_grad_kernel, ops::kAnyHalf);
  ops::register_kernel(OpId::Resize, DeviceType::GPU, resize_kernel);
  ops::register_kernel(OpId::ResizeGrad, DeviceType::GPU, resize_grad_kernel);
  ops::register_kernel(OpId::AffineTransform, DeviceType::GPU, affine_transform_kernel);
  ops::register_kernel(OpId::Resample, DeviceType::GPU, resample_kernel);
}

}  // namespace osprey::cuda
