// ALU-pipe throughput probe: how many warp-instructions per clock an SM sustains for the ops an
// argmin or one-hot build can use (FMNMX, IMNMX, the DPX three-input VIMNMX3 / VIADDMNMX, LOP3,
// FFMA, two ways to turn a bit into 1.0f). On the H200 (8 independent chains per thread, 8 warps x
// 132 SMs): LOP3 3.6, IMNMX 2.4, FFMA 1.9, FMNMX 1.85, VIMNMX3 1.1, VIADDMNMX 1.1. So FMNMX is
// half-rate, which is why tensor-multik's near-tie test moved to the FMA pipe (7a165f1), and the
// three-input min saves issue slots, not ALU time (docs/tensor-multik.md, group_min=int).
// Not part of the build: nvcc -arch=sm_90 -O3 -o alu_probe reports/probes/alu_throughput.cu
// && ./alu_probe; cuobjdump -sass on a -cubin build shows which SASS each op became.
#include <cstdio>
#include <cuda_runtime.h>
template <int OP>
__global__ void bench(unsigned* out, int iters, unsigned seed) {
  unsigned a[8], b[8], c[8];
  const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
  for (int j = 0; j < 8; ++j) { a[j] = (tid * 2654435761u + j * 97u + seed) & 0x3fffffffu; b[j] = a[j] ^ 0x1234567u; c[j] = a[j] + 77u * j; }
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      if (OP == 0) a[j] = __float_as_uint(fminf(__uint_as_float(a[j]), __uint_as_float(b[j])));  // FMNMX
      if (OP == 1) a[j] = (unsigned)__vimin3_s32((int)a[j], (int)b[j], (int)c[j]);              // 3-way
      if (OP == 2) a[j] = (unsigned)__viaddmin_s32((int)a[j], (int)b[j], (int)c[j]);            // add+min
      if (OP == 3) a[j] = (unsigned)min((int)a[j], (int)b[j]);                                    // IMNMX
      if (OP == 4) a[j] = (a[j] & 0xffffe000u) | (b[j] & 7u);                                     // LOP3 pack
      if (OP == 5) a[j] = __float_as_uint(fmaf(__uint_as_float(a[j]), 1.0001f, __uint_as_float(b[j]))); // FFMA
      if (OP == 6) { unsigned m = (a[j] >> 3) & 1u; a[j] = a[j] + m * 0x3f800000u; }              // bit->1.0f
      if (OP == 7) { a[j] += ((a[j] >> 5) & 1u) ? 0x3f800000u : 0u; }                                // select form
      b[j] += 1u;
    }
  }
  unsigned x = 0;
#pragma unroll
  for (int j = 0; j < 8; ++j) x ^= a[j];
  out[tid] = x;
}
template <int OP>
void run(const char* name, unsigned* out) {
  cudaEvent_t s, e; cudaEventCreate(&s); cudaEventCreate(&e);
  const int blocks = 132 * 8, threads = 256, iters = 4096;
  bench<OP><<<blocks, threads>>>(out, 16, 1);
  cudaEventRecord(s);
  bench<OP><<<blocks, threads>>>(out, iters, 2);
  cudaEventRecord(e); cudaEventSynchronize(e);
  float ms = 0; cudaEventElapsedTime(&ms, s, e);
  const double ops = double(blocks) * threads * iters * 8;  // one op per chain step (+1 IADD for b)
  printf("%-28s %8.3f ms  %7.1f Gop/s  %.2f warp-ops/clk/SM @1.98GHz\n", name, ms, ops / ms / 1e6,
         ops / 32 / (ms * 1e-3) / 132 / 1.98e9);
}
int main() {
  unsigned* out; cudaMalloc(&out, 132 * 8 * 256 * 4);
  run<0>("FMNMX (+IADD)", out); run<1>("VIMNMX3 __vimin3 (+IADD)", out); run<2>("VIADDMNMX (+IADD)", out);
  run<3>("IMNMX (+IADD)", out); run<4>("LOP3 pack (+IADD)", out); run<5>("FFMA (+IADD)", out);
  run<6>("bit*1.0f (+IADD)", out); run<7>("bit?1.0f:0 (+IADD)", out);
  return 0;
}
