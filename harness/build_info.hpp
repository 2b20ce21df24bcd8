#pragma once
// Build provenance recorded in every result file (values come from CMake definitions).
#include <string>

#include <nlohmann/json.hpp>

namespace mk {

struct BuildInfo {
  std::string git_sha;
  std::string cxx_compiler;
  std::string cuda_compiler;
  std::string cuda_architectures;
  std::string build_type;
  // MKBENCH_NVRTC_DEFINES when the run had it: its runtime-compiled kernels were an experiment,
  // not the build's defaults. Empty (and absent from JSON) otherwise.
  std::string kernel_defines;

  nlohmann::json to_json() const;
  static BuildInfo from_json(const nlohmann::json& json);  // missing keys stay empty
};

BuildInfo current_build_info();

// Where read-only project data (reports/published, harness/suites) lives: the
// MKBENCH_SOURCE_DIR env var, else the compile-time source dir, else next to the binary.
std::string source_data_path(const std::string& relative);

}  // namespace mk
