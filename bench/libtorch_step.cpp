// The libtorch C++ frontend reference (Debian libtorch-dev): the seed model (batch 64, shuffled epochs, with the
// accuracy count fit computes) and the wide MLP (one fixed batch), Adam, as Osprey's benchmarks. Built and run by
// bench/run.sh when libtorch is installed. One JSON line per case.
//   libtorch_step <seed|wide> <batch> <threads> [steps]
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  const std::string model_name = argc > 1 ? argv[1] : "seed";
  const int64_t batch = argc > 2 ? std::atoll(argv[2]) : 64;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 1;
  const int steps = argc > 4 ? std::atoi(argv[4]) : 200;
  torch::set_num_threads(threads);
  torch::manual_seed(0);
  const bool wide = model_name == "wide";
  torch::nn::Sequential model =
      wide ? torch::nn::Sequential(torch::nn::Linear(784, 512), torch::nn::ReLU(), torch::nn::Linear(512, 512),
                                   torch::nn::ReLU(), torch::nn::Linear(512, 10))
           : torch::nn::Sequential(torch::nn::Linear(20, 64), torch::nn::ReLU(), torch::nn::Linear(64, 32),
                                   torch::nn::ReLU(), torch::nn::Linear(32, 1), torch::nn::Sigmoid());
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-3).eps(1e-7));
  const int64_t rows = wide ? batch : 2048;
  auto x = torch::rand({rows, wide ? 784 : 20});
  auto y = wide ? torch::randint(0, 10, {rows}) : torch::randint(0, 2, {rows, 1}).to(torch::kFloat);
  int64_t cursor = rows;
  torch::Tensor perm;
  auto step = [&] {
    torch::Tensor xb = x, yb = y;
    if (!wide) {  // shuffled batches of 64, as fit
      if (cursor >= rows) {
        perm = torch::randperm(rows);
        cursor = 0;
      }
      auto idx = perm.slice(0, cursor, cursor + batch);
      cursor += batch;
      xb = x.index_select(0, idx);
      yb = y.index_select(0, idx);
    }
    opt.zero_grad();
    auto p = model->forward(xb);
    auto loss = wide ? torch::nn::functional::cross_entropy(p, yb) : torch::binary_cross_entropy(p, yb);
    loss.backward();
    opt.step();
    double l = loss.item<double>();
    if (!wide) l += ((p > 0.5).to(torch::kFloat) == yb).sum().item<double>();
    return l;
  };
  for (int i = 0; i < 10; ++i) step();
  double best = 1e30;
  for (int round = 0; round < 3; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) step();
    best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / steps);
  }
  std::printf("{\"framework\": \"libtorch-cpp\", \"case\": \"%s batch %lld, %d thread(s), libtorch %s\", \"us_per_step\": %.1f}\n",
              wide ? "wide MLP" : "seed model", static_cast<long long>(batch), threads, TORCH_VERSION, best);
  return 0;
}
