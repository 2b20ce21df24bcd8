// mkbench: subcommands register themselves (harness/command.hpp); this file only builds
// the CLI from that list and turns errors into exit codes (core/errors.hpp).
#include <iostream>
#include <map>

#include <CLI/CLI.hpp>

#include "harness/command.hpp"
#include "core/byte_size.hpp"
#include "core/errors.hpp"
#include "harness/memory_plan.hpp"
#include "harness/self_restart.hpp"
#include "harness/results.hpp"
#include "harness/suite.hpp"

namespace {

// An output path given as "" read as "not given": the command wrote nothing and exited 0. Every
// output option (--out, --out-*, --*-out, quantize's --json) of every command refuses it; flags
// (--out-of-core) take no path.
void refuse_empty_output_paths(CLI::App& app) {
  const CLI::Validator non_empty(
      [](std::string& value) { return value.empty() ? std::string("an empty path: name a file") : std::string(); },
      "PATH");
  for (CLI::Option* option : app.get_options()) {
    if (option->get_items_expected_max() == 0) continue;  // a flag
    for (const std::string& name : option->get_lnames()) {
      const bool output = name == "out" || name == "json" || name.rfind("out-", 0) == 0 ||
                          (name.size() > 4 && name.compare(name.size() - 4, 4, "-out") == 0);
      if (output) {
        option->check(non_empty);
        break;
      }
    }
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) refuse_empty_output_paths(*sub);
}

}  // namespace

int main(int argc, char** argv) {
  mk::set_invocation(argc, argv);
  mk::remember_command_line(argc, argv);
  CLI::App app{"mkbench: benchmark and autotune multi-K k-means on CUDA GPUs", "mkbench"};
  app.require_subcommand(0, 1);

  mk::SuiteOptions suite_options;
  CLI::Option* suite_option =
      app.add_option("--suite", suite_options.name, "run a suite (same as `mkbench suite NAME`)");
  mk::add_suite_options(app, suite_options);
  for (CLI::Option* option : app.get_options())
    if (option != suite_option && option->get_name() != "--help") option->needs(suite_option);
  // Global: given before or after the subcommand (unknown options fall through to here).
  std::string host_memory;
  app.add_option("--host-memory", host_memory,
                 "plan with this much host memory (64G, 512MiB) instead of the cgroup limit or MemTotal")
      ->type_name("SIZE");
  app.fallthrough();

  std::map<const CLI::App*, std::function<int()>> actions;
  for (const auto& command : mk::command_registry()) {
    CLI::App* sub = app.add_subcommand(command.name, command.help);
    actions[sub] = command.setup(*sub);
  }
  refuse_empty_output_paths(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : mk::kExitBadInput;
  }

  try {
    if (!host_memory.empty()) mk::set_host_memory_override(mk::parse_byte_size(host_memory, "--host-memory"));
    if (suite_option->count() > 0) {
      if (!app.get_subcommands().empty())
        throw mk::InputError("--suite cannot be combined with a subcommand");
      return mk::run_suite(suite_options);
    }
    for (const CLI::App* sub : app.get_subcommands()) return actions.at(sub)();
    std::cout << app.help();
    std::cerr << "mkbench: error: no command given\n";
    return mk::kExitBadInput;
  } catch (const mk::Error& e) {
    std::cerr << "mkbench: error: " << e.what() << "\n";
    return e.exit_code;
  } catch (const std::bad_alloc&) {
    std::cerr << "mkbench: error: out of host memory\n";
    return mk::kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "mkbench: error: " << e.what() << "\n";
    return mk::kExitBadInput;
  }
}
