// The CUDA subset engine on a GPU (variants/subset_batch/), against the independent FP64
// Lloyd of tests/subset_reference.hpp, tie-aware: the engine's FP32 distance key may send a
// point whose two nearest centroids are within its rounding to either (docs/explore.md,
// Precision), and nothing else may differ. Skips with "no CUDA GPU: ..." without one;
// tests/device.sh stage explore runs these.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "apps/explore/explore.hpp"
#include "apps/explore/subsets.hpp"
#include "core/device_info.hpp"
#include "datasets/susy.hpp"
#include "harness/reference.hpp"
#include "subset_reference.hpp"
#include "variants/subset_batch/subset_batch.hpp"

namespace mk {
namespace {

using testing_support::reference_copy;

#define REQUIRE_GPU() \
  if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU: " << no_gpu_reason()

struct DeviceCase {
  int64_t m;
  int n, s, k;
  int64_t copies;
  std::string spec;
};

std::string case_name(const DeviceCase& c) {
  return "M" + std::to_string(c.m) + "_N" + std::to_string(c.n) + "_S" + std::to_string(c.s) + "_K" +
         std::to_string(c.k) + "_B" + std::to_string(c.copies);
}

// M not a multiple of 4 or of a tile, more problems than one block (256), several chunks of
// rows (50,000 rows and few blocks of problems), S from 1 to 6, K up to 16.
const DeviceCase kCases[] = {
    {1003, 18, 3, 8, 300, "susy"},
    {50000, 18, 3, 8, 256, "susy"},
    {4097, 7, 2, 5, 70, "susy:informative=1,3"},
    {20001, 10, 6, 16, 40, "susy:informative=0,4,8"},
    {3001, 5, 1, 3, 20, "susy:informative=2"},
};

struct Fixture {
  SusyTable table;
  batch::SubsetProblems problems;
  std::vector<double> spread;  // per attribute
};

Fixture make_fixture(const DeviceCase& c, int copies_scale = 1) {
  Fixture f;
  f.table = generate_susy(parse_susy_spec(c.spec, c.m, c.n, 5));
  f.problems.s = c.s;
  f.problems.k = c.k;
  f.problems.count = c.copies * copies_scale;
  f.problems.columns = explore::random_subsets(c.n, c.s, f.problems.count, 9);
  f.problems.centroids = explore::initial_centroids(f.table.data, f.problems.columns, c.s, c.k, 9);
  f.problems.thresholds.assign(size_t(f.problems.count), 0.0);
  f.spread = column_spread(f.table.data);
  return f;
}

// The score of a copy whose last step was its first, against the reference's (its assignment
// to the initial centroids, and that partition's inertia about its means): a point counts as a
// tie when its two nearest distances differ by at most 1e-4 of the larger (FP32 keys of centred
// data are good to about 1e-6 of it), and the counts may differ by at most two per tie. The
// test fails, not passes, if ties are more than 1 % of the rows. `cells` = max(classes, 1).
void expect_score_matches(const Fixture& f, const batch::SubsetOutcome& got, int64_t b,
                          const testing_support::CopyReference& want, int cells) {
  const int k = f.problems.k;
  int64_t ties = 0;
  for (size_t i = 0; i < want.best.size(); ++i) ties += want.second[i] - want.best[i] <= 1e-4 * want.second[i];
  ASSERT_LE(ties, f.table.data.m / 100) << "too many near-ties for a meaningful check";
  int64_t differ = 0;
  for (int i = 0; i < k * cells; ++i)
    differ += std::llabs(got.class_counts[size_t(b * k * cells + i)] - want.class_counts[size_t(i)]);
  EXPECT_LE(differ, 2 * ties) << "copy " << b << ": class counts differ by " << differ << " with " << ties << " ties";
  EXPECT_NEAR(got.inertia[size_t(b)], want.inertia, 1e-4 * want.inertia + 1e-3) << "copy " << b;
}

class SubsetBatchDevice : public ::testing::TestWithParam<DeviceCase> {};

TEST_P(SubsetBatchDevice, OneStepMatchesTheFp64ReferenceTieAware) {
  REQUIRE_GPU();
  const Fixture f = make_fixture(GetParam());
  const DeviceInfo device = query_device(0);
  const batch::SharedTable table{&f.table.data, &f.table.labels, 2};
  auto run = batch::subset_engine("cuda").prepare(table, f.problems, device);
  const batch::SubsetOutcome got = batch::solve_subsets(*run, 1);
  const int s = f.problems.s, k = f.problems.k;
  for (int64_t b = 0; b < f.problems.count; ++b) {
    const auto want = reference_copy(f.table.data, f.table.labels, 2, f.problems.columns.data() + b * s, s, k,
                                     f.problems.centroids.data() + b * k * s, 0.0, 1);
    EXPECT_EQ(got.steps[size_t(b)], 1);
    // FP32 sums of up to 2^24 centred values per chunk, and a tie flip moving a centroid by
    // one point's share: 2e-3 of the attribute's spread covers both; a wrong column, row or
    // cluster is off by a tenth of it or more.
    for (int j = 0; j < k; ++j)
      for (int d = 0; d < s; ++d) {
        const double spread = f.spread[size_t(f.problems.columns[size_t(b * s + d)])];
        ASSERT_NEAR(got.centroids[size_t((b * k + j) * s + d)], want.centroids[size_t(j * s + d)], 2e-3 * spread)
            << "copy " << b << " cluster " << j << " column " << d;
      }
    expect_score_matches(f, got, b, want, 2);
  }
}

// Three classes score in a pass of their own over the centroids the last step started from
// (a pass over the moved centroids would count a different assignment); no labels count the
// clusters' sizes in the step. Two classes ride in the step's count lane (the test above).
TEST_P(SubsetBatchDevice, ThreeClassesAndNoLabelsScoreTheLastStep) {
  REQUIRE_GPU();
  const Fixture f = make_fixture(GetParam());
  const int s = f.problems.s, k = f.problems.k;
  const int64_t m = f.table.data.m;
  std::vector<int32_t> three(static_cast<size_t>(m)), none(static_cast<size_t>(m), 0);
  for (int64_t i = 0; i < m; ++i) three[size_t(i)] = int32_t((i * 7 + f.table.labels[size_t(i)]) % 3);
  for (int classes : {3, 0}) {
    SCOPED_TRACE("classes " + std::to_string(classes));
    const batch::SharedTable table{&f.table.data, classes ? &three : nullptr, classes};
    auto run = batch::subset_engine("cuda").prepare(table, f.problems, query_device(0));
    const batch::SubsetOutcome got = batch::solve_subsets(*run, 1);
    EXPECT_EQ(got.classes, classes);
    for (int64_t b = 0; b < f.problems.count; ++b) {
      const auto want = reference_copy(f.table.data, classes ? three : none, std::max(classes, 1),
                                       f.problems.columns.data() + b * s, s, k,
                                       f.problems.centroids.data() + b * k * s, 0.0, 1);
      expect_score_matches(f, got, b, want, std::max(classes, 1));
    }
  }
}

TEST_P(SubsetBatchDevice, FrozenCopiesStopAndTheRestGoOn) {
  REQUIRE_GPU();
  Fixture f = make_fixture(GetParam());
  // Odd copies converge after their first step (the largest threshold); even ones only when
  // their centroids stop moving exactly (threshold 0: a repeated assignment gives the same
  // sums in the same order, so the shift is 0), which random starts do not do in one step.
  for (int64_t b = 0; b < f.problems.count; ++b)
    f.problems.thresholds[size_t(b)] = b % 2 ? std::numeric_limits<double>::max() : 0.0;
  const batch::SharedTable table{&f.table.data, &f.table.labels, 2};
  auto run = batch::subset_engine("cuda").prepare(table, f.problems, query_device(0));
  const batch::SubsetOutcome got = batch::solve_subsets(*run, 3);
  const int s = f.problems.s, k = f.problems.k;
  int64_t went_on = 0;
  for (int64_t b = 0; b < f.problems.count; ++b) {
    if (b % 2 == 0) {
      EXPECT_GE(got.steps[size_t(b)], 2) << "copy " << b;
      EXPECT_TRUE(got.steps[size_t(b)] == 3 || got.converged[size_t(b)]) << "copy " << b;
      went_on += got.steps[size_t(b)] == 3;
      continue;
    }
    EXPECT_EQ(got.steps[size_t(b)], 1) << "copy " << b;
    EXPECT_TRUE(got.converged[size_t(b)]) << "copy " << b;
    // A frozen copy keeps its one-step centroids while the others step on.
    const auto want = reference_copy(f.table.data, f.table.labels, 2, f.problems.columns.data() + b * s, s, k,
                                     f.problems.centroids.data() + b * k * s, 0.0, 1);
    for (int i = 0; i < k * s; ++i)
      ASSERT_NEAR(got.centroids[size_t(b * k * s + i)], want.centroids[size_t(i)],
                  2e-3 * f.spread[size_t(f.problems.columns[size_t(b * s + i % s)])])
          << "copy " << b;
    expect_score_matches(f, got, b, want, 2);  // its own last step's, not the others'

  }
  EXPECT_GT(went_on, 0) << "no copy took all three steps";
}

INSTANTIATE_TEST_SUITE_P(Subsets, SubsetBatchDevice, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return case_name(info.param); });

TEST(ExploreDevice, RanksThePlantedSubsetFirstAndAgreesWithTheCpu) {
  REQUIRE_GPU();
  explore::ExploreOptions options;
  options.dataset = "susy:informative=1,4,6:correlated=2:shift=1.5";
  options.points = "200003";
  options.dims = 10;
  options.all = true;  // 120 subsets
  options.k = 8;
  options.max_iter = 5;
  options.seed = 3;
  options.quiet = true;
  options.baseline = false;
  std::ostringstream log;
  options.engine = "cuda";
  const nlohmann::json gpu = explore::run_explore(options, log);
  options.engine = "cpu-openmp";
  const nlohmann::json cpu = explore::run_explore(options, log);
  EXPECT_EQ(gpu.at("engine").at("name"), "cuda");
  EXPECT_EQ(gpu.at("subsets")[0].at("columns"), nlohmann::json({1, 4, 6}));
  EXPECT_EQ(cpu.at("subsets")[0].at("columns"), nlohmann::json({1, 4, 6}));
  // Five steps from the same start: a tie flip may move a copy's path a little, never far.
  const auto& a = gpu.at("accuracy_by_copy");
  const auto& b = cpu.at("accuracy_by_copy");
  ASSERT_EQ(a.size(), b.size());
  std::vector<double> gaps;
  for (size_t i = 0; i < a.size(); ++i) gaps.push_back(std::fabs(a[i].get<double>() - b[i].get<double>()));
  std::sort(gaps.begin(), gaps.end());
  EXPECT_LE(gaps[gaps.size() / 2], 1e-4) << "median accuracy gap between the engines";
  EXPECT_LE(gaps.back(), 1e-2) << "largest accuracy gap between the engines";
}

}  // namespace
}  // namespace mk
