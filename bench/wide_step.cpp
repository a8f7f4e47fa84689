// The wide MLP (784 -> 512 -> 512 -> 10, relu, relu, softmax; Adam; sparse categorical crossentropy) at a given
// batch: Osprey's training step (fit's recorded plan, via train_on_batch) next to the floor, the same step's eight
// GEMMs alone through oneDNN matmul primitives (3 forward, 3 weight gradients, 2 input gradients; bias and ReLU
// post-ops measured to cost nothing extra) in this process. Prints one JSON line.
// The floor's operands hold random values like a real step's: on this project's machines oneDNN's GEMMs run up to
// ~45 % faster on constant-filled buffers (128x512x512: 395 vs 570 us), so a floor on constants is not reachable
// by any training step. That figure is printed too (gemm_floor_constant_data_us).
// With a dtype policy ("mixed_bfloat16"), the model trains under it and the floor's GEMMs take bfloat16 operands
// and results (oneDNN's AVX-512 BF16 kernels where the CPU has them).
// Usage: wide_step <batch> [steps] [intra_op_threads] [policy]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <random>
#include <vector>

#include <dnnl.hpp>

#include <osprey/osprey.h>

namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;
using clk = std::chrono::steady_clock;

namespace {
// C[m,n] = op(A)·op(B) through a oneDNN matmul primitive created once (what a framework at the floor would do).
using dt = dnnl::memory::data_type;
struct Gemm {
  dnnl::matmul prim;
  dnnl::memory a, b, c;
  // Buffers of float32 values, or of bfloat16 ones (two per float, the first half of the vector used) with bf16.
  Gemm(dnnl::engine& eng, int64_t m, int64_t n, int64_t k, bool ta, bool tb, std::vector<float>& A, std::vector<float>& B,
       std::vector<float>& C, dt type = dt::f32) {
    dnnl::memory::desc ad({m, k}, type, ta ? dnnl::memory::dims{1, m} : dnnl::memory::dims{k, 1});
    dnnl::memory::desc bd({k, n}, type, tb ? dnnl::memory::dims{1, k} : dnnl::memory::dims{n, 1});
    dnnl::memory::desc cd({m, n}, type, dnnl::memory::dims{n, 1});
    prim = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad, bd, cd), eng));
    a = dnnl::memory(ad, eng, A.data());
    b = dnnl::memory(bd, eng, B.data());
    c = dnnl::memory(cd, eng, C.data());
  }
  void run(dnnl::stream& s) { prim.execute(s, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}}); }
};

double gemm_floor_us(int64_t batch, int steps, bool random_data, dt type = dt::f32) {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-0.5f, 0.5f);
  auto buf = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n), 0.01f);
    if (random_data) {
      for (float& f : v) f = uniform(rng);
    }
    if (type == dt::bf16) {  // the same values rounded to bfloat16, packed at the front
      auto* h = reinterpret_cast<uint16_t*>(v.data());
      for (size_t i = 0; i < v.size(); ++i) {
        uint32_t u;
        std::memcpy(&u, &v[i], 4);
        h[i] = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
      }
    }
    return v;
  };
  auto x = buf(batch * 784), w1 = buf(784 * 512), w2 = buf(512 * 512), w3 = buf(512 * 10);
  auto h1 = buf(batch * 512), h2 = buf(batch * 512), out = buf(batch * 10);
  auto g1 = buf(784 * 512), g2 = buf(512 * 512), g3 = buf(512 * 10), d2 = buf(batch * 512), d1 = buf(batch * 512);
  std::vector<Gemm> gemms;
  gemms.emplace_back(eng, batch, 512, 784, false, false, x, w1, h1, type);   // forward
  gemms.emplace_back(eng, batch, 512, 512, false, false, h1, w2, h2, type);
  gemms.emplace_back(eng, batch, 10, 512, false, false, h2, w3, out, type);
  gemms.emplace_back(eng, 512, 10, batch, true, false, h2, out, g3, type);   // dW3 = h2^T dZ3
  gemms.emplace_back(eng, batch, 512, 10, false, true, out, w3, d2, type);   // dX3 = dZ3 W3^T
  gemms.emplace_back(eng, 512, 512, batch, true, false, h1, d2, g2, type);   // dW2
  gemms.emplace_back(eng, batch, 512, 512, false, true, d2, w2, d1, type);   // dX2
  gemms.emplace_back(eng, 784, 512, batch, true, false, x, d1, g1, type);    // dW1
  for (int i = 0; i < 3; ++i) {
    for (auto& g : gemms) g.run(s);
  }
  s.wait();
  const auto t0 = clk::now();
  for (int i = 0; i < steps; ++i) {
    for (auto& g : gemms) g.run(s);
  }
  s.wait();
  return std::chrono::duration<double, std::micro>(clk::now() - t0).count() / steps;
}
}  // namespace

int main(int argc, char** argv) {
  const int64_t batch = argc > 1 ? std::atoll(argv[1]) : 128;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 30;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 0;
  const std::string policy = argc > 4 ? argv[4] : "float32";
  osprey::config::set_intra_op_parallelism_threads(threads);
  keras::mixed_precision::set_global_policy(policy);
  const dt floor_type = policy == "mixed_bfloat16" ? dt::bf16 : dt::f32;
  osprey::random::set_seed(0);
  auto x = osprey::random::uniform({batch, 784});
  auto y = osprey::random::randint(0, 10, {batch}).cast(osprey::float32);
  keras::Sequential model({layers::Input({784}), layers::Dense(512, "relu"), layers::Dense(512, "relu"),
                           layers::Dense(10, "softmax")});
  model.compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy"});
  for (int i = 0; i < 3; ++i) model.train_on_batch(x, y);
  // Interleave the two measurements so that both see the same machine state.
  double best_step = 1e30, best_floor = 1e30, best_constant_floor = 1e30;
  for (int round = 0; round < 3; ++round) {
    const auto t0 = clk::now();
    for (int i = 0; i < steps; ++i) model.train_on_batch(x, y);
    best_step = std::min(best_step, std::chrono::duration<double, std::micro>(clk::now() - t0).count() / steps);
    best_floor = std::min(best_floor, gemm_floor_us(batch, steps, true, floor_type));
    best_constant_floor = std::min(best_constant_floor, gemm_floor_us(batch, steps, false, floor_type));
  }
  std::printf("{\"framework\": \"osprey\", \"case\": \"wide MLP batch %lld, intra_op_threads=%d, %s\", \"us_per_step\": %.1f, "
              "\"gemm_floor_us\": %.1f, \"fraction_of_floor\": %.3f, \"gemm_floor_constant_data_us\": %.1f}\n",
              static_cast<long long>(batch), threads, policy.c_str(), best_step, best_floor, best_floor / best_step,
              best_constant_floor);
  return 0;
}
