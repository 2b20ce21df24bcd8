// Fragment of tensor_multik_iteration's body (kernel.cuh), #included after the step loops: the
// block's sums and inertia out, and the last block to arrive divides.
//   reads    partial_inertia, warp_inertia/s_inertia, tile_counts, acc, block_counts, the rings
//            (warp_areas, idle now), x_scale, point_shift (operands=prepared)
//   writes   sums, counts_scratch, inertia_scratch (every block); in the last block also
//            centroids (or the sums in data units, SUMS_OUT), counts_out, inertia_out, and it
//            clears the scratch and blocks_done for the next launch
//
// Why a fragment and not a function: when the kernel moved into files (commit e926ad1), moving
// the finish (its runtime loops over the block's threads) into a __forceinline__ function, its registers by reference,
// changed ptxas's register assignment or a predicate's width: the machine code changed (README.md,
// "Keeping the machine code"), while the fully unrolled stages in distance.cuh and update.cuh
// moved without a change. Included text compiles exactly as if it stood in kernel.cuh, so every
// mkbench_kernel_snapshot point's .text stays byte-identical while no file holds the whole body.
// Not a header: no #pragma once, no meaning outside that one place.

  // Inertia: warp totals meet in shared memory and each block adds one FP64 atomic per K.
  // (An atomic per warp put every warp of the grid on the same KCOUNT addresses at the end of
  // the kernel, where they serialise.)
#pragma unroll
  for (int k = 0; k < KCOUNT; ++k) {
    double value = (double)partial_inertia[k];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) value += __shfl_xor_sync(FULL_MASK, value, off);
    if (lane == 0) warp_inertia[k] += value;
  }
  __syncthreads();  // every warp is done with its ring: the area holds the block's sums now
  if (threadIdx.x == 0) STAMP(3);
  for (int k = threadIdx.x; k < KCOUNT; k += BLOCK) {
    double value = 0.0;
    for (int w = 0; w < WARPS; ++w) value += s_inertia[w * KCOUNT + k];
#if DSCALE
    value *= 1.0 / ((double)x_scale * (double)x_scale);  // distances were ×x_scale² (a power of two)
#endif
    if (value != 0.0) atomicAdd(inertia_scratch + k, value);
  }
  // Each warp's sums go to its own (now idle) ring as plain stores: every (slot, dim) is one
  // lane's, so no shared atomics (float ones are CAS loops, contended by every warp of the
  // block). The ring holds ≥ 64·NDIM floats ≥ SUMK·NDIM.
  flush_counts(tile_counts, block_counts, g, t);
#if UPDATE_F16
  // Column c's one-hot value was 2^(c-24) and the points were scaled by x_scale (a power of
  // two): both come off exactly here.
  const float unscale0 = __int_as_float((127 + 24 - 2 * t) << 23) / x_scale, unscale1 = 0.5f * unscale0;
#else
  const float unscale0 = 1.f, unscale1 = 1.f;
#endif
#if UPDATE_T
  (void)unscale1;  // (slots × features: each row has its own unscale, below)
#endif
#if DIST_F16
  static_assert(SUMK * FEATS <= WARP_FLOATS, "a warp's ring holds its slots × features");
#endif
#if UPDATE_T
  // Rows are slots (16p + g and 16p + 8 + g, one-hot value 2^(g-24) for both), columns the
  // features 2t, 2t+1.
  {
    const float unscale_row = __int_as_float((127 + 24 - g) << 23) / x_scale;
#pragma unroll
    for (int p = 0; p < PAIRS; ++p) {
      const int slot0 = 16 * p + g, slot1 = slot0 + 8;
      if (slot0 < SUMK) {
        ring[slot0 * FEATS + 2 * t] = acc[0][p][0] * unscale_row;
        ring[slot0 * FEATS + 2 * t + 1] = acc[0][p][1] * unscale_row;
      }
      if (slot1 < SUMK) {
        ring[slot1 * FEATS + 2 * t] = acc[0][p][2] * unscale_row;
        ring[slot1 * FEATS + 2 * t + 1] = acc[0][p][3] * unscale_row;
      }
    }
  }
#elif DIST_F16
  // Rows are features: each (slot, feature) to the ring.
#pragma unroll
  for (int ft = 0; ft < FT; ++ft)
#pragma unroll
    for (int s = 0; s < NT; ++s) {
      const int slot0 = TILE_SLOT(s, 2 * t), slot1 = TILE_SLOT(s, 2 * t + 1), feature = 16 * ft + g;
      if (slot0 < SUMK) {
        ring[slot0 * FEATS + feature] = acc[ft][s][0] * unscale0;
        ring[slot0 * FEATS + feature + 8] = acc[ft][s][2] * unscale0;
      }
      if (slot1 < SUMK) {
        ring[slot1 * FEATS + feature] = acc[ft][s][1] * unscale1;
        ring[slot1 * FEATS + feature + 8] = acc[ft][s][3] * unscale1;
      }
    }
#endif
#if DIST_F16
  // A dimension sums its hi and lo features over the block's warps.
  __syncthreads();
  for (int j = threadIdx.x; j < SUMK * NDIM; j += BLOCK) {
    const int slot = j / NDIM, dim = j - slot * NDIM;
    const int hi = slot * FEATS + dim, lo = slot * FEATS + LO_FEATURE(dim);
    float value = 0.f;
#pragma unroll 4
    for (int w = 0; w < WARPS; ++w) value += warp_areas[w * WARP_FLOATS + hi] + warp_areas[w * WARP_FLOATS + lo];
    if (value != 0.f) atomicAdd(sums + j, (double)value);
  }
#else
#pragma unroll
  for (int q = 0; q < DK; ++q) {
    const int dim = 8 * q + g;
#pragma unroll
    for (int s = 0; s < NT; ++s) {
      const int slot0 = TILE_SLOT(s, 2 * t), slot1 = TILE_SLOT(s, 2 * t + 1);
      if (dim < NDIM) {
        if (slot0 < SUMK) ring[slot0 * NDIM + dim] = (acc[q][s][0] + acc[q][s][2]) * unscale0;
        if (slot1 < SUMK) ring[slot1 * NDIM + dim] = (acc[q][s][1] + acc[q][s][3]) * unscale1;
      }
    }
  }
  __syncthreads();
  for (int j = threadIdx.x; j < SUMK * NDIM; j += BLOCK) {
    float value = 0.f;
#pragma unroll 4
    for (int w = 0; w < WARPS; ++w) value += warp_areas[w * WARP_FLOATS + j];
    if (value != 0.f) atomicAdd(sums + j, (double)value);
  }
#endif
  for (int s = threadIdx.x; s < SUMK; s += BLOCK)
    if (block_counts[s]) atomicAdd(counts_scratch + s, (u64)block_counts[s]);
  // The last block to arrive turns the sums into centroids. Every other block has read the
  // old centroids (at its start) before it arrived, so they can be overwritten in place.
  // Ticket: thread 0 releases the block's atomics (ordered before it by the barrier) and, in
  // the last block, acquires everyone's. Only one thread pays the fence, and acq_rel is
  // lighter than the sequentially consistent __threadfence.
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned ticket;
    asm volatile("fence.acq_rel.gpu;\n atom.relaxed.gpu.global.add.u32 %0, [%1], 1;" : "=r"(ticket) : "l"(blocks_done)
                 : "memory");
    if (ticket == gridDim.x - 1) asm volatile("fence.acq_rel.gpu;" ::: "memory");
    s_ticket = ticket;
    STAMP(4);
  }
  __syncthreads();
  if (s_ticket != gridDim.x - 1) return;
  // One L2 round trip for the whole division: each thread loads its (slot, dim) sum and the
  // slot's count together (a loop over dims per slot made NDIM+1 dependent round trips, at
  // the end of the kernel's critical path).
  for (int j = threadIdx.x; j < SUMK * NDIM; j += BLOCK) {
    const int s = j / NDIM;
    const u64 count = (u64)__ldcg((const long long*)(counts_scratch + s));
    const double sum = __ldcg(sums + j);
#if SUMS_OUT
    // A split step's accumulate phase: the sums stay, in data units, for the application's update
    // (variants/step.hpp); the host clears them before the next launch.
#if PREPARED_OPERANDS
    sums[j] = sum + (double)count * (double)point_shift[j - s * NDIM];  // the sums were of centred points
#endif
#else
    // An empty cluster keeps its previous centroid (the documented policy).
#if PREPARED_OPERANDS
    // The sums are of the centred points.
    if (count) centroids[j] = (float)((double)point_shift[j - s * NDIM] + sum * (1.0 / (double)count));
#else
    if (count) centroids[j] = (float)(sum * (1.0 / (double)count));
#endif
    sums[j] = 0.0;
#endif
    if (j - s * NDIM == 0) counts_out[s] = count;
  }
  for (int k = threadIdx.x; k < KCOUNT; k += BLOCK) {
    inertia_out[k] = __ldcg(inertia_scratch + k);
    inertia_scratch[k] = 0.0;
  }
  __syncthreads();  // every count is read before it is cleared
  for (int s = threadIdx.x; s < SUMK; s += BLOCK) counts_scratch[s] = 0ull;
  if (threadIdx.x == 0) *blocks_done = 0u;
#if DYNAMIC
  if (threadIdx.x == 0) blocks_done[1] = 0u;  // every claim was made before its block's ticket
#endif
#if TIMELINE
  if (threadIdx.x == 0 && timeline) {
    unsigned long long now_ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now_ns)::"memory");
    timeline[gridDim.x * (TIMELINE_FIELDS + WARPS)] = now_ns;
  }
#endif
