// `mkbench quantize IN.png OUT.png --k K`: colour quantization with k-means (seed 003, issue
// 33 part 2; docs/quantize.md). Loads an 8-bit RGB/RGBA image, clusters its RGB values into K
// ≤ 256 colours, writes the re-coloured image (alpha unchanged), optionally the palette (PNG
// strip or JSON) and a JSON summary, all atomically; prints PSNR and the time split.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "apps/fit/fit_variant.hpp"
#include "apps/quantize/quantize.hpp"
#include "apps/quantize/u8_norm_run.hpp"
#include "core/errors.hpp"
#include "harness/command.hpp"
#include "harness/measure.hpp"
#include "harness/parallel/placement.hpp"
#include "harness/build_info.hpp"
#include "harness/results.hpp"
#include "variants/tuned_params.hpp"

namespace mk {

namespace {

struct QuantizeOptions {
  std::string input;
  std::string output;
  QuantizeSettings settings;
  std::string empty = "farthest";
  std::string variant = "auto";
  std::string out_palette;  // .png: a strip of 16x16 squares; .json: the colours and counts
  std::string json;         // the run's summary
  int device = 0;
  bool use_tuned = true;
  bool quiet = false;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string lower_extension(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string ext = path.substr(dot);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return ext;
}

// The checks that need no image: before anything is read, so bad input costs nothing.
void check_options(const QuantizeOptions& options) {
  check_quantize_settings(options.settings, -1);
  parse_empty_policy(options.empty);  // InputError for an unknown policy
  const std::string& init = options.settings.init;
  if (init != "k-means++" && init != "random" && init != "first" && init.rfind("npy:", 0) != 0)
    throw InputError("--init must be k-means++, random, first or npy:PATH, got " + init);
  if (lower_extension(options.output) != ".png")
    throw InputError("OUT must name a .png file (quantize writes PNG), got " + options.output);
  if (!options.out_palette.empty() && lower_extension(options.out_palette) != ".png" &&
      lower_extension(options.out_palette) != ".json")
    throw InputError("--out-palette must name a .png (a strip) or a .json file, got " + options.out_palette);
  for (const std::string* path : {&options.output, &options.out_palette, &options.json})
    if (!path->empty()) check_writable(*path);
}

// The palette as one row of 16x16 squares, palette order.
Image palette_strip(const std::vector<uint8_t>& palette) {
  constexpr int kSquare = 16;
  Image strip;
  const int k = int(palette.size() / 3);
  strip.width = k * kSquare;
  strip.height = kSquare;
  strip.channels = 3;
  strip.pixels.resize(size_t(strip.width) * kSquare * 3);
  for (int y = 0; y < kSquare; ++y)
    for (int x = 0; x < strip.width; ++x)
      for (int c = 0; c < 3; ++c)
        strip.pixels[(size_t(y) * size_t(strip.width) + size_t(x)) * 3 + size_t(c)] =
            palette[size_t(x / kSquare) * 3 + size_t(c)];
  return strip;
}

nlohmann::json palette_json(const QuantizeResult& result) {
  nlohmann::json colours = nlohmann::json::array();
  for (size_t i = 0; i + 2 < result.palette.size(); i += 3)
    colours.push_back({result.palette[i], result.palette[i + 1], result.palette[i + 2]});
  return {{"k", colours.size()}, {"colours", colours}, {"counts", result.counts}, {"centroids", result.centroids}};
}

std::string fixed(double value, int decimals) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

int quantize_command(QuantizeOptions options) {
  check_options(options);
  options.settings.empty = parse_empty_policy(options.empty);

  const DeviceInfo gpu_device = resolve_single_device(options.device);
  const bool byte_path = options.variant == kU8NormPath;
  if (byte_path && !gpu_device.is_gpu)
    throw UnsupportedError(std::string(kU8NormPath) + " needs a CUDA GPU, and there is none: " + no_gpu_reason());
  if (!byte_path && options.variant != "auto" && !gpu_device.is_gpu &&
      Registry::instance().get(options.variant).runs_on_gpu())
    throw UnsupportedError("variant " + options.variant + " needs a CUDA GPU, and there is none: " + no_gpu_reason());

  auto start = std::chrono::steady_clock::now();
  const Image input = load_image(options.input);
  const double load_seconds = seconds_since(start);
  check_quantize_settings(options.settings, input.pixel_count());

  Problem problem;
  problem.m = input.pixel_count();
  problem.n = 3;
  problem.k = KRange{options.settings.k, options.settings.k};
  validate(problem);
  set_tuned_configs_enabled(options.use_tuned);

  QuantizeEngine engine;
  std::string reason, tuned_from;
  Params params = Params::object();
  const auto byte_refusal = u8_norm_refusal(problem, gpu_device);
  if (byte_path || (options.variant == "auto" && !byte_refusal)) {
    if (byte_refusal)
      throw UnsupportedError(std::string(kU8NormPath) + " cannot run " + problem.str() + ": " + *byte_refusal);
    select_device(gpu_device.ordinal);
    engine = u8_norm_engine(gpu_device);
    reason = byte_path ? "requested with --variant" : "auto on a GPU: the pixels as bytes";
  } else {
    // fit's choice: run's auto unless that variant cannot split its step into accumulate and
    // update, which the convergence loop needs (apps/fit/fit_variant.hpp).
    const FitVariantChoice choice = choose_fit_variant(options.variant, problem, gpu_device);
    if (choice.name.empty())
      throw UnsupportedError("quantize: no variant can run " + problem.str() + ": " + choice.reason);
    const Variant& variant = Registry::instance().get(choice.name);
    const DeviceInfo device = variant.runs_on_gpu() ? gpu_device : query_host_cpu();
    if (device.is_gpu) select_device(device.ordinal);
    if (auto refusal = variant.can_implement(problem, device))
      throw UnsupportedError(variant.name() + " cannot run " + problem.str() + ": " + *refusal);
    if (options.use_tuned)
      if (auto tuned = tuned_params_for(variant, problem, device, &tuned_from)) {
        try {
          params = resolve_params(variant, problem, device, *tuned);
        } catch (const Error& e) {
          std::cerr << "quantize: warning: ignoring tuned config " << tuned_from << " (" << e.what() << ")\n";
          tuned_from.clear();
          params = Params::object();
        }
      }
    if (params.is_null() || params.empty()) params = resolve_params(variant, problem, device, Params::object());
    engine = variant_engine(variant, params, device);
    reason = choice.reason;
  }
  const DeviceInfo& device = engine.device;
  if (!options.quiet)
    std::cerr << "quantize: " << engine.name << " (" << reason << ")"
              << (params.empty() ? "" : " with " + params_label(params)) << " on " << device.name << "\n";

  const QuantizeResult result = quantize_image(input, options.settings, engine);

  start = std::chrono::steady_clock::now();
  write_png_atomically(options.output, result.image);
  if (!options.out_palette.empty()) {
    if (lower_extension(options.out_palette) == ".png")
      write_png_atomically(options.out_palette, palette_strip(result.palette));
    else
      write_text_atomically(options.out_palette, palette_json(result).dump(1) + "\n");
  }
  double write_seconds = seconds_since(start);

  const std::string psnr_text = result.psnr_db ? fixed(*result.psnr_db, 3) + " dB" : "inf (lossless)";
  if (!options.json.empty()) {
    start = std::chrono::steady_clock::now();
    nlohmann::json summary = {
        {"input", options.input},
        {"output", options.output},
        {"width", input.width},
        {"height", input.height},
        {"channels", input.channels},
        {"k", options.settings.k},
        {"variant", engine.name},
        {"variant_reason", reason},
        {"params", params},
        {"tuned_config", tuned_from},
        {"device", device.to_json()},
        {"init", options.settings.init},
        {"seeding_method", result.seeding_method},
        {"seed", options.settings.seed},
        {"empty", to_string(options.settings.empty)},
        {"max_iter", options.settings.max_iter},
        {"tol", options.settings.tol},
        {"iterations", result.iterations},
        {"converged", result.converged},
        {"inertia", result.inertia},
        {"psnr_db", result.psnr_db ? nlohmann::json(*result.psnr_db) : nlohmann::json(nullptr)},
        {"mse", result.mse},
        {"palette", palette_json(result)},
        {"build", current_build_info().to_json()},
    };
    write_seconds += seconds_since(start);  // the summary's own write is not in its figure
    summary["seconds"] = {{"load", load_seconds},
                          {"seeding", result.seconds.seeding},
                          {"prepare", result.seconds.prepare},
                          {"cluster", result.seconds.cluster()},
                          {"steps", result.seconds.steps},
                          {"labels", result.seconds.labels},
                          {"write", write_seconds}};
    write_text_atomically(options.json, summary.dump(1) + "\n");
  }

  std::cout << "quantize: " << input.width << "x" << input.height << (input.channels == 4 ? " RGBA" : " RGB")
            << ", K=" << options.settings.k << ", " << engine.name << ": " << result.iterations << " steps ("
            << (result.converged ? "converged" : "max-iter") << "), PSNR " << psnr_text << "\n"
            << "time: load " << fixed(load_seconds, 4) << " s, seeding " << fixed(result.seconds.seeding, 4)
            << " s, prepare " << fixed(result.seconds.prepare, 4) << " s, cluster "
            << fixed(result.seconds.cluster(), 4) << " s (steps " << fixed(result.seconds.steps, 4) << " s, labels "
            << fixed(result.seconds.labels, 4) << " s), write " << fixed(write_seconds, 4) << " s\n";
  return kExitOk;
}

MKBENCH_REGISTER_COMMAND(
    "quantize", "colour quantization: cluster an 8-bit RGB/RGBA image's colours into K <= 256 and re-colour it",
    [](CLI::App& sub) -> std::function<int()> {
      auto options = std::make_shared<QuantizeOptions>();
      sub.add_option("IN", options->input, "8-bit RGB or RGBA image (PNG, or what stb_image reads)")->required();
      sub.add_option("OUT", options->output, "the re-coloured image, PNG (written atomically)")->required();
      sub.add_option("--k,-k", options->settings.k, "palette colours, 1..256")->capture_default_str();
      sub.add_option("--max-iter", options->settings.max_iter, "Lloyd steps at most")->capture_default_str();
      sub.add_option("--tol", options->settings.tol,
                     "converged when a step moves the centroids by at most tol x the mean per-channel variance "
                     "(squared Frobenius norm, as scikit-learn and fit)")
          ->capture_default_str();
      sub.add_option("--init", options->settings.init, "k-means++ | random | first | npy:PATH (K x 3 float32)")
          ->capture_default_str();
      sub.add_option("--empty", options->empty,
                     "an empty cluster: keep its colour, move it to the farthest pixel (scikit-learn) or to a "
                     "random pixel (seed 003)")
          ->capture_default_str();
      sub.add_option("--seed", options->settings.seed, "seeding and empty-cluster draws")
          ->check(CLI::NonNegativeNumber)  // a 64-bit seed: strtoull would wrap -1 to 2^64 - 1
          ->capture_default_str();
      sub.add_option("--variant", options->variant,
                     "auto (gpu-u8-norm on a GPU, cpu-openmp without), gpu-u8-norm, or a variant that splits its "
                     "step (see `mkbench list`)")
          ->capture_default_str();
      sub.add_option("--out-palette", options->out_palette, "the palette: PATH.png (a strip) or PATH.json");
      sub.add_option("--json", options->json, "a JSON summary: palette, PSNR, iterations, time split");
      sub.add_option("--device", options->device, "CUDA device ordinal")->capture_default_str();
      sub.add_flag("!--no-tuned", options->use_tuned, "ignore tuned configurations; use the variant's defaults");
      sub.add_flag("--quiet", options->quiet, "no line naming the variant");
      return [options] { return quantize_command(*options); };
    });

}  // namespace

}  // namespace mk
