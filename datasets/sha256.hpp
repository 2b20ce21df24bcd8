#pragma once
// Incremental SHA-256 (FIPS 180-4), so loaders can hash a file while they read it instead
// of holding a second copy of a multi-GiB file in memory.
#include <cstddef>
#include <cstdint>
#include <string>

namespace mk {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t bytes);
  std::string hex_digest();  // finishes the hash; the object must not be updated afterwards

 private:
  void compress(const uint8_t* block);
  uint32_t state_[8];
  uint8_t pending_[64];
  size_t pending_bytes_ = 0;
  uint64_t total_bytes_ = 0;
};

}  // namespace mk
