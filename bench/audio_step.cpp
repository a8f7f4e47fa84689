// Fourier transforms' speed (issue 20's keras::ops): MelSpectrogram (Keras's defaults but fft_length and
// sequence_stride) over a batch of one-second 16 kHz signals, its forward pass per batch; and keras::ops::rfft of
// the same batch's frames. bench/keras_bench.py's "mel" case runs the same layer in Keras (TensorFlow, tf.function).
// One JSON line per case.
//   audio_step [batch] [fft_length] [sequence_stride] [repeats]
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <osprey/keras/ops.h>
#include <osprey/osprey.h>

namespace keras = osprey::keras;

template <typename F>
double best_ms(int repeats, F&& f) {
  f();  // warm up: plans, pools
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

int main(int argc, char** argv) {
  const int64_t batch = argc > 1 ? std::atoll(argv[1]) : 32;
  const int64_t fft = argc > 2 ? std::atoll(argv[2]) : 512;
  const int64_t stride = argc > 3 ? std::atoll(argv[3]) : 160;
  const int repeats = argc > 4 ? std::atoi(argv[4]) : 20;
  osprey::random::set_seed(0);
  const auto x = osprey::random::uniform({batch, 16000}, -1.0, 1.0);
  keras::layers::MelSpectrogram mel({.fft_length = fft, .sequence_stride = stride});
  double sink = 0.0;
  const double mel_ms = best_ms(repeats, [&] { sink += mel(x).to_vector<float>()[0]; });
  std::printf("{\"framework\": \"osprey\", \"case\": \"MelSpectrogram batch %lld, fft_length %lld, stride %lld\", "
              "\"ms\": %.3f}\n",
              static_cast<long long>(batch), static_cast<long long>(fft), static_cast<long long>(stride), mel_ms);
  const auto frames = keras::ops::extract_sequences(x, fft, stride);
  const double rfft_ms = best_ms(repeats, [&] { sink += keras::ops::rfft(frames).first.to_vector<float>()[0]; });
  std::printf("{\"framework\": \"osprey\", \"case\": \"rfft of %lld frames of %lld\", \"ms\": %.3f}\n",
              static_cast<long long>(frames.num_elements() / fft), static_cast<long long>(fft), rfft_ms);
  return sink == 12345.0;  // keeps the results alive
}
