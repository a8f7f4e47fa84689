// What the TensorBoard callback adds to the seed model's training (2048x20 -> 64 -> 32 -> 1, Adam, BCE, batch 64:
// 32 steps an epoch): fits without it, with update_freq="epoch" and with update_freq="batch" (every batch's loss and
// accuracy written), each as a short fit (2 epochs) and a long one (2 + `extra` epochs), interleaved round by round
// (the order rotating) so that the machine's drift hits all alike. From the medians: the cost of an epoch (the
// slope, (long - short) / extra) and the cost of a fit apart from its epochs (the intercept: making the folders and
// files, the model's graph). The slope is noisy on a shared machine, so the time spent inside the callback's hooks is
// also measured directly (a subclass timing each hook): per epoch (batch and epoch hooks) and per fit (train
// begin/end). Issue 20's goal: "batch" adds <= 3 % to the epoch.
//   tensorboard_overhead [rounds=20] [extra_epochs=10]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <osprey/osprey.h>

namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;

// The TensorBoard callback with every hook timed.
class TimedTensorBoard : public keras::TensorBoard {
 public:
  TimedTensorBoard(std::string dir, keras::TensorBoardOptions o, double& epoch_hooks_us, double& fit_hooks_us)
      : keras::TensorBoard(std::move(dir), std::move(o)), epoch_(epoch_hooks_us), fit_(fit_hooks_us) {}
  void on_train_begin(keras::Logs& l) override { timed(fit_, [&] { keras::TensorBoard::on_train_begin(l); }); }
  void on_train_end(keras::Logs& l) override { timed(fit_, [&] { keras::TensorBoard::on_train_end(l); }); }
  void on_epoch_begin(int e, keras::Logs& l) override { timed(epoch_, [&] { keras::TensorBoard::on_epoch_begin(e, l); }); }
  void on_epoch_end(int e, keras::Logs& l) override { timed(epoch_, [&] { keras::TensorBoard::on_epoch_end(e, l); }); }
  void on_train_batch_begin(int b, keras::Logs& l) override {
    timed(epoch_, [&] { keras::TensorBoard::on_train_batch_begin(b, l); });
  }
  void on_train_batch_end(int b, keras::Logs& l) override {
    timed(epoch_, [&] { keras::TensorBoard::on_train_batch_end(b, l); });
  }

 private:
  template <typename F>
  static void timed(double& total, F&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    total += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }
  double &epoch_, &fit_;
};

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 20;
  const int extra = argc > 2 ? std::atoi(argv[2]) : 10;
  if (!osprey::summary::available()) {
    std::printf("{\"bench\": \"tensorboard_overhead\", \"skipped\": \"built without TensorBoard event files\"}\n");
    return 0;
  }
  const auto dir = std::filesystem::temp_directory_path() / ("osprey_tb_bench_" + std::to_string(getpid()));
  osprey::random::set_seed(0);
  auto x = osprey::random::uniform({2048, 20});
  auto y = osprey::random::randint(0, 2, {2048, 1}).cast(osprey::float32);
  keras::Sequential model({layers::Input({20}), layers::Dense(64, "relu"), layers::Dense(32, "relu"),
                           layers::Dense(1, "sigmoid")});
  model.compile({.optimizer = "adam", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  model.fit(x, y, {.epochs = 1, .batch_size = 64, .verbose = 0});  // warm-up

  using clock = std::chrono::steady_clock;
  const char* names[] = {"none", "update_freq=epoch", "update_freq=batch"};
  const int lengths[] = {2, 2 + extra};
  std::vector<double> fit_us[3][2];
  double epoch_hooks_us[3] = {}, fit_hooks_us[3] = {};
  int epochs_run[3] = {}, fits_run[3] = {};
  int run = 0;
  for (int r = 0; r < rounds; ++r) {
    for (int k = 0; k < 6; ++k) {
      const int v = (r + k) % 3, len = ((r + k) / 3) % 2;
      keras::FitOptions o{.epochs = lengths[len], .batch_size = 64, .verbose = 0};
      if (v > 0) {
        keras::TensorBoardOptions tb;
        tb.update_freq = v == 1 ? keras::UpdateFreq("epoch") : keras::UpdateFreq("batch");
        o.callbacks.push_back(std::make_shared<TimedTensorBoard>((dir / std::to_string(run++)).string(), tb,
                                                                 epoch_hooks_us[v], fit_hooks_us[v]));
      }
      epochs_run[v] += lengths[len];
      ++fits_run[v];
      const auto t0 = clock::now();
      model.fit(x, y, std::move(o));
      fit_us[v][len].push_back(std::chrono::duration<double, std::micro>(clock::now() - t0).count());
    }
  }
  std::filesystem::remove_all(dir);
  double epoch_us[3], fixed_us[3];
  for (int v = 0; v < 3; ++v) {
    epoch_us[v] = (median(fit_us[v][1]) - median(fit_us[v][0])) / extra;
    fixed_us[v] = median(fit_us[v][0]) - 2 * epoch_us[v];
  }
  for (int v = 0; v < 3; ++v)
    std::printf("{\"framework\": \"osprey\", \"case\": \"seed fit, TensorBoard %s\", \"us_per_epoch\": %.0f, "
                "\"epoch_overhead_pct\": %.1f, \"us_per_fit_besides_epochs\": %.0f, \"fit_overhead_us\": %.0f, "
                "\"hooks_us_per_epoch\": %.1f, \"hooks_pct_of_epoch\": %.2f, \"hooks_us_per_fit\": %.0f}\n",
                names[v], epoch_us[v], 100.0 * (epoch_us[v] - epoch_us[0]) / epoch_us[0], fixed_us[v],
                fixed_us[v] - fixed_us[0], epoch_hooks_us[v] / epochs_run[v],
                100.0 * epoch_hooks_us[v] / epochs_run[v] / epoch_us[0], fit_hooks_us[v] / fits_run[v]);
  return 0;
}
