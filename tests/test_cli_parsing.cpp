// Argument parsing pieces, suite expansion, and the built binary's exit codes.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "harness/cli_run.hpp"
#include "core/errors.hpp"
#include "core/problem.hpp"
#include "harness/results.hpp"
#include "harness/suite.hpp"

namespace mk {
namespace {

namespace fs = std::filesystem;

// ------------------------------------------------------------ counts and K ranges

TEST(ParseCount, BinarySuffixesAndPlainNumbers) {
  EXPECT_EQ(parse_count("32M"), int64_t(1) << 25);
  EXPECT_EQ(parse_count("1000"), 1000);
  EXPECT_EQ(parse_count("1e6"), 1000000);
  EXPECT_EQ(parse_count("1.5K"), 1536);
  EXPECT_EQ(parse_count("2G"), int64_t(1) << 31);
}

TEST(ParseCount, RejectsGarbageNegativesAndFractions) {
  EXPECT_THROW(parse_count(""), InputError);
  EXPECT_THROW(parse_count("abc"), InputError);
  EXPECT_THROW(parse_count("12Q"), InputError);
  EXPECT_THROW(parse_count("-5"), InputError);
  EXPECT_THROW(parse_count("0.5"), InputError);
}

TEST(ParseKRange, RangeAndSingleK) {
  const KRange range = parse_k_range("3..7");
  EXPECT_EQ(range.kmin, 3);
  EXPECT_EQ(range.kmax, 7);
  EXPECT_EQ(range.sum(), 25);
  const KRange single = parse_k_range("16");
  EXPECT_EQ(single.kmin, 16);
  EXPECT_EQ(single.kmax, 16);
}

TEST(ParseKRange, RejectsBadRanges) {
  EXPECT_THROW(parse_k_range("0"), InputError);
  EXPECT_THROW(parse_k_range("7..3"), InputError);
  EXPECT_THROW(parse_k_range("3.."), InputError);
  EXPECT_THROW(parse_k_range("a..b"), InputError);
  EXPECT_THROW(parse_k_range(""), InputError);
}

// ------------------------------------------------------------ --param

TEST(ParseParamValue, IntegersRealsAndStrings) {
  EXPECT_EQ(parse_param_value("256"), nlohmann::json(256));
  EXPECT_TRUE(parse_param_value("256").is_number_integer());
  EXPECT_EQ(parse_param_value("-3"), nlohmann::json(-3));
  EXPECT_TRUE(parse_param_value("1.5").is_number_float());
  EXPECT_DOUBLE_EQ(parse_param_value("1.5").get<double>(), 1.5);
  EXPECT_EQ(parse_param_value("soa"), nlohmann::json("soa"));
  EXPECT_EQ(parse_param_value("12abc"), nlohmann::json("12abc"));
  EXPECT_EQ(parse_param_value("0x10"), nlohmann::json("0x10"));
}

TEST(ParseParamAssignments, BuildsAnObject) {
  const Params p = parse_param_assignments({"block=256", "layout=soa", "grid=264"});
  EXPECT_EQ(p, (Params{{"block", 256}, {"grid", 264}, {"layout", "soa"}}));
  // The same value twice is harmless.
  EXPECT_EQ(parse_param_assignments({"block=256", "block=256"}), (Params{{"block", 256}}));
  // '=' inside a value belongs to the value.
  EXPECT_EQ(parse_param_assignments({"expr=a=b"}), (Params{{"expr", "a=b"}}));
}

TEST(ParseParamAssignments, RejectsMalformedItems) {
  EXPECT_THROW(parse_param_assignments({"block"}), InputError);
  EXPECT_THROW(parse_param_assignments({"=5"}), InputError);
  EXPECT_THROW(parse_param_assignments({"block="}), InputError);
  EXPECT_THROW(parse_param_assignments({"block=256", "block=128"}), InputError);
}

TEST(CollectOverrides, OnlyWhatTheUserSet) {
  RunOptions options;
  EXPECT_TRUE(collect_overrides(options).empty());
  options.block = 128;
  options.block_given = true;
  options.layout = "soa";
  options.params = {"tile=4"};
  EXPECT_EQ(collect_overrides(options), (Params{{"block", 128}, {"layout", "soa"}, {"tile", 4}}));
}

TEST(CollectOverrides, BadLayoutAndConflictsAreInputErrors) {
  RunOptions bad_layout;
  bad_layout.layout = "diagonal";
  EXPECT_THROW(collect_overrides(bad_layout), InputError);
  RunOptions bad_param_layout;
  bad_param_layout.params = {"layout=rows"};
  EXPECT_THROW(collect_overrides(bad_param_layout), InputError);
  RunOptions conflict;
  conflict.grid = 10;
  conflict.grid_given = true;
  conflict.params = {"grid=20"};
  EXPECT_THROW(collect_overrides(conflict), InputError);
}

// ------------------------------------------------------------ suite expressions

NameLookup fixed_names() {
  return [](const std::string& name) -> std::optional<double> {
    if (name == "sm") return 132;
    if (name == "m") return 1000;
    if (name == "block") return 256;
    return std::nullopt;
  };
}

TEST(SuiteExpression, EvaluatesOverDeviceAndProblemNames) {
  const auto r = evaluate_expression("sm*1.275", fixed_names());
  ASSERT_EQ(r.kind, ExpressionResult::Value);
  EXPECT_DOUBLE_EQ(r.value, 168.3);
  EXPECT_EQ(round_parameter(r.value), 168);
  EXPECT_DOUBLE_EQ(evaluate_expression("cdiv(m, block)", fixed_names()).value, 4);  // ceil(1000/256)
  EXPECT_DOUBLE_EQ(evaluate_expression("(sm + 2) * 2 - 4 / 2", fixed_names()).value, 266);
  EXPECT_DOUBLE_EQ(evaluate_expression("max(1, min(sm, 7))", fixed_names()).value, 7);
  EXPECT_DOUBLE_EQ(evaluate_expression("256", fixed_names()).value, 256);
}

// A suite file's text must not run the parser's recursion out of stack (100,000 '(' crashed it:
// a bad-input audit at 04dfbaa): deep nesting is an InputError, ordinary nesting still works.
TEST(SuiteExpression, NestingBeyondTheLimitIsAnInputError) {
  const std::string ok = std::string(150, '(') + "sm" + std::string(150, ')');
  EXPECT_DOUBLE_EQ(evaluate_expression(ok, fixed_names()).value, 132);
  EXPECT_DOUBLE_EQ(evaluate_expression(std::string(150, '-') + "1", fixed_names()).value, 1);
  for (const std::string& deep : {std::string(100000, '(') + "1" + std::string(100000, ')'),
                                  std::string(100000, '-') + "1"}) {
    try {
      evaluate_expression(deep, fixed_names());
      ADD_FAILURE() << "nesting of 100,000 was evaluated";
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find("nests deeper than"), std::string::npos) << error.what();
    }
  }
}

TEST(SuiteExpression, LiteralsAndUnknownNames) {
  EXPECT_EQ(evaluate_expression("sm*", fixed_names()).kind, ExpressionResult::NotExpression);
  EXPECT_EQ(evaluate_expression("", fixed_names()).kind, ExpressionResult::NotExpression);
  const auto soa = evaluate_expression("soa", fixed_names());
  EXPECT_EQ(soa.kind, ExpressionResult::UnknownName);
  EXPECT_EQ(soa.unknown_name, "soa");
  EXPECT_EQ(evaluate_expression("sn*2", fixed_names()).unknown_name, "sn");
}

TEST(SuiteExpression, RoundsToAtLeastOne) {
  EXPECT_EQ(round_parameter(0.2), 1);
  EXPECT_EQ(round_parameter(2.5), 3);
  EXPECT_EQ(round_parameter(-4), 1);
}

// ------------------------------------------------------------ suite parsing and planning

TEST(SuiteParse, RejectsUnknownKeysAndMissingCases) {
  using nlohmann::ordered_json;
  EXPECT_THROW(parse_suite(ordered_json::parse(R"({"cases": []})"), "t"), InputError);
  EXPECT_THROW(parse_suite(ordered_json::parse(R"({"cases": [{"dims": [8], "k": ["3..7"], "points": ["1M"],
                                                  "variants": ["cpu-openmp"], "colour": 1}]})"),
                           "t"),
               InputError);
  EXPECT_THROW(parse_suite(ordered_json::parse(R"({"cases": [{"dims": [8], "k": ["0"], "points": ["1M"],
                                                  "variants": ["cpu-openmp"]}]})"),
                           "t"),
               InputError);
  EXPECT_THROW(load_suite("no-such-suite-anywhere"), InputError);
}

TEST(SuitePlan, WithoutGpuGpuCasesBecomeTheCpuBaselineOnce) {
  if (!Registry::instance().find("cpu-openmp") || !Registry::instance().find("naive-atomics"))
    GTEST_SKIP() << "needs the cpu-openmp and naive-atomics variants in this build";
  const SuiteDefinition suite = parse_suite(nlohmann::ordered_json::parse(R"({
      "cases": [
        {"dims": [8], "k": ["3..7"], "points": ["32M"], "variants": ["naive-atomics"],
         "params": {"block": [128, 256]}},
        {"dims": [8], "k": ["3..7"], "points": ["64M"], "variants": ["naive-atomics"]}
      ],
      "cpu_fallback": {"points": "4K", "variants": ["cpu-openmp"]}})"),
                                            "t");
  DeviceInfo cpu;  // is_gpu = false
  const SuitePlan plan = plan_suite(suite, cpu, {}, false);
  EXPECT_TRUE(plan.used_cpu_fallback);
  ASSERT_EQ(plan.row_count(), 1u);
  const PlannedRow& row = plan.groups.at(0).rows.at(0);
  EXPECT_EQ(row.variant_name, "cpu-openmp");
  EXPECT_EQ(row.problem.m, 4096);
  EXPECT_EQ(row.problem.n, 8);
  EXPECT_EQ(row.problem.k.sum(), 25);
}

TEST(SuitePlan, ExpandsExpressionsAgainstTheDevice) {
  if (!Registry::instance().find("naive-atomics")) GTEST_SKIP() << "needs naive-atomics";
  const SuiteDefinition suite = parse_suite(nlohmann::ordered_json::parse(R"({
      "cases": [{"dims": [4], "k": ["3"], "points": ["1000"], "variants": ["naive-atomics"],
                 "params": {"block": ["sm*0.97", 64, "all"], "layout": "default"}}]})"),
                                            "t");
  DeviceInfo gpu;
  gpu.is_gpu = true;
  gpu.sm_count = 132;
  gpu.global_mem_bytes = int64_t(80) << 30;
  const SuitePlan plan = plan_suite(suite, gpu, {}, false);
  ASSERT_FALSE(plan.groups.empty());
  const auto& rows = plan.groups[0].rows;
  ASSERT_GE(rows.size(), 3u);
  EXPECT_EQ(rows[0].overrides, (Params{{"block", 128}}));  // round(132*0.97) = 128
  EXPECT_EQ(rows[1].overrides, (Params{{"block", 64}}));
  EXPECT_EQ(rows[2].overrides.at("block"), 64);  // "all" starts with the axis' first value
}

// A suite case that names no variant this binary has is a typo, not a refused row (it exited
// 0; a bad-input audit at 04dfbaa); a parameter expression beyond 64 bits is no parameter.
TEST(SuitePlan, CasesMustNameKnownVariantsAndParametersInRange) {
  const SuiteDefinition bogus = parse_suite(nlohmann::ordered_json::parse(R"({
      "cases": [{"dims": [4], "k": ["3"], "points": ["1000"], "variants": ["cpu-openmp", "bogus"]}]})"),
                                            "t");
  try {
    plan_suite(bogus, DeviceInfo{}, {}, false);
    ADD_FAILURE() << "a case naming 'bogus' was planned";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("bogus"), std::string::npos) << error.what();
  }
  if (!Registry::instance().find("naive-atomics")) GTEST_SKIP() << "needs naive-atomics";
  const SuiteDefinition huge = parse_suite(nlohmann::ordered_json::parse(R"({
      "cases": [{"dims": [4], "k": ["3"], "points": ["1000"], "variants": ["naive-atomics"],
                 "params": {"block": ["99999999999999999999*99999999999"]}}]})"),
                                           "t");
  DeviceInfo gpu;
  gpu.is_gpu = true;
  gpu.sm_count = 132;
  gpu.global_mem_bytes = int64_t(80) << 30;
  try {
    plan_suite(huge, gpu, {}, false);
    ADD_FAILURE() << "block=1e31 was planned";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("2^62 or more"), std::string::npos) << error.what();
  }
}

TEST(SuitePlan, VariantFilterMustNameKnownVariants) {
  const SuiteDefinition suite = parse_suite(nlohmann::ordered_json::parse(R"({
      "cases": [{"dims": [4], "k": ["3"], "points": ["1000"], "variants": ["cpu-openmp"]}]})"),
                                            "t");
  EXPECT_THROW(plan_suite(suite, DeviceInfo{}, {"definitely-not-a-variant"}, false), InputError);
}

// ------------------------------------------------------------ the binary

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

class BinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "mkbench-cli-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    setenv("MKBENCH_CACHE_DIR", (dir_ + "/cache").c_str(), 1);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(BinaryTest, NoCommandIsBadInput) { EXPECT_EQ(run_mkbench("").code, kExitBadInput); }

TEST_F(BinaryTest, UnknownOptionIsBadInput) { EXPECT_EQ(run_mkbench("run --variant cpu-openmp --frobnicate").code, kExitBadInput); }

TEST_F(BinaryTest, UnknownVariantIsBadInput) {
  const Outcome o = run_mkbench("run --variant no-such-variant --points 100 --dims 2 --k 3");
  EXPECT_EQ(o.code, kExitBadInput) << o.output;
  EXPECT_NE(o.output.find("unknown variant"), std::string::npos) << o.output;
}

TEST_F(BinaryTest, UnknownSuiteListsKnownSuites) {
  const Outcome o = run_mkbench("--suite no-such-suite");
  EXPECT_EQ(o.code, kExitBadInput) << o.output;
  EXPECT_NE(o.output.find("known:"), std::string::npos) << o.output;
}

TEST_F(BinaryTest, KAboveMIsBadInput) {
  const Outcome o = run_mkbench("run --variant cpu-openmp --points 4 --dims 2 --k 5");
  EXPECT_EQ(o.code, kExitBadInput) << o.output;
  EXPECT_NE(o.output.find("exceeds"), std::string::npos) << o.output;
}

TEST_F(BinaryTest, KBelowOneIsBadInput) {
  EXPECT_EQ(run_mkbench("run --variant cpu-openmp --points 100 --dims 2 --k 0").code, kExitBadInput);
}

TEST_F(BinaryTest, NBelowOneIsBadInput) {
  EXPECT_EQ(run_mkbench("run --variant cpu-openmp --points 100 --dims 0 --k 3").code, kExitBadInput);
}

// CLI11 reads a 64-bit seed with strtoull, which took -1 for 2^64 - 1.
TEST_F(BinaryTest, NegativeSeedIsBadInput) {
  for (const char* command : {"run --variant cpu-openmp --points 100 --dims 2 --k 3 --iters 1 --seed -1",
                              "fit --dataset uniform --points 100 --dims 2 --k 3 --quiet --seed -1"}) {
    const Outcome o = run_mkbench(command);
    EXPECT_EQ(o.code, kExitBadInput) << command << "\n" << o.output;
    EXPECT_NE(o.output.find("--seed"), std::string::npos) << command << "\n" << o.output;
  }
}

// An empty output path read as "not given": the command wrote nothing and exited 0.
TEST_F(BinaryTest, EmptyOutputPathIsBadInput) {
  for (const char* command : {"run --variant cpu-openmp --points 100 --dims 2 --k 3 --iters 1 --out ''",
                              "fit --dataset uniform --points 100 --dims 2 --k 3 --quiet --out ''",
                              "seed --dataset uniform --points 100 --dims 2 --k 3 --centroids-out ''"}) {
    const Outcome o = run_mkbench(command);
    EXPECT_EQ(o.code, kExitBadInput) << command << "\n" << o.output;
    EXPECT_NE(o.output.find("empty path"), std::string::npos) << command << "\n" << o.output;
  }
}

// Ordinal 0 is the host CPU on a machine without a GPU (every CPU run's default); any other
// ordinal names a GPU that is not there, on such a machine and on one with fewer GPUs alike.
TEST_F(BinaryTest, DeviceOrdinalBeyondTheGpusIsBadInput) {
  const Outcome o = run_mkbench("run --variant cpu-openmp --points 100 --dims 2 --k 3 --iters 1 --device 4097");
  EXPECT_EQ(o.code, kExitBadInput) << o.output;
  const bool named = o.output.find("names GPUs, and this machine has none") != std::string::npos ||
                     o.output.find("does not exist") != std::string::npos;
  EXPECT_TRUE(named) << o.output;
  EXPECT_EQ(run_mkbench("run --variant cpu-openmp --points 100 --dims 2 --k 3 --iters 1 --device cpu").code, kExitOk);
  // The commands of one device (seed, quantize, explore) alike.
  const Outcome seed = run_mkbench("seed --dataset uniform --points 100 --dims 2 --k 3 --device 4097");
  EXPECT_EQ(seed.code, kExitBadInput) << seed.output;
  EXPECT_NE(seed.output.find("--device 4097"), std::string::npos) << seed.output;
}

TEST_F(BinaryTest, BadLayoutIsRejected) {
  const Outcome o = run_mkbench("run --variant cpu-openmp --points 100 --dims 2 --k 3 --layout diagonal");
  EXPECT_TRUE(o.code == kExitBadInput || o.code == kExitUnsupported) << o.code << "\n" << o.output;
  EXPECT_NE(o.output.find("layout"), std::string::npos) << o.output;
}

TEST_F(BinaryTest, GpuVariantWithoutGpuIsUnsupported) {
  if (gpu_count() > 0) GTEST_SKIP() << "this machine has a GPU";
  const Outcome o = run_mkbench("run --variant naive-atomics --points 1000 --dims 4 --k 3");
  EXPECT_EQ(o.code, kExitUnsupported) << o.output;
  EXPECT_NE(o.output.find("GPU"), std::string::npos) << o.output;
}

TEST_F(BinaryTest, CpuRunWithVerifyWritesPassingRows) {
  const std::string out = dir_ + "/run.json";
  const Outcome o = run_mkbench("run --variant cpu-openmp --points 1000 --dims 4 --k 3..5 --iters 10 --verify --out " + out);
  ASSERT_EQ(o.code, kExitOk) << o.output;
  const ResultFile file = load_results(out);
  ASSERT_EQ(file.rows.size(), 1u);
  const ResultRow& row = file.rows[0];
  EXPECT_EQ(row.status, "ok") << row.reason;
  EXPECT_EQ(row.name.rfind("cpu-openmp/4/3..5/1000/", 0), 0u) << row.name;
  EXPECT_EQ(row.timing.clock, "steady-clock");
  EXPECT_EQ(row.timing.samples_ms.size(), 10u);
  EXPECT_EQ(row.summary.count, 10);
  ASSERT_TRUE(row.verified());
  EXPECT_TRUE(row.verify.at("passed").get<bool>());
  EXPECT_TRUE(row.verify.at("final_step").at("passed").get<bool>());
  EXPECT_GT(row.metrics.gops, 0);
}

TEST_F(BinaryTest, JsonFormatPrintsAResultsDocument) {
  const Outcome o = run_mkbench("run --variant cpu-openmp --points 500 --dims 2 --k 3 --iters 10 --format json 2>/dev/null");
  ASSERT_EQ(o.code, kExitOk) << o.output;
  const auto doc = nlohmann::json::parse(o.output);
  EXPECT_EQ(doc.at("schema"), "mkbench.results/2");
  EXPECT_EQ(doc.at("rows").size(), 1u);
}

TEST_F(BinaryTest, SmokeSuiteRunsAndKeepsItsRows) {
  if (!embedded_suites().count("smoke")) GTEST_SKIP() << "no smoke suite embedded in this build";
  const std::string out = dir_ + "/smoke.json";
  const Outcome o = run_mkbench("--suite smoke --quick --no-peak-measure --out " + out);
  ASSERT_EQ(o.code, kExitOk) << o.output;
  const ResultFile file = load_results(out);
  EXPECT_FALSE(file.rows.empty());
  ASSERT_TRUE(file.suite.has_value());
  EXPECT_EQ(*file.suite, "smoke");
  for (const auto& row : file.rows) EXPECT_NE(row.status, "failed") << row.name << ": " << row.reason;
}

// table2 leaves verification off (its M=32M rows would each need two FP64 reference steps);
// --verify turns it on for every planned row.
TEST_F(BinaryTest, SuiteVerifyFlagChecksEveryRowOfASuiteThatLeavesItOff) {
  const std::string plan = "--suite table2 --quick --dry-run --no-peak-measure";
  const Outcome plain = run_mkbench(plan + " 2>/dev/null");
  ASSERT_EQ(plain.code, kExitOk) << plain.output;
  EXPECT_EQ(plain.output.find(", verify)"), std::string::npos) << plain.output;
  const Outcome verified = run_mkbench(plan + " --verify 2>/dev/null");
  ASSERT_EQ(verified.code, kExitOk) << verified.output;
  size_t rows = 0, verified_rows = 0;
  std::istringstream lines(verified.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("[", 0) != 0) continue;
    ++rows;
    if (line.find(", verify)") != std::string::npos) ++verified_rows;
  }
  EXPECT_GT(rows, 0u) << verified.output;
  EXPECT_EQ(verified_rows, rows) << verified.output;
}

TEST_F(BinaryTest, VerifyMatrixPartsMergeIntoOneMatrix) {
  const std::string a = dir_ + "/a.json", b = dir_ + "/b.json";
  const std::string common = "verify-matrix --variants cpu-openmp --k 3..5 --points 1000 ";
  ASSERT_EQ(run_mkbench(common + "--dims 2 --out " + a).code, kExitOk);
  ASSERT_EQ(run_mkbench(common + "--dims 4 --out " + b).code, kExitOk);
  const Outcome merged = run_mkbench("verify-matrix --merge " + a + " " + b);
  ASSERT_EQ(merged.code, kExitOk) << merged.output;
  EXPECT_NE(merged.output.find("| N=2 K=3..5 M=1000 | ✓ |"), std::string::npos) << merged.output;
  EXPECT_NE(merged.output.find("| N=4 K=3..5 M=1000 | ✓ |"), std::string::npos) << merged.output;
  EXPECT_NE(merged.output.find("2 passed, 0 failed"), std::string::npos) << merged.output;
  // A re-verified cell counts once, with the later file's result, and says so: a copy of
  // `a` whose cell failed wins when it comes last and loses when it comes first.
  std::string text;
  {
    std::ifstream in(a);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const std::string check = "\"mark\": \"✓\"";
  ASSERT_NE(text.find(check), std::string::npos) << text;
  text.replace(text.find(check), check.size(), "\"mark\": \"✗\"");
  const std::string failed = dir_ + "/a-failed.json";
  std::ofstream(failed) << text;
  const Outcome failed_last = run_mkbench("verify-matrix --merge " + a + " " + b + " " + failed);
  EXPECT_EQ(failed_last.code, kExitVerifyFailed) << failed_last.output;
  EXPECT_NE(failed_last.output.find("| N=2 K=3..5 M=1000 | ✗ |"), std::string::npos) << failed_last.output;
  EXPECT_NE(failed_last.output.find("1 passed, 1 failed"), std::string::npos) << failed_last.output;
  EXPECT_NE(failed_last.output.find("re-verified"), std::string::npos) << failed_last.output;
  const Outcome passed_last = run_mkbench("verify-matrix --merge " + failed + " " + b + " " + a);
  EXPECT_EQ(passed_last.code, kExitOk) << passed_last.output;
  EXPECT_NE(passed_last.output.find("2 passed, 0 failed"), std::string::npos) << passed_last.output;
}

TEST_F(BinaryTest, VerifyMatrixMergeKeepsTheKAboveMRows) {
  const std::string a = dir_ + "/a.json";
  ASSERT_EQ(run_mkbench("verify-matrix --variants cpu-openmp --dims 2 --k 3,2000 --points 1000 --out " + a).code,
            kExitOk);
  const Outcome merged = run_mkbench("verify-matrix --merge " + a);
  ASSERT_EQ(merged.code, kExitOk) << merged.output;
  EXPECT_NE(merged.output.find("| N=2 K=2000 M=1000 | K > M"), std::string::npos) << merged.output;
}

// A matrix that can verify nothing is bad input, not "0 passed" and exit 0 (a bad-input audit
// at 04dfbaa): every K above M, no step to verify, no reference work allowed.
TEST_F(BinaryTest, VerifyMatrixThatVerifiesNothingIsBadInput) {
  const std::string common = "verify-matrix --variants cpu-openmp --dims 2 --points 1000 ";
  for (const std::string& arguments : {common + "--k 5000", common + "--k 3 --iterations 0",
                                       common + "--k 3 --max-reference-work -1"}) {
    const Outcome outcome = run_mkbench(arguments);
    EXPECT_EQ(outcome.code, kExitBadInput) << arguments << "\n" << outcome.output;
  }
}

TEST_F(BinaryTest, VerifyMatrixMergeOfATruncatedFileIsBadInput) {
  const std::string a = dir_ + "/a.json";
  ASSERT_EQ(run_mkbench("verify-matrix --variants cpu-openmp --dims 2 --k 3 --points 1000 --out " + a).code, kExitOk);
  const auto size = fs::file_size(a);
  fs::resize_file(a, size / 2);
  const Outcome merged = run_mkbench("verify-matrix --merge " + a);
  EXPECT_EQ(merged.code, kExitBadInput) << merged.output;
  EXPECT_NE(merged.output.find("truncated"), std::string::npos) << merged.output;
}

}  // namespace
}  // namespace mk

namespace mk {
namespace {

TEST(Table1View, DerivesPointsPerThreadMarksBestAndAlignsPublishedRows) {
  auto make_row = [](nlohmann::json params, double median_ms) {
    ResultRow row;
    row.variant = "registers-multik";
    row.problem.n = 8;
    row.problem.k = KRange{3, 7};
    row.problem.m = int64_t(1) << 25;
    row.params = std::move(params);
    row.summary.median_ms = median_ms;
    return row;
  };
  std::vector<ResultRow> rows = {make_row({{"block", 256}, {"grid", 132}, {"ppt", 0}}, 2.0),
                                 make_row({{"block", 256}, {"grid", 0}, {"ppt", 1}}, 1.5)};
  const auto published = nlohmann::json::parse(
      R"({"rows": [{"grid": 40, "points_per_thread": 3277, "time_ms": 134.49, "gops": 737.74}]})");
  const TextTable table = table1_view(rows, published);
  ASSERT_EQ(table.rows.size(), 2u);
  ASSERT_EQ(table.header.size(), 10u);
  EXPECT_EQ(table.rows[0][0], "132");
  EXPECT_EQ(table.rows[0][1], "993");  // ceil(2^25 / (132*256))
  EXPECT_EQ(table.rows[1][0], "131072");  // grid derived from ppt=1: 2^25/256
  EXPECT_EQ(table.rows[1][1], "1");
  EXPECT_EQ(table.rows[0][5], "");
  EXPECT_EQ(table.rows[1][5], "*");
  EXPECT_EQ(table.rows[0][6], "40");
  EXPECT_EQ(table.rows[0][8], "134.49");
  EXPECT_EQ(table.rows[1][6], "");  // no published row to pair with
}

TEST(Table1View, WithoutPublishedDataHasNoT4Columns) {
  ResultRow row;
  row.params = {{"grid", 1}, {"block", 256}};
  row.problem.m = 1000;
  EXPECT_EQ(table1_view({row}, nullptr).header.size(), 6u);
}

}  // namespace
}  // namespace mk
