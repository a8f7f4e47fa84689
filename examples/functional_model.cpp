// A functional model as a Keras user writes one: two inputs joined by Concatenate, a shared trunk with a residual
// connection, two outputs with their own losses, loss weights and metrics; then a subclassed model with its own
// train_step. Prints the History's keys and the last epoch's values.
#include <cstdio>

#include <osprey/osprey.h>

namespace keras = osprey::keras;
namespace layers = osprey::keras::layers;
using osprey::Tensor;

// keras.Model subclassing: layers made in the constructor, call() written as code, a train_step of one's own.
class Residual : public keras::Model {
 public:
  Residual() : Model("residual") {
    hidden_ = track(layers::Dense(16, "relu"));
    inner_ = track(layers::Dense(16, "relu"));
    out_ = track(layers::Dense(1, "sigmoid"));
  }
  Tensor call(const Tensor& x, bool training) override {
    Tensor h = (*hidden_)(x, training);
    return (*out_)(osprey::ops::add(h, (*inner_)(h, training)), training);
  }
  void train_step(const keras::StepData& data, keras::Logs& logs) override {
    const auto vars = trainable_variables();
    std::vector<Tensor> grads, y_pred;
    Tensor loss;
    {
      osprey::GradientTape tape;
      y_pred = call_all(data.x(), true);
      loss = compute_loss(data, y_pred);
      grads = tape.gradient(loss, vars);
    }
    optimizer()->apply_gradients(grads, vars);
    compute_metrics(data, y_pred, loss, logs);
  }

 private:
  std::shared_ptr<layers::Dense> hidden_, inner_, out_;
};

int main() {
  osprey::random::set_seed(1);
  const Tensor x_a = osprey::random::uniform({512, 8}), x_b = osprey::random::uniform({512, 4});
  const Tensor y_class = osprey::random::randint(0, 2, {512, 1}).cast(osprey::float32);
  const Tensor y_value = osprey::random::uniform({512, 2});

  auto a = keras::Input({8}, {.name = "a"});
  auto b = keras::Input({4}, {.name = "b"});
  auto h = layers::Dense(32, "relu", {.name = "trunk"})(layers::Concatenate()({a, b}));
  h = layers::Add()({h, layers::Dense(32, "relu")(h)});
  auto cls = layers::Dense(1, "sigmoid", {.name = "cls"})(h);
  auto value = layers::Dense(2, "", {.name = "value"})(h);
  keras::Model model({a, b}, {cls, value}, "two_heads");
  model.summary();
  model.compile({.optimizer = "adam",
                 .loss = std::map<std::string, keras::LossRef>{{"cls", "binary_crossentropy"}, {"value", "mse"}},
                 .metrics = std::map<std::string, std::vector<keras::MetricRef>>{{"cls", {"accuracy"}}},
                 .loss_weights = {1.0, 0.5}});
  auto history = model.fit({x_a, x_b}, {y_class, y_value}, {.epochs = 3, .batch_size = 32, .verbose = 2});
  for (const auto& [key, values] : history.history) std::printf("%s: %.4f\n", key.c_str(), values.back());

  Residual sub;
  sub.compile({.optimizer = "adam", .loss = "binary_crossentropy", .metrics = {"accuracy"}});
  auto h2 = sub.fit(x_a, y_class, {.epochs = 2, .batch_size = 32, .verbose = 0});
  std::printf("subclassed model: loss %.4f, accuracy %.4f\n", h2.history["loss"].back(), h2.history["accuracy"].back());
  return 0;
}
