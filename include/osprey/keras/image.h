// Images from disk (keras.utils.image_dataset_from_directory, load_img, save_img): PNG through libpng, JPEG through
// libjpeg-turbo, BMP through stb_image and GIF (its first frame) through giflib (Debian libpng-dev,
// libturbojpeg0-dev, libstb-dev, libgif-dev); decoded to float32 pixel values in [0, 255].
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "osprey/keras/data.h"
#include "osprey/tensor.h"

namespace osprey::keras::utils {

/// Whether this build decodes images (built with libpng and libjpeg-turbo).
bool image_codecs_available();
/// Whether this build decodes BMP and GIF files too (built with stb_image and giflib).
bool bmp_gif_available();

/// An image file as a (height, width, channels) float32 tensor of values in [0, 255] (keras.utils.load_img +
/// img_to_array), with Keras's values: Keras reads the file with Pillow, and so does this in effect (JPEG with
/// libjpeg's accurate DCT, grayscale by Pillow's "L" weights, any file as "rgba" with alpha 255 where it has none).
/// `color_mode`: "rgb" (3 channels), "grayscale" (1) or "rgba" (4). `target_size` (height, width), when it differs
/// from the image's, resizes it as Pillow's Image.resize does, to the same 8-bit values: `interpolation` "nearest"
/// (Keras's default), "bilinear", "bicubic", "hamming", "box" or "lanczos" (RGBA premultiplied, as Pillow);
/// `keep_aspect_ratio` resizes the centred crop of the target's aspect ratio. The format (PNG, JPEG, BMP, GIF)
/// comes from the file's first bytes, not its name; a GIF gives its first frame as TensorFlow's decode_gif does
/// (transparent pixels black, alpha 0). ValueError naming the file for one that does not decode (truncated, not an
/// image, larger than 2^28 pixel values) and for an unknown interpolation (Keras's message); NotFoundError when it
/// cannot be read.
Tensor load_img(const std::string& path, const std::string& color_mode = "rgb",
                std::optional<std::pair<int64_t, int64_t>> target_size = std::nullopt,
                const std::string& interpolation = "nearest", bool keep_aspect_ratio = false);
/// Writes a (height, width, channels) image of values in [0, 255] (1, 3 or 4 channels) as PNG, or as JPEG (quality
/// 95) when the path ends in .jpg / .jpeg (keras.utils.save_img). The file is written atomically.
void save_img(const std::string& path, const Tensor& image);

/// keras.utils.image_dataset_from_directory's arguments.
struct ImageDatasetOptions {
  std::string labels = "inferred";  ///< "inferred" (from the class folders) or "" (Keras's None: images only)
  std::string label_mode = "int";   ///< "int" (int32), "categorical" (one-hot float32), "binary" (float32 (n, 1)), ""
  std::vector<std::string> class_names{};  ///< the class folders to use, in label order (default: all, sorted)
  std::string color_mode = "rgb";
  int batch_size = 32;
  std::pair<int64_t, int64_t> image_size{256, 256};
  bool shuffle = true;               ///< the file order once (Keras's), and again after every epoch (Osprey's)
  /// NumPy RandomState's seed (0 to 2^32 - 1) that Keras shuffles the file list with: the same seed gives Keras's
  /// file order and so its training/validation split. Needed with shuffle and validation_split; unset, one is drawn
  /// at random (as Keras does).
  std::optional<uint64_t> seed{};
  double validation_split = 0.0;
  std::string subset{};              ///< "training" or "validation" with validation_split ("both": the _split call)
  /// tf.image.resize's method: "bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian" or
  /// "mitchellcubic"
  std::string interpolation = "bilinear";
  bool follow_links = false;         ///< descend into symbolic links to folders inside the class folders
  bool crop_to_aspect_ratio = false;
  bool verbose = true;               ///< prints Keras's "Found N files belonging to K classes."
};

/// The dataset image_dataset_from_directory returns: a PyDataset for fit() (each batch decoded when asked for),
/// or every image at once with load_all() (validation_data, evaluate, predict).
class ImageDataset : public PyDataset {
 public:
  ImageDataset(std::vector<std::string> files, std::vector<int> labels, std::vector<std::string> class_names,
               ImageDatasetOptions options);
  int64_t num_batches() const override;
  std::pair<Tensor, Tensor> get_batch(int64_t index) override;
  void on_epoch_end() override;
  /// Every image and its label, in the dataset's current order.
  std::pair<Tensor, Tensor> load_all();
  const std::vector<std::string>& class_names() const { return class_names_; }
  const std::vector<std::string>& file_paths() const { return files_; }
  const std::vector<int>& labels() const { return labels_; }

 private:
  std::pair<Tensor, Tensor> rows(int64_t begin, int64_t end);
  std::vector<std::string> files_;
  std::vector<int> labels_;
  std::vector<std::string> class_names_;
  ImageDatasetOptions options_;
  uint64_t epoch_ = 0;
};

/// Images in `directory`'s class folders (keras.utils.image_dataset_from_directory): files ending in .bmp, .gif,
/// .jpeg, .jpg or .png (any case), labelled by their folder in sorted order, listed and shuffled as Keras lists and
/// shuffles them. ValueError for a missing or empty directory, a bad option, a
/// file that does not decode (named).
std::shared_ptr<ImageDataset> image_dataset_from_directory(const std::string& directory,
                                                           ImageDatasetOptions options = {});
/// Keras's subset="both": the training and the validation dataset of one split (one index of the directory; the
/// validation subset is not reshuffled between epochs, as in Keras). Needs a validation_split.
std::pair<std::shared_ptr<ImageDataset>, std::shared_ptr<ImageDataset>> image_dataset_from_directory_split(
    const std::string& directory, ImageDatasetOptions options);

}  // namespace osprey::keras::utils
