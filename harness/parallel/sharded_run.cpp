#include "harness/parallel/sharded_run.hpp"

#include <cuda_runtime.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "harness/metrics.hpp"

namespace mk {

std::vector<RowRange> split_rows(int64_t m, int shards) {
  if (shards < 1) throw InputError("cannot split rows over " + std::to_string(shards) + " shards");
  if (m < shards)
    throw UnsupportedError(std::to_string(m) + " points cannot be split over " + std::to_string(shards) +
                           " shards (each needs at least one point)");
  std::vector<RowRange> ranges;
  const int64_t base = m / shards, extra = m % shards;
  int64_t begin = 0;
  for (int s = 0; s < shards; ++s) {
    const int64_t size = base + (s < extra ? 1 : 0);
    ranges.push_back({begin, begin + size});
    begin += size;
  }
  return ranges;
}

namespace {

void cuda_ok(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();
  throw DeviceError(std::string(what) + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}

[[noreturn]] void throw_with_code(int code, const std::string& message) {
  switch (code) {
    case kExitBadInput: throw InputError(message);
    case kExitUnsupported: throw UnsupportedError(message);
    case kExitVerifyFailed: throw VerifyError(message);
    default: throw DeviceError(message);
  }
}

// Every rank's string, indexed by rank: each rank broadcasts its own in turn. Collective.
std::vector<std::string> all_gather_strings(Communicator& comm, const std::string& mine) {
  std::vector<std::string> out(size_t(comm.size()));
  for (int r = 0; r < comm.size(); ++r) {
    uint64_t length = r == comm.rank() ? mine.size() : 0;
    comm.broadcast(&length, sizeof length, r);
    std::string text = r == comm.rank() ? mine : std::string(length, '\0');
    comm.broadcast(text.data(), length, r);
    out[size_t(r)] = std::move(text);
  }
  return out;
}

std::string host_name() {
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string("unknown");
}

// The phases of one shard's step: CUDA events on a GPU shard's stream (read once the step
// is complete), the steady clock on the host.
class PhaseClock {
 public:
  explicit PhaseClock(bool gpu) : gpu_(gpu) {
    if (gpu_)
      for (auto& event : events_) cuda_ok(cudaEventCreate(&event), "cudaEventCreate");
  }
  ~PhaseClock() {
    for (auto event : events_)
      if (event) cudaEventDestroy(event);
  }
  PhaseClock(const PhaseClock&) = delete;
  PhaseClock& operator=(const PhaseClock&) = delete;

  void mark(int phase, void* stream) {
    if (gpu_) cuda_ok(cudaEventRecord(events_[phase], static_cast<cudaStream_t>(stream)), "cudaEventRecord");
    else times_[phase] = std::chrono::steady_clock::now();
  }
  // (accumulate, all-reduce) in ms.
  std::pair<double, double> read() {
    if (!gpu_) {
      auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
      return {ms(times_[0], times_[1]), ms(times_[1], times_[2])};
    }
    cuda_ok(cudaEventSynchronize(events_[2]), "step timing");
    float accumulate = 0, reduce = 0;
    cuda_ok(cudaEventElapsedTime(&accumulate, events_[0], events_[1]), "cudaEventElapsedTime");
    cuda_ok(cudaEventElapsedTime(&reduce, events_[1], events_[2]), "cudaEventElapsedTime");
    return {double(accumulate), double(reduce)};
  }

 private:
  bool gpu_;
  cudaEvent_t events_[3] = {nullptr, nullptr, nullptr};
  std::chrono::steady_clock::time_point times_[3];
};

// MKBENCH_FAULT_SHARD=RANK:STEP[:exit]: the shard of that rank fails at its STEP-th
// accumulate (warm-up and verification steps count): it throws a DeviceError, or with
// `exit` the whole process ends at once, as a rank that dies does (docs/multi-gpu.md).
struct ShardFault {
  int rank = -1;
  int64_t step = 0;
  bool exit = false;
};

std::optional<ShardFault> shard_fault() {
  const char* text = std::getenv("MKBENCH_FAULT_SHARD");
  if (!text || !*text) return std::nullopt;
  const std::string spec = text;
  ShardFault fault;
  char tail[16] = {};
  long long step = 0;
  const int fields = std::sscanf(spec.c_str(), "%d:%lld:%15s", &fault.rank, &step, tail);
  fault.step = step;
  fault.exit = fields == 3 && std::string(tail) == "exit";
  if (fields < 2 || fault.rank < 0 || fault.step < 1 || (fields == 3 && !fault.exit))
    throw InputError("MKBENCH_FAULT_SHARD must be RANK:STEP or RANK:STEP:exit, got '" + spec + "'");
  return fault;
}

std::vector<float> packed_centroids(const IterationResult& result) {
  std::vector<float> packed;
  for (const auto& k : result.per_k) packed.insert(packed.end(), k.centroids.begin(), k.centroids.end());
  return packed;
}

}  // namespace

struct ShardedRun::Shard {
  std::unique_ptr<Communicator> comm;
  DeviceInfo device;
  RowRange rows;
  std::unique_ptr<PreparedRun> run;
  std::unique_ptr<PhaseClock> clock;
  std::vector<double> step_ms, reduce_ms;  // per iterate() since clear_step_timings()
  std::vector<double> staged_sums, staged_inertia;  // GPU shards reducing through the host
  std::vector<unsigned long long> staged_counts;
  StepSummary summary;
  IterationResult result;
  int64_t steps = 0;  // accumulate calls, for the fault seam
  bool timing_pending = false;  // an accumulate()'s clock marks not yet read
  int prepare_code = 0;
  std::string prepare_error;
};

ShardedRun::ShardedRun(const Variant& variant, const Problem& problem, const Dataset& data, const Params& params,
                       std::vector<LocalShard> locals)
    : problem_(problem) {
  if (locals.empty() || !locals.front().comm) throw InputError("a sharded run needs at least one shard");
  total_shards_ = locals.front().comm->size();
  kind_ = locals.front().comm->kind();
  if (data.m != problem.m || data.n != problem.n)
    throw InputError("sharded run: the data is " + std::to_string(data.m) + "x" + std::to_string(data.n) +
                     " but the problem is " + problem.str());
  const std::vector<RowRange> ranges = split_rows(problem.m, total_shards_);
  const bool gpu = locals.front().device.is_gpu;
  for (auto& local : locals) {
    auto shard = std::make_unique<Shard>();
    shard->comm = std::move(local.comm);
    shard->device = local.device;
    shard->rows = ranges.at(size_t(shard->comm->rank()));
    shards_.push_back(std::move(shard));
  }
  // Rank order, so the local shards' labels concatenate into row order.
  std::sort(shards_.begin(), shards_.end(), [](const auto& a, const auto& b) { return a->comm->rank() < b->comm->rank(); });
  // Host shards share the cores: each gets its part of the OpenMP threads (an ICV of its own
  // thread, which the variant reads when it prepares).
  const int threads = std::max(1, omp_get_max_threads() / int(shards_.size()));
  workers_ = std::make_unique<ShardWorkers>(
      int(shards_.size()),
      [this, gpu, threads](int i) {
        if (gpu) cuda_ok(cudaSetDevice(shards_[size_t(i)]->device.ordinal), "cudaSetDevice");
        else omp_set_num_threads(threads);
      },
      [this](const std::string& why) { abort_all(why); }, gpu);
  shard_fault();  // a malformed seam is bad input now, not a failed step later

  int agreed_code = 0;
  std::string agreed_error;
  std::vector<Peaks> every_peaks(static_cast<size_t>(total_shards_));
  workers_->run([&](int i) {
    Shard& s = *shards_[size_t(i)];
    try {
      prepare_shard(i, variant, problem, data, params);
    } catch (const Error& e) {
      s.prepare_code = e.exit_code;
      s.prepare_error = e.what();
    } catch (const std::bad_alloc&) {
      s.prepare_code = kExitDevice;
      s.prepare_error = "host out of memory";
    } catch (const std::exception& e) {
      s.prepare_code = kExitDevice;
      s.prepare_error = e.what();
    }
    // Every rank learns every shard's outcome before any step, so a shard that could not
    // prepare (a refusal, an allocation) stops all of them with its own error, and no rank
    // waits in a reduction for it. This also waits for the slowest shard's preparation.
    const int rank = s.comm->rank();
    std::vector<double> table(size_t(total_shards_) * 7, 0.0);
    double* mine = table.data() + size_t(rank) * 7;
    mine[0] = s.prepare_code;
    const Peaks& p = s.device.peaks;
    mine[1] = p.fp32_gflops_theoretical;
    mine[2] = p.dram_gbps_theoretical;
    mine[3] = p.fp32_gflops_measured;
    mine[4] = p.dram_read_gbps_measured;
    mine[5] = p.dram_copy_gbps_measured;
    mine[6] = p.measured_at.empty() ? 0.0 : 1.0;
    s.comm->host_all_reduce_sum(table.data(), table.size());
    int first_failed = -1;
    for (int r = 0; r < total_shards_ && first_failed < 0; ++r)
      if (table[size_t(r) * 7] != 0) first_failed = r;
    std::string message;
    if (first_failed >= 0) {
      const std::string text =
          s.prepare_error.empty() ? std::string() : "shard " + std::to_string(rank) + ": " + s.prepare_error;
      message = all_gather_strings(*s.comm, text)[size_t(first_failed)];
    }
    if (i == 0) {
      if (first_failed >= 0) {
        agreed_code = int(table[size_t(first_failed) * 7]);
        agreed_error = message;
      }
      for (int r = 0; r < total_shards_; ++r) {
        const double* row = table.data() + size_t(r) * 7;
        Peaks& q = every_peaks[size_t(r)];
        q.fp32_gflops_theoretical = row[1];
        q.dram_gbps_theoretical = row[2];
        q.fp32_gflops_measured = row[3];
        q.dram_read_gbps_measured = row[4];
        q.dram_copy_gbps_measured = row[5];
        // The date itself stays local; the first shard's stands for the ranks that have one.
        if (row[6] > 0) q.measured_at = s.device.peaks.measured_at.empty() ? "measured" : s.device.peaks.measured_at;
      }
    }
  });
  if (agreed_code) throw_with_code(agreed_code, agreed_error);
  summed_peaks_ = sum_peaks(every_peaks);
  workers_->run([&](int i) { connect(*shards_[size_t(i)]); });
}

void ShardedRun::connect(Shard& s) {
  const AccumulatorRefs refs = s.run->accumulators();
  if (!refs.on_device || !s.comm->reduces_device_buffers()) return;
  auto stream = static_cast<cudaStream_t>(refs.stream);
  void* scratch = nullptr;
  cuda_ok(cudaMallocAsync(&scratch, sizeof(double), stream), "allocate the first all-reduce's double");
  cuda_ok(cudaMemsetAsync(scratch, 0, sizeof(double), stream), "zero the first all-reduce's double");
  s.comm->all_reduce_sum(static_cast<double*>(scratch), 1, stream);
  s.comm->finish(stream);
  cuda_ok(cudaFreeAsync(scratch, stream), "free the first all-reduce's double");
  cuda_ok(cudaStreamSynchronize(stream), "the first all-reduce");
}

void ShardedRun::prepare_shard(int index, const Variant& variant, const Problem& problem, const Dataset& data,
                               const Params& params) {
  Shard& s = *shards_[size_t(index)];
  // The shard's rows in place: the variant copies or uploads what it is given, so the shards
  // prepare at once without a host copy each. A copy (one shard at a time, to bound host
  // memory) made a fit of 2415919104 x 16 points spend ~140 s preparing 4 H200s (e36ddab).
  const Dataset part = rows_of(data, s.rows.begin, s.rows.end);
  Problem shard_problem = problem;
  shard_problem.m = part.m;
  s.run = variant.prepare(shard_problem, part, params, s.device);
  if (!s.run) throw DeviceError("variant " + variant.name() + " returned no prepared run");
  s.clock = std::make_unique<PhaseClock>(s.device.is_gpu);
}

ShardedRun::~ShardedRun() {
  // Each shard's buffers, events and communicator go on its own thread, with its device
  // current; NCCL communicators are destroyed concurrently, as their ranks expect.
  try {
    workers_->run([&](int i) {
      Shard& s = *shards_[size_t(i)];
      s.run.reset();
      s.clock.reset();
      s.comm.reset();
    });
  } catch (...) {
  }
}

void ShardedRun::abort_all(const std::string& reason) {
  for (auto& shard : shards_)
    if (shard->comm) shard->comm->abort(reason);
}

void ShardedRun::read_pending_timing(Shard& s) {
  if (!s.timing_pending) return;
  s.timing_pending = false;
  const auto [accumulate_ms, reduce_ms] = s.clock->read();
  s.step_ms.push_back(accumulate_ms);
  s.reduce_ms.push_back(reduce_ms);
}

void ShardedRun::step_accumulate(Shard& s, bool store_labels) {
  read_pending_timing(s);
  ++s.steps;
  if (const auto fault = shard_fault(); fault && fault->rank == s.comm->rank() && fault->step == s.steps) {
    if (fault->exit) {
      std::cerr << "mkbench: injected fault (MKBENCH_FAULT_SHARD): rank " << fault->rank << " exits at step "
                << fault->step << "\n";
      std::_Exit(kExitDevice);
    }
    throw DeviceError("injected fault (MKBENCH_FAULT_SHARD): shard " + std::to_string(fault->rank) +
                      " failed at step " + std::to_string(fault->step));
  }
  s.clock->mark(0, s.run->stream());
  s.run->accumulate(AccumulateOptions{store_labels});
  s.clock->mark(1, s.run->stream());
}

std::optional<void*> ShardedRun::reduce(Shard& s, bool wait) {
  const AccumulatorRefs refs = s.run->accumulators();
  const size_t sums = size_t(refs.slots) * size_t(refs.n), slots = size_t(refs.slots), ks = size_t(refs.k_count);
  Communicator& comm = *s.comm;
  if (refs.on_device && comm.reduces_device_buffers()) {
    comm.group_start();
    comm.all_reduce_sum(refs.sums, sums, refs.stream);
    comm.all_reduce_sum(refs.counts, slots, refs.stream);
    comm.all_reduce_sum(refs.inertia, ks, refs.stream);
    comm.group_end();
    s.clock->mark(2, refs.stream);
    if (!wait) return refs.stream;
    comm.finish(refs.stream);
  } else if (refs.on_device) {
    // A build without NCCL: through host memory (a few KiB a step).
    auto stream = static_cast<cudaStream_t>(refs.stream);
    s.staged_sums.resize(sums);
    s.staged_counts.resize(slots);
    s.staged_inertia.resize(ks);
    cuda_ok(cudaMemcpyAsync(s.staged_sums.data(), refs.sums, sums * 8, cudaMemcpyDeviceToHost, stream), "stage sums");
    cuda_ok(cudaMemcpyAsync(s.staged_counts.data(), refs.counts, slots * 8, cudaMemcpyDeviceToHost, stream),
            "stage counts");
    cuda_ok(cudaMemcpyAsync(s.staged_inertia.data(), refs.inertia, ks * 8, cudaMemcpyDeviceToHost, stream),
            "stage inertia");
    cuda_ok(cudaStreamSynchronize(stream), "stage accumulators");
    comm.all_reduce_sum(s.staged_sums.data(), sums, nullptr);
    comm.all_reduce_sum(s.staged_counts.data(), slots, nullptr);
    comm.all_reduce_sum(s.staged_inertia.data(), ks, nullptr);
    cuda_ok(cudaMemcpyAsync(refs.sums, s.staged_sums.data(), sums * 8, cudaMemcpyHostToDevice, stream), "unstage");
    cuda_ok(cudaMemcpyAsync(refs.counts, s.staged_counts.data(), slots * 8, cudaMemcpyHostToDevice, stream),
            "unstage");
    cuda_ok(cudaMemcpyAsync(refs.inertia, s.staged_inertia.data(), ks * 8, cudaMemcpyHostToDevice, stream),
            "unstage");
    s.clock->mark(2, refs.stream);
  } else {
    if (comm.reduces_device_buffers())
      throw UnsupportedError("a " + comm.kind() + " communicator reduces device memory; this run's sums are on the host");
    comm.all_reduce_sum(refs.sums, sums, nullptr);
    comm.all_reduce_sum(refs.counts, slots, nullptr);
    comm.all_reduce_sum(refs.inertia, ks, nullptr);
    s.clock->mark(2, nullptr);
  }
  return std::nullopt;
}

void ShardedRun::set_centroids(const std::vector<float>& packed) {
  if (int(shards_.size()) == total_shards_) {
    workers_->run([&](int i) { shards_[size_t(i)]->run->set_centroids(packed); });
    return;
  }
  std::vector<float> agreed = packed;  // one shard a process (mpirun): rank 0's
  workers_->run([&](int i) {
    Shard& s = *shards_[size_t(i)];
    s.comm->broadcast(agreed.data(), agreed.size() * sizeof(float), 0);
    s.run->set_centroids(agreed);
  });
}

void ShardedRun::iterate(bool store_labels) {
  workers_->run([&](int i) {
    Shard& s = *shards_[size_t(i)];
    step_accumulate(s, store_labels);
    // The division goes onto the stream behind the all-reduce, and one wait covers both (the
    // summary is not read here): one host round trip a step instead of two.
    const std::optional<void*> owed = reduce(s, false);
    UpdateOptions no_summary;
    no_summary.summary = false;
    s.summary = s.run->update(no_summary);
    if (owed) s.comm->finish(*owed);
    else if (s.device.is_gpu) s.run->synchronize();  // the reduction went through the host
    const auto [accumulate_ms, reduce_ms] = s.clock->read();
    s.step_ms.push_back(accumulate_ms);
    s.reduce_ms.push_back(reduce_ms);
  });
}

void ShardedRun::accumulate(const AccumulateOptions& options) {
  workers_->run([&](int i) {
    Shard& s = *shards_[size_t(i)];
    step_accumulate(s, options.store_labels);
    reduce(s);
    s.timing_pending = true;
  });
}

AccumulatorRefs ShardedRun::accumulators() { return shards_.front()->run->accumulators(); }

void ShardedRun::prepare_split() {
  workers_->run([&](int i) { shards_[size_t(i)]->run->prepare_split(); });
}

StepSummary ShardedRun::update(const UpdateOptions& options) {
  if (total_shards_ == 1 || options.empty == EmptyPolicy::Keep) {
    workers_->run([&](int i) { shards_[size_t(i)]->summary = shards_[size_t(i)]->run->update(options); });
    return shards_.front()->summary;
  }
  // farthest and random act only on an empty cluster; without one they are keep, to the bit
  // (host_update.cpp, device_update.cu). Every shard holds the same all-reduced counts, so all
  // of them see the same empty clusters and refuse together.
  UpdateOptions keep = options;
  keep.empty = EmptyPolicy::Keep;
  workers_->run([&](int i) { shards_[size_t(i)]->summary = shards_[size_t(i)]->run->update(keep); });
  for (const KStepSummary& ks : shards_.front()->summary.per_k)
    if (ks.active && ks.empty > 0)
      throw ShardedEmptyClusterError("K=" + std::to_string(ks.k) + " has " + std::to_string(ks.empty) +
                             " empty cluster(s): --empty " + to_string(options.empty) + " over " +
                             std::to_string(total_shards_) +
                             " shards is not implemented (each shard would move the empty cluster to a point of its "
                             "own); use --empty keep, or one device");
  return shards_.front()->summary;
}

void ShardedRun::synchronize() {
  workers_->run([&](int i) { shards_[size_t(i)]->run->synchronize(); });
}

void* ShardedRun::stream() { return shards_.front()->run->stream(); }

std::optional<double> ShardedRun::conversion_ms() const {
  std::optional<double> longest;
  for (const auto& s : shards_)
    if (auto ms = s->run->conversion_ms()) longest = std::max(longest.value_or(0.0), *ms);
  return longest;
}

void ShardedRun::expect_labels_read_back() {
  for (auto& shard : shards_) shard->run->expect_labels_read_back();
}

IterationResult ShardedRun::read_back() {
  const std::vector<RowRange> ranges = split_rows(problem_.m, total_shards_);
  const bool all_local = int(shards_.size()) == total_shards_;
  std::vector<LabelValues> labels(size_t(problem_.k.count()));
  workers_->run([&](int i) {
    Shard& s = *shards_[size_t(i)];
    s.result = s.run->read_back();
    // The all-reduce promises the same centroids everywhere; check it against shard 0's
    // (a few KiB, only where results are read).
    std::vector<float> mine = packed_centroids(s.result);
    std::vector<float> first = mine;
    s.comm->broadcast(first.data(), first.size() * sizeof(float), 0);
    double differs = std::memcmp(first.data(), mine.data(), mine.size() * sizeof(float)) != 0 ? 1.0 : 0.0;
    s.comm->host_all_reduce_sum(&differs, 1);
    if (differs > 0)
      throw DeviceError(std::to_string(int(differs)) + " shard(s) hold other centroids than shard 0 after the "
                        "all-reduce: the shards' updates parted");
    if (all_local || s.result.per_k.empty() || s.result.per_k.front().labels.empty()) return;
    // One shard a process (mpirun): the labels of every rank, in rank order.
    for (size_t k = 0; k < s.result.per_k.size(); ++k) {
      labels[k].assign(size_t(problem_.m), 0);
      std::copy(s.result.per_k[k].labels.begin(), s.result.per_k[k].labels.end(),
                labels[k].begin() + s.rows.begin);
      for (int r = 0; r < total_shards_; ++r)
        s.comm->broadcast(labels[k].data() + ranges[size_t(r)].begin, size_t(ranges[size_t(r)].size()) * 4, r);
    }
  });
  IterationResult result = shards_.front()->result;
  for (size_t k = 0; k < result.per_k.size(); ++k) {
    if (result.per_k[k].labels.empty()) continue;
    if (all_local) {
      labels[k].clear();
      labels[k].reserve(size_t(problem_.m));
      for (const auto& s : shards_)
        labels[k].insert(labels[k].end(), s->result.per_k[k].labels.begin(), s->result.per_k[k].labels.end());
    }
    result.per_k[k].labels = std::move(labels[k]);
  }
  return result;
}

void ShardedRun::clear_step_timings() {
  for (auto& s : shards_) {
    s->timing_pending = false;
    s->step_ms.clear();
    s->reduce_ms.clear();
  }
}

ParallelInfo ShardedRun::parallel_info(size_t steps) {
  ParallelInfo info;
  info.communicator = kind_;
  info.launch = int(shards_.size()) == total_shards_ ? "one-process" : "mpirun";
  info.ranks = total_shards_;
  const int64_t slots = problem_.k.sum();
  info.allreduce_bytes = (slots * problem_.n + slots + problem_.k.count()) * 8;
  workers_->run([&](int i) { read_pending_timing(*shards_[size_t(i)]); });
  for (const auto& s : shards_) steps = std::min(steps, s->step_ms.size());
  const size_t total = size_t(total_shards_);
  std::vector<double> table(total * steps * 2, 0.0);  // [rank][step]: accumulate, then all-reduce
  std::vector<std::string> labels;
  workers_->run([&](int i) {
    Shard& s = *shards_[size_t(i)];
    const size_t rank = size_t(s.comm->rank());
    std::vector<double> mine(total * steps * 2, 0.0);
    for (size_t t = 0; t < steps; ++t) {
      mine[(rank * steps + t) * 2] = s.step_ms[s.step_ms.size() - steps + t];
      mine[(rank * steps + t) * 2 + 1] = s.reduce_ms[s.reduce_ms.size() - steps + t];
    }
    s.comm->host_all_reduce_sum(mine.data(), mine.size());
    const std::string device = s.device.is_gpu ? "GPU " + std::to_string(s.device.ordinal) + ": " + s.device.name
                                               : "host CPU: " + s.device.name;
    const nlohmann::json me = {{"host", host_name()}, {"device", device}, {"rows", s.rows.size()}};
    std::vector<std::string> gathered = all_gather_strings(*s.comm, me.dump());
    if (i == 0) {
      table = std::move(mine);
      labels = std::move(gathered);
    }
  });
  std::vector<double> least_wait(steps, 0.0);
  for (size_t r = 0; r < total; ++r) {
    const nlohmann::json about = nlohmann::json::parse(labels[r]);
    ShardRecord record;
    record.rank = int(r);
    record.host = about.at("host").get<std::string>();
    record.device = about.at("device").get<std::string>();
    record.rows = about.at("rows").get<int64_t>();
    std::vector<double> step, wait;
    for (size_t t = 0; t < steps; ++t) {
      step.push_back(table[(r * steps + t) * 2]);
      wait.push_back(table[(r * steps + t) * 2 + 1]);
      least_wait[t] = r == 0 ? wait.back() : std::min(least_wait[t], wait.back());
    }
    record.step_median_ms = summarize(step).median_ms;
    record.allreduce_median_ms = summarize(wait).median_ms;
    info.shards.push_back(std::move(record));
  }
  info.allreduce_median_ms = summarize(least_wait).median_ms;
  return info;
}

}  // namespace mk
