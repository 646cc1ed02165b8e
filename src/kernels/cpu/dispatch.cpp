// Picks the hot-loop variant for this CPU and holds the test-only switches of ops.h.
#include <atomic>
#include <string>

#include "core/error.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/test_flags.h"
#include "kernels/ops.h"

namespace verbatim::cpu {
namespace {

const IsaKernels* best_isa() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    return &isa_avx512::kernels;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) return &isa_avx2::kernels;
  return &isa_generic::kernels;
}

std::atomic<const IsaKernels*> g_isa{nullptr};
std::atomic<bool> g_batch_dependent{false};
std::atomic<int64_t> g_min_parallel_work{int64_t(1) << 22};

}  // namespace

const IsaKernels& isa() {
  const IsaKernels* k = g_isa.load(std::memory_order_acquire);
  if (!k) {
    k = best_isa();
    g_isa.store(k, std::memory_order_release);
  }
  return *k;
}

bool batch_dependent_matmul_for_test() { return g_batch_dependent.load(std::memory_order_relaxed); }

bool parallel_worth_it(int64_t work) { return work >= g_min_parallel_work.load(std::memory_order_relaxed); }

std::string kernel_config() {
  // Everything here changes bits; the ISA variant and thread count do not (tests prove it).
  // v2: o_proj and down_proj reduce K in kTpChunks chunks combined by a fixed tree (TP-invariant).
  return "cpu-ref-v2;dot=lanes16-halving-tree;no-fma;row_parallel=kchunks" + std::to_string(kTpChunks) +
         "-floor-bounds-pairwise-tree;attn_tile=" + std::to_string(kAttnTile) +
         ";softmax=online-tile-merge,p-rounded,sum-of-rounded-p;exp=cody-waite-deg6;"
         "rope=powf-cosf-sinf-f32;rmsnorm=1/sqrtf";
}

namespace testing {

void force_isa(const std::string& name) {
  if (name.empty()) {
    g_isa.store(best_isa(), std::memory_order_release);
    return;
  }
  __builtin_cpu_init();
  const IsaKernels* k = nullptr;
  if (name == "generic") k = &isa_generic::kernels;
  if (name == "avx2" && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) k = &isa_avx2::kernels;
  if (name == "avx512" && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    k = &isa_avx512::kernels;
  if (!k) throw Error("instruction set variant '" + name + "' is unknown or not supported by this CPU");
  g_isa.store(k, std::memory_order_release);
}

std::string isa_name() { return isa().name; }

void set_batch_dependent_matmul(bool on) { g_batch_dependent.store(on, std::memory_order_relaxed); }

int64_t set_min_parallel_work(int64_t work) { return g_min_parallel_work.exchange(work); }

}  // namespace testing
}  // namespace verbatim::cpu
