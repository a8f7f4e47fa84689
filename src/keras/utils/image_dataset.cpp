// keras.utils.image_dataset_from_directory: the files of a directory's class folders indexed as Keras indexes them
// (sorted folders and files, Keras's allowed extensions, validation split from the end of the shuffled list),
// decoded and resized batch by batch.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <set>

#include "keras/layers/preprocessing/crop.h"
#include "keras/utils/image_codecs.h"
#include "osprey/device.h"
#include "osprey/errors.h"
#include "osprey/keras/image.h"
#include "osprey/ops.h"

namespace osprey::keras::utils {

namespace fs = std::filesystem;

namespace {

constexpr int kMaxDepth = 64;           // folder nesting walked inside a class folder
constexpr std::size_t kMaxFiles = 1u << 24;
constexpr const char* kFormats[] = {".bmp", ".gif", ".jpeg", ".jpg", ".png"};

// Keras's ALLOWLIST_FORMATS, matched as Keras matches them: the lower-cased file name's ending.
bool allowed(const fs::path& p) {
  std::string name = p.filename().string();
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::any_of(std::begin(kFormats), std::end(kFormats), [&](const char* ext) { return name.ends_with(ext); });
}

// The image files under `dir` in the order Keras's walk lists them: folder by folder (the folders' paths sorted as
// strings), each folder's file names sorted -- so "cat/z.png" comes before "cat/nested/a.png".
std::vector<std::string> image_files(const fs::path& dir, bool follow_links) {
  std::vector<std::pair<std::string, std::string>> found;  // (folder, file name)
  std::error_code ec;
  auto options = follow_links ? fs::directory_options::follow_directory_symlink : fs::directory_options::none;
  fs::recursive_directory_iterator it(dir, options | fs::directory_options::skip_permission_denied, ec), end;
  if (ec) throw ValueError(fmt::format("image_dataset_from_directory: cannot list {}: {}", dir.string(), ec.message()));
  for (; it != end; it.increment(ec)) {
    if (ec) throw ValueError(fmt::format("image_dataset_from_directory: listing {} failed: {}", dir.string(), ec.message()));
    if (it.depth() > kMaxDepth) {
      throw ValueError(fmt::format("image_dataset_from_directory: {} nests folders more than {} deep (a link loop?)",
                                   dir.string(), kMaxDepth));
    }
    if (!it->is_regular_file(ec) || !allowed(it->path())) continue;
    found.emplace_back(it->path().parent_path().string(), it->path().filename().string());
    if (found.size() > kMaxFiles) throw ValueError(fmt::format("image_dataset_from_directory: more than 2^24 files in {}", dir.string()));
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  out.reserve(found.size());
  for (const auto& [folder, name] : found) out.push_back((fs::path(folder) / name).string());
  return out;
}

// NumPy's legacy RandomState(seed).shuffle, which Keras's index_directory applies to the file list (and, from a
// second RandomState of the same seed, to the labels): MT19937 seeded as init_genrand (std::mt19937's seeding),
// then for i = n-1 .. 1 a j in [0, i] by masked rejection sampling of 32-bit draws, and a swap. The same seed gives
// Keras's order, hence Keras's training and validation files.
void numpy_shuffle(std::vector<std::string>& files, std::vector<int>& labels, uint32_t seed) {
  std::mt19937 mt(seed);
  for (std::size_t i = files.size(); i-- > 1;) {
    uint32_t mask = static_cast<uint32_t>(i);
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    uint32_t j = 0;
    while ((j = static_cast<uint32_t>(mt()) & mask) > i) {
    }
    std::swap(files[i], files[j]);
    if (!labels.empty()) std::swap(labels[i], labels[j]);
  }
}

void check_options(const ImageDatasetOptions& o) {
  const auto one_of = [](const std::string& v, std::initializer_list<const char*> options) {
    return std::any_of(options.begin(), options.end(), [&](const char* s) { return v == s; });
  };
  if (!one_of(o.labels, {"inferred", ""})) {
    throw ValueError(fmt::format("`labels` argument should be \"inferred\" or None (\"\"); received: {} (a list of "
                                 "labels is not supported by Osprey yet)",
                                 o.labels));
  }
  if (!one_of(o.label_mode, {"int", "categorical", "binary", ""})) {
    throw ValueError(fmt::format("`label_mode` argument must be one of \"int\", \"categorical\", \"binary\", or None. "
                                 "Received: label_mode={}",
                                 o.label_mode));
  }
  if (!one_of(o.color_mode, {"rgb", "rgba", "grayscale"})) {
    throw ValueError(fmt::format("`color_mode` must be one of {{\"rgb\", \"rgba\", \"grayscale\"}}. Received: "
                                 "color_mode={}",
                                 o.color_mode));
  }
  if (o.batch_size < 1) throw ValueError(fmt::format("batch_size must be >= 1; received {}", o.batch_size));
  if (o.image_size.first < 1 || o.image_size.second < 1 || o.image_size.first > (1 << 16) ||
      o.image_size.second > (1 << 16)) {
    throw ValueError(fmt::format("image_size must be positive and at most 65536; received ({}, {})",
                                 o.image_size.first, o.image_size.second));
  }
  try {
    (void)osprey::ops::resize_method(o.interpolation);  // tf.image.resize's eight methods, as Keras accepts here
  } catch (const ValueError&) {
    throw ValueError(fmt::format("Argument `interpolation` should be one of ('bilinear', 'nearest', 'bicubic', "
                                 "'area', 'lanczos3', 'lanczos5', 'gaussian', 'mitchellcubic'). Received: "
                                 "interpolation={}",
                                 o.interpolation));
  }
  if (o.validation_split != 0.0) {
    if (!(o.validation_split > 0.0 && o.validation_split < 1.0)) {
      throw ValueError(fmt::format("`validation_split` must be between 0 and 1, received: {}", o.validation_split));
    }
    if (!one_of(o.subset, {"training", "validation", "both"})) {
      throw ValueError(fmt::format("If `validation_split` is set, `subset` must be \"training\", \"validation\" or "
                                   "\"both\"; received: subset={}",
                                   o.subset.empty() ? "None" : o.subset));
    }
    if (o.shuffle && !o.seed) {
      throw ValueError("If using `validation_split` and shuffling the data, you must provide a `seed` argument, to "
                       "make sure that there is no overlap between the training and validation subset.");
    }
  } else if (!o.subset.empty()) {
    throw ValueError(fmt::format("`subset` ({}) needs a `validation_split`", o.subset));
  }
  if (o.seed && *o.seed > 0xFFFFFFFFull) {  // NumPy's RandomState takes 32-bit seeds
    throw ValueError(fmt::format("Seed must be between 0 and 2**32 - 1; received seed={}", *o.seed));
  }
}

}  // namespace

namespace {

// Every file of `directory` with its label, in the (shuffled) order the split takes its subsets from.
struct Indexed {
  std::vector<std::string> files;
  std::vector<int> labels;
  std::vector<std::string> classes;
};

Indexed index_directory(const std::string& directory, ImageDatasetOptions& o) {
  check_options(o);
  if (!o.seed) o.seed = std::random_device{}() % 1000000u;  // as Keras: np.random.randint(1e6)
  std::error_code ec;
  if (!fs::is_directory(directory, ec)) {
    throw ValueError(fmt::format("image_dataset_from_directory: {} is not a directory", directory));
  }
  std::vector<std::string> files;
  std::vector<int> labels;
  std::vector<std::string> classes;
  if (o.labels == "inferred") {
    std::vector<std::string> subdirs;
    for (const auto& e : fs::directory_iterator(directory, ec)) {
      if (e.is_directory(ec)) subdirs.push_back(e.path().filename().string());
    }
    std::sort(subdirs.begin(), subdirs.end());
    if (!o.class_names.empty()) {
      if (std::set<std::string>(o.class_names.begin(), o.class_names.end()) !=
          std::set<std::string>(subdirs.begin(), subdirs.end())) {
        throw ValueError(fmt::format("The `class_names` passed did not match the names of the subdirectories of the "
                                     "target directory. Expected: [{}] (or a subset of it), but received: "
                                     "class_names=[{}]",
                                     fmt::join(subdirs, ", "), fmt::join(o.class_names, ", ")));
      }
      subdirs = o.class_names;
    }
    classes = subdirs;
    for (std::size_t k = 0; k < classes.size(); ++k) {
      for (auto& f : image_files(fs::path(directory) / classes[k], o.follow_links)) {
        files.push_back(std::move(f));
        labels.push_back(static_cast<int>(k));
      }
    }
    if (o.label_mode == "binary" && classes.size() != 2) {
      throw ValueError(fmt::format("When passing `label_mode=\"binary\"`, there must be exactly 2 class_names. "
                                   "Received: class_names=[{}]",
                                   fmt::join(classes, ", ")));
    }
  } else {
    files = image_files(directory, o.follow_links);
  }
  if (files.empty()) {
    throw ValueError(fmt::format("No images found in directory {}. Allowed formats: ('.bmp', '.gif', '.jpeg', "
                                 "'.jpg', '.png')",
                                 directory));
  }
  if (o.verbose) {
    if (o.labels == "inferred") std::printf("Found %zu files belonging to %zu classes.\n", files.size(), classes.size());
    else std::printf("Found %zu files.\n", files.size());
  }
  if (o.shuffle) numpy_shuffle(files, labels, static_cast<uint32_t>(*o.seed));
  return {std::move(files), std::move(labels), std::move(classes)};
}

// The subset ("training": the front, "validation": the last validation_split of the files; "": all of them) as a
// dataset.
std::shared_ptr<ImageDataset> subset_of(const Indexed& all, const std::string& subset, ImageDatasetOptions o) {
  std::size_t begin = 0, end = all.files.size();
  if (!subset.empty()) {
    const auto num_val = static_cast<std::size_t>(o.validation_split * static_cast<double>(all.files.size()));
    (subset == "training" ? end : begin) = all.files.size() - num_val;
    if (o.verbose) std::printf("Using %zu files for %s.\n", end - begin, subset.c_str());
    if (end == begin) throw ValueError(fmt::format("validation_split={} leaves no files for {}", o.validation_split, subset));
  }
  const auto at = [](std::size_t i) { return static_cast<std::ptrdiff_t>(i); };
  std::vector<std::string> files(all.files.begin() + at(begin), all.files.begin() + at(end));
  std::vector<int> labels;
  if (!all.labels.empty()) labels.assign(all.labels.begin() + at(begin), all.labels.begin() + at(end));
  o.subset = subset;
  return std::make_shared<ImageDataset>(std::move(files), std::move(labels), all.classes, std::move(o));
}

}  // namespace

std::shared_ptr<ImageDataset> image_dataset_from_directory(const std::string& directory, ImageDatasetOptions o) {
  if (o.subset == "both") {
    throw ValueError("image_dataset_from_directory: subset=\"both\" gives two datasets; call "
                     "image_dataset_from_directory_split for them");
  }
  const Indexed all = index_directory(directory, o);  // sets o.seed when it was not given
  auto ds = subset_of(all, o.validation_split != 0.0 ? o.subset : "", o);
  std::fflush(stdout);
  return ds;
}

std::pair<std::shared_ptr<ImageDataset>, std::shared_ptr<ImageDataset>> image_dataset_from_directory_split(
    const std::string& directory, ImageDatasetOptions o) {
  if (o.validation_split == 0.0) {
    throw ValueError("image_dataset_from_directory_split needs a `validation_split` in (0, 1)");
  }
  if (!o.subset.empty() && o.subset != "both") {
    throw ValueError(fmt::format("image_dataset_from_directory_split makes both subsets; received subset={}", o.subset));
  }
  o.subset = "both";
  const Indexed all = index_directory(directory, o);
  auto training = subset_of(all, "training", o);
  o.shuffle = false;  // as Keras: the validation subset keeps its order
  auto validation = subset_of(all, "validation", o);
  std::fflush(stdout);
  return {std::move(training), std::move(validation)};
}

ImageDataset::ImageDataset(std::vector<std::string> files, std::vector<int> labels,
                           std::vector<std::string> class_names, ImageDatasetOptions options)
    : files_(std::move(files)), labels_(std::move(labels)), class_names_(std::move(class_names)),
      options_(std::move(options)) {}

int64_t ImageDataset::num_batches() const {
  return (static_cast<int64_t>(files_.size()) + options_.batch_size - 1) / options_.batch_size;
}

std::pair<Tensor, Tensor> ImageDataset::rows(int64_t begin, int64_t end) {
  const auto [h, w] = options_.image_size;
  const int64_t c = options_.color_mode == "rgb" ? 3 : options_.color_mode == "rgba" ? 4 : 1;
  std::vector<float> pixels;
  pixels.reserve(static_cast<std::size_t>((end - begin) * h * w * c));
  DeviceScope cpu("/CPU:0");
  for (int64_t i = begin; i < end; ++i) {
    // tf.io.decode_image's values, as Keras's tf.data pipeline reads the file (load_img's are Pillow's).
    int64_t ih = 0, iw = 0;
    const auto decoded = detail::read_image(files_[static_cast<std::size_t>(i)], static_cast<int>(c),
                                            detail::Flavor::tensorflow, iw, ih);
    Tensor batch = Tensor::from_vector(std::vector<float>(decoded.begin(), decoded.end()), Shape({1, ih, iw, c}));
    if (options_.crop_to_aspect_ratio) batch = layers::crop_to_aspect(batch, h, w);
    const Tensor resized = osprey::ops::resize(batch, h, w, osprey::ops::resize_method(options_.interpolation));
    const auto v = resized.to_vector<float>();
    pixels.insert(pixels.end(), v.begin(), v.end());
  }
  const int64_t n = end - begin;
  Tensor x = Tensor::from_vector(pixels, Shape({n, h, w, c}));
  if (labels_.empty() || options_.label_mode.empty()) return {x, Tensor()};
  if (options_.label_mode == "int") {
    std::vector<int32_t> l(labels_.begin() + begin, labels_.begin() + end);
    return {x, Tensor::from_vector(l, Shape({n}))};
  }
  if (options_.label_mode == "binary") {
    std::vector<float> l(labels_.begin() + begin, labels_.begin() + end);
    return {x, Tensor::from_vector(l, Shape({n, 1}))};
  }
  const auto k = static_cast<int64_t>(class_names_.size());
  std::vector<float> onehot(static_cast<std::size_t>(n * k), 0.f);
  for (int64_t i = 0; i < n; ++i) onehot[static_cast<std::size_t>(i * k + labels_[static_cast<std::size_t>(begin + i)])] = 1.f;
  return {x, Tensor::from_vector(onehot, Shape({n, k}))};
}

std::pair<Tensor, Tensor> ImageDataset::get_batch(int64_t index) {
  if (index < 0 || index >= num_batches()) {
    throw InvalidArgumentError(fmt::format("ImageDataset: batch {} of {}", index, num_batches()));
  }
  const int64_t begin = index * options_.batch_size;
  return rows(begin, std::min<int64_t>(begin + options_.batch_size, static_cast<int64_t>(files_.size())));
}

std::pair<Tensor, Tensor> ImageDataset::load_all() { return rows(0, static_cast<int64_t>(files_.size())); }

// A new order for the next epoch (tf.data's reshuffle_each_iteration): the same shuffle from a seed derived from
// the epoch. Osprey's own order (TensorFlow's shuffle buffer is not reproduced); the same on every platform.
void ImageDataset::on_epoch_end() {
  if (!options_.shuffle) return;
  ++epoch_;
  numpy_shuffle(files_, labels_, static_cast<uint32_t>(options_.seed.value_or(0) + 0x9E3779B9ull * epoch_));
}

}  // namespace osprey::keras::utils
