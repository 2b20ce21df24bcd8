#pragma once
// Colour quantization (seed 003, issue 33 part 2): cluster an image's RGB values into K ≤ 256
// colours with Lloyd's k-means and re-colour every pixel with its cluster's colour; alpha
// passes through. The loop is apps/fit's run_to_convergence on a single K, so quantize and fit
// share one convergence rule (scikit-learn's tol) and one empty-cluster policy
// (variants/step.hpp). docs/quantize.md describes the command.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/quantize/image_io.hpp"
#include "core/device_info.hpp"
#include "datasets/dataset.hpp"
#include "variants/variant.hpp"

namespace mk {

// One byte a palette index.
inline constexpr int kMaxPaletteColours = 256;

struct QuantizeSettings {
  int k = 16;
  std::string init = "k-means++";  // k-means++ | random | first | npy:PATH (K x 3, 0..255 values)
  int max_iter = 300;
  double tol = 1e-4;  // relative to the mean per-channel variance, as fit's and scikit-learn's
  EmptyPolicy empty = EmptyPolicy::Farthest;
  uint64_t seed = 42;
};

struct QuantizeSeconds {
  double seeding = 0;
  double prepare = 0;  // the variant's allocation and upload of the pixels
  double steps = 0;    // the Lloyd steps (accumulate, update, the per-step summary read-back)
  double labels = 0;   // the final labelling pass and the labels' read-back
  double cluster() const { return steps + labels; }
};

struct QuantizeResult {
  std::vector<uint8_t> palette;  // k * 3, the centroids rounded to the nearest byte
  std::vector<float> centroids;  // k * 3, as the clustering ended
  std::vector<int64_t> counts;   // pixels per palette entry
  Image image;                   // the re-coloured image (alpha as the input's)
  int iterations = 0;
  bool converged = false;
  double inertia = 0;            // Σ squared distance to the final centroids (float RGB)
  std::optional<double> psnr_db; // none when the output equals the input (lossless)
  double mse = 0;                // per RGB channel, of the written (rounded) colours
  std::string seeding_method;
  QuantizeSeconds seconds;
};

// The RGB channels as an m x 3 float dataset (exact: bytes are small integers).
Dataset rgb_points(const Image& image);

// InputError (exit 2) for K < 1, K > 256, K greater than the pixel count, --max-iter < 1,
// a negative or non-finite --tol.
void check_quantize_settings(const QuantizeSettings& settings, int64_t pixels);

// What runs the steps: a registered variant with its parameters, or the byte path of
// apps/quantize/u8_norm_run.hpp. k-means++ seeding runs on `device` too.
struct QuantizeEngine {
  std::string name;
  DeviceInfo device;
  std::function<std::unique_ptr<PreparedRun>(const Problem&, const Dataset& rgb, const Image&)> prepare;
};
QuantizeEngine variant_engine(const Variant& variant, const Params& params, const DeviceInfo& device);
QuantizeEngine u8_norm_engine(const DeviceInfo& device);

QuantizeResult quantize_image(const Image& image, const QuantizeSettings& settings, const QuantizeEngine& engine);

// The byte a centroid coordinate is written as: rounded to nearest, clamped to 0..255.
uint8_t to_byte(float value);

// PSNR of `b` against `a` over the RGB channels (alpha ignored): 10·log10(255² / MSE); none
// when the MSE is 0. Also returns the MSE.
std::optional<double> psnr_rgb(const Image& a, const Image& b, double* mse = nullptr);

}  // namespace mk
