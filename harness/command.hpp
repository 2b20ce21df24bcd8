#pragma once
// Subcommands register themselves like variants do, so `tune`, `report`, `compare` … live
// in their own folders and main.cpp stays a loop over this list.
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "variants/variant.hpp"  // MKBENCH_CONCAT

namespace mk {

struct Command {
  std::string name;
  std::string help;
  // Adds options to `sub` and returns the action run when the subcommand was chosen.
  // The action returns the process exit code (see core/errors.hpp).
  std::function<std::function<int()>(CLI::App& sub)> setup;
};

std::vector<Command>& command_registry();

struct CommandRegistrar {
  explicit CommandRegistrar(Command command) { command_registry().push_back(std::move(command)); }
};

#define MKBENCH_REGISTER_COMMAND(...) \
  static ::mk::CommandRegistrar MKBENCH_CONCAT(mkbench_command_, __LINE__)(::mk::Command{__VA_ARGS__})

}  // namespace mk
