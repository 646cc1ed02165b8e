// NCCL through dlopen (nccl_comm.h). The few declarations below are NCCL's stable C ABI (nccl.h:
// ncclResult_t is an int enum with ncclSuccess = 0, ncclFloat32 = 7, ncclSum = 0); declaring them
// here keeps the build free of nccl.h, which a CUDA toolkit does not always ship.
#include "kernels/cuda/nccl_comm.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "core/error.h"

namespace verbatim::cuda {
namespace {

using Result = int;               // ncclResult_t
constexpr Result kSuccess = 0;    // ncclSuccess
constexpr int kFloat32 = 7;       // ncclFloat32
constexpr int kSum = 0;           // ncclSum

struct Nccl {
  Result (*comm_init_all)(void** comms, int ndev, const int* devlist) = nullptr;
  Result (*comm_destroy)(void* comm) = nullptr;
  Result (*comm_abort)(void* comm) = nullptr;
  Result (*all_gather)(const void* send, void* recv, size_t count, int type, void* comm, cudaStream_t s) = nullptr;
  Result (*all_reduce)(const void* send, void* recv, size_t count, int type, int op, void* comm,
                       cudaStream_t s) = nullptr;
  const char* (*error_string)(Result r) = nullptr;
  Result (*get_version)(int* version) = nullptr;
};

const Nccl& nccl() {
  static Nccl n;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen("libnccl.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = dlerror();
      failure = std::string("--tensor-parallel-size > 1 needs NCCL: cannot load libnccl.so.2 (") + (e ? e : "?") + ")";
      return;
    }
    auto sym = [&](const char* name) {
      void* p = dlsym(h, name);
      if (!p && failure.empty()) failure = std::string("libnccl.so.2 has no symbol ") + name;
      return p;
    };
    n.comm_init_all = reinterpret_cast<decltype(n.comm_init_all)>(sym("ncclCommInitAll"));
    n.comm_destroy = reinterpret_cast<decltype(n.comm_destroy)>(sym("ncclCommDestroy"));
    n.comm_abort = reinterpret_cast<decltype(n.comm_abort)>(sym("ncclCommAbort"));
    n.all_gather = reinterpret_cast<decltype(n.all_gather)>(sym("ncclAllGather"));
    n.all_reduce = reinterpret_cast<decltype(n.all_reduce)>(sym("ncclAllReduce"));
    n.error_string = reinterpret_cast<decltype(n.error_string)>(sym("ncclGetErrorString"));
    n.get_version = reinterpret_cast<decltype(n.get_version)>(sym("ncclGetVersion"));
  });
  if (!failure.empty()) throw Error(failure);
  return n;
}

void check(Result r, const char* what) {
  if (r == kSuccess) return;
  const char* s = nccl().error_string ? nccl().error_string(r) : "?";
  throw Error(std::string("NCCL error in ") + what + ": " + s + " (" + std::to_string(r) + ")");
}

}  // namespace

std::vector<NcclComm> nccl_init_all(const std::vector<int>& devices) {
  // No user-buffer registration (unless asked for in the environment): NCCL moves the bytes
  // through its own buffers, eager and in captured graphs alike, whatever our buffers' history
  // (they are freed and reallocated when the activation capacity grows). A copy either way.
  setenv("NCCL_GRAPH_REGISTER", "0", 0);
  setenv("NCCL_LOCAL_REGISTER", "0", 0);
  // Every connection at init, none made lazily by a first collective inside a graph capture.
  setenv("NCCL_RUNTIME_CONNECT", "0", 0);
  std::vector<NcclComm> comms(devices.size(), nullptr);
  check(nccl().comm_init_all(comms.data(), int(devices.size()), devices.data()), "ncclCommInitAll");
  return comms;
}

void nccl_destroy(NcclComm comm) {
  if (comm) nccl().comm_destroy(comm);
}

void nccl_abort(NcclComm comm) {
  if (comm) nccl().comm_abort(comm);
}

void nccl_all_gather_f32(NcclComm comm, const float* send, float* recv, size_t count, cudaStream_t stream) {
  check(nccl().all_gather(send, recv, count, kFloat32, comm, stream), "ncclAllGather");
}

void nccl_all_reduce_sum_f32(NcclComm comm, const float* send, float* recv, size_t count, cudaStream_t stream) {
  check(nccl().all_reduce(send, recv, count, kFloat32, kSum, comm, stream), "ncclAllReduce");
}

std::string nccl_version() {
  int v = 0;
  check(nccl().get_version(&v), "ncclGetVersion");
  // NCCL_VERSION_CODE since 2.9: major * 10000 + minor * 100 + patch.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

}  // namespace verbatim::cuda
