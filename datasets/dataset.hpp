#pragma once
// Host-side point sets and their identity. Points are always held row-major (AoS) on the
// host; variants that want SoA transpose on upload, so layout is a variant parameter.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/huge_pages.hpp"
#include "core/problem.hpp"

namespace mk {

class MappedFile;

// An allocator whose new elements are left uninitialised (default-initialised). Loaders and
// generators write every value on all cores, which also spreads the pages' first touch over the
// cores; a std::vector<float> zero-fills on one thread first, most of the time taken to generate
// 2415919104 x 16 points on a 4xH200 host (e36ddab). Blocks of 4 MiB or more are 2 MiB-aligned
// and advised to huge pages (core/huge_pages.hpp): 10M labels read back into a zero-filled vector
// of 4 KiB pages took 29–30 ms on an H200 host, 13–14 ms into huge pages, and 3.2 ms into
// uninitialised huge pages filled on all cores (reports/results/nvidia-h200/ab/host-transfer.txt).
template <class T>
struct UninitialisedAllocator : std::allocator<T> {
  using value_type = T;
  UninitialisedAllocator() noexcept = default;
  template <class U>
  UninitialisedAllocator(const UninitialisedAllocator<U>&) noexcept {}
  template <class U>
  struct rebind {
    using other = UninitialisedAllocator<U>;
  };
  T* allocate(size_t count) { return static_cast<T*>(allocate_huge_page_friendly(count * sizeof(T))); }
  void deallocate(T* pointer, size_t count) noexcept { release_huge_page_friendly(pointer, count * sizeof(T)); }
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
template <class T, class U>
bool operator==(const UninitialisedAllocator<T>&, const UninitialisedAllocator<U>&) noexcept {
  return true;
}
template <class T, class U>
bool operator!=(const UninitialisedAllocator<T>&, const UninitialisedAllocator<U>&) noexcept {
  return false;
}
using PointValues = std::vector<float, UninitialisedAllocator<float>>;
// Points equal a plain vector of the same values (a caller's or a test's expected points).
inline bool operator==(const PointValues& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}
inline bool operator==(const std::vector<float>& a, const PointValues& b) { return b == a; }
// Labels as variants return them (KResult::labels): M of them, written by a device copy or by
// the variant, never zero-filled first.
using LabelValues = std::vector<int32_t, UninitialisedAllocator<int32_t>>;
inline bool operator==(const LabelValues& a, const std::vector<int32_t>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}
inline bool operator==(const std::vector<int32_t>& a, const LabelValues& b) { return b == a; }
inline bool operator!=(const LabelValues& a, const std::vector<int32_t>& b) { return !(a == b); }
inline bool operator!=(const std::vector<int32_t>& a, const LabelValues& b) { return !(b == a); }

struct GeneratorSpec {
  std::string kind = "uniform";  // uniform | blobs
  int64_t m = 0;
  int n = 0;
  uint64_t seed = 42;
  int centers = 8;          // blobs
  double spread = 1.0;      // blobs: per-dimension standard deviation
  double box = 10.0;        // blobs: centres uniform in [-box, box]
  double zero_fraction = 0; // sparse variant: fraction of entries forced to exactly 0
};

struct Dataset {
  int64_t m = 0;
  int n = 0;
  PointValues values;  // m*n, row-major
  // Enough to regenerate or re-find the data: {"kind":"generator","generator":...,
  // "params":{...},"seed":...} or {"kind":"file","path":...,"bytes":...,"xxh3_128":...}
  // (datasets/digest.hpp; "sha256" in results written before schema 2).
  nlohmann::json identity;
  double sparsity = 0.0;  // fraction of exact zeros, measured at load/generation time
  // Set by a loader that has checked every value for NaN/Inf (check_finite then returns at once).
  bool finite_checked = false;
  // Points left in a memory-mapped file (load_npy_mapped): `values` is empty, the rows are
  // read where they lie, and `mapping` keeps the file mapped while any copy of this lives.
  // Only out-of-core runs take such a Dataset (they stream chunks from it); in-core runs
  // need `values`.
  const float* mapped_rows = nullptr;
  std::shared_ptr<const MappedFile> mapping;
  // Rows of another Dataset that outlives this one (rows_of): `values` is empty. A shard of a
  // sharded run is such a view, so preparing the shards copies nothing on the host.
  const float* borrowed_rows = nullptr;

  // A generator's points made on demand (generate_on_demand): `values` is empty and points()
  // is null; every row is a pure function of (spec, row), so an out-of-core run makes each
  // chunk where it is needed (on the host, or on the GPU) and no host memory holds the data.
  // Only out-of-core runs take such a Dataset; copy_rows reads any rows of it.
  std::shared_ptr<const GeneratorSpec> on_demand;
  bool is_mapped() const { return mapped_rows != nullptr; }
  bool is_on_demand() const { return on_demand != nullptr; }
  const float* points() const { return mapped_rows ? mapped_rows : borrowed_rows ? borrowed_rows : values.data(); }
  // Whether points() holds all m x n values.
  bool holds_rows() const {
    return mapped_rows || borrowed_rows || values.size() == static_cast<size_t>(m) * static_cast<size_t>(n);
  }
  float at(int64_t i, int d) const { return points()[static_cast<size_t>(i) * n + d]; }
  const float* row(int64_t i) const { return points() + static_cast<size_t>(i) * n; }
};

// Rows [begin, end) of `data`, without a copy: valid while `data` lives (a mapped file stays
// mapped while the view lives).
Dataset rows_of(const Dataset& data, int64_t begin, int64_t end);

// One class label per point, for commands that score a clustering against known classes.
struct Labels {
  std::vector<int32_t> values;
  nlohmann::json identity;  // like Dataset::identity
};

// Points with a label each (labels.values.size() == data.m).
struct LabelledDataset {
  Dataset data;
  Labels labels;
};

struct DataShape {
  int64_t m = 0;
  int n = 0;
};

// Deterministic for a given spec; parallel generation uses counter-based streams so the
// result does not depend on the thread count.
Dataset generate(const GeneratorSpec& spec);
// Rows [begin, end) of generate(spec), bit for bit, into `out` ((end - begin) x n), on all
// cores. InputError for a bad spec or a range outside [0, m].
void generate_rows(const GeneratorSpec& spec, int64_t begin, int64_t end, float* out);
// The data set generate(spec) describes (its shape, identity and sparsity) with no points held:
// Dataset::on_demand. Its sparsity is the spec's zero fraction (generate() counts the zeros it
// made; the uniform values themselves are exactly 0 with probability 2^-24).
Dataset generate_on_demand(const GeneratorSpec& spec);
// Rows [begin, end) of any data set into `out`: copied where they are held (values, a mapped
// file, a view), generated for an on-demand one.
void copy_rows(const Dataset& data, int64_t begin, int64_t end, float* out);
// The centres generate() places the blobs around (centers x n, row-major); tests and
// reports use them to judge how well a clustering recovered the blobs.
std::vector<float> blob_centers(const GeneratorSpec& spec);
// Fraction of entries that are exactly zero (either sign).
double measure_sparsity(const PointValues& values);

struct CsvOptions {
  bool header = false;
  int label_column = -1;           // dropped from the features when >= 0
  std::vector<int> columns;        // feature columns to keep (after dropping nothing); empty = all
  char delimiter = ',';
};
Dataset load_csv(const std::string& path, const CsvOptions& options);
// The same with the label column's cells as labels (whole numbers; InputError otherwise).
// options.label_column must be set.
LabelledDataset load_labelled_csv(const std::string& path, const CsvOptions& options);
// From text in memory; `origin` names it in messages.
Dataset parse_csv(std::string_view text, const std::string& origin, const CsvOptions& options);
LabelledDataset parse_labelled_csv(std::string_view text, const std::string& origin, const CsvOptions& options);
// A file of labels: the label column (label_column; a one-column file needs none).
Labels load_csv_labels(const std::string& path, const CsvOptions& options);
Labels parse_csv_labels(std::string_view text, const std::string& origin, const CsvOptions& options);

// float32 little-endian .npy, 2-D, C or Fortran order (Fortran is converted to row-major).
// The file is memory-mapped and read once, on all cores: hashed (its identity), checked for
// NaN/Inf, counted for zeros and copied, block by block (datasets/digest.hpp).
Dataset load_npy(const std::string& path);
// The same checks, with the points left in the mapped file (Dataset::mapped_rows): no copy,
// so a file larger than the host's memory can be streamed by an out-of-core run. InputError
// for a Fortran-order file (its rows are not contiguous) or one whose data is not 4-byte aligned.
Dataset load_npy_mapped(const std::string& path);
Dataset parse_npy(std::string_view bytes, const std::string& origin);
void save_npy(const std::string& path, const Dataset& data);
// A label vector: 1-D (or one column) of little-endian integers or whole-valued floats.
Labels load_npy_labels(const std::string& path);
Labels parse_npy_labels(std::string_view bytes, const std::string& origin);
DataShape npy_shape(const std::string& path);  // from the header alone

// IDX (MNIST's format), plain or gzipped (detected by the gzip magic, not the name). A file
// of D >= 2 dimensions holds dim0 points of dim1*...*dim(D-1) features (images flatten
// row-major); a 1-D file is a label vector. Elements may be unsigned/signed byte, short,
// int, float or double; they become float32 (ints above 2^24 round, as any float32 does).
Dataset load_idx(const std::string& path);
Labels load_idx_labels(const std::string& path);
Dataset parse_idx(std::string_view bytes, const std::string& origin);
Labels parse_idx_labels(std::string_view bytes, const std::string& origin);
DataShape idx_shape(const std::string& path);  // from the header alone

// Unless a one-pass loader checked the data (finite_checked: .npy files, generators): throws
// InputError naming the first offending row/column for NaN or Inf, then where the data's
// squared distances would leave float32's range (rows held in memory; datasets/centroids.cpp).
void check_finite(const Dataset& data);
// The NaN/Inf check alone.
void check_values_finite(const Dataset& data);

// Centroid seeds for every K of the range, packed as KRange::slot_offset describes:
// FirstK takes points 0..K-1 (the seeds' choice); RandomSample draws K distinct points
// with the given seed.
std::vector<float> initial_centroids(const Dataset& data, const KRange& k, InitMethod method,
                                     uint64_t seed);
// A batch's seeds (Problem::batch): problem b's drawn from its own rows [b·m, (b+1)·m) with
// seed + b, packed problem after problem. With batch 1, initial_centroids(data, problem.k, ...).
std::vector<float> batch_initial_centroids(const Dataset& data, const Problem& problem, InitMethod method,
                                           uint64_t seed);

// Parse a --dataset spec: "uniform", "blobs:centers=10,spread=1.5,zeros=0.9",
// "csv:PATH[:header][:label=COL][:cols=0,2,3][:delim=D]", "npy:PATH", "idx:PATH".
// Generators take their shape from m and n; a file decides its own (m and n are then
// ignored: callers holding a shape the user typed compare it with the result).
Dataset load_dataset_spec(const std::string& spec, int64_t m, int n, uint64_t seed);
// The generator a spec names ("uniform...", "blobs..."), with shape m x n and `seed`; nullopt
// for a file spec. InputError as load_dataset_spec for a malformed generator spec.
std::optional<GeneratorSpec> generator_spec_of(const std::string& spec, int64_t m, int n, uint64_t seed);
// The data a spec names with no points held, for runs that are all out of core: a C-order .npy
// left in its memory mapping (load_npy_mapped), a generator made on demand (generate_on_demand).
// InputError for any other spec.
Dataset load_dataset_spec_unheld(const std::string& spec, int64_t m, int n, uint64_t seed);
// True for the csv:, npy: and idx: forms.
bool is_file_dataset_spec(const std::string& spec);
// The shape a file spec's data will have, read from the header where the format has one
// (npy, idx) and by loading the file otherwise (csv). InputError for a malformed file.
DataShape file_dataset_shape(const std::string& spec);
// A labels spec: "idx:PATH", "npy:PATH" or "csv:PATH[:header][:label=COL][:delim=D]" (a
// one-column file needs no label=).
Labels load_labels_spec(const std::string& spec);
// Points with labels: from `labels_spec` when it is not empty, else from the data spec's
// own label column (csv:PATH:label=COL). InputError when there are no labels or their
// count differs from the number of points.
LabelledDataset load_labelled_dataset(const std::string& data_spec, const std::string& labels_spec, int64_t m, int n,
                                      uint64_t seed);

}  // namespace mk
