// Faults injected on purpose (issue 38, "Faults survived"): a disk that fills up during a
// write, and a GPU error in one row of a suite, non-sticky (the row fails, the suite goes on)
// or sticky (the suite restarts itself in a fresh process for the remaining rows). The seams
// are in harness/fault_injection.hpp; the launch kinds make real CUDA errors on a GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "harness/results.hpp"
#include "process_helpers.hpp"

namespace mk {
namespace {

namespace fs = std::filesystem;
using testing_support::read_text;
using testing_support::run_mkbench_args;
using testing_support::shell_quote;
using testing_support::TempFolder;

std::vector<std::string> partial_files(const fs::path& folder) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.path().filename().string().find(".partial") != std::string::npos)
      found.push_back(entry.path().filename().string());
  return found;
}

// ------------------------------------------------------------------ a full disk

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

TEST(FullDisk, AWriteCutShortLeavesThePreviousFileAndNoTemporaryFile) {
  TempFolder folder("full_disk");
  const std::string target = folder.file("r.json");
  write_text_atomically(target, "previous\n");
  const std::string text(1000, 'x');
  {
    ScopedEnv limit("MKBENCH_FAULT_WRITE_LIMIT", "100");
    try {
      write_text_atomically(target, text);
      FAIL() << "a write over the injected limit succeeded";
    } catch (const InputError& error) {
      const std::string message = error.what();
      for (const char* part : {"No space left on device", "after 100 of 1000 bytes", "is left as it was"})
        EXPECT_NE(message.find(part), std::string::npos) << part << "\n" << message;
    }
  }
  EXPECT_EQ(read_text(target), "previous\n");
  EXPECT_TRUE(partial_files(folder.path()).empty());
  write_text_atomically(target, text);  // without the seam the same write goes through
  EXPECT_EQ(read_text(target), text);
}

const std::vector<std::string> kSmallRun = {"run",     "--variant", "cpu-openmp", "--dims",   "4", "--points",
                                            "1K",      "--k",       "3",          "--iters",  "2", "--warmup",
                                            "0"};

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

TEST(FullDisk, RunExitsNonZeroWithAClearMessageAndKeepsThePreviousResults) {
  TempFolder folder("full_disk_run");
  const std::string out = folder.file("r.json");
  const auto first = run_mkbench_args(with(kSmallRun, {"--out", out}));
  ASSERT_EQ(first.exit_code, kExitOk) << first.output;
  const std::string before = read_text(out);
  const auto full = run_mkbench_args(with(kSmallRun, {"--out", out}), {"MKBENCH_FAULT_WRITE_LIMIT=2K"});
  EXPECT_EQ(full.exit_code, kExitBadInput) << full.output;
  EXPECT_NE(full.output.find("cannot write " + out + ": No space left on device after 2048 of"), std::string::npos)
      << full.output;
  EXPECT_NE(full.output.find("the previous " + out + " is left as it was"), std::string::npos) << full.output;
  EXPECT_EQ(read_text(out), before);
  EXPECT_TRUE(partial_files(folder.path()).empty());
}

// The same on a real file system that fills up: a 256 KiB tmpfs in a private mount namespace
// (root, or a user namespace where the kernel allows one).
TEST(FullDisk, ARealFullTmpfsGivesTheSameOutcome) {
  TempFolder folder("full_tmpfs");
  const std::string mount = folder.file("small");
  fs::create_directories(mount);
  const std::string out = mount + "/r.json";
  // 300 samples make a file of about 8 KiB: two pages, where one is left free.
  std::string run;
  for (const auto& argument : {"run", "--variant", "cpu-openmp", "--dims", "4", "--points", "1K", "--k", "3",
                               "--iters", "300", "--warmup", "0", "--out"})
    run += " " + shell_quote(argument);
  run += " " + shell_quote(out);
  const std::string script =
      "set -u; mount -t tmpfs -o size=256k tmpfs " + shell_quote(mount) + " || exit 97; " +
      shell_quote(MKBENCH_BINARY) + run + " >/dev/null 2>&1 || exit 98; " +
      "before=$(sha256sum " + shell_quote(out) + " | cut -c1-64); " +
      "dd if=/dev/zero of=" + shell_quote(mount + "/fill") + " bs=4096 2>/dev/null; " +
      "truncate -s -4096 " + shell_quote(mount + "/fill") + "; " +  // one page left: the write fails partway
      shell_quote(MKBENCH_BINARY) + run + "; echo \"rc=$?\"; " +
      "echo \"same=$([ \"$before\" = \"$(sha256sum " + shell_quote(out) + " | cut -c1-64)\" ] && echo yes)\"; " +
      "echo \"partial=$(ls -a " + shell_quote(mount) + " | grep -c partial)\"";
  const std::string unshare = ::geteuid() == 0 ? "unshare -m" : "unshare -rm";
  const std::string command = unshare + " sh -c " + shell_quote(script) + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  size_t got;
  while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, got);
  const int status = ::pclose(pipe);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 97 || output.find("unshare:") != std::string::npos)
    GTEST_SKIP() << "cannot mount a tmpfs here (" << output
                 << "); FullDisk.RunExitsNonZeroWithAClearMessageAndKeepsThePreviousResults covers the seam";
  ASSERT_EQ(code, 0) << output;
  EXPECT_NE(output.find("rc=2"), std::string::npos) << output;
  EXPECT_NE(output.find("No space left on device"), std::string::npos) << output;
  EXPECT_NE(output.find("is left as it was"), std::string::npos) << output;
  EXPECT_NE(output.find("same=yes"), std::string::npos) << output;
  EXPECT_NE(output.find("partial=0"), std::string::npos) << output;
}

// ------------------------------------------------------------------ a GPU error mid-suite

std::string write_suite(const TempFolder& folder, const std::string& variant, const std::string& points) {
  const std::string path = folder.file("four.json");
  std::ofstream(path) << R"({"name": "four-rows", "dataset": "uniform", "iters": 3, "warmup": 1,
    "cases": [{"dims": [4], "k": ["3", "4", "5", "3..5"], "points": [")"
                      << points << R"("], "variants": [")" << variant << R"("]}]})";
  return path;
}

void expect_rows(const ResultFile& file, size_t failed_row, const std::string& message) {
  ASSERT_EQ(file.rows.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    if (i + 1 == failed_row) {
      EXPECT_EQ(file.rows[i].status, "failed") << file.rows[i].name;
      EXPECT_NE(file.rows[i].reason.find(message), std::string::npos) << file.rows[i].reason;
    } else {
      EXPECT_EQ(file.rows[i].status, "ok") << file.rows[i].name << ": " << file.rows[i].reason;
    }
  }
}

TEST(RowFault, ANonStickyErrorFailsItsRowAndTheSuiteGoesOn) {
  TempFolder folder("row_fault");
  const std::string suite = write_suite(folder, "cpu-openmp", "4K");
  const std::string out = folder.file("r.json");
  const auto result = run_mkbench_args({"suite", suite, "--out", out}, {"MKBENCH_FAULT_ROW=2"});
  EXPECT_EQ(result.exit_code, kExitDevice) << result.output;
  expect_rows(load_results(out), 2, "cudaErrorLaunchFailure (unspecified launch failure)");
  EXPECT_EQ(result.output.find("restarting"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("4 rows, 3 measured, 0 refused, 1 failed"), std::string::npos) << result.output;
}

TEST(RowFault, AStickyErrorRestartsTheSuiteInAFreshProcessForTheRemainingRows) {
  TempFolder folder("sticky_fault");
  const std::string suite = write_suite(folder, "cpu-openmp", "4K");
  const std::string out = folder.file("r.json");
  const auto result = run_mkbench_args({"suite", suite, "--out", out}, {"MKBENCH_FAULT_ROW=2:sticky"});
  EXPECT_EQ(result.exit_code, kExitDevice) << result.output;
  expect_rows(load_results(out), 2, "cudaErrorIllegalAddress");
  for (const char* line : {"the CUDA context is unusable after", "restarting in a fresh process for the remaining 2 row(s)",
                           "resuming suite four-rows: 2 of 4 rows already in",
                           "4 rows, 3 measured, 0 refused, 1 failed"})
    EXPECT_NE(result.output.find(line), std::string::npos) << line << "\n" << result.output;
}

TEST(RowFault, AStickyErrorWithoutAResultsFileStopsAndSaysWhatWasNotMeasured) {
  TempFolder folder("sticky_no_out");
  const std::string suite = write_suite(folder, "cpu-openmp", "4K");
  const auto result = run_mkbench_args({"suite", suite}, {"MKBENCH_FAULT_ROW=3:sticky"});
  EXPECT_EQ(result.exit_code, kExitDevice) << result.output;
  EXPECT_NE(result.output.find("stopping with 1 row(s) unmeasured"), std::string::npos) << result.output;
  EXPECT_EQ(result.output.find("[4/4]"), std::string::npos) << "row 4 ran after the context was lost\n"
                                                           << result.output;
}

TEST(RowFault, ARunRowNamedByItsNameFailsWithTheInjectedMessage) {
  TempFolder folder("named_fault");
  const auto clean = run_mkbench_args(with(kSmallRun, {"--out", folder.file("r.json")}));
  ASSERT_EQ(clean.exit_code, kExitOk) << clean.output;
  const std::string name = load_results(folder.file("r.json")).rows.at(0).name;
  const auto faulty = run_mkbench_args(kSmallRun, {"MKBENCH_FAULT_ROW=" + name});
  EXPECT_EQ(faulty.exit_code, kExitDevice) << faulty.output;
  EXPECT_NE(faulty.output.find("injected fault (MKBENCH_FAULT_ROW=" + name + ")"), std::string::npos)
      << faulty.output;
  const auto launch_on_cpu = run_mkbench_args(kSmallRun, {"MKBENCH_FAULT_ROW=1:launch"});
  EXPECT_NE(launch_on_cpu.output.find("needs a row that runs on the GPU"), std::string::npos) << launch_on_cpu.output;
}

// Real CUDA errors: a launch of 4096 threads per block (non-sticky), a store to address 16
// (cudaErrorIllegalAddress, sticky: only a new process can use the GPU again).
TEST(RowFaultGpu, ARealInvalidLaunchFailsOneRowAndTheSuiteGoesOn) {
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  TempFolder folder("gpu_launch_fault");
  const std::string suite = write_suite(folder, "naive-atomics", "64K");
  const std::string out = folder.file("r.json");
  const auto result =
      run_mkbench_args({"suite", suite, "--out", out, "--no-peak-measure"}, {"MKBENCH_FAULT_ROW=2:launch"});
  EXPECT_EQ(result.exit_code, kExitDevice) << result.output;
  expect_rows(load_results(out), 2, "cudaErrorInvalidConfiguration");
  EXPECT_EQ(result.output.find("restarting"), std::string::npos) << result.output;
}

TEST(RowFaultGpu, ARealIllegalAddressRestartsTheSuiteAndTheRemainingRowsRun) {
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason();
  TempFolder folder("gpu_sticky_fault");
  const std::string suite = write_suite(folder, "naive-atomics", "64K");
  const std::string out = folder.file("r.json");
  const auto result = run_mkbench_args({"suite", suite, "--out", out, "--no-peak-measure"},
                                       {"MKBENCH_FAULT_ROW=2:illegal-address"});
  EXPECT_EQ(result.exit_code, kExitDevice) << result.output;
  expect_rows(load_results(out), 2, "cudaErrorIllegalAddress");
  EXPECT_NE(result.output.find("restarting in a fresh process"), std::string::npos) << result.output;
}

}  // namespace
}  // namespace mk
