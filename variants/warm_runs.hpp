#pragma once
// A prepared run kept warm for a moment after its fit, so that the next fit of the same shape,
// with the same variant and parameters on the same device, takes it instead of allocating its
// buffers anew. The Python estimator's device route (python/fit_runner.cpp) is the user: at
// 10M x 32 points a run's cudaMalloc and cudaFree cost 1.4 ms of a 39 ms fit on an H200
// (docs/python.md, ceaa308), and notebooks fit the same array again and again.
//
// One run at most is kept. It is destroyed (on a thread of its own, its device made current)
// once it has been unused for kWarmSeconds, when another run takes its place, when
// release_warm_runs() is called (allocate_bytes does when an allocation fails; the Python routes
// do when the free memory would not take their fit), or at exit. Its memory is not counted as free
// by the memory plan: the plan's reserve is for allocations that cannot release it (cuBLAS, module
// loads, other libraries in the process).
#include <memory>
#include <string>

#include "variants/variant.hpp"

namespace mk {

struct WarmRunKey {
  int device = -1;      // CUDA ordinal; -1 for a run with no device
  std::string variant;  // Variant::name()
  std::string params;   // the resolved parameters, as params_label writes them
  std::string problem;  // Problem::str() of the prepared problem
  bool operator==(const WarmRunKey& other) const {
    return device == other.device && variant == other.variant && params == other.params && problem == other.problem;
  }
};

// Not a measurement: long enough for a notebook's fits of one array in a loop, short enough that
// the memory is soon back for other work.
inline constexpr double kWarmSeconds = 2.0;

// Keeps `run` for the next take_warm_run(key); a run kept before is released. Keeps nothing when
// no thread can be started to release it later.
void keep_run_warm(const WarmRunKey& key, std::unique_ptr<PreparedRun> run);
// The kept run when its key is `key` (and nothing is kept any more), else nullptr (the kept run
// stays for its own key).
std::unique_ptr<PreparedRun> take_warm_run(const WarmRunKey& key);
// Whether the kept run is on `device` and was prepared for `problem` (WarmRunKey::problem): a fit
// of that shape will most likely take it, so its memory need not be found again.
bool warm_run_holds(int device, const std::string& problem);
// Destroys the kept run now, on the calling thread, and waits for one another thread is destroying;
// true when there was either.
bool release_warm_runs();

}  // namespace mk
