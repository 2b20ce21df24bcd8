#include "core/special_output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/errors.hpp"

namespace mk {

bool is_special_output(const std::string& path) {
  struct stat info {};
  if (path.empty() || ::stat(path.c_str(), &info) != 0) return false;
  return !S_ISREG(info.st_mode) && !S_ISDIR(info.st_mode);
}

void write_special_output(const std::string& path, const char* data, size_t size) {
  // O_NONBLOCK only for the open: a FIFO without a reader fails (ENXIO) instead of waiting.
  const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    throw InputError("cannot write " + path + ": " +
                     (error == ENXIO ? std::string("no process reads it") : std::strerror(error)));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  size_t written = 0;
  while (written < size) {
    const ssize_t n = ::write(fd, data + written, size - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string reason = n < 0 ? std::strerror(errno) : "nothing written";
      ::close(fd);
      throw InputError("cannot write " + path + ": " + reason + " after " + std::to_string(written) + " of " +
                       std::to_string(size) + " bytes");
    }
    written += size_t(n);
  }
  if (::close(fd) != 0 && errno != EINTR) throw InputError("cannot write " + path + " (close): " + std::strerror(errno));
}

}  // namespace mk
