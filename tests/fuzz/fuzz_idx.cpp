// The IDX reader from bytes (plain or gzipped): as a point set and as a label vector.
#include "tests/fuzz/fuzz_common.hpp"
#include "tests/fuzz/readers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = mk::fuzz::bytes_of(data, size);
  mk::fuzz::expect_clean([&] { mk::fuzz::read_idx_points(input); });
  mk::fuzz::expect_clean([&] { mk::fuzz::read_idx_labels(input); });
  return 0;
}
