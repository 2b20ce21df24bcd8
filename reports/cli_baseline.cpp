// `mkbench baseline update --suite S [--from RESULTS.json] [--device-slug X]`,
// `mkbench baseline show [--suite S] [--device-slug X]`, `mkbench baseline path --suite S`.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

#include <sys/wait.h>
#include <unistd.h>

#include "harness/command.hpp"
#include "core/errors.hpp"
#include "harness/results.hpp"
#include "reports/baseline.hpp"
#include "reports/results_io.hpp"

namespace {

namespace fs = std::filesystem;

struct BaselineArguments {
  std::string suite, from, device_slug, dir, results;
  bool force = false;
  CLI::App* update = nullptr;
  CLI::App* show = nullptr;
  CLI::App* path = nullptr;
};

std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs `<this binary> --suite S --out FILE` so the baseline is measured exactly like a
// normal suite run, without linking the suite runner into this command.
std::string run_suite_into_temp(const std::string& suite, int& exit_code) {
  std::string pattern = (fs::temp_directory_path() / "mkbench-baseline-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw mk::InputError("cannot create a temporary folder");
  const std::string out = (fs::path(pattern) / (suite + ".json")).string();
  const std::string command = quoted(mk::reports::self_executable()) + " --suite " + quoted(suite) +
                              " --out " + quoted(out) + " >&2";  // stdout stays the stored path
  std::cerr << "mkbench baseline: running " << command << "\n";
  const int status = std::system(command.c_str());
  exit_code = status == -1 ? 127 : WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return out;
}

int update(const BaselineArguments& args) {
  using namespace mk::reports;
  if (args.suite.empty()) throw mk::InputError("baseline update needs --suite");
  const std::string dir = args.dir.empty() ? default_baseline_dir() : args.dir;
  std::string source = args.from;
  std::string temp_folder;
  if (source.empty()) {
    // The baseline goes to this device's folder (or the one named): fail before the suite
    // runs, not after, when it cannot be written there.
    const std::string slug = args.device_slug.empty() ? current_device_slug() : args.device_slug;
    mk::check_writable(baseline_path(dir, slug, args.suite));
    int suite_exit = 0;
    source = run_suite_into_temp(args.suite, suite_exit);
    temp_folder = fs::path(source).parent_path().string();
    if (suite_exit != 0) {
      std::error_code ignored;
      fs::remove_all(temp_folder, ignored);
      std::cerr << "mkbench baseline: the suite run failed (exit " << suite_exit
                << "); no baseline stored\n";
      return suite_exit;
    }
  }
  try {
    const auto results = load_results_file(source);
    const StoredBaseline stored =
        store_baseline(results, source, args.suite, args.device_slug, dir, args.force);
    for (const auto& warning : stored.warnings) std::cerr << "mkbench baseline: warning: " << warning << "\n";
    std::cout << stored.path << "\n";
  } catch (...) {
    if (!temp_folder.empty()) {
      std::error_code ignored;
      fs::remove_all(temp_folder, ignored);
    }
    throw;
  }
  if (!temp_folder.empty()) {
    std::error_code ignored;
    fs::remove_all(temp_folder, ignored);
  }
  return mk::kExitOk;
}

std::function<int()> setup_baseline(CLI::App& sub) {
  auto args = std::make_shared<BaselineArguments>();
  sub.require_subcommand(1);
  args->update = sub.add_subcommand("update", "Store a suite run as this device's baseline");
  args->update->add_option("--suite", args->suite, "Suite name (harness/suites/<name>.json)")->required();
  args->update->add_option("--from", args->from,
                           "Store this result file instead of running the suite now");
  args->update->add_option("--device-slug", args->device_slug,
                           "Expected device slug (default: the file's own)");
  args->update->add_option("--dir", args->dir, "Baseline folder (default: reports/baselines or "
                                               "$MKBENCH_BASELINE_DIR)");
  args->update->add_flag("--force", args->force, "Store even if suite or device do not match");

  args->show = sub.add_subcommand("show", "List stored baselines");
  args->show->add_option("--suite", args->suite, "Only this suite");
  args->show->add_option("--device-slug", args->device_slug, "Only this device");
  args->show->add_option("--dir", args->dir, "Baseline folder");

  args->path = sub.add_subcommand("path", "Print the baseline path of a suite on this device");
  args->path->add_option("--suite", args->suite, "Suite name")->required();
  args->path->add_option("--device-slug", args->device_slug, "Device slug (default: GPU 0, or the host CPU)");
  args->path->add_option("--results", args->results,
                         "Take the device slug from this result file (what the perf gate just ran)");
  args->path->add_option("--dir", args->dir, "Baseline folder");

  return [args]() -> int {
    using namespace mk::reports;
    try {
      const std::string dir = args->dir.empty() ? default_baseline_dir() : args->dir;
      if (args->update->parsed()) return update(*args);
      if (args->show->parsed()) {
        std::cout << describe_baselines(dir, args->device_slug, args->suite);
        return mk::kExitOk;
      }
      if (args->path->parsed()) {
        std::string slug = args->device_slug;
        if (slug.empty() && !args->results.empty()) {
          slug = device_slug(load_results_file(args->results));
          if (slug.empty()) throw mk::InputError(args->results + ": has no device.slug");
        }
        if (slug.empty()) slug = current_device_slug();
        std::cout << baseline_path(dir, slug, args->suite) << "\n";
        return mk::kExitOk;
      }
      throw mk::InputError("baseline needs a subcommand: update, show or path");
    } catch (const mk::Error& error) {
      std::cerr << "mkbench baseline: " << error.what() << "\n";
      return error.exit_code;
    } catch (const std::exception& error) {
      std::cerr << "mkbench baseline: " << error.what() << "\n";
      return mk::kExitBadInput;
    }
  };
}

}  // namespace

MKBENCH_REGISTER_COMMAND("baseline", "Store, list and locate perf-gate baselines per device and suite",
                         setup_baseline);
