// k-means++ quality against scikit-learn (issue 31's check): over 20 seeds, on blobs and on a
// small real data set (scikit-learn's bundled digits, 1797 x 64), the mean inertia after Lloyd
// to convergence is within 1 % of scikit-learn's greedy k-means++ followed by its Lloyd on the
// same data (its mean over 60 seeds). The reference numbers are computed here, by tests/sklearn_kmeanspp.py (Debian's
// python3-sklearn), never committed. Our Lloyd is cpu-openmp's step API (variants/step.hpp)
// with scikit-learn's tolerance and empty-cluster relocation.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/seeding/seeding.hpp"
#include "core/device_info.hpp"
#include "datasets/dataset.hpp"
#include "seeding_test_support.hpp"
#include "variants/variant.hpp"

namespace mk {
namespace {

namespace fs = std::filesystem;
using seeding_test::mean;
using seeding_test::potential_fp64;

constexpr int kSeeds = 20;
// scikit-learn's mean is the yardstick, so it is taken over more seeds: over 20 its own
// standard error was 0.27 % on the blobs below (heavy-tailed: 2 of 200 fits end 6 % high), and
// seeds 0..19 alone came out 0.9 % above its 200-seed mean. Over 60 the error is about 0.15 %.
constexpr int kReferenceSeeds = 60;

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// (exit code, stdout)
std::pair<int, std::string> run(const std::string& command) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return {-1, output};
  char buffer[4096];
  size_t got = 0;
  while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, got);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// $MKBENCH_PYTHON, else the first of python3, /usr/bin/python3 that imports sklearn (a pyenv
// python3 often cannot see Debian's python3-sklearn). Empty if none.
std::string python_with_sklearn() {
  std::vector<std::string> candidates;
  if (const char* chosen = std::getenv("MKBENCH_PYTHON")) candidates.push_back(chosen);
  candidates.push_back("python3");
  candidates.push_back("/usr/bin/python3");
  for (const auto& python : candidates)
    if (run(shell_quote(python) + " -c 'import sklearn' >/dev/null 2>&1").first == 0) return python;
  return "";
}

const std::string kScript = std::string(MKBENCH_SOURCE_DIR) + "/tests/sklearn_kmeanspp.py";

struct Outcomes {
  std::vector<double> seeding;  // potential of the k-means++ centres
  std::vector<double> final;    // inertia after Lloyd to convergence
};

Outcomes sklearn_outcomes(const std::string& python, const std::string& npy, int k) {
  const auto [code, output] = run(shell_quote(python) + " " + shell_quote(kScript) + " --data " + shell_quote(npy) +
                                  " --k " + std::to_string(k) + " --seeds " + std::to_string(kReferenceSeeds));
  if (code != 0) throw std::runtime_error("sklearn_kmeanspp.py failed: " + output);
  const nlohmann::json result = nlohmann::json::parse(output);
  return {result.at("seeding_potential").get<std::vector<double>>(), result.at("final_inertia").get<std::vector<double>>()};
}

// scikit-learn's tol: relative to the mean per-feature variance of the data.
double absolute_tolerance(const Dataset& data, double tol) {
  double total = 0;
  for (int d = 0; d < data.n; ++d) {
    double sum = 0, squares = 0;
    for (int64_t i = 0; i < data.m; ++i) {
      sum += data.at(i, d);
      squares += double(data.at(i, d)) * data.at(i, d);
    }
    const double mean_d = sum / double(data.m);
    total += squares / double(data.m) - mean_d * mean_d;
  }
  return tol * total / data.n;
}

// Lloyd from `centres` until the centroids move less than tol (squared, summed) or 300 steps,
// with scikit-learn's empty-cluster relocation; the final centroids.
std::vector<float> lloyd(const Dataset& data, int k, const std::vector<float>& centres) {
  const Variant& cpu = Registry::instance().get("cpu-openmp");
  Problem problem;
  problem.m = data.m;
  problem.n = data.n;
  problem.k = KRange{k, k};
  const DeviceInfo host = query_host_cpu();
  auto run = cpu.prepare(problem, data, resolve_params(cpu, problem, host, Params::object()), host);
  run->set_centroids(centres);
  const double tol = absolute_tolerance(data, 1e-4);
  UpdateOptions update;
  update.empty = EmptyPolicy::Farthest;
  for (int step = 0; step < 300; ++step) {
    run->accumulate(AccumulateOptions{});
    if (run->update(update).per_k.at(0).shift <= tol) break;
  }
  return run->read_back().per_k.at(0).centroids;
}

Outcomes our_outcomes(const Dataset& data, int k, const std::string& method) {
  Outcomes out;
  for (int seed = 0; seed < kSeeds; ++seed) {
    SeedingOptions options;
    options.method = method;
    options.seed = uint64_t(seed);
    const std::vector<float> centres = seed_centroids(data, KRange{k, k}, options, query_host_cpu()).packed;
    out.seeding.push_back(potential_fp64(data, centres.data(), k));
    const std::vector<float> final = lloyd(data, k, centres);
    out.final.push_back(potential_fp64(data, final.data(), k));
  }
  return out;
}

class KmeansppQuality : public ::testing::Test {
 protected:
  void SetUp() override {
    python_ = python_with_sklearn();
    if (python_.empty())
      GTEST_SKIP() << "no python3 with scikit-learn (install python3-sklearn: scripts/setup.sh does), or set "
                      "MKBENCH_PYTHON";
    std::string pattern = (fs::temp_directory_path() / "mkbench-quality-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    if (!dir_.empty()) fs::remove_all(dir_, ignored);
  }

  // `method`'s mean final inertia within 1 % of scikit-learn's k-means++ then Lloyd; its seeding
  // potential within 3 % of scikit-learn's for k-means++, not more than 5 % above it for k-means||
  // (a different distribution: Bahmani et al. find its seedings as good or better).
  void check(const Dataset& data, int k, const std::string& what, const std::string& method = "k-means++") {
    const std::string npy = dir_ + "/data.npy";
    save_npy(npy, data);
    const Outcomes reference = sklearn_outcomes(python_, npy, k);
    const Outcomes ours = our_outcomes(data, k, method);
    const double final_ratio = mean(ours.final) / mean(reference.final);
    const double seeding_ratio = mean(ours.seeding) / mean(reference.seeding);
    std::printf("%s K=%d, %s: mean final inertia %.6g (scikit-learn %.6g, ratio %.4f); mean seeding potential %.6g "
                "(scikit-learn %.6g, ratio %.4f)\n",
                what.c_str(), k, method.c_str(), mean(ours.final), mean(reference.final), final_ratio,
                mean(ours.seeding), mean(reference.seeding), seeding_ratio);
    EXPECT_NEAR(final_ratio, 1.0, 0.01) << what;
    if (method != "k-means++") {
      EXPECT_LT(seeding_ratio, 1.05) << what;
      return;
    }
    // The seeding's own potential separates good seedings from bad ones far better than the
    // inertia after Lloyd does (random seeding is 18 % worse on digits before Lloyd, about 1 %
    // after). Its mean over 20 seeds varies by about 0.5 % (standard error, scikit-learn on
    // digits), so 3 % is six of them.
    EXPECT_NEAR(seeding_ratio, 1.0, 0.03) << what;
    // ... and the check has teeth: random seeding fails it on these data.
    const Outcomes random = our_outcomes(data, k, "random");
    const double random_ratio = mean(random.seeding) / mean(reference.seeding);
    std::printf("%s K=%d: random seeding potential ratio %.4f\n", what.c_str(), k, random_ratio);
    EXPECT_GT(random_ratio, 1.06) << what << ": random seeding would pass the seeding check on these data";
  }

  // scikit-learn's bundled digits (1797 x 64), exported by tests/sklearn_kmeanspp.py.
  Dataset digits() {
    const std::string npy = dir_ + "/digits.npy";
    const auto [code, output] = run(shell_quote(python_) + " " + shell_quote(kScript) + " --export-digits " +
                                    shell_quote(npy) + " 2>&1");
    EXPECT_EQ(code, 0) << output;
    Dataset data = load_npy(npy);
    EXPECT_EQ(data.m, 1797);
    EXPECT_EQ(data.n, 64);
    return data;
  }

  std::string python_;
  std::string dir_;
};

// The two data sets of the checks: well-separated blobs, and scikit-learn's bundled digits.
Dataset twelve_blobs() {
  GeneratorSpec spec;
  spec.kind = "blobs";
  spec.m = 8000;
  spec.n = 2;
  spec.centers = 12;
  spec.spread = 2.5;
  spec.seed = 31;
  return generate(spec);
}
constexpr const char* kBlobs = "blobs 8000 x 2, 12 centres, spread 2.5";

TEST_F(KmeansppQuality, BlobsMatchScikitLearn) { check(twelve_blobs(), 12, kBlobs); }

TEST_F(KmeansppQuality, KmeansParallelOnBlobsMatchesScikitLearnsKmeansPlusPlus) {
  check(twelve_blobs(), 12, kBlobs, "k-means||");
}

TEST_F(KmeansppQuality, DigitsMatchScikitLearn) { check(digits(), 10, "digits 1797 x 64"); }

TEST_F(KmeansppQuality, KmeansParallelOnDigitsMatchesScikitLearnsKmeansPlusPlus) {
  check(digits(), 10, "digits 1797 x 64", "k-means||");
}

}  // namespace
}  // namespace mk
