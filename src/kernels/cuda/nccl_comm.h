#pragma once
// NCCL for tensor parallelism, loaded at run time (dlopen "libnccl.so.2") so that the verbatim
// binary starts on machines without NCCL (CI compiles the CUDA build but has no GPU and may have
// no libnccl): only --tensor-parallel-size > 1 needs the library, and says so when it is missing.
// Only the collectives the contract allows are wrapped: all-gather (a copy: no arithmetic, so
// NCCL's algorithm, protocol and channel choice cannot change a bit) and, for the measured
// control only, all-reduce sum.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

namespace verbatim::cuda {

using NcclComm = void*;  // an ncclComm_t

// One communicator per device, rank i on devices[i] (ncclCommInitAll: one process, one thread per
// GPU afterwards). Throws Error naming the library or the NCCL error.
std::vector<NcclComm> nccl_init_all(const std::vector<int>& devices);
void nccl_destroy(NcclComm comm);
// Unblocks ranks waiting on a peer that failed (ncclCommAbort); the communicator is dead after.
void nccl_abort(NcclComm comm);
// recv[N * count] = the ranks' send[count] in rank order. In place when send == recv + rank * count.
void nccl_all_gather_f32(NcclComm comm, const float* send, float* recv, size_t count, cudaStream_t stream);
// recv[count] = sum over ranks of send[count], in NCCL's own order (depends on N, algorithm, size).
void nccl_all_reduce_sum_f32(NcclComm comm, const float* send, float* recv, size_t count, cudaStream_t stream);
// "2.28.3" (the loaded library's version), or throws Error when it cannot be loaded.
std::string nccl_version();

}  // namespace verbatim::cuda
