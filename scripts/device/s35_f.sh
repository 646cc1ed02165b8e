#!/usr/bin/env bash
# Session 35, call f (one GPU, BUDGET s, default 260): the part kernel's first K/V tile loaded
# before its PDL wait where every key of the part is from an earlier step (AttnArgs::kv_stable_end;
# VERBATIM_ATTN_EARLY_KV=0 gives the order before). Bits: the attention op tests (the new
# AttentionEarlyKvLoadsKeepTheBits included), the 0.6B digests of record, the 8B bf16 one. Speed:
# early off / on alternated 3 times, 0.6B and 8B at 1 / 4 sequences; the 0.6B batch-1 timeline.
# Pack: PACK_XZ=1 scripts/device/pack.sh build verbatim tests/cuda_ops_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
BUDGET=${BUDGET:-260}
call_setup s35_f
say "gpu: $(gpu_facts | tr '\n' ';') commit ${COMMIT:-unknown}"
mk qwen3-0.6b $W/m06 0.02
( mk qwen3-8b $W/m8 0.02; mk qwen3-8b $W/m8r 0.005 ) &
ops_attention
export EB_MIN_LEFT=20 EB_PREFILL=0 EB_BATCHES=1,4
ab_many b06 $W/m06 3 "off VERBATIM_ATTN_EARLY_KV=0" "on VERBATIM_ATTN_EARLY_KV=1"
inv_of_record $W/m06
wait_for $W/m8 60
ab_many b8 $W/m8 3 "off VERBATIM_ATTN_EARLY_KV=0" "on VERBATIM_ATTN_EARLY_KV=1"
trace_decode 06_b1_on $W/m06 1
trace_decode 06_b1_off $W/m06 1 VERBATIM_ATTN_EARLY_KV=0
wait_for $W/m8r 40 && inv 8r_bf16 $W/m8r bfloat16 VERBATIM_TEST_MAX_TOKENS=8 VERBATIM_TEST_EXPECT_DIGEST=202106b57f8201c2
call_finish
