#include "datasets/mapped_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/errors.hpp"
#include "core/input_file.hpp"

namespace mk {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) throw InputError("cannot read '" + path + "': it is a directory");
  require_regular_file(path, "data file");  // before the open, which waits on a FIFO
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError("cannot open '" + path + "': " + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int saved = errno;
    ::close(fd);
    throw InputError("cannot read '" + path + "': " + std::strerror(saved));
  }
  size_ = size_t(info.st_size);
  if (size_ > 0) {
    void* mapped = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapped == MAP_FAILED) {
      const int saved = errno;
      ::close(fd);
      throw InputError("cannot map '" + path + "' into memory: " + std::strerror(saved));
    }
    data_ = static_cast<const unsigned char*>(mapped);
  }
  ::close(fd);  // the mapping keeps the file open
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<unsigned char*>(data_), size_);
}

}  // namespace mk
