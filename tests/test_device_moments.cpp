// The data's moments on the GPU (apps/fit/device_moments.hpp) against the FP64 CPU pass
// (apps/fit/data_moments.hpp): over a whole array, and piece by piece as rows land, with pieces
// of unequal sizes and an offset far larger than the spread (where one-pass moments cancel), and
// the first non-finite value named by its row and column either way. Without a GPU every case is
// skipped with the driver's reason.
#include <gtest/gtest.h>
#include <cuda_runtime.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "apps/fit/data_moments.hpp"
#include "apps/fit/device_moments.hpp"
#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "datasets/dataset.hpp"

namespace mk {
namespace {

class DeviceMoments : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  }
  void TearDown() override {
    if (buffer_) cudaFree(buffer_);
  }
  const float* upload(const Dataset& data) {
    EXPECT_EQ(cudaMalloc(&buffer_, data.values.size() * sizeof(float)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(buffer_, data.values.data(), data.values.size() * sizeof(float), cudaMemcpyHostToDevice),
              cudaSuccess);
    return buffer_;
  }
  float* buffer_ = nullptr;
};

// Uniform values in [0, 1) shifted by 1000: the variance (1/12) is 10^-7 of the squared mean.
Dataset offset_data(int64_t m, int n) {
  GeneratorSpec spec;
  spec.m = m;
  spec.n = n;
  spec.seed = 17;
  Dataset data = generate(spec);
  for (float& v : data.values) v += 1000.f;
  return data;
}

void expect_same_moments(const DataMoments& got, const DataMoments& want) {
  ASSERT_EQ(got.mean.size(), want.mean.size());
  for (size_t f = 0; f < want.mean.size(); ++f) {
    EXPECT_NEAR(got.mean[f], want.mean[f], 1e-12 * std::abs(want.mean[f])) << "feature " << f;
    EXPECT_NEAR(got.variance[f], want.variance[f], 1e-9 * want.variance[f]) << "feature " << f;
  }
  EXPECT_EQ(got.max_abs, want.max_abs);
}

TEST_F(DeviceMoments, WholeArrayMatchesTheCpuPass) {
  const Dataset data = offset_data(300001, 7);
  const float* x = upload(data);
  expect_same_moments(device_moments(x, data.m, data.n), data_moments(data));
}

TEST_F(DeviceMoments, LandingPiecesOfUnequalSizesMatchTheCpuPass) {
  const Dataset data = offset_data(300001, 33);
  const float* x = upload(data);
  const std::vector<int64_t> cuts{0, 1, 70000, 70001, 250000, 300001};
  LandingMoments landing(x, data.m, data.n, int64_t(cuts.size()) - 1, nullptr);
  for (size_t p = 0; p + 1 < cuts.size(); ++p) landing.add(cuts[p], cuts[p + 1] - cuts[p]);
  expect_same_moments(landing.finish(), data_moments(data));
}

TEST_F(DeviceMoments, LandingPiecesNameTheFirstNonFiniteValue) {
  Dataset data = offset_data(200000, 5);
  data.values[size_t(150001) * 5 + 3] = std::numeric_limits<float>::infinity();
  data.values[size_t(190000) * 5 + 1] = std::numeric_limits<float>::quiet_NaN();
  const float* x = upload(data);
  LandingMoments landing(x, data.m, data.n, 2, nullptr);
  landing.add(0, 100000);
  landing.add(100000, 100000);
  try {
    landing.finish();
    FAIL() << "no InputError for an Inf";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("Inf at row 150001, column 3"), std::string::npos) << e.what();
  }
}

TEST_F(DeviceMoments, LandingRowsMustAddUpToTheArray) {
  const Dataset data = offset_data(1000, 4);
  const float* x = upload(data);
  LandingMoments landing(x, data.m, data.n, 1, nullptr);
  landing.add(0, 999);
  EXPECT_THROW(landing.finish(), DeviceError);
}

}  // namespace
}  // namespace mk
