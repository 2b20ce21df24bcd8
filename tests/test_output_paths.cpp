// An output path that cannot be written fails a command before its work, not after: check_writable
// (harness/results.hpp) on its own, then every command with an output path through the binary,
// each given a path under /proc (where nothing can be created) and checked to have measured,
// verified or rendered nothing before exiting 2.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "core/errors.hpp"
#include "datasets/dataset.hpp"
#include "harness/results.hpp"

namespace mk {
namespace {

namespace fs = std::filesystem;

std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct Outcome {
  int exit_code = -1;
  std::string output;
};

Outcome mkbench(const std::string& arguments) {
  Outcome outcome;
  FILE* pipe = ::popen((quoted(MKBENCH_BINARY) + " " + arguments + " 2>&1").c_str(), "r");
  if (!pipe) return outcome;
  char buffer[4096];
  size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) outcome.output.append(buffer, got);
  const int status = ::pclose(pipe);
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return outcome;
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "mkbench-out-XXXXXX").string();
    path = ::mkdtemp(pattern.data()) ? fs::path(pattern) : fs::path();
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path.empty()) fs::remove_all(path, ignored);
  }
};

std::string message_of(const std::string& path) {
  try {
    check_writable(path);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST(CheckWritable, AcceptsAWritableFolderAndLeavesNothingThere) {
  TempDir temp;
  EXPECT_NO_THROW(check_writable((temp.path / "results.json").string()));
  EXPECT_TRUE(fs::is_empty(temp.path));
}

TEST(CheckWritable, CreatesMissingFoldersAsTheWriterWould) {
  TempDir temp;
  const fs::path target = temp.path / "a" / "b" / "results.json";
  EXPECT_NO_THROW(check_writable(target.string()));
  EXPECT_TRUE(fs::is_directory(target.parent_path()));
  EXPECT_FALSE(fs::exists(target));
  write_text_atomically(target.string(), "{}\n");  // and the writer then succeeds there
  EXPECT_TRUE(fs::exists(target));
}

TEST(CheckWritable, LeavesAnExistingTargetAlone) {
  TempDir temp;
  const fs::path target = temp.path / "results.json";
  std::ofstream(target) << "previous";
  EXPECT_NO_THROW(check_writable(target.string()));
  std::ifstream in(target);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "previous");
  EXPECT_EQ(std::distance(fs::directory_iterator(temp.path), fs::directory_iterator()), 1);
}

TEST(CheckWritable, RefusesWhatTheWriterCouldNotWrite) {
  TempDir temp;
  std::ofstream(temp.path / "plain-file") << "x";
  fs::create_directory(temp.path / "folder");
  for (const std::string& path : {std::string("/proc/nope/x.json"), (temp.path / "plain-file" / "x.json").string(),
                                  (temp.path / "folder").string(), (temp.path / "folder").string() + "/",
                                  std::string("/proc/version")}) {
    const std::string message = message_of(path);
    EXPECT_NE(message.find("cannot write " + path), std::string::npos) << path << ": \"" << message << "\"";
  }
}

// A path that names a device or a FIFO is written in place: renaming a finished file over it
// replaced /dev/null itself for a root user (found by a bad-input audit at 04dfbaa).
std::string read_fifo_while(const fs::path& fifo, const std::function<void()>& write) {
  std::string got;
  std::thread reader([&] {
    std::ifstream in(fifo, std::ios::binary);
    got.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  });
  // The writer's open fails while no reader has opened the FIFO yet: try again until it has
  // (for up to a minute: a loaded machine under the sanitizers starts threads slowly).
  for (int attempt = 0;; ++attempt) try {
      write();
      break;
    } catch (const InputError& error) {
      if (attempt == 12000 || std::string(error.what()).find("no process reads it") == std::string::npos) {
        ADD_FAILURE() << error.what();
        std::ofstream(fifo) << "";  // lets the reader's open return
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  reader.join();
  return got;
}

TEST(SpecialOutputs, AFifoIsWrittenInPlaceAndStaysAFifo) {
  TempDir temp;
  const fs::path fifo = temp.path / "out.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NO_THROW(check_writable(fifo.string()));
  const std::string got = read_fifo_while(fifo, [&] { write_text_atomically(fifo.string(), "{\"rows\": []}\n"); });
  EXPECT_EQ(got, "{\"rows\": []}\n");
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_EQ(std::distance(fs::directory_iterator(temp.path), fs::directory_iterator()), 1) << "no file beside it";
  Dataset centres;
  centres.m = 2;
  centres.n = 3;
  centres.values = {1, 2, 3, 4, 5, 6};
  const std::string npy = read_fifo_while(fifo, [&] { save_npy(fifo.string(), centres); });
  EXPECT_EQ(parse_npy(npy, "fifo").values, centres.values);
  EXPECT_TRUE(fs::is_fifo(fifo));
}

TEST(SpecialOutputs, AFifoWithoutAReaderAndAFullDeviceAreInputErrors) {
  TempDir temp;
  const fs::path fifo = temp.path / "nobody-reads";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {
    write_text_atomically(fifo.string(), "{}\n");
    ADD_FAILURE() << "a FIFO without a reader was written";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("no process reads it"), std::string::npos) << error.what();
  }
  if (!fs::is_character_file("/dev/full")) GTEST_SKIP() << "no /dev/full on this machine";
  try {
    write_text_atomically("/dev/full", "{}\n");
    ADD_FAILURE() << "/dev/full took the text";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("cannot write /dev/full"), std::string::npos) << error.what();
  }
  EXPECT_TRUE(fs::is_character_file("/dev/full"));
}

// What a command reads whole must be a regular file: /dev/zero was read until memory ran out and
// a FIFO's open waited for a writer for good (a bad-input audit at 04dfbaa).
TEST(SpecialInputs, DevicesAndFifosAreRefusedNotReadForever) {
  TempDir temp;
  const fs::path fifo = temp.path / "points.npy";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string f = fifo.string();
  for (const std::string& arguments :
       {std::string("report /dev/zero"), std::string("compare /dev/zero /dev/zero"), std::string("suite /dev/zero"),
        "run --variant cpu-openmp --k 3 --dataset npy:" + f, "run --variant cpu-openmp --k 3 --dataset csv:" + f,
        std::string("fit --variant cpu-openmp --k 3 --dataset csv:/dev/zero --quiet"),
        "fit --variant cpu-openmp --k 3 --dims 2 --points 100 --dataset uniform --quiet --weights npy:" + f}) {
    SCOPED_TRACE(arguments);
    const Outcome outcome = mkbench("--host-memory 2G " + arguments);
    EXPECT_EQ(outcome.exit_code, 2) << outcome.output;
    EXPECT_NE(outcome.output.find("not a regular file"), std::string::npos) << outcome.output;
  }
}

// A command handed an unwritable output must stop before its work: exit 2, the path named,
// and none of the work's output.
void expect_refused_before_work(const std::string& arguments, const std::string& work_sign) {
  SCOPED_TRACE(arguments);
  const Outcome outcome = mkbench(arguments);
  EXPECT_EQ(outcome.exit_code, 2) << outcome.output;
  EXPECT_NE(outcome.output.find("cannot write /proc/nope/"), std::string::npos) << outcome.output;
  EXPECT_EQ(outcome.output.find(work_sign), std::string::npos) << "did the work first:\n" << outcome.output;
}

TEST(UnwritableOutput, RunMeasuresNothing) {
  expect_refused_before_work(
      "run --variant cpu-openmp --dims 2 --k 3 --points 20000 --iters 10 --out /proc/nope/x.json", "cpu-openmp/2/");
}

TEST(UnwritableOutput, SeedSeedsNothing) {
  const std::string seed = "seed --dims 2 --points 20000 --k 8 --init k-means++ --cpu ";
  expect_refused_before_work(seed + "--out /proc/nope/x.json", "k-means++ K=8 on");
  expect_refused_before_work(seed + "--centroids-out /proc/nope/c.npy", "k-means++ K=8 on");
}

TEST(UnwritableOutput, SuiteMeasuresNothing) {
  expect_refused_before_work("suite smoke --out /proc/nope/x.json", "[1/");
  expect_refused_before_work("--suite smoke --out /proc/nope/x.json", "[1/");
}

TEST(UnwritableOutput, TuneMeasuresNothing) {
  TempDir temp;
  expect_refused_before_work("tune --dims 2 --k 3 --points 2000 --variants cpu-openmp --max-evals 2 --cache " +
                                 quoted((temp.path / "cache.jsonl").string()) + " --config-out /proc/nope/c.json",
                             "tuning on");
  expect_refused_before_work("tune --dims 2 --k 3 --points 2000 --variants cpu-openmp --max-evals 2 --cache "
                             "/proc/nope/cache.jsonl --config-out " +
                                 quoted((temp.path / "c.json").string()),
                             "tuning on");
  EXPECT_TRUE(fs::is_empty(temp.path));
}

TEST(UnwritableOutput, VerifyMatrixVerifiesNothing) {
  expect_refused_before_work("verify-matrix --variants cpu-openmp --dims 2 --k 3..4 --points 1000 --out /proc/nope/m.json",
                             "N=2 K=3..4");
}

TEST(UnwritableOutput, BaselineUpdateRunsNoSuite) {
  expect_refused_before_work("baseline update --suite smoke --device-slug some-gpu --dir /proc/nope",
                             "mkbench baseline: running");
}

TEST(UnwritableOutput, CompareAndReportRenderNothing) {
  const std::string fixture = quoted(std::string(MKBENCH_TEST_DATA) + "/results_gate_baseline_fixture.json");
  expect_refused_before_work("compare " + fixture + " " + fixture + " --out /proc/nope/c.md", "rows compared");
  expect_refused_before_work("report " + fixture + " --out /proc/nope/r.md", "registers-multik");
}

}  // namespace
}  // namespace mk
