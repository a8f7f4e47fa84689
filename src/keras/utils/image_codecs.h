// The image decoders behind keras.utils.load_img and image_dataset_from_directory, shared between image_io.cpp (PNG,
// JPEG, the format dispatch, the conversion to a colour mode) and image_bmp_gif.cpp (BMP, GIF). Each decoder takes
// the whole file (already size-bounded), checks the header's dimensions before allocating pixels, and returns 8-bit
// values a pixel, row-major, with the image's width and height (a 16-bit grayscale PNG read as Pillow does: 16 bits).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace osprey::keras::utils::detail {

/// Whose pixel values a decode gives: TensorFlow's tf.io.decode_image (image_dataset_from_directory; JPEG with the
/// fast integer DCT, gray by decode_png's weights, JPEG refused as rgba) or Pillow's (keras.utils.load_img; JPEG with
/// the accurate DCT, gray by Pillow's "L" conversion, any file as rgba with alpha 255 where it has none).
enum class Flavor { tensorflow, pil };

/// ValueError naming `path` for an empty image or one of more than 2^28 decoded values.
void check_dimensions(const std::string& path, int64_t width, int64_t height, int channels);

/// A BMP file through stb_image (uncompressed 1/4/8-bit palettes, 16, 24 and 32 bits a pixel, bit fields), as RGBA.
std::vector<unsigned char> decode_bmp(const std::string& path, const std::string& data, int64_t& width,
                                      int64_t& height);
/// A GIF file's first frame through giflib, as RGBA. tensorflow: as decode_gif (expand_animations=False) gives it
/// (alpha 0 where TensorFlow gives black for a transparent or uncovered pixel). pil: as Pillow opens it (the logical
/// screen's size, uncovered pixels the transparent colour or colour 0, alpha 0 at the transparent index only).
std::vector<unsigned char> decode_gif(const std::string& path, const std::string& data, int64_t& width,
                                      int64_t& height, Flavor flavor);


/// A PNG file through libpng's low-level reader (image_png.cpp), without gamma correction (neither TensorFlow nor
/// Pillow applies a gAMA, sRGB or iCCP chunk). tensorflow: decode_png's own libpng transforms for `channels` values a
/// pixel (16 bits cut to the high byte, tRNS compared at the file's depth, gray by libpng's 601 weights). pil: RGBA
/// from Pillow's modes (16-bit colour cut to the high byte, a tRNS colour compared as Pillow compares it), except a
/// 16-bit gray file without alpha asked for 1 channel: Pillow's "I;16" values go to `gray16` and the result is empty.
std::vector<unsigned char> decode_png(const std::string& path, const std::string& data, int channels, Flavor flavor,
                                      int64_t& width, int64_t& height, std::vector<uint16_t>* gray16);

/// The file at `path` decoded (format from its first bytes) to `channels` values a pixel; for the pil flavor and 1
/// channel, a 16-bit grayscale PNG's values go to `gray16` (required then) and the result is empty.
std::vector<unsigned char> read_image(const std::string& path, int channels, Flavor flavor, int64_t& width,
                                      int64_t& height, std::vector<uint16_t>* gray16 = nullptr);

/// Pillow's resampling filters, as keras.utils.load_img names them.
enum class PilFilter { nearest, box, bilinear, hamming, bicubic, lanczos };
/// ValueError (Keras's message) for a name load_img does not take.
PilFilter pil_filter(const std::string& name);
/// Pillow's Image.resize of an 8-bit image (1, 3 or 4 channels; 4 = RGBA) to out_w x out_h from the source box
/// (left, top, right, bottom).
std::vector<unsigned char> pil_resize(const std::vector<unsigned char>& pixels, int64_t w, int64_t h, int channels,
                                      int64_t out_w, int64_t out_h, PilFilter filter, std::array<float, 4> box);
/// Pillow's Image.resize of a 16-bit grayscale ("I;16") image: the same passes with double weights, each sum rounded
/// and clipped to 16 bits.
std::vector<uint16_t> pil_resize(const std::vector<uint16_t>& pixels, int64_t w, int64_t h, int64_t out_w,
                                 int64_t out_h, PilFilter filter, std::array<float, 4> box);

}  // namespace osprey::keras::utils::detail
