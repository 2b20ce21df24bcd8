#pragma once
// A file mapped read-only into memory (mmap). The .npy loader reads a file through it in one
// pass on all cores, and an out-of-core run can take its chunks straight from it, so a file
// larger than the host's memory is paged in from disk as the chunks are read instead of being
// copied whole (docs/out-of-core.md). The pages are clean and file-backed, so the kernel can
// drop them again under memory pressure. A file truncated by another process while mapped
// makes a read of the lost pages fault (SIGBUS): mkbench's inputs are not written while it runs.
#include <cstddef>
#include <string>

namespace mk {

class MappedFile {
 public:
  // InputError when the path cannot be opened or mapped (a directory, a missing file).
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace mk
