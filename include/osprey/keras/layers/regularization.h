// Regularization layers: keras.layers.Dropout, ...
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "osprey/keras/layers/layer.h"

namespace osprey::keras::layers {

/// Sets inputs to 0 with probability `rate` during training and scales the rest by 1/(1 − rate); the identity in
/// evaluate() and predict() (keras.layers.Dropout).
class Dropout : public Layer {
 public:
  explicit Dropout(double rate, std::string name = "");
  OSPREY_KERAS_LAYER(Dropout)
  bool supports_half_compute() const override { return true; }
  /// Its mask comes from a generator in a device tensor, advanced by the kernel that draws (counter-based).
  bool recordable() const override { return true; }
  std::string class_name() const override { return "Dropout"; }
  bool supports_masking() const override { return true; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  double rate() const { return rate_; }

 protected:
  /// 1 where a uniform draw is >= rate, else 0, of `shape`, on `device` (this layer's generator there).
  Tensor keep_mask(const Shape& shape, runtime::Device& device);
  Dropout(double rate, std::string name, const std::string& prefix);

 private:
  double rate_;
  struct Generators {
    std::mutex mu;  // replicas draw at once, each on its device
    std::map<const runtime::Device*, Tensor> by_device;
  };
  std::shared_ptr<Generators> generators_ = std::make_shared<Generators>();
};

/// keras.layers.SpatialDropout1D/2D/3D: Dropout of whole feature maps (one draw per sample and channel, kept or
/// zeroed over every spatial position), for (batch, spatial..., channels) inputs or channels_first.
class SpatialDropout : public Dropout {
 public:
  SpatialDropout(int rank, double rate, std::string data_format = "channels_last", std::string name = "");
  OSPREY_KERAS_LAYER(SpatialDropout)  // not Dropout's: that would slice this layer into a plain Dropout
  std::string class_name() const override { return "SpatialDropout" + std::to_string(rank_) + "D"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;

 private:
  int rank_;
  std::string data_format_;
};
#define OSPREY_SPATIAL_DROPOUT(Class, rank)                                                                \
  class Class : public SpatialDropout {                                                                  \
   public:                                                                                               \
    explicit Class(double rate, std::string data_format = "channels_last", std::string name = "")        \
        : SpatialDropout(rank, rate, std::move(data_format), std::move(name)) {}                         \
    OSPREY_KERAS_LAYER(Class)                                                                            \
  };
/// `layers::SpatialDropout2D(0.2)`.
OSPREY_SPATIAL_DROPOUT(SpatialDropout1D, 1)
OSPREY_SPATIAL_DROPOUT(SpatialDropout2D, 2)
OSPREY_SPATIAL_DROPOUT(SpatialDropout3D, 3)
#undef OSPREY_SPATIAL_DROPOUT

/// The input unchanged, with the activity penalty (l1·Σ|x| + l2·Σx²) / batch size added to the loss in fit and
/// evaluate, as Keras 3 normalises it (keras.layers.ActivityRegularization).
class ActivityRegularization : public Layer {
 public:
  explicit ActivityRegularization(double l1 = 0.0, double l2 = 0.0, std::string name = "");
  OSPREY_KERAS_LAYER(ActivityRegularization)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "ActivityRegularization"; }
  bool supports_masking() const override { return true; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override { return finish_build(input_shape); }
  Tensor call(const Tensor& inputs, bool training) override;
  /// The penalties of this layer's calls in the current forward pass (of this replica).
  std::vector<Tensor> regularization_losses() override;
  bool has_regularization() const override { return true; }
  double l1() const { return l1_; }
  double l2() const { return l2_; }

 private:
  double l1_, l2_;
  struct Collected {
    std::mutex mu;  // replicas call the layer at once
    std::map<int, std::pair<uint64_t, std::vector<Tensor>>> by_replica;  // replica -> (forward pass, penalties)
  };
  std::shared_ptr<Collected> collected_ = std::make_shared<Collected>();
};

/// Adds N(0, stddev²) noise in training; the identity in evaluate/predict (keras.layers.GaussianNoise).
class GaussianNoise : public Layer {
 public:
  explicit GaussianNoise(double stddev, std::string name = "");
  OSPREY_KERAS_LAYER(GaussianNoise)
  std::string class_name() const override { return "GaussianNoise"; }
  bool supports_masking() const override { return true; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override { return finish_build(input_shape); }
  Tensor call(const Tensor& inputs, bool training) override;
  double stddev() const { return stddev_; }

 private:
  double stddev_;
};

/// Multiplies by N(1, rate/(1 − rate)) noise in training; the identity otherwise (keras.layers.GaussianDropout).
class GaussianDropout : public Layer {
 public:
  explicit GaussianDropout(double rate, std::string name = "");
  OSPREY_KERAS_LAYER(GaussianDropout)
  std::string class_name() const override { return "GaussianDropout"; }
  bool supports_masking() const override { return true; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override { return finish_build(input_shape); }
  Tensor call(const Tensor& inputs, bool training) override;
  double rate() const { return rate_; }

 private:
  double rate_;
};

/// Dropout that keeps SELU's self-normalisation: dropped values are set to SELU's negative saturation, then an
/// affine map restores the mean and variance (keras.layers.AlphaDropout); the identity outside training.
class AlphaDropout : public Layer {
 public:
  explicit AlphaDropout(double rate, std::string name = "");
  OSPREY_KERAS_LAYER(AlphaDropout)
  std::string class_name() const override { return "AlphaDropout"; }
  bool supports_masking() const override { return true; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override { return finish_build(input_shape); }
  Tensor call(const Tensor& inputs, bool training) override;
  double rate() const { return rate_; }

 private:
  double rate_;
};

}  // namespace osprey::keras::layers
