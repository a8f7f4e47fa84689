// Optimizers, schedules and losses against values computed with Keras 3.15.1 (TensorFlow 2.21 backend) on the
// same inputs (the script is in the comment of each test's data); float32 tolerances.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <tuple>

#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/ops.h"
#include "osprey/random.h"
#include "osprey/variable.h"

using namespace osprey;
namespace opt = osprey::keras::optimizers;
namespace sched = osprey::keras::optimizers::schedules;
namespace L = osprey::keras::losses;

namespace {

// Three updates of w0 = [0.5, -1, 2, 0] with the gradients below:
//   v = keras.Variable(w0); for g in grads: opt.apply_gradients([(g, v)])
std::vector<float> three_steps(opt::Optimizer& o) {
  Variable v(Tensor::from_vector<float>({0.5f, -1.0f, 2.0f, 0.0f}, {4}), "v");
  const std::vector<std::vector<float>> grads = {{0.1f, -0.2f, 0.3f, -0.4f}, {-0.5f, 0.25f, 0.0f, 1.0f}, {0.3f, 0.3f, -0.3f, 0.01f}};
  for (const auto& g : grads) o.apply_gradients({Tensor::from_vector(g, {4})}, {&v});
  return v.value().to_vector<float>();
}

void expect_near(const std::vector<float>& got, const std::vector<double>& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << what << "[" << i << "]";
}

}  // namespace

TEST(KerasReference, NewOptimizersMatchKerasOverThreeSteps) {
  opt::AdamW adamw({.learning_rate = 0.01});  // weight_decay 0.004 by default
  expect_near(three_steps(adamw), {0.4966697096824646, -0.9967954754829407, 1.9839195013046265, 0.002099627861753106},
              2e-6, "AdamW");
  opt::Adagrad adagrad({.learning_rate = 0.1});
  expect_near(three_steps(adagrad), {0.5084608197212219, -1.0575733184814453, 1.9878699779510498, -0.011531471274793148},
              2e-6, "Adagrad");
  opt::Adamax adamax({.learning_rate = 0.01});
  expect_near(three_steps(adamax), {0.494825541973114, -0.9959385991096497, 1.985959529876709, 0.004467051941901445}, 2e-6,
              "Adamax");
  opt::Nadam nadam({.learning_rate = 0.01});
  expect_near(three_steps(nadam), {0.494422972202301, -1.0043472051620483, 1.9956647157669067, 0.0007999755325727165},
              2e-6, "Nadam");
  // A schedule is evaluated at iterations before the increment: 0.1, 0.1, 0.05 here.
  opt::SGD sgd({.learning_rate = sched::ExponentialDecay({.initial_learning_rate = 0.1, .decay_steps = 2,
                                                           .decay_rate = 0.5, .staircase = true})});
  expect_near(three_steps(sgd), {0.5250000357627869, -1.0199999809265137, 1.9850000143051147, -0.060499999672174454}, 2e-6,
              "SGD + ExponentialDecay");
  EXPECT_THROW(sgd.set_learning_rate(0.1), ValueError);
  for (const char* name : {"adamw", "AdaGrad", "adamax", "Nadam"}) EXPECT_NO_THROW(opt::get(name)) << name;
}

TEST(KerasReference, LearningRateSchedulesMatchKeras) {
  const std::vector<int64_t> steps = {0, 5, 10, 15, 50, 120};
  auto check = [&](const sched::LearningRateSchedule& s, const std::vector<double>& want, const char* what) {
    for (size_t i = 0; i < steps.size(); ++i) EXPECT_NEAR(s(steps[i]), want[i], 1e-7 + 1e-6 * want[i]) << what << " at " << steps[i];
  };
  check(sched::ExponentialDecay({.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5}),
        {0.1, 0.0707106813788414, 0.05, 0.0353553406894207, 0.0031250000465661287, 2.441406286379788e-05}, "exp");
  check(sched::PiecewiseConstantDecay({5, 10}, {1.0, 0.5, 0.1}), {1.0, 1.0, 0.5, 0.1, 0.1, 0.1}, "piecewise");
  check(sched::InverseTimeDecay({.initial_learning_rate = 0.1, .decay_steps = 10, .decay_rate = 0.5, .staircase = true}),
        {0.1, 0.1, 0.06666667014360428, 0.06666667014360428, 0.02857142873108387, 0.014285714365541935}, "inverse");
  check(sched::CosineDecay({.initial_learning_rate = 0.1, .decay_steps = 100, .alpha = 0.1}),
        {0.1, 0.09944597631692886, 0.09779754281044006, 0.09509529173374176, 0.05499999597668648, 0.010000000707805157},
        "cosine");
  check(sched::CosineDecay({.initial_learning_rate = 0.0, .decay_steps = 100, .warmup_target = 0.2, .warmup_steps = 10}),
        {0.0, 0.1, 0.2, 0.19876883924007416, 0.13090169429779053, 0.0}, "cosine with warm-up");
  EXPECT_THROW(sched::PiecewiseConstantDecay({5}, {1.0}), ValueError);
}

TEST(KerasReference, NewLossesMatchKeras) {
  const Tensor yt = Tensor::from_vector<float>({0, 1, 1, 0, 2, -1}, {3, 2});
  const Tensor yp = Tensor::from_vector<float>({0.1f, 0.8f, 0.6f, 0.3f, 1.5f, -3.0f}, {3, 2});
  auto check = [&](const L::Loss& l, const std::vector<double>& want, const char* what) {
    expect_near(l.per_sample(yt, yp).to_vector<float>(), want, 2e-6, what);
  };
  check(L::MeanAbsolutePercentageError(), {50000008.0, 150000032.0, 112.5}, "mape");
  check(L::Huber(), {0.01249999925494194, 0.0624999962747097, 0.8125}, "huber");
  check(L::LogCosh(), {0.012429893016815186, 0.061147093772888184, 0.7225585579872131}, "log_cosh");
  check(L::Hinge(), {0.6000000238418579, 0.699999988079071, 0.0}, "hinge");
  check(L::KLDivergence(), {0.22314216196537018, 0.5108240842819214, 0.0}, "kld");

  const Tensor logits = Tensor::from_vector<float>({2.0f, -1.0f, 0.5f, -0.5f, 0.0f, 3.0f}, {2, 3});
  const Tensor onehot = Tensor::from_vector<float>({1, 0, 0, 0, 0, 1}, {2, 3});
  expect_near(L::CategoricalCrossentropy({.from_logits = true}).per_sample(onehot, logits).to_vector<float>(),
              {0.24131132662296295, 0.07694662362337112}, 2e-6, "cce from logits");
  expect_near(L::SparseCategoricalCrossentropy({.from_logits = true})
                  .per_sample(Tensor::from_vector<int64_t>({0, 2}, {2}), logits)
                  .to_vector<float>(),
              {0.24131132662296295, 0.07694662362337112}, 2e-6, "scce from logits");
  expect_near(L::BinaryCrossentropy({.from_logits = true})
                  .per_sample(Tensor::from_vector<float>({1, 0, 1}, {3, 1}), Tensor::from_vector<float>({2.0f, -1.5f, 0.3f}, {3, 1}))
                  .to_vector<float>(),
              {0.12692800164222717, 0.20141328871250153, 0.554355263710022}, 2e-6, "bce from logits");
  for (const char* name : {"mape", "huber", "log_cosh", "hinge", "kld", "KLDivergence"}) EXPECT_NO_THROW(L::get(name)) << name;
}

TEST(KerasReference, NewLossesTrainThroughTheTape) {
  // Every new loss is differentiable: a small regression trains with each and its loss goes down.
  for (const char* name : {"mape", "huber", "log_cosh"}) {
    osprey::random::set_seed(2);
    Tensor x = osprey::random::uniform({64, 3});
    Tensor y = ops::add(ops::reduce_sum(x, 1).reshape({64, 1}), Tensor::scalar(1.0));
    keras::Sequential m({keras::layers::Input({3}), keras::layers::Dense(8, "relu"), keras::layers::Dense(1)});
    m.compile({.optimizer = "adam", .loss = name});
    auto h = m.fit(x, y, {.epochs = 20, .batch_size = 16, .verbose = 0});
    EXPECT_LT(h.history["loss"].back(), h.history["loss"].front()) << name;
  }
}

TEST(KerasReference, ConfusionTopKAndRmseMetricsMatchKeras) {
  namespace M = osprey::keras::metrics;
  const Tensor yt1 = Tensor::from_vector<float>({1, 0, 1, 1, 0, 0}, {6, 1});
  const Tensor yp1 = Tensor::from_vector<float>({0.9f, 0.4f, 0.35f, 0.8f, 0.6f, 0.1f}, {6, 1});
  const Tensor yt2 = Tensor::from_vector<float>({0, 1, 1, 0}, {4, 1});
  const Tensor yp2 = Tensor::from_vector<float>({0.7f, 0.55f, 0.2f, 0.3f}, {4, 1});
  auto two_batches = [&](M::Metric& m) {
    m.update_state(yt1, yp1);
    m.update_state(yt2, yp2);
    return m.result();
  };
  M::Precision precision;
  M::Recall recall;
  M::AUC roc, pr(200, M::AUC::Curve::PR), roc10(10);
  M::RootMeanSquaredError rmse;
  EXPECT_NEAR(two_batches(precision), 0.6000000238418579, 1e-6);
  EXPECT_NEAR(two_batches(recall), 0.6000000238418579, 1e-6);
  EXPECT_NEAR(two_batches(roc), 0.6399999856948853, 1e-6);
  EXPECT_NEAR(two_batches(pr), 0.7240257859230042, 1e-6);
  EXPECT_NEAR(two_batches(roc10), 0.6600000262260437, 1e-6);
  EXPECT_NEAR(two_batches(rmse), 0.49244290590286255, 1e-6);
  precision.reset_state();
  EXPECT_EQ(precision.result(), 0.0);

  const Tensor p = Tensor::from_vector<float>({0.1f, 0.5f, 0.4f, 0.7f, 0.2f, 0.1f, 0.3f, 0.3f, 0.4f, 0.2f, 0.2f, 0.6f}, {4, 3});
  const Tensor onehot = Tensor::from_vector<float>({0, 0, 1, 0, 1, 0, 1, 0, 0, 1, 0, 0}, {4, 3});
  M::TopKCategoricalAccuracy top2(2), top1(1);
  M::SparseTopKCategoricalAccuracy sparse2(2);
  top2.update_state(onehot, p);
  top1.update_state(onehot, p);
  sparse2.update_state(Tensor::from_vector<int64_t>({2, 1, 0, 0}, {4}), p);
  EXPECT_EQ(top2.result(), 1.0);  // Keras: 1.0
  EXPECT_EQ(sparse2.result(), 1.0);
  EXPECT_EQ(top1.result(), 0.0);
  for (const char* name : {"precision", "recall", "auc", "AUC", "rmse", "top_k_categorical_accuracy"}) {
    EXPECT_EQ(M::get(name)->name(), name);  // the log key is the string given
  }
}

TEST(KerasReference, MetricsByNameInFit) {
  osprey::random::set_seed(3);
  Tensor x = osprey::random::uniform({60, 4});
  Tensor y = osprey::random::randint(0, 2, {60, 1}).cast(DType::float32);
  keras::Sequential m({keras::layers::Input({4}), keras::layers::Dense(1, "sigmoid")});
  m.compile({.optimizer = "adam", .loss = "bce", .metrics = {"precision", "recall", "auc"}});
  auto h = m.fit(x, y, {.epochs = 2, .batch_size = 16, .verbose = 0});
  for (const char* key : {"auc", "precision", "recall", "loss"}) EXPECT_EQ(h.history.count(key), 1u) << key;
}

// Keras 3.15 on TensorFlow evaluates Dense(1, "sigmoid") + binary_crossentropy from the logits (11.5243 here, for a
// logit of 20 with label 0 and −3 with label 1); the clipped formula gives (15.9424 + 3.0486) / 2.
TEST(KerasReference, TensorFlowLogitsShortcut) {
  for (bool shortcut : {true, false}) {
    keras::Sequential m({keras::layers::Input({1}), keras::layers::Dense(1, "sigmoid")});
    m.compile({.optimizer = "sgd", .loss = "binary_crossentropy", .tf_logits_shortcut = shortcut});
    m.set_weights({Tensor::from_vector<float>({1.0f}, {1, 1}), Tensor::from_vector<float>({0.0f}, {1})});
    const Tensor x = Tensor::from_vector<float>({20.0f, -3.0f}, {2, 1}), y = Tensor::from_vector<float>({0, 1}, {2, 1});
    const double loss = m.evaluate(x, y, {.verbose = 0})[0];
    EXPECT_NEAR(loss, shortcut ? 11.524293899536133 : (15.942384719848633 + 3.048587322235107) / 2, 1e-4) << shortcut;
    EXPECT_NEAR(m.test_on_batch(x, y)[0], loss, 1e-6);
    auto h = m.fit(x, y, {.batch_size = 2, .verbose = 0, .shuffle = false});
    EXPECT_NEAR(h.history["loss"][0], loss, 1e-5);  // the step's loss, before the update
  }
}

TEST(KerasReference, EveryOtherKerasActivationMatches) {
  const Tensor x = Tensor::from_vector<float>({-3.0f, -1.5f, -0.5f, 0.0f, 0.3f, 1.0f, 2.5f, 7.0f}, {1, 8});
  const std::map<std::string, std::vector<double>> want = {
      {"celu", {-0.9502129554748535, -0.7768698334693909, -0.39346933364868164, 0.0, 0.30000001192092896, 1.0, 2.5, 7.0}},
      {"hard_shrink", {-3.0, -1.5, 0.0, 0.0, 0.0, 1.0, 2.5, 7.0}},
      {"hard_sigmoid", {0.0, 0.25, 0.4166666567325592, 0.5, 0.550000011920929, 0.6666666865348816, 0.9166666865348816, 1.0}},
      {"hard_silu", {-0.0, -0.375, -0.2083333283662796, 0.0, 0.16500000655651093, 0.6666666865348816, 2.2916667461395264, 7.0}},
      {"hard_tanh", {-1.0, -1.0, -0.5, 0.0, 0.30000001192092896, 1.0, 1.0, 1.0}},
      {"log_sigmoid", {-3.0485870838165283, -1.7014132738113403, -0.9740769267082214, -0.6931471824645996,
                       -0.5543552041053772, -0.3132616877555847, -0.07888974249362946, -0.0009114663698710501}},
      {"log_softmax", {-10.016397476196289, -8.516397476196289, -7.516397476196289, -7.016397476196289,
                       -6.716397285461426, -6.016397476196289, -4.516397476196289, -0.016397248953580856}},
      {"mish", {-0.14564748108386993, -0.29809972643852234, -0.22074377536773682, 0.0, 0.20800139009952545,
                0.8650984168052673, 2.4713923931121826, 6.999989032745361}},
      {"relu6", {0.0, 0.0, 0.0, 0.0, 0.30000001192092896, 1.0, 2.5, 6.0}},
      {"soft_shrink", {-2.5, -1.0, 0.0, 0.0, 0.0, 0.5, 2.0, 6.5}},
      {"sparse_plus", {0.0, 0.0, 0.0625, 0.25, 0.42249998450279236, 1.0, 2.5, 7.0}},
      {"sparse_sigmoid", {0.0, 0.0, 0.25, 0.5, 0.6499999761581421, 1.0, 1.0, 1.0}},
      {"squareplus", {0.30277562141418457, 0.5, 0.7807763814926147, 1.0, 1.1611874103546143, 1.6180340051651,
                      2.850780963897705, 7.140054702758789}},
      {"tanh_shrink", {-2.0049452781677246, -0.5948516726493835, -0.037882864475250244, 0.0, 0.008687376976013184,
                       0.23840582370758057, 1.5133856534957886, 6.000001907348633}},
      {"glu", {-1.72332763671875, -1.096587896347046, -0.46207091212272644, 0.0}},
  };
  for (const auto& [name, values] : want) {
    keras::layers::Activation layer(name);
    expect_near(layer.call(x, false).to_vector<float>(), values, 1e-5, name.c_str());
  }
  // In Dense too (applied after the fused product), trainable through the tape, and named in the config.
  osprey::random::set_seed(1);
  Tensor xs = osprey::random::uniform({32, 3}), ys = osprey::random::uniform({32, 1});
  keras::Sequential m({keras::layers::Input({3}), keras::layers::Dense(8, "mish"), keras::layers::Dense(1, "hard_tanh")});
  m.compile({.optimizer = "adam", .loss = "mse"});
  auto h = m.fit(xs, ys, {.epochs = 10, .batch_size = 8, .verbose = 0});
  EXPECT_LT(h.history["loss"].back(), h.history["loss"].front());
  EXPECT_NE(m.get_config().find("\"activation\": \"mish\""), std::string::npos);
  EXPECT_THROW(keras::layers::Dense(2, "no_such_activation"), ValueError);
}

TEST(KerasReference, LossReductionsWithAndWithoutSampleWeights) {
  const Tensor y = Tensor::from_vector<float>({1, 0, 1, 0}, {4, 1});
  const Tensor p = Tensor::from_vector<float>({0.9f, 0.2f, 0.3f, 0.6f}, {4, 1});
  const Tensor w = Tensor::from_vector<float>({1.0f, 2.0f, 0.5f, 0.0f}, {4});
  const std::vector<std::tuple<L::Reduction, double, double>> want = {
      {L::Reduction::sum_over_batch_size, 0.612191915512085, 0.2884085178375244},
      {L::Reduction::sum, 2.44876766204834, 1.1536340713500977},
      {L::Reduction::mean_with_sample_weight, 0.612191915512085, 0.3296097218990326}};
  for (const auto& [r, plain, weighted] : want) {
    L::BinaryCrossentropy bce;
    bce.set_reduction(r);
    EXPECT_NEAR(bce(y, p).item(), plain, 1e-6);
    EXPECT_NEAR(bce(y, p, w).item(), weighted, 1e-6);
  }
  L::BinaryCrossentropy none;
  none.set_reduction(L::Reduction::none);
  EXPECT_EQ(none(y, p).shape(), Shape({4}));
  keras::Sequential m({keras::layers::Input({1}), keras::layers::Dense(1, "sigmoid")});
  EXPECT_THROW(m.compile({.optimizer = "sgd", .loss = none}), ValueError);
}
