#include "apps/quantize/image_io.hpp"

#include <cstdio>
#include <memory>

#include "core/errors.hpp"
#include "harness/results.hpp"

// The one translation unit that compiles stb's implementations; static, so they cannot clash
// with another copy elsewhere.
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_FAILURE_USERMSG
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#endif
#include <stb/stb_image.h>
#include <stb/stb_image_write.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

namespace mk {

Image load_image(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw InputError("cannot read image " + path + ": no such file or not readable");
  int width = 0, height = 0, stored_channels = 0;
  if (!stbi_info_from_file(file.get(), &width, &height, &stored_channels))
    throw InputError("cannot read image " + path + ": " + stbi_failure_reason());
  if (stbi_is_16_bit_from_file(file.get()))
    throw InputError("image " + path +
                     " has 16 bits a channel, which is unsupported: quantize reads 8-bit RGB or RGBA images");
  Image image;
  image.channels = stored_channels == 2 || stored_channels == 4 ? 4 : 3;  // alpha kept, grey widened
  int channels_in_file = 0;
  stbi_uc* data = stbi_load_from_file(file.get(), &image.width, &image.height, &channels_in_file, image.channels);
  if (!data) throw InputError("cannot decode image " + path + ": " + stbi_failure_reason());
  image.pixels.assign(data, data + size_t(image.pixel_count()) * size_t(image.channels));
  stbi_image_free(data);
  if (image.pixel_count() == 0) throw InputError("image " + path + " has no pixels");
  return image;
}

namespace {

void append_bytes(void* context, void* data, int size) {
  static_cast<std::string*>(context)->append(static_cast<const char*>(data), size_t(size));
}

}  // namespace

std::string encode_png(const Image& image) {
  if (image.channels != 3 && image.channels != 4) throw InputError("encode_png: 3 or 4 channels expected");
  if (image.pixels.size() != size_t(image.pixel_count()) * size_t(image.channels))
    throw InputError("encode_png: the pixel buffer does not match the image's size");
  std::string bytes;
  const int stride = image.width * image.channels;
  if (!stbi_write_png_to_func(&append_bytes, &bytes, image.width, image.height, image.channels,
                              image.pixels.data(), stride))
    throw InputError("cannot encode a " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                     " PNG");
  return bytes;
}

void write_png_atomically(const std::string& path, const Image& image) {
  write_text_atomically(path, encode_png(image));
}

}  // namespace mk
