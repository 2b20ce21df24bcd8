#pragma once
// `mkbench run`: options and the pieces of its argument handling that tests exercise.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "variants/variant.hpp"

namespace CLI {
class App;
}

namespace mk {

// "256" -> 256, "-3" -> -3, "1.5" -> 1.5, anything else -> the string itself.
nlohmann::json parse_param_value(const std::string& text);
// "key=value" items -> object. InputError for a missing '=', an empty key, or the same
// key given twice with different values; messages name the option the items came from.
Params parse_param_assignments(const std::vector<std::string>& items, const std::string& option = "--param");

struct RunOptions {
  std::string variants = "";  // comma-separated
  // Generated data's shape. A file dataset sets its own; these then only have to agree
  // with it where the user typed them (dims_given / points_given).
  int dims = 8;
  std::string points = "32M";
  bool dims_given = false, points_given = false;
  std::string k = "3..7";
  int iters = 20;
  int warmup = 3;
  bool verify = false;
  std::string dataset = "uniform";
  uint64_t seed = 42;
  std::string init = "first";
  // Shorthands for --param; only what the user set is passed on (see *_given).
  int grid = 0, block = 0, ppt = 0;
  bool grid_given = false, block_given = false, ppt_given = false;
  std::string layout;
  std::vector<std::string> params;
  std::string out;
  std::string format = "table";
  std::string device = "0";  // --device: an ordinal, 0,1,..., all, cpu or cpu:N (harness/parallel/placement.hpp)
  bool benchmark_console = false;
  bool hide_launch_latency = false;
  bool measure_peaks = true;
  bool use_tuned = true;
  bool store_labels = false;
  std::string chunk_points;  // --chunk-points: out of core with chunks of this many points (a count: 32M)
  bool out_of_core = false;  // --out-of-core: out of core with the largest chunks that fit
  // --hold-points: a generator's points made whole in host memory, a .npy's copied, even out of
  // core (the host-to-device path measured); without it, out of core leaves them unheld.
  bool hold_points = false;
  // --batch B: B independent problems of M points each (docs/batched.md); a file's rows split
  // into B problems of equal size.
  int batch = 1;
};

// The user's explicit tunables as overrides (validates --layout: InputError).
Params collect_overrides(const RunOptions& options);

// InputError when a file dataset's shape differs from a --dims/--points the user gave.
void check_file_shape(const RunOptions& options, const Dataset& data);

void add_run_options(CLI::App& app, RunOptions& options);
int run_command(const RunOptions& options);

}  // namespace mk
