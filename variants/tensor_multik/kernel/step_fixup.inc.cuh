// Fragment of tensor_multik_iteration's body (kernel.cuh), #included inside the step lambda
// `step_body` after step_distance_argmin.inc.cuh: which groups need the exact FP32 argmin (a near
// tie, an empty or crowded argmin=mask field, a point nearer a centroid than the guard), and that
// fix-up, in one warp-uniform branch that spread data rarely takes.
//   reads    valid, hot, terms, xx/xx_less_bias, tie_bound, nearest or flags_f, X or points,
//            s_c (exact centroids), tbuf (the step's transposed row, one column block)
//   declares partner_word (EARLY_PARTNER), which the update call at the step's end reads
//   writes   hot and terms of the fixed groups (EXACT_INERTIA: every group's term); hot = 0 for a
//            point past the end
//
// Why a fragment and not a function: when the kernel moved into files (commit e926ad1), moving
// the fix-up (its short-circuit `valid`) into a __forceinline__ function, its registers by reference,
// changed ptxas's register assignment or a predicate's width: the machine code changed (README.md,
// "Keeping the machine code"), while the fully unrolled stages in distance.cuh and update.cuh
// moved without a change. Included text compiles exactly as if it stood in kernel.cuh, so every
// mkbench_kernel_snapshot point's .text stays byte-identical while no file holds the whole body.
// Not a header: no #pragma once, no meaning outside that one place.

#if ARGMIN_MASK
    // A group with no bit (a zero window: all-zero data) or with several needs the fix-up, as
    // does a point nearer to any centroid than the guard.
#if INT_GROUP_MIN
#define GUARD_KEY fmaf(GUARD_OVER_TIE, tie_bound, -xx_less_bias)
#else
#define GUARD_KEY fmaf(GUARD_OVER_TIE, tie_bound, -xx)
#endif
    // (LEAN_STEP: without short-circuits, no branch and reconvergence a step: N=4 and N=8 K=16
    // 1 % faster.)
#if LEAN_STEP
    const bool needs_exact = valid & ((__popc((unsigned)hot) != KCOUNT) | (nearest < GUARD_KEY));
#else
    const bool needs_exact = valid && (__popc((unsigned)hot) != KCOUNT || nearest < GUARD_KEY);
#endif
#undef GUARD_KEY
    if (!valid) hot = 0;
    // The update's partner word is shuffled before the fix-up branch (and again inside it, where
    // the word may change): after it, its PRMT was the step's largest single stall, 3 % of the
    // samples at N=8, waiting on this shuffle.
#if EARLY_PARTNER
    unsigned partner_word = __shfl_xor_sync(FULL_MASK, (unsigned)hot, DIST_F16 ? 1 : 4);
#endif
    if (__any_sync(FULL_MASK, EXACT_INERTIA || needs_exact)) {
      // (Deriving the flags under `if (needs_exact)` instead saves N=16 a 4-byte spill and N=8
      // 14 registers, but measured 6 % slower at N=8 and 1.5 % at N=16.)
      unsigned flags = 0u;
#if LEAN_STEP
      const float guard_bound = GUARD_OVER_TIE * tie_bound;
#endif
#pragma unroll
      for (int k = KMIN; k <= KMAX; ++k) {
        const unsigned field = (unsigned)(hot >> OFFSET(k)) & (k >= 32 ? ~0u : (1u << k) - 1u);
        if (valid && (field == 0u || (field & (field - 1u)) != 0u || terms[k - KMIN] < guard_bound))
          flags |= 1u << (k - KMIN);
      }
#else
    if (!valid) hot = 0, flags_f = 0.f;
    if (__any_sync(FULL_MASK, EXACT_INERTIA || flags_f != 0.f)) {
      // flags: groups needing a full exact argmin (near tie or near point). EXACT_INERTIA
      // also takes every other group's term as the exact distance to its winner.
      const unsigned flags = valid ? (unsigned)flags_f : 0u;
#endif
      float x_exact[NDIM];
#if FETCH_REGS
      {
        const float4* own_row = reinterpret_cast<const float4*>(points + (32LL * step + lane) * NDIM);
#pragma unroll
        for (int c = 0; c < NDIM / 4; ++c) {
          const float4 q = __ldcg(own_row + c);
          x_exact[4 * c] = q.x, x_exact[4 * c + 1] = q.y, x_exact[4 * c + 2] = q.z, x_exact[4 * c + 3] = q.w;
        }
      }
#else
      load_own_point(X, offsets.own, x_exact);
#endif
#if DSCALE
#pragma unroll
      for (int d = 0; d < NDIM; ++d) x_exact[d] *= x_scale;
#endif
#pragma unroll
      for (int k = KMIN; k <= KMAX; ++k) {
        const unsigned bit = 1u << (k - KMIN);
        const float* group = s_c + OFFSET(k) * NDIM;
        const int approx = group_label(hot, k);
        if (flags & bit) {
          int label = approx < 0 ? 0 : approx;  // argmin=mask: an empty field has no approximate winner
          float exact_best = __int_as_float(0x7f7fffff);
#if NCB == 1
          // The step's transposed row is still in tbuf (one column block: nothing rewrote it),
          // so only the centroids whose expanded distance lies within two windows of the
          // group's best get an exact distance — usually two — not all k. The true winner is
          // among them: its expanded distance is within one window of the best. Ascending
          // order keeps the lowest index on an exact tie, as the full scan did.
          const float* row = tbuf + lane * TROW + OFFSET(k);
          float expanded[KMAX];
          float group_min = __int_as_float(0x7f7fffff);
#pragma unroll
          for (int c = 0; c < k; ++c) expanded[c] = row[c], group_min = fminf(group_min, expanded[c]);
          const float reach = group_min + 2.f * tie_bound;
          unsigned candidates = 0u;
#pragma unroll
          for (int c = 0; c < k; ++c) candidates |= (expanded[c] <= reach ? 1u : 0u) << c;
#pragma unroll 1
          while (candidates) {
            const int cc = __ffs(candidates) - 1;
            candidates &= candidates - 1u;
            const float e = exact_distance(x_exact, group + cc * NDIM);
            if (e < exact_best) exact_best = e, label = cc;
          }
#else
#pragma unroll 1
          for (int cc = 0; cc < k; ++cc) {
            const float e = exact_distance(x_exact, group + cc * NDIM);
            if (e < exact_best) exact_best = e, label = cc;
          }
#endif
          terms[k - KMIN] = exact_best;
#if ARGMIN_MASK
          // The field may hold several bits (or none): it becomes exactly the exact winner's.
          hot = (hot & ~((k >= 32 ? ~0u : (1u << k) - 1u) << OFFSET(k))) | (1u << (OFFSET(k) + label));
#else
          hot ^= (((hot_t)1 << approx) ^ ((hot_t)1 << label)) << OFFSET(k);
#endif
        } else if (EXACT_INERTIA && valid) {
          terms[k - KMIN] = exact_distance(x_exact, group + approx * NDIM);
        }
      }
#if EARLY_PARTNER
      partner_word = __shfl_xor_sync(FULL_MASK, (unsigned)hot, DIST_F16 ? 1 : 4);
#endif
    }
