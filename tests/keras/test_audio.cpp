// keras.ops.stft / istft and Keras 3's audio layers (STFTSpectrogram, MelSpectrogram) against Keras 3.15
// (tests/keras/keras_audio_reference.py regenerates tests/data/keras_audio.json): values, gradients, every
// STFTSpectrogram mode and layout, its kernels as initialised, the mel filter bank, configs both ways, rejections.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "osprey/keras/ops.h"

#include "keras/reference_json.h"
#include "keras/saving/serialization.h"
#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/random.h"

using namespace osprey;
using namespace osprey::keras;
using nlohmann::json;
using osprey::testing::expect_close;
using osprey::testing::tensor_of;
namespace kops = osprey::keras::ops;

namespace {

const json& audio_reference() {
  static const json ref = osprey::testing::read_reference("keras_audio.json");
  return ref;
}

std::vector<int64_t> dims_of(const Tensor& t) { return {t.shape().dims().begin(), t.shape().dims().end()}; }

std::vector<int64_t> shape_of(const json& nested) {
  std::vector<int64_t> d;
  const json* j = &nested;
  while (j->is_array()) {
    d.push_back(static_cast<int64_t>(j->size()));
    if (j->empty()) break;
    j = &(*j)[0];
  }
  return d;
}

kops::StftWindow window_of(const json& w) {
  if (w.is_null()) return nullptr;
  if (w.is_string()) return w.get<std::string>();
  return tensor_of(w);
}

void expect_config(const Layer& layer, const json& want, const std::string& class_name) {
  const json got = json::parse(layer.get_config());
  for (const auto& [key, value] : want.items()) EXPECT_EQ(got.at(key), value) << class_name << " " << key;
  const auto back = serialization::layer_from_object(json{{"class_name", class_name}, {"config", want}});
  EXPECT_EQ(json::parse(back->get_config()), got) << class_name;
}

layers::STFTSpectrogramOptions stft_options(const json& kw) {
  layers::STFTSpectrogramOptions o;
  if (kw.contains("mode")) o.mode = kw["mode"];
  if (kw.contains("frame_length")) o.frame_length = kw["frame_length"];
  if (kw.contains("frame_step")) o.frame_step = kw["frame_step"].get<int64_t>();
  if (kw.contains("fft_length")) o.fft_length = kw["fft_length"].get<int64_t>();
  if (kw.contains("window")) o.window = kw["window"].is_null() ? std::nullopt : std::optional(kw["window"].get<std::string>());
  if (kw.contains("periodic")) o.periodic = kw["periodic"];
  if (kw.contains("scaling")) o.scaling = kw["scaling"].is_null() ? std::nullopt : std::optional(kw["scaling"].get<std::string>());
  if (kw.contains("padding")) o.padding = kw["padding"];
  if (kw.contains("expand_dims")) o.expand_dims = kw["expand_dims"];
  if (kw.contains("data_format")) o.data_format = kw["data_format"];
  return o;
}

}  // namespace

TEST(AudioOps, StftMatchesKerasWithItsGradient) {
  const json& ref = audio_reference().at("stft");
  const Tensor x = tensor_of(ref.at("x"));
  for (const json& c : ref.at("cases")) {
    const std::string what = "stft " + c.at("window").dump().substr(0, 12) + " " + std::to_string(c.at("fft_length").get<int>());
    const int64_t len = c.at("sequence_length"), stride = c.at("sequence_stride"), fft = c.at("fft_length");
    const bool center = c.at("center");
    GradientTape tape;
    tape.watch(x);
    const auto [re, im] = kops::stft(x, len, stride, fft, window_of(c.at("window")), center);
    EXPECT_EQ(dims_of(re), shape_of(c.at("real"))) << what;
    expect_close(re, c.at("real"), 2e-5, what + " real");
    expect_close(im, c.at("imag"), 2e-5, what + " imag");
    const Tensor loss = osprey::ops::add(osprey::ops::reduce_sum(osprey::ops::mul(re, tensor_of(c.at("w_real")))),
                                 osprey::ops::reduce_sum(osprey::ops::mul(im, tensor_of(c.at("w_imag")))));
    expect_close(tape.gradient(loss, std::vector<Tensor>{x})[0], c.at("grad"), 2e-5, what + " gradient");
    // float64 signals stay float64 (Keras's TensorFlow backend takes both).
    const auto [re64, im64] = kops::stft(x.cast(DType::float64), len, stride, fft, window_of(c.at("window")), center);
    EXPECT_EQ(re64.dtype(), DType::float64) << what;
    expect_close(im64.cast(DType::float32), c.at("imag"), 2e-5, what + " float64");
  }
}

TEST(AudioOps, IstftInvertsAndOverlapAddsAsKeras) {
  const json& ref = audio_reference().at("stft");
  for (const json& c : ref.at("cases")) {
    const std::string what = "istft " + c.at("window").dump().substr(0, 12) + " " + std::to_string(c.at("fft_length").get<int>());
    const int64_t len = c.at("sequence_length"), stride = c.at("sequence_stride"), fft = c.at("fft_length");
    const bool center = c.at("center");
    const auto w = window_of(c.at("window"));
    const std::pair<Tensor, Tensor> spec{tensor_of(c.at("real")), tensor_of(c.at("imag"))};
    const Tensor back = kops::istft(spec, len, stride, fft, std::nullopt, w, center);
    EXPECT_EQ(dims_of(back), shape_of(c.at("istft"))) << what;
    expect_close(back, c.at("istft"), 5e-5, what);
    const Tensor cut = kops::istft(spec, len, stride, fft, 250, w, center);
    EXPECT_EQ(dims_of(cut), shape_of(c.at("istft_250"))) << what;
    expect_close(cut, c.at("istft_250"), 5e-5, what + " length 250");
    // Values that are no signal's STFT, and the gradient through the overlap-add.
    const Tensor re = tensor_of(c.at("other_real"));
    GradientTape tape;
    tape.watch(re);
    const Tensor other = kops::istft({re, tensor_of(c.at("other_imag"))}, len, stride, fft, std::nullopt, w, center);
    expect_close(other, c.at("other"), 5e-5, what + " other");
    const Tensor loss = osprey::ops::reduce_sum(osprey::ops::mul(other, tensor_of(c.at("w_other"))));
    expect_close(tape.gradient(loss, std::vector<Tensor>{re})[0], c.at("other_grad"), 5e-5, what + " gradient");
  }
}

TEST(AudioOps, StftRejectsBadArguments) {
  const Tensor x = Tensor::zeros(Shape({2, 100}));
  EXPECT_THROW(kops::stft(x, 64, 16, 32), ValueError);                         // fft shorter than the sequence
  EXPECT_THROW(kops::stft(x, 32, 0, 32), ValueError);                          // stride 0
  EXPECT_THROW(kops::stft(x, 32, 8, 32, "kaiser"), ValueError);                // not hann/hamming
  EXPECT_THROW(kops::stft(x, 32, 8, 32, Tensor::ones(Shape({31}))), ValueError);  // window of the wrong length
  EXPECT_THROW(kops::stft(x, 32, 8, (int64_t{1} << 24) + 2), ValueError);   // above Osprey's largest transform
  EXPECT_THROW(kops::stft(x, 128, 8, 256), ValueError);                        // too short to centre
  EXPECT_THROW(kops::stft(x.cast(DType::int32), 32, 8, 32), InvalidArgumentError);
  const Tensor re = Tensor::zeros(Shape({2, 5, 17}));
  EXPECT_THROW(kops::istft({re, Tensor::zeros(Shape({2, 5, 16}))}, 32, 8, 32), ValueError);
  EXPECT_THROW(kops::istft({re, re}, 32, 8, 64), ValueError);  // 17 bins are not 64 / 2 + 1
}

TEST(AudioLayers, STFTSpectrogramMatchesKerasInEveryMode) {
  for (const json& c : audio_reference().at("stft_spectrogram")) {
    const std::string what = c.at("kwargs").dump();
    layers::STFTSpectrogram layer(stft_options(c.at("kwargs")));
    const Tensor x = tensor_of(c.at("x"));
    GradientTape tape(true);
    tape.watch(x);
    const Tensor y = layer(x);
    // The kernels as Keras's STFT initializer makes them.
    const auto vars = layer.variables();
    ASSERT_EQ(vars.size(), c.at("weights").size()) << what;
    for (Variable* v : vars) {
      const std::string short_name = v->path().substr(v->path().rfind('/') + 1);
      expect_close(v->value(), c.at("weights").at(short_name), 2e-6, what + " " + short_name);
    }
    EXPECT_EQ(dims_of(y), shape_of(c.at("y"))) << what;
    const double tol = c.at("kwargs").at("mode") == "angle" ? 5e-4 : 5e-5;
    expect_close(y, c.at("y"), tol, what);
    const auto out = c.at("output_shape");
    const Shape want(std::vector<int64_t>(out.begin() + 1, out.end()));
    EXPECT_EQ(layer.output_shape(), want) << what;
    const Tensor loss = osprey::ops::reduce_sum(osprey::ops::mul(y, tensor_of(c.at("w"))));
    std::vector<Tensor> sources{x};
    auto grads = tape.gradient(loss, sources);
    const auto weights = layer.trainable_variables();
    const auto wgrads = tape.gradient(loss, weights);
    grads.insert(grads.end(), wgrads.begin(), wgrads.end());
    ASSERT_EQ(grads.size(), c.at("grads").size()) << what;
    if (c.at("kwargs").at("mode") != "angle") {  // atan2's gradient near im = re = 0 is ill-conditioned
      for (std::size_t i = 0; i < grads.size(); ++i) {
        expect_close(grads[i], c.at("grads")[i], 2e-4, what + " gradient " + std::to_string(i));
      }
    }
    expect_config(layer, c.at("config"), "STFTSpectrogram");
  }
  const json& rejects = audio_reference().at("stft_spectrogram_rejects");
  for (const auto& [k, v] : rejects.items()) EXPECT_TRUE(v.get<bool>()) << k;
  EXPECT_THROW(layers::STFTSpectrogram({.frame_length = 8, .frame_step = 9}), ValueError);
  EXPECT_THROW(layers::STFTSpectrogram({.frame_length = 16, .fft_length = 8}), ValueError);
  EXPECT_THROW(layers::STFTSpectrogram({.mode = "power"}), ValueError);
  EXPECT_THROW(layers::STFTSpectrogram({.scaling = "l2"}), ValueError);
  EXPECT_THROW(layers::STFTSpectrogram({.padding = "causal"}), ValueError);
  EXPECT_THROW(layers::STFTSpectrogram({.window = "nonesuch"}), ValueError);
  layers::STFTSpectrogram short_frames({.frame_length = 64});
  EXPECT_THROW(short_frames(Tensor::zeros(Shape({1, 32, 1}))), ValueError);  // no whole frame in 32 samples
  layers::STFTSpectrogram rank({.frame_length = 8});
  EXPECT_THROW(rank(Tensor::zeros(Shape({1, 32}))), ValueError);
}

TEST(AudioLayers, MelSpectrogramMatchesKeras) {
  const json& ref = audio_reference().at("mel_spectrogram");
  const Tensor x = tensor_of(ref.at("x"));
  for (const json& c : ref.at("cases")) {
    const json& kw = c.at("kwargs");
    const std::string what = kw.dump();
    layers::MelSpectrogramOptions o;
    o.fft_length = kw.at("fft_length");
    o.sequence_stride = kw.at("sequence_stride");
    if (kw.contains("sequence_length")) o.sequence_length = kw["sequence_length"].get<int64_t>();
    if (kw.contains("window")) o.window = kw["window"].get<std::string>();
    o.num_mel_bins = kw.at("num_mel_bins");
    o.sampling_rate = kw.at("sampling_rate");
    if (kw.contains("min_freq")) o.min_freq = kw["min_freq"];
    if (kw.contains("max_freq")) o.max_freq = kw["max_freq"].get<double>();
    if (kw.contains("power_to_db")) o.power_to_db = kw["power_to_db"];
    if (kw.contains("top_db")) o.top_db = kw["top_db"];
    if (kw.contains("mag_exp")) o.mag_exp = kw["mag_exp"];
    if (kw.contains("min_power")) o.min_power = kw["min_power"];
    if (kw.contains("ref_power")) o.ref_power = kw["ref_power"];
    const json& config = c.at("config");
    const Tensor matrix = layers::MelSpectrogram::linear_to_mel_weight_matrix(
        o.num_mel_bins, o.fft_length / 2 + 1, static_cast<double>(o.sampling_rate), o.min_freq,
        config.at("max_freq").get<double>());
    expect_close(matrix, c.at("matrix"), 1e-5, what + " matrix");
    o.name = config.at("name");
    layers::MelSpectrogram layer(o);
    const Tensor y = layer(x);
    EXPECT_EQ(dims_of(y), shape_of(c.at("y"))) << what;
    // dB values are 10·log10 of float32 sums: within 1e-3 dB, linear ones within 1e-4 relative.
    expect_close(y, c.at("y"), o.power_to_db ? 1e-4 : 1e-4, what);
    const auto out = c.at("output_shape");
    EXPECT_EQ(layer.output_shape(), Shape(std::vector<int64_t>(out.begin() + 1, out.end()))) << what;
    o.name = "single";
    layers::MelSpectrogram single(o);
    const Tensor one = single(osprey::ops::reshape(osprey::ops::slice_axis(x, 0, 0, 1), Shape({x.shape()[1]})));
    EXPECT_EQ(dims_of(one), shape_of(c.at("single"))) << what;
    expect_close(one, c.at("single"), 1e-4, what + " one signal");
    expect_config(layer, config, "MelSpectrogram");
  }
  EXPECT_TRUE(audio_reference().at("mel_rejects").at("fft_shorter_than_sequence").get<bool>());
  EXPECT_THROW(layers::MelSpectrogram({.fft_length = 64, .sequence_length = 100}), ValueError);
  EXPECT_THROW(layers::MelSpectrogram({.window = "blackman"}), ValueError);
  layers::MelSpectrogram mel({.fft_length = 256, .sequence_stride = 64});
  EXPECT_THROW(mel(Tensor::zeros(Shape({2, 100}))), ValueError);  // too short to centre
}

TEST(AudioLayers, SpectrogramModelsTrainSymbolically) {
  auto wave = Input({400});
  auto mel = layers::MelSpectrogram({.fft_length = 64, .sequence_stride = 32, .num_mel_bins = 10})(wave);
  EXPECT_EQ(mel.shape(), Shape({10, 13}));
  auto stft = std::make_shared<layers::STFTSpectrogram>(layers::STFTSpectrogramOptions{.frame_length = 32, .frame_step = 16});
  auto spec = (*stft)(layers::Reshape({400, 1})(wave));
  EXPECT_EQ(spec.shape(), Shape({24, 17}));
  auto h = layers::Concatenate()({layers::Flatten()(mel), layers::Flatten()(spec)});
  Model model(wave, layers::Dense(1)(h));
  model.compile({.optimizer = optimizers::Adam(), .loss = "mse"});
  const Tensor x = random::normal(Shape({8, 400})), y = Tensor::zeros(Shape({8, 1}));
  const auto before = stft->variables()[0]->value().to_vector<float>();
  const auto history = model.fit(x, y, {.epochs = 2, .batch_size = 4, .verbose = 0});
  EXPECT_EQ(history.history.at("loss").size(), 2u);
  // The DFT kernels train with the rest, as in Keras.
  EXPECT_NE(stft->variables()[0]->value().to_vector<float>(), before);
}
