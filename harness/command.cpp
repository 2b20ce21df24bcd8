#include "harness/command.hpp"

namespace mk {

std::vector<Command>& command_registry() {
  // Function-local so registrars in other translation units can run in any order.
  static std::vector<Command> commands;
  return commands;
}

}  // namespace mk
