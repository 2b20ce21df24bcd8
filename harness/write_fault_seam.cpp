// The atomic writer's fault seam (harness/fault_injection.hpp), in a CPU-only translation unit
// of its own: the results writer links it, and so do the CPU-only fuzz targets
// (tests/fuzz/CMakeLists.txt), which cannot compile fault_injection.cu's kernels.
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
