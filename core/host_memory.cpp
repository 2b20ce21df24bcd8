#include "core/host_memory.hpp"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace mk {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string trimmed(const std::string& text) {
  size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return text.substr(begin, end - begin);
}

std::optional<int64_t> parse_whole_bytes(const std::string& text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  int64_t value = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

struct CgroupLine {
  std::string controllers;  // "" for v2, "memory" or "cpu,cpuacct" for v1
  std::string path;         // "/user.slice/..."
};

std::vector<CgroupLine> cgroup_lines(const std::string& text) {
  std::vector<CgroupLine> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t first = line.find(':');
    const size_t second = first == std::string::npos ? std::string::npos : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    lines.push_back({line.substr(first + 1, second - first - 1), line.substr(second + 1)});
  }
  return lines;
}

bool names_memory_controller(const std::string& controllers) {
  std::istringstream in(controllers);
  std::string name;
  while (std::getline(in, name, ','))
    if (name == "memory") return true;
  return false;
}

// Reads `file` in the process's cgroup folder under `root` and in every folder above it up
// to `root`: a limit set on a parent binds its children. The smallest limit wins.
void smallest_limit_on_path(const fs::path& root, const std::string& cgroup_path, const char* file,
                            const std::string& label, HostMemoryLimit& best) {
  fs::path relative = fs::path(cgroup_path).relative_path().lexically_normal();
  while (true) {
    const fs::path folder = relative.empty() || relative == "." ? root : root / relative;
    if (auto text = read_text(folder / file)) {
      if (auto limit = parse_cgroup_memory_limit(*text); limit && (best.bytes == 0 || *limit < best.bytes)) {
        best.bytes = *limit;
        best.source = label + " " + file + " of " + folder.string();
      }
    }
    if (relative.empty() || relative == ".") break;
    relative = relative.parent_path();
  }
}

}  // namespace

std::optional<int64_t> parse_cgroup_memory_limit(const std::string& text) {
  const std::string value = trimmed(text);
  if (value == "max") return std::nullopt;
  const auto bytes = parse_whole_bytes(value);
  // cgroup v1 writes "no limit" as LONG_MAX rounded down to a page (9223372036854771712);
  // nothing real comes near 2^62 bytes.
  if (!bytes || *bytes <= 0 || *bytes >= (int64_t(1) << 62)) return std::nullopt;
  return bytes;
}

std::optional<int64_t> parse_meminfo_total(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemTotal:", 0) != 0) continue;
    std::istringstream fields(line.substr(9));
    std::string number, unit;
    fields >> number >> unit;
    const auto value = parse_whole_bytes(number);
    if (!value || *value <= 0) return std::nullopt;
    if (unit == "kB") return *value * 1024;
    if (unit.empty()) return *value;
    return std::nullopt;
  }
  return std::nullopt;
}

HostMemoryLimit read_host_memory_limit(const HostMemorySources& sources) {
  HostMemoryLimit limit;
  if (auto text = read_text(sources.proc_self_cgroup)) {
    const fs::path root(sources.cgroup_root);
    for (const CgroupLine& line : cgroup_lines(*text)) {
      if (line.controllers.empty()) {
        // v2: unified at the root, or in unified/ on a hybrid v1 + v2 host.
        smallest_limit_on_path(root, line.path, "memory.max", "cgroup v2", limit);
        smallest_limit_on_path(root / "unified", line.path, "memory.max", "cgroup v2", limit);
      } else if (names_memory_controller(line.controllers)) {
        smallest_limit_on_path(root / "memory", line.path, "memory.limit_in_bytes", "cgroup v1", limit);
      }
    }
  }
  if (limit.bytes > 0) return limit;
  if (auto text = read_text(sources.meminfo))
    if (auto total = parse_meminfo_total(*text)) return {*total, "MemTotal of " + sources.meminfo};
  return limit;
}

}  // namespace mk
