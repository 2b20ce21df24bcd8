#pragma once
// Files a command reads whole (results, suites, configs, caches, weights, datasets) must be
// regular files: /dev/zero was read until memory ran out, and a FIFO's open waited for a writer
// for good (a bad-input audit at 04dfbaa).
#include <string>

namespace mk {

// Throws InputError naming `what` and `path` when the path exists and is a folder, a device, a
// FIFO or a socket; a missing path is left to the caller's own message. With `pipes`, for text a
// reader takes in one pass (results, suites, configs, caches), a FIFO (a shell pipe, <(...),
// /dev/stdin) and /dev/null are read too.
void require_regular_file(const std::string& path, const std::string& what, bool pipes = false);

}  // namespace mk
