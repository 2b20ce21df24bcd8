#pragma once
// arbitrate=deferred: the main kernel hands its ambiguous rows to a second kernel instead of
// re-deciding them between the tile's barriers, where every other warp of the block waits
// (deferred_arbitration.hpp runs it). A row's record names the point, its group and its run
// of candidate columns; a warp reserves its rows' records and columns with one atomic each.
// Both can run out: a warp whose reservation does not fit arbitrates in the block as before,
// so the labels never depend on the capacity. A warp whose rows no longer fit after its
// columns did marks the records it got below the capacity empty (count 0), so the settle
// kernel can read every record below min(counter, capacity).
#include <cstdint>

namespace mk::gemm_window {

// A deferred row (point < 2^31: update=sorted's bound; one 16-byte store).
struct alignas(16) DeferredRow {
  uint32_t point, group, first, count;  // count columns from columns[first]
};
// A column that is not a centroid (the padding of a scanned slice), skipped.
constexpr unsigned short kNoColumn = 0xffff;

struct DeferredQueue {
  DeferredRow* rows = nullptr;         // null: arbitrate in the block
  unsigned short* columns = nullptr;   // group-local centroid columns, kNoColumn for padding
  unsigned long long* counters = nullptr;  // {rows, columns reserved}, zero at launch
  unsigned long long row_capacity = 0;
  unsigned long long column_capacity = 0;  // at most 2^32 − 1: `first` is 32 bits
};

}  // namespace mk::gemm_window
