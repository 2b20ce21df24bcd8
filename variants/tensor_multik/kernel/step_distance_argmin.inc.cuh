// Fragment of tensor_multik_iteration's body (kernel.cuh), #included inside the step lambda
// `step_body` after step_operands.inc.cuh: per 32-slot column block, the distance products on
// tensor cores, the transpose into this lane's row, and the argmin of every K group
// (`argmin=mask` written out here, `argmin=packed` through argmin.cuh).
//   reads    what step_operands.inc.cuh declared, the centroid operands (c_hi/c_lo, b_hi/b_lo or
//            s_bfrag), tbuf and its stmatrix bases, row_shared, keep_mask; DEFERRED: the pending
//            update of the previous step, which runs in the first block
//   declares hot, terms, nearest (argmin=mask) or flags_f/window_scale/near_scaled/best/second
//   writes   hot (the one-hot word), terms (each group's distance), xx and the bounds (XX_IN_TILE),
//            the next step's prepared words (operands=prepared), tile_counts/acc (DEFERRED)
//
// Why a fragment and not a function: when the kernel moved into files (commit e926ad1), moving
// the argmin=mask scan into a __forceinline__ function, its registers by reference,
// changed ptxas's register assignment or a predicate's width: the machine code changed (README.md,
// "Keeping the machine code"), while the fully unrolled stages in distance.cuh and update.cuh
// moved without a change. Included text compiles exactly as if it stood in kernel.cuh, so every
// mkbench_kernel_snapshot point's .text stays byte-identical while no file holds the whole body.
// Not a header: no #pragma once, no meaning outside that one place.

    // Per K group: the winner goes straight into the one-hot word and the inertia term; groups
    // that need exact FP32 (a near tie, or a point so near its centroid that the expansion's
    // absolute error would show in the inertia) are flagged and fixed up after the scan, in
    // one warp-uniform branch that spread data rarely takes.
    hot_t hot = 0;
#if ARGMIN_MASK
#if NCB != 1
#error "argmin=mask needs every K group in one 32-slot column block (ΣK <= 32)"
#endif
    float nearest = 0.f;  // the smallest distance key of any group, for the near-point guard
#else
    // Flag bit k-KMIN set (as a float, so the FMA pipe builds it) when group k needs the exact
    // fix-up. The argmin's FMNMX runs on the half-rate ALU pipe, so the near-tie test counts
    // the centroids inside the window with saturating FFMAs instead of tracking a runner-up:
    // sat((best + window − key)·F) is 1 for a key inside, 0 outside, F = 2^20/window.
    float flags_f = 0.f;
    float window_scale;  // 2^20 / window; an approximate reciprocal is plenty for a scale
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(window_scale) : "f"(tie_bound * 0x1p-20f));
    const float near_scaled = (guard_bound - xx) * window_scale;
#endif
    float terms[KCOUNT];
#if !ARGMIN_MASK
    float best = 0.f, second = 0.f;  // running argmin of a K group split across column blocks
#endif
#pragma unroll
    for (int cb = 0; cb < NCB; ++cb) {
      // N ≤ 8: all of the block's products first, then the stores, so 8 independent MMA chains
      // keep the tensor pipe busy where one chain at a time would wait on each result. Wider
      // points go tile by tile (two chains), which keeps 32 fewer registers live.
      [[maybe_unused]] const int tiles = (NT - 4 * cb) < 4 ? (NT - 4 * cb) : 4;  // a constant once unrolled
#if DIST_F16
      // The small products first (x·c_lo), then x_hi·c_hi, as the TF32 path orders them.
      if (NDIM <= 8) {
        float d[2][4][4];
#if CFRAG_SHARED
        uint4 bf[4];
#pragma unroll
        for (int jj = 0; jj < tiles; ++jj) bf[jj] = s_bfrag[(4 * cb + jj) * 32 + lane];
#endif
#pragma unroll
        for (int jj = 0; jj < tiles; ++jj) {
          const int j = 4 * cb + jj;
          const float4 norms = tile_norms(j);
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            // N ≤ 4: [x_hi | x_lo] fills k = 0..7, so two k = 8 MMAs (c_lo, then c_hi) take the
            // lane's two words as they are. One m16n8k16 needed each word twice in an aligned
            // quad, and ptxas built a fresh quad for every MMA: 16 moves a step.
            if (NDIM <= 4)
              mma_f16_k8_from(d[i][jj], af[i][0][0], af[i][0][1], B_LO(bf[jj], j, 0, 0), norms);
            else
              mma_f16_from(d[i][jj], af[i][0], B_LO(bf[jj], j, 0, 0), B_LO(bf[jj], j, 0, 1), norms);
          }
        }
        if (NDIM > 4) {
#pragma unroll
          for (int jj = 0; jj < tiles; ++jj)
#pragma unroll
            for (int i = 0; i < 2; ++i)
              mma_f16(d[i][jj], af[i][0], B_HI(bf[jj], 4 * cb + jj, 0, 0), B_HI(bf[jj], 4 * cb + jj, 0, 1));
        } else {
#pragma unroll
          for (int jj = 0; jj < tiles; ++jj)
#pragma unroll
            for (int i = 0; i < 2; ++i) mma_f16_k8(d[i][jj], af[i][0][0], af[i][0][1], B_HI(bf[jj], 4 * cb + jj, 0, 0));
        }
#if XX_IN_TILE
        // Words D[.][2t+1] of the last tile are slots 8(NT-1)+4+t, free: they take this lane's
        // ‖x‖² partials of rows g and g+8.
#pragma unroll
        for (int i = 0; i < 2; ++i) d[i][NT - 1][1] = xx_partials[i][0], d[i][NT - 1][3] = xx_partials[i][1];
#elif PREPARED_OPERANDS
        // The update's operands are transposed now, so the loaded words are dead and their
        // registers take the next step's straight away: transposed at the update instead, the
        // loop would have to copy every word into the register the next load overwrites.
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          update_a[i][0] = transpose8x8(af[i][0][0]);  // features 0-7, points 0-7
          update_a[i][2] = transpose8x8(af[i][0][1]);  // features 0-7, points 8-15
          update_a[i][1] = NDIM <= 4 ? 0u : transpose8x8(af[i][0][2]);  // features 8-15 (N=4: repeats, zero)
          update_a[i][3] = NDIM <= 4 ? 0u : transpose8x8(af[i][0][3]);
        }
#if TWO_AHEAD
        load_fragment_pairs((int)min((unsigned)load_step, (unsigned)last_step));
#else
        // (The signed form: the unsigned one above measured 0.5 % slower at N=8.)
        load_fragment_pairs(min(load_step, last_step));
#endif
#if PREFETCH_AHEAD
        // (Unsigned: no overflow near 2^31 steps.)
        if (prefetch)
          prefetch_to_l2((int)min((unsigned)step + (FETCH_DEPTH + PREFETCH_AHEAD) * (unsigned)warps_total, (unsigned)last_step));
#endif
#endif
#pragma unroll
        for (int jj = 0; jj < tiles; ++jj)
#pragma unroll
          for (int i = 0; i < 2; ++i)
            store_fragment(tbuf, stsm_base, stsm_half_base, i, jj, HALF_TILE(4 * cb + jj), d[i][jj], lane);
      } else {
#if CFRAG_SHARED
        f16_wide_distance_block(cb, af, s_bfrag, norms_shared, tbuf, stsm_base, stsm_half_base, lane);
#else
        f16_wide_distance_block(cb, af, c_hi, c_lo, norms_shared, tbuf, stsm_base, stsm_half_base, lane);
#endif
      }
#else
#if CFRAG_SHARED
      tf32_distance_block(cb, a_hi, a_lo, s_bfrag, norms_shared, tbuf, stsm_base, stsm_half_base, lane);
#else
      tf32_distance_block(cb, a_hi, a_lo, b_hi, b_lo, norms_shared, tbuf, stsm_base, stsm_half_base, lane);
#endif
#endif
      __syncwarp();
      // This lane's point: slots 32cb + 4h + u sit in chunk h, word u.
      float v[8][4];
#pragma unroll
      for (int h = 0; h < 8; ++h)
        if (32 * cb + 4 * h < SUMK) {
          const float4 chunk = lds128(row_shared + 16 * h);
          v[h][0] = chunk.x, v[h][1] = chunk.y, v[h][2] = chunk.z, v[h][3] = chunk.w;
        }
#if XX_IN_TILE
      {
        // ‖x‖² from the partials of the lanes t = 0..3 (N=4: t = 0, 1; lanes 2, 3 repeat their dims).
        const float4 partials = lds128(row_shared + 16 * (2 * NT - 1));
        xx = NDIM <= 4 ? partials.x + partials.y : (partials.x + partials.y) + (partials.z + partials.w);
        set_bounds();
      }
#endif
#if DEFERRED
      if (defer && cb == 0) update_step(pending_hot, pending_partner, pending_a, no_af, nullptr, tile_counts, acc, lane_ops, offsets, x_scale, g, t);
#endif
      __syncwarp();  // tbuf is rewritten by the next block or step

#if ARGMIN_MASK
      float edges[KCOUNT];
#pragma unroll
      for (int k = KMIN; k <= KMAX; ++k) {
        float scratch[KMAX];
#pragma unroll
        for (int c = 0; c < k; ++c) {
          const int col = OFFSET(k) + c;
          scratch[c] = v[col >> 2][col & 3];
        }
#if INT_GROUP_MIN
        // group_min=int: keys carry +key_bias from their accumulators, so the keys of most points
        // are positive and their bits order as integers; sm_90 ptxas fuses integer mins into a
        // three-input min (up to two keys an instruction where FMNMX takes one). Where two or
        // more keys of a group are negative the integer min returns the negative key nearest
        // zero, above the true minimum; every negative key then lies below min + window (the
        // window > 0 and wider than an ulp of the key) and gets its bit, so the group has at
        // least two bits and goes to the exact fix-up like a near tie. The min is exact otherwise.
        // (A pairwise tree: chains through __vimin3_s32 fuse more but spilled 4-16 bytes at N=8
        // under the 128-register cap, NVRTC.)
        int key_bits[KMAX];
#pragma unroll
        for (int c = 0; c < k; ++c) key_bits[c] = __float_as_int(scratch[c]);
#pragma unroll
        for (int stride = 1; stride < KMAX; stride *= 2)
#pragma unroll
          for (int i = 0; i + stride < KMAX; i += 2 * stride)
            if (i + stride < k) key_bits[i] = min(key_bits[i], key_bits[i + stride]);
        const float group_best = __int_as_float(key_bits[0]);
        terms[k - KMIN] = xx_less_bias + group_best;
#else
        const float group_best = tree_reduce(scratch, k, [](float a, float b) { return fminf(a, b); });
        terms[k - KMIN] = xx + group_best;
#endif
        edges[k - KMIN] = group_best + tie_bound;
        nearest = k == KMIN ? group_best : fminf(nearest, group_best);
      }
      // Slots from the highest down, each appending its bit below the ones before; eight slots
      // per chain, so NT independent chains instead of one dependent SHF per slot.
      unsigned chains[NT];
#pragma unroll
      for (int j = 0; j < NT; ++j) chains[j] = 0u;
#pragma unroll
      for (int k = KMAX; k >= KMIN; --k)
#pragma unroll
        for (int c = k - 1; c >= 0; --c) {
          const int s = OFFSET(k) + c;
          const float below = v[s >> 2][s & 3] - edges[k - KMIN];
          chains[s >> 3] = __funnelshift_l(__float_as_uint(below), chains[s >> 3], 1);  // (chain << 1) | sign
        }
      // Each chain holds at most 8 bits, so the adds never carry: one IMAD or LEA per chain where
      // shift-and-or took two.
      hot = chains[0];
#pragma unroll
      for (int j = 1; j < NT; ++j) hot += chains[j] << (8 * j);
#else
      packed_argmin(cb, v, xx, tie_bound, guard_bound, window_scale, near_scaled, keep_mask, best, second, hot, flags_f,
                    terms);
#endif
    }
