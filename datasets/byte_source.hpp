#pragma once
// Where a binary loader's bytes come from: a file (hashed while it is read, so a multi-GiB
// file is read once), a buffer in memory (tests and the fuzz targets), or a gzip stream over
// either. The loaders parse from a ByteSource, so every input path runs the same checks.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include "datasets/digest.hpp"

namespace mk {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Up to `bytes` into `destination`; fewer only where the data ends.
  virtual size_t read(void* destination, size_t bytes) = 0;
  // The most bytes that can still come: exact for a plain source, an upper bound for a
  // compressed one. Loaders compare a header's claimed size with it before allocating, so
  // a ten-byte file cannot make them reserve gigabytes.
  virtual uintmax_t most_remaining() const = 0;
  // Whether most_remaining() is the exact count (it is not for a compressed stream).
  virtual bool size_is_exact() const { return true; }
  // The name used in messages ("data.idx").
  virtual const std::string& origin() const = 0;

  // Exactly `bytes`, else InputError "<origin>: truncated: ... <what>".
  void read_exact(void* destination, size_t bytes, const std::string& what);
  // InputError when any byte is left after the last one the format describes.
  void expect_end(const std::string& after_what);
};

class MemorySource final : public ByteSource {
 public:
  MemorySource(std::string_view bytes, std::string origin) : bytes_(bytes), origin_(std::move(origin)) {}
  size_t read(void* destination, size_t bytes) override;
  uintmax_t most_remaining() const override { return bytes_.size() - position_; }
  const std::string& origin() const override { return origin_; }

 private:
  std::string_view bytes_;
  size_t position_ = 0;
  std::string origin_;
};

class FileSource final : public ByteSource {
 public:
  explicit FileSource(const std::string& path);  // InputError when it cannot be opened
  size_t read(void* destination, size_t bytes) override;
  uintmax_t most_remaining() const override { return size_ - position_; }
  const std::string& origin() const override { return path_; }
  uintmax_t size() const { return size_; }
  // The file's identity (datasets/digest.hpp); reads (and hashes) whatever the parser left unread.
  std::string digest_of_whole_file();

 private:
  std::string path_;
  std::ifstream in_;
  uintmax_t size_ = 0, position_ = 0;
  StreamDigest hash_;
};

// Inflates a gzip stream (RFC 1952; several members one after another, as gzip itself
// writes them). A stream that ends before its end marker, a bad CRC and anything that is
// not deflate data are InputErrors that say which.
class GzipSource final : public ByteSource {
 public:
  explicit GzipSource(ByteSource& compressed);
  ~GzipSource() override;
  GzipSource(const GzipSource&) = delete;
  GzipSource& operator=(const GzipSource&) = delete;
  size_t read(void* destination, size_t bytes) override;
  uintmax_t most_remaining() const override;
  bool size_is_exact() const override { return false; }
  const std::string& origin() const override { return compressed_.origin(); }

 private:
  struct State;
  ByteSource& compressed_;
  std::unique_ptr<State> state_;
};

// True when the bytes start with the gzip magic (1f 8b).
bool looks_gzipped(std::string_view first_bytes);

}  // namespace mk
