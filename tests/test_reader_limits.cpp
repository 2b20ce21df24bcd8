// Numbers past a type's range in the readers' inputs: each is a clean InputError, never a
// value that wraps to a small plausible one or a float-to-integer cast that overflows
// (undefined behaviour that the asan preset's UBSan stops at).
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/problem.hpp"
#include "harness/suite.hpp"
#include "tuner/cache.hpp"
#include "tuner/config.hpp"

namespace {

std::string config_with(const std::string& problem, const std::string& best_extra = "") {
  return R"({"schema": "mkbench.tuned-config/1", "entries": [{"bucket": "n<=8/multi-small/m<=64M", "problem": )" +
         problem + R"(, "best": {"variant": "cpu-openmp", "params": {}, "median_ms": 1.0)" + best_extra + "}}]}";
}

}  // namespace

TEST(ReaderLimits, KBeyondIntIsRejectedNotWrapped) {
  // 4294967299 = 2^32 + 3 would wrap to K = 3.
  EXPECT_THROW(mk::parse_k_range("4294967299"), mk::InputError);
  EXPECT_THROW(mk::parse_k_range("1..4294967303"), mk::InputError);
  EXPECT_THROW(mk::parse_k_range("65537"), mk::InputError);
}

TEST(ReaderLimits, KRangeSumSaturatesInsteadOfOverflowing) {
  // 1..65536 holds 2^31 + 2^15 centroid slots, one past int's range.
  const mk::KRange widest{1, 65536};
  EXPECT_EQ(widest.sum(), INT32_MAX);
  EXPECT_EQ((mk::KRange{3, 7}.sum()), 25);
  EXPECT_EQ((mk::KRange{60000, 60000}.slot_offset(60000)), 0);
  EXPECT_EQ((mk::KRange{1, 65536}.slot_offset(65536)), int64_t(65535) * 65536 / 2);
}

TEST(ReaderLimits, SuiteIntegersBeyondIntAreRejected) {
  // dims 4294967304 = 2^32 + 8 would wrap to 8.
  EXPECT_THROW(mk::parse_suite_text(
                   R"({"cases": [{"dims": [4294967304], "k": ["3"], "points": ["1M"], "variants": ["cpu-openmp"]}]})", "t"),
               mk::InputError);
  EXPECT_THROW(mk::parse_suite_text(R"({"iters": -9223372036854775808, "cases": []})", "t"), mk::InputError);
  EXPECT_THROW(mk::parse_suite_text(
                   R"({"cases": [{"dims": [8], "k": ["3"], "points": [1e400], "variants": ["cpu-openmp"]}]})", "t"),
               mk::InputError);
}

TEST(ReaderLimits, TunedConfigShapesAndCountsOutOfRange) {
  const std::string good = R"({"n": 8, "k_min": 3, "k_max": 7, "m": 1048576})";
  EXPECT_EQ(mk::tuner::parse_config_text(config_with(good), "c").entries.at(0).problem.n, 8);
  for (const std::string& bad : {R"({"n": 1e300, "k_min": 3, "k_max": 7, "m": 1048576})",
                                 R"({"n": 4294967304, "k_min": 3, "k_max": 7, "m": 1048576})",
                                 R"({"n": 8, "k_min": 1, "k_max": 2147483647, "m": 1048576})",
                                 R"({"n": 8, "k_min": 3, "k_max": 7, "m": -1})", R"([8, 3, 7])"})
    EXPECT_THROW(mk::tuner::parse_config_text(config_with(bad), "c"), mk::InputError) << bad;
  EXPECT_THROW(mk::tuner::parse_config_text(config_with(good, R"(, "samples": 1e300)"), "c"), mk::InputError);
  EXPECT_THROW(mk::tuner::parse_config_text(config_with(good, R"(, "median_ms": "fast")"), "c"), mk::InputError);
  EXPECT_THROW(mk::tuner::parse_config_text(R"({"schema": 1, "entries": []})", "c"), mk::InputError);
  EXPECT_THROW(mk::tuner::parse_config_text(R"({"schema": "mkbench.tuned-config/1", "device": 3, "entries": []})", "c"),
               mk::InputError);
}
