#pragma once
// `mkbench fit --stream`: the command side of the streaming k-means (stream.hpp,
// docs/streaming.md): options checked, the path chosen, the summary and the files.
#include "apps/fit/fit_options.hpp"

namespace mk {

// Exit 2 (InputError) for what --stream does not take: a K range, --weights,
// --init other than k-means++, --empty or --silhouette-sample given, a --variant other than
// auto or cpu-openmp, a --chunk-points that is not a count or too small.
int stream_fit_command(const FitOptions& options);

}  // namespace mk
