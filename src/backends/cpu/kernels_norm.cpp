// CPU kernels of layer normalization (ops::layer_norm): rows split between the intra-op threads, each row's
// statistics summed in order (the same values whatever the split).
#include <cmath>

#include "backends/cpu/kernels.h"

namespace osprey::cpu {

using ops::KernelContext;
using ops::LayerNormAttrs;
using runtime::DeviceType;

namespace {

void layer_norm_kernel(const KernelContext& ctx) {
  const auto& a = ctx.attr<LayerNormAttrs>();
  const Tensor& x = ctx.inputs[0];
  const int64_t rows = x.shape()[0], d = x.shape()[1];
  const float* px = x.data<float>();
  const float* gamma = a.has_gamma ? ctx.inputs[1].data<float>() : nullptr;
  const float* beta = a.has_beta ? ctx.inputs[2].data<float>() : nullptr;
  float* y = ctx.outputs[0].data<float>();
  float* mean = ctx.outputs[1].data<float>();
  float* rstd = ctx.outputs[2].data<float>();
  parallel_chunks(rows, [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      const float* xr = px + r * d;
      float* yr = y + r * d;
      float s = 0.f;
      for (int64_t c = 0; c < d; ++c) s += xr[c];
      const float m = s / static_cast<float>(d);
      float v = 0.f;
      for (int64_t c = 0; c < d; ++c) v += (xr[c] - m) * (xr[c] - m);
      const float inv = 1.f / std::sqrt(v / static_cast<float>(d) + a.epsilon);
      mean[r] = m;
      rstd[r] = inv;
      for (int64_t c = 0; c < d; ++c) {
        const float g = gamma ? gamma[c] * inv : inv;
        yr[c] = (xr[c] - m) * g + (beta ? beta[c] : 0.f);
      }
    }
  }, 16);
}

// With x̂ = (x − mean)·rstd and g = dy·gamma: dx = rstd·(g − mean(g) − x̂·mean(g·x̂)); dyx = dy·x̂.
void layer_norm_grad_kernel(const KernelContext& ctx) {
  const auto& a = ctx.attr<LayerNormAttrs>();
  const Tensor& dy = ctx.inputs[0];
  const int64_t rows = dy.shape()[0], d = dy.shape()[1];
  const float* pdy = dy.data<float>();
  const float* px = ctx.inputs[1].data<float>();
  const float* gamma = a.has_gamma ? ctx.inputs[2].data<float>() : nullptr;
  const float* mean = ctx.inputs[3].data<float>();
  const float* rstd = ctx.inputs[4].data<float>();
  float* dx = ctx.outputs[0].data<float>();
  float* dyx = ctx.outputs[1].data<float>();
  parallel_chunks(rows, [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      const float* gr = pdy + r * d;
      const float* xr = px + r * d;
      const float m = mean[r], inv = rstd[r];
      float sg = 0.f, sgx = 0.f;
      for (int64_t c = 0; c < d; ++c) {
        const float xhat = (xr[c] - m) * inv;
        const float g = gamma ? gr[c] * gamma[c] : gr[c];
        sg += g;
        sgx += g * xhat;
        dyx[r * d + c] = gr[c] * xhat;
      }
      const float mg = sg / static_cast<float>(d), mgx = sgx / static_cast<float>(d);
      for (int64_t c = 0; c < d; ++c) {
        const float xhat = (xr[c] - m) * inv;
        const float g = gamma ? gr[c] * gamma[c] : gr[c];
        dx[r * d + c] = inv * (g - mg - xhat * mgx);
      }
    }
  }, 16);
}

}  // namespace

void register_norm_kernels() {
  ops::register_kernel(ops::OpId::LayerNorm, DeviceType::CPU, layer_norm_kernel);
  ops::register_kernel(ops::OpId::LayerNormGrad, DeviceType::CPU, layer_norm_grad_kernel);
}

}  // namespace osprey::cpu
