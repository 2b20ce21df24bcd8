#include "core/input_file.hpp"

#include <sys/stat.h>

#include "core/errors.hpp"

namespace mk {

void require_regular_file(const std::string& path, const std::string& what, bool pipes) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || S_ISREG(info.st_mode)) return;
  if (pipes && (S_ISFIFO(info.st_mode) || path == "/dev/null")) return;
  const char* kind = S_ISDIR(info.st_mode)    ? "a folder"
                     : S_ISFIFO(info.st_mode) ? "a FIFO"
                     : S_ISSOCK(info.st_mode) ? "a socket"
                                              : "a device";
  throw InputError("cannot read " + what + " " + path + ": it is " + kind + ", not a regular file");
}

}  // namespace mk
