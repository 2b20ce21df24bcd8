// The IDX loader (datasets/idx.cpp): MNIST's format, plain and gzipped, every element type,
// and a clean InputError for each way a file can be malformed. The files are assembled here
// byte by byte (big-endian by hand, gzip through zlib's own deflate), not by the loader's code.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "datasets/dataset.hpp"
#include "datasets/digest.hpp"

namespace fs = std::filesystem;

namespace {

std::string big_endian(uint64_t value, int bytes) {
  std::string out;
  for (int i = bytes - 1; i >= 0; --i) out += static_cast<char>((value >> (8 * i)) & 0xff);
  return out;
}

std::string idx_header(unsigned char type, const std::vector<uint32_t>& dims) {
  std::string out = {'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) out += big_endian(d, 4);
  return out;
}

std::string float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return big_endian(bits, 4);
}

std::string double_bits(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, 8);
  return big_endian(bits, 8);
}

// gzip (RFC 1952) through zlib's deflate with a gzip wrapper.
std::string gzip(const std::string& bytes) {
  z_stream stream{};
  EXPECT_EQ(deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&stream, bytes.size()) + 32, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

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

class IdxFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() /
              ("mkbench_test_idx_" + std::to_string(::getpid()) + "_" +
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

// Three 2x2 "images" whose pixel (i, r, c) is 10*i + 2*r + c.
std::string three_images() {
  std::string bytes = idx_header(0x08, {3, 2, 2});
  for (int i = 0; i < 3; ++i)
    for (int p = 0; p < 4; ++p) bytes += static_cast<char>(10 * i + p);
  return bytes;
}

}  // namespace

TEST_F(IdxFiles, ImagesFlattenRowMajorIntoPoints) {
  const std::string bytes = three_images();
  const std::string file = write("images-idx3-ubyte", bytes);
  const mk::Dataset data = mk::load_idx(file);
  EXPECT_EQ(data.m, 3);
  EXPECT_EQ(data.n, 4);
  std::vector<float> expected;
  for (int i = 0; i < 3; ++i)
    for (int p = 0; p < 4; ++p) expected.push_back(float(10 * i + p));
  EXPECT_EQ(data.values, expected);
  EXPECT_EQ(data.identity["format"], "idx");
  EXPECT_EQ(data.identity["element"], "unsigned byte");
  EXPECT_EQ(data.identity["shape"], (std::vector<uint32_t>{3, 2, 2}));
  EXPECT_EQ(data.identity["gzip"], false);
  EXPECT_EQ(data.identity["bytes"], bytes.size());
  EXPECT_EQ(data.identity["xxh3_128"], mk::data_digest(bytes.data(), bytes.size()));
  EXPECT_NEAR(data.sparsity, 1.0 / 12.0, 1e-12);  // only pixel (0,0,0) is 0
}

TEST_F(IdxFiles, GzippedFileIsDetectedByItsMagicAndReadsTheSame) {
  const std::string compressed = gzip(three_images());
  // No .gz in the name: the gzip magic decides.
  const std::string file = write("images-idx3-ubyte", compressed);
  const mk::Dataset data = mk::load_idx(file);
  EXPECT_EQ(data.values, mk::load_idx(write("plain", three_images())).values);
  EXPECT_EQ(data.identity["gzip"], true);
  EXPECT_EQ(data.identity["xxh3_128"], mk::data_digest(compressed.data(), compressed.size()));  // of the file as stored
  // Two gzip members one after the other (what `cat a.gz b.gz` makes) are one stream.
  const std::string whole = three_images();
  const std::string two = gzip(whole.substr(0, 9)) + gzip(whole.substr(9));
  EXPECT_EQ(mk::load_idx(write("two.gz", two)).values, data.values);
}

TEST_F(IdxFiles, EveryElementTypeDecodesBigEndian) {
  struct Case {
    unsigned char type;
    std::string payload;
    std::vector<float> expected;
  };
  const std::vector<Case> cases = {
      {0x08, std::string("\x00\xff\x80\x01", 4), {0, 255, 128, 1}},
      {0x09, std::string("\x00\xff\x80\x7f", 4), {0, -1, -128, 127}},
      {0x0B, big_endian(0x8000, 2) + big_endian(0x7fff, 2) + big_endian(0xfed4, 2) + big_endian(1, 2),
       {-32768, 32767, -300, 1}},
      {0x0C, big_endian(0xffffffffu, 4) + big_endian(16777216, 4) + big_endian(0x80000000u, 4) + big_endian(7, 4),
       {-1, 16777216, -2147483648.0f, 7}},
      {0x0D, float_bits(1.5f) + float_bits(-2.25f) + float_bits(1e-30f) + float_bits(3e38f),
       {1.5f, -2.25f, 1e-30f, 3e38f}},
      {0x0E, double_bits(0.1) + double_bits(-1e10) + double_bits(1e-300) + double_bits(2.0),
       {0.1f, -1e10f, 0.0f, 2.0f}},
  };
  for (const Case& c : cases) {
    const mk::Dataset data = mk::parse_idx(idx_header(c.type, {2, 2}) + c.payload, "t");
    EXPECT_EQ(data.m, 2);
    EXPECT_EQ(data.n, 2);
    EXPECT_EQ(data.values, c.expected) << "type 0x" << std::hex << int(c.type);
  }
}

TEST_F(IdxFiles, OneDimensionalFileIsALabelVector) {
  const std::string labels = idx_header(0x08, {5}) + std::string("\x00\x01\x09\x03\x00", 5);
  const std::string file = write("labels-idx1-ubyte", gzip(labels));
  const mk::Labels loaded = mk::load_idx_labels(file);
  EXPECT_EQ(loaded.values, (std::vector<int32_t>{0, 1, 9, 3, 0}));
  EXPECT_EQ(loaded.identity["gzip"], true);
  expect_input_error([&] { mk::load_idx(file); }, {file, "1-D", "label vector"});
  expect_input_error([] { mk::parse_idx_labels(three_images(), "t"); }, {"must be a 1-D IDX vector", "3 x 2 x 2"});
  expect_input_error([] { mk::parse_idx_labels(idx_header(0x0D, {1}) + float_bits(1.0f), "t"); },
                     {"labels must be integers", "float"});
  const std::string shorts = idx_header(0x0B, {2}) + big_endian(0xffff, 2) + big_endian(300, 2);
  EXPECT_EQ(mk::parse_idx_labels(shorts, "t").values, (std::vector<int32_t>{-1, 300}));
}

TEST_F(IdxFiles, MalformedHeadersAreCleanInputErrors) {
  expect_input_error([] { mk::parse_idx(std::string("\x00\x00\x08", 3), "t"); }, {"too short", "3 bytes"});
  expect_input_error([] { mk::parse_idx(std::string(), "t"); }, {"too short", "0 bytes"});
  expect_input_error([] { mk::parse_idx("\x01\x02\x08\x01" + big_endian(1, 4) + "x", "t"); },
                     {"not an IDX file", "magic", "0x01 0x02"});
  expect_input_error([] { mk::parse_idx(idx_header(0x07, {1, 1}) + "x", "t"); }, {"element type 0x07"});
  expect_input_error([] { mk::parse_idx(idx_header(0x08, {}), "t"); }, {"0 dimensions"});
  // The header announces three sizes but holds one.
  expect_input_error([] { mk::parse_idx(std::string("\x00\x00\x08\x03", 4) + big_endian(2, 4), "t"); },
                     {"truncated", "3 dimension sizes"});
  expect_input_error([] { mk::parse_idx(idx_header(0x08, {2, 0, 3}), "t"); }, {"empty"});
  expect_input_error([] { mk::parse_idx(idx_header(0x0E, {0xffffffffu, 0xffffffffu, 0xffffffffu}) + "x", "t"); },
                     {"overflow"});
  expect_input_error([] { mk::parse_idx(idx_header(0x0E, {0xffffffffu, 0xffffffffu}) + "x", "t"); },
                     {"too large"});
}

TEST_F(IdxFiles, SizesThatDisagreeWithTheDataAreCleanInputErrors) {
  const std::string images = three_images();
  // A header claiming 60000 images, before any allocation for them.
  expect_input_error([] { mk::parse_idx(idx_header(0x08, {60000, 28, 28}) + "abc", "t"); },
                     {"truncated", "60000 x 28 x 28", "47040000 bytes", "only 3 bytes follow"});
  expect_input_error([&] { mk::parse_idx(images.substr(0, images.size() - 1), "t"); },
                     {"truncated", "11 bytes follow"});
  expect_input_error([&] { mk::parse_idx(images + "xy", "t"); }, {"2 unexpected bytes"});
  // The same claims inside gzip: the stream is too short to hold them.
  expect_input_error([] { mk::parse_idx(gzip(idx_header(0x08, {60000, 28, 28}) + "abc"), "t"); },
                     {"truncated", "compressed stream is too short"});
  expect_input_error([&] { mk::parse_idx(gzip(images + "xy"), "t"); }, {"unexpected bytes"});
}

TEST_F(IdxFiles, DamagedGzipStreamsAreCleanInputErrors) {
  std::string big = idx_header(0x08, {100, 50});
  for (int i = 0; i < 5000; ++i) big += static_cast<char>((i * 7919) % 251);
  const std::string compressed = gzip(big);
  // Cut at several places: header, middle of the deflate data, inside the 8-byte trailer.
  for (size_t keep : {size_t(5), compressed.size() / 2, compressed.size() - 4}) {
    const std::string file = write("cut.gz", compressed.substr(0, keep));
    expect_input_error([&] { mk::load_idx(file); }, {file, "truncated"});
  }
  std::string flipped = compressed;
  flipped[flipped.size() - 6] ^= 0x55;  // the CRC-32 in the trailer
  expect_input_error([&] { mk::parse_idx(flipped, "t"); }, {"corrupt gzip stream"});
  std::string garbled = compressed;
  garbled[3] = '\xff';  // reserved flag bits
  expect_input_error([&] { mk::parse_idx(garbled, "t"); }, {"corrupt gzip stream"});
  const std::string with_garbage = compressed + "NOTGZIP";
  expect_input_error([&] { mk::parse_idx(with_garbage, "t"); }, {"corrupt gzip stream"});
}

TEST_F(IdxFiles, ValuesOutsideFloat32AndNonFiniteValuesAreRejected) {
  expect_input_error([] { mk::parse_idx(idx_header(0x0E, {1, 2}) + double_bits(1.0) + double_bits(1e300), "t"); },
                     {"outside the float32 range", "row 0, column 1"});
  expect_input_error(
      [] {
        mk::parse_idx(idx_header(0x0D, {2, 1}) + float_bits(1.0f) +
                          float_bits(std::numeric_limits<float>::quiet_NaN()),
                      "t");
      },
      {"NaN at row 1, column 0"});
}

TEST_F(IdxFiles, DatasetSpecReadsIdxAndItsShapeFromTheHeader) {
  const std::string file = write("images.gz", gzip(three_images()));
  EXPECT_TRUE(mk::is_file_dataset_spec("idx:" + file));
  const mk::DataShape shape = mk::file_dataset_shape("idx:" + file);
  EXPECT_EQ(shape.m, 3);
  EXPECT_EQ(shape.n, 4);
  // m and n are a generator's; a file decides its own shape.
  const mk::Dataset data = mk::load_dataset_spec("idx:" + file, 999, 8, 1);
  EXPECT_EQ(data.m, 3);
  EXPECT_EQ(data.n, 4);
  expect_input_error([] { mk::load_dataset_spec("idx:", 0, 0, 1); }, {"missing file path"});
  expect_input_error([&] { mk::load_dataset_spec("idx:" + file + ".missing", 0, 0, 1); }, {"cannot open"});
}

TEST_F(IdxFiles, ImagesWithTheirLabelsFile) {
  const std::string images = write("train-images-idx3-ubyte.gz", gzip(three_images()));
  const std::string labels = write("train-labels-idx1-ubyte.gz", gzip(idx_header(0x08, {3}) + "\x07\x02\x01"));
  const mk::LabelledDataset both = mk::load_labelled_dataset("idx:" + images, "idx:" + labels, 0, 0, 1);
  EXPECT_EQ(both.data.m, 3);
  EXPECT_EQ(both.labels.values, (std::vector<int32_t>{7, 2, 1}));
  const std::string two = write("two-labels", idx_header(0x08, {2}) + "\x07\x02");
  expect_input_error([&] { mk::load_labelled_dataset("idx:" + images, "idx:" + two, 0, 0, 1); },
                     {"hold 2 labels", "has 3 points"});
}
