// The centroid groups of gpu-u8-norm's bounded steps (apps/quantize/u8_norm_groups.hpp), on the
// host: every centroid in exactly one group, sizes within one of each other, group_of the inverse
// of the order, neighbouring colours together, ties in index order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "apps/quantize/u8_norm_groups.hpp"

namespace mk::u8norm {
namespace {

TEST(QuantizeGroups, EveryCentroidInOneGroupOfBalancedSize) {
  std::mt19937 random(7);
  std::uniform_real_distribution<float> colour(-10.0f, 270.0f);  // some outside 0..255, clamped
  for (int k : {1, 2, 7, 8, 9, 37, 255, 256}) {
    std::vector<float> centroids(size_t(k) * 3);
    for (float& c : centroids) c = colour(random);
    const Groups groups = group_centroids(centroids.data(), k);
    ASSERT_EQ(groups.count, std::min(kMaxGroups, k)) << "K=" << k;
    EXPECT_EQ(groups.start[0], 0);
    EXPECT_EQ(groups.start[groups.count], k);
    std::vector<int> seen(size_t(k), 0);
    for (int g = 0; g < groups.count; ++g) {
      const int size = groups.start[g + 1] - groups.start[g];
      EXPECT_GE(size, k / groups.count) << "K=" << k << " group " << g;
      EXPECT_LE(size, (k + groups.count - 1) / groups.count) << "K=" << k << " group " << g;
      for (int p = groups.start[g]; p < groups.start[g + 1]; ++p) {
        const int j = groups.order[p];
        ASSERT_LT(j, k);
        ++seen[size_t(j)];
        EXPECT_EQ(groups.group_of[j], g) << "K=" << k << " centroid " << j;
      }
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), k) << "K=" << k << ": not a permutation";
  }
}

// 256 colours, 32 near each corner of the RGB cube: each of the 8 groups is one corner's.
TEST(QuantizeGroups, NeighbouringColoursShareAGroup) {
  std::mt19937 random(3);
  std::uniform_real_distribution<float> jitter(0.0f, 40.0f);
  std::vector<float> centroids;
  std::vector<int> corner_of;
  for (int copy = 0; copy < 32; ++copy)
    for (int corner = 0; corner < 8; ++corner) {  // interleaved, so the input order does not group them
      for (int d = 0; d < 3; ++d) centroids.push_back((corner >> d) & 1 ? 250.0f - jitter(random) : jitter(random));
      corner_of.push_back(corner);
    }
  const Groups groups = group_centroids(centroids.data(), 256);
  ASSERT_EQ(groups.count, 8);
  for (int g = 0; g < 8; ++g) {
    const int corner = corner_of[groups.order[groups.start[g]]];
    for (int p = groups.start[g]; p < groups.start[g + 1]; ++p)
      EXPECT_EQ(corner_of[groups.order[p]], corner) << "group " << g << " mixes corners";
  }
}

TEST(QuantizeGroups, EqualColoursKeepTheirIndexOrder) {
  const std::vector<float> centroids(size_t(20) * 3, 128.0f);
  const Groups groups = group_centroids(centroids.data(), 20);
  for (int p = 0; p < 20; ++p) EXPECT_EQ(groups.order[p], p);
}

}  // namespace
}  // namespace mk::u8norm
