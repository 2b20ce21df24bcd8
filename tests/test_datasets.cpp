// Dataset generators, loaders and centroid seeding (datasets/; the identity digest: test_digest.cpp).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>
#include <algorithm>

#include "datasets/dataset.hpp"
#include "datasets/digest.hpp"
#include "core/errors.hpp"

namespace fs = std::filesystem;
using mk::Dataset;
using mk::GeneratorSpec;
using mk::InputError;

namespace {

// Each test writes its files into its own fresh folder, removed afterwards.
class DatasetFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    folder_ = fs::temp_directory_path() /
              ("mkbench_test_datasets_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(folder_);
    fs::create_directories(folder_);
  }
  void TearDown() override { fs::remove_all(folder_); }

  std::string write(const std::string& name, const std::string& bytes) {
    std::string path = (folder_ / name).string();
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
  }
  std::string path(const std::string& name) const { return (folder_ / name).string(); }

  fs::path folder_;
};

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs `action`, which must throw InputError whose message contains every fragment.
void expect_input_error(const std::function<void()>& action, const std::vector<std::string>& fragments) {
  try {
    action();
    ADD_FAILURE() << "expected InputError containing '" << fragments.at(0) << "'";
  } catch (const InputError& error) {
    const std::string message = error.what();
    for (const std::string& fragment : fragments)
      EXPECT_NE(message.find(fragment), std::string::npos) << "'" << fragment << "' missing from: " << message;
    EXPECT_EQ(error.exit_code, mk::kExitBadInput);
  }
}

// A .npy file assembled byte by byte, independent of save_npy.
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
  std::string header = dict;
  const size_t preamble = major == 1 ? 10 : 12;
  while ((preamble + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += static_cast<char>(major);
  bytes += '\0';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>((header.size() >> 8) & 0xff);
  if (major != 1) bytes += std::string(2, '\0');
  return bytes + header + data;
}

template <typename T, typename Allocator>
std::string raw_bytes(const std::vector<T, Allocator>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

Dataset small_dataset(int64_t m, int n) {
  Dataset data;
  data.m = m;
  data.n = n;
  for (int64_t i = 0; i < m; ++i)
    for (int d = 0; d < n; ++d) data.values.push_back(static_cast<float>(i * 100 + d));
  return data;
}

GeneratorSpec spec_of(const std::string& kind, int64_t m, int n, uint64_t seed) {
  GeneratorSpec spec;
  spec.kind = kind;
  spec.m = m;
  spec.n = n;
  spec.seed = seed;
  return spec;
}

double exact_zero_fraction(const mk::PointValues& values) {
  size_t zeros = 0;
  for (float v : values) zeros += (v == 0.0f);
  return double(zeros) / double(values.size());
}

}  // namespace

// ---------------------------------------------------------------- generators

TEST(Generate, SameSeedGivesIdenticalBytes) {
  for (const char* kind : {"uniform", "blobs"}) {
    GeneratorSpec spec = spec_of(kind, 5000, 7, 123);
    spec.zero_fraction = 0.25;
    Dataset a = mk::generate(spec), b = mk::generate(spec);
    ASSERT_EQ(a.values.size(), 5000u * 7u);
    EXPECT_EQ(raw_bytes(a.values), raw_bytes(b.values)) << kind;
  }
}

TEST(Generate, DifferentSeedGivesDifferentBytes) {
  for (const char* kind : {"uniform", "blobs"}) {
    Dataset a = mk::generate(spec_of(kind, 5000, 7, 1)), b = mk::generate(spec_of(kind, 5000, 7, 2));
    size_t equal = 0;
    for (size_t i = 0; i < a.values.size(); ++i) equal += (a.values[i] == b.values[i]);
    EXPECT_LT(equal, a.values.size() / 100) << kind;
  }
}

TEST(Generate, IndependentOfThreadCount) {
  const int saved = omp_get_max_threads();
  GeneratorSpec spec = spec_of("blobs", 4099, 5, 7);
  spec.zero_fraction = 0.1;
  omp_set_num_threads(1);
  Dataset serial = mk::generate(spec);
  omp_set_num_threads(3);
  Dataset parallel = mk::generate(spec);
  omp_set_num_threads(saved);
  EXPECT_EQ(raw_bytes(serial.values), raw_bytes(parallel.values));
}

TEST(Generate, UniformIsInUnitIntervalAndCoversIt) {
  Dataset data = mk::generate(spec_of("uniform", 50000, 4, 42));
  double sum = 0;
  float low = 1, high = 0;
  for (float v : data.values) {
    ASSERT_GE(v, 0.0f);
    ASSERT_LT(v, 1.0f);
    sum += v;
    low = std::min(low, v);
    high = std::max(high, v);
  }
  EXPECT_NEAR(sum / data.values.size(), 0.5, 0.005);
  EXPECT_LT(low, 0.001f);
  EXPECT_GT(high, 0.999f);
  EXPECT_EQ(data.identity["kind"], "generator");
  EXPECT_EQ(data.identity["generator"], "uniform");
  EXPECT_EQ(data.identity["params"]["m"], 50000);
  EXPECT_EQ(data.identity["params"]["n"], 4);
  EXPECT_EQ(data.identity["seed"], 42);
}

TEST(Generate, BlobsClusterAroundTheirCentres) {
  GeneratorSpec spec = spec_of("blobs", 20000, 5, 5);  // odd N: normals pair across rows
  spec.centers = 6;
  spec.spread = 0.5;
  spec.box = 20;
  Dataset data = mk::generate(spec);
  std::vector<float> centres = mk::blob_centers(spec);
  ASSERT_EQ(centres.size(), 6u * 5u);
  for (float c : centres) {
    EXPECT_GE(c, -20.0f);
    EXPECT_LE(c, 20.0f);
  }
  std::vector<int64_t> members(spec.centers, 0);
  double distance_sum = 0;
  for (int64_t i = 0; i < data.m; ++i) {
    double best = std::numeric_limits<double>::max();
    int best_centre = 0;
    for (int c = 0; c < spec.centers; ++c) {
      double squared = 0;
      for (int d = 0; d < spec.n; ++d) {
        double diff = data.at(i, d) - centres[c * spec.n + d];
        squared += diff * diff;
      }
      if (squared < best) best = squared, best_centre = c;
    }
    distance_sum += std::sqrt(best);
    ++members[best_centre];
  }
  // The distance of an n-dimensional normal point from its mean follows a chi distribution.
  const double n = spec.n;
  const double expected = spec.spread * std::sqrt(2.0) * std::tgamma((n + 1) / 2) / std::tgamma(n / 2);
  EXPECT_NEAR(distance_sum / data.m, expected, 0.05 * expected);
  for (int64_t count : members) EXPECT_NEAR(double(count), double(data.m) / spec.centers, 0.1 * data.m / spec.centers);
  EXPECT_EQ(data.identity["generator"], "blobs");
  EXPECT_EQ(data.identity["params"]["centers"], 6);
  EXPECT_EQ(data.identity["params"]["spread"], 0.5);
  EXPECT_EQ(data.identity["params"]["box"], 20.0);
}

TEST(Generate, ZeroFractionIsHonouredAndMeasured) {
  for (const char* kind : {"uniform", "blobs"}) {
    GeneratorSpec spec = spec_of(kind, 100000, 8, 9);
    spec.zero_fraction = 0.9;
    Dataset data = mk::generate(spec);
    const double measured = exact_zero_fraction(data.values);
    EXPECT_NEAR(measured, 0.9, 0.01) << kind;
    EXPECT_DOUBLE_EQ(data.sparsity, measured) << kind;
    EXPECT_EQ(data.identity["params"]["zero_fraction"], 0.9);
  }
  Dataset dense = mk::generate(spec_of("uniform", 10000, 8, 9));
  EXPECT_DOUBLE_EQ(dense.sparsity, exact_zero_fraction(dense.values));
  EXPECT_LT(dense.sparsity, 1e-4);
  EXPECT_FALSE(dense.identity["params"].contains("zero_fraction"));
}

TEST(Generate, RejectsImpossibleSpecs) {
  expect_input_error([] { mk::generate(spec_of("uniform", 0, 4, 1)); }, {"at least 1 point"});
  expect_input_error([] { mk::generate(spec_of("uniform", 10, 0, 1)); }, {"at least 1 dimension"});
  expect_input_error([] { mk::generate(spec_of("gauss", 10, 2, 1)); }, {"unknown generator 'gauss'"});
  GeneratorSpec bad_zeros = spec_of("uniform", 10, 2, 1);
  bad_zeros.zero_fraction = 1.5;
  expect_input_error([&] { mk::generate(bad_zeros); }, {"zero fraction"});
}

// ---------------------------------------------------------------- check_finite

TEST(CheckFinite, NamesFirstOffendingRowAndColumn) {
  Dataset data = small_dataset(4, 3);
  EXPECT_NO_THROW(mk::check_finite(data));
  data.values[1 * 3 + 2] = std::numeric_limits<float>::infinity();
  data.values[3 * 3 + 0] = std::numeric_limits<float>::quiet_NaN();
  expect_input_error([&] { mk::check_finite(data); }, {"dataset contains Inf at row 1, column 2"});
  data.values[1 * 3 + 2] = 0;
  expect_input_error([&] { mk::check_finite(data); }, {"dataset contains NaN at row 3, column 0"});
}

// FP32 squared distances: data spread so wide that one can pass FLT_MAX, or so narrow that all
// are below 1e-30, is refused by name; the bound is Σ_d (max_d − min_d)², so an offset alone
// (1e20 + small spread) is not.
TEST(CheckFinite, SquaredDistancesOutsideFloat32AreBadInput) {
  const auto scaled = [](float scale, float offset) {
    Dataset data = small_dataset(50, 3);
    for (float& v : data.values) v = offset + v * scale;
    return data;
  };
  expect_input_error([&] { mk::check_finite(scaled(1e20f, 0.f)); }, {"beyond float32's 3.4e38", "scale the data down"});
  expect_input_error([&] { mk::check_finite(scaled(1e-40f, 0.f)); }, {"below 1e-30", "scale the data up"});
  EXPECT_NO_THROW(mk::check_finite(scaled(1e12f, 0.f)));
  EXPECT_NO_THROW(mk::check_finite(scaled(1e-12f, 0.f)));
  // Far from 0 with a spread of 5e15: the bound is on distances; a variant that expands ‖x‖²
  // translates such data or refuses it itself.
  EXPECT_NO_THROW(mk::check_finite(scaled(1e12f, 1e20f)));
  EXPECT_NO_THROW(mk::check_finite(scaled(0.f, 1e30f)));    // every point the same: nothing to lose
  Dataset wide = scaled(0.f, 0.f);  // each dimension's range² (2.25e38) within float32, their sum not
  wide.values[0] = -7.5e18f;
  wide.values[3] = 7.5e18f;
  wide.values[1] = -7.5e18f;
  wide.values[4] = 7.5e18f;
  expect_input_error([&] { mk::check_finite(wide); }, {"beyond float32"});
}

// ---------------------------------------------------------------- CSV

using CsvLoad = DatasetFiles;

TEST_F(CsvLoad, PlainNumbers) {
  const std::string text = "1,2,3\n4.5, -5e1 ,+6\n";
  std::string file = write("plain.csv", text);
  Dataset data = mk::load_csv(file, {});
  EXPECT_EQ(data.m, 2);
  EXPECT_EQ(data.n, 3);
  EXPECT_EQ(data.values, (mk::PointValues{1, 2, 3, 4.5f, -50, 6}));
  EXPECT_EQ(data.identity["kind"], "file");
  EXPECT_EQ(data.identity["format"], "csv");
  EXPECT_EQ(data.identity["path"], file);
  EXPECT_EQ(data.identity["bytes"], text.size());
  EXPECT_EQ(data.identity["xxh3_128"], mk::data_digest(text.data(), text.size()));
}

TEST_F(CsvLoad, HeaderAndLabelColumnWithCrlf) {
  std::string file = write("labelled.csv", "x,label,y\r\n1,0,2\r\n3,1,4\r\n\r\n");
  mk::CsvOptions options;
  options.header = true;
  options.label_column = 1;
  Dataset data = mk::load_csv(file, options);
  EXPECT_EQ(data.m, 2);
  EXPECT_EQ(data.n, 2);
  EXPECT_EQ(data.values, (mk::PointValues{1, 2, 3, 4}));
  EXPECT_EQ(data.identity["options"]["header"], true);
  EXPECT_EQ(data.identity["options"]["label_column"], 1);
}

TEST_F(CsvLoad, ColumnSelectionKeepsRequestedOrderAndDelimiter) {
  std::string file = write("semi.csv", "1;2;3;4\n5;6;7;8\n");
  mk::CsvOptions options;
  options.delimiter = ';';
  options.columns = {3, 0};
  Dataset data = mk::load_csv(file, options);
  EXPECT_EQ(data.n, 2);
  EXPECT_EQ(data.values, (mk::PointValues{4, 1, 8, 5}));
  EXPECT_EQ(data.identity["options"]["columns"], (std::vector<int>{3, 0}));
  EXPECT_EQ(data.identity["options"]["delimiter"], ";");
}

TEST_F(CsvLoad, SparsityIsMeasured) {
  Dataset data = mk::load_csv(write("zeros.csv", "0,1\n0,0\n"), {});
  EXPECT_DOUBLE_EQ(data.sparsity, 0.75);
}

TEST_F(CsvLoad, RaggedRowNamesFileAndLine) {
  std::string file = write("ragged.csv", "1,2,3\n4,5,6\n7,8\n9,10,11\n");
  expect_input_error([&] { mk::load_csv(file, {}); }, {file, "line 3", "expected 3 fields", "found 2"});
}

TEST_F(CsvLoad, TruncatedLastLine) {
  std::string file = write("cut.csv", "1,2,3\n4,5");
  expect_input_error([&] { mk::load_csv(file, {}); }, {file, "line 2", "truncated"});
}

TEST_F(CsvLoad, NanCellIsRejected) {
  std::string file = write("nan.csv", "1,2\n3,nan\n");
  expect_input_error([&] { mk::load_csv(file, {}); }, {file, "line 2", "NaN at row 1, column 1"});
  std::string infinite = write("inf.csv", "1,-inf\n");
  expect_input_error([&] { mk::load_csv(infinite, {}); }, {"Inf at row 0, column 1"});
}

TEST_F(CsvLoad, NonNumericCellIsRejected) {
  std::string file = write("words.csv", "1,2,3\n4,five,6\n");
  expect_input_error([&] { mk::load_csv(file, {}); }, {file, "line 2, column 1", "'five' is not a number"});
  std::string empty_cell = write("hole.csv", "1,,3\n");
  expect_input_error([&] { mk::load_csv(empty_cell, {}); }, {"line 1, column 1", "empty cell"});
}

TEST_F(CsvLoad, EmptyAndHeaderOnlyFiles) {
  std::string empty = write("empty.csv", "");
  expect_input_error([&] { mk::load_csv(empty, {}); }, {empty, "empty"});
  mk::CsvOptions options;
  options.header = true;
  std::string header_only = write("header.csv", "a,b\n");
  expect_input_error([&] { mk::load_csv(header_only, options); }, {"no data rows"});
  expect_input_error([&] { mk::load_csv(path("missing.csv"), {}); }, {"cannot open", "missing.csv"});
}

TEST_F(CsvLoad, BadColumnOptions) {
  std::string file = write("three.csv", "1,2,3\n");
  mk::CsvOptions label_out_of_range;
  label_out_of_range.label_column = 3;
  expect_input_error([&] { mk::load_csv(file, label_out_of_range); }, {"label column 3 does not exist"});
  mk::CsvOptions label_selected;
  label_selected.label_column = 0;
  label_selected.columns = {0, 1};
  expect_input_error([&] { mk::load_csv(file, label_selected); }, {"as a feature and as the label"});
}

// ---------------------------------------------------------------- .npy

using NpyLoad = DatasetFiles;

TEST_F(NpyLoad, RoundTripCOrder) {
  Dataset original = mk::generate(spec_of("uniform", 300, 5, 3));
  const std::string file = path("round.npy");
  mk::save_npy(file, original);
  const std::string bytes = read_bytes(file);
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 6), "\x93NUMPY");
  EXPECT_EQ(bytes.size() % 64, (300u * 5u * 4u) % 64);  // data starts 64-byte aligned
  Dataset loaded = mk::load_npy(file);
  EXPECT_EQ(loaded.m, 300);
  EXPECT_EQ(loaded.n, 5);
  EXPECT_EQ(raw_bytes(loaded.values), raw_bytes(original.values));
  EXPECT_EQ(loaded.identity["format"], "npy");
  EXPECT_EQ(loaded.identity["bytes"], bytes.size());
  EXPECT_EQ(loaded.identity["xxh3_128"], mk::data_digest(bytes.data(), bytes.size()));
}

TEST_F(NpyLoad, FortranOrderIsConvertedToRowMajor) {
  // 3 points x 2 dims; value 10*i + d, stored column by column.
  const std::vector<float> column_major = {0, 10, 20, 1, 11, 21};
  const std::string file = write("fortran.npy", npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (3, 2), }",
                                                          raw_bytes(column_major)));
  Dataset data = mk::load_npy(file);
  EXPECT_EQ(data.m, 3);
  EXPECT_EQ(data.n, 2);
  EXPECT_EQ(data.values, (mk::PointValues{0, 1, 10, 11, 20, 21}));
}

TEST_F(NpyLoad, VersionTwoHeaderIsAccepted) {
  const std::vector<float> values = {1, 2, 3, 4};
  const std::string file = write("v2.npy", npy_bytes("{\"descr\": \"<f4\", \"shape\": (2, 2), \"fortran_order\": False}",
                                                     raw_bytes(values), 2));
  EXPECT_EQ(mk::load_npy(file).values, mk::PointValues(values.begin(), values.end()));
}

TEST_F(NpyLoad, WrongDtypeIsRejected) {
  const std::vector<double> doubles = {1, 2, 3, 4};
  std::string f8 = write("f8.npy", npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", raw_bytes(doubles)));
  expect_input_error([&] { mk::load_npy(f8); }, {f8, "'<f8'", "'<f4'"});
  const std::vector<float> floats = {1, 2, 3, 4};
  std::string big = write("big.npy", npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }", raw_bytes(floats)));
  expect_input_error([&] { mk::load_npy(big); }, {"'>f4'", "big-endian"});
}

TEST_F(NpyLoad, TruncatedDataIsRejected) {
  const std::vector<float> ten(10, 1.0f);
  std::string file = write("short.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3), }", raw_bytes(ten)));
  expect_input_error([&] { mk::load_npy(file); }, {file, "truncated", "48 bytes", "only 40"});
}

TEST_F(NpyLoad, BadMagicVersionShapeAndHeader) {
  const std::vector<float> four(4, 1.0f);
  std::string good = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", raw_bytes(four));
  std::string bad_magic = good;
  bad_magic[1] = 'X';
  std::string magic_file = write("magic.npy", bad_magic);
  expect_input_error([&] { mk::load_npy(magic_file); }, {magic_file, "magic"});

  std::string future = good;
  future[6] = 4;
  std::string version_file = write("version.npy", future);
  expect_input_error([&] { mk::load_npy(version_file); }, {"unsupported .npy format version 4.0"});

  std::string flat = write("flat.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", raw_bytes(four)));
  expect_input_error([&] { mk::load_npy(flat); }, {"shape (4,)", "2-D"});

  std::string garbled = write("garbled.npy", npy_bytes("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2, 2), }", raw_bytes(four)));
  expect_input_error([&] { mk::load_npy(garbled); }, {"cannot parse the .npy header"});

  std::string tiny = write("tiny.npy", "\x93NUM");
  expect_input_error([&] { mk::load_npy(tiny); }, {"too short"});
}

TEST_F(NpyLoad, NanIsRejected) {
  const std::vector<float> values = {1, 2, std::numeric_limits<float>::quiet_NaN(), 4};
  std::string file = write("nan.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", raw_bytes(values)));
  expect_input_error([&] { mk::load_npy(file); }, {"NaN at row 1, column 0"});
}

// The loader's one pass (hash, NaN/Inf, zeros, copy) over a file of several digest blocks,
// each result against a reference computed here another way.
TEST_F(NpyLoad, OnePassOverManyBlocksMatchesSeparateChecks) {
  GeneratorSpec spec = spec_of("blobs", 300007, 8, 11);  // 9.6 MB: three 4 MiB digest blocks
  spec.zero_fraction = 0.3;
  const Dataset original = mk::generate(spec);
  const std::string file = path("blocks.npy");
  mk::save_npy(file, original);
  const std::string bytes = read_bytes(file);
  ASSERT_GT(bytes.size(), 2 * mk::kDigestBlockBytes);
  const Dataset loaded = mk::load_npy(file);
  EXPECT_EQ(raw_bytes(loaded.values), raw_bytes(original.values));
  EXPECT_DOUBLE_EQ(loaded.sparsity, exact_zero_fraction(original.values));
  EXPECT_EQ(loaded.identity["xxh3_128"], mk::data_digest(bytes.data(), bytes.size()));
  EXPECT_TRUE(loaded.finite_checked);

  // An Inf in the last block and a NaN in the first: the first in file order is named.
  std::vector<float> bad(original.values.begin(), original.values.end());
  bad[bad.size() - 3] = std::numeric_limits<float>::infinity();
  bad[70001 * 8 + 5] = std::numeric_limits<float>::quiet_NaN();
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (300007, 8), }";
  const std::string bad_file = write("bad.npy", npy_bytes(dict, raw_bytes(bad)));
  expect_input_error([&] { mk::load_npy(bad_file); }, {"NaN at row 70001, column 5"});
  bad[70001 * 8 + 5] = 1.0f;
  const std::string inf_file = write("inf.npy", npy_bytes(dict, raw_bytes(bad)));
  expect_input_error([&] { mk::load_npy(inf_file); }, {"Inf at row 300006, column 5"});
}

TEST_F(NpyLoad, FortranOrderOverManyBlocksIsTransposedOnTheWay) {
  const int64_t m = 200003;
  const int n = 7;
  std::vector<float> column_major(size_t(m) * n);
  for (int d = 0; d < n; ++d)
    for (int64_t i = 0; i < m; ++i) column_major[size_t(d) * m + i] = float(i * 10 + d);
  const std::string file = write("fortran-big.npy", npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (200003, 7), }",
                                                              raw_bytes(column_major)));
  const Dataset data = mk::load_npy(file);
  ASSERT_EQ(data.values.size(), column_major.size());
  size_t wrong = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int d = 0; d < n; ++d) wrong += data.values[size_t(i) * n + d] != float(i * 10 + d);
  EXPECT_EQ(wrong, 0u);
  expect_input_error([&] { mk::load_npy_mapped(file); }, {file, "Fortran order"});
}

TEST_F(NpyLoad, MappedLoadLeavesThePointsInTheFile) {
  const Dataset original = mk::generate(spec_of("uniform", 5003, 6, 2));
  const std::string file = path("mapped.npy");
  mk::save_npy(file, original);
  const Dataset mapped = mk::load_npy_mapped(file);
  const Dataset copied = mk::load_npy(file);
  EXPECT_TRUE(mapped.is_mapped());
  EXPECT_TRUE(mapped.values.empty());
  ASSERT_EQ(mapped.m, 5003);
  ASSERT_EQ(mapped.n, 6);
  EXPECT_EQ(std::memcmp(mapped.points(), original.values.data(), original.values.size() * sizeof(float)), 0);
  EXPECT_EQ(mapped.at(5002, 5), original.at(5002, 5));
  EXPECT_EQ(mapped.identity, copied.identity);
  EXPECT_EQ(mapped.sparsity, copied.sparsity);
  // The mapping lives as long as a copy of the Dataset does.
  const float last = original.values.back();
  const Dataset survivor = [&] { Dataset temporary = mk::load_npy_mapped(file); return temporary; }();
  EXPECT_EQ(survivor.at(5002, 5), last);
}

TEST_F(NpyLoad, UnalignedDataIsCopiedButNotMapped) {
  // A header padded (unlike NumPy's) so that the data starts 2 bytes past a multiple of 4.
  const std::vector<float> values = {1, 2, 3, 4, 5, 6};
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }";
  while ((10 + header.size() + 1) % 4 != 2) header += ' ';
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\0';
  bytes += char(header.size() & 0xff);
  bytes += char(header.size() >> 8);
  const std::string file = write("odd.npy", bytes + header + raw_bytes(values));
  EXPECT_EQ(mk::load_npy(file).values, values);
  expect_input_error([&] { mk::load_npy_mapped(file); }, {"not a multiple of 4"});
}

// ---------------------------------------------------------------- initial centroids

TEST(InitialCentroids, FirstKPacksEveryKFromTheFirstPoints) {
  Dataset data = small_dataset(10, 2);
  mk::KRange range{2, 4};
  std::vector<float> centroids = mk::initial_centroids(data, range, mk::InitMethod::FirstK, 0);
  ASSERT_EQ(centroids.size(), static_cast<size_t>(range.sum()) * 2);
  for (int k = range.kmin; k <= range.kmax; ++k)
    for (int c = 0; c < k; ++c)
      for (int d = 0; d < 2; ++d)
        EXPECT_EQ(centroids[(range.slot_offset(k) + c) * 2 + d], data.at(c, d)) << "K=" << k << " c=" << c;
}

TEST(InitialCentroids, RandomSampleIsDistinctAndDeterministic) {
  // Point i holds the value i, so every centroid reveals which point it was taken from.
  Dataset data;
  data.m = 1 << 20;
  data.n = 1;
  data.values.resize(data.m);
  for (int64_t i = 0; i < data.m; ++i) data.values[i] = static_cast<float>(i);
  mk::KRange range{4090, 4096};
  auto first = mk::initial_centroids(data, range, mk::InitMethod::RandomSample, 11);
  auto again = mk::initial_centroids(data, range, mk::InitMethod::RandomSample, 11);
  auto other = mk::initial_centroids(data, range, mk::InitMethod::RandomSample, 12);
  EXPECT_EQ(first, again);
  EXPECT_NE(first, other);
  for (int k = range.kmin; k <= range.kmax; ++k) {
    std::set<float> picked(first.begin() + range.slot_offset(k), first.begin() + range.slot_offset(k) + k);
    EXPECT_EQ(picked.size(), static_cast<size_t>(k)) << "duplicate seed points for K=" << k;
    for (float index : picked) {
      EXPECT_GE(index, 0.0f);
      EXPECT_LT(index, float(data.m));
    }
  }
  // Not simply the first points.
  EXPECT_GT(*std::max_element(first.begin(), first.end()), 4096.0f);
}

TEST(InitialCentroids, RandomSampleCanTakeEveryPoint) {
  Dataset data = small_dataset(5, 1);
  auto centroids = mk::initial_centroids(data, mk::KRange{5, 5}, mk::InitMethod::RandomSample, 3);
  std::set<float> picked(centroids.begin(), centroids.end());
  EXPECT_EQ(picked, (std::set<float>{0, 100, 200, 300, 400}));
}

TEST(InitialCentroids, KAboveMIsRejected) {
  Dataset data = small_dataset(3, 2);
  for (auto method : {mk::InitMethod::FirstK, mk::InitMethod::RandomSample})
    expect_input_error([&] { mk::initial_centroids(data, mk::KRange{2, 4}, method, 1); },
                       {"K=4 exceeds the number of points M=3"});
}

// ---------------------------------------------------------------- --dataset specs

using DatasetSpec = DatasetFiles;

TEST_F(DatasetSpec, Generators) {
  Dataset uniform = mk::load_dataset_spec("uniform", 100, 3, 5);
  EXPECT_EQ(uniform.identity, mk::generate(spec_of("uniform", 100, 3, 5)).identity);
  EXPECT_EQ(raw_bytes(uniform.values), raw_bytes(mk::generate(spec_of("uniform", 100, 3, 5)).values));

  Dataset blobs = mk::load_dataset_spec("blobs:centers=10,spread=1.5,box=7,zeros=0.5", 1000, 4, 6);
  EXPECT_EQ(blobs.identity["generator"], "blobs");
  EXPECT_EQ(blobs.identity["params"]["centers"], 10);
  EXPECT_EQ(blobs.identity["params"]["spread"], 1.5);
  EXPECT_EQ(blobs.identity["params"]["box"], 7.0);
  EXPECT_EQ(blobs.identity["params"]["zero_fraction"], 0.5);
  EXPECT_EQ(blobs.identity["seed"], 6);

  Dataset sparse = mk::load_dataset_spec("uniform:zeros=0.9", 1000, 4, 6);
  EXPECT_NEAR(sparse.sparsity, 0.9, 0.03);
}

TEST_F(DatasetSpec, Files) {
  std::string csv = write("d.csv", "a;b;c\n1;2;3\n4;5;6\n");
  Dataset from_csv = mk::load_dataset_spec("csv:" + csv + ":header:label=0:delim=;", 0, 0, 1);
  EXPECT_EQ(from_csv.values, (mk::PointValues{2, 3, 5, 6}));
  Dataset selected = mk::load_dataset_spec("csv:" + csv + ":header:cols=2,1:delim=;", 0, 2, 1);
  EXPECT_EQ(selected.values, (mk::PointValues{3, 2, 6, 5}));

  std::string npy = path("d.npy");
  mk::save_npy(npy, small_dataset(4, 3));
  Dataset from_npy = mk::load_dataset_spec("npy:" + npy, 999, 3, 1);
  EXPECT_EQ(from_npy.m, 4);  // the file decides M
  EXPECT_EQ(from_npy.n, 3);
}

TEST_F(DatasetSpec, FileDecidesItsShapeWhateverTheGeneratorShape) {
  // m and n are a generator's; callers compare a shape the user typed (test_file_shapes.cpp).
  std::string npy = path("d.npy");
  mk::save_npy(npy, small_dataset(4, 3));
  const Dataset data = mk::load_dataset_spec("npy:" + npy, 32, 8, 1);
  EXPECT_EQ(data.m, 4);
  EXPECT_EQ(data.n, 3);
  const mk::DataShape shape = mk::file_dataset_shape("npy:" + npy);
  EXPECT_EQ(shape.m, 4);
  EXPECT_EQ(shape.n, 3);
  EXPECT_TRUE(mk::is_file_dataset_spec("npy:" + npy));
  EXPECT_FALSE(mk::is_file_dataset_spec("blobs:centers=3"));
  expect_input_error([] { mk::file_dataset_shape("uniform"); }, {"is not a file"});
}

TEST_F(DatasetSpec, BadSpecs) {
  expect_input_error([] { mk::load_dataset_spec("parquet:x.pq", 10, 2, 1); },
                     {"unknown dataset 'parquet:x.pq'", "uniform[", "blobs[", "csv:PATH", "npy:PATH"});
  expect_input_error([] { mk::load_dataset_spec("blobs:colour=3", 10, 2, 1); }, {"unknown blobs setting 'colour'"});
  expect_input_error([] { mk::load_dataset_spec("uniform:centers=3", 10, 2, 1); }, {"unknown uniform setting"});
  expect_input_error([] { mk::load_dataset_spec("blobs:spread=wide", 10, 2, 1); }, {"spread", "'wide'"});
  expect_input_error([] { mk::load_dataset_spec("uniform", 10, 0, 1); }, {"N >= 1"});
  expect_input_error([] { mk::load_dataset_spec("npy:", 0, 0, 1); }, {"missing file path"});
  // Numbers beyond an int were cast and wrapped (4294967297 centres ran as 1); a centre table
  // beyond 256 MiB is refused.
  expect_input_error([] { mk::load_dataset_spec("blobs:centers=4294967297", 1000, 2, 1); },
                     {"centers must be in 1..2147483647"});
  expect_input_error([] { mk::load_dataset_spec("blobs:centers=0", 1000, 2, 1); }, {"centers must be in"});
  expect_input_error([] { mk::load_dataset_spec("blobs:centers=70000", 1 << 20, 1024, 1); }, {"256 MiB"});
  expect_input_error([] { mk::load_dataset_spec("csv:x.csv:label=4294967297", 0, 0, 1); }, {"label column must be in"});
  expect_input_error([] { mk::load_dataset_spec("csv:x.csv:cols=0,4294967296", 0, 0, 1); }, {"column index must be in"});
}

// A shard's rows are a view of the whole data set's (no copy), and a range past it is bad input.
TEST(RowsOf, ViewsTheRowsInPlace) {
  const Dataset data = mk::generate(spec_of("uniform", 100, 3, 5));
  const Dataset part = mk::rows_of(data, 40, 70);
  EXPECT_EQ(part.m, 30);
  EXPECT_EQ(part.n, 3);
  EXPECT_TRUE(part.values.empty());
  EXPECT_TRUE(part.holds_rows());
  EXPECT_EQ(part.points(), data.row(40));
  EXPECT_EQ(part.at(29, 2), data.at(69, 2));
  EXPECT_EQ(part.identity, data.identity);
  const Dataset inner = mk::rows_of(part, 10, 11);
  EXPECT_EQ(inner.points(), data.row(50));
  EXPECT_THROW(mk::rows_of(data, 90, 101), InputError);
  EXPECT_THROW(mk::rows_of(data, 50, 40), InputError);
}
