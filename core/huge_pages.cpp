#include "core/huge_pages.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <new>

namespace mk {

namespace {
constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kHugeMinBytes = size_t(4) << 20;
}  // namespace

void advise_huge_pages(void* begin, size_t bytes) noexcept {
#ifdef MADV_HUGEPAGE
  const uintptr_t first = (reinterpret_cast<uintptr_t>(begin) + kHugePage - 1) & ~uintptr_t(kHugePage - 1);
  const uintptr_t last = (reinterpret_cast<uintptr_t>(begin) + bytes) & ~uintptr_t(kHugePage - 1);
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
  (void)begin;
  (void)bytes;
#endif
}

void* allocate_huge_page_friendly(size_t bytes) {
  if (bytes < kHugeMinBytes) return ::operator new(bytes);
  void* block = ::operator new(bytes, std::align_val_t(kHugePage));
  advise_huge_pages(block, bytes);
  return block;
}

void release_huge_page_friendly(void* pointer, size_t bytes) noexcept {
  if (bytes < kHugeMinBytes) ::operator delete(pointer);
  else ::operator delete(pointer, std::align_val_t(kHugePage));
}

}  // namespace mk
