// Decoding and encoding image files with Debian's libraries: libjpeg-turbo's TurboJPEG API and libpng's simplified
// API for writing (both report errors instead of exiting); reading PNG in image_png.cpp, BMP and GIF in
// image_bmp_gif.cpp. Untrusted files: the whole file is
// read with a size bound first, the header's dimensions are checked before any pixel buffer is allocated, and the
// format comes from the magic bytes. Built without the libraries, every call is a clear error.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <utility>
#include <vector>

#include "core/atomic_file.h"
#include "keras/utils/image_codecs.h"
#include "osprey/errors.h"
#include "osprey/keras/image.h"
#include "osprey/ops.h"
#include "osprey/device.h"

#if OSPREY_WITH_IMAGE_CODECS
#include <png.h>
#include <turbojpeg.h>
#endif

namespace osprey::keras::utils {

namespace {
constexpr int64_t kMaxFileBytes = int64_t{1} << 30;
constexpr int64_t kMaxValues = int64_t{1} << 28;  // decoded pixel values (height · width · channels)
}  // namespace

namespace detail {

void check_dimensions(const std::string& path, int64_t width, int64_t height, int channels) {
  if (width < 1 || height < 1 || width * height > kMaxValues / channels) {
    throw ValueError(fmt::format("load_img: {} is {}x{} pixels: empty, or more than 2^28 values decoded; not "
                                 "loaded",
                                 path, width, height));
  }
}

}  // namespace detail

namespace {

using detail::check_dimensions;

int channels_of(const std::string& color_mode) {
  if (color_mode == "rgb") return 3;
  if (color_mode == "grayscale") return 1;
  if (color_mode == "rgba") return 4;
  throw ValueError(fmt::format("color_mode must be \"rgb\", \"rgba\" or \"grayscale\"; received: {}", color_mode));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw NotFoundError(fmt::format("load_img: cannot open {}", path));
  const std::streamoff size = in.tellg();
  if (size < 0 || size > kMaxFileBytes) {
    throw ValueError(fmt::format("load_img: {} has {} bytes, more than an image file may have here (2^30)", path,
                                 static_cast<int64_t>(size)));
  }
  std::string data(static_cast<std::size_t>(size), '\0');
  in.seekg(0);
  in.read(data.data(), size);
  if (!in) throw ValueError(fmt::format("load_img: reading {} failed", path));
  return data;
}

#if OSPREY_WITH_IMAGE_CODECS

struct Tj {
  tjhandle h;
  explicit Tj(tjhandle handle) : h(handle) {}
  ~Tj() {
    if (h) tjDestroy(h);
  }
  Tj(const Tj&) = delete;
  Tj& operator=(const Tj&) = delete;
};

// `accurate`: libjpeg's default DCT (ISLOW), as Pillow decodes (and then any channel count); else TensorFlow's.
std::vector<unsigned char> decode_jpeg(const std::string& path, const std::string& data, int channels, int64_t& w,
                                       int64_t& h, bool accurate) {
  if (channels == 4 && !accurate) {  // as TensorFlow's decode_image
    throw ValueError(fmt::format("load_img: {} is a JPEG image: JPEG does not support 4 channels (color_mode "
                                 "\"rgba\"); use \"rgb\" or \"grayscale\"",
                                 path));
  }
  Tj tj(tjInitDecompress());
  if (!tj.h) throw InternalError("load_img: TurboJPEG could not be initialised");
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  auto* bytes = reinterpret_cast<unsigned char*>(const_cast<char*>(data.data()));
  if (tjDecompressHeader3(tj.h, bytes, data.size(), &width, &height, &subsampling, &colorspace) != 0) {
    throw ValueError(fmt::format("load_img: {} is not a JPEG image: {}", path, tjGetErrorStr2(tj.h)));
  }
  w = width;
  h = height;
  check_dimensions(path, w, h, channels);
  const int format = channels == 1 ? TJPF_GRAY : channels == 3 ? TJPF_RGB : TJPF_RGBA;
  std::vector<unsigned char> pixels(static_cast<std::size_t>(w * h * channels));
  // TensorFlow's decode_jpeg default DCT (INTEGER_FAST), so that the pixel values are the ones Keras reads
  // through tf.data; Pillow's (load_img) is libjpeg's default, ISLOW. A warning (a truncated file, corrupt data) is
  // an error too, as TensorFlow's decode_jpeg makes it.
  if (tjDecompress2(tj.h, bytes, data.size(), pixels.data(), width, 0, height, format,
                    accurate ? 0 : TJFLAG_FASTDCT) != 0) {
    throw ValueError(fmt::format("load_img: {} does not decode as JPEG: {}", path, tjGetErrorStr2(tj.h)));
  }
  return pixels;
}

#endif

void require_codecs(const char* what) {
  if (!image_codecs_available()) {
    throw NotImplementedError(fmt::format("{}: this Osprey was built without libpng and libjpeg-turbo (Debian: "
                                         "libpng-dev libturbojpeg0-dev; scripts/bootstrap.sh installs them)",
                                         what));
  }
}

}  // namespace

bool image_codecs_available() { return OSPREY_WITH_IMAGE_CODECS != 0; }

namespace {

// RGBA to the colour mode's channels: alpha dropped for 3, gray for 1 -- TensorFlow's decode_png weights (0.299,
// 0.587, 0.114 in 15-bit fixed point, truncated; a gray pixel keeps its value) or Pillow's "L" (ITU-R 601-2 luma in
// 16-bit fixed point, rounded).
std::vector<unsigned char> from_rgba(std::vector<unsigned char> rgba, int channels, detail::Flavor flavor) {
  if (channels == 4) return rgba;
  const std::size_t n = rgba.size() / 4;
  std::vector<unsigned char> out(n * static_cast<std::size_t>(channels));
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned r = rgba[4 * i], g = rgba[4 * i + 1], b = rgba[4 * i + 2];
    if (channels == 3) {
      std::memcpy(out.data() + 3 * i, rgba.data() + 4 * i, 3);
    } else if (flavor == detail::Flavor::pil) {
      out[i] = static_cast<unsigned char>((r * 19595u + g * 38470u + b * 7471u + 0x8000u) >> 16);
    } else {
      out[i] = (r == g && r == b) ? static_cast<unsigned char>(r)
                                  : static_cast<unsigned char>((9798u * r + 19235u * g + 3735u * b) >> 15);
    }
  }
  return out;
}

}  // namespace

namespace detail {

std::vector<unsigned char> read_image(const std::string& path, int channels, Flavor flavor, int64_t& w, int64_t& h,
                                      std::vector<uint16_t>* gray16) {
  require_codecs("load_img");
  const std::string data = read_file(path);
  std::vector<unsigned char> rgba;
#if OSPREY_WITH_IMAGE_CODECS
  const bool pil = flavor == Flavor::pil;
  const auto* b = reinterpret_cast<const unsigned char*>(data.data());
  if (data.size() >= 8 && std::memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0) {
    if (!pil) return decode_png(path, data, channels, flavor, w, h, nullptr);
    rgba = decode_png(path, data, channels, flavor, w, h, gray16);
    if (rgba.empty()) return {};  // 16-bit gray values in gray16
  } else if (data.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) {
    // TensorFlow's JPEG gray is libjpeg's own luma, not a conversion from RGB: decoded straight to the mode.
    if (!pil) return decode_jpeg(path, data, channels, w, h, false);
    rgba = decode_jpeg(path, data, 4, w, h, true);
  } else if (data.size() >= 2 && b[0] == 'B' && b[1] == 'M') {
    rgba = decode_bmp(path, data, w, h);
  } else if (data.size() >= 6 && (std::memcmp(b, "GIF87a", 6) == 0 || std::memcmp(b, "GIF89a", 6) == 0)) {
    rgba = decode_gif(path, data, w, h, flavor);
  } else {
    throw ValueError(fmt::format("load_img: {} is not a PNG, JPEG, BMP or GIF image (its first bytes say so; {} "
                                 "bytes)",
                                 path, data.size()));
  }
#endif
  return from_rgba(std::move(rgba), channels, flavor);
}

}  // namespace detail

Tensor load_img(const std::string& path, const std::string& color_mode,
                std::optional<std::pair<int64_t, int64_t>> target_size, const std::string& interpolation,
                bool keep_aspect_ratio) {
  const int channels = channels_of(color_mode);
  const detail::PilFilter filter = detail::pil_filter(interpolation);
  if (target_size && (target_size->first < 1 || target_size->second < 1 || target_size->first > kMaxValues ||
                      target_size->second > kMaxValues ||
                      target_size->first * target_size->second > kMaxValues / channels)) {
    throw ValueError(fmt::format("load_img: target_size ({}, {}) must be positive and at most 2^28 values",
                                 target_size->first, target_size->second));
  }
  int64_t w = 0, h = 0;
  std::vector<uint16_t> gray16;  // a 16-bit grayscale PNG in grayscale: Pillow's "I;16" values, not cut to 8 bits
  std::vector<unsigned char> pixels = detail::read_image(path, channels, detail::Flavor::pil, w, h, &gray16);
  if (target_size && (target_size->first != h || target_size->second != w)) {  // as Keras: only a new size
    const auto [th, tw] = *target_size;
    std::array<float, 4> box{0.f, 0.f, static_cast<float>(w), static_cast<float>(h)};
    if (keep_aspect_ratio) {  // Keras's centred crop to the target's aspect ratio, as the resize's source box
      const int64_t crop_h = std::min(h, (w * th) / tw), crop_w = std::min(w, (h * tw) / th);
      const int64_t top = (h - crop_h) / 2, left = (w - crop_w) / 2;
      box = {static_cast<float>(left), static_cast<float>(top), static_cast<float>(left + crop_w),
             static_cast<float>(top + crop_h)};
    }
    if (gray16.empty()) {
      pixels = detail::pil_resize(pixels, w, h, channels, tw, th, filter, box);
    } else {
      gray16 = detail::pil_resize(gray16, w, h, tw, th, filter, box);
    }
    w = tw;
    h = th;
  }
  std::vector<float> values = gray16.empty() ? std::vector<float>(pixels.begin(), pixels.end())
                                             : std::vector<float>(gray16.begin(), gray16.end());
  DeviceScope cpu("/CPU:0");
  return Tensor::from_vector(values, Shape({h, w, channels}));
}

void save_img(const std::string& path, const Tensor& image) {
  const Shape& s = image.shape();
  if (s.rank() != 3 || (s[2] != 1 && s[2] != 3 && s[2] != 4) || s[0] < 1 || s[1] < 1 || s[0] > (1 << 20) ||
      s[1] > (1 << 20)) {
    throw ValueError(fmt::format("save_img: expects an image (height, width, 1, 3 or 4 channels); got {}",
                                 s.to_string()));
  }
  require_codecs("save_img");
  const auto values = image.to("CPU:0").cast(DType::float32).to_vector<float>();
  std::vector<unsigned char> pixels(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float v = values[i] < 0.f ? 0.f : (values[i] > 255.f ? 255.f : values[i]);
    pixels[i] = static_cast<unsigned char>(v + 0.5f);
  }
  const int w = static_cast<int>(s[1]), h = static_cast<int>(s[0]), c = static_cast<int>(s[2]);
  const std::string lower = [&] {
    std::string l = path;
    for (char& ch : l) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return l;
  }();
  const bool jpeg = lower.ends_with(".jpg") || lower.ends_with(".jpeg");
  std::string encoded;
#if OSPREY_WITH_IMAGE_CODECS
  if (jpeg) {
    Tj tj(tjInitCompress());
    unsigned char* out = nullptr;
    unsigned long size = 0;
    const int format = c == 1 ? TJPF_GRAY : c == 3 ? TJPF_RGB : TJPF_RGBA;
    if (tjCompress2(tj.h, pixels.data(), w, 0, h, format, &out, &size, c == 1 ? TJSAMP_GRAY : TJSAMP_444, 95, 0) != 0) {
      const std::string why = tjGetErrorStr2(tj.h);
      tjFree(out);
      throw InternalError(fmt::format("save_img: JPEG encoding of {} failed: {}", path, why));
    }
    encoded.assign(reinterpret_cast<const char*>(out), size);
    tjFree(out);
  } else {
    png_image png;
    std::memset(&png, 0, sizeof png);
    png.version = PNG_IMAGE_VERSION;
    png.width = static_cast<png_uint_32>(w);
    png.height = static_cast<png_uint_32>(h);
    png.format = c == 1 ? PNG_FORMAT_GRAY : c == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
    png_alloc_size_t size = 0;
    if (!png_image_write_to_memory(&png, nullptr, &size, 0, pixels.data(), 0, nullptr)) {
      throw InternalError(fmt::format("save_img: PNG encoding of {} failed: {}", path, png.message));
    }
    encoded.resize(size);
    if (!png_image_write_to_memory(&png, encoded.data(), &size, 0, pixels.data(), 0, nullptr)) {
      throw InternalError(fmt::format("save_img: PNG encoding of {} failed: {}", path, png.message));
    }
    encoded.resize(size);
  }
#endif
  core::write_file_atomically(path, encoded, "save_img");
}

}  // namespace osprey::keras::utils
