// GRU forecasting of a generated signal (issue 18): two sines of periods 40 and 13 steps plus noise (sigma 0.05);
// from each window of 24 values, the next one. GRU(16) + Dense(1), Adam, mse; the last 20 % of the windows are the
// validation set. Exits 1 unless the validation MAE is at most 0.07 (the noise alone gives 0.04; repeating the
// window's last value gives about 0.12).
//   build/release/examples/time_series
#include <cmath>
#include <iostream>
#include <random>

#include "osprey/osprey.h"

using namespace osprey;
using namespace osprey::keras;

int main() {
  constexpr int64_t kWindows = 1500, kWindow = 24;
  std::mt19937 rng(3);
  std::normal_distribution<float> noise(0.f, 0.05f);
  std::vector<float> signal;
  for (int64_t t = 0; t < kWindows + kWindow; ++t) {
    const double s = 0.7 * std::sin(2 * M_PI * static_cast<double>(t) / 40) + 0.3 * std::sin(2 * M_PI * static_cast<double>(t) / 13);
    signal.push_back(static_cast<float>(s) + noise(rng));
  }
  std::vector<float> windows, next;
  double naive = 0;
  for (int64_t i = 0; i < kWindows; ++i) {
    windows.insert(windows.end(), signal.begin() + i, signal.begin() + i + kWindow);
    next.push_back(signal[static_cast<std::size_t>(i + kWindow)]);
    if (i >= kWindows * 4 / 5) naive += std::abs(next.back() - signal[static_cast<std::size_t>(i + kWindow - 1)]);
  }
  naive /= static_cast<double>(kWindows - kWindows * 4 / 5);
  const Tensor x = Tensor::from_vector(windows, {kWindows, kWindow, 1}), y = Tensor::from_vector(next, {kWindows, 1});

  utils::set_random_seed(7);
  Sequential model({layers::Input({kWindow, 1}), layers::GRU(16), layers::Dense(1)}, "time_series");
  model.summary();
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}), .loss = "mse", .metrics = {"mae"}});
  const auto history = model.fit(x, y, {.epochs = 12, .batch_size = 32, .verbose = 2, .validation_split = 0.2});
  const double mae = history.history.at("val_mae").back();
  std::cout << "repeating the last value: validation MAE " << naive << "\n";
  std::cout << "validation MAE: " << mae << (mae <= 0.07 ? " (<= 0.07)" : " (above 0.07)") << "\n";
  return mae <= 0.07 ? 0 : 1;
}
