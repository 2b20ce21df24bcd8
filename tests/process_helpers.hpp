#pragma once
// Running the mkbench binary from tests: to completion (exit status and output), or in the
// background, to be killed with SIGKILL in the middle of its work.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace mk::testing_support {

namespace fs = std::filesystem;

class TempFolder {
 public:
  explicit TempFolder(const std::string& tag) {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("mkbench_" + tag + "_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path_);
  }
  ~TempFolder() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct ProcessResult {
  int exit_code = -1;      // -1 when killed by a signal
  int signal = 0;          // the signal that ended it, if one did
  std::string output;      // stdout and stderr together
};

inline ProcessResult status_to_result(int status, std::string output) {
  ProcessResult result;
  result.output = std::move(output);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

// The binary in the background, `environment` ("NAME=value") added to this process's, stdout
// and stderr appended to `log`. Returns the child's pid (-1 when fork failed).
inline pid_t start_mkbench(const std::vector<std::string>& arguments, const std::string& log,
                           const std::vector<std::string>& environment = {}) {
  std::vector<std::string> args{MKBENCH_BINARY};
  args.insert(args.end(), arguments.begin(), arguments.end());
  std::vector<std::string> env;
  for (char** item = environ; *item; ++item) {
    const std::string entry = *item;
    const std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& added : environment) replaced |= added.substr(0, added.find('=')) == name;
    if (!replaced) env.push_back(entry);
  }
  env.insert(env.end(), environment.begin(), environment.end());
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  return pid;
}

// Runs the binary to completion (at most `timeout_s`, then SIGKILL).
inline ProcessResult run_mkbench_args(const std::vector<std::string>& arguments,
                                      const std::vector<std::string>& environment = {}, double timeout_s = 300) {
  char pattern[] = "/tmp/mkbench_run_log_XXXXXX";
  const int fd = ::mkstemp(pattern);
  if (fd >= 0) ::close(fd);
  const pid_t pid = start_mkbench(arguments, pattern, environment);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ProcessResult result = status_to_result(status, read_text(pattern));
  ::unlink(pattern);
  return result;
}

struct KillOutcome {
  bool killed_mid_run = false;  // false: the process ended (or the wait timed out) before `ready`
  ProcessResult result;
};

// Polls `ready` every 2 ms while `pid` runs; kills it with SIGKILL as soon as it holds.
inline KillOutcome kill_when(pid_t pid, const std::function<bool()>& ready, const std::string& log,
                             double timeout_s = 300) {
  KillOutcome outcome;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (ready()) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      // It may have ended on its own between the check and the signal.
      outcome.killed_mid_run = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  outcome.result = status_to_result(status, read_text(log));
  return outcome;
}

}  // namespace mk::testing_support
