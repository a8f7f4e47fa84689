// The floor of bench/cnn_step's training step: its four convolutions alone through oneDNN, each in the memory
// layouts oneDNN prefers (format "any" everywhere: blocked activations and weights, no reorders timed), forward,
// backward-data (not for the first layer, as a training step skips it) and backward-weights with the bias.
// "bf16": bfloat16 activations, weights and gradients of activations, float32 bias and weight gradients (what
// Osprey's mixed_bfloat16 convolutions run).
// "nhwc": the activations channels-last (what Osprey's kernels take), the weights still in oneDNN's layout: the
// floor of a step that keeps its tensors plain between layers.
//   conv_floor [batch=128] [reps=5] [f32|bf16] [any|nhwc]   -> one JSON line
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <dnnl.hpp>

int main(int argc, char** argv) {
  const int batch = argc > 1 ? std::atoi(argv[1]) : 128;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  const bool bf16 = argc > 3 && std::string(argv[3]) == "bf16";
  using dt = dnnl::memory::data_type;
  const dt act = bf16 ? dt::bf16 : dt::f32;
  using tag = dnnl::memory::format_tag;
  const bool nhwc = argc > 4 && std::string(argv[4]) == "nhwc";
  const tag act_tag = nhwc ? tag::nhwc : tag::any;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  struct Layer {
    int hw, cin, cout;
    bool first;
  };
  const Layer net[] = {{32, 3, 32, true}, {32, 32, 32, false}, {16, 32, 64, false}, {16, 64, 64, false}};
  struct Prims {
    dnnl::convolution_forward fwd;
    dnnl::convolution_backward_data bwd_data;
    dnnl::convolution_backward_weights bwd_weights;
    dnnl::memory src, wei, bias, dst, diff_dst, diff_src, diff_wei, diff_bias;
    bool first;
  };
  std::vector<Prims> prims;
  for (const Layer& l : net) {
    const dnnl::memory::dims src{batch, l.cin, l.hw, l.hw}, wei{l.cout, l.cin, 3, 3}, bias{l.cout},
        dst{batch, l.cout, l.hw, l.hw}, strides{1, 1}, pad{1, 1};
    const dnnl::memory::desc src_any(src, act, act_tag), wei_any(wei, act, tag::any),
        diff_wei_any(wei, dt::f32, tag::any), bias_md(bias, dt::f32, tag::a), dst_any(dst, act, act_tag);
    const dnnl::convolution_forward::primitive_desc fpd(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, src_any,
                                        wei_any, bias_md, dst_any, strides, pad, pad),
        eng);
    const dnnl::convolution_backward_data::primitive_desc dpd(
        dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, src_any, wei_any, dst_any, strides,
                                              pad, pad),
        eng, fpd);
    const dnnl::convolution_backward_weights::primitive_desc wpd(
        dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, src_any, diff_wei_any, bias_md,
                                                 dst_any, strides, pad, pad),
        eng, fpd);
    Prims p{dnnl::convolution_forward(fpd), dnnl::convolution_backward_data(dpd),
            dnnl::convolution_backward_weights(wpd), dnnl::memory(fpd.src_desc(), eng),
            dnnl::memory(fpd.weights_desc(), eng), dnnl::memory(bias_md, eng), dnnl::memory(fpd.dst_desc(), eng),
            dnnl::memory(wpd.diff_dst_desc(), eng), dnnl::memory(dpd.diff_src_desc(), eng),
            dnnl::memory(wpd.diff_weights_desc(), eng), dnnl::memory(bias_md, eng), l.first};
    for (dnnl::memory* m : {&p.src, &p.wei, &p.bias, &p.dst, &p.diff_dst}) {
      const bool half = m->get_desc().data_type() == dt::bf16;
      auto* bytes = static_cast<char*>(m->get_data_handle());
      const std::size_t n = m->get_desc().get_size() / (half ? 2 : 4);
      for (std::size_t i = 0; i < n; ++i) {
        const float v = 0.001f * static_cast<float>(i % 97);
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        if (half) {
          const uint16_t top = static_cast<uint16_t>(bits >> 16);
          std::memcpy(bytes + 2 * i, &top, 2);
        } else {
          std::memcpy(bytes + 4 * i, &bits, 4);
        }
      }
    }
    prims.push_back(std::move(p));
  }
  auto step = [&] {
    for (auto& p : prims) {
      p.fwd.execute(s, {{DNNL_ARG_SRC, p.src}, {DNNL_ARG_WEIGHTS, p.wei}, {DNNL_ARG_BIAS, p.bias}, {DNNL_ARG_DST, p.dst}});
    }
    for (auto& p : prims) {
      if (!p.first) {
        p.bwd_data.execute(s, {{DNNL_ARG_DIFF_DST, p.diff_dst}, {DNNL_ARG_WEIGHTS, p.wei}, {DNNL_ARG_DIFF_SRC, p.diff_src}});
      }
      p.bwd_weights.execute(s, {{DNNL_ARG_SRC, p.src}, {DNNL_ARG_DIFF_DST, p.diff_dst},
                                {DNNL_ARG_DIFF_WEIGHTS, p.diff_wei}, {DNNL_ARG_DIFF_BIAS, p.diff_bias}});
    }
    s.wait();
  };
  step();
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("{\"framework\": \"onednn-conv-floor\", \"case\": \"the VGG-style CNN's 4 convolutions alone, batch %d, "
              "forward + backward (%s), %s\", \"us_per_step\": %.1f}\n",
              batch, nhwc ? "channels-last activations" : "oneDNN's preferred layouts", bf16 ? "bfloat16" : "float32",
              best);
  return 0;
}
