// mkbench compare / baseline / scripts/perf-gate.sh. CPU-only: every result file here is a
// fabricated fixture (tests/data/results_*_fixture.json, see make_report_fixtures.py) or
// generated below with a fixed seed.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "core/errors.hpp"
#include "reports/baseline.hpp"
#include "reports/compare.hpp"
#include "reports/results_io.hpp"
#include "reports/stats.hpp"

namespace {

using nlohmann::json;
using namespace mk::reports;
namespace fs = std::filesystem;

std::string data_file(const std::string& name) { return std::string(MKBENCH_TEST_DATA) + "/" + name; }

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

CommandResult run_command(const std::string& command, bool with_stderr = true) {
  CommandResult result;
  FILE* pipe = ::popen((command + (with_stderr ? " 2>&1" : " 2>/dev/null")).c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, got);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return result;
}

CommandResult run_mkbench(const std::string& arguments, bool with_stderr = true) {
  return run_command(shell_quote(MKBENCH_BINARY) + " " + arguments, with_stderr);
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "mkbench-test-compare-XXXXXX").string();
    path = ::mkdtemp(pattern.data()) ? fs::path(pattern) : fs::path();
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path.empty()) fs::remove_all(path, ignored);
  }
};

void write_json(const fs::path& path, const json& doc) {
  std::ofstream(path) << doc.dump(1);
}

// SplitMix64 + Box-Muller: the same numbers on every compiler (std::normal_distribution
// is implementation-defined).
class DeterministicNoise {
 public:
  explicit DeterministicNoise(uint64_t seed) : state_(seed) {}
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  double gaussian() {
    const double u1 = std::max(uniform(), 1e-300), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }

 private:
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t state_;
};

// Timing-like samples: a floor plus right-skewed jitter of the given relative size.
std::vector<double> jittered_samples(DeterministicNoise& noise, double median_ms, double jitter, int count) {
  std::vector<double> samples;
  for (int i = 0; i < count; ++i)
    samples.push_back(median_ms * (1.0 + jitter * std::fabs(noise.gaussian())));
  return samples;
}

json synthetic_results(const std::vector<std::vector<double>>& samples_per_row) {
  json doc = load_results_file(data_file("results_gate_baseline_fixture.json"));
  json rows = json::array();
  for (size_t i = 0; i < samples_per_row.size(); ++i) {
    json row = doc["rows"][i % doc["rows"].size()];
    row["params"]["case"] = int(i);  // distinct rows
    row["name"] = "synthetic/" + std::to_string(i);
    row["timing"]["samples_ms"] = samples_per_row[i];
    row["timing"]["sm_clock_mhz"] = json::array();
    row["summary"] = json::object();
    rows.push_back(row);
  }
  doc["rows"] = rows;
  return doc;
}

// ---------------------------------------------------------------------------------------
// Mann-Whitney U against hand-computed values.

TEST(MannWhitney, SeparatedTinySamplesUseTheExactDistribution) {
  // U for {1,2,3} vs {4,5,6} is 0; of the C(6,3)=20 equally likely arrangements only one
  // gives U=0 (and one U=9), so the two-sided p is 2/20.
  const MannWhitneyResult result = mann_whitney_u({1, 2, 3}, {4, 5, 6});
  EXPECT_TRUE(result.exact);
  EXPECT_DOUBLE_EQ(result.u_first, 0.0);
  EXPECT_DOUBLE_EQ(result.u_second, 9.0);
  EXPECT_NEAR(result.p_value, 0.1, 1e-12);
}

TEST(MannWhitney, InterleavedTinySamples) {
  // {1,3,5} vs {2,4,6}: pairs first>second are 3>2, 5>2, 5>4, so U=3. The U counts for
  // sizes (3,3) are 1,1,2,3,3,3,3,2,1,1 over u=0..9, so P(U<=3) = 7/20 and p = 0.7.
  const MannWhitneyResult result = mann_whitney_u({1, 3, 5}, {2, 4, 6});
  EXPECT_TRUE(result.exact);
  EXPECT_DOUBLE_EQ(result.u_first, 3.0);
  EXPECT_NEAR(result.p_value, 0.7, 1e-12);
}

TEST(MannWhitney, TiesUseTheCorrectedNormalApproximation) {
  // {1,2,2,3} vs {2,3,4,5}: U = 0.5+0.5 (the two 2s tie one 2) + 1+0.5 (3 beats 2, ties 3)
  // = 2.5. Tie groups 2 (x3) and 3 (x2): sum(t^3-t) = 24+6 = 30. var = 16/12·(9 − 30/56)
  // = 11.2857; z = (|2.5 − 8| − 0.5)/sqrt(var) = 1.48835; p = erfc(z/√2) = 0.136658.
  const MannWhitneyResult result = mann_whitney_u({1, 2, 2, 3}, {2, 3, 4, 5});
  EXPECT_FALSE(result.exact);
  EXPECT_TRUE(result.has_ties);
  EXPECT_DOUBLE_EQ(result.u_first, 2.5);
  EXPECT_NEAR(result.z, 1.48835, 1e-5);
  EXPECT_NEAR(result.p_value, 0.136658, 1e-5);
}

TEST(MannWhitney, LargerSamplesUseTheNormalApproximation) {
  // 1..10 vs 11..20: U=0, mean 50, var = 10·10·21/12 = 175, z = 49.5/13.2288 = 3.74185,
  // p = 1.8267e-4.
  std::vector<double> low, high;
  for (int i = 1; i <= 10; ++i) low.push_back(i), high.push_back(i + 10);
  const MannWhitneyResult result = mann_whitney_u(low, high);
  EXPECT_FALSE(result.exact);
  EXPECT_DOUBLE_EQ(result.u_first, 0.0);
  EXPECT_NEAR(result.z, 3.74185, 1e-4);
  EXPECT_NEAR(result.p_value, 1.8267e-4, 1e-7);
  // Swapping the samples swaps U but not p.
  const MannWhitneyResult swapped = mann_whitney_u(high, low);
  EXPECT_DOUBLE_EQ(swapped.u_first, 100.0);
  EXPECT_NEAR(swapped.p_value, result.p_value, 1e-15);
}

TEST(MannWhitney, IdenticalSamplesGiveNoEvidence) {
  const MannWhitneyResult result = mann_whitney_u(std::vector<double>(12, 1.0), std::vector<double>(9, 1.0));
  EXPECT_DOUBLE_EQ(result.p_value, 1.0);
}

TEST(MannWhitney, EmptySampleIsAnInputError) {
  EXPECT_THROW(mann_whitney_u({}, {1.0}), mk::InputError);
}

TEST(Quantile, LinearInterpolationBetweenOrderStatistics) {
  // Sorted 1,2,3,4: position 0.75·3 = 2.25 -> 3 + 0.25·(4−3).
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 0.75), 3.25);
  EXPECT_DOUBLE_EQ(median({5, 1, 3}), 3.0);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
}

// ---------------------------------------------------------------------------------------
// Decision rule.

TEST(DecisionRule, MatchesTheDocumentedTable) {
  CompareOptions options;  // threshold 5%, alpha 0.05
  EXPECT_EQ(decide_verdict(0.001, +0.10, options), Verdict::Slower);
  EXPECT_EQ(decide_verdict(0.001, -0.10, options), Verdict::Faster);
  EXPECT_EQ(decide_verdict(0.001, +0.02, options), Verdict::Same);  // significant but tiny
  EXPECT_EQ(decide_verdict(0.40, +0.02, options), Verdict::Same);
  EXPECT_EQ(decide_verdict(0.40, +0.10, options), Verdict::Ambiguous);
  EXPECT_EQ(decide_verdict(0.40, -0.10, options), Verdict::Ambiguous);
}

TEST(DecisionRule, ThresholdParsing) {
  EXPECT_DOUBLE_EQ(parse_fraction("5%", "--threshold"), 0.05);
  EXPECT_DOUBLE_EQ(parse_fraction("0.05", "--threshold"), 0.05);
  EXPECT_DOUBLE_EQ(parse_fraction("12.5%", "--threshold"), 0.125);
  EXPECT_THROW(parse_fraction("5", "--threshold"), mk::InputError);  // 5 what?
  EXPECT_THROW(parse_fraction("five", "--threshold"), mk::InputError);
  EXPECT_THROW(parse_fraction("-1%", "--threshold"), mk::InputError);
}

// ---------------------------------------------------------------------------------------
// Library comparisons on the fixtures.

TEST(Compare, PlantedTwentyPercentSlowdownIsSlower) {
  const json base = load_results_file(data_file("results_gate_baseline_fixture.json"));
  const json cand = load_results_file(data_file("results_gate_slower_fixture.json"));
  const ComparisonReport report = compare_results(base, cand, CompareOptions{});
  ASSERT_EQ(report.rows.size(), 4u);
  EXPECT_EQ(report.rows[0].verdict, Verdict::Slower) << report.rows[0].name;
  EXPECT_NEAR(report.rows[0].change, 0.20, 0.03);
  EXPECT_LT(report.rows[0].p_value, 1e-4);
  EXPECT_EQ(report.rows[0].robust, "slower");
  for (size_t i = 1; i < report.rows.size(); ++i)
    EXPECT_NE(report.rows[i].verdict, Verdict::Slower) << report.rows[i].name;
  EXPECT_EQ(report.exit_code(), 1);
  const std::string md = render_compare_markdown(report, CompareOptions{});
  EXPECT_NE(md.find("**SLOWER**"), std::string::npos) << md;
  EXPECT_NE(md.find("| Row | Base median (ms) | Cand median (ms) | Change | p-value | Verdict"), std::string::npos);
}

TEST(Compare, FileAgainstItselfIsAllSame) {
  const json base = load_results_file(data_file("results_gate_baseline_fixture.json"));
  const ComparisonReport report = compare_results(base, base, CompareOptions{});
  ASSERT_EQ(report.rows.size(), base["rows"].size());
  for (const auto& row : report.rows) {
    EXPECT_EQ(row.verdict, Verdict::Same) << row.name;
    EXPECT_DOUBLE_EQ(row.change, 0.0);
    EXPECT_EQ(row.robust, "overlap");
  }
  EXPECT_EQ(report.exit_code(), 0);
}

TEST(Compare, NoiseOnlyRepeatedRunsAreNeverSlower) {
  // 40 pairs of "repeated runs": both sides drawn from the same distribution (3% jitter,
  // 20 samples), as two runs of an unchanged binary would be.
  DeterministicNoise noise(20261122);
  int compared = 0;
  for (int pair = 0; pair < 40; ++pair) {
    std::vector<std::vector<double>> base_rows, cand_rows;
    for (int row = 0; row < 4; ++row) {
      const double median_ms = 0.5 + row;
      base_rows.push_back(jittered_samples(noise, median_ms, 0.03, 20));
      cand_rows.push_back(jittered_samples(noise, median_ms, 0.03, 20));
    }
    const ComparisonReport report =
        compare_results(synthetic_results(base_rows), synthetic_results(cand_rows), CompareOptions{});
    for (const auto& row : report.rows) {
      EXPECT_NE(row.verdict, Verdict::Slower) << "pair " << pair << " " << row.name << " change "
                                              << row.change << " p " << row.p_value;
      ++compared;
    }
    EXPECT_EQ(report.exit_code(), 0);
  }
  EXPECT_EQ(compared, 160);
}

TEST(Compare, NoisyButRealSlowdownIsStillCaught) {
  // The counterpart of the noise test: same 3% jitter, candidate 20% slower.
  DeterministicNoise noise(7);
  const ComparisonReport report =
      compare_results(synthetic_results({jittered_samples(noise, 1.0, 0.03, 20)}),
                      synthetic_results({jittered_samples(noise, 1.2, 0.03, 20)}), CompareOptions{});
  ASSERT_EQ(report.rows.size(), 1u);
  EXPECT_EQ(report.rows[0].verdict, Verdict::Slower);
}

TEST(Compare, DifferentDevicesAreRefusedUnlessForced) {
  const json base = load_results_file(data_file("results_gate_baseline_fixture.json"));
  const json other = load_results_file(data_file("results_gate_other_device_fixture.json"));
  try {
    compare_results(base, other, CompareOptions{});
    FAIL() << "comparing an H100 baseline with an A100 candidate must be refused";
  } catch (const mk::InputError& error) {
    EXPECT_NE(std::string(error.what()).find("different devices"), std::string::npos) << error.what();
  }
  CompareOptions forced;
  forced.force = true;
  const ComparisonReport report = compare_results(base, other, forced);
  EXPECT_EQ(report.rows.size(), 4u);
  ASSERT_EQ(report.warnings.size(), 1u);
  EXPECT_NE(report.warnings[0].find("--force"), std::string::npos);
}

TEST(Compare, DifferentDatasetsAreRefusedUnlessForced) {
  const json base = load_results_file(data_file("results_gate_baseline_fixture.json"));
  json cand = base;
  for (json& row : cand["rows"]) row["dataset"]["seed"] = 7;
  EXPECT_THROW(compare_results(base, cand, CompareOptions{}), mk::InputError);
  CompareOptions forced;
  forced.force = true;
  const ComparisonReport report = compare_results(base, cand, forced);
  EXPECT_EQ(report.rows.size(), 4u);
  EXPECT_EQ(report.exit_code(), 0);
}

TEST(Compare, FileDatasetsMatchByHashNotPath) {
  json base = load_results_file(data_file("results_gate_baseline_fixture.json"));
  for (json& row : base["rows"])
    row["dataset"] = {{"kind", "file"}, {"path", "/data/a/points.npy"}, {"bytes", 100}, {"sha256", "ab12"}};
  json cand = base;
  for (json& row : cand["rows"]) row["dataset"]["path"] = "/other/machine/points.npy";
  EXPECT_EQ(compare_results(base, cand, CompareOptions{}).rows.size(), 4u);
}

// A baseline of results schema 1 names a file by SHA-256, a candidate of schema 2 by XXH3-128:
// the same file, two identities.
static json with_file_rows(json doc, const char* schema, const char* digest_key, const char* digest, size_t first_file_row) {
  doc["schema"] = schema;
  for (size_t i = first_file_row; i < doc["rows"].size(); ++i)
    doc["rows"][i]["dataset"] = {{"kind", "file"}, {"format", "npy"}, {"path", "/data/a/points.npy"},
                                 {"bytes", 100}, {digest_key, digest}};
  return doc;
}

TEST(Compare, OldAndNewFileDigestsAreRefusedWithWhatHappened) {
  const json fixture = load_results_file(data_file("results_gate_baseline_fixture.json"));
  const json base = with_file_rows(fixture, "mkbench.results/1", "sha256", "ab12", 0);
  const json cand = with_file_rows(fixture, "mkbench.results/2", "xxh3_128", "cd34", 0);
  try {
    compare_results(base, cand, CompareOptions{});
    ADD_FAILURE() << "rows named by different digests were compared";
  } catch (const mk::InputError& error) {
    const std::string text = error.what();
    EXPECT_NE(text.find("name their data differently"), std::string::npos) << text;
    EXPECT_NE(text.find("SHA-256"), std::string::npos) << text;
    EXPECT_NE(text.find("XXH3-128"), std::string::npos) << text;
  }
  CompareOptions forced;
  forced.force = true;
  const ComparisonReport report = compare_results(base, cand, forced);
  EXPECT_EQ(report.rows.size(), 4u);
  EXPECT_TRUE(report.missing.empty());
  ASSERT_EQ(report.warnings.size(), 1u);
  EXPECT_NE(report.warnings[0].find("--force"), std::string::npos) << report.warnings[0];
}

TEST(Compare, ADigestMismatchIsRefusedEvenWhenOtherRowsPair) {
  // Rows 0 and 1 on generated data pair as before; rows 2 and 3 on a file would otherwise be
  // reported as merely missing.
  const json fixture = load_results_file(data_file("results_gate_baseline_fixture.json"));
  const json base = with_file_rows(fixture, "mkbench.results/1", "sha256", "ab12", 2);
  const json cand = with_file_rows(fixture, "mkbench.results/2", "xxh3_128", "cd34", 2);
  EXPECT_THROW(compare_results(base, cand, CompareOptions{}), mk::InputError);
  // --force pairs only a file of the same format, size and name.
  json other_file = cand;
  other_file["rows"][3]["dataset"]["bytes"] = 200;
  CompareOptions forced;
  forced.force = true;
  const ComparisonReport report = compare_results(base, other_file, forced);
  EXPECT_EQ(report.rows.size(), 3u);
  EXPECT_EQ(report.missing.size(), 1u);
}

TEST(Compare, GeneratedDataPairsAcrossSchemaVersions) {
  // A generator is named by its spec in both versions: an old baseline gates a new run.
  json base = load_results_file(data_file("results_gate_baseline_fixture.json"));
  base["schema"] = "mkbench.results/1";
  json cand = base;
  cand["schema"] = "mkbench.results/2";
  for (const json& row : base["rows"]) ASSERT_EQ(row["dataset"].value("kind", ""), "generator");
  const ComparisonReport report = compare_results(base, cand, CompareOptions{});
  EXPECT_EQ(report.rows.size(), 4u);
  EXPECT_EQ(report.exit_code(), 0);
}

TEST(Compare, ThrottledClockIsFlaggedNotFailed) {
  const json base = load_results_file(data_file("results_gate_baseline_fixture.json"));
  const json cand = load_results_file(data_file("results_gate_throttled_fixture.json"));
  const ComparisonReport report = compare_results(base, cand, CompareOptions{});
  EXPECT_EQ(report.rows[0].verdict, Verdict::Throttled);
  EXPECT_DOUBLE_EQ(report.rows[0].cand_clock_mhz, 1600.0);
  EXPECT_NE(report.rows[0].note.find("1600 MHz"), std::string::npos) << report.rows[0].note;
  EXPECT_EQ(report.exit_code(), 0);
}

TEST(Compare, AMissingRowCannotBeJudgedAndFailsTheGateUnlessAllowed) {
  const json base = load_results_file(data_file("results_gate_baseline_fixture.json"));
  json cand = base;
  cand["rows"].erase(cand["rows"].begin() + 2);
  json extra = base["rows"][0];
  extra["params"]["grid"] = 999;
  extra["name"] = "registers-multik/extra";
  cand["rows"].push_back(extra);
  const ComparisonReport report = compare_results(base, cand, CompareOptions{});
  EXPECT_EQ(report.rows.size(), 3u);
  ASSERT_EQ(report.missing.size(), 1u);
  EXPECT_EQ(report.missing[0], base["rows"][2]["name"].get<std::string>());
  ASSERT_EQ(report.added.size(), 1u);  // its (variant, shape, dataset) rows all have partners
  EXPECT_EQ(report.added[0], "registers-multik/extra");
  EXPECT_EQ(report.unjudged(), 1);
  EXPECT_EQ(report.exit_code(), 2);
  const std::string md = render_compare_markdown(report, CompareOptions{});
  EXPECT_NE(md.find("ROWS NOT JUDGED"), std::string::npos) << md;
  EXPECT_NE(md.find("1 of 4 baseline rows not judged"), std::string::npos) << md;
  CompareOptions allowed;
  allowed.allow_missing = true;
  const ComparisonReport accepted = compare_results(base, cand, allowed);
  EXPECT_EQ(accepted.exit_code(), 0);
  EXPECT_NE(render_compare_markdown(accepted, allowed).find("accepted by --allow-missing"), std::string::npos);
}

// The case: 1 of 4 baseline rows has a partner.
TEST(Compare, OneOfFourRowsMatchedIsExitTwo) {
  const json base = load_results_file(data_file("results_gate_baseline_fixture.json"));
  json cand = base;
  cand["rows"] = json::array({base["rows"][0]});
  const ComparisonReport report = compare_results(base, cand, CompareOptions{});
  EXPECT_EQ(report.rows.size(), 1u);
  EXPECT_EQ(report.missing.size(), 3u);
  EXPECT_EQ(report.exit_code(), 2);
}

TEST(Compare, CandidateWithoutSamplesCannotBeJudgedEvenWhenTheMedianMoved) {
  const json base = load_results_file(data_file("results_gate_baseline_fixture.json"));
  json cand = base;
  for (json& row : cand["rows"]) {
    row["timing"]["samples_ms"] = json::array();
    row["summary"]["median_ms"] = row["summary"]["median_ms"].get<double>() * 1.2;
  }
  const ComparisonReport report = compare_results(base, cand, CompareOptions{});
  ASSERT_EQ(report.rows.size(), 4u);
  for (const auto& row : report.rows) {
    EXPECT_EQ(row.verdict, Verdict::Skipped);
    EXPECT_NE(row.note.find("no timing.samples_ms in the candidate"), std::string::npos) << row.note;
    EXPECT_NEAR(row.change, 0.2, 1e-9);  // shown, not judged
  }
  EXPECT_EQ(report.exit_code(), 2);
  CompareOptions allowed;
  allowed.allow_missing = true;
  EXPECT_EQ(compare_results(base, cand, allowed).exit_code(), 0);
}

TEST(Compare, BaselineRowThatWasNotOkCannotBeJudged) {
  json base = load_results_file(data_file("results_gate_baseline_fixture.json"));
  const json cand = base;
  base["rows"][3]["status"] = "refused";
  base["rows"][3]["reason"] = "needs more shared memory";
  const ComparisonReport report = compare_results(base, cand, CompareOptions{});
  EXPECT_EQ(report.rows[3].verdict, Verdict::Skipped);
  EXPECT_NE(report.rows[3].note.find("baseline row is refused (needs more shared memory)"), std::string::npos)
      << report.rows[3].note;
  EXPECT_EQ(report.exit_code(), 2);
}

TEST(Compare, ARegressionWinsOverUnjudgedRows) {
  const json base = load_results_file(data_file("results_gate_baseline_fixture.json"));
  json cand = load_results_file(data_file("results_gate_slower_fixture.json"));
  cand["rows"].erase(cand["rows"].begin() + 3);
  const ComparisonReport report = compare_results(base, cand, CompareOptions{});
  EXPECT_EQ(report.unjudged(), 1);
  EXPECT_EQ(report.exit_code(), 1);
}

// A retune changes a row's params, not which row it is: it stays in the comparison, as its own verdict.
TEST(Compare, RetunedRowIsParamsChangedWithItsTimingStillJudged) {
  const json base = load_results_file(data_file("results_gate_baseline_fixture.json"));
  json retuned = base;
  retuned["rows"][0]["params"]["grid"] = 777;
  const ComparisonReport same_speed = compare_results(base, retuned, CompareOptions{});
  ASSERT_EQ(same_speed.rows.size(), base["rows"].size());
  EXPECT_TRUE(same_speed.missing.empty());
  EXPECT_TRUE(same_speed.added.empty());
  EXPECT_EQ(same_speed.rows[0].verdict, Verdict::ParamsChanged);
  EXPECT_EQ(same_speed.rows[0].timing_verdict, Verdict::Same);
  EXPECT_EQ(same_speed.rows[0].base_params, "block=256,grid=264");
  EXPECT_EQ(same_speed.rows[0].cand_params, "block=256,grid=777");
  EXPECT_EQ(same_speed.exit_code(), 0);
  EXPECT_NE(render_compare_markdown(same_speed, CompareOptions{}).find("PARAMS-CHANGED (SAME)"), std::string::npos);

  json slower = load_results_file(data_file("results_gate_slower_fixture.json"));  // row 0 is 20 % slower
  slower["rows"][0]["params"]["grid"] = 777;
  const ComparisonReport retune_slower = compare_results(base, slower, CompareOptions{});
  EXPECT_EQ(retune_slower.rows[0].verdict, Verdict::ParamsChanged);
  EXPECT_EQ(retune_slower.rows[0].timing_verdict, Verdict::Slower);
  EXPECT_EQ(retune_slower.exit_code(), 1);
  const json as_json = compare_to_json(retune_slower, CompareOptions{});
  EXPECT_EQ(as_json["rows"][0]["verdict"], "PARAMS-CHANGED");
  EXPECT_EQ(as_json["rows"][0]["timing_verdict"], "SLOWER");
}

TEST(Compare, IgnoringParamsGivesTheTimingVerdictOfATunedRun) {
  const json base = load_results_file(data_file("results_gate_baseline_fixture.json"));
  json tuned = base;
  tuned["rows"][0]["params"]["grid"] = 777;  // the tuned config chose another grid
  CompareOptions loose;
  loose.ignore_params = true;
  const ComparisonReport report = compare_results(base, tuned, loose);
  ASSERT_EQ(report.rows.size(), base["rows"].size());
  EXPECT_TRUE(report.missing.empty());
  EXPECT_EQ(report.rows[0].verdict, Verdict::Same);
  EXPECT_NE(report.rows[0].note.find("\"grid\":777"), std::string::npos) << report.rows[0].note;
  EXPECT_EQ(report.exit_code(), 0);
}

// A sweep's rows share variant, shape and dataset and differ in params: they pair by params,
// whatever their order.
TEST(Compare, SweepRowsPairByTheirParamsFirst) {
  const json base = load_results_file(data_file("results_gate_baseline_fixture.json"));
  json reordered = base;
  std::swap(reordered["rows"][0], reordered["rows"][1]);  // grid=264 and grid=528 of one shape
  const ComparisonReport report = compare_results(base, reordered, CompareOptions{});
  ASSERT_EQ(report.rows.size(), 4u);
  for (const auto& row : report.rows) EXPECT_EQ(row.verdict, Verdict::Same) << row.name;
}

TEST(Compare, RowThatNowFailsIsBroken) {
  const json base = load_results_file(data_file("results_gate_baseline_fixture.json"));
  json cand = base;
  cand["rows"][1]["status"] = "failed";
  cand["rows"][1]["reason"] = "CUDA error: out of memory";
  const ComparisonReport report = compare_results(base, cand, CompareOptions{});
  EXPECT_EQ(report.rows[1].verdict, Verdict::Broken);
  EXPECT_EQ(report.exit_code(), 1);
}

TEST(Compare, NoRowsOrNoCommonRowsIsUnusable) {
  const json base = load_results_file(data_file("results_gate_baseline_fixture.json"));
  json empty = base;
  empty["rows"] = json::array();
  EXPECT_THROW(compare_results(base, empty, CompareOptions{}), mk::InputError);
  json unrelated = base;
  for (json& row : unrelated["rows"]) row["variant"] = "something-else";
  EXPECT_THROW(compare_results(base, unrelated, CompareOptions{}), mk::InputError);
}

TEST(Compare, SchemaIsChecked) {
  EXPECT_THROW(parse_results_text("{\"rows\": []}", "x.json"), mk::InputError);
  EXPECT_THROW(parse_results_text("{\"schema\": \"mkbench.results/3\", \"device\": {}, \"rows\": []}", "x.json"),
               mk::InputError);
  // Both versions this mkbench has written are read (2 differs only in how files are named).
  for (const char* schema : {"mkbench.results/1", "mkbench.results/2"})
    EXPECT_NO_THROW(parse_results_text(std::string("{\"schema\": \"") + schema + "\", \"device\": {}, \"rows\": []}",
                                       "x.json"))
        << schema;
  EXPECT_THROW(parse_results_text("not json", "x.json"), mk::InputError);
  EXPECT_THROW(parse_results_text(
                   "{\"schema\":\"mkbench.results/1\",\"device\":{},\"rows\":[{\"variant\":\"v\","
                   "\"timing\":{\"samples_ms\":[1,\"x\"]}}]}",
                   "x.json"),
               mk::InputError);
  // Times that no run measures: negative, beyond 1e12 ms (1e308 printed +inf %).
  for (const char* samples : {"[1, -1]", "[1e308, 2]", "[1, 2e12]"}) {
    const std::string text = std::string("{\"schema\":\"mkbench.results/2\",\"device\":{},\"rows\":[{\"variant\":\"v\",") +
                             "\"timing\":{\"samples_ms\":" + samples + "}}]}";
    EXPECT_THROW(parse_results_text(text, "x.json"), mk::InputError) << samples;
  }
  EXPECT_NO_THROW(parse_results_text(
      "{\"schema\":\"mkbench.results/2\",\"device\":{},\"rows\":[{\"variant\":\"v\","
      "\"timing\":{\"samples_ms\":[0, 0.0005, 1e6]}}]}",
      "x.json"));
}

// ---------------------------------------------------------------------------------------
// The mkbench binary: exit codes are the perf gate's interface.

TEST(CompareCommand, FilesNamedByDifferentDigestsExitTwoWithTheReason) {
  TempDir dir;
  const json fixture = load_results_file(data_file("results_gate_baseline_fixture.json"));
  write_json(dir.path / "old.json", with_file_rows(fixture, "mkbench.results/1", "sha256", "ab12", 0));
  write_json(dir.path / "new.json", with_file_rows(fixture, "mkbench.results/2", "xxh3_128", "cd34", 0));
  const auto result = run_mkbench("compare " + shell_quote((dir.path / "old.json").string()) + " " +
                                  shell_quote((dir.path / "new.json").string()));
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("name their data differently"), std::string::npos) << result.output;
}

TEST(CompareCommand, PlantedSlowdownExitsOne) {
  const auto result = run_mkbench("compare " + shell_quote(data_file("results_gate_baseline_fixture.json")) + " " +
                                  shell_quote(data_file("results_gate_slower_fixture.json")));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("SLOWER"), std::string::npos) << result.output;
}

TEST(CompareCommand, SameFileExitsZero) {
  const std::string file = shell_quote(data_file("results_gate_baseline_fixture.json"));
  const auto result = run_mkbench("compare " + file + " " + file + " --format table");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("4 SAME"), std::string::npos) << result.output;
}

TEST(CompareCommand, MismatchedDevicesExitTwoAndForceOverrides) {
  const std::string base = shell_quote(data_file("results_gate_baseline_fixture.json"));
  const std::string other = shell_quote(data_file("results_gate_other_device_fixture.json"));
  const auto refused = run_mkbench("compare " + base + " " + other);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("different devices"), std::string::npos) << refused.output;
  const auto forced = run_mkbench("compare " + base + " " + other + " --force");
  EXPECT_EQ(forced.exit_code, 0) << forced.output;
}

TEST(CompareCommand, MissingRowsExitTwoUnlessAllowed) {
  TempDir temp;
  const std::string base = shell_quote(data_file("results_gate_baseline_fixture.json"));
  json partial = load_results_file(data_file("results_gate_baseline_fixture.json"));
  partial["rows"].erase(partial["rows"].begin() + 1, partial["rows"].end());
  write_json(temp.path / "partial.json", partial);
  const std::string cand = shell_quote((temp.path / "partial.json").string());
  const auto refused = run_mkbench("compare " + base + " " + cand + " --format table");
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("3 of 4 baseline rows could not be judged"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("missing in candidate (not judged): naive-atomics"), std::string::npos)
      << refused.output;
  const auto allowed = run_mkbench("compare " + base + " " + cand + " --allow-missing");
  EXPECT_EQ(allowed.exit_code, 0) << allowed.output;
}

TEST(CompareCommand, UnusableInputExitsTwo) {
  TempDir temp;
  const std::string base = shell_quote(data_file("results_gate_baseline_fixture.json"));
  EXPECT_EQ(run_mkbench("compare " + base + " /nonexistent/results.json").exit_code, 2);
  std::ofstream(temp.path / "bad.json") << "{\"schema\": \"something/else\"}";
  EXPECT_EQ(run_mkbench("compare " + base + " " + shell_quote((temp.path / "bad.json").string())).exit_code, 2);
  json empty = load_results_file(data_file("results_gate_baseline_fixture.json"));
  empty["rows"] = json::array();
  write_json(temp.path / "empty.json", empty);
  EXPECT_EQ(run_mkbench("compare " + base + " " + shell_quote((temp.path / "empty.json").string())).exit_code, 2);
  EXPECT_EQ(run_mkbench("compare " + base + " " + base + " --threshold 5").exit_code, 2);
}

TEST(CompareCommand, JsonFormatCarriesVerdictsAndExitCode) {
  const auto result = run_mkbench("compare " + shell_quote(data_file("results_gate_baseline_fixture.json")) + " " +
                                  shell_quote(data_file("results_gate_slower_fixture.json")) +
                                  " --format json",
                                  /*with_stderr=*/false);
  ASSERT_EQ(result.exit_code, 1);
  const json parsed = json::parse(result.output);
  EXPECT_EQ(parsed["exit_code"], 1);
  EXPECT_EQ(parsed["counts"]["SLOWER"], 1);
  EXPECT_EQ(parsed["rows"][0]["verdict"], "SLOWER");
}

// ---------------------------------------------------------------------------------------
// Baselines.

TEST(Baseline, StoresUnderDeviceSlugAndSuite) {
  TempDir temp;
  const json results = load_results_file(data_file("results_gate_baseline_fixture.json"));
  const StoredBaseline stored = store_baseline(results, "fixture", "gate", "", temp.path.string(), false);
  EXPECT_EQ(stored.path, (temp.path / "nvidia-h100-80gb-hbm3" / "gate.json").string());
  EXPECT_EQ(load_results_file(stored.path), results);
}

TEST(Baseline, RefusesWrongSuiteOrDeviceUnlessForced) {
  TempDir temp;
  const json results = load_results_file(data_file("results_gate_baseline_fixture.json"));
  EXPECT_THROW(store_baseline(results, "fixture", "table1", "", temp.path.string(), false), mk::InputError);
  EXPECT_THROW(store_baseline(results, "fixture", "gate", "tesla-t4", temp.path.string(), false), mk::InputError);
  EXPECT_FALSE(fs::exists(temp.path / "nvidia-h100-80gb-hbm3"));
  const StoredBaseline forced = store_baseline(results, "fixture", "gate", "tesla-t4", temp.path.string(), true);
  EXPECT_EQ(forced.path, (temp.path / "tesla-t4" / "gate.json").string());
  EXPECT_FALSE(forced.warnings.empty());
  EXPECT_THROW(baseline_path(temp.path.string(), "../escape", "gate"), mk::InputError);
}

TEST(Baseline, RefusesAFileThatNamesNoCommitOrHoldsRowsAGateCannotJudge) {
  TempDir temp;
  json unknown = load_results_file(data_file("results_gate_baseline_fixture.json"));
  unknown["build"]["git_sha"] = "unknown";
  try {
    store_baseline(unknown, "fixture", "gate", "", temp.path.string(), false);
    FAIL() << "a baseline must name the commit that produced it";
  } catch (const mk::InputError& error) {
    EXPECT_NE(std::string(error.what()).find("MKBENCH_GIT_SHA"), std::string::npos) << error.what();
  }
  json refused_row = load_results_file(data_file("results_gate_baseline_fixture.json"));
  refused_row["rows"][2]["status"] = "refused";
  EXPECT_THROW(store_baseline(refused_row, "fixture", "gate", "", temp.path.string(), false), mk::InputError);
  EXPECT_FALSE(fs::exists(temp.path / "nvidia-h100-80gb-hbm3"));
  const StoredBaseline forced = store_baseline(refused_row, "fixture", "gate", "", temp.path.string(), true);
  EXPECT_FALSE(forced.warnings.empty());
  json dirty = load_results_file(data_file("results_gate_baseline_fixture.json"));
  dirty["build"]["git_sha"] = "0123456789ab-dirty";
  const StoredBaseline stored = store_baseline(dirty, "fixture", "gate", "", temp.path.string(), false);
  ASSERT_EQ(stored.warnings.size(), 1u);
  EXPECT_NE(stored.warnings[0].find("uncommitted"), std::string::npos);
}

TEST(BaselineCommand, UpdateFromFileThenPathAndShow) {
  TempDir temp;
  const std::string dir = shell_quote(temp.path.string());
  const auto update = run_mkbench("baseline update --suite gate --from " +
                                  shell_quote(data_file("results_gate_baseline_fixture.json")) + " --dir " + dir);
  ASSERT_EQ(update.exit_code, 0) << update.output;
  const fs::path expected = temp.path / "nvidia-h100-80gb-hbm3" / "gate.json";
  EXPECT_TRUE(fs::exists(expected));
  const auto path = run_mkbench("baseline path --suite gate --device-slug nvidia-h100-80gb-hbm3 --dir " + dir);
  EXPECT_EQ(path.exit_code, 0);
  EXPECT_EQ(path.output, expected.string() + "\n");
  const auto from_results = run_mkbench("baseline path --suite gate --results " +
                                        shell_quote(data_file("results_gate_slower_fixture.json")) + " --dir " + dir);
  EXPECT_EQ(from_results.output, expected.string() + "\n");
  const auto show = run_mkbench("baseline show --dir " + dir);
  EXPECT_EQ(show.exit_code, 0);
  EXPECT_NE(show.output.find("nvidia-h100-80gb-hbm3/gate.json: suite gate"), std::string::npos) << show.output;
  const auto wrong_suite = run_mkbench("baseline update --suite table1 --from " +
                                       shell_quote(data_file("results_gate_baseline_fixture.json")) + " --dir " + dir);
  EXPECT_EQ(wrong_suite.exit_code, 2) << wrong_suite.output;
}

// ---------------------------------------------------------------------------------------
// scripts/perf-gate.sh with a stand-in for the suite run: the stub answers `--suite` with a
// fixture file and passes every other command to the real mkbench.

class PerfGate : public ::testing::Test {
 protected:
  void SetUp() override {
    script_ = fs::path(MKBENCH_SOURCE_DIR) / "scripts" / "perf-gate.sh";
    ASSERT_TRUE(fs::exists(script_)) << script_;
    baselines_ = temp_.path / "baselines";
    store_baseline(load_results_file(data_file("results_gate_baseline_fixture.json")), "fixture", "gate", "",
                   baselines_.string(), false);
  }
  CommandResult gate_with_suite_output(const std::string& fixture, const std::string& suite = "gate") {
    return gate_with_suite_file(data_file(fixture), suite);
  }
  CommandResult gate_with_suite_file(const std::string& suite_output, const std::string& suite = "gate") {
    const fs::path stub = temp_.path / "mkbench-stub.sh";
    std::ofstream(stub) << "#!/usr/bin/env bash\n"
                        << "if [ \"$1\" = --suite ]; then\n"
                        << "  while [ $# -gt 0 ]; do if [ \"$1\" = --out ]; then cp "
                        << shell_quote(suite_output) << " \"$2\"; exit 0; fi; shift; done; exit 9\n"
                        << "fi\nexec " << shell_quote(MKBENCH_BINARY) << " \"$@\"\n";
    fs::permissions(stub, fs::perms::owner_all);
    return run_command("MKBENCH=" + shell_quote(stub.string()) + " MKBENCH_BASELINE_DIR=" +
                       shell_quote(baselines_.string()) + " bash " + shell_quote(script_.string()) + " " +
                       suite + " 5%");
  }
  TempDir temp_;
  fs::path script_, baselines_;
};

TEST_F(PerfGate, FailsOnPlantedSlowdown) {
  const auto result = gate_with_suite_output("results_gate_slower_fixture.json");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("**SLOWER**"), std::string::npos) << result.output;
}

TEST_F(PerfGate, PassesOnUnchangedResults) {
  const auto result = gate_with_suite_output("results_gate_baseline_fixture.json");
  EXPECT_EQ(result.exit_code, 0) << result.output;
}

// A retune changes a row's params; the gate keeps the row and says so.
TEST_F(PerfGate, RetunedRowIsReportedNotDropped) {
  json retuned = load_results_file(data_file("results_gate_slower_fixture.json"));
  retuned["rows"][0]["params"]["grid"] = 777;
  write_json(temp_.path / "retuned.json", retuned);
  const auto result = gate_with_suite_file((temp_.path / "retuned.json").string());
  EXPECT_EQ(result.exit_code, 1) << result.output;  // its timing is still 20 % slower
  EXPECT_NE(result.output.find("PARAMS-CHANGED (SLOWER)"), std::string::npos) << result.output;
}

TEST_F(PerfGate, RowsMissingFromTheRunFailTheGate) {
  json partial = load_results_file(data_file("results_gate_baseline_fixture.json"));
  partial["rows"].erase(partial["rows"].begin() + 1, partial["rows"].end());
  write_json(temp_.path / "partial.json", partial);
  const auto result = gate_with_suite_file((temp_.path / "partial.json").string());
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("ROWS NOT JUDGED"), std::string::npos) << result.output;
}

TEST_F(PerfGate, MissingBaselineIsExitTwo) {
  const auto result = gate_with_suite_output("results_table1_fixture.json", "table1");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("baseline update"), std::string::npos) << result.output;
}

}  // namespace
