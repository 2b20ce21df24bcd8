#pragma once
// What lets a suite survive its own process: the up-front memory plan of every group, the
// --resume of a results file that holds the suite's first rows (after kill -9, or after the
// restart a sticky CUDA error asks for), and that restart itself.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "harness/results.hpp"
#include "harness/suite.hpp"

namespace mk {

// Plans every group before any data set is made: InputError (exit 2) naming the group when
// the host cannot hold its points (and, where rows verify, the FP64 reference). GPU plans are
// made row by row, right before each row prepares (measure_row), and refuse that row only.
// A group whose points need not be held (suite_group_points_unheld) is not asked to hold them;
// the result says which groups those are, in plan order, for the suite to load them so.
std::vector<bool> check_suite_host_memory(const SuitePlan& plan, const DeviceInfo& device, bool sharded);

// Whether a group's points need not be held (points_stay_unheld over its rows' plans with this
// device's free memory and the host's limit): every row out of core, on a C-order .npy or a
// generator without verification. The suite then loads them with load_dataset_spec_unheld.
// Never over several shards (`sharded`: --device lists), whose shards are views of held rows.
bool suite_group_points_unheld(const PlannedGroup& group, const DeviceInfo& device, bool sharded);

// The rows `out` already holds for this suite on this device, in plan order. A missing file
// gives a fresh one. InputError when the file names another suite or device, was written
// by another build, or its rows are not the plan's first rows (variant and K compared).
ResultFile load_rows_to_resume(const std::string& out, const SuiteDefinition& suite, const SuitePlan& plan,
                               const DeviceInfo& device);

// After a failed row: when the CUDA context is lost, says so and re-executes the command with
// --resume (which appends the remaining rows to `out`); returns only when that cannot happen,
// with the exit code the suite ends with (the remaining rows unmeasured). nullopt when the
// context still works and the suite goes on.
std::optional<int> restart_if_context_lost(const std::string& failed_row, const std::string& out, size_t remaining,
                                           bool gpu_in_use);

}  // namespace mk
