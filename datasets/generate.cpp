// Synthetic datasets: uniform [0,1) like the seeds, Gaussian blobs like sklearn's
// make_blobs, and either of them with a fraction of entries forced to exactly zero.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <new>
#include <string>

#include "datasets/counter_rng.hpp"
#include "datasets/dataset.hpp"
#include "datasets/generated_rows.hpp"
#include "core/errors.hpp"

namespace mk {
namespace {

void validate_spec(const GeneratorSpec& spec) {
  if (spec.kind != "uniform" && spec.kind != "blobs")
    throw InputError("unknown generator '" + spec.kind + "' (expected uniform or blobs)");
  if (spec.m < 1) throw InputError("generator needs at least 1 point, got M=" + std::to_string(spec.m));
  if (spec.n < 1) throw InputError("generator needs at least 1 dimension, got N=" + std::to_string(spec.n));
  if (static_cast<uint64_t>(spec.m) > std::numeric_limits<size_t>::max() / sizeof(float) / spec.n)
    throw InputError("M x N = " + std::to_string(spec.m) + " x " + std::to_string(spec.n) +
                     " does not fit in memory addresses");
  if (!(spec.zero_fraction >= 0.0 && spec.zero_fraction <= 1.0))
    throw InputError("zero fraction must be in [0, 1], got " + std::to_string(spec.zero_fraction));
  if (spec.kind == "blobs") {
    if (spec.centers < 1) throw InputError("blobs need at least 1 centre, got " + std::to_string(spec.centers));
    if (!(spec.spread >= 0.0 && std::isfinite(spec.spread)))
      throw InputError("blob spread must be finite and >= 0, got " + std::to_string(spec.spread));
    if (!(spec.box >= 0.0 && std::isfinite(spec.box)))
      throw InputError("blob box must be finite and >= 0, got " + std::to_string(spec.box));
    // A value is a centre coordinate (|c| <= box) plus spread times a normal draw, whose size is
    // at most sqrt(-2 ln 2^-53) < 8.6: within float32's range when box + 8.6 spread is.
    if (spec.box + 8.6 * spec.spread >= double(std::numeric_limits<float>::max()))
      throw InputError("blobs with box " + std::to_string(spec.box) + " and spread " + std::to_string(spec.spread) +
                       " would make values beyond float32's range");
  }
}

nlohmann::json identity_of(const GeneratorSpec& spec) {
  nlohmann::json params = {{"m", spec.m}, {"n", spec.n}};
  if (spec.kind == "blobs") {
    params["centers"] = spec.centers;
    params["spread"] = spec.spread;
    params["box"] = spec.box;
  }
  // Only when used, so plain uniform datasets keep the short identity the schema shows.
  if (spec.zero_fraction > 0) params["zero_fraction"] = spec.zero_fraction;
  return {{"kind", "generator"}, {"generator", spec.kind}, {"params", params}, {"seed", spec.seed}};
}

}  // namespace

std::vector<float> blob_centers(const GeneratorSpec& spec) {
  validate_spec(spec);
  CounterRng coordinate(spec.seed, RandomStream::BlobCentre);
  std::vector<float> centres(static_cast<size_t>(spec.centers) * spec.n);
  for (size_t i = 0; i < centres.size(); ++i)
    centres[i] = static_cast<float>(-spec.box + 2.0 * spec.box * coordinate.unit_double(i));
  return centres;
}

double measure_sparsity(const PointValues& values) {
  if (values.empty()) return 0.0;
  const int64_t count = static_cast<int64_t>(values.size());
  const float* data = values.data();
  int64_t zeros = 0;
#pragma omp parallel for schedule(static) reduction(+ : zeros)
  for (int64_t i = 0; i < count; ++i) zeros += (data[i] == 0.0f);
  return double(zeros) / double(count);
}

GeneratedRows::GeneratedRows(const GeneratorSpec& spec)
    : spec_(spec),
      centres_(spec.kind == "blobs" ? blob_centers(spec) : std::vector<float>()),
      uniform_(spec.seed, RandomStream::UniformValue),
      radius_(spec.seed, RandomStream::NormalRadius),
      angle_(spec.seed, RandomStream::NormalAngle),
      assignment_(spec.seed, RandomStream::BlobAssignment),
      zero_mask_(spec.seed, RandomStream::ZeroMask) {
  validate_spec(spec);
}

void GeneratedRows::row(int64_t i, float* out) const {
  const int n = spec_.n;
  const double zero_fraction = spec_.zero_fraction;
  const uint64_t first_entry = static_cast<uint64_t>(i) * n;
  if (spec_.kind != "blobs") {
    // Both values are computed before selecting so the random mask is a select, not a
    // branch the CPU would mispredict half the time.
    if (zero_fraction > 0) {
      for (int d = 0; d < n; ++d) {
        const float value = uniform_.unit_float(first_entry + d);
        const bool zero = zero_mask_.unit_double(first_entry + d) < zero_fraction;
        out[d] = zero ? 0.0f : value;
      }
    } else {
      for (int d = 0; d < n; ++d) out[d] = uniform_.unit_float(first_entry + d);
    }
    return;
  }
  const double two_pi = 6.283185307179586476925286766559;
  // Box-Muller turns one pair of uniforms into two normals; pairs are numbered by the flat
  // entry index (entries 2p and 2p+1 share pair p), so a row boundary inside a pair only
  // costs recomputing it, never a different value.
  auto normal_pair = [&](uint64_t pair, double& cosine_part, double& sine_part) {
    double u_radius = 1.0 - radius_.unit_double(pair);  // (0, 1], so log() stays finite
    double r = std::sqrt(-2.0 * std::log(u_radius));
    double theta = two_pi * angle_.unit_double(pair);
    cosine_part = r * std::cos(theta);
    sine_part = r * std::sin(theta);
  };
  auto zeroed = [&](uint64_t entry) { return zero_fraction > 0 && zero_mask_.unit_double(entry) < zero_fraction; };
  const float* centre = centres_.data() + assignment_.below(static_cast<uint64_t>(i), spec_.centers) * n;
  for (int d = 0; d < n;) {
    const uint64_t entry = first_entry + d;
    const bool whole_pair = (entry % 2 == 0) && d + 1 < n;
    const bool zero_first = zeroed(entry), zero_second = whole_pair && zeroed(entry + 1);
    double cosine_part = 0, sine_part = 0;
    if (!zero_first || (whole_pair && !zero_second)) normal_pair(entry / 2, cosine_part, sine_part);
    if (whole_pair) {
      out[d] = zero_first ? 0.0f : static_cast<float>(centre[d] + spec_.spread * cosine_part);
      out[d + 1] = zero_second ? 0.0f : static_cast<float>(centre[d + 1] + spec_.spread * sine_part);
      d += 2;
    } else {
      const double normal = entry % 2 == 0 ? cosine_part : sine_part;
      out[d] = zero_first ? 0.0f : static_cast<float>(centre[d] + spec_.spread * normal);
      d += 1;
    }
  }
}

void generate_rows(const GeneratorSpec& spec, int64_t begin, int64_t end, float* out) {
  const GeneratedRows rows(spec);
  if (begin < 0 || end < begin || end > spec.m)
    throw InputError("rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") of a generator of " +
                     std::to_string(spec.m) + " points");
#pragma omp parallel for schedule(static)
  for (int64_t i = begin; i < end; ++i) rows.row(i, out + static_cast<size_t>(i - begin) * spec.n);
}

Dataset generate(const GeneratorSpec& spec) {
  validate_spec(spec);
  Dataset data;
  data.m = spec.m;
  data.n = spec.n;
  const size_t total = static_cast<size_t>(spec.m) * spec.n;
  try {
    data.values.resize(total);
  } catch (const std::bad_alloc&) {
    throw InputError("cannot allocate " + std::to_string(double(total) * 4 / (1 << 30)) +
                     " GiB of host memory for a " + std::to_string(spec.m) + " x " +
                     std::to_string(spec.n) + " dataset");
  }
  generate_rows(spec, 0, spec.m, data.values.data());
  data.identity = identity_of(spec);
  data.sparsity = measure_sparsity(data.values);
  return data;
}

Dataset generate_on_demand(const GeneratorSpec& spec) {
  validate_spec(spec);
  Dataset data;
  data.m = spec.m;
  data.n = spec.n;
  data.identity = identity_of(spec);
  data.sparsity = spec.zero_fraction;
  data.finite_checked = true;  // validate_spec keeps every value within float32: none is NaN or Inf
  data.on_demand = std::make_shared<const GeneratorSpec>(spec);
  return data;
}

void copy_rows(const Dataset& data, int64_t begin, int64_t end, float* out) {
  if (begin < 0 || end < begin || end > data.m)
    throw InputError("rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") of a data set of " +
                     std::to_string(data.m) + " points");
  if (data.is_on_demand()) return generate_rows(*data.on_demand, begin, end, out);
  if (!data.holds_rows())
    throw InputError("the data set holds " + std::to_string(data.values.size()) + " values, not " +
                     std::to_string(data.m) + " x " + std::to_string(data.n));
  const size_t n = size_t(data.n);
  std::copy(data.row(begin), data.row(begin) + size_t(end - begin) * n, out);
}

void copy_rows_at(const Dataset& data, const std::vector<int64_t>& rows, float* out) {
  for (int64_t i : rows)
    if (i < 0 || i >= data.m)
      throw InputError("row " + std::to_string(i) + " of a data set of " + std::to_string(data.m) + " points");
  if (!data.is_on_demand() && !data.holds_rows())
    throw InputError("the data set holds " + std::to_string(data.values.size()) + " values, not " +
                     std::to_string(data.m) + " x " + std::to_string(data.n));
  const size_t n = size_t(data.n);
  const int64_t count = int64_t(rows.size());
  if (data.is_on_demand()) {
    const GeneratedRows made(*data.on_demand);
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < count; ++j) made.row(rows[size_t(j)], out + size_t(j) * n);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < count; ++j) std::copy(data.row(rows[size_t(j)]), data.row(rows[size_t(j)]) + n, out + size_t(j) * n);
}

}  // namespace mk
