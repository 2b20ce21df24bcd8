// The CUDA engine of the subset batch: every problem of a step in one launch
// (variants/subset_batch/kernel/, NVRTC-specialised on S, K, N and the class count, so a
// thread's centroids and columns sit in registers indexed by constants).
//
// Per step: subset_accumulate (grid = chunks of rows × blocks of problems; a block's tile of
// rows × all attributes in shared memory serves each of its problems), subset_update (the
// chunks reduced in FP64, the step's class counts and inertia, centroids, shift, freezing),
// subset_compact (the next step's active list), and one 4-byte read-back of the active count.
// With three classes or more the score is a pass of its own over the last steps' starting
// centroids: subset_label_pass and subset_reduce_labels. The table is centred per attribute on upload (the distance
// key, measured from centroid 0 as ‖c_j‖² − ‖c_0‖² − 2x·(c_j − c_0), loses precision with the
// data's distance from the origin, not its spread); centroids go back to data units on read-back.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>
#include <sstream>
#include <tuple>

#include "core/errors.hpp"
#include "variants/common/gpu_lloyd_state.cuh"
#include "variants/common/kernel_sources.hpp"
#include "variants/common/nvrtc_module.hpp"
#include "variants/common/packed_argmin.hpp"
#include "variants/subset_batch/cuda_kernels.hpp"
#include "variants/subset_batch/engines.hpp"

namespace mk::batch {

namespace {

struct CompiledKernels {
  cudaLibrary_t library = nullptr;
  cudaKernel_t accumulate = nullptr, label_pass = nullptr, update = nullptr, compact = nullptr, reduce = nullptr;
};

const CompiledKernels& compiled_kernels(const CudaKernelShape& shape) {
  static std::mutex mutex;
  static std::map<CudaKernelShape, CompiledKernels> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = cache.find(shape);
  if (found != cache.end()) return found->second;
  CompiledKernels kernels;
  kernels.library = gpu::compile_and_load(cuda_kernel_request(shape));
  gpu::check(cudaLibraryGetKernel(&kernels.accumulate, kernels.library, "subset_accumulate"), "subset_accumulate");
  gpu::check(cudaLibraryGetKernel(&kernels.label_pass, kernels.library, "subset_label_pass"), "subset_label_pass");
  gpu::check(cudaLibraryGetKernel(&kernels.update, kernels.library, "subset_update"), "subset_update");
  gpu::check(cudaLibraryGetKernel(&kernels.compact, kernels.library, "subset_compact"), "subset_compact");
  gpu::check(cudaLibraryGetKernel(&kernels.reduce, kernels.library, "subset_reduce_labels"), "subset_reduce_labels");
  return cache.emplace(shape, kernels).first->second;
}

const void* as_function(cudaKernel_t kernel) { return reinterpret_cast<const void*>(kernel); }

// Blocks of one kernel resident on the whole GPU at once.
int64_t resident_blocks(cudaKernel_t kernel, int threads, size_t shared, const DeviceInfo& device) {
  if (shared > 48 * 1024)
    gpu::check(cudaFuncSetAttribute(as_function(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)),
               "shared memory limit");
  int per_sm = 0;
  gpu::check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, as_function(kernel), threads, shared),
             "occupancy query");
  if (per_sm < 1)
    throw UnsupportedError("subset batch: a block of " + std::to_string(threads) + " threads with " +
                           std::to_string(shared) + " bytes of shared memory cannot run on " + device.name);
  return int64_t(per_sm) * std::max(1, device.sm_count);
}

class CudaSubsetRun : public SubsetBatchRun {
 public:
  CudaSubsetRun(const SharedTable& table, const SubsetProblems& problems, const DeviceInfo& device)
      : s_(problems.s), k_(problems.k), count_(problems.count), classes_(table.classes) {
    const auto start = std::chrono::steady_clock::now();
    const Dataset& data = *table.data;
    m_ = data.m;
    if (device.ordinal >= 0) gpu::check(cudaSetDevice(device.ordinal), "cudaSetDevice");
    shape_ = cuda_kernel_shape(SubsetShape{data.m, data.n, s_, k_, classes_, count_}, device);
    kernels_ = &compiled_kernels(shape_);
    gpu::check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");

    const CudaLayout layout = cuda_layout(shape_, data.m);
    groups_per_tile_ = shape_.tile_groups;
    upload_table(data, table, layout);
    upload_problems(problems);

    size_t free_bytes = 0, total_bytes = 0;
    gpu::check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    // Half of what is free for both partial buffers: the rest stays for the driver and NVRTC.
    const double partial_budget = 0.25 * double(free_bytes);
    const size_t step_shared = cuda_step_shared_bytes(shape_);
    const size_t label_shared = cuda_label_shared_bytes(shape_);
    // A chunk's partials: the accumulator quads, and with two classes the class-1 counts.
    const double step_chunk_bytes = double(count_) * k_ * (acc_quads() * 16.0 + (shape_.classes == 2 ? 4.0 : 0.0));
    step_plan_ = plan_chunks(layout.tiles, ceil_div(count_, shape_.block),
                             resident_blocks(kernels_->accumulate, shape_.block, step_shared, device),
                             step_chunk_bytes, partial_budget, shape_.tile_groups);
    step_partials_.allocate(size_t(step_plan_.chunks) * count_ * k_ * acc_quads(), "subset step partials");
    if (shape_.classes == 2)
      class1_partials_.allocate(size_t(step_plan_.chunks) * count_ * k_, "subset step class-1 partials");
    if (!cuda_counts_in_step(shape_)) {
      label_plan_ = plan_chunks(layout.tiles, ceil_div(count_, shape_.label_block),
                                resident_blocks(kernels_->label_pass, shape_.label_block, label_shared, device),
                                double(count_) * k_ * classes_or_one() * 4.0, partial_budget, shape_.tile_groups);
      label_counts_.allocate(size_t(label_plan_.chunks) * count_ * k_ * classes_or_one(), "subset label partials");
      scored_.allocate(size_t(count_) * k_ * s_, "subset scored centroids");
    }
    class_counts_.allocate(size_t(count_) * k_ * classes_or_one(), "subset class counts");
    inertia_.allocate(size_t(count_), "subset inertia");
    step_shared_ = step_shared;
    label_shared_ = label_shared;
    gpu::check(cudaStreamSynchronize(stream_), "subset upload");
    prepare_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  ~CudaSubsetRun() override {
    if (stream_) cudaStreamDestroy(stream_);
  }

  int64_t step() override {
    if (active_host_ == 0) return 0;
    long long m = m_;
    long long groups_per_chunk = step_plan_.groups_per_chunk;
    const int* columns = columns_.get();
    const float* centroids = centroids_.get();
    const int* list = active_list_.get();
    int active = int(active_host_);
    float4* partials = step_partials_.get();
    const float4* quads = quads_.get();
    const float4* weights = reinterpret_cast<const float4*>(weights_floats_.get());
    int* class1 = class1_partials_.get();
    void* accumulate_args[] = {&quads, &weights, &m, &groups_per_chunk, &columns, &centroids, &list, &active, &partials, &class1};
    launch(kernels_->accumulate, dim3(unsigned(step_plan_.chunks), unsigned(ceil_div(active, shape_.block))),
           dim3(unsigned(shape_.block)), accumulate_args, step_shared_, "subset_accumulate");

    const float4* partials_in = partials;
    const int* class1_in = class1;
    int chunks = int(step_plan_.chunks);
    float* centroids_out = centroids_.get();
    float* scored = scored_.get();
    const double* thresholds = thresholds_.get();
    const double* norms = norms_.get();
    int* steps = steps_.get();
    unsigned char* flags = active_flags_.get();
    unsigned char* converged = converged_.get();
    long long* class_counts = class_counts_.get();
    double* inertia = inertia_.get();
    void* update_args[] = {&partials_in, &class1_in, &chunks,   &list,  &active,    &centroids_out, &scored,
                           &thresholds,  &norms,     &steps,    &flags, &converged, &class_counts,  &inertia};
    launch(kernels_->update, dim3(unsigned(ceil_div(active, 256))), dim3(256), update_args, 0, "subset_update");

    const unsigned char* flags_in = flags;
    int problems = int(count_);
    int* list_out = active_list_.get();
    int* count_out = active_count_.get();
    void* compact_args[] = {&flags_in, &problems, &list_out, &count_out};
    launch(kernels_->compact, dim3(1), dim3(1024), compact_args, 0, "subset_compact");
    int next = 0;
    gpu::check(cudaMemcpyAsync(&next, count_out, sizeof(int), cudaMemcpyDeviceToHost, stream_), "active count");
    gpu::check(cudaStreamSynchronize(stream_), "subset step");
    active_host_ = next;
    ++steps_taken_;
    return active_host_;
  }

  void score() override {
    if (steps_taken_ == 0) throw InputError("subset batch: score() before any step");
    if (cuda_counts_in_step(shape_)) return;  // the steps counted
    long long m = m_;
    long long groups_per_chunk = label_plan_.groups_per_chunk;
    const float4* quads = quads_.get();
    const int* labels = labels_.get();
    const int* columns = columns_.get();
    const float* scored = scored_.get();
    int problems = int(count_);
    int* counts = label_counts_.get();
    void* label_args[] = {&quads, &labels, &m, &groups_per_chunk, &columns, &scored, &problems, &counts};
    launch(kernels_->label_pass, dim3(unsigned(label_plan_.chunks), unsigned(ceil_div(count_, shape_.label_block))),
           dim3(unsigned(shape_.label_block)), label_args, label_shared_, "subset_label_pass");

    const int* counts_in = counts;
    int chunks = int(label_plan_.chunks);
    long long* class_counts = class_counts_.get();
    void* reduce_args[] = {&counts_in, &chunks, &problems, &class_counts};
    const int64_t cells = count_ * k_ * classes_or_one();
    launch(kernels_->reduce, dim3(unsigned(ceil_div(cells, 256))), dim3(256), reduce_args, 0, "subset_reduce_labels");
    gpu::check(cudaStreamSynchronize(stream_), "subset score");
  }

  SubsetOutcome read_back() override {
    SubsetOutcome out;
    out.s = s_;
    out.k = k_;
    out.classes = classes_;
    out.count = count_;
    const int64_t cells = int64_t(k_) * classes_or_one();
    std::vector<float> centroids(size_t(count_) * k_ * s_);
    std::vector<int32_t> steps(static_cast<size_t>(count_));
    std::vector<uint8_t> converged(static_cast<size_t>(count_));
    std::vector<double> inertia(static_cast<size_t>(count_));
    std::vector<long long> counts(size_t(count_ * cells));
    copy_to_host(centroids.data(), centroids_.get(), centroids.size() * sizeof(float));
    copy_to_host(steps.data(), steps_.get(), steps.size() * sizeof(int32_t));
    copy_to_host(converged.data(), converged_.get(), converged.size());
    copy_to_host(inertia.data(), inertia_.get(), inertia.size() * sizeof(double));
    copy_to_host(counts.data(), class_counts_.get(), counts.size() * sizeof(long long));
    gpu::check(cudaStreamSynchronize(stream_), "subset read-back");
    out.centroids.resize(centroids.size());
    out.steps.resize(steps.size());
    out.converged.resize(converged.size());
    out.inertia.resize(inertia.size());
    out.class_counts.resize(counts.size());
    // Back to the caller's order and to data units.
    for (int64_t slot = 0; slot < count_; ++slot) {
      const int64_t b = order_[size_t(slot)];
      out.steps[size_t(b)] = steps[size_t(slot)];
      out.converged[size_t(b)] = converged[size_t(slot)];
      out.inertia[size_t(b)] = inertia[size_t(slot)];
      for (int64_t c = 0; c < cells; ++c) out.class_counts[size_t(b * cells + c)] = counts[size_t(slot * cells + c)];
      for (int j = 0; j < k_; ++j)
        for (int d = 0; d < s_; ++d)
          out.centroids[size_t((b * k_ + j) * s_ + d)] =
              float(double(centroids[size_t((slot * k_ + j) * s_ + d)]) +
                    means_[size_t(columns_host_[size_t(slot * s_ + d)])]);
    }
    return out;
  }

  double prepare_seconds() const override { return prepare_seconds_; }

 private:
  static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
  int acc_quads() const { return (s_ + 1 + 3) / 4; }
  int classes_or_one() const { return std::max(classes_, 1); }

  void launch(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared, const char* what) {
    gpu::check(cudaLaunchKernel(as_function(kernel), grid, block, args, shared, stream_), what);
  }
  void copy_to_host(void* to, const void* from, size_t bytes) {
    gpu::check(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToHost, stream_), "subset read-back");
  }
  template <typename T>
  void upload(gpu::DeviceBuffer<T>& buffer, const std::vector<T>& values, const char* what) {
    buffer.allocate(values.size(), what);
    gpu::check(cudaMemcpy(buffer.get(), values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice), what);
  }

  // The table centred per attribute, in groups of 4 rows ([group][attribute] float4), padded
  // with zero rows to whole tiles; the labels padded alike.
  void upload_table(const Dataset& data, const SharedTable& table, const CudaLayout& layout) {
    const int n = data.n;
    means_.assign(size_t(n), 0.0);
    std::vector<double> partial;
#pragma omp parallel
    {
      std::vector<double> mine(size_t(n), 0.0);
#pragma omp for schedule(static)
      for (int64_t i = 0; i < data.m; ++i)
        for (int d = 0; d < n; ++d) mine[d] += data.values[size_t(i) * n + d];
#pragma omp critical
      for (int d = 0; d < n; ++d) means_[d] += mine[d];
    }
    for (double& mean : means_) mean /= double(data.m);
    // Σx² per centred attribute: a step's inertia is Σ‖x‖² − Σ_j ‖S_j‖²/n_j (kernel/update.cuh).
    squares_.assign(size_t(n), 0.0);
#pragma omp parallel
    {
      std::vector<double> mine(size_t(n), 0.0);
#pragma omp for schedule(static)
      for (int64_t i = 0; i < data.m; ++i)
        for (int d = 0; d < n; ++d) {
          const double x = double(float(double(data.values[size_t(i) * n + d]) - means_[d]));
          mine[d] += x * x;
        }
#pragma omp critical
      for (int d = 0; d < n; ++d) squares_[d] += mine[d];
    }
    std::vector<float> grouped(size_t(layout.groups_padded) * n * 4, 0.f);
#pragma omp parallel for schedule(static)
    for (int64_t g = 0; g < layout.groups_padded; ++g)
      for (int p = 0; p < 4; ++p) {
        const int64_t row = g * 4 + p;
        if (row >= data.m) break;
        for (int d = 0; d < n; ++d)
          grouped[(size_t(g) * n + d) * 4 + p] = float(double(data.values[size_t(row) * n + d]) - means_[d]);
      }
    quads_.allocate(size_t(layout.groups_padded) * n, "subset table");
    gpu::check(cudaMemcpy(quads_.get(), grouped.data(), grouped.size() * sizeof(float), cudaMemcpyHostToDevice),
               "subset table upload");
    if (table.classes >= 3) {
      std::vector<int32_t> labels(size_t(layout.groups_padded) * 4, 0);
      std::copy(table.labels->begin(), table.labels->end(), labels.begin());
      upload(labels_, labels, "subset labels");
    } else if (table.classes == 2) {
      // Each row's weight in the count lane: 1 + 4096·class, 0 for the padding rows.
      std::vector<float> weights(size_t(layout.groups_padded) * 4, 0.f);
      for (int64_t i = 0; i < data.m; ++i) weights[size_t(i)] = float(1 + ((*table.labels)[size_t(i)] << 12));
      upload(weights_floats_, weights, "subset row weights");
    }
  }

  // The problems on the device in the order of their columns (slot i holds problem order_[i]):
  // a warp's threads then mostly read the same tile addresses, which shared memory serves as
  // one broadcast instead of one access per distinct column (the 5 steps of seed 000's run:
  // 0.604 s in the drawn order, 0.599 s sorted, on an H200). A problem's arithmetic does not
  // depend on its slot, so the order changes no result.
  void upload_problems(const SubsetProblems& problems) {
    order_.resize(size_t(count_));
    std::iota(order_.begin(), order_.end(), int64_t(0));
    std::stable_sort(order_.begin(), order_.end(), [&](int64_t a, int64_t b) {
        return std::lexicographical_compare(problems.columns.begin() + a * s_, problems.columns.begin() + (a + 1) * s_,
                                            problems.columns.begin() + b * s_, problems.columns.begin() + (b + 1) * s_);
      });
    columns_host_.resize(problems.columns.size());
    std::vector<float> centred(problems.centroids.size());
    std::vector<double> thresholds(static_cast<size_t>(count_));
    for (int64_t slot = 0; slot < count_; ++slot) {
      const int64_t b = order_[size_t(slot)];
      thresholds[size_t(slot)] = problems.thresholds[size_t(b)];
      for (int d = 0; d < s_; ++d) columns_host_[size_t(slot * s_ + d)] = problems.columns[size_t(b * s_ + d)];
      for (int j = 0; j < k_; ++j)
        for (int d = 0; d < s_; ++d)
          centred[size_t((slot * k_ + j) * s_ + d)] =
              float(double(problems.centroids[size_t((b * k_ + j) * s_ + d)]) -
                    means_[size_t(problems.columns[size_t(b * s_ + d)])]);
    }
    upload(columns_, columns_host_, "subset columns");
    upload(centroids_, centred, "subset centroids");
    upload(thresholds_, thresholds, "subset thresholds");
    std::vector<double> norms(static_cast<size_t>(count_), 0.0);
    for (int64_t slot = 0; slot < count_; ++slot)
      for (int d = 0; d < s_; ++d) norms[size_t(slot)] += squares_[size_t(columns_host_[size_t(slot * s_ + d)])];
    upload(norms_, norms, "subset column squares");
    std::vector<int32_t> list(static_cast<size_t>(count_));
    std::iota(list.begin(), list.end(), 0);
    upload(active_list_, list, "subset active list");
    upload(steps_, std::vector<int32_t>(size_t(count_), 0), "subset steps");
    upload(active_flags_, std::vector<unsigned char>(size_t(count_), 1), "subset active flags");
    upload(converged_, std::vector<unsigned char>(size_t(count_), 0), "subset converged flags");
    upload(active_count_, std::vector<int32_t>{int32_t(count_)}, "subset active count");
    active_host_ = count_;
  }

  int s_, k_;
  int64_t count_;
  int classes_;
  int64_t m_ = 0;
  int groups_per_tile_ = 0;
  CudaKernelShape shape_;
  const CompiledKernels* kernels_ = nullptr;
  cudaStream_t stream_ = nullptr;
  ChunkPlan step_plan_, label_plan_;
  size_t step_shared_ = 0, label_shared_ = 0;
  std::vector<double> means_, squares_;
  std::vector<int32_t> columns_host_;  // in slot order
  std::vector<int64_t> order_;         // slot -> problem
  int64_t active_host_ = 0;
  int64_t steps_taken_ = 0;
  double prepare_seconds_ = 0;
  gpu::DeviceBuffer<float4> quads_, step_partials_;
  gpu::DeviceBuffer<int32_t> labels_, columns_, active_list_, steps_, active_count_, label_counts_, class1_partials_;
  gpu::DeviceBuffer<float> centroids_, scored_, weights_floats_;  // weights: [group] float4 (two classes)
  gpu::DeviceBuffer<double> thresholds_, inertia_, norms_;
  gpu::DeviceBuffer<unsigned char> active_flags_, converged_;
  gpu::DeviceBuffer<long long> class_counts_;
};

class CudaSubsetEngine : public SubsetBatchEngine {
 public:
  std::string name() const override { return "cuda"; }
  std::string description() const override {
    return "every problem of a step in one launch: a tile of rows x all attributes in shared memory serves a block "
           "of problems, one per thread (NVRTC-specialised)";
  }
  std::optional<std::string> can_run(const SubsetShape& shape, const DeviceInfo& device) const override {
    return cuda_refusal(shape, device);
  }
  std::unique_ptr<SubsetBatchRun> prepare(const SharedTable& table, const SubsetProblems& problems,
                                          const DeviceInfo& device) const override {
    check_subset_input(table, problems);
    const SubsetShape shape{table.data->m, table.data->n, problems.s, problems.k, table.classes, problems.count};
    if (auto refusal = cuda_refusal(shape, device)) throw UnsupportedError("subset engine cuda: " + *refusal);
    return std::make_unique<CudaSubsetRun>(table, problems, device);
  }
};

}  // namespace

const SubsetBatchEngine& cuda_subset_engine() {
  static const CudaSubsetEngine engine;
  return engine;
}

}  // namespace mk::batch
