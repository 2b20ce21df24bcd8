// Results file: JSON round trip, atomic writing, and clear errors on bad input.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "harness/build_info.hpp"
#include "core/errors.hpp"
#include "harness/results.hpp"

namespace mk {
namespace {

namespace fs = std::filesystem;

class ResultsFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "mkbench-results-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  static ResultFile sample_file() {
    DeviceInfo device;
    device.is_gpu = true;
    device.name = "Test GPU";
    device.cc_major = 9;
    device.sm_count = 132;
    device.l2_bytes = 50 << 20;
    device.peaks.fp32_gflops_theoretical = 66900;
    device.peaks.dram_read_gbps_measured = 3000;
    ResultFile file = new_result_file(device, std::string("table1"));

    ResultRow ok;
    ok.variant = "registers-multik";
    ok.params = {{"block", 256}, {"grid", 264}, {"layout", "soa"}};
    ok.problem.n = 8;
    ok.problem.k = KRange{3, 7};
    ok.problem.m = int64_t(1) << 25;
    ok.name = row_name(ok.variant, ok.problem, ok.params);
    ok.dataset = {{"kind", "generator"}, {"generator", "uniform"}, {"seed", 42}};
    ok.timing.warmup = 3;
    ok.timing.l2_flushed = false;
    ok.timing.samples_ms = {0.41, 0.40, 0.42};
    ok.timing.sm_clock_mhz = {1980, 1980, 1965};
    ok.timing.conversion_ms = 0.61;
    ok.summary = summarize(ok.timing.samples_ms);
    ok.metrics.gops = 49700.5;
    ok.metrics.roofline_limit = "memory";
    ok.verify = {{"passed", true}, {"per_k", nlohmann::json::array()}};
    file.rows.push_back(ok);

    ResultRow refused;
    refused.variant = "naive-atomics";
    refused.problem = ok.problem;
    refused.name = row_name(refused.variant, refused.problem, refused.params);
    refused.status = "refused";
    refused.reason = "needs a CUDA GPU";
    refused.timing.clock = "steady-clock";
    file.rows.push_back(refused);
    return file;
  }

  std::string dir_;
};

TEST(RowName, FollowsVariantNKMParams) {
  Problem p;
  p.n = 8;
  p.k = KRange{3, 7};
  p.m = int64_t(1) << 25;
  EXPECT_EQ(row_name("registers-multik", p, {{"grid", 264}, {"block", 256}}),
            "registers-multik/8/3..7/32M/block=256,grid=264");
}

TEST_F(ResultsFileTest, RoundTripKeepsEveryField) {
  const ResultFile original = sample_file();
  const std::string path = dir_ + "/r.json";
  write_results_atomically(path, original);
  const ResultFile loaded = load_results(path);

  EXPECT_EQ(loaded.schema, "mkbench.results/2");
  ASSERT_TRUE(loaded.suite.has_value());
  EXPECT_EQ(*loaded.suite, "table1");
  EXPECT_EQ(loaded.created, original.created);
  EXPECT_EQ(loaded.build.git_sha, original.build.git_sha);
  EXPECT_EQ(loaded.device["name"], "Test GPU");
  ASSERT_EQ(loaded.rows.size(), 2u);

  const ResultRow& a = original.rows[0];
  const ResultRow& b = loaded.rows[0];
  EXPECT_EQ(b.name, a.name);
  EXPECT_EQ(b.params, a.params);
  EXPECT_EQ(b.problem.n, 8);
  EXPECT_EQ(b.problem.k.kmin, 3);
  EXPECT_EQ(b.problem.k.kmax, 7);
  EXPECT_EQ(b.problem.m, a.problem.m);
  EXPECT_EQ(b.dataset, a.dataset);
  EXPECT_EQ(b.timing.samples_ms, a.timing.samples_ms);
  EXPECT_EQ(b.timing.sm_clock_mhz, a.timing.sm_clock_mhz);
  EXPECT_EQ(b.timing.warmup, 3);
  ASSERT_TRUE(b.timing.conversion_ms.has_value());
  EXPECT_DOUBLE_EQ(*b.timing.conversion_ms, 0.61);
  EXPECT_DOUBLE_EQ(b.summary.median_ms, a.summary.median_ms);
  EXPECT_DOUBLE_EQ(b.summary.iqr_ms, a.summary.iqr_ms);
  EXPECT_DOUBLE_EQ(b.metrics.gops, 49700.5);
  EXPECT_EQ(b.metrics.roofline_limit, "memory");
  EXPECT_TRUE(b.verified());
  EXPECT_TRUE(b.verify_passed());

  EXPECT_EQ(loaded.rows[1].status, "refused");
  EXPECT_EQ(loaded.rows[1].reason, "needs a CUDA GPU");
  EXPECT_TRUE(loaded.rows[1].verify.is_null());
  EXPECT_EQ(loaded.rows[1].timing.clock, "steady-clock");
  EXPECT_FALSE(loaded.rows[1].timing.conversion_ms.has_value());  // absent stays absent
  // Same document both ways: nothing is lost or invented.
  EXPECT_EQ(results_to_json(loaded), results_to_json(original));
}

TEST_F(ResultsFileTest, AtomicWriteLeavesOnlyTheTargetFile) {
  const std::string path = dir_ + "/r.json";
  write_results_atomically(path, sample_file());
  ResultFile second = sample_file();
  second.rows.pop_back();
  write_results_atomically(path, second);  // overwrite in place
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename().string());
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0], "r.json");
  EXPECT_EQ(load_results(path).rows.size(), 1u);
}

TEST_F(ResultsFileTest, AtomicWriteCreatesMissingFolders) {
  const std::string path = dir_ + "/a/b/r.json";
  write_results_atomically(path, sample_file());
  EXPECT_EQ(load_results(path).rows.size(), 2u);
}

TEST_F(ResultsFileTest, TruncatedJsonIsAnInputError) {
  const std::string text = results_to_json(sample_file()).dump(2);
  const std::string path = dir_ + "/truncated.json";
  std::ofstream(path) << text.substr(0, text.size() / 2);
  try {
    load_results(path);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated.json"), std::string::npos) << e.what();
    EXPECT_EQ(e.exit_code, kExitBadInput);
  }
}

TEST_F(ResultsFileTest, WrongSchemaTagIsAnInputError) {
  nlohmann::json doc = results_to_json(sample_file());
  doc["schema"] = "something-else/2";
  const std::string path = dir_ + "/schema.json";
  std::ofstream(path) << doc.dump();
  EXPECT_THROW(load_results(path), InputError);
}

TEST_F(ResultsFileTest, PreviousSchemaVersionIsStillRead) {
  // Version 1 differs only in naming file data by SHA-256; its rows load unchanged.
  nlohmann::json doc = results_to_json(sample_file());
  doc["schema"] = "mkbench.results/1";
  doc["rows"][0]["dataset"] = {{"kind", "file"}, {"format", "npy"}, {"path", "p.npy"}, {"bytes", 100}, {"sha256", "ab12"}};
  const std::string path = dir_ + "/v1.json";
  std::ofstream(path) << doc.dump();
  const ResultFile loaded = load_results(path);
  EXPECT_EQ(loaded.schema, "mkbench.results/1");
  EXPECT_EQ(loaded.rows.at(0).dataset.at("sha256"), "ab12");
}

TEST_F(ResultsFileTest, MissingRowKeyNamesTheRow) {
  nlohmann::json doc = results_to_json(sample_file());
  doc["rows"][1].erase("variant");
  const std::string path = dir_ + "/row.json";
  std::ofstream(path) << doc.dump();
  try {
    load_results(path);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rows[1]"), std::string::npos) << what;
    EXPECT_NE(what.find("variant"), std::string::npos) << what;
  }
}

TEST_F(ResultsFileTest, WrongTypeIsAnInputError) {
  nlohmann::json doc = results_to_json(sample_file());
  doc["rows"][0]["summary"]["median_ms"] = "fast";
  const std::string path = dir_ + "/type.json";
  std::ofstream(path) << doc.dump();
  EXPECT_THROW(load_results(path), InputError);
}

TEST_F(ResultsFileTest, MissingFileIsAnInputError) {
  EXPECT_THROW(load_results(dir_ + "/does-not-exist.json"), InputError);
}

TEST(DeviceFromJson, InvertsToJson) {
  DeviceInfo device;
  device.is_gpu = true;
  device.name = "NVIDIA H100 80GB HBM3";
  device.cc_major = 9;
  device.cc_minor = 0;
  device.sm_count = 132;
  device.l2_bytes = 52428800;
  device.peaks.fp32_gflops_theoretical = 66900;
  device.peaks.measured_at = "2026-11-22";
  const DeviceInfo back = device_from_json(device.to_json());
  EXPECT_EQ(back.name, device.name);
  EXPECT_EQ(back.cc_major, 9);
  EXPECT_EQ(back.sm_count, 132);
  EXPECT_EQ(back.l2_bytes, 52428800);
  EXPECT_DOUBLE_EQ(back.peaks.fp32_gflops_theoretical, 66900);
  EXPECT_EQ(back.peaks.measured_at, "2026-11-22");
  EXPECT_EQ(back.slug(), device.slug());
}

// A run with MKBENCH_NVRTC_DEFINES says so in its file; a default run's build has no such key.
TEST(BuildInfoJson, KernelDefinesAppearOnlyWhenSet) {
  BuildInfo build = current_build_info();
  build.kernel_defines.clear();
  EXPECT_FALSE(build.to_json().contains("kernel_defines"));
  build.kernel_defines = "LEAN_STEP=0";
  const nlohmann::json json = build.to_json();
  ASSERT_TRUE(json.contains("kernel_defines"));
  EXPECT_EQ(BuildInfo::from_json(json).kernel_defines, "LEAN_STEP=0");
}

}  // namespace
}  // namespace mk
