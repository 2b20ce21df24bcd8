#include "harness/build_info.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#ifndef MKBENCH_GIT_SHA
#define MKBENCH_GIT_SHA "unknown"
#endif
#ifndef MKBENCH_CXX_COMPILER
#define MKBENCH_CXX_COMPILER "unknown"
#endif
#ifndef MKBENCH_CUDA_COMPILER
#define MKBENCH_CUDA_COMPILER "unknown"
#endif
#ifndef MKBENCH_CUDA_ARCHS
#define MKBENCH_CUDA_ARCHS "unknown"
#endif
#ifndef MKBENCH_BUILD_TYPE
#define MKBENCH_BUILD_TYPE "unknown"
#endif
#ifndef MKBENCH_SOURCE_DIR
#define MKBENCH_SOURCE_DIR ""
#endif

namespace mk {

nlohmann::json BuildInfo::to_json() const {
  nlohmann::json json = {{"git_sha", git_sha},
                         {"cxx_compiler", cxx_compiler},
                         {"cuda_compiler", cuda_compiler},
                         {"cuda_architectures", cuda_architectures},
                         {"build_type", build_type}};
  if (!kernel_defines.empty()) json["kernel_defines"] = kernel_defines;
  return json;
}

BuildInfo BuildInfo::from_json(const nlohmann::json& json) {
  BuildInfo info;
  if (!json.is_object()) return info;
  auto text = [&](const char* key) {
    auto it = json.find(key);
    return it != json.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  info.git_sha = text("git_sha");
  info.cxx_compiler = text("cxx_compiler");
  info.cuda_compiler = text("cuda_compiler");
  info.cuda_architectures = text("cuda_architectures");
  info.build_type = text("build_type");
  info.kernel_defines = text("kernel_defines");
  return info;
}

BuildInfo current_build_info() {
  BuildInfo info;
  info.git_sha = MKBENCH_GIT_SHA;
  info.cxx_compiler = MKBENCH_CXX_COMPILER;
  info.cuda_compiler = MKBENCH_CUDA_COMPILER;
  info.cuda_architectures = MKBENCH_CUDA_ARCHS;
  info.build_type = MKBENCH_BUILD_TYPE;
  if (const char* defines = std::getenv("MKBENCH_NVRTC_DEFINES"); defines && *defines) info.kernel_defines = defines;
  return info;
}

static std::string executable_dir() {
  std::error_code error;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string() : exe.parent_path().string();
}

std::string source_data_path(const std::string& relative) {
  namespace fs = std::filesystem;
  std::vector<fs::path> roots;
  if (const char* env = std::getenv("MKBENCH_SOURCE_DIR"); env && *env) roots.emplace_back(env);
  if (*MKBENCH_SOURCE_DIR) roots.emplace_back(MKBENCH_SOURCE_DIR);
  // An installed or copied binary: look beside it and one level up (build-*/mkbench).
  if (auto dir = executable_dir(); !dir.empty()) {
    roots.emplace_back(dir);
    roots.emplace_back(fs::path(dir).parent_path());
    roots.emplace_back(fs::path(dir) / "../share/mkbench");
  }
  std::error_code error;
  for (const auto& root : roots) {
    fs::path candidate = root / relative;
    if (fs::exists(candidate, error)) return candidate.string();
  }
  return "";
}

}  // namespace mk
