#pragma once
// Output paths that name something other than a regular file: /dev/null, /dev/stdout, a FIFO.
// The writers rename a finished temporary file over their target (an interrupted run loses
// nothing), which over a device would replace the device itself with a file; these targets
// are written in place instead, where atomicity means nothing anyway.
#include <cstddef>
#include <string>

namespace mk {

// True when `path` exists and is neither a regular file nor a folder, or is under /dev or
// /proc/self/fd (/dev/stdout leads to a regular file under `> r.json`). A file written once per
// row (suite, verify-matrix) is written once, at the end, to such a target.
bool is_special_output(const std::string& path);

// Writes `size` bytes to the special file at `path` (no creation, no rename; truncated where it
// is a regular file). Throws InputError naming the path and the reason (ENOSPC from /dev/full, a
// FIFO with no reader, a block device or a socket, which are refused).
void write_special_output(const std::string& path, const char* data, size_t size);

}  // namespace mk
