// The wide MLP's eight GEMMs (3 forward, 3 weight gradients, 2 input gradients) at batch B on GPU 0 through cuBLAS
// SGEMM, timed with CUDA events over `steps` repetitions: the floor that bench/device_step's GPU step of the same
// model is compared with (the performance issue asks for ≥ 60 % of this throughput at batch 8192). TF32 tensor
// cores as Osprey's default (TensorFlow's enable_tensor_float_32_execution), or plain FP32 with "fp32".
//   gpu_gemm_floor <batch> [steps] [tf32|fp32]
// Prints one JSON line; without a usable GPU, the reason.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace {

struct Gemm {
  int64_t m, n, k;
  bool ta, tb;
  float *a, *b, *c;
};

// Row-major C[m,n] = op(A)·op(B) as cuBLAS's column-major Cᵀ = op(B)ᵀ·op(A)ᵀ.
cublasStatus_t run(cublasHandle_t h, const Gemm& g) {
  const float one = 1.f, zero = 0.f;
  return cublasSgemm(h, g.tb ? CUBLAS_OP_T : CUBLAS_OP_N, g.ta ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(g.n),
                     static_cast<int>(g.m), static_cast<int>(g.k), &one, g.b, static_cast<int>(g.tb ? g.k : g.n), g.a,
                     static_cast<int>(g.ta ? g.m : g.k), &zero, g.c, static_cast<int>(g.n));
}

int fail(const char* what, const std::string& why) {
  std::printf("{\"case\": \"cuBLAS GEMM floor\", \"skipped\": \"%s: %s\"}\n", what, why.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t batch = argc > 1 ? std::atoll(argv[1]) : 8192;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 20;
  const bool tf32 = !(argc > 3 && std::string(argv[3]) == "fp32");
  int devices = 0;
  if (cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess || devices == 0) {
    return fail("no GPU", e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device");
  }
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return fail("cuBLAS", "cublasCreate failed");
  cublasSetMathMode(h, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
  // Buffers of the step, filled with random values (a GEMM's speed can depend on its data).
  std::vector<float*> buffers;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-0.5f, 0.5f);
  auto buf = [&](int64_t n) -> float* {
    float* p = nullptr;
    if (cudaMalloc(&p, static_cast<std::size_t>(n) * sizeof(float)) != cudaSuccess) return nullptr;
    std::vector<float> host(static_cast<std::size_t>(n));
    for (float& v : host) v = uniform(rng);
    cudaMemcpy(p, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
    buffers.push_back(p);
    return p;
  };
  float *x = buf(batch * 784), *w1 = buf(784 * 512), *w2 = buf(512 * 512), *w3 = buf(512 * 10);
  float *h1 = buf(batch * 512), *h2 = buf(batch * 512), *out = buf(batch * 10);
  float *g1 = buf(784 * 512), *g2 = buf(512 * 512), *g3 = buf(512 * 10), *d2 = buf(batch * 512), *d1 = buf(batch * 512);
  for (float* p : {x, w1, w2, w3, h1, h2, out, g1, g2, g3, d2, d1}) {
    if (!p) return fail("cudaMalloc", "out of device memory");
  }
  const std::vector<Gemm> gemms = {
      {batch, 512, 784, false, false, x, w1, h1},  {batch, 512, 512, false, false, h1, w2, h2},
      {batch, 10, 512, false, false, h2, w3, out}, {512, 10, batch, true, false, h2, out, g3},
      {batch, 512, 10, false, true, out, w3, d2},  {512, 512, batch, true, false, h1, d2, g2},
      {batch, 512, 512, false, true, d2, w2, d1},  {784, 512, batch, true, false, x, d1, g1}};
  double flops = 0;
  for (const auto& g : gemms) flops += 2.0 * static_cast<double>(g.m * g.n * g.k);
  for (int i = 0; i < 3; ++i) {
    for (const auto& g : gemms) {
      if (run(h, g) != CUBLAS_STATUS_SUCCESS) return fail("cuBLAS", "cublasSgemm failed");
    }
  }
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start);
  for (int i = 0; i < steps; ++i) {
    for (const auto& g : gemms) run(h, g);
  }
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  float ms = 0.f;
  cudaEventElapsedTime(&ms, start, stop);
  const double us = 1000.0 * ms / steps;
  std::printf("{\"case\": \"cuBLAS GEMM floor, wide MLP batch %lld\", \"math\": \"%s\", \"gemm_floor_us\": %.1f, "
              "\"tflops\": %.1f}\n",
              static_cast<long long>(batch), tf32 ? "tf32" : "fp32", us, flops / us / 1e6);
  for (float* p : buffers) cudaFree(p);
  cublasDestroy(h);
  return 0;
}
