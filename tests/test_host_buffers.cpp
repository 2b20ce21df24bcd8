// Host buffers that first-touch quickly (core/huge_pages.hpp, datasets/dataset.hpp's
// UninitialisedAllocator) and the pinned ring's parallel copy (variants/common/pinned_staging.hpp):
// large blocks come 2 MiB-aligned, every size is usable and freed, and the copy moves every byte;
// label memory readied ahead of a read-back comes in the asked lists and sizes, and is writable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "core/huge_pages.hpp"
#include "datasets/dataset.hpp"
#include "variants/common/pinned_staging.hpp"

namespace mk {
namespace {

TEST(HugePages, BlocksFromFourMiBAre2MiBAlignedAndSmallerOnesAreUsable) {
  for (size_t bytes : {size_t(1), size_t(4096), (size_t(4) << 20) - 1, size_t(4) << 20, (size_t(9) << 20) + 3}) {
    SCOPED_TRACE(bytes);
    auto* block = static_cast<unsigned char*>(allocate_huge_page_friendly(bytes));
    ASSERT_NE(block, nullptr);
    if (bytes >= (size_t(4) << 20)) EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % (size_t(2) << 20), 0u);
    std::memset(block, 0xab, bytes);  // every byte is ours
    EXPECT_EQ(block[bytes - 1], 0xab);
    release_huge_page_friendly(block, bytes);
  }
}

TEST(HugePages, LabelValuesHoldWhatIsWrittenAndEqualAPlainVector) {
  const size_t count = (size_t(5) << 20) / sizeof(int32_t) + 7;  // a huge-page block
  LabelValues labels(count);
  std::vector<int32_t> expected(count);
  std::iota(expected.begin(), expected.end(), -3);
  std::copy(expected.begin(), expected.end(), labels.begin());
  EXPECT_TRUE(labels == expected);
  LabelValues moved = std::move(labels);
  EXPECT_TRUE(moved == expected);
  moved.push_back(1);  // growing reallocates through the same allocator
  EXPECT_EQ(moved.size(), count + 1);
  EXPECT_TRUE(LabelValues({1, 2, 3}) != std::vector<int32_t>({1, 2, 4}));
}

TEST(PinnedStagingCopy, CopiesEveryByteOfOddSizes) {
  for (size_t bytes : {size_t(0), size_t(1), size_t(1000), (size_t(1) << 20) + 1, (size_t(3) << 20) + 12345}) {
    SCOPED_TRACE(bytes);
    std::vector<unsigned char> from(bytes), to(bytes + 1, 0x5a);
    for (size_t i = 0; i < bytes; ++i) from[i] = static_cast<unsigned char>(i * 131 + 7);
    gpu::copy_bytes_parallel(to.data(), from.data(), bytes);
    // std::equal, not memcmp: an empty vector's data() may be null, which memcmp must not get.
    EXPECT_TRUE(std::equal(from.begin(), from.end(), to.begin()));
    EXPECT_EQ(to[bytes], 0x5a);  // nothing past the end
  }
}

// The labels' memory a fit readies while its steps run (gpu::ready_label_values): one list a K of
// M labels each, every value writable (odd sizes: a last page partly used; 0 labels: nothing).
TEST(ReadyLabelValues, GivesTheListsAndSizesAskedForAndEveryValueIsWritable) {
  for (const size_t count : {size_t(0), size_t(1), size_t(1025), size_t(3) << 20}) {
    SCOPED_TRACE(count);
    std::vector<LabelValues> ready = gpu::ready_label_values(3, count).get();
    ASSERT_EQ(ready.size(), 3u);
    for (LabelValues& labels : ready) {
      ASSERT_EQ(labels.size(), count);
      std::iota(labels.begin(), labels.end(), 0);
      if (count) EXPECT_EQ(labels.back(), int32_t(count - 1));
    }
  }
}

}  // namespace
}  // namespace mk
