#include "datasets/digest.hpp"

#include <algorithm>

// Header-only: the functions are compiled into this file, so no libxxhash is linked (the GPU
// machine may have the header carried in build-carry/xxhash-include and no library).
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace mk {
namespace {

Digest128 canonical(XXH128_hash_t hash) {
  XXH128_canonical_t bytes;
  XXH128_canonicalFromHash(&bytes, hash);
  Digest128 digest;
  std::copy(std::begin(bytes.digest), std::end(bytes.digest), digest.begin());
  return digest;
}

}  // namespace

Digest128 xxh3_128(const void* data, size_t bytes) { return canonical(XXH3_128bits(data, bytes)); }

std::string to_hex(const Digest128& digest) {
  static const char kHex[] = "0123456789abcdef";
  std::string text(32, '0');
  for (size_t i = 0; i < digest.size(); ++i) {
    text[2 * i] = kHex[digest[i] >> 4];
    text[2 * i + 1] = kHex[digest[i] & 15];
  }
  return text;
}

struct BlockHasher::State {
  XXH3_state_t xxh;  // xxHash aligns it itself (XXH_ALIGN_MEMBER)
};

BlockHasher::BlockHasher() : state_(std::make_unique<State>()) { reset(); }
BlockHasher::~BlockHasher() = default;
void BlockHasher::reset() { XXH3_128bits_reset(&state_->xxh); }
void BlockHasher::update(const void* data, size_t bytes) { XXH3_128bits_update(&state_->xxh, data, bytes); }
Digest128 BlockHasher::digest() const { return canonical(XXH3_128bits_digest(&state_->xxh)); }

std::string combine_block_digests(const std::vector<Digest128>& blocks) {
  return to_hex(xxh3_128(blocks.data(), blocks.size() * sizeof(Digest128)));
}

std::string data_digest(const void* data, size_t bytes) {
  const size_t count = (bytes + kDigestBlockBytes - 1) / kDigestBlockBytes;
  std::vector<Digest128> blocks(count);
  const auto* base = static_cast<const unsigned char*>(data);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t b = 0; b < int64_t(count); ++b) {
    const size_t first = size_t(b) * kDigestBlockBytes;
    blocks[size_t(b)] = xxh3_128(base + first, std::min(kDigestBlockBytes, bytes - first));
  }
  return combine_block_digests(blocks);
}

void StreamDigest::update(const void* data, size_t bytes) {
  const auto* next = static_cast<const unsigned char*>(data);
  while (bytes > 0) {
    const size_t take = std::min(bytes, kDigestBlockBytes - in_block_);
    block_.update(next, take);
    in_block_ += take;
    next += take;
    bytes -= take;
    if (in_block_ == kDigestBlockBytes) {
      blocks_.push_back(block_.digest());
      block_.reset();
      in_block_ = 0;
    }
  }
}

std::string StreamDigest::finish() {
  if (in_block_ > 0) blocks_.push_back(block_.digest());
  in_block_ = 0;
  return combine_block_digests(blocks_);
}

}  // namespace mk
