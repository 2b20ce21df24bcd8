#pragma once
// `mkbench fit`: what the user asked for (docs/fit.md), checked in one place before any data
// is loaded, so bad input costs nothing and always exits 2 with a message.
#include <cstdint>
#include <string>

#include "variants/step.hpp"

namespace mk {

struct FitOptions {
  std::string dataset;          // the same specs as `run --dataset` (required)
  int dims = 0;                 // 0: generators use 8; files give their own N (a value must agree)
  std::string points;           // "": generators use 32M; files give their own M (a value must agree)
  std::string k = "2..10";      // K or A..B
  std::string init = "k-means++";  // first | random | k-means++ | npy:PATH
  std::string init_sample;         // k-means++ from a stratified sample of this many rows ("": auto)
  int max_iter = 300;
  double tol = 1e-4;            // scikit-learn's: relative to the mean per-feature variance
  int n_init = 1;               // best of R seedings by inertia, per K
  uint64_t seed = 42;
  std::string variant = "auto";
  std::string empty = "farthest";
  int silhouette_sample = 10000;  // 0: no silhouette
  std::string weights;           // "": unweighted; npy:PATH: one weight per point
  bool stream = false;          // --stream: seed 001's one-pass streaming k-means (stream/)
  std::string chunk_points;     // --stream's points per chunk ("": sqrt(M·K), seed 001's)
  bool empty_given = false;     // --empty / --silhouette-sample on the command line (--stream
  bool silhouette_given = false;  // refuses them rather than ignore them)
  std::string out;
  bool quiet = false;
  // --hold-points: out of core, the points held in host memory (a generator's made whole, a
  // .npy's copied) and each chunk copied from there, as for `run`.
  bool hold_points = false;
  // --device: an ordinal (one GPU, as before), or a list 0,1 | all | cpu | cpu:N that shards the
  // fit as `run --device` shards its rows (harness/parallel/placement.hpp)
  std::string device = "0";
  bool use_tuned = true;
};

// InputError (exit 2) naming the option for --tol < 0 (or not finite), --max-iter < 1,
// --n-init < 1, --silhouette-sample < 0 or 1, --dims < 0, an unknown --init or --empty.
void check_fit_options(const FitOptions& options);

// The defaults generators get when the user gave no shape (the same as `mkbench run`).
inline constexpr int kFitDefaultDims = 8;
inline constexpr const char* kFitDefaultPoints = "32M";

}  // namespace mk
