// Fragment of tensor_multik_iteration's body (kernel.cuh), #included inside the step lambda
// `step_body` after `valid` is set: this step's operands.
//   reads    the kernel's prologue state (x_scale, tie_*, ring/ring_shared addresses, offsets,
//            frag_words/next_xx or frag_pairs, norm_quads), step/load_step/prefetch, X, ring_slot
//   declares xx, xx_less_bias (INT_GROUP_MIN), tie_bound, guard_bound, set_bounds, the distance
//            product's A fragments (af, or a_hi/a_lo), xx_partials (XX_IN_TILE), update_a,
//            and the macros AF_ARG, X_ARG, PARTNER_ARG the update call at the step's end uses
//   writes   with XX_IN_TILE, the next step's fragment pairs (load_fragment_pairs)
//
// Why a fragment and not a function: it declares most of the step's state (xx, the bounds, the A
// fragments, update_a, the update call's macros) for the fragments after it, so as a function it
// would hand all of it back; and the parts of this step that were tried as functions (the
// argmin=mask scan, the fix-up) changed the machine code (commit e926ad1; README.md, "Keeping the
// machine code"). Included text compiles exactly as if it stood in kernel.cuh, so every
// mkbench_kernel_snapshot point's .text stays byte-identical while no file holds the whole body.
// Not a header: no #pragma once, no meaning outside that one place.

    // This lane's point: ‖x‖² and the error scale of its expansion (fetch=registers: after the
    // transpose, from the partial sums the fragments' lanes left in the row).
    float xx = 0.f;
#if !FETCH_REGS
    {
      float x_own[NDIM];
#if PINNED_RING
      const unsigned slot_bytes = ring_slot * (STEP_FLOATS * 4);
#pragma unroll
      for (int c = 0; c < NDIM / 4; ++c) {
#if NDIM == 8
        const float4 v = lds128((c ? own_shared_second : own_shared) + slot_bytes);
#else
        const float4 v = lds128(own_shared + slot_bytes + 16 * c);
#endif
        x_own[4 * c] = v.x, x_own[4 * c + 1] = v.y, x_own[4 * c + 2] = v.z, x_own[4 * c + 3] = v.w;
      }
#else
      load_own_point(X, offsets.own, x_own);
#endif
#pragma unroll
      for (int d = 0; d < NDIM; ++d) {
#if DSCALE
        x_own[d] *= x_scale;
#endif
        xx = fmaf(x_own[d], x_own[d], xx);
      }
    }
#elif PREPARED_OPERANDS
    xx = next_xx;
#endif
#if INT_GROUP_MIN
    const float xx_less_bias = xx - key_bias;  // a key plus this is the point's distance
#endif
    // The window TIE_SCALE·(‖x‖² + 2·max‖c‖²) (+ FP16's absolute floor), as FMAs on xx from the
    // kernel's constant part; the guard is GUARD_OVER_TIE windows.
    float tie_bound;
#if !ARGMIN_MASK || !LEAN_STEP
    float guard_bound;
#endif
    auto set_bounds = [&]() {
#if LEAN_STEP
      tie_bound = fmaf(tie_per_xx, xx, tie_const);  // FP16's subnormal floor included (tie_per_xx)
#elif DIST_F16
      // FP16's subnormal floor adds an absolute error, ABS_SCALE·(‖x‖ + 2·max‖c‖) of the window.
      float x_norm;
      asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(x_norm) : "f"(xx));
      tie_bound = fmaf(ABS_SCALE, x_norm, fmaf(TIE_SCALE, xx, tie_base));
#else
      tie_bound = fmaf(TIE_SCALE, xx, tie_base);
#endif
#if !ARGMIN_MASK || !LEAN_STEP
      guard_bound = GUARD_OVER_TIE * tie_bound;
#endif
    };
#if !XX_IN_TILE
    set_bounds();
#endif

#if DIST_F16
    // A fragments of the distance product (rows = points 16i+g and 16i+g+8, k = features), kept
    // for the update, which reads them transposed.
    unsigned af[2][FT][4];
#if XX_IN_TILE
    float xx_partials[2][2];  // rows 16i+g, 16i+g+8: this lane's two dims of ‖x‖²
#elif PREPARED_OPERANDS
    unsigned update_a[2][4];  // the update's A operands (features × points) of each half-step
#endif
#pragma unroll
    for (int i = 0; i < 2; ++i) {
#if PREPARED_OPERANDS
#if NDIM == 8
      af[i][0][0] = frag_words[i].x, af[i][0][1] = frag_words[i].y, af[i][0][2] = frag_words[i].z,
      af[i][0][3] = frag_words[i].w;
#else
      af[i][0][0] = af[i][0][2] = i ? frag_words[0].z : frag_words[0].x;
      af[i][0][1] = af[i][0][3] = i ? frag_words[0].w : frag_words[0].y;
#endif
#elif NDIM <= 8
#if FETCH_REGS
      float2 r0 = frag_pairs[2 * i], r1 = frag_pairs[2 * i + 1];
#elif PINNED_RING
      const unsigned frag_step = frag_shared + ring_slot * (STEP_FLOATS * 4);
      float2 r0 = lds64(frag_step + 4 * (16 * i) * NDIM), r1 = lds64(frag_step + 4 * (16 * i + 8) * NDIM);
#else
      const int dim = NDIM <= 4 ? 2 * (t & 1) : 2 * t;
      float2 r0 = load_pair(X + offsets.frag[0], 16 * i, dim), r1 = load_pair(X + offsets.frag[0], 16 * i + 8, dim);
#endif
#if DSCALE
      r0.x *= x_scale, r0.y *= x_scale, r1.x *= x_scale, r1.y *= x_scale;
#endif
      unsigned hi0, lo0, hi1, lo1;
      split_half2(r0.x, r0.y, hi0, lo0);
      split_half2(r1.x, r1.y, hi1, lo1);
#if XX_IN_TILE
      xx_partials[i][0] = fmaf(r0.x, r0.x, r0.y * r0.y);
      xx_partials[i][1] = fmaf(r1.x, r1.x, r1.y * r1.y);
#endif
#if NDIM <= 4
      // (Features 8-15 as [lo | hi] instead, so that no register appears twice in the operand, with
      // the update then counting every part twice: 8 fewer moves a step, and 0.8 % slower at N=4.)
      const bool lo_lane = t >= 2;  // features 2t, 2t+1 are lo parts for t = 2, 3
      af[i][0][0] = af[i][0][2] = lo_lane ? lo0 : hi0;
      af[i][0][1] = af[i][0][3] = lo_lane ? lo1 : hi1;
#else
      af[i][0][0] = hi0, af[i][0][1] = hi1, af[i][0][2] = lo0, af[i][0][3] = lo1;
#endif
#else
#pragma unroll
      for (int kt = 0; kt < KT; ++kt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int h = 2 * kt + e;  // 8-dim block: dims 8h + 2t, +1
          unsigned hi0 = 0u, lo0 = 0u, hi1 = 0u, lo1 = 0u;
          if (h < DK) {
            float2 r0 = load_pair(X + offsets.frag[h], 16 * i, 8 * h + 2 * t);
            float2 r1 = load_pair(X + offsets.frag[h], 16 * i + 8, 8 * h + 2 * t);
#if DSCALE
            r0.x *= x_scale, r0.y *= x_scale, r1.x *= x_scale, r1.y *= x_scale;
#endif
            split_half2(r0.x, r0.y, hi0, lo0);
            split_half2(r1.x, r1.y, hi1, lo1);
          }
          af[i][kt][2 * e] = hi0, af[i][kt][2 * e + 1] = hi1;
          af[i][KT + kt][2 * e] = lo0, af[i][KT + kt][2 * e + 1] = lo1;
        }
#endif
    }
#if XX_IN_TILE
    // The pairs are split: their registers take the next step's, a whole step ahead of use.
    load_fragment_pairs(min(step + warps_total, steps - 1));
#endif
#else
    // A fragments of the distance product: rows = points 16i+g and 16i+g+8.
    unsigned a_hi[2][DK][4], a_lo[2][DK][4];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int kk = 0; kk < DK; ++kk) {
        const float* frag = X + offsets.frag[kk];
        const float2 r0 = load_pair(frag, 16 * i, 8 * kk + 2 * t);
        const float2 r1 = load_pair(frag, 16 * i + 8, 8 * kk + 2 * t);
        split_nearest(r0.x, a_hi[i][kk][0], a_lo[i][kk][0]);
        split_nearest(r1.x, a_hi[i][kk][1], a_lo[i][kk][1]);
        split_nearest(r0.y, a_hi[i][kk][2], a_lo[i][kk][2]);
        split_nearest(r1.y, a_hi[i][kk][3], a_lo[i][kk][3]);
      }
#endif

#if !(DIST_F16 && PREPARED_OPERANDS && !XX_IN_TILE)
    const unsigned update_a[2][4] = {};  // (only operands=prepared has update operands of its own)
#endif
#if DIST_F16
#define AF_ARG af
#else
#define AF_ARG update_a
#endif
#if FETCH_REGS
#define X_ARG nullptr
#else
#define X_ARG X
#endif
#if EARLY_PARTNER
#define PARTNER_ARG partner_word
#else
#define PARTNER_ARG 0u
#endif
