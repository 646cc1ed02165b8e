#pragma once
// safetensors: a memory-mapped reader (one file, or a sharded checkpoint folder) and a writer of
// the exact Hugging Face layout. Every failure throws Error naming the file (and tensor).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace verbatim {

// The element types this reader accepts: the model dtypes plus integer tensors for fixtures.
enum class StDType : uint8_t { F32, BF16, F16, I32, I64 };

size_t st_dtype_size(StDType t);
const char* st_dtype_name(StDType t);  // safetensors spelling: "F32", "BF16", "F16", "I32", "I64"
bool is_model_dtype(StDType t);        // F32, BF16 or F16
DType to_model_dtype(StDType t);       // throws Error for integer types
StDType to_st_dtype(DType t);

struct TensorInfo {
  std::string name;
  StDType dtype = StDType::F32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // into the mapping; valid while the owning file lives
  size_t nbytes = 0;
  std::string file;               // the file it came from, for messages
  int64_t numel() const;
  std::string shape_str() const;  // "[512, 64]"
};

// One memory-mapped .safetensors file with its parsed, validated header.
class SafetensorsFile {
 public:
  static constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // the limit HF's reader uses too

  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // in data-offset order
  const TensorInfo* find(const std::string& name) const;              // nullptr when absent
  const TensorInfo& get(const std::string& name) const;               // throws Error when absent
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::string path_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t> by_name_;
  std::map<std::string, std::string> metadata_;
};

// A checkpoint folder: DIR/model.safetensors, or DIR/model.safetensors.index.json with shards
// (each shard must lie inside DIR: no "..", no absolute path, no symlink leading out).
class Checkpoint {
 public:
  static std::shared_ptr<Checkpoint> open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  bool sharded() const { return sharded_; }
  const TensorInfo* find(const std::string& name) const;  // nullptr when absent
  const TensorInfo& get(const std::string& name) const;   // throws Error naming the file and tensor
  std::vector<std::string> names() const;                 // sorted
  // The file a tensor would be read from (the index's entry, or model.safetensors), for messages.
  std::string file_for(const std::string& name) const;

 private:
  std::string dir_;
  bool sharded_ = false;
  std::string index_path_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorInfo*> by_name_;
};

// Writer: the HF layout (8-byte little-endian header length, JSON header with
// "__metadata__": {"format": "pt"}, padded with spaces to a multiple of 8, then the data of every
// tensor back to back, sorted by dtype size (largest first) then name, as safetensors does).
struct TensorSpec {
  std::string name;
  StDType dtype = StDType::F32;
  std::vector<int64_t> shape;
  size_t nbytes() const;
};

// fill(i, out) writes the nbytes() bytes of specs[i] into out. It is called once per tensor, in
// file order, from the calling thread (it may parallelize inside).
using TensorFill = std::function<void(size_t index, uint8_t* out)>;

void write_safetensors(const std::string& path, const std::vector<TensorSpec>& specs, const TensorFill& fill,
                       const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

// Convenience: tensors whose bytes are already in memory.
struct TensorData {
  TensorSpec spec;
  std::vector<uint8_t> bytes;
};
void write_safetensors(const std::string& path, const std::vector<TensorData>& tensors);

// The index HF writes next to shards: {"metadata": {"total_size": N}, "weight_map": {name: file}}.
void write_safetensors_index(const std::string& path, uint64_t total_size,
                             const std::map<std::string, std::string>& weight_map);

}  // namespace verbatim
