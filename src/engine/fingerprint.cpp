#include "engine/fingerprint.h"

#include "core/dtype.h"
#include "core/hash.h"

namespace verbatim {

Fingerprint make_fingerprint(const std::string& weights_digest_hex, const Backend& backend) {
  Fingerprint fp;
  fp.parts = {
      {"weights", weights_digest_hex},
      {"dtype", dtype_name(backend.dtype())},
      {"engine", VERBATIM_VERSION},
      {"device", backend.device_name()},
      {"kernels", backend.kernel_config()},
  };
  // Each part hashed as "name=value", chained in order, so moving a value between parts changes it.
  uint64_t h = hash_str("verbatim-fingerprint-v1");
  for (const auto& [name, value] : fp.parts) h = hash_combine(h, hash_str(name + "=" + value));
  fp.short_hash = "fp_" + hex64(h).substr(0, 12);
  return fp;
}

Fingerprint make_fingerprint(const ModelWeights& weights, const Backend& backend) {
  return make_fingerprint(hex64(weights.digest()), backend);
}

}  // namespace verbatim
