// CPU kernels of attention's masked softmax: softmax over the last axis with positions left out by a broadcast
// mask and/or a causal band (ops::masked_softmax), and its gradient. Rows are split between the intra-op threads;
// each row is computed the same way whatever the split.
#include <algorithm>
#include <cmath>

#include "backends/cpu/kernels.h"
#include "backends/cpu/vector_math.h"

namespace osprey::cpu {

using ops::KernelContext;
using ops::MaskedSoftmaxAttrs;
using runtime::DeviceType;

namespace {

// Where row r's mask values start, and r's index along the second-to-last axis (the causal band's row).
struct RowMask {
  int64_t offset, t;
};
RowMask row_mask(const MaskedSoftmaxAttrs& a, int64_t r) {
  RowMask m{0, 0};
  int64_t rest = r;
  for (int i = a.rank - 2; i >= 0; --i) {
    const int64_t at = rest % a.dims[i];
    rest /= a.dims[i];
    if (i == a.rank - 2) m.t = at;
    m.offset += at * a.mask_strides[i];
  }
  return m;
}

bool kept(const MaskedSoftmaxAttrs& a, const float* mask, const RowMask& rm, int64_t c) {
  if (a.causal && c > rm.t) return false;
  return !a.has_mask || mask[rm.offset + c * a.mask_strides[a.rank - 1]] > 0.5f;
}

void masked_softmax_kernel(const KernelContext& ctx) {
  const auto& a = ctx.attr<MaskedSoftmaxAttrs>();
  const float* x = ctx.inputs[0].data<float>();
  const float* mask = a.has_mask ? ctx.inputs[1].data<float>() : nullptr;
  float* y = ctx.outputs[0].data<float>();
  const int64_t cols = a.dims[a.rank - 1], rows = cols ? ctx.inputs[0].num_elements() / cols : 0;
  parallel_chunks(rows, [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      const RowMask rm = row_mask(a, r);
      const float* xr = x + r * cols;
      float* yr = y + r * cols;
      int64_t kept_count = 0;
      for (int64_t c = 0; c < cols; ++c) {
        const bool k = kept(a, mask, rm, c);
        kept_count += k;
        yr[c] = k ? xr[c] : a.masked_value;
      }
      float mx = yr[0];
      for (int64_t c = 1; c < cols; ++c) mx = std::max(mx, yr[c]);
      for (int64_t c = 0; c < cols; ++c) yr[c] -= mx;
      exp_values(yr, yr, cols);  // vectorised; a left-out logit's exp is exactly 0 below when any is kept
      if (kept_count > 0 && kept_count < cols) {
        for (int64_t c = 0; c < cols; ++c) {
          if (!kept(a, mask, rm, c)) yr[c] = 0.f;
        }
      }
      float s = 0.f;
      for (int64_t c = 0; c < cols; ++c) s += yr[c];
      const float inv = 1.f / s;
      for (int64_t c = 0; c < cols; ++c) yr[c] = a.zero_masked && !kept(a, mask, rm, c) ? 0.f : yr[c] * inv;
    }
  }, 64);
}

// dx = y ⊙ (dy − Σ y·dy) at kept positions, 0 at left-out ones (they were replaced by a constant).
void masked_softmax_grad_kernel(const KernelContext& ctx) {
  const auto& a = ctx.attr<MaskedSoftmaxAttrs>();
  const float* dy = ctx.inputs[0].data<float>();
  const float* y = ctx.inputs[1].data<float>();
  const float* mask = a.has_mask ? ctx.inputs[2].data<float>() : nullptr;
  float* dx = ctx.outputs[0].data<float>();
  const int64_t cols = a.dims[a.rank - 1], rows = cols ? ctx.inputs[0].num_elements() / cols : 0;
  parallel_chunks(rows, [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      const RowMask rm = row_mask(a, r);
      const float* yr = y + r * cols;
      const float* gr = dy + r * cols;
      float dot = 0.f;
      for (int64_t c = 0; c < cols; ++c) dot += gr[c] * yr[c];
      for (int64_t c = 0; c < cols; ++c) dx[r * cols + c] = kept(a, mask, rm, c) ? yr[c] * (gr[c] - dot) : 0.f;
    }
  }, 64);
}

}  // namespace

void register_attention_kernels() {
  ops::register_kernel(ops::OpId::MaskedSoftmax, DeviceType::CPU, masked_softmax_kernel);
  ops::register_kernel(ops::OpId::MaskedSoftmaxGrad, DeviceType::CPU, masked_softmax_grad_kernel);
}

}  // namespace osprey::cpu
