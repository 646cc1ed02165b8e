#!/usr/bin/env bash
# Session 35, call h (one GPU, BUDGET s, default 200): the merge kernel's folds without a branch per
# part (merge_row: every slot's fold computed, the ones past the last part not taken), so the
# parts' exps overlap. Bits: the attention op tests, the 0.6B digests of record, the 8B bf16 one.
# Speed: main (verbatim_base) / new alternated 3 times, 0.6B and 8B at 1 / 4 sequences (the
# per-part kernels and the merge; 8+ run the ring kernel); the 0.6B batch-1 timeline.
# Pack: PACK_XZ=1 scripts/device/pack.sh build verbatim tests/cuda_ops_test tests/cuda_invariance_test
#   /tmp/base_main_verbatim=verbatim_base
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-200}
call_setup s35_h
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
mk qwen3-0.6b $W/m06 0.02
( mk qwen3-8b $W/m8 0.02; mk qwen3-8b $W/m8r 0.005 ) &
ops_attention
export EB_MIN_LEFT=20 EB_PREFILL=0 EB_BATCHES=1,4
ab_eb $VB_BIN/verbatim_base main b06 $W/m06 3
inv_of_record $W/m06
wait_for $W/m8 50
ab_eb $VB_BIN/verbatim_base main b8 $W/m8 3
trace_decode 06_b1 $W/m06 1
wait_for $W/m8r 35 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
call_finish
