// Pooling layers: keras.layers.MaxPooling1D/2D/3D, AveragePooling1D/2D/3D, GlobalMaxPooling1D/2D/3D,
// GlobalAveragePooling1D/2D/3D, AdaptiveMaxPooling1D/2D/3D, AdaptiveAveragePooling1D/2D/3D.
#pragma once

#include <string>
#include <vector>

#include "osprey/keras/layers/convolutional.h"

namespace osprey::keras::layers {

/// Keras's pooling arguments besides pool_size. `strides` empty: the pool size (Keras's strides=None).
struct PoolOptions {
  Ints strides{};
  std::string padding = "valid";  ///< or "same" (windows at the edges average only the elements inside)
  std::string data_format = "channels_last";
  std::string name{};
  std::string dtype{};  ///< Keras's dtype: a policy name ("float32", "mixed_bfloat16"); empty: the global policy
};

/// Keras's BasePooling: max or average over windows of one, two or three spatial axes.
class BasePooling : public Layer {
 public:
  BasePooling(osprey::ops::PoolKind kind, int rank, const Ints& pool_size, PoolOptions options);
  bool recordable() const override { return true; }
  /// Pools in the policy's half type under a mixed policy (bfloat16: oneDNN's bfloat16 pooling on the CPU).
  bool supports_half_compute() const override { return true; }
  std::string class_name() const override;
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  const std::vector<int64_t>& pool_size() const { return pool_size_; }
  const std::vector<int64_t>& strides() const { return strides_; }

 private:
  osprey::ops::PoolKind kind_;
  int rank_;
  std::vector<int64_t> pool_size_, strides_;
  PoolOptions options_;
};

#define OSPREY_POOLING_LAYER(Class, kind, rank, default_size)                                     \
  class Class : public BasePooling {                                                              \
   public:                                                                                        \
    explicit Class(const Ints& pool_size = default_size, PoolOptions options = {})                \
        : BasePooling(osprey::ops::PoolKind::kind, rank, pool_size, std::move(options)) {}                \
    OSPREY_KERAS_LAYER(Class)                                                                     \
  };
/// keras.layers.MaxPooling2D(pool_size=(2, 2), strides=None, padding="valid"): `layers::MaxPooling2D(2)`.
OSPREY_POOLING_LAYER(MaxPooling1D, max, 1, 2)
OSPREY_POOLING_LAYER(MaxPooling2D, max, 2, 2)
OSPREY_POOLING_LAYER(MaxPooling3D, max, 3, 2)
OSPREY_POOLING_LAYER(AveragePooling1D, average, 1, 2)
OSPREY_POOLING_LAYER(AveragePooling2D, average, 2, 2)
OSPREY_POOLING_LAYER(AveragePooling3D, average, 3, 2)
#undef OSPREY_POOLING_LAYER

/// Keras's BaseGlobalPooling: the maximum or mean over every spatial axis: (batch, channels), or with keepdims
/// (batch, 1..., channels).
class BaseGlobalPooling : public Layer {
 public:
  BaseGlobalPooling(osprey::ops::PoolKind kind, int rank, const std::string& data_format, bool keepdims,
                    const std::string& name);
  bool recordable() const override { return true; }
  std::string class_name() const override;
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  /// GlobalAveragePooling1D averages over the kept time steps of a masked sequence (all masked: NaN, as Keras)
  /// and ends the mask there.
  bool supports_masking() const override { return kind_ == osprey::ops::PoolKind::average && rank_ == 1; }
  Tensor call_masked(const Tensor& inputs, bool training, const Tensor& mask) override;
  Tensor compute_mask(const Tensor&, const Tensor&) override { return Tensor(); }
  bool keepdims() const { return keepdims_; }

 private:
  osprey::ops::PoolKind kind_;
  int rank_;
  std::string data_format_;
  bool keepdims_;
};

#define OSPREY_GLOBAL_POOLING_LAYER(Class, kind, rank)                                                         \
  class Class : public BaseGlobalPooling {                                                                     \
   public:                                                                                                     \
    explicit Class(const std::string& data_format = "channels_last", bool keepdims = false, std::string name = "") \
        : BaseGlobalPooling(osprey::ops::PoolKind::kind, rank, data_format, keepdims, name) {}                         \
    OSPREY_KERAS_LAYER(Class)                                                                                  \
  };
/// keras.layers.GlobalAveragePooling2D(data_format, keepdims): `layers::GlobalAveragePooling2D()`.
OSPREY_GLOBAL_POOLING_LAYER(GlobalMaxPooling1D, max, 1)
OSPREY_GLOBAL_POOLING_LAYER(GlobalMaxPooling2D, max, 2)
OSPREY_GLOBAL_POOLING_LAYER(GlobalMaxPooling3D, max, 3)
OSPREY_GLOBAL_POOLING_LAYER(GlobalAveragePooling1D, average, 1)
OSPREY_GLOBAL_POOLING_LAYER(GlobalAveragePooling2D, average, 2)
OSPREY_GLOBAL_POOLING_LAYER(GlobalAveragePooling3D, average, 3)
#undef OSPREY_GLOBAL_POOLING_LAYER

/// Keras's other names for the pooling layers (keras.layers.MaxPool2D is MaxPooling2D).
using MaxPool1D = MaxPooling1D;
using MaxPool2D = MaxPooling2D;
using MaxPool3D = MaxPooling3D;
using AvgPool1D = AveragePooling1D;
using AvgPool2D = AveragePooling2D;
using AvgPool3D = AveragePooling3D;
using GlobalMaxPool1D = GlobalMaxPooling1D;
using GlobalMaxPool2D = GlobalMaxPooling2D;
using GlobalMaxPool3D = GlobalMaxPooling3D;
using GlobalAvgPool1D = GlobalAveragePooling1D;
using GlobalAvgPool2D = GlobalAveragePooling2D;
using GlobalAvgPool3D = GlobalAveragePooling3D;

/// The keyword arguments of Keras's adaptive pooling layers besides output_size.
struct AdaptivePoolOptions {
  std::string data_format = "channels_last";
  std::string name{};
  std::string dtype{};  ///< a policy name; empty: the global policy
};

/// Keras's BaseAdaptivePooling: max or average pooling to a fixed output size (keras::ops::adaptive_max_pool /
/// adaptive_average_pool): output i of an axis of length L pools [floor(i·L/O), ceil((i+1)·L/O)).
class BaseAdaptivePooling : public Layer {
 public:
  BaseAdaptivePooling(osprey::ops::PoolKind kind, int rank, const Ints& output_size, AdaptivePoolOptions options);
  bool recordable() const override { return true; }
  std::string class_name() const override;
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  const std::vector<int64_t>& output_size() const { return output_size_; }

 private:
  osprey::ops::PoolKind kind_;
  int rank_;
  std::vector<int64_t> output_size_;
  AdaptivePoolOptions options_;
};

#define OSPREY_ADAPTIVE_POOLING_LAYER(Class, kind, rank)                                   \
  class Class : public BaseAdaptivePooling {                                              \
   public:                                                                                \
    explicit Class(const Ints& output_size, AdaptivePoolOptions options = {})             \
        : BaseAdaptivePooling(osprey::ops::PoolKind::kind, rank, output_size, std::move(options)) {} \
    OSPREY_KERAS_LAYER(Class)                                                             \
  };
/// keras.layers.AdaptiveAveragePooling2D(output_size, data_format): `layers::AdaptiveAveragePooling2D({7, 7})`
/// (one value: every spatial axis).
OSPREY_ADAPTIVE_POOLING_LAYER(AdaptiveMaxPooling1D, max, 1)
OSPREY_ADAPTIVE_POOLING_LAYER(AdaptiveMaxPooling2D, max, 2)
OSPREY_ADAPTIVE_POOLING_LAYER(AdaptiveMaxPooling3D, max, 3)
OSPREY_ADAPTIVE_POOLING_LAYER(AdaptiveAveragePooling1D, average, 1)
OSPREY_ADAPTIVE_POOLING_LAYER(AdaptiveAveragePooling2D, average, 2)
OSPREY_ADAPTIVE_POOLING_LAYER(AdaptiveAveragePooling3D, average, 3)
#undef OSPREY_ADAPTIVE_POOLING_LAYER

}  // namespace osprey::keras::layers
