// A CUPTI tracer loaded by the CUDA driver (CUDA_INJECTION64_PATH=libkernel_trace.so): every
// kernel's GPU start and end, graph nodes included, written at exit as CSV to $VB_TRACE_OUT
// (start_ns,end_ns,graph_node,grid,block,name). The device image's nsys cannot import its own
// captures (no QdstrmImporter), so the decode timelines come from this. Speed only: it changes no
// kernel. Build on the device: g++ -shared -fPIC -O2 -I/usr/local/cuda/include kernel_trace.cpp
//   -L/usr/local/cuda/lib64 -lcupti -o libkernel_trace.so
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {
struct Rec {
  uint64_t start, end, node;
  int grid, block;
  std::string name;
};
std::mutex g_mu;
std::vector<Rec> g_recs;
constexpr size_t kBuf = 8u << 20;

void CUPTIAPI buffer_requested(uint8_t** buf, size_t* size, size_t* max_records) {
  *buf = static_cast<uint8_t*>(aligned_alloc(8, kBuf));
  *size = kBuf;
  *max_records = 0;
}
void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buf, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  std::lock_guard<std::mutex> lock(g_mu);
  while (cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
    g_recs.push_back({k->start, k->end, k->graphNodeId, k->gridX * k->gridY * k->gridZ, k->blockX * k->blockY * k->blockZ,
                      k->name ? k->name : "?"});
  }
  free(buf);
}
void write_out() {
  cuptiActivityFlushAll(1);
  const char* path = std::getenv("VB_TRACE_OUT");
  FILE* f = std::fopen(path ? path : "kernel_trace.csv", "w");
  if (!f) return;
  std::fprintf(f, "start_ns,end_ns,graph_node,grid,block,name\n");
  std::lock_guard<std::mutex> lock(g_mu);
  for (const Rec& r : g_recs)
    std::fprintf(f, "%llu,%llu,%llu,%d,%d,%s\n", (unsigned long long)r.start, (unsigned long long)r.end,
                 (unsigned long long)r.node, r.grid, r.block, r.name.c_str());
  std::fclose(f);
}
}  // namespace

extern "C" int InitializeInjection(void) {
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS) return 0;
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  std::atexit(write_out);
  return 1;
}
