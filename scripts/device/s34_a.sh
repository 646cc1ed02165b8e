#!/usr/bin/env bash
# Session 34, call a (any one GPU, BUDGET s, default 570): two same-bits trims of the attention's
# softmax. n1: exp_nonpos_f32 (exp_f32's bits for arguments not above 0, ~10 fewer instructions) in
# the softmax / merge / sampler exps. n2 (this build): n1 + each probability pair rounded and packed
# once (tile_probs' pw) instead of rounded, then packed again for P·V, pack2 as one paired cvt.
# 1. Bits (n2): cuda_ops_test (its exhaustive sweeps of exp_f32 and of exp_nonpos_f32 included),
#    the 0.6B digests of record, the 8B bf16 digest of record (init std 0.005, 8 tokens).
# 2. Speed: engine-bench (decode 1 / 8 / 32 / 64 at ~1k context, 2,048-token prefill) of the build
#    before (verbatim_base), n1 (verbatim_n1) and n2, alternated: twice on the 8B, once on the 0.6B.
# 3. Static SASS counts of the attention and sampler kernels in base and n2 (cuobjdump, if there).
# Pack (main's build before the change in /tmp/base_bin, n1's in /tmp/new1_bin):
#   PACK_XZ=1 scripts/device/pack.sh build verbatim tests/cuda_ops_test tests/cuda_invariance_test \
#     /tmp/base_bin/verbatim=verbatim_base /tmp/new1_bin/verbatim=verbatim_n1
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BASE=$VB_BIN/verbatim_base N1=$VB_BIN/verbatim_n1
call_start s34_a 570
( sleep 20; mk qwen3-8b $W/m8r 0.005 ) &
run_test cuda_ops_test 220
inv_of_record $W/m06
export EB_MIN_LEFT=40
wait_for $W/m8 60 && ab_bins 8 $W/m8 2 base=$BASE n1=$N1 n2=$VB
ab_bins 06 $W/m06 1 base=$BASE n1=$N1 n2=$VB
wait_for $W/m8r 40 && [ "$(left)" -gt 40 ] && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
CUOBJ=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump 2> /dev/null)
if [ -n "$CUOBJ" ] && [ "$(left)" -gt 50 ]; then
  for b in base new; do
    bin=$([ $b = base ] && echo $BASE || echo $VB)
    timeout 25 "$CUOBJ" -sass "$bin" 2> /dev/null |
      python3 scripts/device/sass_count.py 'attention_(fold|ring|part|tile)_kernel|stats_kernel|draw_kernel|merge_kernel' > $OUT/sass_$b.txt
  done
  say "sass counts: $(wc -l < $OUT/sass_base.txt) / $(wc -l < $OUT/sass_new.txt) kernels"
  paste -d' ' <(cut -d' ' -f1 $OUT/sass_base.txt) $OUT/sass_new.txt > $OUT/sass_ab.txt  # base new name
fi
call_finish
