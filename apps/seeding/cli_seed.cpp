// `mkbench seed`: seed centroids on the data options of `run` and print how long it took; the
// benchmark of the seeding goals (tests/device.sh stage `seeding`, docs/seeding.md).
//   mkbench seed --init k-means++ --k 1024 --dims 32 --points 2M [--runs 5] [--out seed.json]
#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/seeding/kmeanspp.hpp"
#include "apps/seeding/seeding.hpp"
#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "datasets/dataset.hpp"
#include "datasets/digest.hpp"
#include "harness/build_info.hpp"
#include "harness/command.hpp"
#include "harness/measure.hpp"
#include "harness/parallel/placement.hpp"
#include "harness/results.hpp"

namespace mk {
namespace {

struct SeedCommandOptions {
  std::string dataset = "uniform";
  int dims = 8;
  std::string points = "1M";
  std::string k = "64";
  std::string init = "k-means++";
  uint64_t seed = 42;
  int candidates = 0;
  int rounds = 5;
  double oversampling = 0;
  int runs = 5;
  int device = 0;
  bool cpu = false;
  std::string out;
  std::string centroids_out;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t h = values.size() / 2;
  return values.size() % 2 ? values[h] : 0.5 * (values[h - 1] + values[h]);
}

int seed_command(const SeedCommandOptions& options) {
  if (options.runs < 1) throw InputError("--runs must be at least 1, got " + std::to_string(options.runs));
  if (options.dims < 1) throw InputError("N (dimensions) must be at least 1, got " + std::to_string(options.dims));
  const int64_t m = parse_count(options.points);
  if (m < 1) throw InputError("M (points) must be at least 1, got " + options.points);
  const KRange k = parse_k_range(options.k);

  const DeviceInfo device = options.cpu ? query_host_cpu() : resolve_single_device(options.device);

  // Before the seeding is timed, as every command with an output checks it (they were checked
  // only once it had run: a bad-input audit at 04dfbaa).
  if (!options.out.empty()) check_writable(options.out);
  if (!options.centroids_out.empty()) check_writable(options.centroids_out);
  const Dataset data = load_dataset_spec(options.dataset, m, options.dims, options.seed);
  check_finite(data);
  if (k.kmin < 1 || k.kmax > data.m)
    throw InputError("K range " + k.str() + " does not fit M=" + std::to_string(data.m) + " points");

  const bool kmeanspp = options.init == "k-means++";
  const int candidates = kmeanspp ? seeding::candidate_count(k.kmax, options.candidates) : 0;
  std::vector<double> seconds;
  std::vector<double> upload_seconds;
  std::vector<int64_t> chosen;
  std::string path = device.is_gpu ? "gpu" : "cpu";
  std::vector<float> packed;
  for (int r = 0; r < options.runs; ++r) {
    if (kmeanspp) {
      // The internal entry point, for the chosen indices and the upload's time; seed_centroids
      // packs the same indices.
      seeding::KmeansppRun run =
          device.is_gpu ? seeding::kmeanspp_gpu(data, k.kmax, candidates, options.seed, device)
                        : seeding::kmeanspp_cpu(data, k.kmax, candidates, options.seed);
      if (r > 0 && run.chosen != chosen)
        throw std::logic_error("k-means++ chose different centres for the same seed in two runs");
      chosen = std::move(run.chosen);
      seconds.push_back(run.seconds);
      upload_seconds.push_back(run.upload_seconds);
      path = run.path;
    } else {
      SeedingOptions seeding_options;
      seeding_options.method = options.init;
      seeding_options.seed = options.seed;
      seeding_options.candidates = options.candidates;
      seeding_options.parallel_rounds = options.rounds;
      seeding_options.oversampling = options.oversampling;
      SeedingResult result = seed_centroids(data, k, seeding_options, device);
      if (!result.path.empty()) path = result.path;
      if (r > 0 && result.packed != packed)
        throw std::logic_error(options.init + " chose different centres for the same seed in two runs");
      seconds.push_back(result.seconds);
      upload_seconds.push_back(result.upload_seconds);
      packed = std::move(result.packed);
    }
  }
  const double typical = median(seconds);
  std::cout << options.init << " K=" << k.str() << " on " << data.m << " x " << data.n << " (" << path << ", "
            << device.name << "): median " << typical * 1e3 << " ms over " << options.runs << " run(s), min "
            << *std::min_element(seconds.begin(), seconds.end()) * 1e3 << " ms";
  if (kmeanspp) std::cout << ", " << candidates << " candidates a step";
  if (path == "gpu") std::cout << "; upload " << median(upload_seconds) * 1e3 << " ms (not included)";
  std::cout << "\n";

  if (!options.centroids_out.empty()) {
    Dataset centres;
    centres.m = k.kmax;
    centres.n = data.n;
    if (kmeanspp) {
      for (int64_t index : chosen) centres.values.insert(centres.values.end(), data.row(index), data.row(index) + data.n);
    } else {
      const size_t offset = size_t(k.slot_offset(k.kmax)) * size_t(data.n);
      centres.values.assign(packed.begin() + long(offset), packed.begin() + long(offset + size_t(k.kmax) * data.n));
    }
    save_npy(options.centroids_out, centres);
  }
  if (!options.out.empty()) {
    nlohmann::json document = {
        {"command", "seed"},
        {"init", options.init},
        {"k", k.str()},
        {"m", data.m},
        {"n", data.n},
        {"dataset", data.identity},
        {"seed", options.seed},
        {"path", path},
        {"runs", options.runs},
        {"seconds", seconds},
        {"median_seconds", typical},
        {"upload_seconds", upload_seconds},
        {"device", device.to_json()},
        {"build", current_build_info().to_json()},
    };
    if (options.init == "k-means||") {
      document["rounds"] = options.rounds;
      document["oversampling"] = options.oversampling;
      // The CPU and GPU paths chose the same centres iff these agree.
      const size_t offset = size_t(k.slot_offset(k.kmax)) * size_t(data.n);
      document["centres_xxh3_128"] =
          to_hex(xxh3_128(packed.data() + offset, size_t(k.kmax) * size_t(data.n) * sizeof(float)));
    }
    if (kmeanspp) {
      document["candidates"] = candidates;
      // Two runs (CPU and GPU) chose the same centres iff these agree.
      document["chosen_xxh3_128"] = to_hex(xxh3_128(chosen.data(), chosen.size() * sizeof(int64_t)));
      document["chosen_first"] = std::vector<int64_t>(chosen.begin(), chosen.begin() + std::min<size_t>(8, chosen.size()));
    }
    write_results_atomically(options.out, document);
  }
  return kExitOk;
}

MKBENCH_REGISTER_COMMAND(
    "seed", "seed centroids (first, random, k-means++, k-means||, npy:PATH) and time it; the seeding benchmark",
    [](CLI::App& sub) -> std::function<int()> {
      auto options = std::make_shared<SeedCommandOptions>();
      sub.add_option("--dataset", options->dataset, "uniform | blobs:... | csv:PATH | npy:PATH (as `run`)")
          ->capture_default_str();
      sub.add_option("--dims,-n", options->dims, "N, dimensions per point (generators)")->capture_default_str();
      sub.add_option("--points,-m", options->points, "M, number of points (generators; 2M = 2^21)")
          ->capture_default_str();
      sub.add_option("--k,-k", options->k, "K or a K range (k-means++ seeds kmax once)")->capture_default_str();
      sub.add_option("--init", options->init, "first | random | k-means++ | k-means|| | npy:PATH")->capture_default_str();
      sub.add_option("--seed", options->seed, "dataset and seeding seed")
          ->check(CLI::NonNegativeNumber)  // a 64-bit seed: strtoull would wrap -1 to 2^64 - 1
          ->capture_default_str();
      sub.add_option("--candidates", options->candidates, "k-means++ candidates a step (0 = 2 + floor(ln K))")
          ->capture_default_str();
      sub.add_option("--rounds", options->rounds, "k-means|| oversampling rounds")->capture_default_str();
      sub.add_option("--oversampling", options->oversampling,
                     "k-means|| expected candidates a round (0 = 2 x K)")->capture_default_str();
      sub.add_option("--runs", options->runs, "repetitions (the median is reported)")->capture_default_str();
      sub.add_option("--device", options->device, "CUDA device ordinal")->capture_default_str();
      sub.add_flag("--cpu", options->cpu, "the OpenMP path even where a GPU is present");
      sub.add_option("--out", options->out, "write a JSON record here (atomically)");
      sub.add_option("--centroids-out", options->centroids_out, "write the kmax centres as a kmax x N .npy");
      return [options] { return seed_command(*options); };
    });

}  // namespace
}  // namespace mk
