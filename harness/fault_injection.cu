#include "harness/fault_injection.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>

#include "core/errors.hpp"

namespace mk {
namespace {

std::optional<std::string> sticky_error;

__global__ void fault_launch_never_runs() {}

__global__ void fault_store_to(int* target) { *target = 1; }

const char* kindless(const std::string& text, RowFaultKind* kind) {
  static const struct {
    const char* suffix;
    RowFaultKind kind;
  } kinds[] = {{":thrown", RowFaultKind::Thrown},
               {":sticky", RowFaultKind::ThrownSticky},
               {":launch", RowFaultKind::Launch},
               {":illegal-address", RowFaultKind::IllegalAddress}};
  for (const auto& each : kinds) {
    const std::string suffix = each.suffix;
    if (text.size() > suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0) {
      *kind = each.kind;
      return each.suffix;
    }
  }
  *kind = RowFaultKind::Thrown;
  return "";
}

}  // namespace

std::optional<RowFault> row_fault_for(size_t row_index, const std::string& row_name) {
  const char* value = std::getenv("MKBENCH_FAULT_ROW");
  if (!value || !*value) return std::nullopt;
  const std::string text = value;
  RowFault fault;
  fault.spec = text;
  const std::string which = text.substr(0, text.size() - std::string(kindless(text, &fault.kind)).size());
  if (which.empty()) throw InputError("MKBENCH_FAULT_ROW='" + text + "' names no row");
  if (which.find_first_not_of("0123456789") == std::string::npos) {
    if (which.size() > 9) throw InputError("MKBENCH_FAULT_ROW='" + text + "': row index out of range");
    if (row_index > 0 && size_t(std::stoul(which)) == row_index) return fault;
    return std::nullopt;
  }
  if (which == row_name) return fault;
  return std::nullopt;
}

void fire_row_fault(const RowFault& fault, void* stream, bool on_gpu) {
  const std::string where = "injected fault (MKBENCH_FAULT_ROW=" + fault.spec + ")";
  switch (fault.kind) {
    case RowFaultKind::Thrown:
      throw DeviceError(where + ": iteration: cudaErrorLaunchFailure (unspecified launch failure)");
    case RowFaultKind::ThrownSticky:
      sticky_error = "cudaErrorIllegalAddress (an illegal memory access was encountered), " + where;
      throw DeviceError(where + ": iteration: cudaErrorIllegalAddress (an illegal memory access was encountered)");
    case RowFaultKind::Launch:
    case RowFaultKind::IllegalAddress:
      break;
  }
  if (!on_gpu) throw InputError(where + ": a real launch failure needs a row that runs on the GPU");
  const auto cuda_stream = static_cast<cudaStream_t>(stream);
  cudaError_t status = cudaSuccess;
  std::string step;
  if (fault.kind == RowFaultKind::Launch) {
    // 4096 threads per block is above every GPU's limit of 1024: the launch itself fails.
    fault_launch_never_runs<<<1, 4096, 0, cuda_stream>>>();
    status = cudaGetLastError();
    step = "launch with 4096 threads per block";
  } else {
    // Address 16 is never mapped on the device: the store faults and the context is lost.
    fault_store_to<<<1, 1, 0, cuda_stream>>>(reinterpret_cast<int*>(uintptr_t(16)));
    status = cudaStreamSynchronize(cuda_stream);
    step = "store to address 16";
  }
  if (status == cudaSuccess) throw DeviceError(where + ": " + step + " unexpectedly succeeded");
  const std::string message =
      where + ": " + step + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")";
  cudaGetLastError();
  throw DeviceError(message);
}

std::optional<std::string> simulated_sticky_error() { return sticky_error; }

}  // namespace mk
