// A heap read one past the end, built with the flags of sanitized_reader_tests: ctest
// Sanitized.Canary passes only when AddressSanitizer reports it, so Sanitized.Readers passing
// means the readers ran clean under a sanitizer that works, not that none was linked in.
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char**) {
  std::vector<int> values(4, 1);
  volatile size_t past_the_end = values.size() + size_t(argc) - 1;  // 4: the optimiser cannot see it
  std::printf("%d\n", values.data()[past_the_end]);
  return 0;
}
