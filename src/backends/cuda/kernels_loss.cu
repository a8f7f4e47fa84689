// The CUDA plug-in's loss and accuracy kernels: the CPU's formulas (ops/loss_rows.h), one thread per sample, or a
// block per sample for long rows (a Transformer's 128 × 256 values per sample); deterministic block sums.
#include <cstdint>

#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernel_grid.cuh"
#include "ops/loss_rows.h"

namespace osprey::cuda {

namespace {

__device__ inline float label_at(Dt dt, const void* p, int64_t i) {
  switch (dt) {
    case Dt::f32: return static_cast<const float*>(p)[i];
    case Dt::f64: return static_cast<float>(static_cast<const double*>(p)[i]);
    case Dt::i32: return static_cast<float>(static_cast<const int32_t*>(p)[i]);
    case Dt::i64: return static_cast<float>(static_cast<const int64_t*>(p)[i]);
    case Dt::b8: return static_cast<const bool*>(p)[i] ? 1.f : 0.f;
    case Dt::f16:
    case Dt::bf16: return 0.f;  // labels reach the loss kernels as float32 (dispatch)
  }
  return 0.f;
}

// One thread per sample, with the CPU's formulas (ops/loss_rows.h, spec/keras_api.md §2).
__global__ void loss_k(LossOp op, Dt ldt, const void* yt, const float* yp, int64_t n, int64_t d, float ls, float* out,
                       const float* upstream, float* dp, long long* error) {
  GRID_STRIDE(i, n) {
    const float* pr = yp + i * d;
    float* gr = dp ? dp + i * d : nullptr;
    const float up = upstream ? upstream[i] : 0.f;
    auto label = [=](int64_t j) { return label_at(ldt, yt, i * d + j); };
    float value = 0.f;
    switch (op) {
      case LossOp::bce: value = loss_rows::binary_crossentropy(pr, d, label, ls, out != nullptr, up, gr); break;
      case LossOp::cce:
        value = loss_rows::categorical_crossentropy(pr, d, label, -1, ls, out != nullptr, up, gr);
        break;
      case LossOp::scce: {
        const float v = label_at(ldt, yt, i);
        const auto sparse_label = static_cast<int64_t>(v);
        if (sparse_label < 0 || sparse_label >= d || static_cast<float>(sparse_label) != v) {
          set_error(error, i, __float_as_int(v));
          if (out) out[i] = nanf("");
          if (gr) {
            for (int64_t j = 0; j < d; ++j) gr[j] = 0.f;
          }
          continue;
        }
        value = loss_rows::categorical_crossentropy(pr, d, label, sparse_label, ls, out != nullptr, up, gr);
        break;
      }
      case LossOp::mse: value = loss_rows::mean_squared_error(pr, d, label, up, gr); break;
      case LossOp::mae: value = loss_rows::mean_absolute_error(pr, d, label, up, gr); break;
    }
    if (out) out[i] = value;
  }
}

// Rows at least this long get a block each (loss_block_k): one thread looping over a Transformer's 128 × 256
// values per sample (mse) took 5.6 ms of an 11.4 ms step on an H200.
constexpr int64_t kLossBlockRow = 256;

// The loss of long rows: a block per row, its threads striding over the row, the row's sums added in a fixed order
// (block_sum: deterministic). The formulas of loss_rows.h, element by element; categorical crossentropy's
// normalisation sums (Σ p and Σ dL/dq·q) are block sums too.
__global__ void loss_block_k(LossOp op, Dt ldt, const void* yt, const float* yp, int64_t n, int64_t d, float ls,
                             float* out, const float* upstream, float* dp, long long* error) {
  const float fd = static_cast<float>(d);
  for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {
    const float* pr = yp + i * d;
    float* gr = dp ? dp + i * d : nullptr;
    const float up = upstream ? upstream[i] : 0.f;
    double acc = 0.0;
    double divisor = static_cast<double>(d);
    switch (op) {
      case LossOp::mse:
      case LossOp::mae:
        for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
          const float e = pr[j] - label_at(ldt, yt, i * d + j);
          if (op == LossOp::mse) {
            acc += static_cast<double>(e) * e;
            if (gr) gr[j] = up * 2.f * e / fd;
          } else {
            acc += fabsf(e);
            if (gr) gr[j] = up * static_cast<float>((e > 0.f) - (e < 0.f)) / fd;
          }
        }
        break;
      case LossOp::bce:
        for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
          const float y = loss_rows::bce_label(label_at(ldt, yt, i * d + j), ls);
          const float c = loss_rows::clip(pr[j]);
          if (out) acc += loss_rows::bce_value(y, logf(c), logf(1.f - c));
          if (gr) gr[j] = loss_rows::bce_grad(y, pr[j], up, d);
        }
        break;
      case LossOp::cce:
      case LossOp::scce: {
        divisor = 1.0;  // the sum over the row, not its mean
        int64_t sparse_label = -1;
        if (op == LossOp::scce) {
          const float v = label_at(ldt, yt, i);
          sparse_label = static_cast<int64_t>(v);
          if (sparse_label < 0 || sparse_label >= d || static_cast<float>(sparse_label) != v) {  // the whole block
            if (threadIdx.x == 0) {
              set_error(error, i, __float_as_int(v));
              if (out) out[i] = nanf("");
            }
            if (gr) {
              for (int64_t j = threadIdx.x; j < d; j += blockDim.x) gr[j] = 0.f;
            }
            continue;
          }
        }
        double part = 0.0;
        for (int64_t j = threadIdx.x; j < d; j += blockDim.x) part += pr[j];
        const float sum = static_cast<float>(block_sum(part));
        __syncthreads();  // block_sum's buffer is used again below
        part = 0.0;
        for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
          const float y = sparse_label >= 0 ? (j == sparse_label ? 1.f : 0.f)
                                            : label_at(ldt, yt, i * d + j) * (1.f - ls) + ls / fd;
          const float q = pr[j] / sum;
          if (y != 0.f && out) acc += -y * logf(loss_rows::clip(q));
          const float dq = (y != 0.f && loss_rows::in_clip(q)) ? -y / q : 0.f;
          if (gr) gr[j] = dq;
          part += static_cast<double>(dq) * q;
        }
        const float weighted = static_cast<float>(block_sum(part));
        __syncthreads();
        if (gr) {
          for (int64_t j = threadIdx.x; j < d; j += blockDim.x) gr[j] = up * (gr[j] - weighted) / sum;
        }
        break;
      }
    }
    const double total = block_sum(acc);
    if (threadIdx.x == 0 && out) out[i] = static_cast<float>(total / divisor);
    __syncthreads();
  }
}

__device__ int64_t argmax_row(const float* p, int64_t d) {
  int64_t best = 0;
  for (int64_t j = 1; j < d; ++j) {
    if (p[j] > p[best]) best = j;
  }
  return best;
}

__global__ void accuracy_partials_k(AccOp op, Dt ldt, const void* yt, const float* yp, int64_t n, int64_t d,
                                    int64_t td, float threshold, double* partials) {
  double correct = 0.0;
  GRID_STRIDE(i, n) {
    switch (op) {
      case AccOp::binary: {
        double row = 0.0;
        for (int64_t j = 0; j < d; ++j) {
          const float pred = yp[i * d + j] > threshold ? 1.f : 0.f;
          row += label_at(ldt, yt, i * d + j) == pred ? 1.0 : 0.0;
        }
        correct += d ? row / static_cast<double>(d) : 0.0;
        break;
      }
      case AccOp::categorical: {
        int64_t best_t = 0;
        for (int64_t j = 1; j < td; ++j) {
          if (label_at(ldt, yt, i * td + j) > label_at(ldt, yt, i * td + best_t)) best_t = j;
        }
        correct += best_t == argmax_row(yp + i * d, d) ? 1.0 : 0.0;
        break;
      }
      case AccOp::sparse_categorical:
        correct += label_at(ldt, yt, i) == static_cast<float>(argmax_row(yp + i * d, d)) ? 1.0 : 0.0;
        break;
    }
  }
  const double total = block_sum(correct);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

}  // namespace

void launch_loss(LossOp op, Dt label_dt, const void* y_true, const float* y_pred, int64_t n, int64_t d,
                 float label_smoothing, float* out, const float* upstream, float* dp, Scratch scratch,
                 cudaStream_t s) {
  if (n == 0) return;
  if (d >= kLossBlockRow) {
    const auto blocks = static_cast<int>(n < 4096 ? n : 4096);
    loss_block_k<<<blocks, kThreads, 0, s>>>(op, label_dt, y_true, y_pred, n, d, label_smoothing, out, upstream, dp,
                                             scratch.error);
    return;
  }
  loss_k<<<blocks_for(n), kThreads, 0, s>>>(op, label_dt, y_true, y_pred, n, d, label_smoothing, out, upstream, dp,
                                            scratch.error);
}

void launch_accuracy(AccOp op, Dt label_dt, const void* y_true, const float* y_pred, int64_t n, int64_t d,
                     int64_t true_d, float threshold, float* out, Scratch scratch, cudaStream_t s) {
  const int blocks = partial_blocks(n);
  accuracy_partials_k<<<blocks, kThreads, 0, s>>>(op, label_dt, y_true, y_pred, n, d, true_d, threshold,
                                                  scratch.partials);
  launch_finish_sum(scratch.partials, blocks, out, 1.0, s);
}

}  // namespace osprey::cuda
