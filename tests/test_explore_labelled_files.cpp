// `mkbench explore` on labelled files, read through the datasets layer (load_labelled_dataset):
// npy: data with --labels npy:, idx: data with its IDX labels file. The reference is the susy:
// generator's own table, written to those files here: the loaded rows and classes must be the
// generator's, and the planted subset must come out on top through the real binary.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/explore/labelled_table.hpp"
#include "apps/fit/fit_output.hpp"
#include "core/errors.hpp"
#include "datasets/dataset.hpp"
#include "datasets/susy.hpp"
#include "process_helpers.hpp"

namespace mk {
namespace {

// Labels are written as 10·class + 3, so the table must renumber them back to 0 and 1.
int32_t written_label(int32_t class_id) { return 10 * class_id + 3; }

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

// A 1-D little-endian int32 .npy, written as `mkbench fit` writes its labels.
std::string npy_int32_vector(const std::vector<int32_t>& values) {
  return npy_bytes("<i4", {int64_t(values.size())}, values.data(), values.size() * sizeof(int32_t));
}

void append_big_endian(std::string& bytes, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) bytes += char((value >> shift) & 0xff);
}

// IDX: float32 rows x columns (type 0x0D), or unsigned-byte labels (type 0x08), big-endian.
std::string idx_float_matrix(const Dataset& data) {
  std::string bytes{'\0', '\0', '\x0d', '\x02'};
  append_big_endian(bytes, uint32_t(data.m));
  append_big_endian(bytes, uint32_t(data.n));
  for (float value : data.values) {
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    append_big_endian(bytes, bits);
  }
  return bytes;
}

std::string idx_byte_vector(const std::vector<int32_t>& values) {
  std::string bytes{'\0', '\0', '\x08', '\x01'};
  append_big_endian(bytes, uint32_t(values.size()));
  for (int32_t value : values) bytes += char(uint8_t(value));
  return bytes;
}

// The planted table of ExploreCli.WritesRankedJsonAndReports: only attributes 0, 2 and 3 carry the class.
struct LabelledFilesFixture {
  testing_support::TempFolder folder{"explore_files"};
  SusyTable table = generate_susy(parse_susy_spec("susy:informative=0,2,3:correlated=0:shift=2", 3000, 5, 7));

  LabelledFilesFixture() {
    std::vector<int32_t> written;
    for (int32_t label : table.labels) written.push_back(written_label(label));
    save_npy(folder.file("data.npy"), table.data);
    write_bytes(folder.file("labels.npy"), npy_int32_vector(written));
    write_bytes(folder.file("data.idx"), idx_float_matrix(table.data));
    write_bytes(folder.file("labels.idx"), idx_byte_vector(written));
  }
  // (data spec, labels spec) of each file form.
  std::vector<std::pair<std::string, std::string>> forms() const {
    return {{"npy:" + folder.file("data.npy"), "npy:" + folder.file("labels.npy")},
            {"idx:" + folder.file("data.idx"), "idx:" + folder.file("labels.idx")}};
  }
};

TEST(ExploreLabelledFiles, NpyAndIdxFilesGiveTheGeneratorsRowsAndClasses) {
  const LabelledFilesFixture files;
  for (const auto& [data_spec, labels_spec] : files.forms()) {
    const explore::LabelledTable loaded = explore::load_labelled_table(data_spec, labels_spec, 0, 0, 1);
    ASSERT_EQ(loaded.data.m, files.table.data.m) << data_spec;
    ASSERT_EQ(loaded.data.n, files.table.data.n) << data_spec;
    EXPECT_EQ(loaded.data.values, files.table.data.values) << data_spec;
    EXPECT_EQ(loaded.class_values, (std::vector<int64_t>{written_label(0), written_label(1)})) << labels_spec;
    EXPECT_EQ(loaded.labels, files.table.labels) << labels_spec;
    EXPECT_EQ(loaded.labels_identity.at("path"), labels_spec.substr(4)) << labels_spec;
  }
}

TEST(ExploreLabelledFiles, RanksThePlantedSubsetFirstFromNpyAndIdxFiles) {
  const LabelledFilesFixture files;
  for (const auto& [data_spec, labels_spec] : files.forms()) {
    testing_support::TempFolder out("explore_files_out");
    const auto result = testing_support::run_mkbench_args(
        {"explore", "--dataset", data_spec, "--labels", labels_spec, "--all", "--k", "4", "--engine", "cpu-openmp",
         "--no-baseline", "--quiet", "--out", out.path().string()});
    ASSERT_EQ(result.exit_code, 0) << data_spec << ": " << result.output;
    std::ifstream in(out.file("explore.json"));
    const nlohmann::json doc = nlohmann::json::parse(in);
    EXPECT_EQ(doc.at("subsets")[0].at("columns"), nlohmann::json({0, 2, 3})) << data_spec;
    EXPECT_EQ(doc.at("dataset").at("labels").at("format"), labels_spec.substr(0, 3)) << labels_spec;
  }
}

TEST(ExploreLabelledFiles, MissingOrMiscountedLabelsExitTwo) {
  const LabelledFilesFixture files;
  {
    std::vector<int32_t> short_labels(files.table.labels.begin(), files.table.labels.end() - 1);
    write_bytes(files.folder.file("short.npy"), npy_int32_vector(short_labels));
  }
  const std::string data = "npy:" + files.folder.file("data.npy");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--dataset", data}, "has no labels"},
      {{"--dataset", data, "--labels", "npy:" + files.folder.file("short.npy")}, "hold 2999 labels"},
      {{"--dataset", data, "--labels", "npy:" + files.folder.file("absent.npy")}, "absent.npy"},
  };
  for (const auto& [arguments, message] : cases) {
    std::vector<std::string> command{"explore", "--engine", "cpu-openmp", "--no-baseline"};
    command.insert(command.end(), arguments.begin(), arguments.end());
    const auto result = testing_support::run_mkbench_args(command);
    EXPECT_EQ(result.exit_code, 2) << message << ": " << result.output;
    EXPECT_NE(result.output.find(message), std::string::npos) << message << ": " << result.output;
  }
}

}  // namespace
}  // namespace mk
