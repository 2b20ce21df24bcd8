#pragma once
// How much memory this process may use on the host. A container's cgroup limit, not the
// machine's MemTotal, is what the OOM killer enforces; and on the lent multi-GPU machines
// MemTotal reads 31 GiB at start and grows towards the cgroup's limit as memory is used
// (issue 35), so the cgroup is read first and MemTotal is only the fallback.
#include <cstdint>
#include <optional>
#include <string>

namespace mk {

// Where the readings come from; tests point these at a fake tree.
struct HostMemorySources {
  std::string proc_self_cgroup = "/proc/self/cgroup";
  std::string cgroup_root = "/sys/fs/cgroup";  // v2 here or in unified/, v1 in memory/
  std::string meminfo = "/proc/meminfo";
};

struct HostMemoryLimit {
  int64_t bytes = 0;   // 0: nothing could be read
  std::string source;  // e.g. "cgroup v2 memory.max of /sys/fs/cgroup/user.slice", "MemTotal of /proc/meminfo"
};

// The limit in a cgroup file: memory.max (v2) or memory.limit_in_bytes (v1). nullopt for
// no limit: "max", v1's "unlimited" (a value near 2^63, rounded down to a page), an
// empty or malformed text.
std::optional<int64_t> parse_cgroup_memory_limit(const std::string& text);
// MemTotal in bytes from /proc/meminfo's text; nullopt when absent or malformed.
std::optional<int64_t> parse_meminfo_total(const std::string& text);

// The smallest limit set on this process's cgroup or any cgroup above it (v2 memory.max,
// v1 memory.limit_in_bytes); where none is set, MemTotal. Missing files are skipped.
HostMemoryLimit read_host_memory_limit(const HostMemorySources& sources = {});

}  // namespace mk
