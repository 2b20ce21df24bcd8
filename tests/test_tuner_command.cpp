// `mkbench tune` as a user runs it, without a GPU: replayed compares and tunes, bad arguments,
// the harness evaluator on the CPU baseline, and `mkbench run` recording the tuned config it
// applied in its row.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tuner/replay.hpp"

#include "tests/tuner_fixtures.hpp"

namespace mk::tuner {
namespace {

using namespace fixtures;

// ------------------------------------------------------------- the real evaluator

TEST(TunerHarnessEvaluator, MeasuresTheCpuBaselineThroughTheHarness) {
  const Variant* cpu = Registry::instance().find("cpu-openmp");
  if (!cpu) GTEST_SKIP() << "cpu-openmp is not registered in this build";
  const DeviceInfo host = query_host_cpu();
  const Problem problem = shape(4, 3, 5, 4096);
  HarnessEvaluatorOptions options;
  options.samples = 5;
  options.warmup = 1;
  options.verify_first = true;
  const Evaluator evaluate = make_harness_evaluator(host, options);
  const Measurement measurement = evaluate(*cpu, cpu->default_params(problem, host), problem);
  ASSERT_TRUE(measurement.ok) << measurement.reason;
  ASSERT_EQ(measurement.samples_ms.size(), 5u);
  std::vector<double> sorted = measurement.samples_ms;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_DOUBLE_EQ(measurement.median_ms, sorted[2]);
  EXPECT_GT(measurement.median_ms, 0);
}

// ------------------------------------------------------------------ the tune command

struct CommandResult {
  int exit_code = -1;
  std::string output;
};

CommandResult run_mkbench(const std::string& arguments) {
  const std::string command = std::string(MKBENCH_BINARY) + " " + arguments + " 2>&1";
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  size_t got;
  while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, got);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

TEST(TunerCommand, ReplayCompareReportsEveryStrategy) {
  const CommandResult result = run_mkbench("tune --replay " + kFixture + " --compare --max-evals 64 --repeats 3");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  for (const char* name : {"exhaustive\t1\t", "random\t3\t", "anneal\t3\t"})
    EXPECT_NE(result.output.find(name), std::string::npos) << name << "\n" << result.output;
  EXPECT_NE(result.output.find("160 recorded points"), std::string::npos) << result.output;
}

TEST(TunerCommand, ReplayCompareOnAPinnedSubspace) {
  const CommandResult result =
      run_mkbench("tune --replay " + kFixture + " --dims 8 --k 3..7 --points 32M --variants registers-multik" +
                  " --fix block=256 --fix layout=aos --compare --max-evals 10 --repeats 3");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  // 25 registers-multik points at block 256, AoS; naive-atomics (also recorded) is left out.
  EXPECT_NE(result.output.find("25 recorded points"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("block=256"), std::string::npos) << result.output;
  EXPECT_EQ(result.output.find("block=128"), std::string::npos) << result.output;
}

TEST(TunerCommand, ReplayTuneWritesAConfigWithOneEntryPerShape) {
  TempDir dir;
  const std::string out = dir.file("replayed.json");
  const CommandResult result =
      run_mkbench("tune --replay " + kFixture + " --strategy exhaustive --config-out " + out);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const TunedConfig config = load_config(out);
  ASSERT_EQ(config.entries.size(), 2u);
  for (const auto& entry : config.entries) {
    EXPECT_DOUBLE_EQ(entry.best.median_ms, recorded_optimum_ms(entry.problem));
    EXPECT_EQ(entry.evals_new, 160u);
    EXPECT_EQ(entry.strategy, "exhaustive");
  }
}

TEST(TunerCommand, BadArgumentsExitWithInputError) {
  EXPECT_EQ(run_mkbench("tune --replay " + kFixture + " --budget 10").exit_code, kExitBadInput);
  EXPECT_EQ(run_mkbench("tune --replay " + kFixture + " --strategy genetic").exit_code, kExitBadInput);
  EXPECT_EQ(run_mkbench("tune --replay /nonexistent/cache.jsonl").exit_code, kExitBadInput);
  EXPECT_EQ(run_mkbench("tune --dims 8 --k 3..7").exit_code, kExitBadInput);
  EXPECT_EQ(run_mkbench("tune --replay " + kFixture + " --fix block").exit_code, kExitBadInput);
  EXPECT_EQ(run_mkbench("tune --replay " + kFixture + " --fix block=300 --compare").exit_code, kExitBadInput);
}

// `mkbench run` rows record the tuned entry that chose their params, as suite rows do (the
// README's promise; before, the entry only went to stderr). The reference is the config written
// here: its params must be the row's, and --no-tuned must leave both out.
TEST(TunerCommand, RunRecordsTheTunedConfigInItsRow) {
  TempDir dir;
  const Problem problem = shape(2, 3, 3, 1000);
  const Params tuned{{"threads", 1}, {"schedule_chunk", 1024}};
  TunedConfig config;
  config.merge(entry_for(problem, "cpu-openmp", tuned));
  // `run` looks the config up under the device it measures on: the host CPU, or GPU 0 when there is one.
  std::set<std::string> slugs{query_host_cpu().slug()};
  if (gpu_count() > 0) slugs.insert(query_device(0).slug());
  for (const auto& slug : slugs) save_config_atomically(dir.file(slug + ".json"), config);
  const std::string env = "MKBENCH_CONFIG_DIR='" + dir.path().string() + "' ";
  const std::string run = "run --variant cpu-openmp --dims 2 --k 3 --points 1000 --iters 2 --warmup 0 --no-peak-measure ";
  const auto row_of = [](const std::string& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in).at("rows").at(0);
  };

  const std::string command = std::string(MKBENCH_BINARY) + " " + run + "--out " + dir.file("tuned.json") + " 2>&1";
  ASSERT_EQ(std::system((env + command + " >/dev/null").c_str()), 0) << command;
  const auto row = row_of(dir.file("tuned.json"));
  ASSERT_TRUE(row.contains("tuned_config")) << row.dump(2);
  EXPECT_NE(row.at("tuned_config").get<std::string>().find(".json bucket "), std::string::npos) << row.dump(2);
  EXPECT_EQ(row.at("params").at("threads"), 1);
  EXPECT_EQ(row.at("params").at("schedule_chunk"), 1024);

  const std::string plain = std::string(MKBENCH_BINARY) + " " + run + "--no-tuned --out " + dir.file("plain.json");
  ASSERT_EQ(std::system((env + plain + " >/dev/null 2>&1").c_str()), 0) << plain;
  EXPECT_FALSE(row_of(dir.file("plain.json")).contains("tuned_config"));
}

// A naive-atomics table where one point is 1.2% faster than the default, within the noise.
TEST(TunerCommand, ReplayConfigKeepsTheDefaultWhenTheWinnerIsWithinTheNoise) {
  TempDir dir;
  const DeviceInfo device = recording_device();
  const Variant& naive = Registry::instance().get("naive-atomics");
  const Params fallback = naive.default_params(kTable1, device_info_of(DeviceKey::of(device), json()));
  std::optional<Params> winner;
  std::ofstream out(dir.file("table.jsonl"));
  for (CacheRecord record : recorded_space("naive-atomics", device, false)) {
    double factor = 1.5;
    if (record.params == fallback) {
      factor = 1.0;
    } else if (!winner) {
      winner = record.params;
      factor = 0.988;
    }
    record.measurement = timed(scaled(kNoisy, factor));
    out << record_to_json(record).dump() << "\n";
  }
  out.close();
  ASSERT_TRUE(winner);
  const CommandResult result = run_mkbench("tune --replay " + dir.file("table.jsonl") +
                                           " --strategy exhaustive --config-out " + dir.file("config.json"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const TunedConfig config = load_config(dir.file("config.json"));
  ASSERT_EQ(config.entries.size(), 1u);
  const ConfigEntry& entry = config.entries[0];
  EXPECT_EQ(entry.best.params, fallback);
  EXPECT_TRUE(entry.best.is_default);
  ASSERT_TRUE(entry.runner_up);
  EXPECT_EQ(entry.runner_up->params, *winner);
  EXPECT_EQ(entry.chosen.rfind("default: winner 1.2% faster, not significant", 0), 0u) << entry.chosen;
}

}  // namespace
}  // namespace mk::tuner
