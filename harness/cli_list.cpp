// `mkbench list`: what this binary can run, on which devices, for a given shape.
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "core/byte_size.hpp"
#include "harness/command.hpp"
#include "harness/memory_plan.hpp"
#include "core/errors.hpp"
#include "harness/suite.hpp"
#include "variants/variant.hpp"

namespace mk {
namespace {

struct ListOptions {
  int dims = 8;
  std::string k = "3..7";
  std::string points = "32M";
  int device = 0;
  bool json = false;
  bool names_only = false;  // one variant name per line, for scripts
  bool gpu_only = false;
};

std::string values_text(const Axis& axis) {
  std::string out;
  for (const auto& v : axis.values) out += (out.empty() ? "" : ",") + (v.is_string() ? v.get<std::string>() : v.dump());
  return "{" + out + "}";
}

nlohmann::json describe_variant(const Variant& variant, const Problem& problem, const DeviceInfo& device) {
  nlohmann::json out = {{"name", variant.name()},
                        {"description", variant.description()},
                        {"runs_on_gpu", variant.runs_on_gpu()}};
  std::optional<std::string> refusal;
  if (variant.runs_on_gpu() && !device.is_gpu) refusal = "needs a CUDA GPU";
  else refusal = variant.can_implement(problem, device);
  out["can_implement"] = !refusal.has_value();
  out["reason"] = refusal.value_or("");
  // A variant may not be able to describe its space for a device it cannot use.
  try {
    out["param_space"] = variant.param_space(problem, device).to_json();
    out["defaults"] = variant.default_params(problem, device);
  } catch (const std::exception& e) {
    out["param_space"] = nullptr;
    out["param_space_error"] = e.what();
  }
  return out;
}

int list_command(const ListOptions& options) {
  if (options.names_only) {
    for (const Variant* variant : Registry::instance().all())
      if (!options.gpu_only || variant->runs_on_gpu()) std::cout << variant->name() << "\n";
    return kExitOk;
  }
  Problem problem;
  problem.n = options.dims;
  problem.m = parse_count(options.points);
  problem.k = parse_k_range(options.k);
  validate(problem);

  const int gpus = gpu_count();
  if (gpus > 0 && (options.device < 0 || options.device >= gpus))
    throw InputError("--device " + std::to_string(options.device) + " does not exist (" + std::to_string(gpus) +
                     " CUDA GPU(s))");
  const DeviceInfo device = gpus > 0 ? query_device(options.device) : query_host_cpu();

  nlohmann::json variants = nlohmann::json::array();
  for (const Variant* v : Registry::instance().all()) variants.push_back(describe_variant(*v, problem, device));

  nlohmann::json suites = nlohmann::json::array();
  for (const auto& name : known_suite_names()) {
    try {
      const SuiteDefinition suite = load_suite(name);
      suites.push_back({{"name", name}, {"description", suite.description}, {"cases", suite.cases.size()},
                        {"report", suite.report_kind}});
    } catch (const Error& e) {
      suites.push_back({{"name", name}, {"error", e.what()}});
    }
  }

  nlohmann::json devices = nlohmann::json::array();
  for (int i = 0; i < gpus; ++i) devices.push_back(query_device(i).to_json());

  if (options.json) {
    nlohmann::json out = {{"problem", {{"n", problem.n}, {"k", problem.k.str()}, {"m", problem.m}}},
                          {"variants", variants},
                          {"suites", suites},
                          {"gpu_count", gpus},
                          {"no_gpu_reason", gpus ? "" : no_gpu_reason()},
                          {"devices", devices},
                          {"host", query_host_cpu().to_json()}};
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }

  std::cout << "Variants (for " << problem.str() << " on " << (device.is_gpu ? device.name : "the host CPU")
            << "):\n";
  for (const auto& v : variants) {
    std::cout << "  " << v["name"].get<std::string>() << "  [" << (v["runs_on_gpu"].get<bool>() ? "gpu" : "cpu")
              << "]  " << v["description"].get<std::string>() << "\n";
    std::cout << "      can run: "
              << (v["can_implement"].get<bool>() ? std::string("✓") : "✗ " + v["reason"].get<std::string>()) << "\n";
    if (v["param_space"].is_object()) {
      const Variant& variant = Registry::instance().get(v["name"].get<std::string>());
      ParamSpace space;
      try {
        space = variant.param_space(problem, device);
      } catch (const std::exception&) {
      }
      for (const auto& axis : space.axes) {
        std::cout << "      " << axis.name << " " << values_text(axis);
        if (v.contains("defaults") && v["defaults"].contains(axis.name))
          std::cout << " default " << params_label({{axis.name, v["defaults"][axis.name]}}).substr(axis.name.size() + 1);
        if (!axis.help.empty()) std::cout << "  — " << axis.help;
        std::cout << "\n";
      }
      for (const auto& r : space.restrictions) std::cout << "      restriction: " << r.description << "\n";
      for (const auto& r : space.repeats) std::cout << "      not searched: " << r.description << "\n";
    } else if (v.contains("param_space_error")) {
      std::cout << "      params: unavailable here (" << v["param_space_error"].get<std::string>() << ")\n";
    }
  }
  std::cout << "\nSuites (mkbench --suite NAME):\n";
  for (const auto& s : suites) {
    std::cout << "  " << s["name"].get<std::string>() << "  ";
    if (s.contains("error")) std::cout << "INVALID: " << s["error"].get<std::string>() << "\n";
    else std::cout << s["description"].get<std::string>() << "\n";
  }
  if (suites.empty()) std::cout << "  (none embedded in this build)\n";
  std::cout << "\nDevices:\n";
  if (gpus == 0) {
    std::cout << "  no CUDA GPU: " << no_gpu_reason() << "\n";
  } else {
    for (const auto& d : devices) {
      std::cout << "  [" << d["ordinal"].get<int>() << "] " << d["name"].get<std::string>() << "  cc "
                << d["compute_capability"].get<std::string>() << ", " << d["sm_count"].get<int>() << " SMs, "
                << (d["global_mem_bytes"].get<int64_t>() >> 20) << " MiB, L2 " << (d["l2_bytes"].get<int64_t>() >> 20)
                << " MiB, FP32 " << d["peaks"]["fp32_gflops_theoretical"].get<double>() << " GFLOP/s, DRAM "
                << d["peaks"]["dram_gbps_theoretical"].get<double>() << " GB/s (theoretical)\n";
    }
  }
  const DeviceInfo host = query_host_cpu();
  std::cout << "  host CPU: " << host.name << " (" << host.cpu_threads << " OpenMP threads)\n";
  // What memory plans are checked against (docs/memory-planning.md).
  const MemoryLimits limits = current_memory_limits(DeviceInfo{});
  std::cout << "  host memory limit: "
            << (limits.host_limit_bytes > 0 ? format_bytes(double(limits.host_limit_bytes)) + " (" +
                                                  limits.host_source + ")"
                                            : std::string("unknown (not checked)"))
            << "\n";
  return kExitOk;
}

MKBENCH_REGISTER_COMMAND("list", "variants (with can-run verdicts for a shape), suites and devices",
                         [](CLI::App& sub) -> std::function<int()> {
                           auto options = std::make_shared<ListOptions>();
                           sub.add_option("--dims,-n", options->dims, "N for the can-run verdicts")
                               ->capture_default_str();
                           sub.add_option("--k,-k", options->k, "K range for the can-run verdicts")
                               ->capture_default_str();
                           sub.add_option("--points,-m", options->points, "M for the can-run verdicts")
                               ->capture_default_str();
                           sub.add_option("--device", options->device, "CUDA device ordinal")->capture_default_str();
                           sub.add_flag("--json", options->json, "machine-readable output");
                           sub.add_flag("--names-only", options->names_only, "print variant names only, one per line");
                           sub.add_flag("--gpu-only", options->gpu_only, "with --names-only: GPU variants only");
                           return [options] { return list_command(*options); };
                         });

}  // namespace
}  // namespace mk
