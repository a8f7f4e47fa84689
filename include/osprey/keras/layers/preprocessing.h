// Image preprocessing layers that Keras users put in models: keras.layers.Rescaling, Resizing, CenterCrop.
#pragma once

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
