#pragma once
// Starting this command again in a fresh process. A sticky CUDA error leaves the process's
// context unusable (harness/device_health.hpp); a suite then re-executes itself with
// --resume, and the new process, with a new context, measures the rows the file lacks.
#include <string>
#include <vector>

namespace mk {

// main() keeps its arguments here once, before parsing.
void remember_command_line(int argc, const char* const* argv);
const std::vector<std::string>& remembered_command_line();

// Replaces this process with the same binary and arguments, `extra` appended unless already
// present. Every descriptor above stderr is closed in the new image (FD_CLOEXEC), so the
// driver lets go of the old context. Returns only when exec failed, with the reason.
std::string restart_self_with(const std::string& extra);

}  // namespace mk
