#!/usr/bin/env bash
# Session 16, call 2 (one H200, BUDGET s, default 220). The cluster decode attention with each
# CTA's share of the states copied to its own shared memory before the fold (call 1's folded
# through one remote load per part and was slower), used for steps of <= 4 items. Bits
# (cuda_ops_test; the 0.6B bf16 digest of record with it on), decode at batch 1 and 8 with it off /
# on (8B two rounds, 0.6B two), the per-kernel durations of an 8B batch-1 step with it on, and ncu's
# full set on the prefill attention's fold kernel (8B) for the next session.
# Pack: pack.sh build-cuda verbatim tests/cuda_ops_test tests/cuda_invariance_test.
cd "$(dirname "$0")/../.."
source scripts/device/common.sh
call_start s16_b 220
run_test cuda_ops_test 60
inv 06_bf16_cl $W/m06 bfloat16 VERBATIM_ATTN_CLUSTER=1 VERBATIM_TEST_EXPECT_DIGEST=b786d32f1ed65f55
wait_for $W/m8 40
export EB_MIN_LEFT=8 EB_PREFILL=0 EB_STEPS=32 EB_BATCHES=1,8
C=("cl0 VERBATIM_ATTN_CLUSTER=0" "cl1 VERBATIM_ATTN_CLUSTER=1")
ab_many dec8 $W/m8 2 "${C[@]}"
ab_many dec06 $W/m06 2 "${C[@]}"
[ "$(left)" -gt 60 ] && ( export VERBATIM_ATTN_CLUSTER=1; ncu_steps 8_b1_cl $W/m8 1 )
[ "$(left)" -gt 40 ] && ncu_prof fold8 attention_fold 3 $W/m8 --batches 1 --context 64 --steps 1 --prefill 2048 --no-context-prefill
call_finish
