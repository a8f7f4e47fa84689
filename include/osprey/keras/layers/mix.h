// Keras 3's augmentations that mix the images of a batch: MixUp and CutMix (images only: their dict form with labels,
// boxes and masks is a data-pipeline use that Osprey's layers do not take).
#pragma once

#include "osprey/keras/layers/color.h"

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

}  // namespace osprey::keras::layers
