// Sharding end to end through the binary (docs/multi-gpu.md): `--device cpu:N` shards
// cpu-openmp over N in-process ranks, `mpirun -np 2 mkbench run --device cpu` over two
// processes, and both rows pass --verify against the FP64 reference on the whole data and
// record their ranks. A GPU list on a machine without those GPUs is bad input (exit 2).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "core/device_info.hpp"
#include "core/errors.hpp"
#include "harness/parallel/mpi_communicator.hpp"
#include "harness/results.hpp"
#include "process_helpers.hpp"

namespace mk {
namespace {

using testing_support::run_mkbench_args;
using testing_support::shell_quote;
using testing_support::TempFolder;

const std::vector<std::string> kRun = {"run",     "--variant", "cpu-openmp", "--dims",    "5",  "--points",
                                       "20001",   "--k",       "3..6",       "--iters",   "3",  "--warmup",
                                       "1",       "--verify",  "--seed",     "4"};

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

void expect_verified_sharded_row(const std::string& path, int ranks, const std::string& communicator,
                                 const std::string& launch) {
  const ResultFile file = load_results(path);
  ASSERT_EQ(file.rows.size(), 1u);
  const ResultRow& row = file.rows.front();
  EXPECT_EQ(row.status, "ok");
  ASSERT_TRUE(row.verified());
  EXPECT_TRUE(row.verify.value("passed", false)) << row.verify.dump();
  ASSERT_TRUE(row.parallel.has_value()) << "the row does not record its shards";
  EXPECT_EQ(row.parallel->ranks, ranks);
  EXPECT_EQ(row.parallel->communicator, communicator);
  EXPECT_EQ(row.parallel->launch, launch);
  ASSERT_EQ(row.parallel->shards.size(), size_t(ranks));
  int64_t rows = 0;
  for (int r = 0; r < ranks; ++r) {
    EXPECT_EQ(row.parallel->shards[size_t(r)].rank, r);
    rows += row.parallel->shards[size_t(r)].rows;
  }
  EXPECT_EQ(rows, 20001);  // every point in exactly one shard
  // ΣK·N sums, ΣK counts, one inertia per K (K=3..6: ΣK=18), 8 bytes each.
  EXPECT_EQ(row.parallel->allreduce_bytes, (18 * 5 + 18 + 4) * 8);
}

TEST(ShardedCli, HostShardsRunVerifiedAndRecordTheirRanks) {
  TempFolder folder("sharded_cli");
  const std::string out = folder.file("r.json");
  const auto result = run_mkbench_args(with(kRun, {"--device", "cpu:3", "--out", out}));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  expect_verified_sharded_row(out, 3, "in-process", "one-process");
}

TEST(ShardedCli, AGpuListThatIsNotThereIsBadInput) {
  // GPU 63 exists nowhere we run; without any GPU the list is refused as naming GPUs at all.
  const auto result = run_mkbench_args(with(kRun, {"--device", "0,63"}));
  EXPECT_EQ(result.exit_code, kExitBadInput) << result.output;
  EXPECT_NE(result.output.find(gpu_count() == 0 ? "has none" : "does not exist"), std::string::npos) << result.output;
}

// Shards hold their rows whole; streaming them in chunks is not built, so asking for both is bad
// input, said before any data is made.
TEST(ShardedCli, OutOfCoreOverShardsIsBadInput) {
  for (const std::vector<std::string>& flags : {std::vector<std::string>{"--chunk-points", "3001"},
                                                std::vector<std::string>{"--out-of-core"}}) {
    std::vector<std::string> args = with(kRun, {"--device", "cpu:2"});
    args.insert(args.end(), flags.begin(), flags.end());
    const auto result = run_mkbench_args(args);
    EXPECT_EQ(result.exit_code, kExitBadInput) << flags[0] << "\n" << result.output;
    EXPECT_NE(result.output.find("each shard holds its rows whole"), std::string::npos) << result.output;
  }
}

// A shell command's exit status and output (stdout and stderr together).
std::pair<int, std::string> shell(const std::string& command) {
  std::string output;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  char buffer[4096];
  size_t got;
  while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, got);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

std::string mpirun_command(int ranks) {
  std::string command = "mpirun -np " + std::to_string(ranks) + " --oversubscribe";
  if (::geteuid() == 0) command += " --allow-run-as-root";
  return command;
}

// Two processes, one shard each, reduce through MPI_Allreduce; rank 0 writes the file.
TEST(ShardedCli, MpirunTwoRanksRunVerifiedAndRecordBothRanks) {
  if (!mpi_built_in()) GTEST_SKIP() << "this build has no MPI (install libopenmpi-dev and reconfigure)";
  if (shell("command -v mpirun").first != 0) GTEST_SKIP() << "no mpirun on PATH (Debian: openmpi-bin)";
  TempFolder folder("sharded_mpi");
  const std::string out = folder.file("r.json");
  std::string command = mpirun_command(2) + " " + shell_quote(MKBENCH_BINARY);
  for (const auto& arg : with(kRun, {"--device", "cpu", "--out", out})) command += " " + shell_quote(arg);
  const auto [code, output] = shell("timeout 240 " + command);
  ASSERT_EQ(code, 0) << output;
  expect_verified_sharded_row(out, 2, "mpi", "mpirun");
}

// A rank that dies mid-run (its process ends) makes mpirun end the job with an error, not hang.
TEST(ShardedCli, MpirunRankThatDiesEndsTheJobWithAnError) {
  if (!mpi_built_in()) GTEST_SKIP() << "this build has no MPI (install libopenmpi-dev and reconfigure)";
  if (shell("command -v mpirun").first != 0) GTEST_SKIP() << "no mpirun on PATH (Debian: openmpi-bin)";
  std::string command = "MKBENCH_FAULT_SHARD=1:3:exit MKBENCH_COLLECTIVE_TIMEOUT_S=60 timeout 240 " +
                        mpirun_command(2) + " " + shell_quote(MKBENCH_BINARY);
  for (const auto& arg : with(kRun, {"--device", "cpu"})) command += " " + shell_quote(arg);
  const auto [code, output] = shell(command);
  EXPECT_NE(code, 0) << output;
  EXPECT_NE(code, 124) << "the surviving rank hung until timeout killed the job:\n" << output;
  EXPECT_NE(output.find("rank 1 exits at step 3"), std::string::npos) << output;
}

}  // namespace
}  // namespace mk
