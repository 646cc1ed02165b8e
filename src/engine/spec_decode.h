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

// How many drafts one sequence proposes. Two rules, both functions of the sequence's own
// verification history only (never of the clock or the batch):
//  - length: 2a + 1 drafts, capped at K, where a is the number accepted by the sequence's last
//    verification (0 before the first). After a rejection a probe costs one extra row; a run of
//    acceptances grows it 1, 3, 7, ... up to K.
//  - pause: acceptance is judged over windows of kWindowSteps verification steps; a window whose
//    accepted / drafted ratio is below kMinAcceptance pauses proposing for the sequence's next
//    `pause` decode steps. The pause starts at kFirstPause and doubles after every failing window
//    (up to kMaxPause); a window that passes resets it. Text that never repeats thus costs at most
//    kWindowSteps one-draft verifications per pause, a shrinking share of the steps, while a
//    sequence that starts repeating later (greedy loops, quoted passages) gets picked up again.
class SpecThrottle {
 public:
  static constexpr int kWindowSteps = 4;
  static constexpr double kMinAcceptance = 0.4;
  static constexpr int kFirstPause = 16;
  static constexpr int kMaxPause = 1024;

  // Drafts to propose at this decode step, at most k_max; 0 while paused (the paused step is
  // counted down).
  int draft_len(int k_max);
  // After a verification step that carried `drafted` > 0 drafts, `accepted` of them matching.
  void record(int drafted, int accepted);

  bool paused() const { return pause_left_ > 0; }
  int next_pause() const { return next_pause_; }

 private:
  int last_accepted_ = 0;
  int window_steps_ = 0;
  int window_drafted_ = 0;
  int window_accepted_ = 0;
  int pause_left_ = 0;
  int next_pause_ = kFirstPause;
};

}  // namespace verbatim
