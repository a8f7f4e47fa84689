// BMP through stb_image and GIF through giflib, for load_img and image_dataset_from_directory (Keras lists ".bmp"
// and ".gif" among its image formats and decodes them with tf.io.decode_image). Untrusted files: stb_image is asked
// for the header's dimensions first and giflib is driven record by record (not DGifSlurp, which allocates every
// frame), so no pixel buffer is allocated before its size is checked; a GIF's later frames are skipped undecoded.
#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>

#include "keras/utils/image_codecs.h"
#include "osprey/errors.h"
#include "osprey/keras/image.h"

#if OSPREY_WITH_BMP_GIF
#include <gif_lib.h>
#include <stb/stb_image.h>
#endif

namespace osprey::keras::utils::detail {

#if OSPREY_WITH_BMP_GIF

std::vector<unsigned char> decode_bmp(const std::string& path, const std::string& data, int64_t& width,
                                      int64_t& height) {
  if (data.size() > static_cast<std::size_t>(INT_MAX)) {
    throw ValueError(fmt::format("load_img: {} has {} bytes, too many for a BMP file", path, data.size()));
  }
  const auto* bytes = reinterpret_cast<const stbi_uc*>(data.data());
  const int len = static_cast<int>(data.size());
  int w = 0, h = 0, comp = 0;
  if (!stbi_info_from_memory(bytes, len, &w, &h, &comp)) {
    throw ValueError(fmt::format("load_img: {} is not a BMP image stb_image can read: {}", path,
                                 stbi_failure_reason() ? stbi_failure_reason() : "unknown"));
  }
  width = w;
  height = h;
  check_dimensions(path, width, height, 4);
  // stb_image reads past the end of a cut file as zeros; the pixel rows the header promises must be there (as
  // TensorFlow's decode_bmp checks). Rows are padded to 4 bytes; RLE files stb_image refuses itself.
  const auto u16 = [&](std::size_t at) { return data.size() >= at + 2 ? bytes[at] | bytes[at + 1] << 8 : 0; };
  const auto u32 = [&](std::size_t at) {
    return data.size() >= at + 4 ? uint32_t{bytes[at]} | uint32_t{bytes[at + 1]} << 8 | uint32_t{bytes[at + 2]} << 16 |
                                       uint32_t{bytes[at + 3]} << 24
                                 : 0u;
  };
  const int bits = u32(14) == 12 ? u16(24) : u16(28);  // BITMAPCOREHEADER or a later info header
  const uint64_t row_bytes = (static_cast<uint64_t>(bits) * static_cast<uint64_t>(width) + 31) / 32 * 4;
  const uint64_t needed = uint64_t{u32(10)} + row_bytes * static_cast<uint64_t>(height);
  if (data.size() < needed) {
    throw ValueError(fmt::format("load_img: {} is a cut BMP file: {} bytes, its header promises {}x{} pixels of {} "
                                 "bits from byte {} ({} bytes)",
                                 path, data.size(), width, height, bits, u32(10), needed));
  }
  // TensorFlow's decode_bmp keeps a 32-bit file's fourth byte as alpha and gives 255 for the others; stb_image
  // does the same (and reads a 32-bit file whose alpha is 0 everywhere as opaque).
  std::unique_ptr<stbi_uc, void (*)(void*)> pixels(stbi_load_from_memory(bytes, len, &w, &h, &comp, 4),
                                                    stbi_image_free);
  if (!pixels || w != width || h != height) {
    throw ValueError(fmt::format("load_img: {} does not decode as BMP: {}", path,
                                 stbi_failure_reason() ? stbi_failure_reason() : "unknown"));
  }
  return std::vector<unsigned char>(pixels.get(), pixels.get() + 4 * width * height);
}

namespace {

constexpr int kMaxGifFrames = 1 << 16;  // frames walked for the canvas size; a GIF with more is refused

struct GifInput {
  const unsigned char* next;
  std::size_t left;
};

int read_gif_bytes(GifFileType* gif, GifByteType* buf, int size) {
  auto* in = static_cast<GifInput*>(gif->UserData);
  const std::size_t n = std::min(in->left, static_cast<std::size_t>(std::max(size, 0)));
  std::memcpy(buf, in->next, n);
  in->next += n;
  in->left -= n;
  return static_cast<int>(n);
}

struct GifCloser {
  void operator()(GifFileType* gif) const {
    int error = 0;
    DGifCloseFile(gif, &error);
  }
};

const char* gif_error(int code) {
  const char* s = GifErrorString(code);
  return s ? s : "unknown error";
}

// Pillow's first frame: the canvas is the logical screen (grown to hold the frame where it reaches past it), filled
// with the transparent colour index where the frame has one, else index 0, under the frame's indices; colours from
// the frame's colour table (or the global one), black for an index past its end; without a table, or with one that
// is the gray ramp (Pillow's mode "L"), the index is the gray value. Alpha is 0 at the transparent index.
std::vector<unsigned char> pil_first_frame(const std::string& path, const GifFileType& gif, const GifImageDesc& frame,
                                           const std::vector<GifByteType>& indices, int transparent, int64_t& width,
                                           int64_t& height) {
  width = std::max<int64_t>(gif.SWidth, int64_t{frame.Left} + frame.Width);
  height = std::max<int64_t>(gif.SHeight, int64_t{frame.Top} + frame.Height);
  check_dimensions(path, width, height, 4);
  const ColorMapObject* map = frame.ColorMap ? frame.ColorMap : gif.SColorMap;
  std::vector<GifColorType> palette;
  if (map) palette.assign(map->Colors, map->Colors + std::max(map->ColorCount, 0));
  bool ramp = true;  // Pillow's _is_palette_needed, negated
  for (std::size_t i = 0; i < palette.size() && ramp; ++i) {
    ramp = palette[i].Red == i && palette[i].Green == i && palette[i].Blue == i;
  }
  const int fill = transparent >= 0 && transparent <= 255 ? transparent : 0;
  std::vector<unsigned char> rgba(static_cast<std::size_t>(width * height * 4));
  for (int64_t y = 0; y < height; ++y) {
    for (int64_t x = 0; x < width; ++x) {
      const int64_t fx = x - frame.Left, fy = y - frame.Top;
      const int index = fx >= 0 && fy >= 0 && fx < frame.Width && fy < frame.Height
                            ? indices[static_cast<std::size_t>(fy * frame.Width + fx)]
                            : fill;
      unsigned char* o = rgba.data() + 4 * (y * width + x);
      if (ramp) {
        o[0] = o[1] = o[2] = static_cast<unsigned char>(index);
      } else if (index < static_cast<int>(palette.size())) {
        o[0] = palette[static_cast<std::size_t>(index)].Red;
        o[1] = palette[static_cast<std::size_t>(index)].Green;
        o[2] = palette[static_cast<std::size_t>(index)].Blue;
      } else {
        o[0] = o[1] = o[2] = 0;
      }
      o[3] = index == transparent ? 0 : 255;
    }
  }
  return rgba;
}

}  // namespace

// TensorFlow's first frame: the canvas is as wide and tall as the largest frame; where the first frame does not
// cover it, and at the first frame's transparent colour index, pixels are black (and alpha 0); a colour index
// outside the colour table, or a frame without one, is an error. Pillow's: pil_first_frame (no later frame read).
std::vector<unsigned char> decode_gif(const std::string& path, const std::string& data, int64_t& width,
                                      int64_t& height, Flavor flavor) {
  const bool pil = flavor == Flavor::pil;
  GifInput input{reinterpret_cast<const unsigned char*>(data.data()), data.size()};
  int error = D_GIF_SUCCEEDED;
  std::unique_ptr<GifFileType, GifCloser> gif(DGifOpen(&input, read_gif_bytes, &error));
  if (!gif) throw ValueError(fmt::format("load_img: {} is not a GIF image giflib can read: {}", path, gif_error(error)));
  const auto fail = [&](const char* what) {
    return ValueError(fmt::format("load_img: {} does not decode as GIF ({}): {}", path, what, gif_error(gif->Error)));
  };
  int transparent = NO_TRANSPARENT_COLOR;  // from the graphics control block before the first frame
  bool control_seen = false;
  int frames = 0;
  GifImageDesc first{};
  std::vector<GifByteType> indices;  // the first frame's colour indices, de-interlaced
  std::vector<GifColorType> palette;
  int64_t canvas_w = 0, canvas_h = 0;
  for (GifRecordType type = UNDEFINED_RECORD_TYPE; type != TERMINATE_RECORD_TYPE;) {
    if (DGifGetRecordType(gif.get(), &type) == GIF_ERROR) {
      if (frames > 0 && gif->Error != D_GIF_ERR_EOF_TOO_SOON) break;  // trailing junk after whole frames, as TF
      throw fail("reading a record");
    }
    if (type == EXTENSION_RECORD_TYPE) {
      int code = 0;
      GifByteType* ext = nullptr;
      if (DGifGetExtension(gif.get(), &code, &ext) == GIF_ERROR) throw fail("reading an extension");
      if (frames == 0 && code == GRAPHICS_EXT_FUNC_CODE && ext && !control_seen) {
        GraphicsControlBlock gcb{};
        if (DGifExtensionToGCB(ext[0], ext + 1, &gcb) == GIF_OK) {
          transparent = gcb.TransparentColor;
          control_seen = true;
        }
      }
      while (ext) {
        if (DGifGetExtensionNext(gif.get(), &ext) == GIF_ERROR) throw fail("reading an extension");
      }
    } else if (type == IMAGE_DESC_RECORD_TYPE) {
      if (DGifGetImageDesc(gif.get()) == GIF_ERROR) throw fail("reading a frame's descriptor");
      const GifImageDesc& d = gif->Image;
      if (++frames > kMaxGifFrames) {
        throw ValueError(fmt::format("load_img: {} has more than {} frames; not loaded", path, kMaxGifFrames));
      }
      canvas_w = std::max<int64_t>(canvas_w, d.Width);
      canvas_h = std::max<int64_t>(canvas_h, d.Height);
      if (frames == 1) {
        first = d;
        check_dimensions(path, d.Width, d.Height, 4);
        const ColorMapObject* map = d.ColorMap ? d.ColorMap : gif->SColorMap;
        if (!map && !pil) {
          throw ValueError(fmt::format("load_img: {} is a GIF whose first frame has no colour table", path));
        }
        if (map) palette.assign(map->Colors, map->Colors + map->ColorCount);
        indices.resize(static_cast<std::size_t>(d.Width) * static_cast<std::size_t>(d.Height));
        const auto row = [&](int64_t y) {
          if (DGifGetLine(gif.get(), indices.data() + y * d.Width, d.Width) == GIF_ERROR) throw fail("frame 0");
        };
        if (d.Interlace) {
          static constexpr int kStart[4] = {0, 4, 2, 1}, kStep[4] = {8, 8, 4, 2};
          for (int pass = 0; pass < 4; ++pass) {
            for (int64_t y = kStart[pass]; y < d.Height; y += kStep[pass]) row(y);
          }
        } else {
          for (int64_t y = 0; y < d.Height; ++y) row(y);
        }
        if (pil) return pil_first_frame(path, *gif, first, indices, transparent, width, height);
      } else {  // later frames: only their size counts; their data is skipped undecoded
        int code_size = 0;
        GifByteType* block = nullptr;
        if (DGifGetCode(gif.get(), &code_size, &block) == GIF_ERROR) throw fail("skipping a frame");
        while (block) {
          if (DGifGetCodeNext(gif.get(), &block) == GIF_ERROR) throw fail("skipping a frame");
        }
      }
    }
  }
  if (frames == 0) throw ValueError(fmt::format("load_img: {} is a GIF file without any image", path));
  width = canvas_w;
  height = canvas_h;
  check_dimensions(path, width, height, 4);
  std::vector<unsigned char> rgba(static_cast<std::size_t>(width * height * 4), 0);
  const int64_t left = std::max<int64_t>(first.Left, 0), top = std::max<int64_t>(first.Top, 0);
  const int64_t right = std::min<int64_t>(int64_t{first.Left} + first.Width, width);
  const int64_t bottom = std::min<int64_t>(int64_t{first.Top} + first.Height, height);
  for (int64_t y = top; y < bottom; ++y) {
    for (int64_t x = left; x < right; ++x) {
      const int index = indices[static_cast<std::size_t>((y - first.Top) * first.Width + (x - first.Left))];
      if (index == transparent) continue;
      if (index >= static_cast<int>(palette.size())) {
        throw ValueError(fmt::format("load_img: {}: found color index {} outside of color map range {}", path, index,
                                     palette.size()));
      }
      unsigned char* o = rgba.data() + 4 * (y * width + x);
      o[0] = palette[static_cast<std::size_t>(index)].Red;
      o[1] = palette[static_cast<std::size_t>(index)].Green;
      o[2] = palette[static_cast<std::size_t>(index)].Blue;
      o[3] = 255;
    }
  }
  return rgba;
}

#else

namespace {

[[noreturn]] void unavailable(const std::string& path, const char* format) {
  throw NotImplementedError(fmt::format("load_img: {} is a {} file; this Osprey was built without giflib and stb "
                                       "(Debian: libgif-dev libstb-dev; scripts/bootstrap.sh installs them)",
                                       path, format));
}

}  // namespace

std::vector<unsigned char> decode_bmp(const std::string& path, const std::string&, int64_t&, int64_t&) {
  unavailable(path, "BMP");
}
std::vector<unsigned char> decode_gif(const std::string& path, const std::string&, int64_t&, int64_t&, Flavor) {
  unavailable(path, "GIF");
}

#endif

}  // namespace osprey::keras::utils::detail

namespace osprey::keras::utils {
bool bmp_gif_available() { return OSPREY_WITH_BMP_GIF != 0; }
}  // namespace osprey::keras::utils
