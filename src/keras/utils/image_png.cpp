// PNG through libpng's low-level reader, for load_img (Pillow's values) and image_dataset_from_directory
// (TensorFlow's decode_png). Neither library applies a file's gAMA, sRGB or iCCP chunk, and both read a 16-bit file
// as its samples' high bytes -- where libpng's simplified API converts 16-bit data as linear light and 8-bit data by
// the file's gamma, so it is not used for reading. libpng reports errors by longjmp: only the two functions that
// call setjmp run libpng's reading, with nothing to destroy in their frames; the reader's structures belong to an
// object outside them. The header's dimensions are checked before any pixel buffer is allocated.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <csetjmp>
#include <cstdio>
#include <cstring>

#include "keras/utils/image_codecs.h"
#include "osprey/errors.h"

#if OSPREY_WITH_IMAGE_CODECS
#include <png.h>
#endif

namespace osprey::keras::utils::detail {

#if OSPREY_WITH_IMAGE_CODECS

namespace {

struct PngReader {
  png_structp png = nullptr;
  png_infop info = nullptr;
  const unsigned char* next = nullptr;
  std::size_t left = 0;
  char message[200] = {};

  PngReader() = default;
  PngReader(const PngReader&) = delete;
  PngReader& operator=(const PngReader&) = delete;
  ~PngReader() {
    if (png) png_destroy_read_struct(&png, info ? &info : nullptr, nullptr);
  }
};

void on_error(png_structp png, png_const_charp msg) {
  auto* r = static_cast<PngReader*>(png_get_error_ptr(png));
  std::snprintf(r->message, sizeof r->message, "%s", msg);
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}  // ancillary-chunk complaints; neither TensorFlow nor Pillow fails

void on_read(png_structp png, png_bytep out, std::size_t n) {
  auto* r = static_cast<PngReader*>(png_get_io_ptr(png));
  if (n > r->left) png_error(png, "the file ends before its image data does (truncated)");
  std::memcpy(out, r->next, n);
  r->next += n;
  r->left -= n;
}

// The file's header and, after the transforms, the layout of the rows libpng gives.
struct Layout {
  png_uint_32 width = 0, height = 0;
  int depth = 0, color_type = 0;
  bool trns = false;
  png_color_16 trns_color{};
  int channels = 0;  // values a pixel as read
  int bytes = 1;     // a value's bytes as read (2: 16 bits, host order)
  std::size_t row_bytes = 0;
};

// TensorFlow's decode_png transforms for `tf_channels` values a pixel (its CommonInitDecode at 8 bits a channel),
// or, for `tf_channels` 0, Pillow's samples: low-bit gray scaled to 8 bits, a palette's colours (and tRNS alphas),
// 16 bits cut to the high byte except a gray file without alpha (Pillow's "I;16"), tRNS otherwise left to the
// caller (Pillow compares it with the pixels its own way).
void set_transforms(png_structp png, const Layout& l, int tf_channels) {
  const bool palette = l.color_type == PNG_COLOR_TYPE_PALETTE;
  const bool gray = (l.color_type & PNG_COLOR_MASK_COLOR) == 0;
  const bool alpha = (l.color_type & PNG_COLOR_MASK_ALPHA) != 0;
  if (tf_channels == 0) {
    if (palette) {
      png_set_palette_to_rgb(png);
      if (l.trns) png_set_tRNS_to_alpha(png);
    }
    if (gray && l.depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (l.depth == 16) {
      if (gray && !alpha) {
        if constexpr (std::endian::native == std::endian::little) png_set_swap(png);
      } else {
        png_set_strip_16(png);
      }
    }
    return;
  }
  if ((tf_channels & 1) == 0) {  // alpha wanted
    if (!alpha) {
      if (l.trns) {
        png_set_tRNS_to_alpha(png);
      } else {
        png_set_add_alpha(png, (1u << l.depth) - 1u, PNG_FILLER_AFTER);
      }
    }
  } else if (alpha || l.trns) {
    png_set_strip_alpha(png);
  }
  if (l.depth > 8) png_set_strip_16(png);
  png_set_packing(png);
  if (palette) png_set_palette_to_rgb(png);
  if (gray && l.depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (tf_channels < 3) {
    if (!gray) png_set_rgb_to_gray_fixed(png, 1, 29900, 58700);  // ITU-R 601, as TensorFlow asks
  } else if (gray) {
    png_set_gray_to_rgb(png);
  }
}

bool read_header(PngReader& r, Layout& l, int tf_channels) {
  if (setjmp(png_jmpbuf(r.png))) return false;
  png_read_info(r.png, r.info);
  png_get_IHDR(r.png, r.info, &l.width, &l.height, &l.depth, &l.color_type, nullptr, nullptr, nullptr);
  l.trns = png_get_valid(r.png, r.info, PNG_INFO_tRNS) != 0;  // png_get_tRNS's return omits a palette's
  png_color_16p trns_color = nullptr;
  if (l.trns && png_get_tRNS(r.png, r.info, nullptr, nullptr, &trns_color) != 0 && trns_color) {
    l.trns_color = *trns_color;
  }
  set_transforms(r.png, l, tf_channels);
  png_set_interlace_handling(r.png);
  png_read_update_info(r.png, r.info);
  l.channels = png_get_channels(r.png, r.info);
  l.bytes = png_get_bit_depth(r.png, r.info) == 16 ? 2 : 1;
  l.row_bytes = png_get_rowbytes(r.png, r.info);
  return true;
}

bool read_rows(PngReader& r, png_bytepp rows) {
  if (setjmp(png_jmpbuf(r.png))) return false;
  png_read_image(r.png, rows);
  png_read_end(r.png, nullptr);
  return true;
}

// The whole image as libpng gives it after the transforms: `l.row_bytes` a row.
std::vector<unsigned char> read_png(const std::string& path, const std::string& data, int tf_channels, Layout& l) {
  PngReader r;
  r.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &r, on_error, on_warning);
  if (r.png) r.info = png_create_info_struct(r.png);
  if (!r.png || !r.info) throw InternalError(fmt::format("load_img: libpng could not start reading {}", path));
  r.next = reinterpret_cast<const unsigned char*>(data.data());
  r.left = data.size();
  png_set_read_fn(r.png, &r, on_read);
  if (!read_header(r, l, tf_channels)) {
    throw ValueError(fmt::format("load_img: {} is not a PNG image libpng can read: {}", path, r.message));
  }
  check_dimensions(path, l.width, l.height, std::max(l.channels * l.bytes, 4));
  if (l.row_bytes != static_cast<std::size_t>(l.width) * static_cast<std::size_t>(l.channels * l.bytes)) {
    throw InternalError(fmt::format("load_img: {}: libpng's rows have {} bytes, {} pixels of {} x {} bytes expected",
                                    path, l.row_bytes, l.width, l.channels, l.bytes));
  }
  std::vector<unsigned char> pixels(l.row_bytes * l.height);
  std::vector<png_bytep> rows(l.height);
  for (png_uint_32 y = 0; y < l.height; ++y) rows[y] = pixels.data() + y * l.row_bytes;
  if (!read_rows(r, rows.data())) {
    throw ValueError(fmt::format("load_img: {} does not decode as PNG: {}", path, r.message));
  }
  return pixels;
}

// Pillow's samples to RGBA, its "convert" rules: gray replicated; a tRNS colour compared with the pixels as Pillow
// holds them (a 1-bit file's as 0/255, 2- and 4-bit files' scaled values against the unscaled tRNS value, 16-bit
// colour's high bytes against the 16-bit tRNS values, a 16-bit gray file's values clipped at 255 first).
std::vector<unsigned char> pil_rgba(const std::vector<unsigned char>& in, const Layout& l) {
  const std::size_t n = static_cast<std::size_t>(l.width) * l.height;
  std::vector<unsigned char> rgba(n * 4);
  const bool key = l.trns && l.color_type != PNG_COLOR_TYPE_PALETTE && (l.channels == 1 || l.channels == 3);
  const unsigned gray_key = l.depth == 1 ? (l.trns_color.gray & 1u) * 255u : l.trns_color.gray;
  for (std::size_t i = 0; i < n; ++i) {
    unsigned char* o = rgba.data() + 4 * i;
    if (l.bytes == 2) {  // 16-bit gray (the only 16-bit layout left): Pillow's I;16 to RGB(A) clips at 255
      uint16_t v = 0;
      std::memcpy(&v, in.data() + 2 * i, 2);
      const unsigned c = std::min<unsigned>(v, 255u);
      o[0] = o[1] = o[2] = static_cast<unsigned char>(c);
      o[3] = key && c == l.trns_color.gray ? 0 : 255;
      continue;
    }
    const unsigned char* p = in.data() + static_cast<std::size_t>(l.channels) * i;
    switch (l.channels) {
      case 1:
        o[0] = o[1] = o[2] = p[0];
        o[3] = key && p[0] == gray_key ? 0 : 255;
        break;
      case 2:
        o[0] = o[1] = o[2] = p[0];
        o[3] = p[1];
        break;
      case 3:
        std::memcpy(o, p, 3);
        o[3] = key && p[0] == l.trns_color.red && p[1] == l.trns_color.green && p[2] == l.trns_color.blue ? 0 : 255;
        break;
      default: std::memcpy(o, p, 4);
    }
  }
  return rgba;
}

}  // namespace

std::vector<unsigned char> decode_png(const std::string& path, const std::string& data, int channels, Flavor flavor,
                                      int64_t& w, int64_t& h, std::vector<uint16_t>* gray16) {
  Layout l;
  const bool tf = flavor == Flavor::tensorflow;
  std::vector<unsigned char> pixels = read_png(path, data, tf ? channels : 0, l);
  w = l.width;
  h = l.height;
  if (tf) {
    if (l.channels != channels || l.bytes != 1) {
      throw InternalError(fmt::format("load_img: {}: libpng gave {} values of {} bytes a pixel, {} asked", path,
                                      l.channels, l.bytes, channels));
    }
    return pixels;
  }
  if (l.bytes == 2 && channels == 1) {  // Pillow's "I;16", kept as it is in grayscale
    if (!gray16) throw InternalError("decode_png: a 16-bit grayscale PNG needs somewhere to put its values");
    gray16->resize(pixels.size() / 2);
    std::memcpy(gray16->data(), pixels.data(), pixels.size());
    return {};
  }
  return pil_rgba(pixels, l);
}

#else

std::vector<unsigned char> decode_png(const std::string& path, const std::string&, int, Flavor, int64_t&, int64_t&,
                                      std::vector<uint16_t>*) {
  throw NotImplementedError(fmt::format("load_img: {}: this Osprey was built without libpng", path));
}

#endif

}  // namespace osprey::keras::utils::detail
