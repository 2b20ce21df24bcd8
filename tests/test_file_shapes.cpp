// A file dataset sets N and M (issue 31, item 2): `run`, `suite` and `verify-matrix` take
// the shape from csv:, npy: and idx: files; --dims/--points (or a suite case's dims/points)
// only have to agree with the file where they are given. Checked through the built binary,
// as a user meets it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "datasets/dataset.hpp"
#include "harness/suite.hpp"

namespace fs = std::filesystem;

namespace {

struct Outcome {
  int code = -1;
  std::string output;
};

Outcome run_mkbench(const std::string& args) {
  const std::string command = std::string(MKBENCH_BINARY) + " " + args + " 2>&1";
  Outcome outcome;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return outcome;
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) outcome.output.append(buffer, n);
  const int status = pclose(pipe);
  outcome.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return outcome;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
}

// A 60 x 5 point set saved as .npy, and the same as csv.
class FileShapes : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "mkbench-shapes-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    setenv("MKBENCH_CACHE_DIR", (dir_ + "/cache").c_str(), 1);
    mk::Dataset data;
    data.m = 60;
    data.n = 5;
    std::string csv;
    for (int64_t i = 0; i < data.m; ++i) {
      for (int d = 0; d < data.n; ++d) {
        const float value = float((i * 37 + d * 11) % 23) - 7.5f;
        data.values.push_back(value);
        csv += (d ? "," : "") + std::to_string(value);
      }
      csv += "\n";
    }
    npy_ = dir_ + "/points.npy";
    mk::save_npy(npy_, data);
    csv_ = dir_ + "/points.csv";
    std::ofstream(csv_) << csv;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string dir_, npy_, csv_;
};

TEST_F(FileShapes, RunTakesNAndMFromTheFile) {
  for (const std::string& spec : {"npy:" + npy_, "csv:" + csv_}) {
    const std::string out = dir_ + "/run.json";
    const Outcome o = run_mkbench("run --variant cpu-openmp --dataset " + spec + " --k 3 --iters 2 --warmup 0 --out " +
                                  out);
    ASSERT_EQ(o.code, mk::kExitOk) << o.output;
    const nlohmann::json row = read_json(out).at("rows").at(0);
    EXPECT_EQ(row.at("problem").at("n"), 5) << spec;
    EXPECT_EQ(row.at("problem").at("m"), 60) << spec;
  }
}

TEST_F(FileShapes, RunAcceptsDimsAndPointsThatAgreeWithTheFile) {
  const Outcome o = run_mkbench("run --variant cpu-openmp --dataset npy:" + npy_ +
                                " --dims 5 --points 60 --k 3 --iters 2 --warmup 0");
  EXPECT_EQ(o.code, mk::kExitOk) << o.output;
}

TEST_F(FileShapes, RunRejectsDimsOrPointsThatDisagreeWithTheFile) {
  const Outcome dims = run_mkbench("run --variant cpu-openmp --dataset npy:" + npy_ + " --dims 8 --k 3 --iters 2");
  EXPECT_EQ(dims.code, mk::kExitBadInput) << dims.output;
  EXPECT_NE(dims.output.find("--dims 8 does not match dataset 'npy:" + npy_ + "', which has 5 dimensions per point"),
            std::string::npos)
      << dims.output;
  const Outcome points = run_mkbench("run --variant cpu-openmp --dataset csv:" + csv_ + " --points 1M --k 3 --iters 2");
  EXPECT_EQ(points.code, mk::kExitBadInput) << points.output;
  EXPECT_NE(points.output.find("--points 1M does not match"), std::string::npos) << points.output;
  EXPECT_NE(points.output.find("which has 60 points"), std::string::npos) << points.output;
}

TEST_F(FileShapes, SuiteCaseWithoutDimsOrPointsRunsAtTheFileShape) {
  const std::string suite = dir_ + "/file_suite.json";
  std::ofstream(suite) << R"({"dataset": "npy:)" << npy_ << R"(", "iters": 2, "warmup": 0,
      "cases": [{"k": ["3", "2..4"], "variants": ["cpu-openmp"]}]})";
  const std::string out = dir_ + "/suite.json";
  const Outcome o = run_mkbench("suite " + suite + " --no-peak-measure --out " + out);
  ASSERT_EQ(o.code, mk::kExitOk) << o.output;
  const nlohmann::json rows = read_json(out).at("rows");
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& row : rows) {
    EXPECT_EQ(row.value("status", "ok"), "ok") << row.dump();
    EXPECT_EQ(row.at("problem").at("n"), 5);
    EXPECT_EQ(row.at("problem").at("m"), 60);
  }
}

TEST_F(FileShapes, SuiteCaseWhoseDimsDisagreeWithTheFileIsBadInput) {
  const std::string suite = dir_ + "/bad_suite.json";
  std::ofstream(suite) << R"({"cases": [{"dataset": "csv:)" << csv_
                       << R"(", "dims": [8], "k": ["3"], "variants": ["cpu-openmp"]}]})";
  const Outcome o = run_mkbench("suite " + suite + " --dry-run");
  EXPECT_EQ(o.code, mk::kExitBadInput) << o.output;
  EXPECT_NE(o.output.find("cases[0].dims: 8 does not match dataset"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("which has 5 dimensions per point"), std::string::npos) << o.output;
}

TEST_F(FileShapes, GeneratedSuiteCasesStillNeedDimsAndPoints) {
  EXPECT_THROW(mk::parse_suite_text(R"({"cases": [{"k": ["3"], "variants": ["cpu-openmp"]}]})", "t"), mk::InputError);
  const mk::SuiteDefinition file_case = mk::parse_suite_text(
      R"({"dataset": "idx:images.gz", "cases": [{"k": ["3"], "variants": ["cpu-openmp"]}]})", "t");
  EXPECT_TRUE(file_case.cases.at(0).dims.empty());
  EXPECT_TRUE(file_case.cases.at(0).points.empty());
}

TEST_F(FileShapes, VerifyMatrixOnAFileChecksTheFileShape) {
  const Outcome o = run_mkbench("verify-matrix --variants cpu-openmp --dataset npy:" + npy_ + " --k 3,2..4");
  ASSERT_EQ(o.code, mk::kExitOk) << o.output;
  EXPECT_NE(o.output.find("| N=5 K=3 M=60 | ✓ |"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("| N=5 K=2..4 M=60 | ✓ |"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("2 passed, 0 failed"), std::string::npos) << o.output;
  const Outcome mismatch =
      run_mkbench("verify-matrix --variants cpu-openmp --dataset npy:" + npy_ + " --dims 4 --k 3");
  EXPECT_EQ(mismatch.code, mk::kExitBadInput) << mismatch.output;
  EXPECT_NE(mismatch.output.find("--dims 4 does not match"), std::string::npos) << mismatch.output;
}

// The memory plan, made before any point is read, sizes an IDX file from its header: the 60 x 5
// of the file, not the --points/--dims defaults (32M x 8) that do not apply to a file.
TEST_F(FileShapes, MemoryPlanSizesAnIdxFileFromItsHeader) {
  const std::string idx = dir_ + "/points.idx";
  std::string bytes = {0, 0, 0x08, 2, 0, 0, 0, 60, 0, 0, 0, 5};  // unsigned bytes, 60 x 5 (big-endian)
  for (int i = 0; i < 60 * 5; ++i) bytes += char(i % 251);
  std::ofstream(idx, std::ios::binary) << bytes;
  const Outcome o = run_mkbench("run --variant cpu-openmp --dataset idx:" + idx + " --k 3 --iters 2 --host-memory 1K");
  EXPECT_EQ(o.code, mk::kExitBadInput) << o.output;
  EXPECT_NE(o.output.find("idx " + idx + " (60 × 5 float32)"), std::string::npos) << o.output;
  EXPECT_EQ(run_mkbench("run --variant cpu-openmp --dataset idx:" + idx + " --k 3 --iters 2 --warmup 0").code,
            mk::kExitOk);
}

}  // namespace
