// variants/warm_runs.hpp: a run kept for the next fit of the same key, released when another
// takes its place, on demand, or once cold. Host-only runs (device -1) stand for the GPU's.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <system_error>
#include <thread>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "variants/warm_runs.hpp"

namespace mk {
namespace {

// A run that only counts its destruction.
class CountedRun final : public PreparedRun {
 public:
  explicit CountedRun(std::atomic<int>& destroyed) : destroyed_(destroyed) {}
  ~CountedRun() override { ++destroyed_; }
  void set_centroids(const std::vector<float>&) override {}
  void iterate(bool) override {}
  void synchronize() override {}
  IterationResult read_back() override { return {}; }

 private:
  std::atomic<int>& destroyed_;
};

// Each thread of a process as /proc shows it (name, kernel wait channel, system call): where a
// hung child waits.
std::string thread_states(pid_t pid) {
  std::string out;
  std::error_code error;
  for (std::filesystem::directory_iterator task("/proc/" + std::to_string(pid) + "/task", error), end;
       !error && task != end; task.increment(error)) {
    out += "  " + task->path().filename().string();
    for (const char* field : {"comm", "wchan", "syscall"}) {
      std::ifstream in(task->path() / field);
      std::string value;
      std::getline(in, value);
      out += std::string(" ") + field + "=" + value;
    }
    out += "\n";
  }
  return error ? out + "  (/proc unreadable: " + error.message() + ")\n" : out;
}

WarmRunKey key(const std::string& problem) { return WarmRunKey{-1, "registers-multik", "block=512", problem}; }

TEST(WarmRuns, TheNextFitOfTheSameKeyTakesTheKeptRun) {
  release_warm_runs();
  std::atomic<int> destroyed{0};
  auto run = std::make_unique<CountedRun>(destroyed);
  const PreparedRun* kept = run.get();
  keep_run_warm(key("M=100 N=4 K=3"), std::move(run));
  EXPECT_EQ(take_warm_run(key("M=100 N=4 K=4")), nullptr) << "another shape must not take it";
  std::unique_ptr<PreparedRun> taken = take_warm_run(key("M=100 N=4 K=3"));
  EXPECT_EQ(taken.get(), kept);
  EXPECT_EQ(take_warm_run(key("M=100 N=4 K=3")), nullptr) << "a run is taken once";
  EXPECT_EQ(destroyed.load(), 0);
  taken.reset();
  EXPECT_EQ(destroyed.load(), 1);
}

TEST(WarmRuns, HoldsTellsTheKeptRunsDeviceAndShapeOnly) {
  release_warm_runs();
  std::atomic<int> destroyed{0};
  EXPECT_FALSE(warm_run_holds(-1, "M=100 N=4 K=3"));
  keep_run_warm(key("M=100 N=4 K=3"), std::make_unique<CountedRun>(destroyed));
  EXPECT_TRUE(warm_run_holds(-1, "M=100 N=4 K=3"));
  EXPECT_FALSE(warm_run_holds(0, "M=100 N=4 K=3")) << "another device";
  EXPECT_FALSE(warm_run_holds(-1, "M=101 N=4 K=3")) << "another shape";
  EXPECT_TRUE(release_warm_runs());
  EXPECT_FALSE(warm_run_holds(-1, "M=100 N=4 K=3"));
  EXPECT_EQ(destroyed.load(), 1);
}

TEST(WarmRuns, AnotherRunTakesItsPlaceAndTheFirstIsReleased) {
  release_warm_runs();
  std::atomic<int> destroyed{0};
  keep_run_warm(key("M=100 N=4 K=3"), std::make_unique<CountedRun>(destroyed));
  keep_run_warm(key("M=200 N=4 K=3"), std::make_unique<CountedRun>(destroyed));
  EXPECT_EQ(destroyed.load(), 1);
  EXPECT_TRUE(release_warm_runs());
  EXPECT_EQ(destroyed.load(), 2);
  EXPECT_FALSE(release_warm_runs());
}

TEST(WarmRuns, AColdRunIsReleasedOnItsOwn) {
  release_warm_runs();
  static std::atomic<int> destroyed{0};  // outlives a failed test's kept run
  destroyed = 0;
  const auto kept_at = std::chrono::steady_clock::now();
  keep_run_warm(key("M=100 N=4 K=3"), std::make_unique<CountedRun>(destroyed));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kWarmSeconds + 10.0);
  while (destroyed.load() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const double held = std::chrono::duration<double>(std::chrono::steady_clock::now() - kept_at).count();
  EXPECT_EQ(destroyed.load(), 1) << "the kept run outlived " << kWarmSeconds << " s unused by 10 s";
  EXPECT_GE(held, kWarmSeconds * 0.9) << "the kept run went before it was cold";
  EXPECT_EQ(take_warm_run(key("M=100 N=4 K=3")), nullptr);
}

TEST(WarmRuns, AForkedChildNeitherTakesNorFreesItsParentsRunAndExitsCleanly) {
  release_warm_runs();
  static std::atomic<int> destroyed{0};
  destroyed = 0;
  const auto kept_at = std::chrono::steady_clock::now();
  keep_run_warm(key("M=100 N=4 K=3"), std::make_unique<CountedRun>(destroyed));
  std::fflush(nullptr);  // the child must not print the parent's buffered output again
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The parent's run is not the child's: not taken, not destroyed; a run of the child's own is
    // kept and released as in any process; exit runs the release hook without the parent's thread.
    const bool not_taken = take_warm_run(key("M=100 N=4 K=3")) == nullptr;
    const bool not_destroyed = destroyed.load() == 0;
    std::atomic<int> own{0};
    keep_run_warm(key("M=7 N=1 K=1"), std::make_unique<CountedRun>(own));
    const bool own_released = release_warm_runs() && own.load() == 1;
    std::exit(not_taken && not_destroyed && own_released ? 0 : 3);
  }
  // A hung child fails the test in minutes rather than holding the shard to its ctest timeout.
  int status = 0;
  const auto child_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  pid_t reaped = 0;
  while ((reaped = waitpid(child, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < child_deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (reaped == 0) {
    const std::string where = thread_states(child);
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    FAIL() << "the forked child had not exited after 300 s; its threads:\n" << where;
  }
  ASSERT_EQ(reaped, child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child did not exit normally";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: the child took or destroyed its parent's run, or mishandled its own";
  // The parent keeps its run until it goes cold. Under AddressSanitizer the child's exit (its
  // LeakSanitizer scan) took 2.4 s, past kWarmSeconds, and the parent's reaper had rightly
  // released the run by then (CI at 52a25d9); only a run gone before it was cold is a fault.
  std::unique_ptr<PreparedRun> taken = take_warm_run(key("M=100 N=4 K=3"));
  const double held = std::chrono::duration<double>(std::chrono::steady_clock::now() - kept_at).count();
  EXPECT_TRUE(taken != nullptr || held >= kWarmSeconds)
      << "the parent lost its run after " << held << " s, before it was cold";
  taken.reset();
  release_warm_runs();  // waits for the reaper when it is the one destroying it
  EXPECT_EQ(destroyed.load(), 1) << "the parent's run is destroyed once, by the parent";
}

}  // namespace
}  // namespace mk
