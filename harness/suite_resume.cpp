#include "harness/suite_resume.hpp"

#include <filesystem>
#include <iostream>
#include <memory>
#include <vector>

#include "core/errors.hpp"
#include "harness/device_health.hpp"
#include "harness/memory_plan.hpp"
#include "harness/self_restart.hpp"
#include "variants/batched/batched_variant.hpp"
#include "variants/variant.hpp"

namespace mk {

namespace {

// The work of each row of `group` on `source`'s shape; a batch's variants wrapped for it (their
// wrappers kept in `batched` while the works are used).
std::vector<RowWork> group_row_works(const PlannedGroup& group, const DataSource& source,
                                     std::vector<std::unique_ptr<Variant>>& batched) {
  std::vector<RowWork> works;
  for (const PlannedRow& row : group.rows) {
    const Variant* variant = row.variant;
    if (variant && group.batch > 1) {
      batched.push_back(variant_for_batch(*variant));
      variant = batched.back().get();
    }
    RowWork work{variant, row.problem, row.overrides, group.verify, group.verify};
    work.problem.m = source.m / group.batch;  // a file's own shape where its header tells it, 0 for CSV
    work.problem.n = source.n;
    works.push_back(work);
  }
  return works;
}

}  // namespace

bool suite_group_points_unheld(const PlannedGroup& group, const DeviceInfo& device, bool sharded) {
  if (sharded || group.batch > 1) return false;  // a batch's problems are prepared whole
  const DataSource source = describe_data_source(group.dataset_spec, group.points, group.dims);
  if (source.m < 1 || source.n < 1) return false;
  const MemoryLimits limits = current_memory_limits(device);
  std::vector<MemoryPlan> plans;
  std::vector<std::unique_ptr<Variant>> batched;
  for (const RowWork& work : group_row_works(group, source, batched))
    if (work.variant) plans.push_back(plan_memory(source, work, device, limits));
  return points_stay_unheld(source, group.verify, plans);
}

std::vector<bool> check_suite_host_memory(const SuitePlan& plan, const DeviceInfo& device, bool sharded) {
  const MemoryLimits limits = current_memory_limits(DeviceInfo{});  // the host only: GPUs are planned per row
  std::vector<bool> unheld;
  for (const PlannedGroup& group : plan.groups) {
    unheld.push_back(suite_group_points_unheld(group, device, sharded));
    if (unheld.back()) continue;  // each row's own plan counts what it holds
    const DataSource source = describe_data_source(group.dataset_spec, group.points * group.batch, group.dims);
    RowWork data_only;
    data_only.problem = group.rows.empty() ? Problem{} : group.rows.front().problem;
    data_only.problem.m = source.m / group.batch;
    data_only.problem.n = source.n;
    std::vector<RowWork> works{data_only};
    std::vector<std::unique_ptr<Variant>> batched;
    for (const RowWork& work : group_row_works(group, source, batched)) works.push_back(work);
    for (const RowWork& work : works) {
      const MemoryPlan memory = plan_memory(source, work, device, limits);
      if (memory.host_exceeded)
        throw InputError("suite group (dataset " + group.dataset_spec + ", N=" + std::to_string(group.dims) +
                         ", M=" + format_count(group.points) +
                         (group.batch > 1 ? " x batch " + std::to_string(group.batch) : "") + "): " + memory.message);
    }
  }
  return unheld;
}

ResultFile load_rows_to_resume(const std::string& out, const SuiteDefinition& suite, const SuitePlan& plan,
                               const DeviceInfo& device) {
  std::error_code error;
  if (!std::filesystem::exists(out, error)) {
    std::cerr << "mkbench: --resume: " << out << " does not exist yet; the suite starts from its first row\n";
    return new_result_file(device, suite.name);
  }
  ResultFile file = load_results(out);
  const std::string where = "cannot resume from " + out + ": ";
  if (file.schema != kResultsSchema)
    throw InputError(where + "it is a " + file.schema + " file; this mkbench writes " + kResultsSchema +
                     " (rows of two schemas would share one header)");
  if (file.suite.value_or("") != suite.name)
    throw InputError(where + "it holds suite '" + file.suite.value_or("(none)") + "', not '" + suite.name + "'");
  const std::string device_name = device.to_json().value("name", std::string());
  if (file.device.value("name", std::string()) != device_name)
    throw InputError(where + "it was measured on " + file.device.value("name", std::string("?")) + ", this is " +
                     device_name);
  if (file.build.git_sha != current_build_info().git_sha)
    throw InputError(where + "it was measured by build " + file.build.git_sha + ", this is " +
                     current_build_info().git_sha + " (rows of two builds would share one header)");
  std::vector<const PlannedRow*> planned;
  for (const auto& group : plan.groups)
    for (const auto& row : group.rows) planned.push_back(&row);
  if (file.rows.size() > planned.size())
    throw InputError(where + "it has " + std::to_string(file.rows.size()) + " rows, the suite plans " +
                     std::to_string(planned.size()));
  // Each row must be the plan's: its variant, shape and the parameters the suite set (a file of
  // another suite of the same name, with other parameters, was taken as done: a bad-input audit
  // at 04dfbaa).
  auto same_overrides = [](const Params& set, const Params& ran) {
    for (auto it = set.begin(); it != set.end(); ++it)
      if (!ran.is_object() || !ran.contains(it.key()) || ran.at(it.key()) != it.value()) return false;
    return true;
  };
  for (size_t i = 0; i < file.rows.size(); ++i) {
    const ResultRow& row = file.rows[i];
    if (row.variant != planned[i]->variant_name || row.problem.k.str() != planned[i]->problem.k.str() ||
        row.problem.batch != planned[i]->problem.batch || row.problem.n != planned[i]->problem.n ||
        row.problem.m != planned[i]->problem.m || !same_overrides(planned[i]->overrides, row.params))
      throw InputError(where + "its row " + std::to_string(i + 1) + " (" + row.name + ") is not the suite's row " +
                       std::to_string(i + 1) + " (" + planned[i]->variant_name + ", " +
                       planned[i]->problem.str() +
                       (planned[i]->overrides.empty() ? "" : ", " + params_label(planned[i]->overrides)) +
                       ") on this machine");
  }
  std::cerr << "mkbench: resuming suite " << suite.name << ": " << file.rows.size() << " of " << planned.size()
            << " rows already in " << out << "\n";
  return file;
}

std::optional<int> restart_if_context_lost(const std::string& failed_row, const std::string& out, size_t remaining,
                                           bool gpu_in_use) {
  const auto lost = unusable_context_reason(gpu_in_use);
  if (!lost) return std::nullopt;
  std::cerr << "mkbench: the CUDA context is unusable after " << failed_row << " (sticky error " << *lost
            << "): no further row can run in this process\n";
  if (remaining == 0) return kExitDevice;
  if (out.empty()) {
    std::cerr << "mkbench: stopping with " << remaining
              << " row(s) unmeasured; with --out FILE the suite restarts itself in a fresh process and appends them\n";
    return kExitDevice;
  }
  std::cerr << "mkbench: restarting in a fresh process for the remaining " << remaining << " row(s), appending to "
            << out << "\n";
  const std::string why = restart_self_with("--resume");
  std::cerr << "mkbench: could not restart (" << why << "); " << remaining << " row(s) unmeasured; run the same "
            << "command with --resume to measure them\n";
  return kExitDevice;
}

}  // namespace mk
