#pragma once
// The identity of a data file: XXH3-128 (xxHash, Debian libxxhash-dev, used header-only), over
// fixed blocks so that a multi-GiB file hashes on all cores. The file is cut into blocks of
// kDigestBlockBytes (the last one shorter); each block gets its XXH3-128 (seed 0), written
// in xxHash's canonical big-endian 16 bytes; the identity is the XXH3-128 of those digests
// concatenated in block order, as 32 hex digits. The block size is part of the definition:
// changing it changes every identity (a results schema bump). Not cryptographic, and not
// meant to be: it names data, it does not authenticate it.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mk {

inline constexpr size_t kDigestBlockBytes = size_t(4) << 20;
// The key a file's identity object holds the digest under ("sha256" before results schema 2).
inline constexpr const char* kIdentityDigestKey = "xxh3_128";

using Digest128 = std::array<unsigned char, 16>;  // canonical (big-endian) XXH3-128

// One block (or any byte run) at once.
Digest128 xxh3_128(const void* data, size_t bytes);
std::string to_hex(const Digest128& digest);

// One block hashed in pieces (a loader that checks and copies each piece while it is in cache).
class BlockHasher {
 public:
  BlockHasher();
  ~BlockHasher();
  BlockHasher(const BlockHasher&) = delete;
  BlockHasher& operator=(const BlockHasher&) = delete;
  void reset();
  void update(const void* data, size_t bytes);
  Digest128 digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The identity from the blocks' digests, in block order.
std::string combine_block_digests(const std::vector<Digest128>& blocks);
// The identity of bytes in memory, blocks hashed on all cores (OpenMP).
std::string data_digest(const void* data, size_t bytes);

// The identity of bytes that arrive in order, in pieces of any size (a file read through a
// stream, a gzip file): equal to data_digest of the same bytes.
class StreamDigest {
 public:
  void update(const void* data, size_t bytes);
  std::string finish();  // the object must not be updated afterwards

 private:
  BlockHasher block_;
  size_t in_block_ = 0;
  std::vector<Digest128> blocks_;
};

}  // namespace mk
