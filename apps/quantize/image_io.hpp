#pragma once
// 8-bit PNG (and the other formats stb_image reads) in and PNG out for `mkbench quantize`
// (docs/quantize.md), through Debian's libstb-dev. Pixels stay interleaved bytes as stored:
// RGB or RGBA; grey and grey+alpha are widened to RGB / RGBA so every image clusters in RGB.
#include <cstdint>
#include <string>
#include <vector>

namespace mk {

struct Image {
  int width = 0;
  int height = 0;
  int channels = 0;              // 3 (RGB) or 4 (RGBA)
  std::vector<uint8_t> pixels;   // width * height * channels, row-major, interleaved
  int64_t pixel_count() const { return int64_t(width) * int64_t(height); }
};

// InputError (exit 2) naming the path for a missing or unreadable file, a file that is not an
// image stb can decode, and a 16-bit image (unsupported: the palette index and the uint8
// points are one byte a channel).
Image load_image(const std::string& path);

// The PNG bytes of `image` (stb_image_write, in memory).
std::string encode_png(const Image& image);

// encode_png, then the project's atomic writer (a temp file beside the target, renamed).
void write_png_atomically(const std::string& path, const Image& image);

}  // namespace mk
