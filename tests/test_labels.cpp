// Labels that travel with data (datasets/spec.cpp, csv.cpp, npy.cpp): a csv label column,
// an npy label vector, a labels spec, and the count check between points and labels.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "datasets/dataset.hpp"

namespace fs = std::filesystem;

namespace {

void expect_input_error(const std::function<void()>& action, const std::vector<std::string>& fragments) {
  try {
    action();
    ADD_FAILURE() << "expected InputError containing '" << fragments.at(0) << "'";
  } catch (const mk::InputError& error) {
    const std::string message = error.what();
    for (const std::string& fragment : fragments)
      EXPECT_NE(message.find(fragment), std::string::npos) << "'" << fragment << "' missing from: " << message;
  }
}

// A version-1 .npy file assembled byte by byte.
std::string npy_bytes(const std::string& dict, const std::string& data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\0';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  return bytes + header + data;
}

template <typename T>
std::string raw(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

class LabelFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() /
              ("mkbench_test_labels_" + std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(folder_);
    fs::create_directories(folder_);
  }
  void TearDown() override { fs::remove_all(folder_); }

  std::string write(const std::string& name, const std::string& bytes) {
    const std::string path = (folder_ / name).string();
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
  }

  fs::path folder_;
};

}  // namespace

TEST_F(LabelFiles, CsvLabelColumnComesBackWithThePoints) {
  const std::string file = write("d.csv", "x,class,y\n1.5,2,3\n4,0,5\n6,1.0,7\n");
  const mk::LabelledDataset both = mk::load_labelled_dataset("csv:" + file + ":header:label=1", "", 0, 0, 1);
  EXPECT_EQ(both.data.m, 3);
  EXPECT_EQ(both.data.n, 2);
  EXPECT_EQ(both.data.values, (mk::PointValues{1.5f, 3, 4, 5, 6, 7}));
  EXPECT_EQ(both.labels.values, (std::vector<int32_t>{2, 0, 1}));
  EXPECT_EQ(both.labels.identity["xxh3_128"], both.data.identity["xxh3_128"]);
}

TEST_F(LabelFiles, CsvLabelsThatAreNotWholeNumbersAreRejected) {
  const std::string words = write("w.csv", "1,setosa\n2,virginica\n");
  expect_input_error([&] { mk::load_labelled_dataset("csv:" + words + ":label=1", "", 0, 0, 1); },
                     {words, "line 1, column 1", "'setosa' is not a number"});
  // The points alone still load: a text class column does not stop a benchmark.
  EXPECT_EQ(mk::load_dataset_spec("csv:" + words + ":label=1", 0, 0, 1).values, (mk::PointValues{1, 2}));
  const std::string fraction = write("f.csv", "1,2\n3,0.5\n");
  expect_input_error([&] { mk::load_labelled_dataset("csv:" + fraction + ":label=1", "", 0, 0, 1); },
                     {"line 2, column 1", "not a whole number"});
  const std::string huge = write("h.csv", "1,3000000000\n");
  expect_input_error([&] { mk::load_labelled_dataset("csv:" + huge + ":label=1", "", 0, 0, 1); },
                     {"fits in 32 bits"});
  const std::string missing = write("m.csv", "1,2\n");
  expect_input_error([&] { mk::load_labelled_dataset("csv:" + missing + ":label=4", "", 0, 0, 1); },
                     {"label column 4 does not exist"});
  expect_input_error([&] { mk::load_labelled_dataset("csv:" + missing, "", 0, 0, 1); }, {"has no labels"});
}

TEST_F(LabelFiles, LabelsSpecForms) {
  const std::string one_column = write("y.csv", "3\n1\n2\n");
  EXPECT_EQ(mk::load_labels_spec("csv:" + one_column).values, (std::vector<int32_t>{3, 1, 2}));
  const std::string table = write("t.csv", "id;label\n10;4\n11;5\n");
  EXPECT_EQ(mk::load_labels_spec("csv:" + table + ":header:label=1:delim=;").values, (std::vector<int32_t>{4, 5}));
  expect_input_error([&] { mk::load_labels_spec("csv:" + table + ":header:delim=;"); },
                     {"2 columns needs the label column named"});
  expect_input_error([] { mk::load_labels_spec("parquet:y.pq"); }, {"unknown labels", "idx:PATH"});
}

TEST_F(LabelFiles, NpyLabelVectorsOfIntegerAndWholeFloatTypes) {
  EXPECT_EQ(mk::parse_npy_labels(npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }",
                                           raw<int64_t>({0, -5, 9})),
                                 "t")
                .values,
            (std::vector<int32_t>{0, -5, 9}));
  EXPECT_EQ(mk::parse_npy_labels(npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (3, 1), }",
                                           std::string("\x00\xff\x07", 3)),
                                 "t")
                .values,
            (std::vector<int32_t>{0, 255, 7}));
  EXPECT_EQ(mk::parse_npy_labels(npy_bytes("{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }",
                                           raw<int16_t>({-300, 2})),
                                 "t")
                .values,
            (std::vector<int32_t>{-300, 2}));
  EXPECT_EQ(mk::parse_npy_labels(npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
                                           raw<double>({1.0, 4.0})),
                                 "t")
                .values,
            (std::vector<int32_t>{1, 4}));
  expect_input_error(
      [] {
        mk::parse_npy_labels(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", raw<float>({1, 1.5f})),
                             "t");
      },
      {"label 1 is 1.5", "whole numbers"});
  expect_input_error(
      [] {
        mk::parse_npy_labels(
            npy_bytes("{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }", raw<uint64_t>({uint64_t(1) << 40})),
            "t");
      },
      {"label 0 is 1099511627776", "fit in 32 bits"});
  expect_input_error(
      [] {
        mk::parse_npy_labels(npy_bytes("{'descr': '>i4', 'fortran_order': False, 'shape': (1,), }", raw<int32_t>({1})),
                             "t");
      },
      {"unsupported labels dtype '>i4'"});
  expect_input_error(
      [] {
        mk::parse_npy_labels(
            npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }", raw<int32_t>({1, 2, 3, 4})), "t");
      },
      {"must be 1-D", "(2, 2)"});
  expect_input_error(
      [] {
        mk::parse_npy_labels(npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", raw<int32_t>({1})),
                             "t");
      },
      {"truncated", "12 bytes"});
}

TEST_F(LabelFiles, NpyPointsWithNpyLabelsMustAgreeInCount) {
  const std::string points = write(
      "x.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 1), }", raw<float>({1, 2, 3, 4})));
  const std::string four = write(
      "y.npy", npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }", raw<int32_t>({0, 1, 0, 1})));
  const mk::LabelledDataset both = mk::load_labelled_dataset("npy:" + points, "npy:" + four, 0, 0, 1);
  EXPECT_EQ(both.labels.values, (std::vector<int32_t>{0, 1, 0, 1}));
  EXPECT_EQ(both.labels.identity["format"], "npy");
  const std::string three = write(
      "z.npy", npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", raw<int32_t>({0, 1, 0})));
  expect_input_error([&] { mk::load_labelled_dataset("npy:" + points, "npy:" + three, 0, 0, 1); },
                     {"hold 3 labels", "has 4 points"});
}
