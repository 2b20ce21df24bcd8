#include "harness/parallel/mpi_communicator.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#if MKBENCH_HAVE_MPI
#include <mpi.h>
#endif

namespace mk {

namespace {

int env_int(const char* name, int fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  return end != text && *end == 0 && value >= 0 ? int(value) : fallback;
}

}  // namespace

MpiLaunch detect_mpi_launch() {
  MpiLaunch launch;
  // OpenMPI first (the supported launcher), then the names MPICH's Hydra and Slurm's PMI use.
  const int size = env_int("OMPI_COMM_WORLD_SIZE", env_int("PMI_SIZE", 1));
  if (size <= 1) return launch;
  launch.active = true;
  launch.world_size = size;
  launch.world_rank = env_int("OMPI_COMM_WORLD_RANK", env_int("PMI_RANK", 0));
  launch.local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", env_int("MPI_LOCALRANKID", launch.world_rank));
  launch.local_size = env_int("OMPI_COMM_WORLD_LOCAL_SIZE", env_int("MPI_LOCALNRANKS", size));
  return launch;
}

bool writes_outputs() {
  const MpiLaunch launch = detect_mpi_launch();
  return !launch.active || launch.world_rank == 0;
}

#if MKBENCH_HAVE_MPI

namespace {

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void mpi_check(int status, const char* what) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(status, text, &length);
  throw DeviceError(std::string("MPI ") + what + ": " + text);
}

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator() {
    mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    // Errors come back as codes, so a failing call names itself instead of the default
    // handler ending the job without a word of ours.
    mpi_check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    mpi_check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    mpi_check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string kind() const override { return "mpi"; }
  bool reduces_device_buffers() const override { return false; }

  void all_reduce_sum(double* data, size_t count, void*) override { host_all_reduce_sum(data, count); }
  void all_reduce_sum(unsigned long long* data, size_t count, void*) override {
    mpi_check(MPI_Allreduce(MPI_IN_PLACE, data, int(count), MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm_),
              "MPI_Allreduce");
  }
  void host_all_reduce_sum(double* data, size_t count) override {
    mpi_check(MPI_Allreduce(MPI_IN_PLACE, data, int(count), MPI_DOUBLE, MPI_SUM, comm_), "MPI_Allreduce");
  }
  void broadcast(void* bytes, size_t size, int root) override {
    constexpr size_t kChunk = size_t(1) << 30;  // MPI counts are int
    for (size_t offset = 0; offset < size; offset += kChunk)
      mpi_check(MPI_Bcast(static_cast<char*>(bytes) + offset, int(std::min(kChunk, size - offset)), MPI_BYTE, root,
                          comm_),
                "MPI_Bcast");
  }
  void barrier() override { mpi_check(MPI_Barrier(comm_), "MPI_Barrier"); }
  [[noreturn]] void abort(const std::string& reason) override {
    std::cerr << "mkbench: error: rank " << rank_ << ": " << reason << "; ending every rank (MPI_Abort)\n";
    MPI_Abort(MPI_COMM_WORLD, kExitDevice);
    std::_Exit(kExitDevice);
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
};

}  // namespace

bool mpi_built_in() { return true; }

void ensure_mpi_initialized() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  // Collectives are called by one thread at a time (the shard's worker or the main thread).
  int provided = 0;
  mpi_check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  std::atexit(finalize_at_exit);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0 && !std::freopen("/dev/null", "w", stdout))
    std::cerr << "mkbench: warning: rank " << rank << " could not silence its stdout\n";
}

std::unique_ptr<Communicator> make_mpi_world_communicator() {
  ensure_mpi_initialized();
  return std::make_unique<MpiCommunicator>();
}

#else  // !MKBENCH_HAVE_MPI

namespace {
[[noreturn]] void no_mpi() {
  throw InputError(
      "this mkbench was built without MPI, so it cannot run as one rank of an mpirun launch: install "
      "libopenmpi-dev (scripts/setup.sh) and rebuild, or run one process with --device 0,1,...");
}
}  // namespace

bool mpi_built_in() { return false; }
void ensure_mpi_initialized() { no_mpi(); }
std::unique_ptr<Communicator> make_mpi_world_communicator() { no_mpi(); }

#endif

}  // namespace mk
