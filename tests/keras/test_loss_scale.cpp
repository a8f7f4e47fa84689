// Dynamic loss scaling (Keras's LossScaleOptimizer) against real Keras 3: tests/keras/keras_loss_scale_reference.py
// wrote tests/data/keras_loss_scale.json and keras_files/loss_scale.keras. compile() under mixed_float16 turns it
// on; float16 gradients that overflow skip the step and halve the scale; finite steps double it every
// dynamic_growth_steps; the state goes through .keras files both ways and through BackupAndRestore.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/keras/mixed_precision.h"
#include "keras/saving/serialization.h"
#include "osprey/ops.h"
#include "reference_json.h"
#include "policy_scope.h"
#include "test_util.h"

using namespace osprey;
namespace mp = osprey::keras::mixed_precision;
using osprey::testing::PolicyScope;
namespace opt = osprey::keras::optimizers;
using json = nlohmann::json;
using osprey::testing::expect_close;
using osprey::testing::tensor_of;

namespace {

const json& loss_scale_ref() {
  static const json j = osprey::testing::read_reference("keras_loss_scale.json");
  return j;
}


std::shared_ptr<keras::Sequential> make_regressor() {
  auto m = std::make_shared<keras::Sequential>(
      std::vector<keras::LayerRef>{keras::layers::Input({6}), keras::layers::Dense(12, "tanh", {.name = "hidden"}),
                                   keras::layers::Dense(3, "", {.name = "out"})},
      "regressor");
  std::vector<Tensor> w;
  for (const auto& v : loss_scale_ref()["weights"]) w.push_back(tensor_of(v));
  m->set_weights(w);
  return m;
}

Tensor x_ref() { return tensor_of(loss_scale_ref()["x"]); }
Tensor y_ref() { return tensor_of(loss_scale_ref()["y"]); }

// The optimizer's loss-scale state after each step equals Keras's exactly (scale, counter, iterations), the losses
// and the final weights within float16's precision.
void expect_steps(keras::Model& model, const json& rec, const std::vector<double>& losses, double tol,
                  const std::string& what) {
  ASSERT_EQ(losses.size(), rec["steps"].size()) << what;
  for (std::size_t i = 0; i < losses.size(); ++i) {
    EXPECT_NEAR(losses[i], rec["steps"][i]["loss"].get<double>(), tol) << what << " step " << i;
  }
  const auto* ls = model.optimizer()->loss_scale();
  ASSERT_NE(ls, nullptr) << what;
  const auto& last = rec["steps"].back();
  EXPECT_EQ(ls->dynamic_scale, last["dynamic_scale"].get<double>()) << what;
  EXPECT_EQ(ls->step_counter, last["step_counter"].get<int64_t>()) << what;
  EXPECT_EQ(model.optimizer()->iterations(), last["iterations"].get<int64_t>()) << what;
  const auto w = model.get_weights();
  for (std::size_t i = 0; i < w.size(); ++i) {
    expect_close(w[i], rec["weights_after"][i], tol, what + " weight " + std::to_string(i));
  }
}

// train_on_batch step by step, checking the state after every step.
std::vector<double> steps_on_batch(keras::Model& model, const json& rec, const std::string& what) {
  std::vector<double> losses;
  for (const auto& step : rec["steps"]) {
    losses.push_back(model.train_on_batch(x_ref(), y_ref())[0]);
    const auto* ls = model.optimizer()->loss_scale();
    EXPECT_EQ(ls->dynamic_scale, step["dynamic_scale"].get<double>()) << what << " step " << losses.size();
    EXPECT_EQ(ls->step_counter, step["step_counter"].get<int64_t>()) << what << " step " << losses.size();
    EXPECT_EQ(model.optimizer()->iterations(), step["iterations"].get<int64_t>()) << what << " step " << losses.size();
  }
  return losses;
}

keras::OptimizerRef overflow_optimizer() {
  return opt::LossScaleOptimizer(opt::SGD({.learning_rate = 0.05}),
                                 {.initial_scale = 16777216.0, .dynamic_growth_steps = 2});
}

}  // namespace

TEST(LossScale, CompileWrapsTheOptimizerUnderMixedFloat16AsKeras) {
  const auto& rec = loss_scale_ref()["auto"];
  PolicyScope scope("mixed_float16");
  auto model = make_regressor();
  model->compile({.optimizer = opt::Adam({.learning_rate = 0.01}), .loss = "mse"});
  const auto* ls = model->optimizer()->loss_scale();
  ASSERT_NE(ls, nullptr);
  EXPECT_FALSE(ls->requested);
  EXPECT_EQ(ls->dynamic_scale, 32768.0f);
  EXPECT_EQ(ls->options.dynamic_growth_steps, 2000);
  expect_steps(*model, rec, steps_on_batch(*model, rec, "auto"), 2e-3, "auto");
  // Under float32 (or with auto_scale_loss off) there is none.
  PolicyScope f32("float32");
  auto plain = make_regressor();
  plain->compile({.optimizer = "adam", .loss = "mse"});
  EXPECT_EQ(plain->optimizer()->loss_scale(), nullptr);
  PolicyScope f16("mixed_float16");
  auto off = make_regressor();
  off->compile({.optimizer = "adam", .loss = "mse", .auto_scale_loss = false});
  EXPECT_EQ(off->optimizer()->loss_scale(), nullptr);
}

// Overflowing float16 gradients skip the step (iterations and weights unchanged) and halve the scale; finite steps
// double it every 2 steps — the same sequence as Keras, through recorded steps, eager steps and fit.
TEST(LossScale, OverflowSkipsStepsAndTheScaleFollowsKeras) {
  const auto& rec = loss_scale_ref()["overflow"];
  PolicyScope scope("mixed_float16");
  for (const bool eager : {false, true}) {
    const std::string what = eager ? "run_eagerly" : "recorded";
    auto model = make_regressor();
    model->compile({.optimizer = overflow_optimizer(), .loss = "mse", .run_eagerly = eager});
    const auto before = model->get_weights();
    model->train_on_batch(x_ref(), y_ref());  // the first step overflows: nothing changes but the scale
    EXPECT_EQ(model->get_weights()[0].to_vector<float>(), before[0].to_vector<float>()) << what;
    EXPECT_EQ(model->optimizer()->iterations(), 0) << what;
    auto again = make_regressor();
    again->compile({.optimizer = overflow_optimizer(), .loss = "mse", .run_eagerly = eager});
    expect_steps(*again, rec, steps_on_batch(*again, rec, what), 2e-3, what);
  }
  auto model = make_regressor();
  model->compile({.optimizer = overflow_optimizer(), .loss = "mse"});
  const auto h = model->fit(x_ref(), y_ref(), {.epochs = static_cast<int>(rec["steps"].size()), .batch_size = 8,
                                               .verbose = 0, .shuffle = false});
  expect_steps(*model, rec, h.history.at("loss"), 2e-3, "fit");
}

TEST(LossScale, ExplicitLossScaleOptimizerInFloat32MatchesKeras) {
  const auto& rec = loss_scale_ref()["float32"];
  auto model = make_regressor();
  model->compile({.optimizer = opt::LossScaleOptimizer(opt::Adam({.learning_rate = 0.01}),
                                                      {.initial_scale = 4.0, .dynamic_growth_steps = 3}),
                  .loss = "mse"});
  EXPECT_TRUE(model->optimizer()->loss_scale()->requested);
  expect_steps(*model, rec, steps_on_batch(*model, rec, "float32"), 1e-5, "float32");
}

// A custom loop as with Keras: scale_loss() before the gradients, apply_gradients() unscales or skips.
TEST(LossScale, CustomTrainingLoopScalesAndUnscales) {
  const auto& rec = loss_scale_ref()["float32"];
  auto model = make_regressor();
  mp::LossScaleOptimizer lso(opt::Adam({.learning_rate = 0.01}), {.initial_scale = 4.0, .dynamic_growth_steps = 3});
  auto& o = *lso.optimizer();
  auto mse = keras::losses::get("mse");
  const auto vars = model->trainable_variables();
  for (const auto& step : rec["steps"]) {
    GradientTape tape;
    const Tensor loss = (*mse)(y_ref(), (*model)(x_ref()));
    const Tensor scaled = o.scale_loss(loss);
    EXPECT_FLOAT_EQ(scaled.item(), loss.item() * o.loss_scale()->dynamic_scale);
    o.apply_gradients(tape.gradient(scaled, vars), vars);
    EXPECT_EQ(o.loss_scale()->dynamic_scale, step["dynamic_scale"].get<double>());
    EXPECT_NEAR(loss.item(), step["loss"].get<double>(), 1e-5);
  }
  // Non-finite gradients: no update, the scale halves, the counter restarts.
  const auto before = vars[0]->value().to_vector<float>();
  const float scale = o.loss_scale()->dynamic_scale;
  std::vector<Tensor> bad;
  for (auto* v : vars) bad.push_back(Tensor::full(v->shape(), 1.0));
  bad[1] = ops::mul(bad[1], Tensor::scalar(INFINITY));
  const int64_t it = o.iterations();
  o.apply_gradients(bad, vars);
  EXPECT_EQ(vars[0]->value().to_vector<float>(), before);
  EXPECT_EQ(o.loss_scale()->dynamic_scale, scale / 2);
  EXPECT_EQ(o.loss_scale()->step_counter, 0);
  EXPECT_EQ(o.iterations(), it);
  bad[1] = Tensor::full(vars[1]->shape(), NAN);
  o.apply_gradients(bad, vars);
  EXPECT_EQ(o.loss_scale()->dynamic_scale, scale / 4);  // NaN too
}

TEST(LossScale, BadArgumentsAreValueErrors) {
  EXPECT_THROW(opt::LossScaleOptimizer(opt::SGD(), {.initial_scale = 0.0}), ValueError);
  EXPECT_THROW(opt::LossScaleOptimizer(opt::SGD(), {.initial_scale = INFINITY}), ValueError);
  EXPECT_THROW(opt::LossScaleOptimizer(opt::SGD(), {.dynamic_growth_steps = 0}), ValueError);
  std::shared_ptr<opt::Optimizer> shared = std::make_shared<opt::Adam>();
  opt::LossScaleOptimizer once(shared);
  const std::string msg = osprey::testing::error_of([&] { opt::LossScaleOptimizer twice(shared); });
  EXPECT_THAT(msg, ::testing::HasSubstr("already scales the loss"));
  EXPECT_THROW(shared->set_loss_scale_state(-1.0, 0), ValueError);
  EXPECT_THROW(shared->set_loss_scale_state(2.0, -3), ValueError);
  EXPECT_THROW(opt::Adam().set_loss_scale_state(2.0, 0), FailedPreconditionError);
}

// A LossScaleOptimizer in a compile config: Keras's own config round-trips; Keras's refusals are ValueErrors.
TEST(LossScale, CompileConfigsRoundTripAndBadOnesAreValueErrors) {
  namespace ser = osprey::keras::serialization;
  auto model = make_regressor();
  model->compile({.optimizer = overflow_optimizer(), .loss = "mse"});
  const json cc = ser::compile_config(*model);
  EXPECT_EQ(cc["optimizer"]["class_name"], "LossScaleOptimizer");
  EXPECT_EQ(cc["optimizer"]["config"]["inner_optimizer"]["class_name"], "SGD");
  EXPECT_EQ(cc["optimizer"]["config"]["initial_scale"], 16777216.0);
  EXPECT_EQ(cc["optimizer"]["config"]["dynamic_growth_steps"], 2);
  auto again = make_regressor();
  ser::compile_from_config(*again, cc, false);
  ASSERT_NE(again->optimizer()->loss_scale(), nullptr);
  EXPECT_EQ(again->optimizer()->loss_scale()->options.dynamic_growth_steps, 2);
  EXPECT_EQ(again->optimizer()->name(), "sgd");
  const std::vector<std::pair<std::string, std::function<void(json&)>>> bad = {
      {"dynamic=False", [](json& c) { c["dynamic"] = false; }},
      {"clipnorm", [](json& c) { c["clipnorm"] = 1.0; }},
      {"an unknown argument", [](json& c) { c["momentum"] = 0.5; }},
      {"no inner optimizer", [](json& c) { c.erase("inner_optimizer"); }},
      {"a nested wrapper", [](json& c) { c["inner_optimizer"] = json{{"class_name", "LossScaleOptimizer"}, {"config", c}}; }},
      {"growth steps 0", [](json& c) { c["dynamic_growth_steps"] = 0; }},
      {"a zero scale", [](json& c) { c["initial_scale"] = 0.0; }},
  };
  for (const auto& [what, mutate] : bad) {
    json broken = cc;
    mutate(broken["optimizer"]["config"]);
    auto m = make_regressor();
    EXPECT_THROW(ser::compile_from_config(*m, broken, false), ValueError) << what;
  }
  // Under mixed_float16 compile's own wrapping is not recorded (Keras records the optimizer it was given).
  PolicyScope scope("mixed_float16");
  auto mixed = make_regressor();
  mixed->compile({.optimizer = "adam", .loss = "mse"});
  EXPECT_EQ(ser::compile_config(*mixed)["optimizer"]["class_name"], "Adam");
}

// Keras's file (trained with loss scaling, its state in the weights) loads with that state and takes the next step
// as Keras does; Osprey's file of it loads back in Osprey (and in Keras: keras_load_osprey_mixed.py).
TEST(LossScale, KerasSavedLossScaleModelResumesAsKeras) {
  SKIP_WITHOUT_HDF5();
  const auto& f = loss_scale_ref()["from_file"];
  auto model = keras::models::load_model(osprey::testing::data_file("keras_files/loss_scale.keras"));
  const auto* ls = model->optimizer()->loss_scale();
  ASSERT_NE(ls, nullptr);
  EXPECT_TRUE(ls->requested);
  EXPECT_EQ(ls->options.initial_scale, 16777216.0);
  EXPECT_EQ(ls->options.dynamic_growth_steps, 2);
  EXPECT_EQ(ls->dynamic_scale, f["before"]["dynamic_scale"].get<double>());
  EXPECT_EQ(ls->step_counter, f["before"]["step_counter"].get<int64_t>());
  EXPECT_EQ(model->optimizer()->iterations(), f["before"]["iterations"].get<int64_t>());
  EXPECT_EQ(model->optimizer()->class_name(), "SGD");
  const std::string path = osprey::testing::temp_path("LossScale", "resave.keras");
  model->save(path);
  auto back = keras::models::load_model(path);
  EXPECT_EQ(back->optimizer()->loss_scale()->dynamic_scale, ls->dynamic_scale);
  EXPECT_EQ(back->optimizer()->loss_scale()->step_counter, ls->step_counter);
  EXPECT_EQ(back->optimizer()->iterations(), model->optimizer()->iterations());
  if (const char* out = std::getenv("OSPREY_KERAS_FILES_OUT")) model->save(std::string(out) + "/loss_scale.keras");
  const double loss = model->train_on_batch(x_ref(), y_ref())[0];
  EXPECT_NEAR(loss, f["after_step"]["loss"].get<double>(), 2e-3);
  EXPECT_EQ(model->optimizer()->loss_scale()->dynamic_scale, f["after_step"]["dynamic_scale"].get<double>());
  EXPECT_EQ(model->optimizer()->loss_scale()->step_counter, f["after_step"]["step_counter"].get<int64_t>());
  EXPECT_EQ(model->optimizer()->iterations(), f["after_step"]["iterations"].get<int64_t>());
  const auto w = model->get_weights();
  for (std::size_t i = 0; i < w.size(); ++i) expect_close(w[i], f["weights_after"][i], 2e-3, "weight");
}

// BackupAndRestore keeps the scale and its counter: an interrupted run resumes to the same state.
TEST(LossScale, BackupAndRestoreKeepsTheScale) {
  PolicyScope scope("mixed_float16");
  const std::string dir = osprey::testing::temp_path("LossScale", "backup");
  std::filesystem::remove_all(dir);
  const int epochs = 12;
  auto whole = make_regressor();
  whole->compile({.optimizer = overflow_optimizer(), .loss = "mse"});
  whole->fit(x_ref(), y_ref(), {.epochs = epochs, .batch_size = 8, .verbose = 0, .shuffle = false});
  struct StopAt : keras::Callback {
    void on_epoch_end(int epoch, keras::Logs&) override {
      if (epoch == 8) throw std::runtime_error("interrupted");
    }
  };
  auto first = make_regressor();
  first->compile({.optimizer = overflow_optimizer(), .loss = "mse"});
  keras::callbacks::BackupAndRestore backup(dir), backup_again(dir);
  StopAt stop;
  EXPECT_THROW(first->fit(x_ref(), y_ref(), {.epochs = epochs, .batch_size = 8, .verbose = 0,
                                             .callbacks = {backup, stop}, .shuffle = false}),
               std::runtime_error);
  auto resumed = make_regressor();
  resumed->compile({.optimizer = overflow_optimizer(), .loss = "mse"});
  resumed->fit(x_ref(), y_ref(), {.epochs = epochs, .batch_size = 8, .verbose = 0, .callbacks = {backup_again},
                                  .shuffle = false});
  EXPECT_EQ(resumed->optimizer()->loss_scale()->dynamic_scale, whole->optimizer()->loss_scale()->dynamic_scale);
  EXPECT_EQ(resumed->optimizer()->loss_scale()->step_counter, whole->optimizer()->loss_scale()->step_counter);
  EXPECT_EQ(resumed->optimizer()->iterations(), whole->optimizer()->iterations());
  EXPECT_EQ(resumed->get_weights()[0].to_vector<float>(), whole->get_weights()[0].to_vector<float>());
  std::filesystem::remove_all(dir);
}
