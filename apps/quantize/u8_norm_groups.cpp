#include "apps/quantize/u8_norm_groups.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace mk::u8norm {

namespace {

// The channel rounded to a byte (NaN and below 0 to 0, 255 and above to 255).
uint32_t channel_byte(float c) { return c >= 255.0f ? 255u : c > 0.0f ? uint32_t(c + 0.5f) : 0u; }

// The three bytes' bits interleaved, red highest: colours near each other share the high bits.
uint32_t morton_code(const float* colour) {
  uint32_t code = 0;
  for (int d = 0; d < 3; ++d) {
    const uint32_t byte = channel_byte(colour[d]);
    for (int bit = 0; bit < 8; ++bit) code |= ((byte >> bit) & 1u) << (3 * bit + (2 - d));
  }
  return code;
}

}  // namespace

Groups group_centroids(const float* centroids, int k) {
  std::vector<std::pair<uint32_t, int>> keyed;
  keyed.reserve(size_t(k));
  for (int j = 0; j < k; ++j) keyed.emplace_back(morton_code(centroids + size_t(j) * 3), j);
  std::sort(keyed.begin(), keyed.end());
  Groups groups{};
  groups.count = std::min(kMaxGroups, k);
  for (int g = 0; g <= groups.count; ++g) groups.start[g] = int(int64_t(g) * k / groups.count);
  for (int g = 0; g < groups.count; ++g)
    for (int p = groups.start[g]; p < groups.start[g + 1]; ++p) {
      const int j = keyed[size_t(p)].second;
      groups.order[p] = uint8_t(j);
      groups.group_of[j] = uint8_t(g);
    }
  return groups;
}

}  // namespace mk::u8norm
