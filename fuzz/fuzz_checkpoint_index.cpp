// libFuzzer: model.safetensors.index.json of arbitrary bytes in a folder that holds a real shard,
// a symlink leading out of the folder, a subfolder and a file outside it. Checkpoint::open must
// throw verbatim::Error or resolve every tensor to a file inside the folder: a weight_map value
// never escapes through "..", an absolute path or a symlink.
#include <cstdint>

#include "fuzz_util.h"
#include "model/safetensors.h"

namespace fs = std::filesystem;

namespace {
const fs::path& layout() {
  static const fs::path root = [] {
    using namespace verbatim;
    const fs::path root = fuzz::scratch_dir() / "index";
    fs::create_directories(root / "ckpt" / "sub");
    auto shard = [](const fs::path& p, const std::string& name) {
      TensorData t{{name, StDType::F32, {2, 2}}, std::vector<uint8_t>(16, 1)};
      write_safetensors(p.string(), {t});
    };
    shard(root / "ckpt" / "model-00001-of-00002.safetensors", "a");
    shard(root / "ckpt" / "sub" / "model-00002-of-00002.safetensors", "b");
    shard(root / "outside.safetensors", "secret");
    fs::create_symlink(root / "outside.safetensors", root / "ckpt" / "link.safetensors");
    fs::create_directory_symlink(root, root / "ckpt" / "uplink");
    return root;
  }();
  return root;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace verbatim;
  const fs::path ckpt = layout() / "ckpt";
  fuzz::write_file(ckpt / "model.safetensors.index.json", data, size);
  fuzz::expect_only_errors("Checkpoint::open", [&] {
    auto c = Checkpoint::open(ckpt.string());
    const std::string inside = fs::weakly_canonical(ckpt).string() + "/";
    for (const std::string& name : c->names()) {
      const TensorInfo& t = c->get(name);
      const std::string real = fs::weakly_canonical(t.file).string();
      if (real.rfind(inside, 0) != 0) fuzz::finding("tensor " + name + " was read from " + real + ", outside " + inside);
      if (name == "secret") fuzz::finding("the tensor of the file outside the folder was loaded");
    }
  });
  return 0;
}
