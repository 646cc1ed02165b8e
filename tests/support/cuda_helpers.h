#pragma once
// Small helpers for the CUDA tests: device buffers and the skip rule (no GPU: skipped, never faked).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cuda/kernels.h"

namespace verbatim::test {

// Skips the current test (GTEST_SKIP) when no CUDA device is visible.
#define VB_REQUIRE_GPU()                                                                  \
  do {                                                                                    \
    int vb_count_ = 0;                                                                    \
    if (cudaGetDeviceCount(&vb_count_) != cudaSuccess || vb_count_ == 0)                  \
      GTEST_SKIP() << "no CUDA device visible: the GPU tests run on a machine with one"; \
  } while (0)

struct DevBuf {
  void* p = nullptr;
  size_t bytes = 0;
  DevBuf() = default;
  explicit DevBuf(size_t n) : bytes(n) { VB_CUDA(cudaMalloc(&p, n ? n : 16)); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  DevBuf(DevBuf&& o) noexcept : p(o.p), bytes(o.bytes) { o.p = nullptr; }
  DevBuf& operator=(DevBuf&& o) noexcept {
    if (this != &o) {
      if (p) cudaFree(p);
      p = o.p;
      bytes = o.bytes;
      o.p = nullptr;
    }
    return *this;
  }
  ~DevBuf() {
    if (p) cudaFree(p);
  }
  template <typename T> T* as() const { return static_cast<T*>(p); }
};

template <typename T> DevBuf to_device(const std::vector<T>& v) {
  DevBuf d(v.size() * sizeof(T));
  if (!v.empty()) VB_CUDA(cudaMemcpy(d.p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}
template <typename T> std::vector<T> to_host(const DevBuf& d, size_t n) {
  std::vector<T> v(n);
  VB_CUDA(cudaDeviceSynchronize());
  if (n) VB_CUDA(cudaMemcpy(v.data(), d.p, n * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

}  // namespace verbatim::test
