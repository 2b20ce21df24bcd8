// The peak cache (`mkbench peak`, harness/peak.hpp): what is saved comes back, the pinned
// host-to-device entry included, and a cache written before that entry reads as "not measured".
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "harness/peak.hpp"

namespace mk {
namespace {

namespace fs = std::filesystem;

class PeakCache : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "mkbench-peaks-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    const char* previous = std::getenv("MKBENCH_CACHE_DIR");
    had_previous_ = previous != nullptr;
    if (previous) previous_ = previous;
    setenv("MKBENCH_CACHE_DIR", dir_.c_str(), 1);
    gpu_.is_gpu = true;
    gpu_.ordinal = 0;
    gpu_.name = "Peak Cache Test GPU";
  }
  void TearDown() override {
    if (had_previous_) setenv("MKBENCH_CACHE_DIR", previous_.c_str(), 1);
    else unsetenv("MKBENCH_CACHE_DIR");
    fs::remove_all(dir_);
  }
  std::string dir_, previous_;
  bool had_previous_ = false;
  DeviceInfo gpu_;
};

TEST_F(PeakCache, SavedPeaksComeBackWithThePinnedHostToDeviceEntry) {
  PeakMeasurement m;
  m.fp32_gflops = 65200;
  m.dram_read_gbps = 4630;
  m.dram_copy_gbps = 4230;
  m.h2d_pinned_gbps = 55.4;
  m.measured_at = "2026-11-27";
  save_cached_peaks(gpu_, m);
  DeviceInfo read = gpu_;
  ASSERT_TRUE(load_cached_peaks(read));
  EXPECT_DOUBLE_EQ(read.peaks.fp32_gflops_measured, 65200);
  EXPECT_DOUBLE_EQ(read.peaks.dram_read_gbps_measured, 4630);
  EXPECT_DOUBLE_EQ(read.peaks.dram_copy_gbps_measured, 4230);
  EXPECT_DOUBLE_EQ(read.peaks.h2d_pinned_gbps_measured, 55.4);
  EXPECT_EQ(read.peaks.measured_at, "2026-11-27");
}

TEST_F(PeakCache, ACacheWithoutTheHostToDeviceEntryReadsAsNotMeasured) {
  PeakMeasurement m;
  m.fp32_gflops = 65200;
  m.dram_read_gbps = 4630;
  m.dram_copy_gbps = 4230;
  save_cached_peaks(gpu_, m);
  // The file as a cache written before the entry existed: no "h2d_pinned_gbps" key.
  std::string text;
  {
    std::ifstream in(peak_cache_path(gpu_));
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  auto document = nlohmann::json::parse(text);
  document["measurement"].erase("h2d_pinned_gbps");
  std::ofstream(peak_cache_path(gpu_)) << document.dump(2);
  DeviceInfo read = gpu_;
  ASSERT_TRUE(load_cached_peaks(read));
  EXPECT_DOUBLE_EQ(read.peaks.dram_read_gbps_measured, 4630);
  EXPECT_EQ(read.peaks.h2d_pinned_gbps_measured, 0.0);  // out-of-core rows then measure their own
}

}  // namespace
}  // namespace mk
