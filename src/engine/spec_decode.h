#pragma once
// Speculative decoding without a draft model: n-gram (prompt-lookup) drafts, and the per-sequence
// rule that turns them off when they keep being rejected. The verification itself is in
// engine.cpp; it changes no bit of any output (every position is sampled with the SampleSpec a
// plain decode would use: same seed, stream and absolute position), so these only decide speed.
#include <cstdint>
#include <span>
#include <vector>

namespace verbatim {

// Up to `k` draft tokens that follow `tokens`: for n = n_max down to n_min, the last n tokens are
// looked up among their EARLIER occurrences, the most recent first; the first n that matches
// proposes the tokens after that occurrence. The copy may run on into the tokens it proposes
// itself (an overlapping copy, as in LZ77), so a loop whose period is shorter than k still yields
// k drafts. Empty when nothing matches. O(len * n) per call; a pure function of its arguments.
std::vector<int32_t> propose_ngram(std::span<const int32_t> tokens, int n_min, int n_max, int k);

// Whether one sequence keeps proposing. Rule: acceptance is judged over windows of
// kWindowSteps verification steps (steps that carried at least one draft). A window whose
// accepted / drafted ratio is below kMinAcceptance pauses proposing for the next `pause` decode
// steps of that sequence; the pause starts at kFirstPause and doubles after every failing window
// (up to kMaxPause), and a window that passes resets it. So text that never repeats costs at most
// kWindowSteps wasted verifications per pause, a shrinking share of the steps, while a sequence
// that starts repeating later (greedy loops, quoted passages) gets picked up again.
class SpecThrottle {
 public:
  static constexpr int kWindowSteps = 4;
  static constexpr double kMinAcceptance = 0.3;
  static constexpr int kFirstPause = 16;
  static constexpr int kMaxPause = 1024;

  // Called once per decode step of the sequence, before proposing: false while paused (and
  // counts the paused step down).
  bool may_propose();
  // After a verification step that carried `drafted` > 0 drafts, `accepted` of them matching.
  void record(int drafted, int accepted);

  bool paused() const { return pause_left_ > 0; }
  int next_pause() const { return next_pause_; }

 private:
  int window_steps_ = 0;
  int window_drafted_ = 0;
  int window_accepted_ = 0;
  int pause_left_ = 0;
  int next_pause_ = kFirstPause;
};

}  // namespace verbatim
