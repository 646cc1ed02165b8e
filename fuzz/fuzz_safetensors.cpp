// libFuzzer: one .safetensors file of arbitrary bytes (truncated, oversized header length,
// overlapping or out-of-file data_offsets, wrong dtype or shape, bad JSON). Loading must either
// throw verbatim::Error or give tensors whose every byte lies inside the mapping; we read them all.
#include <cstdint>

#include "fuzz_util.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace verbatim;
  const auto path = fuzz::scratch_dir() / "model.safetensors";
  fuzz::write_file(path, data, size);
  fuzz::expect_only_errors("SafetensorsFile", [&] {
    SafetensorsFile f(path.string());
    uint64_t sum = 0, prev_end = 0;
    const uint8_t* prev_begin = nullptr;
    for (const TensorInfo& t : f.tensors()) {
      // The invariants the loader promises: size matches dtype x shape, sorted, non-overlapping.
      if (static_cast<uint64_t>(t.numel()) * st_dtype_size(t.dtype) != t.nbytes) fuzz::finding("nbytes != numel * dtype size for " + t.name);
      if (prev_begin && t.data < prev_begin + prev_end) fuzz::finding("tensor " + t.name + " overlaps the previous one");
      for (size_t i = 0; i < t.nbytes; ++i) sum += t.data[i];  // faults if data lies outside the file
      if (f.find(t.name) != &t) fuzz::finding("find() does not return the listed tensor " + t.name);
      (void)t.shape_str();
      prev_begin = t.data;
      prev_end = t.nbytes;
    }
    if (sum == 0xFFFFFFFFFFFFFFFFull) std::fputc(0, stderr);  // keep the reads
    (void)f.find("model.embed_tokens.weight");
  });
  return 0;
}
