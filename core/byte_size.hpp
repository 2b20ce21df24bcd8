#pragma once
// Memory sizes as people write and read them: binary units, as the counts of the seed
// (32M = 2^25) and as the kernel reports memory.
#include <cstdint>
#include <string>

namespace mk {

// "64G", "64GiB", "1.5T", "512m", "4096" (bytes) -> bytes. Units K, M, G, T are powers of
// 1024, with an optional "B" or "iB". InputError naming `what` for anything else or a size
// below one byte.
int64_t parse_byte_size(const std::string& text, const std::string& what = "size");
// 1536 -> "1.5 KiB", 256 << 30 -> "256.0 GiB", 100 -> "100 B".
std::string format_bytes(double bytes);

}  // namespace mk
