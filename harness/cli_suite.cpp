// `mkbench suite NAME` (also `mkbench --suite NAME`, wired in main.cpp).
#include <memory>

#include <CLI/CLI.hpp>

#include "harness/command.hpp"
#include "harness/suite.hpp"

namespace mk {
namespace {

MKBENCH_REGISTER_COMMAND("suite", "run a benchmark suite (harness/suites/*.json, or a path to one)",
                         [](CLI::App& sub) -> std::function<int()> {
                           auto options = std::make_shared<SuiteOptions>();
                           sub.add_option("name", options->name, "suite name (see `mkbench list`) or file")
                               ->required();
                           add_suite_options(sub, *options);
                           return [options] { return run_suite(*options); };
                         });

}  // namespace
}  // namespace mk
