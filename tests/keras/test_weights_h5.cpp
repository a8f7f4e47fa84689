// Keras 3's .weights.h5 files: Osprey reads the files Keras writes (weights and optimizer state, so training
// resumes exactly where Keras stopped) and writes files of the same layout.
// tests/data/keras_*_step1.weights.h5 and kKerasStep2 come from tests/keras/keras_weights_h5_reference.py (Keras 3.15):
// the model after one train_on_batch, saved, and its weights after a second train_on_batch.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "osprey/errors.h"
#include "osprey/keras.h"
#include "test_util.h"

using namespace osprey;
namespace layers = osprey::keras::layers;
namespace optimizers = osprey::keras::optimizers;
using keras::Model;
using keras::Sequential;
using ::testing::HasSubstr;
using osprey::testing::data_file;

namespace {
std::string temp_path(const std::string& name) { return osprey::testing::temp_path("weights_h5_test", name); }
using osprey::testing::error_of;
}  // namespace

namespace {

const std::map<std::string, std::vector<double>> kKerasStep2 = {
    {"adam",
     {0.9579952955245972, 1.089992642402649, 0.9111407995223999, 0.039264779537916183, 0.09998989850282669, -0.08737005293369293,
     2.1276166080497205e-05, 0.0007681745919398963, 0.001446453738026321, 0.988789975643158, 0.98899245262146, 0.9895080924034119,
     -0.756802499294281, -1.0953994989395142, -0.7007103562355042, -0.08284386247396469, 0.49411335587501526, 0.9573833346366882,
     1.0328747034072876, 0.599967360496521, -0.17432677745819092, -0.7083059549331665, -0.9038921594619751, -0.6740800142288208,
     -0.9589242935180664, -0.46216076612472534, 0.02035287767648697, 0.8120417594909668, -0.279415488243103, 0.40484991669654846,
     0.8127346038818359, 1.068363070487976, 0.4916180968284607, 0.023410089313983917, -0.7932376265525818, -1.0668926239013672,
     0.5738375782966614, 0.9051210880279541}},
    {"rmsprop",
     {0.9654285907745361, 1.065331220626831, 0.9359304308891296, 0.03334739804267883, 0.07907778024673462, -0.0652293786406517,
     2.1276166080497205e-05, 0.0007681745919398963, 0.001446453738026321, 0.988789975643158, 0.98899245262146, 0.9895080924034119,
     -0.756802499294281, -1.0822668075561523, -0.720132052898407, -0.10849300771951675, 0.49411335587501526, 0.9567251205444336,
     1.0067614316940308, 0.5742668509483337, -0.17432677745819092, -0.720718264579773, -0.930691659450531, -0.6986073851585388,
     -0.9589242935180664, -0.46799951791763306, 0.04709841310977936, 0.7908127903938293, -0.279415488243103, 0.40484991669654846,
     0.8381779193878174, 1.0420180559158325, 0.5187479853630066, -0.0030435435473918915, -0.7676147818565369, -1.0746711492538452,
     0.5958345532417297, 0.9264891147613525}},
    {"nadam",
     {0.9770017862319946, 1.033757209777832, 0.9666861891746521, 0.022641781717538834, 0.038639187812805176, -0.034005023539066315,
     2.1276166080497205e-05, 0.0007681745919398963, 0.001446453738026321, 0.988789975643158, 0.98899245262146, 0.9895080924034119,
     -0.756802499294281, -1.0401304960250854, -0.7429348230361938, -0.14601843059062958, 0.49411335587501526, 0.9420835971832275,
     0.9745348691940308, 0.5370730757713318, -0.17432677745819092, -0.7391663789749146, -0.9652560353279114, -0.7288827300071716,
     -0.9589242935180664, -0.5089499354362488, 0.08175809681415558, 0.7619218826293945, -0.279415488243103, 0.40484991669654846,
     0.8666680455207825, 1.0055091381072998, 0.551223635673523, -0.039586685597896576, -0.7343000173568726, -1.035500168800354,
     0.6243473291397095, 0.9552853107452393}},
    {"sgd",
     {0.9760439991950989, 1.0984675884246826, 0.9013004302978516, 0.01633143424987793, 0.009281833656132221, -0.03098931908607483,
     2.1276166080497205e-05, 0.0007681745919398963, 0.001446453738026321, 0.988789975643158, 0.98899245262146, 0.9895080924034119,
     -0.756802499294281, -1.0196118354797363, -0.7553904056549072, 0.004450798034667969, 0.49411335587501526, 0.9422674775123596,
     0.9793257713317871, 0.616073727607727, -0.17432677745819092, -0.7410367727279663, -0.946182131767273, -0.7306197881698608,
     -0.9589242935180664, -0.5462749004364014, 0.06777668744325638, 0.829330563545227, -0.279415488243103, 0.40484991669654846,
     0.8831946849822998, 0.9851730465888977, 0.5278065800666809, -0.03592391684651375, -0.7964593172073364, -1.0057791471481323,
     0.5900086760520935, 0.9349122047424316}},
};

// The reference script's batch: x[i][j] = sin(0.3 (3i + j)), y[i][j] = cos(0.5 (2i + j)), 8 rows.
Tensor batch_x() {
  std::vector<float> v;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 3; ++j) v.push_back(static_cast<float>(std::sin(0.3 * (3 * i + j))));
  return Tensor::from_vector(v, {8, 3});
}
Tensor batch_y() {
  std::vector<float> v;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 2; ++j) v.push_back(static_cast<float>(std::cos(0.5 * (2 * i + j))));
  return Tensor::from_vector(v, {8, 2});
}

Sequential model(keras::OptimizerRef opt) {
  Sequential m({layers::Input({3}), layers::BatchNormalization(), layers::Dense(4, "relu"), layers::Dense(2)});
  m.compile({.optimizer = std::move(opt), .loss = "mse"});
  return m;
}

keras::OptimizerRef optimizer(const std::string& name) {
  if (name == "adam") return optimizers::Adam({.learning_rate = 0.05});
  if (name == "rmsprop") return optimizers::RMSprop({.learning_rate = 0.01, .momentum = 0.5, .centered = true});
  if (name == "nadam") return optimizers::Nadam({.learning_rate = 0.02});
  return optimizers::SGD({.learning_rate = 0.1, .momentum = 0.9});
}

std::vector<float> flat_weights(const Model& m) {
  std::vector<float> out;
  for (const Tensor& w : m.get_weights()) {
    auto v = w.to_vector<float>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

}  // namespace

// Loading Keras's file restores the weights and the optimizer (iterations, slots, Nadam's u_product): one more
// step then lands where Keras's second step landed.
TEST(WeightsH5, ResumesTrainingFromAKerasFile) {
  SKIP_WITHOUT_HDF5();
  for (const auto& [name, expected] : kKerasStep2) {
    SCOPED_TRACE(name);
    Sequential m = model(optimizer(name));
    m.load_weights(data_file("keras_" + name + "_step1.weights.h5"));
    EXPECT_EQ(m.optimizer()->iterations(), 1);
    m.train_on_batch(batch_x(), batch_y());
    const auto got = flat_weights(m);
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 2e-5 * (1 + std::abs(expected[i]))) << i;
  }
}

// Osprey's file holds the same state: a model loaded from it continues bit for bit like the one that saved it.
TEST(WeightsH5, RoundTripContinuesIdentically) {
  SKIP_WITHOUT_HDF5();
  for (const std::string name : {"adam", "rmsprop", "nadam", "sgd"}) {
    SCOPED_TRACE(name);
    Sequential a = model(optimizer(name));
    a.train_on_batch(batch_x(), batch_y());
    a.train_on_batch(batch_x(), batch_y());
    const std::string path = temp_path(name + ".weights.h5");
    a.save_weights(path);
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
    Sequential b = model(optimizer(name));
    b.load_weights(path);
    EXPECT_EQ(flat_weights(a), flat_weights(b));
    EXPECT_EQ(b.optimizer()->iterations(), 2);
    a.train_on_batch(batch_x(), batch_y());
    b.train_on_batch(batch_x(), batch_y());
    EXPECT_EQ(flat_weights(a), flat_weights(b));
  }
}

// Keras's layout: groups keyed by snake_case class names, numbered within the model; an uncompiled model loads
// the layers only.
TEST(WeightsH5, KeysFollowKerasAndOptimizerIsOptional) {
  SKIP_WITHOUT_HDF5();
  Sequential m({layers::Input({3}), layers::Dense(4), layers::LeakyReLU(), layers::Dense(2, "linear", {.name = "out"})});
  const std::string path = temp_path("uncompiled.weights.h5");
  m.save_weights(path);
  Sequential n({layers::Input({3}), layers::Dense(4), layers::LeakyReLU(), layers::Dense(2)});
  n.load_weights(path);  // different layer names, same classes in the same order
  EXPECT_EQ(flat_weights(m), flat_weights(n));
  // A Keras file into an uncompiled model: weights only.
  Sequential plain({layers::Input({3}), layers::BatchNormalization(), layers::Dense(4, "relu"), layers::Dense(2)});
  plain.load_weights(data_file("keras_adam_step1.weights.h5"));
  Sequential compiled = model(optimizer("adam"));
  compiled.load_weights(data_file("keras_adam_step1.weights.h5"));
  EXPECT_EQ(flat_weights(plain), flat_weights(compiled));
}

TEST(WeightsH5, BadFilesAreTypedErrorsAndLeaveTheModelUnchanged) {
  SKIP_WITHOUT_HDF5();
  Sequential m = model(optimizer("adam"));
  const auto before = flat_weights(m);
  EXPECT_THROW(m.load_weights(temp_path("missing.weights.h5")), NotFoundError);
  {
    std::ofstream(temp_path("text.weights.h5")) << "not hdf5";
  }
  EXPECT_THAT(error_of([&] { m.load_weights(temp_path("text.weights.h5")); }), HasSubstr("is not an HDF5 file"));
  EXPECT_THAT(error_of([&] { m.save_weights(temp_path("w.h5")); }),
              HasSubstr("The filename must end in `.weights.h5`"));
  // The last layer is wider than the file's: nothing is assigned, even the layers that did match.
  Sequential wider({layers::Input({3}), layers::BatchNormalization(), layers::Dense(4, "relu"), layers::Dense(3)});
  const auto wider_before = flat_weights(wider);
  EXPECT_THAT(error_of([&] { wider.load_weights(data_file("keras_adam_step1.weights.h5")); }),
              HasSubstr("/kernel' is (4, 3), but"));
  EXPECT_EQ(flat_weights(wider), wider_before);
  // A layer with another number of variables: Keras's message.
  Sequential no_bias({layers::Input({3}), layers::BatchNormalization(), layers::Dense(4, "relu", {.use_bias = false}),
                      layers::Dense(2)});
  EXPECT_THAT(error_of([&] { no_bias.load_weights(data_file("keras_adam_step1.weights.h5")); }),
              HasSubstr("expected 1 variables, but received 2 variables during loading. Expected: ['kernel']"));
  EXPECT_EQ(flat_weights(m), before);
}

TEST(WeightsH5, ModelCheckpointWritesKerasWeightsAndModelFiles) {
  SKIP_WITHOUT_HDF5();
  Sequential m = model(optimizer("sgd"));
  const std::string path = temp_path("ckpt-{epoch:02d}.weights.h5");
  const std::string model_path = temp_path("model-{epoch}.keras");
  m.fit(batch_x(), batch_y(),
        {.epochs = 2, .batch_size = 4, .verbose = 0,
         .callbacks = {keras::ModelCheckpoint(path), keras::ModelCheckpoint(model_path)}});
  auto whole_ptr = keras::models::load_model(temp_path("model-2.keras"));
  Model& whole = *whole_ptr;  // the whole model, compiled
  EXPECT_EQ(flat_weights(m), flat_weights(whole));
  EXPECT_EQ(whole.optimizer()->iterations(), 4);
  ASSERT_TRUE(std::filesystem::exists(temp_path("ckpt-02.weights.h5")));
  Sequential n = model(optimizer("sgd"));
  n.load_weights(temp_path("ckpt-02.weights.h5"));
  EXPECT_EQ(flat_weights(m), flat_weights(n));
  EXPECT_EQ(n.optimizer()->iterations(), 4);
}
