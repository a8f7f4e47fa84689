// Image preprocessing layers that Keras users put in models: keras.layers.Rescaling, Resizing, CenterCrop.
#pragma once

#include <optional>
#include <string>

#include "osprey/keras/layers/layer.h"

namespace osprey::keras::layers {

/// inputs · scale + offset (keras.layers.Rescaling): `layers::Rescaling(1.0 / 255)`.
class Rescaling : public Layer {
 public:
  explicit Rescaling(double scale, double offset = 0.0, std::string name = "");
  OSPREY_KERAS_LAYER(Rescaling)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "Rescaling"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override { return finish_build(input_shape); }
  Tensor call(const Tensor& inputs, bool training) override;

 private:
  double scale_, offset_;
};

struct ResizingOptions {
  std::string interpolation = "bilinear";  ///< or "nearest"
  bool crop_to_aspect_ratio = false;       ///< first crop the largest centred window of the target's aspect ratio
  std::string data_format = "channels_last";
  std::string name{};
};

/// Images (batch, height, width, channels) resized as tf.image.resize does (keras.layers.Resizing):
/// `layers::Resizing(64, 64)`. pad_to_aspect_ratio and antialias are not implemented (a ValueError from a config).
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
};

/// Keras's random spatial augmentations (RandomRotation, RandomTranslation, RandomZoom, RandomFlip) in training
/// (fit, or a call with training=true); the identity in evaluate and predict. Each sample gets its own transform,
/// drawn from Osprey's global generator (keras::utils::set_random_seed makes them repeat; Keras's own seed does
/// not give Keras's draws), applied by ops::affine_transform as TensorFlow applies it. No gradient flows through
/// them (as in TensorFlow): put them at the front of a model.
class RandomAffine : public Layer {
 public:
  enum class Kind { rotation, translation, zoom, flip };
  RandomAffine(Kind kind, FactorRange a, std::optional<FactorRange> b, std::string flip_mode, AugmentOptions options);
  std::string class_name() const override;
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;

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
/// keras.layers.RandomFlip(mode="horizontal_and_vertical"): each sample flipped with probability 1/2 per axis.
class RandomFlip : public RandomAffine {
 public:
  explicit RandomFlip(std::string mode = "horizontal_and_vertical", std::string name = "")
      : RandomAffine(Kind::flip, 0.0, std::nullopt, std::move(mode),
                     AugmentOptions{.interpolation = "nearest", .name = std::move(name)}) {}
  OSPREY_KERAS_LAYER(RandomFlip)
};

}  // namespace osprey::keras::layers
