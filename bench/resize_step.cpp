// tf.image.resize's methods (ops::resize; issue 17's Resizing/UpSampling2D and keras.ops.image.resize): a batch of
// 128x128x3 images resized per method, the result read back to the host as a user's tensor would be; best of N.
// bench/keras_bench.py's "resize" case runs the same cases through keras.ops.image.resize (TensorFlow,
// tf.function). One JSON line per case.
//   resize_step [batch] [repeats]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <osprey/osprey.h>

namespace ops = osprey::ops;

int main(int argc, char** argv) {
  const int64_t batch = argc > 1 ? std::atoll(argv[1]) : 32;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 20;
  osprey::random::set_seed(0);
  const auto x = osprey::random::uniform({batch, 128, 128, 3});
  struct Case {
    const char* name;
    ops::ResizeMethod method;
    bool antialias;
    int64_t side;
  };
  const Case cases[] = {{"bilinear", ops::ResizeMethod::bilinear, false, 64},
                        {"bicubic", ops::ResizeMethod::bicubic, false, 64},
                        {"bicubic", ops::ResizeMethod::bicubic, false, 256},
                        {"area", ops::ResizeMethod::area, false, 64},
                        {"lanczos3", ops::ResizeMethod::lanczos3, true, 64},
                        {"bilinear", ops::ResizeMethod::bilinear, true, 32}};
  double sink = 0.0;
  for (const Case& c : cases) {
    auto once = [&] { sink += ops::resize(x, c.side, c.side, c.method, c.antialias).to_vector<float>()[0]; };
    once();
    double best = 1e30;
    for (int i = 0; i < repeats; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      once();
      best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf("{\"framework\": \"osprey\", \"case\": \"resize (%lld, 128, 128, 3) to %lldx%lld %s%s\", "
                "\"ms\": %.3f}\n",
                static_cast<long long>(batch), static_cast<long long>(c.side), static_cast<long long>(c.side), c.name,
                c.antialias ? " antialias" : "", best);
  }
  return sink == 12345.678 ? 1 : 0;
}
