#include "harness/self_restart.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

namespace mk {
namespace {

std::vector<std::string>& command_line() {
  static std::vector<std::string> arguments;
  return arguments;
}

// Close-on-exec for every descriptor above stderr: if exec fails they stay usable here.
void mark_descriptors_close_on_exec() {
  DIR* folder = ::opendir("/proc/self/fd");
  if (!folder) return;
  const int own = ::dirfd(folder);
  while (const dirent* entry = ::readdir(folder)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (*end != '\0' || end == entry->d_name || fd <= 2 || fd == own) continue;
    const int flags = ::fcntl(int(fd), F_GETFD);
    if (flags >= 0) ::fcntl(int(fd), F_SETFD, flags | FD_CLOEXEC);
  }
  ::closedir(folder);
}

}  // namespace

void remember_command_line(int argc, const char* const* argv) {
  command_line().assign(argv, argv + argc);
}

const std::vector<std::string>& remembered_command_line() { return command_line(); }

std::string restart_self_with(const std::string& extra) {
  std::vector<std::string> arguments = command_line();
  if (arguments.empty()) return "the command line was not recorded";
  if (std::find(arguments.begin() + 1, arguments.end(), extra) == arguments.end()) arguments.push_back(extra);
  std::vector<char*> argv;
  for (auto& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  mark_descriptors_close_on_exec();
  ::execv("/proc/self/exe", argv.data());
  return std::string("exec /proc/self/exe failed: ") + std::strerror(errno);
}

}  // namespace mk
