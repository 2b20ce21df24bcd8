// The results reader (reports/results_io.cpp) from a results file's text.
#include "tests/fuzz/fuzz_common.hpp"
#include "tests/fuzz/readers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = mk::fuzz::bytes_of(data, size);
  mk::fuzz::expect_clean([&] { mk::fuzz::read_results(input); });
  return 0;
}
