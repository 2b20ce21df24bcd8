// `--verify` against planted update bugs on data far from the origin (issue 38). A test-only
// variant wraps cpu-openmp and spoils the centroids its update returns; measure_row, the code
// behind `run --verify` and the suites' verification, must report the row as failed, while
// cpu-openmp itself passes on the same data. Nothing here changes a real variant.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "datasets/dataset.hpp"
#include "harness/measure.hpp"
#include "harness/reference.hpp"
#include "variants/variant.hpp"

namespace mk {
namespace {

enum class Plant {
  None,            // cpu-openmp as it is: the control
  KeepsInput,      // the update returns the centroids it was given
  OffByOnePercent  // every coordinate 1 % of its dimension's standard deviation too high
};

const Variant& cpu_variant() { return Registry::instance().get("cpu-openmp"); }

// One iteration of the wrapped run, then the planted bug applied to what the update produced;
// the spoiled centroids become the run's state, as a buggy update's would.
class PlantedRun : public PreparedRun {
 public:
  PlantedRun(std::unique_ptr<PreparedRun> inner, Plant plant, std::vector<double> spread)
      : inner_(std::move(inner)), plant_(plant), spread_(std::move(spread)) {}
  void set_centroids(const std::vector<float>& packed) override {
    input_ = packed;
    inner_->set_centroids(packed);
  }
  void iterate(bool store_labels) override {
    inner_->iterate(store_labels);
    inner_->synchronize();
    result_ = inner_->read_back();
    std::vector<float> packed;
    size_t offset = 0;
    const size_t n = spread_.size();
    for (KResult& k : result_.per_k) {
      for (size_t j = 0; j < k.centroids.size(); ++j) {
        if (plant_ == Plant::KeepsInput) k.centroids[j] = input_[offset + j];
        if (plant_ == Plant::OffByOnePercent) k.centroids[j] = float(double(k.centroids[j]) + 0.01 * spread_[j % n]);
      }
      offset += k.centroids.size();
      packed.insert(packed.end(), k.centroids.begin(), k.centroids.end());
    }
    input_ = packed;
    inner_->set_centroids(packed);
  }
  void synchronize() override {}
  IterationResult read_back() override { return result_; }

 private:
  std::unique_ptr<PreparedRun> inner_;
  Plant plant_;
  std::vector<double> spread_;
  std::vector<float> input_;
  IterationResult result_;
};

// cpu-openmp's contract under another name; only prepare() differs.
class PlantedVariant : public Variant {
 public:
  explicit PlantedVariant(Plant plant) : plant_(plant) {}
  std::string name() const override { return "planted-cpu-openmp"; }
  std::string description() const override { return "cpu-openmp with a planted update bug (tests only)"; }
  bool runs_on_gpu() const override { return false; }
  std::optional<std::string> can_implement(const Problem& problem, const DeviceInfo& device) const override {
    return cpu_variant().can_implement(problem, device);
  }
  ParamSpace param_space(const Problem& problem, const DeviceInfo& device) const override {
    return cpu_variant().param_space(problem, device);
  }
  Params default_params(const Problem& problem, const DeviceInfo& device) const override {
    return cpu_variant().default_params(problem, device);
  }
  std::unique_ptr<PreparedRun> prepare(const Problem& problem, const Dataset& data, const Params& params,
                                       const DeviceInfo& device) const override {
    return std::make_unique<PlantedRun>(cpu_variant().prepare(problem, data, params, device), plant_,
                                        column_spread(data));
  }

 private:
  Plant plant_;
};

// Uniform points in [offset, offset + 1)^4.
Dataset offset_data(float offset) {
  GeneratorSpec spec;
  spec.m = 20000;
  spec.n = 4;
  spec.seed = 38;
  Dataset data = generate(spec);
  for (float& v : data.values) v += offset;
  return data;
}

ResultRow verified_row(Plant plant, const Dataset& data) {
  const PlantedVariant variant(plant);
  RowSpec spec;
  spec.variant = &variant;
  spec.problem.m = data.m;
  spec.problem.n = data.n;
  spec.problem.k = KRange{3, 5};
  spec.dataset = &data;
  spec.init_centroids = initial_centroids(data, spec.problem.k, InitMethod::RandomSample, 7);
  spec.warmup = 0;
  spec.samples = 2;
  spec.verify = true;
  return measure_row(spec, query_host_cpu());
}

struct PlantCase {
  std::string name;
  Plant plant;
  float offset;
  bool passes;
};

void PrintTo(const PlantCase& c, std::ostream* os) { *os << c.name; }

class PlantedUpdate : public ::testing::TestWithParam<PlantCase> {};

TEST_P(PlantedUpdate, VerifySeesItOnOffsetData) {
  const PlantCase c = GetParam();
  const ResultRow row = verified_row(c.plant, offset_data(c.offset));
  ASSERT_EQ(row.status, "ok") << row.reason;
  ASSERT_TRUE(row.verified());
  EXPECT_EQ(row.verify_passed(), c.passes) << row.verify.dump(1);
  // Both checks, the first step's and the one after the timed loop, judge the same way.
  EXPECT_EQ(row.verify.at("first_step_passed").get<bool>(), c.passes) << row.verify.at("summary");
  EXPECT_EQ(row.verify.at("final_step").at("passed").get<bool>(), c.passes)
      << row.verify.at("final_step").at("summary");
}

// At 30000 one FP32 ULP is 2^-9, 0.68 % of the data's standard deviation (0.289): 1 % of the
// spread is 1.5 ULP there. At 1000 it is 47 ULP.
INSTANTIATE_TEST_SUITE_P(
    Offsets, PlantedUpdate,
    ::testing::Values(PlantCase{"cpu_openmp_at_30000_passes", Plant::None, 30000.f, true},
                      PlantCase{"unchanged_update_at_30000_fails", Plant::KeepsInput, 30000.f, false},
                      PlantCase{"one_percent_off_at_30000_fails", Plant::OffByOnePercent, 30000.f, false},
                      PlantCase{"cpu_openmp_at_1000_passes", Plant::None, 1000.f, true},
                      PlantCase{"unchanged_update_at_1000_fails", Plant::KeepsInput, 1000.f, false},
                      PlantCase{"one_percent_off_at_1000_fails", Plant::OffByOnePercent, 1000.f, false},
                      PlantCase{"cpu_openmp_at_origin_passes", Plant::None, 0.f, true},
                      PlantCase{"one_percent_off_at_origin_fails", Plant::OffByOnePercent, 0.f, false}),
    [](const ::testing::TestParamInfo<PlantCase>& info) { return info.param.name; });

}  // namespace
}  // namespace mk
