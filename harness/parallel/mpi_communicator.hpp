#pragma once
// One process per shard, launched by mpirun (OpenMPI from Debian; docs/multi-gpu.md). MPI is
// optional at build time: CMake builds it in where it finds it, and a binary without it
// refuses an mpirun launch of several ranks instead of running every rank as a whole run.
#include <memory>

#include "harness/parallel/communicator.hpp"

namespace mk {

// What the launcher told this process, from its environment alone (OpenMPI's
// OMPI_COMM_WORLD_*, or the PMI_* of MPICH and Slurm): no MPI call is made.
struct MpiLaunch {
  bool active = false;  // launched as one of several ranks
  int world_rank = 0, world_size = 1;
  int local_rank = 0, local_size = 1;  // among the ranks of this host
};
MpiLaunch detect_mpi_launch();

bool mpi_built_in();
// MPI_Init_thread once (MPI_Finalize at exit). Ranks other than 0 send stdout to /dev/null,
// so tables are printed once; their warnings and errors stay on stderr. InputError when this
// binary was built without MPI.
void ensure_mpi_initialized();
// Rank 0 of an MPI launch, or any process not launched by MPI: the one that prints results
// and writes output files.
bool writes_outputs();

// An endpoint over a duplicate of MPI_COMM_WORLD whose errors are returned, so each call
// throws DeviceError with MPI's message; abort() is MPI_Abort, which ends every rank.
// Initialises MPI when needed.
std::unique_ptr<Communicator> make_mpi_world_communicator();

}  // namespace mk
