#pragma once
// Stored baselines for the perf gate: reports/baselines/<device-slug>/<suite>.json, one
// result file per (device, suite), so a gate only ever compares like with like.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mk::reports {

// $MKBENCH_BASELINE_DIR, else <source tree>/reports/baselines.
std::string default_baseline_dir();
// Throws InputError when suite or slug are not plain file-name components.
std::string baseline_path(const std::string& dir, const std::string& device_slug,
                          const std::string& suite);

struct StoredBaseline {
  std::string path;
  std::vector<std::string> warnings;
};

// Checks that `results` is a run of `suite` (and, when expected_slug is given, on that
// device), then writes it atomically to baseline_path(dir, slug, suite). `force` stores it
// even when those checks fail. Throws InputError on refusal.
StoredBaseline store_baseline(const nlohmann::json& results, const std::string& origin,
                              const std::string& suite, const std::string& expected_slug,
                              const std::string& dir, bool force);

// One line per stored baseline (optionally only one device / suite).
std::string describe_baselines(const std::string& dir, const std::string& device_slug,
                               const std::string& suite);

// The slug of GPU 0, or of the host CPU on a machine without a GPU.
std::string current_device_slug();
// /proc/self/exe: `baseline update` reruns this very binary to measure the suite.
std::string self_executable();

}  // namespace mk::reports
