// `mkbench peak`: measure and cache the machine's FP32, DRAM and pinned host-to-device roofs.
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "harness/command.hpp"
#include "core/errors.hpp"
#include "harness/format.hpp"
#include "harness/measure.hpp"
#include "harness/peak.hpp"

namespace mk {
namespace {

struct PeakOptions {
  int device = 0;
  int runs = 7;
  bool cached = false;
  bool json = false;
};

int peak_command(const PeakOptions& options) {
  if (options.runs < 1) throw InputError("--runs must be at least 1");
  const int gpus = gpu_count();
  if (gpus == 0) {
    const DeviceInfo host = query_host_cpu();
    if (options.json) {
      std::cout << nlohmann::json({{"gpu", false}, {"reason", no_gpu_reason()}, {"host", host.to_json()}}).dump(2)
                << "\n";
    } else {
      std::cout << "no CUDA GPU: " << no_gpu_reason() << "\n"
                << "host: " << host.name << " (" << host.cpu_threads << " OpenMP threads)\n"
                << "nothing to measure: GPU peaks need a GPU\n";
    }
    return kExitOk;
  }
  if (options.device < 0 || options.device >= gpus)
    throw InputError("--device " + std::to_string(options.device) + " does not exist (" + std::to_string(gpus) +
                     " CUDA GPU(s))");
  DeviceInfo device = query_device(options.device);
  select_device(device.ordinal);

  nlohmann::json details;
  if (options.cached) {
    if (!load_cached_peaks(device)) {
      std::cerr << "mkbench: no cached peaks for " << device.name << " at " << peak_cache_path(device) << "\n";
      return kExitBadInput;
    }
  } else {
    std::cerr << "mkbench: measuring peaks of " << device.name << " (" << options.runs << " runs each)...\n";
    const PeakMeasurement measurement = measure_peaks(device, options.runs);
    apply_peaks(measurement, device);
    save_cached_peaks(device, measurement);
    details = measurement.to_json();
  }

  if (options.json) {
    std::cout << nlohmann::json({{"device", device.to_json()}, {"measurement", details},
                                 {"cache", peak_cache_path(device)}})
                     .dump(2)
              << "\n";
    return kExitOk;
  }
  const Peaks& p = device.peaks;
  TextTable table;
  table.header = {"roof", "measured", "theoretical", "% of theoretical"};
  table.right_align = {false, true, true, true};
  table.rows.push_back({"FP32 FMA GFLOP/s", format_number(p.fp32_gflops_measured, 0),
                        format_number(p.fp32_gflops_theoretical, 0),
                        format_number(percent_of(p.fp32_gflops_measured, p.fp32_gflops_theoretical), 1)});
  table.rows.push_back({"DRAM read GB/s", format_number(p.dram_read_gbps_measured, 0),
                        format_number(p.dram_gbps_theoretical, 0),
                        format_number(percent_of(p.dram_read_gbps_measured, p.dram_gbps_theoretical), 1)});
  table.rows.push_back({"DRAM copy GB/s (read+write)", format_number(p.dram_copy_gbps_measured, 0),
                        format_number(p.dram_gbps_theoretical, 0),
                        format_number(percent_of(p.dram_copy_gbps_measured, p.dram_gbps_theoretical), 1)});
  table.rows.push_back({"host->device GB/s (pinned)", format_number(p.h2d_pinned_gbps_measured, 1), "", ""});
  std::cout << device.name << " (" << device.sm_count << " SMs, " << device.sm_clock_mhz << " MHz, measured "
            << p.measured_at << ")\n";
  print_table(std::cout, table, OutputFormat::Table);
  std::cout << "cache: " << peak_cache_path(device) << "\n";
  return kExitOk;
}

MKBENCH_REGISTER_COMMAND("peak", "measure FP32 FMA rate and DRAM read/copy bandwidth; cache them per device",
                         [](CLI::App& sub) -> std::function<int()> {
                           auto options = std::make_shared<PeakOptions>();
                           sub.add_option("--device", options->device, "CUDA device ordinal")->capture_default_str();
                           sub.add_option("--runs", options->runs, "runs per roof (median reported)")
                               ->capture_default_str();
                           sub.add_flag("--cached", options->cached, "show the cached values, measure nothing");
                           sub.add_flag("--json", options->json, "machine-readable output");
                           return [options] { return peak_command(*options); };
                         });

}  // namespace
}  // namespace mk
