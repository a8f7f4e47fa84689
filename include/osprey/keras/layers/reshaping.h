// Reshaping layers: keras.layers.Flatten, Reshape, ...
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "osprey/keras/layers/layer.h"

namespace osprey::keras::layers {

/// (batch, d1, d2, ...) → (batch, d1·d2·...) (keras.layers.Flatten).
class Flatten : public Layer {
 public:
  explicit Flatten(std::string name = "");
  OSPREY_KERAS_LAYER(Flatten)
  bool recordable() const override { return true; }
  bool supports_half_compute() const override { return true; }
  std::string class_name() const override { return "Flatten"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
};

/// (batch, ...) → (batch, target_shape...); one dimension may be −1 (keras.layers.Reshape).
class Reshape : public Layer {
 public:
  explicit Reshape(std::vector<int64_t> target_shape, std::string name = "");
  OSPREY_KERAS_LAYER(Reshape)
  bool recordable() const override { return true; }
  bool supports_half_compute() const override { return true; }
  std::string class_name() const override { return "Reshape"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  const std::vector<int64_t>& target_shape() const { return target_; }

 private:
  std::vector<int64_t> target_;
};

/// (batch, d) → (batch, n, d): the input repeated n times (keras.layers.RepeatVector).
class RepeatVector : public Layer {
 public:
  explicit RepeatVector(int n, std::string name = "");
  OSPREY_KERAS_LAYER(RepeatVector)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "RepeatVector"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  int n() const { return n_; }

 private:
  int n_;
};

/// Permutes a sample's axes: dims is a permutation of 1..rank (the batch axis stays first), as keras.layers.Permute.
class Permute : public Layer {
 public:
  explicit Permute(std::vector<int> dims, std::string name = "");
  OSPREY_KERAS_LAYER(Permute)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "Permute"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  const std::vector<int>& dims() const { return dims_; }

 private:
  std::vector<int> dims_;
};

}  // namespace osprey::keras::layers

#include <utility>

#include "osprey/keras/layers/convolutional.h"

namespace osprey::keras::layers {

/// Amounts before and after each spatial axis: `{{top, bottom}, {left, right}}`.
using AxisPairs = std::vector<std::pair<int64_t, int64_t>>;

/// Keras's ZeroPadding1D/2D/3D and Cropping1D/2D/3D: zeros added around, or rows and columns taken off, each
/// spatial axis of (batch, spatial..., channels) (or channels_first) inputs.
class SpatialPadding : public Layer {
 public:
  enum class Kind { zero_padding, cropping };
  /// `amounts`: one value for every side, one per axis (both sides), or for 1-D (before, after).
  SpatialPadding(Kind kind, int rank, const Ints& amounts, std::string data_format, std::string name);
  SpatialPadding(Kind kind, int rank, AxisPairs amounts, std::string data_format, std::string name);
  bool recordable() const override { return true; }
  std::string class_name() const override;
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  const AxisPairs& amounts() const { return amounts_; }

 private:
  void check() const;
  Kind kind_;
  int rank_;
  AxisPairs amounts_;
  std::string data_format_;
};

#define OSPREY_SPATIAL_PADDING_LAYER(Class, kind, rank, fallback)                                             \
  class Class : public SpatialPadding {                                                                      \
   public:                                                                                                   \
    explicit Class(const Ints& amounts = fallback, std::string data_format = "channels_last", std::string name = "") \
        : SpatialPadding(Kind::kind, rank, amounts, std::move(data_format), std::move(name)) {}               \
    explicit Class(AxisPairs amounts, std::string data_format = "channels_last", std::string name = "")       \
        : SpatialPadding(Kind::kind, rank, std::move(amounts), std::move(data_format), std::move(name)) {}    \
    OSPREY_KERAS_LAYER(Class)                                                                                \
  };
/// keras.layers.ZeroPadding2D(padding=1): `layers::ZeroPadding2D(1)`, `layers::ZeroPadding2D(AxisPairs{{1, 0}, {2, 2}})`.
OSPREY_SPATIAL_PADDING_LAYER(ZeroPadding1D, zero_padding, 1, 1)
OSPREY_SPATIAL_PADDING_LAYER(ZeroPadding2D, zero_padding, 2, 1)
OSPREY_SPATIAL_PADDING_LAYER(ZeroPadding3D, zero_padding, 3, 1)
/// keras.layers.Cropping2D(cropping=((0, 0), (0, 0))).
OSPREY_SPATIAL_PADDING_LAYER(Cropping1D, cropping, 1, 1)
OSPREY_SPATIAL_PADDING_LAYER(Cropping2D, cropping, 2, 0)
OSPREY_SPATIAL_PADDING_LAYER(Cropping3D, cropping, 3, 1)
#undef OSPREY_SPATIAL_PADDING_LAYER

/// Keras's UpSampling1D/2D/3D: every element repeated `size` times along each spatial axis (nearest neighbour), or
/// for UpSampling2D with another interpolation ("bilinear", "bicubic", "area", "lanczos3", "lanczos5") the images
/// resized to size times theirs (tf.image.resize).
class UpSampling : public Layer {
 public:
  UpSampling(int rank, const Ints& size, std::string data_format, std::string interpolation, std::string name);
  bool recordable() const override { return true; }
  std::string class_name() const override { return fmt_class(); }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  const std::vector<int64_t>& size() const { return size_; }

 private:
  std::string fmt_class() const { return "UpSampling" + std::to_string(rank_) + "D"; }
  int rank_;
  std::vector<int64_t> size_;
  std::string data_format_, interpolation_;
};
/// keras.layers.UpSampling1D(size=2).
class UpSampling1D : public UpSampling {
 public:
  explicit UpSampling1D(int64_t size = 2, std::string name = "")
      : UpSampling(1, size, "channels_last", "nearest", std::move(name)) {}
  OSPREY_KERAS_LAYER(UpSampling1D)
};
/// keras.layers.UpSampling2D(size=(2, 2), data_format, interpolation="nearest", "bilinear", "bicubic", "area",
/// "lanczos3" or "lanczos5").
class UpSampling2D : public UpSampling {
 public:
  explicit UpSampling2D(const Ints& size = 2, std::string data_format = "channels_last",
                        std::string interpolation = "nearest", std::string name = "")
      : UpSampling(2, size, std::move(data_format), std::move(interpolation), std::move(name)) {}
  OSPREY_KERAS_LAYER(UpSampling2D)
};
/// keras.layers.UpSampling3D(size=(2, 2, 2), data_format).
class UpSampling3D : public UpSampling {
 public:
  explicit UpSampling3D(const Ints& size = 2, std::string data_format = "channels_last", std::string name = "")
      : UpSampling(3, size, std::move(data_format), "nearest", std::move(name)) {}
  OSPREY_KERAS_LAYER(UpSampling3D)
};

}  // namespace osprey::keras::layers
