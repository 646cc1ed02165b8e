// safetensors reader (mmap) and writer. Layout: u64 little-endian header length N, N bytes of
// JSON header, then the data region; each tensor's data_offsets are relative to the data region.
#include "model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/error.h"

namespace verbatim {

namespace fs = std::filesystem;
using nlohmann::json;

size_t st_dtype_size(StDType t) {
  switch (t) {
    case StDType::F32: return 4;
    case StDType::BF16: return 2;
    case StDType::F16: return 2;
    case StDType::I32: return 4;
    case StDType::I64: return 8;
  }
  return 0;
}

const char* st_dtype_name(StDType t) {
  switch (t) {
    case StDType::F32: return "F32";
    case StDType::BF16: return "BF16";
    case StDType::F16: return "F16";
    case StDType::I32: return "I32";
    case StDType::I64: return "I64";
  }
  return "?";
}

bool is_model_dtype(StDType t) { return t == StDType::F32 || t == StDType::BF16 || t == StDType::F16; }

DType to_model_dtype(StDType t) {
  switch (t) {
    case StDType::F32: return DType::F32;
    case StDType::BF16: return DType::BF16;
    case StDType::F16: return DType::F16;
    default: throw Error(std::string("dtype ") + st_dtype_name(t) + " is not a floating-point model dtype");
  }
}

StDType to_st_dtype(DType t) {
  switch (t) {
    case DType::F32: return StDType::F32;
    case DType::BF16: return StDType::BF16;
    case DType::F16: return StDType::F16;
  }
  return StDType::F32;
}

namespace {

bool parse_st_dtype(const std::string& s, StDType& out) {
  static const std::pair<const char*, StDType> table[] = {{"F32", StDType::F32}, {"BF16", StDType::BF16},
                                                          {"F16", StDType::F16}, {"I32", StDType::I32},
                                                          {"I64", StDType::I64}};
  for (auto& [name, t] : table)
    if (s == name) {
      out = t;
      return true;
    }
  return false;
}

// The order safetensors' Dtype enum gives (F16 < BF16 < I32 < F32 < I64); files list tensors by
// this rank descending, then by name, so every tensor stays aligned to its element size.
int st_dtype_rank(StDType t) {
  switch (t) {
    case StDType::F16: return 0;
    case StDType::BF16: return 1;
    case StDType::I32: return 2;
    case StDType::F32: return 3;
    case StDType::I64: return 4;
  }
  return 0;
}

bool checked_numel(const std::vector<int64_t>& shape, uint64_t& out) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return false;
    if (__builtin_mul_overflow(n, uint64_t(d), &n)) return false;
  }
  out = n;
  return true;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorInfo::shape_str() const { return shape_string(shape); }

// ---------------------------------------------------------------------------------------------
// Reader

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": cannot open (" + errno_text() + ")");
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    std::string why = errno_text();
    ::close(fd);
    throw Error(path + ": cannot stat (" + why + ")");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path + ": not a regular file");
  }
  const uint64_t file_size = uint64_t(st.st_size);
  if (file_size < 8) {
    ::close(fd);
    throw Error(path + ": truncated safetensors file (" + std::to_string(file_size) +
                " bytes, too short to hold the 8-byte header length)");
  }
  map_ = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);  // the mapping keeps the file alive
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw Error(path + ": cannot mmap (" + errno_text() + ")");
  }
  map_size_ = file_size;
  // From here the destructor does not run on a throw: unmap explicitly.
  try {
    const uint8_t* base = static_cast<const uint8_t*>(map_);
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | base[i];  // little-endian
    if (header_len > kMaxHeaderBytes)
      throw Error(path + ": header length " + std::to_string(header_len) + " exceeds the " +
                  std::to_string(kMaxHeaderBytes) + "-byte limit (corrupt or not a safetensors file)");
    if (header_len > file_size - 8)
      throw Error(path + ": truncated safetensors file (header length " + std::to_string(header_len) +
                  " but only " + std::to_string(file_size - 8) + " bytes follow)");
    const char* hdr = reinterpret_cast<const char*>(base + 8);
    json j = json::parse(hdr, hdr + header_len, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) throw Error(path + ": header is not valid JSON");
    if (!j.is_object()) throw Error(path + ": header is not a JSON object");
    const uint64_t data_start = 8 + header_len;
    const uint64_t data_size = file_size - data_start;
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& name = it.key();
      const json& v = it.value();
      if (name == "__metadata__") {
        if (!v.is_object()) throw Error(path + ": __metadata__ is not an object");
        for (auto m = v.begin(); m != v.end(); ++m) {
          if (!m.value().is_string()) throw Error(path + ": __metadata__ value '" + m.key() + "' is not a string");
          metadata_[m.key()] = m.value().get<std::string>();
        }
        continue;
      }
      const std::string where = path + ": tensor '" + name + "'";
      if (!v.is_object()) throw Error(where + ": header entry is not an object");
      if (!v.contains("dtype") || !v["dtype"].is_string()) throw Error(where + ": missing or non-string 'dtype'");
      TensorInfo t;
      t.name = name;
      t.file = path;
      const std::string dt = v["dtype"].get<std::string>();
      if (!parse_st_dtype(dt, t.dtype))
        throw Error(where + ": unsupported dtype " + dt + " (expected F32, BF16, F16, I32 or I64)");
      if (!v.contains("shape") || !v["shape"].is_array()) throw Error(where + ": missing or non-list 'shape'");
      for (const json& d : v["shape"]) {
        if (!d.is_number_integer() || d.get<int64_t>() < 0) throw Error(where + ": bad shape " + v["shape"].dump());
        t.shape.push_back(d.get<int64_t>());
      }
      const json& off = v.contains("data_offsets") ? v["data_offsets"] : json();
      if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
        throw Error(where + ": 'data_offsets' must be two non-negative integers");
      const uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
      if (begin > end) throw Error(where + ": data_offsets " + off.dump() + " end before they begin");
      if (end > data_size)
        throw Error(where + ": data_offsets " + off.dump() + " run past the end of the file (data region is " +
                    std::to_string(data_size) + " bytes; truncated file?)");
      uint64_t numel = 0, nbytes = 0;
      if (!checked_numel(t.shape, numel) || __builtin_mul_overflow(numel, st_dtype_size(t.dtype), &nbytes))
        throw Error(where + ": shape " + shape_string(t.shape) + " is too large");
      if (nbytes != end - begin)
        throw Error(where + ": shape " + shape_string(t.shape) + " of " + dt + " needs " + std::to_string(nbytes) +
                    " bytes but data_offsets " + off.dump() + " span " + std::to_string(end - begin));
      t.data = base + data_start + begin;
      t.nbytes = nbytes;
      if (nbytes > 0 && (data_start + begin) % st_dtype_size(t.dtype) != 0)
        throw Error(where + ": data is not aligned to its " + std::to_string(st_dtype_size(t.dtype)) + "-byte elements");
      tensors_.push_back(std::move(t));
    }
    std::sort(tensors_.begin(), tensors_.end(), [&](const TensorInfo& a, const TensorInfo& b) {
      return a.data != b.data ? a.data < b.data : a.nbytes < b.nbytes;
    });
    for (size_t i = 1; i < tensors_.size(); ++i) {
      const TensorInfo& prev = tensors_[i - 1];
      const TensorInfo& cur = tensors_[i];
      if (cur.nbytes > 0 && prev.nbytes > 0 && cur.data < prev.data + prev.nbytes)
        throw Error(path + ": tensor '" + cur.name + "' overlaps tensor '" + prev.name + "' (data_offsets intersect)");
    }
    for (size_t i = 0; i < tensors_.size(); ++i) by_name_[tensors_[i].name] = i;
  } catch (...) {
    ::munmap(map_, map_size_);
    map_ = nullptr;
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(map_, map_size_);
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& SafetensorsFile::get(const std::string& name) const {
  const TensorInfo* t = find(name);
  if (!t) throw Error(path_ + ": tensor '" + name + "' is missing");
  return *t;
}

// ---------------------------------------------------------------------------------------------
// Checkpoint folder

namespace {

json read_index(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open (" + errno_text() + ")");
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) throw Error(path + ": not valid JSON");
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw Error(path + ": missing the 'weight_map' object");
  return j;
}

bool path_within(const fs::path& inner, const fs::path& outer) {
  auto [o, i] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  return o == outer.end();
}

// A shard named by the index must stay inside the checkpoint folder. The one allowed way out is
// the Hugging Face hub cache, where snapshots/<rev>/X links to ../../blobs/<hash>.
fs::path resolve_shard(const fs::path& dir, const std::string& shard, const std::string& index_path,
                       const std::string& tensor) {
  const std::string where = index_path + ": tensor '" + tensor + "' shard '" + shard + "'";
  fs::path rel(shard);
  if (shard.empty() || rel.is_absolute()) throw Error(where + " must be a relative path inside the checkpoint folder");
  for (const fs::path& part : rel)
    if (part == "..") throw Error(where + " must not contain '..'");
  std::error_code ec;
  fs::path real_dir = fs::canonical(dir, ec);
  if (ec) throw Error(dir.string() + ": cannot resolve (" + ec.message() + ")");
  fs::path real_shard = fs::canonical(dir / rel, ec);
  if (ec) throw Error(where + ": cannot open " + (dir / rel).string() + " (" + ec.message() + ")");
  if (path_within(real_shard, real_dir)) return real_shard;
  const fs::path parent = real_dir.parent_path();
  if (parent.filename() == "snapshots" && path_within(real_shard, parent.parent_path() / "blobs")) return real_shard;
  throw Error(where + " resolves to " + real_shard.string() + ", outside the checkpoint folder (symlink escape)");
}

}  // namespace

std::shared_ptr<Checkpoint> Checkpoint::open(const std::string& dir) {
  auto ck = std::shared_ptr<Checkpoint>(new Checkpoint());
  ck->dir_ = dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error(dir + ": not a checkpoint folder (no such directory)");
  const std::string index = dir + "/model.safetensors.index.json";
  const std::string single = dir + "/model.safetensors";
  if (fs::exists(index, ec)) {
    ck->sharded_ = true;
    ck->index_path_ = index;
    json j = read_index(index);
    std::map<std::string, SafetensorsFile*> opened;  // shard name -> file
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      const std::string& tensor = it.key();
      if (!it.value().is_string()) throw Error(index + ": tensor '" + tensor + "': weight_map value is not a string");
      const std::string shard = it.value().get<std::string>();
      SafetensorsFile*& f = opened[shard];
      if (!f) {
        fs::path real = resolve_shard(dir, shard, index, tensor);
        ck->files_.push_back(std::make_unique<SafetensorsFile>(real.string()));
        f = ck->files_.back().get();
      }
      const TensorInfo* t = f->find(tensor);
      if (!t) throw Error(f->path() + ": tensor '" + tensor + "' is missing (listed in " + index + ")");
      ck->by_name_[tensor] = t;
    }
  } else if (fs::exists(single, ec)) {
    ck->files_.push_back(std::make_unique<SafetensorsFile>(single));
    for (const TensorInfo& t : ck->files_.back()->tensors()) ck->by_name_[t.name] = &t;
  } else {
    throw Error(dir + ": no model.safetensors or model.safetensors.index.json in the checkpoint folder");
  }
  return ck;
}

const TensorInfo* Checkpoint::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

const TensorInfo& Checkpoint::get(const std::string& name) const {
  const TensorInfo* t = find(name);
  if (!t) throw Error(file_for(name) + ": tensor '" + name + "' is missing");
  return *t;
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  for (auto& [name, t] : by_name_) out.push_back(name);
  return out;
}

std::string Checkpoint::file_for(const std::string& name) const {
  if (const TensorInfo* t = find(name)) return t->file;
  return sharded_ ? index_path_ : dir_ + "/model.safetensors";
}

// ---------------------------------------------------------------------------------------------
// Writer

size_t TensorSpec::nbytes() const {
  uint64_t n = 0;
  if (!checked_numel(shape, n)) throw Error("tensor '" + name + "': bad shape " + shape_string(shape));
  return size_t(n) * st_dtype_size(dtype);
}

namespace {

void write_all(int fd, const uint8_t* p, size_t n, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, std::min(n, size_t(1) << 30));
    if (w < 0) {
      if (errno == EINTR) continue;
      throw Error(path + ": write failed (" + errno_text() + ")");
    }
    p += w;
    n -= size_t(w);
  }
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<TensorSpec>& specs, const TensorFill& fill,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<size_t> order(specs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    int ra = st_dtype_rank(specs[a].dtype), rb = st_dtype_rank(specs[b].dtype);
    return ra != rb ? ra > rb : specs[a].name < specs[b].name;
  });
  std::set<std::string> seen;
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (size_t i : order) {
    const TensorSpec& s = specs[i];
    if (!seen.insert(s.name).second) throw Error(path + ": tensor '" + s.name + "' is listed twice");
    size_t n = s.nbytes();
    header[s.name] = {{"dtype", st_dtype_name(s.dtype)}, {"shape", s.shape}, {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // HF pads the header with spaces to 8 bytes
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(text.size()) >> (8 * i));

  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(path + ": cannot create (" + errno_text() + ")");
  try {
    write_all(fd, len, 8, path);
    write_all(fd, reinterpret_cast<const uint8_t*>(text.data()), text.size(), path);
    // Two buffers: tensor k+1 is filled while tensor k is written by a helper thread.
    std::vector<uint8_t> buf[2];
    std::future<void> pending;
    for (size_t k = 0; k < order.size(); ++k) {
      std::vector<uint8_t>& b = buf[k % 2];
      b.resize(specs[order[k]].nbytes());
      fill(order[k], b.data());
      if (pending.valid()) pending.get();
      pending = std::async(std::launch::async, [&, data = b.data(), n = b.size()] { write_all(fd, data, n, path); });
    }
    if (pending.valid()) pending.get();
    if (::close(fd) != 0) {
      fd = -1;
      throw Error(path + ": close failed (" + errno_text() + ")");
    }
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(path.c_str());
    throw;
  }
}

void write_safetensors(const std::string& path, const std::vector<TensorData>& tensors) {
  std::vector<TensorSpec> specs;
  for (const TensorData& t : tensors) {
    if (t.bytes.size() != t.spec.nbytes())
      throw Error(path + ": tensor '" + t.spec.name + "' has " + std::to_string(t.bytes.size()) + " bytes, shape " +
                  shape_string(t.spec.shape) + " needs " + std::to_string(t.spec.nbytes()));
    specs.push_back(t.spec);
  }
  write_safetensors(path, specs, [&](size_t i, uint8_t* out) {
    if (!tensors[i].bytes.empty()) std::memcpy(out, tensors[i].bytes.data(), tensors[i].bytes.size());
  });
}

void write_safetensors_index(const std::string& path, uint64_t total_size,
                             const std::map<std::string, std::string>& weight_map) {
  nlohmann::ordered_json j;
  j["metadata"] = {{"total_size", total_size}};
  j["weight_map"] = weight_map;  // std::map: sorted by tensor name, as HF writes it
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(path + ": cannot create (" + errno_text() + ")");
  out << j.dump(2) << "\n";
  if (!out.flush()) throw Error(path + ": write failed");
}

}  // namespace verbatim
