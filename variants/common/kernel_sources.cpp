#include "variants/common/kernel_sources.hpp"

#include <stdexcept>

namespace mk::gpu {

std::vector<std::pair<std::string, std::string>> kernel_headers(const std::string& folder) {
  std::vector<std::pair<std::string, std::string>> headers;
  const std::string prefix = folder + "/";
  for (const auto& [path, text] : embedded_kernel_files())
    if (path.compare(0, prefix.size(), prefix) == 0 && path.find('/', prefix.size()) == std::string::npos)
      headers.emplace_back(path.substr(prefix.size()), text);
  if (headers.empty()) throw std::logic_error("no embedded kernel files under variants/" + folder);
  return headers;
}

}  // namespace mk::gpu
