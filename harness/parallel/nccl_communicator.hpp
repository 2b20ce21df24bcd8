#pragma once
// NCCL endpoints for GPU shards: the step's reduction is ncclAllReduce, in place on the
// shard's own stream; host-side control (broadcasts, barriers, the rows' statistics) goes
// through a host communicator beside it. NCCL is optional at build time (CMake builds it in
// where it finds libnccl); without it GPU shards reduce through host memory.
#include <memory>
#include <vector>

#include "harness/parallel/communicator.hpp"

namespace mk {

bool nccl_built_in();

// One process driving every GPU in `ordinals` (ncclCommInitAll): endpoint i is rank i on
// ordinals[i]; `control` must be a host group of the same size (in-process), endpoint i
// beside NCCL rank i.
std::vector<std::unique_ptr<Communicator>> make_nccl_single_process(
    const std::vector<int>& ordinals, std::vector<std::unique_ptr<Communicator>> control);

// One process per GPU (mpirun): rank 0 makes the NCCL id, `control` (MPI) broadcasts it,
// every rank joins with ncclCommInitRank on `ordinal`.
std::unique_ptr<Communicator> make_nccl_rank(int ordinal, std::unique_ptr<Communicator> control);

// NVLink multicast (NVLS) stays off: the lent GPU machines require it (docs/gpu-machine.md).
// Sets NCCL_NVLS_ENABLE=0 unless the environment already says otherwise; before any NCCL init.
void keep_nvlink_multicast_off();

}  // namespace mk
