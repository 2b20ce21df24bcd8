#pragma once
// Error categories map to distinct exit codes so scripts (CI, perf gates) can tell
// "you asked for something impossible" from "the GPU failed" from "numbers are wrong".
#include <stdexcept>
#include <string>

namespace mk {

enum ExitCode : int {
  kExitOk = 0,
  kExitRegression = 1,   // mkbench compare: a row got SLOWER, or BROKEN (ok before, failed/refused now)
  kExitBadInput = 2,     // bad data, bad arguments, unreadable files
  kExitUnsupported = 3,  // a variant asked for a shape it cannot do
  kExitDevice = 4,       // CUDA failure, including out of memory
  kExitVerifyFailed = 5, // --verify disagreed with the FP64 reference
};

struct Error : std::runtime_error {
  int exit_code;
  Error(int code, const std::string& what) : std::runtime_error(what), exit_code(code) {}
};

struct InputError : Error {
  explicit InputError(const std::string& what) : Error(kExitBadInput, what) {}
};
struct UnsupportedError : Error {
  explicit UnsupportedError(const std::string& what) : Error(kExitUnsupported, what) {}
};
struct DeviceError : Error {
  explicit DeviceError(const std::string& what) : Error(kExitDevice, what) {}
};
struct VerifyError : Error {
  explicit VerifyError(const std::string& what) : Error(kExitVerifyFailed, what) {}
};

}  // namespace mk
