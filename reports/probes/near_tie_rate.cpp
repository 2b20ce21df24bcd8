// Probe: the share of 32-point steps on which tensor-multik's exact fix-up runs, by an FP64
// simulation of its rule (a group is ambiguous when its two nearest centroids are within the window
// TIE·(‖x‖² + 2·max‖c‖²) + the FP16 floor; a point is guarded when nearer than 64 windows), on uniform
// [0,1)^N data with first-K seeds moved by a few Lloyd iterations, raw and centred on the data's mean.
// Build: g++ -O2 -o near_tie_rate near_tie_rate.cpp; run: ./near_tie_rate N KMIN KMAX ITERS [DATA [BIAS]]
// ./near_tie_rate 8 3 7 3 printed 7.7 % of steps raw, 1.0 % centred: the case for centred operands
// (61577f0; the H200 profile measured 1.0 %). The window constants are those of ed89c4b (one m16n8k16
// at N ≤ 4, no centring unit): the ratio, not the last digit, is the point.
// group_min=int (8c402d5): DATA is uniform (default) or gauss (N(0,1) coordinates); BIAS adds a key bias
// b to every key, as a multiple of the mean ‖x − μ‖² ("1") or the largest ("max"): the window grows by
// TIE·b, and a group with two keys ‖x − c‖² − ‖x − μ‖² + b below zero also counts as needing the fix-up.
// ./near_tie_rate 8 3 7 3 uniform 1 printed 1.6 % centred (max: 2.7 %), gauss 1: 1.7 % (max: 4.5 %, none: 1.0 %).
// The lean step (3f6f053): the FP16 floor's ‖x‖ bounded by (‖x‖²/s + s)/2 as the kernel does; ./near_tie_rate
// 4 3 5 3 and 8 16 16 3 print the same rates as with ‖x‖ itself (centred: 0.21 % and 0.33 % of steps).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>
int main(int argc, char** argv) {
  if (argc < 5 || argc > 7) {
    std::fprintf(stderr, "usage: near_tie_rate N KMIN KMAX ITERS [uniform|gauss [BIAS|max]]\n");
    return 2;
  }
  int N = atoi(argv[1]), k1 = atoi(argv[2]), k2 = atoi(argv[3]);
  int M = 1 << 21;
  std::mt19937_64 r(1);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> gauss(0, 1);
  const bool gaussian = argc > 5 && std::string(argv[5]) == "gauss";
  const std::string bias_arg = argc > 6 ? argv[6] : "";
  std::vector<double> X((size_t)M * N);
  for (auto& v : X) v = gaussian ? gauss(r) : u(r);
  double TIE = 2 * ((3 + 9 * (N <= 4 ? 1 : 2)) + N / 4.0) * std::ldexp(1.0, -22) * 1.25,
         ABS = 2 * 1.25 * 1.01 * std::ldexp(1.0, -25) * std::sqrt(N);
  int iters = atoi(argv[4]);
  int S = 0;
  for (int k = k1; k <= k2; ++k) S += k;
  std::vector<double> C((size_t)S * N);
  {
    int o = 0;
    for (int k = k1; k <= k2; ++k) {
      for (int c = 0; c < k; ++c)
        for (int d = 0; d < N; ++d) C[(o + c) * N + d] = X[c * N + d];
      o += k;
    }
  }
  for (int it = 0; it < iters; ++it) {
    std::vector<double> sum((size_t)S * N, 0), cnt(S, 0);
    for (int i = 0; i < M; ++i) {
      const double* x = &X[(size_t)i * N];
      int o = 0;
      for (int k = k1; k <= k2; ++k) {
        int bc = 0;
        double b = 1e300;
        for (int c = 0; c < k; ++c) {
          double s = 0;
          for (int d = 0; d < N; ++d) {
            double q = x[d] - C[(o + c) * N + d];
            s += q * q;
          }
          if (s < b) {
            b = s;
            bc = c;
          }
        }
        cnt[o + bc]++;
        for (int d = 0; d < N; ++d) sum[(o + bc) * N + d] += x[d];
        o += k;
      }
    }
    for (int j = 0; j < S; ++j)
      if (cnt[j])
        for (int d = 0; d < N; ++d) C[j * N + d] = sum[j * N + d] / cnt[j];
  }
  for (int centred = 0; centred < 2; ++centred) {
    std::vector<double> mu(N, 0);
    if (centred) {
      for (int i = 0; i < M; ++i)
        for (int d = 0; d < N; ++d) mu[d] += X[(size_t)i * N + d];
      for (auto& v : mu) v /= M;
    }
    double maxn = 0;
    for (int c = 0; c < S; ++c) {
      double s = 0;
      for (int d = 0; d < N; ++d) {
        double t = C[c * N + d] - mu[d];
        s += t * t;
      }
      maxn = std::max(maxn, s);
    }
    double largest = 0, mean_square = 0;
    for (int i = 0; i < M; ++i) {
      double xx = 0;
      for (int d = 0; d < N; ++d) xx += (X[(size_t)i * N + d] - mu[d]) * (X[(size_t)i * N + d] - mu[d]);
      largest = std::max(largest, xx);
      mean_square += xx / M;
    }
    const double bias = bias_arg.empty() ? 0 : bias_arg == "max" ? largest : atof(bias_arg.c_str()) * mean_square;
    long tiec = 0, gc = 0, warps = 0, wflag = 0;
    bool any = false;
    for (int i = 0; i < M; ++i) {
      const double* x = &X[(size_t)i * N];
      double xx = 0;
      for (int d = 0; d < N; ++d) {
        double t = x[d] - mu[d];
        xx += t * t;
      }
      // The kernel bounds ABS·‖x‖ by ABS·(‖x‖²/s + s)/2, s = max(‖c‖max, ABS/TIE): one FMA on ‖x‖².
      const double pivot = std::max(std::sqrt(maxn), ABS / TIE);
      double tie = TIE * (xx + 2 * maxn + bias) + ABS * 0.5 * (xx / pivot + pivot) + ABS * 2 * std::sqrt(maxn),
             guard = 64 * tie;
      bool t = false;
      double dmin = 1e300;
      int o = 0;
      for (int k = k1; k <= k2; ++k) {
        double b1 = 1e300, b2 = 1e300;
        int negative = 0;
        for (int c = 0; c < k; ++c) {
          const double* cc = &C[(o + c) * N];
          double s = 0;
          for (int d = 0; d < N; ++d) {
            double q = x[d] - cc[d];
            s += q * q;
          }
          if (!bias_arg.empty() && s - xx + bias < 0) ++negative;
          if (s < b1) {
            b2 = b1;
            b1 = s;
          } else if (s < b2)
            b2 = s;
        }
        if (k > 1 && b2 - b1 <= tie) t = true;
        if (negative >= 2) t = true;
        dmin = std::min(dmin, b1);
        o += k;
      }
      bool g = dmin < guard;
      tiec += t;
      gc += g;
      any |= (t || g);
      if (i % 32 == 31) {
        warps++;
        wflag += any;
        any = false;
      }
    }
    printf("%s tie/pt %.5f guard/pt %.6f steps-with-fixup %.4f\n", centred ? "centred" : "raw    ",
           (double)tiec / M, (double)gc / M, (double)wflag / warps);
  }
}
