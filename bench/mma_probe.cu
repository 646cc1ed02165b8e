// mma_probe: does Hopper's wgmma give the bits of mma.sync for the same dot product?
// The contract GEMM (src/kernels/cuda/gemm.cu) chains mma.sync m16n8k16 steps; a wgmma prefill
// kernel could only share its bits if one k16 step of wgmma rounds and adds exactly as mma.sync
// does. This tool measures that on the device: random 64 x K by K x 8 products (natural slot->k
// map, k16 steps in ascending order, fp32 accumulators chained) through (1) mma.sync, (2) wgmma
// with A and B in shared memory, (3) wgmma with A in registers; it counts differing outputs and
// the error of each against an fp64 reference, for bf16 and fp16 and for two input ranges.
// Second question (session 13): does one mma.sync k16 step depend on which slot each k takes, or
// only on the step's set of 16 k? Chunks of 32 k through mma.sync under slot->k maps that keep
// each step's set (the attention kernels' map, random permutations inside each step) and under
// maps that change the sets (gemm.cu's v1 map, a swap of the steps' halves), each against the
// natural map. If only the sets matter, a GEMM whose steps take 16 consecutive k can be fed by
// plain tensor copies of W and still give the bits of an mma.sync kernel that loads 8 bytes a lane.
// Usage: mma_probe [--json FILE]. Research tool: it prints what it finds and asserts nothing.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int kM = 64, kN = 8;

#define CK(x)                                                                           \
  do {                                                                                  \
    cudaError_t e_ = (x);                                                               \
    if (e_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "mma_probe: %s: %s\n", #x, cudaGetErrorString(e_));          \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

template <bool BF>
__device__ __forceinline__ void mma_sync(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (BF)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t ld2(const uint16_t* p) { return *reinterpret_cast<const uint32_t*>(p); }

// Thread (warp w, gid, tig) of a 16-row MMA: its A words for rows 16w+gid(+8), k 2tig(+8) of step s.
__device__ __forceinline__ void a_frag(const uint16_t* A, int K, int w, int gid, int tig, int s, uint32_t (&a)[4]) {
  const int r0 = 16 * w + gid, k0 = 16 * s + 2 * tig;
  a[0] = ld2(A + r0 * K + k0);
  a[1] = ld2(A + (r0 + 8) * K + k0);
  a[2] = ld2(A + r0 * K + k0 + 8);
  a[3] = ld2(A + (r0 + 8) * K + k0 + 8);
}

__device__ __forceinline__ void store_d(float* D, int w, int gid, int tig, const float (&c)[4]) {
  const int r0 = 16 * w + gid;
  D[r0 * kN + 2 * tig] = c[0];
  D[r0 * kN + 2 * tig + 1] = c[1];
  D[(r0 + 8) * kN + 2 * tig] = c[2];
  D[(r0 + 8) * kN + 2 * tig + 1] = c[3];
}

template <bool BF>
__global__ void probe_mma_sync(const uint16_t* A, const uint16_t* B, int K, float* D) {
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
  float c[4] = {0, 0, 0, 0};
  for (int s = 0; s < K / 16; ++s) {
    uint32_t a[4];
    a_frag(A, K, w, gid, tig, s, a);
    const int k0 = 16 * s + 2 * tig;
    mma_sync<BF>(c, a, ld2(B + gid * K + k0), ld2(B + gid * K + k0 + 8));
  }
  store_d(D, w, gid, tig, c);
}

// mma.sync chained over K with slot j of step q of each 32-k chunk taking chunk offset
// perm[16 q + j] (A and B alike, so the product is the plain dot product whatever the map).
__device__ __forceinline__ uint32_t pack_pair(const uint16_t* row, int k0, int k1) {
  return uint32_t(row[k0]) | (uint32_t(row[k1]) << 16);
}
template <bool BF>
__global__ void probe_mma_perm(const uint16_t* A, const uint16_t* B, int K, float* D, const int* perm) {
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
  const uint16_t* a0 = A + (16 * w + gid) * K;
  const uint16_t* a1 = A + (16 * w + gid + 8) * K;
  const uint16_t* b = B + gid * K;
  float c[4] = {0, 0, 0, 0};
  for (int c0 = 0; c0 < K; c0 += 32)
    for (int q = 0; q < 2; ++q) {
      const int* pq = perm + 16 * q;
      const int k0 = c0 + pq[2 * tig], k1 = c0 + pq[2 * tig + 1], k8 = c0 + pq[2 * tig + 8], k9 = c0 + pq[2 * tig + 9];
      const uint32_t a[4] = {pack_pair(a0, k0, k1), pack_pair(a1, k0, k1), pack_pair(a0, k8, k9), pack_pair(a1, k8, k9)};
      mma_sync<BF>(c, a, pack_pair(b, k0, k1), pack_pair(b, k8, k9));
    }
  store_d(D, w, gid, tig, c);
}

// No-swizzle K-major layout: 8-row x 16-byte core matrices, rows 16 bytes apart; the core matrix
// of (row group g, k group c) of step s at s*step_bytes + g*256 + c*128 (the two k groups of a
// row group side by side). The layout is fixed; only the descriptor's reading of it varies.
constexpr int kKGroupBytes = 128, kRowGroupBytes = 256;
__device__ __forceinline__ uint32_t core_off(int r, int k) {
  return uint32_t((r / 8) * kRowGroupBytes + (k / 8) * kKGroupBytes + (r % 8) * 16 + (k % 8) * 2);
}
__device__ __forceinline__ uint64_t desc(uint32_t smem_addr, int lbo, int sbo) {
  return uint64_t((smem_addr & 0x3FFFF) >> 4) | (uint64_t(lbo >> 4) << 16) | (uint64_t(sbo >> 4) << 32);
}

template <bool BF>
__device__ __forceinline__ void wgmma_ss(float (&c)[4], uint64_t da, uint64_t db) {
  if constexpr (BF)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0,%1,%2,%3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "l"(da), "l"(db));
  else
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0,%1,%2,%3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "l"(da), "l"(db));
}
template <bool BF>
__device__ __forceinline__ void wgmma_rs(float (&c)[4], const uint32_t (&a)[4], uint64_t db) {
  if constexpr (BF)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, p, 1, 1, 0;\n}\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
  else
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, p, 1, 1, 0;\n}\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

// regs_a: A from registers; else from shared memory. swap: the descriptor's LBO and SBO fields
// exchanged (the probe reports which reading gives the right product).
template <bool BF>
__global__ void probe_wgmma(const uint16_t* A, const uint16_t* B, int K, float* D, bool regs_a, bool swap) {
  extern __shared__ __align__(128) uint8_t smem[];
  const int steps = K / 16;
  // PTX's K-major reading: LBO = the k-group stride, SBO = the row-group stride; swap tries the other.
  const int lbo = swap ? kRowGroupBytes : kKGroupBytes, sbo = swap ? kKGroupBytes : kRowGroupBytes;
  const int a_step = kM * 16 * 2, b_step = 256;  // bytes per k16 step (B: one row group, 2 k groups)
  uint8_t* sa = smem;
  uint8_t* sb = smem + steps * a_step;
  for (int i = threadIdx.x; i < kM * K; i += blockDim.x) {
    const int r = i / K, k = i % K, s = k / 16;
    *reinterpret_cast<uint16_t*>(sa + s * a_step + core_off(r, k % 16)) = A[i];
  }
  for (int i = threadIdx.x; i < kN * K; i += blockDim.x) {
    const int r = i / K, k = i % K, s = k / 16;
    *reinterpret_cast<uint16_t*>(sb + s * b_step + core_off(r, k % 16)) = B[i];
  }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, gid = lane >> 2, tig = lane & 3;
  float c[4] = {0, 0, 0, 0};
  const uint32_t base_a = uint32_t(__cvta_generic_to_shared(sa)), base_b = uint32_t(__cvta_generic_to_shared(sb));
  for (int s = 0; s < steps; ++s) {
    uint32_t a[4];
    if (regs_a) a_frag(A, K, w, gid, tig, s, a);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    const uint64_t db = desc(base_b + s * b_step, lbo, sbo);
    if (regs_a)
      wgmma_rs<BF>(c, a, db);
    else
      wgmma_ss<BF>(c, desc(base_a + s * a_step, lbo, sbo), db);
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  }
  store_d(D, w, gid, tig, c);
}

uint16_t to_bits(float v, bool bf) {
  if (bf) {
    __nv_bfloat16 h = __float2bfloat16_rn(v);
    uint16_t u;
    std::memcpy(&u, &h, 2);
    return u;
  }
  __half h = __float2half_rn(v);
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}
float from_bits(uint16_t u, bool bf) {
  if (bf) {
    __nv_bfloat16 h;
    std::memcpy(&h, &u, 2);
    return __bfloat162float(h);
  }
  __half h;
  std::memcpy(&h, &u, 2);
  return __half2float(h);
}

// A [kM, K] and B [kN, K], random: narrow (normal * 0.05) or wide (normal * 2^[-10, 10]).
void random_operands(int K, bool wide, uint32_t seed, bool bf, std::vector<uint16_t>& A, std::vector<uint16_t>& B) {
  std::mt19937 g(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> ex(-10, 10);
  A.resize(size_t(kM) * K);
  B.resize(size_t(kN) * K);
  auto val = [&] { return wide ? std::ldexp(nd(g), ex(g)) : nd(g) * 0.05f; };
  for (auto& v : A) v = to_bits(val(), bf);
  for (auto& v : B) v = to_bits(val(), bf);
}

struct Result {
  std::string name;
  int differ_from_mma_sync = 0;
  double max_rel_err = 0;  // against fp64, relative to sum |a b|
};

template <bool BF>
std::vector<Result> run_case(int K, bool wide, uint32_t seed) {
  std::vector<uint16_t> A, B;
  random_operands(K, wide, seed, BF, A, B);
  std::vector<double> ref(kM * kN), mag(kM * kN);
  for (int m = 0; m < kM; ++m)
    for (int n = 0; n < kN; ++n) {
      double s = 0, a = 0;
      for (int k = 0; k < K; ++k) {
        const double p = double(from_bits(A[m * K + k], BF)) * from_bits(B[n * K + k], BF);
        s += p;
        a += std::fabs(p);
      }
      ref[m * kN + n] = s;
      mag[m * kN + n] = a;
    }
  uint16_t *dA, *dB;
  float* dD;
  CK(cudaMalloc(&dA, A.size() * 2));
  CK(cudaMalloc(&dB, B.size() * 2));
  CK(cudaMalloc(&dD, kM * kN * 4));
  CK(cudaMemcpy(dA, A.data(), A.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dB, B.data(), B.size() * 2, cudaMemcpyHostToDevice));
  // + 1 KB: with the fields swapped the descriptor may address past the tiles (garbage, counted
  // as differences, but inside the allocation: an access outside it would kill the context).
  const size_t smem = size_t(K / 16) * (kM * 32 + 256) + 1024;
  CK(cudaFuncSetAttribute(probe_wgmma<BF>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  std::vector<float> base(kM * kN), out(kM * kN);
  std::vector<Result> res;
  auto take = [&](const std::string& name) {
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(out.data(), dD, out.size() * 4, cudaMemcpyDeviceToHost));
    if (name == "mma_sync") base = out;
    Result r{name};
    for (size_t i = 0; i < out.size(); ++i) {
      if (std::memcmp(&out[i], &base[i], 4) != 0) ++r.differ_from_mma_sync;
      r.max_rel_err = std::max(r.max_rel_err, std::fabs(out[i] - ref[i]) / (mag[i] + 1e-30));
    }
    res.push_back(r);
  };
  probe_mma_sync<BF><<<1, 128>>>(dA, dB, K, dD);
  take("mma_sync");
  for (int swap = 0; swap < 2; ++swap) {
    probe_wgmma<BF><<<1, 128, smem>>>(dA, dB, K, dD, false, swap);
    take(std::string("wgmma_ss") + (swap ? "_swapped_lbo_sbo" : ""));
    probe_wgmma<BF><<<1, 128, smem>>>(dA, dB, K, dD, true, swap);
    take(std::string("wgmma_rs") + (swap ? "_swapped_lbo_sbo" : ""));
  }
  CK(cudaFree(dA));
  CK(cudaFree(dB));
  CK(cudaFree(dD));
  return res;
}

// The slot maps of the second question: name (those that change a step's set of k say so), the map.
struct SlotMap {
  std::string name;
  std::vector<int> perm;  // 32 entries: slot j of step q -> chunk offset perm[16 q + j]
};
std::vector<SlotMap> slot_maps() {
  std::vector<SlotMap> maps;
  std::vector<int> nat(32), v1(32), attn(32), halves(32);
  for (int i = 0; i < 32; ++i) nat[size_t(i)] = i;
  for (int q = 0; q < 2; ++q)
    for (int t = 0; t < 4; ++t)
      for (int e = 0; e < 2; ++e) {
        v1[size_t(16 * q + 2 * t + e)] = 8 * t + 4 * q + e;  // gemm.cu: 16-byte loads, 8 k a lane
        v1[size_t(16 * q + 2 * t + 8 + e)] = 8 * t + 4 * q + 2 + e;
        attn[size_t(16 * q + 2 * t + e)] = 16 * q + 4 * t + e;  // attention.cu: 8-byte loads, 4 k a lane
        attn[size_t(16 * q + 2 * t + 8 + e)] = 16 * q + 4 * t + 2 + e;
      }
  for (int q = 0; q < 2; ++q)
    for (int j = 0; j < 16; ++j) halves[size_t(16 * q + j)] = 16 * q + (j + 8) % 16;  // slots 0-7 <-> 8-15
  maps.push_back({"natural", nat});
  maps.push_back({"attention_map", attn});
  maps.push_back({"halves_swapped", halves});
  std::mt19937 g(7);
  for (int i = 0; i < 8; ++i) {
    std::vector<int> r = nat;
    std::shuffle(r.begin(), r.begin() + 16, g);
    std::shuffle(r.begin() + 16, r.end(), g);
    maps.push_back({"random_in_step_" + std::to_string(i), r});
  }
  maps.push_back({"v1_map (other sets)", v1});
  return maps;
}

// Outputs differing from the natural map's, per map, on one random case.
template <bool BF>
std::vector<std::pair<std::string, int>> run_perm_case(int K, bool wide, uint32_t seed) {
  std::vector<uint16_t> A, B;
  random_operands(K, wide, seed, BF, A, B);
  uint16_t *dA, *dB;
  float* dD;
  int* dP;
  CK(cudaMalloc(&dA, A.size() * 2));
  CK(cudaMalloc(&dB, B.size() * 2));
  CK(cudaMalloc(&dD, kM * kN * 4));
  CK(cudaMalloc(&dP, 32 * sizeof(int)));
  CK(cudaMemcpy(dA, A.data(), A.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dB, B.data(), B.size() * 2, cudaMemcpyHostToDevice));
  std::vector<float> base(kM * kN), out(kM * kN);
  std::vector<std::pair<std::string, int>> res;
  for (const auto& m : slot_maps()) {
    CK(cudaMemcpy(dP, m.perm.data(), 32 * sizeof(int), cudaMemcpyHostToDevice));
    probe_mma_perm<BF><<<1, 128>>>(dA, dB, K, dD, dP);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(out.data(), dD, out.size() * 4, cudaMemcpyDeviceToHost));
    if (m.name == "natural") base = out;
    int differ = 0;
    for (size_t i = 0; i < out.size(); ++i) differ += std::memcmp(&out[i], &base[i], 4) != 0;
    res.push_back({m.name, differ});
  }
  CK(cudaFree(dA));
  CK(cudaFree(dB));
  CK(cudaFree(dD));
  CK(cudaFree(dP));
  return res;
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--json" && i + 1 < argc) json_path = argv[++i];
    else {
      std::fprintf(stderr, "mma_probe: unknown argument %s (usage: mma_probe [--json FILE])\n", argv[i]);
      return 2;
    }
  }
  cudaDeviceProp p{};
  CK(cudaGetDeviceProperties(&p, 0));
  if (p.major < 9) {
    std::fprintf(stderr, "mma_probe: needs sm_90 (found %s, sm_%d%d)\n", p.name, p.major, p.minor);
    return 1;
  }
  std::string js = "{\"gpu\":\"" + std::string(p.name) + "\",\"cases\":[";
  bool first = true;
  for (int bf = 1; bf >= 0; --bf)
    for (int wide = 0; wide < 2; ++wide)
      for (int K : {16, 128, 1024})
        for (uint32_t seed : {1u, 2u}) {
          auto rs = bf ? run_case<true>(K, wide, seed) : run_case<false>(K, wide, seed);
          for (const auto& r : rs) {
            std::printf("%s K=%4d %s seed %u  %-26s differ %3d / %d  max_rel_err %.3g\n", bf ? "bf16" : "fp16", K,
                        wide ? "wide  " : "narrow", seed, r.name.c_str(), r.differ_from_mma_sync, kM * kN,
                        r.max_rel_err);
            char buf[512];
            std::snprintf(buf, sizeof buf,
                          "%s{\"dtype\":\"%s\",\"K\":%d,\"range\":\"%s\",\"seed\":%u,\"kernel\":\"%s\","
                          "\"differ_from_mma_sync\":%d,\"outputs\":%d,\"max_rel_err\":%.6g}",
                          first ? "" : ",", bf ? "bf16" : "fp16", K, wide ? "wide" : "narrow", seed, r.name.c_str(),
                          r.differ_from_mma_sync, kM * kN, r.max_rel_err);
            js += buf;
            first = false;
          }
        }
  js += "],\"slot_maps\":[";
  first = true;
  // Wide inputs (exponents over +-10) make every alignment and truncation inside a step visible.
  for (int bf = 1; bf >= 0; --bf)
    for (int wide = 0; wide < 2; ++wide)
      for (int K : {32, 1024})
        for (uint32_t seed : {11u, 12u, 13u}) {
          const auto rs = bf ? run_perm_case<true>(K, wide, seed) : run_perm_case<false>(K, wide, seed);
          for (const auto& [name, differ] : rs) {
            std::printf("slots %s K=%4d %s seed %u  %-26s differ from natural %3d / %d\n", bf ? "bf16" : "fp16", K,
                        wide ? "wide  " : "narrow", seed, name.c_str(), differ, kM * kN);
            char buf[384];
            std::snprintf(buf, sizeof buf,
                          "%s{\"dtype\":\"%s\",\"K\":%d,\"range\":\"%s\",\"seed\":%u,\"map\":\"%s\","
                          "\"differ_from_natural\":%d,\"outputs\":%d}",
                          first ? "" : ",", bf ? "bf16" : "fp16", K, wide ? "wide" : "narrow", seed, name.c_str(),
                          differ, kM * kN);
            js += buf;
            first = false;
          }
        }
  js += "]}\n";
  if (!json_path.empty()) {
    FILE* f = std::fopen(json_path.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "mma_probe: cannot write %s\n", json_path.c_str());
      return 1;
    }
    std::fputs(js.c_str(), f);
    std::fclose(f);
  }
  return 0;
}
