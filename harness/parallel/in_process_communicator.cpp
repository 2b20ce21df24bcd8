#include "harness/parallel/in_process_communicator.hpp"

#include <condition_variable>
#include <cstring>
#include <mutex>

namespace mk {

// The shared half of the endpoints: who has arrived at the current collective and with
// which buffer, and whether the group was aborted.
class InProcessGroup {
 public:
  explicit InProcessGroup(int ranks) : ranks_(ranks), buffers_(size_t(ranks), nullptr) {}

  // Rank `rank` arrives with `buffer`; the last arrival runs `combine` over every rank's
  // buffer (indexed by rank) before anyone leaves. Throws CollectiveAborted when the group is
  // aborted, or this rank waited longer than collective_timeout().
  template <typename Combine>
  void rendezvous(int rank, void* buffer, const char* what, Combine combine) {
    std::unique_lock<std::mutex> lock(mutex_);
    throw_if_aborted(rank);
    const uint64_t generation = generation_;
    buffers_[size_t(rank)] = buffer;
    if (++arrived_ == ranks_) {
      combine(buffers_);
      arrived_ = 0;
      ++generation_;
      changed_.notify_all();
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(collective_timeout());
    while (generation_ == generation && !aborted_) {
      if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && generation_ == generation && !aborted_) {
        aborted_ = true;
        reason_ = "rank " + std::to_string(rank) + " waited " + std::to_string(int(collective_timeout().count())) +
                  " s for its peers in " + what + " (MKBENCH_COLLECTIVE_TIMEOUT_S): a peer died or hangs";
        changed_.notify_all();
      }
    }
    if (generation_ == generation) throw_if_aborted(rank);
  }

  void abort(const std::string& reason) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!aborted_) reason_ = reason;
    aborted_ = true;
    changed_.notify_all();
  }

  int ranks() const { return ranks_; }

 private:
  void throw_if_aborted(int rank) const {
    if (aborted_) throw CollectiveAborted("rank " + std::to_string(rank) + " stopped: " + reason_);
  }

  const int ranks_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<void*> buffers_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
  std::string reason_;
};

namespace {

template <typename T>
void sum_into_all(const std::vector<void*>& buffers, size_t count, std::vector<T>& scratch) {
  scratch.assign(count, T(0));
  for (void* buffer : buffers) {
    const T* values = static_cast<const T*>(buffer);
    for (size_t i = 0; i < count; ++i) scratch[i] += values[i];
  }
  for (void* buffer : buffers) std::memcpy(buffer, scratch.data(), count * sizeof(T));
}

class InProcessCommunicator : public Communicator {
 public:
  InProcessCommunicator(std::shared_ptr<InProcessGroup> group, int rank) : group_(std::move(group)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return group_->ranks(); }
  std::string kind() const override { return "in-process"; }
  bool reduces_device_buffers() const override { return false; }

  void all_reduce_sum(double* data, size_t count, void*) override { host_all_reduce_sum(data, count); }
  void all_reduce_sum(unsigned long long* data, size_t count, void*) override {
    group_->rendezvous(rank_, data, "all-reduce",
                       [&](const std::vector<void*>& buffers) { sum_into_all(buffers, count, u64_scratch_); });
  }
  void host_all_reduce_sum(double* data, size_t count) override {
    group_->rendezvous(rank_, data, "all-reduce",
                       [&](const std::vector<void*>& buffers) { sum_into_all(buffers, count, f64_scratch_); });
  }
  void broadcast(void* bytes, size_t size, int root) override {
    if (root < 0 || root >= group_->ranks()) throw InputError("broadcast from rank " + std::to_string(root));
    group_->rendezvous(rank_, bytes, "broadcast", [&](const std::vector<void*>& buffers) {
      for (size_t r = 0; r < buffers.size(); ++r)
        if (int(r) != root && size) std::memcpy(buffers[r], buffers[size_t(root)], size);
    });
  }
  void barrier() override {
    group_->rendezvous(rank_, nullptr, "barrier", [](const std::vector<void*>&) {});
  }
  void abort(const std::string& reason) override { group_->abort(reason); }

 private:
  std::shared_ptr<InProcessGroup> group_;
  int rank_;
  // The last arrival sums here with its own scratch: endpoints never share one.
  std::vector<double> f64_scratch_;
  std::vector<unsigned long long> u64_scratch_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_in_process_group(int ranks) {
  if (ranks < 1) throw InputError("a group needs at least one rank, got " + std::to_string(ranks));
  auto group = std::make_shared<InProcessGroup>(ranks);
  std::vector<std::unique_ptr<Communicator>> endpoints;
  for (int r = 0; r < ranks; ++r) endpoints.push_back(std::make_unique<InProcessCommunicator>(group, r));
  return endpoints;
}

}  // namespace mk
