#include "engine/spec_decode.h"

#include <algorithm>

namespace verbatim {

std::vector<int32_t> propose_ngram(std::span<const int32_t> tokens, int n_min, int n_max, int k) {
  std::vector<int32_t> draft;
  const int64_t len = int64_t(tokens.size());
  if (k <= 0 || n_min < 1 || n_max < n_min) return draft;
  for (int n = int(std::min<int64_t>(n_max, len - 1)); n >= n_min; --n) {
    const int32_t* suffix = tokens.data() + (len - n);
    // Occurrences starting at j with j + n < len (at least one token follows), latest first.
    for (int64_t j = len - n - 1; j >= 0; --j) {
      if (!std::equal(suffix, suffix + n, tokens.data() + j)) continue;
      draft.reserve(size_t(k));
      for (int64_t i = 0; i < k; ++i) {
        const int64_t src = j + n + i;  // may reach past the end: into the draft itself
        draft.push_back(src < len ? tokens[size_t(src)] : draft[size_t(src - len)]);
      }
      return draft;
    }
  }
  return draft;
}

int SpecThrottle::draft_len(int k_max) {
  if (pause_left_ > 0) {
    --pause_left_;
    return 0;
  }
  return std::max(0, std::min(k_max, 2 * last_accepted_ + 1));
}

void SpecThrottle::record(int drafted, int accepted) {
  if (drafted <= 0) return;
  last_accepted_ = accepted;
  ++window_steps_;
  window_drafted_ += drafted;
  window_accepted_ += accepted;
  if (window_steps_ < kWindowSteps) return;
  if (double(window_accepted_) < kMinAcceptance * double(window_drafted_)) {
    pause_left_ = next_pause_;
    last_accepted_ = 0;  // resume with a one-draft probe
    next_pause_ = std::min(kMaxPause, next_pause_ * 2);
  } else {
    next_pause_ = kFirstPause;
  }
  window_steps_ = window_drafted_ = window_accepted_ = 0;
}

}  // namespace verbatim
