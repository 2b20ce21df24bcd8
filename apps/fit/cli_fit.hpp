#pragma once
// `mkbench fit`: argument handling and the command (docs/fit.md).
#include "apps/fit/fit_options.hpp"

namespace CLI {
class App;
}

namespace mk {

void add_fit_options(CLI::App& app, FitOptions& options);
int fit_command(const FitOptions& options);

}  // namespace mk
