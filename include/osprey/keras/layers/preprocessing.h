// Preprocessing layers that Keras users put in models: keras.layers.Rescaling, Resizing, CenterCrop, the random
// image augmentations, Normalization, CategoryEncoding, Discretization.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "osprey/keras/layers/layer.h"

namespace osprey::keras::utils {
class PyDataset;
}  // namespace osprey::keras::utils

namespace osprey::keras::layers {

/// inputs · scale + offset (keras.layers.Rescaling): `layers::Rescaling(1.0 / 255)`.
class Rescaling : public Layer {
 public:
  explicit Rescaling(double scale, double offset = 0.0, std::string name = "");
  OSPREY_KERAS_LAYER(Rescaling)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "Rescaling"; }
  bool supports_masking() const override { return true; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override { return finish_build(input_shape); }
  Tensor call(const Tensor& inputs, bool training) override;

 private:
  double scale_, offset_;
};

struct ResizingOptions {
  /// "bilinear", "nearest", "bicubic", "area", "lanczos3" or "lanczos5" (tf.image.resize's methods)
  std::string interpolation = "bilinear";
  bool crop_to_aspect_ratio = false;       ///< first crop the largest centred window of the target's aspect ratio
  std::string data_format = "channels_last";
  std::string name{};
  bool pad_to_aspect_ratio = false;  ///< or first pad evenly on both sides to the target's aspect ratio, with
  double fill_value = 0.0;           ///< this value (Keras's fill_mode "constant", its only one)
  std::string dtype{};  ///< Keras's dtype: a policy name ("float32", "mixed_bfloat16"); empty: the global policy
  bool antialias = false;  ///< widen the kernel by the downscaling factor (not for "nearest" and "area")
};

/// Images (batch, height, width, channels) resized as tf.image.resize does (keras.layers.Resizing):
/// `layers::Resizing(64, 64)`.
class Resizing : public Layer {
 public:
  Resizing(int64_t height, int64_t width, ResizingOptions options = {});
  OSPREY_KERAS_LAYER(Resizing)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "Resizing"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;

 private:
  int64_t height_, width_;
  ResizingOptions options_;
};

/// The centred height x width window of each image (keras.layers.CenterCrop); an image smaller than that along an
/// axis is first cropped to the target's aspect ratio and resized (Keras's smart_resize).
class CenterCrop : public Layer {
 public:
  CenterCrop(int64_t height, int64_t width, std::string data_format = "channels_last", std::string name = "");
  OSPREY_KERAS_LAYER(CenterCrop)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "CenterCrop"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;

 private:
  int64_t height_, width_;
  std::string data_format_;
};

}  // namespace osprey::keras::layers

namespace osprey::keras::layers {

/// A range of factors as Keras takes them: one value f for (-f, f), or (lower, upper).
struct FactorRange {
  FactorRange(double f) : lower(-f), upper(f) {}
  FactorRange(double lo, double hi) : lower(lo), upper(hi) {}
  double lower, upper;
};

/// The options the random image layers share (Keras's fill_mode "reflect", "wrap", "constant", "nearest").
struct AugmentOptions {
  std::string fill_mode = "reflect";
  std::string interpolation = "bilinear";  ///< or "nearest"
  double fill_value = 0.0;                 ///< with fill_mode "constant"
  std::string data_format = "channels_last";
  std::string name{};
  std::string dtype{};  ///< Keras's dtype: a policy name ("float32", "mixed_bfloat16"); empty: the global policy
};

/// Keras's random spatial augmentations (RandomRotation, RandomTranslation, RandomZoom, RandomFlip) in training
/// (fit, or a call with training=true); the identity in evaluate and predict. Each sample gets its own transform,
/// drawn from Osprey's global generator (keras::utils::set_random_seed makes them repeat; Keras's own seed does
/// not give Keras's draws), applied by osprey::ops::affine_transform as TensorFlow applies it. No gradient flows through
/// them (as in TensorFlow): put them at the front of a model.
class RandomAffine : public Layer {
 public:
  enum class Kind { rotation, translation, zoom, flip, shear, perspective };
  RandomAffine(Kind kind, FactorRange a, std::optional<FactorRange> b, std::string flip_mode, AugmentOptions options);
  std::string class_name() const override;
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  /// The (first) factor range as parsed.
  FactorRange factor_range() const { return a_; }

 private:
  Kind kind_;
  FactorRange a_;                 // rotation: the angle's fraction of a turn; translation / zoom: height
  std::optional<FactorRange> b_;  // translation / zoom: width (zoom: none keeps the aspect ratio)
  std::string flip_mode_;
  AugmentOptions options_;
};

/// keras.layers.RandomRotation(factor): angles uniform in [lower, upper] · 360°.
class RandomRotation : public RandomAffine {
 public:
  explicit RandomRotation(FactorRange factor, AugmentOptions options = {})
      : RandomAffine(Kind::rotation, factor, std::nullopt, "", std::move(options)) {}
  OSPREY_KERAS_LAYER(RandomRotation)
};
/// keras.layers.RandomTranslation(height_factor, width_factor): shifts by fractions of the height and width.
class RandomTranslation : public RandomAffine {
 public:
  RandomTranslation(FactorRange height_factor, FactorRange width_factor, AugmentOptions options = {})
      : RandomAffine(Kind::translation, height_factor, width_factor, "", std::move(options)) {}
  OSPREY_KERAS_LAYER(RandomTranslation)
};
/// keras.layers.RandomZoom(height_factor, width_factor=None): positive factors zoom out, negative ones in.
class RandomZoom : public RandomAffine {
 public:
  explicit RandomZoom(FactorRange height_factor, std::optional<FactorRange> width_factor = std::nullopt,
                      AugmentOptions options = {})
      : RandomAffine(Kind::zoom, height_factor, width_factor, "", std::move(options)) {}
  OSPREY_KERAS_LAYER(RandomZoom)
};
/// keras.layers.RandomShear(x_factor, y_factor=0): each sample sheared by [[1, sx, 0], [sy, 1, 0]] about the
/// top-left corner (Keras 3.15's matrix), sx and sy drawn from their ranges (one number f: (-f, f); a pair within
/// [0, 1]) and both negated for about half of the samples. A file's symmetric pair (-f, f), which Keras 3.15
/// writes for one number but cannot read back, loads here.
class RandomShear : public RandomAffine {
 public:
  explicit RandomShear(FactorRange x_factor, FactorRange y_factor = 0.0, AugmentOptions options = {})
      : RandomAffine(Kind::shear, x_factor, y_factor, "", std::move(options)) {}
  OSPREY_KERAS_LAYER(RandomShear)
};
/// keras.layers.RandomPerspective(factor=1.0, scale=1.0): each sample, when a uniform draw falls below a probability
/// drawn per sample from factor's range (one number f: (0, f)), warped so that its corners move by fractions drawn
/// from [-scale / 2, scale / 2] of their coordinates (the top-left corner stays), by the homography Keras solves
/// for; outside the image fill_value (fill_mode is always "constant"). A sample whose corners admit no
/// homography (an image one pixel wide or high) stays as it is.
class RandomPerspective : public RandomAffine {
 public:
  explicit RandomPerspective(FactorRange factor = 1.0, double scale = 1.0, AugmentOptions options = {})
      : RandomAffine(Kind::perspective, FactorRange(factor.lower == -factor.upper ? 0.0 : factor.lower, factor.upper),
                     FactorRange(scale, scale), "", with_constant_fill(std::move(options))) {}
  OSPREY_KERAS_LAYER(RandomPerspective)

 private:
  static AugmentOptions with_constant_fill(AugmentOptions o) {
    o.fill_mode = "constant";
    return o;
  }
};
/// keras.layers.RandomFlip(mode="horizontal_and_vertical"): each sample flipped with probability 1/2 per axis.
class RandomFlip : public RandomAffine {
 public:
  explicit RandomFlip(std::string mode = "horizontal_and_vertical", std::string name = "")
      : RandomAffine(Kind::flip, 0.0, std::nullopt, std::move(mode),
                     AugmentOptions{.interpolation = "nearest", .name = std::move(name)}) {}
  OSPREY_KERAS_LAYER(RandomFlip)
};

}  // namespace osprey::keras::layers

namespace osprey::keras::layers {

/// keras.layers.RandomContrast(factor, value_range=(0, 255)): in training, each image's channels moved away from
/// (or towards) their mean by a factor drawn per image from [1 - lower, 1 + upper], then clipped to value_range;
/// the identity in evaluate and predict. As Keras 3 parses `factor`: one number f in [0, 1] gives (lower, upper) =
/// (0, f), so contrast only grows; a pair is sorted and may not lie above 1 or below 0 as a whole.
class RandomContrast : public Layer {
 public:
  explicit RandomContrast(double factor, std::pair<double, double> value_range = {0.0, 255.0}, std::string name = "");
  explicit RandomContrast(std::pair<double, double> factor, std::pair<double, double> value_range = {0.0, 255.0},
                          std::string name = "");
  OSPREY_KERAS_LAYER(RandomContrast)
  std::string class_name() const override { return "RandomContrast"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  std::pair<double, double> factor() const { return {lower_, upper_}; }

 private:
  double lower_ = 0.0, upper_ = 0.0;
  std::pair<double, double> value_range_;
};

/// keras.layers.RandomBrightness(factor, value_range=(0, 255)): in training, each image shifted by a delta drawn per
/// image from [lower, upper] · (high - low) of value_range, then clipped to value_range; the identity in evaluate
/// and predict. `factor` as Keras 3 parses it: one number f in [-1, 1] gives (-|f|, |f|); a pair is sorted and may
/// not lie wholly above 1 or below -1.
class RandomBrightness : public Layer {
 public:
  explicit RandomBrightness(double factor, std::pair<double, double> value_range = {0.0, 255.0},
                            std::string name = "");
  explicit RandomBrightness(std::pair<double, double> factor, std::pair<double, double> value_range = {0.0, 255.0},
                            std::string name = "");
  OSPREY_KERAS_LAYER(RandomBrightness)
  std::string class_name() const override { return "RandomBrightness"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  std::pair<double, double> factor() const { return {lower_, upper_}; }
  std::pair<double, double> value_range() const { return value_range_; }

 private:
  double lower_ = 0.0, upper_ = 0.0;
  std::pair<double, double> value_range_;
};

/// keras.layers.RandomCrop(height, width): in training, one window of height x width at a random place for the
/// whole batch (as Keras); at inference, and in training when an image is not larger than the target along both
/// axes, the largest centred window of the target's aspect ratio resized to it, as Keras documents it (Keras 3.15's
/// code returns its input unchanged at inference, unlike its docs and its own output shape).
class RandomCrop : public Layer {
 public:
  RandomCrop(int64_t height, int64_t width, std::string data_format = "channels_last", std::string name = "");
  OSPREY_KERAS_LAYER(RandomCrop)
  std::string class_name() const override { return "RandomCrop"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;

 private:
  int64_t height_, width_;
  std::string data_format_;
};

}  // namespace osprey::keras::layers

namespace osprey::keras::layers {

/// keras.layers.Normalization's arguments.
struct NormalizationOptions {
  /// The axes (of the input with its batch axis, negative from the end) that keep their own mean and variance;
  /// empty is Keras's axis=None (one mean and variance for everything).
  std::vector<int> axis{-1};
  /// Given values instead of adapt(): both or neither, of one shape (a scalar, or the kept axes' sizes, trailing
  /// ones may be left out as in NumPy broadcasting).
  std::optional<Tensor> mean{}, variance{};
  bool invert = false;  ///< undo the normalisation: mean + x · std
  std::string name{};
  std::string dtype{};  ///< Keras's dtype: a policy name ("float32", "mixed_bfloat16"); empty: the global policy
};

/// (x - mean) / max(sqrt(variance), 1e-7) per position of the kept axes (keras.layers.Normalization). Without given
/// values, adapt() computes them from data (Keras's non-trainable weights "mean", "variance" and "count", saved
/// with the model): `auto norm = std::make_shared<layers::Normalization>(); norm->adapt(x_train);`.
class Normalization : public Layer {
 public:
  explicit Normalization(NormalizationOptions options = {});
  OSPREY_KERAS_LAYER(Normalization)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "Normalization"; }
  bool supports_masking() const override { return true; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;

  /// The mean and variance of `data` (its first axis the batch) over every axis but the kept ones, as NumPy's
  /// mean and var (population variance); builds the layer when it is not built. ValueError when the kept axes'
  /// sizes differ from the layer's input, or the layer was given its values.
  void adapt(const Tensor& data);
  /// The same over batches (Keras's iterable or PyDataset: each element one batch), merged as Keras merges them.
  void adapt(const std::vector<Tensor>& batches);
  void adapt(utils::PyDataset& dataset);
  /// The values in use, in the kept axes' shape (after build).
  Tensor mean() const;
  Tensor variance() const;

 private:
  void prepare(const Shape& input_shape);
  Tensor broadcast(const Tensor& kept) const;

  NormalizationOptions o_;
  std::vector<int> keep_;      // the kept axes of the input with its batch axis, ascending
  std::vector<int64_t> kept_;  // their sizes
  int ndim_ = 0;
  Variable *mean_ = nullptr, *variance_ = nullptr;
  Tensor given_mean_, given_variance_;  // o_.mean / o_.variance in the kept axes' shape
};

}  // namespace osprey::keras::layers

namespace osprey::keras::layers {

struct CategoryEncodingOptions {
  /// "multi_hot" (Keras's "binary" too), "one_hot" or "count".
  std::string output_mode = "multi_hot";
  bool sparse = false;  ///< Keras's sparse outputs: Osprey has no sparse tensors (true is a ValueError)
  std::string name{};
  std::string dtype{};  ///< Keras's dtype: a policy name; the outputs are float32 (the variable dtype), as Keras's
};

/// keras.layers.CategoryEncoding(num_tokens, output_mode): integer ids in [0, num_tokens) as float32 encodings,
/// with the TensorFlow backend's rules. "one_hot": an axis of num_tokens appended (replacing a last axis of 1),
/// ids outside the range give rows of zeros. "multi_hot" / "count": over inputs of rank 1 or 2 TensorFlow's
/// bincount, one row per sample (rank 1: the whole input is one sample), ids >= num_tokens left out, a negative id
/// an InvalidArgumentError; over rank 3 and more one-hot rows reduced over axis 1. Count weights (the same shape
/// as the ids, "count" only): `layer.call_outputs({ids, weights}, false)` or a second input. Computed on the host
/// (the outputs go to the inputs' device); no gradient flows through ids.
class CategoryEncoding : public Layer {
 public:
  explicit CategoryEncoding(int64_t num_tokens, CategoryEncodingOptions options = {});
  OSPREY_KERAS_LAYER(CategoryEncoding)
  std::string class_name() const override { return "CategoryEncoding"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Shape build(const std::vector<Shape>& input_shapes) override;
  Tensor call(const Tensor& inputs, bool training) override;
  Tensor call(const std::vector<Tensor>& inputs, bool training) override;
  int64_t num_tokens() const { return num_tokens_; }
  const std::string& output_mode() const { return o_.output_mode; }

 private:
  int64_t num_tokens_;
  CategoryEncodingOptions o_;
};

struct DiscretizationOptions {
  /// Sorted boundaries: bin i holds boundaries[i-1] <= x < boundaries[i] (len + 1 bins). Either these or num_bins
  /// (and adapt()), not both.
  std::optional<std::vector<double>> bin_boundaries{};
  std::optional<int64_t> num_bins{};
  double epsilon = 0.01;  ///< adapt()'s quantile precision (Keras's summaries of 1 / epsilon values)
  /// "int" (the bin index, int32), "one_hot", "multi_hot" or "count" (CategoryEncoding's rules, float32).
  std::string output_mode = "int";
  bool sparse = false;  ///< Osprey has no sparse tensors (true is a ValueError)
  std::string name{};
  std::string dtype{};
};

/// keras.layers.Discretization: each value's bin among bin_boundaries (TensorFlow's Bucketize on float32 values;
/// NaN falls in the last bin), encoded by output_mode. adapt() finds num_bins - 1 boundaries from data with
/// Keras's approximate quantile summaries (the same boundaries as Keras, batches merged as Keras merges them).
class Discretization : public Layer {
 public:
  explicit Discretization(DiscretizationOptions options);
  OSPREY_KERAS_LAYER(Discretization)
  std::string class_name() const override { return "Discretization"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  /// Boundaries from `data` (any shape: every value counts) or from batches; ValueError for a layer given its
  /// bin_boundaries.
  void adapt(const Tensor& data);
  void adapt(const std::vector<Tensor>& batches);
  /// The boundaries in use (empty before adapt() for a layer given num_bins).
  const std::vector<double>& bin_boundaries() const { return boundaries_; }
  /// Boundaries a saved, adapted layer had (Keras's from_config with both bin_boundaries and num_bins).
  void set_bin_boundaries(std::vector<double> boundaries);

 private:
  DiscretizationOptions o_;
  std::vector<double> boundaries_;
  bool has_boundaries_ = false;
};

}  // namespace osprey::keras::layers
