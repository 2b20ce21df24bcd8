// `mkbench fit --weights`: the weight file's checks (exit 2 with a message naming --weights),
// and weighted k-means++ against its definition (D² sampling of w·D², first centre ∝ w).
// The weighted Lloyd itself is checked against scikit-learn by tests/fit_weighted_vs_sklearn.py
// (ctest FitWeightedVsSklearn.*).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "apps/fit/sample_weights.hpp"
#include "apps/seeding/kmeanspp.hpp"
#include "core/errors.hpp"
#include "datasets/dataset.hpp"
#include "tests/process_helpers.hpp"
#include "tests/seeding_test_support.hpp"

namespace mk {
namespace {

using testing_support::run_mkbench_args;
using testing_support::TempFolder;

// A .npy file of `count` values of `descr` ('<f4' or '<f8') and shape text like "(5,)".
std::string npy_file(const std::string& descr, const std::string& shape, const std::vector<double>& values) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string file = "\x93NUMPY";
  file += char(1);
  file += char(0);
  file += char(header.size() & 0xff);
  file += char(header.size() >> 8);
  file += header;
  for (double v : values) {
    if (descr == "<f4") {
      const float f = float(v);
      file.append(reinterpret_cast<const char*>(&f), 4);
    } else {
      file.append(reinterpret_cast<const char*>(&v), 8);
    }
  }
  return file;
}

std::string message_of(const std::string& bytes, int64_t m) {
  try {
    parse_sample_weights(bytes, "w.npy", m);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST(SampleWeights, ReadsFloat32AndFloat64VectorsAndColumns) {
  EXPECT_EQ(parse_sample_weights(npy_file("<f8", "(3,)", {1.0, 0.0, 2.5}), "w", 3), (std::vector<float>{1, 0, 2.5f}));
  EXPECT_EQ(parse_sample_weights(npy_file("<f4", "(3, 1)", {0.5, 1.0, 2.0}), "w", 3),
            (std::vector<float>{0.5f, 1, 2}));
}

TEST(SampleWeights, RefusesWhatIsNotOneFiniteNonNegativeWeightPerPoint) {
  EXPECT_NE(message_of(npy_file("<f8", "(3,)", {1, 2, 3}), 4).find("3 weights for 4 points"), std::string::npos);
  EXPECT_NE(message_of(npy_file("<f8", "(3,)", {1, -2, 3}), 3).find("finite and non-negative"), std::string::npos);
  EXPECT_NE(message_of(npy_file("<f8", "(3,)", {1, NAN, 3}), 3).find("finite and non-negative"), std::string::npos);
  EXPECT_NE(message_of(npy_file("<f8", "(3,)", {1, INFINITY, 3}), 3).find("finite and non-negative"),
            std::string::npos);
  EXPECT_NE(message_of(npy_file("<f8", "(3,)", {1e300, 1, 3}), 3).find("overflows float32"), std::string::npos);
  EXPECT_NE(message_of(npy_file("<f4", "(3,)", {0, 0, 0}), 3).find("every weight is 0"), std::string::npos);
  EXPECT_NE(message_of(npy_file("<i8", "(3,)", {1, 1, 1}), 3).find("dtype"), std::string::npos);
  EXPECT_NE(message_of(npy_file("<f4", "(3, 2)", {1, 1, 1, 1, 1, 1}), 3).find("1-D"), std::string::npos);
  std::string cut = npy_file("<f4", "(3,)", {1, 1, 1});
  cut.pop_back();
  EXPECT_NE(message_of(cut, 3).find("data bytes"), std::string::npos);
  EXPECT_NE(message_of("not a numpy file", 3).find("magic"), std::string::npos);
}

TEST(SampleWeights, FitExitsTwoWithAMessage) {
  TempFolder folder("fit_weights");
  Dataset data = seeding_test::blobs(40, 2, 3, 1.0, 7);
  save_npy(folder.file("x.npy"), data);
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(folder.file(name), std::ios::binary) << bytes;
    return "npy:" + folder.file(name);
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {write("short.npy", npy_file("<f8", "(39,)", std::vector<double>(39, 1.0))), "39 weights for 40 points"},
      {write("negative.npy", npy_file("<f8", "(40,)", std::vector<double>(40, -1.0))), "non-negative"},
      {"csv:" + folder.file("w.csv"), "--weights must be npy:PATH"},
      {"npy:" + folder.file("missing.npy"), "cannot open"},
  };
  for (const auto& [spec, expected] : cases) {
    const auto result = run_mkbench_args({"fit", "--dataset", "npy:" + folder.file("x.npy"), "--k", "3", "--weights",
                                          spec, "--variant", "cpu-openmp", "--quiet"});
    EXPECT_EQ(result.exit_code, 2) << spec << "\n" << result.output;
    EXPECT_NE(result.output.find(expected), std::string::npos) << spec << "\n" << result.output;
  }
}

TEST(WeightedKmeansPlusPlus, AllOnesDrawsWhatTheUnweightedRunDraws) {
  const Dataset data = seeding_test::blobs(5000, 4, 6, 1.0, 3);
  const std::vector<float> ones(size_t(data.m), 1.0f);
  for (uint64_t seed : {1u, 2u, 3u})
    EXPECT_EQ(seeding::kmeanspp_cpu(data, 12, 4, seed, ones.data()).chosen,
              seeding::kmeanspp_cpu(data, 12, 4, seed).chosen);
}

TEST(WeightedKmeansPlusPlus, NeverChoosesAPointOfWeightZero) {
  const Dataset data = seeding_test::blobs(3000, 3, 8, 2.0, 5);
  std::vector<float> weights(size_t(data.m), 1.0f);
  for (size_t i = 0; i < weights.size(); i += 2) weights[i] = 0.0f;
  for (uint64_t seed = 0; seed < 10; ++seed)
    for (int64_t index : seeding::kmeanspp_cpu(data, 16, 3, seed, weights.data()).chosen)
      EXPECT_EQ(index % 2, 1) << "seed " << seed << " chose point " << index << " of weight 0";
}

// Plain k-means++ (one candidate) on four points of a line: the first centre with probability
// w_i / Σ w, the second with w_j·D²_j / Σ w·D²; each pair's frequency over 10000 seeds
// against that product (chi-square over the 12 possible pairs, 11 degrees of freedom: 31.3 at p = 0.001).
TEST(WeightedKmeansPlusPlus, DrawsWithProbabilityProportionalToWeightTimesDSquared) {
  Dataset data;
  data.n = 1;
  data.m = 4;
  data.values = {0.0f, 1.0f, 3.0f, 7.0f};
  const std::vector<float> w = {1.0f, 3.0f, 0.5f, 2.0f};
  const int trials = 10000;
  double observed[4][4] = {};
  for (int seed = 0; seed < trials; ++seed) {
    const std::vector<int64_t> chosen = seeding::kmeanspp_cpu(data, 2, 1, uint64_t(seed), w.data()).chosen;
    observed[chosen[0]][chosen[1]] += 1;
  }
  const double w_total = 6.5;
  double chi2 = 0;
  for (int a = 0; a < 4; ++a) {
    double total = 0;
    for (int b = 0; b < 4; ++b) total += w[b] * double(data.values[b] - data.values[a]) * (data.values[b] - data.values[a]);
    for (int b = 0; b < 4; ++b) {
      const double d2 = double(data.values[b] - data.values[a]) * (data.values[b] - data.values[a]);
      const double p = w[a] / w_total * w[b] * d2 / total;
      if (p == 0) {
        EXPECT_EQ(observed[a][b], 0) << "drew the first centre again";
        continue;
      }
      const double expected = p * trials;
      chi2 += (observed[a][b] - expected) * (observed[a][b] - expected) / expected;
    }
  }
  EXPECT_LT(chi2, 31.3);
}

}  // namespace
}  // namespace mk
