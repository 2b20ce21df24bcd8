#pragma once
// Host blocks that first-touch quickly: blocks of 4 MiB or more are 2 MiB-aligned and advised to
// transparent huge pages (madvise; THP is "madvise" on the lent GPU hosts), so a fresh 40 MB
// buffer faults 20 times instead of 10,000. Smaller blocks come from operator new.
#include <cstddef>

namespace mk {

void* allocate_huge_page_friendly(size_t bytes);
void release_huge_page_friendly(void* pointer, size_t bytes) noexcept;
// The advice alone, for a block allocated elsewhere (its 2 MiB-aligned interior).
void advise_huge_pages(void* begin, size_t bytes) noexcept;

}  // namespace mk
