#include "apps/quantize/quantize.hpp"

#include <chrono>
#include <cmath>

#include "apps/fit/data_moments.hpp"
#include "apps/fit/lloyd_loop.hpp"
#include "apps/quantize/u8_norm_run.hpp"
#include "apps/seeding/seeding.hpp"
#include "core/errors.hpp"

namespace mk {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Dataset rgb_points(const Image& image) {
  Dataset data;
  data.m = image.pixel_count();
  data.n = 3;
  data.values.resize(size_t(data.m) * 3);
  const size_t stride = size_t(image.channels);
  for (int64_t i = 0; i < data.m; ++i)
    for (int c = 0; c < 3; ++c)
      data.values[size_t(i) * 3 + size_t(c)] = float(image.pixels[size_t(i) * stride + size_t(c)]);
  data.identity = {{"kind", "image"}, {"width", image.width}, {"height", image.height}, {"channels", image.channels}};
  data.sparsity = measure_sparsity(data.values);
  return data;
}

void check_quantize_settings(const QuantizeSettings& settings, int64_t pixels) {
  if (settings.k < 1) throw InputError("--k must be at least 1, got " + std::to_string(settings.k));
  if (settings.k > kMaxPaletteColours)
    throw InputError("--k " + std::to_string(settings.k) + " is more than " + std::to_string(kMaxPaletteColours) +
                     " colours: a palette index is one byte");
  if (pixels >= 0 && settings.k > pixels)
    throw InputError("--k " + std::to_string(settings.k) + " is more than the image's " + std::to_string(pixels) +
                     " pixels");
  if (settings.max_iter < 1)
    throw InputError("--max-iter must be at least 1, got " + std::to_string(settings.max_iter));
  if (!std::isfinite(settings.tol) || settings.tol < 0)
    throw InputError("--tol must be a finite number >= 0, got " + std::to_string(settings.tol));
}

uint8_t to_byte(float value) {
  if (!(value > 0.0f)) return 0;  // NaN cannot occur (means of bytes), but never wraps
  if (value >= 255.0f) return 255;
  return uint8_t(std::lround(value));
}

std::optional<double> psnr_rgb(const Image& a, const Image& b, double* mse) {
  if (a.width != b.width || a.height != b.height)
    throw InputError("psnr: images of different sizes");
  double squared = 0;
  for (int64_t i = 0; i < a.pixel_count(); ++i)
    for (int c = 0; c < 3; ++c) {
      const double d = double(a.pixels[size_t(i) * size_t(a.channels) + size_t(c)]) -
                       double(b.pixels[size_t(i) * size_t(b.channels) + size_t(c)]);
      squared += d * d;
    }
  const double error = squared / (3.0 * double(a.pixel_count()));
  if (mse) *mse = error;
  if (error == 0) return std::nullopt;
  return 10.0 * std::log10(255.0 * 255.0 / error);
}

QuantizeEngine variant_engine(const Variant& variant, const Params& params, const DeviceInfo& device) {
  const Variant* chosen = &variant;
  return {variant.name(), device, [chosen, params, device](const Problem& problem, const Dataset& rgb, const Image&) {
            return chosen->prepare(problem, rgb, params, device);
          }};
}

QuantizeEngine u8_norm_engine(const DeviceInfo& device) {
  return {kU8NormPath, device, [device](const Problem& problem, const Dataset& rgb, const Image& image) {
            return prepare_u8_norm_run(problem, rgb, image, device);
          }};
}

QuantizeResult quantize_image(const Image& image, const QuantizeSettings& settings, const QuantizeEngine& engine) {
  const DeviceInfo& device = engine.device;
  check_quantize_settings(settings, image.pixel_count());
  const Dataset data = rgb_points(image);
  Problem problem;
  problem.m = data.m;
  problem.n = 3;
  problem.k = KRange{settings.k, settings.k};
  problem.sparsity = data.sparsity;
  validate(problem);

  QuantizeResult result;
  SeedingOptions seeding;
  seeding.method = settings.init;
  seeding.seed = settings.seed;
  auto start = std::chrono::steady_clock::now();
  SeedingResult seeds;
  try {
    seeds = seed_centroids(data, problem.k, seeding, device);
  } catch (const DeviceError&) {
    throw;
  } catch (const UnsupportedError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError("--init " + settings.init + ": " + e.what());
  }
  result.seconds.seeding = seconds_since(start);
  result.seeding_method = seeds.method;

  LoopSettings loop;
  loop.max_iter = settings.max_iter;
  loop.shift_threshold = shift_threshold(data_moments(data), settings.tol);
  loop.empty = settings.empty;
  loop.seed = settings.seed;

  start = std::chrono::steady_clock::now();
  std::unique_ptr<PreparedRun> run = engine.prepare(problem, data, image);
  run->synchronize();
  result.seconds.prepare = seconds_since(start);
  LoopOutcome outcome = run_to_convergence(*run, problem.k, 3, seeds.packed, loop);
  result.seconds.prepare += outcome.prepare_seconds;
  result.seconds.steps = outcome.iteration_seconds;
  result.seconds.labels = outcome.labels_seconds;
  run.reset();

  KFit& fit = outcome.per_k.at(0);
  result.iterations = fit.iterations;
  result.converged = fit.converged;
  result.inertia = fit.inertia;
  result.centroids = std::move(fit.centroids);
  result.counts = std::move(fit.counts);
  result.palette.resize(result.centroids.size());
  for (size_t i = 0; i < result.centroids.size(); ++i) result.palette[i] = to_byte(result.centroids[i]);
  if (fit.labels.size() != size_t(data.m))
    throw DeviceError(engine.name + " returned " + std::to_string(fit.labels.size()) + " labels for " +
                      std::to_string(data.m) + " pixels");

  result.image = image;
  const size_t stride = size_t(image.channels);
  for (int64_t i = 0; i < data.m; ++i) {
    const int32_t label = fit.labels[size_t(i)];
    if (label < 0 || label >= settings.k)
      throw DeviceError(engine.name + " labelled pixel " + std::to_string(i) + " with " + std::to_string(label));
    for (int c = 0; c < 3; ++c)
      result.image.pixels[size_t(i) * stride + size_t(c)] = result.palette[size_t(label) * 3 + size_t(c)];
  }
  result.psnr_db = psnr_rgb(image, result.image, &result.mse);
  return result;
}

}  // namespace mk
