#include "core/special_output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/errors.hpp"

namespace mk {

namespace {

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace

bool is_special_output(const std::string& path) {
  struct stat info {};
  if (path.empty() || ::stat(path.c_str(), &info) != 0) return false;
  // /dev/stdout and /dev/fd/N lead to whatever the descriptor is, a regular file under `> r.json`:
  // renaming over them would replace the link in /dev (a bad-input review at 04dfbaa).
  if (starts_with(path, "/dev/") || starts_with(path, "/proc/self/fd/")) return !S_ISDIR(info.st_mode);
  return !S_ISREG(info.st_mode) && !S_ISDIR(info.st_mode);
}

void write_special_output(const std::string& path, const char* data, size_t size) {
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && (S_ISBLK(info.st_mode) || S_ISSOCK(info.st_mode)))
    throw InputError("cannot write " + path + ": it is a " + (S_ISBLK(info.st_mode) ? "block device" : "socket") +
                     ", not a file, a character device or a FIFO");
  // O_NONBLOCK only for the open: a FIFO without a reader fails (ENXIO) instead of waiting.
  // O_TRUNC for a regular file behind /dev/stdout; devices and FIFOs ignore it.
  const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_TRUNC | O_CLOEXEC);
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
