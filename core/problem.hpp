#pragma once
// The k-means problem model shared by every variant, the reference and the harness.
#include <cstdint>
#include <string>
#include <vector>

namespace mk {

enum class Layout { AoS, SoA };
const char* to_string(Layout layout);
Layout parse_layout(const std::string& text);  // "aos" | "soa"

// The largest K any command accepts.
inline constexpr int kMaxK = 65536;

// Every K in [kmin, kmax] is solved in the same run (the MultiK idea of seed 000).
struct KRange {
  int kmin = 3;
  int kmax = 7;
  int count() const { return kmax - kmin + 1; }
  // ΣK: centroid slots in flight. Summed in 64 bits and saturated: 1..65536 holds 2^31 + 2^15
  // slots, past int's range, and no variant takes that many.
  int sum() const {
    const int64_t slots = (int64_t(kmin) + kmax) * count() / 2;
    return slots > INT32_MAX ? INT32_MAX : static_cast<int>(slots);
  }
  // Centroids of all Ks are packed one after another: K=kmin first.
  int slot_offset(int k) const { return static_cast<int>((int64_t(kmin) + k - 1) * (k - kmin) / 2); }
  std::string str() const;
};
KRange parse_k_range(const std::string& text);  // "3..7" or "16"

enum class InitMethod { FirstK, RandomSample };
const char* to_string(InitMethod method);
InitMethod parse_init(const std::string& text);  // "first" | "random"

struct Problem {
  int64_t m = 0;  // points
  int n = 0;      // dimensions
  KRange k;
  // Whether the caller needs labels back from every iteration. The timed loop does not:
  // like the seed, it measures assignment + update, and labels are only materialised for
  // verification and for the final answer, because writing ΣK·M labels would double the
  // bytes moved per iteration.
  double sparsity = 0.0;  // fraction of exact zeros, when known (csr-sparse, auto)
  // The points arrive in chunks between steps (out-of-core, docs/out-of-core.md): m is the
  // largest chunk, prepare() gets no point values, and a run writes each chunk where
  // PreparedRun::points_slot() says. A variant that derives state from the points when it
  // prepares (a translation, converted operands, CSR arrays) refuses it in can_implement.
  bool streamed = false;
  // Independent problems solved together (`run --batch B`, docs/batched.md): each has m points of
  // its own, rows [b·m, (b+1)·m) of the data, and its own centroids and counts, packed problem
  // after problem (problem b's slots start at b·ΣK). 1: one problem, as everywhere else.
  int batch = 1;
  int64_t total_points() const { return m * batch; }
  std::string str() const;  // "N=128 K=1024 M=64K", with " B=32" for a batch
  // 3·ΣK·N·M, the paper's operation count for one fused Lloyd iteration (of every problem).
  double paper_ops() const { return 3.0 * k.sum() * double(n) * double(m) * batch; }
  double data_bytes() const { return double(m) * n * sizeof(float) * batch; }
};

// The largest batch any command accepts: where no variant serves the batch in one launch
// (Variant::prepare_batch; gemm-window does, within its batch_refusal) B problems are B prepared
// runs, and each run holds a stream and its buffers.
inline constexpr int kMaxBatch = 4096;

// Throws InputError with a precise message for K<1, N<1, K>M, M<1.
void validate(const Problem& problem);

// "32M" -> 33554432 (binary suffixes K/M/G as in the seed: 32M = 2^25), "1000" -> 1000,
// "1e6" -> 1000000.
int64_t parse_count(const std::string& text);
std::string format_count(int64_t value);

}  // namespace mk
