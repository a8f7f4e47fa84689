// Issue 18's "oneDNN's LSTM primitive alone" row: the LSTM benchmark's layer (batch 64, 100 steps of 128 inputs,
// 256 units) as one oneDNN lstm_forward (training) and one lstm_backward, weights reordered into the layouts the
// primitives ask for (as a layer would each step), diff weights zeroed (oneDNN accumulates them). Checks the first
// steps' h against a float64 loop with Keras's gate order (i, f, c, o: oneDNN's too), then prints one JSON line:
// ms per forward + backward, best of `reps`, and the implementation oneDNN chose. "bf16" as the 4th argument: the
// bfloat16 LSTM a layer under mixed_bfloat16 runs (x, h, y and the weights in bfloat16, the carry, the bias and every
// gradient float32; the float32 weights reordered into bfloat16 ones).
//   lstm_floor [reps] [batch] [time_steps] [f32|bf16]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <dnnl.hpp>

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  const int N = argc > 2 ? std::atoi(argv[2]) : 64, T = argc > 3 ? std::atoi(argv[3]) : 100, C = 128, U = 256;
  const bool bf16 = argc > 4 && std::string(argv[4]) == "bf16";
  const dt data = bf16 ? dt::bf16 : dt::f32;
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  auto md = [](memory::dims d, tag t, dt type = dt::f32) { return memory::desc(d, type, t); };
  // f32 plain memories (the values the check reads), and the primitives' data in `data`.
  const auto src = md({T, N, C}, tag::tnc), dst = md({T, N, U}, tag::tnc), it = md({1, 1, N, U}, tag::ldnc);
  const auto src_d = md({T, N, C}, tag::tnc, data), dst_d = md({T, N, U}, tag::tnc, data);
  const auto it_d = md({1, 1, N, U}, tag::ldnc, data);
  const auto wl = md({1, 1, C, 4, U}, tag::ldigo), wi = md({1, 1, U, 4, U}, tag::ldigo), b = md({1, 1, 4, U}, tag::ldgo);
  const auto wla = md({1, 1, C, 4, U}, tag::any, data), wia = md({1, 1, U, 4, U}, tag::any, data);
  const auto dwla = md({1, 1, C, 4, U}, tag::any), dwia = md({1, 1, U, 4, U}, tag::any);
  const auto dir = rnn_direction::unidirectional_left2right;
  lstm_forward::primitive_desc fpd(
      lstm_forward::desc(prop_kind::forward_training, dir, src_d, it_d, it, wla, wia, b, dst_d, it_d, it), eng);
  lstm_backward::primitive_desc bpd(lstm_backward::desc(prop_kind::backward, dir, src_d, it_d, it, wla, wia, b, dst_d,
                                                        it_d, it, src, it, it, dwla, dwia, b, dst, it, it),
                                    eng, fpd);
  std::mt19937 g(0);
  std::uniform_real_distribution<float> u(-0.1f, 0.1f);
  auto fill = [&](memory& m) {
    auto* p = static_cast<float*>(m.get_data_handle());
    for (std::size_t i = 0; i < m.get_desc().get_size() / 4; ++i) p[i] = u(g);
  };
  memory x(src, eng), y(dst, eng), W(wl, eng), R(wi, eng), B(b, eng), h0(it, eng), c0(it, eng), hT(it, eng),
      cT(it, eng), ws(fpd.workspace_desc(), eng);
  // The primitives' x, h0, y and hT (the f32 ones themselves in float32, bfloat16 copies otherwise).
  memory xd = bf16 ? memory(src_d, eng) : x, h0d = bf16 ? memory(it_d, eng) : h0, yd = bf16 ? memory(dst_d, eng) : y,
         hTd = bf16 ? memory(it_d, eng) : hT;
  memory Wf(fpd.weights_layer_desc(), eng), Rf(fpd.weights_iter_desc(), eng), Wb(bpd.weights_layer_desc(), eng),
      Rb(bpd.weights_iter_desc(), eng), dWb(bpd.diff_weights_layer_desc(), eng), dRb(bpd.diff_weights_iter_desc(), eng);
  memory dW(wl, eng), dR(wi, eng), dB(b, eng), dx(src, eng), dy(dst, eng), dh0(it, eng), dc0(it, eng), dhT(it, eng),
      dcT(it, eng);
  for (memory* m : {&x, &W, &R, &B, &h0, &c0, &dy, &dhT, &dcT}) fill(*m);
  if (bf16) {
    reorder(x, xd).execute(s, x, xd);
    reorder(h0, h0d).execute(s, h0, h0d);
    s.wait();
  }
  lstm_forward fwd(fpd);
  lstm_backward bwd(bpd);
  auto step = [&] {
    reorder(W, Wf).execute(s, W, Wf);
    reorder(R, Rf).execute(s, R, Rf);
    fwd.execute(s, {{DNNL_ARG_SRC_LAYER, xd}, {DNNL_ARG_SRC_ITER, h0d}, {DNNL_ARG_SRC_ITER_C, c0},
                    {DNNL_ARG_WEIGHTS_LAYER, Wf}, {DNNL_ARG_WEIGHTS_ITER, Rf}, {DNNL_ARG_BIAS, B},
                    {DNNL_ARG_DST_LAYER, yd}, {DNNL_ARG_DST_ITER, hTd}, {DNNL_ARG_DST_ITER_C, cT},
                    {DNNL_ARG_WORKSPACE, ws}});
    reorder(W, Wb).execute(s, W, Wb);
    reorder(R, Rb).execute(s, R, Rb);
    for (memory* m : {&dWb, &dRb, &dB}) std::memset(m->get_data_handle(), 0, m->get_desc().get_size());
    bwd.execute(s, {{DNNL_ARG_SRC_LAYER, xd}, {DNNL_ARG_SRC_ITER, h0d}, {DNNL_ARG_SRC_ITER_C, c0},
                    {DNNL_ARG_WEIGHTS_LAYER, Wb}, {DNNL_ARG_WEIGHTS_ITER, Rb}, {DNNL_ARG_BIAS, B},
                    {DNNL_ARG_DST_LAYER, yd}, {DNNL_ARG_DST_ITER, hTd}, {DNNL_ARG_DST_ITER_C, cT},
                    {DNNL_ARG_WORKSPACE, ws}, {DNNL_ARG_DIFF_SRC_LAYER, dx}, {DNNL_ARG_DIFF_SRC_ITER, dh0},
                    {DNNL_ARG_DIFF_SRC_ITER_C, dc0}, {DNNL_ARG_DIFF_WEIGHTS_LAYER, dWb},
                    {DNNL_ARG_DIFF_WEIGHTS_ITER, dRb}, {DNNL_ARG_DIFF_BIAS, dB}, {DNNL_ARG_DIFF_DST_LAYER, dy},
                    {DNNL_ARG_DIFF_DST_ITER, dhT}, {DNNL_ARG_DIFF_DST_ITER_C, dcT}});
    reorder(dWb, dW).execute(s, dWb, dW);
    reorder(dRb, dR).execute(s, dRb, dR);
    s.wait();
  };
  step();
  if (bf16) {
    reorder(yd, y).execute(s, yd, y);
    s.wait();
  }
  // The first 5 steps' h in float64 with Keras's gates (i, f, c, o), h0 and c0 as given.
  const auto* px = static_cast<const float*>(x.get_data_handle());
  const auto* pW = static_cast<const float*>(W.get_data_handle());
  const auto* pR = static_cast<const float*>(R.get_data_handle());
  const auto* pB = static_cast<const float*>(B.get_data_handle());
  std::vector<double> h(static_cast<std::size_t>(N) * U), c(h.size());
  for (std::size_t i = 0; i < h.size(); ++i) {
    h[i] = static_cast<const float*>(h0.get_data_handle())[i];
    c[i] = static_cast<const float*>(c0.get_data_handle())[i];
  }
  auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
  const int check = std::min(T, 5);
  for (int t = 0; t < check; ++t) {
    std::vector<double> hn(h.size()), cn(h.size()), z(4 * static_cast<std::size_t>(U));
    for (int n = 0; n < N; ++n) {
      for (int j = 0; j < 4 * U; ++j) {
        double a = pB[j];
        for (int k = 0; k < C; ++k) a += px[(static_cast<std::size_t>(t) * N + n) * C + k] * pW[k * 4 * U + j];
        for (int k = 0; k < U; ++k) a += h[static_cast<std::size_t>(n) * U + k] * pR[k * 4 * U + j];
        z[j] = a;
      }
      for (int k = 0; k < U; ++k) {
        const std::size_t e = static_cast<std::size_t>(n) * U + k;
        cn[e] = sig(z[U + k]) * c[e] + sig(z[k]) * std::tanh(z[2 * U + k]);
        hn[e] = sig(z[3 * U + k]) * std::tanh(cn[e]);
      }
    }
    h = hn;
    c = cn;
  }
  double err = 0;
  const auto* py = static_cast<const float*>(y.get_data_handle());
  for (std::size_t i = 0; i < h.size(); ++i) err = std::max(err, std::fabs(h[i] - py[(check - 1) * h.size() + i]));
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("{\"framework\": \"oneDNN %d.%d lstm_forward + lstm_backward (%s)\", \"case\": \"LSTM(%d) over %d "
              "steps of %d, batch %d, %s\", \"ms_per_step\": %.1f, \"h_max_error_vs_float64\": %.2g}\n",
              dnnl_version()->major, dnnl_version()->minor, fpd.impl_info_str(), U, T, C, N,
              bf16 ? "bfloat16" : "float32", best, err);
  return err < (bf16 ? 2e-2 : 1e-4) ? 0 : 1;
}
