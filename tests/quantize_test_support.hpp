#pragma once
// Images the quantize tests make for themselves (no downloaded photos): a gradient with shapes
// and noise, an image of exactly K planted colours, and a 16-bit PNG written byte by byte
// (stb_image_write writes 8-bit only).
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "apps/quantize/image_io.hpp"
#include "datasets/counter_rng.hpp"

namespace mk::quantize_test {

// Red grows left to right, green top to bottom; a disc and a bar of flat colours on top; noise
// of ±`noise` a channel; alpha (RGBA) a pattern of its own.
inline Image gradient_image(int width, int height, int channels, int noise, uint64_t seed) {
  Image image;
  image.width = width;
  image.height = height;
  image.channels = channels;
  image.pixels.resize(size_t(width) * size_t(height) * size_t(channels));
  CounterRng rng(seed, RandomStream::UniformValue);
  uint64_t draw = 0;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      int rgb[3] = {255 * x / (width - 1), 255 * y / (height - 1), 128};
      const int dx = x - width / 3, dy = y - height / 2;
      if (dx * dx + dy * dy < (height / 4) * (height / 4)) rgb[0] = 200, rgb[1] = 40, rgb[2] = 60;
      if (x > 2 * width / 3 && y > height / 5 && y < 2 * height / 5) rgb[0] = 20, rgb[1] = 180, rgb[2] = 90;
      uint8_t* pixel = &image.pixels[(size_t(y) * size_t(width) + size_t(x)) * size_t(channels)];
      for (int c = 0; c < 3; ++c) {
        const int jitter = noise > 0 ? int(rng.below(draw++, uint64_t(2 * noise + 1))) - noise : 0;
        const int value = rgb[c] + jitter;
        pixel[c] = uint8_t(value < 0 ? 0 : value > 255 ? 255 : value);
      }
      if (channels == 4) pixel[3] = uint8_t((x * 7 + y * 3) & 255);
    }
  return image;
}

// `k` distinct colours (k <= 4096), each on at least one pixel, in a scrambled order.
inline Image planted_image(int width, int height, int channels, int k, uint64_t seed) {
  Image image;
  image.width = width;
  image.height = height;
  image.channels = channels;
  image.pixels.resize(size_t(width) * size_t(height) * size_t(channels));
  std::vector<uint8_t> palette(size_t(k) * 3);
  for (int j = 0; j < k; ++j) {  // distinct: a 16-level grid point per colour, then scrambled channels
    palette[size_t(j) * 3 + 0] = uint8_t(17 * (j % 16));
    palette[size_t(j) * 3 + 1] = uint8_t(17 * ((j / 16) % 16));
    palette[size_t(j) * 3 + 2] = uint8_t(255 - 17 * (j / 256));
  }
  CounterRng rng(seed, RandomStream::UniformValue);
  const int64_t pixels = image.pixel_count();
  for (int64_t i = 0; i < pixels; ++i) {
    const int64_t colour = i < k ? i : int64_t(rng.below(uint64_t(i), uint64_t(k)));
    for (int c = 0; c < 3; ++c)
      image.pixels[size_t(i) * size_t(channels) + size_t(c)] = palette[size_t(colour) * 3 + size_t(c)];
    if (channels == 4) image.pixels[size_t(i) * 4 + 3] = uint8_t(i & 255);
  }
  return image;
}

inline uint32_t crc32(const std::string& bytes) {
  uint32_t crc = 0xffffffffu;
  for (unsigned char byte : bytes) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

inline std::string big_endian(uint32_t value) {
  return {char(value >> 24), char((value >> 16) & 255), char((value >> 8) & 255), char(value & 255)};
}

inline std::string png_chunk(const std::string& type, const std::string& data) {
  return big_endian(uint32_t(data.size())) + type + data + big_endian(crc32(type + data));
}

// A valid 16-bit RGB PNG (one stored deflate block), width * height small.
inline void write_png16(const std::string& path, int width, int height) {
  std::string raw;
  for (int y = 0; y < height; ++y) {
    raw += char(0);  // filter: none
    for (int x = 0; x < width * 3; ++x) raw += char((x * 37 + y) & 255), raw += char(y & 255);
  }
  uint32_t a = 1, b = 0;  // adler32
  for (unsigned char byte : raw) a = (a + byte) % 65521u, b = (b + a) % 65521u;
  const uint16_t length = uint16_t(raw.size());
  std::string zlib = {char(0x78), char(0x01), char(0x01), char(length & 255), char(length >> 8),
                      char(~length & 255), char((~length >> 8) & 255)};
  zlib += raw + big_endian((b << 16) | a);
  const std::string header = big_endian(uint32_t(width)) + big_endian(uint32_t(height)) +
                             std::string{char(16), char(2), char(0), char(0), char(0)};
  std::ofstream out(path, std::ios::binary);
  out << std::string("\x89PNG\r\n\x1a\n", 8) << png_chunk("IHDR", header) << png_chunk("IDAT", zlib)
      << png_chunk("IEND", "");
}

}  // namespace mk::quantize_test
