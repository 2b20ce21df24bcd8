#pragma once
// `mkbench explore`: what the user asked for (docs/explore.md), checked before any data is
// loaded, so bad input costs nothing and exits 2 with a message naming the option.
#include <cstdint>
#include <string>

namespace mk::explore {

struct ExploreOptions {
  std::string dataset;         // susy[:...] | csv:PATH:label=COL | npy:PATH | idx:PATH (required)
  std::string labels;          // --labels npy:PATH | idx:PATH | csv:PATH[:label=COL]
  std::string points;          // susy: rows (default 5000000, SUSY's); a file's must agree
  int dims = 0;                // susy: attributes (default 18); a file's must agree
  int subset_size = 3;
  int64_t copies = 10000;      // seed 000's 10,000 copies
  bool copies_given = false;
  bool all = false;            // every C(n, s) subset once
  int k = 8;                   // seed 000's k
  // Seed 000 runs 5 iterations per copy; the tolerance is fit's (scikit-learn's): a copy stops
  // after a step that moves its centroids by at most tol × the mean variance of its columns.
  int max_iter = 5;
  double tol = 1e-4;
  uint64_t seed = 42;
  std::string engine = "auto";  // auto | cuda | cpu-openmp
  bool baseline = true;
  int top = 20;                 // subsets in the report's table
  int repeat = 1;               // solve this many times (a benchmark's samples); results from the last
  std::string out;              // folder: explore.json, explore.md, explore.html
  int device = 0;
  bool quiet = false;
};

// The most copies one run takes (--copies, or C(n, s) for --all): a copy's outputs and the
// engines' per-copy buffers are a few hundred bytes, so a million stay within memory.
inline constexpr int64_t kMaxCopies = 1000000;

// InputError naming the option: --subset-size < 1, --k < 1, --copies < 1 or above kMaxCopies,
// --copies with --all, --max-iter < 1, --tol negative or not finite, --top < 1, --repeat < 1,
// --dims < 0, an unknown --engine, no --dataset.
void check_explore_options(const ExploreOptions& options);

}  // namespace mk::explore
