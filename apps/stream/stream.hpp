#pragma once
// `mkbench fit --stream`: seed 001's one-pass streaming k-means (Ailon, Jaiswal and Monteleoni's
// divide and conquer, as Okuda and Fujimoto run it on a GPU). docs/streaming.md has the whole
// description and the measurements.
//
//   chunks:  the data goes through once, in chunks of C points; each chunk is reduced by
//            k-means# (k rounds of ⌈3 ln k⌉ D² draws) to S = k·⌈3 ln k⌉ intermediate centres,
//            each weighted by the number of the chunk's points nearest to it;
//   reduce:  weighted k-means++ on all intermediate centres, then weighted Lloyd on them
//            (--max-iter, --tol), gives the k final centres;
//   final:   one more pass over the data: every point's label and the inertia Σ d² of the
//            final centres (the quality measure; seed 001's algorithm stops before it).
// The CPU path (OpenMP, chunks in parallel) and the GPU path (pinned chunk copies, one block per
// chunk) run the same algorithm with the same arithmetic (sharp_math.hpp): they choose the same
// intermediate centres; the Lloyd sums are FP64 in different orders, so the final centres agree
// to rounding.
#include <cstdint>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "datasets/dataset.hpp"

namespace mk::stream {

struct StreamSettings {
  int k = 8;
  int64_t chunk_points = 0;  // 0: max(⌈sqrt(M·k)⌉ (seed 001), 4·S), at most M
  uint64_t seed = 42;
  int max_iter = 300;  // the weighted Lloyd on the intermediate centres
  double tol = 1e-4;   // scikit-learn's, relative to the intermediate centres' weighted variance
  bool keep_labels = true;  // the final pass keeps every point's label (for --out)
  int restarts = 1;    // --n-init: reduce-phase seedings (k-means++ and Lloyd on the intermediate
                       // centres); the lowest weighted inertia there wins
};

struct StreamSeconds {
  double setup = 0;   // buffers (pinned and device memory on the GPU)
  double chunks = 0;  // copies and k-means# of every chunk
  double reduce = 0;  // weighted k-means++ and Lloyd on the intermediate centres
  double final_pass = 0;  // labels and inertia of the final centres over the whole data
  double total() const { return setup + chunks + reduce + final_pass; }
};

struct StreamResult {
  std::vector<float> centroids;   // k x n
  std::vector<int32_t> labels;    // m (when keep_labels)
  double inertia = 0;             // Σ over the data of the squared distance to the nearest centre
  double intermediate_weight_check = 0;  // Σ of the intermediate weights (= M)
  int64_t chunk_points = 0;
  int64_t chunks = 0;
  int per_round = 0;              // ⌈3 ln k⌉
  int64_t intermediate = 0;       // chunks x S slots (unused slots weigh 0)
  int lloyd_iterations = 0;       // of the winning restart
  bool converged = false;
  int restart = 0;                // the winning reduce-phase restart
  double reduce_inertia = 0;      // its Σ w·d² over the intermediate centres
  double tol_threshold = 0;
  StreamSeconds seconds;
  std::string path;               // "cpu-openmp" or "gpu"
  // The intermediate centres and weights (tests compare the two paths' sets).
  std::vector<float> intermediate_points;   // intermediate x n
  std::vector<float> intermediate_weights;  // intermediate
};

// C for `settings` on m points (the default when chunk_points is 0). InputError when a given C
// is below S + 1 (a chunk must hold more points than it is reduced to).
int64_t chunk_size(const StreamSettings& settings, int64_t m);

// Checks shared by both paths: k in 1..m, finite data. InputError otherwise.
void check_stream_request(const Dataset& data, const StreamSettings& settings);

StreamResult stream_fit_cpu(const Dataset& data, const StreamSettings& settings);
StreamResult stream_fit_gpu(const Dataset& data, const StreamSettings& settings, const DeviceInfo& device);

// The reduce phase's weighted Lloyd update on the host, shared by both paths: sums is k x (n+2)
// per cluster (Σ w·x over n, Σ w, Σ w·d²). Returns the shift Σ‖c_new − c_old‖²; a cluster of
// weight 0 keeps its centre.
double weighted_centres_from_sums(const std::vector<double>& sums, int k, int n, std::vector<float>& centres);

// Σ w·d² of the sums' last column (k x (n+2) sums).
double weighted_inertia(const std::vector<double>& sums, int k, int n);

// tol × the mean over dimensions of the weighted variance of `points` (scikit-learn's tolerance,
// on the set Lloyd runs on).
double weighted_tolerance(const float* points, const float* weights, int64_t count, int n, double tol);

}  // namespace mk::stream
