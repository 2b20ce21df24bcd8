#pragma once
// Ranks that are threads of one process, reducing host buffers: `--device cpu:N`, and the
// sharding tests of CPU CI. Every collective is one rendezvous: the last rank to arrive adds
// the ranks' buffers in rank order (so the sum does not depend on who came first) and writes
// the result into every rank's buffer before it releases them.
#include <memory>
#include <vector>

#include "harness/parallel/communicator.hpp"

namespace mk {

class InProcessGroup;

// `ranks` endpoints of one new group; endpoint i is rank i. Each is used by one thread.
std::vector<std::unique_ptr<Communicator>> make_in_process_group(int ranks);

}  // namespace mk
