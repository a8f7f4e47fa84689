// Keras 3's image augmentations that change pixel values in place: RandomGrayscale, RandomInvert, AutoContrast,
// Solarization, RandomPosterization, RandomColorDegeneration, RandomSaturation, RandomHue, RandomSharpness,
// RandomGaussianBlur, RandomErasing, Equalization and RandomColorJitter.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "osprey/keras/layers/layer.h"
#include "osprey/random.h"

namespace osprey::keras::layers {

class RandomBrightness;
class RandomContrast;

/// A factor as Keras's layers take it: one number, or a pair (lower, upper). Each layer parses it as its Keras
/// class does (one number f: (0, f) for most, (-f, f) for RandomColorDegeneration and RandomSaturation).
struct ImageFactor {
  ImageFactor(double f) : single(true), a(f), b(f) {}  // NOLINT: implicit, as Python passes a number
  ImageFactor(double lo, double hi) : single(false), a(lo), b(hi) {}
  bool single;
  double a, b;
};

/// What the color layers share (Keras's value_range, data_format and seed).
struct ColorOptions {
  std::pair<double, double> value_range = {0.0, 255.0};  ///< the images' range (low, high)
  std::string data_format = "channels_last";             ///< or "channels_first"
  std::optional<int64_t> seed{};  ///< a seed: the layer draws from its own generator, so runs repeat
  std::string name{};
  std::string dtype{};  ///< Keras's dtype: a policy name; the layers compute in float32 and return float32
};

/// Keras's BaseImagePreprocessingLayer for color changes of images (batch, height, width, channels), or (batch,
/// channels, height, width) with channels_first. In training (fit, or a call with training=true) each image gets
/// its own draw from get_random_transformation(), applied by transform_images(); in evaluate and predict the
/// images pass unchanged (AutoContrast applies always). Without a seed the draws come from Osprey's global
/// generator (keras::utils::set_random_seed makes them repeat); no library draws Keras's numbers. Gradients flow
/// through the arithmetic (not through random choices, posterization's rounding or equalization's table).
class ColorAugmentation : public Layer {
 public:
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  /// Keras's transformation for a batch of `batch` images, flattened: the numbers transform_images() takes.
  virtual std::vector<float> get_random_transformation(int64_t batch) = 0;
  /// The images changed as a draw says (Keras's transform_images in training); `transformation` holds one number
  /// per image (Solarization: the additions, then the thresholds).
  virtual Tensor transform_images(const Tensor& images, const std::vector<float>& transformation) const = 0;
  const ColorOptions& options() const { return options_; }

 protected:
  ColorAugmentation(const std::string& default_name, ColorOptions options, bool sort_value_range);
  /// n uniform draws in [0, 1): the layer's generator when seeded, else the global one.
  std::vector<float> uniform(int64_t n);
  /// What a call in evaluate/predict returns (the inputs; AutoContrast transforms).
  virtual Tensor inference(const Tensor& images) const { return images; }
  /// The images as float32 channels_last, and back to the layer's data_format.
  Tensor to_last(const Tensor& images) const;
  Tensor from_last(const Tensor& images) const;
  ColorOptions options_;
  std::optional<random::Philox> generator_;
};

/// The color layers with one range of factors (Keras's `factor`, parsed as the layer's Keras class parses it):
/// draws uniform in [lower, upper) per image unless the layer draws otherwise, "factor" in the config.
class FactorColorAugmentation : public ColorAugmentation {
 public:
  std::string get_config() const override;
  std::vector<float> get_random_transformation(int64_t batch) override;
  std::pair<double, double> factor() const { return factor_; }

 protected:
  /// `factor` parsed within [lo, hi] (Keras's _set_factor).
  FactorColorAugmentation(const std::string& default_name, ImageFactor factor, double lo, double hi,
                          ColorOptions options, bool sort_value_range);
  std::pair<double, double> factor_;
};

/// keras.layers.RandomGrayscale(factor=0.5): each image, with probability factor, replaced by its luminance
/// (0.2989 r + 0.5870 g + 0.1140 b) in every channel. Three channels (one: unchanged).
class RandomGrayscale : public ColorAugmentation {
 public:
  explicit RandomGrayscale(double factor = 0.5, ColorOptions options = {});
  OSPREY_KERAS_LAYER(RandomGrayscale)
  std::string class_name() const override { return "RandomGrayscale"; }
  std::string get_config() const override;
  std::vector<float> get_random_transformation(int64_t batch) override;  ///< 1 to convert, 0 to keep
  Tensor transform_images(const Tensor& images, const std::vector<float>& transformation) const override;
  double factor() const { return factor_; }

 private:
  double factor_;
};

/// keras.layers.RandomInvert(factor=1.0, value_range=(0, 255)): each image inverted (value_range's high - x) when a
/// uniform draw falls below a probability drawn per image from [lower, upper]; one number f means (0, f).
class RandomInvert : public FactorColorAugmentation {
 public:
  explicit RandomInvert(ImageFactor factor = 1.0, ColorOptions options = {});
  OSPREY_KERAS_LAYER(RandomInvert)
  std::string class_name() const override { return "RandomInvert"; }
  std::vector<float> get_random_transformation(int64_t batch) override;  ///< 1 to invert, 0 to keep
  Tensor transform_images(const Tensor& images, const std::vector<float>& transformation) const override;
};

/// keras.layers.AutoContrast(value_range=(0, 255)): each image's channels stretched to fill value_range (a
/// constant channel left as it is); in training and in inference alike. With channels_first the minimum and
/// maximum are each image's and channel's, where Keras 3.15 takes them over axes 1 and 2 in either format.
class AutoContrast : public ColorAugmentation {
 public:
  explicit AutoContrast(ColorOptions options = {});
  OSPREY_KERAS_LAYER(AutoContrast)
  std::string class_name() const override { return "AutoContrast"; }
  std::string get_config() const override;
  std::vector<float> get_random_transformation(int64_t) override { return {}; }
  Tensor transform_images(const Tensor& images, const std::vector<float>& transformation) const override;

 protected:
  Tensor inference(const Tensor& images) const override { return transform_images(images, {}); }
};

/// keras.layers.Solarization(addition_factor=0, threshold_factor=0, value_range=(0, 255)): on the 0-255 scale, an
/// addition drawn per image, then clipped, and every value at or above a threshold drawn per image inverted
/// (255 - x). As Keras 3.15 draws them: from [lower, upper · 255] (one number f: (0, f)).
class Solarization : public ColorAugmentation {
 public:
  explicit Solarization(ImageFactor addition_factor = 0.0, ImageFactor threshold_factor = 0.0,
                        ColorOptions options = {});
  OSPREY_KERAS_LAYER(Solarization)
  std::string class_name() const override { return "Solarization"; }
  std::string get_config() const override;
  /// The additions of the batch's images, then their thresholds.
  std::vector<float> get_random_transformation(int64_t batch) override;
  Tensor transform_images(const Tensor& images, const std::vector<float>& transformation) const override;
  std::pair<double, double> addition_factor() const { return addition_; }
  std::pair<double, double> threshold_factor() const { return threshold_; }

 private:
  std::pair<double, double> addition_, threshold_;
};

/// keras.layers.RandomPosterization(factor, value_range=(0, 255)): each image, on the 0-255 scale, keeps the top
/// `bits` bits of each value, bits an integer drawn per image from [lower, upper) within [1, 8] (one number f:
/// (1, f); a pair of equal numbers: exactly that many). Values are clamped to [0, 255] before (Keras casts to
/// uint8).
class RandomPosterization : public ColorAugmentation {
 public:
  explicit RandomPosterization(ImageFactor factor, ColorOptions options = {});
  OSPREY_KERAS_LAYER(RandomPosterization)
  std::string class_name() const override { return "RandomPosterization"; }
  std::string get_config() const override;
  std::vector<float> get_random_transformation(int64_t batch) override;  ///< the shifts: 8 - bits
  Tensor transform_images(const Tensor& images, const std::vector<float>& transformation) const override;
  std::pair<int64_t, int64_t> factor() const { return factor_; }

 private:
  std::pair<int64_t, int64_t> factor_;
};

/// keras.layers.RandomColorDegeneration(factor): each image moved towards its grayscale by a factor drawn per
/// image from [lower, upper] (one number f: (-f, f); negative factors move away), then clipped to value_range.
class RandomColorDegeneration : public FactorColorAugmentation {
 public:
  explicit RandomColorDegeneration(ImageFactor factor, ColorOptions options = {});
  OSPREY_KERAS_LAYER(RandomColorDegeneration)
  std::string class_name() const override { return "RandomColorDegeneration"; }
  Tensor transform_images(const Tensor& images, const std::vector<float>& transformation) const override;
};

/// keras.layers.RandomSaturation(factor): each image's HSV saturation multiplied by f / (1 - f) for f drawn per
/// image from [lower, upper] (one number f: (-f, f)), clipped to value_range. As in Keras 3.15 the images go
/// through rgb_to_hsv as they are (value_range is only the clip).
class RandomSaturation : public FactorColorAugmentation {
 public:
  explicit RandomSaturation(ImageFactor factor, ColorOptions options = {});
  OSPREY_KERAS_LAYER(RandomSaturation)
  std::string class_name() const override { return "RandomSaturation"; }
  std::vector<float> get_random_transformation(int64_t batch) override;  ///< the multipliers f / (1 - f + 1e-7)
  Tensor transform_images(const Tensor& images, const std::vector<float>& transformation) const override;
};

/// keras.layers.RandomHue(factor, value_range=(0, 255)): each image's hue turned by ±f / 2 of a full turn, f drawn
/// per image from [lower, upper] within [0, 1] (one number f: (0, f)), the sign a coin flip.
class RandomHue : public FactorColorAugmentation {
 public:
  explicit RandomHue(ImageFactor factor, ColorOptions options = {});
  OSPREY_KERAS_LAYER(RandomHue)
  std::string class_name() const override { return "RandomHue"; }
  std::vector<float> get_random_transformation(int64_t batch) override;  ///< the turns, in [-0.5, 0.5]
  Tensor transform_images(const Tensor& images, const std::vector<float>& transformation) const override;
};

/// keras.layers.RandomSharpness(factor, value_range=(0, 255)): each image blended with its 3×3 smoothing (Keras's
/// kernel, zero padding) by 1 - 2f, f drawn per image from [lower, upper] within [0, 1] (one number f: (0, f)):
/// f < 0.5 blurs, f > 0.5 sharpens; clipped to value_range.
class RandomSharpness : public FactorColorAugmentation {
 public:
  explicit RandomSharpness(ImageFactor factor, ColorOptions options = {});
  OSPREY_KERAS_LAYER(RandomSharpness)
  std::string class_name() const override { return "RandomSharpness"; }
  Tensor transform_images(const Tensor& images, const std::vector<float>& transformation) const override;
};

/// keras.layers.RandomGaussianBlur(factor=1.0, kernel_size=3, sigma=1.0, value_range=(0, 255)): each image blurred
/// when a uniform draw falls below a probability drawn per image from [lower, upper] (one number f: (0, f)), by a
/// Gaussian window of odd kernel_size (one number or a pair) whose two sigmas are drawn once per batch from the
/// sigma range within [0, 1] (one number s: (0, s)), plus 1e-6; the whole batch then clipped to value_range.
class RandomGaussianBlur : public FactorColorAugmentation {
 public:
  explicit RandomGaussianBlur(ImageFactor factor = 1.0, ImageFactor kernel_size = 3.0, ImageFactor sigma = 1.0,
                              ColorOptions options = {});
  OSPREY_KERAS_LAYER(RandomGaussianBlur)
  std::string class_name() const override { return "RandomGaussianBlur"; }
  std::string get_config() const override;
  /// 1 or 0 per image (blur or not), then the batch's two sigmas.
  std::vector<float> get_random_transformation(int64_t batch) override;
  Tensor transform_images(const Tensor& images, const std::vector<float>& transformation) const override;
  std::pair<int64_t, int64_t> kernel_size() const { return kernel_size_; }
  std::pair<double, double> sigma() const { return sigma_; }

 private:
  std::pair<int64_t, int64_t> kernel_size_;
  std::pair<double, double> sigma_;
};

/// keras.layers.RandomErasing(factor=1.0, scale=(0.02, 0.33), fill_value=None, value_range=(0, 255)): each image,
/// when a uniform draw falls below a probability drawn per image from [lower, upper] (one number f: (0, f)), gets
/// a box filled: its sides sqrt(a draw from `scale`) times the width and the height, its corner uniform in the
/// room left; the fill is `fill_value` (one number, or one per channel) or, unset, normal noise times
/// value_range's high, clipped to value_range.
class RandomErasing : public FactorColorAugmentation {
 public:
  explicit RandomErasing(ImageFactor factor = 1.0, ImageFactor scale = ImageFactor(0.02, 0.33),
                         std::vector<double> fill_value = {}, ColorOptions options = {});
  OSPREY_KERAS_LAYER(RandomErasing)
  std::string class_name() const override { return "RandomErasing"; }
  std::string get_config() const override;
  Tensor call(const Tensor& inputs, bool training) override;
  /// Per image: 1 or 0 (erase or not), the box's side fractions (x, y) and its start fractions (x, y): 5 rows.
  std::vector<float> get_random_transformation(int64_t batch) override;
  /// The erasing under given draws (with fill_value unset, the noise from the global generator).
  Tensor transform_images(const Tensor& images, const std::vector<float>& transformation) const override;
  std::pair<double, double> scale() const { return scale_; }

 private:
  Tensor erase(const Tensor& images, const std::vector<float>& transformation, const Tensor& noise) const;
  std::pair<double, double> scale_;
  std::vector<double> fill_value_;
};

/// keras.layers.Equalization(value_range=(0, 255), bins=256): in training, histogram equalization of each channel,
/// the histogram (of `bins` bins on the 0-255 scale) taken over the whole batch as Keras 3.15 takes it; a channel
/// with one occupied bin is left as it is. The identity in evaluate and predict (as Keras). Computed on the host.
/// It can be called on a model's symbolic tensors (Keras 3.15's cannot: its output spec is its input).
class Equalization : public ColorAugmentation {
 public:
  explicit Equalization(ColorOptions options = {}, int64_t bins = 256);
  OSPREY_KERAS_LAYER(Equalization)
  std::string class_name() const override { return "Equalization"; }
  std::string get_config() const override;
  std::vector<float> get_random_transformation(int64_t) override { return {}; }
  Tensor transform_images(const Tensor& images, const std::vector<float>& transformation) const override;
  int64_t bins() const { return bins_; }

 private:
  int64_t bins_;
};

/// keras.layers.RandomColorJitter: RandomBrightness, RandomContrast, RandomSaturation and RandomHue in that order,
/// each only when its factor is given, all with the layer's value_range.
struct ColorJitterFactors {
  std::optional<ImageFactor> brightness{}, contrast{}, saturation{}, hue{};
};
class RandomColorJitter : public ColorAugmentation {
 public:
  explicit RandomColorJitter(ColorJitterFactors factors, ColorOptions options = {});
  OSPREY_KERAS_LAYER(RandomColorJitter)
  std::string class_name() const override { return "RandomColorJitter"; }
  std::string get_config() const override;
  Tensor call(const Tensor& inputs, bool training) override;
  /// Not used: each part draws its own.
  std::vector<float> get_random_transformation(int64_t) override { return {}; }
  /// Every given part applied with fresh draws (`transformation` is not used).
  Tensor transform_images(const Tensor& images, const std::vector<float>& transformation) const override;

 private:
  ColorJitterFactors factors_;
  std::shared_ptr<Layer> brightness_, contrast_;
  std::shared_ptr<ColorAugmentation> saturation_, hue_;
};

}  // namespace osprey::keras::layers
