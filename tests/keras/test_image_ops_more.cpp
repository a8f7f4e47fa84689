// keras.ops.image's pad_images, crop_images, extract_patches, sobel_edges, ssim and map_coordinates against Keras 3
// on TensorFlow (tests/keras/keras_image_ops_reference.py regenerates tests/data/keras_image_ops.json): values for each
// option, gradients of a weighted sum through GradientTape, and Keras's errors.
#include <gtest/gtest.h>

#include <functional>

#include <nlohmann/json.hpp>

#include "keras/reference_json.h"
#include "osprey/autodiff.h"
#include "osprey/errors.h"
#include "osprey/keras.h"
#include "osprey/keras/ops.h"
#include "test_util.h"

using namespace osprey;
using nlohmann::json;
using osprey::testing::expect_close;
using osprey::testing::tensor_of;
namespace kops = osprey::keras::ops;

namespace {

const json& image_ops_more_ref() {
  static const json r = osprey::testing::read_reference("keras_image_ops.json");
  return r;
}

Tensor img() { return tensor_of(image_ops_more_ref().at("img")); }
Tensor first(const Tensor& x) { return ops::transpose(x, {0, 3, 1, 2}); }

// The gradients of sum(f(xs) * w) with respect to each x, w from the reference.
std::vector<Tensor> gradients(const std::function<Tensor(const std::vector<Tensor>&)>& f, std::vector<Tensor> xs,
                              const json& w) {
  GradientTape tape;
  for (const auto& x : xs) tape.watch(x);
  const Tensor y = f(xs);
  const Tensor s = ops::reduce_sum(ops::mul(kops::cast(y, DType::float32), tensor_of(w)));
  return tape.gradient(s, xs);
}

}  // namespace

TEST(ImageOpsMore, PadAndCropImagesAsKeras) {
  const json& p = image_ops_more_ref().at("pad");
  expect_close(kops::pad_images(img(), {.top_padding = 1, .left_padding = 2, .bottom_padding = 0, .right_padding = 3}),
               p.at("a"), 0, "pad a");
  expect_close(kops::pad_images(img(), {.top_padding = 2, .right_padding = 1, .target_height = 12, .target_width = 11}),
               p.at("target"), 0, "pad target");
  expect_close(kops::pad_images(kops::squeeze(kops::slice(first(img()), {0, 0, 0, 0}, {1, 3, 7, 9}), 0),
                                {.left_padding = 0, .bottom_padding = 2, .target_height = 10, .target_width = 9,
                                 .data_format = "channels_first"}),
               p.at("unbatched_first"), 0, "pad unbatched first");
  const json& c = image_ops_more_ref().at("crop");
  expect_close(kops::crop_images(img(), {.top_cropping = 1, .left_cropping = 2, .bottom_cropping = 2, .right_cropping = 3}),
               c.at("a"), 0, "crop a");
  expect_close(kops::crop_images(img(), {.top_cropping = 2, .right_cropping = 1, .target_height = 3, .target_width = 5}),
               c.at("target"), 0, "crop target");
  expect_close(kops::crop_images(kops::squeeze(kops::slice(first(img()), {0, 0, 0, 0}, {1, 3, 7, 9}), 0),
                                 {.left_cropping = 1, .bottom_cropping = 2, .target_height = 4, .target_width = 6,
                                  .data_format = "channels_first"}),
               c.at("unbatched_first"), 0, "crop unbatched first");
  // Keras's errors: two of three, negative numbers, and a window past the image.
  EXPECT_THROW((void)kops::pad_images(img(), {.top_padding = 1, .left_padding = 1}), ValueError);
  EXPECT_THROW((void)kops::pad_images(img(), {.top_padding = 1, .left_padding = 1, .bottom_padding = 1,
                                              .right_padding = 1, .target_height = 9}),
               ValueError);
  EXPECT_THROW((void)kops::pad_images(img(), {.top_padding = 9, .left_padding = 0, .right_padding = 0,
                                              .target_height = 8}),
               ValueError);
  EXPECT_THROW((void)kops::crop_images(img(), {.top_cropping = 5, .left_cropping = 0, .right_cropping = 0,
                                               .target_height = 3}),
               ValueError);
  EXPECT_THROW((void)kops::crop_images(Tensor::zeros({4, 5}), {.top_cropping = 0, .left_cropping = 0,
                                                               .bottom_cropping = 0, .right_cropping = 0}),
               ValueError);
}

TEST(ImageOpsMore, ExtractPatchesAsKeras) {
  const json& p = image_ops_more_ref().at("patches");
  const Tensor vol = tensor_of(image_ops_more_ref().at("vol"));
  expect_close(kops::extract_patches(img(), {3}), p.at("size3"), 0, "size 3");
  expect_close(kops::extract_patches(img(), {2, 3}, {1, 2}), p.at("size_2_3_strides_1_2"), 0, "2x3 strides 1,2");
  expect_close(kops::extract_patches(img(), {3, 4}, {2, 2}, {1}, "same"), p.at("same"), 0, "same");
  expect_close(kops::extract_patches(img(), {2}, {1}, {2}), p.at("dilated"), 0, "dilated");
  expect_close(kops::extract_patches(first(img()), {3}, {2}, {1}, "valid", "channels_first"), p.at("first"), 0,
               "channels_first");
  expect_close(kops::extract_patches(kops::squeeze(kops::slice(img(), {0, 0, 0, 0}, {1, 7, 9, 3}), 0), {3, 3}, {2, 3}),
               p.at("unbatched"), 0, "unbatched");
  expect_close(kops::extract_patches(vol, {2, 3, 2}), p.at("3d"), 0, "3d");
  expect_close(kops::extract_patches(vol, {2, 2, 3}, {1, 2, 2}, {1}, "same"), p.at("3d_strides"), 0, "3d same");
  const json& g = image_ops_more_ref().at("patches_grad");
  const auto grads = gradients([](const std::vector<Tensor>& x) { return kops::extract_patches(x[0], {3}, {2}); },
                               {img()}, g[1]);
  expect_close(grads[0], g[0][0], 1e-6, "patches gradient");
  EXPECT_THROW((void)kops::extract_patches(img(), {2, 2, 2, 2}), ValueError);
  EXPECT_THROW((void)kops::extract_patches(Tensor::zeros({4, 5}), {2}), ValueError);
}

TEST(ImageOpsMore, SobelEdgesAndSsimAsKeras) {
  const json& s = image_ops_more_ref().at("sobel");
  expect_close(kops::sobel_edges(img()), s.at("last"), 1e-6, "sobel");
  expect_close(kops::sobel_edges(first(img()), "channels_first"), s.at("first"), 1e-6, "sobel channels_first");
  const json& sg = image_ops_more_ref().at("sobel_grad");
  expect_close(gradients([](const std::vector<Tensor>& x) { return kops::sobel_edges(x[0]); }, {img()}, sg[1])[0],
               sg[0][0], 1e-5, "sobel gradient");
  EXPECT_THROW((void)kops::sobel_edges(Tensor::zeros({4, 5, 3})), ValueError);  // a batch only, as TensorFlow

  const Tensor a = tensor_of(image_ops_more_ref().at("ssim_images")[0]), b = tensor_of(image_ops_more_ref().at("ssim_images")[1]);
  const json& m = image_ops_more_ref().at("ssim");
  expect_close(kops::ssim(a, b), m.at("default"), 1e-6, "ssim");
  expect_close(kops::ssim(kops::multiply(a, 255.0), kops::multiply(b, 255.0), 255.0, 5, 1.0, 0.02, 0.05),
               m.at("options"), 1e-6, "ssim options");
  expect_close(kops::ssim(kops::squeeze(kops::slice(first(a), {0, 0, 0, 0}, {1, 2, 16, 14}), 0),
                          kops::squeeze(kops::slice(first(b), {0, 0, 0, 0}, {1, 2, 16, 14}), 0), 1.0, 7, 1.5, 0.01, 0.03,
                          "channels_first"),
               m.at("unbatched_first"), 1e-6, "ssim unbatched first");
  expect_close(kops::ssim(a, a), m.at("same"), 1e-6, "ssim of an image with itself");
  const json& g = image_ops_more_ref().at("ssim_grad");
  const auto grads = gradients([](const std::vector<Tensor>& x) { return kops::ssim(x[0], x[1], 1.0, 5); }, {a, b}, g[1]);
  expect_close(grads[0], g[0][0], 1e-4, "ssim gradient 1");
  expect_close(grads[1], g[0][1], 1e-4, "ssim gradient 2");
  EXPECT_THROW((void)kops::ssim(a, kops::slice(b, {0, 0, 0, 0}, {2, 16, 14, 2})), ValueError);
}

TEST(ImageOpsMore, MapCoordinatesAsKerasTensorFlowBackend) {
  const json& in = image_ops_more_ref().at("map_inputs");
  const Tensor arr2 = tensor_of(in.at("arr2")), coords2 = tensor_of(in.at("coords2"));
  const Tensor arr3 = tensor_of(in.at("arr3")), coords3 = tensor_of(in.at("coords3"));
  const Tensor iarr = tensor_of(in.at("iarr"), DType::int32), inside = tensor_of(in.at("inside"));
  const json& m = image_ops_more_ref().at("map");
  for (const int order : {0, 1}) {
    for (const std::string mode : {"constant", "nearest", "wrap", "reflect"}) {
      const std::string key = std::to_string(order) + "/" + mode;
      expect_close(kops::map_coordinates(arr2, coords2, order, mode, -3.0), m.at(key), 1e-6, key);
      expect_close(kops::map_coordinates(arr3, coords3, order, mode), m.at(key + "/3d"), 1e-6, key + "/3d");
    }
    const std::string key = std::to_string(order);
    const Tensor ints = kops::map_coordinates(iarr, coords2, order, "nearest");
    EXPECT_EQ(ints.dtype(), DType::int32);
    expect_close(ints.cast(DType::float32), m.at(key + "/int"), 0, key + "/int");
    expect_close(kops::map_coordinates(arr2, inside, order, "mirror"), m.at(key + "/mirror"), 1e-6, key + "/mirror");
  }
  const json& g = image_ops_more_ref().at("map_grad");
  const auto grads = gradients(
      [](const std::vector<Tensor>& x) { return kops::map_coordinates(x[0], x[1], 1, "constant", 0.5); },
      {arr2, coords2}, g[1]);
  expect_close(grads[0], g[0][0], 1e-5, "map gradient in the input");
  expect_close(grads[1], g[0][1], 1e-5, "map gradient in the coordinates");
  // Keras's TensorFlow backend: "mirror" at the far edge (index == size) is refused by the gather.
  ASSERT_EQ(image_ops_more_ref().at("mirror_edge_error"), "InvalidArgumentError");
  EXPECT_THROW((void)kops::map_coordinates(arr2, kops::full({2, 1, 1}, 4.5), 1, "mirror"), InvalidArgumentError);
  EXPECT_THROW((void)kops::map_coordinates(arr2, coords3, 1), ValueError);           // 3 coordinates for rank 2
  EXPECT_THROW((void)kops::map_coordinates(arr2, kops::zeros({2}), 1), ValueError);  // coordinates of rank 1
  EXPECT_THROW((void)kops::map_coordinates(arr2, coords2, 1, "edge"), ValueError);
  EXPECT_THROW((void)kops::map_coordinates(arr2, coords2, 3), NotImplementedError);
}
