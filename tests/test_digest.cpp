// The data sets' identity (datasets/digest.hpp): XXH3-128 of the ordered XXH3-128 digests of
// 4 MiB blocks. The expected values were computed by xxHash's own command-line tool (Debian
// package xxhash): `xxhsum -H2` of each 4 MiB piece (`split -b 4194304`), the printed digests
// turned back into bytes (`xxd -r -p`) and concatenated, then `xxhsum -H2` of that.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "datasets/digest.hpp"

namespace {

// 9 MiB + 5 bytes: two whole blocks and a short third one.
std::string pattern() {
  std::string bytes(9 * (size_t(1) << 20) + 5, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = char((((i * 31 + 7) >> 3) ^ i) & 255);
  return bytes;
}

}  // namespace

TEST(Digest, Xxh3OfOneRunMatchesXxhsum) {
  EXPECT_EQ(mk::to_hex(mk::xxh3_128("", 0)), "99aa06d3014798d86001c324468d497f");
  EXPECT_EQ(mk::to_hex(mk::xxh3_128("abc", 3)), "06b05ab6733a618578af5f94892f3950");
}

TEST(Digest, SmallDataIsTheHashOfItsOneBlockDigest) {
  EXPECT_EQ(mk::data_digest("abc", 3), "f758394eebabb2bb51ee911f78f31836");
  // No bytes, no blocks: the hash of nothing.
  EXPECT_EQ(mk::data_digest("", 0), "99aa06d3014798d86001c324468d497f");
}

TEST(Digest, BlocksAreCombinedInOrder) {
  const std::string bytes = pattern();
  EXPECT_EQ(mk::data_digest(bytes.data(), bytes.size()), "18b51cb49cb3fc6c57c57c32ec67ac2c");
}

TEST(Digest, StreamedInUnevenPiecesEqualsWhole) {
  const std::string bytes = pattern();
  mk::StreamDigest stream;
  size_t done = 0;
  // Pieces of changing sizes, some larger than a block, cross block boundaries at every offset.
  for (size_t piece = 1; done < bytes.size(); piece = piece * 7 % 5000011 + 13) {
    const size_t take = std::min(piece, bytes.size() - done);
    stream.update(bytes.data() + done, take);
    done += take;
  }
  EXPECT_EQ(stream.finish(), "18b51cb49cb3fc6c57c57c32ec67ac2c");
}

TEST(Digest, ExactlyWholeBlocksHaveNoEmptyTrailingBlock) {
  const std::string bytes = pattern().substr(0, 2 * mk::kDigestBlockBytes);
  const std::vector<mk::Digest128> blocks = {mk::xxh3_128(bytes.data(), mk::kDigestBlockBytes),
                                             mk::xxh3_128(bytes.data() + mk::kDigestBlockBytes, mk::kDigestBlockBytes)};
  mk::StreamDigest stream;
  stream.update(bytes.data(), bytes.size());
  EXPECT_EQ(stream.finish(), mk::combine_block_digests(blocks));
  EXPECT_EQ(mk::data_digest(bytes.data(), bytes.size()), mk::combine_block_digests(blocks));
}

TEST(Digest, BlockHasherInPiecesEqualsOneRun) {
  const std::string bytes = pattern().substr(0, 100000);
  mk::BlockHasher hasher;
  hasher.update(bytes.data(), 3);
  hasher.update(bytes.data() + 3, 65536);
  hasher.update(bytes.data() + 65539, bytes.size() - 65539);
  EXPECT_EQ(hasher.digest(), mk::xxh3_128(bytes.data(), bytes.size()));
  hasher.reset();
  EXPECT_EQ(hasher.digest(), mk::xxh3_128("", 0));
}
