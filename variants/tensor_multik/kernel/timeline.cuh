// tensor-multik, runtime-compiled: MKBENCH_TIMELINE, a diagnostic of where a launch's time goes.
// With TIMELINE=1 (the host's timeline kernel, built only when MKBENCH_TIMELINE names a file)
// thread 0 of each block stamps the global timer at its entry, after the centroid load, after
// the loop's block barrier and at its ticket, and lane 0 of each warp at its loop's end:
// TIMELINE_FIELDS + WARPS values per block (the SM first), then the last block's finish. With
// TIMELINE=0, every kernel measured, the stamps compile to nothing.
#pragma once

#include "config.cuh"

#define TIMELINE_FIELDS 5
#if TIMELINE
// (The block's record is recomputed at each stamp from the parameter: a pointer held through
// the step loop spilled 48 bytes at N=8.)
#define STAMP(field)                                                       \
  do {                                                                     \
    if (timeline) {                                                        \
      unsigned long long now_ns;                                           \
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now_ns));           \
      timeline[blockIdx.x * (TIMELINE_FIELDS + WARPS) + (field)] = now_ns; \
    }                                                                      \
  } while (0)
#else
#define STAMP(field) \
  do {               \
  } while (0)
#endif
