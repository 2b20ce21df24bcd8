// tensor-multik, runtime-compiled: each K group's winner from the lane's row of distance keys
// (argmin=mask: in-window bits; argmin=packed: the index in the key's mantissa), and the
// exact FP32 fix-up of the groups whose winner the expansion cannot decide.
#pragma once

#include "config.cuh"

// The winner of K group k in a point's one-hot word.
__device__ __forceinline__ int group_label(hot_t hot, int k) {
#if SUMK <= 32
  return __ffs((unsigned)(hot >> OFFSET(k))) - 1;
#else
  return __ffsll((long long)(hot >> OFFSET(k))) - 1;
#endif
}

// Pairwise reduction of x[0..count) in place: for the group min (exact) and the sum of the
// window's 0/1 counts it gives what a chain gives, in log2(count) dependent steps instead of
// count-1, which matters where a warp's step is latency-bound (one K of 16: 15 + 16 chained
// ALU and FMA ops).
template <int CAP, typename Op>
__device__ __forceinline__ float tree_reduce(float (&x)[CAP], int count, Op op) {
#pragma unroll
  for (int stride = 1; stride < CAP; stride *= 2)
#pragma unroll
    for (int i = 0; i + stride < CAP; i += 2 * stride)
      if (i + stride < count) x[i] = op(x[i], x[i + stride]);
  return x[0];
}

__device__ __forceinline__ float exact_distance(const float* x_row, const float* c_row) {
  float e = 0.f;
#pragma unroll
  for (int d = 0; d < NDIM; ++d) {
    const float diff = x_row[d] - c_row[d];
    e = fmaf(diff, diff, e);
  }
  return e;
}

// argmin=packed, column block cb of the lane's row: the index packed into each key's low
// mantissa bits (keep_mask keeps the rest), the group's minimum, and the near-tie test counting
// the keys inside the window with saturating FFMAs (the argmin's FMNMX runs on the half-rate
// ALU pipe, the FFMAs on the FMA pipe): sat((best + window − key)·F) is 1 for a key inside, 0
// outside, F = 2^20/window. A group split across column blocks (ΣK > 32) carries a running
// best and runner-up. Flag bit k − KMIN of flags_f is set (as a float, so the FMA pipe builds
// it) when group k needs the exact fix-up.
__device__ __forceinline__ void packed_argmin(const int cb, const float (&v)[8][4], const float& xx,
                                              const float& tie_bound, const float& guard_bound,
                                              const float& window_scale, const float& near_scaled,
                                              const unsigned& keep_mask, float& best, float& second, hot_t& hot,
                                              float& flags_f, float (&terms)[KCOUNT]) {
#pragma unroll
  for (int k = KMIN; k <= KMAX; ++k) {
    const bool inside = OFFSET(k) >= 32 * cb && OFFSET(k) + k <= 32 * cb + 32;
    if (inside) {
      // The group lies in this block: min, then the window count.
      float keys[KMAX];
#pragma unroll
      for (int c = 0; c < k; ++c) {
        const int col = OFFSET(k) + c - 32 * cb;
        keys[c] = __int_as_float((__float_as_int(v[col >> 2][col & 3]) & keep_mask) | c);
      }
      float scratch[KMAX];
#pragma unroll
      for (int c = 0; c < k; ++c) scratch[c] = keys[c];
      const float group_best = tree_reduce(scratch, k, [](float a, float b) { return fminf(a, b); });
      // A near point counts as one more key inside the window: the group is flagged when
      // the count reaches 2 (the winner itself is always inside).
      float within = __saturatef(fmaf(group_best, -window_scale, near_scaled));
      if (k > 1) {
        const float edge = fmaf(group_best, window_scale, 1048576.f);  // (best + window)·scale
#pragma unroll
        for (int c = 0; c < k; ++c) scratch[c] = __saturatef(fmaf(keys[c], -window_scale, edge));
        within += tree_reduce(scratch, k, [](float a, float b) { return a + b; });
      } else {
        within += 1.f;
      }
      flags_f = fmaf(__saturatef(fmaf(within, 4.f, -6.f)), (float)(1u << (k - KMIN)), flags_f);
      terms[k - KMIN] = xx + group_best;
      hot |= ((hot_t)1 << OFFSET(k)) << (__float_as_int(group_best) & IDX_MASK);
    } else {
      // Split across blocks (ΣK > 32): a running best and runner-up carry over.
#pragma unroll
      for (int c = 0; c < k; ++c) {
        const int s = OFFSET(k) + c;
        if (s >= 32 * cb && s < 32 * cb + 32) {
          const int col = s - 32 * cb;
          const float key = __int_as_float((__float_as_int(v[col >> 2][col & 3]) & keep_mask) | c);
          if (c == 0) {
            best = key;
            second = __int_as_float(0x7f7fffff);
          } else {
            second = fminf(second, fmaxf(best, key));
            best = fminf(best, key);
          }
          if (c == k - 1) {
            const float term = xx + best;
            terms[k - KMIN] = term;
            if ((k > 1 && second - best <= tie_bound) || term < guard_bound)
              flags_f += (float)(1u << (k - KMIN));
            hot |= ((hot_t)1 << OFFSET(k)) << (__float_as_int(best) & IDX_MASK);
          }
        }
      }
    }
  }
}
