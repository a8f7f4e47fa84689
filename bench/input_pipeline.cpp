// A deliberately slow input: every batch takes `load_ms` to "load" (a sleep, like waiting for storage) before the
// wide MLP (batch 128) trains on it. fit() reports how much of the epoch waited for input; with workers the
// loading overlaps training. Prints one JSON line per worker count. Usage: input_pipeline [load_ms] [batches]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <osprey/osprey.h>

namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;

class SlowBatches : public keras::utils::PyDataset {
 public:
  SlowBatches(int workers, int load_ms, int64_t batches)
      : PyDataset({.workers = workers, .max_queue_size = 8}), load_ms_(load_ms), batches_(batches) {
    osprey::random::set_seed(1);
    x_ = osprey::random::uniform({128, 784});
    y_ = osprey::random::randint(0, 10, {128}).cast(osprey::float32);
  }
  int64_t num_batches() const override { return batches_; }
  std::pair<osprey::Tensor, osprey::Tensor> get_batch(int64_t) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(load_ms_));
    return {x_, y_};
  }

 private:
  int load_ms_;
  int64_t batches_;
  osprey::Tensor x_, y_;
};

int main(int argc, char** argv) {
  const int load_ms = argc > 1 ? std::atoi(argv[1]) : 5;
  const int64_t batches = argc > 2 ? std::atoll(argv[2]) : 40;
  for (int workers : {1, 4}) {
    keras::Sequential model({layers::Input({784}), layers::Dense(512, "relu"), layers::Dense(512, "relu"),
                             layers::Dense(10, "softmax")});
    model.compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy"});
    SlowBatches data(workers, load_ms, batches);
    model.fit(data, {.epochs = 1, .verbose = 0});  // warm-up epoch
    const auto t0 = std::chrono::steady_clock::now();
    auto h = model.fit(data, {.epochs = 1, .verbose = 0});
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("{\"case\": \"wide MLP batch 128, %d ms per batch to load, workers=%d\", \"epoch_s\": %.3f, "
                "\"input_wait_s\": %.3f, \"train_s\": %.3f, \"input_fraction\": %.2f}\n",
                load_ms, workers, s, h.input_seconds[0], h.step_seconds[0],
                h.input_seconds[0] / (h.input_seconds[0] + h.step_seconds[0]));
  }
  return 0;
}
