#!/usr/bin/env bash
# Session 22, call 6 (one H200, BUDGET s, default 230). The SiLU epilogue for a split W: the stream
# kernel adds gate_up's segments in order itself (the 0.6B's split 4, the 1.7B's split 2), so
# their decode steps drop silu_mul_from (one launch a layer). Bits: op tests, the 0.6B digests of
# record (its gate_up is split). Speed: VERBATIM_GEMM_SILU_SPLIT=0 / 1 alternated 2 rounds on the
# 0.6B and 1.7B (batch 1 / 8 / 32), and the 8B once (unaffected: its gate_up is unsplit).
# Pack: PACK_XZ=1 pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s22_h 230
( mk qwen3-1.7b $W/m17 0.02 ) &
run_test cuda_ops_test 100
inv_of_record $W/m06
export EB_MIN_LEFT=20 EB_PREFILL=0 EB_BATCHES=1,8,32
ab_many ss_06 $W/m06 2 "off VERBATIM_GEMM_SILU_SPLIT=0" "on VERBATIM_GEMM_SILU_SPLIT=1"
wait_for $W/m17 60 && ab_many ss_17 $W/m17 2 "off VERBATIM_GEMM_SILU_SPLIT=0" "on VERBATIM_GEMM_SILU_SPLIT=1"
wait_for $W/m8 30 && EB_BATCHES=1,8,32,64 eb 8_contract $W/m8 contract
call_finish
