// The device kernels of the CTC ops (ops/ctc_core.h, the CPU kernels' arithmetic): the loss and its gradient with a
// block per sequence (grid-stride over sequences), its threads over the frames' normalisers and observations, over
// the alignment states of each step of the β and α recursions, and over the classes of each frame's gradient; the
// greedy decoder with a thread per sequence. A sequence whose lengths or labels are out of range is left out and
// reported in the error slots ([1] = problem + 8·sample, [2] = (position + 1)·2^32 + the value's 32 bits).
#include <cstdint>

#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernel_grid.cuh"
#include "ops/ctc_core.h"

namespace osprey::cuda {

namespace {

namespace core = osprey::ctc_core;

__device__ void report(long long* error, int problem, int64_t sample, int64_t where, int64_t value) {
  set_error(error, problem + 8 * sample,
            static_cast<long long>((static_cast<uint64_t>(where + 1) << 32) |
                                   static_cast<uint32_t>(static_cast<int32_t>(value))));
}

__host__ __device__ int64_t loss_scratch_per_block(int64_t frames, int64_t states) {
  return frames + frames * states + (frames + 1) * states + 3 * states;
}

int64_t loss_blocks(int64_t batch, int64_t per_block) {
  int64_t b = batch < 1024 ? batch : 1024;
  const int64_t fit = (int64_t{1} << 26) / (per_block > 0 ? per_block : 1);
  if (b > fit) b = fit;
  return b < 1 ? 1 : b;
}

__global__ void ctc_loss_k(const int32_t* labels, const float* logits, const int32_t* label_length,
                           const int32_t* logit_length, float* loss, float* grad, double* scratch, int64_t batch,
                           core::Sizes sz, long long* error) {
  const int64_t T = sz.frames, C = sz.classes, S = 2 * sz.max_label + 2;
  double* lse = scratch + blockIdx.x * loss_scratch_per_block(T, S);
  double* obs = lse + T;
  double* beta = obs + T * S;
  double* alpha = beta + (T + 1) * S;
  double* next = alpha + S;
  double* ab = next + S;
  __shared__ int bad;
  __shared__ double norm;
  for (int64_t b = blockIdx.x; b < batch; b += gridDim.x) {
    const int32_t* lab = labels + b * sz.max_label;
    const float* x = logits + b * T * C;
    if (threadIdx.x == 0) {
      int64_t where = -1, value = 0;
      bad = core::check_sequence(lab, label_length[b], logit_length[b], sz, &where, &value);
      if (bad) report(error, bad, b, where, value);
    }
    __syncthreads();
    const int problem = bad;
    __syncthreads();
    if (problem) continue;
    const int64_t len = logit_length[b], ll = label_length[b];
    for (int64_t t = threadIdx.x; t < len; t += blockDim.x) lse[t] = core::frame_normaliser(x + t * C, C);
    __syncthreads();
    for (int64_t i = threadIdx.x; i < len * S; i += blockDim.x) {
      obs[i] = core::observed(i % S, lab, x + (i / S) * C, lse[i / S], sz);
    }
    for (int64_t p = threadIdx.x; p < S; p += blockDim.x) beta[len * S + p] = core::final_weight(p, ll);
    __syncthreads();
    for (int64_t t = len - 1; t >= 0; --t) {
      for (int64_t p = threadIdx.x; p < S; p += blockDim.x) {
        beta[t * S + p] = core::beta_step(p, S, beta + (t + 1) * S, obs + t * S, lab);
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) loss[b] = static_cast<float>(-beta[0]);
    if (grad) {
      float* g = grad + b * T * C;
      for (int64_t i = len * C + threadIdx.x; i < T * C; i += blockDim.x) g[i] = 0.f;
      for (int64_t p = threadIdx.x; p < S; p += blockDim.x) alpha[p] = core::initial_weight(p);
      __syncthreads();
      for (int64_t t = 0; t < len; ++t) {
        for (int64_t p = threadIdx.x; p < S; p += blockDim.x) {
          next[p] = core::alpha_step(p, alpha, obs + t * S, lab);
          ab[p] = next[p] + beta[(t + 1) * S + p];
        }
        __syncthreads();
        if (threadIdx.x == 0) {
          double m = -HUGE_VAL;
          for (int64_t p = 0; p < S; ++p) m = ab[p] > m ? ab[p] : m;
          double sum = 0;
          for (int64_t p = 0; p < S; ++p) sum += ::exp(ab[p] - m);
          norm = m + ::log(sum);
        }
        __syncthreads();
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
          g[t * C + c] = static_cast<float>(core::gradient(c, x + t * C, lse[t], ab, norm, S, lab, sz));
        }
        double* swap = alpha;
        alpha = next;
        next = swap;
        __syncthreads();
      }
    }
    __syncthreads();
  }
}

__global__ void ctc_greedy_k(const float* logits, const int32_t* lengths, int32_t* decoded, float* scores,
                             int64_t batch, int64_t frames, int64_t classes, int64_t blank, bool merge_repeated,
                             long long* error) {
  GRID_STRIDE(b, batch) {
    int32_t* out = decoded + b * frames;
    const int64_t len = lengths[b];
    int64_t n = 0;
    if (!core::length_fits(len, frames)) {
      report(error, core::kLogitLength, b, -1, len);
      scores[b] = 0.f;
    } else {
      n = core::greedy_decode(logits + b * frames * classes, len, classes, blank, merge_repeated, out, scores + b);
    }
    for (int64_t i = n; i < frames; ++i) out[i] = -1;
  }
}

}  // namespace

int64_t ctc_loss_scratch_doubles(int64_t batch, int64_t frames, int64_t max_label) {
  const int64_t per_block = loss_scratch_per_block(frames, 2 * max_label + 2);
  return loss_blocks(batch, per_block) * per_block;
}

void launch_ctc_loss(const int32_t* labels, const float* logits, const int32_t* label_length,
                     const int32_t* logit_length, float* loss, float* grad, double* scratch, int64_t batch,
                     int64_t frames, int64_t classes, int64_t max_label, int64_t blank, long long* error,
                     cudaStream_t s) {
  if (batch == 0) return;
  const int64_t blocks = loss_blocks(batch, loss_scratch_per_block(frames, 2 * max_label + 2));
  ctc_loss_k<<<static_cast<int>(blocks), 128, 0, s>>>(labels, logits, label_length, logit_length, loss, grad, scratch,
                                                      batch, core::Sizes{frames, classes, max_label, blank}, error);
}

void launch_ctc_greedy(const float* logits, const int32_t* lengths, int32_t* decoded, float* scores, int64_t batch,
                       int64_t frames, int64_t classes, int64_t blank, bool merge_repeated, long long* error,
                       cudaStream_t s) {
  if (batch == 0) return;
  ctc_greedy_k<<<blocks_for(batch), kThreads, 0, s>>>(logits, lengths, decoded, scores, batch, frames, classes, blank,
                                                      merge_repeated, error);
}

}  // namespace osprey::cuda
