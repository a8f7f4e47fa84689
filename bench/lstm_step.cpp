// Issue 18's LSTM benchmark: batch 64, 100 steps of 128 inputs, LSTM(256) then Dense(1), Adam, mse; time per
// train_on_batch step (one JSON line). bench/torch_lstm.py builds the same network.
//   lstm_step [batch] [steps] [time_steps] [device] [row]   ("row": a Markdown row for scripts/gpu-check.sh)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <osprey/osprey.h>

namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;

int main(int argc, char** argv) {
  const int batch = argc > 1 ? std::atoi(argv[1]) : 64;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 3;
  const int time_steps = argc > 3 ? std::atoi(argv[3]) : 100;
  const std::string device = argc > 4 ? argv[4] : "/CPU:0";
  const bool row = argc > 5 && std::string(argv[5]) == "row";
  if (osprey::DeviceSpec::from_string(device).device_type == "GPU" && osprey::config::list_logical_devices("GPU").empty()) {
    std::printf("| lstm | %d | %s | skipped: no GPU |\n", batch, device.c_str());
    return 0;
  }
  osprey::DeviceScope on(device);
  osprey::random::set_seed(0);
  auto x = osprey::random::uniform({batch, time_steps, 128});
  auto y = osprey::random::uniform({batch, 1});
  keras::Sequential model({layers::Input({time_steps, 128}), layers::LSTM(256), layers::Dense(1)});
  model.compile({.optimizer = "adam", .loss = "mse"});
  model.train_on_batch(x, y);  // warm-up
  using clock = std::chrono::steady_clock;
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = clock::now();
    for (int i = 0; i < steps; ++i) model.train_on_batch(x, y);
    best = std::min(best, std::chrono::duration<double, std::micro>(clock::now() - t0).count() / steps);
  }
  if (row) {
    std::printf("| lstm | %d | %s | %.1f |\n", batch, device.c_str(), best);
    return 0;
  }
  std::printf("{\"framework\": \"osprey\", \"case\": \"LSTM(256) over %d steps of 128, batch %d, train_on_batch\", "
              "\"us_per_step\": %.1f}\n",
              time_steps, batch, best);
  return 0;
}
