// Every committed baseline (reports/baselines/<device>/<suite>.json) against the rows its
// suite measures today on that device, parameters included: a suite or variant change that
// renames or retunes rows must come with a refreshed baseline, or the perf gate compares
// stale rows. The device is described synthetically (tests/synthetic_devices.hpp), so this
// runs in CPU CI; the rows are planned as `--suite S --dry-run` plans them and their
// parameters resolved as the measurement resolves them.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "datasets/dataset.hpp"
#include "harness/results.hpp"
#include "harness/suite.hpp"
#include "reports/results_io.hpp"
#include "tests/synthetic_devices.hpp"
#include "variants/batched/batched_variant.hpp"
#include "variants/tuned_params.hpp"
#include "variants/variant.hpp"

namespace mk {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Baselines known not to match their suite until they are measured again on their GPU. The
// test asserts that each still differs from its suite only by the named parameter, so the
// entry has to go when the refreshed file lands (the test then fails, saying so).
struct KnownStale {
  std::string missing_param;  // the parameter the suite's rows carry and the file's lack
  std::string refresh;        // how to refresh it
};
const std::map<std::string, KnownStale>& known_stale() {
  // registers-multik's rows axis (2c34feb's standing) came after the H100's table1 baseline; its
  // rows read from global memory, rows=global today at N=8, so only the recorded params differ.
  // (The H200's was refreshed at 3e2d2e0.)
  static const std::map<std::string, KnownStale> stale = {
      {"nvidia-h100-80gb-hbm3/table1.json",
       {"rows", "on an H100: tests/device.sh build baseline (mkbench baseline update --suite table1)"}}};
  return stale;
}

// The synthetic description of a baseline folder's device. CPU baselines take the recorded
// name (it makes the slug) and thread count; a GPU needs its entry in synthetic_devices.hpp.
std::optional<DeviceInfo> synthetic_device(const std::string& slug, const json& recorded) {
  if (slug == "nvidia-h200") return testing_support::h200();
  if (slug == "nvidia-h100-80gb-hbm3") return testing_support::h100_80gb_hbm3();
  if (slug.rfind("cpu-", 0) == 0) {
    DeviceInfo device = testing_support::cpu_only();
    device.name = reports::string_or(recorded, "name", device.name);
    device.cpu_threads = int(reports::number_or(recorded, "cpu_threads", device.cpu_threads));
    return device;
  }
  return std::nullopt;
}

// The dataset identity a row of `group` records, without generating M points: the generator's
// identity names M only as params.m (checked by PatchedIdentityEqualsAFullGeneration).
Dataset sample_of(const PlannedGroup& group, int64_t sample_points) {
  Dataset sample = load_dataset_spec(group.dataset_spec, std::min<int64_t>(group.points, sample_points), group.dims,
                                     group.seed);
  sample.identity["params"]["m"] = group.points * group.batch;  // a batch generates every problem's rows
  return sample;
}

// Mirrors run_suite: a case without params runs the tuned config (harness/suite.cpp's
// case_leaves_params_open), except on the CPU fallback; measure_row resolves the rest.
json planned_params(const PlannedGroup& group, const PlannedRow& row, const Problem& problem, const DeviceInfo& device) {
  Params params = row.overrides;
  const bool open = group.source.params.is_null() || group.source.params.empty();
  if (open && !group.cpu_fallback)
    if (auto tuned = tuned_params_for(*row.variant, problem_of_one(problem), device, nullptr)) params = *tuned;
  return resolve_params(*row.variant, problem_of_one(problem), device, params);
}

std::string row_key(const std::string& variant, const json& problem, const json& params, const json& dataset,
                    const std::string& ignored_param) {
  json kept = params;
  if (!ignored_param.empty()) kept.erase(ignored_param);
  return variant + "/" + std::to_string(problem.value("n", 0)) + "/" + std::to_string(problem.value("k_min", 0)) +
         ".." + std::to_string(problem.value("k_max", 0)) + "/" + std::to_string(problem.value("m", int64_t(0))) +
         "x" + std::to_string(problem.value("batch", 1)) + " params " + kept.dump() + " data " + reports::dataset_identity(dataset);
}

struct Planned {
  std::vector<std::string> rows;  // keys, in the suite's order
};

Planned plan_rows(const std::string& suite_name, const DeviceInfo& device, bool quick, const std::string& ignored) {
  Planned planned;
  const SuitePlan plan = plan_suite(load_suite(suite_name), device, {}, quick);
  for (const PlannedGroup& group : plan.groups) {
    const Dataset sample = sample_of(group, 4096);
    for (const PlannedRow& row : group.rows) {
      if (!row.variant) {
        planned.rows.push_back("unknown variant " + row.variant_name);
        continue;
      }
      Problem problem = row.problem;
      problem.sparsity = sample.sparsity;
      const json shape = {{"n", problem.n}, {"k_min", problem.k.kmin}, {"k_max", problem.k.kmax}, {"m", problem.m},
                          {"batch", problem.batch}};
      planned.rows.push_back(
          row_key(row.variant_name, shape, planned_params(group, row, problem, device), sample.identity, ignored));
    }
  }
  return planned;
}

// Rows in one list and not the other (as multisets), one per line.
std::string differences(std::vector<std::string> suite_rows, std::vector<std::string> file_rows) {
  std::sort(suite_rows.begin(), suite_rows.end());
  std::sort(file_rows.begin(), file_rows.end());
  std::vector<std::string> only_suite, only_file;
  std::set_difference(suite_rows.begin(), suite_rows.end(), file_rows.begin(), file_rows.end(),
                      std::back_inserter(only_suite));
  std::set_difference(file_rows.begin(), file_rows.end(), suite_rows.begin(), suite_rows.end(),
                      std::back_inserter(only_file));
  std::string text;
  for (const auto& row : only_suite) text += "\n  the suite measures, the baseline lacks: " + row;
  for (const auto& row : only_file) text += "\n  the baseline holds, the suite no longer measures: " + row;
  return text;
}

std::vector<fs::path> committed_baselines() {
  std::vector<fs::path> files;
  const fs::path root = fs::path(MKBENCH_SOURCE_DIR) / "reports" / "baselines";
  for (const auto& device_dir : fs::directory_iterator(root))
    if (device_dir.is_directory())
      for (const auto& entry : fs::directory_iterator(device_dir.path()))
        if (entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(CommittedBaselines, PatchedIdentityEqualsAFullGeneration) {
  PlannedGroup group;
  group.dataset_spec = "blobs:centers=10,zeros=0.8";
  group.points = 3000;
  group.dims = 5;
  group.seed = 42;
  EXPECT_EQ(sample_of(group, 64).identity, load_dataset_spec(group.dataset_spec, 3000, 5, 42).identity);
}

TEST(CommittedBaselines, EachMatchesItsSuitesRowsParametersIncluded) {
  set_tuned_configs_enabled(true);
  const std::vector<fs::path> files = committed_baselines();
  ASSERT_FALSE(files.empty()) << "no committed baselines under reports/baselines";
  size_t stale_seen = 0;
  for (const fs::path& path : files) {
    const std::string slug = path.parent_path().filename().string();
    const std::string suite = path.stem().string();
    const std::string label = slug + "/" + path.filename().string();
    SCOPED_TRACE(label);
    const json doc = reports::load_results_file(path.string());
    EXPECT_EQ(reports::string_or(doc, "suite", ""), suite) << "a baseline is one run of the suite it is named after";
    const auto device = synthetic_device(slug, doc.at("device"));
    if (!device) {
      ADD_FAILURE() << "no synthetic description of " << slug << ": add one to tests/synthetic_devices.hpp";
      continue;
    }
    ASSERT_EQ(device->slug(), slug);
    const bool quick = reports::string_or(doc, "command", "").find("--quick") != std::string::npos;
    auto file_keys = [&](const std::string& ignored) {
      std::vector<std::string> keys;
      for (const json& row : doc.at("rows"))
        keys.push_back(row_key(row.at("variant").get<std::string>(), row.at("problem"), row.at("params"),
                               row.value("dataset", json::object()), ignored));
      return keys;
    };
    const std::string strict = differences(plan_rows(suite, *device, quick, "").rows, file_keys(""));
    const std::string commit = reports::string_or(doc.value("build", json::object()), "git_sha", "");
    const auto stale = known_stale().find(label);
    if (stale == known_stale().end()) {
      EXPECT_TRUE(strict.empty()) << label << " does not match suite " << suite << " on " << device->name << ":"
                                  << strict << "\nrefresh it on that device: mkbench baseline update --suite " << suite;
      EXPECT_FALSE(commit.empty() || commit == "unknown") << label << " does not name the commit that produced it";
      continue;
    }
    // Known stale: it must still differ, and only by the named parameter.
    ++stale_seen;
    const std::string missing = stale->second.missing_param;
    EXPECT_FALSE(strict.empty()) << label << " now matches its suite: remove it from known_stale() in " << __FILE__;
    const std::string loose = differences(plan_rows(suite, *device, quick, missing).rows, file_keys(missing));
    EXPECT_TRUE(loose.empty()) << label << " differs from its suite by more than " << missing << ":" << loose;
    std::cout << "[   INFO   ] " << label << " is stale (its rows lack " << missing
              << "), an expected failure until refreshed " << stale->second.refresh << "\n";
  }
  EXPECT_EQ(stale_seen, known_stale().size()) << "a known_stale() entry names no committed baseline";
}

}  // namespace
}  // namespace mk
