// TensorFlow's multi-worker tutorial in C++: the same program on every worker, started by one MPI launch.
//   mpirun -np 2 build/release/examples/multi_worker          (two workers on this machine)
//   mpirun -np 4 --hostfile hosts build/release/examples/multi_worker   (or srun -n 4 ... under Slurm)
// Started alone it is a cluster of one worker. TF_CONFIG, when set, must describe the same cluster.
#include <iostream>

#include <osprey/osprey.h>

namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;

int main() {
  osprey::distribute::MultiWorkerMirroredStrategy strategy;  // every worker's GPUs, else its CPU
  const int workers = strategy.num_workers();
  if (strategy.is_chief()) {
    std::cout << "Workers: " << workers << ", replicas in sync: " << strategy.num_replicas_in_sync() << "\n";
  }
  // Every worker makes the same data (the chief's seed is every worker's) and takes its rows of each global batch.
  auto x = osprey::random::uniform({4096, 20});
  auto y = osprey::random::randint(0, 2, {4096, 1}).cast(osprey::float32);
  std::unique_ptr<keras::Sequential> model;
  {
    auto scope = strategy.scope();
    model = std::make_unique<keras::Sequential>(std::vector<keras::LayerRef>{
        layers::Input({20}), layers::Dense(64, "relu"), layers::Dense(1, "sigmoid")});
    model->compile({.optimizer = "adam", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  }
  const int global_batch = 64 * workers;  // 64 rows per worker
  auto checkpoint = std::make_shared<keras::callbacks::ModelCheckpoint>("/tmp/multi_worker_ckpt.weights.osp");
  auto history = model->fit(x, y, {.epochs = 3, .batch_size = global_batch, .callbacks = {checkpoint}});
  if (strategy.is_chief()) {  // every worker has the same history and weights; the chief wrote the checkpoint
    std::cout << "final loss " << history.history["loss"].back() << ", accuracy "
              << history.history["accuracy"].back() << "\n";
  }
  return 0;
}
