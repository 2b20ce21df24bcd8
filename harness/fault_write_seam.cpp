// The full-disk seam of the atomic writer, apart from fault_injection.cu's GPU faults: the
// results writer calls it, and the CPU-only builds of the readers (tests/fuzz) link it
// without CUDA.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "core/byte_size.hpp"
#include "harness/fault_injection.hpp"

namespace mk {

ssize_t write_with_fault_seam(int fd, const void* data, size_t bytes, size_t offset) {
  const char* limit_text = std::getenv("MKBENCH_FAULT_WRITE_LIMIT");
  if (!limit_text || !*limit_text) return ::write(fd, data, bytes);
  const size_t limit = size_t(parse_byte_size(limit_text, "MKBENCH_FAULT_WRITE_LIMIT"));
  if (offset >= limit) {
    errno = ENOSPC;
    return -1;
  }
  return ::write(fd, data, std::min(bytes, limit - offset));
}

}  // namespace mk
