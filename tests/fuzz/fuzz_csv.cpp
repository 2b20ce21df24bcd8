// The CSV loader from bytes, for points, points with labels and a labels file. The
// first byte picks the options (readers.hpp), so one corpus covers them as well as the text.
#include "tests/fuzz/fuzz_common.hpp"
#include "tests/fuzz/readers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = mk::fuzz::bytes_of(data, size);
  mk::fuzz::expect_clean([&] { mk::fuzz::read_csv_points(input); });
  mk::fuzz::expect_clean([&] { mk::fuzz::read_csv_labelled(input); });
  mk::fuzz::expect_clean([&] { mk::fuzz::read_csv_labels(input); });
  return 0;
}
