// variants/warm_runs.hpp: a run kept for the next fit of the same key, released when another
// takes its place, on demand, or once cold. Host-only runs (device -1) stand for the GPU's.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

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

WarmRunKey key(const std::string& problem) { return WarmRunKey{-1, "registers-multik", "block=512", problem}; }

TEST(WarmRuns, TheNextFitOfTheSameKeyTakesTheKeptRun) {
  release_warm_runs();
  std::atomic<int> destroyed{0};
  auto run = std::make_unique<CountedRun>(destroyed);
  const PreparedRun* kept = run.get();
  keep_run_warm(key("M=100 N=4 K=3"), std::move(run), 4096);
  EXPECT_EQ(warm_run_bytes(-1), 4096);
  EXPECT_EQ(take_warm_run(key("M=100 N=4 K=4")), nullptr) << "another shape must not take it";
  std::unique_ptr<PreparedRun> taken = take_warm_run(key("M=100 N=4 K=3"));
  EXPECT_EQ(taken.get(), kept);
  EXPECT_EQ(take_warm_run(key("M=100 N=4 K=3")), nullptr) << "a run is taken once";
  EXPECT_EQ(warm_run_bytes(-1), 0);
  EXPECT_EQ(destroyed.load(), 0);
  taken.reset();
  EXPECT_EQ(destroyed.load(), 1);
}

TEST(WarmRuns, AnotherRunTakesItsPlaceAndTheFirstIsReleased) {
  release_warm_runs();
  std::atomic<int> destroyed{0};
  keep_run_warm(key("M=100 N=4 K=3"), std::make_unique<CountedRun>(destroyed), 100);
  keep_run_warm(key("M=200 N=4 K=3"), std::make_unique<CountedRun>(destroyed), 200);
  EXPECT_EQ(destroyed.load(), 1);
  EXPECT_EQ(warm_run_bytes(-1), 200);
  EXPECT_EQ(warm_run_bytes(0), 0) << "bytes are per device";
  EXPECT_TRUE(release_warm_runs());
  EXPECT_EQ(destroyed.load(), 2);
  EXPECT_FALSE(release_warm_runs());
}

TEST(WarmRuns, AColdRunIsReleasedOnItsOwn) {
  release_warm_runs();
  std::atomic<int> destroyed{0};
  keep_run_warm(key("M=100 N=4 K=3"), std::make_unique<CountedRun>(destroyed), 100);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kWarmSeconds + 10.0);
  while (destroyed.load() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(destroyed.load(), 1) << "the kept run outlived " << kWarmSeconds << " s unused by 10 s";
  EXPECT_EQ(warm_run_bytes(-1), 0);
  EXPECT_EQ(take_warm_run(key("M=100 N=4 K=3")), nullptr);
}

}  // namespace
}  // namespace mk
