// CPU kernels for per-sample losses, their gradients, and accuracy counts (formulas: spec/keras_api.md §2).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/vector_math.h"
#include "ops/loss_rows.h"
#include "osprey/errors.h"

namespace osprey::cpu {

using ops::KernelContext;
using ops::LossKind;
using runtime::DeviceType;

// The labels of a tensor of any dtype as floats: float32 labels are read in place, others converted once per call
// (per-element dtype dispatch cost more than the loss itself for small batches).
class Labels {
 public:
  explicit Labels(const Tensor& t) {
    const int64_t n = t.num_elements();
    switch (t.dtype()) {
      case DType::float32: data_ = t.data<float>(); return;
      case DType::float64: convert(t.data<double>(), n); break;
      case DType::int32: convert(t.data<int32_t>(), n); break;
      case DType::int64: convert(t.data<int64_t>(), n); break;
      case DType::bool_: convert(t.data<bool>(), n); break;
      case DType::float16:
      case DType::bfloat16: throw InternalError("Labels of half floats reach a loss kernel (dispatch computes them in float32)");
    }
    data_ = copy_.data();
  }
  float operator[](int64_t i) const { return data_[i]; }
  const float* data() const { return data_; }

 private:
  template <typename T>
  void convert(const T* v, int64_t n) {
    copy_.resize(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) copy_[static_cast<std::size_t>(i)] = static_cast<float>(v[i]);
  }
  const float* data_ = nullptr;
  std::vector<float> copy_;
};

static int64_t sparse_label(const Labels& labels, int64_t i, int64_t classes) {
  const float v = labels[i];
  const auto label = static_cast<int64_t>(v);
  if (label < 0 || label >= classes || static_cast<float>(label) != v) {
    throw ops::sparse_label_out_of_range(v, classes);
  }
  return label;
}

// Binary crossentropy on the CPU: the logs of a block of clipped predictions at once (vector_math.h), then the
// per-element formulas of loss_rows.h; the gradient by a loop the compiler vectorises. The same values as
// loss_rows::binary_crossentropy computes with the same log (a label of 0 or 1 multiplies one log by an exact 0).
OSPREY_VECTOR_CLONES static void bce_grad_range(const float* __restrict p, const float* __restrict labels,
                                                const float* __restrict upstream, float* __restrict dp, int64_t n,
                                                float ls) {
  for (int64_t i = 0; i < n; ++i) dp[i] = loss_rows::bce_grad(loss_rows::bce_label(labels[i], ls), p[i], upstream[i], 1);
}

static void bce_impl(const ops::LossAttrs& at, const Tensor& yt, const Tensor& yp, float* out, const float* upstream,
                     float* dp) {
  const int64_t n = yp.shape()[0];
  const int64_t d = n ? yp.num_elements() / n : 0;
  const float* p = yp.data<float>();
  const Labels lab(yt);
  const float ls = static_cast<float>(at.label_smoothing);
  if (out && d == 0) {  // rows of no predictions: the mean of nothing, 0/0
    for (int64_t i = 0; i < n; ++i) out[i] = std::numeric_limits<float>::quiet_NaN();
  } else if (out) {
    constexpr int64_t kBlock = 256;
    float c[kBlock], c1[kBlock], log_c[kBlock], log_1c[kBlock];
    // Rows in blocks of whole rows (a row longer than the block is summed across blocks).
    double acc = 0.0;
    int64_t row = 0, in_row = 0;
    for (int64_t b = 0; b < n * d; b += kBlock) {
      const int64_t len = std::min(kBlock, n * d - b);
      for (int64_t k = 0; k < len; ++k) {
        c[k] = loss_rows::clip(p[b + k]);
        c1[k] = 1.f - c[k];
      }
      log_values(c, log_c, len);
      log_values(c1, log_1c, len);
      for (int64_t k = 0; k < len; ++k) {
        acc += loss_rows::bce_value(loss_rows::bce_label(lab[b + k], ls), log_c[k], log_1c[k]);
        if (++in_row == d) {
          out[row++] = static_cast<float>(acc / static_cast<double>(d));
          acc = 0.0;
          in_row = 0;
        }
      }
    }
  }
  if (dp) {
    if (d == 1) {
      const float* labels = lab.data();
      bce_grad_range(p, labels, upstream, dp, n, ls);
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < d; ++j) {
        dp[i * d + j] = loss_rows::bce_grad(loss_rows::bce_label(lab[i * d + j], ls), p[i * d + j], upstream[i], d);
      }
    }
  }
}

// Per-sample loss and, when `upstream` is given, the gradient with respect to y_pred (formulas: ops/loss_rows.h).
static void loss_impl(const ops::LossAttrs& at, const Tensor& yt, const Tensor& yp, float* out, const float* upstream,
                      float* dp) {
  if (at.kind == LossKind::binary_crossentropy) return bce_impl(at, yt, yp, out, upstream, dp);
  const int64_t n = yp.shape()[0];
  const int64_t d = n ? yp.num_elements() / n : 0;
  const float* p = yp.data<float>();
  const Labels lab(yt);
  const float ls = static_cast<float>(at.label_smoothing);
  for (int64_t i = 0; i < n; ++i) {
    const float* pr = p + i * d;
    float* gr = dp ? dp + i * d : nullptr;
    const float up = upstream ? upstream[i] : 0.f;
    auto label = [&](int64_t j) { return lab[i * d + j]; };
    float value = 0.f;
    switch (at.kind) {
      case LossKind::binary_crossentropy: break;  // bce_impl, above
      case LossKind::categorical_crossentropy:
        value = loss_rows::categorical_crossentropy(pr, d, label, -1, ls, out != nullptr, up, gr);
        break;
      case LossKind::sparse_categorical_crossentropy:
        value = loss_rows::categorical_crossentropy(pr, d, label, sparse_label(lab, i, d), ls, out != nullptr, up, gr);
        break;
      case LossKind::mean_squared_error: value = loss_rows::mean_squared_error(pr, d, label, up, gr); break;
      case LossKind::mean_absolute_error: value = loss_rows::mean_absolute_error(pr, d, label, up, gr); break;
    }
    if (out) out[i] = value;
  }
}

static void loss_kernel(const KernelContext& ctx) {
  loss_impl(ctx.attr<ops::LossAttrs>(), ctx.inputs[0], ctx.inputs[1], ctx.outputs[0].data<float>(), nullptr, nullptr);
}

static void loss_grad_kernel(const KernelContext& ctx) {
  loss_impl(ctx.attr<ops::LossAttrs>(), ctx.inputs[0], ctx.inputs[1], nullptr, ctx.inputs[2].data<float>(),
            ctx.outputs[0].data<float>());
}

// The mean of the per-sample values, as Loss then Reduce(mean_all) compute it: the float values summed in double,
// divided by their count, rounded to float.
static void loss_mean_kernel(const KernelContext& ctx) {
  const int64_t n = ctx.inputs[1].shape()[0];
  thread_local std::vector<float> values;
  values.resize(static_cast<std::size_t>(n));
  loss_impl(ctx.attr<ops::LossAttrs>(), ctx.inputs[0], ctx.inputs[1], values.data(), nullptr, nullptr);
  double s = 0.0;
  for (float v : values) s += v;
  if (n > 0) s /= static_cast<double>(n);
  ctx.outputs[0].data<float>()[0] = static_cast<float>(s);
}

// Its gradient: every sample's upstream is the scalar's divided by the count (in float, as the mean's backward
// computes it), then LossGrad's formulas.
static void loss_mean_grad_kernel(const KernelContext& ctx) {
  const int64_t n = ctx.inputs[1].shape()[0];
  const float up = ctx.inputs[2].data<float>()[0] / static_cast<float>(std::max<int64_t>(n, 1));
  thread_local std::vector<float> upstream;
  upstream.assign(static_cast<std::size_t>(n), up);
  loss_impl(ctx.attr<ops::LossAttrs>(), ctx.inputs[0], ctx.inputs[1], nullptr, upstream.data(),
            ctx.outputs[0].data<float>());
}

static int64_t argmax(const float* p, int64_t d) {
  int64_t best = 0;
  for (int64_t j = 1; j < d; ++j) {
    if (p[j] > p[best]) best = j;
  }
  return best;
}

static void accuracy_count_kernel(const KernelContext& ctx) {
  const auto& at = ctx.attr<ops::AccuracyAttrs>();
  const auto& yt = ctx.inputs[0];
  const auto& yp = ctx.inputs[1];
  const int64_t n = yp.shape()[0];
  const int64_t d = n ? yp.num_elements() / n : 0;
  const float* p = yp.data<float>();
  const Labels lab(yt);
  double correct = 0.0;
  if (at.kind == ops::AccuracyKind::binary && d == 1) {
    // One prediction per row: a count of matches, without a branch per row (a shuffled batch's labels are a
    // coin toss for the branch predictor).
    const float threshold = static_cast<float>(at.threshold);
    int64_t matches = 0;
    for (int64_t i = 0; i < n; ++i) matches += lab[i] == (p[i] > threshold ? 1.f : 0.f);
    ctx.outputs[0].data<float>()[0] = static_cast<float>(matches);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    switch (at.kind) {
      case ops::AccuracyKind::binary: {
        double row = 0.0;
        for (int64_t j = 0; j < d; ++j) {
          const float pred = p[i * d + j] > static_cast<float>(at.threshold) ? 1.f : 0.f;  // strict >
          row += lab[i * d + j] == pred ? 1.0 : 0.0;
        }
        correct += d ? row / static_cast<double>(d) : 0.0;
        break;
      }
      case ops::AccuracyKind::categorical: {
        const int64_t td = yt.num_elements() / n;
        int64_t best_t = 0;
        for (int64_t j = 1; j < td; ++j) {
          if (lab[i * td + j] > lab[i * td + best_t]) best_t = j;
        }
        correct += best_t == argmax(p + i * d, d) ? 1.0 : 0.0;
        break;
      }
      case ops::AccuracyKind::sparse_categorical:
        correct += lab[i] == static_cast<float>(argmax(p + i * d, d)) ? 1.0 : 0.0;
        break;
    }
  }
  ctx.outputs[0].data<float>()[0] = static_cast<float>(correct);
}

void register_loss_kernels() {
  ops::register_kernel(ops::OpId::Loss, DeviceType::CPU, loss_kernel);
  ops::register_kernel(ops::OpId::LossGrad, DeviceType::CPU, loss_grad_kernel);
  ops::register_kernel(ops::OpId::LossMean, DeviceType::CPU, loss_mean_kernel);
  ops::register_kernel(ops::OpId::LossMeanGrad, DeviceType::CPU, loss_mean_grad_kernel);
  ops::register_kernel(ops::OpId::AccuracyCount, DeviceType::CPU, accuracy_count_kernel);
}

}  // namespace osprey::cpu
