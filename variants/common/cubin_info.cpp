#include "variants/common/cubin_info.hpp"

#include <cstring>
#include <map>
#include <stdexcept>

namespace mk::gpu {
namespace {

// ELF64 little endian, as every cubin since sm_20. Offsets are the ELF specification's.
template <typename T>
T read_at(const std::string& image, uint64_t offset, const std::string& toolkit) {
  if (offset > image.size() || image.size() - offset < sizeof(T))
    throw std::runtime_error("cubin from " + toolkit + " is truncated (a read at byte " + std::to_string(offset) +
                             " of " + std::to_string(image.size()) + ")");
  T value;
  std::memcpy(&value, image.data() + offset, sizeof(T));
  return value;
}

struct Section {
  std::string name;
  uint32_t type = 0, link = 0, info = 0;
  uint64_t offset = 0, size = 0;
};

// .nv.info attributes (EIATTR_*): each entry is a format byte, an attribute byte and a 16-bit
// field, which for EIFMT_SVAL (4) is the size of the payload that follows.
constexpr uint8_t kFormatSizedValue = 0x04;
constexpr uint8_t kAttributeFrameSize = 0x11;  // EIATTR_FRAME_SIZE: {symbol index, bytes}
constexpr uint8_t kAttributeRegCount = 0x2f;   // EIATTR_REGCOUNT: {symbol index, registers}

}  // namespace

std::vector<CubinKernel> read_cubin_kernels(const std::string& image, const std::string& toolkit) {
  if (image.size() < 64 || image.compare(0, 4, "\x7f" "ELF") != 0 || image[4] != 2 || image[5] != 1)
    throw std::runtime_error("the image from " + toolkit + " is not a 64-bit little-endian ELF cubin");
  const auto shoff = read_at<uint64_t>(image, 0x28, toolkit);
  const auto shentsize = read_at<uint16_t>(image, 0x3a, toolkit);
  const auto shnum = read_at<uint16_t>(image, 0x3c, toolkit);
  const auto shstrndx = read_at<uint16_t>(image, 0x3e, toolkit);
  if (shentsize != 64 || shstrndx >= shnum)
    throw std::runtime_error("cubin from " + toolkit + " has an unexpected section table");
  std::vector<Section> sections(shnum);
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint64_t at = shoff + uint64_t(i) * shentsize;
    Section& s = sections[i];
    s.type = read_at<uint32_t>(image, at + 4, toolkit);
    s.offset = read_at<uint64_t>(image, at + 24, toolkit);
    s.size = read_at<uint64_t>(image, at + 32, toolkit);
    s.link = read_at<uint32_t>(image, at + 40, toolkit);
    s.info = read_at<uint32_t>(image, at + 44, toolkit);
    s.name = std::to_string(read_at<uint32_t>(image, at, toolkit));  // an offset until the names are read
  }
  auto string_at = [&](const Section& table, uint64_t offset) {
    const uint64_t at = table.offset + offset;
    if (offset >= table.size || at >= image.size()) throw std::runtime_error("cubin from " + toolkit + ": bad name");
    return std::string(image.c_str() + at);
  };
  const Section names = sections[shstrndx];
  for (Section& s : sections) s.name = string_at(names, std::stoull(s.name));

  // Symbol index -> name, for the frame sizes .nv.info records per symbol.
  std::map<uint32_t, std::string> symbols;
  std::map<std::string, int64_t> frames, registers;
  for (const Section& s : sections) {
    if (s.type != 2 /* SHT_SYMTAB */) continue;
    if (s.link >= sections.size()) throw std::runtime_error("cubin from " + toolkit + ": bad symbol table");
    for (uint64_t at = s.offset; at + 24 <= s.offset + s.size; at += 24)
      symbols[uint32_t((at - s.offset) / 24)] = string_at(sections[s.link], read_at<uint32_t>(image, at, toolkit));
  }
  for (const Section& s : sections) {
    if (s.name != ".nv.info" && s.name.rfind(".nv.info.", 0) != 0) continue;
    for (uint64_t at = s.offset; at + 4 <= s.offset + s.size;) {
      const auto format = read_at<uint8_t>(image, at, toolkit);
      const auto attribute = read_at<uint8_t>(image, at + 1, toolkit);
      const auto field = read_at<uint16_t>(image, at + 2, toolkit);
      const uint64_t payload = format == kFormatSizedValue ? field : 0;
      if (format == kFormatSizedValue && field == 8 &&
          (attribute == kAttributeFrameSize || attribute == kAttributeRegCount)) {
        const auto found = symbols.find(read_at<uint32_t>(image, at + 4, toolkit));
        if (found != symbols.end())
          (attribute == kAttributeFrameSize ? frames : registers)[found->second] = read_at<uint32_t>(image, at + 8, toolkit);
      }
      at += 4 + payload;
    }
  }

  std::vector<CubinKernel> kernels;
  for (const Section& s : sections) {
    if (s.name.rfind(".text.", 0) != 0) continue;
    CubinKernel kernel;
    kernel.name = s.name.substr(6);
    // CUDA 13 records the count as EIATTR_REGCOUNT; earlier cubins in the section header.
    const auto counted = registers.find(kernel.name);
    kernel.registers = counted != registers.end() ? int(counted->second) : int(s.info >> 24);
    if (kernel.registers <= 0)
      throw std::runtime_error("cubin from " + toolkit + " records no register count for " + kernel.name);
    if (s.offset + s.size > image.size()) throw std::runtime_error("cubin from " + toolkit + " is truncated");
    kernel.text = image.substr(s.offset, s.size);
    const auto frame = frames.find(kernel.name);
    if (frame == frames.end())
      throw std::runtime_error("cubin from " + toolkit + " records no frame size (EIATTR_FRAME_SIZE) for " +
                               kernel.name + ": its local memory cannot be read");
    kernel.frame_bytes = frame->second;
    for (const Section& shared : sections)
      if (shared.name == ".nv.shared." + kernel.name) kernel.shared_bytes = int64_t(shared.size);
    kernels.push_back(std::move(kernel));
  }
  return kernels;
}

CubinKernel read_cubin_kernel(const std::string& cubin, const std::string& name, const std::string& toolkit) {
  for (CubinKernel& kernel : read_cubin_kernels(cubin, toolkit))
    if (kernel.name == name) return std::move(kernel);
  throw std::runtime_error("cubin from " + toolkit + " has no kernel " + name);
}

}  // namespace mk::gpu
