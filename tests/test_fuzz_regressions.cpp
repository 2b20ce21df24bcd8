// Every input fuzzing found that crashed a reader, escaped it as a non-InputError exception
// or tripped a sanitizer (tests/fuzz/README.md), replayed through the same driver as its
// fuzz target (tests/fuzz/readers.hpp). Each must now be a clean InputError (exit 2) whose
// message says what is wrong, or, where the input is a valid file, be read without a
// sanitizer report (the asan preset runs this test too).
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

#include "core/errors.hpp"
#include "tests/fuzz/readers.hpp"

namespace {

struct Regression {
  const char* file;  // under tests/data/fuzz_regressions/
  void (*read)(std::string_view);
  const char* expected;  // a fragment of the InputError's message; nullptr: a valid input, accepted
};

// clang-format off
const Regression kRegressions[] = {
  // nlohmann's parser throws out_of_range (not parse_error) for a number beyond double.
  {"results_number_overflow.json", mk::fuzz::read_results, "not valid JSON"},
  // "updated" of the wrong type escaped as a nlohmann type_error.
  {"tuned_config_updated_object.json", mk::fuzz::read_tuned_config, "'updated' must be a string"},
  // An unnamed row with n = 1e300: row_name cast it to int64_t (undefined behaviour).
  {"results_problem_beyond_int64.json", mk::fuzz::read_results, nullptr},
};
// clang-format on

class FuzzRegression : public ::testing::TestWithParam<Regression> {};

TEST_P(FuzzRegression, IsACleanInputError) {
  const Regression& regression = GetParam();
  const std::string path = std::string(MKBENCH_TEST_DATA) + "/fuzz_regressions/" + regression.file;
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing " << path;
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!regression.expected) {
    EXPECT_NO_THROW(regression.read(bytes));
    return;
  }
  try {
    regression.read(bytes);
    ADD_FAILURE() << regression.file << " was accepted; expected an InputError with '" << regression.expected << "'";
  } catch (const mk::InputError& error) {
    EXPECT_NE(std::string(error.what()).find(regression.expected), std::string::npos) << error.what();
    EXPECT_EQ(error.exit_code, mk::kExitBadInput);
  }
}

std::string test_name(const ::testing::TestParamInfo<Regression>& info) {
  std::string name;
  for (const char* c = info.param.file; *c && *c != '.'; ++c) name += std::isalnum(static_cast<unsigned char>(*c)) ? *c : '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Found, FuzzRegression, ::testing::ValuesIn(kRegressions), test_name);

}  // namespace
