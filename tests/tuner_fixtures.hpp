#pragma once
// What the tuner's tests share (tests/test_tuner_*.cpp): the recorded replay fixture and its
// optimum read independently of the tuner, a stand-in variant with a declared space, a temporary
// folder, config entries, and recorded spaces of registered variants on an H100-like device.
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "tuner/buckets.hpp"
#include "tuner/cache.hpp"
#include "tuner/config.hpp"
#include "tuner/evaluator.hpp"
#include "tuner/search_space.hpp"
#include "tuner/tune_loop.hpp"

namespace mk::tuner::fixtures {

namespace fs = std::filesystem;
using nlohmann::json;

inline const std::string kFixture = std::string(MKBENCH_TEST_DATA) + "/tune_cache_table1_fixture.jsonl";

inline Problem shape(int n, int kmin, int kmax, int64_t m) {
  Problem problem;
  problem.n = n;
  problem.k.kmin = kmin;
  problem.k.kmax = kmax;
  problem.m = m;
  return problem;
}

inline const Problem kTable1 = shape(8, 3, 7, int64_t(32) << 20);

// A fresh folder per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("mkbench_tuner_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

class FakeVariant : public Variant {
 public:
  FakeVariant(std::string name, std::function<ParamSpace(const Problem&)> space,
              std::optional<std::string> refusal = std::nullopt)
      : name_(std::move(name)), space_(std::move(space)), refusal_(std::move(refusal)) {}
  std::string name() const override { return name_; }
  std::string description() const override { return "test stand-in"; }
  bool runs_on_gpu() const override { return false; }
  std::optional<std::string> can_implement(const Problem&, const DeviceInfo&) const override { return refusal_; }
  ParamSpace param_space(const Problem& problem, const DeviceInfo&) const override { return space_(problem); }
  // The first point of the space unless a test gives its own heuristic.
  Params default_params(const Problem& problem, const DeviceInfo& device) const override {
    return default_ ? default_(problem) : param_space(problem, device).enumerate().front();
  }
  void set_default(std::function<Params(const Problem&)> heuristic) { default_ = std::move(heuristic); }
  void set_default(const Params& params) {
    default_ = [params](const Problem&) { return params; };
  }
  std::unique_ptr<PreparedRun> prepare(const Problem&, const Dataset&, const Params&,
                                       const DeviceInfo&) const override {
    throw UnsupportedError("test stand-in cannot run");
  }

 private:
  std::string name_;
  std::function<ParamSpace(const Problem&)> space_;
  std::optional<std::string> refusal_;
  std::function<Params(const Problem&)> default_;
};

// Independent of the tuner's loader: the recorded optimum read straight from the file.
inline double recorded_optimum_ms(const Problem& problem) {
  std::ifstream in(kFixture);
  std::string line;
  double best = 1e300;
  while (std::getline(in, line)) {
    const json row = json::parse(line);
    if (row.contains("schema") || !row.at("ok").get<bool>()) continue;
    const json& p = row.at("problem");
    if (p.at("n") != problem.n || p.at("k_min") != problem.k.kmin || p.at("k_max") != problem.k.kmax ||
        p.at("m") != problem.m)
      continue;
    best = std::min(best, row.at("median_ms").get<double>());
  }
  return best;
}

inline Evaluator counting(Evaluator inner, std::vector<std::string>* calls) {
  return [inner, calls](const Variant& variant, const Params& params, const Problem& problem) {
    calls->push_back(candidate_key(variant.name(), params));
    return inner(variant, params, problem);
  };
}

inline Budget evals(int64_t count) {
  Budget budget;
  budget.max_evals = count;
  return budget;
}

// Two axes, x declared out of numeric order, and one restriction: 7 legal points.
inline ParamSpace two_axis_space() {
  ParamSpace space;
  space.axes.push_back({"x", {8, 1, 4, 2}, ""});  // declared out of numeric order on purpose
  space.axes.push_back({"y", {"a", "b"}, ""});
  space.restrictions.push_back({"not x=4 with y=a", [](const Params& p) { return !(p.at("x") == 4 && p.at("y") == "a"); }});
  return space;
}

// A config entry for `problem` (figures fixed, runner-up optional).
inline ConfigEntry entry_for(const Problem& problem, const std::string& best_variant, Params best,
                             std::optional<std::pair<std::string, Params>> runner_up = std::nullopt) {
  ConfigEntry entry;
  entry.bucket = Bucket::of(problem);
  entry.problem = problem;
  entry.best = ConfigChoice{best_variant, std::move(best), 0.45, gops_of(problem, 0.45), 10};
  if (runner_up) entry.runner_up = ConfigChoice{runner_up->first, runner_up->second, 0.47, gops_of(problem, 0.47), 10};
  entry.evals_new = 60;
  entry.evals_cached = 4;
  entry.space_size = 160;
  entry.strategy = "anneal";
  entry.seed = 9;
  entry.budget = "60 evals";
  entry.stop_reason = "max evals reached";
  entry.date = "2026-01-02T03:04:05Z";
  entry.device = "Test GPU";
  return entry;
}

inline Measurement timed(std::vector<double> samples) {
  Measurement measurement;
  measurement.median_ms = median_of(samples);
  measurement.samples_ms = std::move(samples);
  measurement.ok = true;
  return measurement;
}

// A recording device as an H100 reports itself.
inline DeviceInfo recording_device() {
  DeviceInfo device;
  device.is_gpu = true;
  device.name = "FIXTURE replay GPU";
  device.cc_major = 9;
  device.sm_count = 132;
  device.driver = "fixture";
  device.global_mem_bytes = int64_t(80) << 30;
  device.l2_bytes = int64_t(50) << 20;
  device.smem_per_block_optin = 232448;
  device.smem_per_sm = 233472;
  device.regs_per_sm = 65536;
  device.max_threads_per_sm = 2048;
  return device;
}

// One record per point of a registered variant's space on `device`, the first point
// fastest; device limits only when asked for (older caches have none).
inline std::vector<CacheRecord> recorded_space(const std::string& variant_name, const DeviceInfo& device,
                                               bool with_limits) {
  const Variant& variant = Registry::instance().get(variant_name);
  std::vector<CacheRecord> records;
  double ms = 1.0;
  for (const Params& params : variant.param_space(kTable1, device).enumerate()) {
    CacheRecord record;
    record.device = DeviceKey::of(device);
    if (with_limits) record.device_limits = device_limits_of(device);
    record.variant = variant_name;
    record.params = params;
    record.problem = kTable1;
    record.bucket = Bucket::of(kTable1).label();
    record.measurement = timed({ms});
    ms += 0.01;
    records.push_back(record);
  }
  return records;
}

// Ten samples around 1 ms that overlap heavily with any copy scaled by 1-2%.
inline const std::vector<double> kNoisy = {1.00, 0.95, 1.05, 0.97, 1.03, 0.99, 1.01, 0.96, 1.04, 1.02};

inline std::vector<double> scaled(std::vector<double> samples, double factor) {
  for (double& sample : samples) sample *= factor;
  return samples;
}

}  // namespace mk::tuner::fixtures
