#include "support/model_folders.h"

#include <map>
#include <mutex>

#include "core/dtype.h"
#include "model/make_model.h"
#include "support/paths.h"

namespace verbatim::test {

std::string model_folder(const std::string& model) {
  if (model.rfind("make:", 0) != 0) return fixture(model);
  static std::mutex mu;
  static std::map<std::string, std::string> made;
  std::lock_guard<std::mutex> lock(mu);
  const std::string arch = model.substr(5);
  auto it = made.find(arch);
  if (it != made.end()) return it->second;
  MakeModelOptions o;
  o.arch = arch;
  o.seed = 7;
  o.dtype = DType::BF16;
  o.out_dir = temp_dir("make-model-" + arch);
  o.copy_tokenizer = false;
  make_model(o);
  return made[arch] = o.out_dir;
}

}  // namespace verbatim::test
