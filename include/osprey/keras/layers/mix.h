// Keras 3's augmentations that mix the images of a batch, MixUp and CutMix, RandAugment and AugMix, which chain
// others, and RandomElasticTransform
// (images only: their dict form with labels, boxes and masks is a data-pipeline use that Osprey's layers do not
// take).
#pragma once

#include <array>
#include <memory>

#include "osprey/keras/layers/color.h"
#include "osprey/keras/layers/preprocessing.h"

namespace osprey::keras::layers {

/// keras.layers.MixUp(alpha=0.2): in training, each image becomes w · image + (1 - w) · another image of the batch
/// (a random permutation of the batch), w drawn per image from Beta(alpha, alpha); the identity in evaluate and
/// predict. value_range is not used (the config has none).
class MixUp : public ColorAugmentation {
 public:
  explicit MixUp(double alpha = 0.2, ColorOptions options = {});
  OSPREY_KERAS_LAYER(MixUp)
  std::string class_name() const override { return "MixUp"; }
  std::string get_config() const override;
  /// The weights w, then the permutation (as float indices): two numbers an image.
  std::vector<float> get_random_transformation(int64_t batch) override;
  Tensor transform_images(const Tensor& images, const std::vector<float>& transformation) const override;
  double alpha() const { return alpha_; }

 private:
  double alpha_;
};

/// keras.layers.CutMix(factor=1.0): in training, a box of each image is replaced by the same box of another image
/// of the batch (a random permutation): alpha drawn once per batch from factor's range (one number f: (0, f)) plus
/// 1e-6, w per image from Beta(alpha, alpha), the box sqrt(1 - w) of the height and width at a uniform place (pixel
/// centres at x >= x0 and x < x1 taken); the identity in evaluate and predict.
class CutMix : public FactorColorAugmentation {
 public:
  explicit CutMix(ImageFactor factor = 1.0, ColorOptions options = {});
  OSPREY_KERAS_LAYER(CutMix)
  std::string class_name() const override { return "CutMix"; }
  std::string get_config() const override;
  /// The permutation, then the boxes' x0, x1, y0 and y1 (in pixels): five numbers an image.
  std::vector<float> get_random_transformation(int64_t batch) override;
  Tensor transform_images(const Tensor& images, const std::vector<float>& transformation) const override;
};

struct RandAugmentOptions {
  std::pair<double, double> value_range = {0.0, 255.0};
  int num_ops = 2;                          ///< operations applied one after another to the batch
  ImageFactor factor = 0.5;                 ///< the strength, in [0, 1]: one number f means (0, f)
  std::string interpolation = "bilinear";   ///< of the shear, translation and rotation ("nearest" or "bilinear")
  std::optional<int64_t> seed{};            ///< the choice of operations, and the color operations' draws
  std::string data_format = "channels_last";
  std::string name{};
  std::string dtype{};
};

/// keras.layers.RandAugment: in training, num_ops operations drawn per batch (uniformly, with repeats) from Keras's
/// eleven -- RandomShear, RandomTranslation, RandomRotation, RandomBrightness, RandomColorDegeneration,
/// RandomContrast, RandomSharpness, RandomPosterization(max(1, int(8 · upper))), Solarization, AutoContrast and
/// Equalization, each made with `factor`'s range as Keras makes them -- applied in turn; the identity in evaluate
/// and predict. Each application draws its own parameters (Keras draws each operation's once per batch, so an
/// operation drawn twice repeats them); the draws are Osprey's.
class RandAugment : public Layer {
 public:
  explicit RandAugment(RandAugmentOptions options = {});
  OSPREY_KERAS_LAYER(RandAugment)
  std::string class_name() const override { return "RandAugment"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  std::vector<std::pair<std::string, Layer*>> sublayers() override;
  /// The operations' indices into sublayers() for one batch (num_ops uniform draws).
  std::vector<int> draw_operations();
  const RandAugmentOptions& options() const { return options_; }
  std::pair<double, double> factor() const { return factor_; }

 private:
  void make_operations();
  RandAugmentOptions options_;
  std::pair<double, double> factor_;
  std::optional<random::Philox> generator_;
  std::vector<std::pair<std::string, std::shared_ptr<Layer>>> operations_;
};

struct AugMixOptions {
  std::pair<double, double> value_range = {0.0, 255.0};
  int num_chains = 3;                      ///< chains of operations, mixed by Dirichlet(alpha) weights
  int chain_depth = 3;                     ///< draws per chain, each an operation or none (so 0..chain_depth)
  ImageFactor factor = 0.3;                ///< the operations' strength, in [0, 1]: one number f means (0, f)
  double alpha = 1.0;                      ///< of the Dirichlet chain weights and the Beta weight of the original
  bool all_ops = true;                     ///< false: without brightness, color degeneration, contrast, sharpness
  std::string interpolation = "bilinear";
  std::optional<int64_t> seed{};           ///< the layer's own draws, and the color operations'
  std::string data_format = "channels_last";
  std::string name{};
  std::string dtype{};
};

/// keras.layers.AugMix: in training, num_chains chains of up to chain_depth operations (each draw one of Keras's
/// eleven -- seven without all_ops -- or none), the chains' images summed with Dirichlet(alpha) weights, then
/// m · images + (1 - m) · that with m drawn from Beta(alpha, alpha), clipped to value_range; one draw of every weight
/// and operation per batch; the identity in evaluate and predict. Each operation draws its own parameters; the
/// draws are Osprey's.
class AugMix : public Layer {
 public:
  explicit AugMix(AugMixOptions options = {});
  OSPREY_KERAS_LAYER(AugMix)
  std::string class_name() const override { return "AugMix"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  std::vector<std::pair<std::string, Layer*>> sublayers() override;
  /// One batch's draws: the chains' weights (summing to 1), the original's weight m, and each chain's operations
  /// (indices into sublayers()).
  struct Draw {
    std::vector<double> chain_weights;
    double original_weight = 0.0;
    std::vector<std::vector<int>> chains;
  };
  Draw draw();
  const AugMixOptions& options() const { return options_; }
  std::pair<double, double> factor() const { return factor_; }

 private:
  AugMixOptions options_;
  std::pair<double, double> factor_;
  std::optional<random::Philox> generator_;
  std::vector<std::pair<std::string, std::shared_ptr<Layer>>> operations_;
};

struct ElasticOptions {
  ImageFactor factor = 1.0;  ///< the probability range each image is transformed with: one number f means (0, f)
  ImageFactor scale = 1.0;   ///< the distortion's range, in [0, 1]: one number f means (0, f)
  std::string interpolation = "bilinear";  ///< or "nearest"
  std::string fill_mode = "reflect";       ///< "constant", "nearest", "wrap", "mirror" or "reflect"
  double fill_value = 0.0;
  std::pair<double, double> value_range = {0.0, 255.0};
  std::optional<int64_t> seed{};
  std::string data_format = "channels_last";
  std::string name{};
  std::string dtype{};
};

/// keras.layers.RandomElasticTransform: in training, each image transformed when a uniform draw falls below a
/// probability drawn per image from `factor`'s range, by keras::ops::elastic_transform with one distortion d drawn
/// per batch from `scale`'s range (alpha = max(height, width) · 0.1 d, sigma = min(height, width) · 0.05 d) and one
/// noise field; then the batch clipped to value_range (all of it, as Keras); the identity in evaluate and predict,
/// and when either range's upper end is 0. The draws are Osprey's.
class RandomElasticTransform : public Layer {
 public:
  explicit RandomElasticTransform(ElasticOptions options = {});
  OSPREY_KERAS_LAYER(RandomElasticTransform)
  std::string class_name() const override { return "RandomElasticTransform"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  /// One batch's draws: which images change, the distortion, and the (batch, height, width) noise.
  struct Draw {
    std::vector<bool> apply;
    double distortion = 0.0;
    Tensor noise;
  };
  Draw draw(int64_t batch, int64_t height, int64_t width);
  /// The images changed as a draw says (Keras's transform_images in training).
  Tensor transform_images(const Tensor& images, const Draw& draw) const;
  const ElasticOptions& options() const { return options_; }
  std::pair<double, double> factor() const { return factor_; }
  std::pair<double, double> scale() const { return scale_; }

 private:
  double uniform();
  ElasticOptions options_;
  std::pair<double, double> factor_, scale_;
  std::optional<random::Philox> generator_;
};

}  // namespace osprey::keras::layers
