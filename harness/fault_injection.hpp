#pragma once
// Seams that inject the faults a run must survive (issue 38), so tests can produce them on
// demand: a disk that fills up during a write, and a GPU error in one row of a suite. Each is
// off unless its environment variable is set (docs/faults.md).
#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>

namespace mk {

// MKBENCH_FAULT_WRITE_LIMIT=SIZE: a file written through the atomic writer takes SIZE bytes,
// then every further write fails with ENOSPC, as on a full disk. Otherwise ::write. Returns
// what ::write returns; `offset` is how much of this file was written before.
ssize_t write_with_fault_seam(int fd, const void* data, size_t bytes, size_t offset);

enum class RowFaultKind {
  Thrown,          // a DeviceError with a CUDA-style message (cudaErrorLaunchFailure's text, not sticky)
  ThrownSticky,    // the same with cudaErrorIllegalAddress, and the context counts as unusable
  Launch,          // a real launch with 4096 threads per block: cudaErrorInvalidConfiguration (GPU rows)
  IllegalAddress,  // a real store to an unmapped address: cudaErrorIllegalAddress, sticky (GPU rows)
};

struct RowFault {
  RowFaultKind kind = RowFaultKind::Thrown;
  std::string spec;  // the variable's value, for messages
};

// MKBENCH_FAULT_ROW=WHICH[:KIND]: WHICH is a 1-based row index (the suite's [i/n], or the
// variant's place in `run --variant a,b`) or a row name; KIND is thrown (default), sticky,
// launch or illegal-address. The fault of the row it names, if any; InputError for a
// malformed value.
std::optional<RowFault> row_fault_for(size_t row_index, const std::string& row_name);

// Makes the row fail as the fault says: throws DeviceError (a real CUDA error for the launch
// kinds, on `stream`). InputError when a launch kind names a row that does not run on a GPU.
[[noreturn]] void fire_row_fault(const RowFault& fault, void* stream, bool on_gpu);

// The sticky error an injected ThrownSticky fault left behind (nullopt when none did): the
// stand-in for a poisoned CUDA context on machines without a GPU.
std::optional<std::string> simulated_sticky_error();

}  // namespace mk
